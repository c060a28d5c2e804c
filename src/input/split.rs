//! Splits for tables that have none (a clinic's table of sequences and labels), made the same
//! way natively and in the page, and recorded in the result as a deviation from GENEB, whose
//! tasks come with fixed splits.
//!
//! - **Train/test** (default): scikit-learn's `train_test_split(rows, test_size=f,
//!   random_state=seed, stratify=y)`, reproduced exactly (its `StratifiedShuffleSplit` on numpy's
//!   legacy `RandomState`: `_approximate_mode` per class, a permutation per class, then the
//!   train and test rows each permuted), so a Python user gets the same rows in the same order.
//! - **k folds** (`folds`): scikit-learn's `StratifiedKFold(k, shuffle=True, random_state=seed)`,
//!   exactly; every fold is evaluated and the scores are the mean over folds (see [`crate::submission::folds`]).
//! - **By group** (`group_column`, e.g. a patient or donor id): every group on one side. Groups are
//!   shuffled (numpy legacy `permutation` of the groups in first-seen order), ordered by size
//!   (largest first, ties kept in shuffled order), and each goes to the side (or fold) that most
//!   needs its classes: the largest `Σ_c g_c · (1 − have_c / target_c)`, plus a class's whole
//!   count where that side has none of it yet. So the classes are stratified as far as the groups
//!   allow, and every class reaches every side when its groups can.
//! - **By similarity** (`by_similarity`): the groups are the clusters of rows linked by exact,
//!   reverse-complement and near-copy relations (`crate::input::audit::similarity_clusters`),
//!   then split as groups are, so no test row has a relative in train.

use crate::rng::{RandomState, permutation};
use crate::task::{MadeSplit, TaskData};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The share of rows put into the test split when the user names none (scikit-learn's default
/// is 0.25; 0.2 keeps more rows to train on in small cohorts).
pub const DEFAULT_TEST_FRACTION: f64 = 0.2;
/// The split's seed when the user names none.
pub const DEFAULT_SEED: u32 = 42;

/// How to split a table that has no split column. Ignored for tables that have one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SplitSettings {
    /// Share of rows (or, by group, of each class's rows as far as groups allow) in the test
    /// split; not used with `folds`.
    pub test_fraction: f64,
    pub seed: u32,
    /// A column of the table whose value (a patient, a donor) must stay on one side.
    pub group_column: Option<String>,
    /// k-fold cross-validation instead of one train/test split.
    pub folds: Option<usize>,
    /// Keep relatives together: rows linked by exact, reverse-complement or near-copy
    /// relations (`crate::input::audit::similarity_clusters`) are split as groups are.
    pub by_similarity: bool,
}

impl Default for SplitSettings {
    fn default() -> Self {
        SplitSettings {
            test_fraction: DEFAULT_TEST_FRACTION,
            seed: DEFAULT_SEED,
            group_column: None,
            folds: None,
            by_similarity: false,
        }
    }
}

impl SplitSettings {
    pub fn check(&self) -> Result<()> {
        if !(self.test_fraction > 0.0 && self.test_fraction < 1.0) {
            return Err(Error::new(format!(
                "the test fraction must be between 0 and 1 (exclusive), not {}",
                self.test_fraction
            )));
        }
        if let Some(k) = self.folds
            && k < 2
        {
            return Err(Error::new(format!(
                "k-fold needs at least 2 folds, not {k}"
            )));
        }
        if self
            .group_column
            .as_deref()
            .is_some_and(|c| c.trim().is_empty())
        {
            return Err(Error::new("the group column name is empty"));
        }
        if self.by_similarity && self.group_column.is_some() {
            return Err(Error::new(
                "split by similarity or by a group column, not both: each makes the groups",
            ));
        }
        Ok(())
    }
}

/// One split of the table's rows: data-row indices in the order each side holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sides {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

