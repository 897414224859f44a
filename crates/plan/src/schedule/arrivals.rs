//! Drawn arrivals (`arrivals = poisson | pareto(…) | gev(…) | normal(…) | fb_ia`):
//! gaps between shots drawn from a distribution, rescaled so that the rate
//! follows the schedule.
//!
//! # Operational time
//! Phantom's stepper puts shot `n` of a step at Λ⁻¹(n), where Λ(t) is the
//! step's cumulative planned count (`rps·t` for `const`, `from·t + slope·t²/2`
//! for `line`): unit gaps in "operational time", mapped through Λ⁻¹. Drawn
//! arrivals keep that map and replace the unit gaps by drawn ones whose mean is
//! 1, so the rate profile within a step (flat or a ramp) is the schedule's.
//!
//! # Blocks: exact counts and closed form
//! The shots of a step are cut into blocks of [`BLOCK`] (the last one shorter).
//! A block's gaps are drawn, then rescaled to add up to exactly the block's
//! size, so shot `n` at a block boundary sits where the uniform stepper puts it.
//! That gives three things the rest of tank relies on:
//! - each step fires exactly the uniform stepper's count, so the plan's length,
//!   `ammo_limit`, sharding and the stpd's shot count do not depend on the draws;
//! - the mean rate is the schedule's over every block (0.1 s at 10,000 rps);
//! - shot `i`'s time is closed form: one block's draws, from a generator keyed
//!   by (seed, step, block), so [`crate::PlannedCount`] counts the shots due in
//!   any second by the same binary search as for uniform shots, and a walk in
//!   order (the stepper's) costs two draws a shot.
//!
//! The price: within a block the gaps are the distribution's (rescaled by the
//! block's own mean, which at 1024 draws is within a few percent of the
//! distribution's), but the count in a window longer than a block varies less
//! than a true renewal process's would. Bursts and lulls at the scale of the
//! gaps, which is what queues in the target feel, are the distribution's.
//!
//! # Draws
//! The generator is SplitMix64 (`crate::splitmix`, as the `[memcached]`
//! workload's keys use it), and each gap is the distribution's inverse CDF at that
//! uniform ([`Sampler::at`], the workload's formulas): both are written out
//! here rather than taken from `rand`/`rand_distr`, whose generators and
//! samplers may change between versions, so a seed gives the same plan (and
//! the same stpd bytes) in every tank build. A negative draw (`gev`,
//! `normal`) is a gap of 0: the shot goes with the one before it.

use tank_config::arrivals::FB_IA;
use tank_config::{ArrivalProcess, Arrivals, Distribution};

use crate::ammo::memcached::Sampler;
use crate::splitmix::{mix, unit, GAMMA};

/// Shots per block whose gaps are rescaled together (see the module docs).
pub const BLOCK: u64 = 1024;

/// Arrivals drawn from a distribution with a seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drawn {
    sampler: Sampler,
    seed: u64,
}

/// Where an in-order walk is: the block it is in, and the draws so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BlockCursor {
    /// The (step, block) the fields below are about, if any.
    at: Option<(usize, u64)>,
    /// The block's generator key.
    key: u64,
    /// The sum of the block's gaps.
    sum: f64,
    /// Gaps added to `partial` so far.
    next: u64,
    /// The sum of the first `next` gaps.
    partial: f64,
}

impl Drawn {
    /// The drawn arrivals of `arrivals`; `None` for uniform ones.
    pub fn new(arrivals: &Arrivals) -> Option<Drawn> {
        let distribution = match arrivals.process {
            ArrivalProcess::Uniform => return None,
            ArrivalProcess::Poisson => Distribution::Exponential { lambda: 1.0 },
            ArrivalProcess::FbIa => {
                let (loc, scale, shape) = FB_IA;
                Distribution::Pareto { loc, scale, shape }
            }
            ArrivalProcess::Pareto { loc, scale, shape } => {
                Distribution::Pareto { loc, scale, shape }
            }
            ArrivalProcess::Gev { loc, scale, shape } => Distribution::Gev { loc, scale, shape },
            ArrivalProcess::Normal { mean, sd } => Distribution::Normal { mean, sd },
        };
        Some(Drawn {
            sampler: Sampler::new(distribution),
            seed: arrivals.seed,
        })
    }

