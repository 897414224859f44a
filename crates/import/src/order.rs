//! Putting requests in time order with bounded memory.
//!
//! Requests complete out of time order: a slow upload on one connection
//! finishes after later requests on others started, and an out-of-order
//! segment holds back what follows it. The sessions file wants them sorted by
//! their first byte's time, so an importer pushes every request (and every
//! session's end) into a [`Sorter`], and tells it from time to time the
//! *watermark*: a time before which nothing more can come. Everything below it
//! is written at once, so memory holds only the look-ahead.
//!
//! When the look-ahead outgrows the memory budget (a request that never ends
//! holds the watermark back forever), the sorter spills sorted runs to
//! temporary files and merges them at the end instead: slower, still bounded.
//! [`Ordering`] says which happened.
//!
//! Items are ordered by (time, arrival): two items at the same time keep the
//! order they were pushed in, so a session's requests keep their order and its
//! end follows its last request.
//!
//! Most items come in order already (a request is pushed as the packet
//! carrying its first byte is read): those wait in a queue, and only the
//! others in a heap, so the common case costs no sifting of the look-ahead's
//! thousands of items; what comes out is the smaller of the two fronts.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, Write};

use crate::held::{Extent, RequestBytes};

/// Bytes an item costs beyond its own buffers (its fields, the heap's slot).
const ITEM_OVERHEAD: usize = 96;
/// Runs kept at once (open files); that many are merged into one.
const FAN_IN: usize = 64;

/// What an item says about its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request; `label` is set on the session's first one (who the client was).
    Request {
        /// Who the client was, on the session's first request only.
        label: Option<String>,
        /// What results group it by.
        tag: Vec<u8>,
        /// The request, verbatim (its body maybe in the spill file).
        bytes: RequestBytes,
    },
    /// The session has no more requests (pushed after its last one, at its time).
    End,
}

/// One request or session end, at an absolute time in µs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    /// When: µs on the importer's clock (e.g. since the Unix epoch).
    pub at_us: u64,
    /// Pushed as the `seq`-th item: breaks ties in push order.
    seq: u64,
    /// The importer's session (connection) number.
    pub session: u64,
    /// What happened.
    pub kind: Kind,
}

impl Item {
    fn cost(&self) -> usize {
        ITEM_OVERHEAD
            + match &self.kind {
                // What is held, not what is used.
                Kind::Request { label, tag, bytes } => {
                    label.as_ref().map_or(0, String::capacity) + tag.capacity() + bytes.held()
                }
                Kind::End => 0,
            }
    }

    fn key(&self) -> (u64, u64) {
        (self.at_us, self.seq)
    }
}

impl Ord for Item {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What failed while putting requests in order: a temporary file (a run of
/// the sorter, or the spill file of request bodies), or the output.
#[derive(Debug)]
pub(crate) enum SortError {
    /// Writing or reading back a temporary file (in `TMPDIR`).
    Temp(io::Error),
    /// Writing the sessions.
    Out(io::Error),
}

impl SortError {
    /// As an import error of the input `path`, saying which of the two failed.
    pub(crate) fn at(self, path: &str) -> crate::ImportError {
        match self {
            SortError::Temp(e) => crate::ImportError::io(
                path,
                "holding requests in a temporary file (in TMPDIR, past --memory)",
                e,
            ),
            SortError::Out(e) => crate::ImportError::io(path, "writing the sessions", e),
        }
    }
}

impl fmt::Display for SortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SortError::Temp(e) => write!(f, "a temporary file: {e}"),
            SortError::Out(e) => write!(f, "writing the sessions: {e}"),
        }
    }
}

/// How the output was ordered, for the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// Written as it came, holding at most `look_ahead` items at once.
    InOrder {
        /// The most items held at once.
        look_ahead: usize,
    },
    /// The look-ahead outgrew the budget: `runs` sorted runs were merged.
    ExternalMerge {
        /// Sorted runs spilled to temporary files (merged 64 at a time).
        runs: usize,
    },
}

impl std::fmt::Display for Ordering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ordering::InOrder { look_ahead } => write!(f, "in order, look-ahead {look_ahead}"),
            Ordering::ExternalMerge { runs } => write!(f, "external merge of {runs} runs"),
        }
    }
}