/// The splits of a table without a split column: one, or one per fold. `y` are class indices
/// in sorted label order, `labels` their names, `groups` the group column's cell of each row;
/// `source` names the file in errors.
pub fn make(
    y: &[usize],
    labels: &[String],
    groups: Option<&[String]>,
    settings: &SplitSettings,
    source: &str,
) -> Result<Vec<(Sides, MadeSplit)>> {
    settings.check()?;
    let err = |m: String| Error::in_file(source, m);
    let n_classes = labels.len();
    let mut counts = vec![0usize; n_classes];
    y.iter().for_each(|&c| counts[c] += 1);
    let record = |method: &str, groups: Option<usize>| MadeSplit {
        method: method.to_string(),
        seed: settings.seed,
        test_fraction: settings.folds.is_none().then_some(settings.test_fraction),
        folds: settings.folds,
        fold: None,
        group_column: settings.group_column.clone(),
        groups,
        test_rows: Vec::new(),
    };
    // Every fold tests at least one row: more folds than rows is an error, before the folds'
    // shares (one per fold) are made.
    if let Some(k) = settings.folds
        && k > y.len()
    {
        return Err(err(format!(
            "{k} folds need at least {k} rows, the table has {}; use fewer folds",
            y.len()
        )));
    }
    let (sides, method, n_groups) = match (groups, settings.folds) {
        (None, None) => {
            for (c, &n) in counts.iter().enumerate() {
                if n < 2 {
                    return Err(err(format!(
                        "class {} has only {n} row: it cannot be in both the train and the test \
                         split; add rows or drop the class",
                        show(&labels[c])
                    )));
                }
            }
            let sides =
                train_test_split(y, &counts, settings.test_fraction, settings.seed).map_err(err)?;
            (vec![sides], "train_test_split (stratified)", None)
        }
        (None, Some(k)) => {
            for (c, &n) in counts.iter().enumerate() {
                if n < k {
                    return Err(err(format!(
                        "class {} has only {n} row(s), fewer than the {k} folds: every fold's \
                         test split needs one; use fewer folds or drop the class",
                        show(&labels[c])
                    )));
                }
            }
            (
                stratified_kfold(y, n_classes, k, settings.seed),
                "StratifiedKFold (shuffled)",
                None,
            )
        }
        (Some(groups), folds) => {
            let column = settings
                .group_column
                .as_deref()
                .unwrap_or(SIMILARITY_CLUSTERS);
            let shares = match folds {
                None => vec![1.0 - settings.test_fraction, settings.test_fraction],
                Some(k) => vec![1.0 / k as f64; k],
            };
            let (bins, n_groups) =
                by_group(y, labels, groups, &shares, settings.seed, column).map_err(err)?;
            let sides = match folds {
                None => {
                    let mut bins = bins.into_iter();
                    let train = bins.next().unwrap_or_default();
                    let test = bins.next().unwrap_or_default();
                    vec![Sides { train, test }]
                }
                Some(_) => folds_to_sides(&bins, y.len()),
            };
            let method = if settings.by_similarity {
                "by similarity cluster (exact, reverse-complement and near copies kept on one \
                 side; stratified as far as the clusters allow)"
            } else {
                "by group (stratified as far as the groups allow)"
            };
            (sides, method, Some(n_groups))
        }
    };
    let n_folds = sides.len();
    Ok(sides
        .into_iter()
        .enumerate()
        .map(|(i, sides)| {
            let mut made = record(method, n_groups);
            made.fold = (n_folds > 1).then_some(i + 1);
            made.test_rows = sides.test.clone();
            (sides, made)
        })
        .collect())
}

/// What errors call the groups of a split by similarity.
const SIMILARITY_CLUSTERS: &str = "similarity clusters";

fn show(label: &str) -> String {
    format!("'{label}'")
}

