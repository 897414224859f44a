//! Who may use the admin API: everyone on loopback, token holders beyond it.
//!
//! The admin API decides what the simulator serves (and, with
//! `--allow-fetch`, what it fetches), so it must not be open to whoever can
//! reach the port. Listening on loopback (the default), only local users can,
//! and the API stays open as OriginSimulator's is. Listening beyond loopback,
//! it takes a token: the one given, or one generated at start that the
//! caller shows once ([`crate::Server::exposure_warning`]). The rule is
//! tank-http1's [`tank_http1::access`], shared with the web dashboard.

use std::net::SocketAddr;

pub use tank_http1::access::{is_loopback, Access as AdminAccess, Token as AdminToken};

/// The environment variable an admin token may be given in (safer than a
/// command-line flag, which other users see in `ps`).
pub const TOKEN_ENV: &str = "TANK_ORIGIN_TOKEN";

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

#[cfg(test)]
mod tests {
    use super::*;

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

    fn token(text: &str) -> AdminToken {
        AdminToken::new(text).expect("a valid test token")
    }
}
