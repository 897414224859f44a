//! Phout files as a source of responses: the k-way merge by response end.
//!
//! One line per file is held at a time; the next row out is always the one
//! whose response ended first among the files' current lines (ties: the
//! earlier file first), so several files (one per queue, or the shards of a
//! test) read as one run's, and memory is one line buffer and one heap entry
//! per file however long the files are: 100 shards' phouts merge in a few
//! kilobytes. A phout is written in the order responses reached the results
//! thread, so it is in time order up to a batch or two; the merge keeps each
//! file's own order, and the aggregation after it holds `buffered_seconds` for
//! stragglers.
//!
//! Bad input: a line that cannot be read is an error naming the file, the line
//! number and the field (tank will not report on data it cannot vouch for);
//! blank lines are skipped, as yandex-tank's reader skips them. A last line
//! without its `\n` was cut by a writer that stopped mid-line (a kill, a full
//! disk): it is skipped with a warning even when its fields happen to read
//! (`…\t0\t2` is a 200 cut short, not HTTP code 2).
//!
//! A phout is in order of response end, but a second's sent count is by start:
//! a shot answered after its second was final would miss it. So [`PhoutSource::open`]
//! first counts each second's starts in a quick pass that reads only the first
//! field ([`PhoutSource::take_sent_counts`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::ops::Range;
use std::path::{Path, PathBuf};

use tank_stats::phout::{parse_line, send_second, ParseError, Record};
use tank_stats::Measured;

/// Distinct seconds the pre-count keeps (40 days of a busy run): a phout whose
/// rows are scattered over more (a broken clock) has its sent counted as rows arrive.
const MAX_SENT_SECONDS: usize = 40 * 86_400;

/// Why a phout could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Reading a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line could not be read.
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

/// One row of the merged stream.
#[derive(Debug)]
pub struct Row<'a> {
    /// Which of the source's files it came from.
    pub file: usize,
    /// The line as written, without its `\n`.
    pub line: &'a [u8],
    /// The line, parsed.
    pub record: Record<'a>,
}

/// A loaded line, parsed once: the tag as a range of the line buffer.
#[derive(Debug, Clone)]
struct Parsed {
    send_ms: u64,
    tag: Range<usize>,
    measured: Measured,
}

/// One input file.
struct Input {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    line: Vec<u8>,
    number: u64,
    parsed: Option<Parsed>,
}

impl Input {
    /// Load the next non-blank line; its response end (µs), or `None` at the end.
    fn advance(&mut self, warnings: &mut Vec<String>) -> Result<Option<u64>, SourceError> {
        self.parsed = None;
        loop {
            self.line.clear();
            let read = self
                .reader
                .read_until(b'\n', &mut self.line)
                .map_err(|source| SourceError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if read == 0 {
                return Ok(None);
            }
            self.number += 1;
            if self.line.last() != Some(&b'\n') {
                if !self.line.iter().all(u8::is_ascii_whitespace) {
                    warnings.push(format!(
                        "{}:{}: skipped the unfinished last line (no line end: its writer stopped mid-line)",
                        self.path.display(),
                        self.number
                    ));
                }
                return Ok(None);
            }
            self.line.pop();
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let record = parse_line(&self.line).map_err(|source| SourceError::Phout {
                path: self.path.clone(),
                line: self.number,
                source,
            })?;
            let tag_at = record.tag.as_ptr() as usize - self.line.as_ptr() as usize;
            let end = record.end_us();
            self.parsed = Some(Parsed {
                send_ms: record.send_ms,
                tag: tag_at..tag_at + record.tag.len(),
                measured: record.measured,
            });
            return Ok(Some(end));
        }
    }
}

/// Shots started per second, counted before the merge.
#[derive(Debug, Default)]
pub struct SentCounts(BTreeMap<u64, u64>);

impl SentCounts {
    /// The counts of every second up to `second` not yet taken, in order.
    pub fn take_until(&mut self, second: u64) -> Vec<(u64, u64)> {
        let later = self.0.split_off(&second.saturating_add(1));
        std::mem::replace(&mut self.0, later).into_iter().collect()
    }
}

/// Phout files merged by response end, row by row.
pub struct PhoutSource {
    inputs: Vec<Input>,
    /// (response end µs, file) of each file's current line.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The file whose line was handed out last: advanced on the next call.
    taken: Option<usize>,
    sent: Option<SentCounts>,
    /// Skipped unfinished last lines and other notes, for people.
    pub warnings: Vec<String>,
}

impl PhoutSource {
    /// Open `paths`, count each second's starts in them, and load each one's first line.
    pub fn open(paths: &[PathBuf]) -> Result<PhoutSource, SourceError> {
        let readers = paths
            .iter()
            .map(|path| Ok((path.as_path(), reader(path)?)))
            .collect::<Result<Vec<_>, SourceError>>()?;
        let mut source = PhoutSource::from_readers(readers)?;
        let mut counts = BTreeMap::new();
        for path in paths {
            if !count_sent(path, &mut counts)? {
                source.warnings.push(format!(
                    "{}: rows over more than {MAX_SENT_SECONDS} distinct seconds: the shots sent \
                     per second are counted as rows arrive, so a second may miss those answered \
                     after it was final",
                    path.display()
                ));
                return Ok(source);
            }
        }
        source.sent = Some(SentCounts(counts));
        Ok(source)
    }

