//! A reply as the postprocessors read it: its status, headers and body,
//! from the bytes the gun captured. The gun contract gives the head as
//! HTTP/1 text whatever the protocol, so this reads HTTP/1: interim `1xx`
//! replies skipped, a chunked body joined, a `Content-Length` body cut to its
//! length. (A compressed body is read as it came: ask for it uncompressed.)

use std::borrow::Cow;

/// Most header lines a reply may have here (phantom's default limit is 128).
const MAX_HEADERS: usize = 256;

/// A reply, borrowing the captured bytes where it can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply<'r> {
    pub status: u16,
    pub headers: Vec<(&'r str, &'r [u8])>,
    pub body: Cow<'r, [u8]>,
}

impl<'r> Reply<'r> {
    /// The first value of header `name` (any case), as Go's `Header.Get`.
    pub(crate) fn header(&self, name: &str) -> Option<&'r [u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    /// Every value of header `name`.
    pub(crate) fn headers_named<'s>(
        &'s self,
        name: &'s str,
    ) -> impl Iterator<Item = &'r [u8]> + 's {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

/// Read `bytes`, the reply to a request whose method was `HEAD` when `head`.
pub(crate) fn read(bytes: &[u8], head: bool) -> Result<Reply<'_>, String> {
    let mut rest = bytes;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let length = match response.parse(rest) {
            Ok(httparse::Status::Complete(length)) => length,
            Ok(httparse::Status::Partial) => return Err("the reply's head is cut short".into()),
            Err(e) => return Err(format!("the reply's head cannot be read: {e}")),
        };
        let status = response.code.unwrap_or(0);
        let body = &rest[length..];
        if (100..200).contains(&status) && status != 101 {
            rest = body;
            continue;
        }
        let headers: Vec<(&str, &[u8])> =
            response.headers.iter().map(|h| (h.name, h.value)).collect();
        let reply = Reply {
            status,
            headers,
            body: Cow::Borrowed(&[][..]),
        };
        if head || status == 204 || status == 304 {
            return Ok(reply);
        }
        let chunked = reply.header("transfer-encoding").is_some_and(|v| {
            String::from_utf8_lossy(v)
                .to_ascii_lowercase()
                .contains("chunked")
        });
        let body = if chunked {
            Cow::Owned(dechunk(body)?)
        } else {
            match reply.header("content-length") {
                Some(value) => {
                    let length: usize = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.trim().parse().ok())
                        .ok_or("the reply's Content-Length is not a number")?;
                    Cow::Borrowed(body.get(..length).ok_or("the reply's body is cut short")?)
                }
                None => Cow::Borrowed(body),
            }
        };
        return Ok(Reply { body, ..reply });
    }
}

/// Join a chunked body's chunks.
fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(data.len());
    loop {
        let line_end =
            memchr::memmem::find(data, b"\r\n").ok_or("a chunk's size line is cut short")?;
        let line =
            std::str::from_utf8(&data[..line_end]).map_err(|_| "a chunk's size is not text")?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("a chunk's size `{size_text}` is not hexadecimal"))?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = data.get(..size).ok_or("a chunk is cut short")?;
        out.extend_from_slice(chunk);
        data = data
            .get(size..)
            .and_then(|d| d.strip_prefix(b"\r\n"))
            .ok_or("a chunk does not end with CRLF")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_content_length_body() {
        let reply = read(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\nx-a: 2\r\n\r\nhi",
            false,
        )
        .unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(&*reply.body, b"hi");
        assert_eq!(reply.header("X-a"), Some(&b"1"[..]));
        assert_eq!(reply.headers_named("x-A").count(), 2);
    }

    #[test]
    fn a_chunked_body_after_an_interim_reply() {
        let reply = read(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            false,
        )
        .unwrap();
        assert_eq!(reply.status, 201);
        assert_eq!(&*reply.body, b"abcde");
    }

    #[test]
    fn a_head_reply_and_a_close_delimited_body() {
        let reply = read(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", true).unwrap();
        assert!(reply.body.is_empty());
        let reply = read(b"HTTP/1.0 200 OK\r\n\r\nall of it", false).unwrap();
        assert_eq!(&*reply.body, b"all of it");
    }

    #[test]
    fn broken_replies_are_errors() {
        assert!(read(b"HTTP/1.1 200", false).is_err());
        assert!(read(b"garbage\r\n\r\n", false).is_err());
        assert!(read(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab", false).is_err());
        assert!(read(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            false
        )
        .is_err());
    }

    proptest! {
        #[test]
        fn chunks_join_to_the_body(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..50), 0..6)) {
            let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            let mut body = Vec::new();
            for chunk in &chunks {
                wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                wire.extend_from_slice(chunk);
                wire.extend_from_slice(b"\r\n");
                body.extend_from_slice(chunk);
            }
            wire.extend_from_slice(b"0\r\n\r\n");
            let reply = read(&wire, false).unwrap();
            prop_assert_eq!(&*reply.body, &body[..]);
        }

        #[test]
        fn reading_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = read(&bytes, false);
        }
    }
}
