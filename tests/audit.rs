//! The leak audit against its independent oracle (tests/oracle/make_audit_fixtures.py) on
//! planted leaks, in every task layout the readers take, natively and through the CLI.

#[cfg(feature = "hub")]
#[path = "support/hub_server.rs"]
mod hub_server;

use geneb::input::audit::{self, TaskAudit};
use geneb::input::split::SplitSettings;
use geneb::input::{tasks_from_path, tasks_from_path_split};
use geneb::task::TaskData;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/audit")
        .join(path)
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixture("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn one_task(path: &str) -> TaskData {
    let mut tasks = tasks_from_path(&fixture(path), None).unwrap();
    assert_eq!(tasks.len(), 1, "{path}");
    tasks.remove(0)
}

/// Every field the oracle computes, equal (the MCC to rounding).
fn assert_matches_oracle(got: &TaskAudit, want: &Value, what: &str) {
    let count = |field: &str| want[field].as_u64().unwrap() as usize;
    assert_eq!(got.train, count("train"), "{what}: train");
    assert_eq!(got.test, count("test"), "{what}: test");
    assert_eq!(got.exact_copies, count("exact_copies"), "{what}: exact");
    assert_eq!(
        got.reverse_complement_copies,
        count("reverse_complement_copies"),
        "{what}: reverse complement"
    );
    assert_eq!(got.near_copies, count("near_copies"), "{what}: near");
    let rows: Vec<usize> = want["leaked_test_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(got.leaked_test_rows, rows, "{what}: leaked rows");
    let mcc = want["nearest_neighbour_mcc"].as_f64().unwrap();
    assert!(
        (got.nearest_neighbour_mcc - mcc).abs() < 1e-12,
        "{what}: nearest-neighbour MCC {} vs {mcc}",
        got.nearest_neighbour_mcc
    );
    assert_eq!(
        got.conflicting_training_duplicates,
        count("conflicting_training_duplicates"),
        "{what}: conflicting duplicates"
    );
    assert_eq!(
        got.test_rows_without_informative_kmers,
        count("test_rows_without_informative_kmers"),
        "{what}: rows without an informative 21-mer"
    );
}

#[test]
fn every_layout_audits_as_the_oracle_does() {
    let want = &expected()["planted"];
    // The planted rows sit on both sides of the threshold, at it, and every kind is there.
    let containments: Vec<f64> = want["containments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(containments.contains(&0.5));
    assert!(containments.iter().any(|&c| c > 0.45 && c < 0.5));
    for path in [
        "table/planted.csv",
        "pair/planted",
        "fasta/planted.fa",
        "parquet/planted.parquet",
    ] {
        let task = one_task(path);
        let got = audit::audit_task(&task).unwrap();
        assert_eq!(got.task, "planted", "{path}");
        assert_matches_oracle(&got, want, path);
        assert_eq!(got.verdict, audit::Verdict::Fail, "{path}");
    }
}

#[test]
fn the_audit_does_not_depend_on_the_thread_count() {
    let task = one_task("table/planted.csv");
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| audit::audit_task(&task).unwrap())
    };
    assert_eq!(on(1), on(4));
}

#[test]
fn a_task_whose_test_rows_all_leak_says_so() {
    let task = one_task("leaked/all_leaked.csv");
    let got = audit::audit_task(&task).unwrap();
    assert_matches_oracle(&got, &expected()["all_leaked"], "all_leaked");
    assert_eq!(got.leaked_test_rows.len(), got.test);
    assert_eq!(got.leak_share(), 1.0);
}

