//! A small blocking HTTP/1.1 client for scrapes and exports, on hyper (the
//! HTTP implementation tank-origin already serves and fetches with): plain
//! `http://` only, one request per connection, one deadline on the whole
//! exchange (resolving, connecting, sending, reading the body) and a cap on
//! the body. hyper frames the reply, so there is no HTTP parsing here.
//!
//! It runs on the monitor's and the exporters' own threads, never on a
//! shooting thread, so blocking is what it should do: a [`Client`] drives its
//! requests on a current-thread tokio runtime of its own, and a caller holds
//! one client per thread.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, HOST, USER_AGENT};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

pub use tank_http1::Url;

/// A response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

/// `text` as a URL this client can fetch: `http://` only (port 80 by default).
pub fn http_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{e}: expected an http:// URL"))?;
    if url.is_tls() {
        return Err(format!(
            "expected an http:// URL, found `{text}` (https is not supported here)"
        ));
    }
    Ok(url)
}

/// How a timed-out exchange's error begins ([`Client::is_timeout`]).
const TIMED_OUT: &str = "timed out after";

/// A blocking client: one per thread that makes requests.
pub struct Client {
    /// `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Client {
    /// A client with a runtime of its own (no threads but the caller's).
    pub fn new() -> std::io::Result<Client> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        Ok(Client {
            runtime: Some(runtime),
        })
    }

    /// `GET url`, done within `timeout`, its body at most `max_body` bytes.
    pub fn get(&self, url: &Url, timeout: Duration, max_body: usize) -> Result<Response, String> {
        let request = Request::get(url.path())
            .header(ACCEPT, "text/plain")
            .body(Full::new(Bytes::new()));
        self.exchange(url, request, timeout, max_body)
    }

    /// `POST url` with `body` and extra headers (name, value), done within
    /// `timeout`; the answer's body is read up to 1 MiB.
    pub fn post(
        &self,
        url: &Url,
        headers: &[(String, String)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Response, String> {
        let mut request = Request::post(url.path()).header(CONTENT_TYPE, "text/plain");
        for (name, value) in headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|e| format!("header name `{name}`: {e}"))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|e| format!("header `{name}`'s value: {e}"))?;
            request = request.header(name, value);
        }
        self.exchange(
            url,
            request.body(Full::new(Bytes::from(body))),
            timeout,
            1 << 20,
        )
    }

    /// Whether `error` (of [`Client::post`] or a get) is the timeout: the
    /// server may have taken the request, and only its answer is missing.
    pub fn is_timeout(error: &str) -> bool {
        error.starts_with(TIMED_OUT)
    }

    fn exchange(
        &self,
        url: &Url,
        request: Result<Request<Full<Bytes>>, hyper::http::Error>,
        timeout: Duration,
        max_body: usize,
    ) -> Result<Response, String> {
        let mut request = request.map_err(|e| format!("cannot make the request: {e}"))?;
        let host = HeaderValue::try_from(url.host_header())
            .map_err(|e| format!("host `{}`: {e}", url.host_header()))?;
        request.headers_mut().insert(HOST, host);
        request
            .headers_mut()
            .insert(USER_AGENT, HeaderValue::from_static("tank"));
        let runtime = self.runtime.as_ref().ok_or("the client is shutting down")?;
        runtime.block_on(async {
            tokio::time::timeout(timeout, send(url, request, max_body))
                .await
                .unwrap_or_else(|_| Err(format!("{TIMED_OUT} {timeout:?}")))
        })
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A name lookup still blocking in tokio's pool must not hold the thread up.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// One exchange on a connection of its own.
async fn send(
    url: &Url,
    request: Request<Full<Bytes>>,
    max_body: usize,
) -> Result<Response, String> {
    let authority = url.authority();
    let stream = TcpStream::connect(authority.as_str())
        .await
        .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake with {authority} failed: {e}"))?;
    // The connection is driven beside the exchange, and ends with it.
    let connection = tokio::spawn(connection);
    let outcome = async {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("no HTTP response: {e}"))?;
        let status = response.status().as_u16();
        let body = match Limited::new(response.into_body(), max_body).collect().await {
            Ok(body) => body.to_bytes().to_vec(),
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                return Err(format!("the response is larger than {max_body} bytes"));
            }
            Err(e) => return Err(format!("reading the response failed: {e}")),
        };
        Ok(Response { status, body })
    }
    .await;
    connection.abort();
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Instant;

    #[test]
    fn urls_are_http_only_with_a_default_port() {
        let u = http_url("http://h").unwrap();
        assert_eq!((u.authority().as_str(), u.path()), ("h:80", "/"));
        let error = http_url("https://h/").unwrap_err();
        assert!(error.starts_with("expected an http:// URL"), "{error}");
        let error = http_url("h:9100").unwrap_err();
        assert!(error.starts_with("h:9100: "), "{error}");
    }

    /// A server on 127.0.0.1 answering one connection with `reply`; the request it read.
    fn serve_once(reply: &'static [u8]) -> (Url, std::thread::JoinHandle<Vec<u8>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = http_url(&format!("http://{}/m?x=1", listener.local_addr().unwrap())).unwrap();
        let thread = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(reply);
            request
        });
        (url, thread)
    }

    #[test]
    fn responses_by_length_chunks_and_close() {
        let client = Client::new().unwrap();
        let timeout = Duration::from_secs(10);
        let (url, server) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhixx");
        let r = client.get(&url, timeout, 1024).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, b"hi".as_slice()));
        let request = String::from_utf8(server.join().unwrap()).unwrap();
        assert!(request.starts_with("GET /m?x=1 HTTP/1.1\r\n"), "{request}");
        assert!(
            request.to_ascii_lowercase().contains("host: 127.0.0.1:"),
            "{request}"
        );
        let (url, _) = serve_once(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n",
        );
        assert_eq!(client.get(&url, timeout, 1024).unwrap().body, b"abc");
        let (url, _) = serve_once(b"HTTP/1.0 404 Not Found\r\n\r\nnope");
        let r = client.get(&url, timeout, 1024).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, b"nope".as_slice()));
        let (url, _) = serve_once(b"SSH-2.0-OpenSSH\r\n\r\n");
        assert!(client.get(&url, timeout, 1024).is_err());
        let big = [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n"[..],
            &[b'x'; 2000],
        ]
        .concat();
        let (url, _) = serve_once(big.leak());
        let error = client.get(&url, timeout, 1024).unwrap_err();
        assert_eq!(error, "the response is larger than 1024 bytes");
    }

    #[test]
    fn a_post_sends_its_body_and_headers() {
        let client = Client::new().unwrap();
        let (url, server) = serve_once(b"HTTP/1.1 204 No Content\r\n\r\n");
        let headers = [("Authorization".to_owned(), "Token T".to_owned())];
        let r = client
            .post(&url, &headers, b"m v=1".to_vec(), Duration::from_secs(10))
            .unwrap();
        assert_eq!(r.status, 204);
        let request = String::from_utf8(server.join().unwrap())
            .unwrap()
            .to_ascii_lowercase();
        assert!(request.starts_with("post /m?x=1 http/1.1\r\n"), "{request}");
        assert!(request.contains("authorization: token t\r\n"), "{request}");
        assert!(request.contains("content-length: 5\r\n"), "{request}");
    }

    #[test]
    fn a_refused_connection_is_an_error_not_a_hang() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = http_url(&format!("http://127.0.0.1:{port}/metrics")).unwrap();
        let error = Client::new()
            .unwrap()
            .get(&url, Duration::from_secs(2), 1024)
            .unwrap_err();
        assert!(error.starts_with("cannot connect to 127.0.0.1:"), "{error}");
    }

    #[test]
    fn a_silent_server_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = http_url(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let started = Instant::now();
        let e = Client::new()
            .unwrap()
            .get(&url, Duration::from_millis(300), 1024)
            .unwrap_err();
        assert_eq!(e, "timed out after 300ms");
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
