//! Who may use the admin API: everyone on loopback, token holders beyond it.
//!
//! The admin API decides what the simulator serves (and, with
//! `--allow-fetch`, what it fetches), so it must not be open to whoever can
//! reach the port. Listening on loopback (the default), only local users can,
//! and the API stays open as OriginSimulator's is. Listening beyond loopback,
//! it takes a token: the one given, or one generated at start that the
//! caller shows once ([`crate::Server::exposure_warning`]). A given token is
//! required on loopback too. Requests carry it as `Authorization: Bearer
//! TOKEN`, compared in constant time so that how long a refusal takes does
//! not tell how much of a guess was right.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use hyper::header::AUTHORIZATION;
use hyper::HeaderMap;
use rand::distr::{Alphanumeric, SampleString};

/// Letters and digits in a generated token: about 190 bits.
const GENERATED_LEN: usize = 32;

/// The environment variable an admin token may be given in (safer than a
/// command-line flag, which other users see in `ps`).
pub const TOKEN_ENV: &str = "TANK_ORIGIN_TOKEN";

/// A secret the admin API asks for. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken(String);

impl AdminToken {
    /// A token as given: printable ASCII without spaces (it travels in an HTTP header), not empty.
    pub fn new(token: &str) -> Result<AdminToken, String> {
        if token.is_empty() {
            return Err("an empty admin token would let anyone in".into());
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(
                "an admin token must be printable ASCII without spaces (it is sent in an HTTP header)"
                    .into(),
            );
        }
        Ok(AdminToken(token.to_owned()))
    }

    /// The token in [`TOKEN_ENV`], if it is set; an error names the variable.
    pub fn from_env() -> Result<Option<AdminToken>, String> {
        match std::env::var(TOKEN_ENV) {
            Ok(text) => AdminToken::new(&text)
                .map(Some)
                .map_err(|e| format!("{TOKEN_ENV}: {e}")),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{TOKEN_ENV}: not valid text")),
        }
    }

    /// A fresh random token from the thread's cryptographically secure generator.
    fn generate() -> AdminToken {
        AdminToken(Alphanumeric.sample_string(&mut rand::rng(), GENERATED_LEN))
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for AdminToken {
    type Err = String;

    fn from_str(text: &str) -> Result<AdminToken, String> {
        AdminToken::new(text)
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(..)")
    }
}

/// Who may use a server's admin API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminAccess {
    /// Anyone who can connect: the server listens on loopback and no token was given.
    Open,
    /// Requests must carry `Authorization: Bearer TOKEN`.
    Token {
        /// The token.
        token: AdminToken,
        /// Made up at start because none was given: the user must be shown it.
        generated: bool,
    },
}

impl AdminAccess {
    /// The access for a server listening on `listen`: the `given` token if
    /// any; otherwise open on loopback, and a generated token beyond it.
    pub fn decide(listen: IpAddr, given: Option<AdminToken>) -> AdminAccess {
        match given {
            Some(token) => AdminAccess::Token {
                token,
                generated: false,
            },
            None if is_loopback(listen) => AdminAccess::Open,
            None => AdminAccess::Token {
                token: AdminToken::generate(),
                generated: true,
            },
        }
    }

    /// Whether a request with these headers may use the admin API.
    pub(crate) fn allows(&self, headers: &HeaderMap) -> bool {
        let AdminAccess::Token { token, .. } = self else {
            return true;
        };
        let Some(offered) = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer)
        else {
            return false;
        };
        same(offered.as_bytes(), token.as_str().as_bytes())
    }
}

/// The warning for a server listening on `listen` beyond loopback, with the
/// token if it was generated (it is shown this once); `None` on loopback.
pub(crate) fn exposure_warning(listen: SocketAddr, access: &AdminAccess) -> Option<String> {
    if is_loopback(listen.ip()) {
        return None;
    }
    let token = match access {
        AdminAccess::Token {
            token,
            generated: true,
        } => format!(
            "no token was given (--admin-token or {TOKEN_ENV}), so this one was generated \
             and is shown only now: {}",
            token.as_str()
        ),
        _ => format!("it takes the token that was given (--admin-token or {TOKEN_ENV})"),
    };
    Some(format!(
        "warning: the origin simulator listens on {listen}, beyond loopback: anyone who can \
         reach it can load it, and its admin API (/_admin/) decides what it serves.\n\
         warning: the admin API needs `Authorization: Bearer TOKEN`; {token}"
    ))
}

/// Whether `ip` is a loopback address (127.0.0.0/8, ::1, or ::ffff:127.x.y.z).
fn is_loopback(ip: IpAddr) -> bool {
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
    use hyper::header::HeaderValue;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("a test address")
    }

    fn token(text: &str) -> AdminToken {
        AdminToken::new(text).expect("a valid test token")
    }

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_str(authorization).unwrap());
        headers
    }

    #[test]
    fn loopback_without_a_token_is_open() {
        for listen in ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(
                AdminAccess::decide(ip(listen), None),
                AdminAccess::Open,
                "{listen}"
            );
        }
        assert!(AdminAccess::Open.allows(&HeaderMap::new()));
    }

    #[test]
    fn beyond_loopback_without_a_token_one_is_generated() {
        for listen in ["0.0.0.0", "::", "10.1.2.3", "192.168.0.1"] {
            let access = AdminAccess::decide(ip(listen), None);
            let AdminAccess::Token { token, generated } = &access else {
                panic!("{listen}: {access:?}");
            };
            assert!(generated, "{listen}");
            assert_eq!(token.as_str().len(), GENERATED_LEN);
            assert!(token.as_str().bytes().all(|b| b.is_ascii_alphanumeric()));
            assert!(!access.allows(&HeaderMap::new()), "{listen}");
        }
        let one = AdminAccess::decide(ip("0.0.0.0"), None);
        let two = AdminAccess::decide(ip("0.0.0.0"), None);
        assert_ne!(one, two, "each start draws a new token");
    }

    #[test]
    fn a_given_token_is_required_wherever_the_server_listens() {
        for listen in ["127.0.0.1", "0.0.0.0"] {
            let access = AdminAccess::decide(ip(listen), Some(token("s3cret")));
            assert_eq!(
                access,
                AdminAccess::Token {
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
        assert!(AdminToken::new("").is_err());
        assert!(AdminToken::new("two words").is_err());
        assert!(AdminToken::new("tab\there").is_err());
        assert_eq!(format!("{:?}", token("s3cret")), "AdminToken(..)");
    }

    #[test]
    fn beyond_loopback_the_warning_shows_a_generated_token_once() {
        let listen: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let access = AdminAccess::decide(listen.ip(), None);
        let AdminAccess::Token { token: drawn, .. } = &access else {
            panic!("{access:?}");
        };
        let warning = exposure_warning(listen, &access).unwrap();
        assert!(warning
            .starts_with("warning: the origin simulator listens on 0.0.0.0:8080, beyond loopback"));
        assert!(warning.ends_with(&format!("shown only now: {}", drawn.as_str())));
        let given = AdminAccess::decide(listen.ip(), Some(token("s3cret")));
        let warning = exposure_warning(listen, &given).unwrap();
        assert!(!warning.contains("s3cret"), "{warning}");
        let loopback: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(exposure_warning(loopback, &AdminAccess::Open), None);
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
