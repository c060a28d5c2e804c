//! The committed offline real-genome suite (tasks/offline, built by tasks/build_offline.py):
//! it loads through the same reader the CLI and page use, covers at least 10 GENEB categories,
//! every task's metadata is complete and honest about what it is, the sizes stay within what a
//! browser tab runs in minutes, and the 3-mer baseline finds signal on most tasks without
//! solving them (a task a 3-mer count solves, or that nothing solves, is a broken task).

use geneb::encoder::kmer::KmerSpectrum;
use geneb::input::tasks_from_path;
use geneb::protocol::CATEGORIES;
use geneb::task::TaskData;
use geneb::{metrics, probe};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tasks/offline");
/// Stated limits of the committed suite (tasks/README.md).
const MAX_TRAIN: usize = 2000;
const MAX_TEST: usize = 1000;
const MAX_LENGTH: usize = 500;
const MAX_SUITE_BYTES: u64 = 20 * 1024 * 1024;
const MIN_CATEGORIES: usize = 10;

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(Path::new(SUITE).join("tasks.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    json["tasks"].as_array().unwrap().clone()
}

fn suite() -> Vec<TaskData> {
    tasks_from_path(Path::new(SUITE), None).unwrap()
}

#[test]
fn suite_loads_with_its_categories_and_within_its_limits() {
    let tasks = suite();
    let records = manifest();
    assert_eq!(
        tasks.len(),
        records.len(),
        "one table per tasks.json record"
    );
    let mut categories = BTreeSet::new();
    for task in &tasks {
        let id = &task.task.id;
        let record = records.iter().find(|r| r["id"] == id.as_str()).unwrap();
        assert!(
            CATEGORIES.contains(&task.task.category.as_str()),
            "{id}: category {} is not a GENEB category",
            task.task.category
        );
        categories.insert(task.task.category.clone());
        let data = &task.data;
        assert_eq!(data.labels, ["0", "1"], "{id}: binary labels");
        assert!(
            data.train.len() <= MAX_TRAIN && data.test.len() <= MAX_TEST,
            "{id}: size"
        );
        assert!(
            data.test.len() >= 100,
            "{id}: too few test rows for an MCC to mean much"
        );
        let length = record["length"].as_u64().unwrap() as usize;
        assert!(length <= MAX_LENGTH, "{id}: length {length}");
        for (split, name) in [(&data.train, "train"), (&data.test, "test")] {
            assert!(
                split.sequences.iter().all(|s| s.len() == length),
                "{id}: one length"
            );
            let ones = split.y.iter().filter(|&&y| y == 1).count();
            assert_eq!(2 * ones, split.len(), "{id}: {name} classes balanced");
            let stated = &record["counts"][name];
            assert_eq!(
                stated[0].as_u64(),
                Some((split.len() - ones) as u64),
                "{id}: counts"
            );
            assert_eq!(stated[1].as_u64(), Some(ones as u64), "{id}: counts");
        }
        // Leakage: no test sequence (either strand) appears in train.
        let train: BTreeSet<&str> = data.train.sequences.iter().map(String::as_str).collect();
        for s in &data.test.sequences {
            let rc = geneb::input::audit::reverse_complement(s);
            assert!(
                !train.contains(s.as_str()) && !train.contains(rc.as_str()),
                "{id}: leak"
            );
        }
    }
    assert!(
        categories.len() >= MIN_CATEGORIES,
        "{} categories: {categories:?}",
        categories.len()
    );
    let bytes: u64 = std::fs::read_dir(SUITE)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(bytes <= MAX_SUITE_BYTES, "suite is {bytes} bytes");
}

#[test]
fn every_task_states_how_it_was_built_and_whose_data_it_is() {
    for record in manifest() {
        let id = record["id"].as_str().unwrap();
        let keys = [
            "label",
            "category",
            "species",
            "source",
            "licence",
            "citation",
            "split",
            "gc_matching",
            "built_by",
        ];
        for key in keys {
            assert!(
                record[key].as_str().is_some_and(|v| !v.trim().is_empty()),
                "{id}: {key} missing"
            );
        }
        let built_by = record["built_by"].as_str().unwrap();
        let packages = record["packages"].as_array().unwrap();
        assert!(!packages.is_empty(), "{id}: no source package");
        for p in packages {
            for key in ["name", "version", "licence", "registry"] {
                assert!(
                    p[key].as_str().is_some_and(|v| !v.is_empty()),
                    "{id}: package {key}"
                );
            }
        }
        // Planted-motif tasks must say so where a user reads them.
        let synthetic = record["synthetic"].as_bool().unwrap();
        assert_eq!(
            synthetic,
            id.contains("synthetic"),
            "{id}: synthetic flag vs id"
        );
        assert_eq!(
            synthetic,
            built_by.starts_with("SYNTHETIC"),
            "{id}: built_by says synthetic"
        );
        assert_eq!(
            synthetic,
            record["label"].as_str().unwrap().starts_with("SYNTHETIC"),
            "{id}"
        );
    }
}

/// The CLI's `kmer:3` baseline on full data: normalised 3-mer spectrum -> the protocol's
/// logistic-regression probe -> test MCC.
fn kmer3_mcc(task: &TaskData) -> f64 {
    let kmer = KmerSpectrum::new(3, false).unwrap();
    let embed = |seqs: &[String]| kmer.embed(seqs).mapv(f64::from);
    let data = &task.data;
    let fit = probe::fit(embed(&data.train.sequences).view(), &data.train.y).unwrap();
    let predicted = fit.predict(embed(&data.test.sequences).view());
    metrics::score(&data.test.y, &predicted).mcc
}

#[test]
fn kmer_baseline_finds_signal_but_solves_no_task() {
    let mut above_chance = 0;
    let tasks = suite();
    for task in &tasks {
        let mcc = kmer3_mcc(task);
        eprintln!("{:45} 3-mer MCC {mcc:.3}", task.task.id);
        assert!(
            mcc < 0.95,
            "{}: a 3-mer count solves it ({mcc:.3})",
            task.task.id
        );
        assert!(
            mcc > 0.05,
            "{}: at chance for a 3-mer count ({mcc:.3})",
            task.task.id
        );
        if mcc >= 0.1 {
            above_chance += 1;
        }
    }
    // Splice sites and close species are hard for a position-free count; most tasks are not.
    assert!(
        above_chance * 3 >= tasks.len() * 2,
        "only {above_chance} of {} tasks clearly above chance",
        tasks.len()
    );
}
