//! The 100 official GENEB tasks: one metadata record each (id, display label, category, source
//! benchmark, species, number of classes, where the tables live on the hub, licence, citation,
//! and how each fact is known), from `tasks/catalogue/geneb-catalogue.json`, which
//! `tasks/catalogue/build_catalogue.py` derives from the published task list
//! (`tasks/geneb-tasks.json`, Apache-2.0, the GENEB authors; see `tasks/GENEB-NOTICE.md`).
//!
//! Named suites:
//! - `geneb`: all 100 tasks;
//! - `geneb-lite`: one small task per category (13), chosen as the catalogue file explains;
//! - `geneb:<category>`: the tasks of one category, e.g. `geneb:promoters`,
//!   `geneb:histone-mod`, `geneb:virus-phage` (the category name lower-cased, every run of
//!   other characters a `-`; the category's own name, e.g. `geneb:Histone Mod.`, works too).

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CatalogueTask {
    pub id: String,
    pub label: String,
    pub category: String,
    /// The upstream benchmark the task comes from (short name) and its dataset.
    pub source: String,
    pub source_dataset: String,
    /// `None` where it cannot be confirmed (see `provenance.species`).
    pub species: Option<String>,
    /// `None` where it cannot be confirmed (see `provenance.n_classes`).
    pub n_classes: Option<usize>,
    /// Hugging Face dataset holding the tables, and its pinned revision.
    pub hf_dataset: String,
    pub revision: String,
    pub files: TaskFiles,
    /// The upstream source's licence; `None` where it cannot be confirmed.
    pub licence: Option<String>,
    pub citation: String,
    /// For each field above, how it is known ("confirmed: …", "upstream paper …", "unknown: …").
    pub provenance: BTreeMap<String, String>,
}

/// Paths of the task's tables inside `hf_dataset`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskFiles {
    pub train: String,
    pub test: String,
}

#[derive(Debug, Deserialize)]
pub struct Catalogue {
    /// The 13 categories in their published order.
    pub categories: Vec<String>,
    pub tasks: Vec<CatalogueTask>,
    suites: BTreeMap<String, SuiteFile>,
}

#[derive(Debug, Deserialize)]
struct SuiteFile {
    about: String,
    tasks: Vec<SuiteEntry>,
}

#[derive(Debug, Deserialize)]
struct SuiteEntry {
    id: String,
}

pub const ALL_SUITE: &str = "geneb";
pub const LITE_SUITE: &str = "geneb-lite";
/// `geneb:<category>` names a category suite; `geneb:<task id>` (for `--task`) one task.
pub const PREFIX: &str = "geneb:";

/// The catalogue, parsed once from the file compiled into the binary.
pub fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        // The file is ours and checked by the catalogue tests, so a parse failure is a build bug.
        serde_json::from_str(include_str!("../../tasks/catalogue/geneb-catalogue.json"))
            .unwrap_or_else(|e| panic!("tasks/catalogue/geneb-catalogue.json is invalid: {e}"))
    })
}

/// All catalogue tasks, in the published order.
pub fn tasks() -> &'static [CatalogueTask] {
    &catalogue().tasks
}

pub fn find(task_id: &str) -> Option<&'static CatalogueTask> {
    tasks().iter().find(|t| t.id == task_id)
}

/// The GENEB category of a task id, if the catalogue knows it.
pub fn category_of(task_id: &str) -> Option<&'static str> {
    find(task_id).map(|t| t.category.as_str())
}

/// `Histone Mod.` → `histone-mod`: lower case, runs of other characters become one `-`.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Every suite name with a one-line description, `geneb`, `geneb-lite`, then the categories.
pub fn suites() -> Vec<(String, String)> {
    let catalogue = catalogue();
    let mut out = vec![
        (
            ALL_SUITE.to_string(),
            "all 100 official GENEB tasks".to_string(),
        ),
        (
            LITE_SUITE.to_string(),
            catalogue.suites[LITE_SUITE].about.clone(),
        ),
    ];
    for category in &catalogue.categories {
        let n = tasks().iter().filter(|t| &t.category == category).count();
        out.push((
            format!("{PREFIX}{}", slug(category)),
            format!("the {n} {category} task(s)"),
        ));
    }
    out
}

/// The tasks of a named suite, in catalogue order.
pub fn suite(name: &str) -> Result<Vec<&'static CatalogueTask>> {
    let catalogue = catalogue();
    let name = name.trim();
    if name == ALL_SUITE {
        return Ok(tasks().iter().collect());
    }
    if let Some(file) = catalogue.suites.get(name) {
        return Ok(file
            .tasks
            .iter()
            .filter_map(|entry| find(&entry.id))
            .collect());
    }
    if let Some(category) = name.strip_prefix(PREFIX).and_then(|wanted| {
        catalogue
            .categories
            .iter()
            .find(|c| slug(c) == slug(wanted))
    }) {
        return Ok(tasks().iter().filter(|t| &t.category == category).collect());
    }
    let names: Vec<String> = suites().into_iter().map(|(n, _)| n).collect();
    Err(Error::new(format!(
        "no suite named '{name}'; the suites are: {}",
        names.join(", ")
    )))
}

/// The catalogue task a `--task geneb:<id>` names.
pub fn task_by_reference(reference: &str) -> Result<&'static CatalogueTask> {
    let id = reference.strip_prefix(PREFIX).unwrap_or(reference).trim();
    find(id).ok_or_else(|| {
        Error::new(format!(
            "no GENEB task with id '{id}'; `geneb tasks` lists the 100 ids (and `--suite` runs a group of them)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_resolve_by_name_and_category() {
        assert_eq!(suite("geneb").unwrap().len(), 100);
        assert_eq!(suite("geneb-lite").unwrap().len(), 13);
        assert_eq!(suite("geneb:promoters").unwrap().len(), 22);
        assert_eq!(suite("geneb:Histone Mod.").unwrap().len(), 30);
        assert_eq!(suite("geneb:virus-phage").unwrap().len(), 2);
        let err = suite("geneb:nope").unwrap_err().to_string();
        assert!(
            err.contains("geneb-lite") && err.contains("geneb:coding-nc"),
            "{err}"
        );
        assert_eq!(slug("Species Clf."), "species-clf");
        assert_eq!(
            task_by_reference("geneb:iDHS-EL_DNase_I").unwrap().category,
            "Chromatin Acc."
        );
        assert!(task_by_reference("geneb:H3").is_err());
        assert_eq!(category_of("my_own_task"), None);
    }
}
