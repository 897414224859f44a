//! `shard.json`: what a run writes about its place in a sharded test, so that
//! `tank merge` can judge and join the shards without their configs or ammo:
//! which shard it was, when it started and on what clock, each queue's plan in
//! closed form (the schedule text and the whole plan's length, from which every
//! second's planned count follows), the autostop criteria, and, at the end, when
//! its first shot actually left. Every run writes one, sharded or not: a run
//! is shard 0 of 1. Beside it, what the run knows of its clock ([`clock`]) and
//! the wall-clock times it reads and writes ([`time`]).

pub mod clock;
pub mod time;

use std::path::Path;

use serde::{Deserialize, Serialize};
use tank_config::{ArrivalProcess, Arrivals};
use tank_plan::{PlannedCount, Schedule, Shard};
use tank_report::summary::Stop;

use clock::ClockInfo;

/// The file's name in a run's artifacts directory.
pub const SHARD_JSON: &str = "shard.json";

/// A run's `shard.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// This shard's index, from 0.
    pub index: u64,
    /// How many shards the test has (1: not sharded).
    pub count: u64,
    /// When the schedule started, µs since the Unix epoch.
    pub start_unix_us: u64,
    /// The same, as RFC 3339 (for people).
    pub start: String,
    /// Whether the start was a common one (`--start-at`) rather than "now".
    pub common_start: bool,
    /// The clock the start was read from.
    pub clock: ClockInfo,
    /// Instances this shard ran, over its queues.
    pub instances: u64,
    /// The `[autostop]` criteria, as written.
    pub autostop: Vec<String>,
    /// Each queue's plan.
    pub queues: Vec<QueuePlan>,
    /// When this shard's first shot started, µs since the Unix epoch (written at
    /// the end of the run; `None` before, or when nothing was fired).
    pub first_shot_unix_us: Option<u64>,
    /// Shots fired, over the queues (written at the end of the run).
    pub fired: Option<u64>,
    /// The process's peak resident memory, KiB (written at the end of the run).
    #[serde(default)]
    pub max_rss_kib: Option<u64>,
    /// The run's exit code (written at the end; `None` before, or when the
    /// process died without finishing).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// How the run was stopped before its plan ended, if it was (written at the end).
    #[serde(default)]
    pub stopped: Option<Stop>,
}

fn uniform() -> String {
    ArrivalProcess::Uniform.to_string()
}

/// One queue's plan, as far as it is known in closed form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuePlan {
    /// The section name.
    pub name: String,
    /// The rps schedule, as written (`None`: an instances schedule or a ready stpd file).
    pub rps_schedule: Option<String>,
    /// The queue's `arrivals`, as written back (`uniform` in records written
    /// before tank had them).
    #[serde(default = "uniform")]
    pub arrivals: String,
    /// The seed of drawn arrivals and of `random(...)` steps without their own.
    #[serde(default)]
    pub arrivals_seed: u64,
    /// The whole (unsharded) plan's length, when known without walking it.
    pub whole_len: Option<u64>,
    /// This shard's planned shots, when known.
    pub planned: Option<u64>,
    /// When this shard's first shot is due, ms from the start.
    pub first_due_ms: Option<i64>,
}

impl QueuePlan {
    /// Whether `other` is a slice of the same whole plan: the same section,
    /// schedule, arrivals and plan length, and, when the plan is drawn, the
    /// same seed (shards differ only in their own share of it; a plan that
    /// draws nothing has a seed that changes nothing).
    pub fn same_whole_plan(&self, other: &QueuePlan) -> bool {
        self.difference(other).is_none()
    }

