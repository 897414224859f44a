//! What a search, scan or sweep leaves: a table on stdout, `--json FILE`,
//! and a chart page (`report.html`) beside the probes' own artifacts.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::search::{Bound, Probe, Verdict, TRIES};
use crate::sweep::{Knee, Step};
use crate::usl::Usl;
use crate::LimitError;

/// The result of `tank search` or `tank scan`.
#[derive(Debug, Clone, Serialize)]
pub struct SearchReport {
    /// `search` or `scan`.
    pub kind: &'static str,
    /// The target (URL or config).
    pub target: String,
    /// The judged quantile, percent.
    pub quantile: f64,
    /// Its bound, ms.
    pub under_ms: f64,
    /// The highest rate that met the bound (`null`: none did, or the limit is unresolved).
    pub limit_rps: Option<u64>,
    /// `false` when a rate between the highest pass and the lowest failure
    /// stayed invalid in every try: the bracket is then all there is.
    pub resolved: bool,
    /// The bracket: `passed_rps`, `failed_rps`, `invalid_rps`.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// How many times a rate is probed while its probes are invalid.
    pub tries: u32,
    /// Every probe (every try), in the order run.
    pub probes: Vec<Probe>,
    /// What makes the result doubtful beyond the verdict (probes where nothing succeeded).
    pub warnings: Vec<String>,
}

impl SearchReport {
    /// A report of `probes` against `bound`, ending in `verdict`.
    pub fn new(
        kind: &'static str,
        target: String,
        bound: &Bound,
        verdict: Verdict,
        probes: Vec<Probe>,
        warnings: Vec<String>,
    ) -> SearchReport {
        SearchReport {
            kind,
            target,
            quantile: bound.quantile,
            under_ms: bound.under_ms,
            limit_rps: verdict.limit_rps(),
            resolved: verdict.resolved(),
            verdict,
            tries: TRIES,
            probes,
            warnings,
        }
    }

    /// The table printed at the end, then the verdict's line.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:>10} {:>5} {:>12} {:>10} {:>8} {:>10}  {}\n",
            "rate",
            "try",
            "achieved",
            format!("p{} ms", self.quantile),
            "errors",
            "lag p99",
            "verdict"
        );
        for p in &self.probes {
            let verdict = match (p.valid, p.passed) {
                (_, true) => "pass".to_owned(),
                (false, _) => format!("INVALID: {}", p.reasons.join("; ")),
                (true, false) => format!("fail: {}", p.reasons.join("; ")),
            };
            let _ = writeln!(
                out,
                "{:>10} {:>5} {:>12.1} {:>10.2} {:>7.2}% {:>10.3}  {verdict}",
                p.target_rps,
                format!("{}/{}", p.attempt, self.tries),
                p.achieved_rps,
                p.quantile_ms,
                p.error_pct,
                p.lag_p99_ms
            );
        }
        out.push_str(&self.verdict_line());
        out.push('\n');
        out
    }

    /// One line: the limit, that none meets the bound, or the bracket of an unresolved search.
    pub fn verdict_line(&self) -> String {
        let invalid = self.probes.iter().filter(|p| !p.valid).count();
        let v = &self.verdict;
        if !self.resolved {
            let bracket = match (v.passed_rps, v.failed_rps) {
                (Some(low), Some(high)) => format!("limit between {low} and {high} rps"),
                (Some(low), None) => format!("limit at least {low} rps"),
                (None, Some(high)) => format!("limit below {high} rps"),
                (None, None) => "limit".to_owned(),
            };
            let rates: Vec<String> = v.invalid_rps.iter().map(u64::to_string).collect();
            return format!(
                "{bracket}: unresolved, {invalid} probes were invalid ({} rps stayed invalid in {} tries each: \
                 tank, not the target, fell behind; run it on a quieter machine)",
                rates.join(", "),
                self.tries
            );
        }
        let retried = if invalid > 0 {
            format!(" ({invalid} invalid, tried again)")
        } else {
            String::new()
        };
        match self.limit_rps {
            Some(limit) => format!(
                "limit: {limit} rps (p{} under {} ms) after {} probes{retried}",
                self.quantile,
                self.under_ms,
                self.probes.len()
            ),
            None => format!(
                "limit: none: no rate tried kept p{} under {} ms{retried}",
                self.quantile, self.under_ms
            ),
        }
    }
}