/// Sorts items by time with at most `budget` bytes in memory (see the module docs).
///
/// Contract: items come out in nondecreasing `at_us`, ties in push order. An
/// item pushed with a time before one already written (the importer's
/// watermark was wrong: timestamps going back further than it allowed) is
/// moved up to that time (and, if a request, counted in [`Sorter::clamped`]),
/// never written out of order.
pub(crate) struct Sorter {
    /// Items pushed after every item still held here (in key order).
    queue: VecDeque<Item>,
    /// The others.
    heap: BinaryHeap<Reverse<Item>>,
    held_bytes: usize,
    budget: usize,
    runs: Vec<File>,
    spilled_runs: usize,
    next_seq: u64,
    floor_us: u64,
    peak: usize,
    clamped: u64,
}

impl Sorter {
    /// A sorter holding at most about `budget` bytes before it spills.
    pub(crate) fn new(budget: usize) -> Self {
        Sorter {
            queue: VecDeque::new(),
            heap: BinaryHeap::new(),
            held_bytes: 0,
            budget,
            runs: Vec::new(),
            spilled_runs: 0,
            next_seq: 0,
            floor_us: 0,
            peak: 0,
            clamped: 0,
        }
    }

    /// Requests pushed with a time before one already written (moved up to it).
    pub(crate) fn clamped(&self) -> u64 {
        self.clamped
    }

    /// Add an item; spills to a run file when over budget.
    pub(crate) fn push(&mut self, at_us: u64, session: u64, kind: Kind) -> Result<(), SortError> {
        let at_us = if at_us < self.floor_us {
            // A session's end follows its requests: only moved requests count.
            if matches!(kind, Kind::Request { .. }) {
                self.clamped += 1;
            }
            self.floor_us
        } else {
            at_us
        };
        let item = Item {
            at_us,
            seq: self.next_seq,
            session,
            kind,
        };
        self.next_seq += 1;
        self.held_bytes += item.cost();
        // Its seq is the largest yet: a time not before the queue's last is a later key.
        if self
            .queue
            .back()
            .is_none_or(|last| last.at_us <= item.at_us)
        {
            self.queue.push_back(item);
        } else {
            self.heap.push(Reverse(item));
        }
        self.peak = self.peak.max(self.held());
        if self.held_bytes > self.budget {
            self.spill().map_err(SortError::Temp)?;
        }
        Ok(())
    }

    /// Write every item before `watermark_us` (nothing once spilled: then
    /// everything waits for the merge in [`Sorter::finish`]).
    pub(crate) fn release(
        &mut self,
        watermark_us: u64,
        out: &mut impl FnMut(Item) -> Result<(), SortError>,
    ) -> Result<(), SortError> {
        if !self.runs.is_empty() {
            return Ok(());
        }
        while self.first_at().is_some_and(|at_us| at_us < watermark_us) {
            if let Some(item) = self.pop() {
                self.held_bytes -= item.cost();
                self.floor_us = item.at_us;
                out(item)?;
            }
        }
        Ok(())
    }

    /// Items held.
    fn held(&self) -> usize {
        self.queue.len() + self.heap.len()
    }

    /// Whether the next item is the queue's (else the heap's).
    fn queue_first(&self) -> bool {
        match (self.queue.front(), self.heap.peek()) {
            (Some(queued), Some(Reverse(heaped))) => queued.key() < heaped.key(),
            (queued, _) => queued.is_some(),
        }
    }

    /// The time of the next item in order.
    fn first_at(&self) -> Option<u64> {
        if self.queue_first() {
            self.queue.front().map(|item| item.at_us)
        } else {
            self.heap.peek().map(|top| top.0.at_us)
        }
    }

    /// The next item in order.
    fn pop(&mut self) -> Option<Item> {
        if self.queue_first() {
            self.queue.pop_front()
        } else {
            self.heap.pop().map(|Reverse(item)| item)
        }
    }

    /// Write everything left, in order, and say how it was ordered.
    pub(crate) fn finish(
        mut self,
        out: &mut impl FnMut(Item) -> Result<(), SortError>,
    ) -> Result<Ordering, SortError> {
        if self.runs.is_empty() {
            // Everything, not only what is before a watermark: an item at
            // u64::MAX is still an item.
            while let Some(item) = self.pop() {
                out(item)?;
            }
            return Ok(Ordering::InOrder {
                look_ahead: self.peak,
            });
        }
        self.spill().map_err(SortError::Temp)?;
        merge(std::mem::take(&mut self.runs), out)?;
        Ok(Ordering::ExternalMerge {
            runs: self.spilled_runs,
        })
    }

