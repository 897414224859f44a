//! How long a stage waits before it answers: fixed, a uniform range, or a distribution.
//!
//! OriginSimulator offers a fixed latency and a uniform range. Real services
//! have tails, and a load test that only ever sees a flat 100 ms learns little
//! about queueing, so tank adds distributions: `lognormal(mu,sigma)` (the
//! usual shape of service times), `exponential(mean)`, `normal(mean,sd)` and
//! weighted mixtures such as the "sleeping handler" of Yandex's training
//! target, `99%: lognormal(-1.63,0.7); 1%: lognormal(1,0.25)`.
//!
//! Units: `lognormal`'s `mu` and `sigma` are those of ln(latency in seconds)
//! (so `lognormal(-1.63,0.7)` has a median of e^-1.63 s ≈ 196 ms);
//! `exponential` and `normal` take durations (`"50ms"`, or bare milliseconds).
//! A sample below zero (normal) is zero; every sample is capped at 24 h.

use std::fmt;
use std::time::Duration;

use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal, Normal};
use serde_json::Value;

use crate::units::{self, MAX_DURATION};

/// A stage's latency: what to sample before each response.
#[derive(Debug, Clone)]
pub struct Latency {
    /// As written in the recipe, for `/_admin/routes_status`.
    text: String,
    shape: Shape,
}

#[derive(Debug, Clone)]
enum Shape {
    Fixed(Duration),
    /// Uniform over `[low, high]`.
    Range(Duration, Duration),
    LogNormal(LogNormal<f64>),
    /// Exponential with rate 1/mean, in seconds.
    Exponential(Exp<f64>),
    /// Normal in seconds, clamped at zero.
    Normal(Normal<f64>),
    /// Components with cumulative weights (the last is 1.0).
    Mixture(Vec<(f64, Shape)>),
}

impl Latency {
    /// No latency at all.
    pub fn zero() -> Latency {
        Latency {
            text: "0ms".into(),
            shape: Shape::Fixed(Duration::ZERO),
        }
    }

    /// Reads a recipe's `latency`: a number of milliseconds, a duration
    /// (`"100ms"`), a range (`"1000ms..1500ms"`), a distribution, or a mixture.
    pub(crate) fn from_value(value: &Value) -> Result<Latency, String> {
        match value {
            Value::Number(_) => {
                let fixed = units::duration_value(value)?;
                Ok(Latency {
                    text: format!("{}ms", fixed.as_secs_f64() * 1_000.0),
                    shape: Shape::Fixed(fixed),
                })
            }
            Value::String(text) => Ok(Latency {
                text: text.trim().to_owned(),
                shape: parse(text)?,
            }),
            other => Err(format!("{EXPECTED}, found {other}")),
        }
    }

    /// True when every sample is zero (the fast path skips the timer).
    pub(crate) fn is_zero(&self) -> bool {
        matches!(self.shape, Shape::Fixed(d) if d.is_zero())
    }

    /// One sample.
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        self.shape.sample(rng)
    }
}

impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

const EXPECTED: &str = "expected a latency: milliseconds, \"100ms\", \"1000ms..1500ms\", \
    \"lognormal(mu,sigma)\", \"exponential(mean)\", \"normal(mean,sd)\" \
    or a mixture \"99%: lognormal(-1.63,0.7); 1%: lognormal(1,0.25)\"";

fn parse(text: &str) -> Result<Shape, String> {
    let t = text.trim();
    if t.contains('%') {
        return mixture(t);
    }
    component(t)
}

