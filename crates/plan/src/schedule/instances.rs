//! Closed-model schedules (`instances_schedule`): the times at which new
//! instances start. After the last start time every further shot is due at 0,
//! as in the reference, so the ammo side decides how many shots there are.
//!
//! Steps are built as the reference's builder does (running instance count and
//! time), kept as closed-form segments: a billion-instance `step` costs one segment.

use std::sync::OnceLock;

use regex::Regex;

use crate::duration::parse_duration_ms;
use crate::error::{PlanError, Result};
use crate::pynum::py_trunc;
use tank_config::bounds::{grouped, MAX_INSTANCES};

const KEY: &str = "instances_schedule";

/// A run of start times.
#[derive(Debug, Clone, PartialEq)]
enum Segment {
    /// `count` instances start at `at_ms`.
    Repeat { at_ms: i64, count: u64 },
    /// Instance `i` starts at `int(start_ms + i * interval_ms)`.
    Ramp {
        start_ms: i64,
        interval_ms: f64,
        count: u64,
    },
    /// `stairs` groups of `per_stair` instances, group `k` at `first_ms + k * every_ms`.
    Stairs {
        first_ms: i64,
        every_ms: i64,
        per_stair: u64,
        stairs: u64,
    },
}

impl Segment {
    fn len(&self) -> u64 {
        match *self {
            Segment::Repeat { count, .. } | Segment::Ramp { count, .. } => count,
            Segment::Stairs {
                per_stair, stairs, ..
            } => per_stair.saturating_mul(stairs),
        }
    }

    fn offset_ms(&self, i: u64) -> i64 {
        match *self {
            Segment::Repeat { at_ms, .. } => at_ms,
            Segment::Ramp {
                start_ms,
                interval_ms,
                ..
            } => py_trunc(start_ms as f64 + i as f64 * interval_ms).unwrap_or(i64::MAX),
            Segment::Stairs {
                first_ms,
                every_ms,
                per_stair,
                ..
            } => first_ms.saturating_add(((i / per_stair) as i64).saturating_mul(every_ms)),
        }
    }
}

/// Start times of instances, then 0 forever.
///
/// Parsing checks the bounds of [`tank_config::bounds`]: at most
/// [`MAX_INSTANCES`] instances, started within
/// [`MAX_DURATION_MS`](tank_config::bounds::MAX_DURATION_MS).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InstancesSchedule {
    segments: Vec<(u64, Segment)>,
    starts: u64,
    instances: i64,
    duration_ms: i64,
}

impl InstancesSchedule {
    /// Parse the steps (already split by [`super::split_steps`]).
    pub fn parse(steps: &[String]) -> Result<Self> {
        let mut builder = InstancesSchedule::default();
        for step in steps {
            builder.add_step(step)?;
        }
        Ok(builder)
    }

    /// Number of scheduled start times (shots after them are due at 0).
    pub fn starts(&self) -> u64 {
        self.starts
    }

    /// Instances running once every step has been applied.
    pub fn instances(&self) -> i64 {
        self.instances
    }

    /// Time covered by the steps, ms.
    pub fn duration_ms(&self) -> i64 {
        self.duration_ms
    }

    /// Due time of shot `i`, ms: its instance's start time, or 0 after the last start.
    pub fn offset_ms(&self, i: u64) -> i64 {
        if i >= self.starts {
            return 0;
        }
        let at = self.segments.partition_point(|(first, _)| *first <= i) - 1;
        let (first, segment) = &self.segments[at];
        segment.offset_ms(i - first)
    }

    /// Add the start times of `segment`; `grown` more instances then run.
    fn push(&mut self, segment: Segment, grown: i64, step: &str) -> Result<()> {
        self.instances = self
            .instances
            .checked_add(grown)
            .filter(|n| *n <= i64::from(MAX_INSTANCES))
            .ok_or_else(|| {
                PlanError::schedule(
                    KEY,
                    step,
                    format!(
                        "would run more than {} instances: expected at most that many",
                        grouped(u64::from(MAX_INSTANCES))
                    ),
                )
            })?;
        let len = segment.len();
        if len > 0 {
            self.segments.push((self.starts, segment));
            // Every start is an instance, so this stays within MAX_INSTANCES.
            self.starts += len;
        }
        Ok(())
    }

    fn start(&mut self, count: i64, step: &str) -> Result<()> {
        let count = u64::try_from(count).map_err(|_| {
            PlanError::schedule(
                KEY,
                step,
                format!(
                    "would stop {} of the {} running instances: an instances schedule can only add instances",
                    count.unsigned_abs(),
                    self.instances
                ),
            )
        })?;
        let grown = i64::try_from(count).map_err(|_| overflow(step))?;
        self.push(
            Segment::Repeat {
                at_ms: self.duration_ms,
                count,
            },
            grown,
            step,
        )
    }

