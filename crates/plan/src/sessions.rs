//! The sessions file: captured traffic as a replay reads it.
//!
//! `tank import` turns a capture (pcap, an access log, a HAR) into this file,
//! and `ammo_type = sessions` replays it. A *session* is one captured client
//! connection (or one client of a log): its requests go out over one
//! connection, in order, each at its captured offset.
//!
//! ```text
//! tank-sessions 1[ <protocol>]\n                   first line: magic, version, protocol
//! # any text\n                                      a comment (import metadata); readers skip it
//! S <id> <offset_us> <label>\n                      session <id> begins; its first request is at <offset_us>
//! R <len> <offset_us> <id> <tag>\n<len bytes>\n     a request of session <id>, its bytes verbatim
//! E <id> <offset_us>\n                              session <id> has no more requests
//! ```
//!
//! The protocol says what the requests' bytes are ([`Protocol`]): HTTP/1.x
//! requests when the first line names none (or `http`), MySQL commands
//! (`mysql`: each request a command's payload, see `tank_mysql::command`), or
//! the messages of a framed TCP protocol (`tcp`). A replay checks it against
//! the gun, so a capture of one protocol is never fired as another.
//!
//! Offsets are µs from the capture's first request. Records are in
//! nondecreasing offset order; a session's `S` comes before its first `R`
//! (at that request's offset) and its `E` after its last (at that request's
//! offset). Ids are unsigned integers, each begun once. `label` (who the
//! client was) and `tag` (what results are grouped by) run to the end of their
//! line and may be empty; neither holds a line break.
//!
//! # Why a stream of requests, not a record per session
//!
//! Apiary stores each job whole (all its requests in one record) and sorts
//! jobs by their first request, so both its import and its replay hold every
//! long-lived connection in memory until it ends. Here a request is a record
//! of its own, in time order, tagged with its session: an importer writes a
//! request as soon as nothing earlier can still come, and a replay reads one
//! request ahead of the clock, so memory is bounded by the requests in flight,
//! not by the capture. Sessions still appear in the order of their first
//! request (their `S` records), and the file stays a text one can `grep`,
//! `diff` and cut, as stpd is.

use std::io::{self, Write};
use std::path::Path;

use crate::ammo::show;
use crate::ammo::source::AmmoFile;
use crate::error::{PlanError, Result};

/// A request buffer larger than this is not kept for smaller requests.
const LARGE_BUFFER: usize = 1 << 20;

/// The latest offset a sessions file may hold: 366 days, µs. Longer than any
/// capture a replay is meant to reproduce (a year of access logs fits); an
/// offset past it is a corrupt clock (a `$msec` of 10²⁰, a pcap timestamp
/// of 2106), and `tank import` refuses it as the reader does, so a replay
/// never waits centuries for its next request.
pub const MAX_OFFSET_US: u64 = 366 * 86_400 * 1_000_000;

/// `us` as days (one decimal) or, from two years on, years: how far off an
/// out-of-range time is.
pub fn human_span(us: u64) -> String {
    let days = us as f64 / 86_400e6;
    if days >= 730.0 {
        format!("{:.0} years", days / 365.25)
    } else {
        format!("{days:.1} days")
    }
}

/// The first line of every sessions file (without its protocol and line feed).
pub(crate) const MAGIC: &str = "tank-sessions 1";

/// The first word of a sessions file of any version.
const WORD: &str = "tank-sessions";

/// The version this tank writes and reads (in [`MAGIC`]).
const VERSION: &[u8] = b"1";

/// What a sessions file's requests are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// HTTP/1.x requests, verbatim (the first line names no protocol, or `http`).
    #[default]
    Http,
    /// MySQL commands: each request a command's payload (`mysql`).
    Mysql,
    /// Messages of a framed TCP protocol, verbatim (`tcp`).
    Tcp,
}

impl Protocol {
    /// Its name on the first line (and in messages).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Mysql => "mysql",
            Protocol::Tcp => "tcp",
        }
    }

    /// The protocol the first line's `word` names.
    pub fn from_name(word: &str) -> Option<Protocol> {
        [Protocol::Http, Protocol::Mysql, Protocol::Tcp]
            .into_iter()
            .find(|p| p.name() == word)
    }
}

/// Whether `head`, the first bytes of a file, starts a sessions file (of any
/// version and protocol, known or not: [`SessionsReader::open`] tells which,
/// so another version is refused as one, not read as a capture).
pub(crate) fn is_sessions(head: &[u8]) -> bool {
    head.strip_prefix(WORD.as_bytes())
        .is_some_and(|rest| matches!(rest.first(), None | Some(b'\n' | b'\r' | b' ')))
}

