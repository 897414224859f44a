//! The SLA search and the scan: the highest rate at which a latency quantile
//! stays under a bound, with open-model probes.
//!
//! Bisection, as mutilate's `--search`, but a probe counts as a pass only if
//! it is *valid*: the generator, not the target, must not have been the
//! bottleneck. mutilate silently reports generator-bound points; here a
//! probe whose shots went out late, too few or not at all, while instances
//! were still free (so the target was not holding them), is reported as
//! invalid and never counted as a pass.

use serde::Serialize;

use crate::probe::Measurement;

/// What makes a probe pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The quantile judged, percent (99).
    pub quantile: f64,
    /// The most it may be, ms.
    pub under_ms: f64,
    /// The most errors a passing probe may have, percent of its responses.
    pub max_error_pct: f64,
    /// The generator keeps up if its lag p99 is at most this, ms
    /// ([`MAX_LAG_P99_MS`] unless the user says otherwise).
    pub max_lag_p99_ms: f64,
}

/// The generator keeps up if it fires at least this share of the probe's rate.
pub const MIN_ACHIEVED: f64 = 0.98;
/// The generator keeps up if its lag p99 is at most this, ms (the default).
pub const MAX_LAG_P99_MS: f64 = 1.0;

/// One probe of a search or a scan, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Probe {
    /// The rate asked for, shots per second.
    pub target_rps: u64,
    /// Responses per second in the window (shots started in it).
    pub achieved_rps: f64,
    /// The judged quantile, ms (from the intended start).
    pub quantile_ms: f64,
    /// p50, p90, p99, p99.9 and max, ms.
    pub latency_ms: Vec<f64>,
    /// Errors, percent.
    pub error_pct: f64,
    /// The generator's lag p99, ms.
    pub lag_p99_ms: f64,
    /// Shots never fired.
    pub unsent: u64,
    /// The generator was not the bottleneck.
    pub valid: bool,
    /// Why not, or why the probe failed.
    pub reasons: Vec<String>,
    /// Valid, within the bound and the error limit.
    pub passed: bool,
    /// The probe's artifacts.
    pub artifacts: String,
}

impl Probe {
    /// Judges `measured`, a probe at `rate`, against `bound`.
    pub fn judge(rate: u64, measured: &Measurement, bound: &Bound) -> Probe {
        let mut generator = Vec::new();
        // Against the shots the plan had due in the window when it says (drawn
        // arrivals put more or fewer than rate × window there), else the rate.
        let achieved = match measured.planned {
            Some(planned) if planned > 0 => measured.responses as f64 / planned as f64,
            _ => measured.achieved_rps / rate.max(1) as f64,
        };
        if achieved < MIN_ACHIEVED {
            generator.push(format!(
                "achieved {:.1}% of the rate (under {:.0}%)",
                achieved * 100.0,
                MIN_ACHIEVED * 100.0
            ));
        }
        if measured.lag_p99_ms > bound.max_lag_p99_ms {
            generator.push(format!(
                "lag p99 {:.2} ms (over {} ms)",
                measured.lag_p99_ms, bound.max_lag_p99_ms
            ));
        }
        if measured.unsent > 0 {
            generator.push(format!("{} shots unsent", measured.unsent));
        }
        // Late or missing shots while every instance waited on the target are
        // the target's doing: the probe is valid, and fails on its latency.
        let valid = generator.is_empty() || measured.pool_exhausted;
        let mut reasons = if valid { Vec::new() } else { generator };
        if measured.pool_exhausted {
            reasons.push("every instance was busy: the target held them all".into());
        }
        let over = measured.quantile_ms > bound.under_ms;
        if over {
            reasons.push(format!(
                "p{} {:.2} ms over {} ms",
                bound.quantile, measured.quantile_ms, bound.under_ms
            ));
        }
        let errors = measured.error_pct() > bound.max_error_pct;
        if errors {
            reasons.push(format!(
                "{:.2}% errors (over {}%)",
                measured.error_pct(),
                bound.max_error_pct
            ));
        }
        if measured.responses == 0 {
            reasons.push("no responses in the window".into());
        }
        Probe {
            target_rps: rate,
            achieved_rps: measured.achieved_rps,
            quantile_ms: measured.quantile_ms,
            latency_ms: measured.latency_ms.clone(),
            error_pct: measured.error_pct(),
            lag_p99_ms: measured.lag_p99_ms,
            unsent: measured.unsent,
            valid,
            passed: valid && !over && !errors && measured.responses > 0,
            reasons,
            artifacts: measured.artifacts.display().to_string(),
        }
    }
}

