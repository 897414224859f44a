//! What the dashboard knows, and the events that tell a page about it.
//!
//! The page is drawn from one snapshot (everything so far, sent when it
//! connects) and then kept up to date by small events, one per change: a
//! finished second, monitoring, a run starting or ending, a table of steps. A
//! page that connects late, or after the run, gets the same snapshot, so it
//! draws what a page open from the start shows. Memory stays bounded: the
//! current run keeps its last [`KEPT_SECONDS`] seconds (older ones are dropped
//! and counted), earlier runs only their end.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Map, Value};
use tank_monitor::HostSecond;
use tank_stats::{GroupStats, SecondStats, TotalStats};

/// Seconds of the current run a page can be shown: an hour.
pub const KEPT_SECONDS: usize = 3600;

/// Tags with series of their own on the page (the rest are counted in the totals).
pub const MAX_TAGS: usize = 20;

/// Quantiles a second is shown with, per mille: p50, p75, p90, p95, p99, the slowest.
const SHOWN: [u16; 6] = [500, 750, 900, 950, 990, 1000];

/// The dashboard's state: the page's header, the runs, a table of steps.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Title, job, command: what the page says on top.
    meta: Value,
    /// Runs that ended: their label and end (a sweep's earlier steps).
    ended: Vec<Value>,
    /// The run going on (or the last one, once it ended).
    current: Option<Run>,
    /// A search's or sweep's table of probes or steps.
    table: Option<Value>,
    /// The command is over (with what it printed).
    over: Option<Value>,
}

/// One run: its seconds (as the JSON the page gets) and its totals so far.
#[derive(Debug)]
struct Run {
    label: String,
    start_unix_us: u64,
    planned_s: Option<f64>,
    /// Whether the seconds' planned counts are whole (see `Dashboard::begin_run`).
    planned_known: bool,
    seconds: VecDeque<String>,
    dropped: u64,
    /// The pipeline's totals as last given ([`totals_json`]).
    totals: Value,
    /// Per monitored host: its comment, its last second's time and its
    /// last seconds (JSON text).
    monitoring: BTreeMap<String, Host>,
    end: Option<Value>,
}

/// One monitored host's kept seconds.
#[derive(Debug, Default)]
struct Host {
    comment: String,
    last_ts: Option<u64>,
    seconds: VecDeque<String>,
}

/// The run's totals as the page gets them (its totals line and tables):
/// the results pipeline's own (`SoFar::totals`, and the final ones at the end).
fn totals_json(totals: &TotalStats) -> Value {
    let overall = &totals.overall;
    let quantiles_ms: Vec<Option<f64>> = if overall.is_empty() {
        Vec::new()
    } else {
        SHOWN
            .iter()
            .map(|q| overall.quantile_us(*q).map(ms))
            .collect()
    };
    json!({
        "responses": overall.len(),
        "planned": totals.planned,
        "sent": totals.sent,
        "errors": overall.errors(),
        "http": codes(overall.proto_codes.iter()),
        "net": codes(overall.net_codes.iter()),
        "tags": totals
            .tagged
            .iter()
            .map(|(t, group)| json!([t, group.len(), group.errors()]))
            .collect::<Vec<_>>(),
        "quantiles_ms": quantiles_ms,
    })
}

fn codes(counts: impl Iterator<Item = (u16, u64)>) -> Value {
    Value::Object(
        counts
            .map(|(code, n)| (code.to_string(), Value::from(n)))
            .collect::<Map<String, Value>>(),
    )
}

fn ms(us: f64) -> f64 {
    (us / 1000.0 * 1000.0).round() / 1000.0
}

/// A group's shown quantiles, ms (`null` when it had no responses).
fn quantiles(group: &GroupStats) -> Value {
    if group.is_empty() {
        return Value::Null;
    }
    SHOWN
        .iter()
        .map(|q| group.quantile_us(*q).map(ms))
        .collect::<Vec<_>>()
        .into()
}

