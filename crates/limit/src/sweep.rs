//! The concurrency sweep: one closed-model probe per step, the knee, and the USL fit.

use serde::Serialize;

use crate::probe::Measurement;
use crate::usl::{self, Usl};

/// The knee's latency rule: p99 over this many times the first step's.
pub const KNEE_P99_FACTOR: f64 = 2.0;
/// The knee's error rule: errors over this percent.
pub const KNEE_ERROR_PCT: f64 = 1.0;

/// One step of a sweep, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Connections firing back to back.
    pub concurrency: u32,
    /// Responses per second in the step's window.
    pub achieved_rps: f64,
    /// p50, ms.
    pub p50_ms: f64,
    /// p90, ms.
    pub p90_ms: f64,
    /// p99, ms.
    pub p99_ms: f64,
    /// p99.9, ms.
    pub p999_ms: f64,
    /// Errors, percent.
    pub error_pct: f64,
    /// The step's artifacts.
    pub artifacts: String,
}

impl Step {
    /// The step at `concurrency` that measured `m` (quantiles at 50, 90, 99, 99.9).
    pub fn of(concurrency: u32, m: &Measurement) -> Step {
        let at = |i: usize| m.latency_ms.get(i).copied().unwrap_or_default();
        Step {
            concurrency,
            achieved_rps: m.achieved_rps,
            p50_ms: at(0),
            p90_ms: at(1),
            p99_ms: at(2),
            p999_ms: at(3),
            error_pct: m.error_pct(),
            artifacts: m.artifacts.display().to_string(),
        }
    }
}

/// The knee: the first step whose p99 is over twice the first step's, or
/// whose errors are over 1%; `None` when no step is.
pub fn knee(steps: &[Step]) -> Option<u32> {
    let first = steps.first()?;
    let baseline = first.p99_ms;
    steps
        .iter()
        .find(|s| s.p99_ms > KNEE_P99_FACTOR * baseline || s.error_pct > KNEE_ERROR_PCT)
        .map(|s| s.concurrency)
}

/// The USL fitted to the steps' throughput (`None` with fewer than three).
pub fn fit(steps: &[Step]) -> Option<Usl> {
    let points: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| (f64::from(s.concurrency), s.achieved_rps))
        .collect();
    usl::fit(&points)
}

/// Concurrency steps from `1,2,4,8` or `line(1,64,16)` (16 steps from 1 to 64, rounded, distinct).
pub fn parse_steps(text: &str) -> Result<Vec<u32>, String> {
    let text = text.trim();
    let expected = "expected concurrency steps like 1,2,4,8 or line(1,64,16) (from, to, steps)";
    let steps: Vec<u32> =
        if let Some(args) = text.strip_prefix("line(").and_then(|r| r.strip_suffix(')')) {
            let numbers: Vec<u32> = args
                .split(',')
                .map(|a| a.trim().parse::<u32>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("`{text}`: {expected}"))?;
            let [from, to, count] = numbers[..] else {
                return Err(format!("`{text}`: {expected}"));
            };
            if from == 0 || to < from || count < 2 {
                return Err(format!(
                    "`{text}`: line(from, to, steps) needs 1 ≤ from ≤ to and at least 2 steps"
                ));
            }
            let mut steps: Vec<u32> = (0..count)
                .map(|k| {
                    let share = f64::from(k) / f64::from(count - 1);
                    (f64::from(from) + share * f64::from(to - from)).round() as u32
                })
                .collect();
            steps.dedup();
            steps
        } else {
            text.split(',')
                .map(|s| match s.trim().parse::<u32>() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(format!(
                        "`{}` in `{text}`: {expected}, each at least 1",
                        s.trim()
                    )),
                })
                .collect::<Result<_, _>>()?
        };
    if steps.windows(2).any(|w| w[1] <= w[0]) {
        return Err(format!("`{text}`: steps must grow"));
    }
    if steps.len() > 1000 || steps.last().is_some_and(|&n| n > 100_000) {
        return Err(format!(
            "`{text}`: at most 1000 steps of at most 100000 connections"
        ));
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn step(concurrency: u32, p99_ms: f64, error_pct: f64) -> Step {
        Step {
            concurrency,
            achieved_rps: 0.0,
            p50_ms: 0.0,
            p90_ms: 0.0,
            p99_ms,
            p999_ms: 0.0,
            error_pct,
            artifacts: String::new(),
        }
    }

    #[test]
    fn the_knee_is_where_p99_doubles_or_errors_begin() {
        let steps = [
            step(1, 10.0, 0.0),
            step(2, 12.0, 0.0),
            step(4, 20.5, 0.0),
            step(8, 40.0, 0.0),
        ];
        assert_eq!(knee(&steps), Some(4));
        let steps = [step(1, 10.0, 0.0), step(2, 12.0, 1.5), step(4, 30.0, 0.0)];
        assert_eq!(knee(&steps), Some(2));
        assert_eq!(knee(&steps[..1]), None);
        assert_eq!(knee(&[]), None);
    }

    #[test]
    fn steps_are_a_list_or_a_line() {
        assert_eq!(parse_steps("1,2,4, 8").unwrap(), [1, 2, 4, 8]);
        assert_eq!(parse_steps("line(1,64,4)").unwrap(), [1, 22, 43, 64]);
        assert_eq!(parse_steps("line(1,3,5)").unwrap(), [1, 2, 3]);
        assert!(parse_steps("1,0").unwrap_err().contains("`0` in `1,0`"));
        assert_eq!(parse_steps("4,2").unwrap_err(), "`4,2`: steps must grow");
        assert!(parse_steps("line(1,2)")
            .unwrap_err()
            .contains("expected concurrency steps"));
        assert!(parse_steps("line(0,2,3)").is_err());
    }

    proptest! {
        #[test]
        fn any_text_gives_growing_steps_or_an_error(text in "[0-9a-z(),]{0,20}") {
            if let Ok(steps) = parse_steps(&text) {
                prop_assert!(!steps.is_empty() && steps[0] >= 1);
                prop_assert!(steps.windows(2).all(|w| w[0] < w[1]));
            }
        }

        #[test]
        fn a_line_starts_and_ends_where_asked(from in 1u32..100, extra in 0u32..1000, count in 2u32..50) {
            let steps = parse_steps(&format!("line({from},{},{count})", from + extra)).unwrap();
            prop_assert_eq!(steps[0], from);
            prop_assert_eq!(*steps.last().unwrap(), from + extra);
        }
    }
}
