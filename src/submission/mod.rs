//! Result files: the GENEB submission schema (version 1.0, PROTOCOL.md), plus geneb's own
//! additions under keys the reference schema does not use (`tasks`, `fewshot`, `predictions`,
//! `protocol`), so a file can be submitted to the leaderboard as it is and still carry its
//! evidence.

pub mod evidence;
pub mod folds;

use crate::metrics::Scores;
pub use evidence::{ClassIndices, TaskPredictions};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Regime key ("full", "10shot", "1shot") → task id → scores.
pub type RegimeResults = BTreeMap<String, BTreeMap<String, Scores>>;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Submission {
    pub schema_version: String,
    pub model_id: String,
    pub harness_version: String,
    pub meta: Meta,
    /// Few-shot entries are the mean over the seeds, as the leaderboard reports them.
    pub results: RegimeResults,
    /// Category and split sizes of each task, so profiles need no catalogue lookup.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tasks: BTreeMap<String, TaskInfo>,
    /// Few-shot scores per seed (regime → task → one entry per seed, in seed order).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fewshot: BTreeMap<String, BTreeMap<String, Vec<SeedScores>>>,
    /// Test labels and predictions per task (see [`evidence`]), for bootstrap intervals.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub predictions: BTreeMap<String, TaskPredictions>,
    /// k-fold tasks (tables split by geneb with `folds`): regime → task → each fold's scores,
    /// their mean (what `results` holds) and population std.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub folds: BTreeMap<String, BTreeMap<String, FoldScores>>,
    /// How the numbers were made: probe settings, encoder, backend, versions, timings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<serde_json::Value>,
    /// Each task's leak audit (`crate::input::audit`), where geneb read its sequences.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub audit: BTreeMap<String, crate::input::audit::TaskAudit>,
    /// Regime → task → the MCC over the test rows that did not leak.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub leak_free: BTreeMap<String, BTreeMap<String, LeakFree>>,
}

/// A task's MCC over its test rows that did not leak (`audit.leaked_test_rows` left out).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LeakFree {
    /// As `results` holds the MCC: few-shot, the mean over seeds (k-fold, over folds). `None`
    /// when every test row leaked: there is nothing left to score.
    #[serde(rename = "MCC")]
    pub mcc: Option<f64>,
    /// The test rows it is computed on.
    pub test_rows: usize,
}

impl LeakFree {
    /// The mean over `fits` (one prediction vector each) of the MCC on the rows of `y_true`
    /// not in `leaked` (ascending 0-based rows).
    pub fn of(y_true: &[usize], fits: &[&[usize]], leaked: &[usize]) -> LeakFree {
        let keep: Vec<usize> = (0..y_true.len())
            .filter(|r| leaked.binary_search(r).is_err())
            .collect();
        let mcc = (!keep.is_empty() && !fits.is_empty()).then(|| {
            let truth: Vec<usize> = keep.iter().map(|&r| y_true[r]).collect();
            fits.iter()
                .map(|predicted| {
                    let kept: Vec<usize> = keep.iter().map(|&r| predicted[r]).collect();
                    crate::metrics::score(&truth, &kept).mcc
                })
                .sum::<f64>()
                / fits.len() as f64
        });
        LeakFree {
            mcc,
            test_rows: keep.len(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub display: String,
    pub params: u64,
    pub url: String,
    pub zero_shot: bool,
    pub training_data: String,
    pub provenance: String,
    pub submitted_by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskInfo {
    pub category: String,
    pub n_train: usize,
    pub n_test: usize,
    pub n_classes: usize,
    /// How geneb split a table that had no split column (absent for tasks with their own split).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<crate::task::MadeSplit>,
}

/// Mean and population std of each fold's scores, per regime and task (the result's `folds`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldScores {
    pub mean: Scores,
    pub std: Scores,
    pub per_fold: Vec<Scores>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedScores {
    pub seed: u32,
    #[serde(flatten)]
    pub scores: Scores,
    /// Whether L-BFGS met its tolerance before `max_iter` (the reference often does not).
    pub converged: bool,
}

impl Submission {
    pub fn to_json_pretty(&self) -> crate::Result<String> {
        serde_json::to_string_pretty(self)
            .map_err(|e| crate::Error::new(format!("cannot write the result as JSON: {e}")))
    }
}

/// The submissions in a result file: one GENEB submission (what `geneb eval` writes) or the
/// page's download, `{"submissions": [...], ...}`.
pub fn read_results(name: &str, bytes: &[u8]) -> crate::Result<Vec<Submission>> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ResultFile {
        One(Box<Submission>),
        Bundle { submissions: Vec<Submission> },
    }
    let not_results = |why: String| {
        crate::Error::in_file(
            name,
            format!("not a GENEB result file (a submission JSON or the page's download): {why}"),
        )
    };
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| not_results(e.to_string()))?;
    match serde_json::from_value::<ResultFile>(value) {
        Ok(ResultFile::One(sub)) => Ok(vec![*sub]),
        Ok(ResultFile::Bundle { submissions }) if !submissions.is_empty() => Ok(submissions),
        Ok(ResultFile::Bundle { .. }) => Err(not_results("it lists no submission".into())),
        Err(_) => Err(not_results(
            "expected schema_version, model_id, meta and results".into(),
        )),
    }
}
