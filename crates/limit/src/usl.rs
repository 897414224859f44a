//! The Universal Scalability Law, fitted to a sweep's throughput.
//!
//! `X(N) = γN / (1 + σ(N − 1) + κN(N − 1))` (Gunther): γ is the throughput of
//! one client, σ the share of the work that serialises (contention), κ the
//! cost of keeping N clients coherent (crosstalk). Throughput peaks at
//! `N* = √((1 − σ) / κ)`.
//!
//! The fit: with γ fixed, `γN/X − 1 = σ(N − 1) + κN(N − 1)` is linear in σ
//! and κ, solved by least squares with both kept non-negative; with σ and κ
//! fixed, the best γ is a one-variable least squares. The two alternate
//! from γ = X(N₁)/N₁ until they settle. R² is of the fitted throughput.

use serde::Serialize;

/// A fitted USL.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Usl {
    /// Contention (0..1).
    pub sigma: f64,
    /// Crosstalk (≥ 0).
    pub kappa: f64,
    /// Throughput of one client, per second.
    pub gamma: f64,
    /// Where throughput peaks (`None`: κ = 0, it never does).
    pub peak_concurrency: Option<f64>,
    /// The model's throughput at its peak (or its limit γ/σ when κ = 0 and σ > 0).
    pub max_throughput: Option<f64>,
    /// The share of the throughput's variance the model explains.
    pub r_squared: f64,
}

impl Usl {
    /// The model's throughput at concurrency `n`.
    pub fn throughput(&self, n: f64) -> f64 {
        model(self.sigma, self.kappa, self.gamma, n)
    }
}

fn model(sigma: f64, kappa: f64, gamma: f64, n: f64) -> f64 {
    gamma * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Fits the USL to `(concurrency, throughput)` points; `None` with fewer
/// than three points of positive concurrency and throughput.
pub fn fit(points: &[(f64, f64)]) -> Option<Usl> {
    let points: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|&(n, x)| n >= 1.0 && x > 0.0 && n.is_finite() && x.is_finite())
        .collect();
    if points.len() < 3 {
        return None;
    }
    let &(n1, x1) = points.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
    let mut gamma = x1 / n1;
    let (mut sigma, mut kappa) = (0.0, 0.0);
    for _ in 0..200 {
        (sigma, kappa) = contention(&points, gamma);
        let f: Vec<f64> = points
            .iter()
            .map(|&(n, _)| model(sigma, kappa, 1.0, n))
            .collect();
        let num: f64 = points.iter().zip(&f).map(|(&(_, x), f)| x * f).sum();
        let den: f64 = f.iter().map(|f| f * f).sum();
        let next = num / den;
        let settled = (next - gamma).abs() <= 1e-12 * gamma.abs();
        gamma = next;
        if settled {
            break;
        }
    }
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let total: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let residual: f64 = points
        .iter()
        .map(|&(n, x)| (x - model(sigma, kappa, gamma, n)).powi(2))
        .sum();
    let r_squared = if total > 0.0 {
        1.0 - residual / total
    } else {
        1.0
    };
    let peak_concurrency = (kappa > 0.0).then(|| ((1.0 - sigma).max(0.0) / kappa).sqrt());
    let max_throughput = match peak_concurrency {
        Some(n) => Some(model(sigma, kappa, gamma, n.max(1.0))),
        None if sigma > 0.0 => Some(gamma / sigma),
        None => None,
    };
    Some(Usl {
        sigma,
        kappa,
        gamma,
        peak_concurrency,
        max_throughput,
        r_squared,
    })
}

