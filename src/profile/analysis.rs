//! Everything a profile is read for, computed once for the CLI and the page alike: bootstrap
//! intervals (tasks → categories → macro), paired comparisons per category, ranks and their
//! instability across categories and label budgets, and the published leaderboard as context
//! with a "which model for this category, budget and size" answer.

use super::bootstrap::{self, Estimate, PairedDifference, Settings};
use super::budget::{CostBudget, ModelCost};
use super::published::{self, PublishedRow};
use super::{Profile, stats};
use crate::protocol::{CATEGORIES, Regime};
use crate::submission::Submission;
use crate::task::catalogue;
use crate::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// Credit line for every output that shows published figures.
pub const PUBLISHED_CREDIT: &str = "GENEB authors, arXiv 2606.04525, Apache-2.0";

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    #[serde(flatten)]
    pub profile: Profile,
    pub bootstrap: Settings,
    /// Parameter budget of the recommendations, if the user set one.
    pub max_params: Option<u64>,
    /// Time and memory budget of the recommendations (`budget`), each limit if set.
    pub cost_budget: CostBudget,
    pub uncertainty: Vec<Uncertainty>,
    pub paired: Vec<Paired>,
    pub ranks: Vec<Ranks>,
    pub category_agreement: Vec<CategoryAgreement>,
    pub reordering: Vec<Reordering>,
    pub params_vs_macro: Vec<ParamsCorrelation>,
    pub published: Vec<PublishedContext>,
    pub recommendations: Vec<Recommendation>,
    /// Each model whose results hold two or more of its layers: MCC by layer, the best layer
    /// and its gain over the last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<super::layers::LayerProfile>,
    /// What could not be computed and why, in plain words.
    pub notes: Vec<String>,
    pub credit: &'static str,
}

/// One model's intervals in one regime; empty maps where its file has no per-example evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Uncertainty {
    pub regime: String,
    pub model: String,
    pub tasks: BTreeMap<String, Estimate>,
    /// Only categories whose every task has evidence.
    pub categories: BTreeMap<String, Estimate>,
    #[serde(rename = "macro")]
    pub macro_estimate: Option<Estimate>,
}

/// "A vs B on this category": the difference of their category MCC on the same test examples.
#[derive(Debug, Clone, Serialize)]
pub struct Paired {
    pub regime: String,
    pub category: String,
    pub a: String,
    pub b: String,
    /// Tasks both models were scored on with identical test labels (the category's score here
    /// is over these).
    pub n_tasks: usize,
    #[serde(flatten)]
    pub difference: PairedDifference,
}

/// Rank 1 = best; ties share the average rank.
#[derive(Debug, Clone, Serialize)]
pub struct Ranks {
    pub regime: String,
    /// Model → category → rank (with "macro" as one more column).
    pub ranks: BTreeMap<String, BTreeMap<String, f64>>,
}

/// Kendall's τ-b between the model rankings of every two categories (over models scored on
/// both); `None` where fewer than two models or a constant column leave it undefined.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryAgreement {
    pub regime: String,
    pub categories: Vec<String>,
    pub tau: Vec<Vec<Option<f64>>>,
}

