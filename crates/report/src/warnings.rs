//! The warnings a run ends with: the things that make its numbers untrustworthy
//! or say that nothing worked, named at the end of the console, in summary.txt,
//! summary.json and report.html. `fail_on_warnings` turns them into an exit code.
//!
//! Each one has a threshold so that a healthy run has none: a few timeouts in a
//! long run are data (the codes table shows them); 1% of the shots failing, or
//! not sent, is something the user must not miss.

use std::collections::BTreeMap;

use crate::names::{net_reason, ProtoCodes};
use crate::summary::Shots;

/// Shares, of the responses or of the plan, from which a failure is worth a warning.
pub const SHARE_PERCENT: f64 = 1.0;

/// What the warnings are judged on.
pub struct Facts<'a> {
    /// The shot counts.
    pub shots: &'a Shots,
    /// Net codes: code → count.
    pub net_codes: &'a BTreeMap<String, u64>,
    /// HTTP codes: code → count.
    pub proto_codes: &'a BTreeMap<String, u64>,
    /// What the proto codes are (HTTP statuses, MySQL error numbers, ...).
    pub kind: ProtoCodes,
    /// Whether this is a run (the engine's counts are known) rather than a phout.
    pub run: bool,
    /// How the run was stopped before its plan ended (Ctrl-C, autostop), if it
    /// was: then only the shots due before the stop were expected to be sent.
    pub stop: Option<crate::summary::Stop>,
    /// The most instances busy at once, and how many there were (a run's).
    pub instances: Option<(u64, u64)>,
    /// The largest lag of a shot behind its due time, ms (a run's).
    pub lag_max_ms: Option<f64>,
    /// The 99th percentile of that lag, ms (a run's).
    pub lag_p99_ms: Option<f64>,
}

/// Lag p99 from which a run's timing is worth a warning: one shot in a
/// hundred fired over a second after it was due.
pub const LATE_P99_MS: f64 = 1000.0;

/// The warnings, most serious first.
pub fn judge(facts: &Facts) -> Vec<String> {
    let shots = facts.shots;
    let mut out = Vec::new();
    if facts.run && shots.sent == Some(0) {
        out.push("no shot was fired".to_string());
    }
    let responses = shots.responses;
    // A scenario's failures (901 to 903) are not the network's: their own warning says them.
    let network = |code: &str| {
        code != "0"
            && !code
                .parse::<u16>()
                .is_ok_and(|c| tank_stats::NetCode(c).is_scenario_failure())
    };
    let net_errors: u64 = facts
        .net_codes
        .iter()
        .filter(|(code, _)| network(code))
        .map(|(_, n)| n)
        .sum();
    if responses > 0 && net_errors > 0 && percent(net_errors, responses) >= SHARE_PERCENT {
        let lead = if net_errors == responses {
            "every shot failed at the network level".to_string()
        } else {
            format!(
                "{net_errors} of {responses} shots ({:.1}%) failed at the network level",
                percent(net_errors, responses)
            )
        };
        out.push(format!("{lead}: {}", net_breakdown(facts.net_codes)));
    }
    let http_errors: u64 = facts
        .proto_codes
        .iter()
        .filter(|(code, _)| code.parse::<u16>().is_ok_and(|c| c >= 400))
        .map(|(_, n)| n)
        .sum();
    if responses > 0 && http_errors == responses {
        // Named by the protocol: a MySQL run's errors are the server's error numbers.
        let error = facts.kind.error();
        out.push(format!(
            "every response was {error}: {responses} of {responses}"
        ));
    }
    let busy = why_unsent(facts);
    match (facts.stop, shots.planned, shots.unsent) {
        (None, Some(planned), Some(unsent))
            if unsent > 0 && percent(unsent, planned) >= SHARE_PERCENT =>
        {
            out.push(format!(
                "{unsent} of {planned} planned shots ({:.1}%) were not sent: {busy}",
                percent(unsent, planned)
            ));
        }
        (Some(stop), _, _) => {
            // Stopped: the shots due later were never meant to be sent yet.
            let sent = shots.sent.unwrap_or(0);
            if let Some(due) = stop.due {
                let unsent = due.saturating_sub(sent);
                if unsent > 0 && percent(unsent, due) >= SHARE_PERCENT {
                    out.push(format!(
                        "{unsent} of the {due} shots due over a second before the stop ({:.1}%) were not \
                         sent: {busy}",
                        percent(unsent, due)
                    ));
                }
            }
        }
        _ => {}
    }
    if let (Some(p99), Some(max)) = (facts.lag_p99_ms, facts.lag_max_ms) {
        if facts.run && p99 >= LATE_P99_MS {
            out.push(format!(
                "the plan's timing was not kept: one shot in a hundred went over {:.1} s late \
                 (lag p99 {:.1} s, max {:.1} s), so the rates and times are of a slower load \
                 than planned: {}",
                p99 / 1000.0,
                p99 / 1000.0,
                max / 1000.0,
                why_late(facts)
            ));
        }
    }
    if shots.dropped > 0 {
        out.push(format!(
            "{} samples were dropped: the results thread fell behind, so these shots have no phout row",
            shots.dropped
        ));
    }
    if shots.answers_dropped > 0 {
        out.push(format!(
            "{} answers-log entries were dropped: the answers thread fell behind, so answ.log \
             lacks them (log fewer shots: writelog = proto_warning or proto_error)",
            shots.answers_dropped
        ));
    }
    if shots.late > 0 {
        out.push(format!(
            "{} responses arrived after their second was final: they are in the totals but in no \
             second (raise `buffered_seconds`)",
            shots.late
        ));
    }
    out
}

