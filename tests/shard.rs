//! Sharded runs (`geneb eval --shard I/N --out-dir`) and `geneb merge`, with the real binary:
//! merged shards equal the unsharded run, reruns only do what is missing, and every way of
//! mixing runs is refused with one line and exit code 2. The same on a real Slurm is
//! tests/slurm.rs.

#[path = "support/sharding.rs"]
mod sharding;

use serde_json::Value;
use sharding::*;
use std::path::Path;
use std::process::Output;

/// `geneb eval --shard I/N --out-dir DIR`, with the embedding cache beside DIR.
fn shard(i: usize, n: usize, models: &[&str], tasks: &str, dir: &Path, extra: &[&str]) -> Output {
    let spec = format!("{i}/{n}");
    let mut args = vec!["eval", "--task", tasks, "--shard", &spec];
    args.extend(["--out-dir", dir.to_str().unwrap()]);
    for model in models {
        args.extend(["--model", model]);
    }
    args.extend(extra);
    geneb(&args, &dir.join("../cache"))
}

/// `geneb merge DIRS --out-dir OUT`.
fn merge(dirs: &[&Path], out: &Path) -> Output {
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    args.extend(["--out-dir", out.to_str().unwrap()]);
    geneb(&args, out)
}

/// The one-line error of a refused command.
fn refused(out: Output) -> String {
    assert_eq!(out.status.code(), Some(2), "expected exit code 2");
    let text = String::from_utf8(out.stderr).unwrap();
    assert_eq!(text.trim_end().lines().count(), 1, "one line: {text}");
    text
}

fn pair_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .flat_map(|d| std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()))
        .collect();
    files.sort();
    files
}

/// The "done when" of sharding: the smoke suite under a built-in encoder and an hf: model
/// fixture, in 3 shards, merged, equals the unsharded runs; the profile reads the merge.
#[test]
fn merged_shards_equal_the_unsharded_run_for_builtin_and_hf_models() {
    let root = fresh_dir("shard-smoke");
    let bert = format!("hf:{}", repo("tests/fixtures/models/bert").display());
    let models = ["kmer:4", bert.as_str()];
    let tasks = repo("tasks/smoke");
    let tasks = tasks.to_str().unwrap();
    let (results, merged) = (root.join("results"), root.join("merged"));
    for i in 0..3 {
        succeeded(shard(i, 3, &models, tasks, &results, &[]));
    }
    assert_eq!(
        pair_files(&results).len(),
        2 * 5,
        "one file per (model, task)"
    );
    succeeded(merge(&[&results], &merged));
    let reference = unsharded(&models, tasks, &root.join("cache-unsharded"), &root);
    for (model, expected) in models.iter().zip(reference) {
        let merged = merged_result(&merged, model);
        // Every shard embedded its pairs itself, as the unsharded run did: the same work.
        for count in ["embedded_sequences", "embedded_nucleotides"] {
            let cost = |result: &Value| result["protocol"]["cost"][count].clone();
            assert_eq!(cost(&merged), cost(&expected), "{model}: {count}");
        }
        assert_eq!(
            without_measurements(merged),
            without_measurements(expected),
            "{model}"
        );
    }
    // A pair computed again finds its embeddings in the cache, says so, and still merges.
    let bert_pair = pair_files(&results)
        .into_iter()
        .find(|p| p.to_string_lossy().contains("bert") && p.to_string_lossy().contains("lambda"))
        .unwrap();
    std::fs::remove_file(&bert_pair).unwrap();
    for i in 0..3 {
        succeeded(shard(i, 3, &models, tasks, &results, &[]));
    }
    let again = read_json(&bert_pair);
    let cached = &again["protocol"]["embeddings_from_cache"]["smoke_lambda_phage_vs_ecoli"];
    assert_eq!(cached, &serde_json::json!(["train", "test"]));
    succeeded(merge(&[&results], &merged));
    check_merged_cost(&results, &merged, &bert);
    let profile = geneb(
        &[
            "profile",
            merged.join("kmer%3A4.json").to_str().unwrap(),
            "--bootstrap",
            "10",
        ],
        &root,
    );
    let profile = String::from_utf8(succeeded(profile).stdout).unwrap();
    assert!(profile.contains("kmer:4"), "{profile}");
    std::fs::remove_dir_all(&root).unwrap();
}

