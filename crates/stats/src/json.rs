//! Finished seconds as yandex-tank's JSON report writes them (`test_data.log`): one JSON
//! object per line, so tools that read yandex-tank's report read tank's.
//!
//! ```text
//! {"data": {"ts", "tagged": {tag: Agg}, "overall": Agg, "counted_rps"},
//!  "stats": {"ts", "metrics": {"instances", "reqps"}},
//!  "tank": {"sent", "lag": Q, "intended": Q, "retries"}}
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

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use crate::aggregate::SecondStats;
use crate::columns::Field;
use crate::group::{CodeCounts, FieldStats, GroupStats};
use crate::quantile::{percent, QUANTILES};

/// Write `second` as one JSON line (with its `\n`). Seconds without responses are skipped,
/// as yandex-tank never writes them.
pub fn write_second<W: Write>(out: &mut W, second: &SecondStats) -> io::Result<()> {
    if second.overall.is_empty() {
        return Ok(());
    }
    let line = Line {
        data: Data {
            ts: second.ts,
            tagged: second
                .tagged
                .iter()
                .filter(|(tag, _)| !tag.is_empty())
                .map(|(tag, group)| (tag.as_str(), Agg::of(group)))
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
        },
    };
    serde_json::to_writer(&mut *out, &line)?;
    out.write_all(b"\n")
}

/// A percent for the `q` list: integers as integers (yandex-tank writes `50`, not `50.0`).
#[derive(Serialize)]
#[serde(untagged)]
enum Percent {
    Whole(u16),
    Fraction(f64),
}

fn percent_value(per_mille: u16) -> Percent {
    if per_mille % 10 == 0 {
        Percent::Whole(per_mille / 10)
    } else {
        Percent::Fraction(percent(per_mille))
    }
}

#[derive(Serialize)]
struct Line<'a> {
    data: Data<'a>,
    stats: Stats,
    tank: Extra,
}

#[derive(Serialize)]
struct Data<'a> {
    ts: u64,
    tagged: BTreeMap<&'a str, Agg>,
    overall: Agg,
    counted_rps: u64,
}

#[derive(Serialize)]
struct Stats {
    ts: u64,
    metrics: Metrics,
}

#[derive(Serialize)]
struct Metrics {
    instances: u64,
    reqps: u64,
}

#[derive(Serialize)]
struct Extra {
    sent: u64,
    lag: Q,
    intended: Q,
    retries: u64,
}

#[derive(Serialize)]
struct Agg {
    interval_real: Real,
    connect_time: Basic,
    send_time: Basic,
    latency: Basic,
    receive_time: Basic,
    interval_event: Basic,
    size_out: Basic,
    size_in: Basic,
    net_code: Count,
    proto_code: Count,
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

#[derive(Serialize)]
struct Real {
    total: u64,
    max: u64,
    min: u64,
    len: u64,
    q: Q,
    hist: Hist,
}

#[derive(Serialize)]
struct Basic {
    total: u64,
    max: u64,
    min: u64,
    len: u64,
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

#[derive(Serialize)]
struct Q {
    q: Vec<Percent>,
    value: Vec<f64>,
}

impl Q {
    fn of(values: &[f64; QUANTILES.len()], count: u64) -> Q {
        if count == 0 {
            return Q {
                q: Vec::new(),
                value: Vec::new(),
            };
        }
        Q {
            q: QUANTILES.iter().map(|q| percent_value(*q)).collect(),
            value: values.to_vec(),
        }
    }
}

#[derive(Serialize)]
struct Hist {
    data: Vec<u64>,
    bins: Vec<u64>,
}

#[derive(Serialize)]
struct Count {
    count: BTreeMap<String, u64>,
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
}
