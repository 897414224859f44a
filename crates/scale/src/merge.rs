//! `tank merge`: join the artifacts of a test's shards into one run's, exactly.
//!
//! The shards' phouts are merged by response end into one phout and driven
//! through tank-results' pipeline as a single run's would be (`test_data.log`,
//! the timeline, autostop), each second's planned count rebuilt in closed form
//! from every shard's `shard.json` (schedule, plan length, slice and start), so
//! the merged planned counts are the unsharded plan's. The autostop criteria
//! are judged again over the merged seconds: the verdict a single generator
//! would have reached. Each shard is also judged on its own: how far its first
//! shot was from the common start (its skew) and how many of its planned shots
//! it fired.
//!
//! What makes shards one test: the same shard count, the same plan per queue
//! (section, schedule, arrivals and seed, plan length) and, when they were
//! given a common start, the same start. Shards that differ in any of these
//! are refused: merged, they would describe no test that ran.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use tank_report::monitoring::HostSeries;
use tank_report::names::ProtoCodes;
use tank_report::stream::{files, write_outputs};
use tank_report::summary::{AutostopRow, InfluxRow, Stop, StopCause};
use tank_report::{Meta, RunCounts, Summary};
use tank_results::{
    drive, AutostopSink, DriveError, Driven, Elapsed, JsonLines, PhoutFile, PhoutSource, Pipeline,
    Planned, Response, SecondSink, SinkError, SoFar, Timeline,
};
use tank_run::{time, ClockInfo, ShardRecord};
use tank_stats::autostop::{Autostop, StopReason};
use tank_stats::{Aggregator, SecondStats};

/// The merged phout's name (as a run's).
pub const PHOUT: &str = "phout.log";
/// The per-shard findings of a merge.
pub const MERGE_JSON: &str = "merge.json";
/// The earliest start a shard can have had: anything before is a broken clock or file.
const EARLIEST_START_US: u64 = 978_307_200_000_000; // 2001-01-01T00:00:00Z
/// How far apart shards started without a common start may be and still be one test.
const MAX_START_SPREAD_US: u64 = 24 * 3600 * 1_000_000;
/// Missing shards named one by one, up to this many; beyond, a count and a range.
const NAMED_MISSING: usize = 20;

/// Why the shards could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeRunsError {
    /// The inputs do not make one test, or the output is not safe to write.
    #[error("{0}")]
    Input(String),
    /// A phout could not be read, or a merged file written.
    #[error(transparent)]
    Drive(#[from] DriveError),
    /// Writing the merged artifacts failed.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// How one shard went, against the common start and its own plan.
#[derive(Debug, Clone, Serialize)]
pub struct ShardResult {
    /// Its artifacts directory.
    pub dir: PathBuf,
    /// `I/N`.
    pub shard: String,
    /// Its start, µs since the Unix epoch.
    pub start_unix_us: u64,
    /// When its first shot started, µs since the Unix epoch.
    pub first_shot_unix_us: Option<u64>,
    /// First shot's start minus (the common start + that shot's due time), µs.
    pub skew_us: Option<i64>,
    /// Whether that start came from its phout's first row (to the ms), the
    /// shard having recorded none (killed, or still running).
    pub skew_from_phout: bool,
    /// Shots it planned.
    pub planned: Option<u64>,
    /// Shots in its phout.
    pub fired: u64,
    /// `fired / planned`.
    pub share: Option<f64>,
    /// Its clock.
    pub clock: ClockInfo,
    /// Instances it ran.
    pub instances: u64,
    /// Its process's peak resident memory, KiB.
    pub max_rss_kib: Option<u64>,
    /// Its exit code (`None`: it died without finishing its record).
    pub exit_code: Option<i32>,
}

/// What a merge found.
#[derive(Debug, Serialize)]
pub struct Merged {
    /// One per input, in the order given.
    pub shards: Vec<ShardResult>,
    /// The earliest start of the shards, µs since the Unix epoch.
    pub common_start_unix_us: u64,
    /// The latest start minus the earliest, µs (0 under a common start).
    pub start_spread_us: u64,
    /// The largest skew by magnitude, µs.
    pub max_skew_us: Option<i64>,
    /// The test's shards that were not given (their share is missing).
    pub missing_shards: Missing,
    /// Lines merged.
    pub lines: u64,
    /// Why the criteria would have stopped the test, judged over the merged data.
    pub autostop: Option<String>,
    /// The merged run's exit code: the first stopping shard's under
    /// `--processes`; else an autostop criterion's; else 1 when a shard was
    /// stopped (interrupted, failed), lost or not given; else 35 for warnings
    /// under `fail_on_warnings`; else 0.
    pub exit_code: i32,
    /// Skipped lines and other notes, for people.
    pub warnings: Vec<String>,
    /// The merged summary.
    #[serde(skip)]
    pub summary: Summary,
}

/// The shards of a test not given to a merge.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Missing {
    /// The first few indices (up to 20), in order.
    pub first: Vec<u64>,
    /// How many in all.
    pub all: u64,
}

