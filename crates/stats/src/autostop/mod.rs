//! Autostop: criteria that watch the finished seconds and stop a run that has gone bad, with
//! yandex-tank's syntax, semantics and exit codes (docs/reference.md, section 7), and `[rcassert]`.
//!
//! Every criterion sees every second (so their counters stay right); the first one, in the
//! order they were written, to fire in a second stops the run. (The reference lets a later
//! criterion that fires in the same second overwrite the first; tank keeps the first.)
//!
//! Where tank departs from yandex-tank 2.0.11 on purpose:
//! * `steady_cumulative` works (the reference raises NotImplementedError);
//! * `quantile` also takes 99.5, and a quantile tank does not compute is an error (the
//!   reference silently never fires);
//! * a tagged `total_time` / `negative_*` second without the tag counts as "no match"
//!   (the reference counts every response of the second as slow, or as not matching);
//! * malformed parameters are errors (see [`parse`]);
//! * `metric_higher` / `metric_lower` judge the monitoring seconds (tank-monitor's, fed
//!   through [`Autostop::observe_monitoring`]) as the reference does: a host pattern, a
//!   metric missing from a second counts as 0, a run of matching seconds fires; without
//!   `[telegraf]` / `[monitoring]` they are an error (the reference silently never fires).

mod check;
pub mod parse;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::aggregate::SecondStats;
use check::Check;
pub use parse::{CodeMask, Criterion, CriterionError, Kind, Level, MetricLimit};

/// Exit codes of a run, as yandex-tank's.
pub mod codes {
    /// The run completed.
    pub const COMPLETED: i32 = 0;
    /// The run was interrupted (Ctrl-C).
    pub const INTERRUPTED: i32 = 1;
    /// `time`, `quantile`, `limit`.
    pub const TIME: i32 = 21;
    /// `http`.
    pub const HTTP: i32 = 22;
    /// `net`.
    pub const NET: i32 = 23;
    /// `instances`.
    pub const INSTANCES: i32 = 24;
    /// `total_time`.
    pub const TOTAL_TIME: i32 = 25;
    /// `total_http`.
    pub const TOTAL_HTTP: i32 = 26;
    /// `total_net`.
    pub const TOTAL_NET: i32 = 27;
    /// `negative_http`.
    pub const NEGATIVE_HTTP: i32 = 28;
    /// `negative_net`.
    pub const NEGATIVE_NET: i32 = 29;
    /// `http_trend`.
    pub const HTTP_TREND: i32 = 30;
    /// `metric_higher`.
    pub const METRIC_HIGHER: i32 = 31;
    /// `metric_lower`.
    pub const METRIC_LOWER: i32 = 32;
    /// `steady_cumulative`.
    pub const STEADY_CUMULATIVE: i32 = 33;
    /// tank's own: an artifact (phout, test_data.log, a report) could not be
    /// written, a full disk say; the run stopped at once.
    pub const ARTIFACT_WRITE: i32 = 34;
    /// tank's own: the run ended with warnings and `fail_on_warnings` is set.
    pub const WARNINGS: i32 = 35;
}

impl Kind {
    /// The exit code the run ends with when this criterion fires.
    pub fn exit_code(&self) -> i32 {
        match self {
            Kind::Time { .. } | Kind::Quantile { .. } | Kind::Limit { .. } => codes::TIME,
            Kind::Http { .. } => codes::HTTP,
            Kind::Net { .. } => codes::NET,
            Kind::Instances { .. } => codes::INSTANCES,
            Kind::TotalTime { .. } => codes::TOTAL_TIME,
            Kind::TotalHttp { .. } => codes::TOTAL_HTTP,
            Kind::TotalNet { .. } => codes::TOTAL_NET,
            Kind::NegativeHttp { .. } => codes::NEGATIVE_HTTP,
            Kind::NegativeNet { .. } => codes::NEGATIVE_NET,
            Kind::HttpTrend { .. } => codes::HTTP_TREND,
            Kind::SteadyCumulative { .. } => codes::STEADY_CUMULATIVE,
            Kind::MetricHigher(_) => codes::METRIC_HIGHER,
            Kind::MetricLower(_) => codes::METRIC_LOWER,
        }
    }
}

