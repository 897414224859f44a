//! HTTP/1 request bytes → an HTTP/2 request, once per distinct request.
//!
//! Every ammo format, and a replay's captured requests, are HTTP/1 text; the
//! HTTP/2 gun sends what they mean: the method, `:path` from the request
//! target (an absolute-form target gives `:authority` and `:path`), Host as
//! `:authority` (the target's `host:port` when there is none), the other
//! headers with their names lowercased, and the body (by Content-Length, by
//! chunked framing decoded, else whatever follows the head) as DATA.
//! Connection-specific headers (Connection, Keep-Alive, Proxy-Connection,
//! Transfer-Encoding, Upgrade, and TE other than `trailers`) have no place in
//! HTTP/2 (RFC 9113 §8.2.2) and are dropped; [`Converted::dropped`] names
//! them, for the one warning the plan check gives.
//!
//! Parsing is the slow part, and ammo repeats: the feeder shares one copy of
//! a repeated request, so [`Cache`] keeps each conversion under the address
//! and length of the bytes it came from, checks the bytes on a hit (an
//! address can be reused once a request's bytes are freed), and the hot path
//! costs a lookup and a compare.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{Method, Uri};
use tank_h2::hpack::encode_field;

/// A conversion: the request encoded, with the connection-specific headers
/// it dropped.
#[derive(Debug)]
pub(super) struct Converted {
    /// The request as it goes out: its HPACK block and its body.
    pub request: tank_h2::Request,
    /// The names of the headers dropped, as written.
    pub dropped: Vec<String>,
}

/// The HPACK block of `fields` (names lowercase, pseudo-headers first).
pub(super) fn encode<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Bytes {
    let mut block = Vec::new();
    for (name, value) in fields {
        encode_field(&mut block, name, value);
    }
    Bytes::from(block)
}

/// The most headers a request may have.
const MAX_HEADERS: usize = 256;

/// Convert `bytes`, an HTTP/1 request, for a connection to `authority`
/// (the target's `host:port`) over `scheme` (`http` or `https`).
pub(super) fn convert(bytes: &[u8], authority: &str, scheme: &str) -> Result<Converted, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_len = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return Err("not a whole HTTP/1 request: its head does not end".into())
        }
        Err(e) => return Err(format!("not an HTTP/1 request: {e}")),
    };
    let method_text = parsed.method.unwrap_or_default();
    let method = Method::from_bytes(method_text.as_bytes())
        .map_err(|_| format!("method `{method_text}` is not a token"))?;
    let target = parsed.path.unwrap_or("/");
    let mut authority_of_target = None;
    let path = match target.split_once("://") {
        // Absolute form: the target names the authority too.
        Some((_, rest)) => {
            let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            authority_of_target = Some(host.to_owned());
            if path.is_empty() {
                "/"
            } else {
                path
            }
        }
        None => target,
    };
    let mut headers: Vec<(String, Vec<u8>)> = Vec::with_capacity(parsed.headers.len() + 4);
    let mut host = None;
    let mut dropped = Vec::new();
    // Framed as every HTTP/1 request of tank is (tank-http1's rules).
    let mut framing = tank_http1::Framing::default();
    for header in parsed.headers.iter() {
        framing
            .header(header.name.as_bytes(), header.value)
            .map_err(|e| e.to_string())?;
        let lower = header.name.to_ascii_lowercase();
        match lower.as_str() {
            "host" => {
                let value = std::str::from_utf8(header.value)
                    .map_err(|_| "the Host header is not text".to_owned())?;
                host = Some(value.trim().to_owned());
                continue;
            }
            "transfer-encoding" | "connection" | "keep-alive" | "proxy-connection" | "upgrade" => {
                dropped.push(header.name.to_owned());
                continue;
            }
            "te" if !header.value.eq_ignore_ascii_case(b"trailers") => {
                dropped.push(header.name.to_owned());
                continue;
            }
            _ => {}
        }
        HeaderName::from_bytes(lower.as_bytes())
            .map_err(|_| format!("header name `{}` is not a token", header.name))?;
        HeaderValue::from_bytes(header.value)
            .map_err(|_| format!("header `{}` has a value HTTP/2 cannot carry", header.name))?;
        headers.push((lower, header.value.to_vec()));
    }
    framing.request_body().map_err(|e| e.to_string())?;
    let rest = &bytes[head_len..];
    let body = if framing.chunked {
        let body = dechunk(rest, head_len)?;
        headers.retain(|(name, _)| name != "content-length");
        headers.push(("content-length".into(), body.len().to_string().into_bytes()));
        body
    } else {
        match framing.length.map(usize::try_from) {
            Some(Ok(n)) if n <= rest.len() => rest[..n].to_vec(),
            Some(_) => {
                return Err(format!(
                    "Content-Length {}, but the request holds {} bytes of body",
                    framing.length.unwrap_or(0),
                    rest.len()
                ))
            }
            None => rest.to_vec(),
        }
    };
    let authority = host
        .filter(|h| !h.is_empty())
        .or(authority_of_target)
        .unwrap_or_else(|| authority.to_owned());
    let uri = Uri::builder()
        .scheme(scheme)
        .authority(authority.as_str())
        .path_and_query(path)
        .build()
        .map_err(|e| format!("`{authority}` and `{path}` do not make a URI: {e}"))?;
    let authority = uri.authority().map_or("", |a| a.as_str());
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut fields: Vec<(String, Vec<u8>)> = vec![
        (":method".into(), method.as_str().as_bytes().to_vec()),
        (":scheme".into(), scheme.as_bytes().to_vec()),
        (":authority".into(), authority.as_bytes().to_vec()),
        (":path".into(), path.as_bytes().to_vec()),
    ];
    fields.extend(headers);
    let block = encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_slice())));
    Ok(Converted {
        request: tank_h2::Request {
            block,
            body: Bytes::from(body),
            head: method == Method::HEAD,
        },
        dropped,
    })
}

