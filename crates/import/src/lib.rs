//! tank-import: captured traffic becomes a sessions file
//! ([`tank_plan::sessions`]) that `ammo_type = sessions` replays with its
//! timing.
//!
//! Data flows one way:
//!
//! ```text
//! pcap / pcapng ── pcap (container) ─ link (frame → TCP segment) ─ tcp (reassembly)
//!     HTTP:        ─ http (request framing) ─ capture (connections → sessions) ─┐
//!     MySQL:       ─ twoway (both directions) ─ mysql (commands, replies) ──────┤
//!     framed TCP:  ─ twoway ─ framed (messages by delimiter or length) ─────────┤
//! access log ───── access (a line → a rebuilt request; a client → a session) ──┤
//! HAR ──────────── har (an entry → a rebuilt request; a connection → a session)┤
//! slow query log ─ mysql::slowlog (a statement → a command; a thread → a session)
//!                                                                              ▼
//!                         order (time order in bounded memory) ─ sessions writer
//! ```
//!
//! A sessions file holds one protocol ([`Protocol`]): a pcap is read as
//! HTTP, MySQL or a framed TCP protocol as `--protocol`, `--mysql-port` or
//! `--framing` says, else as its first connections show (MySQL's port or
//! greeting: MySQL; else HTTP).
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
mod flows;
mod framed;
mod har;
mod held;
mod http;
mod link;
mod mysql;
pub mod on_the_fly;
mod order;
mod pcap;
mod span;
mod tag;
mod tcp;
mod time;
mod twoway;
mod warnings;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::Arc;

use tank_config::ReplyFraming;
use tank_plan::sessions::SessionsWriter;
use tank_plan::words::count;

use held::SpillFile;
use order::SortError;

