//! The 100 official GENEB tasks (id, display label, category), from the published task list
//! (`tasks/geneb-tasks.json`, Apache-2.0, the GENEB authors; see `tasks/GENEB-NOTICE.md`).

use serde::Deserialize;
use std::sync::OnceLock;

#[derive(Debug, Clone, Deserialize)]
pub struct CatalogueTask {
    pub id: String,
    pub label: String,
    #[serde(rename = "cat")]
    pub category: String,
}

#[derive(Deserialize)]
struct CatalogueFile {
    tasks: Vec<CatalogueTask>,
}

/// All catalogue tasks, parsed once from the file compiled into the binary.
pub fn tasks() -> &'static [CatalogueTask] {
    static TASKS: OnceLock<Vec<CatalogueTask>> = OnceLock::new();
    TASKS.get_or_init(|| {
        // The file is ours and checked by the catalogue test, so a parse failure is a build bug.
        serde_json::from_str::<CatalogueFile>(include_str!("../../tasks/geneb-tasks.json"))
            .map(|f| f.tasks)
            .unwrap_or_default()
    })
}

/// The GENEB category of a task id, if the catalogue knows it.
pub fn category_of(task_id: &str) -> Option<&'static str> {
    tasks()
        .iter()
        .find(|t| t.id == task_id)
        .map(|t| t.category.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::CATEGORIES;

    #[test]
    fn catalogue_has_the_published_100_tasks_in_13_categories() {
        let tasks = tasks();
        assert_eq!(tasks.len(), 100);
        let mut ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 100, "task ids are unique");
        let counts: Vec<usize> = CATEGORIES
            .iter()
            .map(|c| tasks.iter().filter(|t| t.category == *c).count())
            .collect();
        // PROTOCOL.md: Histone Mod. 30 · Promoters 22 · Enhancers 8 · DNA Methyl. 8 · Splice Sites 7
        // · lncRNA 6 · Mouse Enh. 5 · TF Binding 5 · Species Clf. 3 · Regulatory 2 · Virus/Phage 2
        // · Coding/NC 1 · Chromatin Acc. 1.
        assert_eq!(counts, [30, 22, 8, 8, 7, 6, 5, 5, 3, 2, 2, 1, 1]);
        assert_eq!(
            category_of("InstaDeepAI_nucleotide_transformer_downstream_tasks_H3"),
            Some("Histone Mod.")
        );
        assert_eq!(category_of("my_own_task"), None);
    }
}