/// How a category's ranking under a few-shot regime compares with full data.
#[derive(Debug, Clone, Serialize)]
pub struct Reordering {
    pub regime: String,
    pub category: String,
    pub winner_full: String,
    pub winner: String,
    pub winner_changed: bool,
    /// Kendall's τ-b between the models' full-data and few-shot scores (1 = same order).
    pub tau: Option<f64>,
    pub n_models: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParamsCorrelation {
    pub regime: String,
    /// Over the user's models with a parameter count (meta.params > 0).
    pub yours: Option<f64>,
    pub n_yours: usize,
    /// Over those and the published official models.
    pub with_published: Option<f64>,
    pub n_with_published: usize,
}

/// The user's models next to the published leaderboard in one regime.
#[derive(Debug, Clone, Serialize)]
pub struct PublishedContext {
    pub regime: String,
    pub rows: Vec<ContextRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ContextRow {
    pub model: String,
    pub published: bool,
    /// A published row from GENEB's official runs (not a self-reported submission).
    pub official: bool,
    /// 0 when unknown.
    pub params: u64,
    pub categories: BTreeMap<String, f64>,
    #[serde(rename = "macro")]
    pub macro_mcc: f64,
    /// Categories where this row was scored on exactly the published GENEB tasks (always all
    /// of them for published rows); other scores are not directly comparable.
    pub comparable: Vec<String>,
    /// What the result measured (`protocol.cost`); None for published rows and older files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<ModelCost>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Recommendation {
    pub regime: String,
    pub category: String,
    pub model: String,
    pub published: bool,
    pub params: u64,
    pub mcc: f64,
    /// Your best model in this category and where it places among the candidates (by MCC,
    /// whether or not it is comparable).
    pub yours: Option<YourStanding>,
    pub candidates: usize,
    pub note: String,
    /// Your models a cost budget left out because their results measured no cost.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmeasured_cost: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct YourStanding {
    pub model: String,
    pub mcc: f64,
    pub place: usize,
    pub comparable: bool,
}

/// Per-example evidence of one model, regime and task, decoded, then resampled.
struct TaskEvidence {
    y_true: Vec<usize>,
    fits: Vec<Vec<usize>>,
    replicates: Vec<f64>,
}

/// `analyse_within` without a time or memory budget.
pub fn analyse(
    submissions: &[Submission],
    settings: Settings,
    max_params: Option<u64>,
) -> Result<Analysis> {
    analyse_within(submissions, settings, max_params, CostBudget::default())
}

/// The analysis, its recommendations within the parameter and cost budgets.
pub fn analyse_within(
    submissions: &[Submission],
    settings: Settings,
    max_params: Option<u64>,
    cost_budget: CostBudget,
) -> Result<Analysis> {
    cost_budget.check()?;
    if settings.replicates < 2 {
        return Err(Error::new(
            "the bootstrap needs at least 2 replicates (--bootstrap; the default is 1000)",
        ));
    }
    let submissions = distinct_names(submissions);
    let profile = super::build(&submissions)?;
    let mut notes = Vec::new();
    for sub in submissions.iter().filter(|s| s.predictions.is_empty()) {
        notes.push(format!(
            "{}: the result file has no per-example predictions (written before geneb recorded \
             them, or not by geneb), so it has no confidence intervals and no paired tests; \
             re-run geneb eval to get them",
            sub.meta.display
        ));
    }

    // regime → model index → task → evidence
    let mut evidence: BTreeMap<&str, Vec<BTreeMap<String, TaskEvidence>>> = BTreeMap::new();
    for regime in &profile.regimes {
        let per_model = evidence.entry(regime.regime.as_str()).or_default();
        for sub in &submissions {
            per_model.push(task_evidence(sub, &regime.regime)?);
        }
    }
    draw_replicates(&mut evidence, settings);
    let mut uncertainty = Vec::new();
    for regime in &profile.regimes {
        for (sub, tasks) in submissions.iter().zip(&evidence[regime.regime.as_str()]) {
            if let Some(scores) = sub.results.get(&regime.regime)
                && !tasks.is_empty()
            {
                uncertainty.push(intervals(sub, &regime.regime, scores, tasks, &profile));
            }
        }
    }

    let paired = paired_tests(&submissions, &evidence, &profile, &mut notes);
    let layers =
        super::layers::layer_profiles(&submissions, &profile, &uncertainty, &paired, &mut notes);
    let ranks = rank_tables(&profile);
    let category_agreement = profile
        .regimes
        .iter()
        .map(|r| {
            let tau = profile
                .categories
                .iter()
                .map(|a| {
                    profile
                        .categories
                        .iter()
                        .map(|b| {
                            let (x, y): (Vec<f64>, Vec<f64>) = r
                                .rows
                                .iter()
                                .filter_map(|row| {
                                    Some((row.categories.get(a)?.mean, row.categories.get(b)?.mean))
                                })
                                .unzip();
                            stats::kendall_tau_b(&x, &y)
                        })
                        .collect()
                })
                .collect();
            CategoryAgreement {
                regime: r.regime.clone(),
                categories: profile.categories.clone(),
                tau,
            }
        })
        .collect();
    let reordering = reorderings(&profile);
    let published = published_context(&submissions, &profile)?;
    let params_vs_macro = params_correlations(&published);
    let recommendations = recommend(&published, &profile, max_params, cost_budget);
    Ok(Analysis {
        profile,
        bootstrap: settings,
        max_params,
        cost_budget,
        uncertainty,
        paired,
        ranks,
        category_agreement,
        reordering,
        params_vs_macro,
        published,
        recommendations,
        layers,
        notes,
        credit: PUBLISHED_CREDIT,
    })
}

/// Display names made unique ("m", "m #2"), since every table is keyed by them.
fn distinct_names(submissions: &[Submission]) -> Vec<Submission> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    submissions
        .iter()
        .map(|s| {
            let mut s = s.clone();
            let count = seen.entry(s.meta.display.clone()).or_default();
            *count += 1;
            if *count > 1 {
                s.meta.display = format!("{} #{count}", s.meta.display);
            }
            s
        })
        .collect()
}

/// Bootstrap every piece of evidence, one resample stream per task and test length, shared by
/// every model and regime scored on it.
fn draw_replicates(
    evidence: &mut BTreeMap<&str, Vec<BTreeMap<String, TaskEvidence>>>,
    settings: Settings,
) {
    let mut groups: BTreeMap<(String, usize), Vec<&mut TaskEvidence>> = BTreeMap::new();
    for (task, e) in evidence.values_mut().flatten().flat_map(|m| m.iter_mut()) {
        groups
            .entry((task.clone(), e.y_true.len()))
            .or_default()
            .push(e);
    }
    for ((task, _), mut members) in groups {
        let entries: Vec<(&[usize], &[Vec<usize>])> = members
            .iter()
            .map(|e| (e.y_true.as_slice(), e.fits.as_slice()))
            .collect();
        let replicates = bootstrap::replicates(&entries, &task, settings);
        for (e, r) in members.iter_mut().zip(replicates) {
            e.replicates = r;
        }
    }
}

/// Decode and check every task of `regime` that carries evidence.
fn task_evidence(sub: &Submission, regime: &str) -> Result<BTreeMap<String, TaskEvidence>> {
    let Some(scores) = sub.results.get(regime) else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for (task, recorded) in scores {
        let Some(fits) = sub
            .predictions
            .get(task)
            .and_then(|p| Some((&p.y_true, p.regimes.get(regime)?)))
        else {
            continue;
        };
        let what = format!("model {}, task {task}, {regime}", sub.meta.display);
        let y_true = fits.0.decode(&what)?;
        let fits = fits
            .1
            .iter()
            .map(|f| f.decode(&what))
            .collect::<Result<Vec<_>>>()?;
        let expected_n = sub.tasks.get(task).map_or(y_true.len(), |t| t.n_test);
        if y_true.is_empty()
            || fits.is_empty()
            || y_true.len() != expected_n
            || fits.iter().any(|f| f.len() != y_true.len())
        {
            return Err(Error::new(format!(
                "{what}: the recorded predictions do not match the test split ({} labels, {} \
                 test examples, {} fits); the file was edited or damaged — re-run geneb eval",
                y_true.len(),
                expected_n,
                fits.len()
            )));
        }
        // The evidence must be the evidence of these very scores, or its intervals mean nothing.
        let mcc = fits
            .iter()
            .map(|f| crate::metrics::score(&y_true, f).mcc)
            .sum::<f64>()
            / fits.len() as f64;
        if (mcc - recorded.mcc).abs() > 1e-9 {
            return Err(Error::new(format!(
                "{what}: the recorded predictions give MCC {mcc:.6} but the file reports \
                 {:.6}; the file was edited — re-run geneb eval",
                recorded.mcc
            )));
        }
        out.insert(
            task.clone(),
            TaskEvidence {
                y_true,
                fits,
                replicates: Vec::new(),
            },
        );
    }
    Ok(out)
}

fn intervals(
    sub: &Submission,
    regime: &str,
    scores: &BTreeMap<String, crate::metrics::Scores>,
    tasks: &BTreeMap<String, TaskEvidence>,
    profile: &Profile,
) -> Uncertainty {
    let category_of = |task: &str| {
        profile
            .tasks
            .iter()
            .find(|t| t.id == task)
            .map_or(crate::protocol::UNCATEGORIZED, |t| t.category.as_str())
    };
    let task_estimates = tasks
        .iter()
        .map(|(t, e)| {
            (
                t.clone(),
                Estimate::from_replicates(scores[t].mcc, &e.replicates),
            )
        })
        .collect();
    let mut categories = BTreeMap::new();
    let mut category_replicates = Vec::new();
    for category in &profile.categories {
        let members: Vec<&str> = scores
            .keys()
            .map(String::as_str)
            .filter(|t| category_of(t) == category)
            .collect();
        let parts: Option<Vec<&[f64]>> = members
            .iter()
            .map(|t| tasks.get(*t).map(|e| e.replicates.as_slice()))
            .collect();
        let Some(parts) = parts.filter(|p| !p.is_empty()) else {
            continue;
        };
        let replicates = bootstrap::mean_replicates(&parts);
        let point = members.iter().map(|t| scores[*t].mcc).sum::<f64>() / members.len() as f64;
        categories.insert(
            category.clone(),
            Estimate::from_replicates(point, &replicates),
        );
        category_replicates.push((point, replicates));
    }
    let all_tasks_have_evidence = scores.keys().all(|t| tasks.contains_key(t));
    let macro_estimate = all_tasks_have_evidence.then(|| {
        let parts: Vec<&[f64]> = category_replicates
            .iter()
            .map(|(_, r)| r.as_slice())
            .collect();
        let point = category_replicates.iter().map(|(p, _)| p).sum::<f64>()
            / category_replicates.len() as f64;
        Estimate::from_replicates(point, &bootstrap::mean_replicates(&parts))
    });
    Uncertainty {
        regime: regime.to_string(),
        model: sub.meta.display.clone(),
        tasks: task_estimates,
        categories,
        macro_estimate,
    }
}

fn paired_tests(
    submissions: &[Submission],
    evidence: &BTreeMap<&str, Vec<BTreeMap<String, TaskEvidence>>>,
    profile: &Profile,
    notes: &mut Vec<String>,
) -> Vec<Paired> {
    let mut out = Vec::new();
    let mut unpaired = std::collections::BTreeSet::new();
    for (regime, per_model) in evidence {
        for a in 0..submissions.len() {
            for b in a + 1..submissions.len() {
                for category in &profile.categories {
                    // Tasks of the category both models were scored on, on the same examples.
                    let common: Vec<&str> = profile
                        .tasks
                        .iter()
                        .filter(|t| &t.category == category)
                        .map(|t| t.id.as_str())
                        .filter(|t| match (per_model[a].get(*t), per_model[b].get(*t)) {
                            (Some(x), Some(y)) if x.y_true == y.y_true => true,
                            (Some(_), Some(_)) => {
                                unpaired.insert((a, b, t.to_string()));
                                false
                            }
                            _ => false,
                        })
                        .collect();
                    if common.is_empty() {
                        continue;
                    }
                    let side = |m: usize| {
                        let parts: Vec<&[f64]> = common
                            .iter()
                            .map(|t| per_model[m][*t].replicates.as_slice())
                            .collect();
                        let point = common
                            .iter()
                            .map(|t| submissions[m].results[*regime][*t].mcc)
                            .sum::<f64>()
                            / common.len() as f64;
                        (point, bootstrap::mean_replicates(&parts))
                    };
                    let ((pa, ra), (pb, rb)) = (side(a), side(b));
                    out.push(Paired {
                        regime: regime.to_string(),
                        category: category.clone(),
                        a: submissions[a].meta.display.clone(),
                        b: submissions[b].meta.display.clone(),
                        n_tasks: common.len(),
                        difference: bootstrap::paired_difference(pa - pb, &ra, &rb),
                    });
                }
            }
        }
    }
    for (a, b, task) in unpaired {
        notes.push(format!(
            "{} and {} were scored on different test examples for task {task} (same id, other \
             labels): that task is left out of their paired comparison",
            submissions[a].meta.display, submissions[b].meta.display
        ));
    }
    out.sort_by_key(|p| regime_order(&p.regime));
    out
}

fn regime_order(key: &str) -> usize {
    Regime::parse(key).map_or(usize::MAX, |r| r as usize)
}

/// Ranks (1 = best, ties averaged) of the values given per model.
fn descending_ranks<'a>(values: impl Iterator<Item = (&'a str, f64)>) -> Vec<(&'a str, f64)> {
    let (models, scores): (Vec<&str>, Vec<f64>) = values.unzip();
    let negated: Vec<f64> = scores.iter().map(|s| -s).collect();
    models
        .into_iter()
        .zip(stats::average_ranks(&negated))
        .collect()
}

