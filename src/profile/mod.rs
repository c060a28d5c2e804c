//! The per-category profile (PROTOCOL.md "Metrics and aggregation"): category score = mean of
//! its tasks' MCC, macro = mean of the categories, micro = mean of the tasks; per regime, with
//! the few-shot spread over seeds. GENEB's point is that this table is read by column: rankings
//! flip between categories, so no single number stands for a model.
//!
//! `analysis` reads the profile the way the paper does — bootstrap intervals and paired tests
//! (`bootstrap`), ranks and their instability (`stats`), which layer of a model to probe
//! (`layers`), the published leaderboard as context
//! (`published`) — and `crate::report` renders it (tables, SVG, HTML).

pub mod analysis;
pub mod bootstrap;
pub mod budget;
pub mod layers;
pub mod published;
pub mod stats;

use crate::input::audit::{TaskAudit, Verdict};
use crate::metrics::Scores;
use crate::protocol::{self, CATEGORIES, Regime};
use crate::submission::Submission;
use crate::task::catalogue;
use crate::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    /// Categories present, GENEB's published order first, others after (alphabetically).
    pub categories: Vec<String>,
    pub regimes: Vec<RegimeProfile>,
    pub tasks: Vec<TaskRow>,
    pub metric: &'static str,
    /// Each task's leak audit (the first result that records it), in task order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub audit: Vec<TaskAudit>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RegimeProfile {
    pub regime: String,
    pub rows: Vec<ModelRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelRow {
    pub model: String,
    pub categories: BTreeMap<String, Cell>,
    #[serde(rename = "macro")]
    pub macro_mean: f64,
    #[serde(rename = "micro")]
    pub micro_mean: f64,
    /// How many tasks and categories macro and micro average over: only a full GENEB run
    /// (100 tasks, 13 categories) is comparable with the leaderboard's figures.
    pub n_tasks: usize,
    pub n_categories: usize,
    /// The task scores the row aggregates (few-shot: means over seeds).
    #[serde(rename = "tasks")]
    pub task_scores: BTreeMap<String, Scores>,
    /// The same MCCs over the test rows that did not leak, where the result records them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leak_free: Option<LeakFreeRow>,
}

/// A model row's MCCs over the test rows that did not leak: a task's from the result
/// (`None` when all its test rows leaked), a category's the mean of its tasks that have one,
/// macro the mean of those categories, micro of those tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeakFreeRow {
    pub categories: BTreeMap<String, f64>,
    #[serde(rename = "macro")]
    pub macro_mean: Option<f64>,
    #[serde(rename = "micro")]
    pub micro_mean: Option<f64>,
    pub tasks: BTreeMap<String, Option<f64>>,
}

impl ModelRow {
    pub fn is_full_geneb(&self) -> bool {
        self.n_tasks == catalogue::tasks().len() && self.n_categories == CATEGORIES.len()
    }
}

/// A category's score; `std` is the spread of the category score over the few-shot seeds
/// (population std), `None` for the full-data regime.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cell {
    pub mean: f64,
    pub std: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskRow {
    pub id: String,
    pub category: String,
    pub n_train: Option<usize>,
    pub n_test: Option<usize>,
}

fn category_of(sub: &Submission, task: &str) -> String {
    sub.tasks
        .get(task)
        .map(|t| t.category.clone())
        .or_else(|| catalogue::category_of(task).map(str::to_string))
        .unwrap_or_else(|| protocol::UNCATEGORIZED.to_string())
}

