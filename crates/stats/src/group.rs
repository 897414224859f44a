//! What one group of responses (one second, or the whole run; overall or one tag) amounts to:
//! the accumulator fed per response, and the finished, plain-data [`GroupStats`] it becomes.
//!
//! The accumulator keeps an hdrhistogram of `interval_real` (3 significant digits, so quantiles
//! are within 0.1% of the exact value), exact totals/min/max per phout column, the exact
//! yandex-tank histogram bins, and code counters. Its size does not depend on how many
//! responses it saw, which is what keeps a run's memory flat.

use hdrhistogram::Histogram;

use crate::columns::Field;
use crate::quantile::{quantiles_of, QUANTILES};
use crate::sample::Measured;

/// Upper edges (µs) of yandex-tank's response-time histogram bins: 0–9 ms by 1 ms, 10–90 ms
/// by 10, 100–950 ms by 50 (with 550 missing, as in the reference), 1–10 s by 0.5 s,
/// 11–15 s by 1 s, 20–60 s by 5 s. Bin `i` holds `[EDGES[i], EDGES[i+1])`; the last one also
/// holds its upper edge; values of 60 s and more are in no bin (numpy's `histogram` rules).
pub const BIN_EDGES_MS: [u64; 69] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 250, 300, 350,
    400, 450, 500, 600, 650, 700, 750, 800, 850, 900, 950, 1000, 1500, 2000, 2500, 3000, 3500,
    4000, 4500, 5000, 5500, 6000, 6500, 7000, 7500, 8000, 8500, 9000, 9500, 10000, 11000, 12000,
    13000, 14000, 15000, 20000, 25000, 30000, 35000, 40000, 45000, 50000, 55000, 60000,
];
const BINS: usize = BIN_EDGES_MS.len() - 1;

/// The bin of a response time, or `None` past the last edge.
fn bin_of(us: u64) -> Option<usize> {
    let last = BIN_EDGES_MS[BINS] * 1000;
    if us > last {
        return None;
    }
    if us == last {
        return Some(BINS - 1);
    }
    // The first edge greater than `us`, minus one.
    Some(BIN_EDGES_MS.partition_point(|edge| edge * 1000 <= us) - 1)
}

/// `{total, min, max, len}` of one column. `min` and `max` are 0 when `len` is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FieldStats {
    /// Sum of the values.
    pub total: u64,
    /// Smallest value.
    pub min: u64,
    /// Largest value.
    pub max: u64,
    /// How many values.
    pub len: u64,
}

impl FieldStats {
    fn add(&mut self, value: u64) {
        if self.len == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        self.total = self.total.saturating_add(value);
        self.len += 1;
    }

    fn merge(&mut self, other: &FieldStats) {
        if other.len == 0 {
            return;
        }
        if self.len == 0 || other.min < self.min {
            self.min = other.min;
        }
        self.max = self.max.max(other.max);
        self.total = self.total.saturating_add(other.total);
        self.len += other.len;
    }

    /// The mean, 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.len == 0 {
            0.0
        } else {
            self.total as f64 / self.len as f64
        }
    }
}

/// Counts per code (net or HTTP), sorted by code. A run sees few distinct codes, so a sorted
/// vector beats a map.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CodeCounts(Vec<(u16, u64)>);

impl CodeCounts {
    /// Count `n` more of `code`.
    pub fn add(&mut self, code: u16, n: u64) {
        match self.0.binary_search_by_key(&code, |(c, _)| *c) {
            Ok(at) => self.0[at].1 += n,
            Err(at) => self.0.insert(at, (code, n)),
        }
    }

    /// Add every count of `other`.
    pub fn merge(&mut self, other: &CodeCounts) {
        for &(code, n) in &other.0 {
            self.add(code, n);
        }
    }

    /// How many of `code`.
    pub fn get(&self, code: u16) -> u64 {
        self.0
            .binary_search_by_key(&code, |(c, _)| *c)
            .map_or(0, |at| self.0[at].1)
    }

    /// `(code, count)` pairs in code order.
    pub fn iter(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.0.iter().copied()
    }

    /// The sum of all counts.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(u16, u64)> for CodeCounts {
    fn from_iter<I: IntoIterator<Item = (u16, u64)>>(iter: I) -> Self {
        let mut counts = CodeCounts::default();
        for (code, n) in iter {
            counts.add(code, n);
        }
        counts
    }
}

/// A new empty histogram of µs values: 3 significant digits, growing as needed.
pub(crate) fn new_histogram() -> Histogram<u64> {
    // 3 significant digits is within the crate's limits, so this cannot fail.
    Histogram::new(3).expect("3 significant digits is a valid hdrhistogram precision")
}