fn rank_tables(profile: &Profile) -> Vec<Ranks> {
    profile
        .regimes
        .iter()
        .map(|r| {
            let mut ranks: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
            let columns = profile
                .categories
                .iter()
                .map(String::as_str)
                .chain(["macro"]);
            for column in columns {
                let values = r.rows.iter().filter_map(|row| {
                    let score = if column == "macro" {
                        row.macro_mean
                    } else {
                        row.categories.get(column)?.mean
                    };
                    Some((row.model.as_str(), score))
                });
                for (model, rank) in descending_ranks(values) {
                    ranks
                        .entry(model.to_string())
                        .or_default()
                        .insert(column.to_string(), rank);
                }
            }
            Ranks {
                regime: r.regime.clone(),
                ranks,
            }
        })
        .collect()
}

fn reorderings(profile: &Profile) -> Vec<Reordering> {
    let Some(full) = profile.regimes.iter().find(|r| r.regime == "full") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for few in profile.regimes.iter().filter(|r| r.regime != "full") {
        for category in &profile.categories {
            let pairs: Vec<(&str, f64, f64)> = full
                .rows
                .iter()
                .filter_map(|f| {
                    let k = few.rows.iter().find(|k| k.model == f.model)?;
                    Some((
                        f.model.as_str(),
                        f.categories.get(category)?.mean,
                        k.categories.get(category)?.mean,
                    ))
                })
                .collect();
            if pairs.len() < 2 {
                continue;
            }
            let winner = |score: &dyn Fn(&(&str, f64, f64)) -> f64| {
                pairs
                    .iter()
                    .max_by(|x, y| score(x).total_cmp(&score(y)))
                    .map_or("", |p| p.0)
                    .to_string()
            };
            let (winner_full, winner) = (winner(&|p| p.1), winner(&|p| p.2));
            let (x, y): (Vec<f64>, Vec<f64>) = pairs.iter().map(|p| (p.1, p.2)).unzip();
            out.push(Reordering {
                regime: few.regime.clone(),
                category: category.clone(),
                winner_changed: winner_full != winner,
                winner_full,
                winner,
                tau: stats::kendall_tau_b(&x, &y),
                n_models: pairs.len(),
            });
        }
    }
    out
}