    /// Merge already open readers (each named by a path for errors). Nothing is
    /// counted ahead: the shots sent per second are counted as rows arrive.
    pub fn from_readers(
        readers: Vec<(&Path, Box<dyn BufRead>)>,
    ) -> Result<PhoutSource, SourceError> {
        let mut source = PhoutSource {
            inputs: Vec::with_capacity(readers.len()),
            heap: BinaryHeap::with_capacity(readers.len()),
            taken: None,
            sent: None,
            warnings: Vec::new(),
        };
        for (index, (path, reader)) in readers.into_iter().enumerate() {
            let mut input = Input {
                path: path.to_path_buf(),
                reader,
                line: Vec::with_capacity(256),
                number: 0,
                parsed: None,
            };
            if let Some(key) = input.advance(&mut source.warnings)? {
                source.heap.push(Reverse((key, index)));
            }
            source.inputs.push(input);
        }
        Ok(source)
    }

    /// The next row, or `None` at the end of every file.
    pub fn next_row(&mut self) -> Result<Option<Row<'_>>, SourceError> {
        if let Some(index) = self.taken.take() {
            if let Some(key) = self.inputs[index].advance(&mut self.warnings)? {
                self.heap.push(Reverse((key, index)));
            }
        }
        let Some(Reverse((_, index))) = self.heap.pop() else {
            return Ok(None);
        };
        self.taken = Some(index);
        let input = &self.inputs[index];
        // Loaded with the line it was parsed from: present while the line is.
        let Some(parsed) = &input.parsed else {
            return Ok(None);
        };
        Ok(Some(Row {
            file: index,
            line: &input.line,
            record: Record {
                send_ms: parsed.send_ms,
                tag: &input.line[parsed.tag.clone()],
                measured: parsed.measured,
            },
        }))
    }

    /// The shots started per second, when [`PhoutSource::open`] could count
    /// them ahead (`None`: count each row's start as it arrives).
    pub fn take_sent_counts(&mut self) -> Option<SentCounts> {
        self.sent.take()
    }

    /// The files' names, in index order.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.inputs.iter().map(|input| input.path.as_path())
    }
}

fn reader(path: &Path) -> Result<Box<dyn BufRead>, SourceError> {
    let file = File::open(path).map_err(|source| SourceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Box::new(BufReader::with_capacity(1 << 20, file)))
}

