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

    /// The final reply's status code as far as it was read: set once its status
    /// line arrived, and kept when the reply breaks after it (over a limit, bad
    /// framing, cut short), so a broken reply still says what it was; 0 before.
    pub fn status_read(&self) -> u16 {
        self.status
    }

    /// Feed the next bytes. Returns `Some(n)` when the reply completed after
    /// `n` of them (bytes after that are not part of it), `None` when more are needed.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<Option<usize>, ReplyError> {
        let total = data.len();
        loop {
            match self.state {
                State::Done => return Ok(Some(total - data.len())),
                State::Head => {
                    let (used, complete) = match self.feed_head(data) {
                        Ok(fed) => fed,
                        Err(error) => {
                            self.keep_status_line(data);
                            return Err(error);
                        }
                    };
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
        if self.state == State::Head {
            self.keep_status_line(&[]);
        }
        self.reply().ok_or(ReplyError::Truncated)
    }

    /// A head failed (or was cut) after `data`, the bytes of this feed not yet
    /// used: keep the code of its status line, when that much of it arrived.
    fn keep_status_line(&mut self, data: &[u8]) {
        // An incomplete head collects in `self.head`; a head read whole is in `data`.
        let head = if self.head.is_empty() {
            data
        } else {
            &self.head
        };
        if let Some(code) = final_status_code(head) {
            self.status = code;
        }
    }

    /// Accumulate head bytes until the blank line; returns bytes used and
    /// whether a whole head was read.
    fn feed_head(&mut self, data: &[u8]) -> Result<(usize, bool), ReplyError> {
        if self.head.is_empty() {
            // The usual case: the whole head came in one read; parse it in place.
            if let Some((end, facts)) = plain_head(data, &self.limits) {
                self.take_head(facts?)?;
                return Ok((end, true));
            }
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
        let parsed = self.parse_head(&head[..end]);
        // Kept for a failed head's status line; cleared, the allocation serves
        // an interim (1xx) reply's successor.
        self.head = head;
        parsed?;
        self.head.clear();
        Ok((end - start, true))
    }

    /// Parse a whole head that [`scan_head`] found and checked.
    fn parse_head(&mut self, head: &[u8]) -> Result<(), ReplyError> {
        let facts = general_head(head, self.limits.field_num)?;
        self.take_head(facts)
    }

    /// Frame the reply by what its head says.
    fn take_head(&mut self, facts: HeadFacts) -> Result<(), ReplyError> {
        let status = facts.status;
        if (100..200).contains(&status) && status != 101 {
            // An interim response: the real one follows.
            return Ok(());
        }
        self.status = status;
        self.keep_alive = !facts.close && (facts.http_1_1 || facts.keep_alive_header);
        let no_body = self.head_request || status == 204 || status == 304 || status == 101;
        self.state = if no_body {
            State::Done
        } else if facts.chunked {
            State::Body(Body::Chunked(Chunk::Size))
        } else if let Some(length) = facts.length {
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

/// What a head says about the reply's framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct HeadFacts {
    status: u16,
    http_1_1: bool,
    /// `Connection: close`.
    close: bool,
    /// `Connection: keep-alive` (what keeps an HTTP/1.0 connection).
    keep_alive_header: bool,
    /// The last transfer coding is `chunked`.
    chunked: bool,
    length: Option<u64>,
}

impl HeadFacts {
    /// Take note of one header: only the three that frame the reply matter.
    /// Whitespace around `value` makes no difference.
    fn header(&mut self, name: &[u8], value: &[u8]) -> Result<(), ReplyError> {
        // Most headers are none of the three: their length rules them out.
        match name.len() {
            10 if is_lowercase_of(name, b"connection") => {
                for token in value.split(|b| *b == b',') {
                    let token = token.trim_ascii();
                    self.close |= is_lowercase_of(token, b"close");
                    self.keep_alive_header |= is_lowercase_of(token, b"keep-alive");
                }
            }
            17 if is_lowercase_of(name, b"transfer-encoding") => {
                let last = value.rsplit(|b| *b == b',').next().unwrap_or_default();
                self.chunked = is_lowercase_of(last.trim_ascii(), b"chunked");
            }
            14 if is_lowercase_of(name, b"content-length") => {
                let length = content_length(value)
                    .ok_or_else(|| ReplyError::Head("bad Content-Length".into()))?;
                if self.length.is_some_and(|l| l != length) {
                    return Err(ReplyError::Head(
                        "conflicting Content-Length headers".into(),
                    ));
                }
                self.length = Some(length);
            }
            _ => {}
        }
        Ok(())
    }
}

/// `bytes.eq_ignore_ascii_case(lower)` for an all-lowercase `lower`, without an
/// early exit per byte, so that the compiler can compare the bytes at once.
fn is_lowercase_of(bytes: &[u8], lower: &[u8]) -> bool {
    bytes.len() == lower.len()
        && bytes
            .iter()
            .zip(lower)
            .fold(0, |diff, (b, l)| diff | (b.to_ascii_lowercase() ^ l))
            == 0
}

/// The head as httparse reads it: every head that [`plain_head`] leaves aside.
fn general_head(head: &[u8], field_num: usize) -> Result<HeadFacts, ReplyError> {
    // Uninitialised slots: filling `field_num` (128 by default) empty headers
    // per reply would cost more than parsing it.
    let mut inline = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; INLINE_HEADERS];
    let mut spilled = Vec::new();
    let slots = if field_num <= INLINE_HEADERS {
        &mut inline[..field_num]
    } else {
        spilled.resize_with(field_num, MaybeUninit::uninit);
        &mut spilled[..]
    };
    let mut response = httparse::Response::new(&mut []);
    match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        head,
        slots,
    ) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(ReplyError::Head("incomplete head".into())),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ReplyError::TooLarge("phantom_http_field_num"))
        }
        Err(error) => return Err(ReplyError::Head(error.to_string())),
    }
    let mut facts = HeadFacts {
        status: response.code.unwrap_or(0),
        http_1_1: response.version == Some(1),
        ..HeadFacts::default()
    };
    for header in response.headers.iter() {
        facts.header(header.name.as_bytes(), header.value)?;
    }
    Ok(facts)
}

