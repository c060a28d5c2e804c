//! How many GPU kernels one forward pass launches: what a pass costs in the page, where WebGPU
//! pays for every launch. Counted by `geneb embed --backend wgpu --count-kernels` (CubeCL's launch
//! observer) on lavapipe in CI; the counts do not depend on the driver or the weights, only on
//! the shapes, so checkpoints of NT-v2-50m's and DNABERT-2-117M's shapes are written here with
//! one or two layers and the count of twelve is the part outside the layers plus twelve times
//! one layer's. Budgets: what a pass launches with Burn's fusion, the layers shaped for it and
//! attention as one kernel (bench/README.md), down from 832 and 653 before; issue 27's target
//! was a third of those (277 and 218).
#![cfg(feature = "wgpu")]

use std::path::{Path, PathBuf};
use std::process::Command;

const NT_V2_50M_BUDGET: usize = 271;
const DNABERT2_117M_BUDGET: usize = 176;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A safetensors file of the named f32 tensors (shape, values from `value(index)`).
fn write_safetensors(path: &Path, tensors: &[(String, Vec<usize>)]) {
    let mut header = serde_json::Map::new();
    let mut offset = 0usize;
    for (name, shape) in tensors {
        let bytes = shape.iter().product::<usize>() * 4;
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + bytes]}),
        );
        offset += bytes;
    }
    let mut header = serde_json::to_vec(&header).unwrap();
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut file = Vec::with_capacity(8 + header.len() + offset);
    file.extend((header.len() as u64).to_le_bytes());
    file.extend(&header);
    // Small distinct values: the launches do not depend on them, the pass must stay finite.
    file.extend((0..offset / 4).flat_map(|i| (((i % 97) as f32 - 48.0) * 1e-3).to_le_bytes()));
    std::fs::write(path, file).unwrap();
}

fn copy_files(from: &Path, to: &Path, names: &[&str]) {
    for name in names {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
}

fn write_config(dir: &Path, template: &Path, overrides: serde_json::Value) {
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(template).unwrap()).unwrap();
    for (key, value) in overrides.as_object().unwrap() {
        config[key] = value.clone();
    }
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
}

/// NT-v2-50m's shape (hidden 512, 16 heads, SwiGLU 2048, vocab 4107, rotary) with `layers`.
fn nt_v2_50m(dir: &Path, layers: usize) {
    let (hidden, inter, vocab) = (512, 2048, 4107);
    let mut tensors = vec![(
        "esm.embeddings.word_embeddings.weight".to_string(),
        vec![vocab, hidden],
    )];
    for i in 0..layers {
        let p = |name: &str| format!("esm.encoder.layer.{i}.{name}");
        for norm in ["attention.LayerNorm", "LayerNorm"] {
            tensors.push((p(&format!("{norm}.weight")), vec![hidden]));
            tensors.push((p(&format!("{norm}.bias")), vec![hidden]));
        }
        for proj in [
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
        ] {
            tensors.push((p(&format!("{proj}.weight")), vec![hidden, hidden]));
            tensors.push((p(&format!("{proj}.bias")), vec![hidden]));
        }
        tensors.push((
            p("attention.self.rotary_embeddings.inv_freq"),
            vec![hidden / 16 / 2],
        ));
        tensors.push((p("attention.output.dense.weight"), vec![hidden, hidden]));
        tensors.push((p("attention.output.dense.bias"), vec![hidden]));
        tensors.push((p("intermediate.dense.weight"), vec![2 * inter, hidden]));
        tensors.push((p("output.dense.weight"), vec![hidden, inter]));
    }
    for part in ["weight", "bias"] {
        tensors.push((
            format!("esm.encoder.emb_layer_norm_after.{part}"),
            vec![hidden],
        ));
    }
    write_safetensors(&dir.join("model.safetensors"), &tensors);
    write_config(
        dir,
        &fixtures().join("models/nt_v2/config.json"),
        serde_json::json!({"vocab_size": vocab, "hidden_size": hidden, "num_hidden_layers": layers,
            "num_attention_heads": 16, "intermediate_size": inter, "max_position_embeddings": 2050}),
    );
    copy_files(
        &fixtures().join("tokenizers/nt6"),
        dir,
        &["vocab.txt", "special_tokens_map.json"],
    );
    std::fs::write(
        dir.join("tokenizer_config.json"),
        r#"{"tokenizer_class": "EsmTokenizer", "model_max_length": 2048, "eos_token": null}"#,
    )
    .unwrap();
}