/// Whether `warning` is one [`judge`] gives from a run's counts (its shots,
/// codes and stop), which a merge of shards judges again over the merged
/// counts: a shard's own then only repeats it with its share's numbers.
pub fn judged_on_counts(warning: &str) -> bool {
    warning == "no shot was fired"
        || warning.starts_with("every shot failed at the network level")
        || warning.contains(" failed at the network level: ")
        || warning.starts_with("every response was ")
        || (warning.contains(" planned shots (") && warning.contains(" were not sent: "))
        || warning.contains(" shots due over a second before the stop (")
}

/// Why due shots went unsent: every instance was busy, or, with instances to
/// spare, tank itself fell behind the plan (a machine short of CPU).
fn why_unsent(facts: &Facts) -> String {
    match (facts.instances, facts.lag_max_ms) {
        (Some((peak, pool)), Some(lag)) if peak < pool => format!(
            "tank fell behind the plan and the schedule ended first: its lag reached \
             {lag:.0} ms while at most {peak} of the {pool} instances were busy, so the \
             machine was short of CPU for this rate (of new connections, if each shot \
             opens one): fewer processes or targets per core, a slower ramp, or more \
             machines"
        ),
        (Some(_), _) => "every instance was busy when they were due (raise `instances`, or \
                         the target is slower than the plan)"
            .to_string(),
        (None, _) => "the schedule ended before they were fired: every instance was busy, or \
                      tank fell behind the plan (each run's own summary says which)"
            .to_string(),
    }
}