/// What a caller knows of the shards beyond their artifacts (`--processes`
/// watched them run), and how it judges them.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// Shards that died, with how (`shard 1 was killed by signal 9 (SIGKILL)`).
    pub lost: Vec<(u64, String)>,
    /// A merged run with warnings exits 35 instead of 0 (`--fail-on-warnings`).
    pub fail_on_warnings: bool,
    /// The exit code of the first shard that stopped early, which stopped the
    /// others (`--processes`): the test's exit code, as one process's would be.
    pub first_stop: Option<i32>,
}

/// Counts each shard's rows and its first shot's start, as rows pass.
struct PerShard {
    rows: Vec<u64>,
    first_start_ms: Vec<Option<u64>>,
}

impl SecondSink for PerShard {
    fn response(&mut self, response: Response<'_>) {
        if let Response::Row { record, file, .. } = response {
            self.rows[file] += 1;
            let first = &mut self.first_start_ms[file];
            *first = Some(first.map_or(record.send_ms, |f| f.min(record.send_ms)));
        }
    }

    fn second(&mut self, _: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        Ok(())
    }
}

/// What the shards' own summaries say that their phouts cannot: what their
/// codes are, their warnings (an export that failed, samples dropped, the
/// set-up's), what their exporters sent, and an autostop that stopped one.
/// A shard that wrote no summary (killed) says nothing.
struct FromShards {
    /// Each shard's label (`1/2`) and summary, when it wrote one.
    summaries: Vec<(String, Summary)>,
}

impl FromShards {
    fn read(dirs: &[PathBuf], records: &[ShardRecord]) -> FromShards {
        let summaries = dirs
            .iter()
            .zip(records)
            .filter_map(|(dir, record)| {
                let text = std::fs::read_to_string(dir.join(files::SUMMARY_JSON)).ok()?;
                let summary = Summary::from_json(&text).ok()?;
                Some((format!("{}/{}", record.index, record.count), summary))
            })
            .collect();
        FromShards { summaries }
    }

    /// What the shards' proto codes are (`None` when none says: then the
    /// codes themselves are read).
    fn proto_kind(&self) -> Option<ProtoCodes> {
        self.summaries
            .iter()
            .filter_map(|(_, summary)| summary.proto_kind)
            .reduce(|a, b| if a == b { a } else { ProtoCodes::Mixed })
    }

    /// The shards' warnings that `merged` does not give itself, each once,
    /// with the shards that gave it (`shards 0/2, 1/2: influx: …`).
    fn warnings(&self, merged: &[String]) -> Vec<String> {
        let mut said: Vec<(&str, Vec<&str>)> = Vec::new();
        for (label, summary) in &self.summaries {
            for warning in &summary.warnings {
                // The merged run judges its counts itself.
                if merged.contains(warning) || tank_report::warnings::judged_on_counts(warning) {
                    continue;
                }
                match said.iter_mut().find(|(w, _)| *w == warning.as_str()) {
                    Some((_, labels)) => labels.push(label),
                    None => said.push((warning, vec![label])),
                }
            }
        }
        said.into_iter()
            .map(|(warning, labels)| {
                let which = if labels.len() == 1 { "shard" } else { "shards" };
                format!("{which} {}: {warning}", labels.join(", "))
            })
            .collect()
    }

    /// What the shards' `[influx]` exporters sent, summed (`None`: none had one).
    fn influx(&self) -> Option<InfluxRow> {
        self.summaries
            .iter()
            .filter_map(|(label, summary)| Some((label, summary.influx.as_ref()?)))
            .fold(None, |sum: Option<InfluxRow>, (label, row)| {
                let mut sum = sum.unwrap_or(InfluxRow {
                    written: 0,
                    dropped: 0,
                    unconfirmed: 0,
                    first_error: None,
                });
                sum.written += row.written;
                sum.dropped += row.dropped;
                sum.unconfirmed += row.unconfirmed;
                if sum.first_error.is_none() {
                    sum.first_error = row
                        .first_error
                        .as_ref()
                        .map(|e| format!("shard {label}: {e}"));
                }
                Some(sum)
            })
    }

