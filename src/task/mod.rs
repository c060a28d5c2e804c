//! A task (what it is: id, category) and its dataset (train and test sequences with labels).

pub mod catalogue;
pub mod fewshot;
#[cfg(all(feature = "hub", not(target_arch = "wasm32")))]
pub mod official;

use serde::{Deserialize, Serialize};

/// Metadata of one probing task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The task id: the GENEB id for catalogue tasks, the file stem for the user's own files.
    pub id: String,
    /// One of `protocol::CATEGORIES`, a category the user named, or `protocol::UNCATEGORIZED`.
    pub category: String,
}

/// One split: sequences (upper-case, IUPAC ambiguity codes already mapped to `N`) and label
/// indices into `Dataset::labels`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    pub sequences: Vec<String>,
    pub y: Vec<usize>,
}

impl Split {
    pub fn len(&self) -> usize {
        self.sequences.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sequences.is_empty()
    }
}

/// A task's data, validated: at least two classes in train, at least one test row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    /// Distinct label values in numpy `unique` order: numeric when every label is an integer,
    /// else by code point. `y` values index into this.
    pub labels: Vec<String>,
    pub train: Split,
    pub test: Split,
}

/// A task with its data, as the readers produce it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskData {
    pub task: Task,
    pub data: Dataset,
}