/// DNABERT-2-117M's shape (hidden 768, 12 heads, GLU 3072, ALiBi) with `layers`, the committed
/// BPE tokenizer fixture as its tokenizer.
fn dnabert2_117m(dir: &Path, layers: usize) {
    let (hidden, inter, vocab) = (768, 3072, 4096);
    let mut tensors = vec![
        (
            "bert.embeddings.word_embeddings.weight".to_string(),
            vec![vocab, hidden],
        ),
        (
            "bert.embeddings.token_type_embeddings.weight".to_string(),
            vec![2, hidden],
        ),
        ("bert.embeddings.LayerNorm.weight".to_string(), vec![hidden]),
        ("bert.embeddings.LayerNorm.bias".to_string(), vec![hidden]),
    ];
    for i in 0..layers {
        let p = |name: &str| format!("bert.encoder.layer.{i}.{name}");
        tensors.push((p("attention.self.Wqkv.weight"), vec![3 * hidden, hidden]));
        tensors.push((p("attention.self.Wqkv.bias"), vec![3 * hidden]));
        tensors.push((p("attention.output.dense.weight"), vec![hidden, hidden]));
        tensors.push((p("attention.output.dense.bias"), vec![hidden]));
        for norm in ["attention.output.LayerNorm", "mlp.layernorm"] {
            tensors.push((p(&format!("{norm}.weight")), vec![hidden]));
            tensors.push((p(&format!("{norm}.bias")), vec![hidden]));
        }
        tensors.push((p("mlp.gated_layers.weight"), vec![2 * inter, hidden]));
        tensors.push((p("mlp.wo.weight"), vec![hidden, inter]));
        tensors.push((p("mlp.wo.bias"), vec![hidden]));
    }
    write_safetensors(&dir.join("model.safetensors"), &tensors);
    write_config(
        dir,
        &fixtures().join("models/dnabert2/config.json"),
        serde_json::json!({"vocab_size": vocab, "hidden_size": hidden, "num_hidden_layers": layers,
            "num_attention_heads": 12, "intermediate_size": inter}),
    );
    copy_files(
        &fixtures().join("tokenizers/dnabert2"),
        dir,
        &["tokenizer.json", "tokenizer_config.json"],
    );
}

