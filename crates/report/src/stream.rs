//! `tank report`'s core: phout files in, summary / JSON lines / HTML out, streaming.
//!
//! The files are read by tank-results' [`PhoutSource`] (merged by response end,
//! so several files read as one run's; located errors; a cut last line skipped
//! with a warning) and driven through the same pipeline and sinks a live run
//! uses: `test_data.log` ([`JsonLines`]) and the report's [`Timeline`]. Memory is
//! the aggregator's open seconds plus a few hundred bytes per second of run: it
//! does not grow with the number of lines.

use std::io;
use std::path::{Path, PathBuf};

use tank_results::{drive, DriveError, JsonLines, PhoutSource, Pipeline, Timeline};
use tank_stats::phout::send_ms;
use tank_stats::window::{Bound, Resolved};
use tank_stats::Aggregator;

use crate::summary::{Meta, Summary};

/// Names of the files `tank report` writes.
pub mod files {
    /// Per-second JSON lines in yandex-tank's shape (its JSON report's default name).
    pub const JSON_LINES: &str = "test_data.log";
    /// The summary as JSON.
    pub const SUMMARY_JSON: &str = "summary.json";
    /// The summary as text.
    pub const SUMMARY_TEXT: &str = "summary.txt";
    /// The HTML report.
    pub const HTML: &str = "report.html";
    /// Every file a report writes.
    pub const ALL: [&str; 4] = [JSON_LINES, SUMMARY_JSON, SUMMARY_TEXT, HTML];
}

/// Why a report could not be made.
///
/// Each message is whole (the file, and the failure's own text): none has a
/// `source()`, so a printer that walks the chain (`{:#}`) does not say it twice.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing a file failed.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        error: io::Error,
    },
    /// A phout could not be read, or an output written.
    #[error("{0}")]
    Drive(DriveError),
    /// No row to report on: every figure would rest on no data.
    #[error("{files}: {why}: nothing to report")]
    NoRows {
        /// The phouts read, comma-separated.
        files: String,
        /// What held no row: the files, or the window (with the files' span).
        why: String,
    },
}

impl From<DriveError> for ReportError {
    fn from(error: DriveError) -> ReportError {
        ReportError::Drive(error)
    }
}

/// What reading phout files found, besides the seconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines aggregated.
    pub lines: u64,
    /// Warnings (skipped truncated last lines), for people.
    pub warnings: Vec<String>,
}

/// The earliest start of a shot in `paths`, ms since the Unix epoch (`None`:
/// no row): where a window's offsets count from.
pub fn first_start_ms(paths: &[PathBuf]) -> Result<Option<u64>, ReportError> {
    Ok(tank_results::first_start_ms(paths).map_err(DriveError::from)?)
}

/// Read `paths` (only the shots started in `window`, if given) through the
/// pipeline into a timeline (and `test_data.log`, when `json` is given): the summary.
/// No row (an empty phout, a window outside the run) is an error: a summary
/// of nothing would show every quantile as 0 ms.
fn read(
    paths: &[PathBuf],
    window: Option<Resolved>,
    buffered_seconds: u32,
    meta: Meta,
    mut json: Option<&mut JsonLines>,
) -> Result<(Summary, ReadStats), ReportError> {
    let mut timeline = Timeline::default();
    let source = PhoutSource::open_window(paths, window).map_err(DriveError::from)?;
    let pipeline = Pipeline::new(Aggregator::new(buffered_seconds));
    let driven = drive(source, pipeline, None, &mut [&mut timeline, &mut json])?;
    if driven.rows == 0 {
        return Err(no_rows(paths, window));
    }
    let summary = Summary::build(meta, &driven.totals, timeline, None, None, None);
    let stats = ReadStats {
        lines: driven.rows,
        warnings: driven.warnings,
    };
    Ok((summary, stats))
}

/// The error for `paths` having no row (in `window`, if given): with a window,
/// it names the window and the moments the files' shots started in.
fn no_rows(paths: &[PathBuf], window: Option<Resolved>) -> ReportError {
    let files = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let span = start_span_ms(paths);
    let why = match (window, span) {
        (Some(window), Some((first, last))) => {
            let end = |ms: u64, open: &str| match ms {
                0 | u64::MAX => open.to_string(),
                ms => Bound::At(ms).to_string(),
            };
            format!(
                "no shot started in the window, from {} to {}; the shots started from {} \
                 to {} ({:.1} s)",
                end(window.from, "the start"),
                end(window.to, "the end"),
                Bound::At(first),
                Bound::At(last),
                (last - first) as f64 / 1000.0
            )
        }
        _ => "no rows (an empty phout)".to_string(),
    };
    ReportError::NoRows { files, why }
}

