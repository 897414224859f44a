//! `tank bench URL`: a wrk-style one-liner. `-c N` connections fire back to
//! back (closed model, as wrk), or `-R RATE` shots per second go out on up to
//! `-c` connections (open model, as wrk2); either way the run ends at `-d`
//! and prints wrk's summary, with the usual artifacts beside it.
//!
//! Counted as wrk counts: a request is a shot that got a reply, whatever its
//! status; a shot that got none is a socket error (connect, read, write or
//! timeout) and no request, so a refused target has 0 requests/s, not a rate
//! of refusals. Latency is of the replies, as wrk's.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use tank_config::{ArrivalProcess, TankType};
use tank_limit::{run_probe_shown, Load, Measurement, Timing};

use crate::target_args::{finish, parse_duration, probe_dir, TargetArgs};

/// Arguments of `tank bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Connections: all firing back to back, or (with -R) the most open at
    /// once. With --http2, the HTTP/2 connections the streams share (as h2load's -c).
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: u32,
    /// With --http2 (or a --config whose queue is http2 or grpc): streams in
    /// flight on each connection (h2load's -m; here `-M`, as `-m` is the
    /// method): `-c` × `-M` requests in flight, spread evenly.
    #[arg(short = 'M', long, default_value_t = 1)]
    pub max_concurrent_streams: u32,
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
    if args.max_concurrent_streams == 0 {
        bail!("-M 0: expected at least one stream per connection");
    }
    let (target, root, name) = if args.target.http2 {
        args.target.target_over("bench", Some(args.connections))?
    } else {
        args.target.target("bench")?
    };
    // A config's queue may be HTTP/2 already: -c and -M then mean what they do with --http2.
    let queue = &target.base().queues[0];
    let http2 = matches!(queue.tank_type, TankType::Http2 | TankType::Grpc);
    if args.max_concurrent_streams != 1 && !http2 {
        bail!(
            "-M {}: streams per connection are HTTP/2's: expected --http2, or a --config whose \
             queue is tank_type = http2 or grpc",
            args.max_concurrent_streams
        );
    }
    // In flight at once: a connection each over HTTP/1, -M streams each over HTTP/2.
    let in_flight = if http2 {
        args.connections.saturating_mul(args.max_concurrent_streams)
    } else {
        args.connections
    };
    let load = match args.rate {
        Some(0) => bail!("-R 0: expected at least 1 request per second"),
        Some(rate) => Load::Open {
            rate,
            duration: args.duration,
            instances: in_flight,
            arrivals: args.arrivals,
        },
        None => Load::Closed {
            concurrency: in_flight,
        },
    };
    let timing = Timing {
        warmup: Duration::ZERO,
        measure: args.duration,
        quantile: 99.0,
    };
    let threads = target.io_threads();
    outln!("Running {} test @ {name}", human_duration(args.duration));
    if http2 {
        // A config's own `connections` holds when --http2 did not set it.
        match queue.connections {
            Some(connections) if in_flight % connections == 0 => outln!(
                "  {threads} threads and {connections} HTTP/2 connections, {} streams each",
                in_flight / connections
            ),
            Some(connections) => outln!(
                "  {threads} threads and {connections} HTTP/2 connections, {in_flight} streams \
                 in flight spread over them"
            ),
            None => outln!(
                "  {threads} threads and {in_flight} HTTP/2 streams in flight, on as few \
                 connections as they need"
            ),
        }
    } else {
        outln!("  {threads} threads and {} connections", args.connections);
    }
    let dir = probe_dir(&root, 0, "run");
    let web = args.target.web.start(None, format!("tank bench {name}"))?;
    let interrupt = crate::signals::interrupt_probes()?;
    let m = run_probe_shown(
        &target,
        &load,
        &timing,
        &dir,
        &crate::web::Web::show(web.as_ref(), "bench".into()),
        &interrupt,
    )?;
    let mut text = summary(&m, threads as u64, args.rate.is_some());
    if m.interrupted {
        text.push_str(&format!(
            "Interrupted after {:.2}s of {}: the figures above are of that part\n",
            m.seconds,
            human_duration(args.duration)
        ));
    }
    out!("{text}");
    // As `tank -c` stopped by a signal; judged before the dashboard's linger,
    // which a Ctrl-C ends without making the command an interrupted one.
    let code = if interrupt.interrupted() {
        tank_stats::autostop::codes::INTERRUPTED as u8
    } else {
        0
    };
    if let Some(web) = web {
        web.dashboard.end_run(&text, None);
        web.finish(&format!("{} requests answered", m.answered));
    }
    outln!(
        "artifacts: {} (report.html, summary.json, phout.log)",
        m.artifacts.display()
    );
    Ok(finish(code, &warnings(&m), args.target.fail_on_warnings))
}

