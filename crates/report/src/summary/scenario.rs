//! A scenario run's summary rows (`ammo_type = scenario`): the runs, how they
//! ended, and the failures by request and reason. The rows of a run's
//! requests are in the totals and per-tag rows like any shot's; a failed
//! step's row carries its code (901 assertion failed, 902 variable not set,
//! 903 extraction failed: docs/scenarios.md), and these rows say why.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Summary;
use crate::warnings::SHARE_PERCENT;

/// The scenario queues' runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ScenarioRow {
    /// Runs the plans held (`None`: not known, as a closed model stopped early).
    pub runs_planned: Option<u64>,
    /// Runs started.
    pub runs_started: u64,
    /// Runs that went through every step.
    pub runs_completed: u64,
    /// Runs a scenario failure ended (counted by reason in `failures`).
    pub runs_failed: u64,
    /// Runs a network failure ended (see the net codes).
    pub runs_broken: u64,
    /// Runs cut short by the end of the test.
    pub runs_stopped: u64,
    /// Failures by queue, request and reason, most frequent first.
    pub failures: Vec<FailureRow>,
}

/// How often one request failed for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureRow {
    /// The queue (its section).
    pub queue: String,
    /// The request's name.
    pub request: String,
    /// The net code its rows carry.
    pub code: u16,
    /// What failed.
    pub reason: String,
    /// Runs it ended.
    pub count: u64,
}

impl ScenarioRow {
    /// Add another queue's runs.
    pub fn add(&mut self, other: ScenarioRow) {
        self.runs_planned = match (self.runs_planned, other.runs_planned) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.runs_started += other.runs_started;
        self.runs_completed += other.runs_completed;
        self.runs_failed += other.runs_failed;
        self.runs_broken += other.runs_broken;
        self.runs_stopped += other.runs_stopped;
        self.failures.extend(other.failures);
        self.failures
            .sort_by(|a, b| b.count.cmp(&a.count).then(a.request.cmp(&b.request)));
    }
}

impl Summary {
    /// Set the scenario rows, and warn when 1% or more of the runs failed.
    pub fn set_scenarios(&mut self, row: ScenarioRow) {
        let ended = row.runs_failed + row.runs_broken;
        if row.runs_started > 0 && ended as f64 * 100.0 / row.runs_started as f64 >= SHARE_PERCENT {
            let mut warning = format!(
                "{ended} of {} scenario runs ({:.1}%) ended early",
                row.runs_started,
                ended as f64 * 100.0 / row.runs_started as f64
            );
            if row.runs_broken > 0 {
                let _ = write!(warning, ": {} on a network failure", row.runs_broken);
            }
            let reasons: Vec<String> = row
                .failures
                .iter()
                .take(3)
                .map(|f| format!("{} {}: {} × {}", f.code, f.request, f.reason, f.count))
                .collect();
            if !reasons.is_empty() {
                let _ = write!(
                    warning,
                    "{} {}",
                    if row.runs_broken > 0 { ";" } else { ":" },
                    reasons.join(", ")
                );
            }
            self.warnings.push(warning);
        }
        // Runs the plan had due that no instance was free to start (a shot
        // of another ammo warns the same way, by its unsent count).
        if let (Some(planned), None) = (row.runs_planned, &self.stopped) {
            let unstarted = planned.saturating_sub(row.runs_started);
            if unstarted > 0 && unstarted as f64 * 100.0 / planned as f64 >= SHARE_PERCENT {
                self.warnings.push(format!(
                    "{unstarted} of {planned} planned scenario runs ({:.1}%) were not started: \
                     every instance was busy with a run when they were due (more `instances`, \
                     or shorter runs)",
                    unstarted as f64 * 100.0 / planned as f64
                ));
            }
        }
        // A 902 step is a row like any failed shot's, but with nothing sent and
        // no time: the counts and the latency figures include it at 0 ms.
        let unsent = self.net_codes.get("902").copied().unwrap_or(0);
        if unsent > 0 {
            self.warnings.push(format!(
                "{unsent} of {} rows are steps never sent (902, a variable not set): they count \
                 as shots sent, and at 0 ms in the latency quantiles and averages",
                self.shots.responses
            ));
        }
        self.scenarios = Some(row);
    }

