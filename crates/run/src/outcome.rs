//! How a run ended: its counts, summary, reports and exit code, decided once.
//!
//! The counts are the engine's (docs/results.md defines them); the exit code
//! follows yandex-tank's rules, with tank's own codes for an artifact that
//! could not be written and for warnings under `fail_on_warnings`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use tank_config::{LoadProfile, TestConfig};
use tank_engine::{Engine, QueueReport, RunReport};
use tank_export::influx::InfluxReport;
use tank_report::memcached::McperfLines;
use tank_report::names::ProtoCodes;
use tank_report::stream::{files, write_outputs};
use tank_report::summary::{FailureRow, InfluxRow, ReplayRow, ScenarioRow, Stop, StopCause};
use tank_report::{Meta, RunCounts, Summary};
use tank_results::SinkError;
use tank_stats::autostop::{codes, rcassert};

use crate::artifacts::Artifacts;
use crate::collector::{Collected, PHOUT};
use crate::record::{ShardRecord, SHARD_JSON};
use crate::watch::Watched;
use crate::Spec;

/// Why the run ended, before `[rcassert]` remaps its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The plan ran to its end.
    Completed,
    /// Stopped from outside (Ctrl-C, SIGTERM, a [`crate::Handle`]), or a queue
    /// failed on its plan or ammo mid-run.
    Interrupted,
    /// An autostop criterion fired, with its code (21–33).
    Autostop(i32),
    /// An artifact could not be written: the run stopped at once.
    ArtifactWrite,
    /// The run ended with warnings and `fail_on_warnings` asked to fail on them.
    Warnings,
}

impl Verdict {
    /// The exit code, as yandex-tank's (0, 1, 21–33) or tank's own (34, 35).
    pub fn code(self) -> i32 {
        match self {
            Verdict::Completed => codes::COMPLETED,
            Verdict::Interrupted => codes::INTERRUPTED,
            Verdict::Autostop(code) => code,
            Verdict::ArtifactWrite => codes::ARTIFACT_WRITE,
            Verdict::Warnings => codes::WARNINGS,
        }
    }
}

/// How a run went.
#[derive(Debug)]
pub struct Outcome {
    /// Why it ended.
    pub verdict: Verdict,
    /// The exit code: the verdict's, remapped by `[rcassert]`.
    pub exit_code: i32,
    /// The summary, as written to summary.json.
    pub summary: Summary,
    /// Each queue's counts, in config order.
    pub queues: Vec<QueueReport>,
    /// The artifacts directory.
    pub artifacts: PathBuf,
    /// What `tank -c` prints at the end: the summary, per-queue counts when
    /// there are several queues, and where the artifacts are.
    pub text: String,
    /// Why the reports (summary.json, report.html, …) could not be written, if so.
    pub reports_failed: Option<String>,
    /// `[prometheus]`'s endpoint when `linger` asks it to keep serving the
    /// final totals after the run (its length beside it); dropping it closes it.
    pub metrics: Option<(tank_export::prometheus::Endpoint, std::time::Duration)>,
}

impl Outcome {
    /// Errors that stopped a queue mid-run (its plan or ammo), as messages.
    pub fn queue_errors(&self) -> Vec<String> {
        self.queues
            .iter()
            .filter_map(|q| q.error.as_ref().map(ToString::to_string))
            .collect()
    }
}

/// What the reports say about the test, gathered before the engine runs.
pub struct Facts {
    meta: Meta,
    /// The longest open-model schedule.
    longest_schedule: Option<Duration>,
    /// The replay queues' session pools, together.
    replay_pool: u64,
    /// The instances over every queue.
    instances: u64,
}