    /// How `other` is not a slice of the same whole plan (see
    /// [`QueuePlan::same_whole_plan`]): the first thing that differs, both ways.
    pub fn difference(&self, other: &QueuePlan) -> Option<String> {
        let show = |schedule: &Option<String>| {
            schedule
                .clone()
                .unwrap_or_else(|| "none (instances or stpd)".into())
        };
        let count = |len: Option<u64>| len.map_or("unknown".into(), |n| n.to_string());
        if self.name != other.name {
            Some(format!("queue [{}] against [{}]", self.name, other.name))
        } else if self.rps_schedule != other.rps_schedule {
            Some(format!(
                "[{}] rps_schedule {} against {}",
                self.name,
                show(&self.rps_schedule),
                show(&other.rps_schedule)
            ))
        } else if self.arrivals != other.arrivals {
            Some(format!(
                "[{}] arrivals {} against {}",
                self.name, self.arrivals, other.arrivals
            ))
        } else if self.whole_len != other.whole_len {
            Some(format!(
                "[{}] plan length {} against {} shots",
                self.name,
                count(self.whole_len),
                count(other.whole_len)
            ))
        } else if self.arrivals_seed != other.arrivals_seed && self.drawn() {
            Some(format!(
                "[{}] arrivals_seed {} against {} (a drawn plan)",
                self.name, self.arrivals_seed, other.arrivals_seed
            ))
        } else {
            None
        }
    }

    /// Whether the plan draws from its seed (drawn arrivals, `random(...)` steps).
    fn drawn(&self) -> bool {
        let (Some(text), Ok(process)) = (&self.rps_schedule, ArrivalProcess::parse(&self.arrivals))
        else {
            return false;
        };
        let arrivals = Arrivals {
            process,
            seed: self.arrivals_seed,
            seed_chosen: false,
        };
        matches!(Schedule::rps_with(text, &arrivals), Ok(Schedule::Rps(rps)) if rps.uses_seed())
    }
}

impl ShardRecord {
    /// The shard.
    pub fn shard(&self) -> Result<Shard, String> {
        Shard::new(self.index, self.count)
    }

    /// This shard's planned count of each queue whose plan is known in closed form.
    pub fn planned_counts(&self) -> Result<Vec<PlannedCount>, String> {
        let shard = self.shard()?;
        let mut counts = Vec::new();
        for queue in &self.queues {
            if let (Some(text), Some(len)) = (&queue.rps_schedule, queue.whole_len) {
                let process = ArrivalProcess::parse(&queue.arrivals)
                    .map_err(|e| format!("[{}] arrivals: {e}", queue.name))?;
                let arrivals = Arrivals {
                    process,
                    seed: queue.arrivals_seed,
                    seed_chosen: false,
                };
                match Schedule::rps_with(text, &arrivals) {
                    Ok(Schedule::Rps(rps)) => {
                        counts.push(PlannedCount::new(rps, len).sharded(shard))
                    }
                    Ok(_) => {}
                    Err(e) => return Err(format!("[{}] rps_schedule: {e}", queue.name)),
                }
            }
        }
        Ok(counts)
    }

    /// Shots this shard planned over its queues (`None` when one queue's is unknown).
    pub fn planned(&self) -> Option<u64> {
        self.queues.iter().map(|q| q.planned).sum()
    }

    /// The earliest due time of this shard's first shots, ms from the start.
    pub fn first_due_ms(&self) -> Option<i64> {
        self.queues.iter().filter_map(|q| q.first_due_ms).min()
    }

