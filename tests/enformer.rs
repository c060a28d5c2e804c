//! Enformer against GENEB's extractor over PyPI `enformer-pytorch` (tests/oracle/
//! make_enformer_fixtures.py): the committed tiny random checkpoint, laid out as the hub's
//! `EleutherAI/enformer-official-rough` (config.json and a `torch.save`d pytorch_model.bin with
//! every trunk tensor under two names), embedded from its folder on the CPU and on wgpu (Mesa
//! lavapipe in CI) within 1e-4 of the reference, sequences shorter than 196,608 bp padded with N
//! and a longer one centre-cropped and counted; a checkpoint missing a tensor refused in one
//! line, exit 2; and, when `GENEB_ENFORMER_REAL_SHAPE` names the folder the oracle's
//! `--real-shape` wrote, the published shape on two sequences (ignored by default: minutes).
//!
//! SPACE, on the same trunk, against its own modeling code as GENEB vendors it (tests/oracle/
//! make_space_fixtures.py): a tiny random `TrainingSpace` checkpoint with species experts, on the
//! CPU and on wgpu, a longer sequence centre-cropped to 131,072 bp, and a missing tensor refused
//! (Evo-1's too, from tests/hf_models.rs's fixture).
#![cfg(feature = "burn")]

use geneb::checkpoint::{pytorch, safetensors};
use geneb::encoder::BackendKind;
use geneb::encoder::Encoder;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[path = "support/layers.rs"]
mod layers;

const TOLERANCE: f32 = 1e-4;

fn models(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/models/{name}"))
}

#[derive(Deserialize)]
struct Pipeline {
    sequences: Vec<String>,
    pooled: Vec<Vec<f32>>,
    #[serde(default)]
    pooled_f32: Vec<Vec<f32>>,
}

fn read_pipeline(dir: &Path) -> Pipeline {
    serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap()
}

fn worst(got: &ndarray::Array2<f32>, want: &[Vec<f32>]) -> f32 {
    assert_eq!(got.nrows(), want.len());
    got.rows()
        .into_iter()
        .zip(want)
        .flat_map(|(row, want)| {
            assert_eq!(row.len(), want.len());
            row.iter()
                .zip(want)
                .map(|(a, b)| (a - b).abs())
                .collect::<Vec<_>>()
        })
        .fold(0f32, f32::max)
}

fn load(dir: &Path, kind: BackendKind) -> Encoder {
    let spec = format!("hf:{}", dir.display());
    pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), kind)).unwrap()
}

/// The fixture `name` embedded from its folder on `kind`: within the tolerance of its oracle,
/// `width` values a sequence, every input centred to `length` bp (one sequence longer, cropped
/// and counted as truncated), the recipe named after the model; on wgpu each hidden state too.
fn embeds_as_the_extractor(name: &str, kind: BackendKind, length: usize, width: usize) {
    let expected = read_pipeline(&models(name));
    let encoder = load(&models(name), kind);
    // The raw text: the recipe upper-cases, turns U into T and centres, as the extractor. On
    // wgpu every hidden state from the same pass against the reference's (the sweep's last is
    // today's embedding bit for bit, checked on the CPU in tests/hf_models.rs): a full-length
    // pass on lavapipe is tens of seconds.
    let got = if kind == BackendKind::Wgpu {
        let swept = layers::sweep(&encoder, &expected.sequences);
        layers::assert_match_reference(&models(name), &swept, "Wgpu");
        swept.last().unwrap().clone()
    } else {
        pollster::block_on(encoder.embed(&expected.sequences)).unwrap()
    };
    let worst = worst(&got, &expected.pooled);
    eprintln!("{name} tiny on {kind:?}: max |geneb − PyTorch| = {worst:.2e}");
    assert!(worst <= TOLERANCE, "{kind:?}: max |Δ| = {worst}");
    assert_eq!(encoder.truncated(&expected.sequences), 1);
    let described = encoder.describe();
    let note = format!("centre-cropped or N-padded to {length} bp");
    assert!(
        described.notes.iter().any(|n| n.contains(&note)),
        "{:?}",
        described.notes
    );
    assert_eq!(described.recipe.expect("a recipe").name, name);
    assert_eq!(got.ncols(), width);
}

#[test]
fn enformer_embeds_as_its_extractor_on_cpu() {
    // The human head's 10 tracks.
    embeds_as_the_extractor("enformer", BackendKind::Cpu, 196_608, 10);
}

#[test]
fn enformer_embeds_as_its_extractor_on_wgpu() {
    embeds_as_the_extractor("enformer", BackendKind::Wgpu, 196_608, 10);
}

