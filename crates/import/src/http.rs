//! HTTP/1.x request framing of a client's byte stream.
//!
//! A request ends where HTTP says it does: after its head (request line and
//! headers up to the empty line), plus a `Content-Length` body or a chunked
//! body up to its last chunk and trailers; a request with neither has no body
//! (RFC 9112 §6.3: a request never reads to the connection's close). Nothing
//! is guessed from method names, and the bytes are kept verbatim (a gzip body
//! stays gzip, headers keep their case and order).
//!
//! Empty lines between requests (some old clients send CRLF after a POST
//! body) are skipped, as servers do (RFC 9112 §2.2).
//!
//! A request in progress can move the body it has so far to the spill file
//! ([`Framer::spill`], when the requests in progress are over their memory
//! budget); its head stays in memory, and framing goes on with what follows
//! (the body decoder keeps its own state, so no byte of the body is needed
//! again once it has been fed).

use memchr::memchr;
use tank_http1::{is_token, BodyDecoder, Framing};

use crate::held::{self, Extent, RequestBytes, SpillFile};

/// Longest request head accepted (request line and headers).
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// The most a body's `Content-Length` reserves at once.
const RESERVE_LIMIT: usize = 16 << 20;
/// Most headers in a request head.
const MAX_HEADERS: usize = 256;
/// Longest line a stream from its middle (see [`Framer::mid_stream`]) checks
/// for a request line; longer ones are skipped as body bytes.
const MAX_REQUEST_LINE: usize = 16 * 1024;
/// Longest chunk-size or trailer line of a chunked body.
const MAX_BODY_LINE: usize = 64 * 1024;

/// Why a stream is not HTTP/1.x requests, at which stream offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameError {
    /// Offset in the client's stream of the request that failed.
    pub at: u64,
    /// What was wrong and what was expected.
    pub message: String,
    /// What the bytes are, when they are a protocol told apart (`TLS`):
    /// the connection is counted by it as unreadable.
    pub unreadable: Option<&'static str>,
}

/// A complete request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// Capture time of its first byte.
    pub at_us: u64,
    /// The request, verbatim (its body maybe in the spill file).
    pub bytes: RequestBytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A stream captured from its middle (see [`Framer::mid_stream`]): looking
    /// for its first request line. `request` holds the line read so far, whose
    /// first byte was captured at `line_at`; `at_line_start` is false after a
    /// line too long to be a request line was dropped, until its end.
    Sync { line_at: u64, at_line_start: bool },
    /// Between requests.
    Idle,
    /// In the head; the end was searched for up to `scanned`; whether the
    /// request line was checked (as soon as it is whole: a stream that is
    /// not HTTP fails at its first line, not 64 KiB later).
    Head { scanned: usize, line_checked: bool },
    /// In the body, framed by `Content-Length` or chunked (tank-http1's decoder).
    Body(BodyDecoder),
}

/// Splits a client's stream into requests (see the module docs).
///
/// `request` holds the head (`head_len` bytes, once it is complete), then the
/// body's bytes after those moved to the spill file.
#[derive(Debug)]
pub(crate) struct Framer {
    state: State,
    request: Vec<u8>,
    /// The head's length, once it is complete (0 before).
    head_len: usize,
    /// The body's bytes moved to the spill file, in order, and how many.
    spilled: Vec<Extent>,
    spilled_len: usize,
    at_us: u64,
    /// Stream offset of the current request's first byte.
    started: u64,
    /// Stream bytes seen.
    offset: u64,
    /// A stream captured from its middle: the bytes skipped before its first
    /// request line, until [`Framer::take_skipped`] reports them.
    skipped: u64,
}

impl Default for Framer {
    fn default() -> Self {
        Framer {
            state: State::Idle,
            request: Vec::new(),
            head_len: 0,
            spilled: Vec::new(),
            spilled_len: 0,
            at_us: 0,
            started: 0,
            offset: 0,
            skipped: 0,
        }
    }
}

impl Framer {
    /// A framer for a stream captured from its middle (a connection whose SYN
    /// the capture missed, because it was open when the capture began): its
    /// first bytes may be the rest of a request. They are skipped line by line
    /// up to the first line that is a whole HTTP/1.x request line (`METHOD
    /// TARGET HTTP/1.x`), where framing starts; [`Framer::take_skipped`] says
    /// how many bytes that cost.
    pub(crate) fn mid_stream() -> Framer {
        Framer {
            state: State::Sync {
                line_at: 0,
                at_line_start: true,
            },
            ..Framer::default()
        }
    }