    /// The monitored hosts' series of the first shard that has them (every
    /// shard watches the same hosts), on the merged timeline's seconds `ts`;
    /// named as that shard's view when others watched too (on other
    /// machines, their own `localhost` differs).
    fn monitoring(&self, ts: &[u64]) -> Vec<HostSeries> {
        let mut watching = self
            .summaries
            .iter()
            .filter(|(_, summary)| !summary.monitoring.is_empty());
        let Some((label, first)) = watching.next() else {
            return Vec::new();
        };
        let others = watching.count();
        first
            .monitoring
            .iter()
            .map(|host| HostSeries {
                host: host.host.clone(),
                comment: if others > 0 {
                    format!("{} (shard {label}'s view)", host.comment)
                        .trim()
                        .to_owned()
                } else {
                    host.comment.clone()
                },
                metrics: host
                    .metrics
                    .iter()
                    .map(|(metric, values)| {
                        let by_second: BTreeMap<u64, Option<f64>> = first
                            .timeline
                            .ts
                            .iter()
                            .copied()
                            .zip(values.iter().copied())
                            .collect();
                        let on_merged = ts
                            .iter()
                            .map(|second| by_second.get(second).copied().flatten())
                            .collect();
                        (metric.clone(), on_merged)
                    })
                    .collect(),
            })
            .collect()
    }

    /// The first autostop that stopped a shard (and so the test), named by its shard.
    fn autostop(&self) -> Option<AutostopRow> {
        self.summaries
            .iter()
            .filter_map(|(label, summary)| Some((label, summary.autostop.as_ref()?)))
            .min_by_key(|(_, row)| row.ts)
            .map(|(label, row)| AutostopRow {
                explanation: format!("{} (in shard {label})", row.explanation),
                ..row.clone()
            })
    }
}

/// The test's planned rate, as one run's: every shard's planned shots over
/// the longest rps schedule (each shard plans its share of the same one),
/// from their records. `None` with a shard missing, or a plan of no known
/// length or schedule.
fn planned_rate(records: &[ShardRecord], missing: u64) -> Option<f64> {
    if missing > 0 {
        return None;
    }
    let planned: u64 = records
        .iter()
        .map(ShardRecord::planned)
        .sum::<Option<u64>>()?;
    let longest_ms = records
        .first()?
        .queues
        .iter()
        .filter_map(
            |q| match tank_plan::Schedule::rps(q.rps_schedule.as_deref()?) {
                Ok(tank_plan::Schedule::Rps(rps)) => Some(rps.duration_ms()),
                _ => None,
            },
        )
        .max()?;
    (longest_ms > 0).then(|| planned as f64 * 1000.0 / longest_ms as f64)
}

