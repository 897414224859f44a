//! `tank merge`: join the artifacts of a test's shards into one run's, exactly.
//!
//! The shards' phouts are merged by response end into one phout (streaming, see
//! [`crate::merge`]); that one stream is aggregated per second as a single run's
//! would be, with each second's planned count rebuilt in closed form from every
//! shard's `shard.json` (schedule, plan length, slice and start), so the merged
//! planned counts are the unsharded plan's. The autostop criteria are judged
//! again over the merged seconds: the verdict a single generator would have
//! reached. Each shard is also judged on its own: how far its first shot was from
//! the common start (its skew) and how many of its planned shots it fired.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use tank_plan::PlannedCount;
use tank_report::stream::{files, write_outputs};
use tank_report::{Meta, RunCounts, Summary, Timeline};
use tank_stats::autostop::{Autostop, StopReason};
use tank_stats::phout::parse_line;
use tank_stats::{json, Aggregator, SecondStats};

use crate::clock::ClockInfo;
use crate::merge::{MergeError, PhoutMerge};
use crate::record::ShardRecord;

/// The merged phout's name (as a run's).
pub const PHOUT: &str = "phout.log";
/// The per-shard findings of a merge.
pub const MERGE_JSON: &str = "merge.json";

/// Why the shards could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeRunsError {
    /// The inputs do not make one test, or the output is not safe to write.
    #[error("{0}")]
    Input(String),
    /// A phout could not be read.
    #[error(transparent)]
    Phout(#[from] MergeError),
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
    /// Indices of the test's shards that were not given (their share is missing).
    pub missing_shards: Vec<u64>,
    /// Lines merged.
    pub lines: u64,
    /// Why the criteria would have stopped the test, judged over the merged data.
    pub autostop: Option<String>,
    /// The merged run's exit code: an autostop criterion's, else 0.
    pub exit_code: i32,
    /// Skipped lines and other notes, for people.
    pub warnings: Vec<String>,
    /// The merged summary.
    #[serde(skip)]
    pub summary: Summary,
}

/// Planned shots per unix second over every shard, each from its own start.
struct PlannedSeconds {
    parts: Vec<(PlannedCount, u64)>,
    next: u64,
    last: u64,
}

impl PlannedSeconds {
    fn new(parts: Vec<(PlannedCount, u64)>) -> PlannedSeconds {
        let first = parts
            .iter()
            .map(|(_, start)| start / 1_000_000)
            .min()
            .unwrap_or(0);
        let last = parts
            .iter()
            .map(|(count, start)| {
                let due_ms = count.last_due_ms().unwrap_or(0).max(0).unsigned_abs();
                start.saturating_add(due_ms.saturating_mul(1000)) / 1_000_000
            })
            .max()
            .unwrap_or(0);
        PlannedSeconds {
            parts,
            next: first,
            last,
        }
    }

    fn in_second(&self, second: u64) -> u64 {
        self.parts
            .iter()
            .map(|(count, start)| {
                let from = ms_before(second.saturating_mul(1_000_000), *start);
                let to = ms_before(second.saturating_add(1).saturating_mul(1_000_000), *start);
                count.between_ms(from, to)
            })
            .sum()
    }

    /// Note every second up to `now` in `aggregator`.
    fn feed(&mut self, aggregator: &mut Aggregator, now: u64) {
        while self.next <= now.min(self.last) {
            let shots = self.in_second(self.next);
            if shots > 0 {
                aggregator.note_planned(self.next, shots);
            }
            self.next += 1;
        }
    }
}

/// The smallest whole ms offset from `start_us` whose shot is due at or after `unix_us`.
fn ms_before(unix_us: u64, start_us: u64) -> i64 {
    let since_us = i128::from(unix_us) - i128::from(start_us);
    let ms = -((-since_us).div_euclid(1000));
    i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
}

