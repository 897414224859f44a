//! Reading a reply's head: where it ends, whether it keeps phantom's limits,
//! and the few facts that frame the body (status, version, `Connection`,
//! `Transfer-Encoding`, `Content-Length`). [`Framing`], the header facts, is
//! shared with requests: `tank import` frames a request's body by it.
//!
//! Two paths read a head, and they MUST agree. [`plain_head`] reads the usual
//! head (CRLF lines of printable ASCII, token names, within the limits) in one
//! pass, in place, without httparse; anything it is not sure of it leaves
//! (returns `None`), and [`scan_head`] + [`general_head`] (httparse) decide. For
//! every head the plain path takes, the general path finds the same end and the
//! same facts, or the same error: a differential proptest below holds them
//! together over heads near the plain path's edges.

use std::mem::MaybeUninit;

use crate::limits::Limits;
use crate::reply::ReplyError;

/// Why a message's framing headers cannot frame it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    /// A `Content-Length` that is not a number.
    #[error("a Content-Length that is not a number (expected decimal digits)")]
    BadContentLength,
    /// Two `Content-Length` headers that disagree.
    #[error("two Content-Length headers with different values")]
    ConflictingContentLength,
    /// A request whose last transfer coding is not `chunked`: its body has no
    /// end (RFC 9112 §6.3: a request never reads to the connection's close).
    #[error("a Transfer-Encoding other than chunked: the body has no end")]
    UnframedRequest,
}

/// What a message's headers say about its framing and its connection: the
/// head facts that requests and replies share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Framing {
    /// `Connection: close`.
    pub close: bool,
    /// `Connection: keep-alive` (what keeps an HTTP/1.0 connection).
    pub keep_alive_header: bool,
    /// A `Transfer-Encoding` header was present.
    pub transfer_coded: bool,
    /// The last transfer coding is `chunked`.
    pub chunked: bool,
    /// The `Content-Length`, if one was given.
    pub length: Option<u64>,
}

impl Framing {
    /// Take note of one header: only the three that frame a message matter.
    /// Whitespace around `value` makes no difference.
    #[inline]
    pub fn header(&mut self, name: &[u8], value: &[u8]) -> Result<(), FramingError> {
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
                self.transfer_coded = true;
                self.chunked = is_lowercase_of(last.trim_ascii(), b"chunked");
            }
            14 if is_lowercase_of(name, b"content-length") => {
                let length = content_length(value).ok_or(FramingError::BadContentLength)?;
                if self.length.is_some_and(|l| l != length) {
                    return Err(FramingError::ConflictingContentLength);
                }
                self.length = Some(length);
            }
            _ => {}
        }
        Ok(())
    }

    /// A request's body, as these headers frame it: chunked, else
    /// `Content-Length`, else none (a request never runs to the close).
    pub fn request_body(&self) -> Result<crate::BodyDecoder, FramingError> {
        if self.chunked {
            Ok(crate::BodyDecoder::chunked())
        } else if self.transfer_coded {
            Err(FramingError::UnframedRequest)
        } else {
            Ok(crate::BodyDecoder::length(self.length.unwrap_or(0)))
        }
    }
}

/// What a reply's head says: its status line, and its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HeadFacts {
    pub(crate) status: u16,
    pub(crate) http_1_1: bool,
    pub(crate) framing: Framing,
}

impl HeadFacts {
    #[inline]
    fn header(&mut self, name: &[u8], value: &[u8]) -> Result<(), ReplyError> {
        self.framing
            .header(name, value)
            .map_err(ReplyError::Framing)
    }
}

/// `bytes.eq_ignore_ascii_case(lower)` for an all-lowercase `lower`, without an
/// early exit per byte, so that the compiler can compare the bytes at once.
#[inline]
fn is_lowercase_of(bytes: &[u8], lower: &[u8]) -> bool {
    bytes.len() == lower.len()
        && bytes
            .iter()
            .zip(lower)
            .fold(0, |diff, (b, l)| diff | (b.to_ascii_lowercase() ^ l))
            == 0
}

/// The head as httparse reads it: every head that [`plain_head`] leaves aside.
pub(crate) fn general_head(head: &[u8], field_num: usize) -> Result<HeadFacts, ReplyError> {
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
#[inline]
pub(crate) fn plain_head(
    data: &[u8],
    limits: &Limits,
) -> Option<(usize, Result<HeadFacts, ReplyError>)> {
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
#[inline]
fn crlf_after_printable(data: &[u8], from: usize) -> Option<usize> {
    let rest = data.get(from..)?;
    let end = from + first_unprintable(rest)?;
    (data[end] == b'\r' && data.get(end + 1) == Some(&b'\n')).then_some(end)
}

/// The index of the first byte that is not printable ASCII or a space, eight
/// bytes at a time.
#[inline]
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

/// Whether `byte` is a token character (RFC 9110's `tchar`): the bytes of a
/// method or a header name.
#[inline]
pub fn is_token(byte: u8) -> bool {
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
#[inline]
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
pub(crate) fn scan_head(head: &[u8], limits: &Limits) -> Result<Option<usize>, ReplyError> {
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
#[inline]
pub(crate) fn final_status_code(head: &[u8]) -> Option<u16> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
            (facts.status, facts.http_1_1, facts.framing.length),
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

    proptest! {
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
    }
}