impl Facts {
    /// The facts of `config` as `engine` prepared it.
    pub fn of(config: &TestConfig, engine: &Engine) -> Facts {
        let mut facts = Vec::new();
        for (queue, prepared) in config.queues.iter().zip(engine.queues()) {
            let load = match &queue.load_profile {
                LoadProfile::Rps(s) => format!("rps_schedule = {}", one_line(s)),
                LoadProfile::Instances(s) => format!("instances_schedule = {}", one_line(s)),
                LoadProfile::StpdFile(p) => format!("stpd_file = {}", p.display()),
                LoadProfile::Replay(replay) => format!(
                    "replay of {} at speed {}, {} connections{}",
                    match &queue.ammo {
                        Some(tank_config::AmmoSource::File { path, .. }) =>
                            path.display().to_string(),
                        _ => String::new(),
                    },
                    replay.speed,
                    match replay.connections {
                        tank_config::ReplayConnections::Captured => "captured",
                        tank_config::ReplayConnections::PerRequest => "per-request",
                    },
                    if replay.skip > 1 {
                        format!(
                            ", one session in {} (replay_offset {})",
                            replay.skip, replay.offset
                        )
                    } else {
                        String::new()
                    }
                ),
            };
            facts.push((
                format!("[{}] target", queue.name),
                prepared.target().to_string(),
            ));
            facts.push((format!("[{}] load", queue.name), load));
            facts.push((
                format!("[{}] instances", queue.name),
                prepared.pool().to_string(),
            ));
        }
        Facts {
            meta: Meta {
                title: config.path.display().to_string(),
                sources: vec![config.path.display().to_string(), "phout.log".into()],
                generator: format!("tank {}", env!("CARGO_PKG_VERSION")),
                facts,
                job: config.job.clone(),
            },
            // A replay's span is its schedule's length: the planned rate is the capture's.
            longest_schedule: engine
                .queues()
                .iter()
                .filter_map(|q| q.schedule_duration().or_else(|| q.replay_span()))
                .max(),
            replay_pool: engine
                .queues()
                .iter()
                .filter(|q| q.sessions().is_some())
                .map(|q| q.pool() as u64)
                .sum(),
            instances: engine.total_instances() as u64,
        }
    }
}

impl Facts {
    /// The longest open-model schedule, if any.
    pub fn longest_schedule(&self) -> Option<Duration> {
        self.longest_schedule
    }
}

/// A schedule's text on one line, its whitespace collapsed.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What the run's threads noted beside the engine's report and the results.
pub(crate) struct Notes {
    /// `shard.json` as written at the start: completed with how the run ended.
    pub record: ShardRecord,
    /// Answers-log entries dropped because the answers thread fell behind.
    pub answers_dropped: u64,
    /// Why a shot timer fell back to tokio's (up to 1 ms late), if one did.
    pub timer_fallback: Option<String>,
}

/// The scenario queues' runs, added up (`None` when no queue ran scenarios).
fn scenario_row(report: &RunReport) -> Option<ScenarioRow> {
    let mut total: Option<ScenarioRow> = None;
    for queue in &report.queues {
        let Some(scenario) = &queue.scenario else {
            continue;
        };
        let counts = scenario.counts;
        total
            .get_or_insert_with(|| ScenarioRow {
                runs_planned: Some(0),
                ..ScenarioRow::default()
            })
            .add(ScenarioRow {
                runs_planned: scenario.planned_runs,
                runs_started: counts.started,
                runs_completed: counts.completed,
                runs_failed: counts.failed,
                runs_broken: counts.broken,
                runs_stopped: counts.stopped,
                failures: scenario
                    .failures
                    .iter()
                    .map(|f| FailureRow {
                        queue: queue.name.clone(),
                        request: f.request.clone(),
                        code: f.code.0,
                        reason: f.reason.clone(),
                        count: f.count,
                    })
                    .collect(),
            });
    }
    total
}

/// Build the summary, decide the exit code, write the reports and log the end.
pub(crate) fn finish(
    spec: &Spec,
    facts: Facts,
    report: RunReport,
    mut collected: Collected,
    stopped_early: bool,
    notes: Notes,
    artifacts: &Artifacts,
) -> Outcome {
    let config = &spec.config;
    let queue_failed = report.queues.iter().any(|q| q.error.is_some());
    let stop = stop_of(&collected, stopped_early, queue_failed);
    let counts = RunCounts {
        planned: report.queues.iter().map(|q| q.planned).sum(),
        sent: report.queues.iter().map(|q| q.fired).sum(),
        planned_rps: planned_rate(&report, facts.longest_schedule),
        dropped: report.samples_dropped,
        answers_dropped: notes.answers_dropped,
        stop,
        instances: Some(facts.instances),
        proto_kind: ProtoCodes::of_protocols(config.queues.iter().map(|q| q.tank_type)),
    };
    let first_shot = collected.totals.active_us.map(|(first, _)| first);
    let mut summary = summarize(facts, &report, &mut collected, &counts, artifacts);
    let fail_on_warnings = spec.fail_on_warnings || config.core.fail_on_warnings;
    let verdict = verdict_of(&collected, stop.is_some(), fail_on_warnings, &summary);
    let remap = |verdict: Verdict| {
        rcassert(
            verdict.code(),
            &config.rcassert.pass,
            config.rcassert.fail_code,
        )
    };
    // The summary is printed even when the reports cannot be written (a full disk).
    summary.exit_code = Some(remap(verdict));
    let written = write_outputs(&summary, artifacts.dir());
    let verdict = match (&written, verdict) {
        (Err(_), Verdict::Completed | Verdict::Warnings) => Verdict::ArtifactWrite,
        (_, verdict) => verdict,
    };
    let exit_code = remap(verdict);
    summary.exit_code = Some(exit_code);
    let text = end_text(&summary, &report, &collected.mcperf, &notes, artifacts);
    write_record_end(
        notes.record,
        first_shot,
        &report,
        stop,
        exit_code,
        artifacts,
    );
    artifacts.log(&format!("finished with exit code {exit_code}\n{text}"));
    if let Some(stop) = &stop {
        artifacts.log(stop.cause.describe());
    }
    // Kept serving the final totals when `linger` asks; closed here otherwise.
    let metrics = collected
        .exported
        .prometheus
        .take()
        .zip(config.prometheus.as_ref().and_then(|p| p.linger));
    Outcome {
        verdict,
        exit_code,
        summary,
        queues: report.queues,
        artifacts: artifacts.dir().to_path_buf(),
        text,
        reports_failed: written.err().map(|e| format!("{e:#}")),
        metrics,
    }
}

