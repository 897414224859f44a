//! The k-way merge of phout files by response end: one line per file held at a
//! time, the next line out always the one whose response ended first among the
//! files' current lines (ties: the earlier file first). Memory is one line
//! buffer and one heap entry per file, however long the files: 100 shards' phouts
//! merge in a few kilobytes.
//!
//! A phout is written in the order responses reached the results thread, so it is
//! in time order up to a batch or two; the merge keeps each file's own order, and
//! the per-second aggregation after it holds `buffered_seconds` for stragglers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use tank_stats::phout::{parse_line, ParseError};

/// Why a phout could not be merged.
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

/// One input file.
struct Source {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    line: Vec<u8>,
    number: u64,
}

impl Source {
    /// Load the next non-blank line; its response end (µs), or `None` at the end.
    /// An unfinished last line (a writer killed mid-line) is skipped with a warning.
    fn advance(&mut self, warnings: &mut Vec<String>) -> Result<Option<u64>, SourceError> {
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
            let complete = self.line.last() == Some(&b'\n');
            if complete {
                self.line.pop();
            }
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse_line(&self.line) {
                Ok(record) => {
                    return Ok(Some(
                        record.send_ms.saturating_mul(1000) + record.measured.interval_real_us,
                    ))
                }
                Err(_) if !complete => {
                    warnings.push(format!(
                        "{}:{}: skipped the unfinished last line",
                        self.path.display(),
                        self.number
                    ));
                    return Ok(None);
                }
                Err(source) => {
                    return Err(SourceError::Phout {
                        path: self.path.clone(),
                        line: self.number,
                        source,
                    })
                }
            }
        }
    }
}

/// Phout files merged by response end, line by line.
pub struct PhoutSource {
    sources: Vec<Source>,
    /// (response end µs, file) of each file's current line.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The file whose line was handed out last: advanced on the next call.
    taken: Option<usize>,
    /// Skipped unfinished last lines, for people.
    pub warnings: Vec<String>,
}

impl PhoutSource {
    /// Open `paths` and load each one's first line.
    pub fn open(paths: &[PathBuf]) -> Result<PhoutSource, SourceError> {
        let readers = paths
            .iter()
            .map(|path| {
                let file = File::open(path).map_err(|source| SourceError::Io {
                    path: path.clone(),
                    source,
                })?;
                Ok((
                    path.as_path(),
                    Box::new(BufReader::with_capacity(1 << 20, file)) as Box<dyn BufRead>,
                ))
            })
            .collect::<Result<Vec<_>, SourceError>>()?;
        PhoutSource::from_readers(readers)
    }

    /// Merge already open readers (each named by a path for errors).
    pub fn from_readers(
        readers: Vec<(&Path, Box<dyn BufRead>)>,
    ) -> Result<PhoutSource, SourceError> {
        let mut merge = PhoutSource {
            sources: Vec::with_capacity(readers.len()),
            heap: BinaryHeap::with_capacity(readers.len()),
            taken: None,
            warnings: Vec::new(),
        };
        for (index, (path, reader)) in readers.into_iter().enumerate() {
            let mut source = Source {
                path: path.to_path_buf(),
                reader,
                line: Vec::with_capacity(256),
                number: 0,
            };
            if let Some(key) = source.advance(&mut merge.warnings)? {
                merge.heap.push(Reverse((key, index)));
            }
            merge.sources.push(source);
        }
        Ok(merge)
    }

    /// The next line (without its `\n`, checked to parse) and the index of its file.
    pub fn next_line(&mut self) -> Result<Option<(usize, &[u8])>, SourceError> {
        if let Some(index) = self.taken.take() {
            if let Some(key) = self.sources[index].advance(&mut self.warnings)? {
                self.heap.push(Reverse((key, index)));
            }
        }
        let Some(Reverse((_, index))) = self.heap.pop() else {
            return Ok(None);
        };
        self.taken = Some(index);
        Ok(Some((index, &self.sources[index].line)))
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
        while let Some((index, line)) = merge.next_line()? {
            out.push((index, String::from_utf8_lossy(line).into_owned()));
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
