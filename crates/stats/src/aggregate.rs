//! Per-second aggregation, as yandex-tank's aggregator does it, with bounded memory.
//!
//! Responses are counted in the second they **ended** (`int(send_ts + interval_real)`),
//! overall and per tag (the tag cut at its last `#`). A second stays open while responses for
//! it may still come: it is finalised once the clock (or, reading a phout, the latest send second
//! seen) is `buffered_seconds` past its end. Finalising turns it into a plain-data
//! [`SecondStats`] and merges its histograms into the run's totals, so an open second costs a
//! few histograms and a finished one nothing: memory does not grow with the run.
//!
//! The engine also tells the aggregator what a phout cannot: shots planned and sent per
//! second, active instances, and each shot's lag behind its planned time (see the `note_*`
//! methods). With the lag of each response the aggregator also keeps the latency from the
//! intended start (`lag + interval_real`, wrk2's view of coordinated omission).

use std::collections::{BTreeMap, VecDeque};

// Looked up for every sample (twice): foldhash costs a fraction of SipHash, and tags
// come from the user's own ammo, so hash flooding is not a concern.
use foldhash::HashMap;

use hdrhistogram::Histogram;

use crate::group::{new_histogram, record, GroupAcc, GroupStats, Response};
use crate::phout::Record;
use crate::quantile::{quantiles_of, QUANTILES};
use crate::sample::{Measured, Sample};

/// `buffered_seconds` when the config does not say (yandex-tank's default).
pub const DEFAULT_BUFFERED_SECONDS: u32 = 2;

/// Quantiles of one distribution, µs, at [`QUANTILES`]; count 0 means "nothing measured".
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Quantiles {
    /// How many values.
    pub count: u64,
    /// The values at [`QUANTILES`].
    pub values_us: [f64; QUANTILES.len()],
}

impl Quantiles {
    fn of(histogram: &Histogram<u64>) -> Quantiles {
        Quantiles {
            count: histogram.len(),
            values_us: quantiles_of(histogram, histogram.min(), histogram.max()),
        }
    }

    /// The value at `per_mille` (one of [`QUANTILES`]), µs.
    pub fn get(&self, per_mille: u16) -> Option<f64> {
        QUANTILES
            .iter()
            .position(|q| *q == per_mille)
            .map(|at| self.values_us[at])
    }
}

/// One finished second.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SecondStats {
    /// The second, unix seconds (responses that ended in it).
    pub ts: u64,
    /// All responses of the second.
    pub overall: GroupStats,
    /// Per tag (cut at the last `#`; the empty tag is a tag too), in tag order.
    pub tagged: BTreeMap<String, GroupStats>,
    /// Shots the schedule planned for this second (yandex-tank's `reqps`).
    pub planned: u64,
    /// Shots actually started in this second.
    pub sent: u64,
    /// Active instances (the largest count noted for the second).
    pub instances: u64,
    /// Lag behind the plan of the shots started in this second.
    pub lag: Quantiles,
    /// Latency from the intended start (lag + interval_real) of this second's responses;
    /// count 0 when no lag was known (a phout has none).
    pub intended: Quantiles,
    /// `interval_real` quantiles of every response up to and including this second.
    pub cumulative: Quantiles,
    /// Requests of this second's responses sent a second time, after a kept connection
    /// was found closed ([`Measured::retries`]): the target may have seen them twice.
    pub retries: u64,
}

/// The whole run so far.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TotalStats {
    /// First and last second with anything in them, unix seconds.
    pub span: Option<(u64, u64)>,
    /// From the first shot's start to the last response's end, µs since the Unix epoch:
    /// the time the run was active, which whole seconds overstate.
    pub active_us: Option<(u64, u64)>,
    /// All responses.
    pub overall: GroupStats,
    /// Per tag.
    pub tagged: BTreeMap<String, GroupStats>,
    /// Shots planned, summed over the seconds.
    pub planned: u64,
    /// Shots started.
    pub sent: u64,
    /// Most active instances seen in a second.
    pub max_instances: u64,
    /// Lag of every started shot.
    pub lag: Quantiles,
    /// Latency from the intended start of every response with a known lag.
    pub intended: Quantiles,
    /// Responses that arrived for a second already finalised: counted in these totals, in
    /// no [`SecondStats`]. Non-zero means `buffered_seconds` was too small for the run.
    pub late: u64,
    /// Requests sent a second time ([`SecondStats::retries`]), late responses' included.
    pub retries: u64,
}