/// The summary of the run's results, with the replay, gRPC, monitoring and export rows.
fn summarize(
    facts: Facts,
    report: &RunReport,
    collected: &mut Collected,
    counts: &RunCounts,
    artifacts: &Artifacts,
) -> Summary {
    let mut summary = Summary::build(
        facts.meta,
        &collected.totals,
        std::mem::take(&mut collected.timeline),
        Some(counts),
        collected.stopped.as_ref(),
        None,
    );
    for queue in &report.queues {
        for (status, count) in &queue.grpc_statuses {
            *summary.grpc_statuses.entry(status.name()).or_default() += count;
        }
    }
    summary.replay = collected.sessions.map(|sessions| ReplayRow {
        sessions,
        pool: facts.replay_pool,
    });
    summary.apiary = collected.apiary.take();
    for queue in &report.queues {
        if let Some(problem) = &queue.problem {
            summary.warnings.push(format!("[{}] {problem}", queue.name));
        }
    }
    if let Some(row) = scenario_row(report) {
        summary.set_scenarios(row);
    }
    log_monitoring(&mut summary, collected.watched.as_ref(), artifacts);
    add_exports_and_failures(
        &mut summary,
        collected.exported.influx.as_ref(),
        collected.write_failed.as_ref(),
        artifacts,
    );
    summary
}

/// How the run ended, before the reports are written: an autostop, a failed artifact, an
/// interruption, warnings the user asked to fail on, or a completed run.
fn verdict_of(
    collected: &Collected,
    interrupted: bool,
    fail_on_warnings: bool,
    summary: &Summary,
) -> Verdict {
    match (&collected.stopped, &collected.write_failed) {
        (Some(reason), _) => Verdict::Autostop(reason.code),
        (None, Some(_)) => Verdict::ArtifactWrite,
        (None, None) if interrupted => Verdict::Interrupted,
        (None, None) if fail_on_warnings && !summary.warnings.is_empty() => Verdict::Warnings,
        (None, None) => Verdict::Completed,
    }
}

/// What the exporters did and the artifact that could not be written, in the summary.
fn add_exports_and_failures(
    summary: &mut Summary,
    influx: Option<&InfluxReport>,
    write_failed: Option<&SinkError>,
    artifacts: &Artifacts,
) {
    summary.influx = influx.map(|influx| InfluxRow {
        written: influx.written,
        dropped: influx.dropped,
        unconfirmed: influx.unconfirmed,
        first_error: influx.first_error.as_ref().map(ToString::to_string),
    });
    if let Some(row) = &summary.influx {
        artifacts.log(&format!("influx: {row}"));
    }
    summary.warnings.extend(influx.and_then(influx_warning));
    if let Some(failure) = write_failed {
        summary.warnings.insert(
            0,
            format!("{failure}: the run stopped there; the artifacts hold what was written before"),
        );
    }
}

/// Complete `shard.json` with how the run ended, for `tank merge`.
fn write_record_end(
    mut record: ShardRecord,
    first_shot_unix_us: Option<u64>,
    report: &RunReport,
    stop: Option<Stop>,
    exit_code: i32,
    artifacts: &Artifacts,
) {
    record.first_shot_unix_us = first_shot_unix_us;
    record.fired = Some(report.queues.iter().map(|q| q.fired).sum());
    record.max_rss_kib = ShardRecord::peak_rss_kib();
    record.exit_code = Some(exit_code);
    record.stopped = stop;
    if let Err(error) = record.write(artifacts.dir()) {
        artifacts.log(&format!("cannot update {SHARD_JSON}: {error}"));
    }
}

