//! `tank import CAPTURE [-o sessions.txt]`: a pcap, pcapng, access log or HAR
//! becomes a sessions file (see docs/replay.md). Parses the flags into
//! [`tank_import::Options`], shows progress and the summary on stderr; the
//! import itself is tank-import's.

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tank_import::{Format, Options, SessionBy, TagBy, Warnings};

/// Warnings shown as they happen; the rest are counted in the summary.
const SHOWN_WARNINGS: u64 = 20;

/// Arguments of `tank import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The capture: pcap, pcapng, an nginx/Apache access log, or a HAR file (`-` for stdin).
    #[arg(value_name = "CAPTURE")]
    capture: PathBuf,
    /// Write the sessions file here (`-` or absent: stdout).
    #[arg(short, long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The input's format (default: told by its content).
    #[arg(long, value_name = "pcap|pcapng|access|har")]
    format: Option<Format>,
    /// pcap: only connections to this port are read (default: each
    /// connection's server is the port its SYN went to, else a port that
    /// received SYNs, else the lower port).
    #[arg(long, value_name = "PORT")]
    server_port: Option<u16>,
    /// Memory for requests (K, M, G, optional iB): half for requests in
    /// progress and connections that sent nothing yet (past it, bodies move
    /// to a temporary file and such connections are forgotten), half for
    /// reordering (past it, sorted runs spill to temporary files).
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = parse_memory)]
    memory: u64,
    /// Tag requests with their URI's path (`path`) or not at all (`none`).
    #[arg(long, value_name = "path|none", default_value = "path", value_parser = parse_tag)]
    tag: TagBy,
    /// Access logs: a session per client address (`addr`, default) or address
    /// and user agent (`addr+ua`); HAR: per connection id (`connection`,
    /// default) or per page (`page`).
    #[arg(long, value_name = "HOW", value_parser = parse_session_by)]
    session_by: Option<SessionBy>,
    /// Access logs: the Host header of every request.
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// Access logs: a header for every request, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    headers: Vec<String>,
    /// Access logs: a line that is not a request is an error, not a warning.
    #[arg(long)]
    strict: bool,
}

fn parse_memory(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let size = trimmed
        .strip_suffix("iB")
        .or_else(|| trimmed.strip_suffix("ib"))
        .unwrap_or(trimmed);
    tank_config::units::parse_size(size)
}

fn parse_tag(text: &str) -> Result<TagBy, String> {
    match text {
        "path" => Ok(TagBy::Path),
        "none" => Ok(TagBy::None),
        _ => Err(format!("`{text}`: expected path or none")),
    }
}

fn parse_session_by(text: &str) -> Result<SessionBy, String> {
    match text {
        "addr" => Ok(SessionBy::Addr),
        "addr+ua" => Ok(SessionBy::AddrUa),
        "connection" => Ok(SessionBy::Connection),
        "page" => Ok(SessionBy::Page),
        _ => Err(format!(
            "`{text}`: expected addr or addr+ua (access logs), connection or page (HAR)"
        )),
    }
}

/// Run `tank import`.
pub fn run(args: &ImportArgs) -> Result<()> {
    let options = Options {
        format: args.format,
        server_port: args.server_port,
        memory_budget: usize::try_from(args.memory).unwrap_or(usize::MAX),
        tag_by: args.tag,
        session_by: args.session_by,
        host: args.host.clone(),
        headers: args.headers.clone(),
        strict: args.strict,
    };
    let name = args.capture.display().to_string();
    let (input, total): (Box<dyn Read + Send>, Option<u64>) = if name == "-" {
        (Box::new(io::stdin()), None)
    } else {
        let file = File::open(&args.capture).with_context(|| format!("open {name}"))?;
        let total = file.metadata().ok().map(|m| m.len());
        (Box::new(file), total)
    };
    let input = Progress::new(input, total);
    let out: Box<dyn Write> = match &args.out {
        Some(path) if path.as_os_str() != "-" => Box::new(io::BufWriter::with_capacity(
            1 << 20,
            File::create(path).with_context(|| format!("create {}", path.display()))?,
        )),
        _ => Box::new(io::BufWriter::with_capacity(1 << 20, io::stdout().lock())),
    };
    // Past a progress line, a message starts by returning the cursor over it.
    let cr = if io::stderr().is_terminal() { "\r" } else { "" };
    let mut warnings = Warnings::new(
        SHOWN_WARNINGS,
        Box::new(move |warning| errln!("{cr}tank import: warning: {warning}")),
    );
    let started = Instant::now();
    let summary = tank_import::import(input, &name, out, &options, &mut warnings)?;
    let elapsed = started.elapsed().as_secs_f64();
    let read = total.map_or(String::new(), |t| {
        format!(" ({:.1} MB/s)", t as f64 / 1e6 / elapsed.max(1e-9))
    });
    errln!("{cr}tank import: {summary}; {elapsed:.1} s{read}");
    Ok(())
}

/// Counts the bytes read and, when stderr is a terminal, shows them against
/// the total once a second.
struct Progress<R> {
    inner: R,
    read: u64,
    total: Option<u64>,
    next_report: Option<Instant>,
}

impl<R> Progress<R> {
    fn new(inner: R, total: Option<u64>) -> Self {
        let next_report = io::stderr()
            .is_terminal()
            .then(|| Instant::now() + Duration::from_secs(1));
        Progress {
            inner,
            read: 0,
            total,
            next_report,
        }
    }
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if let Some(next) = self.next_report {
            let now = Instant::now();
            if now >= next {
                self.next_report = Some(now + Duration::from_secs(1));
                let of = self
                    .total
                    .map_or(String::new(), |t| format!(" of {:.0} MB", t as f64 / 1e6));
                err!(
                    "\rtank import: read {:.0} MB{of}   ",
                    self.read as f64 / 1e6
                );
            }
        }
        Ok(n)
    }
}
