//! The architectures geneb runs from a Hugging Face model folder, one file each, and the one
//! list (`ARCHITECTURES`) that the loader, the tokenizer choice, `geneb models` and the page
//! read.
//!
//! An architecture's file holds its typed `Config` (read from `config.json`: unknown keys
//! ignored, a missing key or a wrong type a one-line error naming the key), its `SPEC` (how
//! `config.json` is recognised, the family's name, the tokenizer its checkpoints come with, the
//! pooling GENEB's reference extractor applies) and its forward pass (`impl Arch`), built from
//! the shared blocks in `encoder::layers`. Adding one is a new file here plus its line in
//! `ARCHITECTURES`, besides its tests.

pub mod bert;
pub mod caduceus;
pub mod dnagpt;
pub mod eccdnamamba;
pub mod enformer;
pub mod evo;
pub mod gpt2;
pub mod hyena;
pub mod janus;
pub mod llama;
pub mod lucaone;
pub mod mistral;
pub mod nt;
pub mod olmo;
pub mod roformer;
pub mod space;

use super::backend::Compute;
use super::layers::config_error;
pub use super::recipe::Pooling;
use crate::checkpoint::Checkpoint;
use crate::tokenize::TokenizerChoice;
use crate::{Error, Result};
use burn::tensor::{Int, Tensor};
use serde::de::{DeserializeOwned, Error as _, IntoDeserializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A loaded encoder: token ids and the attention mask in, the final hidden states out.
pub trait Arch: Send + Sync {
    /// The forward pass for ids [batch, tokens] and the attention mask [batch, tokens] (1 for
    /// real tokens, then 0 for right padding), up to `kept`'s deepest layer, keeping the states
    /// asked for on the way; the states after that layer out. The one place an architecture
    /// runs, so `forward` and `hidden_states` cannot drift apart.
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3>;
    /// How many blocks `pass` can stop after: L, where the states are indexed as transformers'
    /// `output_hidden_states` indexes them (0 = the embeddings' output, L = `forward`'s), or as
    /// the reference code's blocks for models outside transformers (the architecture's file
    /// says which).
    fn layers(&self) -> usize;
    /// last_hidden_state [batch, tokens, hidden]: the states after all L layers.
    fn forward(&self, input_ids: Tensor<2, Int>, attention_mask: Tensor<2>) -> Tensor<3> {
        self.pass(input_ids, attention_mask, &mut Kept::last(self.layers()))
    }
    /// The width of `forward`'s states.
    fn hidden_size(&self) -> usize;
    /// The width of the states after `layer` blocks (0..=L): `hidden_size` unless the blocks
    /// change it (Enformer's convolution tower).
    fn hidden_size_at(&self, layer: usize) -> usize {
        let _ = layer;
        self.hidden_size()
    }
    /// The floats of one sequence's states after `layer` blocks where no batch split makes
    /// them smaller: a model that pads every input to one length keeps its whole-sequence
    /// states (Enformer's tower). 0, the default, where batches split them.
    fn unsplit_state_floats(&self, layer: usize) -> usize {
        let _ = layer;
        0
    }
    /// The states after each of `layers` blocks (each 0..=L, in the order asked), [batch,
    /// tokens, hidden_size_at(layer)] each, from one `pass`; layer L is `forward`'s output bit
    /// for bit. An error for a layer beyond L.
    fn hidden_states(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        layers: &[usize],
    ) -> Result<Vec<Tensor<3>>> {
        let mut kept = Kept::new(self.family(), self.layers(), layers)?;
        self.pass(input_ids, attention_mask, &mut kept);
        Ok(kept.into_states())
    }
    /// What follows the pooling, [batch, hidden] → [batch, embedding_size]: nothing, except where
    /// the reference pools the output of a linear layer, which commutes with the mean and is
    /// applied once per sequence instead of once per token (DNAGPT's logits). Applied to the
    /// last layer's states only: the head reads nothing else.
    fn after_pooling(&self, pooled: Tensor<2>) -> Tensor<2> {
        pooled
    }
    /// The width of the embedding (after `after_pooling`).
    fn embedding_size(&self) -> usize {
        self.hidden_size()
    }
    /// Rows of the token embedding table: every id fed in must be below it.
    fn token_rows(&self) -> usize;
    /// The most tokens one input may have (the caller truncates to it).
    fn max_tokens(&self) -> usize;
    /// Positions one forward pass computes for a sequence of `tokens` tokens, for sizing
    /// batches: the tokens themselves, except where the reference pads every input to one
    /// length (JanusDNA).
    fn positions(&self, tokens: usize) -> usize {
        tokens
    }
    /// Floats per token of the widest intermediate tensor, for sizing batches.
    fn widest_activation(&self) -> usize;
    /// The extractor recipe of this variant where one architecture file serves several
    /// (`bert.rs`: DNABERT-2, Genomics-FM, GENA-LM, MutBERT, DeepGene); None for the
    /// architecture's own (`ArchSpec::recipe`).
    fn recipe(&self) -> Option<&'static super::recipe::Recipe> {
        None
    }
    /// The family as the user reads it, naming the variant where one file serves several.
    fn family(&self) -> &'static str;
    /// What loading noted for the user (stderr, the page, `protocol.encoder.notes`): tensors
    /// the reference tolerates missing, and why nothing is lost.
    fn notes(&self) -> &[String] {
        &[]
    }
}