/// How the run was stopped before its plan ended, if it was.
fn stop_of(collected: &Collected, stopped_early: bool, queue_failed: bool) -> Option<Stop> {
    let cause = if collected.stopped.is_some() {
        StopCause::Autostop
    } else if collected.write_failed.is_some() {
        StopCause::WriteFailed
    } else if queue_failed {
        StopCause::QueueFailed
    } else if stopped_early {
        StopCause::Interrupted
    } else {
        return None;
    };
    let seen = collected.stop_seen;
    Some(Stop {
        cause,
        after_s: seen.map(|s| s.after_s),
        due: seen.and_then(|s| s.due),
    })
}

/// Monitoring's series on the summary's seconds, and its notes in tank.log.
fn log_monitoring(summary: &mut Summary, watched: Option<&Watched>, artifacts: &Artifacts) {
    let Some(watched) = watched else {
        return;
    };
    summary.monitoring = watched.recorder.align(&summary.timeline.ts);
    for warning in &watched.warnings {
        artifacts.log(&format!("monitoring: {warning}"));
    }
    artifacts.log(&format!(
        "monitoring: {} host seconds written to monitoring.log, {} dropped",
        watched.seconds, watched.dropped
    ));
    summary.warnings.extend(watched.silent.iter().cloned());
}

/// What `tank -c` prints at the end: the summary, then what only the console
/// says, and the artifacts that are there to open.
fn end_text(
    summary: &Summary,
    report: &RunReport,
    mcperf: &Option<McperfLines>,
    notes: &Notes,
    artifacts: &Artifacts,
) -> String {
    let mut text = summary.to_text();
    if let Some(why) = &notes.timer_fallback {
        let _ = writeln!(
            text,
            "note: no precise shot timer ({why}): shots may have started up to 1 ms late"
        );
    }
    // mcperf's lines, for a run with a memcached queue.
    if let Some(lines) = mcperf {
        text.push('\n');
        text.push_str(&lines.to_text(summary.active_or_whole_s()));
    }
    if report.queues.len() > 1 {
        for queue in &report.queues {
            let _ = writeln!(text, "[{}] {}", queue.name, queue_counts(queue));
        }
    }
    // Only what was written: a full disk may have left no report.
    let present: Vec<&str> = [files::HTML, files::SUMMARY_JSON, PHOUT]
        .into_iter()
        .filter(|name| artifacts.file(name).is_file())
        .collect();
    let _ = writeln!(
        text,
        "artifacts: {} ({})",
        artifacts.dir().display(),
        if present.is_empty() {
            "none of the reports could be written".to_owned()
        } else {
            present.join(", ")
        }
    );
    text
}

/// A warning when InfluxDB lost points: dashboards then lack them.
fn influx_warning(influx: &InfluxReport) -> Option<String> {
    let cause = influx
        .first_error
        .as_ref()
        .map(|e| format!(" (first error: {e})"))
        .unwrap_or_default();
    let all = influx.written + influx.dropped + influx.unconfirmed;
    match (influx.written, influx.dropped, influx.unconfirmed) {
        (_, 0, 0) => None,
        (0, dropped, 0) => Some(format!(
            "influx: no point was written, {dropped} dropped{cause}: the dashboards have nothing of this run"
        )),
        (_, dropped, 0) => Some(format!(
            "influx: {dropped} of {all} points dropped{cause}: the dashboards lack them"
        )),
        (written, dropped, unconfirmed) => Some(format!(
            "influx: {written} of {all} points confirmed written, {unconfirmed} sent but never \
             answered (InfluxDB stalled: it may have them), {dropped} dropped{cause}: the \
             dashboards may lack some"
        )),
    }
}

/// `planned 600, sent 495, unsent 105`, or `sent 495 (planned: no end known)`.
fn queue_counts(queue: &QueueReport) -> String {
    match (queue.planned, queue.unsent()) {
        (Some(planned), Some(unsent)) => {
            format!("planned {planned}, sent {}, unsent {unsent}", queue.fired)
        }
        _ => format!("sent {} (planned: no end known)", queue.fired),
    }
}

/// The plans' own rate: all planned shots over the longest schedule, when both are known.
fn planned_rate(report: &RunReport, longest: Option<Duration>) -> Option<f64> {
    let planned: u64 = report
        .queues
        .iter()
        .map(|q| q.planned)
        .sum::<Option<u64>>()?;
    let seconds = longest?.as_secs_f64();
    (seconds > 0.0).then(|| planned as f64 / seconds)
}
