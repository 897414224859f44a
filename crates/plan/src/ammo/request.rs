//! Requests built from uri, uripost, access and `uris` ammo, byte for byte as
//! the reference builds them:
//!
//! ```text
//! METHOD SP uri SP HTTP/<ver> CRLF
//! <each header, byte-wise sorted, duplicates removed> CRLF ...
//! CRLF
//! <body>
//! ```
//! A non-empty body adds `Content-Length: <len>` to the header set (sorted
//! like any other header; a user's own Content-Length is kept too).

/// A set of header lines (`Name: value`), kept sorted and unique.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderSet {
    sorted: Vec<Vec<u8>>,
}

impl HeaderSet {
    /// Collect header lines into the set.
    pub fn new<I, H>(headers: I) -> Self
    where
        I: IntoIterator<Item = H>,
        H: Into<Vec<u8>>,
    {
        let mut sorted: Vec<Vec<u8>> = headers.into_iter().map(Into::into).collect();
        sorted.sort_unstable();
        sorted.dedup();
        HeaderSet { sorted }
    }

    /// Append the request to `out`.
    pub fn write_request(
        &self,
        out: &mut Vec<u8>,
        method: &[u8],
        uri: &[u8],
        http_ver: &[u8],
        body: &[u8],
    ) {
        out.extend_from_slice(method);
        out.push(b' ');
        out.extend_from_slice(uri);
        out.extend_from_slice(b" HTTP/");
        out.extend_from_slice(http_ver);
        out.extend_from_slice(b"\r\n");
        if body.is_empty() {
            for header in &self.sorted {
                push_header(out, header);
            }
        } else {
            let mut length = b"Content-Length: ".to_vec();
            length.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
            let at = self
                .sorted
                .partition_point(|h| h.as_slice() < length.as_slice());
            let duplicate = self.sorted.get(at).is_some_and(|h| *h == length);
            for header in &self.sorted[..at] {
                push_header(out, header);
            }
            if !duplicate {
                push_header(out, &length);
            }
            for header in &self.sorted[at..] {
                push_header(out, header);
            }
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
    }
}

fn push_header(out: &mut Vec<u8>, header: &[u8]) {
    out.extend_from_slice(header);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[&str], method: &str, body: &[u8]) -> String {
        let mut out = Vec::new();
        HeaderSet::new(headers.iter().map(|h| h.as_bytes().to_vec())).write_request(
            &mut out,
            method.as_bytes(),
            b"/x",
            b"1.0",
            body,
        );
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn get_without_headers_ends_with_blank_line() {
        assert_eq!(request(&[], "GET", b""), "GET /x HTTP/1.0\r\n\r\n");
    }

    #[test]
    fn headers_are_sorted_bytewise_and_unique() {
        assert_eq!(
            request(
                &["accept: */*", "Host: a", "Connection: close", "Host: a"],
                "GET",
                b""
            ),
            "GET /x HTTP/1.0\r\nConnection: close\r\nHost: a\r\naccept: */*\r\n\r\n"
        );
    }

    #[test]
    fn body_adds_content_length_in_sorted_place() {
        assert_eq!(
            request(&["Host: a", "Connection: close"], "POST", b"hello"),
            "POST /x HTTP/1.0\r\nConnection: close\r\nContent-Length: 5\r\nHost: a\r\n\r\nhello"
        );
        assert_eq!(
            request(&["Content-Length: 5"], "POST", b"hello"),
            "POST /x HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello"
        );
        assert_eq!(
            request(&["Content-Length: 7"], "POST", b"hello"),
            "POST /x HTTP/1.0\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello"
        );
    }
}
