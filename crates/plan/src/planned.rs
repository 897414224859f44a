//! How many shots a plan holds before a given time, in closed form.
//!
//! The results thread asks this once a second for the second that just ended
//! (planned per unix second, so a start at .27 s past a second bins planned shots
//! as the sent and answered ones are binned), and the engine asks it for the
//! total. Neither walks the shots: an rps schedule's due times never decrease,
//! so "shots due before t" is a binary search over the shot index, each probe a
//! closed-form offset. A 10-hour plan costs the same as a 10-second one.
//!
//! Drawn arrivals (`arrivals = poisson`, …) are closed form too (see
//! `schedule::arrivals`): each probe costs one block's draws, and the count
//! is that of the drawn shots themselves, so the planned count of a second
//! is what the plan fires in it, not an expectation.
//!
//! A replay's due times are the capture's, which no formula gives: its count
//! is walked once before the run ([`DueHistogram`], shots per ms of due time),
//! for replays of up to [`DueHistogram::MAX_SPAN_MS`].

use std::sync::Arc;

use crate::schedule::RpsSchedule;
use crate::shard::Shard;

/// The planned count of an rps plan or a replay as a function of time.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCount {
    counted: Counted,
    /// The slice of the plan counted (the whole plan unless sharded).
    shard: Shard,
}

#[derive(Debug, Clone, PartialEq)]
enum Counted {
    /// An rps schedule, of which the plan fires the first `len` shots (the
    /// schedule's, or fewer under `ammo_limit`).
    Schedule { schedule: RpsSchedule, len: u64 },
    /// A replay's shots, walked: already the shard's.
    Walked(Arc<DueHistogram>),
}

/// A walked plan's shots per ms of due time: 4 bytes per ms of the plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DueHistogram {
    /// Shots due in each ms, from 0.
    per_ms: Vec<u32>,
    /// Shots due before each whole second (`before_second[s]`: before `s × 1000` ms).
    before_second: Vec<u64>,
    total: u64,
}

impl DueHistogram {
    /// The longest plan walked: an hour, 14 MB of counts.
    pub(crate) const MAX_SPAN_MS: u64 = 3_600_000;

    /// Count shots due at these ms; `None` once one is past [`Self::MAX_SPAN_MS`].
    #[cfg(test)]
    pub(crate) fn from_due_ms(due_ms: impl IntoIterator<Item = u64>) -> Option<DueHistogram> {
        let mut histogram = DueHistogram::default();
        for ms in due_ms {
            histogram.add(ms)?;
        }
        Some(histogram.finish())
    }

    /// Count one shot due at `ms`; `None` past [`Self::MAX_SPAN_MS`].
    pub(crate) fn add(&mut self, ms: u64) -> Option<()> {
        if ms > Self::MAX_SPAN_MS {
            return None;
        }
        let at = usize::try_from(ms).ok()?;
        if self.per_ms.len() <= at {
            self.per_ms.resize(at + 1, 0);
        }
        self.per_ms[at] = self.per_ms[at].saturating_add(1);
        self.total += 1;
        Some(())
    }

    /// Index the counts by second (after the last [`Self::add`]).
    pub(crate) fn finish(mut self) -> DueHistogram {
        let mut before = 0;
        self.before_second = self
            .per_ms
            .chunks(1000)
            .map(|second| {
                let at = before;
                before += second.iter().map(|n| u64::from(*n)).sum::<u64>();
                at
            })
            .collect();
        self
    }

    /// As a planned count.
    pub(crate) fn into_count(self) -> PlannedCount {
        PlannedCount {
            counted: Counted::Walked(Arc::new(self)),
            shard: Shard::WHOLE,
        }
    }

    fn before_ms(&self, ms: i64) -> u64 {
        let Ok(ms) = usize::try_from(ms) else {
            return 0;
        };
        if ms >= self.per_ms.len() {
            return self.total;
        }
        let second = ms / 1000;
        let within: u64 = self.per_ms[second * 1000..ms]
            .iter()
            .map(|n| u64::from(*n))
            .sum();
        self.before_second[second] + within
    }

    fn first_ms(&self) -> Option<i64> {
        let at = self.per_ms.iter().position(|n| *n > 0)?;
        i64::try_from(at).ok()
    }