    /// Write the held items, sorted, to a new run file.
    fn spill(&mut self) -> io::Result<()> {
        if self.held() == 0 {
            return Ok(());
        }
        let mut run = BufWriter::new(tempfile::tempfile()?);
        let mut items: Vec<Item> = std::mem::take(&mut self.queue).into();
        items.extend(
            std::mem::take(&mut self.heap)
                .into_iter()
                .map(|Reverse(item)| item),
        );
        // Keys are unique (seq): an unstable sort is the one order.
        items.sort_unstable_by_key(Item::key);
        for item in &items {
            write_item(&mut run, item)?;
        }
        self.held_bytes = 0;
        self.runs.push(finish_run(run)?);
        self.spilled_runs += 1;
        if self.runs.len() == FAN_IN {
            // Bound the open files: the runs so far become one. (With a sane
            // budget this never happens; a tiny one pays for re-reading.)
            let mut merged = BufWriter::new(tempfile::tempfile()?);
            merge(std::mem::take(&mut self.runs), &mut |item| {
                write_item(&mut merged, &item).map_err(SortError::Temp)
            })
            .map_err(|e| match e {
                SortError::Temp(e) | SortError::Out(e) => e,
            })?;
            self.runs.push(finish_run(merged)?);
        }
        Ok(())
    }
}

/// A run written: flushed and rewound for reading.
fn finish_run(run: BufWriter<File>) -> io::Result<File> {
    let mut file = run.into_inner().map_err(|e| e.into_error())?;
    file.rewind()?;
    Ok(file)
}

/// K-way merge of sorted run files into `out`.
fn merge(
    files: Vec<File>,
    out: &mut impl FnMut(Item) -> Result<(), SortError>,
) -> Result<(), SortError> {
    let mut readers: Vec<BufReader<File>> = files.into_iter().map(BufReader::new).collect();
    let mut heads = BinaryHeap::new();
    for (i, reader) in readers.iter_mut().enumerate() {
        if let Some(item) = read_item(reader).map_err(SortError::Temp)? {
            heads.push(Reverse((item, i)));
        }
    }
    while let Some(Reverse((item, i))) = heads.pop() {
        out(item)?;
        if let Some(next) = read_item(&mut readers[i]).map_err(SortError::Temp)? {
            heads.push(Reverse((next, i)));
        }
    }
    Ok(())
}

// A run's item: at, seq, session (u64 LE), then 0 (end) or 1 (request) with
// label presence, and length-prefixed label, tag, the bytes' head; then the
// count of spilled extents (at, len each) and the length-prefixed tail. A
// spilled body stays in the spill file: a run holds where it is.
fn write_item(out: &mut impl Write, item: &Item) -> io::Result<()> {
    out.write_all(&item.at_us.to_le_bytes())?;
    out.write_all(&item.seq.to_le_bytes())?;
    out.write_all(&item.session.to_le_bytes())?;
    match &item.kind {
        Kind::End => out.write_all(&[0]),
        Kind::Request { label, tag, bytes } => {
            out.write_all(&[if label.is_some() { 2 } else { 1 }])?;
            let label = label.as_deref().unwrap_or_default().as_bytes();
            for part in [label, tag, &bytes.head] {
                out.write_all(&(part.len() as u64).to_le_bytes())?;
                out.write_all(part)?;
            }
            out.write_all(&(bytes.spilled.len() as u64).to_le_bytes())?;
            for extent in &bytes.spilled {
                out.write_all(&extent.at.to_le_bytes())?;
                out.write_all(&extent.len.to_le_bytes())?;
            }
            out.write_all(&(bytes.tail.len() as u64).to_le_bytes())?;
            out.write_all(&bytes.tail)
        }
    }
}

fn read_u64(input: &mut impl Read) -> io::Result<u64> {
    let mut word = [0; 8];
    input.read_exact(&mut word)?;
    Ok(u64::from_le_bytes(word))
}

fn read_part(input: &mut impl Read) -> io::Result<Vec<u8>> {
    let len = read_u64(input)?;
    let mut part = Vec::new();
    input.take(len).read_to_end(&mut part)?;
    if part.len() as u64 != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(part)
}

