//! The Kolmogorov–Smirnov test, for the tests that check drawn values
//! against a distribution (the `[memcached]` workload's sizes, drawn arrivals).

/// The largest distance between the CDF of `sorted` samples and `cdf`.
pub(crate) fn statistic(sorted: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let n = sorted.len() as f64;
    sorted
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let f = cdf(*x);
            (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
        })
        .fold(0.0, f64::max)
}

/// The p-value of statistic `d` over `n` samples: Kolmogorov's distribution,
/// with Stephens' correction for finite `n`.
pub(crate) fn p_value(d: f64, n: usize) -> f64 {
    let root = (n as f64).sqrt();
    let lambda = (root + 0.12 + 0.11 / root) * d;
    if lambda < 0.3 {
        // The series converges slowly here, to 1 within 1e-8.
        return 1.0;
    }
    let sum: f64 = (1..=100)
        .map(|k| {
            let k = f64::from(k);
            let sign = if k as u32 % 2 == 1 { 1.0 } else { -1.0 };
            sign * (-2.0 * k * k * lambda * lambda).exp()
        })
        .sum();
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_match_kolmogorovs_table() {
        // The critical values of the asymptotic distribution: 1.224 at 0.1, 1.628 at 0.01.
        let n = 1_000_000;
        let scale = 1.0 / (n as f64).sqrt();
        assert!((p_value(1.224 * scale, n) - 0.10).abs() < 0.002);
        assert!((p_value(1.628 * scale, n) - 0.01).abs() < 0.0005);
        assert_eq!(p_value(0.0, n), 1.0);
    }

    #[test]
    fn the_statistic_is_the_largest_step_away() {
        // Samples 0.25 and 0.75 against the uniform CDF: 0.25 everywhere at most.
        assert!((statistic(&[0.25, 0.75], |x| x) - 0.25).abs() < 1e-12);
    }
}
