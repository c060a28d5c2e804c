//! One entry point per parser a user's bytes reach, shared by the fuzz targets (`fuzz/`) and
//! the regression test that replays the inputs fuzzing once crashed (`tests/fuzz_regressions.rs`).
//! Each takes arbitrary bytes and may return any error; a panic, an abort or a hang is a bug.
//! Several files come in one input, cut at `PART` bytes.

#![allow(dead_code)] // Each fuzz target uses one entry point.

use geneb::checkpoint::{ModelFiles, pytorch, safetensors};
use geneb::input::{self, InputFile};
use std::io::Write;

/// Cuts one input into the files of a layout (ASCII record separator: rare in text formats).
pub const PART: u8 = 0x1e;

fn parts(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    data.split(|&b| b == PART)
}

/// File names the task readers tell layouts by; the first byte of an input picks one.
const TASK_LAYOUTS: &[&[&str]] = &[
    &["t.csv"],
    &["t.tsv"],
    &["t.fa"],
    &["t.csv.gz"],
    &["t/train.csv", "t/test.csv"],
    &["t/train.fa", "t/test.fa"],
    &["t/train/a.fa", "t/test/a.fa", "t/train/b.fa", "t/test/b.fa"],
    &[
        "t/train/a/1.txt",
        "t/train/b/2.txt",
        "t/test/a/3.txt",
        "t/test/b/4.txt",
    ],
    &["t/regions.bed", "genome.fa"],
    &["tasks.json", "t.csv", "u.fa"],
    &["t.parquet"],
];

