//! Who may use a server tank runs: everyone on loopback, token holders beyond it.
//!
//! One rule for every HTTP server tank starts that must not be open to
//! whoever can reach its port (the origin simulator's admin API, the live web
//! dashboard): listening on loopback (the default), only local users can
//! reach it, and it stays open. Listening beyond loopback, it takes a token:
//! the one given, or one generated at start that the caller shows once. A
//! given token is required on loopback too. Requests carry it as
//! `Authorization: Bearer TOKEN` (or as the server allows otherwise), compared
//! in constant time so that how long a refusal takes does not tell how much
//! of a guess was right.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use http::header::AUTHORIZATION;
use http::HeaderMap;
use rand::distr::{Alphanumeric, SampleString};

/// Letters and digits in a generated token: about 190 bits.
const GENERATED_LEN: usize = 32;

/// A secret a server asks for. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token as given: printable ASCII without spaces (it travels in an HTTP header), not empty.
    pub fn new(token: &str) -> Result<Token, String> {
        if token.is_empty() {
            return Err("an empty token would let anyone in".into());
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(
                "a token must be printable ASCII without spaces (it is sent in an HTTP header)"
                    .into(),
            );
        }
        Ok(Token(token.to_owned()))
    }

    /// The token in the environment variable `var`, if it is set (safer than
    /// a command-line flag, which other users see in `ps`); an error names the variable.
    pub fn from_env(var: &str) -> Result<Option<Token>, String> {
        match std::env::var(var) {
            Ok(text) => Token::new(&text)
                .map(Some)
                .map_err(|e| format!("{var}: {e}")),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{var}: not valid text")),
        }
    }

    /// A fresh random token from the thread's cryptographically secure generator.
    fn generate() -> Token {
        Token(Alphanumeric.sample_string(&mut rand::rng(), GENERATED_LEN))
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Token {
    type Err = String;

    fn from_str(text: &str) -> Result<Token, String> {
        Token::new(text)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Who may use a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Anyone who can connect: the server listens on loopback and no token was given.
    Open,
    /// Requests must carry `Authorization: Bearer TOKEN`.
    Token {
        /// The token.
        token: Token,
        /// Made up at start because none was given: the user must be shown it.
        generated: bool,
    },
}

impl Access {
    /// The access for a server listening on `listen`: the `given` token if
    /// any; otherwise open on loopback, and a generated token beyond it.
    pub fn decide(listen: IpAddr, given: Option<Token>) -> Access {
        match given {
            Some(token) => Access::Token {
                token,
                generated: false,
            },
            None if is_loopback(listen) => Access::Open,
            None => Access::Token {
                token: Token::generate(),
                generated: true,
            },
        }
    }

    /// Whether a request with these headers may use the server.
    pub fn allows(&self, headers: &HeaderMap) -> bool {
        let offered = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer);
        self.accepts(offered)
    }

    /// Whether `offered` (a token the request carried however the server
    /// takes it, `None` when it carried none) lets it in.
    pub fn accepts(&self, offered: Option<&str>) -> bool {
        match (self, offered) {
            (Access::Open, _) => true,
            (Access::Token { token, .. }, Some(offered)) => {
                same(offered.as_bytes(), token.as_str().as_bytes())
            }
            (Access::Token { .. }, None) => false,
        }
    }
}

/// Whether `ip` is a loopback address (127.0.0.0/8, ::1, or ::ffff:127.x.y.z).
pub fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// The credentials of a `Bearer` authorization (the scheme is case-insensitive).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim())
}

/// Compares without stopping at the first difference, so the time taken
/// does not depend on where a guess goes wrong. (Only the length can show,
/// and a token's length is no secret.)
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a
        .iter()
        .zip(b)
        .fold(0u8, |acc, (x, y)| acc | std::hint::black_box(x ^ y));
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::HeaderValue;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("a test address")
    }

    fn token(text: &str) -> Token {
        Token::new(text).expect("a valid test token")
    }

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_str(authorization).unwrap());
        headers
    }

    #[test]
    fn loopback_without_a_token_is_open() {
        for listen in ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(Access::decide(ip(listen), None), Access::Open, "{listen}");
        }
        assert!(Access::Open.allows(&HeaderMap::new()));
    }

    #[test]
    fn beyond_loopback_without_a_token_one_is_generated() {
        for listen in ["0.0.0.0", "::", "10.1.2.3", "192.168.0.1"] {
            let access = Access::decide(ip(listen), None);
            let Access::Token { token, generated } = &access else {
                panic!("{listen}: {access:?}");
            };
            assert!(generated, "{listen}");
            assert_eq!(token.as_str().len(), GENERATED_LEN);
            assert!(token.as_str().bytes().all(|b| b.is_ascii_alphanumeric()));
            assert!(!access.allows(&HeaderMap::new()), "{listen}");
        }
        let one = Access::decide(ip("0.0.0.0"), None);
        let two = Access::decide(ip("0.0.0.0"), None);
        assert_ne!(one, two, "each start draws a new token");
    }

    #[test]
    fn a_given_token_is_required_wherever_the_server_listens() {
        for listen in ["127.0.0.1", "0.0.0.0"] {
            let access = Access::decide(ip(listen), Some(token("s3cret")));
            assert_eq!(
                access,
                Access::Token {
                    token: token("s3cret"),
                    generated: false
                }
            );
            assert!(access.allows(&headers("Bearer s3cret")));
            assert!(access.allows(&headers("bearer  s3cret ")));
            assert!(!access.allows(&HeaderMap::new()));
            assert!(!access.allows(&headers("Bearer s3cre")));
            assert!(!access.allows(&headers("Bearer s3cret2")));
            assert!(!access.allows(&headers("Basic s3cret")));
            assert!(!access.allows(&headers("s3cret")));
        }
    }

    #[test]
    fn tokens_must_be_printable_and_are_not_shown_by_debug() {
        assert!(Token::new("").is_err());
        assert!(Token::new("two words").is_err());
        assert!(Token::new("tab\there").is_err());
        assert_eq!(format!("{:?}", token("s3cret")), "Token(..)");
    }

    #[test]
    fn comparison_needs_every_byte() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"xbc"));
        assert!(!same(b"abc", b"ab"));
        assert!(same(b"", b""));
    }
}
