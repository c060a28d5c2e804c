//! The transformer architectures against independent PyTorch outputs: tiny random checkpoints
//! in the genuine HF layout (`tests/oracle/make_transformer_fixtures.py`: transformers' BERT,
//! transformers' ESM with NT-v2's SwiGLU, a DNABERT-2 module after MosaicBERT's code), run on
//! the CPU backend and on wgpu (Mesa lavapipe in CI).
#![cfg(feature = "burn")]

use burn::tensor::{Int, Tensor, TensorData};
use geneb::checkpoint::{Checkpoint, safetensors};
use geneb::encoder::arch::{self, Arch, bert::Bert, nt::NucleotideTransformer};
use geneb::encoder::{BackendKind, Encoder, backend};
use serde::Deserialize;
use std::path::PathBuf;

#[path = "support/layers.rs"]
mod layers;

#[derive(Deserialize)]
struct Expected {
    input_ids: Vec<Vec<i64>>,
    attention_mask: Vec<Vec<i64>>,
    pooled: Vec<Vec<f32>>,
    last_hidden_state_first: Vec<Vec<f32>>,
}

fn fixture(name: &str) -> (serde_json::Value, Checkpoint, Expected) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/models")
        .join(name);
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{name}/{f}: {e}"));
    let config = serde_json::from_slice(&read("config.json")).unwrap();
    let ckpt = safetensors::read("model.safetensors", Box::new(read("model.safetensors"))).unwrap();
    let expected = serde_json::from_slice(&read("expected.json")).unwrap();
    (config, ckpt, expected)
}

fn compute(kind: BackendKind) -> backend::Compute {
    match kind {
        BackendKind::Cpu => backend::cpu(),
        BackendKind::Wgpu => pollster::block_on(backend::wgpu())
            .unwrap_or_else(|e| panic!("{e} (install mesa-vulkan-drivers for lavapipe)")),
    }
}

/// Runs `forward` on the fixture's ids and compares the final hidden states of the first
/// sequence and every sequence's masked mean with PyTorch's.
fn check(
    name: &str,
    kind: BackendKind,
    forward: impl Fn(
        &serde_json::Value,
        &mut Checkpoint,
        &burn::tensor::Device,
        Tensor<2, Int>,
        Tensor<2>,
    ) -> Tensor<3>,
) {
    let (config, mut ckpt, expected) = fixture(name);
    let device = compute(kind).device;
    let (batch, tokens) = (expected.input_ids.len(), expected.input_ids[0].len());
    let ids: Vec<i64> = expected.input_ids.concat();
    let mask: Vec<f32> = expected
        .attention_mask
        .concat()
        .iter()
        .map(|&m| m as f32)
        .collect();
    let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [batch, tokens]), &device);
    let mask_t = Tensor::<2>::from_data(TensorData::new(mask.clone(), [batch, tokens]), &device);
    let hidden = forward(&config, &mut ckpt, &device, ids, mask_t);
    ckpt.finish()
        .expect("every tensor consumed or deliberately skipped");
    let width = hidden.dims()[2];
    let values: Vec<f32> = hidden.into_data().try_to_vec().unwrap();
    let mut worst = 0f32;
    // The first sequence's own tokens: no extractor pools the states of padding, which
    // transformers computes differently (an ESM padded query, a decoder's left padding).
    let first_sequence = expected.last_hidden_state_first.iter().enumerate();
    for (t, row) in first_sequence.filter(|(t, _)| mask[*t] == 1.0) {
        for (d, want) in row.iter().enumerate() {
            worst = worst.max((values[t * width + d] - want).abs());
        }
    }
    for (b, want) in expected.pooled.iter().enumerate() {
        let count: f32 = mask[b * tokens..(b + 1) * tokens].iter().sum();
        for (d, want) in want.iter().enumerate() {
            let sum: f32 = (0..tokens)
                .map(|t| values[(b * tokens + t) * width + d] * mask[b * tokens + t])
                .sum();
            worst = worst.max((sum / count - want).abs());
        }
    }
    assert!(
        worst <= 1e-4,
        "{name} on {kind:?}: max |geneb − PyTorch| = {worst}"
    );
    assert!(
        worst > 0.0 || values.iter().any(|v| *v != 0.0),
        "{name}: outputs are all zero"
    );
}

fn bert(kind: BackendKind, name: &str) {
    check(name, kind, |config, ckpt, device, ids, mask| {
        Bert::load(config, ckpt, device).unwrap().forward(ids, mask)
    });
}

fn nt(kind: BackendKind) {
    check("nt_v2", kind, |config, ckpt, device, ids, mask| {
        NucleotideTransformer::load(config, ckpt, device)
            .unwrap()
            .forward(ids, mask)
    });
}

/// transformers' LlamaForCausalLM (grouped-query attention, Llama 3 rope scaling) and
/// MistralForCausalLM (a sliding window inside the inputs, left padding) on tiny checkpoints.
#[test]
fn llama_and_mistral_match_transformers_on_cpu_and_wgpu() {
    for kind in [BackendKind::Cpu, BackendKind::Wgpu] {
        check("llama", kind, |config, ckpt, device, ids, mask| {
            let family = &geneb::encoder::family::LLAMA;
            let decoder = arch::llama::Llama::load(config, ckpt, device, family, None).unwrap();
            decoder.forward(ids, mask)
        });
        check("mistral", kind, |config, ckpt, device, ids, mask| {
            let decoder = arch::mistral::load(config, ckpt, device).unwrap();
            decoder.forward(ids, mask)
        });
    }
}

/// OLMo's own code (`ai2-olmo`) as Omni-DNA configures it: fused `att_proj` and `ff_proj`
/// (SwiGLU's gate the second half), non-affine LayerNorms, rotary; here with grouped-query
/// attention and `clip_qkv` too.
#[test]
fn olmo_matches_olmo_code_on_cpu_and_wgpu() {
    for kind in [BackendKind::Cpu, BackendKind::Wgpu] {
        check("olmo", kind, |config, ckpt, device, ids, mask| {
            arch::olmo::Olmo::load(config, ckpt, device)
                .unwrap()
                .forward(ids, mask)
        });
    }
}

/// transformers' own GPT2LMHeadModel (dnagpt's gpt2_gene models): learned positions, Conv1D
/// weights stored transposed, the fused c_attn split into queries, keys and values, biases.
#[test]
fn gpt2_matches_transformers_on_cpu_and_wgpu() {
    for kind in [BackendKind::Cpu, BackendKind::Wgpu] {
        check("gpt2", kind, |config, ckpt, device, ids, mask| {
            arch::gpt2::Gpt2::load(config, ckpt, device)
                .unwrap()
                .forward(ids, mask)
        });
    }
}

/// transformers' own ESM as Nucleotide Transformer v1 configures it: learned absolute
/// positions, token dropout's rescaling, a GELU feed-forward with biases.
#[test]
fn nt_v1_matches_transformers_esm_with_absolute_positions_on_cpu_and_wgpu() {
    for kind in [BackendKind::Cpu, BackendKind::Wgpu] {
        check("nt_v1", kind, |config, ckpt, device, ids, mask| {
            NucleotideTransformer::load(config, ckpt, device)
                .unwrap()
                .forward(ids, mask)
        });
    }
}