/// scikit-learn's `train_test_split(..., stratify=y)` (`StratifiedShuffleSplit._iter_indices`
/// with one split): the rows of each side in the order it returns them.
fn train_test_split(
    y: &[usize],
    counts: &[usize],
    test_fraction: f64,
    seed: u32,
) -> std::result::Result<Sides, String> {
    let n = y.len();
    // `_validate_shuffle_split`: n_test = ceil(test_size * n), n_train = n - n_test.
    let n_test = (test_fraction * n as f64).ceil() as usize;
    let n_train = n.saturating_sub(n_test);
    let n_classes = counts.len();
    if n_train < n_classes || n_test < n_classes {
        return Err(format!(
            "{n} rows with a test fraction of {test_fraction} give {n_train} train and {n_test} \
             test rows, fewer than the {n_classes} classes: each side needs at least one row of \
             each class; change --test-fraction or add rows"
        ));
    }
    // Each class's rows in row order (numpy's stable argsort of the class indices).
    let mut class_rows: Vec<Vec<usize>> = vec![Vec::new(); n_classes];
    for (row, &c) in y.iter().enumerate() {
        class_rows[c].push(row);
    }
    let mut rng = RandomState::new(seed);
    let n_i = approximate_mode(counts, n_train, &mut rng);
    let remaining: Vec<usize> = counts.iter().zip(&n_i).map(|(c, t)| c - t).collect();
    let t_i = approximate_mode(&remaining, n_test, &mut rng);
    let (mut train, mut test) = (Vec::with_capacity(n_train), Vec::with_capacity(n_test));
    for (c, rows) in class_rows.iter().enumerate() {
        let permuted: Vec<usize> = permutation(&mut rng, counts[c])
            .into_iter()
            .map(|i| rows[i])
            .collect();
        train.extend_from_slice(&permuted[..n_i[c]]);
        test.extend_from_slice(&permuted[n_i[c]..n_i[c] + t_i[c]]);
    }
    let permute = |rows: Vec<usize>, rng: &mut RandomState| -> Vec<usize> {
        permutation(rng, rows.len())
            .into_iter()
            .map(|i| rows[i])
            .collect()
    };
    let train = permute(train, &mut rng);
    let test = permute(test, &mut rng);
    Ok(Sides { train, test })
}

/// scikit-learn's `_approximate_mode(class_counts, n_draws, rng)`: each class's share of
/// `n_draws`, floored, then the rest to the largest remainders, ties broken by
/// `rng.choice(tied, size, replace=False)` (numpy legacy: a permutation, first `size`).
fn approximate_mode(counts: &[usize], n_draws: usize, rng: &mut RandomState) -> Vec<usize> {
    let total = counts.iter().sum::<usize>() as f64;
    let continuous: Vec<f64> = counts
        .iter()
        .map(|&c| c as f64 / total * n_draws as f64)
        .collect();
    let mut floored: Vec<f64> = continuous.iter().map(|v| v.floor()).collect();
    let mut need = n_draws as i64 - floored.iter().sum::<f64>() as i64;
    if need > 0 {
        let remainder: Vec<f64> = continuous
            .iter()
            .zip(&floored)
            .map(|(c, f)| c - f)
            .collect();
        let mut values = remainder.clone();
        values.sort_by(|a, b| b.total_cmp(a));
        values.dedup();
        for value in values {
            let tied: Vec<usize> = (0..remainder.len())
                .filter(|&i| remainder[i] == value)
                .collect();
            let add_now = tied.len().min(need as usize);
            for i in permutation(rng, tied.len()).into_iter().take(add_now) {
                floored[tied[i]] += 1.0;
            }
            need -= add_now as i64;
            if need == 0 {
                break;
            }
        }
    }
    floored.into_iter().map(|v| v as usize).collect()
}

/// scikit-learn's `StratifiedKFold(k, shuffle=True, random_state=seed)`: the fold of each row
/// (`_make_test_folds`), then each fold's train and test rows in row order.
fn stratified_kfold(y: &[usize], n_classes: usize, k: usize, seed: u32) -> Vec<Sides> {
    // Classes numbered by first appearance, as `_make_test_folds` encodes them.
    let mut by_appearance = vec![usize::MAX; n_classes];
    let mut next = 0;
    for &c in y {
        if by_appearance[c] == usize::MAX {
            by_appearance[c] = next;
            next += 1;
        }
    }
    let encoded: Vec<usize> = y.iter().map(|&c| by_appearance[c]).collect();
    let mut sorted = encoded.clone();
    sorted.sort_unstable();
    // allocation[c][f]: rows of class c in fold f, dealt round robin over the sorted labels.
    let mut allocation = vec![vec![0usize; k]; next];
    for (i, &c) in sorted.iter().enumerate() {
        allocation[c][i % k] += 1;
    }
    let mut fold_of = vec![0usize; y.len()];
    let mut rng = RandomState::new(seed);
    for (c, per_fold) in allocation.iter().enumerate() {
        let blocks: Vec<usize> = per_fold
            .iter()
            .enumerate()
            .flat_map(|(f, &n)| std::iter::repeat_n(f, n))
            .collect();
        let order = permutation(&mut rng, blocks.len());
        // `rng.shuffle(x)` leaves x[i] = original[order[i]], as `permutation` does.
        let shuffled = order.iter().map(|&i| blocks[i]);
        let rows = (0..y.len()).filter(|&r| encoded[r] == c);
        for (row, fold) in rows.zip(shuffled) {
            fold_of[row] = fold;
        }
    }
    let bins: Vec<Vec<usize>> = (0..k)
        .map(|f| (0..y.len()).filter(|&r| fold_of[r] == f).collect())
        .collect();
    folds_to_sides(&bins, y.len())
}

