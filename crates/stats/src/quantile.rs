//! Quantiles from an hdrhistogram, computed the way yandex-tank computes them.
//!
//! yandex-tank takes `numpy.percentile` of the exact values: the value at position
//! `q·(n−1)` of the sorted values, interpolated linearly between its two neighbours. tank
//! keeps an hdrhistogram instead of the values, finds the same two neighbours in it and
//! interpolates the same way, so small seconds (2 responses: the median is their mean) agree
//! exactly and large ones agree within the histogram's 0.1% precision. The extremes come
//! from the exact min and max.

use hdrhistogram::Histogram;

/// The quantiles tank reports, in per mille: 50 75 80 85 90 95 98 99 99.5 100 %.
pub const QUANTILES: [u16; 10] = [500, 750, 800, 850, 900, 950, 980, 990, 995, 1000];

/// A per-mille quantile as a percent for people and JSON (`995` → `99.5`).
pub fn percent(per_mille: u16) -> f64 {
    f64::from(per_mille) / 10.0
}

/// The [`QUANTILES`] of the values in `histogram`, µs, numpy-style (see the module docs);
/// `min` and `max` are the exact extremes. All zeros when the histogram is empty.
pub fn quantiles_of(histogram: &Histogram<u64>, min: u64, max: u64) -> [f64; QUANTILES.len()] {
    let mut out = [0.0; QUANTILES.len()];
    let n = histogram.len();
    if n == 0 {
        return out;
    }
    // For each quantile the two 0-based ranks around its position and the weight of the upper one.
    let mut wanted = [(0u64, 0u64, 0.0f64); QUANTILES.len()];
    for (slot, &q) in wanted.iter_mut().zip(&QUANTILES) {
        let position = f64::from(q) / 1000.0 * (n - 1) as f64;
        let low = position.floor();
        *slot = (low as u64, position.ceil() as u64, position - low);
    }
    // One pass over the recorded buckets resolves every rank (ranks are ascending).
    let mut ranks: Vec<u64> = wanted.iter().flat_map(|w| [w.0, w.1]).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let mut values = Vec::with_capacity(ranks.len());
    let mut seen = 0u64;
    let mut next = 0;
    for bucket in histogram.iter_recorded() {
        seen += bucket.count_at_value();
        let value = histogram
            .median_equivalent(bucket.value_iterated_to())
            .clamp(min, max);
        while next < ranks.len() && ranks[next] < seen {
            values.push(value);
            next += 1;
        }
    }
    // Ranks beyond the recorded count cannot happen (rank ≤ n − 1), but stay total anyway.
    values.resize(ranks.len(), max);
    let value_at = |rank: u64| {
        let at = ranks.binary_search(&rank).unwrap_or(0);
        values[at] as f64
    };
    for (slot, &(low, high, weight)) in out.iter_mut().zip(&wanted) {
        let (a, b) = (value_at(low), value_at(high));
        *slot = a + (b - a) * weight;
    }
    if let Some(last) = out.last_mut() {
        *last = max as f64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::new_histogram;
    use proptest::prelude::*;

    fn numpy_percentile(sorted: &[u64], q: f64) -> f64 {
        let position = q * (sorted.len() - 1) as f64;
        let (low, high) = (position.floor() as usize, position.ceil() as usize);
        let (a, b) = (sorted[low] as f64, sorted[high] as f64);
        a + (b - a) * (position - low as f64)
    }

    fn quantiles(values: &[u64]) -> [f64; QUANTILES.len()] {
        let mut h = new_histogram();
        for v in values {
            h.record(*v).unwrap();
        }
        let min = values.iter().copied().min().unwrap_or(0);
        let max = values.iter().copied().max().unwrap_or(0);
        quantiles_of(&h, min, max)
    }

    #[test]
    fn two_values_give_their_mean_as_median() {
        let q = quantiles(&[1000, 2000]);
        assert_eq!(q[0], 1500.0);
        assert_eq!(q[9], 2000.0);
        assert_eq!(q[8], 1995.0);
    }

    #[test]
    fn empty_is_all_zero() {
        assert_eq!(quantiles(&[]), [0.0; 10]);
    }

    proptest! {
        #[test]
        fn within_a_tenth_of_a_percent_of_numpy(mut values in proptest::collection::vec(1u64..30_000_000, 1..300)) {
            let q = quantiles(&values);
            values.sort_unstable();
            for (i, per_mille) in QUANTILES.iter().enumerate() {
                let exact = numpy_percentile(&values, f64::from(*per_mille) / 1000.0);
                prop_assert!((q[i] - exact).abs() <= exact * 0.001 + 0.5, "q{} {} vs {}", per_mille, q[i], exact);
            }
        }
    }
}