/// Record `value`, growing the histogram as needed; a value beyond what any histogram can
/// track (near `u64::MAX`) is clamped.
pub(crate) fn record(histogram: &mut Histogram<u64>, value: u64) {
    if histogram.record(value).is_err() {
        histogram.saturating_record(value);
    }
}

/// Accumulates one group of responses.
#[derive(Debug, Clone)]
pub(crate) struct GroupAcc {
    times: Histogram<u64>,
    fields: [FieldStats; 8],
    bins: [u64; BINS],
    net: CodeCounts,
    proto: CodeCounts,
    /// Rows with a net error or an HTTP status of 400 and up: counted by row,
    /// as a row can have both (a scenario's failed assertion on a 500).
    errors: u64,
}

impl GroupAcc {
    pub(crate) fn new() -> GroupAcc {
        GroupAcc {
            times: new_histogram(),
            fields: [FieldStats::default(); 8],
            bins: [0; BINS],
            net: CodeCounts::default(),
            proto: CodeCounts::default(),
            errors: 0,
        }
    }

    #[inline]
    pub(crate) fn add(&mut self, measured: &Measured) {
        let interval_real = measured.interval_real_us;
        record(&mut self.times, interval_real);
        let values = measured.fields();
        for (stats, &value) in self.fields.iter_mut().zip(&values) {
            stats.add(value);
        }
        if let Some(bin) = bin_of(interval_real) {
            self.bins[bin] += 1;
        }
        self.net.add(measured.net_code.0, 1);
        self.proto.add(measured.proto_code, 1);
        self.errors += u64::from(measured.net_code.0 != 0 || measured.proto_code >= 400);
    }

    pub(crate) fn merge(&mut self, other: &GroupAcc) {
        // Both histograms auto-resize, so adding cannot run out of range.
        let _ = self.times.add(&other.times);
        for (mine, theirs) in self.fields.iter_mut().zip(&other.fields) {
            mine.merge(theirs);
        }
        for (mine, theirs) in self.bins.iter_mut().zip(&other.bins) {
            *mine += theirs;
        }
        self.net.merge(&other.net);
        self.proto.merge(&other.proto);
        self.errors += other.errors;
    }

    /// How many responses.
    pub(crate) fn len(&self) -> u64 {
        self.fields[0].len
    }

    /// The `interval_real` quantiles, with the exact extremes.
    pub(crate) fn quantiles_us(&self) -> [f64; QUANTILES.len()] {
        quantiles_of(&self.times, self.fields[0].min, self.fields[0].max)
    }

    /// The response times in up to `bins` log-spaced bins from the fastest response to the
    /// slowest, as (lower edge µs, upper edge µs, count): a picture of the data's own range,
    /// where yandex-tank's fixed bins put a fast service's every response in two or three.
    pub(crate) fn log_bins(&self, bins: usize) -> Vec<(u64, u64, u64)> {
        if self.times.is_empty() || bins == 0 {
            return Vec::new();
        }
        let low = self.fields[0].min.max(1) as f64;
        let high = (self.fields[0].max as f64).max(low + 1.0);
        let ratio = (high / low).ln();
        let edge = |i: usize| (low * (ratio * i as f64 / bins as f64).exp()).round() as u64;
        let mut counts = vec![0u64; bins];
        for v in self.times.iter_recorded() {
            // hdrhistogram reports a bucket by its highest equivalent value; clamp to the exact
            // extremes so the first and last responses land in the first and last bins.
            let value = (v.value_iterated_to() as f64).clamp(low, high);
            let at = ((value / low).ln() / ratio * bins as f64) as usize;
            counts[at.min(bins - 1)] += v.count_at_value();
        }
        (0..bins)
            .map(|i| (edge(i), edge(i + 1), counts[i]))
            .collect()
    }

    /// The response times in the fixed log buckets any seconds add up in.
    pub(crate) fn buckets(&self) -> crate::buckets::Buckets {
        crate::buckets::Buckets::of(&self.times)
    }

    pub(crate) fn stats(&self) -> GroupStats {
        GroupStats {
            fields: self.fields,
            quantiles_us: self.quantiles_us(),
            hist: self
                .bins
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| (BIN_EDGES_MS[i + 1] * 1000, *n))
                .collect(),
            net_codes: self.net.clone(),
            proto_codes: self.proto.clone(),
            errors: self.errors,
        }
    }
}