/// Categories in which a submission was scored on exactly the published GENEB tasks.
fn comparable_categories(sub: &Submission, regime: &str) -> Vec<String> {
    let Some(scores) = sub.results.get(regime) else {
        return Vec::new();
    };
    CATEGORIES
        .iter()
        .filter(|&&c| {
            let official = catalogue::tasks().iter().filter(|t| t.category == c);
            let scored = scores
                .keys()
                .filter(|t| catalogue::category_of(t) == Some(c))
                .count();
            scored > 0
                && official.clone().count() == scored
                && official.into_iter().all(|t| scores.contains_key(&t.id))
        })
        .map(|c| c.to_string())
        .collect()
}

fn published_context(
    submissions: &[Submission],
    profile: &Profile,
) -> Result<Vec<PublishedContext>> {
    let mut out = Vec::new();
    for regime in &profile.regimes {
        let Some(key) = Regime::parse(&regime.regime) else {
            continue;
        };
        let mut rows: Vec<ContextRow> = regime
            .rows
            .iter()
            .filter_map(|row| {
                let sub = submissions.iter().find(|s| s.meta.display == row.model)?;
                Some(ContextRow {
                    model: row.model.clone(),
                    published: false,
                    official: false,
                    params: sub.meta.params,
                    categories: row
                        .categories
                        .iter()
                        .map(|(c, cell)| (c.clone(), cell.mean))
                        .collect(),
                    macro_mcc: row.macro_mean,
                    comparable: comparable_categories(sub, &regime.regime),
                    cost: ModelCost::of(sub),
                })
            })
            .collect();
        rows.extend(published::rows(key)?.iter().map(published_row));
        rows.sort_by(|a, b| b.macro_mcc.total_cmp(&a.macro_mcc));
        out.push(PublishedContext {
            regime: regime.regime.clone(),
            rows,
        });
    }
    Ok(out)
}