fn read_item(input: &mut BufReader<File>) -> io::Result<Option<Item>> {
    if input.fill_buf()?.is_empty() {
        return Ok(None);
    }
    let (at_us, seq, session) = (read_u64(input)?, read_u64(input)?, read_u64(input)?);
    let mut kind = [0];
    input.read_exact(&mut kind)?;
    let kind = match kind[0] {
        0 => Kind::End,
        has_label => {
            let label = read_part(input)?;
            let (tag, head) = (read_part(input)?, read_part(input)?);
            let extents = read_u64(input)?;
            let mut spilled = Vec::new();
            for _ in 0..extents {
                let (at, len) = (read_u64(input)?, read_u64(input)?);
                spilled.push(Extent { at, len });
            }
            let tail = read_part(input)?;
            let label = (has_label == 2)
                .then(|| String::from_utf8(label).map_err(|_| io::ErrorKind::InvalidData))
                .transpose()?;
            let bytes = RequestBytes {
                head,
                spilled,
                tail,
            };
            Kind::Request { label, tag, bytes }
        }
    };
    Ok(Some(Item {
        at_us,
        seq,
        session,
        kind,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn request(n: u8) -> Kind {
        Kind::Request {
            label: (n % 3 == 0).then(|| format!("c{n}")),
            tag: vec![n],
            bytes: RequestBytes {
                head: vec![n; usize::from(n % 7)],
                spilled: (0..u64::from(n % 3))
                    .map(|i| Extent { at: i * 10, len: 5 })
                    .collect(),
                tail: vec![n; usize::from(n % 2)],
            },
        }
    }

    fn sort(input: &[(u64, u8)], budget: usize, watermark_lag: u64) -> (Vec<Item>, Ordering) {
        let mut sorter = Sorter::new(budget);
        let mut out = Vec::new();
        for (i, &(at, n)) in input.iter().enumerate() {
            sorter.push(at, i as u64, request(n)).unwrap();
            sorter
                .release(at.saturating_sub(watermark_lag), &mut |item| {
                    out.push(item);
                    Ok(())
                })
                .unwrap();
        }
        let ordering = sorter
            .finish(&mut |item| {
                out.push(item);
                Ok(())
            })
            .unwrap();
        (out, ordering)
    }

    #[test]
    fn fits_in_budget_is_in_order_with_its_look_ahead() {
        let (out, ordering) = sort(&[(5, 1), (3, 2), (9, 3), (4, 4)], 1 << 20, 5);
        let times: Vec<u64> = out.iter().map(|i| i.at_us).collect();
        assert_eq!(times, [3, 4, 5, 9]);
        assert_eq!(ordering, Ordering::InOrder { look_ahead: 3 });
    }

    #[test]
    fn over_budget_merges_runs_and_keeps_ties_in_push_order() {
        let input: Vec<(u64, u8)> = (0..200u8).map(|n| (u64::from(n % 5), n)).collect();
        let (out, ordering) = sort(&input, 0, u64::MAX);
        // One run per item: more than FAN_IN runs, never more open at once.
        assert_eq!(ordering, Ordering::ExternalMerge { runs: 200 });
        assert_eq!(out.len(), 200);
        for pair in out.windows(2) {
            assert!(pair[0].key() < pair[1].key());
        }
        assert_eq!(out[0].kind, request(0));
    }

    #[test]
    fn an_item_before_the_written_ones_is_moved_up_and_requests_are_counted() {
        let mut sorter = Sorter::new(1 << 20);
        let mut out = Vec::new();
        let mut collect = |item: Item| {
            out.push(item.at_us);
            Ok(())
        };
        sorter.push(10, 0, Kind::End).unwrap();
        sorter.release(11, &mut collect).unwrap();
        sorter.push(7, 1, Kind::End).unwrap();
        assert_eq!(sorter.clamped(), 0);
        sorter.push(8, 2, request(1)).unwrap();
        assert_eq!(sorter.clamped(), 1);
        sorter.finish(&mut collect).unwrap();
        assert_eq!(out, [10, 10, 10]);
    }

    #[test]
    fn an_item_at_the_end_of_time_is_written_too() {
        let mut sorter = Sorter::new(1 << 20);
        sorter.push(u64::MAX, 0, request(1)).unwrap();
        sorter.push(5, 1, Kind::End).unwrap();
        let mut out = Vec::new();
        sorter
            .finish(&mut |item| {
                out.push(item.at_us);
                Ok(())
            })
            .unwrap();
        assert_eq!(out, [5, u64::MAX]);
    }

    proptest! {
        #[test]
        fn output_is_a_sorted_permutation_for_any_input_and_budget(
            input in proptest::collection::vec((0u64..50, any::<u8>()), 0..300),
            budget in 0usize..4000,
            lag in 0u64..60,
        ) {
            let (out, _) = sort(&input, budget, lag);
            let mut got: Vec<(u64, Kind)> = out.iter().map(|i| (i.session, i.kind.clone())).collect();
            got.sort_by_key(|(s, _)| *s);
            let want: Vec<(u64, Kind)> =
                input.iter().enumerate().map(|(i, &(_, n))| (i as u64, request(n))).collect();
            prop_assert_eq!(got, want);
            // In time order, ties in push order, whether queued, heaped or merged.
            for pair in out.windows(2) {
                prop_assert!(pair[0].key() < pair[1].key());
            }
        }
    }
}