    fn wait(&mut self, duration_ms: i64, step: &str) -> Result<()> {
        self.duration_ms = super::extend_duration(self.duration_ms, duration_ms, KEY, step)?;
        Ok(())
    }

    fn ramp(&mut self, count: i64, duration_ms: i64, step: &str) -> Result<()> {
        if count < 0 {
            return self.start(count, step);
        }
        if count == 1 {
            return Err(PlanError::schedule(
                KEY,
                step,
                "a ramp of exactly 1 instance divides its duration by zero; use start(1) or at least 2 instances",
            ));
        }
        let interval_ms = duration_ms as f64 / (count - 1) as f64;
        self.push(
            Segment::Ramp {
                start_ms: self.duration_ms,
                interval_ms,
                count: count as u64,
            },
            count,
            step,
        )?;
        self.wait(duration_ms, step)
    }

    fn stairway(
        &mut self,
        from: i64,
        to: i64,
        size: i64,
        duration_ms: i64,
        step: &str,
    ) -> Result<()> {
        if size == 0 {
            return Err(PlanError::schedule(
                KEY,
                step,
                "the step size must not be 0",
            ));
        }
        let stairs = (to - from).div_euclid(size).max(0);
        self.start(from - self.instances, step)?;
        if stairs > 0 {
            // `stairs` times: wait(d) then start(size), as one closed-form segment.
            let first_ms = add(self.duration_ms, duration_ms, step)?;
            let grown = stairs.checked_mul(size).ok_or_else(|| overflow(step))?;
            self.push(
                Segment::Stairs {
                    first_ms,
                    every_ms: duration_ms,
                    per_stair: size as u64,
                    stairs: stairs as u64,
                },
                grown,
                step,
            )?;
            let waited = stairs
                .checked_mul(duration_ms)
                .ok_or_else(|| overflow(step))?;
            self.wait(waited, step)?;
        }
        if to != self.instances {
            self.wait(duration_ms, step)?;
            self.start(to - self.instances, step)?;
        }
        self.wait(duration_ms, step)
    }

    fn add_step(&mut self, step: &str) -> Result<()> {
        let (name, params) = super::split_call(KEY, step)?;
        let (pattern, usage) = match name {
            "ramp" => (&step_re()[0], "ramp(instances, duration)"),
            "const" => (&step_re()[0], "const(instances, duration)"),
            "line" => (
                &step_re()[1],
                "line(from_instances, to_instances, duration)",
            ),
            "step" => (
                &step_re()[2],
                "step(from_instances, to_instances, step_size, duration)",
            ),
            "wait" => (&step_re()[3], "wait(duration)"),
            "start" => (&step_re()[4], "start(instances)"),
            other => {
                return Err(PlanError::schedule(
                    KEY,
                    step,
                    format!(
                    "no such load type `{other}`: expected ramp, const, line, step, wait or start"
                ),
                ))
            }
        };
        let caps = pattern.captures(params).ok_or_else(|| {
            PlanError::schedule(
                KEY,
                step,
                format!(
                    "expected `{usage}` with whole numbers of instances and a duration like 30s"
                ),
            )
        })?;
        let int = |index: usize| -> Result<i64> {
            let found = caps
                .get(index)
                .ok_or_else(|| PlanError::schedule(KEY, step, format!("expected `{usage}`")))?;
            if let Some(cut) = super::cut_number(params, found.start(), found.end()) {
                return Err(super::cut_number_error(KEY, step, cut, found.as_str()));
            }
            if super::has_minus_before(params, found.start()) {
                return Err(PlanError::schedule(
                    KEY,
                    step,
                    format!(
                        "`-{}` is negative: expected a number of instances, 0 or more",
                        found.as_str()
                    ),
                ));
            }
            found.as_str().parse::<i64>().map_err(|_| {
                PlanError::schedule(
                    KEY,
                    step,
                    format!(
                        "`{}` is too large: expected at most {} instances",
                        found.as_str(),
                        grouped(u64::from(MAX_INSTANCES))
                    ),
                )
            })
        };
        // The duration is the last group. Its pattern repeats a token, so (as in
        // the reference) only the last token counts: `ramp(5, 1m30s)` lasts 30 s.
        let duration = || -> Result<i64> {
            // Only `wait(...)` has nothing before its duration but the `(`.
            let whole = caps.get(0).map_or(0, |m| m.start());
            if name == "wait" && super::has_minus_before(params, whole) {
                return Err(PlanError::schedule(
                    KEY,
                    step,
                    "the duration is negative: expected a duration of 0 or more",
                ));
            }
            let last = &caps[caps.len() - 1];
            parse_duration_ms(last).map_err(|message| PlanError::schedule(KEY, step, message))
        };
        match name {
            "ramp" => self.ramp(int(1)?, duration()?, step),
            "const" => {
                self.start(int(1)? - self.instances, step)?;
                self.wait(duration()?, step)
            }
            "line" => {
                let (from, to) = (int(1)?, int(2)?);
                self.start(from - self.instances - 1, step)?;
                self.ramp(to - from + 1, duration()?, step)
            }
            "step" => self.stairway(int(1)?, int(2)?, int(3)?, duration()?, step),
            "wait" => self.wait(duration()?, step),
            _ => self.start(int(1)?, step),
        }
    }
}