impl TotalStats {
    /// Seconds from the first to the last second, inclusive (0 for an empty run).
    pub fn duration_s(&self) -> u64 {
        self.span.map_or(0, |(first, last)| last - first + 1)
    }

    /// Seconds from the first shot's start to the last response's end (0 for an empty run).
    pub fn active_s(&self) -> f64 {
        self.active_us
            .map_or(0.0, |(first, last)| (last - first) as f64 / 1e6)
    }
}

/// Everything one open second collects. Its overall group is its tag groups merged when
/// it is finalised: one group to add each response to instead of two.
#[derive(Debug)]
struct Open {
    tagged: HashMap<Box<[u8]>, GroupAcc>,
    planned: u64,
    sent: u64,
    instances: u64,
    lag: Histogram<u64>,
    intended: Histogram<u64>,
    retries: u64,
}

impl Open {
    fn new() -> Open {
        Open {
            tagged: HashMap::default(),
            planned: 0,
            sent: 0,
            instances: 0,
            lag: new_histogram(),
            intended: new_histogram(),
            retries: 0,
        }
    }

    fn add(&mut self, case: &[u8], response: &Response, lag_us: Option<u64>) {
        match self.tagged.get_mut(case) {
            Some(group) => group.add(response),
            None => {
                let mut group = GroupAcc::new();
                group.add(response);
                self.tagged.insert(case.into(), group);
            }
        }
        if let Some(lag) = lag_us {
            record(&mut self.intended, lag.saturating_add(response.fields[0]));
        }
    }
}

/// Feeds on responses and the engine's notes; hands out finished seconds in order.
///
/// Contract: `add_*` and `note_*` may come in any order and for any second; a second is
/// handed out by [`Aggregator::pop_ready`] once it is final (see the module docs), each at
/// most once, in increasing order. Data for an already finalised second goes into the totals
/// only (counted in [`TotalStats::late`] for responses). [`Aggregator::finish`] makes every
/// open second final.
#[derive(Debug)]
pub struct Aggregator {
    buffered: u64,
    open: BTreeMap<u64, Open>,
    /// Seconds below this are final.
    final_below: Option<u64>,
    /// The latest second known to have begun (from data or the clock).
    watermark: Option<u64>,
    ready: VecDeque<SecondStats>,
    total_overall: GroupAcc,
    total_tagged: HashMap<Box<[u8]>, GroupAcc>,
    total_lag: Histogram<u64>,
    total_intended: Histogram<u64>,
    span: Option<(u64, u64)>,
    active_us: Option<(u64, u64)>,
    planned: u64,
    sent: u64,
    max_instances: u64,
    late: u64,
    retries: u64,
}

impl Aggregator {
    /// A new aggregator that finalises a second `buffered_seconds` after it ends.
    pub fn new(buffered_seconds: u32) -> Aggregator {
        Aggregator {
            buffered: u64::from(buffered_seconds),
            open: BTreeMap::new(),
            final_below: None,
            watermark: None,
            ready: VecDeque::new(),
            total_overall: GroupAcc::new(),
            total_tagged: HashMap::default(),
            total_lag: new_histogram(),
            total_intended: new_histogram(),
            span: None,
            active_us: None,
            planned: 0,
            sent: 0,
            max_instances: 0,
            late: 0,
            retries: 0,
        }
    }

