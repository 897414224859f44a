//! Planned shots per unix second, for the per-second data.
//!
//! Counted in closed form ([`PlannedCount`]) as each second begins, from the
//! run's real start: the same time base as the shots sent (binned by their
//! start) and the responses (by their end), whatever fraction of a second the
//! run starts at. Nothing is listed up front, so a 10-hour plan costs nothing.

use tank_plan::PlannedCount;

/// The queues' planned shots per unix second.
pub struct Planned {
    counts: Vec<PlannedCount>,
    start_unix_us: u64,
    /// The next second to count.
    next: u64,
    /// The last second any plan has a shot in.
    last: u64,
}

impl Planned {
    /// The open-model queues' plans, started at `start_unix_us`.
    pub fn new(counts: Vec<PlannedCount>, start_unix_us: u64) -> Planned {
        let end_us = counts
            .iter()
            .map(|count| {
                let last_due_ms = count.last_due_ms().unwrap_or(0);
                start_unix_us
                    .saturating_add(u64::try_from(last_due_ms).unwrap_or(0).saturating_mul(1000))
            })
            .max()
            .unwrap_or(start_unix_us);
        Planned {
            counts,
            start_unix_us,
            next: start_unix_us / 1_000_000,
            last: end_us / 1_000_000,
        }
    }

    /// Shots planned in unix second `second`.
    pub fn in_second(&self, second: u64) -> u64 {
        let from = self.ms_before(second.saturating_mul(1_000_000));
        let to = self.ms_before(second.saturating_add(1).saturating_mul(1_000_000));
        self.counts.iter().map(|c| c.between_ms(from, to)).sum()
    }

    /// The smallest whole ms offset whose shot is due at or after `unix_us`:
    /// a shot at offset `ms` is due before `unix_us` exactly when `ms` is below it.
    fn ms_before(&self, unix_us: u64) -> i64 {
        let since_us = i128::from(unix_us) - i128::from(self.start_unix_us);
        // ceil(since_us / 1000), for either sign.
        let ms = -((-since_us).div_euclid(1000));
        i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
    }

    /// Seconds up to `now` not yet counted, with their counts (empty ones skipped).
    pub fn take_until(&mut self, now: u64) -> Vec<(u64, u64)> {
        let mut due = Vec::new();
        while self.next <= now.min(self.last) {
            let shots = self.in_second(self.next);
            if shots > 0 {
                due.push((self.next, shots));
            }
            self.next += 1;
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tank_plan::Schedule;

    fn count(text: &str) -> PlannedCount {
        match Schedule::rps(text) {
            Ok(Schedule::Rps(rps)) => {
                let len = rps.len();
                PlannedCount::new(rps, len)
            }
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_start_past_a_second_splits_the_plans_seconds_across_unix_seconds() {
        // const(10,2s): shots at 0, 100, ..., 1900 ms; the run starts at 100.270 s.
        let mut planned = Planned::new(vec![count("const(10,2s)")], 100_270_000);
        // 100.270 .. 100.999: shots at 0..=700 ms, 8 of them; 101.xxx: 10; 102.000 .. 102.170: 2.
        assert_eq!(planned.in_second(100), 8);
        assert_eq!(planned.in_second(101), 10);
        assert_eq!(planned.in_second(102), 2);
        assert_eq!(planned.in_second(99), 0);
        assert_eq!(planned.take_until(105), vec![(100, 8), (101, 10), (102, 2)]);
        assert!(planned.take_until(106).is_empty());
    }

    #[test]
    fn queues_add_up_and_a_whole_second_start_keeps_the_plans_seconds() {
        let planned = Planned::new(
            vec![count("const(10,2s)"), count("const(3,1s)")],
            50_000_000,
        );
        assert_eq!(planned.in_second(50), 13);
        assert_eq!(planned.in_second(51), 10);
    }
}
