//! The final summary of a run: what `summary.json` holds, and its text form.
//!
//! A summary is built from the run totals and the per-second [`Timeline`]; it is everything
//! the HTML report and `tank compare` need, so a finished run can be compared without its
//! phout. Shots planned and sent are `None` when unknown (a phout records responses only).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use tank_stats::autostop::StopReason;
use tank_stats::quantile::percent;
use tank_stats::{Field, GroupStats, TotalStats, QUANTILES};

use crate::names::{http_reason, net_reason};
use crate::timeline::Timeline;

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// What was run and where the data came from.
    pub meta: Meta,
    /// Seconds from the first to the last second with data (the timeline's length).
    pub duration_s: u64,
    /// Seconds from the first shot's start to the last response's end: the rates are
    /// over this, which whole seconds would overstate by up to two partial seconds.
    #[serde(default)]
    pub active_s: f64,
    /// First second, unix seconds (`None` for an empty run).
    pub start_unix_s: Option<u64>,
    /// Shot counts.
    pub shots: Shots,
    /// Average rates over the active time.
    pub rps: Rps,
    /// Cumulative quantiles, one row per [`QUANTILES`] entry.
    pub quantiles: Vec<QuantileRow>,
    /// Average times, ms.
    pub avg_ms: AvgTimes,
    /// Average sizes, bytes.
    pub avg_bytes: AvgSizes,
    /// HTTP codes: code → count.
    pub proto_codes: BTreeMap<String, u64>,
    /// Net codes: code → count.
    pub net_codes: BTreeMap<String, u64>,
    /// Per tag, by tag.
    pub tags: Vec<TagRow>,
    /// Per queue, in config order; empty unless the run had more than one queue.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<QueueRow>,
    /// Why autostop stopped the run, if it did.
    pub autostop: Option<AutostopRow>,
    /// What makes the numbers untrustworthy, or says nothing worked (see [`crate::warnings`]).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The run's exit code, when it was a run (not a report of a phout).
    pub exit_code: Option<i32>,
    /// Response-time distribution over the whole run: (bin upper edge ms, count).
    pub distribution: Vec<(f64, u64)>,
    /// Per-second series.
    pub timeline: Timeline,
}

/// Where a summary comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// A title for people (the config file, or the phout name).
    pub title: String,
    /// Input files (config, phout).
    pub sources: Vec<String>,
    /// `tank <version>`.
    pub generator: String,
    /// Free-form facts worth showing (target, schedule, instances, ...), in order.
    pub facts: Vec<(String, String)>,
}

/// Shot counts, defined once (docs/results.md) and computed once, by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shots {
    /// The shots the plans hold, for the whole run as configured. `None` when
    /// unknown: a phout, or a closed model stopped before its ammo ended (it has
    /// no end of its own).
    pub planned: Option<u64>,
    /// Shots fired: each has a phout row (`None`: unknown, for a phout).
    pub sent: Option<u64>,
    /// `planned - sent`: shots the plan held that were never fired (`None` when
    /// planned is unknown).
    pub unsent: Option<u64>,
    /// Rows counted (a response, an error or an abandoned shot each).
    pub responses: u64,
    /// Responses that arrived after their second was final (see `TotalStats::late`).
    pub late: u64,
    /// Samples the results thread could not take in time: fired, but with no row.
    #[serde(default)]
    pub dropped: u64,
    /// Requests sent a second time after a kept connection was found closed: the
    /// target may have seen them twice (`None`: unknown, as from a phout).
    #[serde(default)]
    pub retries: Option<u64>,
    /// Answers-log (`writelog`) entries the answers thread could not take in
    /// time: answ.log lacks them.
    #[serde(default)]
    pub answers_dropped: u64,
}

/// What the engine knows of a run that a phout cannot say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunCounts {
    /// The shots the plans hold (`None`: a plan with no known end).
    pub planned: Option<u64>,
    /// Shots fired.
    pub sent: u64,
    /// The plans' own rate: planned shots over the longest schedule (`None`: unknown).
    pub planned_rps: Option<f64>,
    /// Samples the results thread could not take in time.
    pub dropped: u64,
    /// Answers-log entries the answers thread could not take in time.
    pub answers_dropped: u64,
    /// The run stopped before its plan ended (Ctrl-C, autostop, a failure).
    pub stopped_early: bool,
}

/// Average rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rps {
    /// Planned shots per second (`None`: unknown).
    pub planned: Option<f64>,
    /// Responses per second.
    pub actual: f64,
    /// The busiest second's responses.
    pub max: u64,
}