    /// Count one measured shot (the engine's path). Its lag also goes into the latency from
    /// the intended start, and its retries count in the second it ended.
    pub fn add_sample(&mut self, sample: &Sample) {
        let second = sample.end_unix_us() / 1_000_000;
        self.extend_active(sample.start_unix_us, sample.end_unix_us());
        let response = response(&sample.measured);
        let sent = sample.start_unix_us / 1_000_000;
        let retries = sample.measured.retries();
        if retries > 0 {
            self.retries += retries;
            if let Some(open) = self.open_second(second) {
                open.retries += retries;
            }
        }
        self.add(
            second,
            sent,
            case_of(&sample.tag),
            &response,
            Some(sample.lag_us),
        );
    }

    /// Count one phout line (the `tank report` path; a phout has no lag).
    pub fn add_record(&mut self, record: &Record<'_>) {
        let response = response(&record.measured);
        let start_us = record.send_ms.saturating_mul(1000);
        self.extend_active(
            start_us,
            start_us.saturating_add(record.measured.interval_real_us),
        );
        let sent = record.send_ms / 1000;
        self.add(
            record.receive_second(),
            sent,
            record.case(),
            &response,
            None,
        );
    }

    /// Count a response that ended in `second` and was sent in `sent`.
    ///
    /// The send second, not the response's, moves the clock: whether a log is in send order
    /// (pandora) or completion order (phantom), no response still to come was sent before
    /// it, so none can end before it; one slow response (a timeout ending 11 s later) must
    /// not finalise the seconds whose responses are still arriving.
    fn add(
        &mut self,
        second: u64,
        sent: u64,
        case: &[u8],
        response: &Response,
        lag_us: Option<u64>,
    ) {
        self.extend_span(second);
        if self.is_final(second) {
            self.late += 1;
            self.total_overall.add(response);
            total_group(&mut self.total_tagged, case).add(response);
            if let Some(lag) = lag_us {
                record(
                    &mut self.total_intended,
                    lag.saturating_add(response.fields[0]),
                );
            }
        } else {
            self.open
                .entry(second)
                .or_insert_with(Open::new)
                .add(case, response, lag_us);
        }
        self.advance(sent);
    }

    /// The schedule planned `shots` shots in `second` (unix seconds). Adds up if called again.
    pub fn note_planned(&mut self, second: u64, shots: u64) {
        self.planned += shots;
        if let Some(open) = self.open_second(second) {
            open.planned += shots;
        }
    }

    /// `shots` shots were started in `second`. Adds up if called again.
    pub fn note_sent(&mut self, second: u64, shots: u64) {
        self.sent += shots;
        if let Some(open) = self.open_second(second) {
            open.sent += shots;
        }
    }

    /// `instances` instances were active in `second`; the largest value noted for a second wins.
    pub fn note_instances(&mut self, second: u64, instances: u64) {
        self.max_instances = self.max_instances.max(instances);
        if let Some(open) = self.open_second(second) {
            open.instances = open.instances.max(instances);
        }
    }

    /// A shot started in `second`, `lag_us` behind its planned time. Call it when the shot
    /// starts (not when it ends) so lag is visible while responses are still outstanding.
    pub fn note_lag(&mut self, second: u64, lag_us: u64) {
        // An open second's lags join the totals when it is finalised.
        match self.open_second(second) {
            Some(open) => record(&mut open.lag, lag_us),
            None => record(&mut self.total_lag, lag_us),
        }
    }

    /// The wall clock is in `now_second` (unix seconds): seconds up to
    /// `now_second − buffered_seconds − 1` are final even if no response arrives.
    pub fn advance(&mut self, now_second: u64) {
        if self.watermark.is_some_and(|w| w >= now_second) {
            return;
        }
        self.watermark = Some(now_second);
        let Some(limit) = now_second.checked_sub(self.buffered) else {
            return;
        };
        self.finalise_below(limit);
    }

    /// The next finished second, oldest first.
    pub fn pop_ready(&mut self) -> Option<SecondStats> {
        self.ready.pop_front()
    }

    /// The run is over: every open second becomes final (then [`Aggregator::pop_ready`] them).
    pub fn finish(&mut self) {
        if let Some(&last) = self.open.keys().next_back() {
            self.finalise_below(last + 1);
        }
    }

