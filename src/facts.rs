//! The core's rules a front end shows or checks input against, gathered into one record so the
//! page (the wasm `facts()` export, read by www/core-facts.js) restates none of them: the
//! regimes with their shots and seeds, the categories, the files the readers take, the named
//! suites and the memory budget a task's embeddings may take. Each field is read from the
//! constant that rules the core itself.

use crate::protocol::{CATEGORIES, FEWSHOT_SEEDS, Regime};
use crate::task::catalogue;
use serde::Serialize;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    /// GENEB's 13 categories, in the leaderboard's order.
    pub categories: &'static [&'static str],
    /// How many tasks a full GENEB run has (the catalogue's).
    pub official_tasks: usize,
    /// The regimes, in the leaderboard's order.
    pub regimes: Vec<RegimeFacts>,
    pub data_files: DataFiles,
    /// Every named suite (`geneb`, `geneb-lite`, then `geneb:<category slug>`) and its tasks.
    pub suites: Vec<Suite>,
    /// The most bytes one task's embeddings may take here (the eval refuses a larger task).
    pub embedding_budget: usize,
    /// Bytes per embedding value the budget counts (the probe holds them as f32).
    pub embedding_value_bytes: usize,
}

#[derive(Debug, Serialize)]
pub struct RegimeFacts {
    /// The result files' key: `full`, `10shot`, `1shot`.
    pub key: &'static str,
    /// How it reads in a title (`full data`, `10-shot`).
    pub label: &'static str,
    /// Training examples per class; `None` for the whole train split.
    pub shots: Option<usize>,
    /// The seeds a few-shot regime's scores are the mean over; empty for the full data.
    pub seeds: &'static [u32],
}

/// What the readers take, by name (case-insensitive): a dropped folder keeps only these.
#[derive(Debug, Serialize)]
pub struct DataFiles {
    /// Task files: these extensions, each also gzip-compressed (`<name>.<ext>.<compression>`),
    /// and the suite manifest `names`.
    pub tasks: FileKinds,
    /// The extensions of the task tables, the only task files that can lack a split column.
    pub tables: &'static [&'static str],
    /// The user's own embeddings, probed with no encoder: `.npz`, or `X.npy` beside labels.
    pub embeddings: FileKinds,
    /// The one compression the readers undo.
    pub compression: &'static str,
}

#[derive(Debug, Serialize)]
pub struct FileKinds {
    pub extensions: &'static [&'static str],
    pub names: &'static [&'static str],
}

#[derive(Debug, Serialize)]
pub struct Suite {
    pub name: String,
    pub about: String,
    pub tasks: Vec<&'static str>,
}

impl Facts {
    pub fn get() -> crate::Result<Facts> {
        let suites = catalogue::suites()
            .into_iter()
            .map(|(name, about)| {
                let tasks = catalogue::suite(&name)?
                    .into_iter()
                    .map(|t| t.id.as_str())
                    .collect();
                Ok(Suite { name, about, tasks })
            })
            .collect::<crate::Result<_>>()?;
        Ok(Facts {
            categories: &CATEGORIES,
            official_tasks: catalogue::tasks().len(),
            regimes: Regime::ALL
                .into_iter()
                .map(|r| RegimeFacts {
                    key: r.key(),
                    label: r.label(),
                    shots: r.shots(),
                    seeds: if r.shots().is_some() {
                        &FEWSHOT_SEEDS
                    } else {
                        &[]
                    },
                })
                .collect(),
            data_files: DataFiles {
                tasks: FileKinds {
                    extensions: &crate::input::TASK_EXTENSIONS,
                    names: &[crate::input::MANIFEST],
                },
                tables: &crate::input::TABLE_EXTENSIONS,
                embeddings: FileKinds {
                    extensions: &[crate::input::embeddings::NPZ_EXTENSION],
                    names: &[crate::input::embeddings::X_NPY],
                },
                compression: crate::input::COMPRESSION,
            },
            suites,
            embedding_budget: crate::eval::EMBEDDING_BUDGET,
            embedding_value_bytes: size_of::<f32>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_resolves_and_the_regimes_carry_the_protocol_seeds() {
        let facts = Facts::get().unwrap();
        assert_eq!(facts.suites[0].name, catalogue::ALL_SUITE);
        assert_eq!(facts.suites[0].tasks.len(), facts.official_tasks);
        assert!(
            facts
                .suites
                .iter()
                .any(|s| s.name == "geneb:histone-mod" && !s.tasks.is_empty())
        );
        let keys: Vec<_> = facts.regimes.iter().map(|r| r.key).collect();
        assert_eq!(keys, ["full", "10shot", "1shot"]);
        assert_eq!(facts.regimes[1].shots, Some(10));
        assert_eq!(facts.regimes[1].seeds.len(), 5);
        assert!(facts.regimes[0].seeds.is_empty());
        let json = serde_json::to_value(&facts).unwrap();
        assert!(json["dataFiles"]["tasks"]["extensions"].is_array());
        assert!(json["embeddingBudget"].as_u64().unwrap() >= 1 << 30);
    }
}