/// The merged `protocol.cost` of `model` is its pairs' combined, computed here by hand: the
/// work and its seconds summed, the rates from the sums, the longest load, the highest peaks.
fn check_merged_cost(results: &Path, merged: &Path, model: &str) {
    let folder = geneb::shard::file_name(model);
    let pairs: Vec<Value> = pair_files(results)
        .iter()
        .filter(|p| p.parent().unwrap().ends_with(&folder))
        .map(|p| read_json(p)["protocol"]["cost"].clone())
        .collect();
    assert_eq!(pairs.len(), 5, "the model's pairs under {folder}");
    let cost = merged_result(merged, model)["protocol"]["cost"].clone();
    let field = |c: &Value, key: &str| c[key].as_f64().unwrap_or_else(|| panic!("{key}: {c}"));
    let sum = |key: &str| pairs.iter().map(|c| field(c, key)).sum::<f64>();
    let max = |key: &str| pairs.iter().map(|c| field(c, key)).fold(0.0, f64::max);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    let (sequences, nucleotides, seconds) = (
        sum("embedded_sequences"),
        sum("embedded_nucleotides"),
        sum("embedding_s"),
    );
    // The rerun read one pair from the cache: it adds no work.
    assert!(
        pairs.iter().any(|c| c["embedded_sequences"] == 0),
        "{pairs:?}"
    );
    assert_eq!(field(&cost, "embedded_sequences"), sequences, "{cost}");
    assert_eq!(field(&cost, "embedded_nucleotides"), nucleotides, "{cost}");
    assert!(close(field(&cost, "embedding_s"), seconds), "{cost}");
    assert!(
        close(field(&cost, "sequences_per_s"), sequences / seconds),
        "{cost}"
    );
    assert!(
        close(field(&cost, "nucleotides_per_s"), nucleotides / seconds),
        "{cost}"
    );
    for key in ["load_s", "peak_memory_bytes"] {
        assert_eq!(field(&cost, key), max(key), "{key}: {cost}");
    }
    assert_eq!(cost["device"], "cpu", "{cost}");
}

/// The committed offline real-genome suite, sharded 4 ways (more shards than some models'
/// pairs would fill evenly), merges to the unsharded result.
#[test]
fn the_offline_suite_merges_to_the_unsharded_run() {
    let root = fresh_dir("shard-offline");
    let models = ["kmer:3", "kmer:4:canonical"];
    let tasks = repo("tasks/offline");
    let tasks = tasks.to_str().unwrap();
    let (results, merged) = (root.join("results"), root.join("merged"));
    for i in 0..4 {
        succeeded(shard(i, 4, &models, tasks, &results, &[]));
    }
    succeeded(merge(&[&results], &merged));
    for (model, expected) in models.iter().zip(unsharded(&models, tasks, &root, &root)) {
        let merged = merged_result(&merged, model);
        assert_eq!(
            without_measurements(merged),
            without_measurements(expected),
            "{model}"
        );
    }
    std::fs::remove_dir_all(&root).unwrap();
}

