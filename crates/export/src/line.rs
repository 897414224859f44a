//! InfluxDB line protocol, as yandex-tank's InfluxUploader writes each second
//! (its `decoder.py`): the same measurements, tags and field names, so Grafana
//! dashboards built on yandex-tank's data read tank's unchanged.

use std::fmt::Write as _;

use tank_monitor::HostSecond;
use tank_stats::{GroupStats, SecondStats};

/// yandex-tank's quantiles, percent (its aggregator's list; 99.5 is not among them).
const QUANTILES: [(u16, &str); 9] = [
    (500, "q50"),
    (750, "q75"),
    (800, "q80"),
    (850, "q85"),
    (900, "q90"),
    (950, "q95"),
    (980, "q98"),
    (990, "q99"),
    (1000, "q100"),
];

/// The label yandex-tank gives the whole second.
pub const OVERALL: &str = "__OVERALL__";

/// What every point carries, and what the aggregate points include.
#[derive(Debug, Clone)]
pub struct Schema {
    /// Tags on every point: `tank`, `uuid`, then the custom tags.
    pub tags: Vec<(String, String)>,
    /// Also one set of points per tag (`labeled`).
    pub labeled: bool,
    /// Also the `histograms` measurement.
    pub histograms: bool,
    /// Prepended to the aggregate measurements (`prefix_measurement`).
    pub prefix: String,
}

fn escape_key(out: &mut String, text: &str) {
    for c in text.chars() {
        if matches!(c, ',' | '=' | ' ') {
            out.push('\\');
        }
        if c == '\n' {
            out.push_str("\\n");
        } else {
            out.push(c);
        }
    }
}