/// The states one `Arch::pass` keeps for `Arch::hidden_states`: those after the blocks asked
/// for, in the order asked. The pass offers the state entering each block and its output, and
/// stops after the deepest block asked for.
pub struct Kept {
    wanted: Vec<usize>,
    states: Vec<Option<Tensor<3>>>,
}

impl Kept {
    /// `wanted` checked against the architecture's `layers` blocks.
    pub(crate) fn new(family: &str, layers: usize, wanted: &[usize]) -> Result<Kept> {
        if let Some(bad) = wanted.iter().find(|&&layer| layer > layers) {
            return Err(Error::new(format!(
                "{family} has {layers} layers: there is no layer {bad} (0 is the embeddings' \
                 output, {layers} the last layer's)"
            )));
        }
        if wanted.is_empty() {
            return Err(Error::new("no layer asked for"));
        }
        Ok(Kept {
            wanted: wanted.to_vec(),
            states: vec![None; wanted.len()],
        })
    }

    /// The last layer only, as `Arch::forward` gives it.
    pub(crate) fn last(layers: usize) -> Kept {
        Kept {
            wanted: vec![layers],
            states: vec![None],
        }
    }

    /// The deepest layer asked for: the pass stops after it.
    pub(crate) fn deepest(&self) -> usize {
        self.wanted.iter().copied().max().unwrap_or(0)
    }

    /// Whether the states after `layer` blocks are asked for (where making them costs).
    pub(crate) fn wants(&self, layer: usize) -> bool {
        self.wanted.contains(&layer)
    }

    /// Keeps `x` as the states after `layer` blocks, if asked for.
    pub(crate) fn offer(&mut self, layer: usize, x: &Tensor<3>) {
        for (wanted, state) in self.wanted.iter().zip(&mut self.states) {
            if *wanted == layer {
                *state = Some(x.clone());
            }
        }
    }

    /// The states kept, in the order asked.
    pub(crate) fn into_states(self) -> Vec<Tensor<3>> {
        self.states.into_iter().flatten().collect()
    }
}

/// One architecture in the registry.
pub struct ArchSpec {
    /// Short stable name (`geneb models --json`).
    pub name: &'static str,
    pub family: &'static str,
    /// The published model repositories this architecture serves, for lists and errors.
    pub serves: &'static str,
    /// Whether `config.json` describes this architecture.
    pub matches: fn(&Value) -> bool,
    pub tokenizer: TokenizerChoice,
    /// The poolings its models' reference extractors apply (`Arch::pooling` picks one per model).
    pub poolings: &'static [Pooling],
    /// Builds the model from `config.json` and the checkpoint, taking every tensor it uses
    /// (the caller calls `ckpt.finish()` afterwards, so no tensor goes unused silently).
    pub load: fn(&Value, &mut Checkpoint, &Compute) -> Result<Box<dyn Arch>>,
    /// GENEB's extractor recipe for this architecture's models where the known-models table
    /// names none (`recipe.rs`).
    pub recipe: &'static super::recipe::Recipe,
    /// For weights published without a config.json (DNAGPT's `.pth` files): the config.json a
    /// file's name implies, if it is one of this architecture's.
    pub published_config: Option<fn(&str) -> Option<Value>>,
}

