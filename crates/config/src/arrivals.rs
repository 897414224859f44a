//! `arrivals` and `arrivals_seed` (tank's own, mcperf's `--iadist`): how the
//! shots of an `rps_schedule` are spaced within each step.
//!
//! `uniform` is phantom's evenly spaced stepper and the default. Every other
//! process draws the gaps between shots from a distribution, and the plan
//! rescales them so that the rate follows the schedule (tank-plan's
//! `schedule::arrivals` says how). Only the distribution's shape matters, so
//! its parameters are mcperf's, in its units, whatever the rate.

use std::fmt;

/// How an rps schedule spaces its shots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalProcess {
    /// `uniform`: evenly spaced, phantom's stepper, byte for byte.
    Uniform,
    /// `poisson`: exponential gaps (a Poisson process).
    Poisson,
    /// `pareto(loc,scale,shape)`: generalized Pareto gaps.
    Pareto {
        /// The location: the shortest gap (at least 0).
        loc: f64,
        /// The scale (above 0).
        scale: f64,
        /// The shape ξ (below 1, so that the mean gap is finite).
        shape: f64,
    },
    /// `gev(loc,scale,shape)`: generalized extreme value gaps (a negative draw is 0).
    Gev {
        /// The location.
        loc: f64,
        /// The scale (above 0).
        scale: f64,
        /// The shape ξ (below 1, so that the mean gap is finite).
        shape: f64,
    },
    /// `normal(mean,sd)`: normal gaps (a negative draw is 0).
    Normal {
        /// The mean (above 0).
        mean: f64,
        /// The standard deviation (0 or more).
        sd: f64,
    },
    /// `fb_ia`: Facebook ETC's inter-arrival gaps, mcperf's `pareto:0.0,16.0292,0.154971`.
    FbIa,
}

/// mcperf's `fb_ia`, as a generalized Pareto `(loc, scale, shape)`.
pub const FB_IA: (f64, f64, f64) = (0.0, 16.0292, 0.154971);

/// A queue's `arrivals` with the seed its draws come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrivals {
    /// `arrivals`.
    pub process: ArrivalProcess,
    /// `arrivals_seed`, or one tank drew (see `seed_chosen`). It also seeds
    /// the schedule's `random(...)` steps that name no seed of their own.
    pub seed: u64,
    /// Whether tank drew the seed (no `arrivals_seed` was set): it is then
    /// printed, so that the run can be repeated.
    pub seed_chosen: bool,
}

impl Default for Arrivals {
    /// Evenly spaced, with a seed drawn for `random(...)` steps.
    fn default() -> Self {
        Arrivals {
            process: ArrivalProcess::Uniform,
            seed: crate::seed::chosen_seed(),
            seed_chosen: true,
        }
    }
}

impl Arrivals {
    /// The arrivals with their seed, for `tank plan`, the console and
    /// tank.log: `poisson, seed 42`.
    pub fn describe(&self) -> String {
        format!(
            "{}, seed {}{}",
            self.process,
            self.seed,
            if self.seed_chosen {
                " (chosen by tank: set `arrivals_seed` to repeat it)"
            } else {
                ""
            }
        )
    }
}

const EXPECTED: &str = "expected uniform, poisson, pareto(loc,scale,shape), \
                        gev(loc,scale,shape), normal(mean,sd) or fb_ia";

impl ArrivalProcess {
    /// Parse `uniform`, `poisson`, `pareto(loc,scale,shape)`,
    /// `gev(loc,scale,shape)`, `normal(mean,sd)` or `fb_ia`. A process whose
    /// gaps would have no finite mean, or be mostly negative, is refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (name, numbers) = match text.split_once('(') {
            None => (text, Vec::new()),
            Some((name, rest)) => {
                let inside = rest
                    .strip_suffix(')')
                    .ok_or_else(|| format!("`{text}` has no closing `)`: {EXPECTED}"))?;
                let numbers = crate::convert::finite_numbers(inside)
                    .map_err(|m| format!("{m} in `{text}`"))?;
                (name.trim(), numbers)
            }
        };
        let check = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(format!("in `{text}`, {what}"))
            }
        };
        let process = match (name, numbers.as_slice()) {
            ("uniform", []) => ArrivalProcess::Uniform,
            ("poisson", []) => ArrivalProcess::Poisson,
            ("fb_ia", []) => ArrivalProcess::FbIa,
            ("pareto", &[loc, scale, shape]) => {
                check(
                    loc >= 0.0,
                    "the location must be 0 or more (it is the shortest gap)",
                )?;
                check(scale > 0.0, "the scale must be above 0")?;
                check(
                    shape < 1.0,
                    "the shape must be below 1 (else the mean gap is infinite)",
                )?;
                ArrivalProcess::Pareto { loc, scale, shape }
            }
            ("gev", &[loc, scale, shape]) => {
                check(scale > 0.0, "the scale must be above 0")?;
                check(
                    shape < 1.0,
                    "the shape must be below 1 (else the mean gap is infinite)",
                )?;
                // The median, loc + scale·((ln 2)^−ξ − 1)/ξ, must be a gap, not "at once".
                let median = if shape == 0.0 {
                    loc - scale * std::f64::consts::LN_2.ln()
                } else {
                    loc + scale * (std::f64::consts::LN_2.powf(-shape) - 1.0) / shape
                };
                check(median > 0.0, "the median gap must be above 0")?;
                ArrivalProcess::Gev { loc, scale, shape }
            }
            ("normal", &[mean, sd]) => {
                check(mean > 0.0, "the mean must be above 0")?;
                check(sd >= 0.0, "the standard deviation must be 0 or more")?;
                ArrivalProcess::Normal { mean, sd }
            }
            _ => return Err(format!("{EXPECTED}, found `{text}`")),
        };
        Ok(process)
    }

    /// Whether shots are evenly spaced (phantom's stepper).
    pub fn is_uniform(&self) -> bool {
        matches!(self, ArrivalProcess::Uniform)
    }
}