/// Add `path`'s starts per second to `counts`, reading only each whole line's
/// first field (lines that do not read are the merge's to report). `false`
/// when the rows spread over more than [`MAX_SENT_SECONDS`] seconds.
fn count_sent(path: &Path, counts: &mut BTreeMap<u64, u64>) -> Result<bool, SourceError> {
    let mut reader = reader(path)?;
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| SourceError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if read == 0 || line.last() != Some(&b'\n') {
            return Ok(true);
        }
        if let Some(second) = send_second(&line) {
            *counts.entry(second).or_default() += 1;
            if counts.len() > MAX_SENT_SECONDS {
                return Ok(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn line(send_ms: u64, real_us: u64, tag: &str) -> String {
        format!(
            "{}.{:03}\t{tag}\t{real_us}\t0\t0\t0\t0\t0\t0\t0\t0\t200\n",
            send_ms / 1000,
            send_ms % 1000
        )
    }

    type Lines = Vec<(usize, String)>;

    fn merged(files: &[String]) -> Result<(Lines, Vec<String>), SourceError> {
        let readers = files
            .iter()
            .map(|text| {
                (
                    Path::new("phout.log"),
                    Box::new(std::io::Cursor::new(text.clone().into_bytes())) as Box<dyn BufRead>,
                )
            })
            .collect();
        let mut merge = PhoutSource::from_readers(readers)?;
        let mut out = Vec::new();
        while let Some(row) = merge.next_row()? {
            assert_eq!(parse_line(row.line).unwrap(), row.record);
            out.push((row.file, String::from_utf8_lossy(row.line).into_owned()));
        }
        Ok((out, merge.warnings))
    }

    fn end_of(line: &str) -> u64 {
        let record = parse_line(line.as_bytes()).unwrap();
        record.send_ms * 1000 + record.measured.interval_real_us
    }

    #[test]
    fn merges_by_response_end_and_names_a_bad_line() {
        let a = line(1000, 500_000, "a") + &line(2000, 0, "a");
        let b = "\n".to_owned() + &line(1200, 0, "b") + &line(1600, 0, "b");
        let (out, warnings) = merged(&[a, b]).unwrap();
        let order: Vec<(usize, u64)> = out.iter().map(|(i, l)| (*i, end_of(l))).collect();
        assert_eq!(
            order,
            vec![
                (1, 1_200_000),
                (0, 1_500_000),
                (1, 1_600_000),
                (0, 2_000_000)
            ]
        );
        assert!(warnings.is_empty());
        let bad = line(1000, 0, "a") + "1.000\ta\tX\t0\t0\t0\t0\t0\t0\t0\t0\t200\n";
        let error = merged(&[bad]).unwrap_err().to_string();
        assert!(error.starts_with("phout.log:2: phout field 3"), "{error}");
        let (out, warnings) = merged(&[line(1000, 0, "a") + "1.5\ta\t1"]).unwrap();
        assert_eq!((out.len(), warnings.len()), (1, 1));
    }

    #[test]
    fn a_last_line_cut_inside_its_last_field_is_torn_not_a_code() {
        // `…\t0\t2` reads as HTTP code 2, but it is a 200 cut short.
        let cut = line(1000, 0, "a") + "1.500\ta\t10\t0\t0\t0\t0\t0\t0\t0\t0\t2";
        let (out, warnings) = merged(&[cut]).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("phout.log:2: skipped the unfinished last line"),
            "{warnings:?}"
        );
    }

    #[test]
    fn starts_are_counted_per_second_before_the_merge() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        // In order of response: sent at 2 s and answered at once; sent at 1 s, answered at 5 s.
        std::fs::write(&a, line(2000, 0, "a") + &line(1000, 4_000_000, "a")).unwrap();
        std::fs::write(&b, line(1500, 0, "b") + "3.000\tb\t1").unwrap();
        let mut source = PhoutSource::open(&[a, b]).unwrap();
        let mut sent = source.take_sent_counts().unwrap();
        assert_eq!(sent.take_until(1), vec![(1, 2)]);
        assert_eq!(sent.take_until(1), vec![]);
        assert_eq!(sent.take_until(9), vec![(2, 1)]);
        let mut files = Vec::new();
        while let Some(row) = source.next_row().unwrap() {
            files.push(row.file);
        }
        assert_eq!(files, vec![1, 0, 0]);
        assert_eq!(source.warnings.len(), 1, "the cut last line of b");
    }

    proptest! {
        /// Sorted files merge into one sorted stream that holds every line once and
        /// keeps each file's own order; unsorted files still lose and gain nothing.
        #[test]
        fn the_merge_is_a_sorted_union(
            files in prop::collection::vec(
                prop::collection::vec((0u64..5_000, 0u64..3_000_000), 0..40), 1..6),
            sort in any::<bool>(),
        ) {
            let texts: Vec<String> = files
                .iter()
                .enumerate()
                .map(|(i, rows)| {
                    let mut rows = rows.clone();
                    if sort {
                        rows.sort_by_key(|(ms, us)| ms * 1000 + us);
                    }
                    rows.iter().map(|(ms, us)| line(*ms, *us, &format!("t{i}"))).collect()
                })
                .collect();
            let (out, _) = merged(&texts).unwrap();
            let mut expected: Vec<String> =
                texts.iter().flat_map(|t| t.lines().map(str::to_owned)).collect();
            let mut got: Vec<String> = out.iter().map(|(_, l)| l.clone()).collect();
            if sort {
                prop_assert!(got.windows(2).all(|w| end_of(&w[0]) <= end_of(&w[1])));
            }
            for (file, text) in texts.iter().enumerate() {
                let own: Vec<&str> = out.iter().filter(|(i, _)| *i == file).map(|(_, l)| l.as_str()).collect();
                prop_assert_eq!(own, text.lines().collect::<Vec<_>>());
            }
            expected.sort();
            got.sort();
            prop_assert_eq!(got, expected);
        }
    }
}
