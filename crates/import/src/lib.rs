//! tank-import: captured traffic becomes a sessions file
//! ([`tank_plan::sessions`]) that `ammo_type = sessions` replays with its
//! timing.
//!
//! Data flows one way:
//!
//! ```text
//! pcap / pcapng ── pcap (container) ─ link (frame → TCP segment) ─ tcp (reassembly)
//!                  ─ http (request framing) ─ capture (connections → sessions) ─┐
//! access log ───── access (a line → a rebuilt request; a client → a session) ──┤
//! HAR ──────────── har (an entry → a rebuilt request; a connection → a session)┤
//!                                                                              ▼
//!                         order (time order in bounded memory) ─ sessions writer
//! ```
//!
//! [`detect`] tells the formats apart by content. Every importer pushes
//! requests with absolute times into an [`order::Sorter`]; what comes out is
//! numbered (session ids in order of first request) and offset from the first
//! request, and written. What an importer could not take as it was becomes a
//! warning ([`Warnings`]); what makes the input unreadable is an
//! [`ImportError`] naming the file and the byte or line.

#![warn(missing_docs, unreachable_pub)]

mod access;
mod capture;
mod detect;
mod error;
mod har;
mod held;
mod http;
mod link;
pub mod on_the_fly;
mod order;
mod pcap;
mod span;
mod tcp;
mod time;
mod warnings;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::Arc;

use tank_plan::sessions::SessionsWriter;
use tank_plan::words::count;

use held::SpillFile;
use order::SortError;

pub use detect::Format;
pub use error::ImportError;
pub use order::Ordering;
pub use warnings::Warnings;

/// Each session's label (who the client was), by the importer's session
/// number, for formats whose requests do not carry it: the session's `S`
/// record takes it whichever of its requests comes first in time.
pub type Labels = HashMap<u64, String>;

/// What requests are tagged with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TagBy {
    /// The URI's path, without the query (as autocases markers are made of it).
    #[default]
    Path,
    /// No tag.
    None,
}

/// What makes a session, for the formats that have no connections of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionBy {
    /// Access logs: one client address.
    Addr,
    /// Access logs: one client address and user agent.
    AddrUa,
    /// HAR: one connection id.
    Connection,
    /// HAR: one page.
    Page,
}

/// How to import (`tank import`'s options, resolved).
#[derive(Debug, Clone)]
pub struct Options {
    /// The format, or `None` to detect it from the content.
    pub format: Option<Format>,
    /// pcap: the server's port (default: per connection, the port its SYN went to).
    pub server_port: Option<u16>,
    /// Memory for requests: half holds requests in progress (bodies past it
    /// spill to a temporary file) and connections without data, half the
    /// reorder buffer (past it, sorted runs spill to temporary files).
    pub memory_budget: usize,
    /// What requests are tagged with.
    pub tag_by: TagBy,
    /// Access logs and HAR: what makes a session (default: address; connection).
    pub session_by: Option<SessionBy>,
    /// Access logs: the `Host` header of every request.
    pub host: Option<String>,
    /// Access logs: headers (`Name: value`) added to every request.
    pub headers: Vec<String>,
    /// Access logs: a line that is not a log line is an error, not a warning.
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: None,
            server_port: None,
            memory_budget: 256 << 20,
            tag_by: TagBy::Path,
            session_by: None,
            host: None,
            headers: Vec::new(),
            strict: false,
        }
    }
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The format read.
    pub format: Format,
    /// Sessions written.
    pub sessions: u64,
    /// Requests written.
    pub requests: u64,
    /// Request bytes written.
    pub bytes: u64,
    /// The last request's offset, µs.
    pub duration_us: u64,
    /// pcap: connections skipped because they are not to the server port, by port (port, count).
    pub skipped_ports: Vec<(u16, u64)>,
    /// Warnings (reported and counted).
    pub warnings: u64,
    /// Requests whose time was moved up to keep the output in order.
    pub clamped: u64,
    /// pcap: connections forgotten without having sent any data.
    pub forgotten: u64,
    /// Bytes of requests in progress held in a temporary file.
    pub spilled_bytes: u64,
    /// How the output was put in order.
    pub ordering: Ordering,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}, {}, {} over {:.3} s; ",
            self.format.name(),
            count(self.sessions, "session"),
            count(self.requests, "request"),
            count(self.bytes, "byte"),
            self.duration_us as f64 / 1e6
        )?;
        let skipped: u64 = self.skipped_ports.iter().map(|(_, n)| n).sum();
        if skipped > 0 {
            let ports: Vec<String> = self
                .skipped_ports
                .iter()
                .take(5)
                .map(|(port, n)| format!("{port} ×{n}"))
                .collect();
            let more = if self.skipped_ports.len() > 5 {
                ", ..."
            } else {
                ""
            };
            write!(
                f,
                "{} skipped (ports {}{more}); ",
                count(skipped, "flow"),
                ports.join(", ")
            )?;
        }
        if self.clamped > 0 {
            let moved = count(self.clamped, "request");
            write!(f, "{moved} moved up to keep time order; ")?;
        }
        if self.forgotten > 0 {
            write!(
                f,
                "{} forgotten after sending nothing for 10 s (or past --memory); ",
                count(self.forgotten, "connection")
            )?;
        }
        if self.spilled_bytes > 0 {
            write!(
                f,
                "{} of requests in progress held on disk (past --memory); ",
                count(self.spilled_bytes, "byte")
            )?;
        }
        write!(f, "{}; {}", count(self.warnings, "warning"), self.ordering)
    }
}