#[test]
fn bert_matches_transformers_on_cpu_and_wgpu() {
    bert(BackendKind::Cpu, "bert");
    bert(BackendKind::Wgpu, "bert");
}

#[test]
fn dnabert2_alibi_glu_matches_reference_on_cpu_and_wgpu() {
    bert(BackendKind::Cpu, "dnabert2");
    bert(BackendKind::Wgpu, "dnabert2");
}

#[test]
fn nt_v2_matches_transformers_esm_with_swiglu_on_cpu_and_wgpu() {
    nt(BackendKind::Cpu);
    nt(BackendKind::Wgpu);
}

#[test]
fn a_mismatched_checkpoint_is_refused_naming_the_tensor() {
    let (config, mut ckpt, _) = fixture("bert");
    let mut wrong = config.clone();
    wrong["intermediate_size"] = serde_json::json!(65);
    let err = Bert::load(&wrong, &mut ckpt, &backend::cpu().device)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("intermediate.dense.weight") && err.contains("[65, 32]"),
        "{err}"
    );
    // An NT checkpoint loaded as BERT: no BERT embeddings, said plainly.
    let (_, mut nt_ckpt, _) = fixture("nt_v2");
    let err = Bert::load(&config, &mut nt_ckpt, &backend::cpu().device)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("no BERT embeddings"), "{err}");
    // GPT-2: a config whose n_inner disagrees with the Conv1D weights names the tensor in one
    // line; a cross-attention decoder is refused by its key.
    let (config, mut ckpt, _) = fixture("gpt2");
    let device = &backend::cpu().device;
    let mut wrong = config.clone();
    wrong["n_inner"] = serde_json::json!(65);
    let err = arch::gpt2::Gpt2::load(&wrong, &mut ckpt, device)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("h.0.mlp.c_fc.weight") && err.contains("[32, 65]") && !err.contains('\n'),
        "{err}"
    );
    wrong = config.clone();
    wrong["add_cross_attention"] = serde_json::json!(true);
    let err = arch::gpt2::Gpt2::load(&wrong, &mut ckpt, device)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("'add_cross_attention'"), "{err}");
}

#[derive(Deserialize)]
struct Pipeline {
    sequences: Vec<String>,
    pooled: Vec<Vec<f32>>,
}

/// The whole chain from the model folder alone: the HF tokenizer files (truncation to
/// model_max_length included), the weights, batching by length, masked-mean pooling.
fn pipeline(name: &str, kind: BackendKind) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/models")
        .join(name);
    pipeline_in(&dir, kind);
}

fn pipeline_in(dir: &std::path::Path, kind: BackendKind) {
    let name = dir.display();
    let expected: Pipeline =
        serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap();
    let spec = format!("hf:{}", dir.display());
    let encoder = pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), kind)).unwrap();
    let sequences: Vec<String> = expected
        .sequences
        .iter()
        .map(|s| geneb::input::normalize_sequence(s).unwrap())
        .collect();
    let got = pollster::block_on(encoder.embed(&sequences)).unwrap();
    assert_eq!(got.nrows(), expected.pooled.len());
    let mut worst = 0f32;
    for (row, want) in got.rows().into_iter().zip(&expected.pooled) {
        for (a, b) in row.iter().zip(want) {
            worst = worst.max((a - b).abs());
        }
    }
    eprintln!("{name} pipeline on {kind:?}: max |geneb − PyTorch| = {worst:.2e}");
    assert!(
        worst <= 1e-4,
        "{name} pipeline on {kind:?}: max |Δ| = {worst}"
    );
    let described = encoder.describe();
    assert!(described.parameters.unwrap() > 0 && described.architecture.is_some());
    // On wgpu every hidden state too, from this load and one pass: the GPU kernels of each K
    // (the CPU's are checked with the single-layer runs below).
    if kind == BackendKind::Wgpu && dir.join("layers.json").exists() {
        layers::check(dir, &encoder, "Wgpu");
    }
}

#[test]
fn model_folders_embed_like_the_reference_extractors() {
    for name in [
        "bert",
        "dnabert2",
        "nt_v2",
        "hyena/tiny",
        "caduceus/ph",
        "caduceus/ps",
        "plantcaduceus",
        "gena/base",
        "gena/t2t-multi",
        "gena/lastln",
        "mutbert",
        "genomics_fm",
        "deepgene",
        "dnagpt",
        // dnagpt.py's newest version (dna_gpt3b_m's row): `<R>` first, ln_f's states pooled.
        "dnagpt_hidden",
        // As JanusDNA's training saves them: `{"config": …}` and a PyTorch Lightning last.ckpt.
        "janus/w",
        "janus/wo",
        // GENEB's own SpliceBERT extractor: windows of 1,024 nt plus an end-anchored one.
        "splicebert",
        "llama",
        // bf16 weights over two shards and their index, as the large checkpoints are stored.
        "llama_sharded_bf16",
        // metagene.py: the mean over every position of its batches of 4.
        "metagene",
        // genomeocean.py: left padding, its own max_length.
        "mistral",
        "nt_v1",
        // omnidna.py: cut at 250 tokens.
        "olmo",
        // evo.py: bytes, Hyena blocks with modal filters and a rotary attention block.
        "evo",
        // The common recipe, a byte-level BPE tokenizer.json, cut at 64 positions.
        "gpt2",
        // generator.py: trimmed to whole 6-mers, `<s>` written before them, DNAKmerTokenizer.
        "generator",
        // biofm.py: no mask, left padding, the state at column (non-pad count − 2), batches of 4.
        "biofm",
        // nt.py on transformers' ESM as AgroNT's repository lays it out: pytorch_model.bin,
        // <eos> and <bos> in vocab.txt past the embedding table, no <eos> appended.
        "agro_nt",
    ] {
        pipeline(name, BackendKind::Cpu);
    }
    pipeline("bert", BackendKind::Wgpu);
    pipeline("dnabert2", BackendKind::Wgpu);
    pipeline("llama", BackendKind::Wgpu);
    pipeline("llama_sharded_bf16", BackendKind::Wgpu);
    pipeline("mistral", BackendKind::Wgpu);
    pipeline("nt_v1", BackendKind::Wgpu);
    pipeline("olmo", BackendKind::Wgpu);
    pipeline("gpt2", BackendKind::Wgpu);
    pipeline("nt_v2", BackendKind::Wgpu);
    pipeline("plantcaduceus", BackendKind::Wgpu);
    pipeline("gena/lastln", BackendKind::Wgpu);
    pipeline("mutbert", BackendKind::Wgpu);
    pipeline("genomics_fm", BackendKind::Wgpu);
    pipeline("deepgene", BackendKind::Wgpu);
    pipeline("dnagpt", BackendKind::Wgpu);
    pipeline("dnagpt_hidden", BackendKind::Wgpu);
    pipeline("splicebert", BackendKind::Wgpu);
    pipeline("evo", BackendKind::Wgpu);
    pipeline("generator", BackendKind::Wgpu);
    pipeline("biofm", BackendKind::Wgpu);
    pipeline("agro_nt", BackendKind::Wgpu);
}

