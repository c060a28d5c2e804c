//! A task (what it is: id, category) and its dataset (train and test sequences with labels).

pub mod catalogue;
pub mod fewshot;

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
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Distinct label values in numpy `unique` order: numeric when every label is an integer,
    /// else by code point. `y` values index into this.
    pub labels: Vec<String>,
    pub train: Split,
    pub test: Split,
    /// How geneb split a table without a split column (`crate::input::split`); `None` when the data
    /// came split.
    pub made_split: Option<MadeSplit>,
}

impl Dataset {
    /// The hex SHA-256 of the label names and both splits (every count and field
    /// length-prefixed): results computed on different data never pass for each other.
    pub fn content_hash(&self) -> String {
        let mut hasher = crate::digest::PartsHasher::default();
        let mut field = |bytes: &[u8]| hasher.part(bytes);
        field(&(self.labels.len() as u64).to_le_bytes());
        for label in &self.labels {
            field(label.as_bytes());
        }
        for split in [&self.train, &self.test] {
            field(&(split.len() as u64).to_le_bytes());
            for (sequence, &y) in split.sequences.iter().zip(&split.y) {
                field(sequence.as_bytes());
                field(&(y as u64).to_le_bytes());
            }
        }
        hasher.finish()
    }
}

/// A task with its data, as the readers produce it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskData {
    pub task: Task,
    pub data: Dataset,
}

/// How geneb split one task (or one fold of it): what the result's `tasks` block records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MadeSplit {
    /// `train_test_split (stratified)`, `StratifiedKFold`, or `by group (stratified as far as
    /// groups allow)`, each with its settings below.
    pub method: String,
    pub seed: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folds: Option<usize>,
    /// This fold (1-based) while a k-fold task is evaluated; absent once the folds are merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fold: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_column: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<usize>,
    /// The test rows as 0-based data rows of the table (the header is not a row), in the order
    /// the test split holds them (the order of `predictions.y_true`); k-fold: fold by fold.
    pub test_rows: Vec<usize>,
}