/// Why shots went late: every instance was held (a replay's pool is the
/// capture's peak of open sessions), or tank itself fell behind.
fn why_late(facts: &Facts) -> &'static str {
    match facts.instances {
        Some((peak, pool)) if peak < pool => {
            "tank fell behind with instances to spare (the machine was short of CPU)"
        }
        Some(_) => {
            "every instance was busy when shots were due (raise `instances`, or the target is \
             slower than the plan)"
        }
        None => "every instance was busy, or tank fell behind the plan",
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// `111 connection refused × 600, 110 timed out × 3`, the most frequent first.
fn net_breakdown(codes: &BTreeMap<String, u64>) -> String {
    let mut errors: Vec<(&String, &u64)> = codes
        .iter()
        .filter(|(c, _)| {
            *c != "0"
                && !c
                    .parse::<u16>()
                    .is_ok_and(|c| tank_stats::NetCode(c).is_scenario_failure())
        })
        .collect();
    errors.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    errors
        .iter()
        .map(|(code, n)| {
            let name = code.parse().map(net_reason).unwrap_or("error");
            format!("{code} {name} × {n}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{Stop, StopCause};

    fn shots(planned: Option<u64>, sent: u64, responses: u64) -> Shots {
        Shots {
            planned,
            sent: Some(sent),
            unsent: planned.map(|p| p.saturating_sub(sent)),
            responses,
            late: 0,
            dropped: 0,
            retries: Some(0),
            answers_dropped: 0,
        }
    }

    fn codes(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(c, n)| (c.to_string(), *n)).collect()
    }

    fn judge_run(
        shots: &Shots,
        net: &[(&str, u64)],
        http: &[(&str, u64)],
        stopped: bool,
    ) -> Vec<String> {
        let stop = stopped.then_some(Stop {
            cause: StopCause::Interrupted,
            after_s: None,
            due: None,
        });
        judge_stopped(shots, net, http, stop)
    }

    fn judge_stopped(
        shots: &Shots,
        net: &[(&str, u64)],
        http: &[(&str, u64)],
        stop: Option<Stop>,
    ) -> Vec<String> {
        judge(&Facts {
            shots,
            net_codes: &codes(net),
            proto_codes: &codes(http),
            kind: ProtoCodes::of(&codes(http), &codes(net)),
            run: true,
            stop,
            instances: None,
            lag_max_ms: None,
            lag_p99_ms: None,
        })
    }

    #[test]
    fn a_healthy_run_has_none() {
        let s = shots(Some(1000), 1000, 1000);
        // 0.5% timeouts: data, not a warning.
        assert!(judge_run(&s, &[("0", 995), ("110", 5)], &[("200", 995)], false).is_empty());
    }

    #[test]
    fn every_shot_refused_is_named_with_its_code() {
        let s = shots(Some(600), 600, 600);
        let w = judge_run(&s, &[("111", 600)], &[], false);
        assert_eq!(
            w,
            vec!["every shot failed at the network level: 111 connection refused × 600"]
        );
    }

    #[test]
    fn unsent_shots_are_named_unless_the_run_was_stopped() {
        let s = shots(Some(600), 486, 486);
        let w = judge_run(&s, &[("0", 486)], &[("200", 486)], false);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("114 of 600 planned shots (19.0%) were not sent"),
            "{w:?}"
        );
        assert!(judge_run(&s, &[("0", 486)], &[("200", 486)], true).is_empty());
        // Just under the threshold: 5 of 600 is 0.8%.
        let s = shots(Some(600), 595, 595);
        assert!(judge_run(&s, &[("0", 595)], &[("200", 595)], false).is_empty());
    }

    #[test]
    fn the_warnings_judged_on_counts_are_known_as_such() {
        // Every warning judge gives from the counts, which a merge judges again.
        let mut judged = Vec::new();
        judged.extend(judge_run(&shots(Some(10), 0, 0), &[], &[], false));
        judged.extend(judge_run(
            &shots(Some(10), 10, 10),
            &[("110", 10)],
            &[("0", 10)],
            false,
        ));
        judged.extend(judge_run(
            &shots(Some(10), 10, 10),
            &[("0", 9), ("110", 1)],
            &[("200", 9), ("0", 1)],
            false,
        ));
        judged.extend(judge_run(
            &shots(Some(10), 10, 10),
            &[("0", 10)],
            &[("503", 10)],
            false,
        ));
        judged.extend(judge_run(
            &shots(Some(100), 50, 50),
            &[("0", 50)],
            &[("200", 50)],
            false,
        ));
        judged.extend(judge_stopped(
            &shots(Some(100), 50, 50),
            &[("0", 50)],
            &[("200", 50)],
            Some(Stop {
                cause: StopCause::Interrupted,
                after_s: Some(5.0),
                due: Some(90),
            }),
        ));
        assert_eq!(judged.len(), 7, "{judged:?}");
        for warning in &judged {
            assert!(judged_on_counts(warning), "{warning}");
        }
        // What only a shard knows is not.
        for warning in [
            "influx: no point was written, 18 dropped: the dashboards have nothing of this run",
            "3 samples were dropped: the results thread fell behind, so these shots have no phout row",
            "the plan's timing was not kept: one shot in a hundred went over 1.2 s late",
        ] {
            assert!(!judged_on_counts(warning), "{warning}");
        }
    }

    #[test]
    fn a_run_whose_shots_went_seconds_late_says_so() {
        // A replay held to one session at a time (the capture's peak) by a
        // 3 s query: every shot sent, none unsent, all late.
        let s = shots(Some(9), 9, 9);
        let late = |lag_p99_ms: f64, instances| {
            judge(&Facts {
                shots: &s,
                net_codes: &codes(&[("0", 9)]),
                proto_codes: &codes(&[("200", 9)]),
                kind: ProtoCodes::Mysql,
                run: true,
                stop: None,
                instances,
                lag_max_ms: Some(lag_p99_ms + 100.0),
                lag_p99_ms: Some(lag_p99_ms),
            })
        };
        assert_eq!(
            late(5840.0, Some((1, 1))),
            [
                "the plan's timing was not kept: one shot in a hundred went over 5.8 s late (lag \
              p99 5.8 s, max 5.9 s), so the rates and times are of a slower load than planned: \
              every instance was busy when shots were due (raise `instances`, or the target is \
              slower than the plan)"
            ]
        );
        assert!(late(5840.0, Some((3, 50)))[0].contains("tank fell behind with instances to spare"));
        // Under a second at p99: timing noise, no warning.
        assert!(late(900.0, Some((1, 1))).is_empty());
    }

    #[test]
    fn unsent_shots_with_instances_to_spare_blame_the_generator_not_the_plan() {
        // --processes 3 at 4,200 new connections a second each on two cores.
        let s = shots(Some(16800), 14365, 14365);
        let judge_with = |instances| {
            judge(&Facts {
                shots: &s,
                net_codes: &codes(&[("0", 14365)]),
                proto_codes: &codes(&[("200", 14365)]),
                kind: ProtoCodes::Http,
                run: true,
                stop: None,
                instances,
                lag_max_ms: Some(577.5),
                lag_p99_ms: None,
            })
        };
        let w = judge_with(Some((14365, 16800)));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("were not sent: tank fell behind the plan")
                && w[0].contains("its lag reached 578 ms while at most 14365 of the 16800"),
            "{w:?}"
        );
        let w = judge_with(Some((16800, 16800)));
        assert!(w[0].contains("every instance was busy"), "{w:?}");
    }

    #[test]
    fn a_stopped_run_is_judged_on_the_shots_due_before_the_stop() {
        // Ctrl-C after 1,366 of 7,525 shots were due, all of them sent: nothing to say.
        let s = shots(Some(7525), 1366, 1366);
        let stop = |due| {
            Some(Stop {
                cause: StopCause::Interrupted,
                after_s: Some(1.0),
                due: Some(due),
            })
        };
        assert!(judge_stopped(&s, &[("0", 1366)], &[("200", 1366)], stop(1366)).is_empty());
        // 1,500 were due: 134 (8.9%) of them were late when the stop came.
        let w = judge_stopped(&s, &[("0", 1366)], &[("200", 1366)], stop(1500));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with(
                "134 of the 1500 shots due over a second before the stop (8.9%) were not sent"
            ),
            "{w:?}"
        );
    }

    #[test]
    fn nothing_fired_all_http_errors_drops_and_late_responses() {
        let none = shots(Some(10), 0, 0);
        let w = judge_run(&none, &[], &[], false);
        assert_eq!(w[0], "no shot was fired");
        let s = shots(Some(10), 10, 10);
        let w = judge_run(&s, &[("0", 10)], &[("503", 7), ("404", 3)], false);
        assert_eq!(
            w,
            vec!["every response was an HTTP error (4xx or 5xx): 10 of 10"]
        );
        // A MySQL run whose every login was refused: the server's errors, not HTTP's.
        let w = judge_run(&s, &[("0", 10)], &[("1045", 10)], false);
        assert_eq!(
            w,
            vec!["every response was a MySQL error (the server's error number): 10 of 10"]
        );
        let mut s = shots(Some(10), 10, 10);
        s.dropped = 2;
        s.late = 1;
        s.answers_dropped = 4;
        let w = judge_run(&s, &[("0", 10)], &[("200", 10)], false);
        assert_eq!(w.len(), 3);
        assert!(w[0].starts_with("2 samples were dropped"));
        assert!(w[1].starts_with("4 answers-log entries were dropped"));
        assert!(w[2].starts_with("1 responses arrived after"));
    }

    #[test]
    fn a_phout_report_has_no_plan_to_judge() {
        let s = Shots {
            planned: None,
            sent: None,
            unsent: None,
            responses: 0,
            late: 0,
            dropped: 0,
            retries: Some(0),
            answers_dropped: 0,
        };
        let facts = Facts {
            shots: &s,
            net_codes: &BTreeMap::new(),
            proto_codes: &BTreeMap::new(),
            kind: ProtoCodes::Http,
            run: false,
            stop: None,
            instances: None,
            lag_max_ms: None,
            lag_p99_ms: None,
        };
        assert!(judge(&facts).is_empty());
    }
}