/// `?layer=K` against the reference's hidden states (layers.json), every K from one sweep, and
/// the sweep against single-layer runs (`sweep_equals_single_runs`).
fn layers_in(dir: &std::path::Path, kind: BackendKind) {
    let swept = sweep_equals_single_runs(dir, kind, layers::reference_sequences(dir));
    layers::assert_match_reference(dir, &swept, &format!("{kind:?}"));
}

/// Every layer of the model in `dir` embedded in one sweep (`--layers all`) of the first
/// `sequences` of its pipeline.json, checked against single-layer runs: a middle layer (a pass
/// stopped early) and the last, which is also today's embedding bit for bit. Returns the sweep.
fn sweep_equals_single_runs(
    dir: &std::path::Path,
    kind: BackendKind,
    sequences: usize,
) -> Vec<ndarray::Array2<f32>> {
    let sequences = layers::sequences(dir, sequences);
    let load = |options: &str| {
        let spec = format!("hf:{}{options}", dir.display());
        pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), kind)).unwrap()
    };
    let model = load("");
    let swept = layers::sweep(&model, &sequences);
    let last = swept.len() - 1;
    let middle = last / 2;
    let today = pollster::block_on(model.embed(&sequences)).unwrap();
    assert_eq!(
        swept[last], today,
        "the sweep's last layer is today's embedding"
    );
    for (options, index) in [("?layer=-1", last), (&format!("?layer={middle}"), middle)] {
        let single = pollster::block_on(load(options).embed(&sequences)).unwrap();
        assert_eq!(
            single, swept[index],
            "{options}: the sweep's equals the single run's"
        );
    }
    swept
}

#[test]
fn hidden_layers_match_the_reference_and_a_sweep_the_single_layer_runs() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models");
    for name in [
        "bert",
        "dnabert2",
        "nt_v2",
        "llama",
        "mistral",
        "hyena/tiny",
        "gpt2",
        "lucaone",
    ] {
        layers_in(&dir.join(name), BackendKind::Cpu);
    }
    for name in ["bert", "llama"] {
        layers_in(&dir.join(name), BackendKind::Wgpu);
    }
}

/// The other architectures against their reference code (make_layer_fixtures.py): its own
/// `output_hidden_states` where it has one (OLMo, DeepGene, Caduceus), else the blocks as the
/// architecture's file in src/encoder/arch/ defines them, from hooks on the reference's
/// modules; on the CPU. On wgpu each is checked where its kernels are already compiled (tens of
/// seconds each on lavapipe): `model_folders_embed_like_the_reference_extractors` here,
/// tests/ssm_models.rs for HyenaDNA, Caduceus and eccDNAMamba, tests/enformer.rs for Enformer
/// and SPACE.
#[test]
fn hidden_layers_of_the_other_architectures_match_their_reference_code() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models");
    for name in [
        "olmo",
        "deepgene",
        "caduceus/ph",
        "caduceus/ps",
        "dnagpt",
        "dnagpt_hidden",
        "janus/w",
        "eccdnamamba",
        "evo",
        "enformer",
        "space",
    ] {
        layers_in(&dir.join(name), BackendKind::Cpu);
    }
}

/// On a GPU a batch runs at a shape from a small set (more masked columns, rows repeating the
/// first sequence) so new lengths reuse compiled pipelines and buffers: a sequence embedded
/// alone, at its own padded shape, gets what it gets in a batch of others at another shape.
#[test]
fn wgpu_embeddings_do_not_depend_on_the_shape_a_batch_runs_at() {
    for name in ["dnabert2", "nt_v2", "bert"] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/models")
            .join(name);
        let expected: Pipeline =
            serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap();
        let spec = format!("hf:{}", dir.display());
        let encoder = pollster::block_on(Encoder::from_spec(
            &spec.parse().unwrap(),
            BackendKind::Wgpu,
        ))
        .unwrap();
        let sequences: Vec<String> = expected
            .sequences
            .iter()
            .map(|s| geneb::input::normalize_sequence(s).unwrap())
            .collect();
        let together = pollster::block_on(encoder.embed(&sequences)).unwrap();
        for (i, sequence) in sequences.iter().enumerate() {
            let alone = pollster::block_on(encoder.embed(std::slice::from_ref(sequence))).unwrap();
            let worst = alone
                .row(0)
                .iter()
                .zip(together.row(i))
                .fold(0f32, |worst, (a, b)| worst.max((a - b).abs()));
            assert!(
                worst <= 1e-6,
                "{name}, sequence {i}: alone vs batched, max |Δ| = {worst}"
            );
        }
    }
}

/// SpliceBERT as `harness/extractors/splicebert.py` embeds it (tests/oracle/
/// make_splicebert_fixtures.py ran that file): the raw sequences (lower case, RNA, IUPAC
/// codes) normalised by the encoder itself, 300 to 2,600 nt in windows of 1,024 every 512 plus
/// one ending at the end, the mean of the windows; nothing counted as truncated. A character
/// outside IUPAC is one line naming the sequence, as the reference raises.
#[test]
fn splicebert_embeds_as_its_extractor_windows_and_normalises() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models/splicebert");
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap();
    let raw: Vec<String> = expected["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let encoder = pollster::block_on(Encoder::from_spec(
        &format!("hf:{}", dir.display()).parse().unwrap(),
        BackendKind::Cpu,
    ))
    .unwrap();
    let got = pollster::block_on(encoder.embed(&raw)).unwrap();
    let mut worst = 0f32;
    for (row, want) in got
        .rows()
        .into_iter()
        .zip(expected["pooled"].as_array().unwrap())
    {
        for (a, b) in row.iter().zip(want.as_array().unwrap()) {
            worst = worst.max((a - b.as_f64().unwrap() as f32).abs());
        }
    }
    assert!(worst <= 1e-4, "raw sequences: max |Δ| = {worst}");
    assert_eq!(encoder.truncated(&raw), 0);
    let described = encoder.describe();
    let recipe = described.recipe.expect("a recipe");
    assert_eq!(recipe.name, "splicebert");
    assert_eq!(recipe.reference, "harness/extractors/splicebert.py");
    assert!(
        described.truncation.contains("plus one ending"),
        "{}",
        described.truncation
    );
    let err = pollster::block_on(encoder.embed(&["ACGTXACGT".to_string()]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'ACGTXACGT'") && err.contains("'X'") && !err.contains('\n'),
        "{err}"
    );
}

