//! Finished seconds as yandex-tank's JSON report writes them (`test_data.log`): one JSON
//! object per line, so tools that read yandex-tank's report read tank's.
//!
//! ```text
//! {"data": {"ts", "tagged": {tag: Agg}, "overall": Agg, "counted_rps"},
//!  "stats": {"ts", "metrics": {"instances", "reqps"}},
//!  "tank": {"sent", "lag": Q, "intended": Q, "retries", "errors"}}
//! ```
//! `Agg` has `interval_real: {total, min, max, len, q: {q, value}, hist: {data, bins}}`,
//! `{total, min, max, len}` for the other seven columns, and `net_code` / `proto_code` as
//! `{count: {"code": n}}`. Times are µs. `q` lists [`QUANTILES`] as percents (99.5 is the one
//! yandex-tank does not have). The `tank` member is tank's own: shots sent, the lag and
//! latency-from-intended-start quantiles, and `retries`, the requests of the second's
//! responses that were sent a second time (after a kept connection was found closed);
//! readers of yandex-tank's shape ignore it.
//!
//! Like yandex-tank, only seconds with responses are written, and untagged responses are in
//! `overall` only (its reader takes an empty tag for "no tag", which grouping drops).
//!
//! The file is written and read here only: [`write_second`] and [`read_line`] share the one
//! set of types ([`Line`]), so a reader (`--processes`' console) cannot drift from the writer.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::aggregate::SecondStats;
use crate::columns::Field;
use crate::group::{CodeCounts, FieldStats, GroupStats};
use crate::quantile::{percent, QUANTILES};

/// Write `second` as one JSON line (with its `\n`). Seconds without responses are skipped,
/// as yandex-tank never writes them.
pub fn write_second<W: Write>(out: &mut W, second: &SecondStats) -> io::Result<()> {
    let Some(line) = Line::of(second) else {
        return Ok(());
    };
    serde_json::to_writer(&mut *out, &line)?;
    out.write_all(b"\n")
}

/// Read one line of a `test_data.log` (tank's, or yandex-tank's: without the `tank` member,
/// its counts read as 0).
pub fn read_line(text: &str) -> Result<Line, serde_json::Error> {
    serde_json::from_str(text)
}

/// One line of `test_data.log`: one finished second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// The responses of the second.
    pub data: Data,
    /// What the generator did in the second.
    pub stats: Stats,
    /// tank's own member (absent from yandex-tank's lines: then all zero).
    #[serde(default)]
    pub tank: Extra,
}

impl Line {
    /// `second` as a line, or `None` when it had no responses (yandex-tank writes none then).
    pub fn of(second: &SecondStats) -> Option<Line> {
        if second.overall.is_empty() {
            return None;
        }
        Some(Line {
            data: Data {
                ts: second.ts,
                tagged: second
                    .tagged
                    .iter()
                    .filter(|(tag, _)| !tag.is_empty())
                    .map(|(tag, group)| (tag.clone(), Agg::of(group)))
                    .collect(),
                overall: Agg::of(&second.overall),
                counted_rps: second.overall.len(),
            },
            stats: Stats {
                ts: second.ts,
                metrics: Metrics {
                    instances: second.instances,
                    reqps: second.planned,
                },
            },
            tank: Extra {
                sent: second.sent,
                lag: Q::of(&second.lag.values_us, second.lag.count),
                intended: Q::of(&second.intended.values_us, second.intended.count),
                retries: second.retries,
                errors: Some(second.overall.errors()),
            },
        })
    }

    /// Responses of the second that failed: [`Extra::errors`], or, in a line
    /// written before tank counted it, those with a net error.
    pub fn errors(&self) -> u64 {
        self.tank.errors.unwrap_or_else(|| self.net_errors())
    }

    /// Responses of the second that failed at the network level (net code not 0).
    pub fn net_errors(&self) -> u64 {
        self.data
            .overall
            .net_code
            .count
            .iter()
            .filter(|(code, _)| code.as_str() != "0")
            .map(|(_, n)| n)
            .sum()
    }
}

/// A percent for the `q` list: integers as integers (yandex-tank writes `50`, not `50.0`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Percent {
    /// A whole percent.
    Whole(u16),
    /// A fraction (99.5).
    Fraction(f64),
}