    /// The run so far: finished seconds plus late arrivals (open seconds are not in yet).
    pub fn totals(&self) -> TotalStats {
        let tag_stats = |groups: &HashMap<Box<[u8]>, GroupAcc>| {
            groups
                .iter()
                .map(|(tag, group)| (String::from_utf8_lossy(tag).into_owned(), group.stats()))
                .collect()
        };
        TotalStats {
            span: self.span,
            active_us: self.active_us,
            overall: self.total_overall.stats(),
            tagged: tag_stats(&self.total_tagged),
            planned: self.planned,
            sent: self.sent,
            max_instances: self.max_instances,
            lag: Quantiles::of(&self.total_lag),
            intended: Quantiles::of(&self.total_intended),
            late: self.late,
            retries: self.retries,
        }
    }

    fn is_final(&self, second: u64) -> bool {
        self.final_below.is_some_and(|below| second < below)
    }

    fn extend_active(&mut self, start_us: u64, end_us: u64) {
        self.active_us = Some(match self.active_us {
            None => (start_us, end_us),
            Some((first, last)) => (first.min(start_us), last.max(end_us)),
        });
    }

    fn extend_span(&mut self, second: u64) {
        self.span = Some(match self.span {
            None => (second, second),
            Some((first, last)) => (first.min(second), last.max(second)),
        });
    }

    /// The open second to note something in, or `None` (totals only) when it is final.
    fn open_second(&mut self, second: u64) -> Option<&mut Open> {
        self.extend_span(second);
        if self.is_final(second) {
            return None;
        }
        Some(self.open.entry(second).or_insert_with(Open::new))
    }

    fn finalise_below(&mut self, limit: u64) {
        while let Some(entry) = self.open.first_entry() {
            if *entry.key() >= limit {
                break;
            }
            let (ts, open) = entry.remove_entry();
            let second = self.finalise(ts, open);
            self.ready.push_back(second);
        }
        self.final_below = Some(self.final_below.map_or(limit, |below| below.max(limit)));
    }

    fn finalise(&mut self, ts: u64, open: Open) -> SecondStats {
        let mut groups = open.tagged.values();
        let overall = match groups.next() {
            None => GroupAcc::new(),
            Some(first) => groups.fold(first.clone(), |mut all, group| {
                all.merge(group);
                all
            }),
        };
        self.total_overall.merge(&overall);
        let mut tagged = BTreeMap::new();
        for (tag, group) in &open.tagged {
            total_group(&mut self.total_tagged, tag).merge(group);
            tagged.insert(String::from_utf8_lossy(tag).into_owned(), group.stats());
        }
        // They auto-resize: adding cannot fail.
        let _ = self.total_intended.add(&open.intended);
        let _ = self.total_lag.add(&open.lag);
        SecondStats {
            ts,
            overall: overall.stats(),
            tagged,
            planned: open.planned,
            sent: open.sent,
            instances: open.instances,
            lag: Quantiles::of(&open.lag),
            intended: Quantiles::of(&open.intended),
            cumulative: Quantiles {
                count: self.total_overall.len(),
                values_us: self.total_overall.quantiles_us(),
            },
            retries: open.retries,
        }
    }
}

fn total_group<'a>(groups: &'a mut HashMap<Box<[u8]>, GroupAcc>, case: &[u8]) -> &'a mut GroupAcc {
    if !groups.contains_key(case) {
        groups.insert(case.into(), GroupAcc::new());
    }
    // Inserted just above when missing.
    groups.get_mut(case).expect("group present")
}

/// A measured shot as the per-second groups count it.
fn response(measured: &Measured) -> Response {
    Response {
        fields: measured.fields(),
        net_code: measured.net_code.0,
        proto_code: measured.proto_code,
    }
}

