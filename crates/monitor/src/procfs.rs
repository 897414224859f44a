//! This machine's metrics from /proc, with the same names node_exporter's give
//! (see [`crate::node`]), and processes by pid or name: CPU (percent of one
//! core) and resident memory from `/proc/PID/stat`.
//!
//! Every reader takes the file's text, so the parsing is tested without a
//! /proc; a file that is missing or malformed is an error naming it.

use std::path::Path;

use tank_config::{MetricGroups, ProcessSelector};

use crate::filter;
use crate::node::MemInfo;
use crate::reading::{Reading, CPU_MODES, CPU_TOTAL};

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

fn number(text: &str, file: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .map_err(|_| format!("{file}: expected a number, found `{text}`"))
}

/// Fills `reading` with this machine's metrics for `groups`.
pub fn machine(groups: &MetricGroups, reading: &mut Reading) -> Result<(), String> {
    if groups.cpu || groups.kernel {
        stat(&read("/proc/stat")?, groups, reading)?;
    }
    if groups.memory {
        meminfo(&read("/proc/meminfo")?)?.into_gauges(reading);
    }
    if groups.system {
        loadavg(&read("/proc/loadavg")?, reading)?;
    }
    if groups.net {
        net_dev(&read("/proc/net/dev")?, groups, reading)?;
    }
    if groups.disk {
        diskstats(&read("/proc/diskstats")?, groups, reading)?;
    }
    if groups.nstat || groups.netstat {
        snmp(&read("/proc/net/snmp")?, groups, reading)?;
    }
    if groups.netstat {
        sockstat(&read("/proc/net/sockstat")?, reading);
    }
    Ok(())
}

/// `/proc/stat`: CPU times per core and total, context switches, interrupts, forks.
pub fn stat(text: &str, groups: &MetricGroups, reading: &mut Reading) -> Result<(), String> {
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else { continue };
        if let Some(core) = key.strip_prefix("cpu") {
            if !groups.cpu {
                continue;
            }
            let name = if core.is_empty() {
                CPU_TOTAL.to_owned()
            } else {
                format!("cpu{core}")
            };
            for (mode, word) in CPU_MODES.iter().zip(words) {
                reading.cpu_time(&name, mode, number(word, "/proc/stat")?);
            }
            continue;
        }
        if !groups.kernel {
            continue;
        }
        let name = match key {
            "ctxt" => "System_csw",
            "intr" => "System_int",
            "processes" => "System_forks",
            _ => continue,
        };
        let value = words
            .next()
            .ok_or("/proc/stat: a counter without a value")?;
        reading.counter(name.into(), number(value, "/proc/stat")?);
    }
    Ok(())
}

/// `/proc/meminfo` (kB) → bytes.
pub fn meminfo(text: &str) -> Result<MemInfo, String> {
    let mut mem = MemInfo::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let slot = match key {
            "MemTotal" => &mut mem.total,
            "MemFree" => &mut mem.free,
            "Buffers" => &mut mem.buffers,
            "Cached" => &mut mem.cached,
            "MemAvailable" => &mut mem.available,
            _ => continue,
        };
        let kb = rest.split_whitespace().next().unwrap_or_default();
        *slot = number(kb, "/proc/meminfo")? * 1024.0;
    }
    Ok(mem)
}

fn loadavg(text: &str, reading: &mut Reading) -> Result<(), String> {
    let mut words = text.split_whitespace();
    for n in ["1", "5", "15"] {
        let word = words.next().ok_or("/proc/loadavg: fewer than 3 numbers")?;
        reading.gauge(format!("System_la{n}"), number(word, "/proc/loadavg")?);
    }
    Ok(())
}

/// `/proc/net/dev`: `iface: rx_bytes rx_packets rx_errs ... tx_bytes tx_packets tx_errs ...`.
pub fn net_dev(text: &str, groups: &MetricGroups, reading: &mut Reading) -> Result<(), String> {
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if !filter::interface(groups, name) {
            continue;
        }
        let v: Vec<&str> = rest.split_whitespace().collect();
        if v.len() < 11 {
            return Err(format!("/proc/net/dev: too few columns for {name}"));
        }
        for (field, i) in [
            ("bytes_recv", 0),
            ("packets_recv", 1),
            ("err_in", 2),
            ("bytes_sent", 8),
            ("packets_sent", 9),
            ("err_out", 10),
        ] {
            reading.counter(
                format!("custom:net-{name}_{field}"),
                number(v[i], "/proc/net/dev")?,
            );
        }
    }
    Ok(())
}

