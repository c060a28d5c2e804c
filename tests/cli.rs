//! The native CLI end to end: the real binary on the smoke suite and on the bad-input fixtures.

#[path = "support/hub_server.rs"]
mod hub_server;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn geneb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(args)
        .output()
        .expect("running geneb")
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn ok_text(out: &Output) -> String {
    assert!(
        out.status.success(),
        "geneb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

fn ok_json(out: &Output) -> Value {
    serde_json::from_str(&ok_text(out)).expect("stdout is JSON")
}

/// The values of a float32 .npy as `geneb embed` writes it (little-endian, n × d after the header).
fn read_npy_f32(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    bytes[10 + header_len..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn eval_runs_the_protocol_on_the_smoke_suite() {
    let suite = repo("tasks/smoke");
    let out = geneb(&[
        "eval",
        "--model",
        "kmer:3",
        "--task",
        suite.to_str().unwrap(),
        "--quiet",
    ]);
    let result = ok_json(&out);
    assert_eq!(result["schema_version"], "1.0");
    assert_eq!(result["model_id"], "kmer:3");
    for regime in ["full", "10shot", "1shot"] {
        let tasks = result["results"][regime].as_object().expect(regime);
        assert_eq!(tasks.len(), 5, "{regime}: the five smoke tasks");
        for (id, scores) in tasks {
            for metric in ["MCC", "Acc", "F1"] {
                let v = scores[metric].as_f64().unwrap_or(f64::NAN);
                assert!((-1.0..=1.0).contains(&v), "{regime}/{id}/{metric} = {v}");
            }
        }
    }
    // Real signal: a 3-mer probe on full data is above chance on every smoke task (measured
    // 0.30-0.50 with scikit-learn by the suite's builder), and more data helps on average.
    let mean = |regime: &str| {
        let t = result["results"][regime].as_object().unwrap();
        t.values().map(|s| s["MCC"].as_f64().unwrap()).sum::<f64>() / t.len() as f64
    };
    for (id, s) in result["results"]["full"].as_object().unwrap() {
        assert!(
            s["MCC"].as_f64().unwrap() > 0.15,
            "{id}: full-data MCC {}",
            s["MCC"]
        );
    }
    assert!(mean("full") > mean("10shot") && mean("10shot") > mean("1shot") - 0.05);
    // Categories come from the suite's tasks.json; few-shot keeps all five seeds.
    assert_eq!(
        result["tasks"]["smoke_lambda_phage_vs_ecoli"]["category"],
        "Virus/Phage"
    );
    let seeds = result["fewshot"]["10shot"]["smoke_yeast_vs_fly_species"]
        .as_array()
        .unwrap();
    let seed_ids: Vec<u64> = seeds.iter().map(|s| s["seed"].as_u64().unwrap()).collect();
    assert_eq!(seed_ids, [13, 17, 42, 123, 997]);
    let probe = &result["protocol"]["probe"];
    assert_eq!(probe["C"], 1.0);
    assert_eq!(probe["tol"], 1e-4);
    assert_eq!(probe["max_iter"], 1000);
    assert_eq!(result["protocol"]["backend"]["kind"], "cpu");

    // Deterministic: a second run gives the same numbers.
    let again = ok_json(&geneb(&[
        "eval",
        "--model",
        "kmer:3",
        "--task",
        suite.to_str().unwrap(),
        "--quiet",
    ]));
    assert_eq!(result["results"], again["results"]);
    assert_eq!(result["fewshot"], again["fewshot"]);
}

/// Sequences an encoder cuts at its maximum length are counted per task, in the result and on
/// stderr, whether their embeddings were computed or came from the cache.
#[test]
fn eval_counts_the_sequences_cut_at_the_models_maximum_length() {
    let model = scratch("truncating-nt-v2");
    for file in std::fs::read_dir(repo("tests/fixtures/models/nt_v2")).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, model.join(file.file_name().unwrap())).unwrap();
    }
    // 31 tokens: the [CLS] and 30 of the sequence's own. Pieces are 1 to 6 nt (the fixture's
    // small vocabulary falls back to single bases), so 12 and 24 nt always fit and 200 and
    // 300 nt (at least 34 pieces) never do.
    std::fs::write(
        model.join("tokenizer_config.json"),
        r#"{"tokenizer_class":"EsmTokenizer","model_max_length":31,"eos_token":null}"#,
    )
    .unwrap();
    let lengths = [12, 24, 200, 300];
    let mut state = 7u64;
    let mut csv = String::from("text,label,split\n");
    for row in 0..48 {
        let dna: String = (0..lengths[row % 4])
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                b"ACGT"[(state >> 62) as usize] as char
            })
            .collect();
        let split = if row < 32 { "train" } else { "test" };
        csv.push_str(&format!("{dna},{},{split}\n", (row / 4) % 2));
    }
    let task = scratch("truncation-task").join("cut_task.csv");
    std::fs::write(&task, csv).unwrap();
    let cache = scratch("truncation-cache");
    let spec = format!("hf:{}", model.display());
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_geneb"))
            .args(["eval", "--model", &spec, "--task", task.to_str().unwrap()])
            .args(["--regimes", "full", "--quiet"])
            .env("GENEB_CACHE", &cache)
            .output()
            .unwrap()
    };
    for pass in ["computed", "cached"] {
        let out = run();
        let result = ok_json(&out);
        assert_eq!(
            result["protocol"]["truncated_sequences"],
            serde_json::json!({ "cut_task": 24 }),
            "{pass}"
        );
        let cached = &result["protocol"]["embeddings_from_cache"]["cut_task"];
        assert_eq!(cached.is_array(), pass == "cached", "{pass}: {cached}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("24 sequence(s) of cut_task cut at the model's maximum length"),
            "{pass}: {stderr}"
        );
    }
    let kmer = ok_json(&geneb(&[
        "eval",
        "--model",
        "kmer:3",
        "--task",
        task.to_str().unwrap(),
        "--regimes",
        "full",
        "--quiet",
    ]));
    assert_eq!(
        kmer["protocol"]["truncated_sequences"],
        serde_json::json!({})
    );
}