/// Whether the file at `path` (plain or gzip) is a sessions file, by its
/// first line: `false` for a capture to import first.
pub fn is_sessions_file(path: &Path) -> Result<bool> {
    let mut file = AmmoFile::open(path)?;
    let mut line = Vec::new();
    file.read_line(&mut line)?;
    Ok(is_sessions(&line))
}

/// The protocol a sessions file's first line names; an error naming the
/// file for a version or a protocol tank does not know.
fn protocol_of(line: &[u8], path: &Path) -> Result<Protocol> {
    let error = |message: String| PlanError::Ammo {
        path: path.to_path_buf(),
        offset: 0,
        message,
    };
    let rest = trim_line_end(line.get(WORD.len()..).unwrap_or_default());
    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
    let (version, word) = match rest.iter().position(|&b| b == b' ') {
        Some(space) => (&rest[..space], &rest[space + 1..]),
        None => (rest, &b""[..]),
    };
    if version.is_empty() {
        return Err(error(format!(
            "a sessions file without its version: expected a first line `{MAGIC}[ <protocol>]`"
        )));
    }
    if version != VERSION {
        return Err(error(format!(
            "sessions file version `{}` is not supported: this tank reads version 1 (a first \
             line `{MAGIC}[ <protocol>]`)",
            show(version)
        )));
    }
    if word.is_empty() {
        return Ok(Protocol::Http);
    }
    std::str::from_utf8(word)
        .ok()
        .and_then(Protocol::from_name)
        .ok_or_else(|| {
            error(format!(
                "a sessions file of protocol `{}`, which tank does not know: expected \
                 `http` (or none), `mysql` or `tcp`",
                show(word)
            ))
        })
}

/// One record of a sessions file, borrowed from the reader until the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A session begins; its first request is at `offset_us`.
    Begin {
        /// The session.
        id: u64,
        /// Its first request's offset, µs from the capture's first request.
        offset_us: u64,
        /// Who the client was (free text, may be empty).
        label: &'a str,
    },
    /// A request of session `id`.
    Request {
        /// The session it belongs to.
        id: u64,
        /// When it was sent, µs from the capture's first request.
        offset_us: u64,
        /// What results group it by (may be empty).
        tag: &'a [u8],
        /// The request, verbatim.
        bytes: &'a [u8],
    },
    /// Session `id` has no more requests; `offset_us` is its last request's.
    End {
        /// The session.
        id: u64,
        /// Its last request's offset.
        offset_us: u64,
    },
}

impl Record<'_> {
    /// The record's offset, µs from the capture's first request.
    pub fn offset_us(&self) -> u64 {
        match *self {
            Record::Begin { offset_us, .. }
            | Record::Request { offset_us, .. }
            | Record::End { offset_us, .. } => offset_us,
        }
    }
}

/// Writes a sessions file. Records must come in the file's order (the
/// importer sorts them); what would make an unreadable file (a line break in
/// a label or tag, a time going backwards) is refused with
/// [`io::ErrorKind::InvalidInput`].
pub struct SessionsWriter<W: Write> {
    out: W,
    last_offset_us: u64,
    head: Vec<u8>,
    /// Bytes still due of a request written in parts.
    due: Option<u64>,
}

impl<W: Write> SessionsWriter<W> {
    /// Start a sessions file of HTTP requests on `out` (writes its first line).
    pub fn new(out: W) -> io::Result<Self> {
        Self::with_protocol(out, Protocol::Http)
    }

    /// Start a sessions file of `protocol`'s requests on `out` (writes its
    /// first line; HTTP's names no protocol, as files before protocols did).
    pub fn with_protocol(mut out: W, protocol: Protocol) -> io::Result<Self> {
        out.write_all(MAGIC.as_bytes())?;
        if protocol != Protocol::Http {
            out.write_all(b" ")?;
            out.write_all(protocol.name().as_bytes())?;
        }
        out.write_all(b"\n")?;
        Ok(SessionsWriter {
            out,
            last_offset_us: 0,
            head: Vec::with_capacity(128),
            due: None,
        })
    }