/// Every architecture, in the order `config.json` is tested against them (the first match wins).
pub const ARCHITECTURES: &[&ArchSpec] = &[
    &hyena::SPEC,
    &caduceus::SPEC,
    &nt::SPEC,
    &bert::SPEC,
    &roformer::SPEC,
    &dnagpt::SPEC,
    &janus::SPEC,
    &llama::SPEC,
    &mistral::SPEC,
    // Before Enformer: SPACE's config.json says `model_type` "enformer" too.
    &space::SPEC,
    &enformer::SPEC,
    &olmo::SPEC,
    &lucaone::SPEC,
    &evo::SPEC,
    &eccdnamamba::SPEC,
    &gpt2::SPEC,
];

/// The architecture `config.json` describes, or an error that lists what geneb runs.
pub fn detect(config: &Value) -> Result<&'static ArchSpec> {
    if let Some(spec) = ARCHITECTURES.iter().find(|spec| (spec.matches)(config)) {
        return Ok(spec);
    }
    let declared = config
        .get("model_type")
        .and_then(|v| v.as_str())
        .or_else(|| {
            config
                .get("architectures")
                .and_then(|a| a.get(0))
                .and_then(|v| v.as_str())
        })
        .unwrap_or("none declared");
    Err(Error::in_file(
        "config.json",
        format!(
            "model type '{declared}' is not supported; geneb runs {}",
            supported()
        ),
    ))
}

/// Weights published without a Hugging Face config.json: JanusDNA's `model_config.json` is read
/// as config.json (the `{"config": …}` its training writes unwrapped, as GENEB's extractor
/// unwraps it, a flat one as it is); for DNAGPT's `.pth` files the config.json their name
/// implies (`ArchSpec::published_config`) is added. The files then read as any model folder.
pub fn complete_published_layout(files: &mut crate::checkpoint::ModelFiles) {
    let names = crate::checkpoint::MODEL_FILE_NAMES;
    if files.contains(names.config) {
        return;
    }
    if files.contains(names.published_config) {
        // Not JSON, or not wrapped: renamed as it is, so config.json's own errors name it.
        let unwrapped = files
            .get(names.published_config)
            .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
            .and_then(|file| janus::unwrap_published_config(&file));
        match unwrapped {
            Some(config) => files.insert(names.config, config.to_string().into_bytes()),
            None => files.rename(names.published_config, names.config),
        }
        return;
    }
    let implied = files.file_names().find_map(|name| {
        ARCHITECTURES
            .iter()
            .filter_map(|spec| spec.published_config)
            .find_map(|config_for| config_for(name))
    });
    if let Some(config) = implied {
        files.insert("config.json", config.to_string().into_bytes());
    }
}

/// "HyenaDNA (…), Caduceus (…), …": what geneb runs, for messages and lists.
pub fn supported() -> String {
    let families: Vec<String> = ARCHITECTURES
        .iter()
        .map(|spec| format!("{} ({})", spec.family, spec.serves))
        .collect();
    families.join(", ")
}

/// An architecture as `geneb models --json` and the page list it.
#[derive(Debug, Clone, Serialize)]
pub struct ArchInfo {
    pub name: &'static str,
    pub family: &'static str,
    pub serves: &'static str,
    pub tokenizer: &'static str,
    pub poolings: &'static [Pooling],
}

pub fn list() -> Vec<ArchInfo> {
    ARCHITECTURES
        .iter()
        .map(|spec| ArchInfo {
            name: spec.name,
            family: spec.family,
            serves: spec.serves,
            tokenizer: spec.tokenizer.describe(),
            poolings: spec.poolings,
        })
        .collect()
}