/// Fold f's test rows are bin f, its train rows all others, each in row order.
fn folds_to_sides(bins: &[Vec<usize>], n: usize) -> Vec<Sides> {
    let mut fold_of = vec![0usize; n];
    for (f, rows) in bins.iter().enumerate() {
        rows.iter().for_each(|&r| fold_of[r] = f);
    }
    (0..bins.len())
        .map(|f| Sides {
            train: (0..n).filter(|&r| fold_of[r] != f).collect(),
            test: bins[f].clone(),
        })
        .collect()
}

/// Rows into `shares.len()` bins, every group in one bin (see the module doc); each bin's rows
/// in row order, and the number of groups.
fn by_group(
    y: &[usize],
    labels: &[String],
    groups: &[String],
    shares: &[f64],
    seed: u32,
    column: &str,
) -> std::result::Result<(Vec<Vec<usize>>, usize), String> {
    let n_classes = labels.len();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut names: Vec<&str> = Vec::new();
    let group_of: Vec<usize> = groups
        .iter()
        .map(|g| {
            *index.entry(g.as_str()).or_insert_with(|| {
                names.push(g.as_str());
                names.len() - 1
            })
        })
        .collect();
    let n_groups = names.len();
    let bins = shares.len();
    if n_groups < bins {
        let what = if bins == 2 {
            "a train/test split needs at least 2".to_string()
        } else {
            format!("{bins} folds need at least {bins}")
        };
        return Err(format!(
            "the group column '{column}' has only {n_groups} group(s) ({}): {what}, as every \
             group stays on one side",
            names.join(", ")
        ));
    }
    let mut counts = vec![vec![0usize; n_classes]; n_groups];
    for (&g, &c) in group_of.iter().zip(y) {
        counts[g][c] += 1;
    }
    for c in 0..n_classes {
        let holders: Vec<&str> = (0..n_groups)
            .filter(|&g| counts[g][c] > 0)
            .map(|g| names[g])
            .collect();
        if holders.len() < bins {
            return Err(format!(
                "class {} is in only {} group(s) of '{column}' ({}): it cannot be on {} sides \
                 with every group kept on one side; add groups with that class or drop it",
                show(&labels[c]),
                holders.len(),
                holders.join(", "),
                bins
            ));
        }
    }
    let class_total: Vec<f64> = (0..n_classes)
        .map(|c| counts.iter().map(|g| g[c]).sum::<usize>() as f64)
        .collect();
    let mut order = permutation(&mut RandomState::new(seed), n_groups);
    let size = |g: usize| counts[g].iter().sum::<usize>();
    order.sort_by_key(|&g| std::cmp::Reverse(size(g))); // stable: ties stay shuffled
    let mut have = vec![vec![0usize; n_classes]; bins];
    let mut bin_of_group = vec![0usize; n_groups];
    for g in order {
        let need = |b: usize| -> f64 {
            (0..n_classes)
                .filter(|&c| counts[g][c] > 0)
                .map(|c| {
                    let target = shares[b] * class_total[c];
                    let gc = counts[g][c] as f64;
                    let missing = if have[b][c] == 0 { gc } else { 0.0 };
                    gc * (1.0 - have[b][c] as f64 / target) + missing
                })
                .sum()
        };
        // The largest need; among equals the emptiest bin, then the first.
        let fill = |b: usize| have[b].iter().sum::<usize>() as f64 / shares[b];
        let best = (0..bins)
            .max_by(|&a, &b| {
                need(a)
                    .total_cmp(&need(b))
                    .then(fill(b).total_cmp(&fill(a)))
                    .then(b.cmp(&a))
            })
            .unwrap_or(0);
        bin_of_group[g] = best;
        for c in 0..n_classes {
            have[best][c] += counts[g][c];
        }
    }
    for (b, counts) in have.iter().enumerate() {
        if let Some(c) = (0..n_classes).find(|&c| counts[c] == 0) {
            let side = match (bins, b) {
                (2, 0) => "train split".to_string(),
                (2, _) => "test split".to_string(),
                _ => format!("fold {}", b + 1),
            };
            return Err(format!(
                "with every '{column}' group on one side, class {} ends up with no row in the \
                 {side} (its groups are few or large): use another --split-seed, fewer folds, \
                 or drop the class",
                show(&labels[c])
            ));
        }
    }
    let rows = (0..bins)
        .map(|b| {
            (0..y.len())
                .filter(|&r| bin_of_group[group_of[r]] == b)
                .collect()
        })
        .collect();
    Ok((rows, n_groups))
}

