//! A scenario run's cookies, as a browser keeps them for one site: every
//! `Set-Cookie` of the run's replies is stored (parsed by the `cookie` crate,
//! the one Rust's web frameworks use), replaced by name and path, removed
//! when it expires (`Max-Age` of 0 or less, an `Expires` in the past, or once
//! its time runs out), and sent back as one `Cookie` header on each later
//! request of the run whose path it matches (RFC 6265 §5.1.4); a `Secure`
//! cookie only over TLS. The target is one site, so `Domain` is not compared.
//! Each run starts with an empty jar.

use std::time::{Duration, Instant};

/// One stored cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stored {
    name: String,
    value: String,
    path: String,
    secure: bool,
    expires: Option<Instant>,
}

/// A run's cookies.
#[derive(Debug, Default, Clone)]
pub(crate) struct Jar {
    cookies: Vec<Stored>,
}

/// The most cookies a run keeps (a browser keeps about 50 per site).
const MAX_COOKIES: usize = 64;

impl Jar {
    /// Forget every cookie (a new run).
    pub(crate) fn clear(&mut self) {
        self.cookies.clear();
    }

    /// Store the `Set-Cookie` header `value`, set by the reply to a request
    /// for `request_path`. A header that does not parse is ignored, as a
    /// browser ignores it.
    pub(crate) fn store(&mut self, value: &[u8], request_path: &str, now: Instant) {
        let Ok(text) = std::str::from_utf8(value) else {
            return;
        };
        let Ok(cookie) = cookie::Cookie::parse(text) else {
            return;
        };
        let path = match cookie.path() {
            Some(path) if path.starts_with('/') => path.to_owned(),
            _ => default_path(request_path).to_owned(),
        };
        let expired_at = cookie
            .expires_datetime()
            .is_some_and(|at| at <= cookie::time::OffsetDateTime::now_utc());
        let expires = match cookie.max_age() {
            Some(age) if age.is_positive() => {
                Some(now + Duration::from_secs(u64::try_from(age.whole_seconds()).unwrap_or(0)))
            }
            Some(_) => Some(now),
            None if expired_at => Some(now),
            None => None,
        };
        self.cookies
            .retain(|c| !(c.name == cookie.name() && c.path == path));
        if expires.is_some_and(|at| at <= now) || self.cookies.len() >= MAX_COOKIES {
            return;
        }
        self.cookies.push(Stored {
            name: cookie.name().to_owned(),
            value: cookie.value().to_owned(),
            path,
            secure: cookie.secure().unwrap_or(false),
            expires,
        });
    }

    /// Append `Cookie: ...\r\n` for a request for `request_path`, if any
    /// cookie matches (longer paths first, as RFC 6265 orders them).
    pub(crate) fn write_header(
        &mut self,
        request_path: &str,
        tls: bool,
        now: Instant,
        out: &mut Vec<u8>,
    ) {
        self.cookies.retain(|c| c.expires.is_none_or(|at| at > now));
        let mut matching: Vec<&Stored> = self
            .cookies
            .iter()
            .filter(|c| (tls || !c.secure) && path_matches(request_path, &c.path))
            .collect();
        if matching.is_empty() {
            return;
        }
        matching.sort_by_key(|c| std::cmp::Reverse(c.path.len()));
        out.extend_from_slice(b"Cookie: ");
        for (i, cookie) in matching.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(cookie.name.as_bytes());
            out.push(b'=');
            out.extend_from_slice(cookie.value.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// A request target's path: up to any `?` or `#` (an absolute URI's after its authority).
pub(crate) fn request_path(target: &str) -> &str {
    let target = match target.find("://") {
        Some(scheme_end) => {
            let after = &target[scheme_end + 3..];
            after.find('/').map_or("/", |slash| &after[slash..])
        }
        None => target,
    };
    let end = target.find(['?', '#']).unwrap_or(target.len());
    &target[..end]
}

/// RFC 6265 §5.1.4's default path: the request path up to its last `/`.
fn default_path(path: &str) -> &str {
    if !path.starts_with('/') {
        return "/";
    }
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(last) => &path[..last],
    }
}

/// RFC 6265 §5.1.4's path-match.
fn path_matches(request: &str, cookie: &str) -> bool {
    let request = if request.is_empty() { "/" } else { request };
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.ends_with('/') || request[cookie.len()..].starts_with('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(jar: &mut Jar, path: &str, tls: bool, now: Instant) -> String {
        let mut out = Vec::new();
        jar.write_header(path, tls, now, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn cookies_go_back_where_their_path_matches() {
        let now = Instant::now();
        let mut jar = Jar::default();
        jar.store(b"session=abc; Path=/; HttpOnly", "/login", now);
        jar.store(b"cart=1; Path=/shop", "/login", now);
        jar.store(b"pref=x", "/account/settings", now);
        assert_eq!(
            header(&mut jar, "/shop/item", false, now),
            "Cookie: cart=1; session=abc\r\n"
        );
        assert_eq!(
            header(&mut jar, "/shopping", false, now),
            "Cookie: session=abc\r\n"
        );
        assert_eq!(
            header(&mut jar, "/account/x", false, now),
            "Cookie: pref=x; session=abc\r\n"
        );
        jar.store(b"session=def; Path=/", "/", now);
        assert_eq!(header(&mut jar, "/", false, now), "Cookie: session=def\r\n");
        jar.clear();
        assert_eq!(header(&mut jar, "/", false, now), "");
    }

    #[test]
    fn expired_and_secure_cookies() {
        let now = Instant::now();
        let mut jar = Jar::default();
        jar.store(b"a=1; Path=/", "/", now);
        jar.store(b"a=1; Path=/; Max-Age=0", "/", now);
        jar.store(b"b=2; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "/", now);
        jar.store(b"c=3; Max-Age=1", "/", now);
        jar.store(b"s=4; Secure", "/", now);
        jar.store(b"not a cookie", "/", now);
        assert_eq!(header(&mut jar, "/", false, now), "Cookie: c=3\r\n");
        assert_eq!(header(&mut jar, "/", true, now), "Cookie: c=3; s=4\r\n");
        assert_eq!(
            header(&mut jar, "/", false, now + Duration::from_secs(2)),
            ""
        );
    }

    #[test]
    fn request_paths_and_default_paths() {
        assert_eq!(request_path("/a/b?x=1"), "/a/b");
        assert_eq!(request_path("http://h:1/p#f"), "/p");
        assert_eq!(request_path("http://h"), "/");
        assert_eq!(default_path("/a/b"), "/a");
        assert_eq!(default_path("/a"), "/");
        assert_eq!(default_path("x"), "/");
        assert!(path_matches("/a/b", "/a"));
        assert!(!path_matches("/ab", "/a"));
        assert!(path_matches("/a/", "/a/"));
    }
}