pub use detect::Format;
pub use error::ImportError;
pub use order::Ordering;
pub use tag::tag;
pub use tank_plan::sessions::Protocol;
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
    /// pcap: the protocol to read (`None`: as `mysql_port`, `framing` or the capture says).
    pub protocol: Option<Protocol>,
    /// pcap, MySQL: the server's port (default [`mysql::PORT`]; a greeting
    /// on another port is MySQL too).
    pub mysql_port: Option<u16>,
    /// pcap, framed TCP: how the client's messages are framed.
    pub framing: Option<ReplyFraming>,
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
            protocol: None,
            mysql_port: None,
            framing: None,
        }
    }
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The format read.
    pub format: Format,
    /// The protocol of the requests written.
    pub protocol: Protocol,
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
    /// pcap: connections that could not be read, by kind (`TLS`, `compressed`), each named in a warning.
    pub unreadable: Vec<(String, u64)>,
    /// pcap, MySQL: connections the server refused (a login, or before its
    /// greeting), each named in a warning and left out.
    pub refused: u64,
    /// pcap: frames skipped for what they are, by kind (`IP fragment`,
    /// `MPLS (not IP)`, `VXLAN (UDP 4789)`, `EtherType 0x88b5`), the first of
    /// each named in a warning.
    pub skipped_frames: Vec<(String, u64)>,
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
        let protocol = match (self.format, self.protocol) {
            (Format::Pcap | Format::Pcapng, Protocol::Mysql | Protocol::Tcp) => {
                format!(" ({})", self.protocol.name())
            }
            _ => String::new(),
        };
        write!(
            f,
            "{}{protocol}: {}, {}, {} over {:.3} s; ",
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
                count(skipped, "connection"),
                ports.join(", ")
            )?;
        }
        if !self.skipped_frames.is_empty() {
            let kinds: Vec<String> = self
                .skipped_frames
                .iter()
                .map(|(kind, n)| format!("{kind} ×{n}"))
                .collect();
            let total: u64 = self.skipped_frames.iter().map(|(_, n)| n).sum();
            write!(
                f,
                "{} skipped ({}); ",
                count(total, "frame"),
                kinds.join(", ")
            )?;
        }
        if !self.unreadable.is_empty() {
            let kinds: Vec<String> = self
                .unreadable
                .iter()
                .map(|(kind, n)| format!("{kind} ×{n}"))
                .collect();
            let total: u64 = self.unreadable.iter().map(|(_, n)| n).sum();
            write!(
                f,
                "{} unreadable ({}); ",
                count(total, "connection"),
                kinds.join(", ")
            )?;
        }
        if self.refused > 0 {
            write!(
                f,
                "{} refused by the server, left out; ",
                count(self.refused, "connection")
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
            format!("the file is empty; expected {}", detect::EXPECTED),
        ));
    }
    if detect::is_gzip(&head) {
        return Err(ImportError::input(
            path,
            format!(
                "a gzip-compressed file (magic 1f 8b): decompress it first (`zcat {path} | \
                 tank import - …`)"
            ),
        ));
    }
    let found = detect::detect(&head);
    let format = options.format.unwrap_or(found);
    if matches!(format, Format::Pcap | Format::Pcapng) && found != format {
        return Err(ImportError::format(
            path,
            0,
            &detect::not_magic(format, found, &head),
        ));
    }
    check_options(path, format, options)?;
    let protocol = protocol(path, format, options, &head)?;
    let input = io::Cursor::new(head).chain(input);

    let write_error = |e| ImportError::io(path, "writing the sessions", e);
    let mut writer = SessionsWriter::with_protocol(out, protocol).map_err(write_error)?;
    writer
        .comment(&format!(
            "imported by tank import from {path} ({})",
            format.name()
        ))
        .map_err(write_error)?;
    let spill = Arc::new(SpillFile::new());
    let mut emitter = Emitter {
        writer,
        tags: options.tag_by != TagBy::None,
        spill: Arc::clone(&spill),
        ids: HashMap::default(),
        labels: Labels::new(),
        next_id: 0,
        base_us: None,
        requests: 0,
        bytes: 0,
        last_offset_us: 0,
    };
    let half = options.memory_budget / 2;
    let mut sorter = order::Sorter::new(half);
    let mut counted = twoway::Counted::default();
    let mut forgotten = 0;
    match (format, protocol) {
        (Format::Pcap | Format::Pcapng, Protocol::Http) => {
            let mut capture =
                capture::Capture::new(options.server_port, options.tag_by, half, spill);
            let mut emit = |item| emitter.emit(item);
            pcap::read(input, path, warnings, |packet, warnings| {
                capture.packet(packet, path, &mut sorter, warnings, &mut emit)
            })?;
            forgotten = capture.forgotten();
            counted = capture.finish(path, &mut sorter, warnings)?;
        }
        (Format::Pcap | Format::Pcapng, Protocol::Mysql) => {
            let port = options.mysql_port.unwrap_or(mysql::PORT);
            let capture = twoway::Capture::new(mysql::Mysql { port });
            let mut emit = |item| emitter.emit(item);
            counted = two_way(capture, input, path, &mut sorter, warnings, &mut emit)?;
        }
        (Format::Pcap | Format::Pcapng, Protocol::Tcp) => {
            let framed = framed::Framed {
                framing: options.framing.clone().unwrap_or_default(),
                server_port: options.server_port,
            };
            let capture = twoway::Capture::new(framed);
            let mut emit = |item| emitter.emit(item);
            counted = two_way(capture, input, path, &mut sorter, warnings, &mut emit)?;
        }
        (Format::SlowLog, _) => mysql::slowlog::import(input, path, &mut sorter, warnings)?,
        (Format::Access, _) => {
            emitter.labels = access::import(input, path, options, &mut sorter, warnings)?;
        }
        (Format::Har, _) => {
            emitter.labels = har::import(input, path, options, &mut sorter, warnings)?;
        }
    }
    let clamped = sorter.clamped();
    let ordering = sorter
        .finish(&mut |item| emitter.emit(item))
        .map_err(|e| e.at(path))?;
    emitter.writer.finish().map_err(write_error)?;
    if emitter.requests == 0 {
        warnings.always(no_request(path, &counted));
    }
    Ok(Summary {
        format,
        protocol,
        sessions: emitter.next_id,
        requests: emitter.requests,
        bytes: emitter.bytes,
        duration_us: emitter.last_offset_us,
        skipped_ports: counted.skipped_ports,
        unreadable: counted.unreadable,
        refused: counted.refused,
        skipped_frames: counted.skipped_frames,
        warnings: warnings.total(),
        clamped,
        forgotten,
        spilled_bytes: emitter.spill.spilled(),
        ordering,
    })
}