/// The result of `tank sweep`.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// `sweep`.
    pub kind: &'static str,
    /// The target (URL or config).
    pub target: String,
    /// Every step.
    pub steps: Vec<Step>,
    /// The knee ([`crate::sweep::knee`]'s rule), `null` when there is none.
    pub knee_concurrency: Option<u32>,
    /// Why the knee is there, or why there is none.
    pub knee_why: String,
    /// The Universal Scalability Law fitted to the good throughput (`null`: withheld).
    pub usl: Option<Usl>,
    /// Why the fit is withheld (`null` when it is shown).
    pub usl_withheld: Option<String>,
    /// Steps where nothing succeeded.
    pub warnings: Vec<String>,
}

impl SweepReport {
    /// The report of `steps`: their knee and fit.
    pub fn new(target: String, steps: Vec<Step>, warnings: Vec<String>) -> SweepReport {
        let (knee_concurrency, knee_why) = match crate::sweep::knee(&steps) {
            Ok(Knee { concurrency, why }) => (Some(concurrency), why),
            Err(why) => (None, why),
        };
        let (usl, usl_withheld) = match crate::sweep::fit(&steps) {
            Ok(usl) => (Some(usl), None),
            Err(why) => (None, Some(why)),
        };
        SweepReport {
            kind: "sweep",
            target,
            steps,
            knee_concurrency,
            knee_why,
            usl,
            usl_withheld,
            warnings,
        }
    }

    /// The table printed at the end.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:>6} {:>12} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9}\n",
            "conns", "good rps", "errors", "err %", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms"
        );
        for s in &self.steps {
            let mark = if Some(s.concurrency) == self.knee_concurrency {
                "  <- knee"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{:>6} {:>12.1} {:>9} {:>7.2}% {:>9.2} {:>9.2} {:>9.2} {:>9.2}{mark}",
                s.concurrency,
                s.achieved_rps,
                s.errors,
                s.error_pct,
                s.p50_ms,
                s.p90_ms,
                s.p99_ms,
                s.p999_ms
            );
        }
        let _ = match self.knee_concurrency {
            Some(knee) => writeln!(out, "knee: {knee} connections ({})", self.knee_why),
            None => writeln!(out, "knee: none ({})", self.knee_why),
        };
        let _ = match (&self.usl, &self.usl_withheld) {
            (Some(u), _) => writeln!(
                out,
                "USL: sigma {:.5}, kappa {:.6}, gamma {:.1} rps; peak at {} connections, {} rps; R² {:.3}",
                u.sigma,
                u.kappa,
                u.gamma,
                u.peak_concurrency.map_or("no".into(), |n| format!("{n:.1}")),
                u.max_throughput.map_or("no limit".into(), |x| format!("{x:.0}")),
                u.r_squared
            ),
            (None, why) => writeln!(
                out,
                "USL: withheld: {}",
                why.as_deref().unwrap_or("not fitted")
            ),
        };
        out
    }
}

/// Writes `report` as JSON to `path`.
pub fn write_json(path: &Path, report: &impl Serialize) -> Result<(), LimitError> {
    let text = serde_json::to_string_pretty(report)
        .map_err(|e| LimitError::io("writing JSON", std::io::Error::other(e)))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| LimitError::io(&format!("writing {}", path.display()), e))
}

