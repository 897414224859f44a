//! MySQL's and MariaDB's slow query log (with `long_query_time = 0` it holds
//! every statement): a session per thread id, each statement a `COM_QUERY`.
//!
//! An entry is its header lines (`# Time:`, `# User@Host:`, MariaDB's
//! `# Thread_id: … Schema: …`, `# Query_time: …`, others skipped), then an
//! optional `use db;`, `SET timestamp=N;` (with `last_insert_id=`,
//! `insert_id=` when the statement used them), and the statement's text up to
//! the next entry (its last `;` dropped; a `use db;` after the `SET` line, or
//! alone, is the statement). A new entry starts at a `# Time:`
//! or `# User@Host:` line; the server's banner (written at each start and
//! log flush) is skipped. `# administrator command: Quit;` and `Ping;`
//! (logged with `log_slow_admin_statements`) become `COM_QUIT` and
//! `COM_PING`; other administrator commands are counted and left out.
//!
//! **Time.** A statement is logged when it *ends*. MySQL 5.7 and later write
//! `# Time:` with microseconds (ISO 8601): the statement started that less
//! its `Query_time`. MariaDB (and MySQL before 5.7) write whole seconds only
//! (`SET timestamp=`, the second it started): within that second, a thread's
//! statements are placed one after another, each at the previous one's start
//! plus its `Query_time` — the earliest each could have started. An entry
//! without `SET timestamp=` takes the whole-second `# Time:` at or above it
//! (written only when the second changes), less its `Query_time`.
//!
//! **Sessions.** One per thread id (MySQL's `Id:`, MariaDB's `Thread_id:`),
//! beginning with its `CONNECT` at its first statement, in the schema that
//! statement ran in (MariaDB's `Schema:`; MySQL's latest `use`, which it
//! writes only when the schema changes). A later statement in another schema
//! is preceded by a `COM_INIT_DB` to it, unless it is the `USE` that changed
//! it. A thread's session ends at its last statement (or its `Quit`), and
//! every session ends at a `… started with:` banner: after a restart the
//! server numbers threads from 1 again (a `FLUSH LOGS` writes the banner
//! too, so a connection open across one is split in two).
//!
//! Log lines are read as bytes: a statement may hold any. A file of no
//! entries is an error naming it (it is not a slow log), and so is one of
//! entries none of which can be replayed (MySQL 5.5 and earlier log no thread
//! id), with their counts by reason.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};

use tank_mysql::command::{Command, Connect};
use tank_mysql::tag;

use crate::error::ImportError;
use crate::order::{Kind, Sorter};
use crate::time::parse_iso8601;
use crate::warnings::Warnings;

/// The collation a slow log's sessions ask for: utf8mb4_general_ci (the log does not say).
const COLLATION: u8 = 45;

/// Non-empty lines [`looks_like`] reads: a log rotated or cut with `tail`
/// starts within an entry, a few lines before the next one's header.
const LOOK_LINES: usize = 10;

/// Whether `head`, a file's first bytes, is a slow query log: its banner, or
/// an entry's header, within its first [`LOOK_LINES`] non-empty lines.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    head.split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.trim_ascii().is_empty())
        .take(LOOK_LINES)
        .any(|line| {
            line.ends_with(b"started with:")
                || line.starts_with(b"# Time: ")
                || line.starts_with(b"# User@Host: ")
        })
}

/// The last second a `SET timestamp=` can hold: MySQL's since 8.0.28 (3001),
/// beyond MariaDB's (2106) and older servers' (2038).
const LAST_TIMESTAMP_S: u64 = 32_536_771_199;

/// One entry, as read.
#[derive(Debug, Default)]
struct Entry {
    /// The line it starts at, for messages.
    line: u64,
    /// `# Time:` with microseconds: when it was logged (its end), µs.
    logged_us: Option<u64>,
    /// `# Time:` in whole seconds (MySQL before 5.7, MariaDB): the second it was logged.
    logged_s: Option<u64>,
    /// `SET timestamp=`: the second it started.
    started_s: Option<u64>,
    /// Its `SET …;` line has been read: a `use` after it is the statement.
    set_line: bool,
    query_time_us: u64,
    thread: Option<u64>,
    user: String,
    /// MariaDB's `Schema:`.
    schema: Option<Vec<u8>>,
    /// A `use db;` line of the entry (before its `SET` line): the schema, and the line.
    used: Option<(Vec<u8>, Vec<u8>)>,
    /// The statement's text (or the administrator command's name).
    text: Vec<u8>,
    admin: bool,
    /// The statement's text has begun (header lines are over).
    in_text: bool,
}