    fn last_ms(&self) -> Option<i64> {
        let at = self.per_ms.iter().rposition(|n| *n > 0)?;
        i64::try_from(at).ok()
    }
}

impl PlannedCount {
    /// The count of `schedule`'s shots, of which the plan fires the first `len`.
    pub fn new(schedule: RpsSchedule, len: u64) -> PlannedCount {
        let len = len.min(schedule.len());
        PlannedCount {
            counted: Counted::Schedule { schedule, len },
            shard: Shard::WHOLE,
        }
    }

    /// The count of `shard`'s slice of this plan: its shots `k ≡ I (mod N)`.
    /// A replay's walked count is already its shard's (the plan walks the
    /// shard's own sessions) and is returned as it is.
    pub fn sharded(self, shard: Shard) -> PlannedCount {
        match self.counted {
            Counted::Schedule { .. } => PlannedCount { shard, ..self },
            Counted::Walked(_) => self,
        }
    }

    /// All the shots the plan holds.
    pub fn total(&self) -> u64 {
        match &self.counted {
            Counted::Schedule { len, .. } => self.shard.in_prefix(*len),
            Counted::Walked(histogram) => histogram.total,
        }
    }

    /// The whole plan's length, before any sharding (a replay's: this count's).
    pub fn whole_len(&self) -> u64 {
        match &self.counted {
            Counted::Schedule { len, .. } => *len,
            Counted::Walked(histogram) => histogram.total,
        }
    }

    /// When the plan's last shot is due, ms from the start (`None`: no shots).
    pub fn last_due_ms(&self) -> Option<i64> {
        match &self.counted {
            Counted::Schedule { schedule, .. } => {
                let last = self.shard.nth(self.total().checked_sub(1)?);
                schedule.offset_ms(last)
            }
            Counted::Walked(histogram) => histogram.last_ms(),
        }
    }

    /// When the plan's first shot is due, ms from the start (`None`: no shots).
    pub fn first_due_ms(&self) -> Option<i64> {
        match &self.counted {
            Counted::Schedule { schedule, .. } => {
                if self.total() == 0 {
                    return None;
                }
                schedule.offset_ms(self.shard.nth(0))
            }
            Counted::Walked(histogram) => histogram.first_ms(),
        }
    }

    /// Shots due strictly before `ms` from the start (0 for `ms <= 0`).
    pub fn before_ms(&self, ms: i64) -> u64 {
        let (schedule, len) = match &self.counted {
            Counted::Schedule { schedule, len } => (schedule, *len),
            Counted::Walked(histogram) => return histogram.before_ms(ms),
        };
        // Due times are non-decreasing in the shot index (each step's shots lie
        // within the step, and steps follow each other), so the shots due before
        // `ms` are a prefix: find its length.
        let (mut low, mut high) = (0u64, len);
        while low < high {
            let mid = low + (high - low) / 2;
            match schedule.offset_ms(mid) {
                Some(due) if due < ms => low = mid + 1,
                _ => high = mid,
            }
        }
        self.shard.in_prefix(low)
    }