    /// Once a stream from its middle found its first request line after
    /// skipping bytes: how many (reported once; `None` otherwise).
    pub(crate) fn take_skipped(&mut self) -> Option<u64> {
        if matches!(self.state, State::Sync { .. }) || self.skipped == 0 {
            return None;
        }
        Some(std::mem::take(&mut self.skipped))
    }

    /// Bytes of a stream from its middle skipped so far while no request line
    /// was found yet (`None` once one was, or for a stream from its start).
    pub(crate) fn still_searching(&self) -> Option<u64> {
        matches!(self.state, State::Sync { .. }).then_some(self.skipped + self.request.len() as u64)
    }

    /// The first byte's capture time of the request being read, if one is.
    pub(crate) fn in_progress_since(&self) -> Option<u64> {
        (!matches!(self.state, State::Idle | State::Sync { .. })).then_some(self.at_us)
    }

    /// Whether the request being read has a whole request line (bytes
    /// before one never looked like a request).
    pub(crate) fn partial_has_request_line(&self) -> bool {
        match self.state {
            State::Head { line_checked, .. } => line_checked,
            State::Body(_) => true,
            State::Sync { .. } | State::Idle => false,
        }
    }

    /// Bytes of the request being read (0 between requests).
    pub(crate) fn partial_len(&self) -> usize {
        match self.state {
            State::Sync { .. } => 0,
            _ => self.request.len() + self.spilled_len,
        }
    }

    /// Memory the request being read holds.
    pub(crate) fn held(&self) -> usize {
        self.request.capacity() + self.spilled.capacity() * std::mem::size_of::<Extent>()
    }

    /// Move the body read so far to `file`, keeping the head in memory.
    /// Nothing moves before the head is complete.
    pub(crate) fn spill(&mut self, file: &SpillFile) -> std::io::Result<()> {
        if !matches!(self.state, State::Body(_)) || self.request.len() <= self.head_len {
            return Ok(());
        }
        held::spill(file, &mut self.spilled, &self.request[self.head_len..])?;
        self.spilled_len += self.request.len() - self.head_len;
        self.request.truncate(self.head_len);
        self.request.shrink_to_fit();
        Ok(())
    }

    /// Stream bytes fed so far.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Feed the next stream bytes, captured at `at_us`; `done` gets each
    /// request as it completes. After an error the framer must not be fed again.
    pub(crate) fn feed(
        &mut self,
        mut data: &[u8],
        at_us: u64,
        done: &mut impl FnMut(Request),
    ) -> Result<(), FrameError> {
        while !data.is_empty() {
            let used = self.step(data, at_us, done)?;
            self.offset += used as u64;
            data = &data[used..];
        }
        Ok(())
    }

    /// A stream from its middle, before its first request line: skip up to
    /// the end of a line, or start the head at a line that is a request line.
    /// Returns the bytes used.
    fn sync(&mut self, data: &[u8], at_us: u64, line_at: u64, at_line_start: bool) -> usize {
        let line_at = if self.request.is_empty() {
            at_us
        } else {
            line_at
        };
        let Some(lf) = memchr(b'\n', data) else {
            if self.request.len() + data.len() > MAX_REQUEST_LINE {
                // Too long for a request line: body bytes, up to the next line.
                self.skipped += (self.request.len() + data.len()) as u64;
                self.request.clear();
                self.state = State::Sync {
                    line_at,
                    at_line_start: false,
                };
            } else {
                self.request.extend_from_slice(data);
                self.state = State::Sync {
                    line_at,
                    at_line_start,
                };
            }
            return data.len();
        };
        self.request.extend_from_slice(&data[..=lf]);
        let line_end = self.request.len() - 1;
        if at_line_start && is_request_line(&self.request[..line_end]) {
            self.started = self.offset + lf as u64 + 1 - self.request.len() as u64;
            self.at_us = line_at;
            self.state = State::Head {
                scanned: 0,
                line_checked: true,
            };
        } else {
            self.skipped += self.request.len() as u64;
            self.request.clear();
            self.state = State::Sync {
                line_at,
                at_line_start: true,
            };
        }
        lf + 1
    }