/// Why a run was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReason {
    /// The exit code (21–33).
    pub code: i32,
    /// The criterion as written.
    pub criterion: String,
    /// What happened, for people.
    pub explanation: String,
    /// The second (unix seconds) that made it fire.
    pub ts: u64,
}

impl StopReason {
    /// The content of `autostop_report.txt`: the criterion as written (what yandex-tank
    /// writes), then the explanation.
    pub fn report_text(&self) -> String {
        format!("{}\n{}\n", self.criterion, self.explanation)
    }
}

/// The criteria of a run and their state.
#[derive(Debug, Clone)]
pub struct Autostop {
    checks: Vec<Check>,
    instances_limit: u64,
    stopped: Option<StopReason>,
}

impl Autostop {
    /// Read the criteria (`[autostop] autostop`, one `name(params)` each; blank ones are
    /// skipped). `instances_limit` is the configured `instances`, for `instances(N%, ...)`.
    pub fn new<S: AsRef<str>>(
        criteria: &[S],
        instances_limit: u64,
    ) -> Result<Autostop, CriterionError> {
        let mut checks = Vec::new();
        for text in criteria
            .iter()
            .map(AsRef::as_ref)
            .filter(|t| !t.trim().is_empty())
        {
            let criterion = parse::parse(text)?;
            if matches!(
                criterion.kind,
                Kind::Instances {
                    level: Level::Percent(_),
                    ..
                }
            ) && instances_limit == 0
            {
                return Err(CriterionError {
                    criterion: criterion.text,
                    problem: "a percentage of instances needs an instances limit above 0".into(),
                });
            }
            checks.push(Check::new(criterion));
        }
        Ok(Autostop {
            checks,
            instances_limit,
            stopped: None,
        })
    }

    /// True when there are no criteria.
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// Look at one more finished second; `elapsed` is the wall time since the run started
    /// (for `limit`). Returns the reason the first time a criterion fires, `None` otherwise
    /// (and always `None` afterwards: see [`Autostop::stopped`]).
    pub fn observe(&mut self, second: &SecondStats, elapsed: Duration) -> Option<StopReason> {
        if self.stopped.is_some() {
            return None;
        }
        let mut first = None;
        for check in &mut self.checks {
            if let Some(explanation) = check.observe(second, elapsed, self.instances_limit) {
                first.get_or_insert(StopReason {
                    code: check.criterion.kind.exit_code(),
                    criterion: check.criterion.text.clone(),
                    explanation,
                    ts: second.ts,
                });
            }
        }
        self.stopped = first.clone();
        first
    }

    /// Whether a criterion judges monitoring (`metric_higher`, `metric_lower`).
    pub fn watches_monitoring(&self) -> bool {
        self.checks.iter().any(|c| {
            matches!(
                c.criterion.kind,
                Kind::MetricHigher(_) | Kind::MetricLower(_)
            )
        })
    }

    /// Look at one host's monitoring second (`ts`, unix seconds): the metric
    /// criteria count it. Returns the reason the first time one fires.
    pub fn observe_monitoring(
        &mut self,
        ts: u64,
        host: &str,
        metrics: &BTreeMap<String, f64>,
    ) -> Option<StopReason> {
        if self.stopped.is_some() {
            return None;
        }
        let mut first = None;
        for check in &mut self.checks {
            if let Some(explanation) = check.observe_metric(host, metrics) {
                first.get_or_insert(StopReason {
                    code: check.criterion.kind.exit_code(),
                    criterion: check.criterion.text.clone(),
                    explanation,
                    ts,
                });
            }
        }
        self.stopped = first.clone();
        first
    }

    /// The reason the run was stopped, once a criterion has fired.
    pub fn stopped(&self) -> Option<&StopReason> {
        self.stopped.as_ref()
    }

    /// The criteria that are counting towards a stop right now, one line each (for the console).
    pub fn counting(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter_map(|c| c.status().map(str::to_string))
            .collect()
    }
}

/// `[rcassert]`: with `pass` codes given, a listed code becomes 0 and any other code
/// (0 included, as yandex-tank does) becomes `fail_code`; without them the code is kept.
pub fn rcassert(code: i32, pass: &[i32], fail_code: i32) -> i32 {
    if pass.is_empty() {
        code
    } else if pass.contains(&code) {
        0
    } else {
        fail_code
    }
}

#[cfg(test)]
mod tests;