/// `?layer=K` and `--layers`: a bad K is one line with exit 2, a sweep is one submission per
/// layer (each but the last a deviation), and a layer of the sweep scores as its single run.
#[test]
fn layers_are_chosen_one_by_one_or_swept_in_one_pass() {
    let model = repo("tests/fixtures/models/nt_v2");
    let mut csv = String::from("text,label,split\n");
    let mut state = 11u64;
    for row in 0..24 {
        let dna: String = (0..30)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                b"ACGT"[(state >> 62) as usize] as char
            })
            .collect();
        let split = if row < 16 { "train" } else { "test" };
        csv.push_str(&format!("{dna},{},{split}\n", row % 2));
    }
    let task = scratch("layers-task").join("layer_task.csv");
    std::fs::write(&task, csv).unwrap();
    let eval = |spec: &str, extra: &[&str]| {
        let mut args = vec!["eval", "--model", spec, "--task", task.to_str().unwrap()];
        args.extend(["--regimes", "full", "--quiet", "--no-cache"]);
        args.extend(extra);
        geneb(&args)
    };
    let at = |options: &str| format!("hf:{}{options}", model.display());
    let too_deep = refusal(&eval(&at("?layer=3"), &[]), "layer 3 of 2");
    assert!(
        too_deep.contains("no layer 3") && too_deep.contains("K must be from -3 to 2"),
        "{too_deep}"
    );
    let malformed = refusal(&eval(&at("?layer=x"), &[]), "layer x");
    assert!(malformed.contains("expected ?layer=K"), "{malformed}");
    let sweep = refusal(&eval(&at(""), &["--layers", "1,,2"]), "--layers 1,,2");
    assert!(sweep.contains("expected all, or layers K"), "{sweep}");

    let swept = ok_json(&eval(&at(""), &["--layers", "all"]));
    let submissions = swept["submissions"].as_array().unwrap();
    let ids: Vec<&str> = submissions
        .iter()
        .map(|s| s["model_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [at("?layer=0"), at("?layer=1"), at("?layer=2")]);
    for (k, submission) in submissions.iter().enumerate() {
        let deviates = submission["protocol"]["deviations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| {
                d.as_str()
                    .unwrap()
                    .contains("where GENEB probes the last layer")
            });
        assert_eq!(deviates, k < 2, "layer {k}");
    }
    let single = ok_json(&eval(&at("?layer=1"), &[]));
    assert_eq!(single["results"], submissions[1]["results"]);
    assert_eq!(single["model_id"], at("?layer=1"));
    // Every result's cost: where it ran, the pass's rates, the load time, the peak memory.
    for result in [&single, &submissions[0]] {
        let cost = &result["protocol"]["cost"];
        assert_eq!(cost["device"], "cpu", "{cost}");
        assert_eq!(
            (&cost["embedded_sequences"], &cost["embedded_nucleotides"]),
            (&serde_json::json!(24), &serde_json::json!(24 * 30)),
            "{cost}"
        );
        for field in [
            "sequences_per_s",
            "nucleotides_per_s",
            "embedding_s",
            "load_s",
            "peak_memory_bytes",
        ] {
            assert!(cost[field].as_f64().unwrap() > 0.0, "{field}: {cost}");
        }
        let per_nucleotide =
            cost["nucleotides_per_s"].as_f64().unwrap() / cost["sequences_per_s"].as_f64().unwrap();
        assert!((per_nucleotide - 30.0).abs() < 1e-9, "{cost}");
        let per_second = 24.0 / cost["embedding_s"].as_f64().unwrap();
        assert!((cost["sequences_per_s"].as_f64().unwrap() / per_second - 1.0).abs() < 1e-9);
        // The CPU's tensors are host memory, which peak_memory_bytes counts.
        assert_eq!(
            cost["peak_gpu_memory_bytes"],
            serde_json::Value::Null,
            "{cost}"
        );
    }
}

#[test]
fn eval_writes_out_and_profile_reads_several_models() {
    let dir = scratch("eval_profile");
    let task = repo("tasks/smoke/smoke_lambda_phage_vs_ecoli.csv");
    let mut files = Vec::new();
    for model in ["kmer:2", "random-cnn"] {
        let out_path = dir.join(format!("{}.json", model.replace(':', "_")));
        let out = geneb(&[
            "eval",
            "--model",
            model,
            "--task",
            task.to_str().unwrap(),
            "--regimes",
            "full,1shot",
            "--category",
            "Virus/Phage",
            "--out",
            out_path.to_str().unwrap(),
            "--quiet",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "--out writes the file, not stdout");
        let written: Value = serde_json::from_slice(&std::fs::read(&out_path).unwrap()).unwrap();
        assert!(written["results"]["full"]["smoke_lambda_phage_vs_ecoli"]["MCC"].is_f64());
        assert!(
            written["results"].get("10shot").is_none(),
            "only the regimes asked for"
        );
        files.push(out_path);
    }
    let paths: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
    let text = ok_text(&geneb(&[&["profile"], paths.as_slice()].concat()));
    assert!(
        text.contains("Virus/Phage") && text.contains("macro") && text.contains("micro"),
        "{text}"
    );
    assert!(
        text.contains("kmer:2") && text.contains("random-cnn:0"),
        "{text}"
    );
    assert!(
        text.contains('±'),
        "few-shot cells carry the spread over seeds:\n{text}"
    );

    let json = ok_json(&geneb(&[&["profile", "--json"], paths.as_slice()].concat()));
    let full = json["regimes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["regime"] == "full")
        .unwrap();
    assert_eq!(full["rows"].as_array().unwrap().len(), 2);
    // One task in one category: its category score, macro and micro are all the task's MCC.
    let row = &full["rows"][0];
    assert_eq!(row["categories"]["Virus/Phage"]["mean"], row["macro"]);
    assert_eq!(row["macro"], row["micro"]);
}

/// The stderr of a run that must have refused its input: exit 2, one line, no panic.
fn refusal(out: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "{what}: one line, got {stderr}"
    );
    assert!(
        stderr.starts_with("geneb: ") && !stderr.contains("panicked"),
        "{what}: {stderr}"
    );
    stderr
}

#[test]
fn every_bad_input_is_one_line_naming_the_file_with_exit_2() {
    let bad = repo("tests/fixtures/inputs/bad");
    let dir = scratch("bad_inputs");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&bad)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let mut checked = 0;
    for path in entries
        .iter()
        .filter(|p| !p.to_string_lossy().ends_with(".txt"))
    {
        let out_path = dir.join("result.json");
        let out = geneb(&[
            "eval",
            "--model",
            "kmer:2",
            "--task",
            path.to_str().unwrap(),
            "--out",
            out_path.to_str().unwrap(),
            "--quiet",
        ]);
        let name = path.file_name().unwrap().to_string_lossy();
        let stderr = refusal(&out, &name);
        assert!(
            stderr.contains(name.trim_end_matches(".gz")) || path.is_dir(),
            "{name}: names the file: {stderr}"
        );
        assert!(!out_path.exists(), "{name}: nothing written");
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} bad inputs found");
}

/// A reader that leaves early (`geneb models --leaderboard | head -1`) ends geneb as it ends
/// other Unix tools, by SIGPIPE, never by a panic on the next print.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_geneb_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(["models", "--leaderboard"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running geneb");
    // The read end closes before geneb prints its first line.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("waiting for geneb");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "a panic: {stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{stderr}");
}

