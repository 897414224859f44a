//! The final summary of a run: what `summary.json` holds, and its text form.
//!
//! A summary is built from the run totals and the per-second [`Timeline`]; it is everything
//! the HTML report and `tank compare` need, so a finished run can be compared without its
//! phout. Shots planned and sent are `None` when unknown (a phout records responses only).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tank_config::Job;
use tank_stats::autostop::StopReason;
use tank_stats::quantile::percent;
use tank_stats::{Field, GroupStats, TotalStats, QUANTILES};

use crate::monitoring::HostSeries;
use crate::names::ProtoCodes;
use tank_results::Timeline;

mod scenario;
#[cfg(test)]
pub(crate) mod tests;
mod text;

pub use scenario::{FailureRow, ScenarioRow};

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
    /// Proto codes (HTTP statuses, or what [`Summary::codes`] says): code → count.
    pub proto_codes: BTreeMap<String, u64>,
    /// What the proto codes are, from the run's protocols (`tank_type`s).
    /// `None` for a summary of a phout, which does not record the protocol,
    /// and one written before tank kept it: [`Summary::codes`] then tells
    /// the kind from the codes themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto_kind: Option<ProtoCodes>,
    /// Net codes: code → count.
    pub net_codes: BTreeMap<String, u64>,
    /// Rows with a net error or an HTTP status of 400 and up (a row with both
    /// counts once, which the two code tables cannot tell). `None` in a
    /// summary written before tank counted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
    /// gRPC statuses of a run with `tank_type = grpc` queues: name
    /// (`NOT_FOUND`) → count. The proto codes hold them by Pandora's table,
    /// which gives some statuses one code; this keeps them apart. Empty for
    /// other runs, and for a summary rebuilt from a phout (which has no status).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_statuses: BTreeMap<String, u64>,
    /// Per tag, by tag.
    pub tags: Vec<TagRow>,
    /// Per queue, in config order; empty unless the run had more than one queue.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<QueueRow>,
    /// The measuring queues (`measure = 1`), in config order: their latency on
    /// its own, apart from the load queues (their responses are in the overall
    /// numbers too). Summaries written before the rename call them `probes`.
    #[serde(default, alias = "probes", skip_serializing_if = "Vec::is_empty")]
    pub measuring: Vec<QueueRow>,
    /// A replay's sessions (`ammo_type = sessions`), when the run was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayRow>,
    /// Apiary's statistics view, every interval (`tank -c … --apiary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apiary: Option<crate::apiary::ApiaryRow>,
    /// Scenario runs (`ammo_type = scenario`), when the run had any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenarios: Option<ScenarioRow>,
    /// Why autostop stopped the run, if it did.
    pub autostop: Option<AutostopRow>,
    /// How the run was stopped before its plan ended, if it was (`None` also
    /// for a report of a phout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stop>,
    /// What makes the numbers untrustworthy, or says nothing worked (see [`crate::warnings`]).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The run's exit code, when it was a run (not a report of a phout).
    pub exit_code: Option<i32>,
    /// Response-time distribution over the whole run: (bin upper edge ms, count).
    pub distribution: Vec<(f64, u64)>,
    /// Response times over the run in log-spaced bins across their own range (the report's
    /// histogram; `distribution` keeps yandex-tank's fixed bins).
    #[serde(default)]
    pub spread: Vec<SpreadBin>,
    /// The same per tag, for the tags with the most responses (up to
    /// `tank_stats::aggregate::TAG_SPREADS`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tag_spread: BTreeMap<String, Vec<SpreadBin>>,
    /// Per-second series.
    pub timeline: Timeline,
    /// Monitored hosts' metrics on the timeline's seconds (`[telegraf]` / `[monitoring]`).
    #[serde(default)]
    pub monitoring: Vec<HostSeries>,
    /// What the `[influx]` exporter sent, when configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub influx: Option<InfluxRow>,
}

/// What the `[influx]` exporter sent over the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfluxRow {
    /// Points InfluxDB accepted.
    pub written: u64,
    /// Points given up on (InfluxDB down or refusing them, or never sent).
    pub dropped: u64,
    /// Points sent whose write InfluxDB never answered (it stalled): it may
    /// have written them. 0 in a summary written before tank told them apart.
    #[serde(default)]
    pub unconfirmed: u64,
    /// The first failure, when there was one.
    pub first_error: Option<String>,
}

impl std::fmt::Display for InfluxRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} points written, {} dropped",
            self.written, self.dropped
        )?;
        if self.unconfirmed > 0 {
            write!(
                f,
                ", {} unconfirmed (sent, never answered: InfluxDB may have them)",
                self.unconfirmed
            )?;
        }
        if let Some(error) = &self.first_error {
            write!(f, " (first error: {error})")?;
        }
        Ok(())
    }
}

