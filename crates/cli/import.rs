//! `tank import CAPTURE [-o sessions.txt]`: a pcap, pcapng, access log, HAR
//! or MySQL slow log becomes a sessions file (see docs/replay.md). Parses the flags into
//! [`tank_import::Options`], shows progress and the summary on stderr; the
//! import itself is tank-import's.

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tank_config::ReplyFraming;
use tank_import::{Format, Options, Protocol, SessionBy, TagBy, Warnings};

/// Warnings shown as they happen; the rest are counted in the summary.
const SHOWN_WARNINGS: u64 = 20;

/// Arguments of `tank import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The capture: pcap, pcapng, an nginx/Apache access log, a HAR file, or
    /// a MySQL/MariaDB slow query log (`-` for stdin).
    #[arg(value_name = "CAPTURE")]
    capture: PathBuf,
    /// Write the sessions file here (`-` or absent: stdout). It is made
    /// beside FILE and moved into place when the import succeeds, so a
    /// failed or interrupted import leaves FILE as it was (a replaced FILE
    /// keeps its permissions, not its hard links); FILE may not be the
    /// capture.
    #[arg(short, long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The input's format (default: told by its content).
    #[arg(long, value_name = "pcap|pcapng|access|har|slowlog")]
    format: Option<Format>,
    /// pcap: the protocol to read: HTTP/1.x requests, MySQL commands, or the
    /// messages of a framed TCP protocol (needs --framing). Default: as
    /// --mysql-port or --framing says, else MySQL when the capture's first
    /// connections are to port 3306 or greet as MySQL, else HTTP.
    #[arg(long, value_name = "http|mysql|tcp", value_parser = parse_protocol)]
    protocol: Option<Protocol>,
    /// pcap, MySQL: the server's port (default 3306; a connection whose
    /// server greets as MySQL is read on any port).
    #[arg(long, value_name = "PORT")]
    mysql_port: Option<u16>,
    /// pcap, framed TCP: how the client's messages end: `delimiter:BYTES`
    /// (escapes \0 \n \r \t \\ \xHH, e.g. `delimiter:\0`) or `length:N` (a
    /// big-endian length prefix of N = 1, 2, 4 or 8 bytes).
    #[arg(long, value_name = "delimiter:BYTES|length:N", value_parser = ReplyFraming::parse)]
    framing: Option<ReplyFraming>,
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
    /// Tag requests with their URI's path (`path`; MySQL: the statement's
    /// kind and table, `SELECT items`) or not at all (`none`).
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

fn parse_protocol(text: &str) -> Result<Protocol, String> {
    Protocol::from_name(text).ok_or_else(|| format!("`{text}`: expected http, mysql or tcp"))
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
        protocol: args.protocol,
        mysql_port: args.mysql_port,
        framing: args.framing.clone(),
    };
    let name = args.capture.display().to_string();
    let (input, total, read_from): (Box<dyn Read + Send>, Option<u64>, _) = if name == "-" {
        (Box::new(io::stdin()), None, None)
    } else {
        let file = File::open(&args.capture).with_context(|| format!("open {name}"))?;
        let metadata = file.metadata().with_context(|| format!("open {name}"))?;
        if metadata.is_dir() {
            anyhow::bail!("{name} is a directory: expected a capture file");
        }
        (Box::new(file), Some(metadata.len()), Some(metadata))
    };
    let input = Progress::new(input, total);
    let mut out = Output::open(args.out.as_deref(), read_from.as_ref(), &name)?;
    // Past a progress line, a message starts by returning the cursor over it.
    let cr = if io::stderr().is_terminal() { "\r" } else { "" };
    let mut warnings = Warnings::new(
        SHOWN_WARNINGS,
        Box::new(move |warning| errln!("{cr}tank import: warning: {warning}")),
    );
    let started = Instant::now();
    let summary = tank_import::import(input, &name, out.writer(), &options, &mut warnings)?;
    out.commit()?;
    let elapsed = started.elapsed().as_secs_f64();
    let read = total.map_or(String::new(), |t| {
        format!(" ({:.1} MB/s)", t as f64 / 1e6 / elapsed.max(1e-9))
    });
    errln!("{cr}tank import: {summary}; {elapsed:.1} s{read}");
    Ok(())
}