/// Import `input` (named `path` in messages) into a sessions file on `out`.
///
/// Reads the input once, streaming; memory is bounded by
/// `options.memory_budget` plus what is open at once (connections, clients).
/// Warnings go to `warnings`; an input that is not what its format says is an
/// error naming where.
pub fn import(
    input: impl Read + Send,
    path: &str,
    out: impl Write,
    options: &Options,
    warnings: &mut Warnings,
) -> Result<Summary, ImportError> {
    let mut input = input;
    let mut head = Vec::with_capacity(detect::HEAD);
    (&mut input)
        .take(detect::HEAD as u64)
        .read_to_end(&mut head)
        .map_err(|e| ImportError::io(path, "reading", e))?;
    if head.is_empty() {
        return Err(ImportError::input(
            path,
            "the file is empty; expected a pcap, pcapng or HAR file, or an nginx/Apache access log"
                .into(),
        ));
    }
    let found = detect::detect(&head);
    let format = options.format.unwrap_or(found);
    if matches!(format, Format::Pcap | Format::Pcapng) && found != format {
        return Err(ImportError::format(
            path,
            0,
            &format!(
                "a {} file (its magic number); this looks like {}",
                format.name(),
                found.name()
            ),
        ));
    }
    check_options(path, format, options)?;
    let input = io::Cursor::new(head).chain(input);

    let write_error = |e| ImportError::io(path, "writing the sessions", e);
    let mut writer = SessionsWriter::new(out).map_err(write_error)?;
    writer
        .comment(&format!(
            "imported by tank import from {path} ({})",
            format.name()
        ))
        .map_err(write_error)?;
    let spill = Arc::new(SpillFile::new());
    let mut emitter = Emitter {
        writer,
        spill: Arc::clone(&spill),
        ids: HashMap::new(),
        labels: Labels::new(),
        next_id: 0,
        base_us: None,
        requests: 0,
        bytes: 0,
        last_offset_us: 0,
    };
    let half = options.memory_budget / 2;
    let mut sorter = order::Sorter::new(half);
    let mut skipped_ports = Vec::new();
    let mut forgotten = 0;
    match format {
        Format::Pcap | Format::Pcapng => {
            let mut capture =
                capture::Capture::new(options.server_port, options.tag_by, half, spill);
            let mut emit = |item| emitter.emit(item);
            pcap::read(input, path, warnings, |packet, warnings| {
                capture.packet(packet, path, &mut sorter, warnings, &mut emit)
            })?;
            forgotten = capture.forgotten();
            skipped_ports = capture.finish(path, &mut sorter, warnings)?;
        }
        Format::Access => {
            emitter.labels = access::import(input, path, options, &mut sorter, warnings)?;
        }
        Format::Har => emitter.labels = har::import(input, path, options, &mut sorter)?,
    }
    let clamped = sorter.clamped();
    let ordering = sorter
        .finish(&mut |item| emitter.emit(item))
        .map_err(|e| e.at(path))?;
    emitter.writer.finish().map_err(write_error)?;
    if emitter.requests == 0 {
        warnings.warn(format!(
            "{path}: no request found: the sessions file is empty (a replay of it is refused)"
        ));
    }
    Ok(Summary {
        format,
        sessions: emitter.next_id,
        requests: emitter.requests,
        bytes: emitter.bytes,
        duration_us: emitter.last_offset_us,
        skipped_ports,
        warnings: warnings.total(),
        clamped,
        forgotten,
        spilled_bytes: emitter.spill.spilled(),
        ordering,
    })
}