/// `/proc/diskstats`: reads, sectors read, ..., writes, sectors written, ..., ms doing I/O.
pub fn diskstats(text: &str, groups: &MetricGroups, reading: &mut Reading) -> Result<(), String> {
    for line in text.lines() {
        let v: Vec<&str> = line.split_whitespace().collect();
        if v.len() < 13 {
            continue;
        }
        let name = v[2];
        if !filter::device(groups, name) {
            continue;
        }
        let n = |i: usize| number(v[i], "/proc/diskstats");
        reading.counter(format!("custom:diskio-{name}_reads"), n(3)?);
        reading.counter(format!("custom:diskio-{name}_read_bytes"), n(5)? * 512.0);
        reading.counter(format!("custom:diskio-{name}_writes"), n(7)?);
        reading.counter(format!("custom:diskio-{name}_write_bytes"), n(9)? * 512.0);
        reading.counter(format!("custom:diskio-{name}_io_time"), n(12)?);
    }
    Ok(())
}

/// `/proc/net/snmp`: the `Tcp:` header and value lines.
pub fn snmp(text: &str, groups: &MetricGroups, reading: &mut Reading) -> Result<(), String> {
    let tcp: Vec<&str> = text.lines().filter(|l| l.starts_with("Tcp:")).collect();
    let [names, values] = tcp.as_slice() else {
        return Err("/proc/net/snmp: no Tcp: lines".into());
    };
    for (name, value) in names
        .split_whitespace()
        .zip(values.split_whitespace())
        .skip(1)
    {
        match name {
            "RetransSegs" if groups.nstat => {
                reading.counter("Net_retransmit".into(), number(value, "/proc/net/snmp")?)
            }
            "CurrEstab" if groups.netstat => reading.gauge(
                "custom:netstat_tcp_established".into(),
                number(value, "/proc/net/snmp")?,
            ),
            _ => {}
        }
    }
    Ok(())
}

fn sockstat(text: &str, reading: &mut Reading) {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("TCP:") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            for pair in words.chunks(2) {
                if let [key, value] = pair {
                    if *key == "tw" {
                        if let Ok(v) = value.parse() {
                            reading.gauge("custom:netstat_tcp_time_wait".into(), v);
                        }
                    }
                }
            }
        }
    }
}

/// CPU seconds (user + system) and resident bytes from `/proc/PID/stat`'s text.
pub fn process_stat(text: &str, ticks: f64, page: f64) -> Result<(f64, f64), String> {
    // The command name may hold spaces and parentheses: the fields start after the last `)`.
    let after = text
        .rfind(')')
        .map(|i| &text[i + 1..])
        .ok_or("/proc/PID/stat: no `)` after the command name")?;
    let v: Vec<&str> = after.split_whitespace().collect();
    // After the name: state(0) ... utime(11) stime(12) ... rss(21).
    if v.len() < 22 {
        return Err("/proc/PID/stat: too few fields".into());
    }
    let n = |i: usize| number(v[i], "/proc/PID/stat");
    Ok(((n(11)? + n(12)?) / ticks, n(21)? * page))
}

/// The name metrics of a watched process use: its name, or `pid<N>`.
pub fn process_label(selector: &ProcessSelector) -> String {
    match selector {
        ProcessSelector::Pid(pid) => format!("pid{pid}"),
        ProcessSelector::Name(name) => name.clone(),
    }
}

/// Adds `custom:proc-<label>_cpu` (percent of one core) and `_rss` (bytes) for
/// each selector; a name matches every process with that command name (summed).
/// A process that is gone is an error naming it.
pub fn processes(selectors: &[ProcessSelector], reading: &mut Reading) -> Result<(), String> {
    if selectors.is_empty() {
        return Ok(());
    }
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    // SAFETY: likewise.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as f64;
    for selector in selectors {
        let pids = match selector {
            ProcessSelector::Pid(pid) => vec![*pid],
            ProcessSelector::Name(name) => pids_named(name),
        };
        let label = process_label(selector);
        let (mut cpu, mut rss, mut found) = (0.0, 0.0, false);
        for pid in pids {
            if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                let (c, r) = process_stat(&text, ticks, page)?;
                cpu += c;
                rss += r;
                found = true;
            }
        }
        if !found {
            return Err(format!("process {label}: not running"));
        }
        reading.scaled_counter(format!("custom:proc-{label}_cpu"), cpu, 100.0);
        reading.gauge(format!("custom:proc-{label}_rss"), rss);
    }
    Ok(())
}