impl fmt::Display for ArrivalProcess {
    /// As written in a config; [`ArrivalProcess::parse`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArrivalProcess::Uniform => f.write_str("uniform"),
            ArrivalProcess::Poisson => f.write_str("poisson"),
            ArrivalProcess::FbIa => f.write_str("fb_ia"),
            ArrivalProcess::Pareto { loc, scale, shape } => {
                write!(f, "pareto({loc},{scale},{shape})")
            }
            ArrivalProcess::Gev { loc, scale, shape } => write!(f, "gev({loc},{scale},{shape})"),
            ArrivalProcess::Normal { mean, sd } => write!(f, "normal({mean},{sd})"),
        }
    }
}

/// `arrivals_seed`: a whole number from 0 to 2^64 − 1.
pub(crate) fn parse_seed(text: &str) -> Result<u64, String> {
    text.trim().parse::<u64>().map_err(|_| {
        format!(
            "expected a whole number from 0 to {}, found `{}`",
            u64::MAX,
            text.trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_process_parses_and_prints_back() {
        for text in [
            "uniform",
            "poisson",
            "fb_ia",
            "pareto(0,16.0292,0.154971)",
            "gev(30.7984,8.20449,0.078688)",
            "normal(1,0.2)",
        ] {
            let process = ArrivalProcess::parse(text).unwrap();
            assert_eq!(process.to_string(), text);
        }
        assert_eq!(
            ArrivalProcess::parse(" pareto( 0, 1 ,0.5 ) "),
            Ok(ArrivalProcess::Pareto {
                loc: 0.0,
                scale: 1.0,
                shape: 0.5
            })
        );
    }

    #[test]
    fn processes_without_a_finite_positive_mean_gap_are_refused() {
        for (text, says) in [
            ("pareto(0,1,1)", "the shape must be below 1"),
            ("pareto(-1,1,0.1)", "the location must be 0 or more"),
            ("pareto(0,0,0.1)", "the scale must be above 0"),
            ("gev(0,1,2)", "the shape must be below 1"),
            ("gev(-10,1,0.1)", "the median gap must be above 0"),
            ("normal(0,1)", "the mean must be above 0"),
            ("normal(1,-1)", "the standard deviation must be 0 or more"),
            ("exponential(1)", "expected uniform, poisson"),
            ("poisson(2)", "expected uniform, poisson"),
            ("pareto(1,2", "no closing `)`"),
            ("normal(1,x)", "`x` is not a number"),
            ("normal(1,inf)", "`inf` is not a number"),
        ] {
            let error = ArrivalProcess::parse(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn a_seed_is_a_u64() {
        assert_eq!(parse_seed(" 42 "), Ok(42));
        assert_eq!(parse_seed("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_seed("-1").unwrap_err().contains("found `-1`"));
    }

    proptest! {
        #[test]
        fn no_text_panics_the_parser(text in "\\PC{0,40}") {
            let _ = ArrivalProcess::parse(&text);
        }

        #[test]
        fn accepted_processes_print_back_to_themselves(
            name in proptest::sample::select(vec!["pareto", "gev", "normal", "poisson", "fb_ia"]),
            numbers in proptest::collection::vec(-5.0f64..50.0, 0..4),
        ) {
            let args: Vec<String> = numbers.iter().map(f64::to_string).collect();
            let text = if args.is_empty() { name.to_owned() } else { format!("{name}({})", args.join(",")) };
            if let Ok(process) = ArrivalProcess::parse(&text) {
                prop_assert_eq!(ArrivalProcess::parse(&process.to_string()), Ok(process));
            }
        }
    }
}