/// wrk's summary of `m`, its `Req/Sec` per thread of `threads`.
fn summary(m: &Measurement, threads: u64, intended: bool) -> String {
    let mut out = String::new();
    let latency = &m.answered_latency;
    let rate = per_thread(&m.answered_by_second, threads);
    out.push_str("  Thread Stats   Avg      Stdev     Max   +/- Stdev\n");
    out.push_str(&format!(
        "    Latency {:>9} {:>9} {:>9} {:>8.2}%\n",
        ms(latency.mean_ms),
        ms(latency.stdev_ms),
        ms(latency.at(100.0)),
        latency.within_stdev_pct
    ));
    out.push_str(&format!(
        "    Req/Sec {:>9} {:>9} {:>9} {:>8.2}%\n",
        metric(rate.mean),
        metric(rate.stdev),
        metric(rate.max),
        rate.within_stdev_pct
    ));
    if intended {
        out.push_str("  Latency Distribution (from the intended start, corrected for coordinated omission)\n");
    } else {
        out.push_str("  Latency Distribution\n");
    }
    for (label, q) in [
        ("50%", 50.0),
        ("75%", 75.0),
        ("90%", 90.0),
        ("99%", 99.0),
        ("99.9%", 99.9),
    ] {
        out.push_str(&format!(" {label:>7} {:>9}\n", ms(latency.at(q))));
    }
    out.push_str(&format!(
        "  {} requests in {:.2}s, {} read\n",
        m.answered,
        m.seconds,
        bytes(m.bytes_in as f64)
    ));
    let e = &m.socket_errors;
    if e.total() > 0 {
        out.push_str(&format!(
            "  Socket errors: connect {}, read {}, write {}, timeout {}\n",
            e.connect, e.read, e.write, e.timeout
        ));
    }
    if m.non_2xx_3xx > 0 {
        out.push_str(&format!("  Non-2xx or 3xx responses: {}\n", m.non_2xx_3xx));
    }
    out.push_str(&format!(
        "Requests/sec: {:>10.2}\n",
        m.per_second(m.answered)
    ));
    out.push_str(&format!(
        "Transfer/sec: {:>10}\n",
        bytes(m.bytes_in as f64 / m.seconds)
    ));
    out
}

/// What the run's numbers cannot be trusted for, or that nothing worked:
/// its set-up's warnings, no request succeeded (the sockets' failures
/// named), then the run's own warnings.
fn warnings(m: &Measurement) -> Vec<String> {
    let mut out = m.setup_warnings.clone();
    if m.good() == 0 {
        out.push(format!("no request succeeded: {}", m.failures()));
    }
    out.extend(m.warnings.iter().cloned());
    out
}

/// wrk's `Req/Sec` statistics: of each whole second's replies divided among the threads.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rate {
    mean: f64,
    stdev: f64,
    max: f64,
    within_stdev_pct: f64,
}

/// The `Req/Sec` row of `by_second` (replies in each whole second) over `threads`.
fn per_thread(by_second: &[u64], threads: u64) -> Rate {
    let threads = threads.max(1) as f64;
    let values: Vec<f64> = by_second.iter().map(|&n| n as f64 / threads).collect();
    if values.is_empty() {
        return Rate {
            mean: 0.0,
            stdev: 0.0,
            max: 0.0,
            within_stdev_pct: 0.0,
        };
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    // The sample deviation, as wrk's.
    let stdev = if values.len() > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let within = values
        .iter()
        .filter(|&&v| (v - mean).abs() <= stdev)
        .count();
    Rate {
        mean,
        stdev,
        max: values.iter().copied().fold(0.0, f64::max),
        within_stdev_pct: within as f64 * 100.0 / n,
    }
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

/// wrk's metric units: none, k, M, G (of 1000).
fn metric(value: f64) -> String {
    let units = ["", "k", "M", "G"];
    let mut v = value;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < units.len() {
        v /= 1000.0;
        unit += 1;
    }
    format!("{v:.2}{}", units[unit])
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
        assert_eq!(metric(512.0), "512.00");
        assert_eq!(metric(23_456.0), "23.46k");
    }

    #[test]
    fn req_per_sec_is_each_seconds_replies_per_thread() {
        let rate = per_thread(&[2000, 2200, 1800, 2000], 2);
        assert_eq!(rate.mean, 1000.0);
        assert_eq!(rate.max, 1100.0);
        // The sample deviation of 1000, 1100, 900, 1000: √(20000 / 3).
        assert!((rate.stdev - (20_000.0f64 / 3.0).sqrt()).abs() < 1e-9);
        assert_eq!(rate.within_stdev_pct, 50.0);
        let none = per_thread(&[], 4);
        assert_eq!((none.mean, none.max), (0.0, 0.0));
    }
}
