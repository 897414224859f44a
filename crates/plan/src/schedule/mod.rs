//! Schedules: when each shot of a queue is due.
//!
//! A schedule string is split into steps exactly as the reference splits it
//! (newlines become spaces, split on `)`, blank pieces dropped, `)` put back,
//! so a missing final `)` is accepted), then each step is parsed by the open
//! ([`rps`]) or closed ([`instances`]) model.

pub mod instances;
pub mod rps;

use crate::error::{PlanError, Result};
pub use instances::InstancesSchedule;
pub use rps::{RpsSchedule, RpsStep};

/// Split a schedule string into steps, as the reference does.
pub fn split_steps(schedule: &str) -> Vec<String> {
    schedule
        .replace('\n', " ")
        .split(')')
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .map(|piece| format!("{piece})"))
        .collect()
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
    /// the ammo is read once (see [`is_blank`]).
    pub fn rps(text: &str) -> Result<Self> {
        let steps = split_steps(text);
        if steps.is_empty() {
            return Ok(Schedule::Instances(InstancesSchedule::default()));
        }
        Ok(Schedule::Rps(RpsSchedule::parse(&steps)?))
    }

    /// Parse an `instances_schedule` string (blank: no starts, every shot due at 0).
    pub fn instances(text: &str) -> Result<Self> {
        Ok(Schedule::Instances(InstancesSchedule::parse(
            &split_steps(text),
        )?))
    }

    /// Due time of shot `i`, ms from the start; `None` once an rps schedule has ended.
    pub fn offset_ms(&self, i: u64) -> Option<i64> {
        self.offset_ms_near(i, &mut 0)
    }

    /// [`Self::offset_ms`] for in-order walks: `hint` keeps the last step found.
    pub fn offset_ms_near(&self, i: u64, hint: &mut usize) -> Option<i64> {
        match self {
            Schedule::Rps(plan) => plan.offset_ms_near(i, hint),
            Schedule::Instances(plan) => Some(plan.offset_ms(i)),
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

    proptest! {
        #[test]
        fn parsers_never_panic(text in "[a-z(),.0-9 \\n\\t]{0,60}") {
            let _ = Schedule::rps(&text).map(|s| s.offset_ms(0));
            let _ = Schedule::instances(&text).map(|s| s.offset_ms(3));
        }
    }
}