/// σ and κ for a fixed γ: least squares of `γN/X − 1` on `N − 1` and
/// `N(N − 1)`, both coefficients kept at 0 or above.
fn contention(points: &[(f64, f64)], gamma: f64) -> (f64, f64) {
    let rows: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|&(n, x)| (n - 1.0, n * (n - 1.0), gamma * n / x - 1.0))
        .collect();
    let (mut aa, mut ab, mut bb, mut ay, mut by) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(a, b, y) in &rows {
        aa += a * a;
        ab += a * b;
        bb += b * b;
        ay += a * y;
        by += b * y;
    }
    let det = aa * bb - ab * ab;
    if det.abs() > f64::EPSILON * aa * bb {
        let sigma = (ay * bb - by * ab) / det;
        let kappa = (aa * by - ab * ay) / det;
        if sigma >= 0.0 && kappa >= 0.0 {
            return (sigma, kappa);
        }
    }
    // On the boundary: the better of σ alone and κ alone.
    let only_sigma = if aa > 0.0 { (ay / aa).max(0.0) } else { 0.0 };
    let only_kappa = if bb > 0.0 { (by / bb).max(0.0) } else { 0.0 };
    let error = |s: f64, k: f64| -> f64 {
        rows.iter()
            .map(|&(a, b, y)| (y - s * a - k * b).powi(2))
            .sum()
    };
    if error(only_sigma, 0.0) <= error(0.0, only_kappa) {
        (only_sigma, 0.0)
    } else {
        (0.0, only_kappa)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn points(sigma: f64, kappa: f64, gamma: f64, ns: &[f64], noise: &[f64]) -> Vec<(f64, f64)> {
        ns.iter()
            .enumerate()
            .map(|(i, &n)| {
                (
                    n,
                    model(sigma, kappa, gamma, n) * (1.0 + noise[i % noise.len()]),
                )
            })
            .collect()
    }

    const STEPS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

    #[test]
    fn exact_points_give_back_the_law_and_its_peak() {
        let usl = fit(&points(0.05, 0.0002, 100.0, &STEPS, &[0.0])).unwrap();
        assert!((usl.sigma - 0.05).abs() < 1e-9, "{usl:?}");
        assert!((usl.kappa - 0.0002).abs() < 1e-12, "{usl:?}");
        assert!((usl.gamma - 100.0).abs() < 1e-6, "{usl:?}");
        let peak = ((1.0 - 0.05) / 0.0002f64).sqrt();
        assert!((usl.peak_concurrency.unwrap() - peak).abs() < 1e-6);
        assert!((usl.r_squared - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_linear_system_has_no_peak() {
        let usl = fit(&[(1.0, 10.0), (2.0, 20.0), (4.0, 40.0)]).unwrap();
        assert_eq!(
            (usl.sigma, usl.kappa, usl.peak_concurrency),
            (0.0, 0.0, None)
        );
        assert_eq!(fit(&[(1.0, 10.0), (2.0, 20.0)]), None);
    }

    proptest! {
        /// On synthetic points (±0.01% noise, as a rounded measurement), σ and κ
        /// come back within 5%, even when the sweep does not start at one client.
        #[test]
        fn sigma_and_kappa_are_recovered_within_five_percent(
            sigma in 0.02f64..0.3, kappa in 0.0001f64..0.002, gamma in 10.0f64..5000.0,
            first in 0usize..2,
            noise in proptest::collection::vec(-0.0001f64..0.0001, 9),
        ) {
            let usl = fit(&points(sigma, kappa, gamma, &STEPS[first..], &noise)).unwrap();
            prop_assert!((usl.sigma - sigma).abs() <= 0.05 * sigma, "σ {} vs {sigma}", usl.sigma);
            prop_assert!((usl.kappa - kappa).abs() <= 0.05 * kappa, "κ {} vs {kappa}", usl.kappa);
            prop_assert!(usl.r_squared > 0.99);
        }

        /// Whatever the points (a shedding server's included), σ and κ stay
        /// at 0 or above and every number is finite.
        #[test]
        fn the_fit_is_constrained_for_any_points(
            xs in proptest::collection::vec(0.001f64..1e6, 3..9),
        ) {
            let points: Vec<(f64, f64)> =
                xs.iter().enumerate().map(|(i, &x)| (2f64.powi(i as i32), x)).collect();
            let usl = fit(&points).unwrap();
            prop_assert!(usl.sigma >= 0.0 && usl.kappa >= 0.0, "{usl:?}");
            prop_assert!(usl.sigma.is_finite() && usl.kappa.is_finite() && usl.gamma.is_finite());
            prop_assert!(usl.r_squared <= 1.0 + 1e-9);
        }
    }
}
