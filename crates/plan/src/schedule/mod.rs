//! Schedules: when each shot of a queue is due.
//!
//! A schedule string is split into steps exactly as the reference splits it
//! (newlines become spaces, split on `)`, blank pieces dropped, `)` put back,
//! so a missing final `)` is accepted), then each step is parsed by the open
//! ([`rps`]) or closed ([`instances`]) model.

pub mod arrivals;
pub mod instances;
pub mod rps;
mod waveform;

use crate::error::{PlanError, Result};
pub use instances::InstancesSchedule;
pub use rps::RpsSchedule;
pub use rps::{Cursor, RpsStep};

/// Split a schedule string into steps, as the reference does.
pub(crate) fn split_steps(schedule: &str) -> Vec<String> {
    schedule
        .replace('\n', " ")
        .split(')')
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .map(|piece| format!("{piece})"))
        .collect()
}

/// `total` ms of schedule so far plus a step's `add`, refused (naming `step` of
/// `key`) when the schedule would last longer than the bound allows.
fn extend_duration(total: i64, add: i64, key: &'static str, step: &str) -> Result<i64> {
    total
        .checked_add(add)
        .filter(|ms| *ms <= tank_config::bounds::MAX_DURATION_MS)
        .ok_or_else(|| {
            PlanError::schedule(
                key,
                step,
                "the schedule would last more than 30 days by the end of this step: \
                 expected at most 30 days in all",
            )
        })
}

/// Split `name(params)` at its only `(`: the name trimmed, and the text after `(`.
fn split_call<'a>(key: &'static str, step: &'a str) -> Result<(&'a str, &'a str)> {
    let mut parts = step.split('(');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), Some(params), None) => Ok((name.trim(), params)),
        _ => Err(PlanError::schedule(
            key,
            step,
            "expected `name(arguments)` with exactly one `(`",
        )),
    }
}

/// Whether the number found at byte `at` of a step's arguments has a `-` right
/// before it. The reference's patterns have no sign and are searched, not
/// anchored, so it silently reads `const(-5,1s)` as `const(5,1s)`; tank refuses.
fn has_minus_before(params: &str, at: usize) -> bool {
    at > 0 && params.as_bytes().get(at - 1) == Some(&b'-')
}

