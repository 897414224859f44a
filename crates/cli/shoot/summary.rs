//! The end-of-run summary on stdout: enough to judge a run before opening any report.

use std::fmt::Write as _;
use std::path::Path;

use tank_engine::RunReport;
use tank_stats::NetCode;

use super::collector::Totals;

/// Render the summary.
pub fn render(
    report: &RunReport,
    totals: &Totals,
    artifacts: &Path,
    samples_dropped: u64,
) -> String {
    let mut out = String::new();
    let secs = report.elapsed.as_secs_f64();
    let _ = writeln!(
        out,
        "tank: run finished in {secs:.1}s; artifacts in {}",
        artifacts.display()
    );
    for queue in &report.queues {
        let planned = queue
            .planned
            .map_or_else(|| "?".to_string(), |p| p.to_string());
        let _ = writeln!(
            out,
            "  [{}] planned {planned}, sent {}, unsent {}",
            queue.name, queue.fired, queue.unsent
        );
    }
    if totals.responses == 0 {
        let _ = writeln!(out, "  no responses");
        return out;
    }
    let span = totals.span_us.map_or(0.0, |(first, last)| {
        (last.saturating_sub(first)) as f64 / 1e6
    });
    let planned: Option<u64> = report.queues.iter().map(|q| q.planned).sum();
    let rate = |n: u64| if span > 0.0 { n as f64 / span } else { 0.0 };
    let _ = write!(
        out,
        "  responses      {} ({:.1}/s",
        totals.responses,
        rate(totals.responses)
    );
    if let Some(planned) = planned {
        let _ = write!(out, "; planned {planned}");
    }
    let _ = writeln!(out, ")");
    let codes: Vec<String> = totals
        .proto_codes
        .iter()
        .map(|(code, n)| format!("{code} ×{n}"))
        .collect();
    let _ = writeln!(out, "  HTTP codes     {}", codes.join(", "));
    let nets: Vec<String> = totals
        .net_codes
        .iter()
        .map(|(code, n)| {
            if *code == NetCode::OK {
                format!("0 ×{n}")
            } else {
                format!("{} ({}) ×{n}", code.0, code.describe())
            }
        })
        .collect();
    let _ = writeln!(out, "  net codes      {}", nets.join(", "));
    let quantiles = |h: &hdrhistogram::Histogram<u64>| {
        [50.0, 90.0, 95.0, 99.0, 100.0]
            .iter()
            .map(|q| format!("p{q}={}", ms(h.value_at_quantile(q / 100.0))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(out, "  interval_real  {}", quantiles(&totals.interval_real));
    let _ = writeln!(
        out,
        "  lag            {} (start − due)",
        quantiles(&totals.lag)
    );
    let _ = writeln!(
        out,
        "  bytes          {} out, {} in",
        totals.bytes.0, totals.bytes.1
    );
    if samples_dropped > 0 {
        let _ = writeln!(
            out,
            "  WARNING: {samples_dropped} samples were dropped (the results thread fell behind)"
        );
    }
    out
}

fn ms(us: u64) -> String {
    if us < 1000 {
        format!("{us}µs")
    } else {
        format!("{:.1}ms", us as f64 / 1000.0)
    }
}