/// Genomics-FM is told from DNABERT-2 by its checkpoint alone (a position table beside the fused
/// `Wqkv`), and pooled by [CLS] as its extractor pools: the masked mean or ALiBi would miss the
/// fixture's pooled outputs above.
#[test]
fn genomics_fm_is_recognised_by_its_position_table_and_pooled_by_cls() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models");
    let described = |name: &str| {
        let spec = format!("hf:{}", dir.join(name).display());
        pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu))
            .unwrap()
            .describe()
    };
    let genomics_fm = described("genomics_fm");
    assert_eq!(genomics_fm.pooling, arch::Pooling::ClsToken.describe());
    assert!(
        genomics_fm
            .architecture
            .as_deref()
            .unwrap()
            .starts_with("Genomics-FM"),
        "{:?}",
        genomics_fm.architecture
    );
    let dnabert2 = described("dnabert2");
    assert_eq!(dnabert2.pooling, arch::Pooling::MaskedMean.describe());
    let bert = arch::list().into_iter().find(|a| a.name == "bert").unwrap();
    assert!(bert.poolings.contains(&arch::Pooling::ClsToken));
}

/// DNAGPT's tokenizer gives the published `KmerTokenizer`'s ids for its 6-mers, with and without
/// dynamic k-mers, and a folder holding only a published weights file gets the config.json its
/// name implies (dna_gpt0.1b_h: 6-mers without dynamic ones, the vocabulary its class counts).
#[test]
fn dnagpt_tokenizes_as_its_kmer_tokenizer_and_its_published_file_names_its_shape() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models/dnagpt");
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("tokenizer_ids.json")).unwrap()).unwrap();
    let sequences: Vec<String> = serde_json::from_value(expected["sequences"].clone()).unwrap();
    for dynamic in [false, true] {
        let mut files = geneb::checkpoint::ModelFiles::new("dnagpt");
        let config =
            serde_json::json!({"model_type": "dnagpt", "kmer": 6, "dynamic_kmer": dynamic});
        files.insert("config.json", config.to_string().into_bytes());
        let choice = arch::detect(&files.config().unwrap()).unwrap().tokenizer;
        let tokenizer = geneb::tokenize::Tokenizer::from_files(&files, choice).unwrap();
        let key = dynamic.to_string();
        assert_eq!(
            tokenizer.vocab_size() as u64,
            expected["vocab_size"][&key].as_u64().unwrap()
        );
        let want: Vec<Vec<u32>> = serde_json::from_value(expected["ids"][&key].clone()).unwrap();
        for (sequence, want) in sequences.iter().zip(want) {
            assert_eq!(
                tokenizer.encode(sequence, None),
                want,
                "{sequence} (dynamic {dynamic})"
            );
        }
    }
    let mut published = geneb::checkpoint::ModelFiles::new("dna_gpt0.1b_h");
    published.insert("dna_gpt0.1b_h.pth", Vec::new());
    arch::complete_published_layout(&mut published);
    let config = published.config().unwrap();
    assert_eq!(arch::detect(&config).unwrap().name, "dnagpt");
    assert_eq!(config["vocab_size"], expected["vocab_size"]["false"]);
    assert_eq!(config["max_len"], 4096);
    // dna_gpt3b_m: 60 layers of 2,048, dynamic 6-mers after `<R>` (reserved token 21), as
    // dnagpt.py's newest version writes them.
    let mut published = geneb::checkpoint::ModelFiles::new("dna_gpt3b_m");
    published.insert("dna_gpt3b_m.pth", Vec::new());
    arch::complete_published_layout(&mut published);
    let config = published.config().unwrap();
    assert_eq!(
        (
            config["num_layers"].as_u64(),
            config["embedding_dim"].as_u64()
        ),
        (Some(60), Some(2048))
    );
    assert_eq!(
        (&config["output"], &config["prompt"]),
        (&serde_json::json!("hidden"), &serde_json::json!("R"))
    );
    let choice = arch::detect(&config).unwrap().tokenizer;
    let tokenizer = geneb::tokenize::Tokenizer::from_files(&published, choice).unwrap();
    let want: Vec<Vec<u32>> = serde_json::from_value(expected["ids"]["true"].clone()).unwrap();
    for (sequence, want) in sequences.iter().zip(want) {
        assert_eq!(
            tokenizer.encode(sequence, None),
            [vec![21], want].concat(),
            "{sequence}"
        );
    }
}

/// DeepGene is a RoFormer (`model_type` "roformer"), its ids after [CLS] [SEP] as its extractor
/// writes them (the fixture's tokenizer.json would put [SEP] last), pooled by the masked mean.
#[test]
fn deepgene_is_a_roformer_with_its_extractors_special_tokens() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models/deepgene");
    let spec = format!("hf:{}", dir.display());
    let described =
        pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu))
            .unwrap()
            .describe();
    assert_eq!(described.pooling, arch::Pooling::MaskedMean.describe());
    assert!(
        described
            .architecture
            .as_deref()
            .unwrap()
            .starts_with("DeepGene"),
        "{:?}",
        described.architecture
    );
    let mut files = geneb::checkpoint::ModelFiles::new("deepgene");
    for file in ["config.json", "tokenizer.json"] {
        files.insert(file, std::fs::read(dir.join(file)).unwrap());
    }
    let choice = arch::detect(&files.config().unwrap()).unwrap().tokenizer;
    let tokenizer = geneb::tokenize::Tokenizer::from_files(&files, choice).unwrap();
    let sequence = "ACGTTGCA".repeat(20);
    let ids = tokenizer.encode(&sequence, None);
    assert!(ids.len() > 3 && ids[..2] == [1, 2], "{ids:?}");
    assert!(
        !ids[2..].contains(&2),
        "no [SEP] after the sequence: {ids:?}"
    );
    // Truncation keeps both leading special tokens.
    assert_eq!(tokenizer.encode(&sequence, Some(3)), ids[..3]);
}