/// The first and last start among `paths`' whole lines, ms since the Unix
/// epoch (`None`: no line whose first field reads, or a file that cannot be
/// read): a quick pass, for an error message only.
fn start_span_ms(paths: &[PathBuf]) -> Option<(u64, u64)> {
    use std::io::BufRead as _;
    let mut span: Option<(u64, u64)> = None;
    for path in paths {
        let mut reader = io::BufReader::new(std::fs::File::open(path).ok()?);
        let mut line = Vec::with_capacity(256);
        while reader.read_until(b'\n', &mut line).ok()? > 0 && line.ends_with(b"\n") {
            if let Some(ms) = send_ms(&line) {
                span = Some(span.map_or((ms, ms), |(a, b)| (a.min(ms), b.max(ms))));
            }
            line.clear();
        }
    }
    span
}

/// Aggregate `paths` into a [`Summary`] without writing anything (for `tank compare`).
pub fn summarize(
    paths: &[PathBuf],
    buffered_seconds: u32,
    meta: Meta,
) -> Result<(Summary, ReadStats), ReportError> {
    read(paths, None, buffered_seconds, meta, None)
}

/// `tank report`: aggregate `paths` (only the shots started in `window`, if
/// given) and write [`files`] into `out_dir` (created if missing). Nothing is
/// written when the phouts cannot be read or hold no row (in the window):
/// `test_data.log` is written under a temporary name and renamed at the end.
pub fn report(
    paths: &[PathBuf],
    window: Option<Resolved>,
    out_dir: &Path,
    buffered_seconds: u32,
    meta: Meta,
) -> Result<(Summary, ReadStats), ReportError> {
    let existed = out_dir.is_dir();
    std::fs::create_dir_all(out_dir).map_err(|error| ReportError::Io {
        path: out_dir.into(),
        error,
    })?;
    let json_path = out_dir.join(files::JSON_LINES);
    let partial = partial(&json_path);
    let mut json = JsonLines::create(&partial).map_err(|error| ReportError::Io {
        path: partial.clone(),
        error,
    })?;
    let read = read(paths, window, buffered_seconds, meta, Some(&mut json));
    drop(json);
    let renamed = read.and_then(|read| {
        std::fs::rename(&partial, &json_path)
            .map(|()| read)
            .map_err(|error| ReportError::Io {
                path: json_path,
                error,
            })
    });
    let (summary, stats) = renamed.inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
        if !existed {
            // Ours, and empty again: a failed report leaves nothing behind.
            let _ = std::fs::remove_dir(out_dir);
        }
    })?;
    write_outputs(&summary, out_dir)?;
    Ok((summary, stats))
}

/// Write `summary.json`, `summary.txt` and `report.html` into `out_dir` (the end of a run
/// writes these too). Each is written under a temporary name and renamed into place, so a
/// failure (a full disk) leaves no empty or cut report: a file is whole, or absent.
pub fn write_outputs(summary: &Summary, out_dir: &Path) -> Result<(), ReportError> {
    for (name, content) in [
        (files::SUMMARY_JSON, summary.to_json()),
        (files::SUMMARY_TEXT, summary.to_text()),
        (files::HTML, crate::html::report(summary)),
    ] {
        write_whole(&out_dir.join(name), content.as_bytes())?;
    }
    Ok(())
}

/// Write `path` whole or not at all: through a temporary file beside it.
fn write_whole(path: &Path, content: &[u8]) -> Result<(), ReportError> {
    let temporary = partial(path);
    let written =
        std::fs::write(&temporary, content).and_then(|()| std::fs::rename(&temporary, path));
    written.map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        ReportError::Io {
            path: path.to_path_buf(),
            error,
        }
    })
}