    /// A `# text` comment line (each line of `text` becomes one).
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        for line in text.lines() {
            self.out.write_all(b"# ")?;
            self.out.write_all(line.as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Session `id` begins, its first request at `offset_us`.
    pub fn begin(&mut self, id: u64, offset_us: u64, label: &str) -> io::Result<()> {
        self.not_in_request()?;
        self.advance(offset_us)?;
        one_line("label", label.as_bytes())?;
        self.head.clear();
        self.head.extend_from_slice(b"S ");
        self.fields(&[id, offset_us]);
        self.head.extend_from_slice(label.as_bytes());
        self.head.push(b'\n');
        self.out.write_all(&self.head)
    }

    /// A request of session `id` at `offset_us`.
    pub fn request(&mut self, id: u64, offset_us: u64, tag: &[u8], bytes: &[u8]) -> io::Result<()> {
        self.request_start(id, offset_us, tag, bytes.len() as u64)?;
        self.request_part(bytes)?;
        self.request_end()
    }

    /// Start a request of `len` bytes, given in parts ([`Self::request_part`],
    /// then [`Self::request_end`]): one too large to hold in memory at once.
    pub fn request_start(
        &mut self,
        id: u64,
        offset_us: u64,
        tag: &[u8],
        len: u64,
    ) -> io::Result<()> {
        self.not_in_request()?;
        self.advance(offset_us)?;
        one_line("tag", tag)?;
        self.head.clear();
        self.head.extend_from_slice(b"R ");
        self.fields(&[len, offset_us, id]);
        self.head.extend_from_slice(tag);
        self.head.push(b'\n');
        self.out.write_all(&self.head)?;
        self.due = Some(len);
        Ok(())
    }

    /// The next bytes of the request started; more than its length is refused.
    pub fn request_part(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self.due {
            Some(due) if bytes.len() as u64 <= due => {
                self.due = Some(due - bytes.len() as u64);
                self.out.write_all(bytes)
            }
            _ => Err(invalid(
                "request bytes beyond the length announced, or no request started",
            )),
        }
    }

    /// End the request started, once all its bytes came.
    pub fn request_end(&mut self) -> io::Result<()> {
        match self.due.take() {
            Some(0) => self.out.write_all(b"\n"),
            _ => Err(invalid("a request ended before its announced length")),
        }
    }

    fn not_in_request(&self) -> io::Result<()> {
        match self.due {
            None => Ok(()),
            Some(_) => Err(invalid("a record inside a request's bytes")),
        }
    }

    /// Session `id` has no more requests; its last was at `offset_us`.
    pub fn end(&mut self, id: u64, offset_us: u64) -> io::Result<()> {
        self.not_in_request()?;
        self.advance(offset_us)?;
        self.head.clear();
        self.head.extend_from_slice(b"E ");
        self.fields(&[id, offset_us]);
        // The fields' last space becomes the line's end.
        if let Some(last) = self.head.last_mut() {
            *last = b'\n';
        }
        self.out.write_all(&self.head)
    }

    /// Append each number and a space to the record's head (itoa: a record
    /// is written per request, and `write!`'s formatting cost more than the rest).
    fn fields(&mut self, numbers: &[u64]) {
        let mut digits = itoa::Buffer::new();
        for &n in numbers {
            self.head.extend_from_slice(digits.format(n).as_bytes());
            self.head.push(b' ');
        }
    }

    /// Flush and hand back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.not_in_request()?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn advance(&mut self, offset_us: u64) -> io::Result<()> {
        if offset_us < self.last_offset_us {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "sessions records out of order: offset {offset_us} µs after {} µs",
                    self.last_offset_us
                ),
            ));
        }
        self.last_offset_us = offset_us;
        Ok(())
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn one_line(what: &str, text: &[u8]) -> io::Result<()> {
    if text.iter().any(|b| matches!(b, b'\n' | b'\r')) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a sessions {what} cannot hold a line break: `{}`",
                show(text)
            ),
        ));
    }
    Ok(())
}

/// Reads a sessions file (plain or gzip) record by record, checking what the
/// format promises: the magic line, time order, a session's requests only
/// between its `S` and its `E`. Every error names the file and the byte
/// offset where the record starts.
///
/// It remembers the sessions that are open (begun, not ended), so a request
/// outside its session is an error rather than a silent new connection, and
/// memory follows the capture's concurrency, not its length. (An id reused
/// after its `E` is therefore a new session.)
pub struct SessionsReader {
    file: AmmoFile,
    protocol: Protocol,
    line: Vec<u8>,
    tag: Vec<u8>,
    label: String,
    bytes: Vec<u8>,
    last_offset_us: u64,
    /// Looked up per request: the ids are the file's own, so a fast hasher is safe.
    open: foldhash::HashSet<u64>,
    /// Where the record being read starts, for errors.
    record_start: u64,
    /// Whether that record's line ends the file without a line end (a file
    /// cut short, which its error then says).
    unterminated: bool,
}

