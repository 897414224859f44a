//! A capture's statistics, from one pass over its sessions file: what
//! `tank plan` prints about a replay, and the default session pool (the peak
//! of sessions open at once, Apiary's count-concurrent-jobs).
//!
//! Memory is independent of the capture's span: the per-second rate is kept
//! as a profile (its first seconds and its extremes), not a counter per
//! second, so a capture of a year costs what one of a second does.

use std::path::Path;
use std::time::Duration;

use super::scaled;
use crate::error::Result;
use crate::planned::DueHistogram;
use crate::sessions::{Record, SessionsReader};
use crate::shard::Shard;

/// Which sessions of a pass a replay fires: one in every `skip` from the
/// `offset`-th, then the shard's of those.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// `replay_skip`, at least 1.
    pub skip: u64,
    /// `replay_offset`, below `skip`.
    pub offset: u64,
    /// The shard's slice of the sessions kept.
    pub shard: Shard,
    /// Every request is a session of its own (`replay_connections = per_request`).
    pub per_request: bool,
}

impl Selection {
    /// The whole capture.
    pub const ALL: Selection = Selection {
        skip: 1,
        offset: 0,
        shard: Shard::WHOLE,
        per_request: false,
    };

    /// Of the pass's `index`-th session: `None` when skipped, else whether
    /// this shard owns it (shard `I` of `N` owns the kept sessions `j ≡ I (mod N)`,
    /// `j` counting the kept ones).
    pub fn owns(&self, index: u64) -> Option<bool> {
        let skip = self.skip.max(1);
        (index % skip == self.offset).then(|| self.shard.owns(index / skip))
    }
}

/// What a capture holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Sessions (`S` records).
    pub sessions: u64,
    /// Requests.
    pub requests: u64,
    /// The last request's offset: how long the capture lasts.
    pub duration: Duration,
    /// The most sessions open at once (a session is open from its first
    /// request's offset to its last's, both included).
    pub peak_sessions: u64,
    /// The largest gap between two consecutive requests.
    pub largest_gap: Duration,
    /// Requests per second of the capture, from its first request.
    pub per_second: RateProfile,
    /// The most sessions of the selection open at once: the default pool.
    pub peak_selected: u64,
    /// Requests of the selection in one pass.
    pub requests_selected: u64,
}

/// A replay's first pass, counted by the walk that makes its statistics: a
/// replay of one pass needs no other walk for its planned count.
#[derive(Debug, Default)]
pub(crate) struct FirstPass {
    /// Requests of the sessions the skip keeps (every shard's): what
    /// `ammo_limit` counts.
    pub(crate) kept_requests: u64,
    /// The selection's requests per ms of due time; `None` past
    /// [`DueHistogram::MAX_SPAN_MS`].
    pub(crate) due: Option<DueHistogram>,
}

impl CaptureStats {
    /// Read `path` through once, counting the capture, `selection`'s
    /// sessions and its first pass's due times at `speed` (`replay_speed`).
    pub(crate) fn walk(
        path: &Path,
        selection: Selection,
        speed: f64,
    ) -> Result<(CaptureStats, FirstPass)> {
        let mut reader = SessionsReader::open(path)?;
        let mut stats = CaptureStats::default();
        let mut first = FirstPass {
            kept_requests: 0,
            due: Some(DueHistogram::default()),
        };
        let mut all = Peak::default();
        let mut chosen = Peak::default();
        // The sessions open, by id: whether the skip keeps each, and if so
        // whether this shard owns it.
        // Looked up per request; the ids are the file's own, so a fast hasher is safe.
        let mut open: foldhash::HashMap<u64, Option<bool>> = foldhash::HashMap::default();
        let mut last_request: Option<u64> = None;
        while let Some(record) = reader.next_record()? {
            let offset_us = record.offset_us();
            all.at(offset_us);
            chosen.at(offset_us);
            match record {
                Record::Begin { id, .. } => {
                    let owns = selection.owns(stats.sessions);
                    stats.sessions += 1;
                    all.begins += 1;
                    if owns == Some(true) {
                        chosen.begins += 1;
                    }
                    open.insert(id, owns);
                }
                Record::Request { id, .. } => {
                    let owns = if selection.per_request {
                        selection.owns(stats.requests)
                    } else {
                        open.get(&id).copied().flatten()
                    };
                    first.kept_requests += u64::from(owns.is_some());
                    if owns == Some(true) {
                        stats.requests_selected += 1;
                        let due = scaled(offset_us, speed).as_millis();
                        let ms = u64::try_from(due).unwrap_or(u64::MAX);
                        first.due = first.due.take().and_then(|mut due| {
                            due.add(ms)?;
                            Some(due)
                        });
                    }
                    stats.requests += 1;
                    if let Some(last) = last_request {
                        let gap = Duration::from_micros(offset_us - last);
                        stats.largest_gap = stats.largest_gap.max(gap);
                    }
                    last_request = Some(offset_us);
                    stats.duration = Duration::from_micros(offset_us);
                    stats.per_second.request(offset_us / 1_000_000);
                }
                Record::End { id, .. } => {
                    all.ends += 1;
                    if open.remove(&id) == Some(Some(true)) {
                        chosen.ends += 1;
                    }
                }
            }
        }
        stats.per_second.finish();
        all.at(u64::MAX);
        chosen.at(u64::MAX);
        stats.peak_sessions = all.peak;
        stats.peak_selected = chosen.peak;
        Ok((stats, first))
    }

