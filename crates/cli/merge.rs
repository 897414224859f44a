//! `tank merge RUN_DIR... -o OUT_DIR`: join a sharded test's runs into one.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tank_stats::aggregate::DEFAULT_BUFFERED_SECONDS;

/// Arguments of `tank merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The shards' artifacts directories (each with phout.log and shard.json).
    #[arg(value_name = "RUN_DIR", required = true)]
    runs: Vec<PathBuf>,
    /// Write the merged phout.log, test_data.log, summaries, report.html and
    /// merge.json here (created; it must not hold a phout.log yet).
    #[arg(short, long, value_name = "OUT_DIR")]
    out: PathBuf,
    /// Seconds to wait for late responses before a second is final.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BUFFERED_SECONDS)]
    buffered_seconds: u32,
    /// Exit 35 instead of 0 when the merged run has warnings (the shards'
    /// included), as `tank -c --fail-on-warnings` does.
    #[arg(long)]
    fail_on_warnings: bool,
}

/// Run `tank merge`; the exit code is the autostop verdict (21–33: the
/// criteria over the merged data, or the one that stopped a shard), else 1
/// when a shard was stopped, lost or not given, else 0 (35 for warnings
/// under `--fail-on-warnings`).
pub fn run(args: &MergeArgs) -> Result<ExitCode> {
    let known = tank_scale::merge::Known {
        fail_on_warnings: args.fail_on_warnings,
        ..tank_scale::merge::Known::default()
    };
    let merged = tank_scale::merge_runs(&args.runs, &args.out, args.buffered_seconds, &known)
        .context("tank merge")?;
    out!("{}", merged.summary.to_text());
    out!("{}", tank_scale::merge::describe(&merged));
    outln!(
        "{} lines from {} shards; wrote phout.log, test_data.log, summary.json, summary.txt, \
         report.html, merge.json in {}",
        merged.lines,
        merged.shards.len(),
        args.out.display()
    );
    Ok(ExitCode::from(u8::try_from(merged.exit_code).unwrap_or(1)))
}