fn category_rank(category: &str) -> (usize, String) {
    let published = CATEGORIES.iter().position(|c| *c == category);
    let uncategorized_last = if category == protocol::UNCATEGORIZED {
        1
    } else {
        0
    };
    (
        published.unwrap_or(CATEGORIES.len() + uncategorized_last),
        category.to_string(),
    )
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn population_std(values: &[f64]) -> f64 {
    let m = mean(values);
    (values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / values.len() as f64).sqrt()
}

/// Category → mean MCC of its tasks, for one set of task scores.
fn category_means(
    scores: &BTreeMap<&str, f64>,
    category: &dyn Fn(&str) -> String,
) -> BTreeMap<String, f64> {
    let mut grouped: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (task, mcc) in scores {
        grouped.entry(category(task)).or_default().push(*mcc);
    }
    grouped.into_iter().map(|(c, v)| (c, mean(&v))).collect()
}

pub fn build(submissions: &[Submission]) -> Result<Profile> {
    if submissions.is_empty() {
        return Err(Error::new("no result files to profile"));
    }
    let mut categories: Vec<String> = Vec::new();
    let mut tasks: BTreeMap<String, TaskRow> = BTreeMap::new();
    let mut regime_keys: Vec<&str> = Vec::new();
    for sub in submissions {
        for (regime, scores) in &sub.results {
            if !regime_keys.contains(&regime.as_str()) {
                regime_keys.push(regime);
            }
            for task in scores.keys() {
                let category = category_of(sub, task);
                if !categories.contains(&category) {
                    categories.push(category.clone());
                }
                let info = sub.tasks.get(task);
                tasks.entry(task.clone()).or_insert(TaskRow {
                    id: task.clone(),
                    category,
                    n_train: info.map(|t| t.n_train),
                    n_test: info.map(|t| t.n_test),
                });
            }
        }
    }
    categories.sort_by_key(|c| category_rank(c));
    regime_keys.sort_by_key(|k| Regime::parse(k).map_or(usize::MAX, |r| r as usize));

    let regimes = regime_keys
        .iter()
        .map(|&regime| {
            let rows = submissions
                .iter()
                .filter_map(|sub| model_row(sub, regime))
                .collect::<Result<Vec<_>>>()?;
            Ok(RegimeProfile {
                regime: regime.to_string(),
                rows,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut audit: BTreeMap<&str, &TaskAudit> = BTreeMap::new();
    for sub in submissions {
        for (task, a) in &sub.audit {
            audit.entry(task).or_insert(a);
        }
    }
    Ok(Profile {
        categories,
        regimes,
        tasks: tasks.into_values().collect(),
        metric: "MCC",
        audit: audit.into_values().cloned().collect(),
    })
}

/// `None` when the model has no results for the regime.
fn model_row(sub: &Submission, regime: &str) -> Option<Result<ModelRow>> {
    let scores = sub.results.get(regime)?;
    if scores.is_empty() {
        return Some(Err(Error::new(format!(
            "{}: the '{regime}' results list no task",
            sub.meta.display
        ))));
    }
    let category = |task: &str| category_of(sub, task);
    let mcc: BTreeMap<&str, f64> = scores.iter().map(|(t, s)| (t.as_str(), s.mcc)).collect();
    let means = category_means(&mcc, &category);
    // Few-shot spread: the category score of each seed, then its std across seeds.
    let per_seed = sub.fewshot.get(regime);
    let seed_count = per_seed
        .and_then(|m| m.values().map(Vec::len).min())
        .unwrap_or(0);
    let seed_categories: Vec<BTreeMap<String, f64>> = (0..seed_count)
        .filter_map(|s| {
            let per_task: BTreeMap<&str, f64> = per_seed?
                .iter()
                .filter_map(|(t, seeds)| Some((t.as_str(), seeds.get(s)?.scores.mcc)))
                .collect();
            Some(category_means(&per_task, &category))
        })
        .collect();
    let categories = means
        .iter()
        .map(|(c, &m)| {
            let spread: Vec<f64> = seed_categories
                .iter()
                .filter_map(|sc| sc.get(c).copied())
                .collect();
            let std = (!spread.is_empty()).then(|| population_std(&spread));
            (c.clone(), Cell { mean: m, std })
        })
        .collect();
    let category_values: Vec<f64> = means.values().copied().collect();
    let task_values: Vec<f64> = mcc.values().copied().collect();
    Some(Ok(ModelRow {
        model: sub.meta.display.clone(),
        categories,
        macro_mean: mean(&category_values),
        micro_mean: mean(&task_values),
        n_tasks: task_values.len(),
        n_categories: category_values.len(),
        task_scores: scores.clone(),
        leak_free: leak_free_row(sub, regime, &category),
    }))
}

fn leak_free_row(
    sub: &Submission,
    regime: &str,
    category: &dyn Fn(&str) -> String,
) -> Option<LeakFreeRow> {
    let per_task = sub.leak_free.get(regime).filter(|t| !t.is_empty())?;
    let scored: BTreeMap<&str, f64> = per_task
        .iter()
        .filter_map(|(t, l)| Some((t.as_str(), l.mcc?)))
        .collect();
    let categories = category_means(&scored, category);
    let values = |v: Vec<f64>| (!v.is_empty()).then(|| mean(&v));
    Some(LeakFreeRow {
        macro_mean: values(categories.values().copied().collect()),
        micro_mean: values(scored.values().copied().collect()),
        categories,
        tasks: per_task.iter().map(|(t, l)| (t.clone(), l.mcc)).collect(),
    })
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The profile as a plain-text table per regime (rows: models; columns: categories, macro,
/// micro), few-shot cells as mean±std.
pub fn to_text(profile: &Profile) -> String {
    let mut out = String::new();
    for regime in &profile.regimes {
        let mut header = vec![format!("{} ({})", regime.regime, profile.metric)];
        header.extend(profile.categories.iter().cloned());
        header.push("macro".into());
        header.push("micro".into());
        let mut rows = vec![header];
        for row in &regime.rows {
            let mut cells = vec![row.model.clone()];
            for c in &profile.categories {
                cells.push(match row.categories.get(c) {
                    Some(Cell { mean, std: Some(s) }) => format!("{mean:.3}±{s:.3}"),
                    Some(Cell { mean, std: None }) => format!("{mean:.3}"),
                    None => "–".into(),
                });
            }
            cells.push(format!("{:.3}", row.macro_mean));
            cells.push(format!("{:.3}", row.micro_mean));
            rows.push(cells);
            if let Some(clean) = &row.leak_free {
                let shown = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.3}"));
                let mut cells = vec![format!("  leak-free")];
                for c in &profile.categories {
                    cells.push(shown(clean.categories.get(c).copied()));
                }
                cells.push(shown(clean.macro_mean));
                cells.push(shown(clean.micro_mean));
                rows.push(cells);
            }
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for r in &rows {
            let line: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        out.push('\n');
    }
    if let Some(note) = scope_note(profile) {
        out.push_str(&note);
        out.push('\n');
    }
    out.push_str(&audit_text(&profile.audit));
    out
}

/// The leak audit's lines: how many tasks were audited, and each flagged task's findings.
pub fn audit_text(audit: &[TaskAudit]) -> String {
    if audit.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "leak audit ({}): `leak-free` rows score only the test rows that are not exact, \
         reverse-complement or near copies (>= {} of their informative canonical 21-mers in one \
         training row) of a training row; a task warns from {} % near / {} % exact copies or a \
         nearest-neighbour MCC of {}, and fails from {} % / {} % (seqleak's thresholds).\n",
        count(audit.len(), "task", "tasks"),
        crate::input::audit::NEAR_COPY,
        crate::input::audit::NEAR_WARN * 100.0,
        crate::input::audit::EXACT_WARN * 100.0,
        crate::input::audit::NEAREST_NEIGHBOUR_WARN,
        crate::input::audit::NEAR_FAIL * 100.0,
        crate::input::audit::EXACT_FAIL * 100.0,
    );
    for a in audit.iter().filter(|a| a.verdict != Verdict::Ok) {
        out.push_str(&format!(
            "  {} {}: {} of {} test rows leaked ({} exact, {} reverse-complement, {} near); \
             nearest-neighbour MCC {:.3}\n",
            a.verdict.name(),
            a.task,
            a.leaked_test_rows.len(),
            a.test,
            a.exact_copies,
            a.reverse_complement_copies,
            a.near_copies,
            a.nearest_neighbour_mcc
        ));
    }
    out
}

/// Said wherever macro and micro are shown: when a model's run is not the full GENEB task set,
/// its aggregates do not compare with the leaderboard's.
pub fn scope_note(profile: &Profile) -> Option<String> {
    let row = profile
        .regimes
        .iter()
        .flat_map(|r| &r.rows)
        .find(|r| !r.is_full_geneb())?;
    Some(format!(
        "macro and micro average the {} in {} given here (e.g. {}); only a full GENEB run \
         (100 tasks, 13 categories) compares with the published leaderboard.",
        count(row.n_tasks, "task", "tasks"),
        count(row.n_categories, "category", "categories"),
        row.model
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::submission::{Meta, SeedScores, TaskInfo};

    fn scores(mcc: f64) -> Scores {
        Scores {
            mcc,
            acc: 0.0,
            f1: 0.0,
        }
    }

    /// Three tasks in two categories, full data and a two-seed few-shot regime.
    fn submission() -> Submission {
        let tasks = [
            ("a", "Promoters", 0.2, [0.1, 0.3]),
            ("b", "Promoters", 0.4, [0.0, 0.2]),
            ("c", "Enhancers", 0.9, [0.5, 0.9]),
        ];
        let mut full = BTreeMap::new();
        let mut shot = BTreeMap::new();
        let mut per_seed = BTreeMap::new();
        let mut info = BTreeMap::new();
        for (id, category, mcc, seeds) in tasks {
            full.insert(id.to_string(), scores(mcc));
            shot.insert(id.to_string(), scores((seeds[0] + seeds[1]) / 2.0));
            per_seed.insert(
                id.to_string(),
                seeds
                    .iter()
                    .zip([13, 17])
                    .map(|(&m, seed)| SeedScores {
                        seed,
                        scores: scores(m),
                        converged: true,
                    })
                    .collect(),
            );
            info.insert(
                id.to_string(),
                TaskInfo {
                    category: category.into(),
                    n_train: 10,
                    n_test: 5,
                    n_classes: 2,
                    split: None,
                },
            );
        }
        Submission {
            schema_version: "1.0".into(),
            model_id: "m".into(),
            harness_version: "test".into(),
            meta: Meta {
                display: "m".into(),
                params: 0,
                url: String::new(),
                zero_shot: false,
                training_data: String::new(),
                provenance: String::new(),
                submitted_by: String::new(),
            },
            results: BTreeMap::from([("full".into(), full), ("10shot".into(), shot)]),
            tasks: info,
            fewshot: BTreeMap::from([("10shot".into(), per_seed)]),
            predictions: BTreeMap::new(),
            folds: BTreeMap::new(),
            audit: BTreeMap::new(),
            leak_free: BTreeMap::new(),
            protocol: None,
        }
    }

    #[test]
    fn macro_averages_categories_and_micro_averages_tasks() {
        let profile = build(&[submission()]).unwrap();
        assert_eq!(
            profile.categories,
            ["Promoters", "Enhancers"],
            "published order"
        );
        let full = &profile.regimes[0];
        assert_eq!(full.regime, "full");
        let row = &full.rows[0];
        assert!((row.categories["Promoters"].mean - 0.3).abs() < 1e-12);
        assert!((row.categories["Enhancers"].mean - 0.9).abs() < 1e-12);
        assert!((row.macro_mean - 0.6).abs() < 1e-12, "mean of 0.3 and 0.9");
        assert!(
            (row.micro_mean - 0.5).abs() < 1e-12,
            "mean of 0.2, 0.4, 0.9"
        );
        assert_eq!(
            (row.n_tasks, row.n_categories, row.is_full_geneb()),
            (3, 2, false)
        );
        assert_eq!(row.categories["Promoters"].std, None);
    }

    #[test]
    fn few_shot_spread_is_the_std_of_the_category_score_over_seeds() {
        let profile = build(&[submission()]).unwrap();
        let row = &profile.regimes[1].rows[0];
        assert_eq!(profile.regimes[1].regime, "10shot");
        // Promoters per seed: (0.1 + 0.0) / 2 = 0.05 and (0.3 + 0.2) / 2 = 0.25 → mean 0.15, std 0.1.
        let promoters = row.categories["Promoters"];
        assert!((promoters.mean - 0.15).abs() < 1e-12);
        assert!((promoters.std.unwrap() - 0.1).abs() < 1e-12);
        // Enhancers per seed 0.5 and 0.9 → std 0.2.
        assert!((row.categories["Enhancers"].std.unwrap() - 0.2).abs() < 1e-12);
    }

    #[test]
    fn an_empty_regime_is_an_error_not_nan() {
        let mut sub = submission();
        sub.results.insert("1shot".into(), BTreeMap::new());
        let err = build(&[sub]).unwrap_err();
        assert!(
            err.message.contains("'1shot' results list no task"),
            "{err}"
        );
    }

    #[test]
    fn the_text_table_says_when_macro_is_not_leaderboard_comparable() {
        let text = to_text(&build(&[submission()]).unwrap());
        assert!(
            text.contains("0.300") && text.contains("0.150±0.100"),
            "{text}"
        );
        assert!(text.contains("3 tasks in 2 categories"), "{text}");
    }
}
