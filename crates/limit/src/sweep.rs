//! The concurrency sweep: one closed-model probe per step, the knee, and the USL fit.
//!
//! Throughput is of **good answers** only (no net error, a status under
//! 400): a server shedding load answers 503s faster than it serves, and
//! counting them would show throughput soaring exactly where it collapses.
//! Errors are reported beside it, per step.

use serde::Serialize;

use crate::measure::Measurement;
use crate::usl::{self, Usl};

/// The knee's throughput rule: a step adds less than this share of the
/// growth in connections (under 10% more when the connections double)…
pub const KNEE_GROWTH: f64 = 0.10;
/// …while p99 grows; or errors pass this percent of a step's shots.
pub const KNEE_ERROR_PCT: f64 = 1.0;
/// The USL fit is shown only when it explains at least this share of the variance.
pub const MIN_R_SQUARED: f64 = 0.9;

/// One step of a sweep, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Connections firing back to back.
    pub concurrency: u32,
    /// Good answers per second in the step's window (errors are not throughput).
    pub achieved_rps: f64,
    /// p50, ms (of every shot in the window, errors with their time).
    pub p50_ms: f64,
    /// p90, ms.
    pub p90_ms: f64,
    /// p99, ms.
    pub p99_ms: f64,
    /// p99.9, ms.
    pub p999_ms: f64,
    /// Errors in the window: net errors and statuses of 400 and up.
    pub errors: u64,
    /// Errors, percent of the window's shots.
    pub error_pct: f64,
    /// The step's artifacts.
    pub artifacts: String,
}

impl Step {
    /// The step at `concurrency` that measured `m`.
    pub fn of(concurrency: u32, m: &Measurement) -> Step {
        let at = |q: f64| m.latency.at(q);
        Step {
            concurrency,
            achieved_rps: m.per_second(m.good()),
            p50_ms: at(50.0),
            p90_ms: at(90.0),
            p99_ms: at(99.0),
            p999_ms: at(99.9),
            errors: m.errors,
            error_pct: m.error_pct(),
            artifacts: m.artifacts.display().to_string(),
        }
    }
}

/// Where adding connections stopped paying.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Knee {
    /// The last step before throughput stopped growing or errors began.
    pub concurrency: u32,
    /// Which rule, with the numbers.
    pub why: String,
}

/// The knee of `steps` (in growing concurrency): the step before the first
/// one that either has errors over [`KNEE_ERROR_PCT`], or adds under
/// [`KNEE_GROWTH`] of its growth in connections to the throughput while its
/// p99 grows. `Err` says why there is none.
pub fn knee(steps: &[Step]) -> Result<Knee, String> {
    let first = steps.first().ok_or("no steps")?;
    if first.error_pct > KNEE_ERROR_PCT {
        return Ok(Knee {
            concurrency: first.concurrency,
            why: format!(
                "errors from the first step ({:.2}% at {} connections)",
                first.error_pct, first.concurrency
            ),
        });
    }
    for pair in steps.windows(2) {
        let (before, step) = (&pair[0], &pair[1]);
        if step.error_pct > KNEE_ERROR_PCT {
            return Ok(Knee {
                concurrency: before.concurrency,
                why: format!(
                    "errors began at {} connections ({:.2}%)",
                    step.concurrency, step.error_pct
                ),
            });
        }
        let more = f64::from(step.concurrency) / f64::from(before.concurrency) - 1.0;
        let needed = before.achieved_rps * (1.0 + KNEE_GROWTH * more);
        if step.achieved_rps < needed && step.p99_ms > before.p99_ms {
            return Ok(Knee {
                concurrency: before.concurrency,
                why: format!(
                    "{} connections added under {:.1}% to the throughput ({:.1} → {:.1} rps) while p99 grew ({:.2} → {:.2} ms)",
                    step.concurrency,
                    KNEE_GROWTH * more * 100.0,
                    before.achieved_rps,
                    step.achieved_rps,
                    before.p99_ms,
                    step.p99_ms
                ),
            });
        }
    }
    Err(format!(
        "throughput grew with every step and errors stayed under {KNEE_ERROR_PCT}%"
    ))
}

