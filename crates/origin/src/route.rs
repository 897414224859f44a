//! Route patterns: which request paths a recipe answers.
//!
//! A route is a path with `*` wildcards (`/news*`, `/api/*/items`), matched
//! against the whole request path (the query string is not part of it); `*`
//! matches any run of characters, `/` included. When several routes match, the
//! most specific wins: the one with the most literal characters, so `/news*`
//! beats the default `/*` whatever order they were added in.

use std::fmt;

/// A route pattern such as `/*` or `/news*`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Route {
    pattern: String,
}

impl Route {
    /// The pattern every recipe gets when it names none: every path.
    pub const DEFAULT: &'static str = "/*";

    /// A route from its pattern; it must start with `/` (or be `*`).
    pub fn new(pattern: &str) -> Result<Route, String> {
        if !(pattern.starts_with('/') || pattern.starts_with('*')) {
            return Err(format!(
                "expected a path pattern starting with `/` (like \"/news*\"), found `{pattern}`"
            ));
        }
        Ok(Route {
            pattern: pattern.to_owned(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// How many literal (non-`*`) characters the pattern has: more is more specific.
    pub(crate) fn specificity(&self) -> usize {
        self.pattern.bytes().filter(|b| *b != b'*').count()
    }

    /// Whether `path` matches the whole pattern.
    pub(crate) fn matches(&self, path: &str) -> bool {
        glob(self.pattern.as_bytes(), path.as_bytes())
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

/// Wildcard match with `*` only, linear in practice: on a mismatch, retry from
/// the last `*` one character further on.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|b| *b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        Route::new(pattern).unwrap().matches(path)
    }

    #[test]
    fn the_default_route_matches_every_path() {
        for path in ["/", "/news", "/a/b/c.html"] {
            assert!(matches("/*", path), "{path}");
        }
    }

    #[test]
    fn a_trailing_star_matches_the_prefix_and_below() {
        assert!(matches("/news*", "/news"));
        assert!(matches("/news*", "/news/world"));
        assert!(matches("/news*", "/newsround"));
        assert!(!matches("/news*", "/sport"));
        assert!(!matches("/news*", "/new"));
    }

    #[test]
    fn stars_in_the_middle_and_exact_paths() {
        assert!(matches("/api/*/items", "/api/v1/items"));
        assert!(matches("/api/*/items", "/api/v1/x/items"));
        assert!(!matches("/api/*/items", "/api/v1/items/1"));
        assert!(matches("/exact", "/exact"));
        assert!(!matches("/exact", "/exact/"));
        assert!(matches("/a*b*c", "/aXbYbZc"));
    }

    #[test]
    fn more_literal_characters_are_more_specific() {
        let default = Route::new("/*").unwrap();
        let news = Route::new("/news*").unwrap();
        assert!(news.specificity() > default.specificity());
    }

    #[test]
    fn a_route_must_be_a_path() {
        assert_eq!(
            Route::new("news").unwrap_err(),
            "expected a path pattern starting with `/` (like \"/news*\"), found `news`"
        );
    }
}