    /// Consume some of `data`; returns how much.
    fn step(
        &mut self,
        data: &[u8],
        at_us: u64,
        done: &mut impl FnMut(Request),
    ) -> Result<usize, FrameError> {
        match self.state {
            State::Sync {
                line_at,
                at_line_start,
            } => Ok(self.sync(data, at_us, line_at, at_line_start)),
            State::Idle => {
                let skip = data
                    .iter()
                    .take_while(|b| matches!(b, b'\r' | b'\n'))
                    .count();
                if skip < data.len() {
                    if let Some(record) = tls_record(&data[skip..]) {
                        let mut error = self.error_at(self.offset + skip as u64, record);
                        error.unreadable = Some("TLS");
                        return Err(error);
                    }
                    if !is_token(data[skip]) {
                        return Err(self.error_at(
                            self.offset + skip as u64,
                            format!(
                                "byte 0x{:02x} cannot start a request line (expected a method such as GET)",
                                data[skip]
                            ),
                        ));
                    }
                    self.state = State::Head {
                        scanned: 0,
                        line_checked: false,
                    };
                    self.at_us = at_us;
                    self.started = self.offset + skip as u64;
                }
                Ok(skip)
            }
            State::Head {
                scanned,
                mut line_checked,
            } => {
                let before = self.request.len();
                let take = data.len().min(MAX_HEAD + 4 - before.min(MAX_HEAD));
                self.request.extend_from_slice(&data[..take]);
                if !line_checked {
                    if let Some(lf) = memchr(b'\n', &self.request) {
                        if !is_request_line(&self.request[..lf]) {
                            return Err(self.error(format!(
                                "`{}` is not an HTTP/1.x request line (METHOD TARGET HTTP/1.x)",
                                first_line(&self.request)
                            )));
                        }
                        line_checked = true;
                    }
                }
                match head_end(&self.request, scanned) {
                    Some(end) => {
                        self.request.truncate(end);
                        self.head_len = end;
                        let used = end - before;
                        self.state = self.after_head()?;
                        self.reserve_body();
                        self.maybe_done(done);
                        Ok(used)
                    }
                    None if self.request.len() > MAX_HEAD => Err(self.error(format!(
                        "no end of the request head within {MAX_HEAD} bytes"
                    ))),
                    None => {
                        self.state = State::Head {
                            scanned: self.request.len().saturating_sub(3),
                            line_checked,
                        };
                        Ok(take)
                    }
                }
            }
            State::Body(mut body) => {
                let (used, ended) = body
                    .decode(data, MAX_BODY_LINE, u64::MAX)
                    .map_err(|e| self.error(format!("the body's framing is broken: {e}")))?;
                self.request.extend_from_slice(&data[..used]);
                self.state = State::Body(body);
                if ended {
                    self.emit(done);
                }
                Ok(used)
            }
        }
    }

    /// The state after a complete head: how its body is framed.
    fn after_head(&self) -> Result<State, FrameError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&self.request) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => {
                return Err(self.error("the request head is incomplete".into()))
            }
            Err(e) => {
                return Err(match bad_header_line(&self.request) {
                    Some((at, line, why)) => self.error_at(
                        self.started + at as u64,
                        format!(
                            "not an HTTP/1.x request head ({e}): its line `{}` {why}; the \
                             request starts at stream byte {}",
                            quote(line),
                            self.started
                        ),
                    ),
                    None => self.error(format!(
                        "not an HTTP/1.x request head ({e}): `{}`",
                        first_line(&self.request)
                    )),
                })
            }
        }
        let mut framing = Framing::default();
        for header in parsed.headers.iter() {
            framing
                .header(header.name.as_bytes(), header.value)
                .map_err(|e| self.error(e.to_string()))?;
        }
        let body = framing
            .request_body()
            .map_err(|e| self.error(e.to_string()))?;
        Ok(State::Body(body))
    }

    /// Room for a body of `length` bytes at once (no doubling, no slack held
    /// in the reorder buffer), up to [`RESERVE_LIMIT`] whatever a header claims.
    fn reserve_body(&mut self) {
        if let Some(left) = self.body_left() {
            let room = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(RESERVE_LIMIT);
            self.request.reserve_exact(room);
        }
    }

    /// The bytes a `Content-Length` body still lacks.
    fn body_left(&self) -> Option<u64> {
        match self.state {
            State::Body(body) => body.length_left(),
            _ => None,
        }
    }

    fn maybe_done(&mut self, done: &mut impl FnMut(Request)) {
        if matches!(self.state, State::Body(body) if body.is_complete()) {
            self.emit(done);
        }
    }

    fn emit(&mut self, done: &mut impl FnMut(Request)) {
        self.state = State::Idle;
        let mut head = std::mem::take(&mut self.request);
        let bytes = if self.spilled.is_empty() {
            RequestBytes::from(head)
        } else {
            let tail = head.split_off(self.head_len);
            RequestBytes {
                head,
                spilled: std::mem::take(&mut self.spilled),
                tail,
            }
        };
        (self.head_len, self.spilled_len) = (0, 0);
        done(Request {
            at_us: self.at_us,
            bytes,
        });
    }

    fn error(&self, message: String) -> FrameError {
        self.error_at(self.started, message)
    }

    fn error_at(&self, at: u64, message: String) -> FrameError {
        FrameError {
            at,
            message,
            unreadable: None,
        }
    }
}

