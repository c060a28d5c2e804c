//! The official task catalogue (metadata validation) and the importers for layouts users
//! already have on disk (Genomic Benchmarks, GUE, NT downstream CSV, BED + FASTA).

use geneb::protocol::CATEGORIES;
use geneb::task::catalogue::{self, CatalogueTask};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A field that is null must say why, in its provenance, as "unknown: …".
fn check_known(task: &CatalogueTask, field: &str, present: bool) {
    let basis = task
        .provenance
        .get(field)
        .unwrap_or_else(|| panic!("{}: no provenance for {field}", task.id));
    assert!(
        !basis.trim().is_empty(),
        "{}: empty provenance for {field}",
        task.id
    );
    if !present {
        assert!(
            basis.starts_with("unknown: ") && basis.len() > "unknown: ".len() + 10,
            "{}: {field} is null without a reason: {basis}",
            task.id
        );
    }
}

#[test]
fn catalogue_has_the_published_100_tasks_complete_and_in_13_categories() {
    let tasks = catalogue::tasks();
    assert_eq!(tasks.len(), 100);
    let ids: BTreeSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids.len(), 100, "task ids are unique");
    assert_eq!(catalogue::catalogue().categories, CATEGORIES);
    let counts: Vec<usize> = CATEGORIES
        .iter()
        .map(|c| tasks.iter().filter(|t| t.category == *c).count())
        .collect();
    // PROTOCOL.md: Histone Mod. 30 · Promoters 22 · Enhancers 8 · DNA Methyl. 8 · Splice Sites 7
    // · lncRNA 6 · Mouse Enh. 5 · TF Binding 5 · Species Clf. 3 · Regulatory 2 · Virus/Phage 2
    // · Coding/NC 1 · Chromatin Acc. 1.
    assert_eq!(counts, [30, 22, 8, 8, 7, 6, 5, 5, 3, 2, 2, 1, 1]);

    // The records agree with the published list they were built from, id by id.
    let published: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo("tasks/geneb-tasks.json")).unwrap())
            .unwrap();
    let published = published["tasks"].as_array().unwrap();
    assert_eq!(published.len(), tasks.len());
    for (record, listed) in tasks.iter().zip(published) {
        assert_eq!(record.id, listed["id"]);
        assert_eq!(record.label, listed["label"]);
        assert_eq!(record.category, listed["cat"]);
    }

    for task in tasks {
        for (field, text) in [
            ("label", &task.label),
            ("source", &task.source),
            ("source_dataset", &task.source_dataset),
            ("citation", &task.citation),
        ] {
            assert!(!text.trim().is_empty(), "{}: empty {field}", task.id);
        }
        assert_eq!(task.hf_dataset, "darlednik/geneb-tasks");
        assert_eq!(task.revision, "4edd705be573e48c585c2cf79dc320f9f43c7b04");
        assert_eq!(task.files.train, format!("tasks/{}/train.csv", task.id));
        assert_eq!(task.files.test, format!("tasks/{}/test.csv", task.id));
        if let Some(n) = task.n_classes {
            assert!((2..=20).contains(&n), "{}: n_classes {n}", task.id);
        }
        check_known(task, "species", task.species.is_some());
        check_known(task, "n_classes", task.n_classes.is_some());
        check_known(task, "licence", task.licence.is_some());
        for field in [
            "id_label_category",
            "source",
            "source_dataset",
            "files",
            "citation",
        ] {
            check_known(task, field, true);
        }
    }

    // geneb-lite: one task from every category.
    let lite = catalogue::suite("geneb-lite").unwrap();
    let lite_categories: Vec<&str> = lite.iter().map(|t| t.category.as_str()).collect();
    assert_eq!(lite_categories, CATEGORIES);
}