/// Where to search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// The lowest rate considered.
    pub from: u64,
    /// The highest.
    pub to: u64,
    /// Stop when the bracket is narrower than this share of its low end (0.02).
    pub precision: f64,
}

/// Bisects `range` with `probe` (a rate → its judged probe) and returns every
/// probe in order and the limit: the highest passing rate, `None` when even
/// `from` fails.
///
/// Only midpoints are probed while they bracket the limit; `from` is probed
/// only if every midpoint failed, `to` only if every one passed. So a search
/// takes at most ⌈log2((to − from) / (precision · limit))⌉ + 1 probes.
pub fn bisect<E>(
    range: &Range,
    mut probe: impl FnMut(u64) -> Result<Probe, E>,
) -> Result<(Option<u64>, Vec<Probe>), E> {
    let mut probes = Vec::new();
    let (mut low, mut high) = (range.from, range.to);
    let (mut low_passed, mut high_failed) = (false, false);
    while high > low + 1 && (high - low) as f64 > range.precision * low.max(1) as f64 {
        let mid = low + (high - low) / 2;
        let result = probe(mid)?;
        let passed = result.passed;
        probes.push(result);
        if passed {
            low = mid;
            low_passed = true;
        } else {
            high = mid;
            high_failed = true;
        }
    }
    if !high_failed {
        // Every midpoint passed (or there were none): try the top.
        let result = probe(range.to)?;
        let passed = result.passed;
        probes.push(result);
        if passed {
            return Ok((Some(range.to), probes));
        }
    }
    if !low_passed {
        let result = probe(range.from)?;
        let passed = result.passed;
        probes.push(result);
        return Ok((passed.then_some(range.from), probes));
    }
    Ok((Some(low), probes))
}

/// The rates of a scan `lo:hi:step`, in order.
pub fn scan_rates(from: u64, to: u64, step: u64) -> Vec<u64> {
    let step = step.max(1);
    (0..)
        .map(|k: u64| from.saturating_add(k.saturating_mul(step)))
        .take_while(|&rate| rate <= to)
        .collect()
}

