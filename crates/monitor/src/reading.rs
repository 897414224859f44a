//! One collection from a host (raw counters and gauges) and how two of them
//! become a second's metrics: counters become per-second rates, CPU times
//! become shares of the interval in percent, gauges are taken as they are.
//!
//! Metric names are yandex-tank's (what its telegraf agent writes into
//! `monitoring.log`), so autostop criteria and dashboards written for it keep
//! working: `custom:cpu-cpu0_usage_user`, `Memory_used`, `System_la1`,
//! `System_csw`, `Net_retransmit`, `custom:net-eth0_bytes_recv`, ...

use std::collections::BTreeMap;
use std::time::Instant;

/// CPU modes, in /proc/stat's order; node_exporter's `mode` label uses the same names.
pub const CPU_MODES: [&str; 8] = [
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
];

/// The prefix of CPU metrics: `custom:cpu-<cpu>_usage_<mode>`.
pub const CPU_PREFIX: &str = "custom:cpu-";
/// The name of the all-CPUs row.
pub const CPU_TOTAL: &str = "cpu-total";

/// What one collection found.
#[derive(Debug, Clone)]
pub struct Reading {
    /// When it was taken.
    pub at: Instant,
    /// CPU (`cpu-total`, `cpu0`, ...) → time in each of [`CPU_MODES`] (any unit).
    pub cpu: BTreeMap<String, [f64; 8]>,
    /// Cumulative counters by metric name, with a factor applied to their rate
    /// (100 for CPU seconds → percent of one core).
    pub counters: BTreeMap<String, (f64, f64)>,
    /// Values taken as they are.
    pub gauges: BTreeMap<String, f64>,
}

impl Reading {
    /// An empty reading taken now.
    pub fn new(at: Instant) -> Reading {
        Reading {
            at,
            cpu: BTreeMap::new(),
            counters: BTreeMap::new(),
            gauges: BTreeMap::new(),
        }
    }

    /// Adds to a counter (a rate per second later).
    pub fn counter(&mut self, name: String, value: f64) {
        self.counters.entry(name).or_insert((0.0, 1.0)).0 += value;
    }

    /// Adds to a counter whose rate is multiplied by `factor`.
    pub fn scaled_counter(&mut self, name: String, value: f64, factor: f64) {
        self.counters.entry(name).or_insert((0.0, factor)).0 += value;
    }

    /// Sets a gauge.
    pub fn gauge(&mut self, name: String, value: f64) {
        self.gauges.insert(name, value);
    }

    /// Adds `value` to CPU `cpu`'s `mode` (the caller adds the total row itself).
    pub fn cpu_time(&mut self, cpu: &str, mode: &str, value: f64) {
        let Some(i) = CPU_MODES.iter().position(|m| *m == mode) else {
            return;
        };
        self.cpu.entry(cpu.to_owned()).or_insert([0.0; 8])[i] += value;
    }

    /// Takes every name of `other` in (a source's extra readings: processes, commands).
    pub fn merge(&mut self, other: Reading) {
        self.cpu.extend(other.cpu);
        self.counters.extend(other.counters);
        self.gauges.extend(other.gauges);
    }
}

/// The metrics of the interval from `before` to `now`. `percpu` keeps the per-core rows.
/// A counter that went down (a restart) or appeared only now gives nothing this time.
pub fn derive(before: &Reading, now: &Reading, percpu: bool) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let seconds = now.at.saturating_duration_since(before.at).as_secs_f64();
    for (cpu, times) in &now.cpu {
        if !percpu && cpu != CPU_TOTAL {
            continue;
        }
        let Some(old) = before.cpu.get(cpu) else {
            continue;
        };
        let deltas: Vec<f64> = times
            .iter()
            .zip(old)
            .map(|(n, o)| (n - o).max(0.0))
            .collect();
        let all: f64 = deltas.iter().sum();
        if all <= 0.0 {
            continue;
        }
        for (mode, delta) in CPU_MODES.iter().zip(&deltas) {
            out.insert(
                format!("{CPU_PREFIX}{cpu}_usage_{mode}"),
                delta * 100.0 / all,
            );
        }
    }
    if seconds > 0.0 {
        for (name, (value, factor)) in &now.counters {
            if let Some((old, _)) = before.counters.get(name) {
                if value >= old {
                    out.insert(name.clone(), (value - old) / seconds * factor);
                }
            }
        }
    }
    for (name, value) in &now.gauges {
        out.insert(name.clone(), *value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn counters_become_rates_and_cpu_times_shares() {
        let t0 = Instant::now();
        let mut a = Reading::new(t0);
        a.counter("System_csw".into(), 1000.0);
        a.scaled_counter("custom:proc-x_cpu".into(), 10.0, 100.0);
        a.cpu_time("cpu0", "user", 100.0);
        a.cpu_time("cpu0", "idle", 100.0);
        a.gauge("System_la1".into(), 0.5);
        let mut b = Reading::new(t0 + Duration::from_secs(2));
        b.counter("System_csw".into(), 3000.0);
        b.scaled_counter("custom:proc-x_cpu".into(), 11.0, 100.0);
        b.counter("new".into(), 5.0);
        b.cpu_time("cpu0", "user", 175.0);
        b.cpu_time("cpu0", "idle", 125.0);
        b.gauge("System_la1".into(), 0.75);
        let m = derive(&a, &b, true);
        assert_eq!(m["System_csw"], 1000.0);
        assert_eq!(m["custom:proc-x_cpu"], 50.0);
        assert_eq!(m["custom:cpu-cpu0_usage_user"], 75.0);
        assert_eq!(m["custom:cpu-cpu0_usage_idle"], 25.0);
        assert_eq!(m["System_la1"], 0.75);
        assert!(!m.contains_key("new"));
        assert!(derive(&a, &b, false).keys().all(|k| !k.contains("cpu0")));
    }

    #[test]
    fn a_counter_that_went_back_is_skipped() {
        let t0 = Instant::now();
        let mut a = Reading::new(t0);
        a.counter("c".into(), 10.0);
        let mut b = Reading::new(t0 + Duration::from_secs(1));
        b.counter("c".into(), 2.0);
        assert!(derive(&a, &b, true).is_empty());
    }
}
