//! Planned shots per unix second, for the per-second data.
//!
//! Counted in closed form ([`PlannedCount`]) as each second begins, from the
//! run's real start: the same time base as the shots sent (binned by their
//! start) and the responses (by their end), whatever fraction of a second the
//! run starts at. Nothing is listed up front, so a 10-hour plan costs nothing.
//! A merge counts several plans, each from its own shard's start; seconds in
//! which no plan has a shot are skipped, not walked, so shards whose starts lie
//! years apart cost no more than their plans.

use tank_plan::PlannedCount;

/// How long before a stop a shot must have been due to count as one the run
/// was behind on ([`Planned::due_well_before`]).
const STOP_GRACE_US: u64 = 1_000_000;

/// One plan, started at a unix time.
#[derive(Debug, Clone)]
struct Part {
    count: PlannedCount,
    start_unix_us: u64,
    /// The first and last unix seconds with one of its shots due.
    seconds: Option<(u64, u64)>,
}

impl Part {
    fn new(count: PlannedCount, start_unix_us: u64) -> Part {
        let at = |due_ms: Option<i64>| {
            let ms = u64::try_from(due_ms?).unwrap_or(0);
            Some(start_unix_us.saturating_add(ms.saturating_mul(1000)) / 1_000_000)
        };
        let seconds = at(count.first_due_ms()).zip(at(count.last_due_ms()));
        Part {
            count,
            start_unix_us,
            seconds,
        }
    }

    fn in_second(&self, second: u64) -> u64 {
        let from = ms_before(second.saturating_mul(1_000_000), self.start_unix_us);
        let to = ms_before(
            second.saturating_add(1).saturating_mul(1_000_000),
            self.start_unix_us,
        );
        self.count.between_ms(from, to)
    }
}

/// The smallest whole ms offset from `start_us` whose shot is due at or after
/// `unix_us`: a shot at offset `ms` is due before `unix_us` exactly when `ms`
/// is below it.
fn ms_before(unix_us: u64, start_us: u64) -> i64 {
    let since_us = i128::from(unix_us) - i128::from(start_us);
    // ceil(since_us / 1000), for either sign.
    let ms = -((-since_us).div_euclid(1000));
    i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
}

/// The plans' planned shots per unix second.
#[derive(Debug, Clone)]
pub struct Planned {
    parts: Vec<Part>,
    /// The next second to count.
    next: u64,
}

impl Planned {
    /// The open-model queues' plans, all started at `start_unix_us`.
    pub fn new(counts: Vec<PlannedCount>, start_unix_us: u64) -> Planned {
        Planned::of_parts(counts.into_iter().map(|c| (c, start_unix_us)).collect())
    }

    /// Plans each started at its own time (the shards of a test).
    pub fn of_parts(parts: Vec<(PlannedCount, u64)>) -> Planned {
        let parts: Vec<Part> = parts
            .into_iter()
            .map(|(count, start)| Part::new(count, start))
            .collect();
        let next = parts
            .iter()
            .filter_map(|p| p.seconds.map(|(first, _)| first))
            .min()
            .unwrap_or(u64::MAX);
        Planned { parts, next }
    }

    /// Shots planned in unix second `second`.
    pub fn in_second(&self, second: u64) -> u64 {
        self.parts.iter().map(|p| p.in_second(second)).sum()
    }

    /// Shots the plans have due before `unix_us` (µs since the Unix epoch).
    pub fn due_before(&self, unix_us: u64) -> u64 {
        self.parts
            .iter()
            .map(|p| p.count.before_ms(ms_before(unix_us, p.start_unix_us)))
            .sum()
    }

    /// Shots the plans had due over a second before a stop at `stop_unix_us`:
    /// those a stopped run was behind on. A shot due a moment before a Ctrl-C,
    /// and waiting for a moment (lag), was not unsent for want of an instance.
    pub fn due_well_before(&self, stop_unix_us: u64) -> u64 {
        self.due_before(stop_unix_us.saturating_sub(STOP_GRACE_US))
    }

    /// The first second at or after `second` in which some plan has a shot due.
    fn next_busy(&self, second: u64) -> Option<u64> {
        self.parts
            .iter()
            .filter_map(|p| {
                let (first, last) = p.seconds?;
                (last >= second).then_some(first.max(second))
            })
            .min()
    }

    /// Seconds up to `now` not yet counted, with their counts (empty ones skipped).
    pub fn take_until(&mut self, now: u64) -> Vec<(u64, u64)> {
        let mut due = Vec::new();
        while let Some(second) = self.next_busy(self.next).filter(|s| *s <= now) {
            let shots = self.in_second(second);
            if shots > 0 {
                due.push((second, shots));
            }
            self.next = second.saturating_add(1);
            if second == u64::MAX {
                self.parts.clear();
            }
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
    fn plans_started_years_apart_are_counted_without_walking_the_years_between() {
        // One shard's start read 1970 (a broken clock or a broken file), another's now.
        let now_s = 1_790_000_000;
        let mut planned = Planned::of_parts(vec![
            (count("const(10,2s)"), 0),
            (count("const(10,2s)"), now_s * 1_000_000),
            (count("const(10,2s)"), u64::MAX),
        ]);
        let seconds: Vec<u64> = planned
            .take_until(u64::MAX)
            .iter()
            .map(|(s, _)| *s)
            .collect();
        // The last plan's shots all saturate into one second past the end of time.
        assert_eq!(seconds[..4], [0, 1, now_s, now_s + 1]);
        assert!(seconds.len() <= 5, "{seconds:?}");
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