impl SessionsReader {
    /// Open `path` and check its first line.
    pub fn open(path: &Path) -> Result<Self> {
        let mut file = AmmoFile::open(path)?;
        let mut line = Vec::new();
        file.read_line(&mut line)?;
        if !is_sessions(&line) {
            return Err(PlanError::Ammo {
                path: path.to_path_buf(),
                offset: 0,
                message: format!(
                    "expected a sessions file, starting `{MAGIC}`; found `{}` \
                     (a capture is turned into one by `tank import`)",
                    show(line.get(..line.len().min(40)).unwrap_or_default())
                ),
            });
        }
        let protocol = protocol_of(&line, path)?;
        Ok(SessionsReader {
            file,
            protocol,
            line,
            tag: Vec::new(),
            label: String::new(),
            bytes: Vec::new(),
            last_offset_us: 0,
            open: foldhash::HashSet::default(),
            record_start: 0,
            unterminated: false,
        })
    }

    /// What its requests are (its first line says).
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Start the file over (for `loop`).
    pub fn rewind(&mut self) -> Result<()> {
        self.file.rewind()?;
        self.file.read_line(&mut self.line)?;
        self.last_offset_us = 0;
        self.open.clear();
        Ok(())
    }

    /// The next record, or `None` at the end of the file. Sessions the file
    /// begins but never ends are not an error: the capture ended with them
    /// open, and a replay ends them at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>> {
        let header = loop {
            self.record_start = self.file.offset();
            if !self.file.read_line(&mut self.line)? {
                return Ok(None);
            }
            self.unterminated = !self.line.ends_with(b"\n");
            let line = trim_line_end(&self.line);
            if line.is_empty() || line.starts_with(b"#") {
                continue;
            }
            break line;
        };
        let (kind, rest) = split_field(header);
        let record = match kind {
            b"S" => {
                let (id, rest) = self.number(rest, "session id")?;
                let (offset_us, label) = self.number(rest, "offset in µs")?;
                self.label = std::str::from_utf8(label)
                    .map_err(|_| self.error(format!("label `{}` is not UTF-8", show(label))))?
                    .to_owned();
                if !self.open.insert(id) {
                    return Err(self.error(format!("session {id} begins again before its end")));
                }
                Parsed::Begin { id, offset_us }
            }
            b"R" => {
                let (len, rest) = self.number(rest, "request length")?;
                let (offset_us, rest) = self.number(rest, "offset in µs")?;
                let (id, tag) = self.number(rest, "session id")?;
                self.tag.clear();
                self.tag.extend_from_slice(tag);
                if !self.open.contains(&id) {
                    return Err(self.error(format!(
                        "a request of session {id}, which is not open: \
                         expected it between `S {id} …` and `E {id} …`"
                    )));
                }
                self.read_body(len)?;
                if self.protocol == Protocol::Mysql {
                    self.check_command()?;
                }
                Parsed::Request { id, offset_us }
            }
            b"E" => {
                let (id, rest) = self.number(rest, "session id")?;
                let (offset_us, rest) = self.number(rest, "offset in µs")?;
                if !rest.is_empty() {
                    return Err(self.error(format!(
                        "unexpected `{}` after `E {id} {offset_us}`",
                        show(rest)
                    )));
                }
                if !self.open.remove(&id) {
                    return Err(self.error(format!(
                        "session {id} ends, but it is not open: expected `S {id} …` before"
                    )));
                }
                Parsed::End { id, offset_us }
            }
            _ => {
                return Err(self.error(format!(
                    "bad record `{}`: expected `S <id> <offset_us> <label>`, \
                     `R <len> <offset_us> <id> <tag>`, `E <id> <offset_us>` or `# comment`",
                    show(header.get(..header.len().min(60)).unwrap_or_default())
                )))
            }
        };
        let offset_us = record.offset_us();
        if offset_us > MAX_OFFSET_US {
            return Err(self.error(format!(
                "offset {offset_us} µs is {} into the capture: expected at most {MAX_OFFSET_US} \
                 (366 days); a time that far is a corrupt clock in the capture it came from",
                human_span(offset_us)
            )));
        }
        if offset_us < self.last_offset_us {
            return Err(self.error(format!(
                "offset {offset_us} µs is earlier than the record before it ({} µs): records \
                 must be in time order",
                self.last_offset_us
            )));
        }
        self.last_offset_us = offset_us;
        Ok(Some(match record {
            Parsed::Begin { id, offset_us } => Record::Begin {
                id,
                offset_us,
                label: &self.label,
            },
            Parsed::Request { id, offset_us } => Record::Request {
                id,
                offset_us,
                tag: &self.tag,
                bytes: &self.bytes,
            },
            Parsed::End { id, offset_us } => Record::End { id, offset_us },
        }))
    }

    /// Swap the last request's bytes with `other`'s: a replay keeps them
    /// without copying (one 300 MB request is one 300 MB buffer, not two).
    pub(crate) fn swap_request_bytes(&mut self, other: &mut Vec<u8>) {
        std::mem::swap(&mut self.bytes, other);
    }

    /// Read a request's `len` bytes and the line feed after them.
    fn read_body(&mut self, len: u64) -> Result<()> {
        // A buffer a far larger request left is let go, not kept for the rest of the file.
        if self.bytes.capacity() > LARGE_BUFFER && len < self.bytes.capacity() as u64 / 4 {
            self.bytes = Vec::new();
        }
        self.file.read_up_to(len, &mut self.bytes)?;
        if (self.bytes.len() as u64) < len {
            return Err(self.error(format!(
                "unexpected end of file: the request has {} of its {len} bytes",
                self.bytes.len()
            )));
        }
        // The header line is parsed: its buffer takes the byte after the request.
        self.file.read_up_to(1, &mut self.line)?;
        match self.line.as_slice() {
            b"\n" | b"" => Ok(()),
            other => Err(self.error(format!(
                "expected a line feed after the request's {len} bytes, found `{}`: \
                 is the length right?",
                show(other)
            ))),
        }
    }

    /// A MySQL request must be a command whose reply a replay can follow.
    fn check_command(&self) -> Result<()> {
        let Some(&byte) = self.bytes.first() else {
            return Err(self.error(
                "an empty request: a MySQL request is a command's payload, its first byte the \
                 command"
                    .into(),
            ));
        };
        if tank_mysql::Command::from_byte(byte).is_none() {
            return Err(self.error(format!(
                "command 0x{byte:02x} (COM_{}) is not one a replay can follow: expected a \
                 query, a prepared statement's, init_db, ping, quit or another command whose \
                 reply tank frames",
                tank_mysql::command::byte_name(byte)
            )));
        }
        Ok(())
    }

    /// The number at the start of `text`, and what follows its space.
    fn number<'t>(&self, text: &'t [u8], what: &str) -> Result<(u64, &'t [u8])> {
        leading_decimal(text).ok_or_else(|| {
            self.error(format!(
                "expected the {what} (an unsigned integer), found `{}`",
                show(split_field(text).0)
            ))
        })
    }

    fn error(&self, mut message: String) -> PlanError {
        if self.unterminated {
            message.push_str(
                " (the file ends inside this record, without its line end: is it cut short?)",
            );
        }
        PlanError::Ammo {
            path: self.file.path().to_path_buf(),
            offset: self.record_start,
            message,
        }
    }
}