/// A thread's session.
struct Thread {
    session: u64,
    schema: Vec<u8>,
    /// When its last statement started and how long it took, µs.
    last_start_us: u64,
    last_query_us: u64,
}

/// What the reader tracks across entries.
struct Reader<'a> {
    path: &'a str,
    threads: HashMap<u64, Thread>,
    /// MySQL's last `use`: the schema of entries that write none.
    last_use: Vec<u8>,
    next_session: u64,
    entries: u64,
    admin_skipped: u64,
    /// The last whole-second `# Time:`: the server writes one only when the
    /// second changes, so an entry without its own was logged in that one.
    last_logged_s: Option<u64>,
    /// The server's zone, seconds east of UTC, learnt from an entry with
    /// both a whole-second `# Time:` (local) and `SET timestamp=` (UTC): a
    /// `# Time:` alone is moved by it, so the two kinds of entry agree.
    zone_s: Option<i64>,
    /// Entries timed by a `# Time:` alone before the zone was learnt (read
    /// as UTC), for the warning when it turns out not to be.
    timed_unzoned: u64,
    skipped: Skipped,
}

/// Entries left out, by reason.
#[derive(Debug, Default)]
struct Skipped {
    no_thread: u64,
    no_statement: u64,
    no_time: u64,
    /// A `SET timestamp=` no server writes.
    past_clock: u64,
}

impl Skipped {
    fn total(&self) -> u64 {
        self.no_thread + self.no_statement + self.no_time + self.past_clock
    }

    /// The reasons, with their counts: `40 with no thread id (…)`.
    fn reasons(&self) -> String {
        let mut why = Vec::new();
        if self.no_thread > 0 {
            why.push(format!(
                "{} with no thread id (`Id:` or `Thread_id:`; MySQL 5.5 and earlier log none), \
                 and a replay needs each statement's connection",
                self.no_thread
            ));
        }
        if self.no_time > 0 {
            why.push(format!(
                "{} with no time (`# Time:` or `SET timestamp=`)",
                self.no_time
            ));
        }
        if self.past_clock > 0 {
            why.push(format!(
                "{} with a `SET timestamp=` past any server's clock",
                self.past_clock
            ));
        }
        if self.no_statement > 0 {
            why.push(format!("{} with no statement", self.no_statement));
        }
        why.join("; ")
    }
}

/// `1 entry`, `2 entries`.
fn entries(n: u64) -> String {
    if n == 1 {
        "1 entry".into()
    } else {
        format!("{n} entries")
    }
}

/// Import the slow log `input` (named `path`) into `sorter`.
pub(crate) fn import(
    input: impl Read,
    path: &str,
    sorter: &mut Sorter,
    warnings: &mut Warnings,
) -> Result<(), ImportError> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut reader = Reader {
        path,
        threads: HashMap::new(),
        last_use: Vec::new(),
        next_session: 0,
        entries: 0,
        admin_skipped: 0,
        last_logged_s: None,
        zone_s: None,
        timed_unzoned: 0,
        skipped: Skipped::default(),
    };
    let mut entry: Option<Entry> = None;
    let mut raw = Vec::new();
    let mut number = 0u64;
    loop {
        raw.clear();
        let read = input
            .read_until(b'\n', &mut raw)
            .map_err(|e| ImportError::io(path, "reading", e))?;
        if read == 0 {
            break;
        }
        number += 1;
        let line = raw.strip_suffix(b"\n").unwrap_or(&raw);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let starts_entry = line.starts_with(b"# Time: ")
            || (line.starts_with(b"# User@Host: ")
                && entry
                    .as_ref()
                    .is_none_or(|e| e.in_text || !e.user.is_empty()));
        if starts_entry || is_banner(line) {
            if let Some(done) = entry.take() {
                reader.entry(done, sorter, warnings)?;
            }
            if line.ends_with(b"started with:") {
                // The server (re)started: thread ids start over, so none of
                // its sessions goes on past here.
                reader.end_all(sorter)?;
            }
            if is_banner(line) {
                continue;
            }
            entry = Some(Entry {
                line: number,
                ..Entry::default()
            });
        }
        let Some(current) = entry.as_mut() else {
            // Text before the first entry (a file that is no slow log, or a
            // banner's end): said once the file is read, by the count.
            continue;
        };
        header_or_text(current, line);
    }
    if let Some(done) = entry.take() {
        reader.entry(done, sorter, warnings)?;
    }
    let skipped = reader.skipped.total();
    if reader.entries == 0 && skipped == 0 {
        return Err(ImportError::input(
            path,
            "no slow log entry (`# User@Host: …` then the statement) in it: expected a MySQL \
             or MariaDB slow query log"
                .into(),
        ));
    }
    if reader.entries == 0 {
        return Err(ImportError::input(
            path,
            format!(
                "{} read, none can be replayed: {}",
                entries(skipped),
                reader.skipped.reasons()
            ),
        ));
    }
    if skipped > 0 {
        warnings.always(format!(
            "{path}: {skipped} of {} skipped: {}",
            entries(skipped + reader.entries),
            reader.skipped.reasons()
        ));
    }
    if reader.admin_skipped > 0 {
        warnings.warn(format!(
            "{path}: {} administrator commands other than Quit and Ping are left out (the \
             slow log does not say what they carried)",
            reader.admin_skipped
        ));
    }
    reader.end_all(sorter)
}

