//! Splits of tables without a split column (`geneb::input::split`): equal to scikit-learn's on the
//! committed oracle (tests/oracle/make_split_fixtures.py), groups never on both sides, classes
//! stratified, every bad input one error, and the CLI recording the split in the result.

use geneb::input::split::{self, SplitSettings};
use geneb::input::{InputFile, tasks_from_files_split};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

#[derive(Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    counts: Vec<usize>,
    step: usize,
    splits: Vec<TrainTest>,
    folds: Vec<Folds>,
}

#[derive(Deserialize)]
struct TrainTest {
    test_fraction: f64,
    seed: u32,
    train: Vec<usize>,
    test: Vec<usize>,
}

#[derive(Deserialize)]
struct Folds {
    folds: usize,
    seed: u32,
    test: Vec<Vec<usize>>,
}

/// The oracle's recipe (as tests/fewshot.rs): classes in blocks, row i moved to (i * step) % n.
fn labels(counts: &[usize], step: usize) -> Vec<usize> {
    let n: usize = counts.iter().sum();
    let mut y = vec![0; n];
    let blocks = counts
        .iter()
        .enumerate()
        .flat_map(|(class, &count)| std::iter::repeat_n(class, count));
    for (i, class) in blocks.enumerate() {
        y[(i * step) % n] = class;
    }
    y
}

#[test]
fn splits_equal_scikit_learns_train_test_split_and_stratified_kfold() {
    let fixture: Fixture =
        serde_json::from_str(include_str!("fixtures/split/expected.json")).unwrap();
    let mut checked = 0;
    for case in &fixture.cases {
        let y = labels(&case.counts, case.step);
        let names: Vec<String> = (0..case.counts.len()).map(|c| c.to_string()).collect();
        for expected in &case.splits {
            let settings = SplitSettings {
                test_fraction: expected.test_fraction,
                seed: expected.seed,
                ..SplitSettings::default()
            };
            let made = split::make(&y, &names, None, &settings, "t.csv").unwrap();
            let what = format!(
                "{} f={} seed={}",
                case.name, expected.test_fraction, expected.seed
            );
            assert_eq!(made.len(), 1, "{what}");
            assert_eq!(made[0].0.train, expected.train, "{what}: train");
            assert_eq!(made[0].0.test, expected.test, "{what}: test");
            assert_eq!(made[0].1.test_rows, expected.test, "{what}: recorded");
            checked += 1;
        }
        for expected in &case.folds {
            let settings = SplitSettings {
                seed: expected.seed,
                folds: Some(expected.folds),
                ..SplitSettings::default()
            };
            let made = split::make(&y, &names, None, &settings, "t.csv").unwrap();
            let tests: Vec<Vec<usize>> = made.iter().map(|(s, _)| s.test.clone()).collect();
            assert_eq!(
                tests, expected.test,
                "{} k={} seed={}",
                case.name, expected.folds, expected.seed
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 96 + 40);
}

/// A cohort: `patients` patients with 1–4 sequences each, all of one class per patient except
/// every fifth, which has both (as a donor sampled in two conditions can).
fn cohort(patients: usize) -> String {
    let mut table = String::from("sequence,label,patient\n");
    let bases = ["ACGT", "TTGA", "GGCA", "CATG"];
    for p in 0..patients {
        for s in 0..1 + (p * 7) % 4 {
            let label = if p % 5 == 0 { s % 2 } else { p % 2 };
            table.push_str(&format!("{}{},{label},P{p}\n", bases[s], bases[p % 4]));
        }
    }
    table
}

fn read(table: &str, settings: &SplitSettings) -> geneb::Result<Vec<geneb::task::TaskData>> {
    let files = [InputFile {
        name: "cohort.csv".into(),
        bytes: table.as_bytes().to_vec(),
    }];
    tasks_from_files_split(&files, None, settings)
}

/// Each data row's patient, as the table lists them.
fn patients(table: &str) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().to_string())
        .collect()
}