/// The usual head, found and read in one pass, without [`scan_head`] and
/// httparse: `HTTP/1.x NNN reason`, then `name: value` lines, every line
/// ending in CRLF, names made of token characters, the reason and values of
/// printable ASCII, and every line within phantom's limits. Returns where the
/// head ends in `data` and what it says. For such a head, `scan_head` finds the
/// same end and httparse reads the same status, version and headers (a
/// differential test holds them together). Anything else (a partial head, a
/// bare LF, a tab, obs-text, a leading blank line, a missing reason, a limit
/// exceeded…) returns `None`, and the general path decides.
fn plain_head(data: &[u8], limits: &Limits) -> Option<(usize, Result<HeadFacts, ReplyError>)> {
    let http_1_1 = match data.get(..9)? {
        b"HTTP/1.1 " => true,
        b"HTTP/1.0 " => false,
        _ => return None,
    };
    let status = match *data.get(9..13)? {
        [a @ b'0'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9', b' '] => {
            u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
        }
        _ => return None,
    };
    let mut facts = HeadFacts {
        status,
        http_1_1,
        ..HeadFacts::default()
    };
    // scan_head's limits: a line's length counts its CR; the LFs, field_num + 1.
    let status_end = crlf_after_printable(data, 13)?;
    if status_end + 1 > limits.line {
        return None;
    }
    let mut at = status_end + 2;
    let mut headers = 0;
    // As with httparse, a header's meaning is judged once the whole head parsed.
    let mut judged = Ok(());
    loop {
        let end = crlf_after_printable(data, at)?;
        if end - at + 1 > limits.field || headers + 2 > limits.field_num + 1 {
            return None;
        }
        if end == at {
            return Some((end + 2, judged.map(|()| facts)));
        }
        let line = &data[at..end];
        // A token has no colon: the first one ends the name.
        let name_len = line.iter().position(|b| !is_token(*b))?;
        if name_len == 0 || line[name_len] != b':' {
            return None;
        }
        // Within the LF count above, httparse's `field_num` slots do not run out.
        headers += 1;
        if judged.is_ok() {
            // Spaces around the value: `header` trims what it reads.
            judged = facts.header(&line[..name_len], &line[name_len + 1..]);
        }
        at = end + 2;
    }
}