/// The id a fold of `id` is evaluated under; [`crate::submission::folds::merge`] puts its scores back under `id`.
pub fn fold_id(id: &str, fold: usize, folds: usize) -> String {
    format!("{id}#fold{fold}of{folds}")
}

/// A task's id and how geneb split it, if it did: what the result's split records need.
pub type SplitOf<'t> = (&'t str, Option<&'t MadeSplit>);

/// The splits of tasks read from sequences.
pub fn splits_of(tasks: &[TaskData]) -> Vec<SplitOf<'_>> {
    tasks
        .iter()
        .map(|t| (t.task.id.as_str(), t.data.made_split.as_ref()))
        .collect()
}

/// The id a task's scores are reported under: its own, or for a fold the task's.
pub fn reported_id<'t>((id, made): SplitOf<'t>) -> &'t str {
    match made {
        Some(MadeSplit {
            fold: Some(_),
            folds: Some(_),
            ..
        }) => id.rsplit_once("#fold").map_or(id, |(base, _)| base),
        _ => id,
    }
}

/// The result's statement of every split geneb made, one line per task.
pub fn deviations(tasks: &[SplitOf]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for &task in tasks {
        let Some(made) = task.1 else {
            continue;
        };
        if made.fold.is_some_and(|f| f > 1) {
            continue; // one line per task, not per fold
        }
        let how = match (made.folds, made.test_fraction) {
            (Some(k), _) => format!(
                "{k}-fold cross-validation; its scores are the mean over the folds (each fold's \
                 in `folds`)"
            ),
            (None, Some(f)) => format!("one train/test split with {} % test rows", f * 100.0),
            (None, None) => "a split".to_string(),
        };
        let groups = match (&made.group_column, made.groups) {
            (Some(column), Some(n)) => {
                format!(", every one of the {n} groups of column '{column}' on one side")
            }
            (None, Some(n)) => format!(
                ", every one of the {n} clusters of related sequences (exact, \
                 reverse-complement and near copies, containment of informative 21-mers >= {}) \
                 on one side",
                crate::input::audit::NEAR_COPY
            ),
            _ => String::new(),
        };
        out.push(format!(
            "task {} has no split column: geneb made {how} ({}, seed {}{groups}); GENEB's tasks \
             have fixed splits, so these scores are not comparable to the published ones",
            reported_id(task),
            made.method,
            made.seed
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approximate_mode_matches_its_docstring_examples() {
        // sklearn.utils.extmath._approximate_mode's own doctests.
        assert_eq!(
            approximate_mode(&[4, 2], 3, &mut RandomState::new(0)),
            [2, 1]
        );
        assert_eq!(
            approximate_mode(&[5, 2], 4, &mut RandomState::new(0)),
            [3, 1]
        );
        assert_eq!(
            approximate_mode(&[2, 2, 2, 1], 2, &mut RandomState::new(0)),
            [0, 1, 1, 0]
        );
        assert_eq!(
            approximate_mode(&[2, 2, 2, 1], 2, &mut RandomState::new(42)),
            [1, 1, 0, 0]
        );
    }
}
