//! Run history: the runs kept under an artifacts base (`logs/`), one row each,
//! and an `index.html` linking their reports (`tank runs`).
//!
//! Every run tank makes leaves its directory with `summary.json` (a test, a
//! bench, each probe of a search or step of a sweep) or `sweep.json` (a sweep
//! as a whole); that is all the history needs: no database, nothing to keep in
//! step. A run killed before it could write its summary (`kill -9`) is listed
//! from its `phout.log`, with what that tells. A run's id is its directory's
//! name, which `tank compare` takes too.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::html::{escape, STYLE};
use crate::stream::files::{HTML, SUMMARY_JSON};
use crate::summary::Summary;

/// The sweep's own file beside its steps' directories.
pub const SWEEP_JSON: &str = "sweep.json";

/// The phout a run writes from its first shot (tank-run's `PHOUT`): a run
/// killed before its summary has this alone.
pub const PHOUT: &str = "phout.log";

/// One run, as `tank runs` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    /// Its directory's name: the id `tank compare` takes.
    pub id: String,
    /// Its directory.
    pub dir: PathBuf,
    /// What ran: `test` (a config), `sweep`, or a probe/step of one (`step`).
    pub kind: &'static str,
    /// The job's name, else the run's title (the config file, the URL).
    pub job: String,
    /// The first second, unix seconds (`None`: no response).
    pub start_unix_s: Option<u64>,
    /// How long it was active, seconds.
    pub duration_s: f64,
    /// Responses per second.
    pub rps: f64,
    /// 99% service time, ms.
    pub p99_ms: Option<f64>,
    /// Rows with a net error or an HTTP status of 400 and up (a row with both
    /// counts once; `None`: unknown, for a run without its summary).
    pub errors: Option<u64>,
    /// Responses.
    pub responses: u64,
    /// How it ended, in words.
    pub verdict: String,
}

/// Errors as the summary counts them; for a summary from before it did, from
/// its code tables (which count a row with a net error and a 4xx/5xx twice, so
/// capped at the responses).
fn errors(summary: &Summary) -> u64 {
    if let Some(errors) = summary.errors {
        return errors;
    }
    let net: u64 = summary
        .net_codes
        .iter()
        .filter(|(code, _)| code.as_str() != "0")
        .map(|(_, n)| n)
        .sum();
    let http: u64 = summary
        .proto_codes
        .iter()
        .filter(|(code, _)| code.parse::<u16>().is_ok_and(|c| c >= 400))
        .map(|(_, n)| n)
        .sum();
    (net + http).min(summary.shots.responses)
}

