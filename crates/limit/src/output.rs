//! What a search, scan or sweep leaves: a table on stdout, `--json FILE`,
//! and a chart page (`report.html`) beside the probes' own artifacts.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::search::{Bound, Probe};
use crate::sweep::Step;
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
    /// The highest rate that met the bound (`null`: none did).
    pub limit_rps: Option<u64>,
    /// Every probe, in the order run.
    pub probes: Vec<Probe>,
}

impl SearchReport {
    /// A report of `probes` against `bound`.
    pub fn new(
        kind: &'static str,
        target: String,
        bound: &Bound,
        limit_rps: Option<u64>,
        probes: Vec<Probe>,
    ) -> SearchReport {
        SearchReport {
            kind,
            target,
            quantile: bound.quantile,
            under_ms: bound.under_ms,
            limit_rps,
            probes,
        }
    }

    /// The table printed at the end.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:>10} {:>12} {:>10} {:>8} {:>10}  {}\n",
            "rate",
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
                "{:>10} {:>12.1} {:>10.2} {:>7.2}% {:>10.3}  {verdict}",
                p.target_rps, p.achieved_rps, p.quantile_ms, p.error_pct, p.lag_p99_ms
            );
        }
        let _ = match self.limit_rps {
            Some(limit) => writeln!(
                out,
                "limit: {limit} rps (p{} under {} ms) after {} probes",
                self.quantile,
                self.under_ms,
                self.probes.len()
            ),
            None => writeln!(
                out,
                "limit: none: no rate tried kept p{} under {} ms",
                self.quantile, self.under_ms
            ),
        };
        out
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
    /// The first step whose p99 doubled the first one's or whose errors passed 1%.
    pub knee_concurrency: Option<u32>,
    /// The Universal Scalability Law fitted to the throughput.
    pub usl: Option<Usl>,
}

impl SweepReport {
    /// The table printed at the end.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:>6} {:>12} {:>9} {:>9} {:>9} {:>9} {:>8}\n",
            "conns", "rps", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "errors"
        );
        for s in &self.steps {
            let mark = if Some(s.concurrency) == self.knee_concurrency {
                "  <- knee"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{:>6} {:>12.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>7.2}%{mark}",
                s.concurrency, s.achieved_rps, s.p50_ms, s.p90_ms, s.p99_ms, s.p999_ms, s.error_pct
            );
        }
        let _ = match self.knee_concurrency {
            Some(knee) => writeln!(out, "knee: {knee} connections"),
            None => writeln!(
                out,
                "knee: none (p99 never doubled, errors stayed under 1%)"
            ),
        };
        let _ = match &self.usl {
            Some(u) => writeln!(
                out,
                "USL: sigma {:.5}, kappa {:.6}, gamma {:.1} rps; peak at {} connections, {} rps; R² {:.3}",
                u.sigma,
                u.kappa,
                u.gamma,
                u.peak_concurrency.map_or("no".into(), |n| format!("{n:.1}")),
                u.max_throughput.map_or("no limit".into(), |x| format!("{x:.0}")),
                u.r_squared
            ),
            None => writeln!(out, "USL: not fitted (fewer than 3 steps with responses)"),
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
