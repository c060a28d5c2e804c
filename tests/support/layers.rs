//! What the per-layer checks (tests/hf_models.rs, tests/ssm_models.rs, tests/enformer.rs) share:
//! a model folder's layers.json (tests/oracle/make_layer_fixtures.py: the reference's hidden
//! states, pooled as the recipe pools) against every layer of a loaded model from one pass.
#![allow(dead_code)] // Each test file uses some of these.

use geneb::encoder::Encoder;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Deserialize)]
struct Layers {
    sequences: usize,
    /// K → the pooled state K of each sequence.
    pooled: BTreeMap<i64, Vec<Vec<f32>>>,
}

#[derive(Deserialize)]
struct Pipeline {
    sequences: Vec<String>,
}

/// The first `count` sequences of `dir`'s pipeline.json, as the oracle embedded them.
pub fn sequences(dir: &Path, count: usize) -> Vec<String> {
    let pipeline: Pipeline =
        serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap();
    pipeline.sequences[..count]
        .iter()
        .map(|s| geneb::input::normalize_sequence(s).unwrap())
        .collect()
}

/// How many sequences `dir`'s layers.json was made from.
pub fn reference_sequences(dir: &Path) -> usize {
    read(dir).sequences
}

fn read(dir: &Path) -> Layers {
    serde_json::from_slice(&std::fs::read(dir.join("layers.json")).unwrap()).unwrap()
}

/// Every hidden state of `model` (`--layers all`: views of the one loaded model) embedded in
/// one pass over `sequences`.
pub fn sweep(model: &Encoder, sequences: &[String]) -> Vec<ndarray::Array2<f32>> {
    let views = model.at_layers(None).unwrap().unwrap();
    let views: Vec<&Encoder> = views.iter().collect();
    pollster::block_on(model.embed_views(sequences, &views)).unwrap()
}

/// `swept` (hidden states 0..=L of `dir`'s model, its first rows the sequences the reference
/// embedded) within 1e-4 of the reference's, each K; `on` names the backend in the messages.
pub fn assert_match_reference(dir: &Path, swept: &[ndarray::Array2<f32>], on: &str) {
    let expected = read(dir);
    assert_eq!(swept.len(), expected.pooled.len(), "hidden states 0..=L");
    for ((k, want), got) in expected.pooled.iter().zip(swept) {
        assert!(got.nrows() >= want.len(), "layer {k}'s sequences");
        let mut worst = 0f32;
        for (row, want) in got.rows().into_iter().zip(want) {
            assert_eq!(row.len(), want.len(), "layer {k}'s width");
            for (a, b) in row.iter().zip(want) {
                worst = worst.max((a - b).abs());
            }
        }
        eprintln!("{} layer {k} on {on}: max |Δ| = {worst:.1e}", dir.display());
        assert!(
            worst <= 1e-4,
            "{} layer {k} on {on}: max |geneb − reference| = {worst}",
            dir.display()
        );
    }
}

/// Every layer of `model`, loaded from `dir`, from one pass against the reference's; the
/// seconds it took are printed (CI time is counted per check).
pub fn check(dir: &Path, model: &Encoder, on: &str) {
    let started = std::time::Instant::now();
    let sequences = sequences(dir, reference_sequences(dir));
    assert_match_reference(dir, &sweep(model, &sequences), on);
    eprintln!(
        "{} every layer on {on}: {:.1} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
}