#[test]
fn groups_stay_on_one_side_and_classes_are_stratified() {
    let table = cohort(60);
    let patient = patients(&table);
    for seed in [0, 42, 7] {
        let settings = SplitSettings {
            seed,
            test_fraction: 0.25,
            group_column: Some("patient".into()),
            ..SplitSettings::default()
        };
        let tasks = read(&table, &settings).unwrap();
        assert_eq!(tasks.len(), 1);
        let made = tasks[0].data.made_split.as_ref().unwrap();
        assert_eq!(made.groups, Some(60));
        let test: BTreeSet<usize> = made.test_rows.iter().copied().collect();
        let test_groups: BTreeSet<&str> = test.iter().map(|&r| patient[r].as_str()).collect();
        for (row, p) in patient.iter().enumerate() {
            assert_eq!(
                test.contains(&row),
                test_groups.contains(p.as_str()),
                "seed {seed}: patient {p} is on both sides"
            );
        }
        let data = &tasks[0].data;
        assert_eq!(data.train.len() + data.test.len(), patient.len());
        for class in 0..2 {
            let n_test = data.test.y.iter().filter(|&&y| y == class).count();
            let n_all = n_test + data.train.y.iter().filter(|&&y| y == class).count();
            let share = n_test as f64 / n_all as f64;
            assert!(
                (share - 0.25).abs() < 0.06,
                "seed {seed}: class {class} has {share:.3} of its rows in test"
            );
        }
        // The same seed gives the same split.
        assert_eq!(read(&table, &settings).unwrap(), tasks);
    }
}

#[test]
fn group_kfold_puts_every_group_in_exactly_one_test_fold() {
    let table = cohort(40);
    let patient = patients(&table);
    let settings = SplitSettings {
        group_column: Some("Patient".into()), // column names match case-insensitively
        folds: Some(4),
        ..SplitSettings::default()
    };
    let tasks = read(&table, &settings).unwrap();
    assert_eq!(tasks.len(), 4);
    let mut fold_of_patient: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rows = 0;
    for (f, task) in tasks.iter().enumerate() {
        assert_eq!(task.task.id, format!("cohort#fold{}of4", f + 1));
        assert_eq!(
            split::reported_id((&task.task.id, task.data.made_split.as_ref())),
            "cohort"
        );
        let made = task.data.made_split.as_ref().unwrap();
        rows += made.test_rows.len();
        for &r in &made.test_rows {
            let earlier = fold_of_patient.insert(&patient[r], f);
            assert!(
                earlier.is_none_or(|e| e == f),
                "patient {} in two folds",
                patient[r]
            );
        }
    }
    assert_eq!(rows, patient.len());
}