/// One cumulative quantile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuantileRow {
    /// The quantile, percent (50, ..., 99.5, 100).
    pub q: f64,
    /// Service time (interval_real), ms.
    pub service_ms: f64,
    /// Latency from the intended start (lag + interval_real), ms; `None` when lag is unknown.
    pub intended_ms: Option<f64>,
    /// Lag behind the plan, ms; `None` when unknown.
    pub lag_ms: Option<f64>,
}

/// Average times, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AvgTimes {
    /// interval_real.
    pub total: f64,
    /// connect_time.
    pub connect: f64,
    /// send_time.
    pub send: f64,
    /// latency.
    pub latency: f64,
    /// receive_time.
    pub receive: f64,
}

/// Average sizes, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AvgSizes {
    /// size_out.
    pub request: f64,
    /// size_in.
    pub response: f64,
}

/// One tag's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagRow {
    /// The tag (cut at the last `#`; empty for untagged shots).
    pub tag: String,
    /// Responses.
    pub count: u64,
    /// Share of all responses, percent.
    pub percent: f64,
    /// Net errors plus HTTP 4xx/5xx.
    pub errors: u64,
    /// Average interval_real, ms.
    pub avg_ms: f64,
    /// Quantiles at [`QUANTILES`], ms.
    pub quantiles_ms: Vec<f64>,
}

/// One queue's totals (a run of several queues).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueRow {
    /// The queue: its config section.
    pub queue: String,
    /// Responses.
    pub count: u64,
    /// Share of all responses, percent.
    pub percent: f64,
    /// Net errors plus HTTP 4xx/5xx.
    pub errors: u64,
    /// Average interval_real, ms.
    pub avg_ms: f64,
    /// Quantiles at [`QUANTILES`], ms.
    pub quantiles_ms: Vec<f64>,
}

/// Why autostop stopped the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutostopRow {
    /// Exit code (21–33).
    pub code: i32,
    /// The criterion as written.
    pub criterion: String,
    /// What happened.
    pub explanation: String,
    /// The second that fired it, unix seconds.
    pub ts: u64,
}

impl From<&StopReason> for AutostopRow {
    fn from(reason: &StopReason) -> AutostopRow {
        AutostopRow {
            code: reason.code,
            criterion: reason.criterion.clone(),
            explanation: reason.explanation.clone(),
            ts: reason.ts,
        }
    }
}

fn ms(us: f64) -> f64 {
    us / 1000.0
}

fn codes(counts: &tank_stats::CodeCounts) -> BTreeMap<String, u64> {
    counts.iter().map(|(c, n)| (c.to_string(), n)).collect()
}

impl Summary {
    /// Build the summary. `run` holds the engine's counts of a run; `None` for a
    /// phout, where planned and sent are unknown.
    pub fn build(
        meta: Meta,
        totals: &TotalStats,
        timeline: Timeline,
        run: Option<&RunCounts>,
        autostop: Option<&StopReason>,
        exit_code: Option<i32>,
    ) -> Summary {
        let overall = &totals.overall;
        let duration_s = totals.duration_s();
        let active_s = totals.active_s();
        let per_second = |n: u64| {
            if active_s > 0.0 {
                n as f64 / active_s
            } else {
                0.0
            }
        };
        let avg = |field: Field| ms(overall.field(field).mean());
        let planned = run.and_then(|r| r.planned);
        let shots = Shots {
            planned,
            sent: run.map(|r| r.sent),
            unsent: run.and_then(|r| Some(r.planned?.saturating_sub(r.sent))),
            responses: overall.len(),
            late: totals.late,
            dropped: run.map_or(0, |r| r.dropped),
            retries: run.map(|_| totals.retries),
            answers_dropped: run.map_or(0, |r| r.answers_dropped),
        };
        let proto_codes = codes(&overall.proto_codes);
        let net_codes = codes(&overall.net_codes);
        let warnings = crate::warnings::judge(&crate::warnings::Facts {
            shots: &shots,
            net_codes: &net_codes,
            proto_codes: &proto_codes,
            run: run.is_some(),
            stopped_early: run.is_some_and(|r| r.stopped_early),
        });
        Summary {
            meta,
            duration_s,
            active_s,
            start_unix_s: totals.span.map(|(first, _)| first),
            shots,
            rps: Rps {
                planned: run.and_then(|r| r.planned_rps),
                actual: per_second(overall.len()),
                max: timeline.responses.iter().copied().max().unwrap_or(0),
            },
            quantiles: QUANTILES
                .iter()
                .enumerate()
                .map(|(i, q)| QuantileRow {
                    q: percent(*q),
                    service_ms: ms(overall.quantiles_us[i]),
                    intended_ms: (totals.intended.count > 0)
                        .then(|| ms(totals.intended.values_us[i])),
                    lag_ms: (totals.lag.count > 0).then(|| ms(totals.lag.values_us[i])),
                })
                .collect(),
            avg_ms: AvgTimes {
                total: avg(Field::IntervalReal),
                connect: avg(Field::Connect),
                send: avg(Field::Send),
                latency: avg(Field::Latency),
                receive: avg(Field::Receive),
            },
            avg_bytes: AvgSizes {
                request: overall.field(Field::SizeOut).mean(),
                response: overall.field(Field::SizeIn).mean(),
            },
            proto_codes,
            net_codes,
            tags: totals
                .tagged
                .iter()
                .map(|(tag, group)| tag_row(tag, group, overall.len()))
                .collect(),
            queues: totals
                .queues
                .iter()
                .map(|(queue, group)| queue_row(queue, group, overall.len()))
                .collect(),
            autostop: autostop.map(AutostopRow::from),
            warnings,
            exit_code,
            distribution: overall
                .hist
                .iter()
                .map(|(edge, n)| (ms(*edge as f64), *n))
                .collect(),
            timeline,
        }
    }

