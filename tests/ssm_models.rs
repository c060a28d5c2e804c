//! The long-convolution and state-space architectures against their PyTorch oracles
//! (tests/oracle/make_hyena_fixtures.py, make_caduceus_fixtures.py, make_janus_fixtures.py):
//! committed tiny random checkpoints (HyenaDNA, Caduceus-PH, Caduceus-PS, JanusDNA with the mid
//! attention layer and without it, as its training saves them: `{"config": …}` and a Lightning
//! `last.ckpt`), and the real
//! HyenaDNA-tiny weights when `scripts/fetch-real-models.sh` has put them in place. Sequences
//! run as one right-padded batch and must match the reference (each sequence run alone, as the
//! GENEB extractor runs it) to 1e-4 at every token and after pooling, on the CPU backend and on
//! wgpu (Mesa lavapipe in CI).
#![cfg(feature = "burn")]

use burn::tensor::{Int, Tensor, TensorData};
use geneb::checkpoint::{Checkpoint, safetensors};
use geneb::encoder::arch::{
    self, Arch, caduceus, caduceus::Caduceus, hyena, hyena::Hyena, janus::Janus,
};
use geneb::encoder::backend::{self, Compute};
use geneb::encoder::layers::long_conv::LongConv;
use std::path::{Path, PathBuf};

#[path = "support/layers.rs"]
mod layers;

const TOLERANCE: f32 = 1e-4;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models")
}

fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The checkpoint in a model folder: model.safetensors, else pytorch_model.bin (the real
/// anticapt checkpoints come as the latter, read by geneb's own PyTorch-zip reader).
fn read_checkpoint(path: &Path) -> Checkpoint {
    type Reader = fn(&str, Box<dyn geneb::checkpoint::ByteSource>) -> geneb::Result<Checkpoint>;
    let (path, read): (PathBuf, Reader) = if path.exists() {
        (path.to_path_buf(), safetensors::read)
    } else {
        (
            path.with_file_name("pytorch_model.bin"),
            geneb::checkpoint::pytorch::read,
        )
    };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    read(&path.display().to_string(), Box::new(bytes)).unwrap_or_else(|e| panic!("{e}"))
}

/// What the oracle computed: token ids per sequence, each sequence's token states one after
/// another, and the pooled (mean over tokens) embeddings.
struct Expected {
    ids: Vec<Vec<i64>>,
    pad_id: i64,
    states: Vec<f32>,
    pooled: Vec<f32>,
}

fn expected(dir: &Path) -> Expected {
    let meta = read_json(&dir.join("expected.json"));
    let ids = meta["input_ids"]
        .as_array()
        .expect("input_ids")
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect()
        })
        .collect();
    let mut arrays = read_checkpoint(&dir.join("expected.safetensors"));
    Expected {
        ids,
        pad_id: meta["pad_token_id"].as_i64().expect("pad_token_id"),
        states: arrays.take_any("last_hidden_state").unwrap().1,
        pooled: arrays.take_any("pooled").unwrap().1,
    }
}

/// The batch as the lead's encoder builds it: ids right-padded with the pad id, mask 1/0.
fn batch(expected: &Expected, compute: &Compute) -> (Tensor<2, Int>, Tensor<2>) {
    let longest = expected.ids.iter().map(Vec::len).max().unwrap();
    let n = expected.ids.len();
    let mut ids = vec![expected.pad_id; n * longest];
    let mut mask = vec![0f32; n * longest];
    for (i, row) in expected.ids.iter().enumerate() {
        ids[i * longest..i * longest + row.len()].copy_from_slice(row);
        mask[i * longest..i * longest + row.len()].fill(1.0);
    }
    (
        Tensor::from_data(TensorData::new(ids, [n, longest]), &compute.device),
        Tensor::from_data(TensorData::new(mask, [n, longest]), &compute.device),
    )
}

/// Max |a - b| over two equally long value lists.
fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "value counts differ");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
}