fn percent_value(per_mille: u16) -> Percent {
    if per_mille % 10 == 0 {
        Percent::Whole(per_mille / 10)
    } else {
        Percent::Fraction(percent(per_mille))
    }
}

/// The responses of one second: per tag (tagged responses only) and overall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Data {
    /// The second, unix seconds.
    pub ts: u64,
    /// Per tag (cut at its last `#`); untagged responses are in `overall` only.
    pub tagged: BTreeMap<String, Agg>,
    /// Every response of the second.
    pub overall: Agg,
    /// Responses in the second.
    pub counted_rps: u64,
}

/// The generator's side of one second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The second, unix seconds.
    pub ts: u64,
    /// Its counts.
    pub metrics: Metrics,
}

/// Instances and planned shots of one second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Instances active.
    pub instances: u64,
    /// Shots planned (yandex-tank's name).
    pub reqps: u64,
}

/// tank's own member of a line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extra {
    /// Shots started in the second.
    pub sent: u64,
    /// Lag behind the plan of the shots started in the second, µs.
    pub lag: Q,
    /// Latency from the intended start of the second's responses, µs.
    pub intended: Q,
    /// Requests of the second's responses sent a second time.
    pub retries: u64,
    /// Responses of the second with a net error or a status of 400 and up
    /// (a row with both counts once, which the code counts cannot say).
    /// `None` in a line written before tank counted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
}

/// One group's second: `interval_real` with quantiles and histogram, the other columns'
/// totals, and the codes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)] // phout's column names, documented in `crate::columns`
pub struct Agg {
    pub interval_real: Real,
    pub connect_time: Basic,
    pub send_time: Basic,
    pub latency: Basic,
    pub receive_time: Basic,
    pub interval_event: Basic,
    pub size_out: Basic,
    pub size_in: Basic,
    pub net_code: Count,
    pub proto_code: Count,
}

impl Agg {
    fn of(group: &GroupStats) -> Agg {
        let basic = |field: Field| Basic::of(group.field(field));
        let real = group.field(Field::IntervalReal);
        Agg {
            interval_real: Real {
                total: real.total,
                max: real.max,
                min: real.min,
                len: real.len,
                q: Q::of(&group.quantiles_us, real.len),
                hist: Hist {
                    data: group.hist.iter().map(|(_, n)| *n).collect(),
                    bins: group.hist.iter().map(|(edge, _)| *edge).collect(),
                },
            },
            connect_time: basic(Field::Connect),
            send_time: basic(Field::Send),
            latency: basic(Field::Latency),
            receive_time: basic(Field::Receive),
            interval_event: basic(Field::IntervalEvent),
            size_out: basic(Field::SizeOut),
            size_in: basic(Field::SizeIn),
            net_code: Count::of(&group.net_codes),
            proto_code: Count::of(&group.proto_codes),
        }
    }
}

/// `interval_real`: totals, quantiles and yandex-tank's histogram (µs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Real {
    /// Sum.
    pub total: u64,
    /// Largest.
    pub max: u64,
    /// Smallest.
    pub min: u64,
    /// How many.
    pub len: u64,
    /// Quantiles.
    pub q: Q,
    /// Histogram.
    pub hist: Hist,
}

/// `{total, min, max, len}` of one column.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Basic {
    /// Sum.
    pub total: u64,
    /// Largest.
    pub max: u64,
    /// Smallest.
    pub min: u64,
    /// How many.
    pub len: u64,
}

impl Basic {
    fn of(field: &FieldStats) -> Basic {
        Basic {
            total: field.total,
            max: field.max,
            min: field.min,
            len: field.len,
        }
    }
}

/// Quantiles: percents and their values (µs); both empty when nothing was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Q {
    /// The percents.
    pub q: Vec<Percent>,
    /// The values, µs.
    pub value: Vec<f64>,
}

impl Q {
    fn of(values: &[f64; QUANTILES.len()], count: u64) -> Q {
        if count == 0 {
            return Q::default();
        }
        Q {
            q: QUANTILES.iter().map(|q| percent_value(*q)).collect(),
            value: values.to_vec(),
        }
    }
}