/// The USL fitted to the steps' good throughput, or why it is withheld:
/// steps with errors (the law is of work done, and a shedding server's
/// errors bend the curve), fewer than three steps with answers, or a fit
/// explaining under [`MIN_R_SQUARED`] of the variance.
pub fn fit(steps: &[Step]) -> Result<Usl, String> {
    let erring: Vec<String> = steps
        .iter()
        .filter(|s| s.errors > 0)
        .map(|s| format!("{} at {} connections", s.errors, s.concurrency))
        .collect();
    if !erring.is_empty() {
        return Err(format!(
            "steps had errors ({}): the law describes a target serving every request",
            erring.join(", ")
        ));
    }
    let points: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| (f64::from(s.concurrency), s.achieved_rps))
        .collect();
    let usl = usl::fit(&points).ok_or("fewer than 3 steps with answers")?;
    // A NaN R² (no variance to explain) is no better than a low one.
    if usl.r_squared.is_nan() || usl.r_squared < MIN_R_SQUARED {
        return Err(format!(
            "R² {:.3} is under {MIN_R_SQUARED}: the law does not describe these steps",
            usl.r_squared
        ));
    }
    Ok(usl)
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

    fn step(concurrency: u32, rps: f64, p99_ms: f64, error_pct: f64) -> Step {
        Step {
            concurrency,
            achieved_rps: rps,
            p50_ms: 0.0,
            p90_ms: 0.0,
            p99_ms,
            p999_ms: 0.0,
            errors: (error_pct * 100.0) as u64,
            error_pct,
            artifacts: String::new(),
        }
    }

    #[test]
    fn the_knee_is_where_throughput_stops_growing_while_p99_grows() {
        // The newcomer's table: 16 is where it plateaus (8 → 16 still added 12.9%).
        let steps = [
            step(1, 87.8, 11.0, 0.0),
            step(2, 175.4, 11.2, 0.0),
            step(4, 351.8, 11.5, 0.0),
            step(8, 701.6, 11.83, 0.0),
            step(16, 792.0, 21.04, 0.0),
            step(32, 792.0, 40.1, 0.0),
        ];
        let k = knee(&steps).unwrap();
        assert_eq!(k.concurrency, 16);
        assert_eq!(
            k.why,
            "32 connections added under 10.0% to the throughput (792.0 → 792.0 rps) while p99 grew (21.04 → 40.10 ms)"
        );
        // A flat step whose p99 did not grow is noise, not a knee.
        let steps = [
            step(1, 100.0, 10.0, 0.0),
            step(2, 105.0, 9.0, 0.0),
            step(4, 400.0, 10.0, 0.0),
        ];
        assert!(knee(&steps).unwrap_err().contains("grew with every step"));
        // Steps that do not double: 60 → 64 connections needs 0.67% more, not 10%.
        let steps = [step(60, 6000.0, 10.0, 0.0), step(64, 6300.0, 10.5, 0.0)];
        assert!(knee(&steps).is_err());
        let steps = [step(60, 6000.0, 10.0, 0.0), step(64, 6020.0, 10.5, 0.0)];
        assert_eq!(knee(&steps).unwrap().concurrency, 60);
    }

    #[test]
    fn the_knee_is_the_last_step_before_errors_begin() {
        let steps = [
            step(1, 100.0, 10.0, 0.0),
            step(2, 200.0, 10.0, 0.5),
            step(4, 390.0, 10.0, 60.0),
        ];
        let k = knee(&steps).unwrap();
        assert_eq!(
            (k.concurrency, k.why.as_str()),
            (2, "errors began at 4 connections (60.00%)")
        );
        let k = knee(&[step(1, 0.0, 1.0, 100.0)]).unwrap();
        assert_eq!(k.concurrency, 1);
        assert!(k.why.starts_with("errors from the first step"), "{}", k.why);
        assert!(knee(&[]).is_err());
    }

    #[test]
    fn the_fit_is_withheld_with_errors_or_when_it_explains_too_little() {
        // The law itself, sampled: fitted and shown.
        let law = |n: f64| 100.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.001 * n * (n - 1.0));
        let clean: Vec<Step> = [1, 2, 4, 8, 16, 32]
            .iter()
            .map(|&c| step(c, law(f64::from(c)), 10.0, 0.0))
            .collect();
        let usl = fit(&clean).unwrap();
        assert!((usl.sigma - 0.05).abs() < 1e-6 && usl.r_squared > 0.999);
        // The same with a few errors at one step.
        let mut erring = clean.clone();
        erring[4].errors = 3;
        assert_eq!(
            fit(&erring).unwrap_err(),
            "steps had errors (3 at 16 connections): the law describes a target serving every request"
        );
        // A zigzag no law explains.
        let zigzag = [
            step(1, 100.0, 1.0, 0.0),
            step(2, 900.0, 1.0, 0.0),
            step(4, 120.0, 1.0, 0.0),
            step(8, 1000.0, 1.0, 0.0),
            step(16, 110.0, 1.0, 0.0),
        ];
        let why = fit(&zigzag).unwrap_err();
        assert!(why.starts_with("R² ") && why.contains("under 0.9"), "{why}");
        assert_eq!(
            fit(&clean[..2]).unwrap_err(),
            "fewer than 3 steps with answers"
        );
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