/// LucaOne against its published code (`lucaone` 1.1.1, tests/oracle/make_lucaone_fixtures.py):
/// the tokenizer's ids for `seq_type="gene"` (case, U, IUPAC codes as N, the cut at
/// `max_position_embeddings` with [SEP] kept), the embeddings on the CPU and on wgpu in batches
/// with padding, and a config asking for a layer the checkpoint lacks refused in one line, exit 2.
#[test]
fn lucaone_embeds_as_its_extractor_on_cpu_and_wgpu() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models/lucaone");
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap();
    let sequences: Vec<String> = serde_json::from_value(expected["sequences"].clone()).unwrap();
    let ids: Vec<Vec<u32>> = serde_json::from_value(expected["input_ids"].clone()).unwrap();
    let mut files = geneb::checkpoint::ModelFiles::new("lucaone");
    files.insert(
        "config.json",
        std::fs::read(dir.join("config.json")).unwrap(),
    );
    let config = files.config().unwrap();
    let spec = arch::detect(&config).unwrap();
    assert_eq!(spec.name, "lucaone");
    let tokenizer = geneb::tokenize::Tokenizer::from_files(&files, spec.tokenizer).unwrap();
    let max_length = config["max_position_embeddings"].as_u64().unwrap() as usize;
    for (sequence, want) in sequences.iter().zip(&ids) {
        assert_eq!(
            &tokenizer.encode(sequence, Some(max_length)),
            want,
            "{sequence}"
        );
    }
    pipeline("lucaone", BackendKind::Cpu);
    pipeline("lucaone", BackendKind::Wgpu);

    let broken = std::env::temp_dir().join(format!("geneb-lucaone-{}", std::process::id()));
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::copy(
        dir.join("model.safetensors"),
        broken.join("model.safetensors"),
    )
    .unwrap();
    let mut three_layers = config.clone();
    three_layers["num_hidden_layers"] = 3.into();
    std::fs::write(broken.join("config.json"), three_layers.to_string()).unwrap();
    let task =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/fixtures/e2e_gc_vs_at.csv");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(["eval", "--model", &format!("hf:{}", broken.display())])
        .args([
            "--task",
            task.to_str().unwrap(),
            "--regimes",
            "full",
            "--quiet",
        ])
        .env("GENEB_CACHE", broken.join("cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    std::fs::remove_dir_all(&broken).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("encoder.layers.2.fc2.weight") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

/// Random checkpoints of the real models' shapes (SpliceBERT-1024nt, PlantCaduceus_l32,
/// GENA-LM bert-base-t2t-multi, MutBERT, Genomics-FM, DeepGene), too large to commit: `python3
/// tests/oracle/make_transformer_fixtures.py --same-shape DIR`, `make_plantcaduceus_fixtures.py
/// --same-shape DIR/plantcaduceus`, `make_gena_fixtures.py --same-shape DIR`,
/// `make_mutbert_fixtures.py --same-shape DIR`, `make_genomics_fm_fixtures.py --same-shape
/// DIR`, `make_deepgene_fixtures.py --same-shape DIR` and `make_dnagpt_fixtures.py --same-shape
/// DIR` write them, then `GENEB_SAME_SHAPE=DIR cargo test --test hf_models -- --ignored`
/// (`GENEB_SAME_SHAPE_MODELS=deepgene,dnagpt` for some of them).
#[test]
#[ignore = "needs the same-shape checkpoints the oracle scripts write (hundreds of MB)"]
fn same_shape_checkpoints_embed_like_the_published_code() {
    let root = PathBuf::from(
        std::env::var_os("GENEB_SAME_SHAPE").expect("GENEB_SAME_SHAPE names the folder"),
    );
    let all = "splicebert,plantcaduceus,gena,mutbert,genomics-fm,deepgene,dnagpt";
    let chosen = std::env::var("GENEB_SAME_SHAPE_MODELS").unwrap_or_else(|_| all.to_string());
    for name in chosen.split(',') {
        assert!(
            all.split(',').any(|known| known == name),
            "no same-shape model '{name}'"
        );
        pipeline_in(&root.join(name), BackendKind::Cpu);
    }
}

#[test]
fn unsupported_models_and_missing_files_are_clear_errors() {
    let tmp = std::env::temp_dir().join(format!("geneb-hf-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let spec = format!("hf:{}", tmp.display());
    let err = |spec: &str| match pollster::block_on(Encoder::from_spec(
        &spec.parse().unwrap(),
        BackendKind::Cpu,
    )) {
        Ok(_) => panic!("{spec} loaded"),
        Err(e) => e.to_string(),
    };
    assert!(err(&spec).contains("no config.json"), "{}", err(&spec));
    std::fs::write(tmp.join("config.json"), r#"{"model_type": "t5"}"#).unwrap();
    std::fs::write(
        tmp.join("vocab.txt"),
        "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nA\nC\nG\nT\nN\n",
    )
    .unwrap();
    std::fs::write(
        tmp.join("tokenizer_config.json"),
        r#"{"tokenizer_class": "BertTokenizer", "model_max_length": 16}"#,
    )
    .unwrap();
    // The architecture is checked first: an unsupported model fails before its weights are read.
    let message = err(&spec);
    assert!(
        message.contains("'t5' is not supported") && message.contains("DNABERT-2"),
        "{message}"
    );
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models/bert");
    std::fs::write(
        tmp.join("config.json"),
        std::fs::read(fixture.join("config.json")).unwrap(),
    )
    .unwrap();
    let message = err(&spec);
    assert!(message.contains("no weights"), "{message}");
    let weights = std::fs::read(fixture.join("model.safetensors")).unwrap();
    std::fs::write(tmp.join("model.safetensors"), &weights[..weights.len() / 2]).unwrap();
    let message = err(&spec);
    assert!(message.contains("truncated"), "{message}");
    // Another model's tokenizer, whose ids run past this model's 10-row embedding table: an
    // error naming both, not an out-of-bounds lookup.
    std::fs::write(tmp.join("model.safetensors"), &weights).unwrap();
    let vocab = std::fs::read_to_string(fixture.join("vocab.txt")).unwrap();
    // The nucleotides again: a repeated token keeps its last id, 10 to 14.
    let moved = format!("{}\nN\nA\nC\nG\nT\n", vocab.trim_end());
    std::fs::write(tmp.join("vocab.txt"), moved).unwrap();
    let tokenizer_config = std::fs::read(fixture.join("tokenizer_config.json")).unwrap();
    std::fs::write(tmp.join("tokenizer_config.json"), tokenizer_config).unwrap();
    let encoder =
        pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu)).unwrap();
    let message = pollster::block_on(encoder.embed(&["ACGT".to_string()]))
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("token id 1") && message.contains("embedding table has 10 rows"),
        "{message}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A rerun reuses the first run's embeddings (the progress says so) and gives the same result;
/// a damaged cache entry is embedded again, never trusted.
#[test]
fn embedding_cache_is_reused_and_survives_damage() {
    use geneb::eval::{self, EmbeddingStore, Progress};
    use geneb::protocol::Regime;
    let root = std::env::temp_dir().join(format!("geneb-cache-{}", std::process::id()));
    let store = geneb::embedding_cache::FolderStore::new(root.clone());
    let spec = format!(
        "hf:{}/tests/fixtures/models/bert",
        env!("CARGO_MANIFEST_DIR")
    );
    let encoder =
        pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu)).unwrap();
    let tasks = geneb::input::tasks_from_path(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tasks/smoke/smoke_lambda_phage_vs_ecoli.csv"),
        None,
    )
    .unwrap();
    let run = || {
        let mut cached = Vec::new();
        let mut progress = |p: Progress| cached.push(p.from_cache);
        let store: &dyn EmbeddingStore = &store;
        let sub = pollster::block_on(eval::evaluate(
            &encoder,
            &tasks,
            &geneb::input::audit::audit_tasks(&tasks).unwrap(),
            &[Regime::Full],
            Some(store),
            false,
            &mut progress,
        ))
        .unwrap()
        .submission;
        (sub.results, cached.contains(&true))
    };
    let (first, first_cached) = run();
    let (second, second_cached) = run();
    assert!(!first_cached && second_cached);
    assert_eq!(first, second);
    let entries: Vec<PathBuf> = walk(&root);
    assert_eq!(entries.len(), 2, "train and test embeddings: {entries:?}");
    std::fs::write(&entries[0], b"not an npy").unwrap();
    let (third, _) = run();
    assert_eq!(first, third);
    std::fs::remove_dir_all(&root).unwrap();
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The registry picks each architecture's tokenizer from config.json alone: for every tokenizer
/// fixture, the tokenizer of the detected architecture gives the Hugging Face tokenizer's ids
/// (tests/tokenizers.rs compares every truncation; this checks the choice).
#[test]
fn the_registry_chooses_each_models_tokenizer() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizers");
    let corpus: Vec<String> =
        serde_json::from_slice(&std::fs::read(root.join("corpus.json")).unwrap()).unwrap();
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let mut files = geneb::checkpoint::ModelFiles::new(&name);
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let file = path.file_name().unwrap().to_str().unwrap().to_string();
            files.insert(&file, std::fs::read(&path).unwrap());
        }
        let spec = arch::detect(&files.config().unwrap()).unwrap();
        let tokenizer = geneb::tokenize::Tokenizer::from_files(&files, spec.tokenizer).unwrap();
        let expected: serde_json::Value =
            serde_json::from_slice(files.get("expected.json").unwrap()).unwrap();
        for (sequence, case) in corpus.iter().zip(expected["cases"].as_array().unwrap()) {
            let full: Vec<u32> = serde_json::from_value(case["full"].clone()).unwrap();
            assert_eq!(
                tokenizer.encode(sequence, None),
                full,
                "{name} ({})",
                spec.name
            );
        }
        checked.push(name);
    }
    assert_eq!(checked.len(), 16, "{checked:?}");
}