/// A chunked body decoded (trailers, if any, are not kept). `at` is where
/// the body starts in the request, for the errors' byte offsets.
fn dechunk(mut rest: &[u8], mut at: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").ok_or_else(|| {
            format!("the chunk size line at byte {at} of the request does not end")
        })?;
        let line = &rest[..line_end];
        let size_text = line
            .split(|b| *b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        let size = std::str::from_utf8(size_text)
            .ok()
            .and_then(|text| usize::from_str_radix(text, 16).ok())
            .ok_or_else(|| {
                format!(
                    "chunk size `{}` at byte {at} of the request is not hexadecimal",
                    size_text.escape_ascii()
                )
            })?;
        rest = &rest[line_end + 2..];
        at += line_end + 2;
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size.saturating_add(2) {
            return Err(format!(
                "the chunk of {size} bytes at byte {at} of the request is cut short: {} bytes follow",
                rest.len()
            ));
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
        at += size + 2;
    }
}

/// A cached conversion: the bytes it came from, and the request.
type Entry = (Box<[u8]>, Arc<tank_h2::Request>);

/// Conversions by the address and length of the bytes they came from.
pub(super) struct Cache {
    authority: String,
    scheme: &'static str,
    entries: foldhash::HashMap<(usize, usize), Entry>,
    bytes: usize,
}

/// The most bytes of requests a cache keeps (then it starts over).
const CACHE_BYTES: usize = 8 << 20;

impl Cache {
    /// Conversions for connections to `authority` over `scheme`.
    pub(super) fn new(authority: String, scheme: &'static str) -> Self {
        Cache {
            authority,
            scheme,
            entries: Default::default(),
            bytes: 0,
        }
    }

