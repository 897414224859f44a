//! `tank search` and `tank scan`: the highest rate at which a latency
//! quantile stays under a bound (mcperf's `--search 99:5000` and `--scan`),
//! with open-model probes. The bisection, the validity rule and the reports
//! are tank-limit's; this module parses flags and prints.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use tank_config::ArrivalProcess;
use tank_limit::output::{write_json, write_page, SearchReport};
use tank_limit::search::{bisect, scan_limit, scan_rates, Bound, Probe, Range};
use tank_limit::{run_probe, Load, Target, Timing};

use crate::target_args::{parse_duration, probe_dir, TargetArgs};

/// What both commands judge and how they probe.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The quantile judged, percent.
    #[arg(long, default_value_t = 99.0)]
    pub quantile: f64,
    /// Its bound (e.g. 5ms, 0.5s), from the intended start.
    #[arg(long, value_parser = parse_duration)]
    pub under: Duration,
    /// How long each probe is measured, after its warm-up.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub probe: Duration,
    /// How long each probe runs before it is measured.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// The most connections a probe may open.
    #[arg(long, default_value_t = 1000)]
    pub instances: u32,
    /// The most errors a passing probe may have, percent.
    #[arg(long, default_value_t = 1.0)]
    pub max_errors: f64,
    /// A probe whose generator lag p99 is over this (while connections were
    /// free) is invalid: the generator, not the target, fell behind.
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    pub max_lag: Duration,
    /// How each probe spaces its shots: uniform, poisson, pareto(loc,scale,shape),
    /// gev(loc,scale,shape), normal(mean,sd) or fb_ia [default: the config's, uniform].
    #[arg(long, value_name = "DIST", value_parser = ArrivalProcess::parse)]
    pub arrivals: Option<ArrivalProcess>,
    /// Write the result as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Arguments of `tank search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// The lowest rate considered.
    #[arg(long, default_value_t = 1)]
    pub from: u64,
    /// The highest rate considered [default: the peak measured first by a
    /// closed-model probe with --peak-connections].
    #[arg(long)]
    pub to: Option<u64>,
    /// Stop when the bracket is narrower than this share of its low end (2% or 0.02).
    #[arg(long, default_value = "2%", value_parser = parse_share)]
    pub precision: f64,
    /// Connections of the probe that measures the peak when --to is not given.
    #[arg(long, default_value_t = 64)]
    pub peak_connections: u32,
}

/// Arguments of `tank scan`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// The rates, `lo:hi:step` (e.g. 100:1000:100).
    #[arg(long, value_parser = parse_rates)]
    pub rate: (u64, u64, u64),
}

/// Run `tank search`.
pub fn search(args: &SearchArgs) -> Result<ExitCode> {
    let p = &args.probe;
    let (bound, timing) = judge(p)?;
    let (target, root, name) = p.target.target("search")?;
    let mut index = 0;
    let to = match args.to {
        Some(to) => to,
        None => {
            let dir = probe_dir(&root, index, &format!("peak_{}c", args.peak_connections));
            index += 1;
            let load = Load::Closed {
                concurrency: args.peak_connections.max(1),
            };
            let peak = run_probe(&target, &load, &timing, &dir)?;
            println!(
                "peak: {:.1} rps with {} connections",
                peak.achieved_rps, args.peak_connections
            );
            peak.achieved_rps.floor() as u64
        }
    };
    if to <= args.from {
        bail!("--to {to} must be above --from {}", args.from);
    }
    let range = Range {
        from: args.from.max(1),
        to,
        precision: args.precision,
    };
    let (limit, probes) = bisect(&range, |rate| {
        let probe = probe_at(
            &target,
            p,
            &bound,
            &timing,
            rate,
            &probe_dir(&root, index, &format!("{rate}rps")),
        );
        index += 1;
        probe
    })?;
    finish(
        SearchReport::new("search", name, &bound, limit, probes),
        p,
        &root,
    )
}