    /// How far a looped pass is from the one before, µs of the capture: the
    /// capture's duration plus the mean gap between its requests (at least
    /// 1 ms), so that a looped capture keeps its rate across the seam.
    pub(crate) fn period_us(&self) -> u64 {
        let duration = u64::try_from(self.duration.as_micros()).unwrap_or(u64::MAX);
        let mean_gap = duration / self.requests.saturating_sub(1).max(1);
        duration.saturating_add(mean_gap.max(1000))
    }
}

/// Requests per second of a capture, in memory that does not grow with its
/// span: the first [`RateProfile::SHOWN`] seconds one by one, and over every
/// second (empty ones count as 0) the least and the most. Requests come in
/// time order, so a second is complete when a later one begins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateProfile {
    /// Requests in each of the first seconds (up to [`RateProfile::SHOWN`]).
    pub first: Vec<u64>,
    /// Seconds from the first request's to the last's, both included.
    pub seconds: u64,
    /// The fewest requests in one of those seconds.
    pub min: u64,
    /// The most requests in one of those seconds.
    pub max: u64,
    /// Seconds with a request.
    busy: u64,
    /// The second being counted, and its requests so far.
    current: Option<(u64, u64)>,
}

impl RateProfile {
    /// Seconds kept one by one.
    pub(crate) const SHOWN: usize = 20;

    /// A request in `second` (nondecreasing from call to call).
    fn request(&mut self, second: u64) {
        if let Some(at) = usize::try_from(second).ok().filter(|at| *at < Self::SHOWN) {
            if self.first.len() <= at {
                self.first.resize(at + 1, 0);
            }
            self.first[at] += 1;
        }
        match &mut self.current {
            Some((at, count)) if *at == second => *count += 1,
            _ => {
                self.settle();
                self.current = Some((second, 1));
                self.seconds = second.saturating_add(1);
            }
        }
    }

    /// Count the second in progress.
    fn settle(&mut self) {
        if let Some((_, count)) = self.current.take() {
            self.min = if self.busy == 0 {
                count
            } else {
                self.min.min(count)
            };
            self.max = self.max.max(count);
            self.busy += 1;
        }
    }

    /// No more requests: a second without one makes the least 0.
    fn finish(&mut self) {
        let shown = usize::try_from(self.seconds).map_or(Self::SHOWN, |s| s.min(Self::SHOWN));
        self.first.resize(shown, 0);
        self.settle();
        if self.busy < self.seconds {
            self.min = 0;
        }
    }
}

/// Sessions open at once, counted over offsets: at one offset, the sessions
/// beginning there are counted open before the ones ending there close.
#[derive(Debug, Default)]
struct Peak {
    offset_us: u64,
    live: u64,
    begins: u64,
    ends: u64,
    peak: u64,
}

impl Peak {
    /// The records from here on are at `offset_us`: settle the earlier offset's.
    fn at(&mut self, offset_us: u64) {
        if offset_us == self.offset_us {
            return;
        }
        self.live += self.begins;
        self.peak = self.peak.max(self.live);
        self.live = self.live.saturating_sub(self.ends);
        (self.begins, self.ends, self.offset_us) = (0, 0, offset_us);
    }
}

#[cfg(test)]
mod tests {
    use super::RateProfile;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_profile_is_what_a_counter_per_second_says(
            mut seconds in proptest::collection::vec(0u64..60, 0..200),
        ) {
            seconds.sort_unstable();
            let mut profile = RateProfile::default();
            let mut counts: Vec<u64> = Vec::new();
            for &second in &seconds {
                profile.request(second);
                let at = second as usize;
                if counts.len() <= at {
                    counts.resize(at + 1, 0);
                }
                counts[at] += 1;
            }
            profile.finish();
            prop_assert_eq!(profile.seconds, counts.len() as u64);
            prop_assert_eq!(&profile.first[..], &counts[..counts.len().min(RateProfile::SHOWN)]);
            prop_assert_eq!(profile.min, counts.iter().copied().min().unwrap_or(0));
            prop_assert_eq!(profile.max, counts.iter().copied().max().unwrap_or(0));
        }
    }
}