/// Where the sessions file goes. A regular file is written beside its place
/// and renamed over it once the import succeeded: a failed or interrupted
/// import leaves what was there (a good sessions file, or the capture
/// itself when `-o` names it) as it was.
enum Output {
    /// Standard output (`-o -`, or no `-o`).
    Stdout(io::BufWriter<io::StdoutLock<'static>>),
    /// Something that is not a regular file (`/dev/null`, a pipe): written
    /// as it comes, as it cannot be replaced.
    Direct(io::BufWriter<File>, PathBuf),
    /// A temporary file beside `target`, renamed over it at the end.
    Staged {
        writer: io::BufWriter<File>,
        temp: tempfile::TempPath,
        target: PathBuf,
    },
}

impl Output {
    /// The output `path` names (`None` or `-`: stdout), refused when it is
    /// the capture being read (`capture`, named `name`).
    fn open(
        path: Option<&Path>,
        capture: Option<&std::fs::Metadata>,
        name: &str,
    ) -> Result<Output> {
        const BUFFER: usize = 1 << 20;
        let Some(path) = path.filter(|p| p.as_os_str() != "-") else {
            return Ok(Output::Stdout(io::BufWriter::with_capacity(
                BUFFER,
                io::stdout().lock(),
            )));
        };
        let shown = path.display();
        // Links followed: the file the bytes would land in.
        let existing = std::fs::metadata(path).ok();
        if let (Some(out), Some(capture)) = (&existing, capture) {
            use std::os::unix::fs::MetadataExt;
            if (out.dev(), out.ino()) == (capture.dev(), capture.ino()) {
                anyhow::bail!(
                    "-o {shown} is the capture being read ({name}): writing the sessions there \
                     would destroy it; expected another file"
                );
            }
        }
        if existing.as_ref().is_some_and(|m| !m.is_file()) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("open {shown}"))?;
            return Ok(Output::Direct(
                io::BufWriter::with_capacity(BUFFER, file),
                path.to_path_buf(),
            ));
        }
        // Renamed over the file a link points to, not over the link (a
        // dangling one too: the file it names is made).
        let target = match (&existing, std::fs::read_link(path)) {
            (Some(_), _) => std::fs::canonicalize(path).with_context(|| format!("open {shown}"))?,
            (None, Ok(link)) => match path.parent() {
                Some(dir) if link.is_relative() => dir.join(link),
                _ => link,
            },
            (None, Err(_)) => path.to_path_buf(),
        };
        let dir = match target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            anyhow::bail!(
                "cannot write {shown}: its directory {} does not exist",
                dir.display()
            );
        }
        if existing
            .as_ref()
            .is_some_and(|m| m.permissions().readonly())
        {
            anyhow::bail!("{shown} is read-only: expected a file tank may replace");
        }
        // A file replaced keeps its permissions; a new one gets the umask's.
        let mode = existing.as_ref().map_or(0o666, |m| {
            std::os::unix::fs::PermissionsExt::mode(&m.permissions())
        });
        let (file, temp) = tempfile::Builder::new()
            .prefix(".tank-import-")
            .suffix(".part")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
            .tempfile_in(dir)
            .with_context(|| format!("create a file beside {shown} in {}", dir.display()))?
            .into_parts();
        // Ctrl-C ends the import where it is: nothing half-written is left.
        let part = temp.to_path_buf();
        let _ = crate::signals::watch(move |_| {
            let _ = std::fs::remove_file(&part);
            std::process::exit(130);
        });
        Ok(Output::Staged {
            writer: io::BufWriter::with_capacity(BUFFER, file),
            temp,
            target,
        })
    }

    /// Where the import writes.
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Output::Stdout(writer) => writer,
            Output::Direct(writer, _) | Output::Staged { writer, .. } => writer,
        }
    }

    /// The import succeeded: the last bytes out, and the file in its place.
    fn commit(self) -> Result<()> {
        match self {
            Output::Stdout(mut writer) => writer.flush().context("writing the sessions"),
            Output::Direct(mut writer, path) => writer
                .flush()
                .with_context(|| format!("writing {}", path.display())),
            Output::Staged {
                writer,
                temp,
                target,
            } => {
                let shown = target.display();
                writer
                    .into_inner()
                    .map_err(io::IntoInnerError::into_error)
                    .with_context(|| format!("writing {shown}"))?;
                temp.persist(&target)
                    .map_err(|e| e.error)
                    .with_context(|| format!("moving the sessions into {shown}"))
            }
        }
    }
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