/// The warning of an import that found no request in `path`, with why
/// when a capture's counts say (`counted`).
fn no_request(path: &str, counted: &twoway::Counted) -> String {
    let mut why: Vec<String> = Vec::new();
    let connections = |n: u64| count(n, "connection");
    if !counted.unreadable.is_empty() {
        let kinds: Vec<String> = counted
            .unreadable
            .iter()
            .map(|(kind, n)| format!("{kind} ×{n}"))
            .collect();
        let total = counted.unreadable.iter().map(|(_, n)| n).sum();
        why.push(format!(
            "{} unreadable ({})",
            connections(total),
            kinds.join(", ")
        ));
    }
    if counted.refused > 0 {
        why.push(format!(
            "{} refused by the server",
            connections(counted.refused)
        ));
    }
    for (what, n) in counted.lost.iter().filter(|(_, n)| *n > 0) {
        why.push(format!("{} {what}", connections(*n)));
    }
    let skipped: u64 = counted.skipped_ports.iter().map(|(_, n)| n).sum();
    if skipped > 0 {
        why.push(format!("{} skipped by port", connections(skipped)));
    }
    let frames: u64 = counted.skipped_frames.iter().map(|(_, n)| n).sum();
    if frames > 0 {
        let kinds: Vec<&str> = counted
            .skipped_frames
            .iter()
            .map(|(kind, _)| kind.as_str())
            .collect();
        why.push(format!(
            "{} skipped ({})",
            count(frames, "frame"),
            kinds.join(", ")
        ));
    }
    let why = match (why.is_empty(), counted.connections) {
        (false, _) => format!(": {}", why.join(", ")),
        (true, 0) => ": it holds no TCP connection".to_owned(),
        (true, n) => format!(": its {} sent no request", connections(n)),
    };
    format!("{path}: no request found{why}: the sessions file is empty (a replay of it is refused)")
}

/// Read a pcap's packets both ways into `capture`.
fn two_way<P: twoway::Protocol>(
    mut capture: twoway::Capture<P>,
    input: impl Read + Send,
    path: &str,
    sorter: &mut order::Sorter,
    warnings: &mut Warnings,
    emit: &mut impl FnMut(order::Item) -> Result<(), SortError>,
) -> Result<twoway::Counted, ImportError> {
    pcap::read(input, path, warnings, |packet, warnings| {
        capture.packet(packet, path, sorter, warnings, emit)
    })?;
    capture.finish(path, sorter, warnings)
}

/// The protocol an import of `format` writes: a log's own, a capture's as
/// the options say, else as its first connections show (see the crate docs).
fn protocol(
    path: &str,
    format: Format,
    options: &Options,
    head: &[u8],
) -> Result<Protocol, ImportError> {
    let implied = match format {
        Format::Access | Format::Har => Some(Protocol::Http),
        Format::SlowLog => Some(Protocol::Mysql),
        Format::Pcap | Format::Pcapng => None,
    };
    if let (Some(implied), Some(asked)) = (implied, options.protocol) {
        if implied != asked {
            return Err(ImportError::input(
                path,
                format!(
                    "--protocol {}: a {} holds {} requests",
                    asked.name(),
                    format.name(),
                    implied.name()
                ),
            ));
        }
    }
    let by_options = options
        .protocol
        .or(options.framing.as_ref().map(|_| Protocol::Tcp))
        .or(options.mysql_port.map(|_| Protocol::Mysql));
    let protocol = implied.or(by_options).unwrap_or_else(|| {
        if mysql::in_capture(head) {
            Protocol::Mysql
        } else {
            Protocol::Http
        }
    });
    let refuse = |option: &str, applies: &str| {
        Err(ImportError::input(
            path,
            format!(
                "{option} applies to {applies}, not to {} requests",
                protocol.name()
            ),
        ))
    };
    match protocol {
        Protocol::Mysql if options.server_port.is_some() => refuse(
            "--server-port",
            "HTTP and framed TCP captures (MySQL's is --mysql-port)",
        ),
        Protocol::Tcp if options.framing.is_none() => Err(ImportError::input(
            path,
            "--protocol tcp needs --framing (delimiter:BYTES or length:N): how the client's \
             messages end"
                .into(),
        )),
        Protocol::Http | Protocol::Tcp if options.mysql_port.is_some() => {
            refuse("--mysql-port", "MySQL captures")
        }
        Protocol::Http | Protocol::Mysql if options.framing.is_some() => {
            refuse("--framing", "framed TCP captures")
        }
        _ => Ok(protocol),
    }
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
    if options.mysql_port.is_some() && !pcap {
        return refuse("--mysql-port", "pcap and pcapng");
    }
    if options.framing.is_some() && !pcap {
        return refuse("--framing", "pcap and pcapng");
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

/// Writes sorted items as sessions records: numbers sessions in order of
/// their first request, offsets times from the first request.
struct Emitter<W: Write> {
    writer: SessionsWriter<W>,
    /// Whether tags are written (`--tag none`: not).
    tags: bool,
    /// Where spilled request bodies are read back from.
    spill: Arc<SpillFile>,
    /// Looked up per request: the importer's own session numbers, so a fast hasher is safe.
    ids: HashMap<u64, u64, foldhash::fast::RandomState>,
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
                let tag = if self.tags { &tag[..] } else { &[] };
                self.writer
                    .request_start(id, offset, tag, bytes.len())
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