/// A decoder's tokenizer.json without a pad token (OmniNA's): geneb pads with its eos token, as
/// omnina.py sets `pad_token = eos_token`; with a pad token, that one.
#[test]
fn a_decoder_tokenizer_without_a_pad_token_pads_with_its_eos_token() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models/llama");
    let read = |file: &str| std::fs::read(dir.join(file)).unwrap();
    let mut settings: serde_json::Value =
        serde_json::from_slice(&read("tokenizer_config.json")).unwrap();
    let tokenizer = |settings: &serde_json::Value| {
        let mut files = geneb::checkpoint::ModelFiles::new("llama");
        files.insert("tokenizer.json", read("tokenizer.json"));
        files.insert("tokenizer_config.json", settings.to_string().into_bytes());
        geneb::tokenize::Tokenizer::from_files(&files, arch::llama::SPEC.tokenizer).unwrap()
    };
    // <unk> 0, <s> 1, </s> 2, <pad> 3, as make_llama_fixtures.py trains them.
    assert_eq!(tokenizer(&settings).pad_id(), 3);
    settings.as_object_mut().unwrap().remove("pad_token");
    assert_eq!(tokenizer(&settings).pad_id(), 2);
}

/// `?weights=half` on the CPU: a bf16 checkpoint's matrices held as stored give the f32 path's
/// embeddings bit for bit (bf16 widens to f32 exactly, and the products are f32's); an f32
/// checkpoint's narrowed to bf16 stay within bf16's rounding of the transformers reference, are
/// not the f32 numbers, and say so as a deviation and in their cache identity.
#[test]
fn half_precision_weights_are_held_as_stored_or_narrowed_and_say_so() {
    let embed = |name: &str, options: &str| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/models")
            .join(name);
        let expected: Pipeline =
            serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap();
        let spec = format!("hf:{}{options}", dir.display());
        let encoder =
            pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu))
                .unwrap();
        let got = pollster::block_on(encoder.embed(&expected.sequences)).unwrap();
        let worst = got
            .iter()
            .zip(expected.pooled.concat())
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        (encoder, got, worst)
    };
    let (f32_path, f32_embeddings, _) = embed("llama_sharded_bf16", "");
    let (held, held_embeddings, worst) = embed("llama_sharded_bf16", "?weights=half");
    assert_eq!(held_embeddings, f32_embeddings, "bf16 held as stored");
    assert!(worst <= 1e-4, "bf16 held vs transformers: {worst}");
    let described = held.describe().weights.unwrap();
    assert!(
        described.starts_with("bf16 as the checkpoint stores them"),
        "{described}"
    );
    assert!(f32_path.describe().weights.is_none());
    assert!(held.deviations().is_empty());
    assert_eq!(held.cache_identity(), f32_path.cache_identity());

    let (f32_path, f32_embeddings, _) = embed("llama", "");
    let (narrowed, narrowed_embeddings, worst) = embed("llama", "?weights=half");
    eprintln!("llama narrowed to bf16: max |geneb − PyTorch f32| = {worst:.2e}");
    assert!(
        worst <= NARROWED_TOLERANCE,
        "narrowed vs transformers: {worst}"
    );
    assert_ne!(narrowed_embeddings, f32_embeddings, "nothing was narrowed");
    let deviations = narrowed.deviations();
    assert!(
        deviations.len() == 1
            && deviations[0].starts_with("weights NARROWED to bf16 from the checkpoint's F32"),
        "{deviations:?}"
    );
    assert_ne!(narrowed.cache_identity(), f32_path.cache_identity());
}

/// Evo-1 as StripedHyena holds it (`to_bfloat16_except_poles_residues`): bf16 weights with the
/// poles and residues in f32, over two shards and their index. It loads; held in half, its bf16
/// matrices are taken as stored (the f32 path's numbers, no deviation) while the poles stay
/// f32; and it is within bf16's rounding of the f32 reference.
#[test]
fn evo_in_bf16_with_f32_poles_and_residues_loads_from_shards() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models/evo");
    let wide = |tensor: &str| tensor.ends_with(".poles") || tensor.ends_with(".residues");
    let dir = copy_stored_as(
        &fixture,
        "evo-bf16-sharded",
        |tensor| if wide(tensor) { "F32" } else { "BF16" },
        2,
    );
    let expected: Pipeline =
        serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap();
    let embed = |options: &str| {
        let spec = format!("hf:{}{options}", dir.display());
        let encoder =
            pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu))
                .unwrap();
        let got = pollster::block_on(encoder.embed(&expected.sequences)).unwrap();
        (encoder, got)
    };
    let (f32_path, f32_embeddings) = embed("");
    let (held, held_embeddings) = embed("?weights=half");
    assert_eq!(held_embeddings, f32_embeddings, "bf16 held as stored");
    let described = held.describe().weights.unwrap();
    assert!(
        described.starts_with("bf16 as the checkpoint stores them"),
        "{described}"
    );
    assert!(held.deviations().is_empty(), "{:?}", held.deviations());
    assert_eq!(held.cache_identity(), f32_path.cache_identity());
    let worst = f32_embeddings
        .iter()
        .zip(expected.pooled.concat())
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    eprintln!("evo in bf16 with f32 poles: max |geneb − PyTorch f32| = {worst:.2e}");
    assert!(worst > 0.0, "the bf16 weights were not the ones used");
    assert!(worst <= EVO_BF16_TOLERANCE, "evo in bf16 vs f32: {worst}");
}

/// bf16 rounds each weight by at most 2⁻⁹ of itself; through the tiny Evo's three blocks and its
/// final RMSNorm that moved no pooled value (at most 2.7) by more than 1.04e-2 (measured
/// 2026-12-07).
const EVO_BF16_TOLERANCE: f32 = 2e-2;

