//! RoFormer, as DeepGene publishes it (wds-seu/DeepGene, `PanGeneGraphTrans/modeling_roformer.py`;
//! the Hugging Face RoFormer it adapts has the same tensors): BERT's post-LayerNorm stack with
//! no position table, queries and keys rotated in adjacent pairs by the sinusoidal angles
//! instead. The layers are `bert.rs`'s.
//!
//! GENEB's extractor (`embedding_pipeline/extractors/deepgene.py`) calls `model.roformer` with
//! ids from `tokenizer.json` without its special tokens, put after [CLS] (1) and [SEP] (2) —
//! both before the sequence, as DeepGene's own code does — positions 0, 1, 2, … (padding's do
//! not reach a real token: its keys are masked), and pools `last_hidden_state` by the mean over
//! the attention mask, [CLS] and [SEP] included.

use super::bert::{Bert, Embeddings, LayerShape, Positions, load_layers};
use super::{ArchSpec, Pooling, epsilon, parse_config, size, transformers_layer_norm_eps};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::positions::PairRotary;
use crate::encoder::layers::{Activation, Linear, checkpoint_prefix, config_error, head_dim};
use crate::tokenize::TokenizerChoice;
use burn::tensor::Device;
use serde::Deserialize;

/// `RoFormerForMaskedLM` stores `roformer.…`, a bare `RoFormerModel` nothing.
const PREFIXES: [&str; 2] = ["roformer.", ""];

pub const SPEC: ArchSpec = ArchSpec {
    name: family::DEEPGENE.architecture,
    family: family::DEEPGENE.name,
    serves: "DeepGene (wds-seu/DeepGene)",
    matches,
    tokenizer: TokenizerChoice::DeepGene,
    poolings: &[Pooling::MaskedMean],
    load: |config, ckpt, compute| Ok(Box::new(load(config, ckpt, &compute.device)?)),
    recipe: &crate::encoder::recipe::DEEPGENE,
    published_config: None,
};

/// The `config.json` keys DeepGene's `RoFormerConfig` sets, with its defaults.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    hidden_size: usize,
    #[serde(deserialize_with = "size")]
    num_attention_heads: usize,
    #[serde(deserialize_with = "size")]
    num_hidden_layers: usize,
    #[serde(deserialize_with = "size")]
    intermediate_size: usize,
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    /// The sinusoidal table's length: the extractor truncates to it.
    #[serde(default = "default_positions", deserialize_with = "size")]
    max_position_embeddings: usize,
    /// Defaults to `hidden_size`; where it differs, `embeddings_project` maps to it.
    #[serde(default)]
    embedding_size: Option<usize>,
    #[serde(default = "transformers_layer_norm_eps", deserialize_with = "epsilon")]
    layer_norm_eps: f64,
    #[serde(default = "default_activation")]
    hidden_act: String,
    #[serde(default = "two", deserialize_with = "size")]
    type_vocab_size: usize,
    #[serde(default)]
    rotary_value: bool,
    #[serde(default = "yes")]
    use_bias: bool,
    #[serde(default = "layer_norm")]
    norm_type: String,
}

fn default_positions() -> usize {
    5120
}

fn default_activation() -> String {
    "gelu".into()
}

fn two() -> usize {
    2
}

fn yes() -> bool {
    true
}

fn layer_norm() -> String {
    "layer_norm".into()
}

pub fn matches(config: &serde_json::Value) -> bool {
    config.get("model_type").and_then(|v| v.as_str()) == Some("roformer")
}

fn load(config: &serde_json::Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Bert> {
    let c: Config = parse_config(config)?;
    if c.rotary_value {
        return Err(config_error(
            "'rotary_value' is true: geneb runs RoFormer with queries and keys rotated only",
        ));
    }
    if c.norm_type != "layer_norm" {
        return Err(config_error(&format!(
            "'norm_type' is '{}': geneb runs RoFormer with LayerNorm ('layer_norm') only",
            c.norm_type
        )));
    }
    let (hidden, heads, eps) = (c.hidden_size, c.num_attention_heads, c.layer_norm_eps);
    let head_dim = head_dim(hidden, heads)?;
    if head_dim % 2 != 0 {
        return Err(config_error(&format!(
            "heads of {head_dim} dimensions cannot be rotated in pairs"
        )));
    }
    let activation = Activation::from_config(&c.hidden_act)?;
    let width = c.embedding_size.unwrap_or(hidden);
    let probe = "embeddings.word_embeddings.weight";
    let prefix = checkpoint_prefix(ckpt, &PREFIXES, probe, "RoFormer")?;
    let p = |name: &str| format!("{prefix}{name}");
    let mut embeddings = Embeddings::load(
        ckpt,
        &p("embeddings."),
        c.vocab_size,
        width,
        c.type_vocab_size,
        eps,
        device,
    )?;
    if width != hidden {
        embeddings.project = Some(Linear::load(
            ckpt,
            &p("embeddings_project"),
            width,
            hidden,
            true,
            device,
        )?);
    }
    // The sinusoidal table is computed, not learned (transformers saves it anyway).
    ckpt.skip(&p("encoder.embed_positions.weight"));
    let shape = LayerShape {
        hidden,
        intermediate: c.intermediate_size,
        eps,
        fused: false,
        pre_norm: false,
        bias: c.use_bias,
    };
    let layers = load_layers(
        ckpt,
        c.num_hidden_layers,
        &shape,
        |i, tensor| p(&format!("encoder.layer.{i}.{tensor}")),
        device,
    )?;
    // The masked-LM head: GENEB probes the encoder's hidden states.
    ckpt.skip_prefix("cls.");
    ckpt.skip_prefix(&p("pooler."));
    Ok(Bert {
        widest: shape.widest(),
        embeddings,
        positions: Positions::PairRotary(PairRotary::new(head_dim)),
        layers,
        pre_norm: false,
        final_norm: None,
        heads,
        hidden,
        activation,
        max_tokens: c.max_position_embeddings,
        device: device.clone(),
    })
}
