//! Monitored hosts' metrics in the reports: the console's panel (per-core CPU
//! beside the load) and the HTML report's series, put on the load timeline's
//! seconds so one time axis shows both.
//!
//! The report keeps what a person looks at: each core's busy share (100 −
//! idle) instead of its eight modes, and every other metric as collected.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use tank_monitor::reading::CPU_PREFIX;
use tank_monitor::HostSecond;

/// One host's metrics on the timeline's seconds (`None`: no value that second).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostSeries {
    /// The host.
    pub host: String,
    /// Its `comment`.
    pub comment: String,
    /// Metric → one value per timeline second. Cores are `custom:cpu-cpuN_busy`.
    pub metrics: BTreeMap<String, Vec<Option<f64>>>,
}

/// A host's comment and its seconds (unix second → metric → value).
type HostRows = (String, BTreeMap<u64, BTreeMap<String, f64>>);

/// The monitoring seconds of a run, as they arrive.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    hosts: BTreeMap<String, HostRows>,
}

/// What the report keeps of a metric: per-core modes fold into one busy share.
fn kept(name: &str, value: f64) -> Option<(String, f64)> {
    if let Some(rest) = name.strip_prefix(CPU_PREFIX) {
        if !rest.starts_with("cpu-total") {
            let cpu = rest.strip_suffix("_usage_idle")?;
            return Some((format!("{CPU_PREFIX}{cpu}_busy"), 100.0 - value));
        }
    }
    Some((name.to_owned(), value))
}

impl Recorder {
    /// Keeps a host's second.
    pub fn push(&mut self, second: &HostSecond) {
        let (_, seconds) = self
            .hosts
            .entry(second.host.clone())
            .or_insert_with(|| (second.comment.clone(), BTreeMap::new()));
        let row = seconds.entry(second.ts).or_default();
        for (name, value) in &second.metrics {
            if let Some((name, value)) = kept(name, *value) {
                row.insert(name, value);
            }
        }
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Every host's series on the seconds `ts` (the load timeline's).
    pub fn align(&self, ts: &[u64]) -> Vec<HostSeries> {
        self.hosts
            .iter()
            .map(|(host, (comment, seconds))| {
                let mut metrics: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
                for (i, t) in ts.iter().enumerate() {
                    let Some(row) = seconds.get(t) else { continue };
                    for (name, value) in row {
                        let column = metrics
                            .entry(name.clone())
                            .or_insert_with(|| vec![None; ts.len()]);
                        column[i] = Some(*value);
                    }
                }
                HostSeries {
                    host: host.clone(),
                    comment: comment.clone(),
                    metrics,
                }
            })
            .collect()
    }
}

/// The console's monitoring panel: per host, the CPU total, load and memory,
/// then every core's busy share (a bar of blocks, then the numbers).
pub fn render_panel(out: &mut String, latest: &[HostSecond]) {
    if latest.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nmonitoring:");
    for host in latest {
        let mut line = format!("  {}", host.host);
        if let Some(busy) = host.total_busy() {
            let _ = write!(line, "  cpu {busy:.0}%");
        }
        if let Some(la) = host.metrics.get("System_la1") {
            let _ = write!(line, "  load {la:.2}");
        }
        if let Some(used) = host.metrics.get("Memory_used") {
            let _ = write!(line, "  mem used {:.0} MiB", used / (1024.0 * 1024.0));
        }
        let _ = write!(line, "  (second {})", host.ts);
        let _ = writeln!(out, "{line}");
        let cores = host.cores_busy();
        if cores.is_empty() {
            continue;
        }
        let bar: String = cores.iter().map(|(_, busy)| block(*busy)).collect();
        let _ = writeln!(out, "    cores [{bar}]");
        for chunk in cores.chunks(8) {
            let cells: Vec<String> = chunk
                .iter()
                .map(|(name, busy)| format!("{name:>6} {busy:>3.0}%"))
                .collect();
            let _ = writeln!(out, "   {}", cells.join(""));
        }
    }
}

