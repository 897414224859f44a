//! An incremental HTTP/1.x response reader: fed bytes as they arrive, it says
//! when the response is complete, how it ended and whether the connection may
//! be reused. Bodies are counted, never kept.
//!
//! Framing follows RFC 9112: 1xx responses are skipped; HEAD requests and 204
//! and 304 responses have no body; then `Transfer-Encoding: chunked`, then
//! `Content-Length`, else the body runs to the end of the connection.

use std::mem::MaybeUninit;

use super::limits::Limits;

/// Why a reply is broken (phantom reports these as net code 71, EPROTO).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The status line or headers do not parse.
    #[error("malformed reply head: {0}")]
    Head(String),
    /// A limit from [`Limits`] was exceeded.
    #[error("reply exceeds {0}")]
    TooLarge(&'static str),
    /// A chunked body that does not parse.
    #[error("malformed chunked body: {0}")]
    Chunked(String),
    /// The connection ended before the reply did.
    #[error("connection closed in the middle of the reply")]
    Truncated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// `n` more bytes.
    Length(u64),
    /// Chunked, in the given step.
    Chunked(Chunk),
    /// Until the connection closes.
    UntilClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading a size line (the bytes so far are in `line`).
    Size,
    /// `n` bytes of chunk data left.
    Data(u64),
    /// The CRLF after chunk data (`n` bytes of it seen).
    DataEnd(u8),
    /// Trailer lines after the last chunk, up to an empty line.
    Trailers,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Head,
    Body(Body),
    Done,
}

/// What a response amounted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The final status code.
    pub status: u16,
    /// Whether the connection may carry the next request.
    pub keep_alive: bool,
}

/// Reads one response (after any 1xx ones).
#[derive(Debug)]
pub struct ResponseReader {
    limits: Limits,
    head_request: bool,
    head: Vec<u8>,
    line: Vec<u8>,
    state: State,
    status: u16,
    keep_alive: bool,
    body_seen: u64,
}

impl ResponseReader {
    /// A reader for the reply to a request; `head_request` when the request
    /// was `HEAD` (its reply has no body).
    pub fn new(limits: Limits, head_request: bool) -> Self {
        ResponseReader {
            limits,
            head_request,
            head: Vec::new(),
            line: Vec::new(),
            state: State::Head,
            status: 0,
            keep_alive: false,
            body_seen: 0,
        }
    }

    /// The reply, once [`Self::feed`] or [`Self::finish_at_eof`] said it is complete.
    pub fn reply(&self) -> Option<Reply> {
        (self.state == State::Done).then_some(Reply {
            status: self.status,
            keep_alive: self.keep_alive,
        })
    }

