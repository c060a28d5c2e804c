//! Rank statistics for reading profiles: how far parameter count predicts score (Spearman's ρ)
//! and how far two categories order models alike (Kendall's τ-b), as scipy computes them
//! (ties get average ranks; τ-b corrects for ties in either variable).

/// 1-based ranks, ties sharing the mean of the ranks they span (scipy's `rankdata` "average").
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let shared = (start + end + 1) as f64 / 2.0; // mean of ranks start+1 ..= end
        order[start..end].iter().for_each(|&i| ranks[i] = shared);
        start = end;
    }
    ranks
}

/// Pearson's r; `None` when the lengths differ, there are fewer than two points, or either
/// variable is constant (scipy returns NaN there).
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Spearman's ρ: Pearson's r of the average ranks.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    pearson(&average_ranks(x), &average_ranks(y))
}

/// Kendall's τ-b over all pairs (O(n²): profiles rank tens of models, not thousands).
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let (mut concordant_minus_discordant, mut untied_x, mut untied_y) = (0.0, 0.0, 0.0);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let dx = (x[i] - x[j]).signum() * f64::from(x[i] != x[j]);
            let dy = (y[i] - y[j]).signum() * f64::from(y[i] != y[j]);
            concordant_minus_discordant += dx * dy;
            untied_x += dx.abs();
            untied_y += dy.abs();
        }
    }
    (untied_x > 0.0 && untied_y > 0.0)
        .then(|| concordant_minus_discordant / (untied_x * untied_y).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values printed by scipy 1.x: rankdata, spearmanr, kendalltau (τ-b).
    const X: [f64; 6] = [1.0, 2.0, 2.0, 3.0, 5.0, 4.0];
    const Y: [f64; 6] = [2.0, 1.0, 3.0, 3.0, 6.0, 5.0];

    #[test]
    fn ranks_average_ties() {
        assert_eq!(average_ranks(&X), [1.0, 2.5, 2.5, 4.0, 6.0, 5.0]);
    }

    #[test]
    fn spearman_and_kendall_equal_scipy_with_ties() {
        assert!((spearman(&X, &Y).unwrap() - 0.8676470588235294).abs() < 1e-12);
        assert!((kendall_tau_b(&X, &Y).unwrap() - 0.7857142857142858).abs() < 1e-12);
    }

    #[test]
    fn undefined_cases_are_none_not_nan() {
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(kendall_tau_b(&[1.0], &[2.0]), None);
        assert_eq!(pearson(&[1.0, 2.0], &[1.0]), None);
    }
}