/// `?weights=half` on wgpu: the 16-bit values stay on the GPU and are widened there
/// (`layers::HalfMatrix`), so a sharded bf16 checkpoint, an f16 one, and bf16 copies of OLMo
/// (its fused `att_proj` split into queries, keys and values), eccDNAMamba (Mamba-2's fused
/// in-projections) and GPT-2 (Conv1D weights stored transposed, learned positions) give the
/// CPU's half path (and the f32 path on the same stored values), and the reference within the
/// rounding of its weights. The last three hold every matrix in half: the memory budget
/// charges exactly their 16-bit bytes.
#[test]
fn half_precision_weights_on_wgpu_are_the_cpu_half_paths() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models");
    let f16_dir = f16_copy_of(&fixtures.join("llama"), "llama-f16");
    let olmo_dir = copy_stored_as(&fixtures.join("olmo"), "olmo-bf16", |_| "BF16", 1);
    let mamba_dir = copy_stored_as(
        &fixtures.join("eccdnamamba"),
        "eccdnamamba-bf16",
        |_| "BF16",
        1,
    );
    let gpt2_dir = copy_stored_as(&fixtures.join("gpt2"), "gpt2-bf16", |_| "BF16", 1);
    // The encoders' word-embedding tables: BERT's (DNABERT-2), ESM's (NT-v2) and LucaOne's.
    let bert_dir = copy_stored_as(&fixtures.join("dnabert2"), "dnabert2-bf16", |_| "BF16", 1);
    let nt_dir = copy_stored_as(&fixtures.join("nt_v2"), "nt_v2-bf16", |_| "BF16", 1);
    let luca_dir = copy_stored_as(&fixtures.join("lucaone"), "lucaone-bf16", |_| "BF16", 1);
    // Enformer's trunk's convolution kernels and SPACE's experts, 3-D.
    let space_dir = copy_stored_as(&fixtures.join("space"), "space-bf16", |_| "BF16", 1);
    let expected = |dir: &std::path::Path| -> Pipeline {
        serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap()
    };
    let embed = |dir: &std::path::Path, options: &str, kind: BackendKind| {
        let spec = format!("hf:{}{options}", dir.display());
        let encoder = pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), kind)).unwrap();
        let sequences: Vec<String> = (expected(dir).sequences.iter())
            .map(|s| geneb::input::normalize_sequence(s).unwrap())
            .collect();
        let got = pollster::block_on(encoder.embed(&sequences)).unwrap();
        (
            encoder.describe().weights,
            got.iter().copied().collect::<Vec<f32>>(),
        )
    };
    let worst = |a: &[f32], b: &[f32]| {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max)
    };
    // The widest difference from the CPU a GPU's own f32 rounding gives (the same bf16 values
    // on both): OLMo's unit-variance LayerNorm outputs measured 2.3e-6 (2026-12-07). A wrong
    // widening is far out (swapped halves of a word: 3.08).
    const ACROSS_BACKENDS: f32 = 1e-5;
    // The copies round the f32 reference's weights: f16 to 11 significant bits, bf16 to 8,
    // which moved OLMo's pooled values by up to 2.7e-2 (clip_qkv's clamp and the SwiGLU).
    let mut failures = Vec::new();
    for (dir, held, across_backends, tolerance) in [
        (fixtures.join("llama_sharded_bf16"), "bf16", 1e-6, 1e-4),
        (f16_dir, "f16", 1e-6, F16_TOLERANCE),
        (olmo_dir.clone(), "bf16", ACROSS_BACKENDS, 5e-2),
        (mamba_dir.clone(), "bf16", ACROSS_BACKENDS, 5e-2),
        (gpt2_dir.clone(), "bf16", ACROSS_BACKENDS, 5e-2),
        (bert_dir.clone(), "bf16", ACROSS_BACKENDS, 5e-2),
        (nt_dir.clone(), "bf16", ACROSS_BACKENDS, 5e-2),
        (luca_dir.clone(), "bf16", ACROSS_BACKENDS, 5e-2),
        // 131,072 positions through the tower's BatchNorms: 8.5e-2 of values up to 6.7.
        (space_dir.clone(), "bf16", ACROSS_BACKENDS, 0.15),
    ] {
        let (described, gpu) = embed(&dir, "?weights=half", BackendKind::Wgpu);
        let described = described.unwrap();
        assert!(
            described.starts_with(&format!("{held} as the checkpoint stores them")),
            "{described}"
        );
        let (_, cpu_half) = embed(&dir, "?weights=half", BackendKind::Cpu);
        let (_, cpu_f32) = embed(&dir, "?weights=f32", BackendKind::Cpu);
        let reference = worst(&gpu, &expected(&dir).pooled.concat());
        let name = dir.display();
        eprintln!(
            "{name} in {held} held on wgpu: max |Δ| vs CPU half {:.2e}, vs CPU f32 {:.2e}, vs \
             the reference {reference:.2e}; CPU half vs f32 {:.2e}",
            worst(&gpu, &cpu_half),
            worst(&gpu, &cpu_f32),
            worst(&cpu_half, &cpu_f32)
        );
        // Widened exactly, the products are the f32 path's.
        if cpu_half != cpu_f32 {
            failures.push(format!("{name}: CPU half is not CPU f32"));
        }
        if worst(&gpu, &cpu_half) > across_backends {
            failures.push(format!("{name}: wgpu vs CPU half"));
        }
        if reference > tolerance {
            failures.push(format!("{name} vs the reference: {reference}"));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
    // Held in half, each matrix (and Enformer's convolution kernels, SPACE's experts) takes 2
    // bytes and every other tensor (norms, biases, Mamba's convolutions, A and D, the small
    // token-type and position tables) f32's 4; the heads the architecture skips nothing. Under
    // a budget of exactly that (below the f32 bytes, so half precision is chosen) the model
    // loads and embeds, and one byte less is refused. OLMo's att_proj held in f32 would need
    // 8,192 bytes more, eccDNAMamba's in_proj 43,008, GPT-2's c_attn 12,288, DNABERT-2's word
    // embeddings 49,152. (The tiny NT-v2 and LucaOne hold less than reading their safetensors
    // headers costs, so a budget cannot tell there.)
    for (dir, skipped, wide) in [
        (&olmo_dir, &[][..], &[][..]),
        (
            &mamba_dir,
            &["backbone.embedding.weight", ".lm_head.weight"][..],
            &["conv1d.weight"][..],
        ),
        (&gpt2_dir, &[][..], &[][..]),
        (
            &bert_dir,
            &["bert.pooler.", "cls.predictions."][..],
            &["token_type_embeddings.weight"][..],
        ),
        (
            &space_dir,
            &["model.heads.", ".mouse", "num_batches_tracked"][..],
            &[
                "species_embedding.human",
                "rel_content_bias",
                "rel_pos_bias",
                ".bias",
            ][..],
        ),
    ] {
        let held_bytes: u64 = safetensors_shapes(&dir.join("model.safetensors"))
            .into_iter()
            .filter(|(name, _)| !skipped.iter().any(|head| name.contains(head)))
            .map(|(name, shape)| {
                let half = shape.len() >= 2 && !wide.iter().any(|kept| name.ends_with(kept));
                shape.iter().product::<usize>() as u64 * if half { 2 } else { 4 }
            })
            .sum();
        let sequences = dir.join("sequences.txt");
        // One short sequence: reading SPACE's 131,072-nt ones would cost the budget more than
        // its tiny weights.
        let shortest = expected(dir).sequences.into_iter().min_by_key(String::len);
        std::fs::write(&sequences, shortest.unwrap()).unwrap();
        let embed_within = |budget: u64| {
            std::process::Command::new(env!("CARGO_BIN_EXE_geneb"))
                .args(["--max-memory", &budget.to_string(), "embed", "--model"])
                .arg(format!("hf:{}", dir.display()))
                .arg("--input")
                .arg(&sequences)
                .arg("--out")
                .arg(dir.join("embeddings.npy"))
                .output()
                .unwrap()
        };
        let fits = embed_within(held_bytes);
        assert!(
            fits.status.success(),
            "{} within {held_bytes} bytes: {}",
            dir.display(),
            String::from_utf8_lossy(&fits.stderr)
        );
        let over = embed_within(held_bytes - 1);
        let stderr = String::from_utf8_lossy(&over.stderr);
        assert_eq!(over.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("holding the model's weights in bf16 needs more than"),
            "{stderr}"
        );
    }
}

/// Each tensor of a safetensors file by name, with its shape, from the file's header.
fn safetensors_shapes(file: &std::path::Path) -> Vec<(String, Vec<usize>)> {
    let bytes = std::fs::read(file).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
    header
        .into_iter()
        .filter(|(name, _)| name != "__metadata__")
        .map(|(name, entry)| {
            let shape = entry["shape"].as_array().unwrap();
            (
                name,
                shape.iter().map(|d| d.as_u64().unwrap() as usize).collect(),
            )
        })
        .collect()
}

/// f16 keeps 11 significant bits (a relative rounding of at most 2⁻¹²); through the tiny
/// Llama's two blocks that moved no pooled value by more than 2e-3 (measured 2026-12-07).
const F16_TOLERANCE: f32 = 2e-3;

/// A copy of the model folder `fixture` in the test's temporary directory, its f32
/// `model.safetensors` stored in f16 (config.json's `torch_dtype` left alone: geneb reads the
/// tensors' own dtypes).
fn f16_copy_of(fixture: &std::path::Path, name: &str) -> PathBuf {
    copy_stored_as(fixture, name, |_| "F16", 1)
}

/// A copy of the model folder `fixture` in the test's temporary directory, its
/// `model.safetensors` re-saved with each f32 tensor in the dtype `stored_as` names for it
/// ("F32", "F16" or "BF16", rounded to nearest) over `shards` files, with their index where more
/// than one.
fn copy_stored_as(
    fixture: &std::path::Path,
    name: &str,
    stored_as: impl Fn(&str) -> &'static str,
    shards: usize,
) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let file = std::fs::read(fixture.join("model.safetensors")).unwrap();
    let header_len = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&file[8..8 + header_len]).unwrap();
    header.remove("__metadata__");
    let data = &file[8 + header_len..];
    let mut files = vec![(serde_json::Map::new(), Vec::new()); shards];
    let (mut weight_map, mut total_size) = (serde_json::Map::new(), 0);
    let count = header.len();
    for (i, (tensor, entry)) in header.into_iter().enumerate() {
        let range = &entry["data_offsets"];
        let (start, end) = (
            range[0].as_u64().unwrap() as usize,
            range[1].as_u64().unwrap() as usize,
        );
        let shard = i * shards / count;
        let (out_header, out_data) = &mut files[shard];
        let begin = out_data.len();
        // Integer buffers (BatchNorm's counters) are kept as they are.
        let stored = entry["dtype"].as_str().unwrap();
        let dtype = if stored == "F32" {
            stored_as(&tensor)
        } else {
            stored
        };
        if stored != "F32" {
            out_data.extend(&data[start..end]);
        } else {
            for value in data[start..end].chunks_exact(4) {
                let value = f32::from_le_bytes(value.try_into().unwrap());
                match dtype {
                    "F32" => out_data.extend(value.to_le_bytes()),
                    "F16" => out_data.extend(half::f16::from_f32(value).to_le_bytes()),
                    "BF16" => out_data.extend(half::bf16::from_f32(value).to_le_bytes()),
                    other => panic!("{other}"),
                }
            }
        }
        total_size += out_data.len() - begin;
        let file_name = format!("model-{:05}-of-{shards:05}.safetensors", shard + 1);
        weight_map.insert(tensor.clone(), file_name.into());
        out_header.insert(
            tensor,
            serde_json::json!({"dtype": dtype, "shape": entry["shape"], "data_offsets": [begin, out_data.len()]}),
        );
    }
    for (shard, (out_header, out_data)) in files.into_iter().enumerate() {
        let out_header = serde_json::to_vec(&out_header).unwrap();
        let mut out = (out_header.len() as u64).to_le_bytes().to_vec();
        out.extend(out_header);
        out.extend(out_data);
        let file_name = if shards == 1 {
            "model.safetensors".to_string()
        } else {
            format!("model-{:05}-of-{shards:05}.safetensors", shard + 1)
        };
        std::fs::write(dir.join(file_name), out).unwrap();
    }
    if shards > 1 {
        std::fs::remove_file(dir.join("model.safetensors")).unwrap();
        let index =
            serde_json::json!({"metadata": {"total_size": total_size}, "weight_map": weight_map});
        std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    }
    dir
}