/// Refuse options that do not apply to `format` (none is silently ignored).
fn check_options(path: &str, format: Format, options: &Options) -> Result<(), ImportError> {
    let pcap = matches!(format, Format::Pcap | Format::Pcapng);
    let refuse = |option: &str, applies: &str| {
        Err(ImportError::input(
            path,
            format!("{option} applies to {applies}, not to {}", format.name()),
        ))
    };
    if options.server_port.is_some() && !pcap {
        return refuse("--server-port", "pcap and pcapng");
    }
    if format != Format::Access {
        if options.host.is_some() {
            return refuse("--host", "access logs");
        }
        if !options.headers.is_empty() {
            return refuse("--header", "access logs");
        }
        if options.strict {
            return refuse("--strict", "access logs");
        }
    }
    if let Some(bad) = options
        .headers
        .iter()
        .find(|h| !h.contains(':') || h.contains(['\r', '\n']))
    {
        return Err(ImportError::input(
            path,
            format!("--header `{bad}`: expected `Name: value` on one line"),
        ));
    }
    match (format, options.session_by) {
        (_, None) => Ok(()),
        (Format::Access, Some(SessionBy::Addr | SessionBy::AddrUa)) => Ok(()),
        (Format::Har, Some(SessionBy::Connection | SessionBy::Page)) => Ok(()),
        (Format::Access, _) => refuse("--session-by connection|page", "HAR"),
        (Format::Har, _) => refuse("--session-by addr|addr+ua", "access logs"),
        _ => refuse("--session-by", "access logs and HAR"),
    }
}

/// The tag of `request` under `by`: its URI's path, line breaks removed.
pub fn tag(by: TagBy, request: &[u8]) -> Vec<u8> {
    match by {
        TagBy::None => Vec::new(),
        TagBy::Path => tank_plan::marker::uri_path(request)
            .unwrap_or_default()
            .iter()
            .copied()
            .filter(|b| !matches!(b, b'\r' | b'\n'))
            .collect(),
    }
}

/// Writes sorted items as sessions records: numbers sessions in order of
/// their first request, offsets times from the first request.
struct Emitter<W: Write> {
    writer: SessionsWriter<W>,
    /// Where spilled request bodies are read back from.
    spill: Arc<SpillFile>,
    ids: HashMap<u64, u64>,
    /// Labels of sessions not yet begun, for formats whose requests do not carry them.
    labels: Labels,
    next_id: u64,
    base_us: Option<u64>,
    requests: u64,
    bytes: u64,
    last_offset_us: u64,
}

impl<W: Write> Emitter<W> {
    fn emit(&mut self, item: order::Item) -> Result<(), SortError> {
        let base = *self.base_us.get_or_insert(item.at_us);
        let offset = item.at_us.saturating_sub(base);
        self.last_offset_us = offset;
        match item.kind {
            order::Kind::Request { label, tag, bytes } => {
                let id = match self.ids.get(&item.session) {
                    Some(&id) => id,
                    None => {
                        let id = self.next_id;
                        self.next_id += 1;
                        self.ids.insert(item.session, id);
                        let label = label.or_else(|| self.labels.remove(&item.session));
                        self.writer
                            .begin(id, offset, label.as_deref().unwrap_or_default())
                            .map_err(SortError::Out)?;
                        id
                    }
                };
                self.requests += 1;
                self.bytes += bytes.len();
                self.writer
                    .request_start(id, offset, &tag, bytes.len())
                    .map_err(SortError::Out)?;
                let writer = &mut self.writer;
                bytes.write_to(&self.spill, &mut |part| writer.request_part(part))?;
                self.writer.request_end().map_err(SortError::Out)
            }
            order::Kind::End => match self.ids.remove(&item.session) {
                Some(id) => self.writer.end(id, offset).map_err(SortError::Out),
                None => Ok(()),
            },
        }
    }
}
