//! tank-monitor: watch the target while shooting.
//!
//! yandex-tank installs telegraf on each monitored host over SSH. tank reads
//! what hosts already expose instead: a Prometheus node_exporter
//! (`http://HOST:9100/metrics`), this machine's /proc (and its processes by
//! pid or name), any Prometheus endpoint for chosen metrics, and `<Custom>`
//! commands run locally. Each host has a thread of its own that collects on
//! the wall clock's interval boundaries and derives per-second metrics
//! ([`reading`]) named as yandex-tank's agent names them, so `monitoring.log`,
//! autostop's `metric_higher` and InfluxDB dashboards see the same names.
//!
//! Never in the way of the shots: the threads are not the shooting threads,
//! every request has a deadline below the interval, a failing source is a
//! warning and a gap, and the hand-over is a bounded queue that drops (and
//! counts) rather than blocks. The run's results thread takes what arrived
//! once a second ([`Monitor::poll`]).

#![warn(missing_docs)]

mod custom;
mod filter;
pub mod http;
mod node;
mod procfs;
pub mod prom;
pub mod reading;
mod source;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use tank_config::MonitoringConfig;

/// Events queued between the host threads and the results thread (at one a
/// second per host, minutes of them).
const QUEUE: usize = 4096;

/// One host's metrics for one second: the interval that starts then, at least
/// 100 ms long (so the first row may reach into the next second).
#[derive(Debug, Clone, PartialEq)]
pub struct HostSecond {
    /// Unix second.
    pub ts: u64,
    /// The host as configured.
    pub host: String,
    /// Its `comment`.
    pub comment: String,
    /// Metric name → value (rates per second, CPU in percent, gauges as read).
    pub metrics: BTreeMap<String, f64>,
}

impl HostSecond {
    /// Per-core CPU busy share (100 − idle), in core order; the total is not included.
    pub fn cores_busy(&self) -> Vec<(String, f64)> {
        let mut cores: Vec<(u32, String, f64)> = self
            .metrics
            .iter()
            .filter_map(|(name, idle)| {
                let cpu = name
                    .strip_prefix(reading::CPU_PREFIX)?
                    .strip_suffix("_usage_idle")?;
                let n = cpu.strip_prefix("cpu")?.parse::<u32>().ok()?;
                Some((n, cpu.to_owned(), 100.0 - idle))
            })
            .collect();
        cores.sort_by_key(|c| c.0);
        cores
            .into_iter()
            .map(|(_, name, busy)| (name, busy))
            .collect()
    }

    /// All CPUs' busy share (100 − idle), when CPU is collected.
    pub fn total_busy(&self) -> Option<f64> {
        let key = format!("{}{}_usage_idle", reading::CPU_PREFIX, reading::CPU_TOTAL);
        self.metrics.get(&key).map(|idle| 100.0 - idle)
    }
}

/// What a host thread reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A second's metrics.
    Second(HostSecond),
    /// A source failed or recovered.
    Warning(String),
    /// At the end: a source that never answered during the whole run (a
    /// warning of the run, not only a gap).
    Silent(String),
}

/// The running monitoring of a test.
#[derive(Debug)]
pub struct Monitor {
    events: Receiver<Event>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    dropped: Arc<AtomicU64>,
}