/// Max |difference| of the real tokens' states and of their masked means.
fn compare(expected: &Expected, states: Tensor<3>) -> (f32, f32) {
    let [_, longest, hidden] = states.dims();
    let got: Vec<f32> = states.into_data().try_to_vec::<f32>().unwrap();
    let (mut worst_state, mut worst_pooled) = (0f32, 0f32);
    let mut flat = expected.states.chunks_exact(hidden);
    for (i, row) in expected.ids.iter().enumerate() {
        let mut sum = vec![0f64; hidden];
        for t in 0..row.len() {
            let at = (i * longest + t) * hidden;
            let want = flat.next().expect("fixture has fewer states than tokens");
            for (c, (&g, &w)) in got[at..at + hidden].iter().zip(want).enumerate() {
                worst_state = worst_state.max((g - w).abs());
                sum[c] += g as f64;
            }
        }
        for (c, s) in sum.iter().enumerate() {
            let pooled = (*s / row.len() as f64) as f32;
            worst_pooled = worst_pooled.max((pooled - expected.pooled[i * hidden + c]).abs());
        }
    }
    assert!(flat.next().is_none(), "fixture has more states than tokens");
    (worst_state, worst_pooled)
}

/// The config and checkpoint of a model folder, read as the HF encoder reads them (a published
/// layout such as JanusDNA's `model_config.json` + `last.ckpt` included).
fn read_model(model_dir: &Path) -> (serde_json::Value, Checkpoint) {
    let mut files =
        geneb::encoder::pretrained::read_folder(model_dir).unwrap_or_else(|e| panic!("{e}"));
    arch::complete_published_layout(&mut files);
    let config = files.config().unwrap_or_else(|e| panic!("{e}"));
    let ckpt =
        geneb::encoder::pretrained::read_weights(&mut files).unwrap_or_else(|e| panic!("{e}"));
    (config, ckpt)
}

/// Runs the model folder through the registry, as the HF encoder does, and checks that
/// `architecture` is the one detected.
fn check(architecture: &str, model_dir: &Path, expected_dir: &Path, compute: &Compute) {
    let (config, mut ckpt) = read_model(model_dir);
    let spec = arch::detect(&config).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spec.name, architecture, "{}", model_dir.display());
    let model = (spec.load)(&config, &mut ckpt, compute).unwrap_or_else(|e| panic!("{e}"));
    ckpt.finish().unwrap_or_else(|e| panic!("{e}"));
    let expected = expected(expected_dir);
    let (ids, mask) = batch(&expected, compute);
    let started = std::time::Instant::now();
    let states = model.forward(ids, mask);
    assert_eq!(states.dims()[2], model.hidden_size());
    let (state, pooled) = compare(&expected, states);
    let seconds = started.elapsed().as_secs_f64(); // forward and read-back
    eprintln!(
        "{} on {}: max |Δ| token states {state:.2e}, pooled {pooled:.2e} ({seconds:.2} s)",
        expected_dir.display(),
        compute.adapter,
    );
    assert!(state <= TOLERANCE, "token states differ by {state}");
    assert!(pooled <= TOLERANCE, "pooled embeddings differ by {pooled}");
}

fn wgpu() -> Compute {
    pollster::block_on(backend::wgpu()).unwrap_or_else(|e| {
        panic!("{e}\n(the wgpu tests need a Vulkan driver: apt-get install mesa-vulkan-drivers)")
    })
}

#[test]
fn hyena_tiny_matches_the_reference_on_cpu() {
    let dir = fixtures().join("hyena/tiny");
    check("hyenadna", &dir, &dir, &backend::cpu());
}

/// Every hidden state of the folder `dir` on wgpu against the reference's (layers.json), on the
/// kernels its last layer's check has just compiled.
fn every_layer_on_wgpu(dir: &Path) {
    let spec = format!("hf:{}", dir.display());
    let model = pollster::block_on(geneb::encoder::Encoder::from_spec(
        &spec.parse().unwrap(),
        geneb::encoder::BackendKind::Wgpu,
    ))
    .unwrap();
    layers::check(dir, &model, "Wgpu");
}

#[test]
fn hyena_tiny_matches_the_reference_on_wgpu() {
    let dir = fixtures().join("hyena/tiny");
    check("hyenadna", &dir, &dir, &wgpu());
    every_layer_on_wgpu(&dir);
}