    /// Gap `j` of the block keyed `key`: finite and 0 or more.
    fn gap(&self, key: u64, j: u64) -> f64 {
        let at = |k: u64| unit(mix(key.wrapping_add(k.wrapping_mul(GAMMA))));
        let drawn = self
            .sampler
            .at(at(j.wrapping_mul(2)), at(j.wrapping_mul(2) + 1));
        if drawn.is_finite() && drawn > 0.0 {
            drawn
        } else {
            0.0
        }
    }

    /// Operational time of shot `i` of step `step`, which has `len` shots:
    /// in `[0, len)`, non-decreasing in `i`, and `i` itself at every block's
    /// first shot. `cursor` makes an in-order walk cheap; any cursor is right.
    pub fn position(&self, step: usize, len: u64, i: u64, cursor: &mut BlockCursor) -> f64 {
        let block = i / BLOCK;
        let start = block * BLOCK;
        let size = (len - start).min(BLOCK);
        let j = i - start;
        if cursor.at != Some((step, block)) || cursor.next > j {
            // One pass over the block: its sum, and the sum of the gaps before
            // shot j, both added up in order (so a walk on from here adds the
            // same floats the same way).
            let key = mix(mix(self.seed ^ mix(step as u64)).wrapping_add(block));
            let (mut sum, mut partial) = (0.0, 0.0);
            for m in 0..size {
                let gap = self.gap(key, m);
                if m < j {
                    partial += gap;
                }
                sum += gap;
            }
            *cursor = BlockCursor {
                at: Some((step, block)),
                key,
                sum,
                next: j,
                partial,
            };
        }
        while cursor.next < j {
            cursor.partial += self.gap(cursor.key, cursor.next);
            cursor.next += 1;
        }
        if !(cursor.sum > 0.0 && cursor.sum.is_finite()) {
            // Every gap of the block was 0: space the block evenly.
            return i as f64;
        }
        // partial ≤ sum, so the share is at most 1 and the block ends by `start + size`.
        start as f64 + size as f64 * (cursor.partial / cursor.sum).min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ks;
    use crate::schedule::{split_steps, Cursor, RpsSchedule};
    use proptest::prelude::*;

    fn drawn(text: &str, process: &str, seed: u64) -> RpsSchedule {
        let arrivals = Arrivals {
            process: ArrivalProcess::parse(process).unwrap(),
            seed,
            seed_chosen: false,
        };
        RpsSchedule::parse(&split_steps(text))
            .unwrap()
            .with_arrivals(&arrivals)
    }

    /// Every shot's due time, ns, walked in order.
    fn due_ns(schedule: &RpsSchedule) -> Vec<i64> {
        let mut cursor = Cursor::default();
        (0..schedule.len())
            .map(|i| schedule.offset_ns_near(i, &mut cursor).unwrap())
            .collect()
    }

    /// Γ(x), Lanczos' approximation (g = 7, 9 terms): relative error below 1e-13.
    fn gamma(x: f64) -> f64 {
        const C: [f64; 9] = [
            0.999_999_999_999_809_9,
            676.520_368_121_885_1,
            -1_259.139_216_722_402_8,
            771.323_428_777_653_1,
            -176.615_029_162_140_6,
            12.507_343_278_686_905,
            -0.138_571_095_265_720_12,
            9.984_369_578_019_572e-6,
            1.505_632_735_149_311_6e-7,
        ];
        use std::f64::consts::PI;
        if x < 0.5 {
            return PI / ((PI * x).sin() * gamma(1.0 - x));
        }
        let x = x - 1.0;
        let t = x + 7.5;
        let series = C[0] + (1..9).map(|i| C[i] / (x + i as f64)).sum::<f64>();
        (2.0 * PI).sqrt() * t.powf(x + 0.5) * (-t).exp() * series
    }

    /// Φ(z) by Abramowitz and Stegun's 7.1.26 (error below 1.5e-7).
    fn normal_cdf(z: f64) -> f64 {
        let x = z.abs() / std::f64::consts::SQRT_2;
        let t = 1.0 / (1.0 + 0.327_591_1 * x);
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        let erf = 1.0 - poly * (-x * x).exp();
        if z >= 0.0 {
            0.5 * (1.0 + erf)
        } else {
            0.5 * (1.0 - erf)
        }
    }

    fn gpareto_cdf(x: f64, loc: f64, scale: f64, shape: f64) -> f64 {
        let z = ((x - loc) / scale).max(0.0);
        1.0 - (1.0 + shape * z).powf(-1.0 / shape)
    }

    fn gev_cdf(x: f64, loc: f64, scale: f64, shape: f64) -> f64 {
        let t = (1.0 + shape * (x - loc) / scale).max(0.0);
        (-t.powf(-1.0 / shape)).exp()
    }

    /// The CDF of a process's gaps over their mean (the unit gap).
    type UnitCdf = Box<dyn Fn(f64) -> f64>;

    /// Each process with its [`UnitCdf`].
    fn processes() -> Vec<(&'static str, UnitCdf)> {
        let (fl, fs, fk) = FB_IA;
        let (gl, gs, gk) = (30.7984, 8.20449, 0.078688);
        let gev_mean = gl + gs * (gamma(1.0 - gk) - 1.0) / gk;
        vec![
            ("poisson", Box::new(|x: f64| 1.0 - (-x).exp())),
            (
                "pareto(2,10,0.3)",
                Box::new(|x: f64| gpareto_cdf(x * (2.0 + 10.0 / 0.7), 2.0, 10.0, 0.3)),
            ),
            (
                "fb_ia",
                Box::new(move |x: f64| gpareto_cdf(x * (fl + fs / (1.0 - fk)), fl, fs, fk)),
            ),
            (
                "gev(30.7984,8.20449,0.078688)",
                Box::new(move |x: f64| gev_cdf(x * gev_mean, gl, gs, gk)),
            ),
            (
                "normal(1,0.2)",
                Box::new(|x: f64| normal_cdf((x - 1.0) / 0.2)),
            ),
        ]
    }

    const SCHEDULE: &str = "const(10000,10s) line(10000,2000,10s) const(2000,5s)";

    #[test]
    fn gaps_at_ten_thousand_a_second_follow_the_distribution() {
        for (seed, (process, cdf)) in processes().into_iter().enumerate() {
            let schedule = drawn(SCHEDULE, process, seed as u64 + 1);
            let due = due_ns(&schedule);
            // The first step: 100,000 shots at 10,000 a second, a mean gap of 100 µs.
            let mut gaps: Vec<f64> = due[..100_000]
                .windows(2)
                .map(|w| (w[1] - w[0]) as f64 / 100_000.0)
                .collect();
            gaps.sort_by(f64::total_cmp);
            let d = ks::statistic(&gaps, cdf);
            let p = ks::p_value(d, gaps.len());
            assert!(p > 0.01, "{process}: D = {d}, p = {p}");
        }
        // The test tells processes apart: fb_ia's gaps are not exponential.
        let due = due_ns(&drawn(SCHEDULE, "fb_ia", 1));
        let mut gaps: Vec<f64> = due[..100_000]
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 100_000.0)
            .collect();
        gaps.sort_by(f64::total_cmp);
        let d = ks::statistic(&gaps, |x| 1.0 - (-x).exp());
        assert!(ks::p_value(d, gaps.len()) < 1e-6, "D = {d}");
    }

