//! A second's response times in fixed log-spaced buckets, for quantiles over
//! any range of seconds picked after the run.
//!
//! Quantiles do not add up: the p99 of a minute is not the mean of its
//! seconds' p99s. Keeping every second's hdrhistogram would cost kilobytes a
//! second; these buckets keep its shape in a few hundred bytes: [`PER_DECADE`]
//! buckets to each factor of ten, on one scale for every second and every run,
//! so any set of seconds adds up bucket by bucket and a quantile read from the
//! sum is within half a bucket (about 1.2%) of the exact one. This is how
//! Overload answered "the quantiles of the steady part" too: from bins.

use hdrhistogram::Histogram;

/// Buckets to a decade: bucket `k` holds times from 10^(k/100) µs up to the next.
pub const PER_DECADE: u32 = 100;

/// The non-empty buckets of one second, in bucket order: (bucket, count).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Buckets(Vec<(u32, u64)>);

impl Buckets {
    /// The bucket of a time of `us` µs (0 and 1 µs are in bucket 0).
    pub fn index_of(us: u64) -> u32 {
        if us <= 1 {
            return 0;
        }
        ((us as f64).log10() * f64::from(PER_DECADE)).floor() as u32
    }

    /// The lower edge of bucket `index`, µs.
    pub fn lower_us(index: u32) -> f64 {
        10f64.powf(f64::from(index) / f64::from(PER_DECADE))
    }

    /// The buckets of everything `histogram` recorded.
    pub(crate) fn of(histogram: &Histogram<u64>) -> Buckets {
        let mut out: Vec<(u32, u64)> = Vec::new();
        for value in histogram.iter_recorded() {
            let index = Buckets::index_of(histogram.median_equivalent(value.value_iterated_to()));
            match out.last_mut() {
                Some((last, count)) if *last == index => *count += value.count_at_value(),
                _ => out.push((index, value.count_at_value())),
            }
        }
        Buckets(out)
    }

    /// (bucket, count) pairs in bucket order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.0.iter().copied()
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many times in all.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    /// The compact form reports keep: `[first bucket, its count, gap to the
    /// next bucket, its count, ...]` (a gap of 1 is the next bucket).
    pub fn to_gaps(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.0.len() * 2);
        let mut previous = 0;
        for (index, count) in self.iter() {
            out.push(u64::from(index - previous));
            out.push(count);
            previous = index;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::{new_histogram, record};
    use proptest::prelude::*;

    #[test]
    fn buckets_are_a_hundredth_of_a_decade() {
        assert_eq!(Buckets::index_of(0), 0);
        assert_eq!(Buckets::index_of(1), 0);
        assert_eq!(Buckets::index_of(10), 100);
        assert_eq!(Buckets::index_of(11), 104);
        assert_eq!(Buckets::index_of(1_000_000), 600);
        assert!((Buckets::lower_us(300) - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn the_gaps_form_lists_each_bucket_by_its_distance_from_the_last() {
        let mut h = new_histogram();
        for us in [10, 10, 11, 1000] {
            record(&mut h, us);
        }
        let buckets = Buckets::of(&h);
        assert_eq!(
            buckets.iter().collect::<Vec<_>>(),
            [(100, 2), (104, 1), (300, 1)]
        );
        assert_eq!(buckets.to_gaps(), [100, 2, 4, 1, 196, 1]);
    }

    proptest! {
        /// Every time is counted once, in the bucket whose edges hold it
        /// (within the histogram's 0.1%).
        #[test]
        fn every_time_lands_in_its_bucket(times in prop::collection::vec(0u64..100_000_000, 1..200)) {
            let mut h = new_histogram();
            for &us in &times {
                record(&mut h, us);
            }
            let buckets = Buckets::of(&h);
            prop_assert_eq!(buckets.total(), times.len() as u64);
            let pairs: Vec<(u32, u64)> = buckets.iter().collect();
            prop_assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0));
            for &us in &times {
                let index = Buckets::index_of(us);
                prop_assert!(
                    pairs.iter().any(|(k, _)| k.abs_diff(index) <= 1),
                    "{} µs: bucket {} not among {:?}", us, index, pairs
                );
            }
        }
    }
}