impl Monitor {
    /// Starts one thread per host. Nothing is contacted on this thread.
    pub fn start(config: &MonitoringConfig) -> std::io::Result<Monitor> {
        let (tx, events) = sync_channel(QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for (i, host) in config.hosts.iter().enumerate() {
            let task = source::Task {
                host: host.clone(),
                events: tx.clone(),
                stop: stop.clone(),
                dropped: dropped.clone(),
                client: http::Client::new()?,
            };
            threads.push(
                std::thread::Builder::new()
                    .name(format!("monitor-{i}"))
                    .spawn(move || source::run(task))?,
            );
        }
        Ok(Monitor {
            events,
            stop,
            threads,
            dropped,
        })
    }

    /// What arrived since the last call (never waits).
    pub fn poll(&self) -> Vec<Event> {
        self.events.try_iter().collect()
    }

    /// Events dropped because the results thread did not take them in time.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Asks the threads to take a last reading and stop (they do within one
    /// request's deadline, at most a few seconds); returns what is left.
    pub fn stop(self) -> Vec<Event> {
        self.stop_keeping_count(&mut 0)
    }

    /// [`Monitor::stop`], writing the final count of dropped events to `dropped`.
    pub fn stop_keeping_count(self, dropped: &mut u64) -> Vec<Event> {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads {
            let _ = thread.join();
        }
        *dropped = self.dropped.load(Ordering::Relaxed);
        self.events.try_iter().collect()
    }
}

/// One line of `monitoring.log`, as yandex-tank's JsonReport writes it: a JSON
/// list of `{"timestamp": T, "data": {HOST: {"comment": C, "metrics": {...}}}}`.
pub fn log_line(seconds: &[HostSecond]) -> String {
    let list: Vec<serde_json::Value> = seconds
        .iter()
        .map(|s| {
            serde_json::json!({
                "timestamp": s.ts,
                "data": { s.host.clone(): { "comment": s.comment, "metrics": s.metrics } }
            })
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tank_config::{HostSource, MetricGroups, MonitoredHost};

    fn second(metrics: &[(&str, f64)]) -> HostSecond {
        HostSecond {
            ts: 7,
            host: "h".into(),
            comment: "c".into(),
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn the_log_line_has_yandex_tanks_shape() {
        let line = log_line(&[second(&[("System_la1", 0.5)])]);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v[0]["timestamp"], 7);
        assert_eq!(v[0]["data"]["h"]["comment"], "c");
        assert_eq!(v[0]["data"]["h"]["metrics"]["System_la1"], 0.5);
    }

    #[test]
    fn cores_come_in_numeric_order() {
        let s = second(&[
            ("custom:cpu-cpu10_usage_idle", 90.0),
            ("custom:cpu-cpu2_usage_idle", 5.0),
            ("custom:cpu-cpu-total_usage_idle", 50.0),
        ]);
        assert_eq!(
            s.cores_busy(),
            vec![("cpu2".to_string(), 95.0), ("cpu10".to_string(), 10.0)]
        );
        assert_eq!(s.total_busy(), Some(50.0));
    }

    #[test]
    fn local_monitoring_gives_seconds_and_a_dead_source_a_warning() {
        let local = MonitoredHost {
            address: "localhost".into(),
            source: HostSource::Local,
            interval_ms: 200,
            comment: String::new(),
            groups: MetricGroups {
                cpu: true,
                percpu: true,
                ..MetricGroups::default()
            },
            custom: Vec::new(),
            processes: Vec::new(),
            prometheus: Vec::new(),
        };
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead_url = format!("http://{}/metrics", listener.local_addr().unwrap());
        drop(listener);
        let dead = MonitoredHost {
            address: "dead".into(),
            source: HostSource::NodeExporter { url: dead_url },
            ..local.clone()
        };
        let config = MonitoringConfig {
            section: "telegraf".into(),
            hosts: vec![local, dead],
            warnings: Vec::new(),
            file: None,
        };
        // Start 3 ms before an interval boundary: a first interval cut that
        // short holds no CPU tick, so its row would have no CPU at all.
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        let since = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        let phase = ms(since().unwrap()) % 200;
        std::thread::sleep(std::time::Duration::from_millis((197 + 200 - phase) % 200));
        let monitor = Monitor::start(&config).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(700));
        let events = monitor.stop();
        let seconds: Vec<&HostSecond> = events
            .iter()
            .filter_map(|e| match e {
                Event::Second(s) => Some(s),
                Event::Warning(_) | Event::Silent(_) => None,
            })
            .collect();
        assert!(!seconds.is_empty(), "{events:?}");
        assert!(seconds.iter().all(|s| s.host == "localhost"));
        assert!(seconds[0].total_busy().is_some(), "{:?}", seconds[0]);
        assert!(events
            .iter()
            .any(|e| matches!(e, Event::Warning(w) if w.contains("dead") && w.contains("gap"))));
        // The dead source never answered: said once more at the end; the live one not.
        let silent: Vec<&String> = events
            .iter()
            .filter_map(|e| match e {
                Event::Silent(w) => Some(w),
                _ => None,
            })
            .collect();
        assert_eq!(silent.len(), 1, "{events:?}");
        assert!(
            silent[0].starts_with("monitoring dead: http://127.0.0.1:")
                && silent[0].contains("never answered during the run (cannot connect to"),
            "{}",
            silent[0]
        );
    }
}