/// The summary's monitoring lines: per host, each value's average and maximum
/// over the run (CPU busy in total and per core, load, memory used).
pub fn describe(hosts: &[HostSeries]) -> String {
    let mut out = String::new();
    if hosts.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\nmonitoring (average / max over the run):");
    for host in hosts {
        let mut line = format!("  {}", host.host);
        if !host.comment.is_empty() {
            let _ = write!(line, " ({})", host.comment);
        }
        let mut parts = Vec::new();
        let total = format!("{CPU_PREFIX}cpu-total_usage_idle");
        if let Some((avg, max)) = host
            .metrics
            .get(&total)
            .and_then(|v| spread(v, |idle| 100.0 - idle))
        {
            parts.push(format!("cpu {avg:.0}% / {max:.0}%"));
        }
        if let Some((avg, max)) = host
            .metrics
            .get("System_la1")
            .and_then(|v| spread(v, |x| x))
        {
            parts.push(format!("load {avg:.2} / {max:.2}"));
        }
        let mib = 1024.0 * 1024.0;
        if let Some((avg, max)) = host
            .metrics
            .get("Memory_used")
            .and_then(|v| spread(v, |x| x / mib))
        {
            parts.push(format!("mem used {avg:.0} / {max:.0} MiB"));
        }
        if parts.is_empty() {
            parts.push(format!(
                "{} metrics (in summary.json and report.html)",
                host.metrics.len()
            ));
        }
        // A host that stopped answering: its figures are of the part before.
        let seconds = host.metrics.values().map(Vec::len).max().unwrap_or(0);
        let answered = |i: usize| {
            host.metrics
                .values()
                .any(|v| v.get(i).is_some_and(Option::is_some))
        };
        let last = (0..seconds).rev().find(|&i| answered(i));
        if let Some(last) = last.filter(|&last| last + SILENT_AT_END < seconds) {
            let count = (0..seconds).filter(|&i| answered(i)).count();
            parts.push(format!(
                "over the {count} of {seconds} seconds it answered (none after second {})",
                last + 1
            ));
        }
        let _ = writeln!(out, "{line}: {}", parts.join(", "));
        let cores: Vec<String> = host
            .metrics
            .iter()
            .filter_map(|(name, values)| {
                let core = name.strip_prefix(CPU_PREFIX)?.strip_suffix("_busy")?;
                let (avg, max) = spread(values, |x| x)?;
                Some(format!("{core} {avg:.0}% / {max:.0}%"))
            })
            .collect();
        for chunk in cores.chunks(4) {
            let _ = writeln!(out, "    cores busy: {}", chunk.join(", "));
        }
    }
    out
}

/// Seconds a host may be silent at the run's end (its last collection not
/// yet in) before the summary says it stopped answering.
const SILENT_AT_END: usize = 3;

/// The average and the maximum of a series' values (mapped by `f`), if it has any.
fn spread(values: &[Option<f64>], f: impl Fn(f64) -> f64) -> Option<(f64, f64)> {
    let seen: Vec<f64> = values.iter().flatten().map(|v| f(*v)).collect();
    if seen.is_empty() {
        return None;
    }
    let max = seen.iter().copied().fold(f64::MIN, f64::max);
    Some((seen.iter().sum::<f64>() / seen.len() as f64, max))
}

/// A block character as tall as `percent` of 100.
fn block(percent: f64) -> char {
    const BLOCKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let i = (percent.clamp(0.0, 100.0) / 100.0 * 8.0).round() as usize;
    BLOCKS[i.min(8)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(ts: u64, metrics: &[(&str, f64)]) -> HostSecond {
        HostSecond {
            ts,
            host: "web".into(),
            comment: String::new(),
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn series_line_up_with_the_load_seconds_and_cores_fold_to_busy() {
        let mut r = Recorder::default();
        r.push(&second(
            11,
            &[
                ("custom:cpu-cpu0_usage_idle", 10.0),
                ("custom:cpu-cpu0_usage_user", 90.0),
                ("custom:cpu-cpu-total_usage_user", 45.0),
            ],
        ));
        r.push(&second(13, &[("System_la1", 2.0)]));
        let series = r.align(&[10, 11, 12, 13]);
        assert_eq!(series.len(), 1);
        let m = &series[0].metrics;
        assert_eq!(
            m["custom:cpu-cpu0_busy"],
            vec![None, Some(90.0), None, None]
        );
        assert!(!m.contains_key("custom:cpu-cpu0_usage_user"));
        assert_eq!(m["custom:cpu-cpu-total_usage_user"][1], Some(45.0));
        assert_eq!(m["System_la1"], vec![None, None, None, Some(2.0)]);
    }

    #[test]
    fn the_summary_gives_each_hosts_average_and_max() {
        let mut r = Recorder::default();
        for (ts, idle, la) in [(1, 80.0, 1.0), (2, 20.0, 3.0)] {
            r.push(&second(
                ts,
                &[
                    ("custom:cpu-cpu0_usage_idle", idle),
                    ("custom:cpu-cpu-total_usage_idle", idle),
                    ("System_la1", la),
                ],
            ));
        }
        let text = describe(&r.align(&[1, 2]));
        assert!(
            text.contains("monitoring (average / max over the run):"),
            "{text}"
        );
        assert!(
            text.contains("  web: cpu 50% / 80%, load 2.00 / 3.00"),
            "{text}"
        );
        assert!(text.contains("    cores busy: cpu0 50% / 80%"), "{text}");
        assert!(!text.contains("answered"), "{text}");
        assert!(describe(&[]).is_empty());
        // A host that died mid-run: its averages are of the seconds before, and said so.
        let text = describe(&r.align(&[1, 2, 3, 4, 5, 6, 7]));
        assert!(
            text.contains(
                "  web: cpu 50% / 80%, load 2.00 / 3.00, over the 2 of 7 seconds it answered \
                 (none after second 2)"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_panel_shows_every_core() {
        let mut out = String::new();
        render_panel(
            &mut out,
            &[second(
                5,
                &[
                    ("custom:cpu-cpu0_usage_idle", 100.0),
                    ("custom:cpu-cpu1_usage_idle", 0.0),
                    ("custom:cpu-cpu-total_usage_idle", 50.0),
                    ("System_la1", 1.25),
                ],
            )],
        );
        assert!(out.contains("web  cpu 50%  load 1.25"), "{out}");
        assert!(out.contains("cores [ █]"), "{out}");
        assert!(out.contains("cpu1 100%"), "{out}");
    }
}