/// The two ways of computing the long convolution give the same states on one backend (each
/// is also held to PyTorch: the FFT on the CPU above, the direct form on wgpu).
#[test]
fn hyena_fft_and_direct_long_convolutions_agree() {
    let dir = fixtures().join("hyena/tiny");
    let config = read_json(&dir.join("config.json"));
    let compute = backend::cpu();
    let expected = expected(&dir);
    let states = |long_conv| {
        let mut ckpt = read_checkpoint(&dir.join("model.safetensors"));
        let model = Hyena::load(&config, &mut ckpt, &compute.device, long_conv).unwrap();
        let (ids, mask) = batch(&expected, &compute);
        model
            .forward(ids, mask)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap()
    };
    let fft = states(LongConv::Fft);
    let direct = states(LongConv::Direct);
    let worst = max_abs_diff(&fft, &direct);
    eprintln!("HyenaDNA FFT vs direct long convolution: max |Δ| {worst:.2e}");
    assert!(worst <= 1e-5, "FFT and direct differ by {worst}");
}

/// The real HyenaDNA-tiny weights (anticapt's first checkpoint) against the package's own
/// modeling code; skipped, saying so, when scripts/fetch-real-models.sh has not been run.
#[test]
fn hyena_real_tiny_matches_the_reference() {
    let root = std::env::var_os("GENEB_REAL_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/real-models"));
    let model_dir = root.join("hyenadna-tiny-anticapt-dataset1");
    if !model_dir.join("pytorch_model.bin").exists() {
        // `npm test` fetches them first and sets GENEB_REQUIRE_REAL_MODELS, so CI never skips.
        assert!(
            std::env::var_os("GENEB_REQUIRE_REAL_MODELS").is_none(),
            "no real HyenaDNA-tiny weights in {}: run bash scripts/fetch-real-models.sh",
            model_dir.display()
        );
        eprintln!(
            "SKIPPED: no real HyenaDNA-tiny weights in {} (run bash scripts/fetch-real-models.sh)",
            model_dir.display()
        );
        return;
    }
    let expected_dir = fixtures().join("hyena/anticapt-dataset1");
    check("hyenadna", &model_dir, &expected_dir, &backend::cpu());
    check("hyenadna", &model_dir, &expected_dir, &wgpu());

    // The whole chain from the folder: its tokenizer_config.json, the .bin weights, the
    // encoder's batching and pooling — the sequences the oracle tokenized with anticapt's code.
    let expected: serde_json::Value = read_json(&expected_dir.join("expected.json"));
    let sequences: Vec<String> = expected["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let spec = format!("hf:{}", model_dir.display());
    let encoder = pollster::block_on(geneb::encoder::Encoder::from_spec(
        &spec.parse().unwrap(),
        geneb::encoder::BackendKind::Cpu,
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    // One sequence per call, as the oracle ran them: in GENEB's batches of four, padding
    // would reach the shorter ones (tests/oracle/make_batched_pipelines.py checks that).
    let pooled: Vec<f32> = sequences
        .iter()
        .flat_map(|s| {
            let row = pollster::block_on(encoder.embed(std::slice::from_ref(s))).unwrap();
            row.iter().copied().collect::<Vec<f32>>()
        })
        .collect();
    let want = read_checkpoint(&expected_dir.join("expected.safetensors"))
        .take_any("pooled")
        .unwrap()
        .1;
    let worst = max_abs_diff(&pooled, &want);
    eprintln!("real HyenaDNA-tiny, hf: folder end to end: max |Δ| pooled {worst:.2e}");
    assert!(worst <= TOLERANCE, "pooled embeddings differ by {worst}");
}

#[test]
fn caduceus_ph_matches_the_reference_on_cpu() {
    let dir = fixtures().join("caduceus/ph");
    check("caduceus", &dir, &dir, &backend::cpu());
}

#[test]
fn caduceus_ps_matches_the_reference_on_cpu() {
    let dir = fixtures().join("caduceus/ps");
    check("caduceus", &dir, &dir, &backend::cpu());
}

/// `w` has the mid attention layer (masked per stream as the flash path masks it) and no
/// `final_mlp`; `wo` no attention layer and a `final_mlp` the extractor replaces by Identity.
#[test]
fn janus_matches_the_reference_on_cpu() {
    for variant in ["w", "wo"] {
        let dir = fixtures().join("janus").join(variant);
        check("janusdna", &dir, &dir, &backend::cpu());
    }
}

#[test]
fn janus_matches_the_reference_on_wgpu() {
    let compute = wgpu();
    for variant in ["w", "wo"] {
        let dir = fixtures().join("janus").join(variant);
        check("janusdna", &dir, &dir, &compute);
    }
    // And through the whole pipeline (tokenizer, pooling) at every K. The pipeline's sequences
    // at full length (their token states are checked just above, to 1,024 tokens) run on the CPU
    // in tests/hf_models.rs and on WebGPU in the page: on lavapipe they were half a minute more.
    every_layer_on_wgpu(&fixtures().join("janus/w"));
}

#[test]
fn janus_refuses_configs_it_cannot_honour() {
    let dir = fixtures().join("janus/w");
    let (config, _) = read_model(&dir);
    let device = backend::cpu().device;
    let load = |config: &serde_json::Value| {
        let (_, mut ckpt) = read_model(&dir);
        match Janus::load(config, &mut ckpt, &device) {
            Ok(_) => panic!("loading must fail"),
            Err(e) => e.to_string(),
        }
    };
    let with = |key: &str, value: serde_json::Value| {
        let mut changed = config.clone();
        changed[key] = value;
        load(&changed)
    };
    let err = with("layer_fusion", true.into());
    assert!(
        err.starts_with("config.json: 'layer_fusion' must be false"),
        "{err}"
    );
    let err = with("final_attention_class", "flash_attention_2".into());
    assert!(err.contains("'final_attention_class' must be"), "{err}");
    let err = with("num_experts_per_tok", 5.into());
    assert!(err.contains("'num_experts_per_tok' 5"), "{err}");
    // The mid attention layer moved: the checkpoint's layer 1 is not a Mamba layer.
    let err = with("attn_layer_offset", 100.into());
    assert!(err.contains("layers.1.mamba_module"), "{err}");
    let err = with("mamba_d_conv", 0.into());
    assert!(err.contains("'mamba_d_conv' is 0"), "{err}");
    let err = with("hidden_size", "32".into());
    assert!(err.contains("'hidden_size': invalid type"), "{err}");
    // The experts moved to the odd layers: every tensor the config now needs and the
    // checkpoint lacks is named at once (the reference's strict=False would run them random).
    let err = with("expert_layer_offset", 1.into());
    assert!(
        err.contains("the checkpoint lacks")
            && err.contains("layers.0.mamba_module.feed_forward_fwd.gate_proj.weight")
            && err.contains("strict=False"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The `{"config": …}` JanusDNA's training writes is read as GENEB's extractor reads it:
/// JanusDNAConfig's defaults under its keys, `bidirectional: "true,"` (the published yaml's
/// `true,`) as true; a `bidirectional` that reads false is refused by name.
#[test]
fn janus_reads_the_published_wrapped_config() {
    let dir = fixtures().join("janus/w");
    let (config, _) = read_model(&dir);
    assert_eq!(config["model_type"], "JanusDNA");
    assert_eq!(config["bidirectional"], "true,");
    assert!(config.get("pad_vocab_size_multiple").is_none());
    let mut one_way = config.clone();
    one_way["bidirectional"] = "False".into();
    let (_, mut ckpt) = read_model(&dir);
    let err = Janus::load(&one_way, &mut ckpt, &backend::cpu().device)
        .err()
        .expect("a one-way JanusDNA is not the published layout")
        .to_string();
    assert!(err.contains("'bidirectional' must be true"), "{err}");
}

#[test]
fn caduceus_matches_the_reference_on_wgpu() {
    let compute = wgpu();
    for variant in ["ph", "ps"] {
        let dir = fixtures().join("caduceus").join(variant);
        check("caduceus", &dir, &dir, &compute);
        every_layer_on_wgpu(&dir);
    }
}

#[test]
fn hyena_names_a_missing_or_misshaped_tensor() {
    let dir = fixtures().join("hyena/tiny");
    let config = read_json(&dir.join("config.json"));
    let device = backend::cpu().device;

    let mut shrunk = config.clone();
    shrunk["d_model"] = 16.into();
    let mut ckpt = read_checkpoint(&dir.join("model.safetensors"));
    let err = Hyena::load(&shrunk, &mut ckpt, &device, LongConv::Fft)
        .err()
        .expect("d_model 16 must fail");
    assert!(
        err.to_string()
            .contains("backbone.embeddings.word_embeddings.weight")
            && err.to_string().contains("shape"),
        "{err}"
    );

    let mut deeper = config.clone();
    deeper["n_layer"] = 3.into();
    let mut ckpt = read_checkpoint(&dir.join("model.safetensors"));
    let err = Hyena::load(&deeper, &mut ckpt, &device, LongConv::Fft)
        .err()
        .expect("3 layers must fail");
    assert!(err.to_string().contains("backbone.layers.2."), "{err}");

    let mut no_width = config;
    no_width.as_object_mut().unwrap().remove("d_model");
    let mut ckpt = read_checkpoint(&dir.join("model.safetensors"));
    let err = Hyena::load(&no_width, &mut ckpt, &device, LongConv::Fft)
        .err()
        .expect("no d_model must fail");
    assert!(
        err.to_string()
            .starts_with("config.json: missing field `d_model`"),
        "{err}"
    );
}

#[test]
fn caduceus_refuses_configs_it_cannot_honour() {
    let dir = fixtures().join("caduceus/ps");
    let config = read_json(&dir.join("config.json"));
    let device = backend::cpu().device;
    let load = |config: &serde_json::Value| {
        let mut ckpt = read_checkpoint(&dir.join("model.safetensors"));
        match Caduceus::load(config, &mut ckpt, &device) {
            Ok(_) => panic!("loading must fail"),
            Err(e) => e.to_string(),
        }
    };

    let mut plain = config.clone();
    plain["rcps"] = false.into();
    let err = load(&plain);
    assert!(
        err.contains("caduceus.backbone.embeddings.word_embeddings.weight"),
        "{err}"
    );

    let mut no_map = config.clone();
    no_map.as_object_mut().unwrap().remove("complement_map");
    assert!(load(&no_map).contains("complement_map"));

    let mut unfused = config.clone();
    unfused["fused_add_norm"] = false.into();
    let err = load(&unfused);
    assert!(
        err.starts_with("config.json: 'fused_add_norm' must be true"),
        "{err}"
    );

    let mut no_kernel = config.clone();
    no_kernel["ssm_cfg"]["d_conv"] = 0.into();
    assert!(load(&no_kernel).contains("ssm_cfg.d_conv must be at least 1"));

    let mut strategy = config;
    strategy["bidirectional_strategy"] = "concat".into();
    assert!(load(&strategy).contains("bidirectional_strategy 'concat'"));
}

#[test]
fn architectures_are_detected_from_config() {
    let hyena_config = read_json(&fixtures().join("hyena/tiny/config.json"));
    assert!(hyena::matches(&hyena_config));
    let bert = serde_json::json!({"model_type": "bert", "architectures": ["BertForMaskedLM"]});
    assert!(!hyena::matches(&bert));
    let by_class = serde_json::json!({"architectures": ["HyenaDNAForCausalLM"]});
    assert!(hyena::matches(&by_class));
    for variant in ["ph", "ps"] {
        let config = read_json(
            &fixtures()
                .join("caduceus")
                .join(variant)
                .join("config.json"),
        );
        assert!(caduceus::matches(&config) && !hyena::matches(&config));
        assert!(!caduceus::matches(&hyena_config));
    }
    assert!(!caduceus::matches(&bert));
}

/// eccDNAMamba against GenAI-Lab's `BiMambaForMaskedLM` over mamba_ssm 2.2.4's reference paths
/// (tests/oracle/make_eccdnamamba_fixtures.py): from the model folder (its BPE tokenizer, [CLS]
/// first), in the extractor's batches of 4 in file order, whose padding the backward stream
/// reads, on the CPU and on wgpu; a config asking for a layer the checkpoint lacks is refused in
/// one line naming the tensor.
#[test]
fn eccdnamamba_embeds_as_its_extractor_on_cpu_and_wgpu() {
    use geneb::encoder::{BackendKind, Encoder};
    let dir = fixtures().join("eccdnamamba");
    let expected = read_json(&dir.join("pipeline.json"));
    let sequences: Vec<String> = serde_json::from_value(expected["sequences"].clone()).unwrap();
    let pooled: Vec<Vec<f32>> = serde_json::from_value(expected["pooled"].clone()).unwrap();
    let load = |dir: &Path, kind| {
        let spec = format!("hf:{}", dir.display());
        pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), kind))
    };
    for kind in [BackendKind::Cpu, BackendKind::Wgpu] {
        let started = std::time::Instant::now();
        let encoder = load(&dir, kind).unwrap();
        assert_eq!(
            encoder.describe().recipe.expect("a recipe").name,
            "eccdnamamba"
        );
        let got = pollster::block_on(encoder.embed(&sequences)).unwrap();
        let worst = max_abs_diff(got.as_slice().unwrap(), &pooled.concat());
        eprintln!(
            "eccdnamamba on {kind:?}: max |geneb − PyTorch| = {worst:.2e} ({:.1} s)",
            started.elapsed().as_secs_f64()
        );
        assert!(worst <= TOLERANCE, "{kind:?}: max |Δ| = {worst}");
        // Every hidden state on wgpu from this load (the CPU's: tests/hf_models.rs).
        if kind == BackendKind::Wgpu {
            layers::check(&dir, &encoder, "Wgpu");
        }
    }

    let broken = std::env::temp_dir().join(format!("geneb-eccdnamamba-{}", std::process::id()));
    std::fs::create_dir_all(&broken).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, broken.join(path.file_name().unwrap())).unwrap();
    }
    // Through geneb's reader: transformers wrote `Infinity` into it, which JSON lacks.
    let mut files = geneb::checkpoint::ModelFiles::new("eccdnamamba");
    files.insert(
        "config.json",
        std::fs::read(dir.join("config.json")).unwrap(),
    );
    let mut config = files.config().unwrap();
    config["n_layer"] = 3.into();
    std::fs::write(broken.join("config.json"), config.to_string()).unwrap();
    let error = load(&broken, BackendKind::Cpu)
        .err()
        .expect("refused")
        .to_string();
    std::fs::remove_dir_all(&broken).unwrap();
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.contains("mamba_forward.backbone.layers.2.mlp.fc2.weight"),
        "{error}"
    );
}

