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

use crate::schedule::RpsSchedule;
use crate::shard::Shard;

/// The planned count of an rps plan as a function of time.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCount {
    schedule: RpsSchedule,
    /// The plan's length: the schedule's, or fewer under `ammo_limit`.
    len: u64,
    /// The slice of the plan counted (the whole plan unless sharded).
    shard: Shard,
}

impl PlannedCount {
    /// The count of `schedule`'s shots, of which the plan fires the first `len`.
    pub fn new(schedule: RpsSchedule, len: u64) -> PlannedCount {
        let len = len.min(schedule.len());
        PlannedCount {
            schedule,
            len,
            shard: Shard::WHOLE,
        }
    }

    /// The count of `shard`'s slice of this plan: its shots `k ≡ I (mod N)`.
    pub fn sharded(self, shard: Shard) -> PlannedCount {
        PlannedCount { shard, ..self }
    }

    /// All the shots the plan holds.
    pub fn total(&self) -> u64 {
        self.shard.in_prefix(self.len)
    }

    /// The whole plan's length, before any sharding.
    pub fn whole_len(&self) -> u64 {
        self.len
    }

    /// When the plan's last shot is due, ms from the start (`None`: no shots).
    pub fn last_due_ms(&self) -> Option<i64> {
        let last = self.shard.nth(self.total().checked_sub(1)?);
        self.schedule.offset_ms(last)
    }

    /// When the plan's first shot is due, ms from the start (`None`: no shots).
    pub fn first_due_ms(&self) -> Option<i64> {
        if self.total() == 0 {
            return None;
        }
        self.schedule.offset_ms(self.shard.nth(0))
    }

    /// Shots due strictly before `ms` from the start (0 for `ms <= 0`).
    pub fn before_ms(&self, ms: i64) -> u64 {
        // Due times are non-decreasing in the shot index (each step's shots lie
        // within the step, and steps follow each other), so the shots due before
        // `ms` are a prefix: find its length.
        let (mut low, mut high) = (0u64, self.len);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.schedule.offset_ms(mid) {
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
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