#[test]
fn similarity_clusters_are_the_oracles_and_the_split_keeps_them_apart() {
    let want: Vec<String> = expected()["unsplit_clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let text = std::fs::read_to_string(fixture("unsplit/unsplit.csv")).unwrap();
    let rows: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect();
    assert_eq!(
        audit::similarity_clusters(&rows, "unsplit.csv").unwrap(),
        want
    );
    let settings = SplitSettings {
        by_similarity: true,
        ..SplitSettings::default()
    };
    let tasks = tasks_from_path_split(&fixture("unsplit/unsplit.csv"), None, &settings).unwrap();
    let made = tasks[0].data.made_split.as_ref().unwrap();
    assert!(
        made.method.starts_with("by similarity cluster"),
        "{}",
        made.method
    );
    let test: std::collections::HashSet<usize> = made.test_rows.iter().copied().collect();
    for (row, cluster) in want.iter().enumerate() {
        for (other, same) in want.iter().enumerate() {
            if cluster == same {
                assert_eq!(
                    test.contains(&row),
                    test.contains(&other),
                    "rows {row} and {other} are relatives on both sides"
                );
            }
        }
    }
    // Audited, the split has no leak; the default split of the same table has.
    assert!(
        audit::audit_task(&tasks[0])
            .unwrap()
            .leaked_test_rows
            .is_empty()
    );
    let plain = tasks_from_path(&fixture("unsplit/unsplit.csv"), None).unwrap();
    assert!(
        !audit::audit_task(&plain[0])
            .unwrap()
            .leaked_test_rows
            .is_empty()
    );
}

fn geneb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(args)
        .output()
        .expect("running geneb")
}

fn one_line_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    stderr
}