    /// The summary as pretty JSON (`summary.json`).
    pub fn to_json(&self) -> String {
        // Plain data with string keys: serialising cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Read a `summary.json`.
    pub fn from_json(text: &str) -> Result<Summary, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// How long the run was active, seconds: `active_s`, or the whole seconds for a
    /// summary written before tank recorded the active time.
    pub fn active_or_whole_s(&self) -> f64 {
        if self.active_s > 0.0 {
            self.active_s
        } else {
            self.duration_s as f64
        }
    }

    /// The summary for people, printed at the end of a run and written as `summary.txt`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.meta.title);
        let _ = write!(
            out,
            "duration {:.1} s, responses {}",
            self.active_or_whole_s(),
            self.shots.responses
        );
        match (self.shots.planned, self.shots.sent, self.shots.unsent) {
            (Some(planned), Some(sent), Some(unsent)) => {
                let _ = write!(
                    out,
                    ", shots planned {planned}, sent {sent}, unsent {unsent}"
                );
            }
            (None, Some(sent), _) => {
                let _ = write!(out, ", shots sent {sent} (planned: no end known)");
            }
            _ => {}
        }
        if self.shots.late > 0 {
            let _ = write!(out, ", late {}", self.shots.late);
        }
        let _ = writeln!(out);
        let _ = write!(
            out,
            "rps: actual {:.1} (max {})",
            self.rps.actual, self.rps.max
        );
        if let Some(planned) = self.rps.planned {
            let _ = write!(out, ", planned {planned:.1}");
        }
        let _ = writeln!(out);
        let with_intended = self.quantiles.iter().any(|r| r.intended_ms.is_some());
        let _ = writeln!(
            out,
            "\nquantile  service ms{}",
            if with_intended {
                "  from intended start ms  lag ms"
            } else {
                ""
            }
        );
        for row in &self.quantiles {
            let _ = write!(out, "{:>7}%  {:>10.3}", row.q, row.service_ms);
            if let (Some(intended), Some(lag)) = (row.intended_ms, row.lag_ms) {
                let _ = write!(out, "  {intended:>23.3}  {lag:>6.3}");
            } else if let Some(intended) = row.intended_ms {
                let _ = write!(out, "  {intended:>23.3}");
            }
            let _ = writeln!(out);
        }
        let a = &self.avg_ms;
        let _ = writeln!(
            out,
            "\naverage ms: total {:.3}, connect {:.3}, send {:.3}, latency {:.3}, receive {:.3}",
            a.total, a.connect, a.send, a.latency, a.receive
        );
        let _ = writeln!(
            out,
            "average bytes: request {:.1}, response {:.1}",
            self.avg_bytes.request, self.avg_bytes.response
        );
        if let Some(retries) = self.shots.retries {
            let _ = writeln!(
                out,
                "retries {retries} (requests sent again after a kept connection was found closed)"
            );
        }
        let total = self.shots.responses.max(1) as f64;
        let _ = writeln!(out, "\nHTTP codes:");
        for (code, n) in &self.proto_codes {
            let name = code.parse().map(http_reason).unwrap_or("");
            let _ = writeln!(
                out,
                "  {code:>5} {name:<24} {n:>10} {:>6.2}%",
                *n as f64 * 100.0 / total
            );
        }
        let _ = writeln!(out, "net codes:");
        for (code, n) in &self.net_codes {
            let name = code.parse().map(net_reason).unwrap_or("");
            let _ = writeln!(
                out,
                "  {code:>5} {name:<24} {n:>10} {:>6.2}%",
                *n as f64 * 100.0 / total
            );
        }
        if !self.tags.is_empty() {
            let _ = writeln!(
                out,
                "\n{:<24} {:>10} {:>7} {:>8} {:>10} {:>10}",
                "tag", "count", "%", "errors", "avg ms", "p99 ms"
            );
            for tag in &self.tags {
                let p99 = tag.quantiles_ms.get(7).copied().unwrap_or(0.0);
                let name = if tag.tag.is_empty() {
                    "(no tag)"
                } else {
                    &tag.tag
                };
                let _ = writeln!(
                    out,
                    "{name:<24} {:>10} {:>7.2} {:>8} {:>10.3} {p99:>10.3}",
                    tag.count, tag.percent, tag.errors, tag.avg_ms
                );
            }
        }
        if !self.queues.is_empty() {
            let _ = writeln!(
                out,
                "\n{:<24} {:>10} {:>7} {:>8} {:>10} {:>10}",
                "queue", "count", "%", "errors", "avg ms", "p99 ms"
            );
            for queue in &self.queues {
                let p99 = queue.quantiles_ms.get(7).copied().unwrap_or(0.0);
                let _ = writeln!(
                    out,
                    "{:<24} {:>10} {:>7.2} {:>8} {:>10.3} {p99:>10.3}",
                    queue.queue, queue.count, queue.percent, queue.errors, queue.avg_ms
                );
            }
        }
        if let Some(stop) = &self.autostop {
            let _ = writeln!(
                out,
                "\nautostop {} (exit code {}): {}",
                stop.criterion, stop.code, stop.explanation
            );
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(out, "\nWARNINGS:");
            for warning in &self.warnings {
                let _ = writeln!(out, "  - {warning}");
            }
        }
        out
    }
}