/// Merge the runs in `dirs` into `out` (created; it must not hold a phout yet).
pub fn merge_runs(
    dirs: &[PathBuf],
    out: &Path,
    buffered_seconds: u32,
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
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MergeRunsError::Write {
            path: path.clone(),
            source,
        }
    };
    std::fs::create_dir_all(out).map_err(write_error(out))?;
    let mut parts = Vec::new();
    for (record, dir) in records.iter().zip(dirs) {
        let counts = record
            .planned_counts()
            .map_err(|e| MergeRunsError::Input(format!("{}: {e}", dir.display())))?;
        parts.extend(counts.into_iter().map(|c| (c, record.start_unix_us)));
    }
    let mut planned = PlannedSeconds::new(parts);
    let instances: u64 = records.iter().map(|r| r.instances).sum();
    let mut autostop = Autostop::new(&records[0].autostop, instances)
        .map_err(|e| MergeRunsError::Input(format!("{}: autostop: {e}", dirs[0].display())))?;

    let phout_path = out.join(PHOUT);
    let json_path = out.join(files::JSON_LINES);
    let mut phout = BufWriter::with_capacity(
        1 << 20,
        File::create(&phout_path).map_err(write_error(&phout_path))?,
    );
    let mut json_out = BufWriter::new(File::create(&json_path).map_err(write_error(&json_path))?);
    let paths: Vec<PathBuf> = dirs.iter().map(|d| d.join(PHOUT)).collect();
    let mut merge = PhoutMerge::open(&paths)?;
    let mut aggregator = Aggregator::new(buffered_seconds);
    let mut timeline = Timeline::default();
    let first_second = records
        .iter()
        .map(|r| r.start_unix_us / 1_000_000)
        .min()
        .unwrap_or(0);
    let mut first_start_ms = vec![None::<u64>; dirs.len()];
    let mut rows = vec![0u64; dirs.len()];
    let mut lines = 0u64;
    let mut stopped: Option<StopReason> = None;
    let mut on_second = |second: SecondStats| -> Result<(), MergeRunsError> {
        json::write_second(&mut json_out, &second).map_err(write_error(&json_path))?;
        timeline.push(&second);
        let elapsed = Duration::from_secs(second.ts.saturating_sub(first_second) + 1);
        if let Some(reason) = autostop.observe(&second, elapsed) {
            stopped.get_or_insert(reason);
        }
        Ok(())
    };
    while let Some((index, line)) = merge.next_line()? {
        phout.write_all(line).map_err(write_error(&phout_path))?;
        phout.write_all(b"\n").map_err(write_error(&phout_path))?;
        // The merge parsed the line when it loaded it: this cannot fail.
        let Ok(record) = parse_line(line) else {
            continue;
        };
        let sent = record.send_ms / 1000;
        planned.feed(&mut aggregator, sent);
        aggregator.note_sent(sent, 1);
        aggregator.add_record(&record);
        let first = &mut first_start_ms[index];
        *first = Some(first.map_or(record.send_ms, |f| f.min(record.send_ms)));
        rows[index] += 1;
        lines += 1;
        while let Some(second) = aggregator.pop_ready() {
            on_second(second)?;
        }
    }
    planned.feed(&mut aggregator, u64::MAX);
    aggregator.finish();
    while let Some(second) = aggregator.pop_ready() {
        on_second(second)?;
    }
    phout.flush().map_err(write_error(&phout_path))?;
    json_out.flush().map_err(write_error(&json_path))?;
    warnings.append(&mut merge.warnings);

    let common_start = records.iter().map(|r| r.start_unix_us).min().unwrap_or(0);
    let latest_start = records.iter().map(|r| r.start_unix_us).max().unwrap_or(0);
    let shards: Vec<ShardResult> = records
        .iter()
        .zip(dirs)
        .enumerate()
        .map(|(i, (record, dir))| {
            let first = record
                .first_shot_unix_us
                .or(first_start_ms[i].map(|ms| ms * 1000));
            let due_us = record.first_due_ms().unwrap_or(0) * 1000;
            let planned = record.planned();
            ShardResult {
                dir: dir.clone(),
                shard: format!("{}/{}", record.index, record.count),
                start_unix_us: record.start_unix_us,
                first_shot_unix_us: first,
                skew_us: first.map(|f| {
                    i64::try_from(i128::from(f) - i128::from(common_start) - i128::from(due_us))
                        .unwrap_or(i64::MAX)
                }),
                planned,
                fired: rows[i],
                share: planned
                    .filter(|p| *p > 0)
                    .map(|p| rows[i] as f64 / p as f64),
                clock: record.clock.clone(),
                instances: record.instances,
                max_rss_kib: record.max_rss_kib,
            }
        })
        .collect();
    let planned_total = records
        .iter()
        .map(ShardRecord::planned)
        .sum::<Option<u64>>();
    let counts = RunCounts {
        planned: planned_total,
        sent: lines,
        planned_rps: None,
        dropped: 0,
        answers_dropped: 0,
        stopped_early: false,
    };
    let exit_code = stopped.as_ref().map_or(0, |r| r.code);
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let max_skew_us = shards
        .iter()
        .filter_map(|s| s.skew_us)
        .max_by_key(|s| s.unsigned_abs());
    let meta = Meta {
        title: format!("{} shards merged", dirs.len()),
        sources: names,
        generator: concat!("tank ", env!("CARGO_PKG_VERSION")).to_string(),
        facts: vec![
            (
                "shards".into(),
                format!("{} of {}", dirs.len(), records[0].count),
            ),
            (
                "common start".into(),
                crate::time::format_rfc3339(common_start),
            ),
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
    };
    let summary = Summary::build(
        meta,
        &aggregator.totals(),
        timeline,
        Some(&counts),
        stopped.as_ref(),
        Some(exit_code),
    );
    write_outputs(&summary, out).map_err(|e| MergeRunsError::Input(e.to_string()))?;
    if let Some(reason) = &stopped {
        let path = out.join("autostop_report.txt");
        std::fs::write(&path, reason.report_text()).map_err(write_error(&path))?;
    }
    let merged = Merged {
        shards,
        common_start_unix_us: common_start,
        start_spread_us: latest_start - common_start,
        max_skew_us,
        missing_shards: missing,
        lines,
        autostop: stopped.map(|r| format!("{}: {}", r.criterion, r.explanation)),
        exit_code,
        warnings,
        summary,
    };
    let path = out.join(MERGE_JSON);
    let text = serde_json::to_string_pretty(&merged).map_err(|e| MergeRunsError::Write {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    std::fs::write(&path, text + "\n").map_err(write_error(&path))?;
    Ok(merged)
}

/// The shards must be of one test (one count, no index twice, one set of
/// criteria); shards not given are reported, not refused (a partial merge is
/// still worth reading).
fn check_shards(
    dirs: &[PathBuf],
    records: &[ShardRecord],
) -> Result<(Vec<u64>, Vec<String>), MergeRunsError> {
    let Some(first) = records.first() else {
        return Err(MergeRunsError::Input(
            "give at least one run directory".into(),
        ));
    };
    let mut seen = vec![
        None::<&Path>;
        usize::try_from(first.count)
            .unwrap_or(usize::MAX)
            .min(1 << 20)
    ];
    let mut warnings = Vec::new();
    for (record, dir) in records.iter().zip(dirs) {
        if record.count != first.count {
            return Err(MergeRunsError::Input(format!(
                "{} is shard {}/{} but {} is shard {}/{}: expected shards of one test",
                dir.display(),
                record.index,
                record.count,
                dirs[0].display(),
                first.index,
                first.count
            )));
        }
        let slot = usize::try_from(record.index)
            .ok()
            .and_then(|i| seen.get_mut(i))
            .ok_or_else(|| {
                MergeRunsError::Input(format!("{}: shard index out of range", dir.display()))
            })?;
        if let Some(other) = slot {
            return Err(MergeRunsError::Input(format!(
                "{} and {} are both shard {}/{}: expected each shard once",
                other.display(),
                dir.display(),
                record.index,
                record.count
            )));
        }
        *slot = Some(dir);
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
    let missing: Vec<u64> = seen
        .iter()
        .enumerate()
        .filter(|(_, dir)| dir.is_none())
        .map(|(i, _)| i as u64)
        .collect();
    if !missing.is_empty() {
        warnings.push(format!(
            "shards {missing:?} of {} were not given: the merged plan and counts lack their share",
            first.count
        ));
    }
    Ok((missing, warnings))
}

/// `merged` for people: one line per shard, then the totals.
pub fn describe(merged: &Merged) -> String {
    let mut text = String::new();
    for shard in &merged.shards {
        let _ = writeln!(
            text,
            "shard {:>7}  first-shot skew {:>10}  fired {:>10} of {:>10} planned ({})  {}",
            shard.shard,
            shard
                .skew_us
                .map_or("-".into(), |s| format!("{:+.3} ms", s as f64 / 1000.0)),
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
            "memory: {} MiB peak RSS over the shards for {instances} instances: {:.1} KiB per instance",
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