/// A header line's fields, or a line of the statement's text.
fn header_or_text(entry: &mut Entry, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    if !entry.in_text {
        if let Some(time) = text.strip_prefix("# Time: ") {
            // Microseconds only in the ISO form (MySQL 5.7 and later).
            entry.logged_us = time.contains('.').then(|| parse_iso8601(time)).flatten();
            if entry.logged_us.is_none() {
                entry.logged_s = parse_whole_second(time);
            }
            return;
        }
        if let Some(rest) = text.strip_prefix("# User@Host: ") {
            entry.user = rest.split('[').next().unwrap_or_default().trim().to_owned();
            if let Some(id) = field(rest, "Id:") {
                entry.thread = id.parse().ok();
            }
            return;
        }
        if text.starts_with("# ") {
            if let Some(id) = field(&text, "Thread_id:") {
                entry.thread = id.parse().ok();
            }
            if let Some(at) = text.find("Schema:") {
                let schema = text[at + "Schema:".len()..].split_whitespace().next();
                // An empty schema is followed by the next field's name.
                entry.schema = Some(match schema {
                    Some(s) if !s.ends_with(':') => s.as_bytes().to_vec(),
                    _ => Vec::new(),
                });
            }
            if let Some(seconds) = field(&text, "Query_time:") {
                entry.query_time_us = seconds
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map_or(0, |s| (s * 1e6).round() as u64);
            }
            if let Some(command) = text.strip_prefix("# administrator command: ") {
                entry.admin = true;
                entry.in_text = true;
                entry.text = command.trim_end_matches(';').trim().as_bytes().to_vec();
            }
            return;
        }
        // The server writes `use` (when the schema changed) before the `SET`
        // line: one after it, or a second one, is the statement.
        if let Some(schema) = line
            .strip_prefix(b"use ")
            .and_then(|rest| rest.strip_suffix(b";"))
            .filter(|_| !entry.set_line && entry.used.is_none())
        {
            entry.used = Some((unquote(schema), line.to_vec()));
            return;
        }
        if let Some(timestamp) = set_line(&text).filter(|_| !entry.set_line) {
            entry.set_line = true;
            entry.started_s = timestamp;
            return;
        }
        entry.in_text = true;
    } else if entry.admin {
        return;
    } else {
        entry.text.push(b'\n');
    }
    entry.text.extend_from_slice(line);
}

/// The `SET` line the server writes before a statement: `SET timestamp=T;`,
/// with `last_insert_id=N` and `insert_id=N` when the statement used them
/// (any of the three, comma-separated). Its timestamp, if it has one.
fn set_line(text: &str) -> Option<Option<u64>> {
    let vars = text.strip_prefix("SET ")?.strip_suffix(';')?;
    let mut timestamp = None;
    for var in vars.split(',') {
        let (name, value) = var.split_once('=')?;
        let value: u64 = value.trim().parse().ok()?;
        match name.trim() {
            "timestamp" => timestamp = Some(value),
            "last_insert_id" | "insert_id" => {}
            _ => return None,
        }
    }
    Some(timestamp)
}

/// A whole-second `# Time:` (`090504  9:07:24`, YYMMDD H:MM:SS, in the
/// server's zone, which the log does not say: read as UTC), in seconds since
/// the epoch. A fraction (Percona's) is dropped; what follows is ignored.
fn parse_whole_second(text: &str) -> Option<u64> {
    let mut words = text.split_whitespace();
    let date = words.next()?;
    let time = words.next()?;
    let time = time.split('.').next()?;
    if date.len() != 6 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number = |s: &str| s.parse::<i8>().ok();
    let year = i16::from(number(&date[..2])?);
    // Two-digit years, as MySQL writes them: 70–99 are the 1900s.
    let year = if year >= 70 { 1900 + year } else { 2000 + year };
    let date = jiff::civil::Date::new(year, number(&date[2..4])?, number(&date[4..])?).ok()?;
    let mut hms = time.split(':');
    let (h, m, s) = (hms.next()?, hms.next()?, hms.next()?);
    if hms.next().is_some()
        || [h, m, s]
            .iter()
            .any(|p| !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let time = jiff::civil::Time::new(number(h)?, number(m)?, number(s)?, 0).ok()?;
    let at = jiff::tz::Offset::UTC
        .to_timestamp(jiff::civil::DateTime::from_parts(date, time))
        .ok()?;
    u64::try_from(at.as_second()).ok()
}

/// The word after `name` in `text`.
fn field<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let at = text.find(name)?;
    text[at + name.len()..].split_whitespace().next()
}

