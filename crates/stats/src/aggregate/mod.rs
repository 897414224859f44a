//! Per-second aggregation, as yandex-tank's aggregator does it, with bounded memory.
//!
//! Responses are counted in the second they **ended** (`int(send_ts + interval_real)`),
//! overall, per tag (the tag cut at its last `#`) and, in a run of several queues, per queue
//! ([`Aggregator::with_queues`]). A second stays open while responses for
//! it may still come: it is finalised once the clock (or, reading a phout, the latest send second
//! seen) is `buffered_seconds` past its end. Finalising turns it into a plain-data
//! [`SecondStats`] and merges its histograms into the run's totals, so an open second costs a
//! few histograms and a finished one nothing: memory does not grow with the run.
//!
//! The engine also tells the aggregator what a phout cannot: shots planned and sent per
//! second, active instances, and each shot's lag behind its planned time (see the `note_*`
//! methods). With the lag of each response the aggregator also keeps the latency from the
//! intended start (`lag + interval_real`, wrk2's view of coordinated omission).

mod groups;
mod seconds;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, VecDeque};

use hdrhistogram::Histogram;

use crate::group::{new_histogram, record, GroupAcc, GroupStats};
use crate::phout::Record;
use crate::sample::{case_of, Measured, QueueIndex, Sample};
use groups::Groups;
pub use seconds::{Quantiles, SecondStats, TotalStats};

/// Bins of [`TotalStats::spread`]: enough for a shape, few enough to label.
const SPREAD_BINS: usize = 40;

/// A queue's stats, named by its section.
type Named = (String, GroupStats);

/// `buffered_seconds` when the config does not say (yandex-tank's default).
pub const DEFAULT_BUFFERED_SECONDS: u32 = 2;