#[test]
fn the_cli_prints_the_audit_and_cleans_the_leaks() {
    let path = fixture("table/planted.csv");
    let out = geneb(&["audit", "--task", path.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["k"], 21);
    let got: TaskAudit = serde_json::from_value(report["tasks"][0].clone()).unwrap();
    assert_matches_oracle(&got, &expected()["planted"], "CLI");

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("audit-clean");
    let _ = std::fs::remove_dir_all(&dir);
    let out = geneb(&[
        "audit",
        "--task",
        path.to_str().unwrap(),
        "--clean",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("planted") && table.contains("fail"),
        "{table}"
    );
    let clean = one_task_at(&dir.join("planted.csv"));
    let audited = audit::audit_task(&clean).unwrap();
    assert_eq!(audited.test, got.test - got.leaked_test_rows.len());
    assert!(audited.leaked_test_rows.is_empty());
    assert_eq!(audited.train, got.train);
}

fn one_task_at(path: &Path) -> TaskData {
    tasks_from_path(path, None).unwrap().remove(0)
}

#[test]
fn bad_audits_are_one_line() {
    one_line_error(&geneb(&["audit"]));
    let path = fixture("table/planted.csv");
    index_refused(&path, "150000", "planted");
    let e = one_line_error(&geneb(&[
        "audit",
        "--task",
        path.to_str().unwrap(),
        "--split-by",
        "similarity",
    ]));
    assert!(e.contains("--split-by"), "{e}");
}

#[test]
fn one_class_tasks_are_one_line_or_a_clear_result() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inputs/bad/one_class_in_train.csv");
    let e = one_line_error(&geneb(&["audit", "--task", path.to_str().unwrap()]));
    assert!(
        e.contains("one_class_in_train.csv") && e.contains("only one class"),
        "{e}"
    );
    // One class among the test rows is a task the audit can read: its baseline's MCC is 0.
    let dir = scratch("audit-one-class-test");
    let table = dir.join("one_class_test.csv");
    std::fs::write(
        &table,
        "sequence,label,split\n\
         ACGTACGTTTGACCAGTACGATCGATCGAAA,a,train\n\
         TTTTGGGCCCAAATGCGCGATATAGCGCGAT,b,train\n\
         ACGTACGTTTGACCAGTACGATCGATCGAAA,a,test\n\
         GGGGGCCCCAAAATTTTGGGGCCCCAAAATTT,a,test\n",
    )
    .unwrap();
    let got = audit_json(&table, &[]);
    assert_eq!((got.exact_copies, got.leaked_test_rows), (1, vec![0]));
    assert_eq!(got.nearest_neighbour_mcc, 0.0);
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `geneb [global] audit --task TABLE --json`'s one task.
fn audit_json(table: &Path, global: &[&str]) -> TaskAudit {
    let mut args = global.to_vec();
    args.extend(["audit", "--task", table.to_str().unwrap(), "--json"]);
    let out = geneb(&args);
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    serde_json::from_value(report["tasks"][0].clone()).unwrap()
}

/// `rows` 60-nt rows, every seventh a test row, labels alternating.
fn write_rows(path: &Path, rows: impl Iterator<Item = String>) {
    let mut csv = String::from("sequence,label,split\n");
    for (i, s) in rows.enumerate() {
        let split = if i % 7 == 0 { "test" } else { "train" };
        csv += &format!("{s},{},{split}\n", i % 2);
    }
    std::fs::write(path, csv).unwrap();
}

#[test]
fn near_identical_rows_are_bounded_by_the_informative_rule_and_the_budget() {
    // 20,000 rows of one 60-nt sequence with one base changed (180 variants, each in about 111
    // rows): every 21-mer is held by more than 64 rows, so the index keeps one entry per
    // 21-mer. Filed row by row it would be 20,000 × 40 windows × 8 bytes = 6.4 MB, over the
    // 3 MB budget given; 20,000 random rows of the same length are refused by it in one line.
    let mut state = 11u64;
    let mut base = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        b"ACGT"[(state >> 62) as usize]
    };
    let sequence: Vec<u8> = (0..60).map(|_| base()).collect();
    let variant = |i: usize| {
        let mut s = sequence.clone();
        let at = i % 60;
        let others: Vec<u8> = b"ACGT".iter().copied().filter(|&b| b != s[at]).collect();
        s[at] = others[(i / 60) % 3];
        String::from_utf8(s).unwrap()
    };
    let dir = scratch("audit-near-identical");
    let near = dir.join("near.csv");
    write_rows(&near, (0..20_000).map(variant));
    let got = audit_json(&near, &["--max-memory", "3MB"]);
    assert_eq!((got.train, got.test), (17_142, 2_858));
    // Every test row repeats a training row, and holds only repeats.
    assert_eq!(got.exact_copies, got.test);
    assert_eq!(got.test_rows_without_informative_kmers, got.test);

    let random = dir.join("random.csv");
    write_rows(
        &random,
        (0..20_000).map(|_| String::from_utf8((0..60).map(|_| base()).collect()).unwrap()),
    );
    index_refused(&random, "3MB", "random");
}

/// `geneb --max-memory BUDGET audit --task TABLE` refuses TABLE's index in one line.
fn index_refused(table: &Path, budget: &str, task: &str) {
    let args = [
        "--max-memory",
        budget,
        "audit",
        "--task",
        table.to_str().unwrap(),
    ];
    let e = one_line_error(&geneb(&args));
    let want = format!("task {task}: the audit's 21-mer index needs more");
    assert!(e.contains(&want), "{e}");
}

/// `--suite` audits official tasks as `eval --suite` reads them: downloaded from the hub into
/// the cache, then from the cache alone with `--offline`.
#[cfg(feature = "hub")]
#[test]
fn a_suite_is_audited_from_the_hub_and_then_from_the_cache() {
    let server = hub_server::serve(None);
    let cache = scratch("audit-suite-cache");
    let audit = |endpoint: &str, extra: &[&str]| {
        let mut args = vec!["audit", "--suite", "geneb:chromatin-acc", "--json"];
        args.extend(extra);
        Command::new(env!("CARGO_BIN_EXE_geneb"))
            .args(&args)
            .env("GENEB_HF_ENDPOINT", endpoint)
            .env("GENEB_CACHE", &cache)
            .output()
            .expect("running geneb")
    };
    let out = audit(&server.endpoint, &[]);
    assert!(out.status.success(), "{out:?}");
    // Downloaded into the cache under the catalogue's pinned revision.
    assert!(!server.requests.lock().unwrap().is_empty());
    let cached = cache
        .join("hub/datasets")
        .join(hub_server::REPO)
        .join(hub_server::REVISION)
        .join("tasks/iDHS-EL_DNase_I/test.csv");
    assert!(cached.is_file(), "{}", cached.display());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let got: TaskAudit = serde_json::from_value(report["tasks"][0].clone()).unwrap();
    assert_eq!(report["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(got.task, "iDHS-EL_DNase_I");
    // The same audit as the fixture's own files, read as a user's task.
    let files = hub_server::fixture_root().join("tasks/iDHS-EL_DNase_I");
    let direct = audit::audit_task(&one_task_at(&files)).unwrap();
    assert_eq!((got.train, got.test), (direct.train, direct.test));
    assert_eq!(got.leaked_test_rows, direct.leaked_test_rows);
    assert_eq!(got.nearest_neighbour_mcc, direct.nearest_neighbour_mcc);
    let offline = audit(&hub_server::dead_endpoint(), &["--offline"]);
    assert!(offline.status.success(), "{offline:?}");
    assert_eq!(offline.stdout, out.stdout);
}

/// The MCC over the rows of `y_true` not in `leaked`, from the result's own evidence.
fn recomputed(y_true: &[usize], predicted: &[usize], leaked: &[usize]) -> f64 {
    let keep: Vec<usize> = (0..y_true.len()).filter(|r| !leaked.contains(r)).collect();
    let truth: Vec<usize> = keep.iter().map(|&r| y_true[r]).collect();
    let kept: Vec<usize> = keep.iter().map(|&r| predicted[r]).collect();
    geneb::metrics::score(&truth, &kept).mcc
}

/// `geneb eval --model kmer:3` on a fixture's task with `extra` arguments, its result on stdout.
fn evaluate(task: &str, regimes: &str, extra: &[&str]) -> Output {
    let path = fixture(task);
    let mut args = vec![
        "eval",
        "--model",
        "kmer:3",
        "--task",
        path.to_str().unwrap(),
        "--regimes",
        regimes,
        "--quiet",
        "--no-cache",
    ];
    args.extend(extra);
    let out = geneb(&args);
    assert!(out.status.success(), "{out:?}");
    out
}

#[test]
fn an_evaluation_records_the_audit_and_scores_the_rows_that_did_not_leak() {
    let out = evaluate("table/planted.csv", "full,1shot", &[]);
    let sub = geneb::submission::read_results("result", &out.stdout)
        .unwrap()
        .remove(0);
    let audit = &sub.audit["planted"];
    assert_matches_oracle(audit, &expected()["planted"], "eval");
    let evidence = &sub.predictions["planted"];
    let y_true = evidence.y_true.decode("y_true").unwrap();
    for regime in ["full", "1shot"] {
        let fits = &evidence.regimes[regime];
        let want = fits
            .iter()
            .map(|p| recomputed(&y_true, &p.decode("fit").unwrap(), &audit.leaked_test_rows))
            .sum::<f64>()
            / fits.len() as f64;
        let got = sub.leak_free[regime]["planted"];
        assert_eq!(got.test_rows, audit.test - audit.leaked_test_rows.len());
        assert!(
            (got.mcc.unwrap() - want).abs() < 1e-12,
            "{regime}: {:?} vs {want}",
            got.mcc
        );
        // Not the MCC over every row: the leaked rows are really left out.
        assert_ne!(
            got.mcc,
            Some(sub.results[regime]["planted"].mcc),
            "{regime}"
        );
    }
    // The profile shows both, and flags the task.
    let profile = geneb::profile::build(std::slice::from_ref(&sub)).unwrap();
    let row = &profile.regimes[0].rows[0];
    let clean = row.leak_free.as_ref().unwrap();
    assert_eq!(
        clean.macro_mean,
        sub.leak_free[&profile.regimes[0].regime]["planted"].mcc
    );
    let text = geneb::profile::to_text(&profile);
    assert!(
        text.contains("leak-free") && text.contains("fail planted"),
        "{text}"
    );
    // The report too: each regime's leak-free MCCs beside all rows', and the audit's verdict.
    let settings = geneb::profile::bootstrap::Settings {
        replicates: 20,
        seed: 0,
    };
    let analysis =
        geneb::profile::analysis::analyse(std::slice::from_ref(&sub), settings, None).unwrap();
    let report = geneb::report::html::render(&analysis, std::slice::from_ref(&sub)).unwrap();
    let clean_mcc = sub.leak_free["full"]["planted"].mcc.unwrap();
    let leak_free = &report.csv["leak_free_full.csv"];
    assert!(
        leak_free
            .lines()
            .nth(1)
            .unwrap()
            .ends_with(&format!(",{clean_mcc}")),
        "{leak_free}"
    );
    let audit_rows = &report.csv["audit.csv"];
    assert!(
        audit_rows.lines().nth(1).unwrap().starts_with("planted,")
            && audit_rows.trim_end().ends_with(",fail"),
        "{audit_rows}"
    );
    for table in ["table-leak_free_full", "table-audit"] {
        assert!(report.html.contains(table), "{table} not in the report");
    }

    // A result written before the audit existed still reads, and profiles without leak-free rows.
    let mut old: Value = serde_json::from_slice(&out.stdout).unwrap();
    let object = old.as_object_mut().unwrap();
    assert!(object.remove("audit").is_some() && object.remove("leak_free").is_some());
    let old = geneb::submission::read_results("old.json", old.to_string().as_bytes()).unwrap();
    let profile = geneb::profile::build(&old).unwrap();
    assert!(profile.regimes[0].rows[0].leak_free.is_none());
    assert!(!geneb::profile::to_text(&profile).contains("leak-free"));
}

#[test]
fn a_task_whose_test_rows_all_leak_has_no_leak_free_score() {
    let out = evaluate("leaked/all_leaked.csv", "full", &[]);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let clean = &result["leak_free"]["full"]["all_leaked"];
    assert_eq!(clean["MCC"], Value::Null);
    assert_eq!(clean["test_rows"], 0);
}

#[test]
fn argument_errors_are_one_line_and_help_is_not_an_error() {
    // clap's own rendering is five lines (the error, a usage block and a hint).
    let e = one_line_error(&geneb(&[
        "eval",
        "--embeddings",
        "dir",
        "--shard",
        "0/2",
        "--out-dir",
        "d",
    ]));
    assert!(e.starts_with("geneb: "), "{e}");
    let e = one_line_error(&geneb(&[
        "audit",
        "--task",
        "t.csv",
        "--split-by",
        "kinship",
    ]));
    assert!(e.contains("kinship"), "{e}");
    // Each other kind of argument error clap reports: one line naming what was wrong.
    for (args, named) in [
        (&["eval", "--no-such-flag"][..], "--no-such-flag"),
        (&["eval", "--model"][..], "--model"),
        (&["frobnicate"][..], "frobnicate"),
        (&["merge"][..], "--out-dir"),
        (&["--max-memory"][..], "--max-memory"),
    ] {
        let e = one_line_error(&geneb(args));
        assert!(e.starts_with("geneb: ") && e.contains(named), "{e}");
    }
    let help = geneb(&["audit", "--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--clean"));
}

#[test]
fn a_k_fold_run_audits_every_fold_and_scores_each_folds_clean_rows() {
    let out = evaluate("unsplit/unsplit.csv", "full", &["--folds", "3"]);
    let sub = geneb::submission::read_results("result", &out.stdout)
        .unwrap()
        .remove(0);
    // The folds' audits are one, their leaked rows placed as the evidence concatenates the folds.
    let audit = &sub.audit["unsplit"];
    let y_true = sub.predictions["unsplit"].y_true.decode("y_true").unwrap();
    assert_eq!(audit.test, y_true.len());
    assert!(
        !audit.leaked_test_rows.is_empty(),
        "the default folds split relatives"
    );
    assert!(audit.leaked_test_rows.iter().all(|&r| r < audit.test));
    let clean = sub.leak_free["full"]["unsplit"];
    assert_eq!(clean.test_rows, audit.test - audit.leaked_test_rows.len());
    assert!(clean.mcc.is_some_and(|m| (-1.0..=1.0).contains(&m)));
}
