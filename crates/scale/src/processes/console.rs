//! `--processes`' console: one line per second, summed over the shards from
//! their `test_data.log` as the files grow (read as typed lines, by the module
//! that writes them: `tank_stats::json`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use tank_report::stream::files::JSON_LINES;

/// How many seconds a second waits for a shard that has not written it.
const WAIT_S: u64 = 3;

/// One shard's `test_data.log`, read from where the last read ended.
#[derive(Default)]
pub(super) struct Tail {
    reader: Option<BufReader<File>>,
    partial: String,
}

impl Tail {
    /// Take the lines appended to `dir`'s test_data.log since the last look.
    pub(super) fn read(&mut self, dir: &Path, seconds: &mut Seconds) {
        if self.reader.is_none() {
            let Ok(file) = File::open(dir.join(JSON_LINES)) else {
                return;
            };
            self.reader = Some(BufReader::new(file));
        }
        let Some(reader) = self.reader.as_mut() else {
            return;
        };
        loop {
            let mut line = std::mem::take(&mut self.partial);
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => {
                    self.partial = line;
                    return;
                }
                Ok(_) if !line.ends_with('\n') => {
                    // A line being written: keep it and read its rest next time.
                    self.partial = line;
                    return;
                }
                Ok(_) => {
                    if let Some((ts, second)) = parse_second(&line) {
                        seconds.add(ts, &second);
                    }
                }
            }
        }
    }
}

/// What the console shows of one second, summed over the shards that wrote it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Second {
    shards: u32,
    responses: u64,
    planned: u64,
    sent: u64,
    errors: u64,
}

/// The seconds read so far and not yet shown.
#[derive(Default)]
pub(super) struct Seconds {
    pending: BTreeMap<u64, Second>,
    shown: u64,
}

impl Seconds {
    fn add(&mut self, ts: u64, second: &Second) {
        let sum = self.pending.entry(ts).or_default();
        sum.shards += 1;
        sum.responses += second.responses;
        sum.planned += second.planned;
        sum.sent += second.sent;
        sum.errors += second.errors;
    }

    /// The lines of the seconds ready to show: every one of `total` shards wrote
    /// it, it is [`WAIT_S`] old, or no shard is `running` any more.
    pub(super) fn ready(&mut self, total: u32, running: bool) -> Vec<String> {
        let latest = self.pending.keys().next_back().copied().unwrap_or(0);
        let mut lines = Vec::new();
        while let Some((&ts, second)) = self.pending.first_key_value() {
            if second.shards < total && ts + WAIT_S > latest && running {
                break;
            }
            if ts > self.shown {
                lines.push(format!(
                    "{}  responses {:>8}  planned {:>8}  sent {:>8}  errors {:>6}  [{}/{} shards]",
                    tank_run::time::format_rfc3339(ts.saturating_mul(1_000_000))
                        .get(11..19)
                        .unwrap_or(""),
                    second.responses,
                    second.planned,
                    second.sent,
                    second.errors,
                    second.shards,
                    total
                ));
                self.shown = ts;
            }
            self.pending.pop_first();
        }
        lines
    }
}

/// The console's numbers from one test_data.log line (`None`: not a line of one).
fn parse_second(line: &str) -> Option<(u64, Second)> {
    let line = tank_stats::json::read_line(line).ok()?;
    Some((
        line.data.ts,
        Second {
            shards: 0,
            responses: line.data.counted_rps,
            planned: line.stats.metrics.reqps,
            sent: line.tank.sent,
            errors: line.errors(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_console_numbers_of_a_second() {
        let mut agg = tank_stats::Aggregator::new(0);
        // A timeout, a 503, and a timeout with a 504 (one error, not two).
        for (ms, net, proto) in [
            (100_000, 0, 200),
            (100_100, 0, 503),
            (100_200, 110, 0),
            (100_300, 110, 504),
        ] {
            let line = format!(
                "{}.{:03}\t\t1000\t0\t0\t0\t0\t0\t0\t0\t{net}\t{proto}",
                ms / 1000,
                ms % 1000
            );
            agg.add_record(&tank_stats::phout::parse_line(line.as_bytes()).unwrap());
        }
        agg.note_planned(100, 8);
        agg.note_sent(100, 8);
        agg.finish();
        let mut line = Vec::new();
        tank_stats::json::write_second(&mut line, &agg.pop_ready().unwrap()).unwrap();
        let (ts, second) = parse_second(std::str::from_utf8(&line).unwrap()).unwrap();
        assert_eq!(ts, 100);
        assert_eq!(
            second,
            Second {
                shards: 0,
                responses: 4,
                planned: 8,
                sent: 8,
                errors: 3
            }
        );
        assert!(parse_second("{}").is_none());
        let mut seconds = Seconds::default();
        seconds.add(ts, &second);
        assert!(seconds.ready(2, true).is_empty(), "one shard of two");
        seconds.add(ts, &second);
        let lines = seconds.ready(2, true);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].ends_with("sent       16  errors      6  [2/2 shards]"),
            "{lines:?}"
        );
    }
}
