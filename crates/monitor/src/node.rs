//! A node_exporter page into a [`Reading`] with yandex-tank's metric names.
//!
//! node_exporter's counters (`node_cpu_seconds_total{cpu,mode}`,
//! `node_network_receive_bytes_total{device}`, ...) map onto what yandex-tank's
//! telegraf agent reported for the same group, so a host watched through its
//! node_exporter looks like one watched by yandex-tank.

use tank_config::MetricGroups;

use crate::filter;
use crate::prom::Page;
use crate::reading::{Reading, CPU_TOTAL};

/// Fills `reading` from `page` for the metric groups asked.
pub fn read(page: &Page<'_>, groups: &MetricGroups, reading: &mut Reading) {
    let mut mem = MemInfo::default();
    for s in &page.samples {
        let label = |key: &str| s.label(key).unwrap_or_default();
        match s.name {
            "node_cpu_seconds_total" if groups.cpu => {
                let (cpu, mode) = (label("cpu"), label("mode"));
                reading.cpu_time(CPU_TOTAL, &mode, s.value);
                reading.cpu_time(&format!("cpu{cpu}"), &mode, s.value);
            }
            "node_memory_MemTotal_bytes" => mem.total = s.value,
            "node_memory_MemFree_bytes" => mem.free = s.value,
            "node_memory_Buffers_bytes" => mem.buffers = s.value,
            "node_memory_Cached_bytes" => mem.cached = s.value,
            "node_memory_MemAvailable_bytes" => mem.available = s.value,
            "node_load1" | "node_load5" | "node_load15" if groups.system => {
                let n = &s.name["node_load".len()..];
                reading.gauge(format!("System_la{n}"), s.value);
            }
            "node_context_switches_total" if groups.kernel => {
                reading.counter("System_csw".into(), s.value)
            }
            "node_intr_total" if groups.kernel => reading.counter("System_int".into(), s.value),
            "node_forks_total" if groups.kernel => reading.counter("System_forks".into(), s.value),
            "node_netstat_Tcp_RetransSegs" if groups.nstat => {
                reading.counter("Net_retransmit".into(), s.value)
            }
            "node_netstat_Tcp_CurrEstab" if groups.netstat => {
                reading.gauge("custom:netstat_tcp_established".into(), s.value)
            }
            "node_sockstat_TCP_tw" if groups.netstat => {
                reading.gauge("custom:netstat_tcp_time_wait".into(), s.value)
            }
            _ => {
                if groups.net {
                    if let Some(field) = net_field(s.name) {
                        let device = label("device");
                        if filter::interface(groups, &device) {
                            reading.counter(format!("custom:net-{device}_{field}"), s.value);
                        }
                    }
                }
                if groups.disk {
                    if let Some((field, factor)) = disk_field(s.name) {
                        let device = label("device");
                        if filter::device(groups, &device) {
                            reading.counter(
                                format!("custom:diskio-{device}_{field}"),
                                s.value * factor,
                            );
                        }
                    }
                }
            }
        }
    }
    if groups.memory && mem.total > 0.0 {
        mem.into_gauges(reading);
    }
}

fn net_field(name: &str) -> Option<&'static str> {
    Some(match name {
        "node_network_receive_bytes_total" => "bytes_recv",
        "node_network_transmit_bytes_total" => "bytes_sent",
        "node_network_receive_packets_total" => "packets_recv",
        "node_network_transmit_packets_total" => "packets_sent",
        "node_network_receive_errs_total" => "err_in",
        "node_network_transmit_errs_total" => "err_out",
        _ => return None,
    })
}

fn disk_field(name: &str) -> Option<(&'static str, f64)> {
    Some(match name {
        "node_disk_read_bytes_total" => ("read_bytes", 1.0),
        "node_disk_written_bytes_total" => ("write_bytes", 1.0),
        "node_disk_reads_completed_total" => ("reads", 1.0),
        "node_disk_writes_completed_total" => ("writes", 1.0),
        // Seconds → milliseconds, as telegraf's io_time.
        "node_disk_io_time_seconds_total" => ("io_time", 1000.0),
        _ => return None,
    })
}

/// Memory in bytes, as /proc/meminfo and node_exporter give it.
#[derive(Debug, Default, Clone, Copy)]
pub struct MemInfo {
    /// MemTotal.
    pub total: f64,
    /// MemFree.
    pub free: f64,
    /// Buffers.
    pub buffers: f64,
    /// Cached.
    pub cached: f64,
    /// MemAvailable.
    pub available: f64,
}

impl MemInfo {
    /// telegraf's names: used = total − free − buffers − cached.
    pub fn into_gauges(self, reading: &mut Reading) {
        let used = self.total - self.free - self.buffers - self.cached;
        reading.gauge("Memory_used".into(), used);
        reading.gauge("Memory_free".into(), self.free);
        reading.gauge("Memory_buff".into(), self.buffers);
        reading.gauge("Memory_cached".into(), self.cached);
        reading.gauge("custom:mem_available".into(), self.available);
        reading.gauge("custom:mem_total".into(), self.total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prom;
    use std::time::Instant;

    #[test]
    fn node_exporter_names_map_to_yandex_tank_names() {
        let text = "node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 10\n\
node_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} 30\n\
node_load1 1.5\n\
node_memory_MemTotal_bytes 1000\nnode_memory_MemFree_bytes 100\nnode_memory_Buffers_bytes 50\nnode_memory_Cached_bytes 250\n\
node_network_receive_bytes_total{device=\"eth0\"} 77\n\
node_network_receive_bytes_total{device=\"lo\"} 99\n\
node_disk_read_bytes_total{device=\"loop0\"} 1\n\
node_disk_read_bytes_total{device=\"sda\"} 5\n\
node_context_switches_total 123\n";
        let page = prom::parse(text).unwrap();
        let groups = MetricGroups {
            cpu: true,
            percpu: true,
            memory: true,
            disk: true,
            net: true,
            system: true,
            kernel: true,
            ..MetricGroups::default()
        };
        let mut r = Reading::new(Instant::now());
        read(&page, &groups, &mut r);
        assert_eq!(r.cpu["cpu-total"][0], 10.0);
        assert_eq!(r.cpu["cpu-total"][3], 30.0);
        assert_eq!(r.cpu["cpu1"][3], 30.0);
        assert_eq!(r.gauges["System_la1"], 1.5);
        assert_eq!(r.gauges["Memory_used"], 600.0);
        assert_eq!(r.counters["custom:net-eth0_bytes_recv"].0, 77.0);
        assert!(!r.counters.contains_key("custom:net-lo_bytes_recv"));
        assert!(!r.counters.contains_key("custom:diskio-loop0_read_bytes"));
        assert_eq!(r.counters["custom:diskio-sda_read_bytes"].0, 5.0);
        assert_eq!(r.counters["System_csw"].0, 123.0);
    }
}