fn published_row(row: &PublishedRow) -> ContextRow {
    let label = if row.official {
        row.display.clone()
    } else {
        format!("{} (self-reported)", row.display)
    };
    ContextRow {
        model: label,
        published: true,
        official: row.official,
        params: row.params,
        categories: row.category_mcc.clone(),
        macro_mcc: row.macro_mcc,
        comparable: CATEGORIES.iter().map(|c| c.to_string()).collect(),
        cost: None,
    }
}

fn params_correlations(context: &[PublishedContext]) -> Vec<ParamsCorrelation> {
    context
        .iter()
        .map(|c| {
            let with_params = |published: bool| {
                c.rows
                    .iter()
                    .filter(move |r| r.params > 0 && (!r.published || (published && r.official)))
                    .map(|r| (r.params as f64, r.macro_mcc))
                    .unzip::<f64, f64, Vec<f64>, Vec<f64>>()
            };
            let (yours, all) = (with_params(false), with_params(true));
            ParamsCorrelation {
                regime: c.regime.clone(),
                yours: stats::spearman(&yours.0, &yours.1),
                n_yours: yours.0.len(),
                with_published: stats::spearman(&all.0, &all.1),
                n_with_published: all.0.len(),
            }
        })
        .collect()
}

fn recommend(
    context: &[PublishedContext],
    profile: &Profile,
    max_params: Option<u64>,
    cost_budget: CostBudget,
) -> Vec<Recommendation> {
    let mut out = Vec::new();
    for c in context {
        for category in &profile.categories {
            let mut unknown_cost = Vec::new();
            let mut candidates: Vec<(&ContextRow, f64)> = c
                .rows
                .iter()
                .filter(|r| max_params.is_none_or(|m| r.params <= m))
                .filter_map(|r| Some((r, *r.categories.get(category)?)))
                .filter(|(r, _)| {
                    cost_budget.admits(r.cost.as_ref()).unwrap_or_else(|| {
                        unknown_cost.push(*r);
                        false
                    })
                })
                .collect();
            candidates.sort_by(|a, b| b.1.total_cmp(&a.1));
            // Only rows scored on GENEB's published tasks of the category can be the answer; the
            // user's other rows are placed among them for orientation.
            let published_here = candidates.iter().any(|(r, _)| r.published);
            let Some(&(best, mcc)) = candidates
                .iter()
                .find(|(r, _)| !published_here || r.comparable.contains(category))
            else {
                continue;
            };
            let yours = candidates
                .iter()
                .enumerate()
                .find(|(_, (r, _))| !r.published)
                .map(|(i, (r, m))| YourStanding {
                    model: r.model.clone(),
                    mcc: *m,
                    place: i + 1,
                    comparable: r.comparable.contains(category),
                });
            let mut note = Vec::new();
            if unknown_cost.iter().any(|r| r.published) {
                note.push(
                    "the published rows have no measured cost: your models within the budget only"
                        .to_string(),
                );
            } else if !published_here {
                note.push(format!(
                    "no published GENEB figures for {category}: your models only"
                ));
            }
            if let Some(y) = &yours
                && !y.comparable
                && published_here
            {
                note.push(format!(
                    "{} was scored on other tasks than GENEB's published {category} tasks: not \
                     directly comparable with the published rows",
                    y.model
                ));
            }
            let unknown_size: Vec<&str> = candidates
                .iter()
                .filter(|(r, _)| !r.published && r.params == 0)
                .map(|(r, _)| r.model.as_str())
                .collect();
            if max_params.is_some() && !unknown_size.is_empty() {
                note.push(format!(
                    "parameter count not recorded (meta.params = 0) for {}: kept despite the \
                     budget",
                    unknown_size.join(", ")
                ));
            }
            let unmeasured: Vec<String> = unknown_cost
                .iter()
                .filter(|r| !r.published)
                .map(|r| r.model.clone())
                .collect();
            if !unmeasured.is_empty() {
                note.push(format!(
                    "cost not measured for {}: left out under the cost budget",
                    unmeasured.join(", ")
                ));
            }
            out.push(Recommendation {
                regime: c.regime.clone(),
                category: category.clone(),
                model: best.model.clone(),
                published: best.published,
                params: best.params,
                mcc,
                yours,
                candidates: candidates.len(),
                note: note.join("; "),
                unmeasured_cost: unmeasured,
            });
        }
    }
    out
}