    /// The scenario rows as text (empty without scenarios).
    pub(super) fn scenarios_text(&self, out: &mut String) {
        let Some(row) = &self.scenarios else {
            return;
        };
        let _ = write!(out, "\nscenario runs: started {}", row.runs_started);
        if let Some(planned) = row.runs_planned {
            let _ = write!(out, " of {planned} planned");
        }
        let _ = writeln!(
            out,
            ", completed {}, failed {}, ended by the network {}, cut short {}",
            row.runs_completed, row.runs_failed, row.runs_broken, row.runs_stopped
        );
        if row.failures.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "{:<20} {:>5} {:>10}  reason",
            "failed request", "code", "runs"
        );
        for failure in &row.failures {
            let _ = writeln!(
                out,
                "{:<20} {:>5} {:>10}  {}",
                failure.request, failure.code, failure.count, failure.reason
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(started: u64, failed: u64) -> ScenarioRow {
        ScenarioRow {
            runs_planned: Some(started),
            runs_started: started,
            runs_completed: started - failed,
            runs_failed: failed,
            failures: vec![FailureRow {
                queue: "phantom".into(),
                request: "auth".into(),
                code: 901,
                reason: "assert/response: status_code 200".into(),
                count: failed,
            }],
            ..ScenarioRow::default()
        }
    }

    #[test]
    fn failures_are_printed_and_warned_about() {
        let mut summary = crate::summary::tests::sample_summary();
        summary.warnings.clear();
        summary.set_scenarios(row(200, 4));
        let text = summary.to_text();
        assert!(
            text.contains("scenario runs: started 200 of 200 planned, completed 196, failed 4"),
            "{text}"
        );
        assert!(
            text.contains(
                "auth                   901          4  assert/response: status_code 200"
            ),
            "{text}"
        );
        assert_eq!(
            summary.warnings.last().unwrap(),
            "4 of 200 scenario runs (2.0%) ended early: 901 auth: assert/response: status_code 200 × 4"
        );
        let mut quiet = crate::summary::tests::sample_summary();
        quiet.warnings.clear();
        quiet.set_scenarios(row(1000, 1));
        assert!(quiet.warnings.is_empty());
    }

    #[test]
    fn runs_never_started_are_warned_about_unless_the_run_was_stopped() {
        let mut summary = crate::summary::tests::sample_summary();
        summary.warnings.clear();
        summary.stopped = None;
        summary.set_scenarios(ScenarioRow {
            runs_planned: Some(3),
            runs_started: 1,
            runs_completed: 1,
            ..ScenarioRow::default()
        });
        assert_eq!(
            summary.warnings,
            [
                "2 of 3 planned scenario runs (66.7%) were not started: every instance was busy \
              with a run when they were due (more `instances`, or shorter runs)"
            ]
        );
        let mut stopped = crate::summary::tests::sample_summary();
        stopped.warnings.clear();
        stopped.stopped = Some(crate::summary::Stop {
            cause: crate::summary::StopCause::Interrupted,
            after_s: Some(1.0),
            due: None,
        });
        stopped.set_scenarios(ScenarioRow {
            runs_planned: Some(3),
            runs_started: 1,
            runs_completed: 1,
            ..ScenarioRow::default()
        });
        assert!(stopped.warnings.is_empty(), "{:?}", stopped.warnings);
    }

    #[test]
    fn steps_never_sent_are_named_as_counted_at_zero_ms() {
        let mut summary = crate::summary::tests::sample_summary();
        summary.warnings.clear();
        summary.shots.responses = 36;
        summary.net_codes.insert("902".into(), 2);
        summary.set_scenarios(row(1000, 1));
        assert_eq!(
            summary.warnings,
            [
                "2 of 36 rows are steps never sent (902, a variable not set): they count as shots \
              sent, and at 0 ms in the latency quantiles and averages"
            ]
        );
    }

    #[test]
    fn queues_add_up() {
        let mut total = row(10, 1);
        total.add(row(20, 2));
        assert_eq!(
            (total.runs_planned, total.runs_started, total.runs_failed),
            (Some(30), 30, 3)
        );
        assert_eq!(total.failures[0].count, 2);
        total.add(ScenarioRow {
            runs_planned: None,
            ..ScenarioRow::default()
        });
        assert_eq!(total.runs_planned, None);
    }
}