fn overflow(step: &str) -> PlanError {
    PlanError::schedule(KEY, step, "numbers too large")
}

fn add(a: i64, b: i64, step: &str) -> Result<i64> {
    a.checked_add(b).ok_or_else(|| overflow(step))
}

fn step_re() -> &'static [Regex; 5] {
    static RES: OnceLock<[Regex; 5]> = OnceLock::new();
    RES.get_or_init(|| {
        let duration = r"([0-9.]+[dhms]?)+\)";
        let build = |pattern: String| Regex::new(&pattern).expect("static regex");
        [
            build(format!(r"(\d+),\s*{duration}")),
            build(format!(r"(\d+),\s*(\d+),\s*{duration}")),
            build(format!(r"(\d+),\s*(\d+),\s*(\d+),\s*{duration}")),
            build(duration.to_string()),
            build(r"(\d+)\)".to_string()),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::split_steps;
    use proptest::prelude::*;
    use tank_config::bounds::MAX_DURATION_MS;

    fn take(schedule: &str, n: u64) -> Vec<i64> {
        let plan = InstancesSchedule::parse(&split_steps(schedule)).expect("valid schedule");
        (0..n).map(|i| plan.offset_ms(i)).collect()
    }

    #[test]
    fn ramp_spreads_starts_then_zeros() {
        assert_eq!(take("ramp(5, 4s)", 7), [0, 1000, 2000, 3000, 4000, 0, 0]);
        assert_eq!(
            take("ramp(5, 4s) wait(5s) ramp(5,4s)", 12),
            [0, 1000, 2000, 3000, 4000, 9000, 10000, 11000, 12000, 13000, 0, 0]
        );
        assert_eq!(
            take("wait(5s) ramp(5, 0)", 7),
            [5000, 5000, 5000, 5000, 5000, 0, 0]
        );
    }

    #[test]
    fn line_const_and_step_match_the_reference_builder() {
        assert_eq!(
            take("line(1, 9, 4s)", 12),
            [0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 0, 0, 0]
        );
        assert_eq!(
            take("const(3, 5s) line(7, 11, 2s)", 12),
            [0, 0, 0, 5000, 5000, 5000, 5000, 5500, 6000, 6500, 7000, 0]
        );
        assert_eq!(
            take("step(2, 10, 2, 3s)", 12),
            [0, 0, 3000, 3000, 6000, 6000, 9000, 9000, 12000, 12000, 0, 0]
        );
        let plan = InstancesSchedule::parse(&split_steps("step(100, 950, 100, 30s)")).unwrap();
        assert_eq!(plan.instances(), 950);
        assert_eq!(plan.duration_ms(), 10 * 30_000);
    }

    #[test]
    fn start_adds_instances_at_the_current_time() {
        assert_eq!(
            take("wait(2s) start(3) ramp(2,1s)", 6),
            [2000, 2000, 2000, 2000, 3000, 0]
        );
    }

    #[test]
    fn only_the_last_duration_token_counts() {
        assert_eq!(
            take("ramp(3, 1m30s) start(1)", 4),
            [0, 15_000, 30_000, 30_000]
        );
    }

    #[test]
    fn shrinking_is_an_error() {
        assert!(InstancesSchedule::parse(&split_steps("const(5,1s) const(3,1s)")).is_err());
        assert!(InstancesSchedule::parse(&split_steps("line(0, 5, 1s)")).is_err());
        assert!(InstancesSchedule::parse(&split_steps("ramp(1, 1s)")).is_err());
    }

    #[test]
    fn a_decimal_count_is_an_error_where_the_reference_takes_its_last_digits() {
        // `(\d+),` searched in "1.5, 2s)" finds "5,": 5 instances nobody wrote.
        let message = rejected("ramp(1.5, 2s)", "ramp(1.5, 2s)");
        assert!(message.starts_with("`1.5` is 1.5 as a number"), "{message}");
    }

    /// The error for `schedule`, which must name `step`.
    fn rejected(schedule: &str, step: &str) -> String {
        match InstancesSchedule::parse(&split_steps(schedule)) {
            Ok(_) => panic!("{schedule} was accepted"),
            Err(PlanError::Schedule {
                step: named,
                message,
                ..
            }) => {
                assert_eq!(named, step, "{schedule}: {message}");
                message
            }
            Err(other) => panic!("{schedule}: not a schedule error: {other}"),
        }
    }

    fn instances(schedule: &str) -> i64 {
        InstancesSchedule::parse(&split_steps(schedule))
            .unwrap_or_else(|e| panic!("{schedule}: {e}"))
            .instances()
    }

    #[test]
    fn every_step_starts_at_most_a_million_instances_in_all() {
        for at_bound in [
            "const(1000000,1s)",
            "ramp(1000000,1s)",
            "line(1,1000000,1s)",
            "step(0,1000000,1000,1s)",
            "start(1000000)",
            "const(500000,1s) start(500000)",
        ] {
            assert_eq!(instances(at_bound), 1_000_000, "{at_bound}");
        }
        let message = rejected("const(1000001,1s)", "const(1000001,1s)");
        assert_eq!(
            message,
            "would run more than 1,000,000 instances: expected at most that many"
        );
        rejected("ramp(1000001,1s)", "ramp(1000001,1s)");
        rejected("line(1,1000001,1s)", "line(1,1000001,1s)");
        rejected("step(0,1000001,1000,1s)", "step(0,1000001,1000,1s)");
        rejected("step(1,4000000000,1,1s)", "step(1,4000000000,1,1s)");
        rejected("const(500000,1s) start(500001)", "start(500001)");
        let message = rejected(
            "const(99999999999999999999,1s)",
            "const(99999999999999999999,1s)",
        );
        assert!(message.contains("at most 1,000,000 instances"), "{message}");
    }

    #[test]
    fn the_schedule_lasts_at_most_30_days() {
        let plan = InstancesSchedule::parse(&split_steps("ramp(2,15d) wait(15d)")).unwrap();
        assert_eq!(plan.duration_ms(), MAX_DURATION_MS);
        let message = rejected("ramp(2,15d) wait(15d) wait(0.001s)", "wait(0.001s)");
        assert!(message.contains("more than 30 days"), "{message}");
        rejected("const(5,2592000.001s)", "const(5,2592000.001s)");
        rejected("step(1,5,1,10d)", "step(1,5,1,10d)");
    }

    #[test]
    fn a_minus_sign_the_reference_would_drop_is_an_error() {
        let message = rejected("const(-5,1s)", "const(-5,1s)");
        assert_eq!(
            message,
            "`-5` is negative: expected a number of instances, 0 or more"
        );
        rejected("ramp(3,1s) start(-3)", "start(-3)");
        rejected("line(2,-9,1s)", "line(2,-9,1s)");
        let message = rejected("wait(-5s)", "wait(-5s)");
        assert!(message.contains("negative"), "{message}");
        assert_eq!(take("wait(x5s) start(1)", 1), [5000]);
    }

    #[test]
    fn a_number_the_stepper_reads_only_in_part_is_an_error() {
        let message = rejected("const(1e2,10s)", "const(1e2,10s)");
        assert_eq!(
            message,
            "`1e2` is 100 as a number, but yandex-tank's stepper, which plans the load, takes \
             only `2` from it: write the number in digits, like 100"
        );
        rejected("line(1, 1_0, 1s)", "line(1, 1_0, 1s)");
    }

    proptest! {
        #[test]
        fn stairway_segments_equal_the_unrolled_steps(from in 0i64..20, extra in 0i64..40, size in 1i64..7, secs in 0i64..4) {
            let to = from + extra;
            let plan = InstancesSchedule::parse(&split_steps(&format!("step({from},{to},{size},{secs}s)"))).unwrap();
            // Unrolled as the reference does it.
            let mut expected = vec![0i64; from as usize];
            let mut t = 0;
            let mut running = from;
            for _ in 0..(to - from) / size {
                t += secs * 1000;
                expected.extend(std::iter::repeat_n(t, size as usize));
                running += size;
            }
            if running != to {
                t += secs * 1000;
                expected.extend(std::iter::repeat_n(t, (to - running) as usize));
            }
            prop_assert_eq!(plan.starts() as usize, expected.len());
            for (i, at) in expected.iter().enumerate() {
                prop_assert_eq!(plan.offset_ms(i as u64), *at);
            }
            prop_assert_eq!(plan.instances(), to);
        }
    }
}
