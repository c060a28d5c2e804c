//! The per-category profile (PROTOCOL.md "Metrics and aggregation"): category score = mean of
//! its tasks' MCC, macro = mean of the categories, micro = mean of the tasks; per regime, with
//! the few-shot spread over seeds. GENEB's point is that this table is read by column: rankings
//! flip between categories, so no single number stands for a model.

use crate::protocol::{self, CATEGORIES, Regime};
use crate::report::Submission;
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
        .map(|&regime| RegimeProfile {
            regime: regime.to_string(),
            rows: submissions
                .iter()
                .filter_map(|sub| model_row(sub, regime))
                .collect(),
        })
        .collect();
    Ok(Profile {
        categories,
        regimes,
        tasks: tasks.into_values().collect(),
        metric: "MCC",
    })
}

fn model_row(sub: &Submission, regime: &str) -> Option<ModelRow> {
    let scores = sub.results.get(regime)?;
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
    Some(ModelRow {
        model: sub.meta.display.clone(),
        categories,
        macro_mean: mean(&category_values),
        micro_mean: mean(&task_values),
    })
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
    out
}