/// A tag with a trailing `#N` cut off, as yandex-tank groups cases.
pub fn case_of(tag: &[u8]) -> &[u8] {
    match tag.iter().rposition(|b| *b == b'#') {
        Some(at) => &tag[..at],
        None => tag,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::record as record_histogram;
    use crate::phout::parse_line;
    use crate::sample::Measured;
    use crate::sample::NetCode;

    fn record(agg: &mut Aggregator, line: &str) {
        agg.add_record(&parse_line(line.as_bytes()).unwrap());
    }

    fn drain(agg: &mut Aggregator) -> Vec<SecondStats> {
        std::iter::from_fn(|| agg.pop_ready()).collect()
    }

    #[test]
    fn responses_count_in_the_second_they_ended_and_tags_are_cut_at_the_last_hash() {
        let mut agg = Aggregator::new(2);
        record(
            &mut agg,
            "100.900\ta#1\t200000\t0\t0\t0\t0\t0\t1\t2\t0\t200",
        );
        record(
            &mut agg,
            "100.100\ta#b#2\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t404",
        );
        agg.finish();
        let seconds = drain(&mut agg);
        assert_eq!(
            seconds.iter().map(|s| s.ts).collect::<Vec<_>>(),
            vec![100, 101]
        );
        assert_eq!(seconds[0].tagged.keys().collect::<Vec<_>>(), vec!["a#b"]);
        assert_eq!(seconds[1].tagged.keys().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(seconds[1].overall.len(), 1);
    }

    #[test]
    fn a_second_is_final_only_after_buffered_seconds() {
        let mut agg = Aggregator::new(2);
        record(&mut agg, "10.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
        record(&mut agg, "12.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
        assert!(
            agg.pop_ready().is_none(),
            "second 10 must wait until 13 begins"
        );
        record(&mut agg, "13.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
        assert_eq!(agg.pop_ready().map(|s| s.ts), Some(10));
        assert!(agg.pop_ready().is_none());
        agg.advance(20);
        assert_eq!(
            drain(&mut agg).iter().map(|s| s.ts).collect::<Vec<_>>(),
            vec![12, 13]
        );
    }

    #[test]
    fn late_responses_go_to_totals_only() {
        let mut agg = Aggregator::new(0);
        record(&mut agg, "10.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
        record(&mut agg, "12.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
        record(&mut agg, "10.500\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t500");
        agg.finish();
        let seconds = drain(&mut agg);
        assert_eq!(seconds.iter().map(|s| s.overall.len()).sum::<u64>(), 2);
        let totals = agg.totals();
        assert_eq!((totals.overall.len(), totals.late), (3, 1));
        assert_eq!(totals.overall.proto_codes.get(500), 1);
        assert_eq!(totals.span, Some((10, 12)));
        // Active from the first start to the last end, whatever the arrival order.
        assert_eq!(totals.active_us, Some((10_000_000, 12_001_000)));
        assert!((totals.active_s() - 2.001).abs() < 1e-9);
    }

    #[test]
    fn engine_notes_and_lag_reach_the_second_and_the_totals() {
        let mut agg = Aggregator::new(1);
        agg.note_planned(50, 10);
        agg.note_sent(50, 9);
        agg.note_instances(50, 3);
        agg.note_instances(50, 7);
        agg.note_lag(50, 2000);
        agg.add_sample(&Sample {
            start_unix_us: 50_100_000,
            lag_us: 2000,
            tag: b"t#3".as_slice().into(),
            measured: Measured {
                interval_real_us: 5000,
                connect_us: 1000,
                send_us: 1000,
                latency_us: 2000,
                receive_us: 1000,
                interval_event_us: 5000,
                size_out: 10,
                size_in: 20,
                net_code: NetCode::OK,
                proto_code: 200,
                sends: 1,
            },
        });
        agg.advance(52);
        let second = agg.pop_ready().unwrap();
        assert_eq!(
            (second.ts, second.planned, second.sent, second.instances),
            (50, 10, 9, 7)
        );
        assert_eq!(second.lag.get(1000), Some(2000.0));
        let intended = second.intended.get(500).unwrap();
        assert!((intended - 7000.0).abs() <= 7.0, "{intended}");
        assert_eq!(second.cumulative.get(1000), Some(5000.0));
        assert!(second.tagged.contains_key("t"));
        let totals = agg.totals();
        assert_eq!(
            (totals.planned, totals.sent, totals.max_instances),
            (10, 9, 7)
        );
        assert_eq!(totals.intended.count, 1);
    }

    #[test]
    fn seconds_without_responses_but_with_notes_are_handed_out() {
        let mut agg = Aggregator::new(0);
        agg.note_instances(7, 100);
        agg.advance(9);
        let second = agg.pop_ready().unwrap();
        assert_eq!(
            (second.ts, second.overall.len(), second.instances),
            (7, 0, 100)
        );
    }

    proptest::proptest! {
        /// A second's overall group is its tag groups merged, and the run's lag is the
        /// seconds' lags merged: the same numbers as adding every response and lag directly.
        #[test]
        fn merged_groups_equal_groups_fed_directly(
            shots in proptest::collection::vec(
                (0u64..4, 0u64..3_000_000, 0u64..2_000_000, 0u16..3, 0u64..50_000),
                1..60,
            ),
        ) {
            // Buffered long enough that no response is late.
            let mut agg = Aggregator::new(10);
            let mut direct: BTreeMap<u64, GroupAcc> = BTreeMap::new();
            let mut lags = new_histogram();
            for &(second, offset_us, took_us, tag, lag_us) in &shots {
                let measured = Measured {
                    interval_real_us: took_us,
                    latency_us: took_us,
                    proto_code: 200 + tag,
                    ..Measured::default()
                };
                let sample = Sample {
                    start_unix_us: 1_000_000_000 + second * 1_000_000 + offset_us,
                    lag_us,
                    tag: format!("t{tag}").as_bytes().into(),
                    measured,
                };
                let start_second = sample.start_unix_us / 1_000_000;
                agg.note_lag(start_second, lag_us);
                record_histogram(&mut lags, lag_us);
                agg.add_sample(&sample);
                direct
                    .entry(sample.end_unix_us() / 1_000_000)
                    .or_insert_with(GroupAcc::new)
                    .add(&response(&sample.measured));
            }
            agg.finish();
            let seconds = drain(&mut agg);
            let totals = agg.totals();
            proptest::prop_assert_eq!(totals.late, 0);
            let mut from_seconds = 0;
            for second in &seconds {
                let expected = direct.get(&second.ts).map(GroupAcc::stats).unwrap_or_default();
                proptest::prop_assert_eq!(&second.overall, &expected);
                from_seconds += second.overall.len();
            }
            proptest::prop_assert_eq!(from_seconds, shots.len() as u64);
            let mut all = GroupAcc::new();
            for group in direct.values() {
                all.merge(group);
            }
            proptest::prop_assert_eq!(&totals.overall, &all.stats());
            proptest::prop_assert_eq!(totals.lag, Quantiles::of(&lags));
        }
    }

    #[test]
    fn retries_count_in_the_second_of_the_response_and_in_the_totals() {
        let mut agg = Aggregator::new(0);
        let shot = |start_unix_us: u64, sends: u8| Sample {
            start_unix_us,
            lag_us: 0,
            tag: b"".as_slice().into(),
            measured: Measured {
                interval_real_us: 1000,
                sends,
                ..Measured::default()
            },
        };
        agg.add_sample(&shot(10_000_000, 2));
        agg.add_sample(&shot(10_500_000, 1));
        agg.add_sample(&shot(11_000_000, 0));
        agg.add_sample(&shot(12_000_000, 2));
        // Second 10 is final by now: this retry counts in the totals only.
        agg.add_sample(&shot(10_900_000, 2));
        agg.finish();
        let seconds = drain(&mut agg);
        assert_eq!(
            seconds
                .iter()
                .map(|s| (s.ts, s.retries))
                .collect::<Vec<_>>(),
            vec![(10, 1), (11, 0), (12, 1)]
        );
        let totals = agg.totals();
        assert_eq!((totals.retries, totals.late), (3, 1));
    }
}
