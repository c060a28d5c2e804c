//! The category-aware profile: its statistics against numpy/scipy/scikit-learn
//! (`tests/oracle/make_profile_fixtures.py` → `tests/fixtures/profile/expected.json`), its plots
//! and report, and `geneb profile` writing every output.

use geneb::metrics::Scores;
use geneb::profile::analysis::{self, Analysis};
use geneb::profile::bootstrap::{self, Settings};
use geneb::profile::stats;
use geneb::submission::{ClassIndices, Meta, Submission, TaskInfo, TaskPredictions};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn expected() -> Value {
    let text = std::fs::read_to_string(repo("tests/fixtures/profile/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn indices(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-12, "{what}: {a} vs numpy {b}");
}

fn settings(fixture: &Value) -> Settings {
    Settings {
        replicates: fixture["replicates"].as_u64().unwrap() as usize,
        seed: fixture["seed"].as_u64().unwrap() as u32,
    }
}

#[test]
fn resampling_stream_is_numpys_randint() {
    let fixture = expected();
    let mut rng = rand_mt::Mt::new(13);
    assert_eq!(
        bootstrap::resample(&mut rng, 20),
        indices(&fixture["randint_seed13"]["n20"])
    );
    let next = bootstrap::resample(&mut rng, 1000);
    assert_eq!(
        next[..25],
        indices(&fixture["randint_seed13"]["then_n1000"])[..]
    );
    for (task, crc) in fixture["crc32"].as_object().unwrap() {
        assert_eq!(
            bootstrap::task_seed(0, task),
            crc.as_u64().unwrap() as u32,
            "{task}"
        );
    }
}

#[test]
fn task_replicates_and_intervals_equal_numpy() {
    let fixture = expected();
    let settings = settings(&fixture);
    for (task, entry) in fixture["tasks"].as_object().unwrap() {
        assert_eq!(
            u64::from(bootstrap::task_seed(settings.seed, task)),
            entry["task_seed"].as_u64().unwrap()
        );
        let y_true = indices(&entry["y_true"]);
        for (model, m) in entry["models"].as_object().unwrap() {
            let fits: Vec<Vec<usize>> = m["fits"].as_array().unwrap().iter().map(indices).collect();
            let got = bootstrap::replicates(&[(&y_true, &fits)], task, settings).remove(0);
            let want = floats(&m["replicates"]);
            assert_eq!(got.len(), want.len());
            for (b, (g, w)) in got.iter().zip(&want).enumerate() {
                close(*g, *w, &format!("{task}/{model} replicate {b}"));
            }
            let interval = floats(&m["interval"]);
            close(bootstrap::percentile(&got, 2.5), interval[0], "lo");
            close(bootstrap::percentile(&got, 97.5), interval[1], "hi");
        }
    }
}

#[test]
fn rank_statistics_and_percentiles_equal_scipy() {
    let fixture = expected();
    let ranks = &fixture["ranks"];
    let (x, y) = (floats(&ranks["x"]), floats(&ranks["y"]));
    close(
        stats::spearman(&x, &y).unwrap(),
        ranks["spearman"].as_f64().unwrap(),
        "spearman",
    );
    close(
        stats::kendall_tau_b(&x, &y).unwrap(),
        ranks["kendall_tau_b"].as_f64().unwrap(),
        "kendall",
    );
    for (q, v) in ranks["percentiles"].as_object().unwrap() {
        close(
            bootstrap::percentile(&y, q.parse().unwrap()),
            v.as_f64().unwrap(),
            q,
        );
    }
}

/// One task of a result file: its category, test labels, one regime's fits and their mean MCC.
struct TaskResult {
    category: String,
    y_true: Vec<usize>,
    fits: Vec<Vec<usize>>,
    mcc: f64,
}

/// A result file with per-example evidence for `regime`, encoded as `geneb eval` writes it.
fn result_file(
    model_id: &str,
    display: &str,
    regime: &str,
    tasks: BTreeMap<String, TaskResult>,
    protocol: Option<Value>,
) -> Submission {
    let mut results = BTreeMap::new();
    let mut predictions = BTreeMap::new();
    let mut info = BTreeMap::new();
    for (task, t) in tasks {
        let scores = Scores {
            mcc: t.mcc,
            acc: 0.0,
            f1: 0.0,
        };
        results.insert(task.clone(), scores);
        let split = TaskInfo {
            category: t.category,
            n_train: 10,
            n_test: t.y_true.len(),
            n_classes: 3,
            split: None,
        };
        info.insert(task.clone(), split);
        let fits = t
            .fits
            .iter()
            .map(|f| ClassIndices::encode(f).unwrap())
            .collect();
        let evidence = TaskPredictions {
            y_true: ClassIndices::encode(&t.y_true).unwrap(),
            regimes: BTreeMap::from([(regime.to_string(), fits)]),
        };
        predictions.insert(task, evidence);
    }
    Submission {
        schema_version: "1.0".into(),
        model_id: model_id.into(),
        harness_version: "test".into(),
        meta: Meta {
            display: display.into(),
            params: 0,
            url: String::new(),
            zero_shot: false,
            training_data: String::new(),
            provenance: "self-reported".into(),
            submitted_by: String::new(),
        },
        results: BTreeMap::from([(regime.to_string(), results)]),
        tasks: info,
        fewshot: BTreeMap::new(),
        predictions,
        folds: BTreeMap::new(),
        audit: BTreeMap::new(),
        leak_free: BTreeMap::new(),
        protocol,
    }
}

/// The fixture's two models as result files: both tasks in one category, "10shot" regime
/// (A with one fit, B with five), evidence encoded as `geneb eval` writes it.
fn fixture_submissions(fixture: &Value) -> Vec<Submission> {
    ["A", "B"]
        .iter()
        .map(|model| {
            let tasks = fixture["tasks"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(task, entry)| {
                    let m = &entry["models"][model];
                    let result = TaskResult {
                        category: "Promoters".into(),
                        y_true: indices(&entry["y_true"]),
                        fits: m["fits"].as_array().unwrap().iter().map(indices).collect(),
                        mcc: m["mcc"].as_f64().unwrap(),
                    };
                    (task.clone(), result)
                })
                .collect();
            result_file(&format!("model-{model}"), model, "10shot", tasks, None)
        })
        .collect()
}

fn fixture_analysis() -> (Value, Analysis) {
    let fixture = expected();
    let subs = fixture_submissions(&fixture);
    let analysis = analysis::analyse(&subs, settings(&fixture), None).unwrap();
    (fixture, analysis)
}

#[test]
fn category_intervals_and_paired_test_equal_numpy() {
    let (fixture, analysis) = fixture_analysis();
    for model in ["A", "B"] {
        let u = analysis
            .uncertainty
            .iter()
            .find(|u| u.model == model)
            .unwrap();
        let want = floats(&fixture["category_interval"][model]);
        let got = u.categories["Promoters"];
        close(got.lo, want[0], "category lo");
        close(got.hi, want[1], "category hi");
        for (task, entry) in fixture["tasks"].as_object().unwrap() {
            let want = floats(&entry["models"][model]["interval"]);
            close(u.tasks[task].lo, want[0], "task lo");
            close(u.tasks[task].hi, want[1], "task hi");
        }
    }
    assert_eq!(analysis.paired.len(), 1, "one pair, one category");
    let paired = &analysis.paired[0];
    assert_eq!(
        (paired.a.as_str(), paired.b.as_str(), paired.n_tasks),
        ("A", "B", 2)
    );
    let want = &fixture["paired_A_minus_B"];
    let interval = floats(&want["interval"]);
    close(paired.difference.lo, interval[0], "paired lo");
    close(paired.difference.hi, interval[1], "paired hi");
    close(paired.difference.p, want["p"].as_f64().unwrap(), "paired p");
}

#[test]
fn edited_evidence_is_a_clear_error_not_a_wrong_interval() {
    let fixture = expected();
    let mut subs = fixture_submissions(&fixture);
    let scores = subs[0].results.get_mut("10shot").unwrap();
    scores.get_mut("binary_task").unwrap().mcc += 0.01;
    let err = analysis::analyse(&subs, settings(&fixture), None).unwrap_err();
    assert!(
        err.message.contains("model A, task binary_task")
            && err.message.contains("re-run geneb eval"),
        "{err}"
    );
}

#[test]
fn the_heatmap_has_one_cell_per_model_and_column_and_the_report_stands_alone() {
    let (_, analysis) = fixture_analysis();
    let svg = geneb::report::svg::heatmap(&analysis, "10shot").unwrap();
    // 2 models × (1 category + macro).
    assert_eq!(svg.matches("class=\"cell\"").count(), 4, "{svg}");
    for mark in [
        "<title>MCC by category, 10-shot</title>",
        "<desc>",
        ">Promoters<",
        ">macro<",
        ">#1<",
        ">#2<",
    ] {
        assert!(svg.contains(mark), "{mark} missing in {svg}");
    }

    let outputs =
        geneb::report::html::render(&analysis, &fixture_submissions(&expected())).unwrap();
    let html = &outputs.html;
    for forbidden in ["<script", "src=", "href=", "url(", "@import"] {
        assert!(!html.contains(forbidden), "{forbidden} in the report");
    }
    // The only "http" is the SVG namespace, which browsers never fetch.
    assert_eq!(
        html.matches("http").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    assert!(html.contains(analysis::PUBLISHED_CREDIT));
    assert!(html.contains("Paired comparisons"));
    assert!(outputs.csv.contains_key("paired.csv"));
    let official: Value = serde_json::from_str(&outputs.official["model-A.json"]).unwrap();
    let keys: Vec<&str> = official
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "harness_version",
            "meta",
            "model_id",
            "results",
            "schema_version"
        ]
    );
}

#[test]
fn recommendations_respect_the_budget_and_never_crown_an_incomparable_model() {
    let fixture = expected();
    let mut subs = fixture_submissions(&fixture);
    subs[0].meta.params = 1_000_000;
    let analysis = analysis::analyse(&subs, settings(&fixture), Some(50_000_000)).unwrap();
    let r = analysis
        .recommendations
        .iter()
        .find(|r| r.category == "Promoters")
        .unwrap();
    assert!(r.published && r.params <= 50_000_000, "{r:?}");
    let yours = r.yours.as_ref().unwrap();
    assert!(!yours.comparable);
    assert!(r.note.contains("not directly comparable"), "{}", r.note);
    // The parameter-count scatter places A (1M) in colour among the published models.
    let svg = geneb::report::svg::params_scatter(&analysis, "10shot").unwrap();
    assert!(svg.contains(">A<") && svg.contains("Not shown") && !svg.contains(">B<"));
}

/// A time or memory budget picks what a hand computation over each result's measured cost
/// picks; a result without a measured cost is named, never picked, and published rows (which
/// have none) give way to your measured models.
#[test]
fn a_cost_budget_picks_the_best_model_within_it_by_hand() {
    use geneb::profile::budget::CostBudget;
    let fixture = expected();
    let mut subs = fixture_submissions(&fixture);
    // The category MCC each model scores, as the profile averages its tasks.
    let category_mcc = |sub: &Submission| {
        let scores = &sub.results["10shot"];
        scores.values().map(|s| s.mcc).sum::<f64>() / scores.len() as f64
    };
    // C: the better model's evidence under another name, without a measured cost (an older
    // file): were it admitted, it would win wherever its original is left out.
    let better = usize::from(category_mcc(&subs[1]) > category_mcc(&subs[0]));
    let mut unmeasured = subs[better].clone();
    unmeasured.meta.display = "C".into();
    // (sequences/s, host peak bytes, GPU peak bytes): A fast but large, B slow but small.
    let measured = [
        (500.0, 3_000_000_000u64, None),
        (100.0, 500_000_000, Some(250_000_000)),
    ];
    for (sub, (rate, host, gpu)) in subs.iter_mut().zip(measured) {
        sub.protocol = Some(serde_json::json!({ "cost": {
            "sequences_per_s": rate, "peak_memory_bytes": host, "peak_gpu_memory_bytes": gpu,
        }}));
    }
    subs.push(unmeasured);
    // By hand: seconds per 1,000 sequences = 1000 / rate; memory = host + GPU.
    let by_hand = [("A", 2.0, 3.0e9), ("B", 10.0, 0.75e9)];
    for (seconds, gigabytes) in [
        (Some(5.0), None),
        (None, Some(1.0)),
        // B's host memory alone would fit: its GPU's counts too.
        (None, Some(0.6)),
        (Some(20.0), Some(4.0)),
        (Some(1.0), None),
    ] {
        let budget = CostBudget {
            max_seconds_per_1k_seqs: seconds,
            max_memory_bytes: gigabytes.map(|g: f64| (g * 1e9) as u64),
        };
        let expected = by_hand
            .iter()
            .filter(|(_, s, _)| seconds.is_none_or(|max| *s <= max))
            .filter(|(_, _, m)| gigabytes.is_none_or(|max| *m <= max * 1e9))
            .map(|(name, _, _)| subs.iter().find(|s| s.meta.display == *name).unwrap())
            .max_by(|a, b| category_mcc(a).total_cmp(&category_mcc(b)))
            .map(|s| s.meta.display.clone());
        let analysis = analysis::analyse_within(&subs, settings(&fixture), None, budget).unwrap();
        let picked = analysis
            .recommendations
            .iter()
            .find(|r| r.category == "Promoters");
        assert_eq!(picked.map(|r| r.model.clone()), expected, "{budget:?}");
        if let Some(r) = picked {
            assert!(r.note.contains("cost not measured for C"), "{}", r.note);
            assert!(
                r.note.contains("published rows have no measured cost"),
                "{}",
                r.note
            );
        }
        assert!(
            analysis::to_text(&analysis).contains("published rows and results without one"),
            "the rule is stated"
        );
    }
    // The budget changed the pick: without one, a published row or the better of A and B wins.
    let free = analysis::analyse(&subs, settings(&fixture), None).unwrap();
    let free_pick = &free
        .recommendations
        .iter()
        .find(|r| r.category == "Promoters")
        .unwrap();
    assert!(free_pick.published, "{free_pick:?}");
}

fn geneb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(args)
        .output()
        .expect("running geneb")
}

