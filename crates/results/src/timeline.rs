//! The per-second series a report draws: one small row of numbers per finished second, so a
//! long run costs a few hundred bytes per second of it, whatever its request rate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tank_stats::{Field, GroupStats, SecondStats, QUANTILES};

use crate::sink::{SecondSink, SinkError, SoFar};

/// Columns of per-second values; every column has one entry per second in `ts`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The seconds, unix seconds.
    pub ts: Vec<u64>,
    /// Responses.
    pub responses: Vec<u64>,
    /// Shots planned.
    pub planned: Vec<u64>,
    /// Shots sent.
    pub sent: Vec<u64>,
    /// Active instances.
    pub instances: Vec<u64>,
    /// `quantiles_ms[i][s]`: the [`QUANTILES`]`[i]` quantile of second `s`, ms.
    pub quantiles_ms: Vec<Vec<f64>>,
    /// Average response time, ms.
    pub avg_ms: Vec<f64>,
    /// 99% latency from the intended start, ms (0 when unknown).
    pub intended_p99_ms: Vec<f64>,
    /// 99% lag of the shots started in the second, ms.
    pub lag_p99_ms: Vec<f64>,
    /// Largest lag, ms.
    pub lag_max_ms: Vec<f64>,
    /// HTTP code → count per second.
    pub proto_codes: BTreeMap<String, Vec<u64>>,
    /// Net code → count per second.
    pub net_codes: BTreeMap<String, Vec<u64>>,
    /// Per tag, by tag: the first [`MAX_GROUP_SERIES`] tags seen.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, GroupSeries>,
    /// Per queue, by its section name (empty unless the run has more than one queue).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub queues: BTreeMap<String, GroupSeries>,
}

/// Tags (and queues) with series of their own: a run with thousands of distinct tags
/// would otherwise cost kilobytes per second; the rest stay in the summary's tables.
pub const MAX_GROUP_SERIES: usize = 20;

/// One tag's or queue's per-second values; `None` in a second it had no responses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupSeries {
    /// Responses.
    pub responses: Vec<u64>,
    /// Errors (net errors plus HTTP 4xx/5xx).
    pub errors: Vec<u64>,
    /// Median response time, ms.
    pub p50_ms: Vec<Option<f64>>,
    /// 99% response time, ms.
    pub p99_ms: Vec<Option<f64>>,
}

impl GroupSeries {
    /// Append this second's values at index `at`, padding the seconds it missed.
    fn push(&mut self, at: usize, group: Option<&GroupStats>) {
        self.responses.resize(at, 0);
        self.errors.resize(at, 0);
        self.p50_ms.resize(at, None);
        self.p99_ms.resize(at, None);
        let group = group.filter(|g| !g.is_empty());
        self.responses.push(group.map_or(0, |g| g.len()));
        self.errors.push(group.map_or(0, |g| g.errors()));
        let ms = |i: usize| group.map(|g| g.quantiles_us[i] / 1000.0);
        self.p50_ms.push(ms(0));
        self.p99_ms.push(ms(7));
    }
}

/// Push one second into each group's series: known groups and, up to the cap, new ones.
fn push_groups<'a>(
    series: &mut BTreeMap<String, GroupSeries>,
    groups: impl Iterator<Item = (&'a String, &'a GroupStats)>,
    at: usize,
) {
    let groups: BTreeMap<&String, &GroupStats> = groups.collect();
    for name in groups.keys() {
        if series.len() < MAX_GROUP_SERIES && !series.contains_key(*name) {
            series.insert((*name).clone(), GroupSeries::default());
        }
    }
    for (name, column) in series.iter_mut() {
        column.push(at, groups.get(name).copied());
    }
}

impl Timeline {
    /// Append one finished second.
    pub fn push(&mut self, second: &SecondStats) {
        let at = self.ts.len();
        self.ts.push(second.ts);
        self.responses.push(second.overall.len());
        self.planned.push(second.planned);
        self.sent.push(second.sent);
        self.instances.push(second.instances);
        self.quantiles_ms.resize(QUANTILES.len(), Vec::new());
        for (column, us) in self
            .quantiles_ms
            .iter_mut()
            .zip(second.overall.quantiles_us)
        {
            column.push(us / 1000.0);
        }
        self.avg_ms
            .push(second.overall.field(Field::IntervalReal).mean() / 1000.0);
        let p99 = |q: &tank_stats::Quantiles| q.get(990).unwrap_or(0.0) / 1000.0;
        self.intended_p99_ms.push(p99(&second.intended));
        self.lag_p99_ms.push(p99(&second.lag));
        self.lag_max_ms
            .push(second.lag.get(1000).unwrap_or(0.0) / 1000.0);
        push_codes(&mut self.proto_codes, second.overall.proto_codes.iter(), at);
        push_codes(&mut self.net_codes, second.overall.net_codes.iter(), at);
        push_groups(&mut self.tags, second.tagged.iter(), at);
        push_groups(
            &mut self.queues,
            second.queues.iter().map(|(name, group)| (name, group)),
            at,
        );
    }

    /// Number of seconds.
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    /// True when there are no seconds.
    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }
}

impl SecondSink for Timeline {
    fn second(&mut self, second: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        self.push(second);
        Ok(())
    }
}

/// Add this second's counts at index `at`, padding codes first seen now (and codes absent now).
fn push_codes(
    columns: &mut BTreeMap<String, Vec<u64>>,
    counts: impl Iterator<Item = (u16, u64)>,
    at: usize,
) {
    for (code, n) in counts {
        let column = columns.entry(code.to_string()).or_default();
        column.resize(at, 0);
        column.push(n);
    }
    for column in columns.values_mut() {
        column.resize(at + 1, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tank_stats::phout::parse_line;
    use tank_stats::Aggregator;

    #[test]
    fn code_columns_line_up_with_the_seconds() {
        let mut agg = Aggregator::new(0);
        for line in [
            "1.0\t\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200",
            "2.0\t\t3000\t0\t0\t0\t0\t0\t0\t0\t0\t500",
            "2.1\t\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200",
        ] {
            agg.add_record(&parse_line(line.as_bytes()).unwrap());
        }
        agg.finish();
        let mut timeline = Timeline::default();
        while let Some(s) = agg.pop_ready() {
            timeline.push(&s);
        }
        assert_eq!(timeline.ts, vec![1, 2]);
        assert_eq!(timeline.proto_codes["200"], vec![1, 1]);
        assert_eq!(timeline.proto_codes["500"], vec![0, 1]);
        assert_eq!(timeline.quantiles_ms[9], vec![1.0, 3.0]);
        assert_eq!(timeline.avg_ms, vec![1.0, 2.0]);
        let untagged = &timeline.tags[""];
        assert_eq!(untagged.responses, vec![1, 2]);
        assert_eq!(untagged.errors, vec![0, 1]);
        assert_eq!(untagged.p99_ms[0], Some(1.0));
    }
}