/// Where the line starting at `from` ends: the index of its CR, when every
/// byte before it is printable ASCII or a space and an LF follows it;
/// otherwise (any other byte first, or no CRLF in `data`) `None`.
fn crlf_after_printable(data: &[u8], from: usize) -> Option<usize> {
    let rest = data.get(from..)?;
    let end = from + first_unprintable(rest)?;
    (data[end] == b'\r' && data.get(end + 1) == Some(&b'\n')).then_some(end)
}

/// The index of the first byte that is not printable ASCII or a space, eight
/// bytes at a time.
fn first_unprintable(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const SPACES: u64 = u64::from_le_bytes([b' '; 8]);
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    for word in words.by_ref() {
        let mut eight = [0; 8];
        eight.copy_from_slice(word);
        let x = u64::from_le_bytes(eight);
        // The high bit of a byte below the space (it borrows), or of 0x7f and
        // above (adding one reaches it, or it was set). Borrows and carries only
        // start at such bytes, so the lowest flagged byte is the first of them.
        let flagged = ((x.wrapping_sub(SPACES) & !x) | x.wrapping_add(ONES) | x) & HIGHS;
        if flagged != 0 {
            return Some(offset + flagged.trailing_zeros() as usize / 8);
        }
        offset += 8;
    }
    words
        .remainder()
        .iter()
        .position(|b| b.wrapping_sub(b' ') > b'~' - b' ')
        .map(|at| offset + at)
}

/// Whether `byte` is a token character (RFC 9110's `tchar`), the bytes of a header name.
fn is_token(byte: u8) -> bool {
    TOKEN[byte as usize]
}

/// [`is_token`], by byte.
static TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        byte += 1;
    }
    table
};

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