/// The published shape (d_model 768, 24 Mamba-2 layers, 537M parameters) with random weights on
/// one 1,000-nt sequence against the reference in f32, and geneb's CPU time beside PyTorch's.
/// Run: `make_eccdnamamba_fixtures.py --real-shape DIR`, then
/// GENEB_ECCDNAMAMBA_REAL_SHAPE=DIR cargo test --test ssm_models -- --ignored eccdnamamba_real
#[test]
#[ignore = "needs the oracle's --real-shape folder (2.1 GB)"]
fn eccdnamamba_real_shape_matches_the_reference() {
    use geneb::encoder::{BackendKind, Encoder};
    let dir = PathBuf::from(
        std::env::var("GENEB_ECCDNAMAMBA_REAL_SHAPE").expect("GENEB_ECCDNAMAMBA_REAL_SHAPE=DIR"),
    );
    let expected = read_json(&dir.join("pipeline.json"));
    let sequences: Vec<String> = serde_json::from_value(expected["sequences"].clone()).unwrap();
    let pooled: Vec<Vec<f32>> = serde_json::from_value(expected["pooled"].clone()).unwrap();
    let spec = format!("hf:{}", dir.display());
    let encoder =
        pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu)).unwrap();
    let started = std::time::Instant::now();
    let got = pollster::block_on(encoder.embed(&sequences)).unwrap();
    let seconds = started.elapsed().as_secs_f64() / sequences.len() as f64;
    let worst = max_abs_diff(got.as_slice().unwrap(), &pooled.concat());
    eprintln!(
        "eccDNAMamba real shape: max |geneb − PyTorch| = {worst:.2e}; geneb {seconds:.1} s per \
         sequence on the CPU, PyTorch {:.1} s",
        expected["torch_f32_seconds_per_sequence"].as_f64().unwrap()
    );
    assert!(worst <= 1e-3, "max |Δ| = {worst}");
}
