//! Your own embeddings through the whole protocol (`geneb::input::embeddings`, `geneb eval
//! --embeddings`): every fit equal to scikit-learn's on numpy's few-shot subsets
//! (tests/oracle/make_embeddings_fixtures.py), the .npz's task and category used, X.npy + a
//! labels table split by geneb, and bad files as one-line errors.

use geneb::eval::probe_embeddings as evaluate;
use geneb::input::embeddings::tasks_from_path;
use geneb::input::split::SplitSettings;
use geneb::protocol::Regime;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn every_fit_equals_scikit_learn_on_numpys_fewshot_subsets() {
    let expected: Value =
        serde_json::from_slice(&std::fs::read(fixture("own_embeddings/expected.json")).unwrap())
            .unwrap();
    let tasks =
        tasks_from_path(&fixture("own_embeddings"), None, &SplitSettings::default()).unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t.task.id.as_str()).collect();
    assert_eq!(
        ids,
        ["binary", "own_three"],
        "file stem, and the npz's own task string"
    );
    assert_eq!(
        tasks[1].task.category, "Promoters",
        "the npz's category string"
    );
    assert_eq!(tasks[0].task.category, "Uncategorized");
    let submission = evaluate("embeddings:own", tasks, &Regime::ALL, &mut |_| {}).unwrap();
    for (task, want) in expected.as_object().unwrap() {
        let evidence = &submission.predictions[task];
        let y_true = evidence.y_true.decode("y_true").unwrap();
        for regime in ["full", "10shot", "1shot"] {
            let fits = &evidence.regimes[regime];
            let want_fits = want[regime].as_array().unwrap();
            assert_eq!(fits.len(), want_fits.len(), "{task} {regime}");
            for (i, (got, want)) in fits.iter().zip(want_fits).enumerate() {
                let got = got.decode(regime).unwrap();
                let want: Vec<usize> = want
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap() as usize)
                    .collect();
                assert_eq!(got, want, "{task} {regime} fit {i}: test predictions");
            }
        }
        assert_eq!(y_true.len(), submission.tasks[task].n_test);
        assert_eq!(submission.fewshot["1shot"][task].len(), 5);
    }
    let protocol = submission.protocol.as_ref().unwrap();
    assert!(
        protocol["deviations"]
            .to_string()
            .contains("the embeddings were made outside geneb"),
        "{protocol}"
    );
    assert_eq!(protocol["encoder"]["files"][0]["stored_as"], "float32");
}

#[test]
fn npy_beside_a_labels_table_is_split_like_a_sequence_table() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("own-npy/cohort");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // 24 rows × 2 dims, float64, class 'b' far from class 'a'; patients of 2 rows.
    let rows = 24;
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, 2), }}");
    let header = format!("{header:<117}\n");
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header.as_bytes());
    let mut table = String::from("label,patient\n");
    for r in 0..rows {
        let class = (r / 2) % 2;
        for v in [class as f64 * 5.0 + r as f64 * 0.01, 1.0 - class as f64] {
            npy.extend(v.to_le_bytes());
        }
        table.push_str(&format!("{},P{}\n", ["a", "b"][class], r / 2));
    }
    std::fs::write(dir.join("X.npy"), &npy).unwrap();
    std::fs::write(dir.join("labels.csv"), &table).unwrap();
    let settings = SplitSettings {
        group_column: Some("patient".into()),
        test_fraction: 0.25,
        ..SplitSettings::default()
    };
    let tasks = tasks_from_path(&dir, None, &settings).unwrap();
    assert_eq!(tasks.len(), 1);
    let task = &tasks[0];
    assert_eq!(task.task.id, "cohort");
    assert_eq!(task.labels, ["a", "b"]);
    assert_eq!(task.stored_as, "float64");
    let made = task.made_split.as_ref().unwrap();
    let test: Vec<usize> = made.test_rows.clone();
    for r in &test {
        assert!(
            test.contains(&(r ^ 1)),
            "row {r}'s patient is on both sides"
        );
    }
    assert_eq!(task.x_test.nrows(), test.len());
    assert_eq!(task.x_test[[0, 0]] as f64, {
        let r = test[0];
        ((r / 2) % 2) as f64 * 5.0 + r as f64 * 0.01
    } as f32 as f64);
    let submission = evaluate("embeddings:cohort", tasks, &[Regime::Full], &mut |_| {}).unwrap();
    assert!((submission.results["full"]["cohort"].mcc - 1.0).abs() < 1e-12);

    std::fs::write(dir.join("labels.csv"), "label\na\nb\n").unwrap();
    let err = tasks_from_path(&dir, None, &SplitSettings::default()).unwrap_err();
    assert!(
        err.to_string().contains("2 data rows but") && err.to_string().contains("has 24 rows"),
        "{err}"
    );
}

#[test]
fn the_cli_runs_the_protocol_on_embeddings_and_refuses_bad_files() {
    let geneb = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_geneb"))
            .args(args)
            .output()
            .unwrap()
    };
    let folder = fixture("own_embeddings");
    let out = geneb(&["eval", "--embeddings", folder.to_str().unwrap(), "--quiet"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["model_id"], "embeddings:own_embeddings");
    for regime in ["full", "10shot", "1shot"] {
        assert!(result["results"][regime]["own_three"]["MCC"].is_number());
    }
    // The profile reads it back like any result.
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("own-embeddings.json");
    std::fs::write(&path, &out.stdout).unwrap();
    let profile = geneb(&["profile", path.to_str().unwrap()]);
    assert!(
        profile.status.success(),
        "{}",
        String::from_utf8_lossy(&profile.stderr)
    );
    assert!(String::from_utf8_lossy(&profile.stdout).contains("Promoters"));

    let bad = fixture("own_embeddings_bad_shapes.npz");
    let out = geneb(&["eval", "--embeddings", bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("own_embeddings_bad_shapes.npz: X_train has 6 columns but X_test has 4"),
        "{stderr}"
    );
    let both = geneb(&[
        "eval",
        "--embeddings",
        bad.to_str().unwrap(),
        "--model",
        "kmer:3",
    ]);
    assert_eq!(both.status.code(), Some(2));
}