#[test]
fn bad_split_input_is_one_clear_error() {
    let with_groups = |column: &str| SplitSettings {
        group_column: Some(column.into()),
        ..SplitSettings::default()
    };
    let cases: Vec<(String, SplitSettings, &str)> = vec![
        (
            cohort(10),
            with_groups("donor"),
            "no `donor` (the group column) column; the header (first line) has `sequence`, `label`, `patient`",
        ),
        (
            "text,label,patient\nACGT,0,P1\nACGA,1,P1\nACGG,0,P1\nAAAA,1,P1\n".into(),
            with_groups("patient"),
            "the group column 'patient' has only 1 group(s) (P1): a train/test split needs at least 2",
        ),
        (
            "text,label,patient\nACGT,0,P1\nACGA,1,P1\nACGG,0,P2\nAAAA,0,P2\n".into(),
            with_groups("patient"),
            "class '1' is in only 1 group(s) of 'patient' (P1)",
        ),
        (
            "text,label\nACGT,0\nACGA,1\nACGG,0\nAAAA,0\n".into(),
            SplitSettings::default(),
            "class '1' has only 1 row: it cannot be in both the train and the test split",
        ),
        (
            "text,label\nACGT,0\nACGA,1\nACGG,0\nAAAA,1\n".into(),
            SplitSettings {
                folds: Some(3),
                ..SplitSettings::default()
            },
            "class '0' has only 2 row(s), fewer than the 3 folds",
        ),
        (
            "text,label,patient\nACGT,0,P1\nACGA,1,\n".into(),
            with_groups("patient"),
            "empty group",
        ),
        (
            cohort(10),
            SplitSettings {
                test_fraction: 1.5,
                ..SplitSettings::default()
            },
            "the test fraction must be between 0 and 1",
        ),
    ];
    for (table, settings, expected) in cases {
        let err = read(&table, &settings).unwrap_err().to_string();
        assert!(
            err.starts_with("cohort.csv") || !err.contains(".csv"),
            "{err}"
        );
        assert!(err.contains(expected), "expected {expected:?} in: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

fn geneb(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(args)
        .output()
        .expect("running geneb")
}

#[test]
fn the_cli_splits_records_the_deviation_and_merges_folds() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("split-cli");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let table = dir.join("cohort.csv");
    std::fs::write(&table, cohort(30)).unwrap();
    let table = table.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["eval", "--model", "kmer:2", "--task", table, "--quiet"];
        args.extend_from_slice(&["--regimes", "full,1shot", "--no-cache"]);
        args.extend_from_slice(extra);
        let out = geneb(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let result = run(&["--group-column", "patient", "--split-seed", "7"]);
    let split = &result["tasks"]["cohort"]["split"];
    assert_eq!(split["seed"], 7);
    assert_eq!(split["test_fraction"], 0.2);
    assert_eq!(split["group_column"], "patient");
    let n_test = result["tasks"]["cohort"]["n_test"].as_u64().unwrap();
    assert_eq!(split["test_rows"].as_array().unwrap().len() as u64, n_test);
    let deviations = result["protocol"]["deviations"].to_string();
    assert!(
        deviations.contains(
            "task cohort has no split column: geneb made one train/test split with 20 % test rows"
        ),
        "{deviations}"
    );

    let folded = run(&["--folds", "3"]);
    let folds = &folded["folds"]["full"]["cohort"];
    let per_fold: Vec<f64> = folds["per_fold"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["MCC"].as_f64().unwrap())
        .collect();
    assert_eq!(per_fold.len(), 3);
    let mean = per_fold.iter().sum::<f64>() / 3.0;
    assert!((folded["results"]["full"]["cohort"]["MCC"].as_f64().unwrap() - mean).abs() < 1e-12);
    assert!((folds["mean"]["MCC"].as_f64().unwrap() - mean).abs() < 1e-12);
    assert_eq!(folded["results"]["full"].as_object().unwrap().len(), 1);
    assert_eq!(
        folded["fewshot"]["1shot"]["cohort"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let rows = cohort(30).lines().count() as u64 - 1;
    assert_eq!(folded["tasks"]["cohort"]["n_test"].as_u64(), Some(rows));

    // Errors: one line, exit 2.
    for (extra, expected) in [
        (
            vec!["--group-column", "donor"],
            "no `donor` (the group column) column",
        ),
        (vec!["--folds", "1"], "k-fold needs at least 2 folds"),
    ] {
        let mut args = vec!["eval", "--model", "kmer:2", "--task", table, "--quiet"];
        args.extend_from_slice(&extra);
        let out = geneb(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
    // Split options with data that came split are refused, not ignored.
    let smoke = concat!(env!("CARGO_MANIFEST_DIR"), "/tasks/smoke");
    let out = geneb(&[
        "eval", "--model", "kmer:2", "--task", smoke, "--folds", "5", "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("every task given has its own split"));
}

/// A sharded run over two tables geneb split itself merges into the unsharded run's result:
/// each pair's split deviation is its task's, not an encoder difference between the pairs.
#[test]
fn a_sharded_run_over_split_less_tables_merges_with_each_tasks_split_deviation() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("split-merge");
    let _ = std::fs::remove_dir_all(&dir);
    let tables = dir.join("tables");
    std::fs::create_dir_all(&tables).unwrap();
    std::fs::write(tables.join("cohort_a.csv"), cohort(30)).unwrap();
    std::fs::write(tables.join("cohort_b.csv"), cohort(24)).unwrap();
    let (tables, shards, merged) = (
        tables.to_str().unwrap(),
        dir.join("shards"),
        dir.join("merged"),
    );
    let common = [
        "--model",
        "kmer:2",
        "--task",
        tables,
        "--regimes",
        "full",
        "--no-cache",
        "--quiet",
        "--group-column",
        "patient",
    ];
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    for shard in ["0/2", "1/2"] {
        let mut args = vec![
            "eval",
            "--out-dir",
            shards.to_str().unwrap(),
            "--shard",
            shard,
        ];
        args.extend_from_slice(&common);
        ok(geneb(&args));
    }
    ok(geneb(&[
        "merge",
        shards.to_str().unwrap(),
        "--out-dir",
        merged.to_str().unwrap(),
    ]));
    // One model: one merged submission.
    let file = std::fs::read_dir(&merged)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let merged: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let mut args = vec!["eval"];
    args.extend_from_slice(&common);
    let whole: serde_json::Value = serde_json::from_slice(&ok(geneb(&args)).stdout).unwrap();
    assert_eq!(
        merged["protocol"]["deviations"],
        whole["protocol"]["deviations"]
    );
    assert_eq!(merged["tasks"], whole["tasks"]);
    assert_eq!(merged["results"], whole["results"]);
    let deviations = merged["protocol"]["deviations"].to_string();
    for task in ["cohort_a", "cohort_b"] {
        assert!(
            deviations.contains(&format!("task {task} has no split column")),
            "{deviations}"
        );
    }
}