#[test]
fn cli_writes_report_tables_plots_and_submissions() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile_cli");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut results = Vec::new();
    for model in ["kmer:2", "kmer:3"] {
        let out = dir.join(format!("{}.json", model.replace(':', "_")));
        let run = geneb(&[
            "eval",
            "--model",
            model,
            "--task",
            repo("tasks/smoke").to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        results.push(out.to_str().unwrap().to_string());
    }
    // A file from before per-example evidence: still profiled, said plainly.
    let mut old: Value = serde_json::from_slice(&std::fs::read(&results[1]).unwrap()).unwrap();
    old.as_object_mut().unwrap().remove("predictions");
    old["meta"]["display"] = "kmer:3 (old file)".into();
    // … and before geneb measured cost: a cost budget names it rather than judge it.
    old["protocol"].as_object_mut().unwrap().remove("cost");
    let old_path = dir.join("old.json");
    std::fs::write(&old_path, old.to_string()).unwrap();

    let report = dir.join("report.html");
    let (csv, svg, official) = (dir.join("csv"), dir.join("svg"), dir.join("official"));
    let mut args = vec![
        "profile",
        "--bootstrap",
        "200",
        "--html",
        report.to_str().unwrap(),
    ];
    args.extend([
        "--csv",
        csv.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    args.extend([
        "--official",
        official.to_str().unwrap(),
        "--max-params",
        "120000000",
    ]);
    // Budgets every measured k-mer run fits.
    args.extend([
        "--max-seconds-per-1k-seqs",
        "1e6",
        "--max-peak-memory",
        "1TiB",
    ]);
    args.extend(results.iter().map(String::as_str));
    args.push(old_path.to_str().unwrap());
    let run = geneb(&args);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("at most 1000000 s per 1,000 sequences and 1.0 TiB of peak memory")
            && stdout.contains("published rows and results without one")
            && stdout
                .contains("cost not measured, left out under the cost budget: kmer:3 (old file)"),
        "{stdout}"
    );
    for (flag, value, says) in [
        (
            "--max-peak-memory",
            "4XB",
            "--max-peak-memory: memory size \"4XB\" is not a size",
        ),
        (
            "--max-seconds-per-1k-seqs",
            "0",
            "expected a positive number of seconds",
        ),
    ] {
        let refused = geneb(&["profile", flag, value, old_path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.trim().lines().count() == 1 && stderr.contains(says),
            "{stderr}"
        );
    }
    assert!(
        stdout.contains("kmer:3 (old file): the result file has no per-example predictions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Paired comparisons") && stdout.contains("kmer:2 − kmer:3"),
        "{stdout}"
    );

    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
    for name in [
        "profile_full.csv",
        "paired.csv",
        "recommendations.csv",
        "tasks.csv",
        "published_1shot.csv",
    ] {
        let text = std::fs::read_to_string(csv.join(name)).unwrap_or_else(|_| panic!("{name}"));
        assert!(text.lines().count() > 1, "{name}: {text}");
    }
    let profile = std::fs::read_to_string(csv.join("profile_full.csv")).unwrap();
    assert!(
        profile.starts_with("model,params,Promoters,Promoters_ci_lo,Promoters_ci_hi,"),
        "{profile}"
    );
    for name in [
        "heatmap_full.svg",
        "rank_changes.svg",
        "fewshot_degradation.svg",
        "params_vs_macro_full.svg",
    ] {
        let text = std::fs::read_to_string(svg.join(name)).unwrap_or_else(|_| panic!("{name}"));
        assert!(
            text.starts_with("<svg") && text.contains("<title>"),
            "{name}"
        );
    }
    assert!(official.join("kmer_2.json").exists() && official.join("kmer_3.json").exists());

    // Same inputs and seed, same numbers; the JSON carries the intervals the page shows.
    let json = |seed: &str| {
        let mut a = vec!["profile", "--json", "--bootstrap", "200", "--seed", seed];
        a.extend(results.iter().map(String::as_str));
        let out = geneb(&a);
        assert!(out.status.success());
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let (first, again, other) = (json("3"), json("3"), json("4"));
    assert_eq!(first["uncertainty"], again["uncertainty"]);
    assert_ne!(first["uncertainty"], other["uncertainty"]);
    assert!(first["uncertainty"][0]["macro"]["lo"].is_f64());

    // Bad input: one line, exit 2.
    let bad = geneb(&["profile", "--bootstrap", "1", &results[0]]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr)
            .trim_end()
            .lines()
            .count(),
        1
    );
    let unwritable = geneb(&["profile", "--html", "/nonexistent/dir/r.html", &results[0]]);
    assert_eq!(unwritable.status.code(), Some(2));
}

#[test]
fn tasks_scored_on_other_examples_are_left_out_of_the_pairing_and_said() {
    let fixture = expected();
    let mut subs = fixture_submissions(&fixture);
    // B's binary task on the same examples in reverse order: same MCC, other test labels.
    let evidence = subs[1].predictions.get_mut("binary_task").unwrap();
    let reversed = |v: &ClassIndices| {
        let mut x = v.decode("t").unwrap();
        x.reverse();
        ClassIndices::encode(&x).unwrap()
    };
    evidence.y_true = reversed(&evidence.y_true);
    for fit in evidence.regimes.get_mut("10shot").unwrap() {
        *fit = reversed(fit);
    }
    let analysis = analysis::analyse(&subs, settings(&fixture), None).unwrap();
    assert_eq!(analysis.paired[0].n_tasks, 1, "only three_class_task pairs");
    assert!(
        analysis
            .notes
            .iter()
            .any(|n| n.contains("different test examples for task binary_task")),
        "{:?}",
        analysis.notes
    );
}

/// Three layers of one model (`hf:tiny?layer=K`, as `geneb eval --layers all` names them) with
/// the predictions of `tests/fixtures/profile/layers.json`, encoded as geneb writes them.
fn layer_submissions(fixture: &Value) -> Vec<Submission> {
    let last = fixture["last_layer"].as_u64().unwrap();
    (0..=last)
        .map(|layer| {
            let tasks = fixture["tasks"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(task, entry)| {
                    let result = TaskResult {
                        category: entry["category"].as_str().unwrap().into(),
                        y_true: indices(&entry["y_true"]),
                        fits: vec![indices(&entry["predictions"][layer as usize])],
                        mcc: entry["mcc"][layer as usize].as_f64().unwrap(),
                    };
                    (task.clone(), result)
                })
                .collect();
            let id = format!("hf:tiny?layer={layer}");
            let protocol = serde_json::json!({
                "encoder": {"spec": id, "layer_index": layer, "last_layer": last}
            });
            result_file(&id, &id, "full", tasks, Some(protocol))
        })
        .collect()
}

/// The by-layer view of three layers: each layer's category MCC and interval, the best layer,
/// its gain over the last and the paired test, against numpy/scikit-learn; and `geneb profile`
/// prints it, writes it in the JSON and draws it.
#[test]
fn the_layer_view_picks_the_best_layer_and_tests_its_gain_as_numpy_does() {
    let text = std::fs::read_to_string(repo("tests/fixtures/profile/layers.json")).unwrap();
    let fixture: Value = serde_json::from_str(&text).unwrap();
    let subs = layer_submissions(&fixture);
    let analysis = analysis::analyse(&subs, settings(&fixture), None).unwrap();
    assert_eq!(analysis.layers.len(), 1, "one model, three layers");
    let model = &analysis.layers[0];
    assert_eq!((model.model.as_str(), model.last_layer), ("hf:tiny", 2));
    let full = &model.regimes[0];
    assert_eq!(full.regime, "full");
    assert_eq!(full.categories.len(), 2);
    for c in &full.categories {
        let want = &fixture["categories"][&c.category];
        assert_eq!(
            c.best_layer as u64,
            want["best_layer"].as_u64().unwrap(),
            "{}",
            c.category
        );
        close(c.gain.unwrap(), want["gain"].as_f64().unwrap(), "gain");
        let layers: Vec<usize> = c.layers.iter().map(|l| l.layer).collect();
        assert_eq!(layers, [0, 1, 2]);
        for (l, (mcc, ci)) in c.layers.iter().zip(
            floats(&want["mcc"])
                .iter()
                .zip(want["interval"].as_array().unwrap()),
        ) {
            close(l.mcc, *mcc, "layer MCC");
            let ci = floats(ci);
            let got = l.interval.unwrap();
            close(got.lo, ci[0], "layer lo");
            close(got.hi, ci[1], "layer hi");
        }
        match (&c.test, want.get("test")) {
            (Some(test), Some(want)) => {
                let interval = floats(&want["interval"]);
                close(test.delta, c.gain.unwrap(), "tested gain");
                close(test.lo, interval[0], "gain lo");
                close(test.hi, interval[1], "gain hi");
                close(test.p, want["p"].as_f64().unwrap(), "gain p");
            }
            (None, None) => assert_eq!(c.best_layer, 2, "untested only where the last is best"),
            (got, want) => panic!("{}: test {got:?}, numpy {want:?}", c.category),
        }
    }
    // Promoters peak at layer 1 and Enhancers at the last: both cases are covered.
    let best: Vec<usize> = full.categories.iter().map(|c| c.best_layer).collect();
    assert!(best.contains(&1) && best.contains(&2), "{best:?}");
    // Files in the other order: the analysis tests last − best, read back as best − last
    // (equal to rounding: the percentile interpolates between negated neighbours).
    let reversed: Vec<Submission> = subs.iter().rev().cloned().collect();
    let again = analysis::analyse(&reversed, settings(&fixture), None).unwrap();
    for (a, b) in again.layers[0].regimes[0]
        .categories
        .iter()
        .zip(&full.categories)
    {
        assert_eq!((a.best_layer, a.gain), (b.best_layer, b.gain));
        let (Some(x), Some(y)) = (a.test, b.test) else {
            assert_eq!((a.test, b.test), (None, None));
            continue;
        };
        for (g, w) in [(x.delta, y.delta), (x.lo, y.lo), (x.hi, y.hi), (x.p, y.p)] {
            close(g, w, "the test read the other way round");
        }
    }

    // The CLI: text, JSON and a plot with a ring per category's best layer.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile_layers");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sweep.json");
    std::fs::write(
        &file,
        serde_json::json!({ "submissions": subs }).to_string(),
    )
    .unwrap();
    let svg = dir.join("svg");
    let common = ["--bootstrap", "200", "--seed", "7"];
    let mut args = vec!["profile", "--svg", svg.to_str().unwrap()];
    args.extend(common);
    args.push(file.to_str().unwrap());
    let out = geneb(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("By layer, hf:tiny"), "{stdout}");
    assert!(
        stdout.contains("full Promoters: best layer 1 (gain over the last +0.159"),
        "{stdout}"
    );
    assert!(
        stdout.contains("full Enhancers: best layer 2 (the last layer is best)"),
        "{stdout}"
    );
    let plot = std::fs::read_to_string(svg.join("layers_1_full.svg")).unwrap();
    assert!(
        plot.contains("<title>MCC by layer, hf:tiny, full data</title>"),
        "{plot}"
    );
    assert_eq!(plot.matches("class=\"best-layer\"").count(), 2);
    let mut args = vec!["profile", "--json"];
    args.extend(common);
    args.push(file.to_str().unwrap());
    let json: Value = serde_json::from_slice(&geneb(&args).stdout).unwrap();
    assert_eq!(
        json["layers"],
        serde_json::to_value(&analysis.layers).unwrap()
    );
}