/// An architecture's typed configuration from `config.json`; the error names the key.
pub fn parse_config<C: DeserializeOwned>(config: &Value) -> Result<C> {
    serde_path_to_error::deserialize(config).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            config_error(&inner.to_string())
        } else {
            config_error(&format!("'{path}': {inner}"))
        }
    })
}

/// The embedding table's rows: `vocab_size` rounded up to `pad_vocab_size_multiple`, as the
/// HyenaDNA and Mamba model code do.
pub(crate) fn padded_vocab(vocab: usize, multiple: usize) -> usize {
    let multiple = multiple.max(1);
    vocab.div_ceil(multiple) * multiple
}

/// The largest size or count geneb takes from config.json: above every real genomic model's
/// (HyenaDNA's million-token context is 2^20), and small enough that products of two never
/// overflow and nothing is allocated from a number a hostile file made up.
pub const MAX_CONFIG_SIZE: u64 = 1 << 24;

/// serde `deserialize_with` for a size or count: a whole number up to `MAX_CONFIG_SIZE`.
pub(crate) fn size<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<usize, D::Error> {
    let value = u64::deserialize(d)?;
    if value > MAX_CONFIG_SIZE {
        return Err(D::Error::custom(format!(
            "{value} is larger than any model geneb runs (at most {MAX_CONFIG_SIZE})"
        )));
    }
    Ok(value as usize)
}

/// `size` for an optional key (with `#[serde(default)]`).
pub(crate) fn optional_size<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<usize>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        None => Ok(None),
        Some(value) => size(value.into_deserializer()).map(Some),
    }
}

/// serde `deserialize_with` for a normalisation epsilon: it is added to a variance before its
/// square root, so it must be a small non-negative number.
pub(crate) fn epsilon<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    let value = f64::deserialize(d)?;
    if !(0.0..1.0).contains(&value) {
        return Err(D::Error::custom(format!(
            "{value} is not a normalisation epsilon (a small non-negative number)"
        )));
    }
    Ok(value)
}

/// The layer count config.json declares under `key`, checked against the checkpoint before
/// anything is allocated for the layers: `last_layer_tensor(layers - 1)` must be there. (Layers
/// beyond the count are named by `Checkpoint::finish`.)
pub(crate) fn check_layers(
    key: &str,
    layers: usize,
    ckpt: &Checkpoint,
    last_layer_tensor: impl Fn(usize) -> String,
) -> Result<usize> {
    if let Some(last) = layers.checked_sub(1) {
        let name = last_layer_tensor(last);
        if !ckpt.contains(&name) {
            return Err(config_error(&format!(
                "'{key}' is {layers}, but the checkpoint has no '{name}'"
            )));
        }
    }
    Ok(layers)
}

/// transformers' default `layer_norm_eps` for BERT and ESM configs that do not set it.
pub(crate) fn transformers_layer_norm_eps() -> f64 {
    1e-12
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Shape {
        hidden_size: usize,
    }

    #[test]
    fn config_errors_name_the_key_and_unknown_keys_are_ignored() {
        let ok: Shape = parse_config(&serde_json::json!({"hidden_size": 8, "extra": [1]})).unwrap();
        assert_eq!(ok.hidden_size, 8);
        let wrong = parse_config::<Shape>(&serde_json::json!({"hidden_size": "8"})).unwrap_err();
        assert!(
            wrong.to_string().contains("'hidden_size': invalid type"),
            "{wrong}"
        );
        let missing = parse_config::<Shape>(&serde_json::json!({})).unwrap_err();
        assert!(
            missing.to_string().contains("missing field `hidden_size`"),
            "{missing}"
        );
    }

    #[test]
    fn every_architecture_is_listed_once_under_its_own_name() {
        let names: Vec<&str> = ARCHITECTURES.iter().map(|s| s.name).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        let unknown = detect(&serde_json::json!({"model_type": "t5"}))
            .err()
            .expect("t5 is not supported");
        assert!(
            unknown.to_string().contains("'t5' is not supported"),
            "{unknown}"
        );
    }
}