/// One second as the page gets it.
pub(crate) fn second_json(second: &SecondStats, start_unix_us: u64) -> Value {
    let p99 = |q: &tank_stats::Quantiles| (q.count > 0).then(|| q.get(990).map(ms)).flatten();
    let tags: Map<String, Value> = second
        .tagged
        .iter()
        .take(MAX_TAGS)
        .map(|(tag, group)| {
            let q = |per_mille| group.quantile_us(per_mille).map(ms);
            (
                tag.clone(),
                json!([group.len(), group.errors(), q(500), q(990)]),
            )
        })
        .collect();
    json!({
        "t": second.ts.saturating_sub(start_unix_us / 1_000_000),
        "ts": second.ts,
        "planned": second.planned,
        "sent": second.sent,
        "responses": second.overall.len(),
        "instances": second.instances,
        "q": quantiles(&second.overall),
        "lag_p99": p99(&second.lag),
        "lag_max": (second.lag.count > 0).then(|| second.lag.get(1000).map(ms)).flatten(),
        "intended_p99": p99(&second.intended),
        "http": codes(second.overall.proto_codes.iter()),
        "net": codes(second.overall.net_codes.iter()),
        "tags": tags,
    })
}

/// One host's monitoring second as the page gets it: CPU busy per core (the
/// talk's question: is one core doing all the work?).
fn host_json(host: &HostSecond) -> Value {
    json!({
        "ts": host.ts,
        "host": host.host,
        "comment": host.comment,
        "cores": host.cores_busy(),
    })
}

/// A list of JSON texts as one JSON array.
fn array(texts: &VecDeque<String>) -> Value {
    let joined = format!(
        "[{}]",
        texts
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(",")
    );
    serde_json::from_str(&joined).unwrap_or_default()
}

/// An event in the text/event-stream format: `event: NAME` and one `data:` line.
pub(crate) fn event(name: &str, data: &Value) -> String {
    // serde_json never writes a raw newline, so the data is one line.
    format!("event: {name}\ndata: {data}\n\n")
}

impl State {
    pub(crate) fn new(meta: Value) -> State {
        State {
            meta,
            ..State::default()
        }
    }

    /// Everything, as one `snapshot` event.
    pub(crate) fn snapshot(&self) -> String {
        event("snapshot", &self.snapshot_json())
    }

    /// Everything, as JSON.
    pub(crate) fn snapshot_json(&self) -> Value {
        let current = self.current.as_ref().map(|run| {
            json!({
                "label": run.label,
                "start_unix_us": run.start_unix_us,
                "planned_s": run.planned_s,
                "planned_known": run.planned_known,
                "seconds": array(&run.seconds),
                "dropped": run.dropped,
                "totals": run.totals,
                "monitoring": run.monitoring.iter()
                    .map(|(name, host)| json!({
                        "host": name, "comment": host.comment, "seconds": array(&host.seconds),
                    }))
                    .collect::<Vec<_>>(),
                "end": run.end,
            })
        });
        json!({
            "meta": self.meta,
            "ended": self.ended,
            "run": current,
            "table": self.table,
            "over": self.over,
        })
    }

    /// A run starts (the one before it, if any, has ended).
    pub(crate) fn begin(
        &mut self,
        label: &str,
        start_unix_us: u64,
        planned_s: Option<f64>,
        planned_known: bool,
    ) -> String {
        if let Some(run) = self.current.take() {
            self.ended
                .push(json!({ "label": run.label, "end": run.end }));
        }
        self.current = Some(Run {
            label: label.to_owned(),
            start_unix_us,
            planned_s,
            planned_known,
            seconds: VecDeque::new(),
            dropped: 0,
            totals: totals_json(&TotalStats::default()),
            monitoring: BTreeMap::new(),
            end: None,
        });
        event(
            "run",
            &json!({
                "label": label,
                "start_unix_us": start_unix_us,
                "planned_s": planned_s,
                "planned_known": planned_known,
            }),
        )
    }

    /// A second of the current run became final.
    pub(crate) fn second(
        &mut self,
        second: &SecondStats,
        totals: Option<&TotalStats>,
    ) -> Option<String> {
        let run = self.current.as_mut()?;
        if let Some(totals) = totals {
            run.totals = totals_json(totals);
        }
        let text = second_json(second, run.start_unix_us).to_string();
        if run.seconds.len() == KEPT_SECONDS {
            run.seconds.pop_front();
            run.dropped += 1;
        }
        run.seconds.push_back(text.clone());
        Some(format!(
            "event: second\ndata: {{\"second\":{text},\"totals\":{}}}\n\n",
            run.totals
        ))
    }

    /// The current run's final totals (its last second was given).
    pub(crate) fn totals(&mut self, totals: &TotalStats) -> Option<String> {
        let run = self.current.as_mut()?;
        run.totals = totals_json(totals);
        Some(event("totals", &run.totals))
    }