/// The code of a final reply's status line at the start of `head`
/// (`HTTP/1.x NNN`, then a space or the line's end), once that much of it
/// arrived; `None` for anything else, or for an interim (1xx) reply.
fn final_status_code(head: &[u8]) -> Option<u16> {
    let [b'H', b'T', b'T', b'P', b'/', b'1', b'.', _, b' ', digits @ .., after] = head.get(..13)?
    else {
        return None;
    };
    if !digits.iter().all(u8::is_ascii_digit) || !matches!(after, b' ' | b'\r' | b'\n') {
        return None;
    }
    let code = digits
        .iter()
        .fold(0, |code, digit| code * 10 + u16::from(digit - b'0'));
    (!(100..200).contains(&code) || code == 101).then_some(code)
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

    /// Feed `pieces` one after another, then the end of the stream: the error
    /// that broke the reply, and the status it kept.
    fn broken(pieces: &[&[u8]], limits: Limits) -> (ReplyError, u16) {
        let mut reader = ResponseReader::new(limits, false);
        for piece in pieces {
            match reader.feed(piece) {
                Ok(None) => {}
                Ok(Some(_)) => panic!("the reply completed"),
                Err(error) => return (error, reader.status_read()),
            }
        }
        let error = reader.finish_at_eof().expect_err("the reply is broken");
        (error, reader.status_read())
    }

    #[test]
    fn a_reply_broken_after_its_status_line_keeps_the_status() {
        let small = Limits {
            entity: 10,
            ..Limits::default()
        };
        let entity = ReplyError::TooLarge("phantom_http_entity");
        // Over the entity limit: by Content-Length, counted in one read or over
        // several, chunked, and until the close.
        assert_eq!(
            broken(&[b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"], small),
            (entity.clone(), 200)
        );
        assert_eq!(
            broken(
                &[b"HTTP/1.1 200 OK\r\nX-A: b\r\n\r\n", b"0123456", b"789abc"],
                small
            ),
            (entity.clone(), 200)
        );
        assert_eq!(
            broken(
                &[b"HTTP/1.1 206 P\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n0123456789a"],
                small
            ),
            (entity, 206)
        );
        // Over the head's limits, whole or split, after an interim reply.
        let long_reason = format!("HTTP/1.1 404 {}\r\n\r\n", "x".repeat(2000));
        assert_eq!(
            broken(&[long_reason.as_bytes()], Limits::default()),
            (ReplyError::TooLarge("phantom_http_line"), 404)
        );
        let mut many = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\n".to_vec();
        for i in 0..200 {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        let field_num = ReplyError::TooLarge("phantom_http_field_num");
        assert_eq!(
            broken(&[&many], Limits::default()),
            (field_num.clone(), 503)
        );
        let (start, rest) = many.split_at(40);
        assert_eq!(broken(&[start, rest], Limits::default()), (field_num, 503));
        let long_field = format!("HTTP/1.0 302 Found\r\nX: {}\r\n\r\n", "y".repeat(9000));
        assert_eq!(
            broken(&[long_field.as_bytes()], Limits::default()),
            (ReplyError::TooLarge("phantom_http_field"), 302)
        );
        // Bad framing, or cut short.
        assert_eq!(
            broken(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"],
                Limits::default()
            )
            .1,
            200
        );
        assert_eq!(
            broken(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort"],
                Limits::default()
            ),
            (ReplyError::Truncated, 200)
        );
        assert_eq!(
            broken(&[b"HTTP/1.1 503 Servi"], Limits::default()),
            (ReplyError::Truncated, 503)
        );
    }

    #[test]
    fn no_status_is_kept_before_a_final_status_line_arrived() {
        for pieces in [
            &[&b"GARBAGE\r\n\r\n"[..]][..],
            &[b"HTTP/1.1 20"],
            &[b"HTTP/1.1 2x0 OK\r\n\r\n"],
            &[b"HTTP/1.1 100 Continue\r\n\r\n"],
            &[b"HTTP/1.1 100 Continue\r\n", b"X: y"],
        ] {
            assert_eq!(broken(pieces, Limits::default()).1, 0, "{pieces:?}");
        }
    }

    /// nginx's reply head, as the load benchmarks see it.
    const NGINX_HEAD: &[u8] =
        b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 03:05:00 GMT\r\n\
        Content-Type: application/octet-stream\r\nContent-Length: 100\r\n\
        Last-Modified: Sat, 21 Nov 2026 10:00:00 GMT\r\nConnection: keep-alive\r\n\
        ETag: \"6a1f0c00-64\"\r\nAccept-Ranges: bytes\r\n\r\n";

    /// The general path's verdict on the head at the start of `data`.
    fn general(data: &[u8], limits: &Limits) -> Result<Option<(usize, HeadFacts)>, ReplyError> {
        match scan_head(data, limits)? {
            Some(end) => Ok(Some((end, general_head(&data[..end], limits.field_num)?))),
            None => Ok(None),
        }
    }

    /// The plain path's verdict, when it takes the head.
    fn plain(
        data: &[u8],
        limits: &Limits,
    ) -> Option<Result<Option<(usize, HeadFacts)>, ReplyError>> {
        plain_head(data, limits).map(|(end, facts)| facts.map(|facts| Some((end, facts))))
    }

    #[test]
    fn usual_heads_take_the_plain_path_and_read_as_httparse_reads_them() {
        let heads: [&[u8]; 4] = [
            NGINX_HEAD,
            b"HTTP/1.0 404 Not Found\r\nconnection:KEEP-ALIVE\r\nContent-Length:  7  \r\n\r\nbody...",
            b"HTTP/1.1 200 \r\nTransfer-Encoding: gzip, chunked\r\nX-Empty:\r\n\r\n",
            b"HTTP/1.1 503 Busy\r\nConnection: close\r\n\r\n",
        ];
        let limits = Limits::default();
        for head in heads {
            let plain = plain(head, &limits);
            assert!(plain.is_some(), "{}", String::from_utf8_lossy(head));
            assert_eq!(plain, Some(general(head, &limits)));
        }
        let (end, facts) = plain_head(NGINX_HEAD, &limits).unwrap();
        let facts = facts.unwrap();
        assert_eq!(end, NGINX_HEAD.len());
        assert_eq!(
            (facts.status, facts.http_1_1, facts.length),
            (200, true, Some(100))
        );
        // Conflicting lengths fail the plain way too, with the same error.
        let conflict = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\ncontent-length: 2\r\n\r\n";
        assert_eq!(plain(conflict, &limits), Some(general(conflict, &limits)));
        assert!(general(conflict, &limits).is_err());
    }

    #[test]
    fn unusual_heads_are_left_to_the_general_path() {
        let heads: [&[u8]; 8] = [
            b"HTTP/1.1 200 OK\nContent-Length: 1\n\n",
            b"\r\nHTTP/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 200\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX-A:\tb\r\n\r\n",
            b"HTTP/1.1 200 \xc3\xa9\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX-A : b\r\n\r\n",
            b"HTTP/2.0 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n",
        ];
        let limits = Limits::default();
        for head in heads {
            assert_eq!(
                plain_head(head, &limits),
                None,
                "{}",
                String::from_utf8_lossy(head)
            );
        }
        // Past a limit, the general path says which.
        let head = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n";
        for limits in [
            Limits {
                field_num: 0,
                ..limits
            },
            Limits { line: 15, ..limits },
            Limits { field: 4, ..limits },
        ] {
            assert_eq!(plain_head(head, &limits), None);
            assert!(matches!(
                general(head, &limits),
                Err(ReplyError::TooLarge(_))
            ));
        }
    }

    /// Reply heads near the plain path's edges: mostly well formed, with tabs,
    /// obs-text, control bytes, bare LFs and CRs, odd spacing and framing headers.
    fn near_plain_head() -> impl Strategy<Value = Vec<u8>> {
        // Weighted so that about half the heads are plain and the rest miss by a byte or two.
        let text_byte = || {
            prop_oneof![
                60 => 0x20u8..0x7f,
                1 => Just(b'\t'),
                1 => Just(0x7f),
                1 => 0x80u8..,
                1 => any::<u8>(),
            ]
        };
        let eol = || prop_oneof![40 => Just(b"\r\n".to_vec()), 1 => Just(b"\n".to_vec()), 1 => Just(b"\r".to_vec())];
        let start = prop_oneof![
            20 => Just(b"HTTP/1.1 ".to_vec()),
            8 => Just(b"HTTP/1.0 ".to_vec()),
            1 => Just(b"HTTP/1.2 ".to_vec()),
            1 => Just(b"\r\nHTTP/1.1 ".to_vec()),
            1 => Just(b"HTTP/1.1  ".to_vec()),
        ];
        let code = prop_oneof![
            Just(b"200".to_vec()),
            Just(b"100".to_vec()),
            Just(b"204".to_vec()),
            "[0-9a ]{3}".prop_map(String::into_bytes),
        ];
        let reason = (
            prop_oneof![20 => Just(b" ".to_vec()), 1 => Just(Vec::new())],
            proptest::collection::vec(text_byte(), 0..10),
        )
            .prop_map(|(space, text)| [space, text].concat());
        let name_byte = prop_oneof![
            40 => proptest::sample::select(b"abcXYZ09-_!~.".to_vec()),
            1 => any::<u8>(),
        ];
        let name = prop_oneof![
            6 => proptest::sample::select(vec![
                "Content-Length", "content-LENGTH", "Connection", "Transfer-Encoding", "X-A",
            ])
            .prop_map(|n| n.as_bytes().to_vec()),
            1 => proptest::collection::vec(name_byte, 0..6),
        ];
        let separator = prop_oneof![
            20 => proptest::sample::select(vec![":", ": ", ":  "]),
            1 => proptest::sample::select(vec![" :", ":\t", ""]),
        ]
        .prop_map(|s| s.as_bytes().to_vec());
        let value = prop_oneof![
            3 => proptest::sample::select(vec![
                "5", " 7 ", "+3", "x", "close", "Keep-Alive", "chunked", "gzip, chunked", "1 ",
            ])
            .prop_map(|v| v.as_bytes().to_vec()),
            1 => proptest::collection::vec(text_byte(), 0..10),
        ];
        let header = (name, separator, value, eol()).prop_map(|(n, s, v, e)| [n, s, v, e].concat());
        (
            start,
            code,
            reason,
            eol(),
            proptest::collection::vec(header, 0..6),
            eol(),
        )
            .prop_map(|(start, code, reason, eol, headers, last)| {
                [start, code, reason, eol, headers.concat(), last].concat()
            })
    }

    proptest! {
        // Limits are exact to the byte: enough cases to land on their edges.
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn the_plain_path_reads_every_head_it_takes_as_the_general_path_does(
            head in near_plain_head(),
            body in proptest::collection::vec(any::<u8>(), 0..4),
            line in prop_oneof![2 => Just(1024), 1 => 12usize..30],
            field in prop_oneof![2 => Just(8192), 1 => 1usize..24],
            field_num in prop_oneof![2 => Just(128), 1 => 0usize..8],
        ) {
            let data = [head, body].concat();
            let limits = Limits { line, field, field_num, ..Limits::default() };
            if let Some(plain) = plain(&data, &limits) {
                prop_assert_eq!(plain, general(&data, &limits));
            }
        }
    }

    /// Replies in every framing: length, chunked with extensions and trailers,
    /// interim 1xx, bodiless statuses, close-delimited, bare LF line ends.
    const SEEDS: [&[u8]; 6] = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: a\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\nbody until close",
        b"HTTP/1.1 304 Not Modified\nContent-Length: 10\n\n",
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nX-A: b\r\n\r\nabcNEXT",
    ];

    /// Bytes that matter to framing, and numbers at the edges.
    const SNIPPETS: [&[u8]; 12] = [
        b"\r\n",
        b"\n",
        b"\r",
        b":",
        b" ",
        b"\0",
        b"HTTP/1.1 ",
        b"Content-Length: 99999999999999999999\r\n",
        b"Content-Length: 18446744073709551615\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"ffffffffffffffff\r\n",
        b"0\r\n\r\n",
    ];

    /// One mutation: where (a fraction of the length) and what.
    #[derive(Debug, Clone)]
    enum Mutation {
        Flip(f64, u8),
        Insert(f64, &'static [u8]),
        Cut(f64, f64),
        Double(f64, f64),
    }

    fn mutated_reply() -> impl Strategy<Value = Vec<u8>> {
        let at = || 0.0..1.0f64;
        let mutation = prop_oneof![
            (at(), any::<u8>()).prop_map(|(a, b)| Mutation::Flip(a, b)),
            (at(), proptest::sample::select(&SNIPPETS[..]))
                .prop_map(|(a, s)| Mutation::Insert(a, s)),
            (at(), at()).prop_map(|(a, b)| Mutation::Cut(a, b)),
            (at(), at()).prop_map(|(a, b)| Mutation::Double(a, b)),
        ];
        (
            proptest::sample::select(&SEEDS[..]),
            proptest::collection::vec(mutation, 0..4),
        )
            .prop_map(|(seed, mutations)| {
                let mut bytes = seed.to_vec();
                for m in mutations {
                    let at = |f: f64| ((bytes.len() as f64) * f) as usize;
                    match m {
                        Mutation::Flip(f, b) if !bytes.is_empty() => {
                            let i = at(f).min(bytes.len() - 1);
                            bytes[i] = b;
                        }
                        Mutation::Flip(..) => {}
                        Mutation::Insert(f, s) => {
                            let i = at(f);
                            bytes.splice(i..i, s.iter().copied());
                        }
                        Mutation::Cut(f, g) => {
                            let (i, j) = (at(f.min(g)), at(f.max(g)));
                            bytes.drain(i..j);
                        }
                        Mutation::Double(f, g) => {
                            let (i, j) = (at(f.min(g)), at(f.max(g)));
                            let copy = bytes[i..j].to_vec();
                            bytes.splice(j..j, copy);
                        }
                    }
                }
                bytes
            })
    }

    /// How feeding `bytes` in pieces cut at `cuts` (then the end of the
    /// connection) ends: the reply and the bytes it took, or the error.
    fn outcome(
        bytes: &[u8],
        cuts: &[usize],
        head_request: bool,
    ) -> Result<(Reply, usize), ReplyError> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| (*c).min(bytes.len())).collect();
        cuts.sort_unstable();
        cuts.push(bytes.len());
        let mut reader = ResponseReader::new(Limits::default(), head_request);
        let mut from = 0;
        for cut in cuts {
            if let Some(used) = reader.feed(&bytes[from..cut])? {
                assert!(used <= cut - from, "used {used} of {} bytes", cut - from);
                let reply = reader.reply().expect("a complete reply");
                return Ok((reply, from + used));
            }
            from = cut;
        }
        Ok((reader.finish_at_eof()?, bytes.len()))
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
        fn a_mutated_reply_reads_the_same_whole_or_in_pieces(
            bytes in mutated_reply(),
            cuts in proptest::collection::vec(0usize..400, 0..4),
            head_request in proptest::bool::weighted(0.1),
        ) {
            let whole = outcome(&bytes, &[], head_request);
            prop_assert_eq!(&outcome(&bytes, &cuts, head_request), &whole);
            if let Ok((reply, _)) = whole {
                prop_assert!((100..=999).contains(&reply.status), "status {}", reply.status);
            }
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
