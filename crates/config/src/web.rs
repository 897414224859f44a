//! `[web]`: the live web dashboard (tank's own section; `--web ADDR` on the
//! command line does the same).
//!
//! The dashboard is read-only, but it shows the target, the load and the
//! results, so it stays on loopback unless someone asks for more on the
//! command line: a config file is shared and run on many machines, and must
//! not open a port to the network on each of them by itself. So `listen` in
//! a config may name only a loopback address; beyond loopback takes `--web
//! ADDR`, and then a token (as the origin simulator's admin API does).

use std::net::SocketAddr;
use std::time::Duration;

use crate::convert;
use crate::error::ConfigError;
use crate::queue::entry_error;
use crate::raw::RawSection;
use crate::search::parse_duration;

/// Where the dashboard listens unless `listen` (or `--web`) says otherwise.
pub const DEFAULT_WEB_LISTEN: &str = "127.0.0.1:8089";

/// [`DEFAULT_WEB_LISTEN`]'s port.
const DEFAULT_WEB_PORT: u16 = 8089;

/// `[web]`: serve the live dashboard while the test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebConfig {
    /// `listen` (default [`DEFAULT_WEB_LISTEN`]): a loopback address.
    pub listen: SocketAddr,
    /// `linger`: how long the dashboard stays up after the run, for a reader
    /// to finish looking (`None`: tank exits at once; the page keeps what it
    /// has drawn and says that tank has gone).
    pub linger: Option<Duration>,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_WEB_PORT)),
            linger: None,
        }
    }
}

/// Reads an enabled `[web]` section.
pub(crate) fn read(section: &RawSection) -> Result<WebConfig, ConfigError> {
    let mut web = WebConfig::default();
    if let Some(entry) = section.get("listen") {
        let text = convert::string(&entry.value)
            .map_err(|m| entry_error(&section.name, entry, m))?
            .unwrap_or_default();
        let text = text.trim();
        if !text.is_empty() {
            let listen: SocketAddr = text.parse().map_err(|_| {
                let message = format!(
                    "expected an address like {DEFAULT_WEB_LISTEN} (IP and port), found `{text}`"
                );
                entry_error(&section.name, entry, message)
            })?;
            if !listen.ip().to_canonical().is_loopback() {
                let message = format!(
                    "{listen} is beyond loopback: a config cannot open the dashboard to the \
                     network; say so on the command line (`--web {listen}`), where it then \
                     needs a token (--web-token or TANK_WEB_TOKEN, or one generated and shown once)"
                );
                return Err(entry_error(&section.name, entry, message));
            }
            web.listen = listen;
        }
    }
    if let Some(entry) = section.get("linger") {
        let text = convert::string(&entry.value)
            .map_err(|m| entry_error(&section.name, entry, m))?
            .unwrap_or_default();
        if !text.trim().is_empty() {
            web.linger =
                Some(parse_duration(&text).map_err(|m| entry_error(&section.name, entry, m))?);
        }
    }
    Ok(web)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(web: &str) -> Result<crate::TestConfig, ConfigError> {
        let text = format!(
            "[phantom]\naddress = 127.0.0.1:8080\nrps_schedule = const(1,1s)\nuris = /\n[web]\n{web}"
        );
        crate::load_str(
            &text,
            crate::ConfigFormat::Ini,
            std::path::Path::new("load.ini"),
            &[],
        )
    }

    #[test]
    fn an_empty_section_serves_on_the_default_loopback_port() {
        let web = load("").unwrap().web.unwrap();
        assert_eq!(web, WebConfig::default());
        assert_eq!(web.listen.to_string(), DEFAULT_WEB_LISTEN);
        assert_eq!(load("enabled = 0\n").unwrap().web, None);
    }

    #[test]
    fn listen_and_linger_are_read() {
        let web = load("listen = [::1]:0\nlinger = 5m\n")
            .unwrap()
            .web
            .unwrap();
        assert_eq!(web.listen.to_string(), "[::1]:0");
        assert_eq!(web.linger, Some(Duration::from_secs(300)));
    }

    #[test]
    fn a_config_cannot_listen_beyond_loopback() {
        let e = load("listen = 0.0.0.0:8089\n").unwrap_err();
        assert_eq!((e.line(), e.key()), (Some(6), Some("listen")), "{e}");
        assert!(e.message().contains("--web 0.0.0.0:8089"), "{e}");
        let e = load("listen = localhost:80\n").unwrap_err();
        assert!(e.message().starts_with("expected an address"), "{e}");
        let e = load("linger = soon\n").unwrap_err();
        assert_eq!(e.key(), Some("linger"), "{e}");
    }
}