#[test]
fn usage_errors_exit_2_and_every_verb_has_help() {
    for verb in ["eval", "predict", "probe", "fewshot", "profile", "models"] {
        let out = geneb(&[verb, "--help"]);
        assert!(out.status.success(), "{verb} --help");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{verb} --help prints usage"
        );
    }
    assert_eq!(
        geneb(&["eval", "--model", "kmer:3"]).status.code(),
        Some(2),
        "missing --task"
    );
    let task = repo("tasks/smoke/smoke_lambda_phage_vs_ecoli.csv");
    let unknown = geneb(&[
        "eval",
        "--model",
        "bert-huge",
        "--task",
        task.to_str().unwrap(),
    ]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("built-in models"));
    let regime = geneb(&[
        "eval",
        "--model",
        "kmer:3",
        "--task",
        task.to_str().unwrap(),
        "--regimes",
        "5shot",
    ]);
    assert_eq!(regime.status.code(), Some(2));
    let missing = geneb(&["profile", "/nonexistent/result.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/result.json"));
}

#[test]
fn fewshot_prints_the_numpy_reference_subset() {
    let labels = repo("tests/fixtures/cli/labels_3class.txt");
    // Written by tests/oracle/make_cli_fixtures.py with numpy's RandomState(seed).choice.
    let expected: Value = serde_json::from_slice(
        &std::fs::read(repo("tests/fixtures/cli/fewshot_expected.json")).unwrap(),
    )
    .unwrap();
    for case in expected.as_array().unwrap() {
        let (k, seed) = (case["k"].to_string(), case["seed"].to_string());
        let out = geneb(&[
            "fewshot",
            "--labels",
            labels.to_str().unwrap(),
            "--k",
            &k,
            "--seed",
            &seed,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let picked: Vec<u64> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        let want: Vec<u64> = case["indices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(picked, want, "k={k} seed={seed}");
    }
    let zero = geneb(&[
        "fewshot",
        "--labels",
        labels.to_str().unwrap(),
        "--k",
        "0",
        "--seed",
        "1",
    ]);
    assert_eq!(zero.status.code(), Some(2));
}

#[test]
fn probe_on_your_own_embeddings_matches_scikit_learn() {
    // Written by tests/oracle/make_cli_fixtures.py with LogisticRegression(max_iter=1000).
    let want: Value = serde_json::from_slice(
        &std::fs::read(repo("tests/fixtures/cli/probe_expected.json")).unwrap(),
    )
    .unwrap();
    // np.savez stores the arrays, np.savez_compressed deflates them.
    for file in ["probe_small.npz", "probe_small_compressed.npz"] {
        let npz = repo(&format!("tests/fixtures/cli/{file}"));
        let got = ok_json(&geneb(&["probe", "--npz", npz.to_str().unwrap()]));
        assert_eq!(
            got["predictions"], want["predictions"],
            "{file}: label values, in test order"
        );
        for metric in ["MCC", "Acc", "F1"] {
            let (g, w) = (
                got[metric].as_f64().unwrap(),
                want[metric].as_f64().unwrap(),
            );
            assert!((g - w).abs() < 1e-9, "{file}: {metric}: {g} vs {w}");
        }
    }
    let missing = geneb(&["probe", "--npz", "/nonexistent.npz"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn a_task_id_given_twice_is_an_error_not_an_overwrite() {
    let table = repo("tasks/smoke/smoke_lambda_phage_vs_ecoli.csv");
    let table = table.to_str().unwrap();
    let out = geneb(&[
        "eval", "--model", "kmer:2", "--task", table, "--task", table,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("comes from both"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn profile_reads_the_pages_download_bundle() {
    let dir = scratch("bundle");
    let task = repo("tasks/smoke/smoke_yeast_vs_fly_species.csv");
    let out = geneb(&[
        "eval",
        "--model",
        "kmer:2",
        "--task",
        task.to_str().unwrap(),
        "--regimes",
        "full,full",
        "--quiet",
    ]);
    let submission = ok_json(&out);
    assert_eq!(
        submission["protocol"]["regimes"],
        serde_json::json!(["full"]),
        "regimes run once each"
    );
    let deviations = submission["protocol"]["deviations"].as_array().unwrap();
    assert!(
        deviations[0].as_str().unwrap().contains("not GENEB tasks"),
        "{deviations:?}"
    );
    let bundle = dir.join("geneb-results.json");
    std::fs::write(
        &bundle,
        serde_json::json!({"submissions": [submission], "profile": {}}).to_string(),
    )
    .unwrap();
    let text = ok_text(&geneb(&["profile", bundle.to_str().unwrap()]));
    assert!(
        text.contains("kmer:2") && text.contains("1 task in 1 category"),
        "{text}"
    );
    std::fs::write(&bundle, r#"{"submissions": []}"#).unwrap();
    assert_eq!(
        geneb(&["profile", bundle.to_str().unwrap()]).status.code(),
        Some(2)
    );
}

/// `geneb` with the hub and the cache pointed at test-local places.
fn geneb_with_hub(args: &[&str], endpoint: &str, cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(args)
        .env("GENEB_HF_ENDPOINT", endpoint)
        .env("GENEB_CACHE", cache)
        .output()
        .expect("running geneb")
}

#[test]
fn official_tasks_by_id_are_announced_downloaded_cached_and_listed() {
    let server = hub_server::serve(None);
    let cache = scratch("cli-hub-cache");
    let ids = ["deep4mc_E.coli_4mC", "iDHS-EL_DNase_I"];
    let eval = |endpoint: &str, extra: &[&str]| {
        let mut args = vec!["eval", "--model", "kmer:3", "--regimes", "full", "--quiet"];
        args.extend([
            "--task",
            "geneb:deep4mc_E.coli_4mC",
            "--task",
            "geneb:iDHS-EL_DNase_I",
        ]);
        // The Chromatin Acc. suite is iDHS-EL_DNase_I again: evaluated once, not an error.
        args.extend(["--suite", "geneb:chromatin-acc"]);
        args.extend(extra);
        geneb_with_hub(&args, endpoint, &cache)
    };

    let out = eval(&server.endpoint, &[]);
    let result = ok_json(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let fixture_bytes: u64 = ids
        .iter()
        .flat_map(|id| ["train", "test"].map(|s| format!("tasks/{id}/{s}.csv")))
        .map(|p| {
            std::fs::metadata(hub_server::fixture_root().join(p))
                .unwrap()
                .len()
        })
        .sum();
    // Said before downloading: how many files, how big, from where.
    let announced = format!(
        "downloading 4 file(s), {:.1} MB",
        fixture_bytes as f64 / 1e6
    );
    assert!(stderr.contains(&announced), "{stderr}");
    assert!(
        stderr.contains("tasks/iDHS-EL_DNase_I/train.csv"),
        "{stderr}"
    );
    // Cached under the catalogue's pinned revision.
    let cached = cache
        .join("hub/datasets")
        .join(hub_server::REPO)
        .join(hub_server::REVISION)
        .join("tasks/iDHS-EL_DNase_I/test.csv");
    assert!(cached.is_file(), "{}", cached.display());
    for (id, category) in ids.iter().zip(["DNA Methyl.", "Chromatin Acc."]) {
        assert_eq!(
            result["tasks"][id]["category"], category,
            "catalogue category"
        );
        let mcc = result["results"]["full"][id]["MCC"].as_f64().unwrap();
        assert!((-1.0..=1.0).contains(&mcc), "{id}: {mcc}");
    }

    // Listed as cached, with the tables' size; listing asks the hub nothing.
    let requests_before = server.requests.lock().unwrap().len();
    let listing = ok_json(&geneb_with_hub(
        &["tasks", "--suite", "geneb:dna-methyl", "--json"],
        &server.endpoint,
        &cache,
    ));
    let listing = listing.as_array().unwrap();
    assert_eq!(listing.len(), 8);
    let cached: Vec<&Value> = listing.iter().filter(|t| t["status"] == "cached").collect();
    assert_eq!(cached.len(), 1);
    assert_eq!(cached[0]["id"], "deep4mc_E.coli_4mC");
    assert_eq!(cached[0]["n_classes"], 2);
    assert_eq!(server.requests.lock().unwrap().len(), requests_before);

    // The hub gone: the same run works from the cache, announcing nothing, same result.
    let again = eval(&hub_server::dead_endpoint(), &["--offline"]);
    assert_eq!(ok_json(&again)["results"], result["results"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("downloading"));
}

#[test]
fn official_task_errors_are_one_line_with_exit_2() {
    let cache = scratch("cli-hub-errors");
    let dead = hub_server::dead_endpoint();
    for (args, expected) in [
        (
            vec!["eval", "--model", "kmer:3", "--task", "geneb:no_such_task"],
            "no GENEB task with id 'no_such_task'",
        ),
        (
            vec!["eval", "--model", "kmer:3", "--suite", "geneb:nope"],
            "no suite named 'geneb:nope'",
        ),
        (
            vec![
                "eval",
                "--model",
                "kmer:3",
                "--suite",
                "geneb:coding-nc",
                "--offline",
            ],
            "--offline forbids downloading",
        ),
        (
            vec!["eval", "--model", "kmer:3", "--suite", "geneb-lite"],
            "Check the network connection",
        ),
    ] {
        let out = geneb_with_hub(&args, &dead, &cache);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// `hf:owner/name@rev`: the model's files are announced, downloaded through the hub's URL
/// layout (the weights as an LFS redirect), verified, cached, and the embeddings equal
/// PyTorch's; with the hub gone the cached copy serves.
/// A model fixture's pipeline.json, and its sequences written one a line to `dir`.
fn pipeline_input(fixture: &str, dir: &Path) -> (Value, PathBuf) {
    let path = repo(&format!("tests/fixtures/models/{fixture}/pipeline.json"));
    let expected: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let sequences: Vec<&str> = expected["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let input = dir.join("sequences.txt");
    std::fs::write(&input, sequences.join("\n")).unwrap();
    (expected, input)
}

/// The largest |Δ| between the embeddings `geneb embed` wrote to `npy` and a fixture's
/// pipeline.json `pooled` rows.
fn worst_against_pipeline(npy: &Path, expected: &Value) -> f32 {
    let got = read_npy_f32(npy);
    let want: Vec<f32> = expected["pooled"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
        })
        .collect();
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max)
}

#[test]
fn hub_models_are_fetched_cached_and_embed_like_pytorch() {
    let server = hub_server::serve(None);
    let cache = scratch("cli-hub-model-cache");
    let (expected, input) = pipeline_input("nt_v2", &cache);
    let out_npy = cache.join("x.npy");
    let spec = format!("hf:{}@main", hub_server::MODEL_REPO);
    let embed = |endpoint: &str| {
        geneb_with_hub(
            &[
                "embed",
                "--model",
                &spec,
                "--input",
                input.to_str().unwrap(),
                "--out",
                out_npy.to_str().unwrap(),
            ],
            endpoint,
            &cache,
        )
    };
    let check_embeddings = |out: &Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let worst = worst_against_pipeline(&out_npy, &expected);
        assert!(worst <= 1e-4, "max |geneb − PyTorch| = {worst}");
    };
    let first = embed(&server.endpoint);
    check_embeddings(&first);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(
        stderr.contains("downloading") && stderr.contains("model.safetensors"),
        "{stderr}"
    );
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests.iter().any(|r| r.starts_with("GET /cdn/")),
        "weights via the LFS redirect: {requests:?}"
    );
    // Files the repo does not have (tokenizer.json, vocab of other kinds) are simply absent.
    let listing = ok_json(&geneb_with_hub(
        &["models"],
        &hub_server::dead_endpoint(),
        &cache,
    ));
    assert_eq!(
        listing["cached"][hub_server::MODEL_REPO],
        serde_json::json!(["main"]),
        "{listing}"
    );
    let again = embed(&hub_server::dead_endpoint());
    check_embeddings(&again);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("downloading"));
    let missing = geneb_with_hub(
        &[
            "embed",
            "--model",
            "hf:geneb-fixtures/no-such-model",
            "--input",
            input.to_str().unwrap(),
            "--out",
            out_npy.to_str().unwrap(),
        ],
        &server.endpoint,
        &cache,
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("config.json"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}

/// SpliceBERT takes RNA, lower case and IUPAC codes as its extractor does, and a character
/// outside IUPAC is one line naming the sequence (its line in the file) with exit 2, where the
/// reference raises; a JanusDNA folder as its training saves it loads, and says on stderr that
/// its checkpoint has no `final_mlp` (tolerated: the extractor replaces it by Identity).
#[test]
fn splicebert_and_janus_inputs_are_taken_or_refused_as_their_extractors_do() {
    let dir = scratch("recipes_cli");
    let out_npy = dir.join("e.npy");
    let embed = |model: &str, input: &Path| {
        geneb(&[
            "embed",
            "--model",
            model,
            "--input",
            input.to_str().unwrap(),
            "--out",
            out_npy.to_str().unwrap(),
        ])
    };
    let splicebert = format!("hf:{}", repo("tests/fixtures/models/splicebert").display());
    let good = dir.join("good.txt");
    std::fs::write(&good, "acguRYNacgt\nACGTACGTAC\n").unwrap();
    let out = embed(&splicebert, &good);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "ACGTACGT\nACGTXACGT\n").unwrap();
    let stderr = refusal(&embed(&splicebert, &bad), "SpliceBERT with an X");
    assert!(
        stderr.contains("bad.txt") && stderr.contains("'X'"),
        "{stderr}"
    );
    let janus = format!("hf:{}", repo("tests/fixtures/models/janus/w").display());
    let out = embed(&janus, &good);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("no model.model.final_mlp.* tensors") && stderr.contains("strict=False"),
        "{stderr}"
    );
}

/// README.md's recipe table is `geneb models --recipes-markdown`'s output, not a restatement;
/// `geneb models --json` carries the same record per known model.
#[test]
fn the_readme_recipe_table_is_the_generated_one() {
    let generated = ok_text(&geneb(&["models", "--recipes-markdown"]));
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let begin = "<!-- geneb models --recipes-markdown: begin -->\n";
    let end = "<!-- geneb models --recipes-markdown: end -->";
    let start = readme.find(begin).expect("README has the begin line") + begin.len();
    let stop = readme[start..].find(end).expect("README has the end line") + start;
    assert_eq!(
        readme[start..stop],
        generated,
        "README.md's recipe table is stale: put `geneb models --recipes-markdown` between its lines"
    );
    for recipe in [
        "janusdna",
        "splicebert",
        "hyenadna",
        "caduceus",
        "dnabert2-cls",
    ] {
        assert!(
            generated.contains(&format!("`{recipe}`")),
            "{recipe}: {generated}"
        );
    }
    let listing = ok_json(&geneb(&["models"]));
    let known = listing["known"].as_array().unwrap();
    let janus = known
        .iter()
        .find(|m| m["display"] == "JanusDNA 72 with mid-attention")
        .unwrap();
    assert_eq!(janus["recipe"]["name"], "janusdna");
    assert_eq!(janus["recipe"]["specialTokens"], "none");
    assert_eq!(janus["recipe"]["padding"]["side"], "right-to");
    assert_eq!(janus["recipe"]["padding"]["length"], 1024);
    assert_eq!(janus["recipe"]["maskToModel"], true);
    assert_eq!(
        janus["recipe"]["reference"],
        "embedding_pipeline/extractors/janusdna.py"
    );
    assert!(
        janus["recipeSummary"]
            .as_str()
            .unwrap()
            .contains("janusdna.py")
    );
}

#[test]
fn models_lists_the_builtin_encoders_and_the_known_hub_models_with_their_profiles() {
    let listing = ok_json(&geneb(&["models"]));
    // The leaderboard's 41 models: as JSON, in the listing, and as a table of one line each.
    let board = ok_json(&geneb(&["models", "--leaderboard", "--json"]));
    assert_eq!(board.as_array().map(Vec::len), Some(41));
    assert_eq!(listing["leaderboard"], board);
    let table = ok_text(&geneb(&["models", "--leaderboard"]));
    assert_eq!(table.lines().count(), 42, "{table}");
    let metagene = table.lines().find(|l| l.contains("METAGENE-1")).unwrap();
    assert!(
        metagene.contains("28.0 GB") && metagene.contains("14.0 GB"),
        "{metagene}"
    );
    let builtin = listing["builtin"].as_array().expect("builtin list");
    assert!(builtin.iter().any(|m| m["spec"] == "kmer:4"));
    let known = listing["known"].as_array().expect("known list");
    let nt = known
        .iter()
        .find(|m| m["hubId"] == "InstaDeepAI/nucleotide-transformer-v2-50m-multi-species")
        .expect("NT-v2 50M is known");
    assert_eq!(nt["supported"], true);
    assert_eq!(nt["contextUnit"], "tokens");
    assert_eq!(nt["checked"]["kind"], "random-weights-same-shape");
    assert_eq!(nt["fitsTab"], true);
    // The files a model folder is read for, as the page reads them too.
    assert_eq!(listing["modelFiles"]["config"], "config.json");
    assert_eq!(listing["modelFiles"]["weights"][0], "model.safetensors");
    assert_eq!(
        listing["modelFiles"]["publishedWeightsSuffixes"],
        serde_json::json!([".pth", ".ckpt"])
    );
    assert_eq!(
        listing["modelFiles"]["publishedConfig"],
        "model_config.json"
    );
    let limit = listing["tabWeightsLimit"]
        .as_u64()
        .expect("the tab's weights limit");
    for model in known {
        if let Some(parameters) = model["parameters"].as_u64() {
            // In f32, else in half precision (the checkpoint's bf16/f16 on the tab's GPU).
            assert_eq!(model["fitsTab"], parameters * 2 <= limit, "{model}");
            let held = if parameters * 4 <= limit {
                "f32"
            } else {
                "half"
            };
            assert!(!model["fitsTab"].as_bool().unwrap() || model["tabWeights"] == held);
        }
    }
    let mutbert = known
        .iter()
        .find(|m| m["hubId"] == "JadenLong/MutBERT")
        .expect("MutBERT is known");
    assert_eq!(mutbert["supported"], true);
    assert_eq!(
        mutbert["checked"]["description"],
        "published code, random weights of the same shape"
    );
    let categories = nt["published"]["categoryMcc"].as_object().expect("profile");
    assert_eq!(categories.len(), 13);
    // Weights published off the hub: listed with where they are, loaded from a folder.
    let genomics_fm = known
        .iter()
        .find(|m| m["display"] == "Genomics-FM")
        .expect("Genomics-FM is known");
    assert!(genomics_fm["hubId"].is_null());
    assert!(
        genomics_fm["weights"]
            .as_str()
            .unwrap()
            .contains("Genomics-FM")
    );
    assert_eq!(genomics_fm["supported"], true);
    assert_eq!(
        genomics_fm["published"]["categoryMcc"]
            .as_object()
            .unwrap()
            .len(),
        13
    );
    let hyena_tiny = known
        .iter()
        .find(|m| m["hubId"] == "LongSafari/hyenadna-tiny-1k-seqlen-hf")
        .expect("HyenaDNA tiny is known");
    assert!(hyena_tiny["published"].is_null(), "not on the leaderboard");
}

#[test]
fn gpu_options_count_wgpu_launches_and_f16_is_refused_or_close_to_f32() {
    let dir = scratch("gpu_options");
    let fasta = dir.join("seqs.fa");
    std::fs::write(
        &fasta,
        ">a\nACGTACGTTTGACCA\n>b\nGGGCCCATATNNACGTAGCATCGA\n",
    )
    .unwrap();
    let npy = dir.join("x.npy");
    let embed = |extra: &[&str]| {
        let mut args = vec![
            "embed",
            "--model",
            "random-cnn",
            "--input",
            fasta.to_str().unwrap(),
            "--out",
            npy.to_str().unwrap(),
        ];
        args.extend(extra);
        geneb(&args)
    };
    // Launch counts and f16 are wgpu things: on the CPU backend each is one clear error.
    for (extra, says) in [
        (&["--count-kernels"][..], "--backend wgpu"),
        (&["--precision", "f16"], "--backend wgpu"),
        (
            &["--precision", "f8", "--backend", "wgpu"],
            "use f32 or f16",
        ),
    ] {
        let out = embed(extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.trim_end().lines().count() == 1 && stderr.contains(says),
            "{extra:?}: {stderr}"
        );
    }

    // On wgpu (lavapipe in CI): the two sequences are one forward pass, so one host read.
    let out = embed(&["--backend", "wgpu", "--count-kernels"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let summary = stderr
        .lines()
        .find(|l| l.contains("kernel launches"))
        .unwrap_or_else(|| panic!("no count in {stderr}"));
    let numbers: Vec<usize> = summary
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(
        numbers.len() >= 3 && numbers[0] > 0 && numbers[1] == 1 && numbers[2] == 2,
        "{summary}"
    );
    let f32_values = read_npy_f32(&npy);

    // f16 either runs and stays close to f32, or is refused naming the missing feature.
    let out = embed(&["--backend", "wgpu", "--precision", "f16"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        let f16_values = read_npy_f32(&npy);
        assert_eq!(f16_values.len(), f32_values.len());
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let diff: Vec<f32> = f16_values
            .iter()
            .zip(&f32_values)
            .map(|(a, b)| a - b)
            .collect();
        let relative = norm(&diff) / norm(&f32_values);
        assert!(relative <= 1e-2, "f16 vs f32: relative error {relative}");
        assert!(
            relative > 0.0,
            "f16 gave f32's exact values: it did not run in f16"
        );
    } else {
        assert!(stderr.contains("shader-f16"), "{stderr}");
    }
}

/// A copy of the BERT fixture model in a scratch folder, with `edit` applied to its files.
fn hostile_model(name: &str, edit: impl FnOnce(&Path)) -> PathBuf {
    let dir = scratch(&format!("hostile-{name}"));
    for file in [
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        "vocab.txt",
    ] {
        std::fs::copy(
            repo("tests/fixtures/models/bert").join(file),
            dir.join(file),
        )
        .unwrap();
    }
    edit(&dir);
    dir
}

/// Rewrites `model.safetensors` with its JSON header changed by `edit` and, optionally, the
/// bytes of one tensor's first element.
fn edit_safetensors(
    dir: &Path,
    edit: impl FnOnce(&mut serde_json::Map<String, Value>),
    first_element: Option<(&str, [u8; 4])>,
) {
    let path = dir.join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut data = bytes[8 + header_len..].to_vec();
    let mut header: serde_json::Map<String, Value> =
        serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
    if let Some((tensor, value)) = first_element {
        let begin = header[tensor]["data_offsets"][0].as_u64().unwrap() as usize;
        data[begin..begin + 4].copy_from_slice(&value);
    }
    edit(&mut header);
    let header = serde_json::to_vec(&header).unwrap();
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&header);
    out.extend_from_slice(&data);
    std::fs::write(path, out).unwrap();
}

fn edit_config(dir: &Path, key: &str, value: Value) {
    let path = dir.join("config.json");
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    config[key] = value;
    std::fs::write(path, serde_json::to_vec(&config).unwrap()).unwrap();
}

/// Model files crafted to hurt (allocation bombs, overlapping or out-of-range tensors, a pickle
/// that calls os.system, inconsistent or absurd configs, NaN weights, weights that overflow to
/// infinite embeddings) are each refused in one line naming the file, with exit 2.
#[test]
fn hostile_model_files_are_refused_in_one_line_with_exit_2() {
    const WORD: &str = "bert.embeddings.word_embeddings.weight";
    const LAST_NORM: &str = "bert.encoder.layer.1.output.LayerNorm.weight";
    let mut cases: Vec<(&str, PathBuf, &str, &str)> = vec![
        (
            "huge header length",
            hostile_model("header", |dir| {
                let path = dir.join("model.safetensors");
                let mut bytes = std::fs::read(&path).unwrap();
                bytes[..8].copy_from_slice(&(u64::MAX / 3).to_le_bytes());
                std::fs::write(path, bytes).unwrap();
            }),
            "model.safetensors",
            "header claims",
        ),
        (
            "offsets past the end",
            hostile_model("offsets", |dir| {
                edit_safetensors(
                    dir,
                    |h| {
                        h[WORD]["data_offsets"] =
                            serde_json::json!([1u64 << 40, (1u64 << 40) + 1280])
                    },
                    None,
                )
            }),
            "model.safetensors",
            "does not fit its shape",
        ),
        (
            "overlapping tensors",
            hostile_model("overlap", |dir| {
                edit_safetensors(
                    dir,
                    |h| h[LAST_NORM]["data_offsets"] = h[WORD]["data_offsets"].clone(),
                    None,
                )
            }),
            "model.safetensors",
            "overlap",
        ),
        (
            "shape and dtype disagree with the byte range",
            hostile_model("shape", |dir| {
                edit_safetensors(
                    dir,
                    |h| h[WORD]["shape"] = serde_json::json!([10, 64]),
                    None,
                )
            }),
            "model.safetensors",
            "does not fit its shape [10, 64]",
        ),
        (
            "a shape whose size overflows",
            hostile_model("overflow", |dir| {
                edit_safetensors(
                    dir,
                    |h| h[WORD]["shape"] = serde_json::json!([1u64 << 40, 1u64 << 40, 0]),
                    None,
                )
            }),
            "model.safetensors",
            "does not fit its shape",
        ),
        (
            "a NaN weight",
            hostile_model("nan", |dir| {
                edit_safetensors(dir, |_| {}, Some((WORD, f32::NAN.to_le_bytes())))
            }),
            "model.safetensors",
            "tensor 'bert.embeddings.word_embeddings.weight' holds NaN at element 0",
        ),
        (
            "weights that overflow the embedding",
            hostile_model("overflowing-embedding", |dir| {
                edit_safetensors(dir, |_| {}, Some((LAST_NORM, f32::MAX.to_le_bytes())))
            }),
            "hf:",
            "outputs overflow",
        ),
        (
            "a pickle calling os.system",
            hostile_model("pickle", |dir| {
                std::fs::remove_file(dir.join("model.safetensors")).unwrap();
                let mut bytes =
                    std::fs::read(repo("tests/fixtures/pytorch/small_state.bin")).unwrap();
                let global = b"torch._utils\n_rebuild_tensor_v2\n";
                let at = bytes
                    .windows(global.len())
                    .position(|w| w == global)
                    .unwrap();
                let mut payload = b"posix\nsystem\n".to_vec();
                payload.resize(global.len(), b'N');
                bytes[at..at + global.len()].copy_from_slice(&payload);
                std::fs::write(dir.join("pytorch_model.bin"), bytes).unwrap();
            }),
            "pytorch_model.bin",
            "uses posix.system, which a plain state dict does not contain",
        ),
    ];
    // config.json values: (key, value, the file the refusal names, what it says).
    let configs: [(&str, Value, &str, &str); 6] = [
        (
            "num_attention_heads",
            5.into(),
            "config.json",
            "hidden_size 32 is not divisible by num_attention_heads 5",
        ),
        (
            "num_hidden_layers",
            1_000_000_000_000u64.into(),
            "config.json",
            "'num_hidden_layers': 1000000000000 is larger than any model geneb runs",
        ),
        (
            "num_hidden_layers",
            1000.into(),
            "config.json",
            "'num_hidden_layers' is 1000, but the checkpoint has no 'bert.encoder.layer.999.",
        ),
        (
            "vocab_size",
            4_000_000.into(),
            "model.safetensors",
            "has shape [10, 32], but config.json implies [4000000, 32]",
        ),
        (
            "layer_norm_eps",
            (-1.0).into(),
            "config.json",
            "'layer_norm_eps': -1 is not a normalisation epsilon",
        ),
        (
            "max_position_embeddings",
            0.into(),
            "config.json",
            "max_position_embeddings is 0: the model would take no token",
        ),
    ];
    for (i, (key, value, file, fragment)) in configs.into_iter().enumerate() {
        let dir = hostile_model(&format!("config-{i}"), |dir| edit_config(dir, key, value));
        cases.push(("a config.json value", dir, file, fragment));
    }
    let scratch_dir = scratch("hostile-out");
    let input = scratch_dir.join("sequences.txt");
    std::fs::write(&input, "ACGTACGTAC\nGGCATTACA\n").unwrap();
    let out_npy = scratch_dir.join("x.npy");
    for (what, dir, file, fragment) in cases {
        let spec = format!("hf:{}", dir.display());
        let out = geneb(&[
            "embed",
            "--model",
            &spec,
            "--input",
            input.to_str().unwrap(),
            "--out",
            out_npy.to_str().unwrap(),
        ]);
        let stderr = refusal(&out, what);
        assert!(
            stderr.contains(file) && stderr.contains(fragment),
            "{what}: {stderr}"
        );
        assert!(!out_npy.exists(), "{what}: nothing written");
    }
}

#[test]
fn windowed_embeddings_are_the_mean_of_each_windows_own_embedding_and_say_so() {
    // The tiny NT-v2 (3-mers, 40 tokens): 100 nt every 50 over a 230-nt sequence gives the
    // windows 0..100, 50..150, 100..200 and 150..230, the last one shorter; a 60-nt one is one window.
    let dir = scratch("windowed-embeddings");
    let model = repo("tests/fixtures/models/nt_v2");
    let sequence: String = (0..230)
        .map(|i| b"ACGTTGCAAC"[i * 7 % 10] as char)
        .collect();
    let short = &sequence[..60];
    let windows = [
        &sequence[0..100],
        &sequence[50..150],
        &sequence[100..200],
        &sequence[150..230],
    ];
    let embed = |spec: &str, texts: &[&str], name: &str| {
        let input = dir.join(format!("{name}.txt"));
        std::fs::write(&input, texts.join("\n") + "\n").unwrap();
        let npy = dir.join(format!("{name}.npy"));
        ok_text(&geneb(&[
            "embed",
            "--model",
            spec,
            "--input",
            input.to_str().unwrap(),
            "--out",
            npy.to_str().unwrap(),
        ]));
        read_npy_f32(&npy)
    };
    let windowed_spec = format!("hf:{}?window=100,50", model.display());
    let windowed = embed(&windowed_spec, &[&sequence, short], "windowed");
    let plain = format!("hf:{}", model.display());
    let each = embed(&plain, &windows, "each");
    let alone = embed(&plain, &[short], "alone");
    let dim = alone.len();
    assert_eq!(windowed.len(), 2 * dim);
    for d in 0..dim {
        let mean = (0..4).map(|w| each[w * dim + d]).sum::<f32>() / 4.0;
        assert!(
            (windowed[d] - mean).abs() <= 1e-6,
            "dim {d}: {} vs {mean}",
            windowed[d]
        );
        assert_eq!(
            windowed[dim + d],
            alone[d],
            "a sequence shorter than a window is embedded as it is"
        );
    }

    // The result says it twice: a deviation, and a name that is not the truncating model's.
    let table = dir.join("task.csv");
    let rows: String = (0..24)
        .map(|i| {
            format!(
                "{},{},{}\n",
                &sequence[i..i + 200],
                i % 2,
                if i < 16 { "train" } else { "test" }
            )
        })
        .collect();
    std::fs::write(&table, format!("sequence,label,split\n{rows}")).unwrap();
    let result = ok_json(&geneb(&[
        "eval",
        "--model",
        &windowed_spec,
        "--task",
        table.to_str().unwrap(),
        "--regimes",
        "full",
        "--no-cache",
        "--quiet",
    ]));
    let deviations = result["protocol"]["deviations"].to_string();
    assert!(
        deviations.contains("sliding windows (100 nt, stride 50)"),
        "{deviations}"
    );
    assert_eq!(
        result["meta"]["display"],
        "nt_v2 (windows of 100 nt every 50)"
    );
    assert_eq!(
        result["protocol"]["truncated_sequences"],
        serde_json::json!({})
    );
}

/// The memory budget charges a model's weights at what they hold: the tiny bf16 Llama's
/// (16,896 matrix values, 160 norm values) need 68,224 bytes held in f32 and 34,432 in bf16,
/// its file's floats 80,512 at f32 (the skipped lm_head too). Under 80,512 the model holds its
/// matrices in bf16 on its own and embeds the f32 path's numbers; `?weights=f32` then needs
/// 68,224 and is refused below it; under 34,432 nothing fits.
#[test]
fn the_budget_charges_the_weights_held_and_chooses_half_precision_when_f32_is_over_it() {
    let dir = scratch("weights-budget");
    let model = repo("tests/fixtures/models/llama_sharded_bf16");
    let input = dir.join("sequences.txt");
    std::fs::write(&input, "ACGTACGGTTCA\nGGGCATTACA\n").unwrap();
    let embed = |budget: &str, options: &str, name: &str| {
        let out = dir.join(format!("{name}.npy"));
        let spec = format!("hf:{}{options}", model.display());
        let args = ["--max-memory", budget, "embed", "--model", &spec, "--input"];
        let run = geneb(
            &[
                &args[..],
                &[input.to_str().unwrap(), "--out", out.to_str().unwrap()],
            ]
            .concat(),
        );
        (run, out)
    };
    let (run, out) = embed("2GiB", "", "f32");
    ok_text(&run);
    let f32_values = read_npy_f32(&out);
    let (run, out) = embed("60000", "", "bf16");
    ok_text(&run);
    assert_eq!(read_npy_f32(&out), f32_values, "bf16 held as stored");
    let (run, _) = embed("70000", "?weights=f32", "forced");
    ok_text(&run);
    for (budget, options, held) in [("60000", "?weights=f32", "f32"), ("34000", "", "bf16")] {
        let (run, _) = embed(budget, options, "refused");
        let stderr = refusal(&run, budget);
        assert!(
            stderr.contains(&format!(
                "holding the model's weights in {held} needs more than"
            )),
            "{stderr}"
        );
    }
}

/// `?weights=half` on wgpu keeps the checkpoint's 16-bit values on the GPU: the result's
/// `peak_gpu_memory_bytes` falls by about what the f32 weights would have held beyond them, and
/// the scores are the f32 path's (bf16 widens exactly). The tiny Llama fixture, each of its
/// dimensions but the vocabulary 12 times as wide (2.07 M parameters: 8.3 MB at f32, 4.1 MB
/// in bf16), so the weights outweigh the memory pools' rounding (measured on lavapipe: 15.4 MB
/// held in bf16, 19.8 MB in f32).
#[test]
fn half_weights_on_wgpu_hold_half_the_gpu_memory() {
    let dir = scratch("half-weights-gpu");
    let model = dir.join("llama-wide");
    let held_bytes = widened_llama(
        &repo("tests/fixtures/models/llama_sharded_bf16"),
        &model,
        12,
    );
    let task = dir.join("task.csv");
    let mut rows = String::from("text,label,split\n");
    for (i, split) in ["train", "train", "train", "train", "test", "test"]
        .iter()
        .enumerate()
    {
        rows += &format!("{},{},{split}\n", ["ACGTTGCA", "GGGCCCAT"][i % 2], i % 2);
    }
    std::fs::write(&task, rows).unwrap();
    let eval = |weights: &str| {
        let spec = format!("hf:{}?weights={weights}", model.display());
        let args = [
            "eval",
            "--no-cache",
            "--backend",
            "wgpu",
            "--regimes",
            "full",
        ];
        let task = task.to_str().unwrap();
        ok_json(&geneb(
            &[
                &args[..],
                &["--model", &spec, "--task", task, "--category", "Promoters"],
            ]
            .concat(),
        ))
    };
    let (half, f32_path) = (eval("half"), eval("f32"));
    let gpu = |result: &Value| {
        result["protocol"]["cost"]["peak_gpu_memory_bytes"]
            .as_u64()
            .unwrap()
    };
    eprintln!(
        "peak GPU bytes: {} held in bf16, {} in f32 ({held_bytes} bytes of bf16 weights)",
        gpu(&half),
        gpu(&f32_path)
    );
    assert!(
        gpu(&half) + held_bytes * 3 / 4 <= gpu(&f32_path),
        "{} vs {}",
        gpu(&half),
        gpu(&f32_path)
    );
    assert_eq!(half["results"], f32_path["results"]);
    assert!(
        half["protocol"]["encoder"]["weights"]
            .as_str()
            .unwrap()
            .starts_with("bf16 as the checkpoint stores them")
    );
}

/// The Llama folder `fixture` in `out` with every dimension but the vocabulary `scale` times as
/// wide, its weights one bf16 `model.safetensors` of small deterministic values (norms 1):
/// a checkpoint as large as a test needs, written here rather than committed. Returns the
/// weights' bytes.
fn widened_llama(fixture: &Path, out: &Path, scale: usize) -> u64 {
    std::fs::create_dir_all(out).unwrap();
    let mut config: Value =
        serde_json::from_slice(&std::fs::read(fixture.join("config.json")).unwrap()).unwrap();
    let vocab = config["vocab_size"].as_u64().unwrap() as usize;
    for key in ["hidden_size", "intermediate_size", "head_dim"] {
        config[key] = (config[key].as_u64().unwrap() as usize * scale).into();
    }
    std::fs::write(out.join("config.json"), config.to_string()).unwrap();
    for file in [
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ] {
        std::fs::copy(fixture.join(file), out.join(file)).unwrap();
    }
    let index: Value = serde_json::from_slice(
        &std::fs::read(fixture.join("model.safetensors.index.json")).unwrap(),
    )
    .unwrap();
    // Every tensor's shape from the shards' headers, each dimension but the vocabulary scaled.
    let mut shapes = std::collections::BTreeMap::new();
    for shard in index["weight_map"].as_object().unwrap().values() {
        let bytes = std::fs::read(fixture.join(shard.as_str().unwrap())).unwrap();
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Map<String, Value> =
            serde_json::from_slice(&bytes[8..8 + len]).unwrap();
        for (name, entry) in header.into_iter().filter(|(n, _)| n != "__metadata__") {
            let shape: Vec<usize> = entry["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() as usize)
                .map(|d| if d == vocab { d } else { d * scale })
                .collect();
            shapes.insert(name, shape);
        }
    }
    let (mut header, mut data) = (serde_json::Map::new(), Vec::new());
    let mut state = 1u32;
    for (name, shape) in shapes {
        let start = data.len();
        for _ in 0..shape.iter().product::<usize>() {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let value = if shape.len() == 1 {
                1.0
            } else {
                (state >> 8) as f32 / (1u32 << 24) as f32 * 0.1 - 0.05
            };
            data.extend(half::bf16::from_f32(value).to_le_bytes());
        }
        let entry = serde_json::json!({"dtype": "BF16", "shape": shape, "data_offsets": [start, data.len()]});
        header.insert(name, entry);
    }
    let header = serde_json::to_vec(&header).unwrap();
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header);
    file.extend(&data);
    std::fs::write(out.join("model.safetensors"), file).unwrap();
    data.len() as u64
}

/// A sharded checkpoint from the hub: its index, then every shard the index names, each
/// verified against the hub's checksum as any weights file, then embedded like transformers.
#[test]
fn a_sharded_checkpoint_is_fetched_shard_by_shard_from_the_hub() {
    let server = hub_server::serve(None);
    let cache = scratch("cli-hub-sharded-cache");
    let (expected, input) = pipeline_input("llama_sharded_bf16", &cache);
    let out_npy = cache.join("x.npy");
    let spec = format!("hf:{}@main", hub_server::SHARDED_MODEL_REPO);
    let args = [
        "embed",
        "--model",
        &spec,
        "--input",
        input.to_str().unwrap(),
        "--out",
    ];
    let out = geneb_with_hub(
        &[&args[..], &[out_npy.to_str().unwrap()]].concat(),
        &server.endpoint,
        &cache,
    );
    ok_text(&out);
    let worst = worst_against_pipeline(&out_npy, &expected);
    assert!(worst <= 1e-4, "max |Δ| = {worst}");
    let requests = server.requests.lock().unwrap().join("\n");
    for file in [
        "model.safetensors.index.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ] {
        assert!(
            requests.contains(&format!("/resolve/main/{file}")),
            "{file}: {requests}"
        );
    }
    let listed = ok_json(&geneb_with_hub(&["models"], &server.endpoint, &cache));
    assert!(
        listed["cached"][hub_server::SHARDED_MODEL_REPO].is_array(),
        "{}",
        listed["cached"]
    );
}