/// bf16 keeps 8 significant bits (a relative rounding of at most 2^-9 per weight); through the
/// tiny Llama's two blocks and its final RMSNorm that moved no pooled value by more than 6.6e-3.
const NARROWED_TOLERANCE: f32 = 1e-2;

/// A SpliceBERT folder that does not name itself (no hub id, no `_name_or_path`) is still
/// windowed as GENEB's SpliceBERT extractor windows: its single-nucleotide BERT vocabulary says
/// what it is. A BERT the files cannot place runs its architecture's recipe, and the result says
/// so and how to pick another.
#[test]
fn a_local_folders_recipe_follows_from_its_files_or_says_how_to_pick_one() {
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models/splicebert");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("unnamed-splicebert");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(&fixture).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    config.as_object_mut().unwrap().remove("_name_or_path");
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    pipeline_in(&dir, BackendKind::Cpu);
    let load = |dir: &std::path::Path| {
        let spec = format!("hf:{}", dir.display());
        pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu))
            .unwrap()
            .describe()
    };
    let described = load(&dir);
    assert_eq!(described.recipe.unwrap().name, "splicebert");
    let source = described.recipe_source.unwrap();
    assert!(
        source.starts_with("recipe 'splicebert' from the files"),
        "{source}"
    );

    let bert = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models/bert");
    let described = load(&bert);
    assert_eq!(described.recipe.unwrap().name, "generic");
    let source = described.recipe_source.unwrap();
    assert!(
        source.starts_with("recipe 'generic', its architecture's")
            && source.contains("?recipe=NAME (geneb models lists them)"),
        "{source}"
    );
}