/// A finished group: plain numbers, cheap to keep, serialise and compare.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupStats {
    /// `{total, min, max, len}` per numeric column, in phout's order (index with [`Field`]).
    pub fields: [FieldStats; 8],
    /// `interval_real` quantiles (µs) at [`QUANTILES`], interpolated between neighbouring
    /// values as numpy's `percentile` does; 0 when empty.
    pub quantiles_us: [f64; QUANTILES.len()],
    /// Non-empty yandex-tank histogram bins: (upper edge µs, count).
    pub hist: Vec<(u64, u64)>,
    /// Net codes.
    pub net_codes: CodeCounts,
    /// HTTP codes.
    pub proto_codes: CodeCounts,
    /// Responses that failed: see [`Self::errors`].
    pub errors: u64,
}

impl GroupStats {
    /// One column's stats.
    pub fn field(&self, field: Field) -> &FieldStats {
        &self.fields[field as usize]
    }

    /// Number of responses.
    pub fn len(&self) -> u64 {
        self.fields[0].len
    }

    /// True when there were no responses.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Responses that failed: a non-zero net code, or an HTTP status of 400
    /// and up, or both (counted once).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// The quantile at `per_mille` (one of [`QUANTILES`]), µs.
    pub fn quantile_us(&self, per_mille: u16) -> Option<f64> {
        QUANTILES
            .iter()
            .position(|q| *q == per_mille)
            .map(|at| self.quantiles_us[at])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::NetCode;

    fn response(us: u64, net: u16, proto: u16) -> Measured {
        Measured::from_fields([us, 1, 2, us - 3, 0, us, 50, 100], NetCode(net), proto)
    }

    #[test]
    fn log_bins_span_the_data_and_keep_every_response() {
        let mut acc = GroupAcc::new();
        for us in [1000, 1100, 1200, 2000, 5000, 100_000] {
            acc.add(&Measured {
                interval_real_us: us,
                ..Measured::default()
            });
        }
        let bins = acc.log_bins(10);
        assert_eq!(bins.len(), 10);
        assert_eq!(bins[0].0, 1000);
        assert_eq!(bins[9].1, 100_000);
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 6);
        assert_eq!(
            bins[0].2, 3,
            "1.0, 1.1 and 1.2 ms are in the first of ten bins up to 100 ms"
        );
        assert_eq!(bins[9].2, 1);
        assert!(GroupAcc::new().log_bins(10).is_empty());
    }

    #[test]
    fn bins_follow_numpy_histogram_edges() {
        assert_eq!(bin_of(0), Some(0));
        assert_eq!(bin_of(999), Some(0));
        assert_eq!(bin_of(1000), Some(1));
        assert_eq!(bin_of(10_000), Some(10));
        assert_eq!(bin_of(59_999_999), Some(BINS - 1));
        assert_eq!(bin_of(60_000_000), Some(BINS - 1));
        assert_eq!(bin_of(60_000_001), None);
    }

    #[test]
    fn group_counts_fields_codes_and_bins() {
        let mut acc = GroupAcc::new();
        acc.add(&response(1500, 0, 200));
        acc.add(&response(2500, 0, 503));
        acc.add(&response(11_000_000, 110, 0));
        let stats = acc.stats();
        assert_eq!(stats.len(), 3);
        assert_eq!(
            *stats.field(Field::IntervalReal),
            FieldStats {
                total: 11_004_000,
                min: 1500,
                max: 11_000_000,
                len: 3
            }
        );
        assert_eq!(stats.field(Field::SizeIn).total, 300);
        assert_eq!(stats.hist, vec![(2000, 1), (3000, 1), (12_000_000, 1)]);
        assert_eq!(stats.net_codes.get(110), 1);
        assert_eq!(
            stats.proto_codes.iter().collect::<Vec<_>>(),
            vec![(0, 1), (200, 1), (503, 1)]
        );
        assert_eq!(stats.errors(), 2);
        assert_eq!(stats.quantile_us(1000), Some(11_000_000.0));
        // A row failing both ways (a scenario's assertion on a 500: 901 and 500) is one error.
        acc.add(&response(900, 901, 500));
        assert_eq!(acc.stats().errors(), 3);
        // 2500 µs is kept to 3 significant digits: within 0.1%.
        let median = stats.quantile_us(500).unwrap();
        assert!((median - 2500.0).abs() <= 2.5, "{median}");
    }

    #[test]
    fn merging_equals_adding_everything_to_one() {
        let mut a = GroupAcc::new();
        let mut b = GroupAcc::new();
        let mut all = GroupAcc::new();
        for (i, us) in [100u64, 5000, 70_000, 300, 42].into_iter().enumerate() {
            let r = response(us + 3, (i % 2) as u16 * 104, 200);
            if i % 2 == 0 { &mut a } else { &mut b }.add(&r);
            all.add(&r);
        }
        a.merge(&b);
        assert_eq!(a.stats(), all.stats());
    }
}
