//! The SLA search and the scan: the highest rate at which a latency quantile
//! stays under a bound, with open-model probes.
//!
//! Bisection, as mutilate's `--search`, but a probe counts only if it is
//! *valid*: the generator, not the target, must not have been the
//! bottleneck. mutilate silently reports generator-bound points; here a
//! probe whose shots went out late, too few or not at all, while instances
//! were still free (so the target was not holding them), is invalid. It is
//! run again, up to [`TRIES`] times in all, because a busy machine spoils
//! some probes and not others; a rate whose every try was invalid is never a
//! pass nor a failure. If such a rate sits between the highest pass and the
//! lowest failure, the limit is **unresolved** and the [`Verdict`] says so,
//! with the bracket it has, instead of taking the invalid rate for a bound.

use serde::Serialize;

use crate::measure::Measurement;

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
/// How many times a rate is probed while its probes are invalid: the first
/// valid try decides it; after this many invalid ones it is left unjudged.
pub const TRIES: u32 = 3;

/// One probe of a search or a scan, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Probe {
    /// The rate asked for, shots per second.
    pub target_rps: u64,
    /// Which try at this rate, from 1 (a rate is tried again while its probes are invalid).
    pub attempt: u32,
    /// Shots started per second in the window, whatever became of them.
    pub achieved_rps: f64,
    /// The judged quantile, ms (from the intended start).
    pub quantile_ms: f64,
    /// p50, p75, p90, p99, p99.9 and max, ms.
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
            _ => measured.achieved_rps() / rate.max(1) as f64,
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
            attempt: 1,
            achieved_rps: measured.achieved_rps(),
            quantile_ms: measured.quantile_ms,
            latency_ms: measured.latency.quantiles_ms.clone(),
            error_pct: measured.error_pct(),
            lag_p99_ms: measured.lag_p99_ms,
            unsent: measured.unsent,
            valid,
            passed: valid && !over && !errors && measured.responses > 0,
            reasons,
            artifacts: measured.artifacts.display().to_string(),
        }
    }

    /// What this probe says of its rate.
    pub fn outcome(&self) -> Outcome {
        match (self.valid, self.passed) {
            (_, true) => Outcome::Pass,
            (true, false) => Outcome::Fail,
            (false, false) => Outcome::Invalid,
        }
    }
}

/// What a rate came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A valid probe met the bound.
    Pass,
    /// A valid probe did not.
    Fail,
    /// Every try was invalid: the generator, not the target, fell behind.
    Invalid,
}

/// Where a search or a scan ended: the bracket it has around the limit.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Verdict {
    /// The highest rate that passed, with every rate judged below it passing
    /// (`None`: the lowest rate judged did not pass).
    pub passed_rps: Option<u64>,
    /// The lowest rate above it that failed on a valid probe (`None`: none did).
    pub failed_rps: Option<u64>,
    /// Rates from `passed_rps` up to `failed_rps` whose every try was
    /// invalid: the limit may lie on either side of each.
    pub invalid_rps: Vec<u64>,
}

impl Verdict {
    /// The verdict of rates judged in any order (each rate once): the first
    /// rate, going up, that did not pass ends the passes; if it failed, the
    /// limit is the last pass below it (or none meets the bound); if it was
    /// invalid, the limit is unresolved between that pass and the next
    /// failure above.
    pub fn of(judged: &[(u64, Outcome)]) -> Verdict {
        let mut sorted = judged.to_vec();
        sorted.sort_by_key(|&(rate, _)| rate);
        let end = sorted
            .iter()
            .position(|&(_, o)| o != Outcome::Pass)
            .unwrap_or(sorted.len());
        let (passes, rest) = sorted.split_at(end);
        Verdict {
            passed_rps: passes.last().map(|&(rate, _)| rate),
            failed_rps: rest
                .iter()
                .find(|&&(_, o)| o == Outcome::Fail)
                .map(|&(rate, _)| rate),
            invalid_rps: rest
                .iter()
                .take_while(|&&(_, o)| o != Outcome::Fail)
                .filter(|&&(_, o)| o == Outcome::Invalid)
                .map(|&(rate, _)| rate)
                .collect(),
        }
    }