    /// Feed the next bytes. Returns `Some(n)` when the reply completed after
    /// `n` of them (bytes after that are not part of it), `None` when more are needed.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<Option<usize>, ReplyError> {
        let total = data.len();
        loop {
            match self.state {
                State::Done => return Ok(Some(total - data.len())),
                State::Head => {
                    let (used, complete) = self.feed_head(data)?;
                    data = &data[used..];
                    // An incomplete head needs more bytes; a complete interim (1xx)
                    // head leaves us in Head for the final response's bytes.
                    if !complete {
                        return Ok(None);
                    }
                }
                State::Body(body) => {
                    let used = self.feed_body(body, data)?;
                    data = &data[used..];
                    if matches!(self.state, State::Body(_)) && data.is_empty() {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// The connection closed: a body that runs to the close is complete; anything else is truncated.
    pub fn finish_at_eof(&mut self) -> Result<Reply, ReplyError> {
        if self.state == State::Body(Body::UntilClose) {
            self.state = State::Done;
        }
        self.reply().ok_or(ReplyError::Truncated)
    }

    /// Accumulate head bytes until the blank line; returns bytes used and
    /// whether a whole head was read.
    fn feed_head(&mut self, data: &[u8]) -> Result<(usize, bool), ReplyError> {
        if self.head.is_empty() {
            // The usual case: the whole head came in one read; parse it in place.
            if let Some(end) = scan_head(data, &self.limits)? {
                self.parse_head(&data[..end])?;
                return Ok((end, true));
            }
        }
        let start = self.head.len();
        self.head.extend_from_slice(data);
        let Some(end) = scan_head(&self.head, &self.limits)? else {
            return Ok((data.len(), false));
        };
        let head = std::mem::take(&mut self.head);
        self.parse_head(&head[..end])?;
        // Keep the allocation for an interim (1xx) reply's successor.
        self.head = head;
        self.head.clear();
        Ok((end - start, true))
    }

    /// Parse a whole head that [`scan_head`] found and checked.
    fn parse_head(&mut self, head: &[u8]) -> Result<(), ReplyError> {
        // Uninitialised slots: filling `field_num` (128 by default) empty headers
        // per reply would cost more than parsing it.
        let mut inline = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; INLINE_HEADERS];
        let mut spilled = Vec::new();
        let slots = if self.limits.field_num <= INLINE_HEADERS {
            &mut inline[..self.limits.field_num]
        } else {
            spilled.resize_with(self.limits.field_num, MaybeUninit::uninit);
            &mut spilled[..]
        };
        let mut response = httparse::Response::new(&mut []);
        match httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut response,
            head,
            slots,
        ) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => {
                return Err(ReplyError::Head("incomplete head".into()))
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(ReplyError::TooLarge("phantom_http_field_num"))
            }
            Err(error) => return Err(ReplyError::Head(error.to_string())),
        }
        let status = response.code.unwrap_or(0);
        let version = response.version.unwrap_or(0);
        let mut close = false;
        let mut keep_alive_header = false;
        let mut chunked = false;
        let mut length: Option<u64> = None;
        for header in response.headers.iter() {
            let name = header.name;
            // Most headers are none of the three: their length rules them out.
            if !matches!(name.len(), 10 | 14 | 17) {
                continue;
            }
            if name.eq_ignore_ascii_case("connection") {
                for token in header.value.split(|b| *b == b',') {
                    let token = token.trim_ascii();
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep_alive_header |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                let last = header
                    .value
                    .rsplit(|b| *b == b',')
                    .next()
                    .unwrap_or_default();
                chunked = last.trim_ascii().eq_ignore_ascii_case(b"chunked");
            } else if name.eq_ignore_ascii_case("content-length") {
                let value = content_length(header.value)
                    .ok_or_else(|| ReplyError::Head("bad Content-Length".into()))?;
                if length.is_some_and(|l| l != value) {
                    return Err(ReplyError::Head(
                        "conflicting Content-Length headers".into(),
                    ));
                }
                length = Some(value);
            }
        }
        if (100..200).contains(&status) && status != 101 {
            // An interim response: the real one follows.
            return Ok(());
        }
        self.status = status;
        self.keep_alive = !close && (version == 1 || keep_alive_header);
        let no_body = self.head_request || status == 204 || status == 304 || status == 101;
        self.state = if no_body {
            State::Done
        } else if chunked {
            State::Body(Body::Chunked(Chunk::Size))
        } else if let Some(length) = length {
            if length > self.limits.entity {
                return Err(ReplyError::TooLarge("phantom_http_entity"));
            }
            if length == 0 {
                State::Done
            } else {
                State::Body(Body::Length(length))
            }
        } else {
            self.keep_alive = false;
            State::Body(Body::UntilClose)
        };
        if status == 101 {
            self.keep_alive = false;
        }
        Ok(())
    }

    fn count_body(&mut self, n: u64) -> Result<(), ReplyError> {
        self.body_seen += n;
        if self.body_seen > self.limits.entity {
            return Err(ReplyError::TooLarge("phantom_http_entity"));
        }
        Ok(())
    }

    fn feed_body(&mut self, body: Body, data: &[u8]) -> Result<usize, ReplyError> {
        match body {
            Body::Length(left) => {
                let take = left.min(data.len() as u64);
                self.count_body(take)?;
                self.state = if take == left {
                    State::Done
                } else {
                    State::Body(Body::Length(left - take))
                };
                Ok(take as usize)
            }
            Body::UntilClose => {
                self.count_body(data.len() as u64)?;
                Ok(data.len())
            }
            Body::Chunked(chunk) => self.feed_chunked(chunk, data),
        }
    }

    fn feed_chunked(&mut self, chunk: Chunk, data: &[u8]) -> Result<usize, ReplyError> {
        match chunk {
            Chunk::Size | Chunk::Trailers => {
                let Some(at) = data.iter().position(|b| *b == b'\n') else {
                    self.line.extend_from_slice(data);
                    if self.line.len() > self.limits.field {
                        return Err(ReplyError::TooLarge("phantom_http_field"));
                    }
                    return Ok(data.len());
                };
                self.line.extend_from_slice(&data[..at]);
                let line = std::mem::take(&mut self.line);
                let line = line.strip_suffix(b"\r").unwrap_or(&line);
                if chunk == Chunk::Trailers {
                    if line.is_empty() {
                        self.state = State::Done;
                    }
                } else {
                    let size = chunk_size(line)?;
                    self.state = State::Body(Body::Chunked(if size == 0 {
                        Chunk::Trailers
                    } else {
                        Chunk::Data(size)
                    }));
                }
                Ok(at + 1)
            }
            Chunk::Data(left) => {
                let take = left.min(data.len() as u64);
                self.count_body(take)?;
                let next = if take == left {
                    Chunk::DataEnd(0)
                } else {
                    Chunk::Data(left - take)
                };
                self.state = State::Body(Body::Chunked(next));
                Ok(take as usize)
            }
            Chunk::DataEnd(seen) => {
                let expected: &[u8] = &b"\r\n"[seen as usize..];
                let mut used = 0;
                for (&want, &got) in expected.iter().zip(data) {
                    if want != got {
                        // Tolerate a bare LF after the data.
                        if got == b'\n' && seen + used as u8 == 0 {
                            self.state = State::Body(Body::Chunked(Chunk::Size));
                            return Ok(1);
                        }
                        return Err(ReplyError::Chunked(
                            "chunk data not followed by CRLF".into(),
                        ));
                    }
                    used += 1;
                }
                let seen = seen + used as u8;
                self.state = State::Body(Body::Chunked(if seen == 2 {
                    Chunk::Size
                } else {
                    Chunk::DataEnd(seen)
                }));
                Ok(used)
            }
        }
    }
}

/// A Content-Length value: plain digits the quick way, anything else as Rust
/// parses a trimmed `u64` (which also takes a leading `+`).
fn content_length(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if !digits.is_empty() && digits.len() <= 19 && digits.iter().all(u8::is_ascii_digit) {
        return Some(digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')));
    }
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

/// Header slots kept on the stack; a larger `phantom_http_field_num` spills to the heap.
const INLINE_HEADERS: usize = 128;

/// One pass over the lines of a head, whole or partial: the end of the head (just
/// past the first CRLF CRLF, or the bare LF LF that httparse also accepts), and
/// phantom's limits checked on the way, so a head that breaks one fails early.
/// Lines are counted without their LF; the status line is held to `line`, the
/// others to `field`, and the LFs seen (the lines after the status line) to
/// `field_num` + 1.
fn scan_head(head: &[u8], limits: &Limits) -> Result<Option<usize>, ReplyError> {
    let check = |index: usize, len: usize| {
        let (limit, what) = if index == 0 {
            (limits.line, "phantom_http_line")
        } else {
            (limits.field, "phantom_http_field")
        };
        if len > limit {
            Err(ReplyError::TooLarge(what))
        } else {
            Ok(())
        }
    };
    let count = |lfs: usize| {
        if lfs > limits.field_num + 1 {
            Err(ReplyError::TooLarge("phantom_http_field_num"))
        } else {
            Ok(())
        }
    };
    let mut line_start = 0;
    let mut lfs = 0;
    for at in memchr::memchr_iter(b'\n', head) {
        check(lfs, at - line_start)?;
        // A blank line after an LF, or a lone CR after a CRLF, ends the head.
        let blank = lfs > 0
            && (at == line_start
                || (at == line_start + 1
                    && head[line_start] == b'\r'
                    && line_start >= 2
                    && head[line_start - 2] == b'\r'));
        lfs += 1;
        if blank {
            count(lfs)?;
            return Ok(Some(at + 1));
        }
        line_start = at + 1;
    }
    check(lfs, head.len() - line_start)?;
    count(lfs)?;
    Ok(None)
}

fn chunk_size(line: &[u8]) -> Result<u64, ReplyError> {
    let digits = line
        .split(|b| *b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    if digits.is_empty() || digits.len() > 15 {
        return Err(ReplyError::Chunked(format!(
            "bad chunk size line `{}`",
            String::from_utf8_lossy(line)
        )));
    }
    let text = std::str::from_utf8(digits)
        .map_err(|_| ReplyError::Chunked("chunk size is not text".into()))?;
    u64::from_str_radix(text, 16)
        .map_err(|_| ReplyError::Chunked(format!("bad chunk size `{text}`")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read_all(reply: &[u8], head_request: bool) -> Result<(Reply, usize), ReplyError> {
        let mut reader = ResponseReader::new(Limits::default(), head_request);
        match reader.feed(reply)? {
            Some(used) => Ok((reader.reply().expect("done"), used)),
            None => Ok((reader.finish_at_eof()?, reply.len())),
        }
    }

    #[test]
    fn content_length_body_keeps_alive_on_http_1_1() {
        let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA";
        assert_eq!(
            read_all(reply, false),
            Ok((
                Reply {
                    status: 200,
                    keep_alive: true
                },
                reply.len() - 5
            ))
        );
    }

    #[test]
    fn http_1_0_closes_unless_asked_to_keep_alive() {
        let (reply, _) = read_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false).unwrap();
        assert!(!reply.keep_alive);
        let (reply, _) = read_all(
            b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
            false,
        )
        .unwrap();
        assert!(reply.keep_alive);
        let (reply, _) = read_all(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
        )
        .unwrap();
        assert!(!reply.keep_alive);
    }

    #[test]
    fn chunked_body_split_anywhere() {
        let reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: a\r\n\r\n";
        for split in 0..reply.len() {
            let mut reader = ResponseReader::new(Limits::default(), false);
            let first = reader.feed(&reply[..split]).unwrap();
            let done = first.or_else(|| reader.feed(&reply[split..]).unwrap().map(|n| n + split));
            assert_eq!(done, Some(reply.len()), "split at {split}");
            assert_eq!(
                reader.reply(),
                Some(Reply {
                    status: 200,
                    keep_alive: true
                })
            );
        }
    }

    #[test]
    fn interim_responses_are_skipped_and_no_body_statuses_end_at_the_head() {
        let reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(read_all(reply, false).unwrap().0.status, 204);
        let (head, used) =
            read_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", true).unwrap();
        assert_eq!((head.status, used), (200, 40));
    }

    #[test]
    fn body_until_close_ends_at_eof_and_truncation_is_an_error() {
        let (reply, _) = read_all(b"HTTP/1.1 200 OK\r\n\r\nsome body", false).unwrap();
        assert_eq!(
            reply,
            Reply {
                status: 200,
                keep_alive: false
            }
        );
        assert_eq!(
            read_all(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", false),
            Err(ReplyError::Truncated)
        );
        assert_eq!(
            read_all(b"HTTP/1.1 200 O", false),
            Err(ReplyError::Truncated)
        );
    }

    #[test]
    fn garbage_and_limits_are_reply_errors() {
        assert!(matches!(
            read_all(b"GARBAGE\r\n\r\n", false),
            Err(ReplyError::Head(_))
        ));
        let long_line = format!("HTTP/1.1 200 {}\r\n\r\n", "x".repeat(2000));
        assert_eq!(
            read_all(long_line.as_bytes(), false),
            Err(ReplyError::TooLarge("phantom_http_line"))
        );
        let big = b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n";
        assert_eq!(
            read_all(big, false),
            Err(ReplyError::TooLarge("phantom_http_entity"))
        );
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..200 {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(
            read_all(&many, false),
            Err(ReplyError::TooLarge("phantom_http_field_num"))
        );
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300), split in 0usize..300) {
            let mut reader = ResponseReader::new(Limits::default(), false);
            let split = split.min(bytes.len());
            if let Ok(None) = reader.feed(&bytes[..split]) {
                let _ = reader.feed(&bytes[split..]);
            }
            let _ = reader.finish_at_eof();
        }

        #[test]
        fn content_length_bodies_of_any_size(len in 0usize..5000, chunk in 1usize..700) {
            let mut reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n").into_bytes();
            reply.extend(std::iter::repeat_n(b'z', len));
            let mut reader = ResponseReader::new(Limits::default(), false);
            let mut done = None;
            for (i, piece) in reply.chunks(chunk).enumerate() {
                if let Some(n) = reader.feed(piece).unwrap() {
                    done = Some(i * chunk + n);
                    break;
                }
            }
            prop_assert_eq!(done, Some(reply.len()));
        }

        #[test]
        fn head_scan_matches_finding_the_end_then_checking_each_line(
            bytes in proptest::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'a')], 0..40),
            line in 1usize..8,
            field in 1usize..8,
            field_num in 0usize..6,
        ) {
            // The end: the first CRLF CRLF or LF LF, whichever ends first.
            let crlf = bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
            let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|p| p + 2);
            let end = match (crlf, lf) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            // The limits, line by line, over the head (or all of it while partial).
            let head = end.map_or(&bytes[..], |end| &bytes[..end]);
            let lines: Vec<&[u8]> = head.split(|b| *b == b'\n').collect();
            let expected = if lines[0].len() > line {
                Err(ReplyError::TooLarge("phantom_http_line"))
            } else if lines[1..].iter().any(|l| l.len() > field) {
                Err(ReplyError::TooLarge("phantom_http_field"))
            } else if lines.len() - 1 > field_num + 1 {
                Err(ReplyError::TooLarge("phantom_http_field_num"))
            } else {
                Ok(end)
            };
            let limits = Limits { line, field, field_num, ..Limits::default() };
            prop_assert_eq!(scan_head(&bytes, &limits), expected);
        }

        #[test]
        fn content_length_reads_as_a_trimmed_u64_parse(value in "[ 0-9+a\\t]{0,24}") {
            prop_assert_eq!(
                content_length(value.as_bytes()),
                value.trim().parse::<u64>().ok()
            );
        }

        #[test]
        fn a_reply_split_anywhere_reads_as_it_does_whole(
            interim in any::<bool>(),
            line_ends in prop_oneof![Just("\r\n"), Just("\n")],
            cuts in proptest::collection::vec(0usize..200, 0..4),
        ) {
            let mut reply = Vec::new();
            if interim {
                reply.extend_from_slice(format!("HTTP/1.1 100 Continue{line_ends}{line_ends}").as_bytes());
            }
            reply.extend_from_slice(
                format!("HTTP/1.1 404 Not Found{line_ends}Content-Length: 3{line_ends}X-A: b{line_ends}{line_ends}abcNEXT")
                    .as_bytes(),
            );
            let whole = read_all(&reply, false);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(reply.len())).collect();
            cuts.sort_unstable();
            cuts.push(reply.len());
            let mut reader = ResponseReader::new(Limits::default(), false);
            let (mut from, mut used) = (0, None);
            for cut in cuts {
                if let Some(n) = reader.feed(&reply[from..cut]).unwrap() {
                    used = Some(from + n);
                    break;
                }
                from = cut;
            }
            prop_assert_eq!(whole, Ok((reader.reply().unwrap(), used.unwrap())));
            prop_assert_eq!(used, Some(reply.len() - 4));
        }
    }
}