/// `geneb embed --backend wgpu` of one 200-nt sequence with `watch` (the flags that watch its
/// kernels); its stderr.
fn embed_one(model: &Path, watch: &[&std::ffi::OsStr]) -> String {
    let fasta = model.join("one.fa");
    let bases = b"ACGT";
    let sequence: String = (0..200usize)
        .map(|i| bases[(i * 7 + i / 3) % 4] as char)
        .collect();
    std::fs::write(&fasta, format!(">s\n{sequence}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(["embed", "--model"])
        .arg(format!("hf:{}", model.display()))
        .arg("--input")
        .arg(&fasta)
        .arg("--out")
        .arg(model.join("one.npy"))
        .args(["--backend", "wgpu"])
        .args(watch)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// (kernel launches, host reads) of one forward pass on one 200-nt sequence.
fn launches(model: &Path) -> (usize, usize) {
    let stderr = embed_one(model, &["--count-kernels".as_ref()]);
    let summary = stderr
        .lines()
        .find(|l| l.contains("kernel launches"))
        .unwrap_or_else(|| panic!("no count in {stderr}"));
    let numbers: Vec<usize> = summary
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

/// Launches of a twelve-layer pass, from passes of one and two layers.
fn twelve_layers(name: &str, write: fn(&Path, usize)) -> usize {
    let root = std::env::temp_dir().join(format!("geneb-launches-{name}-{}", std::process::id()));
    let count = |layers: usize| {
        let dir = root.join(format!("{layers}"));
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, layers);
        let (launches, reads) = launches(&dir);
        assert_eq!(
            reads, 1,
            "{name}: a pass reads the device once, for its embeddings"
        );
        launches
    };
    let (one, two) = (count(1), count(2));
    std::fs::remove_dir_all(&root).ok();
    let per_layer = two - one;
    let outside = one - per_layer;
    eprintln!("{name}: {per_layer} launches per layer, {outside} outside the layers");
    outside + 12 * per_layer
}

#[test]
fn nt_v2_50m_pass_stays_within_its_launch_budget() {
    let launches = twelve_layers("nt-v2-50m", nt_v2_50m);
    assert!(
        launches <= NT_V2_50M_BUDGET,
        "NT-v2-50m: {launches} launches per pass, budget {NT_V2_50M_BUDGET}"
    );
}

#[test]
fn dnabert2_117m_pass_stays_within_its_launch_budget() {
    let launches = twelve_layers("dnabert2-117m", dnabert2_117m);
    assert!(
        launches <= DNABERT2_117M_BUDGET,
        "DNABERT-2-117M: {launches} launches per pass, budget {DNABERT2_117M_BUDGET}"
    );
}

/// `--profile-kernels` times the very launches `--count-kernels` counts: its table is one row per
/// kernel, its launches (in order and by kernel) sum to the count, each with a GPU time from
/// lavapipe's timestamp queries, and it names the adapter's limits for the join with Dawn's.
#[test]
fn kernel_profile_times_every_counted_launch() {
    let dir = std::env::temp_dir().join(format!("geneb-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    nt_v2_50m(&dir, 1);
    let (counted, _) = launches(&dir);
    let json = dir.join("profile.json");
    embed_one(&dir, &["--profile-kernels".as_ref(), json.as_os_str()]);
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).ok();

    assert_eq!(profile["launches"], counted, "{profile:#}");
    assert_eq!(
        profile["timing"], "device",
        "lavapipe has timestamp queries"
    );
    assert_eq!(profile["sequences"], 1);
    assert_eq!(profile["call_ms"].as_array().unwrap().len(), 5);
    let order = profile["order"].as_array().unwrap();
    assert_eq!(order.len(), counted, "one entry per launch");
    // A launch shorter than the timer's tick may read 0 µs; none may lack a time or run backwards.
    let times: Vec<Option<f64>> = order.iter().map(|launch| launch[1].as_f64()).collect();
    assert!(
        times.iter().all(|us| us.is_some_and(|us| us >= 0.0)),
        "{times:?}"
    );
    assert!(times.iter().flatten().any(|&us| us > 0.0), "{times:?}");
    let kernels = profile["kernels"].as_array().unwrap();
    let mut names = std::collections::HashSet::new();
    let (mut launched, mut total) = (0, 0.0);
    for kernel in kernels {
        let name = kernel["name"].as_str().unwrap();
        assert!(names.insert(name), "{name} listed twice");
        let n = kernel["launches"].as_u64().unwrap() as usize;
        assert_eq!(kernel["timed"], n, "{kernel}");
        let in_order: Vec<f64> = order
            .iter()
            .filter(|launch| launch[0] == name)
            .map(|launch| launch[1].as_f64().unwrap())
            .collect();
        assert_eq!(
            in_order.len(),
            n,
            "{name}: launches in order and by kernel differ"
        );
        let kernel_total = kernel["total_us"].as_f64().unwrap();
        assert!((kernel_total - in_order.iter().sum::<f64>()).abs() < 1e-6 * kernel_total.max(1.0));
        let median = kernel["median_us"].as_f64().unwrap();
        assert!(in_order.iter().any(|&us| us <= median) && in_order.iter().any(|&us| us >= median));
        launched += n;
        total += kernel_total;
    }
    assert_eq!(launched, counted);
    assert!((profile["gpu_us"].as_f64().unwrap() - total).abs() < 1e-6 * total);
    let sorted = kernels
        .windows(2)
        .all(|w| w[0]["total_us"].as_f64() >= w[1]["total_us"].as_f64());
    assert!(sorted, "most GPU time first");
    assert!(profile["adapter"]["limits"]["maxStorageBufferBindingSize"].as_u64() > Some(0));
    assert!(
        profile["adapter"]["features"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "timestamp-query")
    );
}