    /// Shots due in `[from_ms, to_ms)` from the start.
    pub fn between_ms(&self, from_ms: i64, to_ms: i64) -> u64 {
        self.before_ms(to_ms)
            .saturating_sub(self.before_ms(from_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Schedule;
    use proptest::prelude::*;

    fn rps(text: &str) -> RpsSchedule {
        match Schedule::rps(text) {
            Ok(Schedule::Rps(schedule)) => schedule,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn counts_the_shots_due_before_a_time() {
        // const(3,2s): 0, 333, 666, 1000, 1333, 1666.
        let count = PlannedCount::new(rps("const(3,2s)"), u64::MAX);
        assert_eq!(count.total(), 6);
        assert_eq!(count.last_due_ms(), Some(1666));
        assert_eq!(count.before_ms(0), 0);
        assert_eq!(count.before_ms(1), 1);
        assert_eq!(count.before_ms(333), 1);
        assert_eq!(count.before_ms(334), 2);
        assert_eq!(count.before_ms(1000), 3);
        assert_eq!(count.before_ms(1_000_000), 6);
        assert_eq!(count.between_ms(270, 1270), 3);
    }

    #[test]
    fn an_ammo_limit_caps_the_count() {
        let count = PlannedCount::new(rps("const(10,10s)"), 15);
        assert_eq!(count.total(), 15);
        assert_eq!(count.last_due_ms(), Some(1400));
        assert_eq!(
            PlannedCount::new(rps("const(10,10s)"), 0).last_due_ms(),
            None
        );
        assert_eq!(count.before_ms(1000), 10);
        assert_eq!(count.before_ms(60_000), 15);
    }

    #[test]
    fn a_walked_count_answers_any_window() {
        let count = DueHistogram::from_due_ms([0, 0, 999, 1000, 1500, 2999])
            .unwrap()
            .into_count();
        assert_eq!(count.total(), 6);
        assert_eq!(
            (count.first_due_ms(), count.last_due_ms()),
            (Some(0), Some(2999))
        );
        assert_eq!(count.before_ms(0), 0);
        assert_eq!(count.before_ms(1), 2);
        assert_eq!(count.before_ms(1000), 3);
        assert_eq!(count.between_ms(270, 1270), 2);
        assert_eq!(count.before_ms(10_000), 6);
        assert_eq!(count.before_ms(-5), 0);
        assert!(DueHistogram::from_due_ms([DueHistogram::MAX_SPAN_MS + 1]).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// A walked count equals a walk over the due times, for any window.
        #[test]
        fn a_walked_count_equals_the_walk(
            mut due in proptest::collection::vec(0u64..5_000, 0..200),
            from in -500i64..6_000, width in 0i64..3_000,
        ) {
            due.sort_unstable();
            let count = DueHistogram::from_due_ms(due.iter().copied()).unwrap().into_count();
            let to = from + width;
            let inside = due.iter().filter(|ms| (from..to).contains(&(**ms as i64))).count() as u64;
            prop_assert_eq!(count.between_ms(from, to), inside);
            prop_assert_eq!(count.total(), due.len() as u64);
        }

        /// The closed form equals a walk over every shot, for any window.
        #[test]
        fn equals_a_walk_over_the_shots(
            a in 0u32..300, b in 0u32..300, secs in 1u32..20, c in 1u32..300,
            cap in 0u64..20_000, from in -500i64..25_000, width in 0i64..5_000,
        ) {
            let text = format!("line({a},{b},{secs}s) const({c},2s) step(5,25,5,1s)");
            let schedule = rps(&text);
            let count = PlannedCount::new(schedule.clone(), cap);
            let to = from + width;
            let walked = (0..schedule.len().min(cap))
                .filter_map(|i| schedule.offset_ms(i))
                .filter(|due| (from..to).contains(due))
                .count() as u64;
            prop_assert_eq!(count.between_ms(from, to), walked);
        }

        /// A shard's count is the walk over its own shots, and the shards' counts
        /// add up to the whole plan's in every window.
        #[test]
        fn shards_count_their_slice_and_add_up(
            a in 0u32..300, secs in 1u32..20, cap in 0u64..8_000, shards in 1u64..9,
            from in -500i64..25_000, width in 0i64..5_000,
        ) {
            let schedule = rps(&format!("line(1,{a},{secs}s) const(7,3s)"));
            let whole = PlannedCount::new(schedule.clone(), cap);
            let to = from + width;
            let mut sum = 0;
            let mut total = 0;
            for index in 0..shards {
                let shard = Shard::new(index, shards).unwrap();
                let count = whole.clone().sharded(shard);
                let walked: Vec<i64> = (0..schedule.len().min(cap))
                    .filter(|k| shard.owns(*k))
                    .filter_map(|k| schedule.offset_ms(k))
                    .collect();
                prop_assert_eq!(count.total(), walked.len() as u64);
                prop_assert_eq!(count.first_due_ms(), walked.first().copied());
                prop_assert_eq!(count.last_due_ms(), walked.last().copied());
                let inside = walked.iter().filter(|due| (from..to).contains(*due)).count() as u64;
                prop_assert_eq!(count.between_ms(from, to), inside);
                sum += inside;
                total += count.total();
            }
            prop_assert_eq!(sum, whole.between_ms(from, to));
            prop_assert_eq!(total, whole.total());
        }
    }
}
