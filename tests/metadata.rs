//! The result's `meta`: the parameter count of every model fixture against the count summed
//! from its safetensors header (not from geneb's loader), and the CLI's overrides.

use geneb::encoder::{BackendKind, Encoder};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Elements of every floating-point tensor in a safetensors file, read from its header (an
/// 8-byte little-endian length, then JSON), except the names in `not_parameters`.
fn header_float_elements(file: &Path, not_parameters: &[&str]) -> u64 {
    let bytes = std::fs::read(file).unwrap();
    let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, Value> =
        serde_json::from_slice(&bytes[8..8 + len]).unwrap();
    let mut excluded = 0;
    let total = header
        .iter()
        .filter(|(name, _)| *name != "__metadata__")
        .filter(|(_, t)| matches!(t["dtype"].as_str(), Some("F32" | "F16" | "BF16" | "F64")))
        .filter(|(name, _)| {
            let skip = not_parameters.iter().any(|n| name.ends_with(n));
            excluded += skip as usize;
            !skip
        })
        .map(|(_, t)| {
            t["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .product::<u64>()
        })
        .sum();
    assert!(
        not_parameters.is_empty() || excluded > 0,
        "{}: none of {not_parameters:?} is in the file",
        file.display()
    );
    total
}

/// What GENEB's `params` counts (PyTorch's `num_parameters()` of the checkpoint's model class):
/// every parameter, heads included, a tied weight once; buffers are not parameters. Per fixture,
/// the file's tensors that are no parameters of their own.
const FIXTURES: [(&str, &[&str]); 11] = [
    ("bert", &[]),
    ("dnabert2", &[]),
    // ESM registers the rotary frequencies as a buffer.
    ("nt_v2", &["rotary_embeddings.inv_freq"]),
    // PH keeps the tied copies of the reverse Mamba's projections (bidirectional weight tie),
    // as a .bin does; PS drops them.
    (
        "caduceus/ph",
        &["mamba_rev.in_proj.weight", "mamba_rev.out_proj.weight"],
    ),
    ("caduceus/ps", &[]),
    // HyenaDNA registers `t` and `deltas` with lr 0, i.e. as buffers.
    ("hyena/tiny", &["pos_emb.t", "modulation.deltas"]),
    ("gena/base", &[]),
    ("gena/t2t-multi", &[]),
    ("gena/lastln", &[]),
    ("mutbert", &[]),
    // Caduceus-PS's layout: no tied reverse projections stored.
    ("plantcaduceus", &[]),
];

#[test]
fn meta_params_is_the_checkpoints_parameter_count_for_every_model_fixture() {
    for (fixture, not_parameters) in FIXTURES {
        let dir = repo(&format!("tests/fixtures/models/{fixture}"));
        let expected = header_float_elements(&dir.join("model.safetensors"), not_parameters);
        let spec = format!("hf:{}", dir.display());
        let encoder =
            pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu))
                .unwrap();
        let meta = encoder.meta();
        assert_eq!(meta.params, expected, "{fixture}");
        // The encoder alone (what the protocol block's `parameters` says) never has more.
        let own = encoder.describe().parameters.unwrap();
        assert!(
            own <= expected,
            "{fixture}: encoder {own} > model {expected}"
        );
        assert_eq!(
            meta.display,
            fixture.rsplit('/').next().unwrap(),
            "{fixture}"
        );
        assert_ne!(meta.training_data, "none (baseline encoder)", "{fixture}");
    }
}

#[test]
fn a_bert_checkpoints_heads_count_and_its_buffers_do_not() {
    // bert: 2 layers of width 32, vocab 10, 80 positions, plus the masked-LM head (the decoder
    // tied to the word embeddings, so only its bias and transform count).
    let (h, ffn, vocab, positions) = (32u64, 64u64, 10u64, 80u64);
    let layer = 4 * (h * h + h) + (h * ffn + ffn) + (ffn * h + h) + 2 * 2 * h;
    let embeddings = (vocab + positions + 2) * h + 2 * h;
    let head = (h * h + h) + 2 * h + vocab;
    let dir = repo("tests/fixtures/models/bert");
    let encoder = pollster::block_on(Encoder::from_spec(
        &format!("hf:{}", dir.display()).parse().unwrap(),
        BackendKind::Cpu,
    ))
    .unwrap();
    assert_eq!(encoder.describe().parameters, Some(embeddings + 2 * layer));
    assert_eq!(encoder.meta().params, embeddings + 2 * layer + head);
}

fn geneb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(args)
        .output()
        .expect("running geneb")
}

fn eval_json(extra: &[&str]) -> Value {
    let model = format!("hf:{}", repo("tests/fixtures/models/nt_v2").display());
    let task = repo("tasks/smoke/smoke_yeast_vs_fly_species.csv");
    let mut args = vec![
        "eval",
        "--model",
        &model,
        "--task",
        task.to_str().unwrap(),
        "--regimes",
        "full",
        "--quiet",
        "--no-cache",
    ];
    args.extend_from_slice(extra);
    let out = geneb(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn eval_records_the_counted_parameters_and_the_users_overrides() {
    let dir = repo("tests/fixtures/models/nt_v2");
    let counted = header_float_elements(&dir.join("model.safetensors"), &["inv_freq"]);
    let found = eval_json(&["--submitted-by", "A. Lab"]);
    assert_eq!(found["meta"]["params"], counted);
    assert_eq!(found["meta"]["display"], "nt_v2");
    assert_eq!(found["meta"]["submitted_by"], "A. Lab");
    assert_eq!(
        found["protocol"]["encoder"]["context"],
        "90 positions (config.json max_position_embeddings)"
    );
    let given = eval_json(&[
        "--display",
        "My NT",
        "--params",
        "123456",
        "--training-data",
        "hg38 (in-house)",
        "--url",
        "https://example.org/my-nt",
    ]);
    let meta = &given["meta"];
    assert_eq!(meta["display"], "My NT");
    assert_eq!(meta["params"], 123456);
    assert_eq!(meta["training_data"], "hg38 (in-house)");
    assert_eq!(meta["url"], "https://example.org/my-nt");
    // The scores do not depend on what the meta says.
    assert_eq!(given["results"], found["results"]);
}

#[test]
fn model_specific_overrides_for_several_models_are_refused_in_one_line() {
    let task = repo("tasks/smoke/smoke_yeast_vs_fly_species.csv");
    let out = geneb(&[
        "eval",
        "--model",
        "kmer:3",
        "--model",
        "kmer:4",
        "--task",
        task.to_str().unwrap(),
        "--display",
        "X",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("describe one model"), "{stderr}");
}
