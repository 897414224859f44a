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
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: io::Error,
    },
    /// A phout could not be read, or an output written.
    #[error(transparent)]
    Drive(#[from] DriveError),
}

/// What reading phout files found, besides the seconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines aggregated.
    pub lines: u64,
    /// Warnings (skipped truncated last lines), for people.
    pub warnings: Vec<String>,
}

/// Read `paths` through the pipeline into a timeline (and `test_data.log`, when
/// `json` is given): the summary.
fn read(
    paths: &[PathBuf],
    buffered_seconds: u32,
    meta: Meta,
    mut json: Option<&mut JsonLines>,
) -> Result<(Summary, ReadStats), ReportError> {
    let mut timeline = Timeline::default();
    let source = PhoutSource::open(paths).map_err(DriveError::from)?;
    let pipeline = Pipeline::new(Aggregator::new(buffered_seconds));
    let driven = drive(source, pipeline, None, &mut [&mut timeline, &mut json])?;
    let summary = Summary::build(meta, &driven.totals, timeline, None, None, None);
    let stats = ReadStats {
        lines: driven.rows,
        warnings: driven.warnings,
    };
    Ok((summary, stats))
}

/// Aggregate `paths` into a [`Summary`] without writing anything (for `tank compare`).
pub fn summarize(
    paths: &[PathBuf],
    buffered_seconds: u32,
    meta: Meta,
) -> Result<(Summary, ReadStats), ReportError> {
    read(paths, buffered_seconds, meta, None)
}

/// `tank report`: aggregate `paths` and write [`files`] into `out_dir` (created if missing).
pub fn report(
    paths: &[PathBuf],
    out_dir: &Path,
    buffered_seconds: u32,
    meta: Meta,
) -> Result<(Summary, ReadStats), ReportError> {
    std::fs::create_dir_all(out_dir).map_err(|source| ReportError::Io {
        path: out_dir.into(),
        source,
    })?;
    let json_path = out_dir.join(files::JSON_LINES);
    let mut json = JsonLines::create(&json_path).map_err(|source| ReportError::Io {
        path: json_path,
        source,
    })?;
    let (summary, stats) = read(paths, buffered_seconds, meta, Some(&mut json))?;
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
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".partial");
    let temporary = PathBuf::from(temporary);
    let written =
        std::fs::write(&temporary, content).and_then(|()| std::fs::rename(&temporary, path));
    written.map_err(|source| {
        let _ = std::fs::remove_file(&temporary);
        ReportError::Io {
            path: path.to_path_buf(),
            source,
        }
    })
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
        let (summary, _) = report(&[p], &out, 2, Meta::default()).unwrap();
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
