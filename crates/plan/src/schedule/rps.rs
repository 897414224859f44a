//! Open-model schedules (`rps_schedule`): `const`, `line`, `step`, played one after another.
//!
//! Each step is closed-form: `len()` and `offset(i)` are computed, never listed,
//! so a 10-hour plan costs the same memory as a 10-second one. The arithmetic
//! repeats the reference's float operations in the same order, because the
//! truncated millisecond values (and so the stpd bytes) depend on it.

use std::sync::OnceLock;

use regex::Regex;

use super::arrivals::{BlockCursor, Drawn};
use super::waveform;
use crate::duration::parse_duration_ms;
use crate::error::{PlanError, Result};
use crate::pynum::{py_float, py_trunc};
use tank_config::bounds::{grouped, MAX_DURATION_MS, MAX_RPS, MAX_SHOTS, MAX_STEPS};

const KEY: &str = "rps_schedule";

/// One step of an rps schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum RpsStep {
    /// `const(rps, duration)`: evenly spaced shots.
    Const {
        /// Requests per second.
        rps: f64,
        /// Step duration, ms.
        duration_ms: i64,
    },
    /// `line(from, to, duration)`: rate grows (or falls) linearly.
    Line {
        /// Starting rate.
        from: f64,
        /// Final rate.
        to: f64,
        /// Step duration in seconds (`ms / 1000.0`, as the reference keeps it).
        duration_s: f64,
        /// `(to - from) / duration_s`.
        slope: f64,
    },
}

impl RpsStep {
    pub(crate) fn constant(rps: f64, duration_ms: i64) -> Self {
        RpsStep::Const { rps, duration_ms }
    }

    fn line(from: f64, to: f64, duration_ms: i64, step: &str) -> Result<Self> {
        let duration_s = duration_ms as f64 / 1000.0;
        if duration_s == 0.0 {
            return Err(PlanError::schedule(
                KEY,
                step,
                "a line needs a non-zero duration (the rate's slope divides by it)",
            ));
        }
        Ok(RpsStep::Line {
            from,
            to,
            duration_s,
            slope: (to - from) / duration_s,
        })
    }

    /// Number of shots in this step.
    pub fn len(&self) -> u64 {
        let count = match *self {
            RpsStep::Const { rps, duration_ms } if rps != 0.0 => rps * duration_ms as f64 / 1000.0,
            RpsStep::Const { .. } => 0.0,
            RpsStep::Line {
                from,
                to,
                duration_s,
                ..
            } => (to + from) / 2.0 * duration_s,
        };
        // Saturates: an absurd count is caught by the schedule's shot limit.
        py_trunc(count).map_or(u64::MAX, |n| n.max(0) as u64)
    }

    /// Whether the step fires no shots (it still takes its duration).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Offset of shot `i` (0-based, `i < len()`) from the step's start, ms.
    pub fn offset_ms(&self, i: u64) -> i64 {
        let i = i as f64;
        let at = match *self {
            RpsStep::Const { rps, .. } => i * (1000.0 / rps),
            RpsStep::Line { from, slope, .. } => {
                // The larger root of (slope/2)·x² + from·x − i = 0, computed as the
                // reference's solve_quadratic does; a flat line divides instead.
                let a = slope / 2.0;
                let seconds = if a == 0.0 {
                    i / from
                } else {
                    let (b, c) = (from, -i);
                    let disc = (b * b - 4.0 * a * c).sqrt();
                    (-b + disc) / (2.0 * a)
                };
                seconds * 1000.0
            }
        };
        py_trunc(at).unwrap_or(i64::MAX)
    }

