//! What a server allows beyond serving its recipes: fetching for posted
//! recipes, the admin token, and the body budget.
//!
//! The defaults are the safe ones: a posted recipe may not fetch, the admin
//! API is open only on loopback, and all routes' bodies together may declare
//! [`DEFAULT_BODY_BUDGET`]. `tank origin` sets these from its flags and
//! `[origin]` from its options.

use crate::access::AdminToken;
use crate::units;

/// The body budget unless one is given: 256 MiB, the largest single body a
/// recipe may declare.
pub const DEFAULT_BODY_BUDGET: usize = units::MAX_SIZE;

/// The largest body budget that may be set (1 TiB): bodies are generated as
/// they are sent, so the budget bounds what routes declare, not memory.
const MAX_BODY_BUDGET: usize = 1 << 40;

/// A server's options. [`Options::default`] is the safe choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Whether a recipe POSTed to `/_admin/add_recipe` may name an `origin`
    /// to fetch (`--allow-fetch`). Recipes given at start always may.
    pub allow_fetch: bool,
    /// The token the admin API requires. Without one, the API is open on
    /// loopback and takes a generated token beyond it.
    pub admin_token: Option<AdminToken>,
    /// The most bytes the bodies of all routes together may declare
    /// (`--body-budget`); a recipe that would exceed it is refused.
    pub body_budget: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            allow_fetch: false,
            admin_token: None,
            body_budget: DEFAULT_BODY_BUDGET,
        }
    }
}

/// Parses a body budget: `"256mb"`, `"2gb"`, `"512kb"` or bare bytes (binary
/// units, as recipes write sizes), at most 1024gb.
pub fn parse_body_budget(text: &str) -> Result<usize, String> {
    units::parse_bytes(text, MAX_BODY_BUDGET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_take_recipe_sizes_and_gigabytes() {
        assert_eq!(parse_body_budget("256mb"), Ok(256 << 20));
        assert_eq!(parse_body_budget("2gb"), Ok(2 << 30));
        assert_eq!(parse_body_budget("0"), Ok(0));
        assert_eq!(
            parse_body_budget("2tb").unwrap_err(),
            "expected a size like \"428kb\", \"100b\", \"1mb\", found `2tb`"
        );
        assert_eq!(
            parse_body_budget("2000gb").unwrap_err(),
            "size `2000gb` is too large (at most 1024gb)"
        );
    }
}