/// The profile tables, then what the statistics say, as plain text for the terminal.
pub fn to_text(analysis: &Analysis) -> String {
    let mut out = super::to_text(&analysis.profile);
    let section = |out: &mut String, title: &str| out.push_str(&format!("\n{title}\n"));
    for note in &analysis.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    if !analysis.uncertainty.is_empty() {
        section(
            &mut out,
            &format!(
                "95 % bootstrap intervals of macro MCC ({} replicates over test examples, seed {}):",
                analysis.bootstrap.replicates, analysis.bootstrap.seed
            ),
        );
        for u in &analysis.uncertainty {
            if let Some(e) = u.macro_estimate {
                out.push_str(&format!(
                    "  {} {}: {:.3} [{:.3}, {:.3}]\n",
                    u.regime, u.model, e.mcc, e.lo, e.hi
                ));
            }
        }
    }
    if !analysis.paired.is_empty() {
        section(
            &mut out,
            "Paired comparisons (ΔMCC = A − B, 95 % interval, two-sided p):",
        );
        for p in &analysis.paired {
            let d = p.difference;
            out.push_str(&format!(
                "  {} {}: {} − {} = {:+.3} [{:+.3}, {:+.3}] p = {:.3}\n",
                p.regime, p.category, p.a, p.b, d.delta, d.lo, d.hi, d.p
            ));
        }
    }
    out.push_str(&super::layers::to_text(&analysis.layers));
    let changed: Vec<String> = analysis
        .reordering
        .iter()
        .filter(|r| r.winner_changed)
        .map(|r| format!("{} ({})", r.category, r.regime))
        .collect();
    if !analysis.reordering.is_empty() {
        section(
            &mut out,
            &format!(
                "The full-data winner changes under few-shot in {} of {} category comparisons{}",
                changed.len(),
                analysis.reordering.len(),
                if changed.is_empty() {
                    ".".to_string()
                } else {
                    format!(": {}", changed.join(", "))
                }
            ),
        );
    }
    let mut budget = analysis
        .max_params
        .map_or(String::new(), |m| format!(", at most {m} parameters"));
    budget.push_str(&analysis.cost_budget.stated());
    section(
        &mut out,
        &format!(
            "Best model per category (yours and published{budget}; published: {}):",
            analysis.credit
        ),
    );
    for r in &analysis.recommendations {
        let source = if r.published { "published" } else { "yours" };
        let yours = r.yours.as_ref().map_or(String::new(), |y| {
            format!(
                "; your best {} {:.3} (#{} of {}{})",
                y.model,
                y.mcc,
                y.place,
                r.candidates,
                if y.comparable {
                    ""
                } else {
                    ", other tasks: not directly comparable"
                }
            )
        });
        out.push_str(&format!(
            "  {} {}: {} ({source}) {:.3}{yours}\n",
            r.regime, r.category, r.model, r.mcc
        ));
    }
    let mut unmeasured: Vec<&str> = analysis
        .recommendations
        .iter()
        .flat_map(|r| r.unmeasured_cost.iter().map(String::as_str))
        .collect();
    unmeasured.sort_unstable();
    unmeasured.dedup();
    if !unmeasured.is_empty() {
        out.push_str(&format!(
            "  cost not measured, left out under the cost budget: {}\n",
            unmeasured.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Scores;
    use crate::submission::{Meta, TaskInfo};

    /// Scores per (regime, task) for one model; tasks p1, p2 are Promoters, e1 Enhancers.
    fn model(name: &str, params: u64, scores: &[(&str, &str, f64)]) -> Submission {
        let mut results: BTreeMap<String, BTreeMap<String, Scores>> = BTreeMap::new();
        let mut tasks = BTreeMap::new();
        for &(regime, task, mcc) in scores {
            let scores = Scores {
                mcc,
                acc: 0.0,
                f1: 0.0,
            };
            results
                .entry(regime.into())
                .or_default()
                .insert(task.into(), scores);
            let category = if task.starts_with('p') {
                "Promoters"
            } else {
                "Enhancers"
            };
            let info = TaskInfo {
                category: category.into(),
                n_train: 1,
                n_test: 1,
                n_classes: 2,
                split: None,
            };
            tasks.insert(task.to_string(), info);
        }
        Submission {
            schema_version: "1.0".into(),
            model_id: name.into(),
            harness_version: "test".into(),
            meta: Meta {
                display: name.into(),
                params,
                url: String::new(),
                zero_shot: false,
                training_data: String::new(),
                provenance: String::new(),
                submitted_by: String::new(),
            },
            results,
            tasks,
            fewshot: BTreeMap::new(),
            predictions: BTreeMap::new(),
            folds: BTreeMap::new(),
            audit: BTreeMap::new(),
            leak_free: BTreeMap::new(),
            protocol: None,
        }
    }

    fn analysis() -> Analysis {
        let a = [
            ("full", "p1", 0.9),
            ("full", "p2", 0.7),
            ("full", "e1", 0.2),
        ];
        let b = [
            ("full", "p1", 0.5),
            ("full", "p2", 0.5),
            ("full", "e1", 0.6),
        ];
        let c = [
            ("full", "p1", 0.1),
            ("full", "p2", 0.1),
            ("full", "e1", 0.4),
        ];
        let few = |s: &[(&'static str, &'static str, f64)], shift: f64| {
            s.iter()
                .flat_map(|&(_, t, m)| [("full", t, m), ("10shot", t, m - shift)])
                .collect::<Vec<_>>()
        };
        // Under 10-shot A loses 0.5 everywhere, B 0.1, C 0: Promoters' winner becomes B.
        let subs = [
            model("A", 3_000_000, &few(&a, 0.5)),
            model("B", 1_000_000, &few(&b, 0.1)),
            model("C", 2_000_000, &few(&c, 0.0)),
        ];
        analyse(&subs, Settings::default(), None).unwrap()
    }

    #[test]
    fn ranks_reordering_and_agreement_read_the_profile() {
        let analysis = analysis();
        let full = &analysis.ranks[0];
        assert_eq!(full.regime, "full");
        // Promoters: A 0.8, B 0.5, C 0.1; Enhancers: B 0.6, C 0.4, A 0.2.
        assert_eq!(full.ranks["A"]["Promoters"], 1.0);
        assert_eq!(full.ranks["A"]["Enhancers"], 3.0);
        assert_eq!(full.ranks["C"]["Promoters"], 3.0);
        // Macro: A 0.5, B 0.55, C 0.25.
        assert_eq!(full.ranks["B"]["macro"], 1.0);

        let promoters = analysis
            .reordering
            .iter()
            .find(|r| r.category == "Promoters")
            .unwrap();
        // 10-shot Promoters: A 0.3, B 0.4, C 0.1.
        assert_eq!(
            (promoters.winner_full.as_str(), promoters.winner.as_str()),
            ("A", "B")
        );
        assert!(promoters.winner_changed);
        // Pairs (A,B) discordant, (A,C) and (B,C) concordant: τ = (2 − 1) / 3.
        assert!((promoters.tau.unwrap() - 1.0 / 3.0).abs() < 1e-12);

        // Full data: Promoters order A > B > C, Enhancers B > C > A: τ-b = −1/3.
        let agreement = &analysis.category_agreement[0];
        assert_eq!(agreement.categories, ["Promoters", "Enhancers"]);
        assert!((agreement.tau[0][1].unwrap() + 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(agreement.tau[0][0], Some(1.0));

        // Spearman(params, macro) over A (3M, 0.5), B (1M, 0.55), C (2M, 0.25): ρ = −0.5.
        let rho = analysis.params_vs_macro[0].yours.unwrap();
        assert!((rho + 0.5).abs() < 1e-12, "{rho}");
        assert!(
            analysis
                .notes
                .iter()
                .all(|n| n.contains("no per-example predictions"))
        );
        assert!(analysis.uncertainty.is_empty() && analysis.paired.is_empty());
    }

    #[test]
    fn duplicate_names_are_told_apart() {
        let s = model("m", 0, &[("full", "p1", 0.5)]);
        let analysis = analyse(&[s.clone(), s], Settings::default(), None).unwrap();
        let names: Vec<&str> = analysis.profile.regimes[0]
            .rows
            .iter()
            .map(|r| r.model.as_str())
            .collect();
        assert_eq!(names, ["m", "m #2"]);
    }
}
