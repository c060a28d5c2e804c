//! A k-fold task's folds back as one task of the result: geneb evaluates each fold as a task of
//! its own (`input::split::fold_id`), and the submission reports the task once.

use super::{
    ClassIndices, FoldScores, LeakFree, SeedScores, Submission, TaskInfo, TaskPredictions,
};
use crate::Result;
use crate::input::audit::TaskAudit;
use crate::input::split::{SplitOf, reported_id};
use crate::metrics::Scores;
use crate::task::MadeSplit;
use std::collections::BTreeMap;

/// Puts the k folds of each k-fold task (evaluated as `fold_id` tasks) back under the task's id:
/// scores are the mean over folds (each fold's, and their std, in `folds`), few-shot seeds the
/// mean over folds per seed, and the evidence the folds' test rows one after the other (every
/// row is a test row once), so the profile's bootstrap sees each row once.
pub fn merge(submission: &mut Submission, tasks: &[SplitOf]) -> Result<()> {
    let mut folded: BTreeMap<String, Vec<(&str, &MadeSplit)>> = BTreeMap::new();
    for &task in tasks {
        if let (id, Some(made)) = task
            && made.fold.is_some()
        {
            folded
                .entry(reported_id(task).to_string())
                .or_default()
                .push((id, made));
        }
    }
    for (id, folds) in folded {
        let ids: Vec<&str> = folds.iter().map(|t| t.0).collect();
        for (regime, per_task) in submission.results.iter_mut() {
            let scores: Vec<Scores> = ids.iter().filter_map(|f| per_task.remove(*f)).collect();
            if scores.len() != ids.len() {
                continue;
            }
            let summary = summarise(&scores);
            per_task.insert(id.clone(), summary.mean);
            submission
                .folds
                .entry(regime.clone())
                .or_default()
                .insert(id.clone(), summary);
        }
        for per_task in submission.fewshot.values_mut() {
            let per_fold: Vec<Vec<SeedScores>> =
                ids.iter().filter_map(|f| per_task.remove(*f)).collect();
            let Some(first) = per_fold.first() else {
                continue;
            };
            let seeds = (0..first.len())
                .map(|s| SeedScores {
                    seed: first[s].seed,
                    scores: summarise(&per_fold.iter().map(|f| f[s].scores).collect::<Vec<_>>())
                        .mean,
                    converged: per_fold.iter().all(|f| f[s].converged),
                })
                .collect();
            per_task.insert(id.clone(), seeds);
        }
        for per_task in submission.leak_free.values_mut() {
            let per_fold: Vec<LeakFree> = ids.iter().filter_map(|f| per_task.remove(*f)).collect();
            if per_fold.len() == ids.len() {
                per_task.insert(id.clone(), mean_leak_free(&per_fold));
            }
        }
        let audits: Vec<TaskAudit> = ids
            .iter()
            .filter_map(|f| submission.audit.remove(*f))
            .collect();
        if audits.len() == ids.len() {
            submission
                .audit
                .insert(id.clone(), TaskAudit::of_folds(&id, &audits));
        }
        let infos: Vec<TaskInfo> = ids
            .iter()
            .filter_map(|f| submission.tasks.remove(*f))
            .collect();
        if let Some(first) = infos.first() {
            let mut made = folds[0].1.clone();
            made.fold = None;
            made.test_rows = folds
                .iter()
                .flat_map(|t| t.1.test_rows.iter().copied())
                .collect();
            let n_train = infos.iter().map(|i| i.n_train).sum::<usize>() / infos.len();
            submission.tasks.insert(
                id.clone(),
                TaskInfo {
                    category: first.category.clone(),
                    n_train,
                    n_test: infos.iter().map(|i| i.n_test).sum(),
                    n_classes: first.n_classes,
                    split: Some(made),
                },
            );
        }
        let evidence: Vec<TaskPredictions> = ids
            .iter()
            .filter_map(|f| submission.predictions.remove(*f))
            .collect();
        if evidence.len() == ids.len() {
            submission
                .predictions
                .insert(id.clone(), concatenate(&id, &evidence)?);
        }
    }
    Ok(())
}

/// The folds' leak-free MCC as the results hold the MCC: the mean over folds, of the folds
/// that have clean rows (none: `None`).
fn mean_leak_free(folds: &[LeakFree]) -> LeakFree {
    let scored: Vec<f64> = folds.iter().filter_map(|f| f.mcc).collect();
    LeakFree {
        mcc: (!scored.is_empty()).then(|| scored.iter().sum::<f64>() / scored.len() as f64),
        test_rows: folds.iter().map(|f| f.test_rows).sum(),
    }
}

fn summarise(scores: &[Scores]) -> FoldScores {
    let n = scores.len().max(1) as f64;
    let stat = |get: fn(&Scores) -> f64| {
        let mean = scores.iter().map(get).sum::<f64>() / n;
        let var = scores.iter().map(|s| (get(s) - mean).powi(2)).sum::<f64>() / n;
        (mean, var.sqrt())
    };
    let (mcc, acc, f1) = (stat(|s| s.mcc), stat(|s| s.acc), stat(|s| s.f1));
    FoldScores {
        mean: Scores {
            mcc: mcc.0,
            acc: acc.0,
            f1: f1.0,
        },
        std: Scores {
            mcc: mcc.1,
            acc: acc.1,
            f1: f1.1,
        },
        per_fold: scores.to_vec(),
    }
}

/// The folds' evidence one after the other: y_true, and each fit's predictions.
fn concatenate(id: &str, folds: &[TaskPredictions]) -> Result<TaskPredictions> {
    let what = |part: &str| format!("task {id}, {part}");
    let mut y_true = Vec::new();
    for f in folds {
        y_true.extend(f.y_true.decode(&what("y_true"))?);
    }
    let mut regimes = BTreeMap::new();
    for (regime, fits) in &folds[0].regimes {
        let mut joined: Vec<Vec<usize>> = vec![Vec::new(); fits.len()];
        for f in folds {
            let fold_fits = f.regimes.get(regime).map_or(&[][..], Vec::as_slice);
            for (i, fit) in fold_fits.iter().enumerate().take(joined.len()) {
                joined[i].extend(fit.decode(&what(regime))?);
            }
        }
        let encoded = joined
            .iter()
            .map(|v| ClassIndices::encode(v))
            .collect::<Result<Vec<_>>>()?;
        regimes.insert(regime.clone(), encoded);
    }
    Ok(TaskPredictions {
        y_true: ClassIndices::encode(&y_true)?,
        regimes,
    })
}