/// The fixture's float tensors without those whose name ends in `drop` (under both of its
/// names), as a safetensors file.
fn safetensors_without(dir: &Path, drop: &str) -> Vec<u8> {
    let mut ckpt = if dir.join("model.safetensors").exists() {
        let file = std::fs::read(dir.join("model.safetensors")).unwrap();
        safetensors::read("model.safetensors", Box::new(file)).unwrap()
    } else {
        let bin = std::fs::read(dir.join("pytorch_model.bin")).unwrap();
        pytorch::read("pytorch_model.bin", Box::new(bin)).unwrap()
    };
    let names: Vec<String> = ckpt.names().map(str::to_string).collect();
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for name in names {
        if name.ends_with(drop) || name.ends_with("num_batches_tracked") {
            continue;
        }
        let (shape, values) = ckpt.take_any(&name).unwrap();
        let start = data.len();
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        header.insert(
            name,
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut json = serde_json::Value::Object(header).to_string();
    json.push_str(&" ".repeat((8 - json.len() % 8) % 8));
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend(json.into_bytes());
    out.extend(data);
    out
}

/// `geneb eval` on the fixture `name` less the tensor `drop`: one line naming it, exit 2.
fn refuses_a_checkpoint_missing(name: &str, drop: &str) {
    let dir = std::env::temp_dir().join(format!("geneb-{name}-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(models(name).join("config.json"), dir.join("config.json")).unwrap();
    std::fs::write(
        dir.join("model.safetensors"),
        safetensors_without(&models(name), drop),
    )
    .unwrap();
    let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/fixtures/e2e_gc_vs_at.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(["eval", "--model", &format!("hf:{}", dir.display())])
        .args([
            "--task",
            task.to_str().unwrap(),
            "--regimes",
            "full",
            "--quiet",
        ])
        .env("GENEB_CACHE", dir.join("cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(drop) && !stderr.contains("panicked"),
        "{stderr}"
    );
}

#[test]
fn enformer_refuses_a_checkpoint_missing_a_tensor_in_one_line() {
    refuses_a_checkpoint_missing("enformer", "final_pointwise.1.2.bias");
}

#[test]
fn evo_refuses_a_checkpoint_missing_a_pole_in_one_line() {
    // Evo-1's fixture (tests/hf_models.rs embeds it) through the same CLI path.
    refuses_a_checkpoint_missing("evo", "backbone.blocks.2.filter.poles");
}

#[test]
fn space_refuses_a_checkpoint_missing_an_expert_in_one_line() {
    refuses_a_checkpoint_missing(
        "space",
        "transformer.transformer.1.feed_forward.output.bias",
    );
}

#[test]
fn space_embeds_as_its_extractor_on_cpu() {
    // final_pointwise's 2·dim features.
    embeds_as_the_extractor("space", BackendKind::Cpu, 131_072, 96);
}

#[test]
fn space_embeds_as_its_extractor_on_wgpu() {
    embeds_as_the_extractor("space", BackendKind::Wgpu, 131_072, 96);
}

/// The published shape (dim 1536, depth 11, 8 heads, 896 bins, 5,313 human tracks) with random
/// weights at the real input length, two sequences (one centre-cropped), against PyTorch in
/// float64; PyTorch's own float32 run is printed beside it for scale.
/// Run: python3 tests/oracle/make_enformer_fixtures.py --real-shape DIR, then
/// GENEB_ENFORMER_REAL_SHAPE=DIR cargo test --release --test enformer -- --ignored
#[test]
#[ignore = "minutes on a CPU; needs the oracle's --real-shape folder"]
fn enformer_real_shape_matches_the_reference() {
    let dir = PathBuf::from(
        std::env::var("GENEB_ENFORMER_REAL_SHAPE").expect("GENEB_ENFORMER_REAL_SHAPE=DIR"),
    );
    let expected = read_pipeline(&dir);
    let encoder = load(&dir, BackendKind::Cpu);
    let started = Instant::now();
    let got = pollster::block_on(encoder.embed(&expected.sequences)).unwrap();
    let seconds = started.elapsed().as_secs_f64() / expected.sequences.len() as f64;
    let worst_geneb = worst(&got, &expected.pooled);
    let reference_f32 = ndarray::Array2::from_shape_vec(
        (expected.pooled_f32.len(), got.ncols()),
        expected.pooled_f32.concat(),
    )
    .unwrap();
    let worst_torch = worst(&reference_f32, &expected.pooled);
    eprintln!(
        "enformer real shape on the CPU: {seconds:.1} s per sequence; max |geneb − PyTorch f64| \
         = {worst_geneb:.2e}, max |PyTorch f32 − PyTorch f64| = {worst_torch:.2e}"
    );
    assert_eq!(got.ncols(), 5313);
    assert_eq!(encoder.truncated(&expected.sequences), 1);
    assert!(worst_geneb <= TOLERANCE, "max |Δ| = {worst_geneb}");
}
