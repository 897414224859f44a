//! Fetching an `origin` once, when its recipe is loaded.
//!
//! One GET over plain HTTP/1.1 with hyper's client: the simulator only needs
//! a page to replay, so there is no TLS, no redirects and no retries; any
//! failure is a load error that names the cause (connection refused, a
//! timeout, an error status), so a mistyped URL is found before the test runs.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::recipe::check_origin_url;
use crate::units::MAX_SIZE;

/// How long connecting and reading the whole response may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// GETs `url` (`http://` only) and returns its body; a non-2xx status is an error.
pub(crate) async fn get(url: &str) -> Result<Vec<u8>, String> {
    tokio::time::timeout(TIMEOUT, fetch(url))
        .await
        .unwrap_or_else(|_| Err(format!("no complete response within {TIMEOUT:?}")))
}

async fn fetch(url: &str) -> Result<Vec<u8>, String> {
    check_origin_url(url)?;
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let address = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let stream = TcpStream::connect(&address)
        .await
        .map_err(|e| format!("cannot connect to {address}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    tokio::spawn(connection);
    let request = Request::get(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::USER_AGENT, "tank-origin")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("cannot build a request for it: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("answered {status}, expected a 2xx status"));
    }
    let body = Limited::new(response.into_body(), MAX_SIZE)
        .collect()
        .await
        .map_err(|e| format!("reading the body failed: {e}"))?;
    Ok(body.to_bytes().to_vec())
}
