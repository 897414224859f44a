//! `tank sweep`: the closed-model way to the limit. One probe per
//! concurrency step, each measured after a warm-up; then the knee and the
//! Universal Scalability Law fit (tank-limit's), a table, JSON and a chart.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use tank_limit::output::{write_json, write_page, SweepReport};
use tank_limit::sweep::{parse_steps, Step};
use tank_limit::{run_probe_shown, Load, Timing};

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
    let mut steps: Vec<Step> = Vec::new();
    let mut warnings = Vec::new();
    let web = args.target.web.start(None, format!("tank sweep {name}"))?;
    let count = args.steps.0.len();
    let interrupt = crate::signals::interrupt_probes()?;
    for (index, &concurrency) in args.steps.0.iter().enumerate() {
        let dir = probe_dir(&root, index, &format!("{concurrency}c"));
        let label = format!("step {} of {count}: {concurrency} connections", index + 1);
        let show = crate::web::Web::show(web.as_ref(), label);
        let m = run_probe_shown(
            &target,
            &Load::Closed { concurrency },
            &timing,
            &dir,
            &show,
            &interrupt,
        )?;
        crate::target_args::note_setup_warnings(&mut warnings, &m);
        if interrupt.interrupted() {
            // The step stopped is kept when part of its window was measured.
            let kept = if m.seconds > 0.0 { index + 1 } else { index };
            warnings.push(format!(
                "interrupted during step {} of {count} ({concurrency} connections){}: \
                 {} of {count} steps measured",
                index + 1,
                if m.seconds > 0.0 {
                    format!(", measured over its first {:.2} s", m.seconds)
                } else {
                    ", before its window began".to_owned()
                },
                kept
            ));
            if m.seconds == 0.0 {
                break;
            }
        }
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
                "no request succeeded at {}: {}",
                tank_plan::words::count(concurrency as u64, "connection"),
                m.failures()
            ));
        }
        steps.push(step);
        let stop = interrupt.interrupted();
        if let Some(web) = &web {
            let rows: Vec<Vec<String>> = steps
                .iter()
                .map(|s| {
                    vec![
                        s.concurrency.to_string(),
                        format!("{:.1}", s.achieved_rps),
                        format!("{} ({:.2}%)", s.errors, s.error_pct),
                        format!("{:.2}", s.p50_ms),
                        format!("{:.2}", s.p99_ms),
                    ]
                })
                .collect();
            web.dashboard.table(
                "Steps so far",
                &["connections", "good rps", "errors", "p50 ms", "p99 ms"],
                &rows,
            );
        }
        if stop {
            break;
        }
    }
    // As `tank -c` stopped by a signal; judged before the dashboard's linger,
    // which a Ctrl-C ends without making the command an interrupted one.
    let code = if interrupt.interrupted() {
        tank_stats::autostop::codes::INTERRUPTED as u8
    } else {
        0
    };
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
    if let Some(web) = web {
        web.finish(&report.table());
    }
    Ok(finish(code, &report.warnings, args.target.fail_on_warnings))
}