/// One latency that is not a mixture.
fn component(t: &str) -> Result<Shape, String> {
    if let Some((name, args)) = call(t) {
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        return match (name, args.as_slice()) {
            ("lognormal", [mu, sigma]) => {
                let (mu, sigma) = (number(mu, t)?, number(sigma, t)?);
                if sigma < 0.0 {
                    return Err(format!("lognormal needs sigma >= 0, found `{t}`"));
                }
                LogNormal::new(mu, sigma)
                    .map(Shape::LogNormal)
                    .map_err(|_| format!("lognormal needs sigma >= 0, found `{t}`"))
            }
            ("exponential", [mean]) => {
                let mean = seconds(mean, t)?;
                if mean <= 0.0 {
                    return Ok(Shape::Fixed(Duration::ZERO));
                }
                Exp::new(1.0 / mean)
                    .map(Shape::Exponential)
                    .map_err(|_| format!("exponential needs a positive mean, found `{t}`"))
            }
            ("normal", [mean, sd]) => {
                let (mean, sd) = (seconds(mean, t)?, seconds(sd, t)?);
                if sd < 0.0 {
                    return Err(format!("normal needs sd >= 0, found `{t}`"));
                }
                Normal::new(mean, sd)
                    .map(Shape::Normal)
                    .map_err(|_| format!("normal needs sd >= 0, found `{t}`"))
            }
            ("lognormal", _) => Err(format!("lognormal takes (mu,sigma), found `{t}`")),
            ("exponential", _) => Err(format!("exponential takes (mean), found `{t}`")),
            ("normal", _) => Err(format!("normal takes (mean,sd), found `{t}`")),
            _ => Err(format!("{EXPECTED}, found `{t}`")),
        };
    }
    if let Some((low, high)) = t.split_once("..") {
        let low = units::parse_duration(low).map_err(|_| format!("{EXPECTED}, found `{t}`"))?;
        let high = units::parse_duration(high).map_err(|_| format!("{EXPECTED}, found `{t}`"))?;
        if low > high {
            return Err(format!(
                "a latency range must go from low to high, found `{t}`"
            ));
        }
        return Ok(Shape::Range(low, high));
    }
    units::parse_duration(t)
        .map(Shape::Fixed)
        .map_err(|_| format!("{EXPECTED}, found `{t}`"))
}

/// `99%: lognormal(-1.63,0.7); 1%: lognormal(1,0.25)`: weights must add up to 100%.
fn mixture(t: &str) -> Result<Shape, String> {
    let mut parts = Vec::new();
    let mut total = 0.0;
    for part in t.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (weight, latency) = part
            .split_once(':')
            .and_then(|(w, l)| Some((w.trim().strip_suffix('%')?, l)))
            .ok_or_else(|| {
                format!("expected mixture parts like `99%: lognormal(-1.63,0.7)`, found `{part}`")
            })?;
        let weight: f64 = weight
            .trim()
            .parse()
            .ok()
            .filter(|w: &f64| w.is_finite() && *w > 0.0)
            .ok_or_else(|| format!("expected a positive percentage in `{part}`"))?;
        total += weight;
        parts.push((total / 100.0, component(latency.trim())?));
    }
    if (total - 100.0).abs() > 1e-6 {
        return Err(format!(
            "mixture weights must add up to 100%, they add up to {total}% in `{t}`"
        ));
    }
    if let Some(last) = parts.last_mut() {
        last.0 = 1.0;
    }
    Ok(Shape::Mixture(parts))
}

/// `name(args)` → `(name, args)`.
fn call(t: &str) -> Option<(&str, &str)> {
    let (name, rest) = t.split_once('(')?;
    let args = rest.strip_suffix(')')?;
    Some((name.trim(), args))
}

fn number(text: &str, whole: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("expected a number, found `{text}` in `{whole}`"))
}

/// A duration argument in seconds; a leading `-` is allowed (a normal's mean may be negative).
fn seconds(text: &str, whole: &str) -> Result<f64, String> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let d = units::parse_duration(rest).map_err(|e| format!("{e} in `{whole}`"))?;
    Ok(if negative {
        -d.as_secs_f64()
    } else {
        d.as_secs_f64()
    })
}

impl Shape {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        match self {
            Shape::Fixed(d) => *d,
            Shape::Range(low, high) if low == high => *low,
            Shape::Range(low, high) => rng.random_range(*low..=*high),
            Shape::LogNormal(d) => clamp_seconds(d.sample(rng)),
            Shape::Exponential(d) => clamp_seconds(d.sample(rng)),
            Shape::Normal(d) => clamp_seconds(d.sample(rng)),
            Shape::Mixture(parts) => {
                let u: f64 = rng.random();
                parts
                    .iter()
                    .find(|(cumulative, _)| u < *cumulative)
                    .or(parts.last())
                    .map_or(Duration::ZERO, |(_, shape)| shape.sample(rng))
            }
        }
    }
}