fn pids_named(name: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("comm"))
                .is_ok_and(|comm| comm.trim_end() == name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn all() -> MetricGroups {
        MetricGroups {
            cpu: true,
            percpu: true,
            memory: true,
            disk: true,
            net: true,
            netstat: true,
            nstat: true,
            system: true,
            kernel: true,
            ..MetricGroups::default()
        }
    }

    #[test]
    fn proc_stat_gives_cores_and_kernel_counters() {
        let text = "cpu  10 0 5 80 1 0 0 4 0 0\ncpu0 6 0 3 40 1 0 0 0 0 0\nintr 500 1 2\nctxt 999\nprocesses 42\n";
        let mut r = Reading::new(Instant::now());
        stat(text, &all(), &mut r).unwrap();
        assert_eq!(
            r.cpu["cpu-total"],
            [10.0, 0.0, 5.0, 80.0, 1.0, 0.0, 0.0, 4.0]
        );
        assert_eq!(r.cpu["cpu0"][0], 6.0);
        assert_eq!(r.counters["System_csw"].0, 999.0);
        assert_eq!(r.counters["System_int"].0, 500.0);
        assert_eq!(r.counters["System_forks"].0, 42.0);
        assert!(stat("cpu x\n", &all(), &mut r)
            .unwrap_err()
            .contains("/proc/stat"));
    }

    #[test]
    fn net_dev_diskstats_and_snmp() {
        let dev = "Inter-|   Receive\n face |bytes\n    lo: 1 2 3 0 0 0 0 0 4 5 6 0 0 0 0 0\n  eth0: 100 2 1 0 0 0 0 0 200 4 0 0 0 0 0 0\n";
        let mut r = Reading::new(Instant::now());
        net_dev(dev, &all(), &mut r).unwrap();
        assert_eq!(r.counters["custom:net-eth0_bytes_sent"].0, 200.0);
        assert_eq!(r.counters["custom:net-eth0_err_in"].0, 1.0);
        assert!(!r.counters.contains_key("custom:net-lo_bytes_sent"));
        let disks =
            "   8       0 sda 10 0 20 0 30 0 40 0 0 77 0\n   7 0 loop0 1 0 1 0 1 0 1 0 0 1 0\n";
        diskstats(disks, &all(), &mut r).unwrap();
        assert_eq!(r.counters["custom:diskio-sda_read_bytes"].0, 20.0 * 512.0);
        assert_eq!(r.counters["custom:diskio-sda_writes"].0, 30.0);
        assert!(!r.counters.contains_key("custom:diskio-loop0_reads"));
        let snmp_text = "Tcp: RtoAlgorithm CurrEstab RetransSegs\nTcp: 1 7 33\n";
        snmp(snmp_text, &all(), &mut r).unwrap();
        assert_eq!(r.counters["Net_retransmit"].0, 33.0);
        assert_eq!(r.gauges["custom:netstat_tcp_established"], 7.0);
    }

    #[test]
    fn process_stat_survives_odd_names() {
        let text = "42 (a) b (c)) S 1 1 1 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 100 1000 300 0";
        let (cpu, rss) = process_stat(text, 100.0, 4096.0).unwrap();
        assert_eq!(cpu, 3.0);
        assert_eq!(rss, 300.0 * 4096.0);
    }

    #[test]
    fn this_machine_and_this_process_can_be_read() {
        let mut r = Reading::new(Instant::now());
        machine(&all(), &mut r).unwrap();
        assert!(r.cpu.contains_key("cpu-total"));
        assert!(r.gauges["Memory_free"] > 0.0);
        let me = ProcessSelector::Pid(std::process::id());
        processes(&[me], &mut r).unwrap();
        assert!(r.gauges[&format!("custom:proc-pid{}_rss", std::process::id())] > 0.0);
        let gone = ProcessSelector::Name("no-such-process-name".into());
        assert!(processes(&[gone], &mut r)
            .unwrap_err()
            .contains("not running"));
    }
}