/// A number found at bytes `at..end` of a step's arguments that is only the
/// tail of a number written otherwise (`1.5e3`, `1_000`): the whole word, and
/// what it is worth. The reference's patterns take digits and dots and are
/// searched, not anchored, so its stepper plans `const(1.5e3, 10s)` as
/// `const(3, 10s)` (and `ramp(1.5, 2s)` as 5 instances) while its validator,
/// which reads the word with Python's `float`, took it for 1500; tank refuses
/// the config rather than run a load nobody wrote.
/// A word that is no number at all (`x2`) is read as the stepper reads it.
fn cut_number(params: &str, at: usize, end: usize) -> Option<(&str, f64)> {
    let before = params.get(..at)?;
    let start = before
        .char_indices()
        .rev()
        .find(|(_, c)| *c == ',' || c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = params.get(start..end)?;
    if start == at || before.get(start..) == Some("-") {
        return None;
    }
    // Python's float takes `_` between digits (PEP 515): `1_000` is 1000.
    let bytes = word.as_bytes();
    let grouped = bytes.iter().enumerate().all(|(i, b)| {
        *b != b'_'
            || (i > 0
                && bytes[i - 1].is_ascii_digit()
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    });
    let worth = crate::pynum::py_float(&word.replace('_', "")).filter(|_| grouped)?;
    // `+5` is 5 to both.
    let read = params.get(at..end).and_then(crate::pynum::py_float);
    (read != Some(worth)).then_some((word, worth))
}

/// The error for a number [`cut_number`] found cut.
fn cut_number_error(
    key: &'static str,
    step: &str,
    (word, worth): (&str, f64),
    read: &str,
) -> PlanError {
    // 1e300 in digits would be 301 of them.
    let worth = if worth == 0.0 || (1e-6..1e15).contains(&worth.abs()) {
        worth.to_string()
    } else {
        format!("{worth:e}")
    };
    PlanError::schedule(
        key,
        step,
        format!(
            "`{word}` is {worth} as a number, but yandex-tank's stepper, which plans the \
             load, takes only `{read}` from it: write the number in digits{}",
            if key == "instances_schedule" {
                ", like 100"
            } else {
                " and dots, like 1500 or 2.5"
            }
        ),
    )
}

/// A parsed schedule of either model.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// Open model: a fixed list of due times.
    Rps(RpsSchedule),
    /// Closed model: instance start times, then 0 forever.
    Instances(InstancesSchedule),
}

impl Schedule {
    /// Parse an `rps_schedule` string. A blank one is, as in the reference
    /// stepper, an instances schedule with no steps: every shot is due at 0 and
    /// the ammo is read once (see [`is_blank`]). Shots are evenly spaced, and
    /// `random(...)` steps without a seed of their own draw from seed 0
    /// ([`Schedule::rps_with`] takes a queue's arrivals and seed).
    pub fn rps(text: &str) -> Result<Self> {
        let steps = split_steps(text);
        if steps.is_empty() {
            return Ok(Schedule::Instances(InstancesSchedule::default()));
        }
        Ok(Schedule::Rps(RpsSchedule::parse(&steps)?))
    }

    /// Parse an `rps_schedule` string whose shots are spaced by `arrivals`
    /// (see [`RpsSchedule::with_arrivals`]),
    /// and whose `random(...)` steps without a seed draw from `arrivals.seed`.
    pub fn rps_with(text: &str, arrivals: &tank_config::Arrivals) -> Result<Self> {
        let steps = split_steps(text);
        if steps.is_empty() {
            return Ok(Schedule::Instances(InstancesSchedule::default()));
        }
        let rps = RpsSchedule::parse_seeded(&steps, arrivals.seed)?;
        Ok(Schedule::Rps(rps.with_arrivals(arrivals)))
    }

    /// Parse an `instances_schedule` string (blank: no starts, every shot due at 0).
    pub fn instances(text: &str) -> Result<Self> {
        Ok(Schedule::Instances(InstancesSchedule::parse(
            &split_steps(text),
        )?))
    }

    /// Due time of shot `i`, ms from the start; `None` once an rps schedule has ended.
    pub fn offset_ms(&self, i: u64) -> Option<i64> {
        match self {
            Schedule::Rps(plan) => plan.offset_ms(i),
            Schedule::Instances(plan) => Some(plan.offset_ms(i)),
        }
    }

    /// Due time of shot `i`, ns from the start (see [`RpsSchedule::offset_ns_near`]),
    /// for in-order walks: `cursor` keeps where the last lookup was.
    pub fn offset_ns_near(&self, i: u64, cursor: &mut Cursor) -> Option<i64> {
        match self {
            Schedule::Rps(plan) => plan.offset_ns_near(i, cursor),
            Schedule::Instances(plan) => Some(plan.offset_ms(i).saturating_mul(1_000_000)),
        }
    }

    /// Number of shots, when the schedule itself bounds them (rps only).
    pub fn len(&self) -> Option<u64> {
        match self {
            Schedule::Rps(plan) => Some(plan.len()),
            Schedule::Instances(_) => None,
        }
    }

    /// Whether the schedule bounds the number of shots to zero.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// Time covered by the steps, ms.
    pub fn duration_ms(&self) -> i64 {
        match self {
            Schedule::Rps(plan) => plan.duration_ms(),
            Schedule::Instances(plan) => plan.duration_ms(),
        }
    }
}

/// Whether a schedule string has no steps at all (the reference then fires
/// every shot at 0 and reads the ammo once; callers should warn about it).
pub fn is_blank(text: &str) -> bool {
    split_steps(text).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn newlines_split_and_missing_paren_is_accepted() {
        assert_eq!(
            split_steps("line(1,5,2s)\nconst(5,1s)"),
            ["line(1,5,2s)", "const(5,1s)"]
        );
        assert_eq!(
            split_steps("const(2,1s) line(2,4,1s"),
            ["const(2,1s)", "line(2,4,1s)"]
        );
        assert_eq!(split_steps("  \n "), Vec::<String>::new());
    }

    #[test]
    fn a_step_needs_exactly_one_paren() {
        assert!(Schedule::rps("const 5").is_err());
        assert!(Schedule::rps("const((5,1s)").is_err());
        assert_eq!(
            Schedule::rps(" \n").unwrap(),
            Schedule::Instances(InstancesSchedule::default())
        );
        assert!(is_blank(" \n "));
    }

    use tank_config::bounds::{MAX_DURATION_MS, MAX_INSTANCES, MAX_SHOTS, MAX_STEPS};

    /// Schedule text near the syntax: every step kind (and junk), numbers at and
    /// past the bounds, signs, fractions, durations in every unit, a missing `)`.
    fn schedule_text() -> impl Strategy<Value = String> {
        let number = prop_oneof![
            8 => "[0-9]{1,3}",
            3 => "[0-9]{1,3}\\.[0-9]{0,3}",
            1 => "-[0-9]{1,11}",
            1 => proptest::sample::select(vec![
                "0", "10000000", "10000001", "1000000", "1000001", "4294967296",
                "9223372036854775807", "99999999999999999999999999", ".", "1.2.3", "", "1e5", "x2",
            ])
            .prop_map(str::to_owned),
        ];
        let duration = prop_oneof![
            8 => "[0-9]{1,4}(\\.[0-9])?[dhms]?",
            1 => proptest::sample::select(vec![
                "30d", "2592000s", "2592000.001s", "4294967296s", "1m30s", "0", "-1s", "1ms", "",
            ])
            .prop_map(str::to_owned),
        ];
        // Each kind with its own arity most of the time: (name, numbers before the duration).
        let kind = |names: Vec<(&'static str, usize)>| {
            prop_oneof![
                8 => proptest::sample::select(names).prop_map(|(name, arity)| (name, Some(arity))),
                1 => proptest::sample::select(vec!["const", "line", "step", "ramp", "wait", "start", "Const", ""])
                    .prop_map(|name| (name, None)),
            ]
        };
        let rps = kind(vec![("const", 1), ("line", 2), ("step", 3)]);
        let instances = kind(vec![
            ("const", 1),
            ("line", 2),
            ("step", 3),
            ("ramp", 1),
            ("wait", 0),
            ("start", 1),
        ]);
        let step = |kind: BoxedStrategy<(&'static str, Option<usize>)>| {
            (
                kind,
                proptest::collection::vec(number.clone(), 0..4),
                duration.clone(),
                proptest::sample::select(vec![",", ",", ",", ",", ",", ", ", ",\n", " ,"]),
                proptest::sample::select(vec![")", ")", ")", ")", ")", ")", ")", ""]),
            )
                .prop_map(|((name, arity), mut numbers, duration, comma, close)| {
                    if let Some(arity) = arity {
                        numbers.resize(arity, "2".to_owned());
                    }
                    if name != "start" || arity.is_none() {
                        numbers.push(duration);
                    }
                    format!("{name}({}{close}", numbers.join(comma))
                })
        };
        (
            prop_oneof![
                proptest::collection::vec(step(rps.boxed()), 0..4),
                proptest::collection::vec(step(instances.boxed()), 0..4),
            ],
            proptest::sample::select(vec![" ", "\n", ""]),
        )
            .prop_map(|(steps, gap)| steps.join(gap))
    }

    /// A refusal names one of the steps as split, and says what was wrong.
    fn check_refusal(text: &str, error: PlanError) -> Result<(), TestCaseError> {
        let PlanError::Schedule { step, message, .. } = error else {
            return Err(TestCaseError::fail(format!("{text:?}: {error}")));
        };
        prop_assert!(
            split_steps(text).contains(&step),
            "{:?} names `{}`",
            text,
            step
        );
        prop_assert!(!message.is_empty());
        Ok(())
    }

    /// Shots `i` of a schedule to look at: the ends, the middle, and around them.
    fn probes(len: u64) -> Vec<u64> {
        let mut at = vec![
            0,
            1,
            len / 2,
            len / 2 + 1,
            len.saturating_sub(2),
            len.saturating_sub(1),
        ];
        at.retain(|i| *i < len);
        at
    }

    fn check_accepted(text: &str, schedule: &Schedule) -> Result<(), TestCaseError> {
        let duration = schedule.duration_ms();
        prop_assert!(
            (0..=MAX_DURATION_MS).contains(&duration),
            "{:?}: {} ms",
            text,
            duration
        );
        match schedule {
            Schedule::Rps(plan) => {
                prop_assert!(plan.len() <= MAX_SHOTS, "{:?}: {} shots", text, plan.len());
                prop_assert!(plan.steps().count() <= MAX_STEPS);
                for i in probes(plan.len()) {
                    let at = plan.offset_ms(i);
                    prop_assert!(
                        at.is_some_and(|ms| (0..=duration).contains(&ms)),
                        "{:?}: shot {} at {:?}",
                        text,
                        i,
                        at
                    );
                    if i + 1 < plan.len() {
                        prop_assert!(
                            plan.offset_ms(i + 1) >= at,
                            "{:?}: shot {} before shot {}",
                            text,
                            i + 1,
                            i
                        );
                    }
                }
                prop_assert_eq!(plan.offset_ms(plan.len()), None);
            }
            Schedule::Instances(plan) => {
                prop_assert!(
                    (0..=i64::from(MAX_INSTANCES)).contains(&plan.instances()),
                    "{:?}",
                    text
                );
                prop_assert_eq!(plan.starts(), plan.instances() as u64);
                for i in probes(plan.starts()) {
                    let at = plan.offset_ms(i);
                    prop_assert!(
                        (0..=duration).contains(&at),
                        "{:?}: start {} at {}",
                        text,
                        i,
                        at
                    );
                }
                prop_assert_eq!(plan.offset_ms(plan.starts()), 0);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn near_valid_schedules_are_within_bounds_or_refused_naming_a_step(text in schedule_text()) {
            for parsed in [Schedule::rps(&text), Schedule::instances(&text)] {
                match parsed {
                    Ok(schedule) => check_accepted(&text, &schedule)?,
                    Err(error) => check_refusal(&text, error)?,
                }
            }
        }

        #[test]
        fn any_text_is_within_bounds_or_refused_naming_a_step(text in "\\PC{0,80}") {
            for parsed in [Schedule::rps(&text), Schedule::instances(&text)] {
                match parsed {
                    Ok(schedule) => check_accepted(&text, &schedule)?,
                    Err(error) => check_refusal(&text, error)?,
                }
            }
        }
    }
}
