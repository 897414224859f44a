//! `tank report`'s core: phout files in, summary / JSON lines / HTML out, streaming.
//!
//! Each file is read line by line into one reused buffer; lines go straight into the
//! [`Aggregator`], finished seconds straight to the JSON-lines file and the [`Timeline`]. Memory
//! is the aggregator's open seconds plus a few hundred bytes per second of run: it does not
//! grow with the number of lines.
//!
//! Several files (one per queue, say) are merged as they are read: the next line consumed is
//! always the one whose response ended first among the files' current lines, so each file only
//! needs to be in rough time order, as phout files are.
//!
//! Bad lines: a line that cannot be read is an error naming the file, the line number and the
//! field; tank will not report on data it cannot vouch for. The one exception is a last line
//! with no `\n` (a writer killed mid-line): it is skipped with a warning. Blank lines are
//! skipped, as yandex-tank's reader does.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use tank_stats::phout::{parse_line, ParseError};
use tank_stats::window::Resolved;
use tank_stats::{json, Aggregator, SecondStats};

use crate::summary::{Meta, Summary};
use crate::timeline::Timeline;

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
    /// A phout line could not be read.
    #[error("{}:{line}: {source}", path.display())]
    Phout {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Which field and why.
        source: ParseError,
    },
}

/// What reading phout files found, besides the seconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines aggregated.
    pub lines: u64,
    /// Warnings (skipped truncated last lines), for people.
    pub warnings: Vec<String>,
}

/// One phout file being read.
struct Source {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    line: Vec<u8>,
    number: u64,
    /// The receive second of the line in `line`, when one is loaded.
    key: Option<u64>,
}

impl Source {
    fn open(path: &Path) -> Result<Source, ReportError> {
        let file = File::open(path).map_err(|source| ReportError::Io {
            path: path.into(),
            source,
        })?;
        Ok(Source {
            path: path.into(),
            reader: Box::new(BufReader::with_capacity(1 << 20, file)),
            line: Vec::with_capacity(256),
            number: 0,
            key: None,
        })
    }

