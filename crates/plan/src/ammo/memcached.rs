//! The `[memcached]` workload: memcached requests generated from mcperf's
//! model instead of read from a file.
//!
//! Record `i`'s key is `i` zero-padded to a length drawn from `keysize` by a
//! hash of `i` (as mcperf's key generator does), so every run and the preload
//! agree on the keys. Each request is a set with probability `update` (its
//! value's size drawn from `valuesize`), else a multiget of `getq_size` keys
//! with probability `getq_freq`%, else a get; `keyorder` picks the records.
//! Everything is drawn from one generator seeded by `seed`: the same seed and
//! tank build give the same requests. One pass is `records` requests.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tank_config::memcached::{MAX_KEY, MAX_VALUE};
use tank_config::{Distribution, KeyOrder, MemcachedConfig};

use super::passes::ReadState;
use super::Slot;
use crate::error::Result;
use crate::splitmix::{mix, unit};

/// The tags of generated requests.
pub(crate) const TAG_GET: &[u8] = b"get";
/// A multiget's tag.
pub(crate) const TAG_MULTIGET: &[u8] = b"multiget";
/// A set's tag.
pub(crate) const TAG_SET: &[u8] = b"set";

/// One line about a workload, with its seed, so a run can be repeated.
pub fn describe(config: &MemcachedConfig) -> String {
    format!(
        "[memcached] workload: {} records, update {}, multiget {}% of {} keys, seed {}{}",
        config.records,
        config.update,
        config.getq_freq,
        config.getq_size,
        config.seed,
        if config.seed_chosen {
            " (chosen by tank: set `seed` to repeat it)"
        } else {
            ""
        }
    )
}

/// A distribution ready to draw from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sampler(Distribution);

/// Facebook ETC's key sizes (mcperf's `fb_key`).
const FB_KEY: Distribution = Distribution::Gev {
    loc: 30.7984,
    scale: 8.20449,
    shape: 0.078688,
};

/// The tail of Facebook ETC's value sizes (mcperf's `fb_value`).
const FB_VALUE_TAIL: Distribution = Distribution::Pareto {
    loc: 15.0,
    scale: 214.476,
    shape: 0.348238,
};

/// The head of `fb_value`: (probability, size), as mcperf has it; the rest
/// of the mass is the tail's.
const FB_VALUE_HEAD: [(f64, f64); 15] = [
    (0.00536, 0.0),
    (0.00047, 1.0),
    (0.17820, 2.0),
    (0.09239, 3.0),
    (0.00018, 4.0),
    (0.02740, 5.0),
    (0.00065, 6.0),
    (0.00606, 7.0),
    (0.00023, 8.0),
    (0.00837, 9.0),
    (0.00837, 10.0),
    (0.08989, 11.0),
    (0.00092, 12.0),
    (0.00326, 13.0),
    (0.01980, 14.0),
];

impl Sampler {
    /// A sampler of `distribution`.
    pub(crate) fn new(distribution: Distribution) -> Self {
        Sampler(distribution)
    }

    /// The value at `u` in (0, 1] (the inverse CDF); `v`, also in (0, 1],
    /// is a second uniform for the normal distribution (Box–Muller) and for
    /// `fb_value`'s choice between its head and its tail.
    pub(crate) fn at(&self, u: f64, v: f64) -> f64 {
        match self.0 {
            Distribution::Fixed(value) => value,
            Distribution::Uniform { max } => (1.0 - u) * max,
            Distribution::Normal { mean, sd } => {
                mean + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
            }
            Distribution::Exponential { lambda } => -u.ln() / lambda,
            Distribution::Pareto { loc, scale, shape } => {
                if shape == 0.0 {
                    loc - scale * u.ln()
                } else {
                    loc + scale * (u.powf(-shape) - 1.0) / shape
                }
            }
            Distribution::Gev { loc, scale, shape } => {
                let t = -u.ln();
                if shape == 0.0 {
                    loc - scale * t.ln()
                } else {
                    loc + scale * (t.powf(-shape) - 1.0) / shape
                }
            }
            Distribution::FbKey => Sampler(FB_KEY).at(u, v),
            Distribution::FbValue => {
                let mut sum = 0.0;
                for (p, size) in FB_VALUE_HEAD {
                    sum += p;
                    if v <= sum {
                        return size;
                    }
                }
                Sampler(FB_VALUE_TAIL).at(u, v)
            }
        }
    }

    /// One draw.
    pub(crate) fn sample(&self, rng: &mut impl Rng) -> f64 {
        self.at(unit(rng.random::<u64>()), unit(rng.random::<u64>()))
    }
}