/// Everything one open second collects. Its overall group is its tag groups merged when
/// it is finalised: one group to add each response to instead of two.
#[derive(Debug)]
struct Open {
    groups: Groups,
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
            groups: Groups::default(),
            planned: 0,
            sent: 0,
            instances: 0,
            lag: new_histogram(),
            intended: new_histogram(),
            retries: 0,
        }
    }

    fn add(&mut self, row: &Row<'_>) {
        self.groups.add(row.case, row.queue, row.measured);
        if let Some(lag) = row.lag_us {
            record(
                &mut self.intended,
                lag.saturating_add(row.measured.interval_real_us),
            );
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
    total_groups: Groups,
    /// The queues' names, when responses are counted per queue (more than one queue).
    queue_names: Vec<String>,
    /// Which queues (by index) are measuring queues (`measure = 1`), reported apart.
    measuring: Vec<bool>,
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
            total_groups: Groups::default(),
            queue_names: Vec::new(),
            measuring: Vec::new(),
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

    /// Count responses per queue too, the queues named (in index order) by
    /// `names`. With one queue or none, the queue group would repeat the overall
    /// one: nothing is counted per queue.
    pub fn with_queues(mut self, names: Vec<String>) -> Aggregator {
        if names.len() > 1 {
            self.queue_names = names;
        }
        self
    }

    /// Count responses per queue, the queues named by `names`, and report the
    /// queues marked in `measuring` (`measure = 1`: low-rate open-loop measuring
    /// queues) apart from the load queues, in [`TotalStats::measuring`] and
    /// [`SecondStats::measuring`]. A measuring queue is counted on its own even
    /// when it is the only queue.
    pub fn with_measuring(mut self, names: Vec<String>, measuring: Vec<bool>) -> Aggregator {
        if measuring.iter().any(|m| *m) {
            self.queue_names = names;
            self.measuring = measuring;
            self
        } else {
            self.with_queues(names)
        }
    }

    /// Per-queue stats split into (load queues, measuring queues).
    fn split_measuring(&self, all: Vec<Named>) -> (Vec<Named>, Vec<Named>) {
        let (mut queues, mut measuring) = (Vec::new(), Vec::new());
        for (index, group) in all.into_iter().enumerate() {
            if self.measuring.get(index).copied().unwrap_or(false) {
                measuring.push(group);
            } else {
                queues.push(group);
            }
        }
        (queues, measuring)
    }

    /// Count one measured shot (the engine's path). Its lag also goes into the latency from
    /// the intended start, and its retries count in the second it ended.
    pub fn add_sample(&mut self, sample: &Sample) {
        let second = sample.end_unix_us() / 1_000_000;
        self.extend_active(sample.start_unix_us, sample.end_unix_us());
        let sent = sample.start_unix_us / 1_000_000;
        let retries = sample.measured.retries();
        if retries > 0 {
            self.retries += retries;
            if let Some(open) = self.open_second(second) {
                open.retries += retries;
            }
        }
        let row = Row {
            case: case_of(&sample.tag),
            queue: (!self.queue_names.is_empty()).then_some(sample.measured.queue),
            measured: &sample.measured,
            lag_us: Some(sample.lag_us),
        };
        self.add(second, sent, &row);
    }

    /// Count one phout line (the `tank report` path; a phout has no lag).
    pub fn add_record(&mut self, record: &Record<'_>) {
        let start_us = record.send_ms.saturating_mul(1000);
        self.extend_active(
            start_us,
            start_us.saturating_add(record.measured.interval_real_us),
        );
        let sent = record.send_ms / 1000;
        let row = Row {
            case: record.case(),
            queue: None,
            measured: &record.measured,
            lag_us: None,
        };
        self.add(record.receive_second(), sent, &row);
    }

    /// Count a response that ended in `second` and was sent in `sent`.
    ///
    /// The send second, not the response's, moves the clock: whether a log is in send order
    /// (pandora) or completion order (phantom), no response still to come was sent before
    /// it, so none can end before it; one slow response (a timeout ending 11 s later) must
    /// not finalise the seconds whose responses are still arriving.
    fn add(&mut self, second: u64, sent: u64, row: &Row<'_>) {
        self.extend_span(second);
        if self.is_final(second) {
            self.late += 1;
            self.total_overall.add(row.measured);
            self.total_groups.add(row.case, row.queue, row.measured);
            if let Some(lag) = row.lag_us {
                record(
                    &mut self.total_intended,
                    lag.saturating_add(row.measured.interval_real_us),
                );
            }
        } else {
            self.open.entry(second).or_insert_with(Open::new).add(row);
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
        let (queues, measuring) =
            self.split_measuring(self.total_groups.queue_stats(&self.queue_names));
        TotalStats {
            span: self.span,
            active_us: self.active_us,
            overall: self.total_overall.stats(),
            tagged: self.total_groups.tag_stats(),
            queues,
            measuring,
            planned: self.planned,
            sent: self.sent,
            max_instances: self.max_instances,
            lag: Quantiles::of(&self.total_lag),
            intended: Quantiles::of(&self.total_intended),
            late: self.late,
            retries: self.retries,
            spread: self.total_overall.log_bins(SPREAD_BINS),
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
        let overall = open.groups.overall();
        self.total_overall.merge(&overall);
        self.total_groups.merge(&open.groups);
        // They auto-resize: adding cannot fail.
        let _ = self.total_intended.add(&open.intended);
        let _ = self.total_lag.add(&open.lag);
        let (queues, measuring) = self.split_measuring(open.groups.queue_stats(&self.queue_names));
        SecondStats {
            ts,
            overall: overall.stats(),
            tagged: open.groups.tag_stats(),
            queues,
            measuring,
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

/// One response as the groups count it.
struct Row<'a> {
    /// Its tag cut at the last `#`.
    case: &'a [u8],
    /// Its queue, when responses are counted per queue.
    queue: Option<QueueIndex>,
    measured: &'a Measured,
    /// How late it started, when known (a phout does not say).
    lag_us: Option<u64>,
}