/// A scan's limit: the highest rate whose probe passed and every lower one too.
pub fn scan_limit(probes: &[Probe]) -> Option<u64> {
    probes
        .iter()
        .take_while(|p| p.passed)
        .map(|p| p.target_rps)
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn measured(rate: f64, p99: f64) -> Measurement {
        Measurement {
            planned: None,
            responses: 1000,
            errors: 0,
            achieved_rps: rate,
            latency_ms: vec![p99 / 2.0, p99 / 1.5, p99, p99, p99],
            quantile_ms: p99,
            mean_ms: p99 / 2.0,
            stdev_ms: 1.0,
            within_stdev_pct: 70.0,
            bytes_in: 0,
            seconds: 1.0,
            lag_p99_ms: 0.1,
            unsent: 0,
            pool_exhausted: false,
            artifacts: "logs/x".into(),
        }
    }

    const BOUND: Bound = Bound {
        quantile: 99.0,
        under_ms: 50.0,
        max_error_pct: 1.0,
        max_lag_p99_ms: MAX_LAG_P99_MS,
    };

    /// A target whose p99 is 20 ms up to `capacity` and explodes past it.
    fn target(capacity: u64) -> impl FnMut(u64) -> Result<Probe, ()> {
        move |rate| {
            let p99 = if rate <= capacity { 20.0 } else { 500.0 };
            Ok(Probe::judge(rate, &measured(rate as f64, p99), &BOUND))
        }
    }

    #[test]
    fn drawn_arrivals_are_judged_against_the_shots_the_plan_had_due_in_the_window() {
        // Poisson arrivals put 44 shots in a 1 s window of a 50/s probe: all sent.
        let mut m = measured(44.0, 10.0);
        m.responses = 44;
        m.planned = Some(44);
        assert!(Probe::judge(50, &m, &BOUND).valid);
        // 43 of the 44 due there is a generator that fell behind.
        m.responses = 43;
        let p = Probe::judge(50, &m, &BOUND);
        assert_eq!(p.reasons, ["achieved 97.7% of the rate (under 98%)"]);
    }

    #[test]
    fn a_probe_where_the_generator_fell_behind_is_invalid_and_not_a_pass() {
        let mut m = measured(900.0, 10.0);
        let p = Probe::judge(1000, &m, &BOUND);
        assert!(!p.valid && !p.passed, "{p:?}");
        assert_eq!(p.reasons, ["achieved 90.0% of the rate (under 98%)"]);
        m.achieved_rps = 1000.0;
        m.lag_p99_ms = 3.0;
        m.unsent = 5;
        let p = Probe::judge(1000, &m, &BOUND);
        assert_eq!(p.reasons, ["lag p99 3.00 ms (over 1 ms)", "5 shots unsent"]);
        assert!(!p.passed);
        m.lag_p99_ms = 0.2;
        m.unsent = 0;
        assert!(Probe::judge(1000, &m, &BOUND).passed);
    }

    #[test]
    fn late_shots_while_the_target_holds_every_instance_are_a_valid_failure() {
        let mut m = measured(700.0, 900.0);
        m.lag_p99_ms = 400.0;
        m.pool_exhausted = true;
        let p = Probe::judge(1000, &m, &BOUND);
        assert!(p.valid && !p.passed);
        assert_eq!(p.reasons[1], "p99 900.00 ms over 50 ms");
    }

    #[test]
    fn fast_errors_do_not_pass() {
        let mut m = measured(1000.0, 2.0);
        m.errors = 20;
        let p = Probe::judge(1000, &m, &BOUND);
        assert!(p.valid && !p.passed);
        assert_eq!(p.reasons, ["2.00% errors (over 1%)"]);
    }

    #[test]
    fn no_rate_meeting_the_bound_gives_no_limit() {
        let range = Range {
            from: 100,
            to: 3000,
            precision: 0.02,
        };
        let (limit, probes) = bisect(&range, target(50)).unwrap();
        assert_eq!(limit, None);
        assert_eq!(probes.last().unwrap().target_rps, 100);
        let (limit, probes) = bisect(&range, target(5000)).unwrap();
        assert_eq!(limit, Some(3000));
        assert_eq!(probes.last().unwrap().target_rps, 3000);
    }

    proptest! {
        /// The limit found is within the precision of the true one, in at most
        /// log2(range / (precision · limit)) + 3 probes.
        #[test]
        fn bisection_finds_the_capacity_within_precision(
            from in 1u64..500, span in 10u64..20_000, frac in 0.0f64..1.0,
        ) {
            let to = from + span;
            let capacity = from + (span as f64 * frac) as u64;
            let range = Range { from, to, precision: 0.02 };
            let (limit, probes) = bisect(&range, target(capacity)).unwrap();
            let limit = limit.unwrap();
            prop_assert!(limit <= capacity);
            prop_assert!((capacity - limit) as f64 <= 0.02 * limit as f64 + 1.0, "{limit} vs {capacity}");
            let bound = ((to - from) as f64 / (0.02 * limit as f64).max(1.0)).log2().max(0.0) + 3.0;
            prop_assert!(probes.len() as f64 <= bound, "{} probes, bound {bound}", probes.len());
        }
    }

    #[test]
    fn scans_step_through_the_range_and_stop_at_the_first_failure() {
        assert_eq!(scan_rates(100, 500, 200), [100, 300, 500]);
        assert_eq!(scan_rates(100, 499, 200), [100, 300]);
        let mut probe = target(350);
        let probes: Vec<Probe> = [100, 300, 500].iter().map(|&r| probe(r).unwrap()).collect();
        assert_eq!(scan_limit(&probes), Some(300));
        assert_eq!(scan_limit(&probes[2..]), None);
    }
}