/// How a run ended, in words: its exit code's meaning, or its first warning.
/// A step's (or probe's) run is stopped by its command when its window ends,
/// which its summary cannot tell from a Ctrl-C: exit 1 says both.
fn verdict(summary: &Summary, kind: &str) -> String {
    if let Some(autostop) = &summary.autostop {
        return format!("autostop {} (exit {})", autostop.criterion, autostop.code);
    }
    match summary.exit_code {
        Some(0) | None if summary.warnings.is_empty() => "completed".into(),
        Some(0) | None => format!("completed, {} warnings", summary.warnings.len()),
        Some(1) if kind == "step" => "stopped by its command, or a Ctrl-C (exit 1)".into(),
        Some(1) => "interrupted or failed (exit 1)".into(),
        Some(34) => "an artifact could not be written (exit 34)".into(),
        Some(35) => format!("warnings (exit 35): {}", summary.warnings.len()),
        Some(code) => format!("exit {code}"),
    }
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn row_of(dir: &Path, summary: &Summary, kind: &'static str) -> RunRow {
    RunRow {
        id: dir_name(dir),
        dir: dir.to_path_buf(),
        kind,
        job: summary
            .meta
            .job
            .job_name
            .clone()
            .unwrap_or_else(|| summary.meta.title.clone()),
        start_unix_s: summary.start_unix_s,
        duration_s: summary.active_or_whole_s(),
        rps: summary.rps.actual,
        p99_ms: summary
            .quantiles
            .iter()
            .find(|q| q.q == 99.0)
            .map(|q| q.service_ms),
        errors: Some(errors(summary)),
        responses: summary.shots.responses,
        verdict: verdict(summary, kind),
    }
}

/// A sweep directory's row: its steps added up, its knee as the verdict.
fn sweep_row(dir: &Path, sweep: &serde_json::Value, steps: &[RunRow]) -> RunRow {
    let knee = match sweep["knee_concurrency"].as_u64() {
        Some(knee) => format!("knee at {knee} connections"),
        None => "no knee".into(),
    };
    RunRow {
        id: dir_name(dir),
        dir: dir.to_path_buf(),
        kind: "sweep",
        job: format!("sweep of {}", sweep["target"].as_str().unwrap_or("?")),
        start_unix_s: steps.iter().filter_map(|s| s.start_unix_s).min(),
        duration_s: steps.iter().map(|s| s.duration_s).sum(),
        rps: steps.iter().map(|s| s.rps).fold(0.0, f64::max),
        p99_ms: None,
        errors: steps.iter().map(|s| s.errors).sum(),
        responses: steps.iter().map(|s| s.responses).sum(),
        verdict: format!("{} steps, {knee}", steps.len()),
    }
}

/// The runs under `base`, oldest first: each directory with a summary.json,
/// each sweep (its steps listed after it), and each run with a phout but no
/// summary (killed, or still running). Unreadable summaries, and directories
/// that hold none of these, are named in the second list.
pub fn scan(base: &Path) -> std::io::Result<(Vec<RunRow>, Vec<String>)> {
    let mut groups: Vec<Vec<RunRow>> = Vec::new();
    let mut skipped = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(base)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        if let Some(summary) = read(&dir.join(SUMMARY_JSON), &mut skipped) {
            groups.push(vec![row_of(&dir, &summary, "test")]);
            continue;
        }
        // A bench, search, scan or sweep: its probes or steps one level down.
        let mut inner: Vec<PathBuf> = std::fs::read_dir(&dir)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.join(SUMMARY_JSON).is_file())
            .collect();
        inner.sort();
        let steps: Vec<RunRow> = inner
            .iter()
            .filter_map(|step| {
                let summary = read(&step.join(SUMMARY_JSON), &mut skipped)?;
                let mut row = row_of(step, &summary, "step");
                row.id = format!("{}/{}", dir_name(&dir), row.id);
                Some(row)
            })
            .collect();
        let mut group = Vec::new();
        match std::fs::read_to_string(dir.join(SWEEP_JSON)) {
            Ok(text) => match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(sweep) => group.push(sweep_row(&dir, &sweep, &steps)),
                Err(_) => skipped.push(format!("{}: not JSON", dir.join(SWEEP_JSON).display())),
            },
            Err(_) if steps.is_empty() => {
                // A run killed before it wrote its summary still has its phout: list it.
                let unreadable = dir.join(SUMMARY_JSON).exists();
                match killed_row(&dir, unreadable) {
                    Some(row) => groups.push(vec![row]),
                    // An unreadable summary is in `skipped` already.
                    None if unreadable => {}
                    None => skipped.push(format!(
                        "{}: no {SUMMARY_JSON}, {SWEEP_JSON} or {PHOUT}: not a run's directory",
                        dir.display()
                    )),
                }
                continue;
            }
            Err(_) => {}
        }
        group.extend(steps);
        groups.push(group);
    }
    // Oldest first, a directory's rows together (a sweep, then its steps).
    groups.sort_by_key(|group| {
        group
            .iter()
            .filter_map(|r| r.start_unix_s)
            .min()
            .unwrap_or(0)
    });
    Ok((groups.into_iter().flatten().collect(), skipped))
}

/// The row of a run with a phout but no summary (or an `unreadable` one): killed (`kill -9`, a crash,
/// a lost machine) or still running. Its responses and times are its phout's
/// (its first shot's start to its last shot's); its p99 and errors are left unknown
/// rather than read from every row. `None` when there is no phout.
fn killed_row(dir: &Path, unreadable: bool) -> Option<RunRow> {
    let phout = dir.join(PHOUT);
    if !phout.is_file() {
        return None;
    }
    let (rows, span) = phout_span(&phout);
    let duration_s = span.map_or(0.0, |(first, last)| (last - first) as f64 / 1000.0);
    Some(RunRow {
        id: dir_name(dir),
        dir: dir.to_path_buf(),
        kind: "test",
        job: "?".into(),
        start_unix_s: span.map(|(first, _)| first / 1000),
        duration_s,
        rps: if duration_s > 0.0 {
            rows as f64 / duration_s
        } else {
            0.0
        },
        p99_ms: None,
        errors: None,
        responses: rows,
        verdict: if unreadable {
            format!("{SUMMARY_JSON} unreadable; {rows} rows in {PHOUT}")
        } else {
            format!("no {SUMMARY_JSON}: killed, or still running; {rows} rows in {PHOUT}")
        },
    })
}