/// Reruns skip finished pairs; merge names missing pairs by shard, and refuses copies that
/// differ, other geneb versions and other task data; a shard with other arguments is refused.
#[test]
fn reruns_skip_finished_pairs_and_merge_refuses_mixed_runs() {
    let root = fresh_dir("shard-refusals");
    let models = ["kmer:2", "kmer:3"];
    let tasks = repo("tasks/smoke");
    let tasks = tasks.to_str().unwrap();
    let fast = ["--regimes", "full,1shot"];
    let (results, merged) = (root.join("results"), root.join("merged"));
    succeeded(shard(0, 3, &models, tasks, &results, &fast));
    succeeded(shard(2, 3, &models, tasks, &results, &fast));

    let error = refused(merge(&[&results], &merged));
    assert!(
        error.contains("3 of 10 (model, task) results are missing")
            && error.contains("shard 1: 3 of its 3"),
        "{error}"
    );
    assert!(error.contains("rerun shard(s) 1 of 3"), "{error}");

    let before: Vec<_> = pair_files(&results)
        .iter()
        .map(|p| (p.clone(), std::fs::metadata(p).unwrap().modified().unwrap()))
        .collect();
    let rerun = succeeded(shard(0, 3, &models, tasks, &results, &fast));
    let said = String::from_utf8(rerun.stderr).unwrap();
    assert!(
        said.contains("0 (model, task) result(s) written, 4 already"),
        "{said}"
    );
    succeeded(shard(1, 3, &models, tasks, &results, &fast));
    for (path, modified) in &before {
        assert_eq!(
            &std::fs::metadata(path).unwrap().modified().unwrap(),
            modified,
            "{path:?} untouched"
        );
    }
    succeeded(merge(&[&results], &merged));

    let error = refused(shard(
        1,
        3,
        &models,
        tasks,
        &results,
        &["--regimes", "full"],
    ));
    assert!(
        error.contains("plan.json: this folder holds another run (regimes differ)"),
        "{error}"
    );
    let error = refused(shard(1, 2, &models, tasks, &results, &fast));
    assert!(error.contains("(shard counts differ)"), "{error}");

    // The same pair in a second folder: an identical copy merges, a different one is refused.
    let copy = root.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(results.join("plan.json"), copy.join("plan.json")).unwrap();
    let pair = &before[0].0;
    let pair_copy = copy.join(pair.strip_prefix(&results).unwrap());
    std::fs::create_dir_all(pair_copy.parent().unwrap()).unwrap();
    let edit = |from: &Path, to: &Path, change: &dyn Fn(&mut Value)| {
        let mut value = read_json(from);
        change(&mut value);
        std::fs::write(to, serde_json::to_string(&value).unwrap()).unwrap();
    };
    edit(pair, &pair_copy, &|v| {
        v["protocol"]["timings_s"]["embed"] = 99.0.into()
    });
    succeeded(merge(&[&results, &copy], &merged));
    edit(pair, &pair_copy, &|v| {
        let full = v["results"]["full"].as_object_mut().unwrap();
        let scores = full.values_mut().next().unwrap();
        scores["MCC"] = 0.5.into();
    });
    let error = refused(merge(&[&results, &copy], &merged));
    assert!(error.contains("with different content"), "{error}");

    edit(pair, pair, &|v| v["harness_version"] = "geneb 0.0.1".into());
    let error = refused(merge(&[&results], &merged));
    assert!(error.contains("must not mix geneb versions"), "{error}");
    edit(pair, pair, &|v| {
        v["harness_version"] = format!("geneb {}", geneb::VERSION).into();
        let hashes = v["protocol"]["task_data_sha256"].as_object_mut().unwrap();
        let hash = hashes.values_mut().next().unwrap();
        *hash = "0".repeat(64).into();
    });
    let error = refused(merge(&[&results], &merged));
    assert!(error.contains("computed on other data"), "{error}");
    edit(pair, pair, &|v| v["protocol"]["probe"] = 5.into());
    let error = refused(merge(&[&results], &merged));
    assert!(error.contains("no protocol block"), "{error}");
    std::fs::write(pair, "{\"schema_version\": ").unwrap();
    let error = refused(merge(&[&results], &merged));
    assert!(error.contains("not a geneb result"), "{error}");

    let error = refused(merge(&[&root.join("nowhere")], &merged));
    assert!(error.contains("cannot read the run's plan"), "{error}");
    let error = refused(geneb(
        &[
            "eval",
            "--model",
            "kmer:2",
            "--task",
            tasks,
            "--shard",
            "3/3",
            "--out-dir",
            results.to_str().unwrap(),
        ],
        &root,
    ));
    assert!(
        error.contains("the shard index runs from 0 to 2"),
        "{error}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}

/// Plain `geneb eval` with several models writes one submission per model in one file, which
/// `geneb profile` reads.
#[test]
fn several_models_without_shards_give_one_file_of_submissions() {
    let root = fresh_dir("shard-several");
    let task = repo("tasks/smoke/smoke_lambda_phage_vs_ecoli.csv");
    let out = root.join("both.json");
    let args = [
        "eval",
        "--model",
        "kmer:2",
        "--model",
        "kmer:3",
        "--regimes",
        "full",
    ];
    let mut args = args.to_vec();
    args.extend([
        "--task",
        task.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    succeeded(geneb(&args, &root));
    let both = read_json(&out);
    let ids: Vec<&str> = both["submissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["model_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["kmer:2", "kmer:3"]);
    let profile = geneb(
        &["profile", out.to_str().unwrap(), "--bootstrap", "10"],
        &root,
    );
    succeeded(profile);
    std::fs::remove_dir_all(&root).unwrap();
}

/// Two shards embedding the same task with the same model at once, on one cache folder: both
/// get the same result, the cache holds each entry once, whole, and no temporary file is left.
#[test]
fn concurrent_runs_share_one_embedding_cache() {
    let root = fresh_dir("shard-concurrent");
    let bert = format!("hf:{}", repo("tests/fixtures/models/bert").display());
    let task = repo("tasks/smoke/smoke_lambda_phage_vs_ecoli.csv");
    let cache = root.join("cache");
    let runs: Vec<_> = (0..2)
        .map(|i| {
            let out = root.join(format!("run-{i}.json"));
            let child = std::process::Command::new(GENEB)
                .args(["eval", "--model", &bert, "--regimes", "full", "--task"])
                .arg(&task)
                .arg("--out")
                .arg(&out)
                .env("GENEB_CACHE", &cache)
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    let results: Vec<Value> = runs
        .into_iter()
        .map(|(mut child, out)| {
            assert!(child.wait().unwrap().success());
            without_measurements(read_json(&out))
        })
        .collect();
    assert_eq!(results[0]["results"], results[1]["results"]);
    let mut entries = Vec::new();
    let mut folders = vec![cache.join("embeddings")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                entries.push(path);
            }
        }
    }
    assert_eq!(entries.len(), 2, "train and test, once each: {entries:?}");
    assert!(
        entries
            .iter()
            .all(|p| p.extension().is_some_and(|e| e == "npy"))
    );
    // A third run reads both entries whole.
    let third = root.join("third.json");
    succeeded(geneb(
        &[
            "eval",
            "--model",
            &bert,
            "--regimes",
            "full",
            "--task",
            task.to_str().unwrap(),
            "--out",
            third.to_str().unwrap(),
        ],
        &cache,
    ));
    let third = read_json(&third);
    assert_eq!(third["results"], results[0]["results"]);
    assert_eq!(
        third["protocol"]["embeddings_from_cache"]["smoke_lambda_phage_vs_ecoli"],
        serde_json::json!(["train", "test"])
    );
    std::fs::remove_dir_all(&root).unwrap();
}