/// A record's fields, before they are lent out with the reader's buffers.
enum Parsed {
    Begin { id: u64, offset_us: u64 },
    Request { id: u64, offset_us: u64 },
    End { id: u64, offset_us: u64 },
}

impl Parsed {
    fn offset_us(&self) -> u64 {
        match *self {
            Parsed::Begin { offset_us, .. }
            | Parsed::Request { offset_us, .. }
            | Parsed::End { offset_us, .. } => offset_us,
        }
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let end = line
        .iter()
        .rposition(|b| !matches!(b, b'\n' | b'\r'))
        .map_or(0, |i| i + 1);
    &line[..end]
}

/// The field at the start of `text` (up to its first space) as [`decimal`]
/// reads it, and the text after the space: one pass, as each record's
/// numbers are read twice per replay (its statistics, then its shots).
fn leading_decimal(text: &[u8]) -> Option<(u64, &[u8])> {
    let mut n: u64 = 0;
    for (at, &byte) in text.iter().enumerate() {
        if byte == b' ' {
            return (at > 0).then(|| (n, &text[at + 1..]));
        }
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    (!text.is_empty()).then_some((n, &[]))
}

/// `field` as an unsigned decimal: digits only, at least one, within `u64`.
#[cfg(test)]
fn decimal(field: &[u8]) -> Option<u64> {
    if field.is_empty() {
        return None;
    }
    field.iter().try_fold(0u64, |n, &byte| {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// The text up to the first space, and the text after it (empty if none).
/// Fields are a few bytes: a plain scan beats memchr's set-up.
fn split_field(text: &[u8]) -> (&[u8], &[u8]) {
    match text.iter().position(|&b| b == b' ') {
        Some(at) => (&text[..at], &text[at + 1..]),
        None => (text, &[]),
    }
}

#[cfg(test)]
mod tests;