/// One bin of [`Summary::spread`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpreadBin {
    /// Lower edge, ms.
    pub from_ms: f64,
    /// Upper edge, ms.
    pub to_ms: f64,
    /// Responses in the bin.
    pub count: u64,
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
    /// The job's name and description (`[meta]`), when the config gave them.
    #[serde(default, skip_serializing_if = "Job::is_empty")]
    pub job: Job,
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
    /// How the run was stopped before its plan ended, if it was.
    pub stop: Option<Stop>,
    /// The instances the run could use, over its queues (`None`: not known).
    pub instances: Option<u64>,
    /// What the proto codes are, from the queues' protocols (`None`: not known).
    pub proto_kind: Option<ProtoCodes>,
}

/// Why a run stopped before its plan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCause {
    /// Ctrl-C or SIGTERM (or a caller's stop): the user stopped it.
    Interrupted,
    /// An autostop criterion fired.
    Autostop,
    /// An artifact could not be written (a full disk).
    WriteFailed,
    /// A queue failed on its plan or ammo mid-run.
    QueueFailed,
    /// A shard of the test died (a `--processes` child killed by a signal).
    ShardLost,
}

impl StopCause {
    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            StopCause::Interrupted => "interrupted (Ctrl-C or SIGTERM)",
            StopCause::Autostop => "stopped by autostop",
            StopCause::WriteFailed => "stopped: an artifact could not be written",
            StopCause::QueueFailed => "stopped: a queue failed",
            StopCause::ShardLost => {
                "stopped: a shard was lost (it died, or had not ended when merged)"
            }
        }
    }
}

/// A run stopped before its plan ended: why, when, and what was due by then.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stop {
    /// Why.
    pub cause: StopCause,
    /// When, seconds after the schedules' start (`None`: not known).
    pub after_s: Option<f64>,
    /// Shots the plans had due over a second before the stop (`None`: a plan
    /// without a closed form, or the moment is unknown). The unsent shots that
    /// matter: those due later were never meant to be fired yet, and one due a
    /// moment before was only late (its lag says by how much).
    pub due: Option<u64>,
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

/// A replay's sessions over the run (Apiary's tallies and levels); its
/// requests' rate against the capture's is `rps.planned` against `rps.actual`.
/// In `summary.json` its fields sit beside `pool` (`started`, `completed`,
/// `peak`, `running`); summaries written before read as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayRow {
    /// The sessions at the end (`peak`: the most running at once over the run).
    #[serde(flatten)]
    pub sessions: tank_stats::SessionCounts,
    /// The session pool (`instances`, or the capture's peak of open sessions).
    pub pool: u64,
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
    /// Rows with a net error or an HTTP status of 400 and up (a row with both counts once).
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
    /// Rows with a net error or an HTTP status of 400 and up (a row with both counts once).
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
    /// What the proto codes are: the run's protocols' kind, or, for a phout,
    /// the kind the codes themselves suggest.
    pub fn codes(&self) -> ProtoCodes {
        self.proto_kind
            .unwrap_or_else(|| ProtoCodes::of(&self.proto_codes, &self.net_codes))
    }

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
        let proto_kind = run.and_then(|r| r.proto_kind);
        let warnings = crate::warnings::judge(&crate::warnings::Facts {
            shots: &shots,
            net_codes: &net_codes,
            proto_codes: &proto_codes,
            kind: proto_kind.unwrap_or_else(|| ProtoCodes::of(&proto_codes, &net_codes)),
            run: run.is_some(),
            stop: run.and_then(|r| r.stop),
            instances: run
                .and_then(|r| r.instances)
                .map(|pool| (totals.max_instances, pool)),
            lag_max_ms: (totals.lag.count > 0)
                .then(|| ms(totals.lag.values_us[QUANTILES.len() - 1])),
            lag_p99_ms: QUANTILES
                .iter()
                .position(|&q| q == 990)
                .filter(|_| totals.lag.count > 0)
                .map(|i| ms(totals.lag.values_us[i])),
        });
        Summary {
            meta,
            replay: None,
            apiary: None,
            scenarios: None,
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
            proto_kind,
            net_codes,
            errors: Some(overall.errors()),
            grpc_statuses: BTreeMap::new(),
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
            measuring: totals
                .measuring
                .iter()
                .map(|(queue, group)| queue_row(queue, group, overall.len()))
                .collect(),
            autostop: autostop.map(AutostopRow::from),
            stopped: run.and_then(|r| r.stop),
            warnings,
            exit_code,
            distribution: overall
                .hist
                .iter()
                .map(|(edge, n)| (ms(*edge as f64), *n))
                .collect(),
            spread: spread_bins(&totals.spread),
            tag_spread: totals
                .tag_spread
                .iter()
                .map(|(tag, bins)| (tag.clone(), spread_bins(bins)))
                .collect(),
            timeline,
            monitoring: Vec::new(),
            influx: None,
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
}

fn spread_bins(bins: &[(u64, u64, u64)]) -> Vec<SpreadBin> {
    bins.iter()
        .map(|&(from, to, count)| SpreadBin {
            from_ms: ms(from as f64),
            to_ms: ms(to as f64),
            count,
        })
        .collect()
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