fn clamp_seconds(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(s.min(MAX_DURATION.as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use serde_json::json;

    fn latency(text: &str) -> Latency {
        Latency::from_value(&json!(text)).unwrap()
    }

    fn samples(text: &str, n: usize) -> Vec<f64> {
        let l = latency(text);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut v: Vec<f64> = (0..n).map(|_| l.sample(&mut rng).as_secs_f64()).collect();
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn fixed_latency_in_every_spelling() {
        let mut rng = SmallRng::seed_from_u64(1);
        for (value, ms) in [
            (json!(100), 100),
            (json!("100ms"), 100),
            (json!("1s"), 1000),
            (json!(0), 0),
            (json!("0ms"), 0),
        ] {
            let l = Latency::from_value(&value).unwrap();
            assert_eq!(l.sample(&mut rng), Duration::from_millis(ms), "{value}");
        }
        assert!(Latency::from_value(&json!(0)).unwrap().is_zero());
        assert!(!latency("1ms").is_zero());
    }

    #[test]
    fn a_range_is_uniform_between_its_ends() {
        let v = samples("1000ms..1500ms", 10_000);
        assert!(v[0] >= 1.0 && v[v.len() - 1] <= 1.5);
        let median = v[v.len() / 2];
        assert!((median - 1.25).abs() < 0.02, "median {median}");
    }

    #[test]
    fn lognormal_median_is_e_to_the_mu_seconds() {
        let v = samples("lognormal(-1.63,0.7)", 20_000);
        let median = v[v.len() / 2];
        assert!((median - (-1.63f64).exp()).abs() < 0.01, "median {median}");
    }

    #[test]
    fn exponential_and_normal_take_durations() {
        let v = samples("exponential(50ms)", 20_000);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean - 0.05).abs() < 0.003, "mean {mean}");
        let v = samples("normal(100ms,10ms)", 20_000);
        let median = v[v.len() / 2];
        assert!((median - 0.1).abs() < 0.002, "median {median}");
        assert_eq!(samples("normal(-1s,1ms)", 10)[9], 0.0);
    }

    #[test]
    fn a_mixture_draws_each_part_by_its_weight() {
        let v = samples("99%: lognormal(-1.63,0.7); 1%: lognormal(1,0.25)", 50_000);
        // Above 1.6 s: nearly all of the 1% part (median e^1 s ≈ 2.7 s) and
        // 0.13% of the 99% part, about 567 of 50,000.
        let slow = v.iter().filter(|s| **s > 1.6).count();
        assert!((480..=660).contains(&slow), "slow {slow}");
        let v = samples("50%: 10ms; 50%: 20ms", 1_000);
        assert_eq!((v[0], v[999]), (0.01, 0.02));
    }

    #[test]
    fn bad_latencies_say_what_was_expected() {
        let err = |text: &str| Latency::from_value(&json!(text)).unwrap_err();
        assert!(
            err("fast").starts_with("expected a latency"),
            "{}",
            err("fast")
        );
        assert_eq!(
            err("1500ms..1000ms"),
            "a latency range must go from low to high, found `1500ms..1000ms`"
        );
        assert_eq!(
            err("lognormal(1)"),
            "lognormal takes (mu,sigma), found `lognormal(1)`"
        );
        assert_eq!(
            err("lognormal(1,-2)"),
            "lognormal needs sigma >= 0, found `lognormal(1,-2)`"
        );
        assert_eq!(
            err("90%: 1ms; 5%: 2ms"),
            "mixture weights must add up to 100%, they add up to 95% in `90%: 1ms; 5%: 2ms`"
        );
        assert_eq!(
            err("normal(1s,-1ms)"),
            "normal needs sd >= 0, found `normal(1s,-1ms)`"
        );
        assert!(err("99% lognormal(1,1)").starts_with("expected mixture parts"));
        assert!(Latency::from_value(&json!([1])).is_err());
    }

    #[test]
    fn display_is_the_recipe_text() {
        assert_eq!(latency(" 100ms ").to_string(), "100ms");
        assert_eq!(Latency::from_value(&json!(50)).unwrap().to_string(), "50ms");
    }
}
