//! `tank sweep`: the closed-model way to the limit. One probe per
//! concurrency step, each measured after a warm-up; then the knee and the
//! Universal Scalability Law fit (tank-limit's), a table, JSON and a chart.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use tank_limit::output::{write_json, write_page, SweepReport};
use tank_limit::sweep::{parse_steps, Step};
use tank_limit::{run_probe, Load, Timing};

use crate::target_args::{finish, parse_duration, probe_dir, TargetArgs};

/// Arguments of `tank sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Concurrency steps: `1,2,4,8,16` or `line(1,64,16)` (16 steps from 1 to 64).
    #[arg(short = 'c', long = "connections", default_value = "1,2,4,8,16,32,64", value_parser = steps)]
    pub steps: Steps,
    /// How long each step is measured, after its warm-up.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub step: Duration,
    /// How long each step runs before it is measured.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Write the result as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// The parsed steps (one flag value, so clap must not see a `Vec`).
#[derive(Debug, Clone)]
pub struct Steps(Vec<u32>);

fn steps(text: &str) -> Result<Steps, String> {
    parse_steps(text).map(Steps)
}

/// Run the sweep.
pub fn run(args: &SweepArgs) -> Result<ExitCode> {
    let (target, root, name) = args.target.target("sweep")?;
    let timing = Timing {
        warmup: args.warmup,
        measure: args.step,
        quantile: 99.0,
    };
    let mut steps = Vec::new();
    let mut warnings = Vec::new();
    for (index, &concurrency) in args.steps.0.iter().enumerate() {
        let dir = probe_dir(&root, index, &format!("{concurrency}c"));
        let m = run_probe(&target, &Load::Closed { concurrency }, &timing, &dir)?;
        let step = Step::of(concurrency, &m);
        errln!(
            "step {concurrency} connections: {:.1} good rps, {} errors ({:.2}%), p99 {:.2} ms",
            step.achieved_rps,
            step.errors,
            step.error_pct,
            step.p99_ms
        );
        if m.good() == 0 {
            warnings.push(format!(
                "no request succeeded at {concurrency} connections: {}",
                m.failures()
            ));
        }
        steps.push(step);
    }
    let report = SweepReport::new(name, steps, warnings);
    out!("{}", report.table());
    if let Some(path) = &args.json {
        write_json(path, &report)?;
    }
    write_json(&root.join("sweep.json"), &report)?;
    write_page(
        &root.join("report.html"),
        &format!("tank sweep — {}", report.target),
        &report,
    )?;
    outln!(
        "artifacts: {} (report.html, sweep.json, one directory per step)",
        root.display()
    );
    Ok(finish(0, &report.warnings, args.target.fail_on_warnings))
}