/// Writes the chart page of `report` to `path`.
pub fn write_page(path: &Path, title: &str, report: &impl Serialize) -> Result<(), LimitError> {
    let data = serde_json::to_value(report)
        .map_err(|e| LimitError::io("writing the page", std::io::Error::other(e)))?;
    std::fs::write(path, tank_report::html::limit(title, &data))
        .map_err(|e| LimitError::io(&format!("writing {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::tests::measured;
    use crate::search::tests::BOUND;
    use crate::search::Outcome;

    fn probe(rate: u64, attempt: u32, lag_ms: f64, p99: f64) -> Probe {
        let mut m = measured(rate as f64, p99);
        m.lag_p99_ms = lag_ms;
        Probe {
            attempt,
            ..Probe::judge(rate, &m, &BOUND)
        }
    }

    fn report(probes: Vec<Probe>, judged: &[(u64, Outcome)]) -> SearchReport {
        SearchReport::new(
            "search",
            "http://x/".into(),
            &BOUND,
            Verdict::of(judged),
            probes,
            Vec::new(),
        )
    }

    #[test]
    fn the_verdict_line_gives_the_limit_none_or_the_bracket_it_has() {
        use Outcome::{Fail, Invalid, Pass};
        let found = report(
            vec![
                probe(825, 1, 0.1, 500.0),
                probe(512, 1, 2.0, 10.0),
                probe(512, 2, 0.1, 10.0),
            ],
            &[(825, Fail), (512, Pass)],
        );
        assert_eq!(
            found.verdict_line(),
            "limit: 512 rps (p99 under 50 ms) after 3 probes (1 invalid, tried again)"
        );
        let none = report(vec![probe(100, 1, 0.1, 500.0)], &[(100, Fail)]);
        assert_eq!(
            none.verdict_line(),
            "limit: none: no rate tried kept p99 under 50 ms"
        );
        let probes = (1..=3).map(|try_| probe(825, try_, 2.9, 40.0)).collect();
        let open = report(probes, &[(1550, Fail), (825, Invalid), (512, Pass)]);
        assert!(!open.resolved && open.limit_rps.is_none());
        assert_eq!(
            open.verdict_line(),
            "limit between 512 and 1550 rps: unresolved, 3 probes were invalid (825 rps stayed \
             invalid in 3 tries each: tank, not the target, fell behind; run it on a quieter machine)"
        );
        let table = open.table();
        assert!(table.contains("  3/3 "), "{table}");
        assert!(table.lines().last().unwrap().starts_with("limit between"));
        let json = serde_json::to_value(&open).unwrap();
        assert_eq!(
            (
                &json["resolved"],
                &json["passed_rps"],
                &json["failed_rps"],
                &json["invalid_rps"][0]
            ),
            (
                &serde_json::json!(false),
                &serde_json::json!(512),
                &serde_json::json!(1550),
                &serde_json::json!(825)
            )
        );
    }

    #[test]
    fn the_sweep_table_names_the_knee_and_why_the_fit_is_withheld() {
        let step = |concurrency: u32, rps: f64, p99_ms: f64, errors: u64| Step {
            concurrency,
            achieved_rps: rps,
            p50_ms: p99_ms / 2.0,
            p90_ms: p99_ms / 1.5,
            p99_ms,
            p999_ms: p99_ms,
            errors,
            error_pct: errors as f64 / 10.0,
            artifacts: String::new(),
        };
        let report = SweepReport::new(
            "http://x/".into(),
            vec![
                step(1, 100.0, 10.0, 0),
                step(2, 200.0, 10.0, 0),
                step(4, 210.0, 20.0, 500),
            ],
            Vec::new(),
        );
        assert_eq!(report.knee_concurrency, Some(2));
        let table = report.table();
        assert!(table.contains("  <- knee"), "{table}");
        assert!(
            table.contains("knee: 2 connections (errors began at 4 connections (50.00%))"),
            "{table}"
        );
        assert!(
            table.contains("USL: withheld: steps had errors (500 at 4 connections)"),
            "{table}"
        );
    }
}