/// The end (just past the empty line) of a head, searching from `from`.
fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(lf) = memchr(b'\n', &buf[at..]) {
        let lf = at + lf;
        match buf.get(lf + 1..) {
            Some([b'\n', ..]) => return Some(lf + 2),
            Some([b'\r', b'\n', ..]) => return Some(lf + 3),
            _ => at = lf + 1,
        }
    }
    None
}

/// Whether `data` (a segment's payload) starts with a whole request line.
pub(crate) fn starts_request(data: &[u8]) -> bool {
    let head = &data[..data.len().min(MAX_REQUEST_LINE)];
    memchr(b'\n', head).is_some_and(|lf| is_request_line(&head[..lf]))
}

/// The TLS record (or SSLv2 client hello) `data` starts with, said, if it does.
fn tls_record(data: &[u8]) -> Option<String> {
    let bytes = |n: usize| {
        let shown: Vec<String> = data.iter().take(n).map(|b| format!("{b:02x}")).collect();
        shown.join(" ")
    };
    match data {
        // A record: type (0x14..0x17: change cipher spec, alert, handshake,
        // data), version 3.x.
        [0x14..=0x17, 0x03, 0x00..=0x04, ..] | [0x16, 0x03] | [0x16] => Some(format!(
            "a TLS record (bytes {}): TLS, not HTTP/1.x",
            bytes(3)
        )),
        // SSLv2: a 2-byte length with its top bit set, then CLIENT-HELLO (1)
        // and a version (0.2 or 3.x).
        [0x80..=0xff, _, 0x01, 0x00 | 0x03, ..] => Some(format!(
            "an SSLv2 client hello (bytes {}): TLS, not HTTP/1.x",
            bytes(4)
        )),
        _ => None,
    }
}

/// The first header line of `head` (a whole head, request line first) that
/// is not `name: value`: its offset, its bytes and why.
fn bad_header_line(head: &[u8]) -> Option<(usize, &[u8], &'static str)> {
    let mut at = memchr(b'\n', head)? + 1;
    while at < head.len() {
        let end = memchr(b'\n', &head[at..]).map_or(head.len(), |lf| at + lf);
        let line = &head[at..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return None;
        }
        let why = if matches!(line[0], b' ' | b'\t') {
            Some("continues the line before (obs-fold), which requests may not do (RFC 9112 §5.2)")
        } else {
            match memchr(b':', line) {
                None => Some("has no `:` (expected `Name: value`)"),
                Some(colon) if colon == 0 || !line[..colon].iter().all(|b| is_token(*b)) => {
                    Some("has no valid header name before its `:`")
                }
                Some(colon) => line[colon + 1..]
                    .iter()
                    .any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
                    .then_some("has a control byte in its value"),
            }
        };
        if let Some(why) = why {
            return Some((at, line, why));
        }
        at = end + 1;
    }
    None
}

/// `line` for a message: at most 80 bytes, control bytes escaped.
fn quote(line: &[u8]) -> String {
    line.iter()
        .take(80)
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect()
}

/// `METHOD SP target SP HTTP/1.x` (an optional CR at the end).
fn is_request_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.split(|b| *b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    !method.is_empty()
        && method.iter().all(|b| is_token(*b))
        && !target.is_empty()
        && target.iter().all(|b| b.is_ascii_graphic() || *b >= 0x80)
        && version.len() == 8
        && version.starts_with(b"HTTP/1.")
}

fn first_line(buf: &[u8]) -> String {
    let line = buf.split(|b| *b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(&line[..line.len().min(80)])
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests;