    /// No invalid rate stands between the highest pass and the lowest failure.
    pub fn resolved(&self) -> bool {
        self.invalid_rps.is_empty() && (self.passed_rps.is_some() || self.failed_rps.is_some())
    }

    /// The limit: the highest passing rate, when resolved.
    pub fn limit_rps(&self) -> Option<u64> {
        self.passed_rps.filter(|_| self.resolved())
    }
}

/// Probes rates, each up to [`TRIES`] times while its probes are invalid,
/// and keeps every probe and each rate's outcome.
struct Judge<F> {
    probe: F,
    probes: Vec<Probe>,
    judged: Vec<(u64, Outcome)>,
}

impl<E, F: FnMut(u64, u32) -> Result<Option<Probe>, E>> Judge<F> {
    fn new(probe: F) -> Judge<F> {
        Judge {
            probe,
            probes: Vec::new(),
            judged: Vec::new(),
        }
    }

    /// The outcome of `rate`: its first valid try's, or invalid after
    /// [`TRIES`]; `None` when the search was stopped before it was judged.
    fn rate(&mut self, rate: u64) -> Result<Option<Outcome>, E> {
        let mut outcome = Outcome::Invalid;
        for attempt in 1..=TRIES {
            let Some(mut probe) = (self.probe)(rate, attempt)? else {
                return Ok(None);
            };
            probe.attempt = attempt;
            outcome = probe.outcome();
            self.probes.push(probe);
            if outcome != Outcome::Invalid {
                break;
            }
        }
        self.judged.push((rate, outcome));
        Ok(Some(outcome))
    }