/// Run `tank scan`.
pub fn scan(args: &ScanArgs) -> Result<ExitCode> {
    let p = &args.probe;
    let (bound, timing) = judge(p)?;
    let (target, root, name) = p.target.target("scan")?;
    let (from, to, step) = args.rate;
    let mut probes = Vec::new();
    for (index, rate) in scan_rates(from, to, step).into_iter().enumerate() {
        let dir = probe_dir(&root, index, &format!("{rate}rps"));
        probes.push(probe_at(&target, p, &bound, &timing, rate, &dir)?);
    }
    let limit = scan_limit(&probes);
    finish(
        SearchReport::new("scan", name, &bound, limit, probes),
        p,
        &root,
    )
}

fn judge(p: &ProbeArgs) -> Result<(Bound, Timing)> {
    if !(p.quantile > 0.0 && p.quantile <= 100.0) {
        bail!(
            "--quantile {}: expected a percent above 0, at most 100",
            p.quantile
        );
    }
    if p.instances == 0 {
        bail!("--instances 0: expected at least one connection");
    }
    let bound = Bound {
        quantile: p.quantile,
        under_ms: p.under.as_secs_f64() * 1000.0,
        max_error_pct: p.max_errors,
        max_lag_p99_ms: p.max_lag.as_secs_f64() * 1000.0,
    };
    let timing = Timing {
        warmup: p.warmup,
        measure: p.probe,
        quantile: p.quantile,
    };
    Ok((bound, timing))
}

fn probe_at(
    target: &Target,
    p: &ProbeArgs,
    bound: &Bound,
    timing: &Timing,
    rate: u64,
    dir: &std::path::Path,
) -> Result<Probe, tank_limit::LimitError> {
    let load = Load::Open {
        rate,
        duration: timing.warmup + timing.measure,
        instances: p.instances,
        arrivals: p.arrivals,
    };
    let measured = run_probe(target, &load, timing, dir)?;
    let probe = Probe::judge(rate, &measured, bound);
    eprintln!(
        "probe {rate} rps: achieved {:.1}, p{} {:.2} ms: {}",
        probe.achieved_rps,
        bound.quantile,
        probe.quantile_ms,
        if probe.passed {
            "pass"
        } else if probe.valid {
            "fail"
        } else {
            "INVALID"
        }
    );
    Ok(probe)
}

fn finish(report: SearchReport, p: &ProbeArgs, root: &std::path::Path) -> Result<ExitCode> {
    print!("{}", report.table());
    if let Some(path) = &p.json {
        write_json(path, &report)?;
    }
    let page = root.join("report.html");
    write_page(
        &page,
        &format!("tank {} — {}", report.kind, report.target),
        &report,
    )?;
    write_json(&root.join(format!("{}.json", report.kind)), &report)?;
    println!(
        "artifacts: {} (report.html, {}.json, one directory per probe)",
        root.display(),
        report.kind
    );
    Ok(if report.limit_rps.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// `2%` or `0.02`.
fn parse_share(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("`{text}`: expected a share like 2% or 0.02"))?;
    if !(value > 0.0 && value < 1.0) {
        return Err(format!("`{text}`: expected a share above 0 and under 100%"));
    }
    Ok(value)
}

/// `lo:hi:step`.
fn parse_rates(text: &str) -> Result<(u64, u64, u64), String> {
    let parts: Vec<&str> = text.split(':').collect();
    let expected = || {
        format!("`{text}`: expected lo:hi:step, e.g. 100:1000:100, with 1 ≤ lo ≤ hi and step ≥ 1")
    };
    let [lo, hi, step] = parts[..] else {
        return Err(expected());
    };
    let n = |s: &str| s.trim().parse::<u64>().map_err(|_| expected());
    let (lo, hi, step) = (n(lo)?, n(hi)?, n(step)?);
    if lo == 0 || hi < lo || step == 0 || (hi - lo) / step >= 1000 {
        return Err(expected());
    }
    Ok((lo, hi, step))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_rates_parse() {
        assert_eq!(parse_share("2%"), Ok(0.02));
        assert_eq!(parse_share("0.05"), Ok(0.05));
        assert!(parse_share("0").is_err());
        assert_eq!(parse_rates("100:1000:100"), Ok((100, 1000, 100)));
        assert!(parse_rates("100:50:10").is_err());
        assert!(parse_rates("1:2")
            .unwrap_err()
            .contains("expected lo:hi:step"));
    }
}