/// The temporary name `path` is written under: `path.partial`.
fn partial(path: &Path) -> PathBuf {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".partial");
    PathBuf::from(temporary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn files_are_merged_by_response_time_and_blank_lines_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a", "10.0\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n\n12.0\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n");
        let b = write(dir.path(), "b", "11.0\tb\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n13.0\tb\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n");
        let (summary, stats) = summarize(&[a, b], 0, Meta::default()).unwrap();
        assert_eq!(stats.lines, 4);
        assert_eq!(summary.shots.late, 0);
        assert_eq!(summary.timeline.ts, vec![10, 11, 12, 13]);
        assert_eq!(summary.timeline.sent, vec![1, 1, 1, 1]);
    }

    #[test]
    fn a_bad_line_names_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "phout", "10.0\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n10.0\ta\t1000\t0\tX\t0\t0\t0\t0\t0\t0\t200\n");
        let error = summarize(&[p], 2, Meta::default()).unwrap_err();
        let text = error.to_string();
        assert!(
            text.ends_with("phout:2: phout field 5 (send_time): `X` is not a non-negative integer"),
            "{text}"
        );
    }

    #[test]
    fn an_unfinished_last_line_is_skipped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "phout",
            "10.0\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n10.5\ta\t10",
        );
        let (_, stats) = summarize(&[p], 2, Meta::default()).unwrap();
        assert_eq!(stats.lines, 1);
        assert_eq!(stats.warnings.len(), 1);
        assert!(
            stats.warnings[0].contains(":2: skipped"),
            "{:?}",
            stats.warnings
        );
    }

    #[test]
    fn report_writes_every_output() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "phout", "10.0\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n11.0\t\t3000\t0\t0\t0\t0\t0\t0\t0\t110\t0\n");
        let out = dir.path().join("out");
        let (summary, _) = report(&[p], None, &out, 2, Meta::default()).unwrap();
        assert_eq!(summary.shots.responses, 2);
        for name in [
            files::JSON_LINES,
            files::SUMMARY_JSON,
            files::SUMMARY_TEXT,
            files::HTML,
        ] {
            assert!(out.join(name).is_file(), "{name}");
        }
        let lines = std::fs::read_to_string(out.join(files::JSON_LINES)).unwrap();
        assert_eq!(lines.lines().count(), 2);
        let partial: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
            .collect();
        assert!(partial.is_empty(), "{partial:?}");
    }

    #[test]
    fn no_rows_in_the_window_or_the_file_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "phout", "1700000000.000\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n1700000002.200\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n");
        let out = dir.path().join("out");
        let later = Resolved {
            from: 1_700_000_010_000,
            to: u64::MAX,
        };
        let error = report(&[p], Some(later), &out, 2, Meta::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: no shot started in the window, from 2023-11-14T22:13:30Z to the end; the \
                 shots started from 2023-11-14T22:13:20Z to 2023-11-14T22:13:22.2Z (2.2 s): \
                 nothing to report",
                dir.path().join("phout").display()
            )
        );
        assert!(!out.exists(), "nothing written, not even the directory");
        let empty = write(dir.path(), "empty", "");
        let error = summarize(&[empty], 2, Meta::default()).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("empty: no rows (an empty phout): nothing to report"),
            "{error}"
        );
    }

    #[test]
    fn an_error_says_its_cause_once() {
        // The message holds the cause: a source() too would have `{:#}` print it twice.
        let dir = tempfile::tempdir().unwrap();
        let error = summarize(&[dir.path().join("nosuch.log")], 2, Meta::default()).unwrap_err();
        assert!(error.to_string().contains("nosuch.log: "), "{error}");
        assert!(std::error::Error::source(&error).is_none(), "{error:?}");
        let p = write(
            dir.path(),
            "short",
            "10.0\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\n",
        );
        let error = summarize(&[p], 2, Meta::default()).unwrap_err();
        assert!(std::error::Error::source(&error).is_none(), "{error:?}");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_report_that_cannot_be_written_leaves_no_empty_file() {
        // A full disk, as /dev/full is: the rename never happens, the temporary goes.
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("summary.json");
        std::os::unix::fs::symlink("/dev/full", dir.path().join("summary.json.partial")).unwrap();
        let error = write_whole(&target, b"{}").unwrap_err();
        assert!(error.to_string().contains("summary.json"), "{error}");
        assert!(!target.exists());
    }
}