    /// Offset from the step's start, ns, of operational time `u` (the
    /// schedule's cumulative planned count since the step's start, as a real
    /// number): Λ⁻¹(u), the time by which the step has planned `u` shots. For
    /// `u = i` this is where [`Self::offset_ms`] puts shot `i`, before its
    /// truncation to ms. Clamped to the step, strictly before its end, so a
    /// shot never reaches into the next step, nor onto the queue's deadline.
    pub(crate) fn offset_ns_at(&self, u: f64) -> i64 {
        let seconds = match *self {
            RpsStep::Const { rps, .. } => u / rps,
            RpsStep::Line { from, slope, .. } => {
                let a = slope / 2.0;
                if a == 0.0 {
                    u / from
                } else {
                    (-from + (from * from + 4.0 * a * u).max(0.0).sqrt()) / (2.0 * a)
                }
            }
        };
        let last = (self.duration_ms().saturating_mul(1_000_000) - 1).max(0);
        py_trunc(seconds * 1e9).map_or(last, |ns| ns.clamp(0, last))
    }

    /// How far this step moves the steps after it, ms.
    pub fn duration_ms(&self) -> i64 {
        match *self {
            RpsStep::Const { duration_ms, .. } => duration_ms,
            // int(T * 1000) with T = ms / 1000.0: 1001 ms gives 1000, as in the reference.
            RpsStep::Line { duration_s, .. } => py_trunc(duration_s * 1000.0).unwrap_or(i64::MAX),
        }
    }