fn tag_row(tag: &str, group: &GroupStats, all: u64) -> TagRow {
    TagRow {
        tag: tag.to_string(),
        count: group.len(),
        percent: share(group, all),
        errors: group.errors(),
        avg_ms: ms(group.field(Field::IntervalReal).mean()),
        quantiles_ms: group.quantiles_us.iter().map(|us| ms(*us)).collect(),
    }
}

fn queue_row(queue: &str, group: &GroupStats, all: u64) -> QueueRow {
    QueueRow {
        queue: queue.to_string(),
        count: group.len(),
        percent: share(group, all),
        errors: group.errors(),
        avg_ms: ms(group.field(Field::IntervalReal).mean()),
        quantiles_ms: group.quantiles_us.iter().map(|us| ms(*us)).collect(),
    }
}

/// The group's share of `all` responses, percent.
fn share(group: &GroupStats, all: u64) -> f64 {
    if all == 0 {
        0.0
    } else {
        group.len() as f64 * 100.0 / all as f64
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tank_stats::phout::parse_line;
    use tank_stats::Aggregator;

    pub(crate) fn sample_summary() -> Summary {
        let mut agg = Aggregator::new(0);
        let mut timeline = Timeline::default();
        for (i, line) in [
            "100.000\tsearch#1\t1500\t100\t20\t1300\t80\t1400\t74\t230\t0\t200",
            "100.200\t\t2500\t100\t20\t2300\t80\t2400\t74\t0\t110\t0",
            "101.000\tsearch\t3500\t100\t20\t3300\t80\t3400\t74\t230\t0\t503",
        ]
        .iter()
        .enumerate()
        {
            agg.add_record(&parse_line(line.as_bytes()).unwrap());
            agg.note_planned(100 + i as u64 / 2, 2);
        }
        agg.finish();
        while let Some(second) = agg.pop_ready() {
            timeline.push(&second);
        }
        let meta = Meta {
            title: "t".into(),
            ..Meta::default()
        };
        Summary::build(meta, &agg.totals(), timeline, None, None, None)
    }

    #[test]
    fn summary_counts_codes_tags_and_quantiles() {
        let s = sample_summary();
        assert_eq!((s.duration_s, s.shots.responses), (2, 3));
        // From the first start (100.000) to the last end (101.000 + 3.5 ms).
        assert!((s.active_s - 1.0035).abs() < 1e-9, "{}", s.active_s);
        assert_eq!(s.shots.planned, None);
        assert!((s.rps.actual - 3.0 / 1.0035).abs() < 1e-9);
        assert_eq!(s.rps.max, 2);
        assert_eq!(s.proto_codes.get("503"), Some(&1));
        assert_eq!(s.net_codes.get("110"), Some(&1));
        assert_eq!(
            s.tags
                .iter()
                .map(|t| (t.tag.as_str(), t.count, t.errors))
                .collect::<Vec<_>>(),
            vec![("", 1, 1), ("search", 2, 1)]
        );
        assert_eq!(s.quantiles.last().map(|r| r.service_ms), Some(3.5));
        assert_eq!(s.quantiles[0].intended_ms, None);
    }

    #[test]
    fn summary_json_round_trips_and_text_names_codes() {
        let s = sample_summary();
        assert_eq!(Summary::from_json(&s.to_json()).unwrap(), s);
        let text = s.to_text();
        assert!(text.contains("503 Service Unavailable"), "{text}");
        assert!(text.contains("110 timed out"), "{text}");
        assert!(text.contains("search"), "{text}");
    }

    #[test]
    fn a_summary_from_before_the_active_time_reads_with_whole_seconds() {
        let s = sample_summary();
        let mut json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        json.as_object_mut().unwrap().remove("active_s");
        let old = Summary::from_json(&json.to_string()).unwrap();
        assert_eq!((old.active_s, old.active_or_whole_s()), (0.0, 2.0));
        assert!(
            old.to_text().contains("duration 2.0 s"),
            "{}",
            old.to_text()
        );
        assert!((s.active_or_whole_s() - 1.0035).abs() < 1e-9);
    }

    #[test]
    fn retries_are_counted_for_a_run_and_unknown_for_a_phout() {
        let mut agg = Aggregator::new(0);
        for sends in [2, 1, 2] {
            agg.add_sample(&tank_stats::Sample {
                start_unix_us: 100_000_000,
                lag_us: 0,
                tag: b"".as_slice().into(),
                measured: tank_stats::Measured {
                    interval_real_us: 1000,
                    sends,
                    ..tank_stats::Measured::default()
                },
            });
        }
        agg.finish();
        let counts = RunCounts {
            planned: Some(3),
            sent: 3,
            planned_rps: None,
            dropped: 0,
            answers_dropped: 0,
            stopped_early: false,
        };
        let run = Summary::build(
            Meta::default(),
            &agg.totals(),
            Timeline::default(),
            Some(&counts),
            None,
            Some(0),
        );
        assert_eq!(run.shots.retries, Some(2));
        assert!(run.to_text().contains("\nretries 2 ("), "{}", run.to_text());
        let phout = sample_summary();
        assert_eq!(phout.shots.retries, None);
        assert!(!phout.to_text().contains("retries"));
        // A summary.json written before retries were counted still reads.
        let mut json: serde_json::Value = serde_json::from_str(&run.to_json()).unwrap();
        json["shots"].as_object_mut().unwrap().remove("retries");
        assert_eq!(
            Summary::from_json(&json.to_string()).unwrap().shots.retries,
            None
        );
    }

    #[test]
    fn several_queues_get_a_row_each_in_json_and_text() {
        let names = vec!["api".to_owned(), "static".to_owned()];
        let mut agg = Aggregator::new(0).with_queues(names);
        for (queue, code) in [(0, 200), (1, 200), (1, 502)] {
            agg.add_sample(&tank_stats::Sample {
                start_unix_us: 100_000_000,
                lag_us: 0,
                tag: b"".as_slice().into(),
                measured: tank_stats::Measured {
                    interval_real_us: 1000,
                    proto_code: code,
                    queue,
                    ..tank_stats::Measured::default()
                },
            });
        }
        agg.finish();
        let s = Summary::build(
            Meta::default(),
            &agg.totals(),
            Timeline::default(),
            None,
            None,
            None,
        );
        let rows: Vec<_> = s
            .queues
            .iter()
            .map(|q| (q.queue.as_str(), q.count, q.errors))
            .collect();
        assert_eq!(rows, vec![("api", 1, 0), ("static", 2, 1)]);
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(json["queues"][1]["queue"], "static");
        let text = s.to_text();
        assert!(text.contains("\nqueue "), "{text}");
        assert!(text.contains("\nstatic "), "{text}");
        // One queue: no queue rows, and no `queues` key in summary.json.
        let one = sample_summary();
        assert!(one.queues.is_empty());
        assert!(!one.to_json().contains("\"queues\""));
        assert!(!one.to_text().contains("\nqueue "));
    }
}