    /// Load the next non-blank line (checking it parses); `key` is `None` at the end.
    fn advance(&mut self, warnings: &mut Vec<String>) -> Result<(), ReportError> {
        self.key = None;
        loop {
            self.line.clear();
            let read = self
                .reader
                .read_until(b'\n', &mut self.line)
                .map_err(|source| ReportError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if read == 0 {
                return Ok(());
            }
            self.number += 1;
            let complete = self.line.last() == Some(&b'\n');
            if complete {
                self.line.pop();
            }
            if self.line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            match parse_line(&self.line) {
                Ok(record) => {
                    self.key = Some(record.receive_second());
                    return Ok(());
                }
                Err(_) if !complete => {
                    warnings.push(format!(
                        "{}:{}: skipped the unfinished last line",
                        self.path.display(),
                        self.number
                    ));
                    return Ok(());
                }
                Err(source) => {
                    return Err(ReportError::Phout {
                        path: self.path.clone(),
                        line: self.number,
                        source,
                    })
                }
            }
        }
    }
}

/// The earliest start of a shot in `paths`, ms since the Unix epoch (`None`:
/// no row): where a window's offsets count from. One pass over every file.
pub fn first_start_ms(paths: &[PathBuf]) -> Result<Option<u64>, ReportError> {
    let mut first: Option<u64> = None;
    let mut warnings = Vec::new();
    for path in paths {
        let mut source = Source::open(path)?;
        source.advance(&mut warnings)?;
        while source.key.is_some() {
            if let Ok(record) = parse_line(&source.line) {
                first = Some(first.map_or(record.send_ms, |f| f.min(record.send_ms)));
            }
            source.advance(&mut warnings)?;
        }
    }
    Ok(first)
}

/// Read `paths` (merged by response time) into `aggregator`, calling `on_second` for every
/// second it finishes, and finishing it at the end. With a `window`, only the
/// shots that started in it count.
pub fn read_phouts(
    paths: &[PathBuf],
    window: Option<Resolved>,
    aggregator: &mut Aggregator,
    mut on_second: impl FnMut(SecondStats) -> Result<(), ReportError>,
) -> Result<ReadStats, ReportError> {
    let mut stats = ReadStats::default();
    let mut sources = Vec::with_capacity(paths.len());
    for path in paths {
        let mut source = Source::open(path)?;
        source.advance(&mut stats.warnings)?;
        sources.push(source);
    }
    loop {
        // With one file this is always that file; with a few, a short scan.
        let next = sources
            .iter_mut()
            .filter(|s| s.key.is_some())
            .min_by_key(|s| s.key);
        let Some(source) = next else { break };
        // The line parsed when it was loaded: parsing again cannot fail.
        if let Ok(record) = parse_line(&source.line) {
            if window.is_none_or(|w| w.keeps(record.send_ms)) {
                aggregator.add_record(&record);
                stats.lines += 1;
            }
        }
        source.advance(&mut stats.warnings)?;
        while let Some(second) = aggregator.pop_ready() {
            on_second(second)?;
        }
    }
    aggregator.finish();
    while let Some(second) = aggregator.pop_ready() {
        on_second(second)?;
    }
    Ok(stats)
}

/// Aggregate `paths` into a [`Summary`] without writing anything (for `tank compare`).
pub fn summarize(
    paths: &[PathBuf],
    buffered_seconds: u32,
    meta: Meta,
) -> Result<(Summary, ReadStats), ReportError> {
    let mut aggregator = Aggregator::new(buffered_seconds);
    let mut timeline = Timeline::default();
    let stats = read_phouts(paths, None, &mut aggregator, |second| {
        timeline.push(&second);
        Ok(())
    })?;
    let summary = Summary::build(meta, &aggregator.totals(), timeline, None, None, None);
    Ok((summary, stats))
}

/// `tank report`: aggregate `paths` (only the shots started in `window`, if
/// given) and write [`files`] into `out_dir` (created if missing).
pub fn report(
    paths: &[PathBuf],
    window: Option<Resolved>,
    out_dir: &Path,
    buffered_seconds: u32,
    meta: Meta,
) -> Result<(Summary, ReadStats), ReportError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io {
            path: path.clone(),
            source,
        }
    };
    std::fs::create_dir_all(out_dir).map_err(io(out_dir))?;
    let json_path = out_dir.join(files::JSON_LINES);
    let mut json_out =
        BufWriter::with_capacity(1 << 16, File::create(&json_path).map_err(io(&json_path))?);
    let mut aggregator = Aggregator::new(buffered_seconds);
    let mut timeline = Timeline::default();
    let stats = read_phouts(paths, window, &mut aggregator, |second| {
        json::write_second(&mut json_out, &second).map_err(io(&json_path))?;
        timeline.push(&second);
        Ok(())
    })?;
    json_out.flush().map_err(io(&json_path))?;
    let summary = Summary::build(meta, &aggregator.totals(), timeline, None, None, None);
    write_outputs(&summary, out_dir)?;
    Ok((summary, stats))
}

/// Write `summary.json`, `summary.txt` and `report.html` into `out_dir` (the end of a run
/// writes these too).
pub fn write_outputs(summary: &Summary, out_dir: &Path) -> Result<(), ReportError> {
    for (name, content) in [
        (files::SUMMARY_JSON, summary.to_json()),
        (files::SUMMARY_TEXT, summary.to_text()),
        (files::HTML, crate::html::report(summary)),
    ] {
        let path = out_dir.join(name);
        std::fs::write(&path, content).map_err(|source| ReportError::Io { path, source })?;
    }
    Ok(())
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
        let mut agg = Aggregator::new(0);
        let mut seen = Vec::new();
        let stats = read_phouts(&[a, b], None, &mut agg, |s| {
            seen.push((s.ts, s.tagged.keys().cloned().collect::<Vec<_>>()));
            Ok(())
        })
        .unwrap();
        assert_eq!(stats.lines, 4);
        assert_eq!(agg.totals().late, 0);
        assert_eq!(
            seen.iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![10, 11, 12, 13]
        );
    }

    #[test]
    fn a_bad_line_names_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "phout", "10.0\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n10.0\ta\t1000\t0\tX\t0\t0\t0\t0\t0\t0\t200\n");
        let error = read_phouts(&[p], None, &mut Aggregator::new(2), |_| Ok(())).unwrap_err();
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
        let stats = read_phouts(&[p], None, &mut Aggregator::new(2), |_| Ok(())).unwrap();
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
    }
}
