//! One run of many (model, task) pairs split into shards that run anywhere (Slurm array tasks,
//! Kubernetes indexed pods), each writing every pair's result as its own file. The assignment
//! of pairs to shards depends on the pairs alone, so any machine computes the same split; the
//! run's plan is recorded beside the results, so a shard started with other arguments is
//! refused and `merge` knows what is missing and which shard should have made it.

use crate::protocol::Regime;
use crate::submission::Submission;
use crate::task::TaskData;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Shard `index` of `count` (0-based, as `$SLURM_ARRAY_TASK_ID` and `$JOB_COMPLETION_INDEX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// The whole run as one shard: `--out-dir` without `--shard`.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// `I/N` with 0 ≤ I < N.
    pub fn parse(text: &str) -> Result<Shard> {
        let bad = || {
            Error::new(format!(
                "--shard '{text}': expected I/N, shard I (counted from 0) of N, e.g. 0/4"
            ))
        };
        let (index, count) = text.trim().split_once('/').ok_or_else(bad)?;
        let index: usize = index.trim().parse().map_err(|_| bad())?;
        let count: usize = count.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(Error::new(format!(
                "--shard {index}/{count}: the shard index runs from 0 to {}",
                count.saturating_sub(1)
            )));
        }
        Ok(Shard { index, count })
    }
}

/// What merging keeps per planned pair at most: its place and, when it is missing, its name.
const PAIR_BYTES: u64 = 256;

/// The file every shard writes (or checks) in the results folder.
pub const PLAN_FILE: &str = "plan.json";

/// What a sharded run computes: every model on every task under these regimes, split into
/// `shards`, by this geneb. Models and tasks are kept in the order they were given, which is
/// the order an unsharded run lists them in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub geneb: String,
    pub shards: usize,
    pub regimes: Vec<String>,
    pub models: Vec<String>,
    pub tasks: Vec<PlannedTask>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedTask {
    pub id: String,
    /// `Dataset::content_hash`: a shard that reads other data under the same id is refused.
    pub sha256: String,
}

impl Plan {
    pub fn new(models: &[String], tasks: &[TaskData], regimes: &[Regime], shards: usize) -> Plan {
        let mut seen = std::collections::HashSet::new();
        Plan {
            geneb: crate::VERSION.to_string(),
            shards,
            regimes: regimes.iter().map(|r| r.key().to_string()).collect(),
            models: models
                .iter()
                .map(|m| m.trim().to_string())
                .filter(|m| seen.insert(m.clone()))
                .collect(),
            tasks: tasks
                .iter()
                .map(|t| PlannedTask {
                    id: t.task.id.clone(),
                    sha256: t.data.content_hash(),
                })
                .collect(),
        }
    }

    /// The shard that computes `(model, task)`: pairs sorted by model then task id are dealt
    /// round-robin, so shards differ by at most one pair and no argument order matters.
    pub fn shard_of(&self, model: &str, task: &str) -> usize {
        // The pair's place in that sorted list, counted rather than sorted for: every model
        // has every task, and both lists hold each name once.
        let models_before = self.models.iter().filter(|m| m.as_str() < model).count();
        let tasks_before = self.tasks.iter().filter(|t| t.id.as_str() < task).count();
        (models_before * self.tasks.len() + tasks_before) % self.shards
    }

    /// Writes the plan into `dir`, or checks that the one there (another shard's) is this one.
    pub fn record(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::in_file(dir.display().to_string(), format!("cannot create: {e}"))
        })?;
        let path = dir.join(PLAN_FILE);
        if !path.exists() {
            let text = serde_json::to_string_pretty(self)
                .map_err(|e| Error::new(format!("cannot write the plan: {e}")))?;
            return crate::atomic_file::write_whole(&path, text);
        }
        let recorded = Plan::read(dir)?;
        match recorded.difference(self) {
            None => Ok(()),
            Some(what) => Err(Error::in_file(
                path.display().to_string(),
                format!(
                    "this folder holds another run ({what} differ); give the same --model, \
                     --task/--suite, --regimes and shard count as before, or a new --out-dir"
                ),
            )),
        }
    }

    pub fn read(dir: &Path) -> Result<Plan> {
        let path = dir.join(PLAN_FILE);
        let name = path.display().to_string();
        let bytes = crate::budget::read_file(&path).map_err(|e| {
            Error::in_file(
                &name,
                format!(
                    "cannot read the run's plan: {e} (is this a `geneb eval --out-dir` folder?)"
                ),
            )
        })?;
        let plan: Plan = serde_json::from_slice(&bytes)
            .map_err(|e| Error::in_file(&name, format!("not a geneb plan: {e}")))?;
        // Pairs are dealt to shards by remainder: a plan of no shards plans nothing.
        if plan.shards == 0 {
            return Err(Error::in_file(
                &name,
                "a damaged geneb plan: it splits the run into 0 shards",
            ));
        }
        // Dealing counts each pair's place among distinct names.
        let distinct = |names: Vec<&str>| {
            let count = names.len();
            names
                .into_iter()
                .collect::<std::collections::HashSet<_>>()
                .len()
                == count
        };
        if !distinct(plan.models.iter().map(String::as_str).collect())
            || !distinct(plan.tasks.iter().map(|t| t.id.as_str()).collect())
        {
            return Err(Error::in_file(
                &name,
                "a damaged geneb plan: it names a model or a task twice",
            ));
        }
        // Merging looks for every (model, task) pair's file and names the missing ones.
        crate::budget::charge(
            &name,
            "the plan's (model, task) pairs",
            (plan.models.len() as u64).saturating_mul(plan.tasks.len() as u64),
            PAIR_BYTES,
        )?;
        Ok(plan)
    }

    /// Which parts of two plans differ, in words; `None` when they are the same plan.
    pub fn difference(&self, other: &Plan) -> Option<String> {
        let same_ids = self
            .tasks
            .iter()
            .map(|t| &t.id)
            .eq(other.tasks.iter().map(|t| &t.id));
        let parts = [
            (self.geneb != other.geneb, "geneb versions"),
            (self.shards != other.shards, "shard counts"),
            (self.regimes != other.regimes, "regimes"),
            (self.models != other.models, "models"),
            (!same_ids, "tasks"),
            (
                same_ids && self.tasks != other.tasks,
                "task data (content hashes)",
            ),
        ];
        let differ: Vec<&str> = parts.iter().filter(|p| p.0).map(|p| p.1).collect();
        (!differ.is_empty()).then(|| differ.join(", "))
    }

    /// `dir/<model>/<task>.json`, both names made safe by [`file_name`].
    pub fn pair_path(dir: &Path, model: &str, task: &str) -> PathBuf {
        dir.join(file_name(model))
            .join(format!("{}.json", file_name(task)))
    }

    /// The tasks of this shard for each model that have no complete result in `dir` yet.
    pub fn pending<'t>(
        &self,
        dir: &Path,
        shard: Shard,
        tasks: &'t [TaskData],
    ) -> Vec<(String, Vec<&'t TaskData>)> {
        self.models
            .iter()
            .map(|model| {
                let mine = tasks
                    .iter()
                    .filter(|t| self.shard_of(model, &t.task.id) == shard.index)
                    .filter(|t| !self.is_complete(dir, model, t))
                    .collect();
                (model.clone(), mine)
            })
            .collect()
    }

    /// The pairs shard `index` computes, done or not: pairs are dealt round-robin, so the first
    /// `pairs % shards` shards get one more.
    pub fn pairs_in(&self, index: usize) -> usize {
        let pairs = self.models.len() * self.tasks.len();
        pairs / self.shards + usize::from(index < pairs % self.shards)
    }

    /// [`Plan::shard_of`] for many pairs: the names are sorted once, each pair then costs two
    /// binary searches instead of a pass over every model and task.
    pub fn dealer(&self) -> impl Fn(&str, &str) -> usize + '_ {
        let mut models: Vec<&str> = self.models.iter().map(String::as_str).collect();
        let mut tasks: Vec<&str> = self.tasks.iter().map(|t| t.id.as_str()).collect();
        models.sort_unstable();
        tasks.sort_unstable();
        move |model, task| {
            let models_before = models.partition_point(|m| *m < model);
            let tasks_before = tasks.partition_point(|t| *t < task);
            (models_before * tasks.len() + tasks_before) % self.shards
        }
    }

    /// A result file that parses and holds every planned regime of this task on this data;
    /// files are written whole (`atomic_file`), so anything else is from another run.
    fn is_complete(&self, dir: &Path, model: &str, task: &TaskData) -> bool {
        let id = &task.task.id;
        let Ok(bytes) = crate::budget::read_file(&Plan::pair_path(dir, model, id)) else {
            return false;
        };
        let Ok(result) = serde_json::from_slice::<Submission>(&bytes) else {
            return false;
        };
        pair_problem(&result, id, &self.regimes, &task.data.content_hash()).is_none()
    }

    /// Writes one pair's result into its place in `dir`.
    pub fn write_pair(dir: &Path, model: &str, task: &str, result: &Submission) -> Result<()> {
        let path = Plan::pair_path(dir, model, task);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).map_err(|e| {
                Error::in_file(folder.display().to_string(), format!("cannot create: {e}"))
            })?;
        }
        crate::atomic_file::write_whole(&path, result.to_json_pretty()?)
    }
}

/// Why `result` is not a complete result of task `id` under `regimes` on data hashing to
/// `sha256`, or `None` when it is one.
pub fn pair_problem(
    result: &Submission,
    id: &str,
    regimes: &[String],
    sha256: &str,
) -> Option<String> {
    if let Some(regime) = regimes.iter().find(|r| {
        !result
            .results
            .get(*r)
            .is_some_and(|tasks| tasks.contains_key(id))
    }) {
        return Some(format!("it has no {regime} result for task {id}"));
    }
    if !result.predictions.contains_key(id) || !result.tasks.contains_key(id) {
        return Some(format!(
            "it lacks the predictions or split sizes of task {id}"
        ));
    }
    let Some(protocol) = result.protocol.as_ref().filter(|p| p["probe"].is_object()) else {
        return Some("it has no protocol block with the probe's settings".into());
    };
    let recorded = protocol["task_data_sha256"][id].as_str();
    if recorded != Some(sha256) {
        return Some(format!(
            "it was computed on other data for task {id} (sha256 {}, the plan's {sha256})",
            recorded.unwrap_or("not recorded")
        ));
    }
    None
}

/// Longest file name made from a model or task name before it is shortened (file systems
/// allow 255 bytes; the rest is the hash and `.json`).
const MAX_NAME: usize = 160;

/// A model spec or task id as one safe file name: ASCII letters, digits and `-_+=,@` stay,
/// `.` stays except first (no hidden files, no `.`/`..`), every other byte becomes `%XX`
/// (so `hf:org/model` is `hf%3Aorg%2Fmodel`, and the name decodes back to the spec). Distinct
/// names stay distinct; one longer than `MAX_NAME` is cut and ends in `~` and 16 hex digits
/// of its SHA-256 (`~` is otherwise escaped, so a cut name never equals an uncut one).
pub fn file_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        let keep = byte.is_ascii_alphanumeric()
            || b"-_+=,@".contains(&byte)
            || (byte == b'.' && !out.is_empty());
        if keep {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    if out.len() > MAX_NAME {
        use sha2::{Digest, Sha256};
        let digest = crate::digest::hex(&Sha256::digest(name.as_bytes()));
        out.truncate(MAX_NAME);
        out.push('~');
        out.push_str(&digest[..16]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe_and_distinct() {
        assert_eq!(file_name("hf:org/model@main"), "hf%3Aorg%2Fmodel@main");
        assert_eq!(file_name("kmer:4"), "kmer%3A4");
        assert_eq!(file_name("random-cnn"), "random-cnn");
        assert_eq!(file_name(".."), "%2E.");
        assert_eq!(file_name("a%3Ab"), "a%253Ab");
        assert_ne!(file_name("a:b"), file_name("a%3Ab"));
        let long = "x".repeat(300);
        let cut = file_name(&long);
        assert!(cut.len() < 200 && cut.contains('~'));
        assert_ne!(cut, file_name(&format!("{long}y")));
    }

    #[test]
    fn shard_specs_are_checked() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 2, count: 3 });
        for bad in ["3/3", "0/0", "1", "a/2", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_pair_has_one_shard_and_shards_are_balanced() {
        let plan = Plan {
            geneb: "x".into(),
            shards: 3,
            regimes: vec!["full".into()],
            models: vec!["kmer:4".into(), "random-cnn".into()],
            tasks: (0..5)
                .map(|i| PlannedTask {
                    id: format!("t{i}"),
                    sha256: String::new(),
                })
                .collect(),
        };
        let sizes: Vec<usize> = (0..3).map(|i| plan.pairs_in(i)).collect();
        assert_eq!(sizes, [4, 3, 3]);
        let mut sorted: Vec<(&str, &str)> = plan
            .models
            .iter()
            .flat_map(|m| plan.tasks.iter().map(move |t| (m.as_str(), t.id.as_str())))
            .collect();
        sorted.sort();
        for (position, (m, t)) in sorted.iter().enumerate() {
            assert_eq!(plan.shard_of(m, t), position % 3, "{m} × {t}");
        }
        // The given order of models and tasks does not move any pair.
        let mut reordered = plan.clone();
        reordered.models.reverse();
        reordered.tasks.reverse();
        for m in &plan.models {
            for t in &plan.tasks {
                assert_eq!(plan.shard_of(m, &t.id), reordered.shard_of(m, &t.id));
            }
        }
    }
}
