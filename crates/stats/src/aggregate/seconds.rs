//! What the aggregator hands out: finished seconds and the run's totals, as
//! plain data (cheap to keep, serialise and compare).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::group::GroupStats;
use crate::quantile::{quantiles_of, QUANTILES};
#[cfg(doc)]
use crate::sample::Measured;

/// Quantiles of one distribution, µs, at [`QUANTILES`]; count 0 means "nothing measured".
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Quantiles {
    /// How many values.
    pub count: u64,
    /// The values at [`QUANTILES`].
    pub values_us: [f64; QUANTILES.len()],
}

impl Quantiles {
    pub(crate) fn of(histogram: &Histogram<u64>) -> Quantiles {
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
    /// Per queue, in config order, named by its section; empty unless the run
    /// has more than one queue (see [`super::Aggregator::with_queues`]).
    pub queues: Vec<(String, GroupStats)>,
    /// The measuring queues (`measure = 1`), apart from [`SecondStats::queues`]
    /// (see [`super::Aggregator::with_measuring`]); in the overall group too.
    pub measuring: Vec<(String, GroupStats)>,
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
    /// Per queue, as in [`SecondStats::queues`].
    pub queues: Vec<(String, GroupStats)>,
    /// The measuring queues, as in [`SecondStats::measuring`].
    pub measuring: Vec<(String, GroupStats)>,
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
    /// All response times in log-spaced bins over their own range: (from µs, to µs, count).
    pub spread: Vec<(u64, u64, u64)>,
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