    #[test]
    fn on_a_ramp_the_gaps_in_operational_time_follow_the_distribution() {
        // The second step, line(10000,2000,10s): Λ(t) = 10000·t − 400·t² shots by t s.
        let lambda = |ns: i64| {
            let t = (ns - 10_000_000_000) as f64 / 1e9;
            10_000.0 * t - 400.0 * t * t
        };
        for (seed, (process, cdf)) in processes().into_iter().enumerate() {
            let due = due_ns(&drawn(SCHEDULE, process, seed as u64 + 20));
            let mut gaps: Vec<f64> = due[100_000..160_000]
                .windows(2)
                .map(|w| lambda(w[1]) - lambda(w[0]))
                .collect();
            gaps.sort_by(f64::total_cmp);
            let d = ks::statistic(&gaps, cdf);
            let p = ks::p_value(d, gaps.len());
            assert!(p > 0.01, "{process}: D = {d}, p = {p}");
        }
    }

    #[test]
    fn the_rate_follows_the_schedule_in_every_step_and_second() {
        let uniform = RpsSchedule::parse(&split_steps(SCHEDULE)).unwrap();
        for (process, _) in processes() {
            let schedule = drawn(SCHEDULE, process, 9);
            let due = due_ns(&schedule);
            let count = |from_s: i64, to_s: i64| {
                due.iter()
                    .filter(|ns| (from_s * 1_000_000_000..to_s * 1_000_000_000).contains(*ns))
                    .count() as f64
            };
            // Per step: 10,000/s, then 6,000/s on average, then 2,000/s.
            for (from, to, rate) in [(0, 10, 10_000.0), (10, 20, 6_000.0), (20, 25, 2_000.0)] {
                let mean = count(from, to) / (to - from) as f64;
                assert!(
                    (mean / rate - 1.0).abs() < 0.005,
                    "{process} {from}..{to}s: {mean}/s"
                );
            }
            // Per second, within 2% of the evenly spaced plan's count.
            for second in 0..25 {
                let planned = (0..uniform.len())
                    .filter(|i| uniform.offset_ms(*i).unwrap() / 1000 == second)
                    .count() as f64;
                let drawn = count(second, second + 1);
                assert!(
                    (drawn / planned - 1.0).abs() < 0.02,
                    "{process} second {second}: {drawn} vs {planned}"
                );
            }
        }
    }