fn escape_measurement(out: &mut String, text: &str) {
    for c in text.chars() {
        if matches!(c, ',' | ' ') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// A field value: floats as floats (never NaN or infinite, which InfluxDB refuses), integers with `i`.
enum Value {
    Float(f64),
    Int(u64),
}

impl Schema {
    fn point(
        &self,
        out: &mut String,
        measurement: &str,
        extra: &[(&str, &str)],
        fields: &[(String, Value)],
        ts: u64,
    ) {
        let fields: Vec<&(String, Value)> = fields
            .iter()
            .filter(|(_, v)| !matches!(v, Value::Float(f) if !f.is_finite()))
            .collect();
        if fields.is_empty() {
            return;
        }
        escape_measurement(out, measurement);
        let mut tags: Vec<(&str, &str)> = self
            .tags
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(extra.iter().copied())
            .filter(|(_, v)| !v.is_empty())
            .collect();
        // InfluxDB wants tags sorted by key for the best performance; a later value wins.
        tags.sort_by(|a, b| a.0.cmp(b.0));
        tags.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                earlier.1 = later.1;
                true
            } else {
                false
            }
        });
        for (k, v) in tags {
            out.push(',');
            escape_key(out, k);
            out.push('=');
            escape_key(out, v);
        }
        for (i, (k, v)) in fields.iter().enumerate() {
            out.push(if i == 0 { ' ' } else { ',' });
            escape_key(out, k);
            out.push('=');
            let _ = match v {
                Value::Float(f) => write!(out, "{f:?}"),
                Value::Int(n) => write!(out, "{n}i"),
            };
        }
        let _ = writeln!(out, " {ts}");
    }

    fn label(
        &self,
        out: &mut String,
        second: &SecondStats,
        group: &GroupStats,
        label: &str,
        queue: Option<&str>,
    ) {
        let ts = second.ts;
        let with_queue = [("label", label), ("queue", queue.unwrap_or_default())];
        let tag = &with_queue[..];
        let p = &self.prefix;
        let quantiles: Vec<(String, Value)> = QUANTILES
            .iter()
            .filter_map(|(per_mille, name)| {
                let us = group.quantile_us(*per_mille)?;
                Some((name.to_string(), Value::Float(us / 1000.0)))
            })
            .collect();
        self.point(out, &format!("{p}overall_quantiles"), tag, &quantiles, ts);
        let meta = [
            ("active_threads".to_string(), Value::Int(second.instances)),
            ("RPS".to_string(), Value::Int(group.len())),
            (
                "planned_requests".to_string(),
                Value::Float(second.planned as f64),
            ),
        ];
        self.point(out, &format!("{p}overall_meta"), tag, &meta, ts);
        let codes = |counts: &tank_stats::CodeCounts| -> Vec<(String, Value)> {
            counts
                .iter()
                .map(|(code, n)| (code.to_string(), Value::Int(n)))
                .collect()
        };
        self.point(
            out,
            &format!("{p}net_codes"),
            tag,
            &codes(&group.net_codes),
            ts,
        );
        self.point(
            out,
            &format!("{p}proto_codes"),
            tag,
            &codes(&group.proto_codes),
            ts,
        );
        if self.histograms {
            for (bin, count) in &group.hist {
                let fields = [
                    ("bin".to_string(), Value::Int(*bin)),
                    ("count".to_string(), Value::Int(*count)),
                ];
                self.point(out, &format!("{p}histograms"), tag, &fields, ts);
            }
        }
    }

    /// The points of one finished second: the whole test's, each tag's
    /// (`labeled`), and each queue's when there are several.
    pub fn second(&self, out: &mut String, second: &SecondStats) {
        self.label(out, second, &second.overall, OVERALL, None);
        if self.labeled {
            for (tag, group) in &second.tagged {
                self.label(out, second, group, tag, None);
            }
        }
        for (queue, group) in &second.queues {
            self.label(out, second, group, crate::QUEUE_GROUP, Some(queue));
        }
    }

    /// The `monitoring` point of one host's second (no prefix, as in yandex-tank).
    pub fn monitoring(&self, out: &mut String, second: &HostSecond) {
        let fields: Vec<(String, Value)> = second
            .metrics
            .iter()
            .map(|(k, v)| (k.clone(), Value::Float(*v)))
            .collect();
        let tags = [
            ("host", second.host.as_str()),
            ("comment", second.comment.as_str()),
        ];
        self.point(out, "monitoring", &tags, &fields, second.ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tank_stats::phout::parse_line;
    use tank_stats::Aggregator;

    fn schema() -> Schema {
        Schema {
            tags: vec![("tank".into(), "t 1".into()), ("uuid".into(), "u".into())],
            labeled: true,
            histograms: false,
            prefix: String::new(),
        }
    }

    #[test]
    fn a_second_gives_yandex_tanks_points() {
        let mut agg = Aggregator::new(0);
        for line in [
            "1.0\tmain\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200",
            "1.2\tmain\t3000\t0\t0\t0\t0\t0\t0\t0\t110\t0",
        ] {
            agg.add_record(&parse_line(line.as_bytes()).unwrap());
        }
        agg.finish();
        let second = agg.pop_ready().unwrap();
        let mut out = String::new();
        schema().second(&mut out, &second);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 8, "{out}");
        assert!(
            lines[0].starts_with("overall_quantiles,label=__OVERALL__,tank=t\\ 1,uuid=u q50="),
            "{out}"
        );
        assert!(lines[0].ends_with(" 1"), "{out}");
        assert!(
            lines[1].starts_with("overall_meta,label=__OVERALL__,"),
            "{out}"
        );
        assert!(
            lines[1].contains(" active_threads=0i,RPS=2i,planned_requests=0.0 1"),
            "{out}"
        );
        assert!(lines[2].contains(" 0=1i,110=1i 1"), "{out}");
        assert!(lines[3].contains(" 0=1i,200=1i 1"), "{out}");
        assert!(
            lines[4].starts_with("overall_quantiles,label=main,"),
            "{out}"
        );
    }

    #[test]
    fn each_queue_gets_its_own_points_apart_from_the_whole_tests() {
        let mut agg = Aggregator::new(0).with_queues(vec!["phantom".into(), "phantom-1".into()]);
        for (queue, real) in [(0, 1000), (1, 3000)] {
            agg.add_sample(&tank_stats::Sample {
                start_unix_us: 1_000_000,
                lag_us: 0,
                tag: b"".as_slice().into(),
                measured: tank_stats::Measured {
                    interval_real_us: real,
                    proto_code: 200,
                    queue,
                    ..tank_stats::Measured::default()
                },
            });
        }
        agg.finish();
        let second = agg.pop_ready().unwrap();
        let mut out = String::new();
        schema().second(&mut out, &second);
        let metas: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("overall_meta,"))
            .collect();
        assert_eq!(
            metas.len(),
            2 + 2,
            "overall, the untagged tag, two queues: {out}"
        );
        assert!(
            metas[0].starts_with("overall_meta,label=__OVERALL__,tank="),
            "{out}"
        );
        assert!(
            metas[2].starts_with("overall_meta,label=__QUEUE__,queue=phantom,tank="),
            "{out}"
        );
        assert!(
            metas[3].contains("queue=phantom-1,") && metas[3].contains("RPS=1i"),
            "{out}"
        );
    }

    #[test]
    fn monitoring_points_carry_host_and_comment() {
        let mut out = String::new();
        let s = HostSecond {
            ts: 9,
            host: "web,1".into(),
            comment: String::new(),
            metrics: [
                ("System_la1".to_string(), 0.5),
                ("bad".to_string(), f64::NAN),
            ]
            .into(),
        };
        schema().monitoring(&mut out, &s);
        assert_eq!(
            out,
            "monitoring,host=web\\,1,tank=t\\ 1,uuid=u System_la1=0.5 9\n"
        );
    }
}