    /// This process's peak resident memory so far, KiB (getrusage).
    pub fn peak_rss_kib() -> Option<u64> {
        // SAFETY: getrusage writes into the zeroed struct we own.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
            return None;
        }
        u64::try_from(usage.ru_maxrss).ok()
    }

    /// Write it as `dir/shard.json`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(dir.join(SHARD_JSON), text + "\n")
    }

    /// Read `dir/shard.json`; the error names the file and what is wrong.
    pub fn read(dir: &Path) -> Result<ShardRecord, String> {
        let path = dir.join(SHARD_JSON);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            // A `--processes` run holds its shards' artifacts, merged already.
            let hint = if dir.join("shard-0").join(SHARD_JSON).exists() {
                format!(
                    "; it is a --processes run, merged already: its shards are {}/shard-*",
                    dir.display()
                )
            } else {
                String::new()
            };
            format!(
                "{}: {e} (expected the artifacts of a tank run{hint})",
                path.display()
            )
        })?;
        let record: ShardRecord = serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))?;
        record
            .shard()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> ShardRecord {
        ShardRecord {
            index: 1,
            count: 3,
            start_unix_us: 1_000_000,
            start: time::format_rfc3339(1_000_000),
            common_start: true,
            clock: ClockInfo {
                source: "tsc".into(),
                kernel_synchronised: true,
                kernel_max_error_us: 10,
                daemon: "none".into(),
                offset_us: None,
            },
            instances: 4,
            autostop: vec!["time(1s,10s)".into()],
            queues: vec![QueuePlan {
                name: "phantom".into(),
                rps_schedule: Some("const(30,1s)".into()),
                arrivals: "uniform".into(),
                arrivals_seed: 0,
                whole_len: Some(30),
                planned: Some(10),
                first_due_ms: Some(33),
            }],
            first_shot_unix_us: None,
            fired: None,
            max_rss_kib: None,
            exit_code: None,
            stopped: None,
        }
    }

    #[test]
    fn drawn_arrivals_rebuild_the_drawn_planned_count() {
        let mut drawn = record();
        drawn.queues[0].rps_schedule = Some("const(3000,1s)".into());
        drawn.queues[0].whole_len = Some(3000);
        drawn.queues[0].arrivals = "poisson".into();
        drawn.queues[0].arrivals_seed = 11;
        let arrivals = Arrivals {
            process: ArrivalProcess::Poisson,
            seed: 11,
            seed_chosen: false,
        };
        let Ok(Schedule::Rps(schedule)) = Schedule::rps_with("const(3000,1s)", &arrivals) else {
            panic!("an rps schedule")
        };
        let expected = PlannedCount::new(schedule, 3000).sharded(drawn.shard().unwrap());
        let counts = drawn.planned_counts().unwrap();
        assert_eq!(counts.len(), 1);
        assert_eq!(counts[0], expected);
        // Drawn, so not the evenly spaced plan's count in every window.
        let uniform = record_uniform_count(&drawn);
        assert!((0..1000)
            .step_by(10)
            .any(|ms| expected.between_ms(ms, ms + 10) != uniform.between_ms(ms, ms + 10)));
        // A record written before tank had arrivals reads as uniform.
        let old = r#"{"name":"phantom","rps_schedule":"const(30,1s)","whole_len":30,"planned":10,"first_due_ms":33}"#;
        let plan: QueuePlan = serde_json::from_str(old).unwrap();
        assert_eq!((plan.arrivals.as_str(), plan.arrivals_seed), ("uniform", 0));
    }

    fn record_uniform_count(record: &ShardRecord) -> PlannedCount {
        let mut uniform = record.clone();
        uniform.queues[0].arrivals = "uniform".into();
        uniform.planned_counts().unwrap().remove(0)
    }

    #[test]
    fn round_trips_and_rebuilds_the_planned_count() {
        let dir = tempfile::tempdir().unwrap();
        record().write(dir.path()).unwrap();
        let read = ShardRecord::read(dir.path()).unwrap();
        assert_eq!(read, record());
        let counts = read.planned_counts().unwrap();
        assert_eq!(counts.len(), 1);
        assert_eq!(counts[0].total(), 10);
        assert_eq!(counts[0].first_due_ms(), Some(33));
    }

    #[test]
    fn a_seed_makes_a_plan_another_only_when_the_plan_draws() {
        let uniform = record().queues[0].clone();
        let mut other_seed = uniform.clone();
        other_seed.arrivals_seed = 7;
        other_seed.planned = Some(9);
        assert!(uniform.same_whole_plan(&other_seed));
        let mut poisson = uniform.clone();
        poisson.arrivals = "poisson".into();
        let mut poisson_other = poisson.clone();
        poisson_other.arrivals_seed = 7;
        assert!(!poisson.same_whole_plan(&poisson_other));
        let mut longer = uniform.clone();
        longer.whole_len = Some(31);
        assert!(!uniform.same_whole_plan(&longer));
    }

    #[test]
    fn a_broken_file_is_named_with_its_position() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(SHARD_JSON),
            "{\"index\": 1,\n \"count\": x}",
        )
        .unwrap();
        let error = ShardRecord::read(dir.path()).unwrap_err();
        assert!(error.contains("shard.json:2:"), "{error}");
        let missing = ShardRecord::read(&dir.path().join("nope")).unwrap_err();
        assert!(
            missing.contains("expected the artifacts of a tank run"),
            "{missing}"
        );
    }
}
