//! mcperf's lines for a memcached run, added to the summary: a latency
//! table for reads (`get`, `multiget`) and updates (`set`), the misses, and
//! the bytes each way with their rates.
//!
//! A sink of the results pipeline that looks at each response as it is
//! counted (memory bounded by two histograms): the per-second aggregates keep
//! only tank's own quantiles, and mcperf's table asks for others (p5, p67,
//! p99.99, the deviation).
//! A miss is a read that did not find every key it asked for (proto code
//! 404, or 206 for a multiget; see the gun's codes).

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use tank_results::{Response, SecondSink, SinkError, SoFar};
use tank_stats::{case_of, SecondStats};

/// mcperf's quantiles, percent.
const QUANTILES: [f64; 12] = [
    5.0, 10.0, 50.0, 67.0, 75.0, 80.0, 85.0, 90.0, 95.0, 99.0, 99.9, 99.99,
];

/// One row of the table: latencies (interval_real) of one kind of request, µs.
#[derive(Debug, Clone)]
pub struct Latencies {
    histogram: Histogram<u64>,
    sum: f64,
    sum_squares: f64,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            // 3 significant digits, resized as values come.
            histogram: Histogram::new(3).unwrap_or_else(|_| unreachable!("3 digits is valid")),
            sum: 0.0,
            sum_squares: 0.0,
        }
    }
}

impl Latencies {
    fn add(&mut self, us: u64) {
        // An auto-resizing histogram takes any value.
        let _ = self.histogram.record(us);
        let us = us as f64;
        self.sum += us;
        self.sum_squares += us * us;
    }

    /// How many requests.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// avg, std, min, then [`QUANTILES`], µs (all 0 for none).
    pub fn row(&self) -> Vec<f64> {
        let n = self.count() as f64;
        if n == 0.0 {
            return vec![0.0; 3 + QUANTILES.len()];
        }
        let mean = self.sum / n;
        let std = (self.sum_squares / n - mean * mean).max(0.0).sqrt();
        let mut row = vec![mean, std, self.histogram.min() as f64];
        row.extend(
            QUANTILES
                .iter()
                .map(|q| self.histogram.value_at_quantile(q / 100.0) as f64),
        );
        row
    }
}

/// mcperf's lines of one run.
#[derive(Debug, Clone, Default)]
pub struct McperfLines {
    /// `get` and `multiget`.
    pub reads: Latencies,
    /// `set`.
    pub updates: Latencies,
    /// Reads that did not find every key.
    pub misses: u64,
    /// Reply bytes.
    pub rx_bytes: u64,
    /// Request bytes.
    pub tx_bytes: u64,
}

impl McperfLines {
    /// Count one response.
    pub fn add(&mut self, response: Response<'_>) {
        let measured = response.measured();
        self.rx_bytes += measured.size_in;
        self.tx_bytes += measured.size_out;
        let ok = measured.net_code.0 == 0;
        match case_of(response.tag()) {
            b"get" | b"multiget" if ok => {
                self.reads.add(measured.interval_real_us);
                if matches!(measured.proto_code, 404 | 206) {
                    self.misses += 1;
                }
            }
            b"set" if ok => self.updates.add(measured.interval_real_us),
            _ => {}
        }
    }

    /// The lines as mcperf prints them, rates over `seconds`.
    pub fn to_text(&self, seconds: f64) -> String {
        let mut out = String::new();
        let _ = write!(out, "{:<8}{:>8}{:>8}{:>8}", "#type", "avg", "std", "min");
        for q in QUANTILES {
            let name = format!("p{}", q.to_string().replace('.', ""));
            let _ = write!(out, "{name:>8}");
        }
        out.push('\n');
        for (name, latencies) in [("read", &self.reads), ("update", &self.updates)] {
            let _ = write!(out, "{name:<8}");
            for value in latencies.row() {
                let _ = write!(out, "{value:>8.1}");
            }
            out.push('\n');
        }
        let reads = self.reads.count();
        let percent = if reads > 0 {
            self.misses as f64 * 100.0 / reads as f64
        } else {
            0.0
        };
        let _ = writeln!(out, "Misses = {} ({percent:.1}%)", self.misses);
        let rate = |bytes: u64| {
            if seconds > 0.0 {
                bytes as f64 / seconds / 1e6
            } else {
                0.0
            }
        };
        let _ = writeln!(
            out,
            "RX {:>12} bytes : {:>8.1} MB/s",
            self.rx_bytes,
            rate(self.rx_bytes)
        );
        let _ = writeln!(
            out,
            "TX {:>12} bytes : {:>8.1} MB/s",
            self.tx_bytes,
            rate(self.tx_bytes)
        );
        out
    }
}

impl SecondSink for McperfLines {
    fn response(&mut self, response: Response<'_>) {
        self.add(response);
    }

    fn second(&mut self, _: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_make_mcperfs_lines() {
        // time, tag, interval_real, connect, send, latency, receive, interval_event,
        // size_out, size_in, net_code, proto_code
        let mut text = String::new();
        for i in 1..=100u64 {
            let code = if i % 4 == 0 { 404 } else { 200 };
            text.push_str(&format!(
                "1.000\tget\t{i}\t0\t0\t{i}\t0\t{i}\t10\t20\t0\t{code}\n"
            ));
        }
        text.push_str("1.000\tset\t500\t0\t0\t500\t0\t500\t300\t8\t0\t200\n");
        text.push_str("1.000\tget\t9\t0\t0\t9\t0\t9\t10\t0\t110\t0\n");
        let mut lines = McperfLines::default();
        for (file, line) in text.lines().enumerate() {
            let record = tank_stats::phout::parse_line(line.as_bytes()).unwrap();
            lines.add(Response::Row {
                record: &record,
                line: line.as_bytes(),
                file,
            });
        }
        assert_eq!(
            (lines.reads.count(), lines.updates.count(), lines.misses),
            (100, 1, 25)
        );
        assert_eq!(
            (lines.tx_bytes, lines.rx_bytes),
            (100 * 10 + 300 + 10, 100 * 20 + 8)
        );
        let row = lines.reads.row();
        assert_eq!((row[0], row[2]), (50.5, 1.0));
        assert!((row[1] - 28.866).abs() < 0.01, "std {}", row[1]);
        // p50, p99.99
        assert_eq!((row[5], row[14]), (50.0, 100.0));
        let text = lines.to_text(2.0);
        assert!(
            text.starts_with("#type        avg     std     min      p5     p10     p50"),
            "{text}"
        );
        assert!(text.contains("p999   p9999\n"), "{text}");
        assert!(text.contains("Misses = 25 (25.0%)"), "{text}");
        assert!(
            text.contains("TX         1310 bytes :      0.0 MB/s"),
            "{text}"
        );
    }
}