    fn finish(self) -> (Verdict, Vec<Probe>) {
        (Verdict::of(&self.judged), self.probes)
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

/// Bisects `range` with `probe` (a rate and its try, from 1 → the judged
/// probe, or `None` to stop: the search was interrupted and this probe is
/// not judged) and returns the verdict of the rates judged and every probe
/// in order.
///
/// Only midpoints are probed while they bracket the limit; `from` is probed
/// only if no midpoint passed, `to` only if every one did. A midpoint that
/// stays invalid is treated as the top of the bracket while searching (the
/// passes below it still narrow the bracket from beneath), but never as a
/// failure in the verdict. So a search judges at most
/// ⌈log2((to − from) / (precision · limit))⌉ + 1 rates, each in up to [`TRIES`] probes.
pub fn bisect<E>(
    range: &Range,
    probe: impl FnMut(u64, u32) -> Result<Option<Probe>, E>,
) -> Result<(Verdict, Vec<Probe>), E> {
    let mut judge = Judge::new(probe);
    let (mut low, mut high) = (range.from, range.to);
    let (mut low_passed, mut high_judged) = (false, false);
    while high > low + 1 && (high - low) as f64 > range.precision * low.max(1) as f64 {
        let mid = low + (high - low) / 2;
        match judge.rate(mid)? {
            None => return Ok(judge.finish()),
            Some(Outcome::Pass) => {
                low = mid;
                low_passed = true;
            }
            Some(_) => {
                high = mid;
                high_judged = true;
            }
        }
    }
    if !high_judged {
        match judge.rate(range.to)? {
            None => return Ok(judge.finish()),
            // Every midpoint passed (or there were none), and so did the top.
            Some(Outcome::Pass) => low_passed = true,
            Some(_) => {}
        }
    }
    if !low_passed {
        judge.rate(range.from)?;
    }
    Ok(judge.finish())
}

/// The rates of a scan `lo:hi:step`, in order.
pub fn scan_rates(from: u64, to: u64, step: u64) -> Vec<u64> {
    let step = step.max(1);
    (0..)
        .map(|k: u64| from.saturating_add(k.saturating_mul(step)))
        .take_while(|&rate| rate <= to)
        .collect()
}

/// Probes every rate of `rates` in order (each up to [`TRIES`] times while
/// invalid; `probe` gives `None` to stop, as for [`bisect`]) and returns the
/// verdict: the limit is the highest rate passing with every rate below it
/// passing.
pub fn scan<E>(
    rates: &[u64],
    probe: impl FnMut(u64, u32) -> Result<Option<Probe>, E>,
) -> Result<(Verdict, Vec<Probe>), E> {
    let mut judge = Judge::new(probe);
    for &rate in rates {
        if judge.rate(rate)?.is_none() {
            break;
        }
    }
    Ok(judge.finish())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::measure::tests::measured;
    use proptest::prelude::*;

    /// p99 under 50 ms, 1% errors, 1 ms of lag.
    pub(crate) const BOUND: Bound = Bound {
        quantile: 99.0,
        under_ms: 50.0,
        max_error_pct: 1.0,
        max_lag_p99_ms: MAX_LAG_P99_MS,
    };

    /// A target whose p99 is 20 ms up to `capacity` and explodes past it.
    fn target(capacity: u64) -> impl FnMut(u64, u32) -> Result<Option<Probe>, ()> {
        move |rate, _| {
            let p99 = if rate <= capacity { 20.0 } else { 500.0 };
            Ok(Some(Probe::judge(
                rate,
                &measured(rate as f64, p99),
                &BOUND,
            )))
        }
    }

    /// The same target, tested from a generator that lags past 1 ms at
    /// `lagging` rates on their first `spoiled` tries.
    fn busy(
        capacity: u64,
        lagging: impl Fn(u64) -> bool,
        spoiled: u32,
    ) -> impl FnMut(u64, u32) -> Result<Option<Probe>, ()> {
        move |rate, attempt| {
            let p99 = if rate <= capacity { 20.0 } else { 500.0 };
            let mut m = measured(rate as f64, p99);
            if lagging(rate) && attempt <= spoiled {
                m.lag_p99_ms = 2.9;
            }
            Ok(Some(Probe::judge(rate, &m, &BOUND)))
        }
    }

    /// `inner`, stopped (interrupted) at its `after`-th call.
    fn stopped_after(
        after: usize,
        mut inner: impl FnMut(u64, u32) -> Result<Option<Probe>, ()>,
    ) -> impl FnMut(u64, u32) -> Result<Option<Probe>, ()> {
        let mut calls = 0;
        move |rate, attempt| {
            calls += 1;
            if calls >= after {
                return Ok(None);
            }
            inner(rate, attempt)
        }
    }

    #[test]
    fn a_stopped_search_gives_the_verdict_of_the_rates_judged_before() {
        // 1550 passes, 2275 fails; the third probe (1912) is stopped.
        let (verdict, probes) = bisect(&RANGE, stopped_after(3, target(2000))).unwrap();
        assert_eq!(
            probes.iter().map(|p| p.target_rps).collect::<Vec<_>>(),
            [1550, 2275]
        );
        assert_eq!(verdict.passed_rps, Some(1550));
        assert_eq!(verdict.failed_rps, Some(2275));
        // A scan stopped at its second rate judges its first only.
        let (verdict, probes) = scan(&[100, 300, 500], stopped_after(2, target(350))).unwrap();
        assert_eq!(probes.len(), 1);
        assert_eq!(verdict.passed_rps, Some(100));
        assert_eq!(verdict.failed_rps, None);
    }

    const RANGE: Range = Range {
        from: 100,
        to: 3000,
        precision: 0.02,
    };

    #[test]
    fn drawn_arrivals_are_judged_against_the_shots_the_plan_had_due_in_the_window() {
        // Poisson arrivals put 44 shots in a 1 s window of a 50/s probe: all sent.
        let mut m = measured(44.0, 10.0);
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
        assert_eq!(p.outcome(), Outcome::Invalid);
        assert_eq!(p.reasons, ["achieved 90.0% of the rate (under 98%)"]);
        m.responses = 1000;
        m.lag_p99_ms = 3.0;
        m.unsent = 5;
        let p = Probe::judge(1000, &m, &BOUND);
        assert_eq!(p.reasons, ["lag p99 3.00 ms (over 1 ms)", "5 shots unsent"]);
        assert!(!p.passed);
        m.lag_p99_ms = 0.2;
        m.unsent = 0;
        assert_eq!(Probe::judge(1000, &m, &BOUND).outcome(), Outcome::Pass);
    }

    #[test]
    fn late_shots_while_the_target_holds_every_instance_are_a_valid_failure() {
        let mut m = measured(700.0, 900.0);
        m.lag_p99_ms = 400.0;
        m.pool_exhausted = true;
        let p = Probe::judge(1000, &m, &BOUND);
        assert_eq!(p.outcome(), Outcome::Fail);
        assert_eq!(p.reasons[1], "p99 900.00 ms over 50 ms");
    }

    #[test]
    fn fast_errors_do_not_pass() {
        let mut m = measured(1000.0, 2.0);
        m.errors = 20;
        let p = Probe::judge(1000, &m, &BOUND);
        assert_eq!(p.outcome(), Outcome::Fail);
        assert_eq!(p.reasons, ["2.00% errors (over 1%)"]);
    }

    #[test]
    fn no_rate_meeting_the_bound_gives_no_limit() {
        let (verdict, probes) = bisect(&RANGE, target(50)).unwrap();
        assert!(verdict.resolved());
        assert_eq!(verdict.limit_rps(), None);
        assert_eq!(verdict.failed_rps, Some(100));
        assert_eq!(probes.last().unwrap().target_rps, 100);
        let (verdict, probes) = bisect(&RANGE, target(5000)).unwrap();
        assert_eq!(verdict.limit_rps(), Some(3000));
        assert_eq!(probes.last().unwrap().target_rps, 3000);
    }

    #[test]
    fn an_invalid_probe_is_tried_again_and_the_valid_try_decides() {
        // Every rate's first try lags (a busy moment); the second is clean.
        let (verdict, probes) = bisect(&RANGE, busy(800, |_| true, 1)).unwrap();
        let limit = verdict.limit_rps().unwrap();
        assert!((784..=800).contains(&limit), "{verdict:?}");
        assert!(probes.chunks(2).all(|pair| pair[0].attempt == 1
            && !pair[0].valid
            && pair[1].attempt == 2
            && pair[1].valid
            && pair[0].target_rps == pair[1].target_rps));
    }

    #[test]
    fn a_rate_invalid_in_every_try_is_never_a_bracket_and_leaves_the_limit_unresolved() {
        // The generator cannot keep up from 700 rps: what the old search took
        // for failures, and answered with a confident limit under 700.
        let (verdict, probes) = bisect(&RANGE, busy(800, |r| r >= 700, TRIES)).unwrap();
        assert!(!verdict.resolved(), "{verdict:?}");
        assert_eq!(verdict.limit_rps(), None);
        let passed = verdict.passed_rps.unwrap();
        assert!((680..700).contains(&passed), "{verdict:?}");
        // Every rate tried above it lagged, so none failed on a valid probe.
        assert_eq!(verdict.failed_rps, None, "{verdict:?}");
        assert!(verdict.invalid_rps.iter().all(|&r| r >= 700));
        assert!(verdict.invalid_rps.contains(&1550));
        // Each invalid rate was tried TRIES times, and said so.
        for rate in &verdict.invalid_rps {
            let tries: Vec<u32> = probes
                .iter()
                .filter(|p| p.target_rps == *rate)
                .map(|p| p.attempt)
                .collect();
            assert_eq!(tries, [1, 2, 3]);
        }
        // A generator that lags only above the capacity does no harm: the
        // failure below it is valid and the limit is resolved.
        let (verdict, _) = bisect(&RANGE, busy(800, |r| r >= 1000, TRIES)).unwrap();
        assert!(verdict.resolved(), "{verdict:?}");
        assert!((784..=800).contains(&verdict.limit_rps().unwrap()));
        assert!(verdict.invalid_rps.is_empty());
    }

    #[test]
    fn verdicts_read_the_first_rate_that_did_not_pass() {
        use Outcome::{Fail, Invalid, Pass};
        let v = Verdict::of(&[(300, Fail), (100, Pass), (200, Pass)]);
        assert_eq!((v.limit_rps(), v.failed_rps), (Some(200), Some(300)));
        let v = Verdict::of(&[(100, Fail), (200, Pass)]);
        assert!(v.resolved() && v.limit_rps().is_none());
        let v = Verdict::of(&[
            (100, Pass),
            (200, Invalid),
            (300, Pass),
            (400, Invalid),
            (500, Fail),
        ]);
        assert_eq!(
            v,
            Verdict {
                passed_rps: Some(100),
                failed_rps: Some(500),
                invalid_rps: vec![200, 400],
            }
        );
        assert!(!v.resolved());
        // An invalid rate above a failure does not matter.
        let v = Verdict::of(&[(100, Pass), (200, Fail), (300, Invalid)]);
        assert!(v.resolved() && v.limit_rps() == Some(100));
        assert!(!Verdict::of(&[]).resolved());
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
            let (verdict, probes) = bisect(&range, target(capacity)).unwrap();
            let limit = verdict.limit_rps().unwrap();
            prop_assert!(limit <= capacity);
            prop_assert!((capacity - limit) as f64 <= 0.02 * limit as f64 + 1.0, "{limit} vs {capacity}");
            let bound = ((to - from) as f64 / (0.02 * limit as f64).max(1.0)).log2().max(0.0) + 3.0;
            prop_assert!(probes.len() as f64 <= bound, "{} probes, bound {bound}", probes.len());
        }

        /// Whatever rates a busy generator spoils, the search never states a
        /// limit the target does not have: a resolved limit is within the
        /// precision under the capacity, and an unresolved bracket holds it.
        #[test]
        fn a_spoiled_probe_never_gives_a_confident_wrong_limit(
            capacity in 200u64..2900, spoiled in proptest::collection::vec(any::<bool>(), 64),
            tries in 1u32..=TRIES,
        ) {
            let lagging = move |rate: u64| spoiled[(rate as usize * 7919) % 64];
            let (verdict, _) = bisect(&RANGE, busy(capacity, lagging, tries)).unwrap();
            match verdict.limit_rps() {
                Some(limit) => prop_assert!(
                    limit <= capacity && (capacity - limit) as f64 <= 0.02 * limit as f64 + 1.0,
                    "{verdict:?} for {capacity}"
                ),
                None => {
                    prop_assert!(!verdict.resolved(), "{verdict:?} for {capacity}");
                    prop_assert!(verdict.passed_rps.is_none_or(|p| p <= capacity));
                    prop_assert!(verdict.failed_rps.is_none_or(|f| f > capacity));
                }
            }
        }
    }

    #[test]
    fn scans_step_through_the_range_and_stop_at_the_first_failure() {
        assert_eq!(scan_rates(100, 500, 200), [100, 300, 500]);
        assert_eq!(scan_rates(100, 499, 200), [100, 300]);
        let (verdict, probes) = scan(&[100, 300, 500], target(350)).unwrap();
        assert_eq!(probes.len(), 3);
        assert_eq!(verdict.limit_rps(), Some(300));
        let (verdict, _) = scan(&[500], target(350)).unwrap();
        assert!(verdict.resolved() && verdict.limit_rps().is_none());
        // A row invalid in every try leaves the scan unresolved above the last pass.
        let (verdict, probes) = scan(&[100, 300, 500], busy(350, |r| r == 300, TRIES)).unwrap();
        assert_eq!(probes.len(), 5);
        assert_eq!(
            verdict,
            Verdict {
                passed_rps: Some(100),
                failed_rps: Some(500),
                invalid_rps: vec![300],
            }
        );
    }
}