/// Merge the runs in `dirs` into `out` (created; it must not hold a phout yet).
pub fn merge_runs(
    dirs: &[PathBuf],
    out: &Path,
    buffered_seconds: u32,
    known: &Known,
) -> Result<Merged, MergeRunsError> {
    let records = dirs
        .iter()
        .map(|dir| ShardRecord::read(dir).map_err(MergeRunsError::Input))
        .collect::<Result<Vec<_>, _>>()?;
    let (missing, mut warnings) = check_shards(dirs, &records)?;
    if out.join(PHOUT).exists() {
        return Err(MergeRunsError::Input(format!(
            "{} already holds a {PHOUT}: merge into a new directory",
            out.display()
        )));
    }
    std::fs::create_dir_all(out).map_err(|source| MergeRunsError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let planned = planned_of(dirs, &records)?;
    let common_start = records.iter().map(|r| r.start_unix_us).min().unwrap_or(0);
    let joined = join(dirs, &records, out, buffered_seconds, &planned)?;
    warnings.extend(joined.driven.warnings);
    warnings.extend(lost_warnings(dirs, &records, known));
    let shards = shard_results(dirs, &records, &joined.per_shard, common_start);
    let stop = merged_stop(&records, known, &planned, common_start);
    let stopped = joined.stopped;
    let from_shards = FromShards::read(dirs, &records);
    // The criteria judged again over the merged rows, or, when they do not
    // fire there, the one that stopped a shard (and with it the test).
    let autostop = stopped
        .as_ref()
        .map(AutostopRow::from)
        .or_else(|| from_shards.autostop());
    let counts = RunCounts {
        planned: records.iter().map(ShardRecord::planned).sum(),
        sent: joined.driven.rows,
        planned_rps: planned_rate(&records, missing.all),
        dropped: 0,
        answers_dropped: 0,
        stop,
        // A phout does not say how many instances were busy: each shard's summary does.
        instances: None,
        proto_kind: from_shards.proto_kind(),
    };
    let latest_start = records.iter().map(|r| r.start_unix_us).max().unwrap_or(0);
    let max_skew_us = shards
        .iter()
        .filter_map(|s| s.skew_us)
        .max_by_key(|s| s.unsigned_abs());
    let meta = merged_meta(dirs, &records, common_start, latest_start, max_skew_us);
    let mut summary = Summary::build(
        meta,
        &joined.driven.totals,
        joined.timeline,
        Some(&counts),
        stopped.as_ref(),
        None,
    );
    summary.autostop.clone_from(&autostop);
    summary.influx = from_shards.influx();
    summary.monitoring = from_shards.monitoring(&summary.timeline.ts);
    warnings.extend(from_shards.warnings(&summary.warnings));
    summary.warnings.extend(warnings.iter().cloned());
    let exit_code = match (known.first_stop, &autostop, &stop) {
        (Some(code), _, _) => code,
        (None, Some(row), _) => row.code,
        (None, None, Some(_)) => 1,
        // A shard not given is a share of the test missing, as a lost one is.
        (None, None, None) if missing.all > 0 => 1,
        (None, None, None) if known.fail_on_warnings && !summary.warnings.is_empty() => {
            tank_stats::autostop::codes::WARNINGS
        }
        (None, None, None) => 0,
    };
    summary.exit_code = Some(exit_code);
    let merged = Merged {
        shards,
        common_start_unix_us: common_start,
        start_spread_us: latest_start - common_start,
        max_skew_us,
        missing_shards: missing,
        lines: joined.driven.rows,
        autostop: autostop
            .as_ref()
            .map(|r| format!("{}: {}", r.criterion, r.explanation)),
        exit_code,
        warnings,
        summary,
    };
    write_merged(&merged, stopped.as_ref(), out)?;
    Ok(merged)
}

/// What driving the shards' phouts through the pipeline gave.
struct Joined {
    driven: Driven,
    per_shard: PerShard,
    timeline: Timeline,
    /// Why the criteria would have stopped the test.
    stopped: Option<StopReason>,
}

/// The shards' phouts merged into `out`'s phout and `test_data.log`, judged by
/// the first shard's criteria, each second planned by every shard's plan.
fn join(
    dirs: &[PathBuf],
    records: &[ShardRecord],
    out: &Path,
    buffered_seconds: u32,
    planned: &Planned,
) -> Result<Joined, MergeRunsError> {
    let common_start = records.iter().map(|r| r.start_unix_us).min().unwrap_or(0);
    let instances: u64 = records.iter().map(|r| r.instances).sum();
    let autostop = Autostop::new(&records[0].autostop, instances)
        .map_err(|e| MergeRunsError::Input(format!("{}: autostop: {e}", dirs[0].display())))?;
    let mut autostop = AutostopSink::new(autostop, Elapsed::FromSecond(common_start / 1_000_000));
    let create = |name: &str| {
        let path = out.join(name);
        move |source| MergeRunsError::Write { path, source }
    };
    let mut phout = PhoutFile::create(&out.join(PHOUT)).map_err(create(PHOUT))?;
    let mut json =
        JsonLines::create(&out.join(files::JSON_LINES)).map_err(create(files::JSON_LINES))?;
    let mut timeline = Timeline::default();
    let mut per_shard = PerShard {
        rows: vec![0; dirs.len()],
        first_start_ms: vec![None; dirs.len()],
    };
    let paths: Vec<PathBuf> = dirs.iter().map(|d| d.join(PHOUT)).collect();
    let source = PhoutSource::open(&paths).map_err(DriveError::from)?;
    let driven = drive(
        source,
        Pipeline::new(Aggregator::new(buffered_seconds)),
        Some(planned.clone()),
        &mut [
            &mut phout,
            &mut per_shard,
            &mut json,
            &mut timeline,
            &mut autostop,
        ],
    )?;
    Ok(Joined {
        driven,
        per_shard,
        timeline,
        stopped: autostop.stopped().cloned(),
    })
}

/// The merged summaries, `autostop_report.txt` when a criterion fired, and `merge.json`.
fn write_merged(
    merged: &Merged,
    stopped: Option<&StopReason>,
    out: &Path,
) -> Result<(), MergeRunsError> {
    write_outputs(&merged.summary, out).map_err(|e| MergeRunsError::Input(e.to_string()))?;
    if let Some(reason) = stopped {
        let path = out.join("autostop_report.txt");
        std::fs::write(&path, reason.report_text())
            .map_err(|source| MergeRunsError::Write { path, source })?;
    }
    let path = out.join(MERGE_JSON);
    let text = serde_json::to_string_pretty(merged).map_err(|e| MergeRunsError::Write {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    std::fs::write(&path, text + "\n").map_err(|source| MergeRunsError::Write { path, source })
}

/// Every shard's plans, each from its own start.
fn planned_of(dirs: &[PathBuf], records: &[ShardRecord]) -> Result<Planned, MergeRunsError> {
    let mut parts = Vec::new();
    for (record, dir) in records.iter().zip(dirs) {
        let counts = record
            .planned_counts()
            .map_err(|e| MergeRunsError::Input(format!("{}: {e}", dir.display())))?;
        parts.extend(counts.into_iter().map(|c| (c, record.start_unix_us)));
    }
    Ok(Planned::of_parts(parts))
}

/// The shards that died: named by the caller (with their signal), or found
/// without an end in their record.
fn lost_warnings(dirs: &[PathBuf], records: &[ShardRecord], known: &Known) -> Vec<String> {
    let mut warnings: Vec<String> = known
        .lost
        .iter()
        .map(|(_, how)| {
            format!(
                "{how}: the rows it had not yet written (up to its last second's) are missing \
                 from the merge"
            )
        })
        .collect();
    for (record, dir) in records.iter().zip(dirs) {
        let named = known.lost.iter().any(|(index, _)| *index == record.index);
        if record.exit_code.is_none() && !named {
            warnings.push(format!(
                "shard {}/{} ({}) did not finish: its shard.json has no end (the process was \
                 killed, or is still running); rows it had not written are missing",
                record.index,
                record.count,
                dir.display()
            ));
        }
    }
    warnings
}

/// How the test was stopped before its plan ended: a lost shard, else the
/// first shard's stop; with what the plans had due by then.
fn merged_stop(
    records: &[ShardRecord],
    known: &Known,
    planned: &Planned,
    common_start: u64,
) -> Option<Stop> {
    let lost = !known.lost.is_empty() || records.iter().any(|r| r.exit_code.is_none());
    let first = records
        .iter()
        .filter_map(|r| {
            let stop = r.stopped?;
            let after_us = (stop.after_s? * 1e6) as u64;
            Some((r.start_unix_us.saturating_add(after_us), stop))
        })
        .min_by_key(|(at, _)| *at);
    let cause = match (lost, first) {
        (true, _) => StopCause::ShardLost,
        (false, Some((_, stop))) => stop.cause,
        (false, None) => return None,
    };
    let at = first.map(|(at, _)| at);
    Some(Stop {
        cause,
        after_s: at.map(|at| at.saturating_sub(common_start) as f64 / 1e6),
        due: at.map(|at| planned.due_well_before(at)),
    })
}

/// Each shard's skew and share.
fn shard_results(
    dirs: &[PathBuf],
    records: &[ShardRecord],
    per_shard: &PerShard,
    common_start: u64,
) -> Vec<ShardResult> {
    records
        .iter()
        .zip(dirs)
        .enumerate()
        .map(|(i, (record, dir))| {
            let from_phout = record.first_shot_unix_us.is_none();
            // phout's times are cut to the ms: the middle of that ms is the
            // best guess, within half a ms either way.
            let first =
                record.first_shot_unix_us.or(per_shard.first_start_ms[i]
                    .map(|ms| ms.saturating_mul(1000).saturating_add(500)));
            let due_us = record.first_due_ms().unwrap_or(0).saturating_mul(1000);
            let planned = record.planned();
            let fired = per_shard.rows[i];
            ShardResult {
                dir: dir.clone(),
                shard: format!("{}/{}", record.index, record.count),
                start_unix_us: record.start_unix_us,
                first_shot_unix_us: first,
                skew_us: first.map(|f| {
                    i64::try_from(i128::from(f) - i128::from(common_start) - i128::from(due_us))
                        .unwrap_or(i64::MAX)
                }),
                skew_from_phout: from_phout && first.is_some(),
                planned,
                fired,
                share: planned.filter(|p| *p > 0).map(|p| fired as f64 / p as f64),
                clock: record.clock.clone(),
                instances: record.instances,
                max_rss_kib: record.max_rss_kib,
                exit_code: record.exit_code,
            }
        })
        .collect()
}

fn merged_meta(
    dirs: &[PathBuf],
    records: &[ShardRecord],
    common_start: u64,
    latest_start: u64,
    max_skew_us: Option<i64>,
) -> Meta {
    Meta {
        title: format!("{} shards merged", dirs.len()),
        sources: dirs.iter().map(|d| d.display().to_string()).collect(),
        generator: concat!("tank ", env!("CARGO_PKG_VERSION")).to_string(),
        facts: vec![
            (
                "shards".into(),
                format!("{} of {}", dirs.len(), records[0].count),
            ),
            ("common start".into(), time::format_rfc3339(common_start)),
            (
                "start spread".into(),
                format!("{} µs", latest_start - common_start),
            ),
            (
                "largest first-shot skew".into(),
                max_skew_us.map_or("none fired".into(), |s| format!("{s} µs")),
            ),
        ],
        ..Meta::default()
    }
}

/// The shards must be of one test (see the module docs); shards not given
/// are reported, not refused (a partial merge is still worth reading).
fn check_shards(
    dirs: &[PathBuf],
    records: &[ShardRecord],
) -> Result<(Missing, Vec<String>), MergeRunsError> {
    let Some(first) = records.first() else {
        return Err(MergeRunsError::Input(
            "give at least one run directory".into(),
        ));
    };
    let refuse = |message: String| Err(MergeRunsError::Input(message));
    let mut seen = BTreeMap::<u64, &Path>::new();
    let mut warnings = Vec::new();
    for (record, dir) in records.iter().zip(dirs) {
        check_start(record, dir)?;
        if let Some(why) = other_test(first, record) {
            return refuse(format!(
                "{} and {} are not shards of one test: {why}",
                dirs[0].display(),
                dir.display()
            ));
        }
        if let Some(other) = seen.insert(record.index, dir) {
            return refuse(format!(
                "{} and {} are both shard {}/{}: expected each shard once",
                other.display(),
                dir.display(),
                record.index,
                record.count
            ));
        }
        if record.autostop != first.autostop {
            warnings.push(format!(
                "{} has other autostop criteria than {}: the merge judges by the first's",
                dir.display(),
                dirs[0].display()
            ));
        }
        if !record.common_start && first.count > 1 {
            warnings.push(format!(
                "{} started without --start-at: its skew is against the earliest shard's start",
                dir.display()
            ));
        }
    }
    let (missing, all) = missing_shards(first.count, &seen);
    if all > 0 {
        let more = if all > missing.len() as u64 {
            ", …"
        } else {
            ""
        };
        let named: Vec<String> = missing.iter().map(u64::to_string).collect();
        warnings.push(format!(
            "{all} of the {} shards were not given ({}{more}): the merged plan and counts lack \
             their share",
            first.count,
            named.join(", ")
        ));
    }
    Ok((
        Missing {
            first: missing,
            all,
        },
        warnings,
    ))
}

/// A shard's start must be a time a run can have started at.
fn check_start(record: &ShardRecord, dir: &Path) -> Result<(), MergeRunsError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(u64::MAX, |d| {
            u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
        });
    let latest = now.saturating_add(MAX_START_SPREAD_US);
    if record.start_unix_us < EARLIEST_START_US || record.start_unix_us > latest {
        return Err(MergeRunsError::Input(format!(
            "{}: start_unix_us {} is not when a run started: expected a time between \
             2001-01-01 and now (a broken clock, or an edited shard.json)",
            dir.join(tank_run::SHARD_JSON).display(),
            record.start_unix_us
        )));
    }
    Ok(())
}

/// Why `record` is not a shard of `first`'s test, if it is not.
fn other_test(first: &ShardRecord, record: &ShardRecord) -> Option<String> {
    if record.count != first.count {
        return Some(format!(
            "one is a shard of {}, the other of {}",
            first.count, record.count
        ));
    }
    if first.queues.len() != record.queues.len() {
        return Some(format!(
            "their plans differ: {} queues against {}",
            first.queues.len(),
            record.queues.len()
        ));
    }
    if let Some(difference) = first
        .queues
        .iter()
        .zip(&record.queues)
        .find_map(|(a, b)| a.difference(b))
    {
        return Some(format!("their plans differ: {difference}"));
    }
    if first.common_start && record.common_start && first.start_unix_us != record.start_unix_us {
        return Some(format!(
            "they were given different common starts ({} and {})",
            time::format_rfc3339(first.start_unix_us),
            time::format_rfc3339(record.start_unix_us)
        ));
    }
    let spread = first.start_unix_us.abs_diff(record.start_unix_us);
    if spread > MAX_START_SPREAD_US {
        return Some(format!(
            "they started {:.0} hours apart",
            spread as f64 / 3.6e9
        ));
    }
    None
}

/// The first [`NAMED_MISSING`] shard indices of a test of `count` shards that
/// are not among `seen` (every index seen is below `count`), and how many are
/// missing in all. A count of billions costs no more than the shards given.
fn missing_shards(count: u64, seen: &BTreeMap<u64, &Path>) -> (Vec<u64>, u64) {
    let all = count - seen.len() as u64;
    let named = (0..count)
        .filter(|i| !seen.contains_key(i))
        .take(NAMED_MISSING)
        .collect();
    (named, all)
}

/// `merged` for people: one line per shard, then the totals.
pub fn describe(merged: &Merged) -> String {
    let mut text = String::new();
    for shard in &merged.shards {
        let _ = writeln!(
            text,
            "shard {:>7}  first-shot skew {:>10}  fired {:>10} of {:>10} planned ({})  {}",
            shard.shard,
            match (shard.skew_us, shard.skew_from_phout) {
                (None, _) => "-".into(),
                // phout's times are to the ms: no finer skew can be read from them.
                (Some(s), true) => format!("{:+.1} ms (±0.5, phout)", s as f64 / 1000.0),
                (Some(s), false) => format!("{:+.3} ms", s as f64 / 1000.0),
            },
            shard.fired,
            shard.planned.map_or("?".into(), |p| p.to_string()),
            shard
                .share
                .map_or("-".into(), |s| format!("{:.2}%", s * 100.0)),
            shard.dir.display()
        );
    }
    let rss: Option<u64> = merged.shards.iter().map(|s| s.max_rss_kib).sum();
    let instances: u64 = merged.shards.iter().map(|s| s.instances).sum();
    if let Some(rss) = rss.filter(|_| instances > 0) {
        let _ = writeln!(
            text,
            "memory: {} MiB peak RSS over the shards for {instances} instances: {:.1} KiB per instance, the processes' baseline included",
            rss / 1024,
            rss as f64 / instances as f64
        );
    }
    let _ = writeln!(
        text,
        "start spread {} µs; largest first-shot skew {}",
        merged.start_spread_us,
        merged
            .max_skew_us
            .map_or("-".into(), |s| format!("{:+.3} ms", s as f64 / 1000.0))
    );
    if let Some(reason) = &merged.autostop {
        let _ = writeln!(text, "autostop over the merged data: {reason}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use tank_run::QueuePlan;

    /// 2025-11-21T19:39:11Z, µs: a start after 2001 and before now.
    const START_US: u64 = 1_763_753_951_000_000;

    fn record(index: u64, count: u64, schedule: &str, start_unix_us: u64) -> ShardRecord {
        ShardRecord {
            index,
            count,
            start_unix_us,
            start: time::format_rfc3339(start_unix_us),
            common_start: true,
            clock: ClockInfo::read_local(),
            instances: 2,
            autostop: Vec::new(),
            queues: vec![QueuePlan {
                name: "phantom".into(),
                rps_schedule: Some(schedule.into()),
                arrivals: "uniform".into(),
                arrivals_seed: index,
                whole_len: Some(4),
                planned: Some(2),
                first_due_ms: Some(0),
            }],
            first_shot_unix_us: Some(start_unix_us),
            fired: Some(2),
            max_rss_kib: None,
            exit_code: Some(0),
            stopped: None,
        }
    }

    /// A shard's directory: its record, and a phout of one row a second from its start.
    fn shard(root: &Path, record: &ShardRecord, phout_tail: &str) -> PathBuf {
        let dir = root.join(format!("s{}", record.index));
        std::fs::create_dir_all(&dir).unwrap();
        record.write(&dir).unwrap();
        let start_s = START_US / 1_000_000;
        let rows: String = (0..2)
            .map(|i| {
                format!(
                    "{}.{:03}\t\t1000\t0\t0\t1000\t0\t0\t10\t10\t0\t200\n",
                    start_s + i,
                    record.index
                )
            })
            .collect();
        std::fs::write(dir.join(PHOUT), rows + phout_tail).unwrap();
        dir
    }

    fn merge(dirs: &[PathBuf], root: &Path) -> Result<Merged, MergeRunsError> {
        merge_runs(dirs, &root.join("out"), 2, &Known::default())
    }

    #[test]
    fn two_shards_of_one_test_merge_and_a_torn_last_field_is_skipped() {
        let root = tempfile::tempdir().unwrap();
        let a = shard(root.path(), &record(0, 2, "const(2,2s)", START_US), "");
        // Cut inside its last field: `2` of a 200.
        let b = shard(
            root.path(),
            &record(1, 2, "const(2,2s)", START_US),
            "1763753953.000\t\t1000\t0\t0\t1000\t0\t0\t10\t10\t0\t2",
        );
        let merged = merge(&[a, b], root.path()).unwrap();
        assert_eq!(merged.lines, 4);
        assert_eq!(
            merged.summary.proto_codes.keys().collect::<Vec<_>>(),
            ["200"]
        );
        assert!(
            merged
                .warnings
                .iter()
                .any(|w| w.contains("skipped the unfinished last line")),
            "{:?}",
            merged.warnings
        );
        assert_eq!(merged.exit_code, 0);
        assert!(merged.summary.stopped.is_none());
    }

    #[test]
    fn shards_of_two_tests_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let a = shard(root.path(), &record(0, 2, "const(2,2s)", START_US), "");
        let b = shard(root.path(), &record(1, 2, "line(1,3,2s)", START_US), "");
        let error = merge(&[a.clone(), b], root.path()).unwrap_err().to_string();
        assert!(
            error.contains(
                "are not shards of one test: their plans differ: [phantom] rps_schedule \
                 const(2,2s) against line(1,3,2s)"
            ),
            "{error}"
        );
        let c = shard(
            root.path(),
            &record(1, 2, "const(2,2s)", START_US + 19_000_000),
            "",
        );
        let error = merge(&[a, c], root.path()).unwrap_err().to_string();
        assert!(error.contains("different common starts"), "{error}");
    }

    #[test]
    fn a_start_far_off_is_an_error_at_once_not_a_walk() {
        let root = tempfile::tempdir().unwrap();
        let a = shard(root.path(), &record(0, 2, "const(2,2s)", START_US), "");
        for start in [0, u64::MAX] {
            let mut far = record(1, 2, "const(2,2s)", START_US);
            far.start_unix_us = start;
            let b = shard(root.path(), &far, "");
            let began = Instant::now();
            let error = merge(&[a.clone(), b], root.path()).unwrap_err().to_string();
            assert!(error.contains("is not when a run started"), "{error}");
            // Generous: it is refused before any reading, in microseconds.
            assert!(began.elapsed().as_secs() < 10, "{:?}", began.elapsed());
        }
    }

    #[test]
    fn a_huge_shard_count_is_summarised_and_a_shard_without_an_end_is_named() {
        let root = tempfile::tempdir().unwrap();
        let mut lone = record(0, u64::MAX, "const(2,2s)", START_US);
        lone.exit_code = None;
        lone.fired = None;
        let a = shard(root.path(), &lone, "");
        let merged = merge(&[a], root.path()).unwrap();
        let missing = merged
            .warnings
            .iter()
            .find(|w| w.contains("shards were not given"))
            .expect("the missing shards");
        assert!(missing.len() < 300, "{missing}");
        assert!(
            missing.starts_with("18446744073709551614 of the 18446744073709551615 shards"),
            "{missing}"
        );
        assert_eq!(merged.missing_shards.first.len(), NAMED_MISSING);
        assert!(
            merged.warnings.iter().any(|w| w.contains("did not finish")),
            "{:?}",
            merged.warnings
        );
        assert_eq!(
            merged.summary.stopped.map(|s| s.cause),
            Some(StopCause::ShardLost)
        );
        assert_eq!(merged.exit_code, 1);
    }
}
