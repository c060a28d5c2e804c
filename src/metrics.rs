//! Per-task metrics, as scikit-learn computes them.
use serde::{Deserialize, Serialize};

/// The three per-task scores of the GENEB result schema.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    #[serde(rename = "MCC")]
    pub mcc: f64,
    #[serde(rename = "Acc")]
    pub acc: f64,
    #[serde(rename = "F1")]
    pub f1: f64,
}

/// Scores of predictions against the truth (label indices): sklearn's `matthews_corrcoef`
/// (0 where it is undefined), `accuracy_score` and `f1_score(average="macro")` over the
/// labels present in either array. Empty input scores 0 everywhere.
///
/// # Panics
/// If the two slices differ in length (a caller bug, not a user error).
pub fn score(y_true: &[usize], y_pred: &[usize]) -> Scores {
    assert_eq!(
        y_true.len(),
        y_pred.len(),
        "y_true and y_pred differ in length"
    );
    let n = y_true.len();
    if n == 0 {
        return Scores {
            mcc: 0.0,
            acc: 0.0,
            f1: 0.0,
        };
    }
    // Confusion counts over the union of labels, in ascending label order (LabelEncoder).
    let mut labels: Vec<usize> = y_true.iter().chain(y_pred).copied().collect();
    labels.sort_unstable();
    labels.dedup();
    let idx = |v: &usize| labels.binary_search(v).unwrap_or_default();
    let l = labels.len();
    let mut t_sum = vec![0u64; l];
    let mut p_sum = vec![0u64; l];
    let mut correct = vec![0u64; l];
    for (t, p) in y_true.iter().zip(y_pred) {
        let (ti, pi) = (idx(t), idx(p));
        t_sum[ti] += 1;
        p_sum[pi] += 1;
        if ti == pi {
            correct[ti] += 1;
        }
    }
    let n_correct: u64 = correct.iter().sum();

    let mcc = mcc_from_counts(&t_sum, &p_sum, n_correct);
    // F1 per label = 2·tp / (|true| + |pred|); every label of the union has a positive
    // denominator, so sklearn's zero_division never applies.
    let f1 = (0..l)
        .map(|i| 2.0 * correct[i] as f64 / (t_sum[i] + p_sum[i]) as f64)
        .sum::<f64>()
        / l as f64;

    Scores {
        mcc,
        acc: n_correct as f64 / n as f64,
        f1,
    }
}

/// sklearn's multiclass MCC from per-class counts (how often each class is true and predicted)
/// and the number of correct predictions; 0 where it is undefined. The bootstrap calls it on
/// resampled counts directly, which spares it building resampled label vectors.
pub fn mcc_from_counts(t_sum: &[u64], p_sum: &[u64], n_correct: u64) -> f64 {
    // sklearn's formula, in f64 as it does (counts are exact integers there).
    let n: u64 = t_sum.iter().sum();
    let nf = n as f64;
    let tp_dot: f64 = t_sum
        .iter()
        .zip(p_sum)
        .map(|(&t, &p)| t as f64 * p as f64)
        .sum();
    let pp_dot: f64 = p_sum.iter().map(|&p| (p as f64).powi(2)).sum();
    let tt_dot: f64 = t_sum.iter().map(|&t| (t as f64).powi(2)).sum();
    let cov_ytyp = n_correct as f64 * nf - tp_dot;
    let cov_ypyp = nf * nf - pp_dot;
    let cov_ytyt = nf * nf - tt_dot;
    let denom = cov_ypyp * cov_ytyt;
    if denom == 0.0 {
        0.0
    } else {
        cov_ytyp / denom.sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docstring_example() {
        // sklearn's matthews_corrcoef docstring: [+1, +1, +1, -1] vs [+1, -1, +1, +1] → -0.33.
        let s = score(&[1, 1, 1, 0], &[1, 0, 1, 1]);
        assert!((s.mcc - (-1.0 / 3.0)).abs() < 1e-15, "{}", s.mcc);
        assert_eq!(s.acc, 0.5);
        // F1 for label 0: 0; for label 1: 2·2/(3+3) = 2/3.
        assert!((s.f1 - 1.0 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn degenerate_cases() {
        // One predicted class: MCC denominator 0 → 0.
        let s = score(&[0, 1, 1, 2], &[1, 1, 1, 1]);
        assert_eq!(s.mcc, 0.0);
        assert_eq!(s.acc, 0.5);
        // Perfect.
        let s = score(&[2, 0, 5], &[2, 0, 5]);
        assert_eq!((s.mcc, s.acc, s.f1), (1.0, 1.0, 1.0));
        // One class on both sides.
        let s = score(&[3, 3], &[3, 3]);
        assert_eq!((s.mcc, s.acc, s.f1), (0.0, 1.0, 1.0));
        assert_eq!(
            score(&[], &[]),
            Scores {
                mcc: 0.0,
                acc: 0.0,
                f1: 0.0
            }
        );
    }
}
