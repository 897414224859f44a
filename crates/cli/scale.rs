//! The flags that place a run in a sharded test: `--shard I/N` (defaults from a
//! Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` and `TANK_SHARDS`),
//! `--start-at TIME`, and `--processes N`.

use anyhow::{bail, Result};
use tank_plan::Shard;

/// Flags of `tank shoot` for running as one shard of many.
#[derive(Debug, Clone, clap::Args)]
pub struct ScaleArgs {
    /// Fire only shard I of N: the shots k ≡ I (mod N) of every queue's plan,
    /// with `instances` divided among the shards, so N shards together fire the
    /// whole plan. Default: $JOB_COMPLETION_INDEX/$TANK_SHARDS when both are set
    /// (as in a Kubernetes Indexed Job; see `tank k8s`).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Start the schedule at this wall-clock time, RFC 3339
    /// (2025-06-01T12:00:00Z) or unix seconds: give every shard the same one.
    /// The shard records its start, clock source and NTP offset in shard.json.
    /// A time already past is an error.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Run the test as N shards in N child processes on this machine (each with
    /// its own open-files limit), started together a moment ahead, with one
    /// console; Ctrl-C reaches them all, when one stops the others are stopped,
    /// and they die with this process. --fail-on-warnings reaches each, and a
    /// [prometheus] endpoint is served by shard I on its port plus I. Their
    /// artifacts are merged into one run directory.
    #[arg(long, value_name = "N", conflicts_with = "shard")]
    pub processes: Option<u32>,
}

impl ScaleArgs {
    /// The shard this process runs: `--shard`, else the environment, else the whole plan.
    pub fn shard(&self) -> Result<Shard> {
        shard_from(
            self.shard.as_deref(),
            std::env::var("JOB_COMPLETION_INDEX").ok().as_deref(),
            std::env::var("TANK_SHARDS").ok().as_deref(),
        )
    }

    /// `--start-at` as µs since the Unix epoch.
    pub fn start_at(&self) -> Result<Option<u64>> {
        match &self.start_at {
            Some(text) => match tank_run::time::parse_time(text) {
                Ok(at) => Ok(Some(at)),
                Err(why) => bail!("--start-at: {why}"),
            },
            None => Ok(None),
        }
    }
}

fn shard_from(flag: Option<&str>, index: Option<&str>, count: Option<&str>) -> Result<Shard> {
    if let Some(text) = flag {
        return Shard::parse(text).map_err(|why| anyhow::anyhow!("--shard: {why}"));
    }
    match (index, count) {
        (None, None) => Ok(Shard::WHOLE),
        (Some(index), Some(count)) => Shard::parse(&format!("{index}/{count}")).map_err(|why| {
            anyhow::anyhow!("JOB_COMPLETION_INDEX={index}, TANK_SHARDS={count}: {why}")
        }),
        (Some(index), None) => bail!(
            "JOB_COMPLETION_INDEX={index} is set but TANK_SHARDS is not: expected both \
             (the shard's index and the count of shards), or --shard I/N"
        ),
        (None, Some(count)) => bail!(
            "TANK_SHARDS={count} is set but JOB_COMPLETION_INDEX is not: expected both, or --shard I/N"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_then_the_environment_then_the_whole_plan() {
        assert_eq!(
            shard_from(Some("1/3"), Some("0"), Some("2")).unwrap(),
            Shard::new(1, 3).unwrap()
        );
        assert_eq!(
            shard_from(None, Some("2"), Some("4")).unwrap(),
            Shard::new(2, 4).unwrap()
        );
        assert_eq!(shard_from(None, None, None).unwrap(), Shard::WHOLE);
        let error = shard_from(None, Some("2"), None).unwrap_err().to_string();
        assert!(error.contains("TANK_SHARDS is not"), "{error}");
        let error = shard_from(None, Some("5"), Some("4"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("JOB_COMPLETION_INDEX=5, TANK_SHARDS=4"),
            "{error}"
        );
    }
}