/// A size drawn as a float, rounded and kept within `low..=high`.
fn size(drawn: f64, low: u64, high: u64) -> u64 {
    if drawn.is_nan() {
        return low;
    }
    (drawn.round().max(0.0) as u64).clamp(low, high)
}

/// The keys of a workload: record `i` to its text.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    keysize: Sampler,
    /// The digits of the largest record: no key is shorter.
    digits: u64,
}

impl Keys {
    /// The keys of `config`'s records.
    pub(crate) fn new(config: &MemcachedConfig) -> Self {
        let largest = config.records.saturating_sub(1);
        Keys {
            keysize: Sampler::new(config.keysize),
            digits: largest.checked_ilog10().map_or(1, |d| u64::from(d) + 1),
        }
    }

    /// Append record `i`'s key to `out`.
    pub(crate) fn write(&self, i: u64, out: &mut Vec<u8>) {
        let drawn = self.keysize.at(unit(mix(i)), unit(mix(!i)));
        let len = size(drawn, self.digits, MAX_KEY) as usize;
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(i).as_bytes();
        out.extend(std::iter::repeat_n(b'0', len.saturating_sub(digits.len())));
        out.extend_from_slice(digits);
    }
}

/// Append `set <key> 0 0 <size>\r\n<value>\r\n` for record `record`.
fn write_set(keys: &Keys, record: u64, value_size: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(b"set ");
    keys.write(record, out);
    out.extend_from_slice(b" 0 0 ");
    out.extend_from_slice(itoa::Buffer::new().format(value_size).as_bytes());
    out.extend_from_slice(b"\r\n");
    // A recognizable filler: the value's bytes carry no meaning.
    out.extend((0..value_size).map(|i| b'a' + (i % 26) as u8));
    out.extend_from_slice(b"\r\n");
}

/// Generates the workload's requests, pass after pass.
pub(crate) struct WorkloadReader {
    config: MemcachedConfig,
    keys: Keys,
    valuesize: Sampler,
    keyorder: Option<Sampler>,
    rng: StdRng,
    /// Requests made in this pass.
    made: u64,
    /// The next record under `keyorder = sequential`.
    next_record: u64,
    done: bool,
}

impl WorkloadReader {
    /// The workload of `config`, from its seed.
    pub(crate) fn new(config: &MemcachedConfig) -> Self {
        WorkloadReader {
            config: config.clone(),
            keys: Keys::new(config),
            valuesize: Sampler::new(config.valuesize),
            keyorder: match config.keyorder {
                KeyOrder::Distribution(d) => Some(Sampler::new(d)),
                KeyOrder::Random | KeyOrder::Sequential => None,
            },
            rng: StdRng::seed_from_u64(config.seed),
            made: 0,
            next_record: 0,
            done: false,
        }
    }

    fn pick(&mut self) -> u64 {
        let records = self.config.records;
        match (self.config.keyorder, &self.keyorder) {
            (KeyOrder::Sequential, _) => {
                let record = self.next_record;
                self.next_record = (record + 1) % records;
                record
            }
            (_, Some(sampler)) => {
                size(sampler.sample(&mut self.rng).floor(), 0, u64::MAX) % records
            }
            _ => self.rng.random_range(0..records),
        }
    }

    /// Advance to the next request; `false` when reading has ended.
    pub(crate) fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        if self.made == self.config.records {
            self.made = 0;
            if !st.passes.finish(true, &"[memcached]")? {
                self.done = true;
                return Ok(false);
            }
        }
        self.made += 1;
        let out = &mut slot.missile;
        out.clear();
        if self.rng.random::<f64>() < self.config.update {
            let record = self.pick();
            let value = size(self.valuesize.sample(&mut self.rng), 0, MAX_VALUE);
            write_set(&self.keys, record, value, &mut slot.missile);
            slot.set_tag(Some(TAG_SET));
        } else if self.rng.random::<f64>() * 100.0 < self.config.getq_freq {
            slot.missile.extend_from_slice(b"get");
            for _ in 0..self.config.getq_size {
                let record = self.pick();
                slot.missile.push(b' ');
                self.keys.write(record, &mut slot.missile);
            }
            slot.missile.extend_from_slice(b"\r\n");
            slot.set_tag(Some(TAG_MULTIGET));
        } else {
            let record = self.pick();
            slot.missile.extend_from_slice(b"get ");
            self.keys.write(record, &mut slot.missile);
            slot.missile.extend_from_slice(b"\r\n");
            slot.set_tag(Some(TAG_GET));
        }
        Ok(true)
    }
}

