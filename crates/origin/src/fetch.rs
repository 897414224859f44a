//! Fetching an `origin` once, when its recipe is loaded.
//!
//! One GET over plain HTTP/1.1 with hyper's client: the simulator only needs
//! a page to replay, so there is no TLS, no redirects and no retries.
//!
//! A fetch resolves the host itself, refuses if any address it resolves to
//! is link-local or a cloud metadata service's ([`crate::blocked`]), and
//! connects only to the addresses it checked, so the name cannot point
//! elsewhere between the check and the connection. The page may be at most
//! the size the caller allows (what is left of the body budget).
//!
//! What a failure says depends on who asked ([`Asker`]). The operator, whose
//! recipe file is loaded at start, gets the cause (connection refused, a
//! timeout, which address), so a mistyped URL is found at once. A recipe
//! posted to the admin API gets one answer for every failure short of an
//! HTTP response (unresolvable, refused, filtered, an open port that does not
//! speak HTTP), and gets it when the whole [`TIMEOUT`] has passed, so neither
//! the words nor the time tell a closed port from a filtered or an open one:
//! the admin API is no port scanner.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, LengthLimitError, Limited};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tank_http1::Url;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::blocked::is_blocked;
use crate::recipe::origin_url;
use crate::units::human;

/// How long resolving, connecting and reading the whole response may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

/// What every failure short of an HTTP response says to the admin API.
pub(crate) const UNREACHABLE: &str = "no HTTP response from it (unreachable, refused, filtered, \
     or not HTTP: a posted recipe is not told which)";

/// Who wants the page: it decides what a failure may say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asker {
    /// Whoever started the simulator (a recipe given at start, or [`crate::Server::add_recipes`]).
    Operator,
    /// A client of `POST /_admin/add_recipe`.
    Admin,
}

/// Why a fetch failed.
enum Failure {
    /// No HTTP response: the cause, for the operator's eyes only.
    Unreachable(String),
    /// The host resolves to an address no fetch may connect to.
    Blocked(String),
    /// An HTTP response that is not a page to serve.
    Refused(String),
}

/// GETs `url` (`http://` only) and returns its body, at most `limit` bytes;
/// a non-2xx status is an error.
pub(crate) async fn get(url: &str, limit: usize, asker: Asker) -> Result<Vec<u8>, String> {
    let start = Instant::now();
    let outcome = tokio::time::timeout(TIMEOUT, fetch(url, limit))
        .await
        .unwrap_or_else(|_| {
            Err(Failure::Unreachable(format!(
                "no complete response within {TIMEOUT:?}"
            )))
        });
    match outcome {
        Ok(page) => Ok(page),
        Err(Failure::Blocked(message) | Failure::Refused(message)) => Err(message),
        Err(Failure::Unreachable(cause)) => match asker {
            Asker::Operator => Err(cause),
            Asker::Admin => {
                tokio::time::sleep_until(start + TIMEOUT).await;
                Err(UNREACHABLE.to_owned())
            }
        },
    }
}

async fn fetch(url: &str, limit: usize) -> Result<Vec<u8>, Failure> {
    let url = origin_url(url).map_err(Failure::Refused)?;
    let authority = url.authority();
    let addresses = resolve(&url).await?;
    let stream = TcpStream::connect(addresses.as_slice())
        .await
        .map_err(|e| Failure::Unreachable(format!("cannot connect to {authority}: {e}")))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| Failure::Unreachable(format!("HTTP handshake failed: {e}")))?;
    tokio::spawn(connection);
    let request = Request::get(url.path())
        .header(hyper::header::HOST, url.host_header())
        .header(hyper::header::USER_AGENT, "tank-origin")
        .body(Empty::<Bytes>::new())
        .map_err(|e| Failure::Refused(format!("cannot build a request for it: {e}")))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| Failure::Unreachable(format!("request failed: {e}")))?;
    let status = response.status();
    if !status.is_success() {
        return Err(Failure::Refused(format!(
            "answered {status}, expected a 2xx status"
        )));
    }
    match Limited::new(response.into_body(), limit).collect().await {
        Ok(body) => Ok(body.to_bytes().to_vec()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(Failure::Refused(format!(
            "its page is larger than the {} the body budget has left",
            human(limit)
        ))),
        Err(e) => Err(Failure::Unreachable(format!(
            "reading the body failed: {e}"
        ))),
    }
}

/// The addresses `url`'s host and port resolve to, if none is blocked.
async fn resolve(url: &Url) -> Result<Vec<SocketAddr>, Failure> {
    let authority = url.authority();
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host(&authority)
        .await
        .map_err(|e| Failure::Unreachable(format!("cannot resolve {authority}: {e}")))?
        .collect();
    if addresses.is_empty() {
        return Err(Failure::Unreachable(format!(
            "{authority} resolves to no address"
        )));
    }
    if addresses.iter().any(|a| is_blocked(a.ip())) {
        return Err(Failure::Blocked(format!(
            "{} is a link-local or cloud metadata address, which is never fetched",
            url.host_header()
        )));
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn link_local_and_metadata_origins_are_refused_before_connecting() {
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/",
            "http://[fd00:ec2::254]/",
            "http://100.100.100.200/",
            "http://[::ffff:169.254.169.254]:8080/",
        ] {
            let started = std::time::Instant::now();
            let error = get(url, 1024, Asker::Admin).await.unwrap_err();
            assert!(
                error
                    .ends_with("is a link-local or cloud metadata address, which is never fetched"),
                "{url}: {error}"
            );
            // Refused at once: not after a connection attempt or the padded timeout.
            assert!(started.elapsed() < TIMEOUT, "{url}");
        }
    }

    #[tokio::test]
    async fn the_operator_is_told_why_a_fetch_failed() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap();
        let error = get(&format!("http://{closed}/"), 1024, Asker::Operator)
            .await
            .unwrap_err();
        assert!(
            error.starts_with(&format!("cannot connect to {closed}: ")),
            "{error}"
        );
    }
}