    #[test]
    fn a_seed_gives_the_same_plan_and_another_seed_another() {
        let one = due_ns(&drawn("const(500,3s)", "poisson", 42));
        assert_eq!(one, due_ns(&drawn("const(500,3s)", "poisson", 42)));
        assert_ne!(one, due_ns(&drawn("const(500,3s)", "poisson", 43)));
        // Random access agrees with the walk.
        let schedule = drawn("const(500,3s)", "poisson", 42);
        for i in [0, 1, 1023, 1024, 1025, 1499] {
            assert_eq!(
                schedule.offset_ns_near(i, &mut Cursor::default()),
                Some(one[i as usize])
            );
            assert_eq!(schedule.offset_ms(i), Some(one[i as usize] / 1_000_000));
        }
        // A block's first shot is where the evenly spaced plan has it.
        assert_eq!(one[1024], 1024 * 2_000_000);
    }

    #[test]
    fn gaps_of_zero_keep_every_shot_inside_its_step_and_before_the_end() {
        // normal(1,10) draws a negative (a gap of 0) almost half the time.
        for seed in 0..200 {
            let due = due_ns(&drawn("const(3,1s) const(2,1s)", "normal(1,10)", seed));
            assert!(
                due[..3].iter().all(|ns| (0..1_000_000_000).contains(ns)),
                "{due:?}"
            );
            assert!(
                due[3..]
                    .iter()
                    .all(|ns| (1_000_000_000..2_000_000_000).contains(ns)),
                "{due:?}"
            );
            assert!(due.windows(2).all(|w| w[0] <= w[1]), "{due:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Drawn shots never go backwards, stay in their step, and each step
        /// has the evenly spaced plan's count.
        #[test]
        fn arrivals_never_go_backwards_and_keep_each_steps_count(
            a in 0u32..3000, b in 0u32..3000, c in 1u32..3000, secs in 1u32..4,
            process in 0usize..5, seed in any::<u64>(),
        ) {
            let text = format!("line({a},{b},{secs}s) const({c},1s) const(0,1s) const(7,1s)");
            let name = processes()[process].0;
            let uniform = RpsSchedule::parse(&split_steps(&text)).unwrap();
            let schedule = drawn(&text, name, seed);
            prop_assert_eq!(schedule.len(), uniform.len());
            let due = due_ns(&schedule);
            prop_assert!(due.windows(2).all(|w| w[0] <= w[1]), "{} went backwards", name);
            // Looked up alone, any shot is where the walk put it.
            for i in (0..due.len()).step_by(97) {
                prop_assert_eq!(schedule.offset_ns_near(i as u64, &mut Cursor::default()), Some(due[i]));
            }
            // Each step's shots lie within it: count them by time and by index.
            let mut first = 0u64;
            let mut start_ms = 0i64;
            for step in uniform.steps() {
                let end_ms = start_ms + step.duration_ms();
                let inside = due[first as usize..(first + step.len()) as usize]
                    .iter()
                    .all(|ns| (start_ms * 1_000_000..end_ms * 1_000_000).contains(ns));
                prop_assert!(inside, "{}: a shot outside its step", name);
                first += step.len();
                start_ms = end_ms;
            }
        }
    }
}
