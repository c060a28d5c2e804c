//! Bootstrap over test examples, in a recipe numpy reproduces exactly
//! (`tests/oracle/make_profile_fixtures.py` does, and the tests compare):
//!
//! ```python
//! rng = numpy.random.RandomState((seed + zlib.crc32(task_id.encode())) % 2**32)
//! for b in range(B):
//!     idx = rng.randint(0, n_test, size=n_test)
//!     replicate[b] = mean(matthews_corrcoef(y_true[idx], y_pred[idx]) for y_pred in fits)
//! lo, hi = numpy.percentile(replicate, [2.5, 97.5])          # linear interpolation
//! ```
//!
//! The stream depends only on the seed and the task id, so every model scored on the same test
//! examples is resampled with the same indices: differences between models are paired, and a
//! model's intervals do not change when other tasks or models join the comparison. Few-shot fits
//! (one per seed) share each replicate's indices, so a replicate of a few-shot task is the
//! seed-mean MCC, as the leaderboard reports it.

use crate::metrics;
use crate::rng::{RandomState, random_interval};
use serde::Serialize;

/// How the intervals are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// Number of bootstrap replicates (B).
    pub replicates: usize,
    pub seed: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            replicates: 1000,
            seed: 0,
        }
    }
}

/// A point estimate with its 95 % percentile interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub mcc: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Estimate {
    pub fn from_replicates(mcc: f64, replicates: &[f64]) -> Estimate {
        Estimate {
            mcc,
            lo: percentile(replicates, 2.5),
            hi: percentile(replicates, 97.5),
        }
    }
}

/// The RandomState seed of one task's resampling stream.
pub fn task_seed(seed: u32, task: &str) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(task.as_bytes());
    seed.wrapping_add(crc.sum())
}

/// numpy's legacy `rng.randint(0, n, size=n)`: masked rejection on 32-bit draws, as
/// `random_bounded_uint64_fill` does for ranges below 2^32. `n` must be positive.
pub fn resample(rng: &mut RandomState, n: usize) -> Vec<usize> {
    (0..n)
        .map(|_| random_interval(rng, n as u64 - 1) as usize)
        .collect()
}

/// `numpy.percentile(values, q)` with its default linear interpolation; NaN for no values.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let position = q / 100.0 * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let fraction = position - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * fraction
}

/// Replicate MCCs of one task for several (model, regime) entries at once — each a test-label
/// vector and its fits, all of the task's test length — drawn from one resample stream, so each
/// replicate's indices are drawn once and shared, which is what pairs the models. A replicate of
/// an entry is the mean MCC of its fits on that resample. Labels must not be empty.
pub fn replicates(
    entries: &[(&[usize], &[Vec<usize>])],
    task: &str,
    settings: Settings,
) -> Vec<Vec<f64>> {
    let Some(n) = entries.first().map(|e| e.0.len()) else {
        return Vec::new();
    };
    let mut rng = RandomState::new(task_seed(settings.seed, task));
    let n_classes = 1 + entries
        .iter()
        .flat_map(|(y, fits)| y.iter().chain(fits.iter().flatten()))
        .max()
        .copied()
        .unwrap_or(0);
    let mut t_sum = vec![0u64; n_classes];
    let mut p_sum = vec![0u64; n_classes];
    let mut out = vec![Vec::with_capacity(settings.replicates); entries.len()];
    for _ in 0..settings.replicates {
        let idx = resample(&mut rng, n);
        for ((y_true, fits), replicates) in entries.iter().zip(&mut out) {
            t_sum.fill(0);
            idx.iter().for_each(|&i| t_sum[y_true[i]] += 1);
            let total: f64 = fits
                .iter()
                .map(|fit| {
                    p_sum.fill(0);
                    let mut correct = 0;
                    for &i in &idx {
                        p_sum[fit[i]] += 1;
                        correct += u64::from(fit[i] == y_true[i]);
                    }
                    // Classes absent from a resample add nothing to sklearn's sums, so counting
                    // over all classes equals its count over the labels present.
                    metrics::mcc_from_counts(&t_sum, &p_sum, correct)
                })
                .sum();
            replicates.push(total / fits.len() as f64);
        }
    }
    out
}

/// Paired comparison of two sets of replicates drawn on the same resamples: the observed
/// difference, its 95 % percentile interval, and the two-sided bootstrap p-value
/// `min(1, 2·min(#(Δ* ≤ 0), #(Δ* ≥ 0)) / B)` (0 means below 1/B).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedDifference {
    pub delta: f64,
    pub lo: f64,
    pub hi: f64,
    pub p: f64,
}

pub fn paired_difference(delta: f64, a: &[f64], b: &[f64]) -> PairedDifference {
    let deltas: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let at_most_zero = deltas.iter().filter(|&&d| d <= 0.0).count();
    let at_least_zero = deltas.iter().filter(|&&d| d >= 0.0).count();
    let p = (2.0 * at_most_zero.min(at_least_zero) as f64 / deltas.len() as f64).min(1.0);
    PairedDifference {
        delta,
        lo: percentile(&deltas, 2.5),
        hi: percentile(&deltas, 97.5),
        p,
    }
}

/// Element-wise mean of equally long replicate vectors (a category from its tasks, macro from
/// its categories).
pub fn mean_replicates(parts: &[&[f64]]) -> Vec<f64> {
    let len = parts.first().map_or(0, |p| p.len());
    (0..len)
        .map(|b| parts.iter().map(|p| p[b]).sum::<f64>() / parts.len() as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_interpolates_linearly_like_numpy() {
        // numpy.percentile([3, 1, 2, 10], [0, 2.5, 50, 97.5, 100]) → 1, 1.075, 2.5, 9.475, 10
        let v = [3.0, 1.0, 2.0, 10.0];
        let got: Vec<f64> = [0.0, 2.5, 50.0, 97.5, 100.0]
            .iter()
            .map(|&q| percentile(&v, q))
            .collect();
        for (g, e) in got.iter().zip([1.0, 1.075, 2.5, 9.475, 10.0]) {
            assert!((g - e).abs() < 1e-12, "{got:?}");
        }
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn paired_p_value_counts_both_tails() {
        let d = paired_difference(0.1, &[1.0, 2.0, 3.0, 4.0], &[0.0, 0.0, 3.0, 5.0]);
        // Δ* = 1, 2, 0, -1 → ≤0: 2, ≥0: 3 → p = 2·2/4 = 1.
        assert_eq!(d.p, 1.0);
        let d = paired_difference(0.1, &[1.0, 2.0, 3.0, 4.0], &[0.0, 0.0, 0.0, 5.0]);
        assert_eq!(d.p, 0.5);
        assert_eq!(d.delta, 0.1);
    }
}