/// The rows of a phout and the moments its shots span, ms since the Unix
/// epoch: from the first start to the last start (each line's first field,
/// without reading the rest; a last line without its end is not counted).
fn phout_span(path: &Path) -> (u64, Option<(u64, u64)>) {
    use std::io::BufRead as _;
    let Ok(file) = std::fs::File::open(path) else {
        return (0, None);
    };
    let mut reader = std::io::BufReader::new(file);
    let (mut rows, mut span) = (0u64, None::<(u64, u64)>);
    let mut line = Vec::with_capacity(256);
    while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) && line.ends_with(b"\n") {
        if let Some(ms) = tank_stats::phout::send_ms(&line) {
            rows += 1;
            span = Some(span.map_or((ms, ms), |(a, b)| (a.min(ms), b.max(ms))));
        }
        line.clear();
    }
    (rows, span)
}

/// The summary at `path`: `None` when there is none, or (noted in `skipped`) when it is unreadable.
fn read(path: &Path, skipped: &mut Vec<String>) -> Option<Summary> {
    let text = std::fs::read_to_string(path).ok()?;
    match Summary::from_json(&text) {
        Ok(summary) => Some(summary),
        Err(error) => {
            skipped.push(format!("{}: {error}", path.display()));
            None
        }
    }
}

/// The run `id` under `base`: a directory name, or the one run whose name
/// starts with it; `None` when none or several do.
pub fn find(base: &Path, id: &str) -> Option<PathBuf> {
    let exact = base.join(id);
    if exact.is_dir() && !id.is_empty() {
        return Some(exact);
    }
    let mut found = std::fs::read_dir(base)
        .ok()?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.is_dir()
                && path
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with(id))
        });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// A time for people: `2026-11-26 16:00:36 UTC`.
pub fn utc(unix_s: u64) -> String {
    i64::try_from(unix_s)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map_or_else(
            || format!("{unix_s} (unix)"),
            |t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        )
}

/// The rows as a table for a terminal.
pub fn table(rows: &[RunRow]) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{:<34} {:<23} {:>9} {:>9} {:>9} {:>14}  {}\n",
        "id", "start", "duration", "rps", "p99 ms", "errors", "job — verdict"
    );
    for r in rows {
        let indent = if r.kind == "step" { "  " } else { "" };
        let _ = writeln!(
            out,
            "{:<34} {:<23} {:>8.1}s {:>9.1} {:>9} {:>14}  {} — {}",
            format!("{indent}{}", r.id),
            r.start_unix_s.map_or("–".into(), utc),
            r.duration_s,
            r.rps,
            r.p99_ms.map_or("–".into(), |p| format!("{p:.2}")),
            errors_text(r),
            r.job,
            r.verdict
        );
    }
    out
}

/// `3 (0.10%)`, or `–` when unknown.
fn errors_text(row: &RunRow) -> String {
    row.errors.map_or("–".into(), |errors| {
        format!("{errors} ({:.2}%)", percent(errors, row.responses))
    })
}

fn percent(part: u64, all: u64) -> f64 {
    if all == 0 {
        0.0
    } else {
        part as f64 * 100.0 / all as f64
    }
}

