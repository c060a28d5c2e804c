//! The cost budget of the report's "best model per category" (`geneb profile
//! --max-seconds-per-1k-seqs`, `--max-peak-memory`, and the page's library): what each result's
//! `protocol.cost` says its model cost, and whether a budget admits it. A result without a
//! measured cost (a published row, a file written before geneb measured cost, a run whose
//! embeddings all came from the cache) cannot be said to fit: the budget leaves it out and the
//! recommendation names it, rather than crown a model whose cost nobody knows.

use crate::submission::Submission;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// The limits a user set; a limit left unset admits every model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
// Written into the analysis as its other fields are; the page's request names them in camelCase.
#[serde(rename_all(deserialize = "camelCase"))]
pub struct CostBudget {
    /// Seconds of the embedding pass per 1,000 sequences.
    pub max_seconds_per_1k_seqs: Option<f64>,
    /// Peak memory in bytes: the host's (RSS, or the page's WebAssembly heap) plus the GPU's.
    pub max_memory_bytes: Option<u64>,
}

/// What one result measured, per limit; None where it measured nothing for that limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModelCost {
    pub seconds_per_1k_seqs: Option<f64>,
    pub memory_bytes: Option<u64>,
}

impl ModelCost {
    /// The cost a result's `protocol.cost` records; None for a result without one.
    pub fn of(submission: &Submission) -> Option<ModelCost> {
        let cost = submission.protocol.as_ref()?.get("cost")?;
        let rate = cost["sequences_per_s"].as_f64().filter(|r| *r > 0.0);
        // A GPU's buffers are memory the model needs beside the host's; on the CPU there are none.
        let memory = cost["peak_memory_bytes"]
            .as_u64()
            .map(|host| host + cost["peak_gpu_memory_bytes"].as_u64().unwrap_or(0));
        Some(ModelCost {
            seconds_per_1k_seqs: rate.map(|r| 1000.0 / r),
            memory_bytes: memory,
        })
    }
}

impl CostBudget {
    pub fn is_set(&self) -> bool {
        self.max_seconds_per_1k_seqs.is_some() || self.max_memory_bytes.is_some()
    }

    /// A budget of zero or less admits nothing: refused as the user's mistake.
    pub fn check(&self) -> Result<()> {
        if let Some(seconds) = self.max_seconds_per_1k_seqs
            && !(seconds.is_finite() && seconds > 0.0)
        {
            return Err(Error::new(format!(
                "--max-seconds-per-1k-seqs {seconds}: expected a positive number of seconds"
            )));
        }
        if self.max_memory_bytes == Some(0) {
            return Err(Error::new(
                "--max-peak-memory 0: expected a positive size such as 4GB or 512MiB",
            ));
        }
        Ok(())
    }

    /// Whether a model of this cost fits: None where a limit is set that its cost does not
    /// measure (unknown), so the caller can name it.
    pub fn admits(&self, cost: Option<&ModelCost>) -> Option<bool> {
        let mut fits = true;
        if let Some(max) = self.max_seconds_per_1k_seqs {
            fits &= cost?.seconds_per_1k_seqs? <= max;
        }
        if let Some(max) = self.max_memory_bytes {
            fits &= cost?.memory_bytes? <= max;
        }
        Some(fits)
    }

    /// ", at most 2 s per 1,000 sequences and 4.0 GiB of peak memory" (empty when unset).
    fn describe(&self) -> String {
        let mut limits = Vec::new();
        if let Some(seconds) = self.max_seconds_per_1k_seqs {
            limits.push(format!("{seconds} s per 1,000 sequences"));
        }
        if let Some(bytes) = self.max_memory_bytes {
            limits.push(format!("{} of peak memory", crate::budget::human(bytes)));
        }
        if limits.is_empty() {
            String::new()
        } else {
            format!(", at most {}", limits.join(" and "))
        }
    }

    /// `describe` and the rule for results of unknown cost, for a recommendations heading
    /// (empty when unset).
    pub fn stated(&self) -> String {
        if self.is_set() {
            format!("{}; {UNKNOWN_COST_RULE}", self.describe())
        } else {
            String::new()
        }
    }
}

/// The rule a cost budget follows, said wherever its recommendations are shown.
const UNKNOWN_COST_RULE: &str = "a cost budget picks among results with a measured \
    protocol.cost; published rows and results without one (older files, or every embedding read \
    from the cache) are left out and named";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_its_cost_does_not_measure_is_unknown_not_a_fit() {
        let budget = CostBudget {
            max_seconds_per_1k_seqs: Some(2.0),
            max_memory_bytes: None,
        };
        let cost = |seconds| ModelCost {
            seconds_per_1k_seqs: seconds,
            memory_bytes: Some(1),
        };
        assert_eq!(budget.admits(Some(&cost(Some(2.0)))), Some(true));
        assert_eq!(budget.admits(Some(&cost(Some(2.5)))), Some(false));
        assert_eq!(budget.admits(Some(&cost(None))), None);
        assert_eq!(budget.admits(None), None);
        assert_eq!(CostBudget::default().admits(None), Some(true));
    }
}