/// Task files (`geneb eval --task`, the page's dropped tasks): tables, FASTA, gzip, BED +
/// reference, Genomic Benchmarks folders, `tasks.json`; and the lists `embed --input` and
/// `fewshot --labels` read. Layout 11 gzips its one file first, so the readers behind the
/// decompressor are reached too.
pub fn task_files(data: &[u8]) {
    let Some((&layout, rest)) = data.split_first() else {
        return;
    };
    let layout = usize::from(layout) % (TASK_LAYOUTS.len() + 3);
    let Some(names) = TASK_LAYOUTS.get(layout) else {
        let file = match layout - TASK_LAYOUTS.len() {
            0 => InputFile {
                name: "t.csv".into(),
                bytes: gzip(rest),
            },
            1 => {
                let file = InputFile {
                    name: "s.fa".into(),
                    bytes: rest.to_vec(),
                };
                let _ = input::read_sequences(&file);
                return;
            }
            _ => {
                let file = InputFile {
                    name: "labels.txt".into(),
                    bytes: rest.to_vec(),
                };
                let _ = input::read_labels(&file);
                return;
            }
        };
        let _ = input::tasks_from_files(&[file], None);
        return;
    };
    let files: Vec<InputFile> = names
        .iter()
        .zip(parts(rest))
        .map(|(name, bytes)| InputFile {
            name: name.to_string(),
            bytes: bytes.to_vec(),
        })
        .collect();
    let _ = input::tasks_from_files(&files, Some("Fuzzed"));
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

/// Every tensor of a checkpoint taken as an architecture takes it, then the unused check.
fn take_all(mut ckpt: geneb::checkpoint::Checkpoint) {
    let names: Vec<String> = ckpt.names().map(str::to_string).collect();
    for name in names {
        if ckpt.take_any(&name).is_err() {
            ckpt.skip(&name);
        }
    }
    let _ = ckpt.finish();
}

/// `model.safetensors`.
pub fn safetensors(data: &[u8]) {
    if let Ok(ckpt) = safetensors::read("model.safetensors", Box::new(data.to_vec())) {
        take_all(ckpt);
    }
}

/// `pytorch_model.bin`: the zip archive and the pickle inside it.
pub fn pytorch(data: &[u8]) {
    if let Ok(ckpt) = pytorch::read("pytorch_model.bin", Box::new(data.to_vec())) {
        take_all(ckpt);
    }
}

/// The tokenizer files through every tokenizer kind, then encoding. (`config.json` stays in the
/// input layout: the architecture it names picks one kind, which `model_config` covers.)
pub fn tokenizer(data: &[u8]) {
    const NAMES: [&str; 5] = [
        "config.json",
        "tokenizer.json",
        "vocab.txt",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ];
    let mut files = ModelFiles::new("model");
    for (name, bytes) in NAMES.iter().zip(parts(data)) {
        if !bytes.is_empty() {
            files.insert(name, bytes.to_vec());
        }
    }
    use geneb::tokenize::{Tokenizer, TokenizerChoice};
    // Every kind an architecture may choose, whatever config.json says. Without vocab.txt the
    // ESM choice reads the files as `Files` does: once is enough.
    let esm = files.contains("vocab.txt").then_some(TokenizerChoice::Esm);
    for choice in [
        TokenizerChoice::Characters { upper_case: false },
        TokenizerChoice::Characters { upper_case: true },
        TokenizerChoice::CaduceusOrFiles,
        TokenizerChoice::Files,
    ]
    .into_iter()
    .chain(esm)
    {
        let Ok(tokenizer) = Tokenizer::from_files(&files, choice) else {
            continue;
        };
        for (sequence, max_length) in [
            ("ACGTNACGTTGCA", Some(8)),
            ("", None),
            ("ACGTACGT", Some(0)),
        ] {
            let _ = tokenizer.encode(sequence, max_length);
        }
        let _ = tokenizer.describe();
    }
}

/// Result files and the page's bundles as `geneb profile` and the page's report read them,
/// through the analysis and every output it renders.
pub fn results(data: &[u8]) {
    let mut submissions = Vec::new();
    for (i, bytes) in parts(data).enumerate() {
        match geneb::submission::read_results(&format!("r{i}.json"), bytes) {
            Ok(found) => submissions.extend(found),
            Err(_) => return,
        }
    }
    let settings = geneb::profile::bootstrap::Settings {
        replicates: 2,
        seed: 0,
    };
    if let Ok(analysis) = geneb::profile::analysis::analyse(&submissions, settings, None) {
        let _ = geneb::report::html::render(&analysis, &submissions);
        let _ = geneb::profile::analysis::to_text(&analysis);
    }
}

/// A probe `.npz` (`geneb probe`), and the same bytes as one `.npy` (`eval --embeddings`'s
/// `X.npy`).
pub fn npz(data: &[u8]) {
    let _ = geneb::input::npz::probe_arrays("probe.npz", data);
    let _ = geneb::input::npz::read_npy("X.npy", data);
}

/// A Parquet task table (`geneb eval --task t.parquet`, the page's dropped tables), read to
/// its rows and checked as a task.
pub fn parquet(data: &[u8]) {
    let file = InputFile {
        name: "t.parquet".into(),
        bytes: data.to_vec(),
    };
    let _ = input::tasks_from_files(&[file], Some("Fuzzed"));
}

/// A saved probe (`geneb predict --probe`, the page's predict panel), applied to two rows of
/// embeddings of the dimension it states (when that is small enough to make here).
pub fn saved_probe(data: &[u8]) {
    let Ok(probe) = geneb::predict::SavedProbe::read("probe.json", data) else {
        return;
    };
    let dim = probe.encoder.dim;
    if dim <= 4096 {
        let x = ndarray::Array2::from_shape_fn((2, dim), |(i, j)| (i + j) as f32 / 7.0);
        let _ = probe.predict(x.view());
    }
}

/// A sharded run's folder as `geneb merge` reads it: `plan.json`, then the result files of the
/// plan's first pairs (when the plan parses), cut at `PART`.
pub fn shard(data: &[u8]) {
    let dir = std::env::temp_dir().join(format!("geneb-fuzz-shard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let mut files = parts(data);
    let plan = files.next().unwrap_or_default();
    std::fs::write(dir.join(geneb::shard::PLAN_FILE), plan).expect("writing the plan");
    if let Ok(plan) = serde_json::from_slice::<geneb::shard::Plan>(plan) {
        let pairs = plan
            .models
            .iter()
            .flat_map(|m| plan.tasks.iter().map(move |t| (m, &t.id)));
        for ((model, task), bytes) in pairs.zip(files) {
            let path = geneb::shard::Plan::pair_path(&dir, model, task);
            if std::fs::create_dir_all(path.parent().expect("a folder")).is_ok() {
                let _ = std::fs::write(path, bytes);
            }
        }
    }
    if let Ok((_, merged)) = geneb::merge::merge(std::slice::from_ref(&dir)) {
        for m in merged {
            let _ = m.submission.to_json_pretty();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `config.json` through tokenizer and architecture detection to a built model: the first byte
/// picks a small fixture model whose other files (weights, tokenizer) are kept, the rest is the
/// config. The weights are real, so every number the config states is checked against them.
#[cfg(feature = "burn")]
pub fn model_config(data: &[u8]) {
    macro_rules! fixture {
        ($folder:literal, [$($file:literal),*]) => {
            &[$(($file, include_bytes!(concat!("../fixtures/models/", $folder, "/", $file)))),*]
        };
    }
    const MODELS: &[&[(&str, &[u8])]] = &[
        fixture!(
            "bert",
            ["model.safetensors", "tokenizer_config.json", "vocab.txt"]
        ),
        fixture!(
            "dnabert2",
            [
                "model.safetensors",
                "tokenizer.json",
                "tokenizer_config.json"
            ]
        ),
        fixture!(
            "nt_v2",
            [
                "model.safetensors",
                "special_tokens_map.json",
                "tokenizer_config.json",
                "vocab.txt"
            ]
        ),
        fixture!("hyena/tiny", ["model.safetensors", "tokenizer_config.json"]),
        fixture!(
            "caduceus/ph",
            ["model.safetensors", "tokenizer_config.json"]
        ),
    ];
    let Some((&pick, config)) = data.split_first() else {
        return;
    };
    let mut files = ModelFiles::new("model");
    for (name, bytes) in MODELS[usize::from(pick) % MODELS.len()] {
        files.insert(name, bytes.to_vec());
    }
    files.insert("config.json", config.to_vec());
    let compute = geneb::encoder::backend::cpu();
    let spec = geneb::encoder::spec::HfSpec::parse("hf:fuzzed").unwrap();
    let _ = geneb::encoder::pretrained::HfModel::from_files(&spec, files, compute);
}