/// `index.html` for `base`: a table of the runs, each linking its report
/// (relative links, so the directory can be moved or served as it is).
pub fn index(base: &Path, rows: &[RunRow]) -> String {
    let mut body = String::new();
    for r in rows {
        let relative = r.dir.strip_prefix(base).unwrap_or(&r.dir);
        let link = relative.join(HTML);
        let id = if r.dir.join(HTML).is_file() {
            format!(
                "<a href=\"{}\">{}</a>",
                escape(&link.to_string_lossy()),
                escape(&r.id)
            )
        } else {
            escape(&r.id)
        };
        body.push_str(&format!(
            "<tr class=\"{kind}\"><td>{id}</td><td>{job}</td><td>{start}</td><td>{dur:.1} s</td>\
             <td>{rps:.1}</td><td>{p99}</td><td>{errors}</td><td>{verdict}</td></tr>\n",
            kind = r.kind,
            job = escape(&r.job),
            start = r.start_unix_s.map_or("–".into(), utc),
            dur = r.duration_s,
            rps = r.rps,
            p99 = r.p99_ms.map_or("–".into(), |p| format!("{p:.2}")),
            errors = errors_text(r),
            verdict = escape(&r.verdict),
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>tank runs — {base}</title>\n<style>\n{STYLE}\
         tr.step td:first-child {{ padding-left: 18px; }}\n</style>\n</head>\n<body>\n\
         <header><h1>tank runs — {base}</h1></header>\n<main id=\"content\"><section>\n\
         <h2>{count} runs, oldest first</h2>\n<p class=\"note\">Compare two with \
         <code>tank compare ID_A ID_B --out compare.html</code>.</p>\n<table>\n<thead><tr><th>id</th>\
         <th>job</th><th>start</th><th>duration</th><th>rps</th><th>p99 ms</th><th>errors</th>\
         <th>verdict</th></tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n</section></main>\n\
         </body>\n</html>\n",
        base = escape(&base.display().to_string()),
        count = rows.len(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::sample_summary;

    #[test]
    fn utc_dates_are_civil() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_795_708_836), "2026-11-26 16:00:36 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn runs_sweeps_and_their_steps_are_listed_and_found() {
        let base = tempfile::tempdir().unwrap();
        let mut summary = sample_summary();
        summary.meta.job.job_name = Some("checkout".into());
        let run = base.path().join("2026-11-26_16-00-36_0c9c4e");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join(SUMMARY_JSON), summary.to_json()).unwrap();
        std::fs::write(run.join(HTML), "").unwrap();
        let sweep = base.path().join("2026-11-26_17-00-00_a1b2c3_sweep");
        std::fs::create_dir_all(sweep.join("01_1c")).unwrap();
        std::fs::write(
            sweep.join("01_1c").join(SUMMARY_JSON),
            sample_summary().to_json(),
        )
        .unwrap();
        std::fs::write(
            sweep.join(SWEEP_JSON),
            r#"{"target": "http://t/", "knee_concurrency": 1}"#,
        )
        .unwrap();
        std::fs::create_dir_all(base.path().join("broken")).unwrap();
        std::fs::write(base.path().join("broken").join(SUMMARY_JSON), "{").unwrap();
        let (rows, skipped) = scan(base.path()).unwrap();
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        let kinds: Vec<(&str, &str)> = rows.iter().map(|r| (r.kind, r.id.as_str())).collect();
        assert_eq!(
            kinds,
            [
                ("test", "2026-11-26_16-00-36_0c9c4e"),
                ("sweep", "2026-11-26_17-00-00_a1b2c3_sweep"),
                ("step", "2026-11-26_17-00-00_a1b2c3_sweep/01_1c")
            ]
        );
        assert_eq!(rows[0].job, "checkout");
        assert_eq!(rows[0].errors, Some(2), "a 503 and a timeout");
        assert_eq!(rows[1].verdict, "1 steps, knee at 1 connections");
        let page = index(base.path(), &rows);
        assert!(
            page.contains("<a href=\"2026-11-26_16-00-36_0c9c4e/report.html\">"),
            "{page}"
        );
        assert!(!page.contains(" src=") && !page.contains("https://"));
        assert_eq!(find(base.path(), "2026-11-26_16"), Some(run.clone()));
        assert_eq!(find(base.path(), "2026-11-26_16-00-36_0c9c4e"), Some(run));
        assert_eq!(find(base.path(), "nope"), None);
        assert_eq!(
            find(base.path(), ""),
            None,
            "an empty id matches more than one"
        );
        let text = table(&rows);
        assert!(text.contains("checkout — completed"), "{text}");
    }

    #[test]
    fn a_run_killed_before_its_summary_is_listed_from_its_phout() {
        let base = tempfile::tempdir().unwrap();
        let killed = base.path().join("2026-11-26_16-00-36_0c9c4e");
        std::fs::create_dir_all(&killed).unwrap();
        // Two rows 2 s apart, and a last line cut by the kill.
        let row = "\tx\t1000\t0\t0\t1000\t0\t1000\t1\t1\t0\t200\n";
        std::fs::write(
            killed.join(PHOUT),
            format!("1795708836.000{row}1795708838.000{row}1795708838.5"),
        )
        .unwrap();
        std::fs::create_dir_all(base.path().join("notes")).unwrap();
        let (rows, skipped) = scan(base.path()).unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        let row = &rows[0];
        assert_eq!(
            (
                row.start_unix_s,
                row.duration_s,
                row.responses,
                row.errors,
                row.p99_ms
            ),
            (Some(1_795_708_836), 2.0, 2, None, None)
        );
        assert_eq!(
            row.verdict,
            "no summary.json: killed, or still running; 2 rows in phout.log"
        );
        // A directory that is no run is named, not passed over in silence.
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert!(
            skipped[0].contains("notes: no summary.json, sweep.json or phout.log"),
            "{skipped:?}"
        );
        let text = table(&rows);
        assert!(
            !text.contains("0 (0.00%)"),
            "no errors counted from no data: {text}"
        );
        assert!(index(base.path(), &rows).contains("killed, or still running"));
    }
}
