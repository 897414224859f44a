//! A small blocking HTTP/1.0 client for scrapes and exports: plain `http://`
//! only, one request per connection, a deadline on the whole exchange and a
//! cap on the body. It runs on the monitor's and exporters' own threads, never
//! on a shooting thread, so blocking is what it should do.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// A response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

pub use tank_http1::Url;

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

/// `GET url`, within `timeout`, reading at most `max_body` bytes.
pub fn get(url: &Url, timeout: Duration, max_body: usize) -> Result<Response, String> {
    let head = format!(
        "GET {} HTTP/1.0\r\nHost: {}\r\nAccept: text/plain\r\nUser-Agent: tank\r\n\r\n",
        url.path(),
        url.host_header()
    );
    exchange(url, head.as_bytes(), &[], timeout, max_body)
}

/// `POST url` with `body` and extra header lines (`Name: value`).
pub fn post(
    url: &Url,
    headers: &[String],
    body: &[u8],
    timeout: Duration,
) -> Result<Response, String> {
    let mut head = format!(
        "POST {} HTTP/1.0\r\nHost: {}\r\nUser-Agent: tank\r\nContent-Length: {}\r\n",
        url.path(),
        url.host_header(),
        body.len()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    exchange(url, head.as_bytes(), body, timeout, 1 << 20)
}

fn exchange(
    url: &Url,
    head: &[u8],
    body: &[u8],
    timeout: Duration,
    max_body: usize,
) -> Result<Response, String> {
    let deadline = Instant::now() + timeout;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("timed out after {timeout:?}"))
    };
    let authority = url.authority();
    let addr = authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("no address for {authority}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, left()?).map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(left()?))
        .map_err(|e| e.to_string())?;
    stream.write_all(head).map_err(|e| e.to_string())?;
    stream.write_all(body).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        stream
            .set_read_timeout(Some(left()?))
            .map_err(|e| e.to_string())?;
        let n = match stream.read(&mut buf) {
            Ok(n) => n,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return Err(format!("timed out after {timeout:?}"))
            }
            Err(e) => return Err(e.to_string()),
        };
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if raw.len() > max_body + 64 * 1024 {
            return Err(format!("the response is larger than {max_body} bytes"));
        }
    }
    parse_response(&raw)
}

/// Splits a whole HTTP/1.x response into status and body (Content-Length,
/// chunked, or up to the close).
pub fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the connection closed before the response headers ended")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "response headers are not text")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/1."))
        .ok_or_else(|| {
            format!(
                "not an HTTP response: `{}`",
                status_line.chars().take(60).collect::<String>()
            )
        })?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("transfer-encoding")
                && value.eq_ignore_ascii_case("chunked")
            {
                chunked = true;
            } else if name.eq_ignore_ascii_case("content-length") {
                length = value.parse::<usize>().ok();
            }
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(n) = length {
        if rest.len() < n {
            return Err(format!("the body ended after {} of {n} bytes", rest.len()));
        }
        rest[..n].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, body })
}

fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(data.len());
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk size line is cut short")?;
        let size_text = std::str::from_utf8(&data[..line_end]).map_err(|_| "bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size `{size_text}`"))?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if data.len() < size {
            return Err("a chunk is cut short".into());
        }
        out.extend_from_slice(&data[..size]);
        data = data.get(size + 2..).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_http_only_with_a_default_port() {
        let u = http_url("http://h").unwrap();
        assert_eq!((u.authority().as_str(), u.path()), ("h:80", "/"));
        let error = http_url("https://h/").unwrap_err();
        assert!(error.starts_with("expected an http:// URL"), "{error}");
        let error = http_url("h:9100").unwrap_err();
        assert!(error.starts_with("h:9100: "), "{error}");
    }

    #[test]
    fn responses_by_length_chunks_and_close() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhixx").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, b"hi".as_slice()));
        let r = parse_response(
            b"HTTP/1.1 204 No\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"abc");
        let r = parse_response(b"HTTP/1.0 404 Not Found\r\n\r\nnope").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, b"nope".as_slice()));
        assert!(parse_response(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
    }

    #[test]
    fn a_refused_connection_is_an_error_not_a_hang() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = http_url(&format!("http://127.0.0.1:{port}/metrics")).unwrap();
        assert!(get(&url, Duration::from_secs(2), 1024).is_err());
    }

    #[test]
    fn a_silent_server_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = http_url(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let started = Instant::now();
        let e = get(&url, Duration::from_millis(300), 1024).unwrap_err();
        assert!(e.contains("timed out"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