    /// The conversion of `bytes`.
    pub(super) fn get(&mut self, bytes: &[u8]) -> Result<Arc<tank_h2::Request>, String> {
        let key = (bytes.as_ptr() as usize, bytes.len());
        if let Some((source, request)) = self.entries.get(&key) {
            if **source == *bytes {
                return Ok(Arc::clone(request));
            }
        }
        let request = Arc::new(convert(bytes, &self.authority, self.scheme)?.request);
        if self.bytes + bytes.len() > CACHE_BYTES {
            self.entries.clear();
            self.bytes = 0;
        }
        self.bytes += bytes.len();
        self.entries
            .insert(key, (bytes.into(), Arc::clone(&request)));
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The value of `name` among the fields the block decodes to.
    fn field(converted: &Converted, name: &str) -> Option<Vec<u8>> {
        decoded(&converted.request)
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// The fields as the block decodes.
    fn decoded(request: &tank_h2::Request) -> Vec<(String, Vec<u8>)> {
        let mut fields = Vec::new();
        tank_h2::hpack::Decoder::new(4096)
            .decode(
                &request.block,
                |_| true,
                |n, v| fields.push((String::from_utf8_lossy(n).into_owned(), v.to_vec())),
            )
            .unwrap();
        fields
    }

    #[test]
    fn host_becomes_the_authority_and_hop_by_hop_headers_go() {
        let converted = convert(
            b"POST /a?b=1 HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive\r\n\
              Keep-Alive: 5\r\nX-Trace: 7\r\nTE: gzip\r\nContent-Length: 3\r\n\r\nabcXYZ",
            "127.0.0.1:80",
            "http",
        )
        .unwrap();
        assert_eq!(field(&converted, ":method").unwrap(), b"POST");
        assert_eq!(field(&converted, ":authority").unwrap(), b"example.com");
        assert_eq!(field(&converted, ":path").unwrap(), b"/a?b=1");
        assert_eq!(field(&converted, "x-trace").unwrap(), b"7");
        assert!(field(&converted, "host").is_none());
        assert_eq!(converted.request.body, &b"abc"[..]);
        assert_eq!(converted.dropped, ["Connection", "Keep-Alive", "TE"]);
        let names: Vec<String> = decoded(&converted.request)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            [
                ":method",
                ":scheme",
                ":authority",
                ":path",
                "x-trace",
                "content-length"
            ]
        );
    }

    #[test]
    fn without_host_the_target_is_the_authority() {
        let converted = convert(
            b"GET / HTTP/1.0\r\nTE: trailers\r\n\r\n",
            "10.0.0.1:8080",
            "https",
        )
        .unwrap();
        assert_eq!(field(&converted, ":scheme").unwrap(), b"https");
        assert_eq!(field(&converted, ":authority").unwrap(), b"10.0.0.1:8080");
        assert_eq!(field(&converted, ":path").unwrap(), b"/");
        assert_eq!(field(&converted, "te").unwrap(), b"trailers");
        assert!(converted.dropped.is_empty());
    }

    #[test]
    fn absolute_targets_and_chunked_bodies() {
        let converted = convert(
            b"PUT http://api.example:81/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
              3\r\nabc\r\n2;ext\r\nde\r\n0\r\n\r\n",
            "t:1",
            "http",
        )
        .unwrap();
        assert_eq!(field(&converted, ":authority").unwrap(), b"api.example:81");
        assert_eq!(field(&converted, ":path").unwrap(), b"/x");
        assert_eq!(converted.request.body, &b"abcde"[..]);
        assert_eq!(field(&converted, "content-length").unwrap(), b"5");
        assert_eq!(converted.dropped, ["Transfer-Encoding"]);
        let head = convert(b"HEAD /x HTTP/1.1\r\n\r\n", "t:1", "http").unwrap();
        assert_eq!(field(&head, ":method").unwrap(), b"HEAD");
    }

    #[test]
    fn what_cannot_be_converted_says_why() {
        let cases: [(&[u8], &str); 4] = [
            (b"GET / HTTP/1.1\r\nHost: a", "its head does not end"),
            (b"\x01\x02", "not an HTTP/1 request"),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nab",
                "holds 2 bytes",
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "hexadecimal",
            ),
        ];
        for (bytes, expected) in cases {
            let error = convert(bytes, "t:1", "http").unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
    }

    /// A broken chunked body is located by its byte offset in the request.
    #[test]
    fn a_broken_chunk_is_located() {
        let head = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        let at = |n: usize| head.len() + n;
        let cases: [(&[u8], String); 4] = [
            (b"zz\r\n", format!("chunk size `zz` at byte {} of", at(0))),
            (
                b"3\r\nabc\r\n\xff\r\n",
                format!("chunk size `\\xff` at byte {} of", at(8)),
            ),
            (
                b"3\r\nabc\r\n4",
                format!("line at byte {} of the request does not end", at(8)),
            ),
            (
                b"ffffffffffffffff\r\nab",
                format!(
                    "at byte {} of the request is cut short: 2 bytes follow",
                    at(18)
                ),
            ),
        ];
        for (body, expected) in cases {
            let request = [&head[..], body].concat();
            let error = convert(&request, "t:1", "http").unwrap_err();
            assert!(error.contains(&expected), "{error}");
        }
    }

    #[test]
    fn the_cache_checks_the_bytes_behind_an_address() {
        let mut cache = Cache::new("t:1".into(), "http");
        let mut buffer = b"GET /one HTTP/1.1\r\n\r\n".to_vec();
        let path = |request: &tank_h2::Request| {
            decoded(request)
                .into_iter()
                .find(|(n, _)| n == ":path")
                .map(|(_, v)| v)
        };
        assert_eq!(path(&cache.get(&buffer).unwrap()).unwrap(), b"/one");
        // The same address and length, other bytes: converted anew.
        buffer[5..8].copy_from_slice(b"two");
        assert_eq!(path(&cache.get(&buffer).unwrap()).unwrap(), b"/two");
        let again = cache.get(&buffer).unwrap();
        assert!(Arc::ptr_eq(&again, &cache.get(&buffer).unwrap()));
    }

    proptest! {
        #[test]
        fn any_bytes_convert_or_err_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = convert(&bytes, "t:1", "http");
        }

        #[test]
        fn a_body_of_any_length_comes_through_whole(body in proptest::collection::vec(any::<u8>(), 0..500)) {
            let mut bytes = format!("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
            bytes.extend_from_slice(&body);
            let converted = convert(&bytes, "t:1", "http").unwrap();
            prop_assert_eq!(&converted.request.body[..], &body[..]);
        }

        /// A chunked body of any pieces (sizes of any width, lines cut
        /// anywhere) converts or says why, and a converted one is whole.
        #[test]
        fn any_chunked_body_converts_or_errs_without_panicking(
            pieces in proptest::collection::vec(
                prop_oneof![
                    Just(b"ffffffffffffffff".to_vec()),
                    Just(b"0".to_vec()),
                    Just(b"3".to_vec()),
                    Just(b";ext".to_vec()),
                    Just(b"\r\n".to_vec()),
                    proptest::collection::vec(any::<u8>(), 0..6),
                ],
                0..12,
            ),
        ) {
            let mut bytes = b"POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            bytes.extend(pieces.concat());
            if let Ok(converted) = convert(&bytes, "t:1", "http") {
                let length = converted.request.body.len().to_string().into_bytes();
                prop_assert_eq!(field(&converted, "content-length"), Some(length));
            }
        }
    }
}