    /// Planned rate at the step's start and end (for summaries).
    pub fn rates(&self) -> (f64, f64) {
        match *self {
            RpsStep::Const { rps, .. } => (rps, rps),
            RpsStep::Line { from, to, .. } => (from, to),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Segment {
    step: RpsStep,
    /// Shots before this step.
    first: u64,
    /// Shots in this step.
    len: u64,
    /// Start of this step, ms from the start of the test.
    base_ms: i64,
}

/// Where an in-order walk over a schedule's shots is: the step of the last
/// shot looked up, and for drawn arrivals the block. Any cursor gives the
/// right answer; the one of the previous shot gives it soonest.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cursor {
    step: usize,
    block: BlockCursor,
}

/// A whole rps schedule: its steps with their starting offsets and shot indices.
///
/// Its shots are evenly spaced within each step (phantom's stepper), or
/// spaced by drawn gaps ([`RpsSchedule::with_arrivals`]); either way each
/// step has the same number of shots, and shot `i`'s time is closed form.
///
/// Parsing checks the bounds of [`tank_config::bounds`]: every rate at most
/// [`MAX_RPS`], the schedule at most [`MAX_DURATION_MS`] long, with at most
/// [`MAX_SHOTS`] shots in at most [`MAX_STEPS`] steps, so every schedule that
/// parses ends, and soon enough to be run.
#[derive(Debug, Clone, PartialEq)]
pub struct RpsSchedule {
    segments: Vec<Segment>,
    len: u64,
    duration_ms: i64,
    /// Drawn arrivals; `None`: evenly spaced.
    arrivals: Option<Drawn>,
    /// Whether a `random(...)` step drew its rates from the schedule's seed.
    random_from_seed: bool,
}

impl RpsSchedule {
    /// Parse the steps (already split by [`super::split_steps`]); a
    /// `random(...)` step without a seed of its own draws from seed 0.
    pub fn parse(steps: &[String]) -> Result<Self> {
        Self::parse_seeded(steps, 0)
    }

    /// Parse the steps; a `random(...)` step without a seed of its own draws
    /// from `seed` (a queue's `arrivals_seed`) and its place in the schedule.
    pub(crate) fn parse_seeded(steps: &[String], seed: u64) -> Result<Self> {
        let mut schedule = RpsSchedule {
            segments: Vec::with_capacity(steps.len()),
            len: 0,
            duration_ms: 0,
            arrivals: None,
            random_from_seed: false,
        };
        let mut parsed = Vec::new();
        for step in steps {
            parsed.clear();
            schedule.random_from_seed |=
                parse_step(step, schedule.segments.len(), seed, &mut parsed)?;
            for one in parsed.drain(..) {
                schedule.push(one, step)?;
            }
        }
        Ok(schedule)
    }

    /// Lay `step` after the steps so far; `text` is the step as written, for errors.
    fn push(&mut self, step: RpsStep, text: &str) -> Result<()> {
        if self.segments.len() >= MAX_STEPS {
            return Err(too_many_steps(text));
        }
        let len = step.len();
        let duration = step.duration_ms();
        let first = self.len;
        self.len = self
            .len
            .checked_add(len)
            .filter(|n| *n <= MAX_SHOTS)
            .ok_or_else(|| {
                PlanError::schedule(
                    KEY,
                    text,
                    format!(
                        "the schedule would fire more than {} shots by the end of this step: expected at most \
                         that many in one queue (a lower rate or a shorter duration)",
                        grouped(MAX_SHOTS)
                    ),
                )
            })?;
        let base_ms = self.duration_ms;
        self.duration_ms = super::extend_duration(self.duration_ms, duration, KEY, text)?;
        self.segments.push(Segment {
            step,
            first,
            len,
            base_ms,
        });
        Ok(())
    }

    /// The same steps, their shots spaced by `arrivals` (uniform: evenly, as parsed).
    pub(crate) fn with_arrivals(self, arrivals: &tank_config::Arrivals) -> Self {
        RpsSchedule {
            arrivals: Drawn::new(arrivals),
            ..self
        }
    }

    /// Whether the plan depends on the seed it was parsed with: its shots
    /// are drawn, or a `random(...)` step drew its rates from it.
    pub fn uses_seed(&self) -> bool {
        self.arrivals.is_some() || self.random_from_seed
    }

    /// Total number of shots.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the schedule fires nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Total duration, ms (the sum of the steps' durations).
    pub fn duration_ms(&self) -> i64 {
        self.duration_ms
    }

    /// The steps in order.
    pub fn steps(&self) -> impl Iterator<Item = &RpsStep> {
        self.segments.iter().map(|s| &s.step)
    }

    /// Due time of shot `i` in ms from the start (truncated), or `None` past the end.
    pub fn offset_ms(&self, i: u64) -> Option<i64> {
        let cursor = &mut Cursor::default();
        let (index, segment) = self.segment_of(i, cursor)?;
        Some(match &self.arrivals {
            None => segment
                .base_ms
                .saturating_add(segment.step.offset_ms(i - segment.first)),
            Some(drawn) => self
                .drawn_ns(index, segment, drawn, i, cursor)
                .div_euclid(1_000_000),
        })
    }

    /// Due time of shot `i` in ns from the start, or `None` past the end: the
    /// ms of [`Self::offset_ms`] for evenly spaced shots (phantom plans in ms),
    /// to the ns for drawn ones (whose gaps at high rates are well under a ms).
    /// For callers that walk the shots in order: `cursor` remembers where the
    /// previous lookup was, so the usual case costs no search and no redraw.
    pub fn offset_ns_near(&self, i: u64, cursor: &mut Cursor) -> Option<i64> {
        let (index, segment) = self.segment_of(i, cursor)?;
        Some(match &self.arrivals {
            None => segment
                .base_ms
                .saturating_add(segment.step.offset_ms(i - segment.first))
                .saturating_mul(1_000_000),
            Some(drawn) => self.drawn_ns(index, segment, drawn, i, cursor),
        })
    }

    /// Shot `i`'s segment and its index, starting the search at `cursor`'s.
    fn segment_of(&self, i: u64, cursor: &mut Cursor) -> Option<(usize, &Segment)> {
        if i >= self.len {
            return None;
        }
        let covers = |at: usize| {
            self.segments
                .get(at)
                .is_some_and(|s| s.first <= i && i - s.first < s.len)
        };
        if !covers(cursor.step) {
            // The last segment whose first index is <= i (it has shots, since i < len).
            cursor.step = self.segments.partition_point(|s| s.first <= i) - 1;
        }
        Some((cursor.step, &self.segments[cursor.step]))
    }

    /// Shot `i`'s due time in ns, its gap drawn.
    fn drawn_ns(
        &self,
        index: usize,
        segment: &Segment,
        drawn: &Drawn,
        i: u64,
        cursor: &mut Cursor,
    ) -> i64 {
        let u = drawn.position(index, segment.len, i - segment.first, &mut cursor.block);
        segment
            .base_ms
            .saturating_mul(1_000_000)
            .saturating_add(segment.step.offset_ns_at(u))
    }
}

fn number_re() -> &'static [Regex; 3] {
    static RES: OnceLock<[Regex; 3]> = OnceLock::new();
    RES.get_or_init(|| {
        // The reference's patterns, searched (not anchored) in the text after `(`.
        let duration = r"((?:[0-9.]+d)?(?:[0-9.]+h)?(?:[0-9.]+m)?(?:[0-9.]+s?)?)";
        let build = |pattern: String| Regex::new(&pattern).expect("static regex");
        [
            build(format!(r"([0-9.]+),\s*{duration}\)")),
            build(format!(r"([0-9.]+),\s*([0-9.]+),\s*{duration}\)")),
            build(format!(
                r"([0-9.]+),\s*([0-9.]+),\s*([0-9.]+),\s*{duration}\)"
            )),
        ]
    })
}

/// Parse one step into `out` (a stairway or a waveform gives one step per
/// stair or interval); `before` steps are already in the schedule; `seed`
/// draws `random` steps that name none (returns whether it did).
fn parse_step(step: &str, before: usize, seed: u64, out: &mut Vec<RpsStep>) -> Result<bool> {
    let (name, params) = super::split_call(KEY, step)?;
    if waveform::NAMES.contains(&name) {
        let room = MAX_STEPS.saturating_sub(before);
        let seed = crate::splitmix::mix(seed.wrapping_add(before as u64));
        return waveform::expand(name, params, step, room, seed, out);
    }
    let (pattern, usage) = match name {
        "const" => (&number_re()[0], "const(rps, duration)"),
        "line" => (&number_re()[1], "line(from_rps, to_rps, duration)"),
        "step" => (
            &number_re()[2],
            "step(from_rps, to_rps, increment, duration)",
        ),
        other => {
            return Err(PlanError::schedule(
                KEY,
                step,
                format!(
                    "no such load type `{other}`: expected const, line, step, random, trace \
                     or trace_file"
                ),
            ))
        }
    };
    let caps = pattern.captures(params).ok_or_else(|| {
        PlanError::schedule(
            KEY,
            step,
            format!(
                "expected `{usage}`: numbers like 10 or 2.5, each followed directly by a comma, \
                 and a duration like 30s, 1m30s or 0.5h"
            ),
        )
    })?;
    let groups = caps.len() - 1;
    let mut numbers = [0.0f64; 3];
    for (slot, index) in numbers.iter_mut().zip(1..groups) {
        let Some(found) = caps.get(index) else {
            continue;
        };
        let text = found.as_str();
        if let Some(cut) = super::cut_number(params, found.start(), found.end()) {
            return Err(super::cut_number_error(KEY, step, cut, text));
        }
        // The pattern has no sign, so the reference reads `-5` as 5: refuse it instead.
        if super::has_minus_before(params, found.start()) {
            return Err(PlanError::schedule(
                KEY,
                step,
                format!("`-{text}` is negative: expected a number of 0 or more"),
            ));
        }
        *slot = py_float(text)
            .ok_or_else(|| PlanError::schedule(KEY, step, format!("`{text}` is not a number")))?;
    }
    let duration_ms = parse_duration_ms(&caps[groups])
        .map_err(|message| PlanError::schedule(KEY, step, message))?;
    if duration_ms > MAX_DURATION_MS {
        return Err(PlanError::schedule(
            KEY,
            step,
            format!(
                "`{}` is longer than 30 days: expected a duration of at most 30d",
                &caps[groups]
            ),
        ));
    }
    // The rates: const's one, line's and step's first two (step's third is its increment).
    let rates = if name == "const" { 1 } else { 2 };
    if let Some(index) = (0..rates).find(|i| numbers[*i] > MAX_RPS) {
        return Err(PlanError::schedule(
            KEY,
            step,
            format!(
                "rate `{}` is too high: expected at most {} shots a second in one queue \
                 (spread a larger load over several queues)",
                &caps[index + 1],
                grouped(MAX_RPS as u64)
            ),
        ));
    }
    match name {
        "const" => out.push(RpsStep::constant(numbers[0], duration_ms)),
        "line" => out.push(RpsStep::line(numbers[0], numbers[1], duration_ms, step)?),
        _ => stairway(
            numbers[0],
            numbers[1],
            numbers[2],
            duration_ms,
            MAX_STEPS.saturating_sub(before),
            step,
            out,
        )?,
    }
    Ok(false)
}

fn too_many_steps(step: &str) -> PlanError {
    PlanError::schedule(
        KEY,
        step,
        format!(
            "the schedule would have more than {} steps (each stair of a `step` counts): \
             expected at most that many",
            grouped(MAX_STEPS as u64)
        ),
    )
}

/// `step(from, to, increment, duration)`: const stairs from `from` toward `to`,
/// plus a last stair at exactly `to` when the increment does not land on it.
/// At most `room` stairs fit in the schedule.
fn stairway(
    from: f64,
    to: f64,
    increment: f64,
    duration_ms: i64,
    room: usize,
    step: &str,
    out: &mut Vec<RpsStep>,
) -> Result<()> {
    let increment = if to < from { -increment } else { increment };
    if increment == 0.0 {
        return Err(PlanError::schedule(
            KEY,
            step,
            "the increment must not be 0",
        ));
    }
    // `stairs + 1` stairs, and maybe one more at `to`.
    let stairs = py_trunc((to - from) / increment)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n < room)
        .ok_or_else(|| too_many_steps(step))?;
    for i in 0..=stairs {
        out.push(RpsStep::constant(from + i as f64 * increment, duration_ms));
    }
    let last = from + stairs as f64 * increment;
    if (increment > 0.0 && last < to) || (increment < 0.0 && last > to) {
        out.push(RpsStep::constant(to, duration_ms));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::split_steps;
    use proptest::prelude::*;

    fn offsets(schedule: &str) -> Vec<i64> {
        let plan = RpsSchedule::parse(&split_steps(schedule)).expect("valid schedule");
        (0..plan.len())
            .map(|i| plan.offset_ms(i).expect("in range"))
            .collect()
    }

    #[test]
    fn const_spaces_shots_by_truncated_interval() {
        assert_eq!(offsets("const(3,2s)"), [0, 333, 666, 1000, 1333, 1666]);
        assert_eq!(offsets("const(0.5,10s)"), [0, 2000, 4000, 6000, 8000]);
    }

    #[test]
    fn line_follows_the_quadratic_root() {
        let all = offsets("line(1,10,7s)");
        assert_eq!(all.len(), 38);
        assert_eq!(&all[..4], [0, 692, 1149, 1518]);
    }

    #[test]
    fn flat_line_divides() {
        assert_eq!(offsets("line(2,2,2s)"), [0, 500, 1000, 1500]);
    }

    #[test]
    fn steps_are_shifted_by_earlier_durations_even_when_empty() {
        assert_eq!(offsets("const(0,5s) const(1,2s)"), [5000, 6000]);
    }

    #[test]
    fn stairway_adds_a_last_stair_at_the_target() {
        let plan = RpsSchedule::parse(&split_steps("step(1,4,2,1s)")).expect("valid");
        let rates: Vec<f64> = plan.steps().map(|s| s.rates().0).collect();
        assert_eq!(rates, [1.0, 3.0, 4.0]);
        let down = RpsSchedule::parse(&split_steps("step(5,1,2,1s)")).expect("valid");
        let rates: Vec<f64> = down.steps().map(|s| s.rates().0).collect();
        assert_eq!(rates, [5.0, 3.0, 1.0]);
    }

    #[test]
    fn line_duration_truncates_like_the_reference() {
        let plan = RpsSchedule::parse(&split_steps("line(1,2,1.001s) const(1,1s)")).expect("valid");
        assert_eq!(plan.duration_ms(), 1000 + 1000);
    }

    #[test]
    fn whitespace_before_comma_is_rejected() {
        assert!(RpsSchedule::parse(&split_steps("const(2 ,2s)")).is_err());
    }

    #[test]
    fn search_finds_numbers_after_leading_junk() {
        assert_eq!(offsets("const( 2,1s)"), [0, 500]);
    }

    #[test]
    fn unknown_step_and_zero_line_are_errors() {
        assert!(RpsSchedule::parse(&split_steps("ramp(1,1s)")).is_err());
        assert!(RpsSchedule::parse(&split_steps("line(1,2,0s)")).is_err());
        assert!(RpsSchedule::parse(&split_steps("step(1,2,0,1s)")).is_err());
    }

    fn parsed(schedule: &str) -> RpsSchedule {
        RpsSchedule::parse(&split_steps(schedule)).unwrap_or_else(|e| panic!("{schedule}: {e}"))
    }

    /// The error for `schedule`, which must name `step`.
    fn rejected(schedule: &str, step: &str) -> String {
        match RpsSchedule::parse(&split_steps(schedule)) {
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

    #[test]
    fn rates_are_bounded_at_ten_million_a_second() {
        assert_eq!(parsed("const(10000000,1s)").len(), 10_000_000);
        assert_eq!(parsed("line(0,10000000,1s)").len(), 5_000_000);
        assert_eq!(parsed("step(10000000,1,9999999,0.001s)").len(), 10_000);
        let message = rejected("const(10000001,1s)", "const(10000001,1s)");
        assert_eq!(
            message,
            "rate `10000001` is too high: expected at most 10,000,000 shots a second in one queue \
             (spread a larger load over several queues)"
        );
        rejected("line(1,10000000.5,1s)", "line(1,10000000.5,1s)");
        rejected("line(10000001,0,1s)", "line(10000001,0,1s)");
        rejected(
            "step(1,10000001,10000000,1s)",
            "step(1,10000001,10000000,1s)",
        );
    }

    #[test]
    fn a_minus_sign_the_reference_would_drop_is_an_error() {
        let message = rejected("const(2,1s) const(-9999999999,1s)", "const(-9999999999,1s)");
        assert_eq!(
            message,
            "`-9999999999` is negative: expected a number of 0 or more"
        );
        rejected("line(1,-2,1s)", "line(1,-2,1s)");
        rejected("step(1,5,-1,1s)", "step(1,5,-1,1s)");
        rejected("const(x-2,1s)", "const(x-2,1s)");
        // Other junk before a number is skipped, as the reference skips it.
        assert_eq!(parsed("const(x2,1s)").len(), 2);
    }

    #[test]
    fn a_number_the_stepper_reads_only_in_part_is_an_error() {
        let message = rejected("const(2,1s) const(1.5e3, 10s)", "const(1.5e3, 10s)");
        assert_eq!(
            message,
            "`1.5e3` is 1500 as a number, but yandex-tank's stepper, which plans the load, \
             takes only `3` from it: write the number in digits and dots, like 1500 or 2.5"
        );
        let message = rejected("const(1e300,1s)", "const(1e300,1s)");
        assert!(
            message.starts_with("`1e300` is 1e300 as a number"),
            "{message}"
        );
        let message = rejected("const(1e-3,1s)", "const(1e-3,1s)");
        assert!(
            message.starts_with("`1e-3` is 0.001 as a number"),
            "{message}"
        );
        let message = rejected("step(1_000,5,1,1s)", "step(1_000,5,1,1s)");
        assert!(
            message.starts_with("`1_000` is 1000 as a number"),
            "{message}"
        );
        // What both read alike, or the validator does not read as a number, plans as before.
        assert_eq!(parsed("const(+5,1s)").len(), 5);
        assert_eq!(parsed("const(1__0,1s)").len(), 0);
    }

    #[test]
    fn steps_and_schedules_last_at_most_30_days() {
        assert_eq!(parsed("const(1,2592000s)").duration_ms(), MAX_DURATION_MS);
        assert_eq!(parsed("line(1,2,30d)").duration_ms(), MAX_DURATION_MS);
        let message = rejected("const(1,2592000.001s)", "const(1,2592000.001s)");
        assert_eq!(
            message,
            "`2592000.001s` is longer than 30 days: expected a duration of at most 30d"
        );
        rejected("const(5,4294967296s)", "const(5,4294967296s)");
        assert_eq!(
            parsed("const(1,15d) const(1,15d)").duration_ms(),
            MAX_DURATION_MS
        );
        let message = rejected(
            "const(1,15d) const(1,15d) const(0,0.001s)",
            "const(0,0.001s)",
        );
        assert!(message.contains("more than 30 days"), "{message}");
    }

    #[test]
    fn a_queue_plans_at_most_a_hundred_billion_shots() {
        assert_eq!(parsed("const(10000000,10000s)").len(), MAX_SHOTS);
        let message = rejected("const(10000000,10000s) const(1,1s)", "const(1,1s)");
        assert!(
            message.contains("more than 100,000,000,000 shots"),
            "{message}"
        );
        rejected("const(10000000,10000.001s)", "const(10000000,10000.001s)");
    }

    #[test]
    fn a_schedule_has_at_most_a_hundred_thousand_steps() {
        assert_eq!(parsed("step(1,100000,1,0.001s)").steps().count(), MAX_STEPS);
        assert_eq!(
            parsed("step(1,99999,1,0.001s) const(1,0.001s)")
                .steps()
                .count(),
            MAX_STEPS
        );
        let message = rejected("step(1,100001,1,0.001s)", "step(1,100001,1,0.001s)");
        assert!(message.contains("more than 100,000 steps"), "{message}");
        rejected(
            "step(1,99999,1,0.001s) const(1,0.001s) const(1,0.001s)",
            "const(1,0.001s)",
        );
        rejected(
            "step(0,10000000,0.0000001,0.001s)",
            "step(0,10000000,0.0000001,0.001s)",
        );
    }

    proptest! {
        #[test]
        fn const_count_and_bounds(rps in 0u32..2000, secs in 0u32..20) {
            let plan = RpsSchedule::parse(&split_steps(&format!("const({rps},{secs}s)"))).unwrap();
            prop_assert_eq!(plan.len(), u64::from(rps) * u64::from(secs));
            let mut last = 0;
            for i in 0..plan.len() {
                let at = plan.offset_ms(i).unwrap();
                prop_assert!(at >= last && at < i64::from(secs) * 1000);
                last = at;
            }
            prop_assert_eq!(plan.offset_ms(plan.len()), None);
        }

        #[test]
        fn line_offsets_are_monotonic_and_inside_the_step(a in 0u32..300, b in 0u32..300, secs in 1u32..30) {
            let plan = RpsSchedule::parse(&split_steps(&format!("line({a},{b},{secs}s)"))).unwrap();
            let mut last = 0;
            for i in 0..plan.len() {
                let at = plan.offset_ms(i).unwrap();
                prop_assert!(at >= last, "shot {} at {} before {}", i, at, last);
                prop_assert!(at <= i64::from(secs) * 1000);
                last = at;
            }
        }

        #[test]
        fn composition_shifts_each_step(r1 in 1u32..50, s1 in 1u32..5, r2 in 1u32..50, s2 in 1u32..5) {
            let first = RpsSchedule::parse(&split_steps(&format!("const({r1},{s1}s)"))).unwrap();
            let second = RpsSchedule::parse(&split_steps(&format!("const({r2},{s2}s)"))).unwrap();
            let both = RpsSchedule::parse(&split_steps(&format!("const({r1},{s1}s) const({r2},{s2}s)"))).unwrap();
            prop_assert_eq!(both.len(), first.len() + second.len());
            for i in 0..second.len() {
                prop_assert_eq!(
                    both.offset_ms(first.len() + i).unwrap(),
                    second.offset_ms(i).unwrap() + i64::from(s1) * 1000
                );
            }
        }
    }
}
