//! Using the probe: `geneb eval --save-probe` then `geneb predict` on the task's own test
//! sequences gives the evaluation's test predictions exactly, with probabilities; a probe is
//! refused for another encoder and for another format version (one line, exit 2).

use geneb::submission::ClassIndices;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn geneb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(args)
        .output()
        .unwrap()
}

fn refused(out: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(expected),
        "expected {expected:?} in {stderr}"
    );
}

#[test]
fn a_saved_probe_reproduces_the_evaluations_test_predictions() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("predict");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let table = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tasks/smoke/smoke_yeast_vs_fly_species.csv"
    );
    let (probe, result) = (dir.join("probe.json"), dir.join("result.json"));
    let out = geneb(&[
        "eval",
        "--model",
        "kmer:3",
        "--task",
        table,
        "--regimes",
        "full",
        "--no-cache",
        "--quiet",
        "--save-probe",
        probe.to_str().unwrap(),
        "--out",
        result.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
    let saved: Value = serde_json::from_slice(&std::fs::read(&probe).unwrap()).unwrap();
    assert_eq!(saved["encoder"]["identity"], "kmer:3");
    assert_eq!(saved["format_version"], 1);

    // The task's test sequences, in the order the evaluation scored them.
    let tasks = geneb::input::tasks_from_path(Path::new(table), None).unwrap();
    let test = &tasks[0].data.test;
    let fasta: String = test
        .sequences
        .iter()
        .enumerate()
        .map(|(i, s)| format!(">t{i}\n{s}\n"))
        .collect();
    let input = dir.join("test.fa");
    std::fs::write(&input, fasta).unwrap();
    let scores = dir.join("scores.csv");
    let args = |model: &'static str, probe: &Path| {
        vec![
            "predict".to_string(),
            "--probe".into(),
            probe.display().to_string(),
            "--model".into(),
            model.into(),
            "--input".into(),
            input.display().to_string(),
            "--out".into(),
            scores.display().to_string(),
        ]
    };
    let run = |a: Vec<String>| {
        Command::new(env!("CARGO_BIN_EXE_geneb"))
            .args(a)
            .output()
            .unwrap()
    };
    let out = run(args("kmer:3", &probe));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let labels: Vec<String> = saved["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    let text = std::fs::read_to_string(&scores).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!("id,predicted,p_{},p_{}", labels[0], labels[1])
    );
    let mut predicted = Vec::new();
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], format!("t{i}"));
        let class = labels.iter().position(|l| l == cells[1]).unwrap();
        let p: Vec<f64> = cells[2..].iter().map(|v| v.parse().unwrap()).collect();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{line}");
        assert!(
            p[class] >= 0.5,
            "the predicted class is the likelier one: {line}"
        );
        predicted.push(class);
    }
    let task = tasks[0].task.id.as_str();
    let evaluated: ClassIndices =
        serde_json::from_value(result["predictions"][task]["full"][0].clone()).unwrap();
    assert_eq!(
        predicted,
        evaluated.decode("full").unwrap(),
        "every test prediction"
    );

    refused(
        &run(args("kmer:4", &probe)),
        "this probe was fitted on kmer:3",
    );
    let mut other = saved.clone();
    other["format_version"] = 2.into();
    let other_probe = dir.join("v2.json");
    std::fs::write(&other_probe, other.to_string()).unwrap();
    refused(
        &run(args("kmer:3", &other_probe)),
        "a probe of format version 2",
    );
    let save_probe = |task: &str, regimes: &str| {
        geneb(&[
            "eval",
            "--model",
            "kmer:3",
            "--task",
            task,
            "--regimes",
            regimes,
            "--quiet",
            "--save-probe",
            other_probe.to_str().unwrap(),
        ])
    };
    refused(
        &save_probe(concat!(env!("CARGO_MANIFEST_DIR"), "/tasks/smoke"), "full"),
        "saving the probe takes one model and one task; this run has 1 model(s) and 5 task(s)",
    );
    // The probe saved is the full-data fit the evaluation scored: a run without it is refused
    // before anything is embedded.
    refused(
        &save_probe(table, "10shot"),
        "the saved probe is the full-data one: add the full regime",
    );
}
