//! A reply as the postprocessors read it: its status, headers and body,
//! from the bytes the gun captured. The gun contract gives the head as
//! HTTP/1 text whatever the protocol, so this reads HTTP/1: interim `1xx`
//! replies skipped, a chunked body joined, a `Content-Length` body cut to its
//! length. (A compressed body is read as it came: ask for it uncompressed.)

use std::borrow::Cow;

/// Most header lines a reply may have here (phantom's default limit is 128).
const MAX_HEADERS: usize = 256;
/// Header lines a reply is read with room for first: replies have a dozen or
/// so, and the room is cleared for every reply (8 KiB for [`MAX_HEADERS`],
/// which cost more than the parse). A reply with more is read again with
/// room for [`MAX_HEADERS`].
const FEW_HEADERS: usize = 32;

/// Why a head cannot be read.
#[derive(Debug)]
enum HeadError {
    /// More header lines than the room given.
    TooMany,
    /// Anything else, said.
    Other(String),
}

impl From<HeadError> for String {
    fn from(error: HeadError) -> String {
        match error {
            HeadError::TooMany => format!(
                "the reply's head cannot be read: {}",
                httparse::Error::TooManyHeaders
            ),
            HeadError::Other(text) => text,
        }
    }
}

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

/// A head's status, its length, and its headers (parsed into `storage`). An
/// HTTP/2 reply's head comes as HTTP/1 text with `HTTP/2` for its version and
/// no reason phrase (the gun contract's form), which httparse's status line
/// does not take: its headers are read by httparse alone.
fn parse_head<'r, 'h>(
    bytes: &'r [u8],
    storage: &'h mut [httparse::Header<'r>],
) -> Result<(u16, usize, &'h [httparse::Header<'r>]), HeadError> {
    let cut = || HeadError::Other("the reply's head is cut short".to_owned());
    let unreadable = |e: httparse::Error| match e {
        httparse::Error::TooManyHeaders => HeadError::TooMany,
        e => HeadError::Other(format!("the reply's head cannot be read: {e}")),
    };
    if let Some(after) = bytes.strip_prefix(b"HTTP/2 ") {
        let line_end = memchr::memmem::find(after, b"\r\n").ok_or_else(cut)?;
        let status = std::str::from_utf8(&after[..line_end])
            .ok()
            .and_then(|line| line.split(' ').next()?.parse::<u16>().ok())
            .ok_or_else(|| HeadError::Other("the reply's status line cannot be read".into()))?;
        let start = 7 + line_end + 2;
        return match httparse::parse_headers(&bytes[start..], storage).map_err(unreadable)? {
            httparse::Status::Complete((length, headers)) => Ok((status, start + length, headers)),
            httparse::Status::Partial => Err(cut()),
        };
    }
    let mut response = httparse::Response::new(storage);
    let length = match response.parse(bytes).map_err(unreadable)? {
        httparse::Status::Complete(length) => length,
        httparse::Status::Partial => return Err(cut()),
    };
    Ok((response.code.unwrap_or(0), length, response.headers))
}

/// Read `bytes`, the reply to a request whose method was `HEAD` when `head`.
/// Its body is framed by tank-http1, as the gun framed it on the wire.
pub(crate) fn read(bytes: &[u8], head: bool) -> Result<Reply<'_>, String> {
    let mut rest = bytes;
    loop {
        let mut few = [httparse::EMPTY_HEADER; FEW_HEADERS];
        let mut many = Vec::new();
        let (status, length, headers) = match parse_head(rest, &mut few) {
            Err(HeadError::TooMany) => {
                many.resize(MAX_HEADERS, httparse::EMPTY_HEADER);
                parse_head(rest, &mut many)
            }
            parsed => parsed,
        }?;
        let body = &rest[length..];
        if (100..200).contains(&status) && status != 101 {
            rest = body;
            continue;
        }
        let mut framing = tank_http1::Framing::default();
        for header in headers.iter() {
            framing
                .header(header.name.as_bytes(), header.value)
                .map_err(|e| format!("the reply's head cannot be read: {e}"))?;
        }
        let reply = Reply {
            status,
            headers: headers.iter().map(|h| (h.name, h.value)).collect(),
            body: Cow::Borrowed(&[][..]),
        };
        if head || status == 204 || status == 304 {
            return Ok(reply);
        }
        let body = if framing.chunked {
            let mut decoded = Vec::with_capacity(body.len());
            let (_, ended) = tank_http1::BodyDecoder::chunked()
                .decode_with(body, usize::MAX, u64::MAX, |data| {
                    decoded.extend_from_slice(data)
                })
                .map_err(|e| format!("the reply's body cannot be read: {e}"))?;
            if !ended {
                return Err("the reply's body is cut short".into());
            }
            Cow::Owned(decoded)
        } else {
            match framing.length.filter(|_| !framing.transfer_coded) {
                Some(length) => Cow::Borrowed(
                    usize::try_from(length)
                        .ok()
                        .and_then(|length| body.get(..length))
                        .ok_or("the reply's body is cut short")?,
                ),
                // A reply that runs to the close: what came is the body.
                None => Cow::Borrowed(body),
            }
        };
        return Ok(Reply { body, ..reply });
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
    fn an_http2_head_as_the_gun_writes_it() {
        let reply = read(
            b"HTTP/2 201\r\ncontent-type: application/json\r\nset-cookie: a=1\r\n\r\n{}",
            false,
        )
        .unwrap();
        assert_eq!(reply.status, 201);
        assert_eq!(reply.header("Content-Type"), Some(&b"application/json"[..]));
        assert_eq!(&*reply.body, b"{}");
        assert!(read(b"HTTP/2 2x\r\n\r\n", false).is_err());
        assert!(read(b"HTTP/2 200\r\nx: y", false).is_err());
    }

    #[test]
    fn a_reply_with_many_headers_is_read_whole() {
        let mut wire = String::from("HTTP/1.1 200 OK\r\n");
        for i in 0..FEW_HEADERS * 2 {
            wire.push_str(&format!("X-{i}: {i}\r\n"));
        }
        wire.push_str("Content-Length: 2\r\n\r\nhi");
        let reply = read(wire.as_bytes(), false).unwrap();
        assert_eq!(reply.headers.len(), FEW_HEADERS * 2 + 1);
        assert_eq!(reply.header("x-40"), Some(&b"40"[..]));
        assert_eq!(&*reply.body, b"hi");
        let mut wire = String::from("HTTP/1.1 200 OK\r\n");
        for i in 0..=MAX_HEADERS {
            wire.push_str(&format!("X-{i}: {i}\r\n"));
        }
        wire.push_str("\r\n");
        assert!(read(wire.as_bytes(), false).is_err());
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
