//! `tank bench URL`: a wrk-style one-liner. `-c N` connections fire back to
//! back (closed model, as wrk), or `-R RATE` shots per second go out on up to
//! `-c` connections (open model, as wrk2); either way the run ends at `-d`
//! and prints wrk's summary, with the usual artifacts beside it.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use tank_config::ArrivalProcess;
use tank_limit::{run_probe, Load, Measurement, Timing};

use crate::target_args::{parse_duration, probe_dir, TargetArgs};

/// Arguments of `tank bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Connections: all firing back to back, or (with -R) the most open at once.
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: u32,
    /// Requests per second (open model, latency from the intended start, as wrk2).
    #[arg(short = 'R', long)]
    pub rate: Option<u64>,
    /// With -R: how the shots are spaced: uniform (evenly, as wrk2), poisson,
    /// pareto(loc,scale,shape), gev(loc,scale,shape), normal(mean,sd) or fb_ia
    /// (mcperf's --iadist); the seed drawn is in each run's tank.log.
    #[arg(long, value_name = "DIST", requires = "rate", value_parser = ArrivalProcess::parse)]
    pub arrivals: Option<ArrivalProcess>,
    /// How long.
    #[arg(short = 'd', long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
}

/// Run the benchmark and print wrk's summary.
pub fn run(args: &BenchArgs) -> Result<ExitCode> {
    if args.connections == 0 {
        bail!("-c 0: expected at least one connection");
    }
    let (target, root, name) = args.target.target("bench")?;
    let load = match args.rate {
        Some(0) => bail!("-R 0: expected at least 1 request per second"),
        Some(rate) => Load::Open {
            rate,
            duration: args.duration,
            instances: args.connections,
            arrivals: args.arrivals,
        },
        None => Load::Closed {
            concurrency: args.connections,
        },
    };
    let timing = Timing {
        warmup: Duration::ZERO,
        measure: args.duration,
        quantile: 99.0,
    };
    println!("Running {} test @ {name}", human_duration(args.duration));
    let threads = target
        .base()
        .run
        .threads
        .map_or("default".to_owned(), |t| t.to_string());
    println!("  {threads} threads and {} connections", args.connections);
    let dir = probe_dir(&root, 0, "run");
    let m = run_probe(&target, &load, &timing, &dir)?;
    print!("{}", summary(&m, args.rate.is_some()));
    println!(
        "artifacts: {} (report.html, summary.json, phout.log)",
        m.artifacts.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// wrk's summary of `m`.
fn summary(m: &Measurement, intended: bool) -> String {
    let mut out = String::new();
    out.push_str("  Thread Stats   Avg      Stdev     Max   +/- Stdev\n");
    out.push_str(&format!(
        "    Latency {:>9} {:>9} {:>9} {:>8.2}%\n",
        ms(m.mean_ms),
        ms(m.stdev_ms),
        ms(m.latency_ms[4]),
        m.within_stdev_pct
    ));
    if intended {
        out.push_str("  Latency Distribution (from the intended start, corrected for coordinated omission)\n");
    } else {
        out.push_str("  Latency Distribution\n");
    }
    for (q, v) in ["50%", "90%", "99%", "99.9%"].iter().zip(&m.latency_ms) {
        out.push_str(&format!(" {q:>7} {:>9}\n", ms(*v)));
    }
    out.push_str(&format!(
        "  {} requests in {:.2}s, {} read\n",
        m.responses,
        m.seconds,
        bytes(m.bytes_in as f64)
    ));
    if m.errors > 0 {
        out.push_str(&format!(
            "  Errors (4xx, 5xx or network): {} ({:.2}%)\n",
            m.errors,
            m.error_pct()
        ));
    }
    out.push_str(&format!("Requests/sec: {:>10.2}\n", m.achieved_rps));
    out.push_str(&format!(
        "Transfer/sec: {:>10}\n",
        bytes(m.bytes_in as f64 / m.seconds)
    ));
    out
}

/// wrk's latency units: us, ms, s.
fn ms(value: f64) -> String {
    if value < 1.0 {
        format!("{:.2}us", value * 1000.0)
    } else if value < 1000.0 {
        format!("{value:.2}ms")
    } else {
        format!("{:.2}s", value / 1000.0)
    }
}

/// wrk's byte units: B, KB, MB, GB (of 1024).
fn bytes(value: f64) -> String {
    let units = ["B", "KB", "MB", "GB"];
    let mut v = value;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < units.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2}{}", units[unit])
}

fn human_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{s:.3}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_as_wrks() {
        assert_eq!(ms(0.63591), "635.91us");
        assert_eq!(ms(12.9), "12.90ms");
        assert_eq!(ms(1500.0), "1.50s");
        assert_eq!(bytes(911.0 * 1024.0 + 542.0), "911.53KB");
        assert_eq!(bytes(10.0), "10.00B");
    }
}
