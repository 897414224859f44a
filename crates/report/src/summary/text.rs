//! A summary's text form: what `tank -c` prints at the end and writes as
//! `summary.txt`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Summary;
use crate::names::net_reason;

impl Summary {
    /// The summary for people, printed at the end of a run and written as `summary.txt`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.meta.title);
        if let Some(job) = self.meta.job.headline() {
            let _ = writeln!(out, "job: {job}");
        }
        if let Some(description) = self.meta.job.job_dsc.as_deref().filter(|d| !d.is_empty()) {
            let _ = writeln!(out, "{description}");
        }
        let _ = write!(
            out,
            "duration {:.1} s, responses {}",
            self.active_or_whole_s(),
            self.shots.responses
        );
        match (self.shots.planned, self.shots.sent, self.shots.unsent) {
            (Some(planned), Some(sent), Some(unsent)) => {
                let _ = write!(
                    out,
                    ", shots planned {planned}, sent {sent}, unsent {unsent}"
                );
            }
            (None, Some(sent), _) => {
                let _ = write!(out, ", shots sent {sent} (planned: no end known)");
            }
            _ => {}
        }
        if self.shots.late > 0 {
            let _ = write!(out, ", late {}", self.shots.late);
        }
        let _ = writeln!(out);
        if let Some(stop) = &self.stopped {
            let _ = write!(out, "{}", stop.cause.describe());
            if let Some(after) = stop.after_s {
                let _ = write!(out, " after {after:.1} s");
            }
            // What the plan had due, not what was late: the unsent warning counts against it.
            match (stop.due, stop.after_s) {
                (Some(due), Some(after)) => {
                    let _ = writeln!(
                        out,
                        "; the plan had {due} shots due by {:.1} s, a second before the stop",
                        (after - 1.0).max(0.0)
                    );
                }
                (Some(due), None) => {
                    let _ = writeln!(
                        out,
                        "; the plan had {due} shots due by a second before the stop"
                    );
                }
                (None, _) => {
                    let _ = writeln!(out);
                }
            }
        }
        // The average is over the active time, which partial seconds make shorter than the
        // seconds counted: it can exceed the busiest second, so each says what it is.
        let _ = write!(
            out,
            "rps: actual {:.1} over the {:.1} s active, busiest second {}",
            self.rps.actual,
            self.active_or_whole_s(),
            self.rps.max
        );
        if let Some(planned) = self.rps.planned {
            let _ = write!(out, ", planned {planned:.1}");
        }
        let _ = writeln!(out);
        if self.shots.responses == 0 {
            // No figure that rests on no data: 0 ms would read as a fast target.
            let _ = writeln!(out, "\nno responses: no quantiles, times or sizes");
        } else {
            let with_intended = self.quantiles.iter().any(|r| r.intended_ms.is_some());
            let _ = writeln!(
                out,
                "\nquantile  service ms{}",
                if with_intended {
                    "  from intended start ms  lag ms"
                } else {
                    ""
                }
            );
            for row in &self.quantiles {
                let _ = write!(out, "{:>7}%  {:>10.3}", row.q, row.service_ms);
                if let (Some(intended), Some(lag)) = (row.intended_ms, row.lag_ms) {
                    let _ = write!(out, "  {intended:>23.3}  {lag:>6.3}");
                } else if let Some(intended) = row.intended_ms {
                    let _ = write!(out, "  {intended:>23.3}");
                }
                let _ = writeln!(out);
            }
            let a = &self.avg_ms;
            let _ = writeln!(
                out,
                "\naverage ms: total {:.3}, connect {:.3}, send {:.3}, latency {:.3}, receive {:.3}",
                a.total, a.connect, a.send, a.latency, a.receive
            );
            let _ = writeln!(
                out,
                "average bytes: request {:.1}, response {:.1}",
                self.avg_bytes.request, self.avg_bytes.response
            );
        }
        if let Some(retries) = self.shots.retries {
            let _ = writeln!(
                out,
                "retries {retries} (requests sent again after a kept connection was found closed)"
            );
        }
        let total = self.shots.responses.max(1) as f64;
        let kind = self.codes();
        let named = |codes: &BTreeMap<String, u64>, reason: &dyn Fn(u16) -> &'static str| {
            codes
                .iter()
                .map(|(code, n)| (code.clone(), code.parse().map_or("", reason), *n))
                .collect::<Vec<_>>()
        };
        let proto = named(&self.proto_codes, &|code| kind.reason(code));
        let net = named(&self.net_codes, &net_reason);
        let grpc: Vec<(String, &str, u64)> = self
            .grpc_statuses
            .iter()
            .map(|(name, n)| (String::new(), name.as_str(), *n))
            .collect();
        // One name column for the three tables, as wide as their longest name, so the
        // counts stay in a column.
        let width = proto
            .iter()
            .chain(&net)
            .chain(&grpc)
            .map(|(_, name, _)| name.chars().count())
            .max()
            .unwrap_or(0)
            .max(24);
        let mut table = |heading: &str, rows: &[(String, &str, u64)]| {
            let _ = writeln!(out, "{heading}:");
            for (code, name, n) in rows {
                let _ = writeln!(
                    out,
                    "  {code:>5} {name:<width$} {n:>10} {:>6.2}%",
                    *n as f64 * 100.0 / total
                );
            }
        };
        table(&format!("\n{}", kind.heading()), &proto);
        table("net codes", &net);
        if !grpc.is_empty() {
            table("gRPC statuses", &grpc);
        }
        if !self.tags.is_empty() {
            let _ = writeln!(
                out,
                "\n{:<24} {:>10} {:>7} {:>8} {:>10} {:>10}",
                "tag", "count", "%", "errors", "avg ms", "p99 ms"
            );
            for tag in &self.tags {
                let p99 = tag.quantiles_ms.get(7).copied().unwrap_or(0.0);
                let name = if tag.tag.is_empty() {
                    "(no tag)"
                } else {
                    &tag.tag
                };
                let _ = writeln!(
                    out,
                    "{name:<24} {:>10} {:>7.2} {:>8} {:>10.3} {p99:>10.3}",
                    tag.count, tag.percent, tag.errors, tag.avg_ms
                );
            }
        }
        if !self.queues.is_empty() {
            let _ = writeln!(
                out,
                "\n{:<24} {:>10} {:>7} {:>8} {:>10} {:>10}",
                "queue", "count", "%", "errors", "avg ms", "p99 ms"
            );
            for queue in &self.queues {
                let p99 = queue.quantiles_ms.get(7).copied().unwrap_or(0.0);
                let _ = writeln!(
                    out,
                    "{:<24} {:>10} {:>7.2} {:>8} {:>10.3} {p99:>10.3}",
                    queue.queue, queue.count, queue.percent, queue.errors, queue.avg_ms
                );
            }
        }
        if !self.measuring.is_empty() {
            let _ = writeln!(
                out,
                "\n{:<24} {:>10} {:>8} {:>10} {:>10} {:>10}",
                "measuring (measure = 1)", "count", "errors", "avg ms", "p50 ms", "p99 ms"
            );
            for queue in &self.measuring {
                let at = |i: usize| queue.quantiles_ms.get(i).copied().unwrap_or(0.0);
                let _ = writeln!(
                    out,
                    "{:<24} {:>10} {:>8} {:>10.3} {:>10.3} {:>10.3}",
                    queue.queue,
                    queue.count,
                    queue.errors,
                    queue.avg_ms,
                    at(0),
                    at(7)
                );
            }
        }
        if let Some(replay) = &self.replay {
            let _ = writeln!(
                out,
                "\nreplay: sessions started {}, completed {}, at most {} running at once \
                 (pool {}); requests per second: the capture's {} (its requests over its \
                 length, at the replay's speed), achieved {:.1}",
                replay.sessions.started,
                replay.sessions.completed,
                replay.sessions.peak,
                replay.pool,
                self.rps
                    .planned
                    .map_or_else(|| "unknown".to_string(), |rps| format!("{rps:.1}")),
                self.rps.actual
            );
        }
        self.scenarios_text(&mut out);
        if let Some(stop) = &self.autostop {
            let _ = writeln!(
                out,
                "\nautostop {} (exit code {}): {}",
                stop.criterion, stop.code, stop.explanation
            );
        }
        out.push_str(&crate::monitoring::describe(&self.monitoring));
        if let Some(influx) = &self.influx {
            let _ = writeln!(out, "\ninflux: {influx}");
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(out, "\nWARNINGS:");
            for warning in &self.warnings {
                let _ = writeln!(out, "  - {warning}");
            }
        }
        out
    }
}