    /// Monitored hosts' latest seconds (one already shown is left out).
    pub(crate) fn monitoring(&mut self, hosts: &[HostSecond]) -> Option<String> {
        let run = self.current.as_mut()?;
        let mut values = Vec::new();
        for second in hosts {
            let host = run.monitoring.entry(second.host.clone()).or_default();
            if host.last_ts.is_some_and(|last| last >= second.ts) {
                continue;
            }
            let value = host_json(second);
            if host.seconds.len() == KEPT_SECONDS {
                host.seconds.pop_front();
            }
            host.comment.clone_from(&second.comment);
            host.last_ts = Some(second.ts);
            host.seconds.push_back(value.to_string());
            values.push(value);
        }
        (!values.is_empty()).then(|| event("monitoring", &Value::from(values)))
    }

    /// The current run ended: what it printed, and its exit code.
    pub(crate) fn end(&mut self, text: &str, exit_code: Option<i32>) -> Option<String> {
        let run = self.current.as_mut()?;
        let end = json!({ "text": text, "exit_code": exit_code });
        run.end = Some(end.clone());
        Some(event("end", &end))
    }

    /// A search's or sweep's table of probes or steps, as it stands.
    pub(crate) fn table(&mut self, title: &str, headers: &[&str], rows: &[Vec<String>]) -> String {
        let table = json!({ "title": title, "headers": headers, "rows": rows });
        self.table = Some(table.clone());
        event("table", &table)
    }

    /// The command is over: the page keeps what it has, and says so.
    pub(crate) fn over(&mut self, text: &str) -> String {
        let over = json!({ "text": text });
        self.over = Some(over.clone());
        event("over", &over)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tank_stats::phout::parse_line;
    use tank_stats::Aggregator;

    fn seconds(lines: &[&str]) -> (Vec<SecondStats>, TotalStats) {
        let mut agg = Aggregator::new(0);
        for line in lines {
            agg.add_record(&parse_line(line.as_bytes()).unwrap());
        }
        agg.finish();
        let seconds = std::iter::from_fn(|| agg.pop_ready()).collect();
        (seconds, agg.totals())
    }

    fn data(event: &str) -> Value {
        let line = event
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap();
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn a_late_page_gets_every_second_and_the_totals_in_its_snapshot() {
        let mut state = State::new(json!({ "title": "t" }));
        assert!(
            state.second(&SecondStats::default(), None).is_none(),
            "no run yet"
        );
        state.begin("run", 100_000_000, Some(2.0), true);
        let (seconds, totals) = seconds(&[
            "100.0\tsearch\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200",
            "101.5\tcart\t3000\t0\t0\t0\t0\t0\t0\t0\t0\t503",
        ]);
        for second in &seconds {
            let sent = data(&state.second(second, None).unwrap());
            assert_eq!(sent["second"]["ts"], second.ts);
            assert_eq!(sent["totals"]["responses"], 0, "no totals given yet");
        }
        let end_totals = data(&state.totals(&totals).unwrap());
        assert_eq!(end_totals["responses"], 2);
        let snapshot = state.snapshot();
        assert!(snapshot.starts_with("event: snapshot\ndata: {"));
        assert!(snapshot.ends_with("}\n\n"));
        let snap = data(&snapshot);
        let run = &snap["run"];
        assert_eq!(run["seconds"].as_array().unwrap().len(), 2);
        assert_eq!(run["seconds"][1]["t"], 1);
        assert_eq!(run["seconds"][1]["http"]["503"], 1);
        assert_eq!(run["seconds"][0]["q"][5], 1.0);
        assert_eq!(run["totals"]["responses"], 2);
        assert_eq!(run["totals"]["errors"], 1);
        assert_eq!(
            run["totals"]["tags"],
            json!([["cart", 1, 1], ["search", 1, 0]])
        );
        let end = data(&state.end("done", Some(0)).unwrap());
        assert_eq!(end["exit_code"], 0);
        state.begin("step 2", 200_000_000, None, true);
        let snap = data(&state.snapshot());
        assert_eq!(snap["ended"][0]["label"], "run");
        assert_eq!(snap["run"]["seconds"], json!([]));
    }

    #[test]
    fn the_current_run_keeps_its_last_hour() {
        let mut state = State::new(Value::Null);
        state.begin("run", 0, None, true);
        let second = SecondStats::default();
        for _ in 0..KEPT_SECONDS + 5 {
            state.second(&second, None);
        }
        let snap = data(&state.snapshot());
        assert_eq!(
            snap["run"]["seconds"].as_array().unwrap().len(),
            KEPT_SECONDS
        );
        assert_eq!(snap["run"]["dropped"], 5);
    }
}