/// A schema name as `use` writes it, its backquotes dropped.
fn unquote(name: &[u8]) -> Vec<u8> {
    let name = name.trim_ascii();
    match name.strip_prefix(b"`").and_then(|n| n.strip_suffix(b"`")) {
        Some(inner) => String::from_utf8_lossy(inner)
            .replace("``", "`")
            .into_bytes(),
        None => name.to_vec(),
    }
}

/// The lines the server writes when it (re)opens the log.
fn is_banner(line: &[u8]) -> bool {
    line.ends_with(b"started with:")
        || line.starts_with(b"Tcp port: ")
        || line.starts_with(b"Time ") && line.ends_with(b"Argument")
}

impl Reader<'_> {
    /// End every thread's session, at its last statement.
    fn end_all(&mut self, sorter: &mut Sorter) -> Result<(), ImportError> {
        let mut ends: Vec<(u64, u64)> = self
            .threads
            .drain()
            .map(|(_, t)| (t.session, t.last_start_us))
            .collect();
        ends.sort_unstable();
        for (session, at_us) in ends {
            sorter
                .push(at_us, session, Kind::End)
                .map_err(|e| e.at(self.path))?;
        }
        Ok(())
    }

    /// One whole entry: its commands into the sorter.
    fn entry(
        &mut self,
        entry: Entry,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
    ) -> Result<(), ImportError> {
        if entry.logged_s.is_some() {
            self.last_logged_s = entry.logged_s;
        }
        // A second past the last a server can write is a corrupt line: the
        // entry is skipped before it can teach a zone or move its thread.
        if let Some(second) = entry.started_s.filter(|s| *s > LAST_TIMESTAMP_S) {
            self.skipped.past_clock += 1;
            warnings.warn(format!(
                "{}:{}: `SET timestamp={second}` is past any server's clock (the last second \
                 MySQL can write is {LAST_TIMESTAMP_S}, in 3001); skipped",
                self.path, entry.line
            ));
            return Ok(());
        }
        // (A `# Time:` stands for the entries below it in its second.)
        if let (Some(local), Some(utc)) = (self.last_logged_s, entry.started_s) {
            // Logged at the statement's end: its start plus its query time,
            // then rounded to the quarter hour zones are made of.
            let end = utc as i64 + (entry.query_time_us / 1_000_000) as i64;
            let zone = ((local as i64 - end) as f64 / 900.0).round() as i64 * 900;
            if self.zone_s.is_none() && zone != 0 && self.timed_unzoned > 0 {
                let (sign, minutes) = (if zone < 0 { '-' } else { '+' }, zone.abs() / 60);
                warnings.warn(format!(
                    "{}:{}: `# Time:` is the server's local time, UTC{sign}{:02}:{:02} by this \
                     entry's `SET timestamp=`; entries above it timed by `# Time:` alone ({}) \
                     were read as UTC, so they are that far from the rest",
                    self.path,
                    entry.line,
                    minutes / 60,
                    minutes % 60,
                    self.timed_unzoned,
                ));
            }
            self.zone_s.get_or_insert(zone);
        }
        // The server's own state, whether or not the entry is kept: it writes
        // `use` only when the schema changes.
        if let Some((used, _)) = &entry.used {
            self.last_use.clone_from(used);
        }
        if entry.user.is_empty() && entry.thread.is_none() {
            // Header lines without an entry (a `# Time:` alone).
            return Ok(());
        }
        let path = self.path;
        let Some(thread_id) = entry.thread else {
            self.skipped.no_thread += 1;
            warnings.warn(format!(
                "{path}:{}: an entry with no thread id (`Id:` or `Thread_id:`); skipped",
                entry.line
            ));
            return Ok(());
        };
        let mut text = trim_statement(&entry.text);
        if text.is_empty() && !entry.admin {
            // A `use` with nothing after it (in a log without `SET` lines) is
            // the statement: the marker is always followed by one.
            if let Some((_, line)) = &entry.used {
                text = trim_statement(line);
            }
        }
        if text.is_empty() {
            self.skipped.no_statement += 1;
            warnings.warn(format!(
                "{path}:{}: an entry with no statement; skipped",
                entry.line
            ));
            return Ok(());
        }
        let start_us = match (
            entry.logged_us,
            entry.started_s,
            entry.logged_s.or(self.last_logged_s),
        ) {
            (Some(logged), _, _) => logged.saturating_sub(entry.query_time_us),
            (None, Some(second), _) => second.saturating_mul(1_000_000),
            (None, None, Some(logged)) => {
                if self.zone_s.is_none() {
                    self.timed_unzoned += 1;
                }
                logged
                    .saturating_add_signed(-self.zone_s.unwrap_or(0))
                    .saturating_mul(1_000_000)
                    .saturating_sub(entry.query_time_us)
            }
            (None, None, None) => {
                self.skipped.no_time += 1;
                warnings.warn(format!(
                    "{path}:{}: an entry with no time (`# Time:` at or above it, or `SET \
                     timestamp=`); skipped",
                    entry.line
                ));
                return Ok(());
            }
        };
        self.entries += 1;
        let schema = entry
            .schema
            .clone()
            .unwrap_or_else(|| self.last_use.clone());
        let next_session = &mut self.next_session;
        let mut push =
            |at_us: u64, session: u64, label: Option<String>, tag: Vec<u8>, bytes: Vec<u8>| {
                let bytes = bytes.into();
                sorter
                    .push(at_us, session, Kind::Request { label, tag, bytes })
                    .map_err(|e| e.at(path))
            };
        let thread = match self.threads.get_mut(&thread_id) {
            Some(thread) => thread,
            None => {
                let session = *next_session;
                *next_session += 1;
                let label = format!(
                    "thread {thread_id} {}",
                    entry.user.replace(['\r', '\n'], " ")
                );
                let connect = Connect {
                    caps: 0,
                    collation: COLLATION,
                    schema: schema.clone(),
                };
                push(
                    start_us,
                    session,
                    Some(label),
                    Command::Connect.name().as_bytes().to_vec(),
                    connect.encode(),
                )?;
                self.threads.insert(
                    thread_id,
                    Thread {
                        session,
                        schema: schema.clone(),
                        last_start_us: start_us,
                        last_query_us: 0,
                    },
                );
                self.threads
                    .get_mut(&thread_id)
                    .ok_or_else(|| ImportError::input(path, "a thread lost".into()))?
            }
        };
        // Whole seconds: no earlier than the thread's previous statement's end.
        let start_us = if entry.logged_us.is_some() {
            start_us
        } else {
            // Saturating: a corrupt Query_time (1e300 s) is saturated µs already.
            start_us.max(thread.last_start_us.saturating_add(thread.last_query_us))
        };
        if schema != thread.schema && !schema.is_empty() {
            // A `USE` changes the schema itself (its entry shows the new one):
            // the client sent no `COM_INIT_DB` before it.
            if entry.admin || tag::statement(text) != b"USE" {
                let mut init = vec![Command::InitDb.byte()];
                init.extend_from_slice(&schema);
                push(
                    start_us,
                    thread.session,
                    None,
                    Command::InitDb.name().as_bytes().to_vec(),
                    init,
                )?;
            }
            thread.schema = schema;
        }
        thread.last_start_us = start_us;
        thread.last_query_us = entry.query_time_us;
        let session = thread.session;
        if !entry.admin {
            let mut bytes = vec![Command::Query.byte()];
            bytes.extend_from_slice(text);
            let tag = tag::statement_in(text, &thread.schema);
            return push(start_us, session, None, tag, bytes);
        }
        let command = match text {
            b"Quit" => Command::Quit,
            b"Ping" => Command::Ping,
            _ => {
                self.admin_skipped += 1;
                return Ok(());
            }
        };
        push(
            start_us,
            session,
            None,
            command.name().as_bytes().to_vec(),
            vec![command.byte()],
        )?;
        if command == Command::Quit {
            // The thread's session ends; its id may come back as another's.
            self.threads.remove(&thread_id);
            sorter
                .push(start_us, session, Kind::End)
                .map_err(|e| e.at(path))?;
        }
        Ok(())
    }
}

/// The statement as sent: the log's text less its trailing `;`.
fn trim_statement(text: &[u8]) -> &[u8] {
    let text = text.trim_ascii_end();
    text.strip_suffix(b";").unwrap_or(text)
}

#[cfg(test)]
mod tests;