/// The preload: a set of every record, in order, its value's size drawn from
/// `valuesize` (by a generator of its own, from the same seed).
pub struct Preload {
    keys: Keys,
    valuesize: Sampler,
    rng: StdRng,
    records: u64,
    next: u64,
}

impl Preload {
    /// The preload of `config`'s records.
    pub fn new(config: &MemcachedConfig) -> Self {
        Preload {
            keys: Keys::new(config),
            valuesize: Sampler::new(config.valuesize),
            rng: StdRng::seed_from_u64(mix(config.seed)),
            records: config.records,
            next: 0,
        }
    }

    /// How many sets the preload makes.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Append the next record's set to `out`; `false` once every record is set.
    pub fn next_set(&mut self, out: &mut Vec<u8>) -> bool {
        if self.next == self.records {
            return false;
        }
        let value = size(self.valuesize.sample(&mut self.rng), 0, MAX_VALUE);
        write_set(&self.keys, self.next, value, out);
        self.next += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ammo::Passes;

    const N: usize = 100_000;
    /// The Kolmogorov–Smirnov statistic's critical value at α = 0.001, for N samples.
    const KS_ONE: f64 = 1.95 / 316.227_766;

    fn draws(distribution: Distribution, seed: u64) -> Vec<f64> {
        let sampler = Sampler::new(distribution);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut xs: Vec<f64> = (0..N).map(|_| sampler.sample(&mut rng)).collect();
        xs.sort_by(f64::total_cmp);
        xs
    }

    use crate::ks::statistic as ks;

    fn mean(xs: &[f64]) -> f64 {
        xs.iter().sum::<f64>() / xs.len() as f64
    }

    fn gpareto_cdf(x: f64, loc: f64, scale: f64, shape: f64) -> f64 {
        let z = ((x - loc) / scale).max(0.0);
        1.0 - (1.0 + shape * z).powf(-1.0 / shape)
    }

    fn gev_cdf(x: f64, loc: f64, scale: f64, shape: f64) -> f64 {
        let t = (1.0 + shape * (x - loc) / scale).max(0.0);
        (-t.powf(-1.0 / shape)).exp()
    }

    #[test]
    fn continuous_distributions_have_their_shape_and_mean() {
        let uniform = draws(Distribution::Uniform { max: 500.0 }, 1);
        assert!(ks(&uniform, |x| x / 500.0) < KS_ONE);
        assert!((mean(&uniform) - 250.0).abs() < 2.5);

        let exponential = draws(Distribution::Exponential { lambda: 0.01 }, 2);
        assert!(ks(&exponential, |x| 1.0 - (-0.01 * x).exp()) < KS_ONE);
        assert!((mean(&exponential) - 100.0).abs() < 1.5);

        let (loc, scale, shape) = (0.0, 16.0292, 0.154971);
        let pareto = draws(Distribution::Pareto { loc, scale, shape }, 3);
        assert!(ks(&pareto, |x| gpareto_cdf(x, loc, scale, shape)) < KS_ONE);
        // The mean of a generalized Pareto: loc + scale / (1 - shape).
        assert!((mean(&pareto) - scale / (1.0 - shape)).abs() < 0.5);

        let fb_key = draws(Distribution::FbKey, 4);
        assert!(ks(&fb_key, |x| gev_cdf(x, 30.7984, 8.20449, 0.078688)) < KS_ONE);
        // Facebook ETC's keys are 30-odd bytes on average.
        assert!((35.0..37.0).contains(&mean(&fb_key)), "{}", mean(&fb_key));
    }

    #[test]
    fn the_normal_distribution_matches_rand_distrs() {
        use rand_distr::Distribution as _;
        let ours = draws(
            Distribution::Normal {
                mean: 200.0,
                sd: 20.0,
            },
            5,
        );
        let normal = rand_distr::Normal::new(200.0, 20.0).unwrap();
        let mut rng = StdRng::seed_from_u64(6);
        let mut theirs: Vec<f64> = (0..N).map(|_| normal.sample(&mut rng)).collect();
        theirs.sort_by(f64::total_cmp);
        // Two-sample KS: the largest distance between the two empirical CDFs.
        let distance = ours
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let j = theirs.partition_point(|y| y <= x);
                ((i + 1) as f64 / N as f64 - j as f64 / N as f64).abs()
            })
            .fold(0.0, f64::max);
        assert!(distance < KS_ONE * std::f64::consts::SQRT_2, "{distance}");
        assert!((mean(&ours) - 200.0).abs() < 0.3);
    }

    #[test]
    fn fb_value_has_its_head_and_its_tail() {
        let values = draws(Distribution::FbValue, 7);
        let share = |size: f64| values.iter().filter(|v| **v == size).count() as f64 / N as f64;
        assert!((share(2.0) - 0.1782).abs() < 0.005);
        assert!((share(11.0) - 0.08989).abs() < 0.005);
        let head: f64 = FB_VALUE_HEAD.iter().map(|(p, _)| p).sum();
        let tail: Vec<f64> = values.iter().copied().filter(|v| *v >= 15.0).collect();
        assert!((tail.len() as f64 / N as f64 - (1.0 - head)).abs() < 0.01);
        assert!(
            ks(&tail, |x| gpareto_cdf(x, 15.0, 214.476, 0.348238))
                < 1.95 / (tail.len() as f64).sqrt()
        );
    }

    fn config(text: &[(&str, &str)]) -> MemcachedConfig {
        let mut config = MemcachedConfig {
            seed: 42,
            ..MemcachedConfig::default()
        };
        for (key, value) in text {
            match *key {
                "records" => config.records = value.parse().unwrap(),
                "keysize" => config.keysize = Distribution::parse(value).unwrap(),
                "valuesize" => config.valuesize = Distribution::parse(value).unwrap(),
                "update" => config.update = value.parse().unwrap(),
                "keyorder" => config.keyorder = KeyOrder::parse(value).unwrap(),
                "getq_size" => config.getq_size = value.parse().unwrap(),
                "getq_freq" => config.getq_freq = value.parse().unwrap(),
                _ => unreachable!(),
            }
        }
        config
    }

    fn requests(config: &MemcachedConfig, passes: i64) -> Vec<(String, String)> {
        let mut reader = WorkloadReader::new(config);
        let mut st = ReadState {
            passes: Passes::new(Some(passes)),
            written: 0,
        };
        let mut slot = Slot::default();
        let mut out = Vec::new();
        while reader.advance(&mut st, &mut slot).unwrap() {
            out.push((
                String::from_utf8(slot.marker().to_vec()).unwrap(),
                String::from_utf8(slot.missile.clone()).unwrap(),
            ));
        }
        out
    }

    #[test]
    fn requests_mix_gets_sets_and_multigets_as_asked() {
        let config = config(&[
            ("records", "20000"),
            ("update", "0.25"),
            ("getq_freq", "10"),
            ("getq_size", "4"),
            ("keysize", "fixed:12"),
            ("valuesize", "fixed:100"),
        ]);
        let made = requests(&config, 1);
        assert_eq!(made.len(), 20_000, "a pass is `records` requests");
        let count = |tag: &str| made.iter().filter(|(t, _)| t == tag).count() as f64 / 20_000.0;
        assert!((count("set") - 0.25).abs() < 0.02);
        assert!((count("multiget") - 0.075).abs() < 0.01);
        for (tag, request) in &made {
            match tag.as_str() {
                "set" => {
                    let (head, value) = request.split_once("\r\n").unwrap();
                    let words: Vec<&str> = head.split(' ').collect();
                    assert_eq!((words[0], words[1].len(), words[4]), ("set", 12, "100"));
                    assert_eq!(value.len(), 102);
                }
                "multiget" => assert_eq!(request.split(' ').count(), 5),
                _ => assert!(request.starts_with("get ") && request.len() == 4 + 12 + 2),
            }
        }
        assert_eq!(made, requests(&config, 1), "the seed fixes the requests");
    }

    #[test]
    fn sequential_keys_and_the_preload_cover_every_record() {
        let config = config(&[
            ("records", "100"),
            ("keyorder", "sequential"),
            ("keysize", "2"),
        ]);
        let made = requests(&config, 2);
        assert_eq!(made.len(), 200);
        assert_eq!(made[0].1, "get 00\r\n");
        assert_eq!(made[99].1, "get 99\r\n");
        assert_eq!(made[100].1, "get 00\r\n");
        let mut preload = Preload::new(&config);
        let mut sets = Vec::new();
        while preload.next_set(&mut sets) {}
        let text = String::from_utf8(sets).unwrap();
        assert_eq!(text.matches("set ").count(), 100);
        assert!(text.starts_with("set 00 0 0 200\r\n"));
    }

    #[test]
    fn key_sizes_follow_the_distribution_but_fit_memcached() {
        let keys = Keys::new(&config(&[
            ("records", "1000"),
            ("keysize", "normal:400,300"),
        ]));
        for i in 0..1000 {
            let mut key = Vec::new();
            keys.write(i, &mut key);
            assert!((3..=250).contains(&key.len()), "{}", key.len());
        }
    }
}