/// yandex-tank's histogram: counts per bin, by the bins' lower edges (µs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hist {
    /// Counts.
    pub data: Vec<u64>,
    /// Lower edges.
    pub bins: Vec<u64>,
}

/// Codes and their counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Count {
    /// Code → count.
    pub count: BTreeMap<String, u64>,
}

impl Count {
    fn of(codes: &CodeCounts) -> Count {
        Count {
            count: codes.iter().map(|(c, n)| (c.to_string(), n)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::Aggregator;
    use crate::phout::parse_line;

    #[test]
    fn a_second_has_yandex_tanks_shape() {
        let mut agg = Aggregator::new(0);
        for line in [
            "100.000\tsearch#1\t1500\t100\t20\t1300\t80\t1400\t74\t230\t0\t200",
            "100.200\t\t2500\t100\t20\t2300\t80\t2400\t74\t0\t110\t0",
        ] {
            agg.add_record(&parse_line(line.as_bytes()).unwrap());
        }
        agg.note_planned(100, 3);
        agg.finish();
        let mut out = Vec::new();
        write_second(&mut out, &agg.pop_ready().unwrap()).unwrap();
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["data"]["ts"], 100);
        assert_eq!(v["tank"]["retries"], 0);
        assert_eq!(v["stats"]["metrics"]["reqps"], 3);
        let overall = &v["data"]["overall"];
        assert_eq!(overall["interval_real"]["len"], 2);
        assert_eq!(overall["interval_real"]["total"], 4000);
        assert_eq!(overall["interval_real"]["q"]["q"][0], 50);
        assert_eq!(overall["interval_real"]["q"]["q"][8], 99.5);
        assert_eq!(overall["interval_real"]["q"]["value"][0], 2000.0);
        assert_eq!(
            overall["interval_real"]["hist"]["bins"],
            serde_json::json!([2000, 3000])
        );
        assert_eq!(overall["net_code"]["count"]["110"], 1);
        assert_eq!(overall["proto_code"]["count"]["200"], 1);
        assert_eq!(overall["size_in"]["max"], 230);
        assert_eq!(v["data"]["tagged"]["search"]["latency"]["total"], 1300);
        assert!(
            v["data"]["tagged"].get("").is_none(),
            "untagged: overall only"
        );
    }

    #[test]
    fn retries_are_in_tanks_own_member() {
        let mut agg = Aggregator::new(0);
        agg.add_sample(&crate::Sample {
            start_unix_us: 100_000_000,
            lag_us: 0,
            tag: b"".as_slice().into(),
            measured: crate::Measured {
                interval_real_us: 1000,
                sends: 2,
                queue: 0,
                ..crate::Measured::default()
            },
        });
        agg.finish();
        let mut out = Vec::new();
        write_second(&mut out, &agg.pop_ready().unwrap()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["tank"]["retries"], 1);
        assert_eq!(v["data"]["overall"]["interval_real"]["len"], 1);
    }

    #[test]
    fn a_line_reads_back_as_written_and_a_reference_line_without_tanks_member_too() {
        let mut agg = Aggregator::new(0);
        for line in [
            "100.000\tsearch#1\t1500\t100\t20\t1300\t80\t1400\t74\t230\t0\t200",
            "100.200\t\t2500\t100\t20\t2300\t80\t2400\t74\t0\t110\t0",
        ] {
            agg.add_record(&parse_line(line.as_bytes()).unwrap());
        }
        agg.note_planned(100, 3);
        agg.note_sent(100, 2);
        agg.finish();
        let second = agg.pop_ready().unwrap();
        let mut out = Vec::new();
        write_second(&mut out, &second).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        let line = read_line(text.trim_end()).unwrap();
        assert_eq!(Some(line.clone()), Line::of(&second));
        assert_eq!(
            (
                line.data.ts,
                line.data.counted_rps,
                line.stats.metrics.reqps,
                line.tank.sent
            ),
            (100, 2, 3, 2)
        );
        assert_eq!(line.net_errors(), 1);
        let mut reference: serde_json::Value = serde_json::from_str(text).unwrap();
        reference.as_object_mut().unwrap().remove("tank");
        let line = read_line(&reference.to_string()).unwrap();
        assert_eq!((line.tank.sent, line.data.counted_rps), (0, 2));
        assert!(read_line("{}").is_err());
    }
}
