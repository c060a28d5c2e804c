//! Llama (transformers' `modeling_llama.py`), the decoder of GENERator, METAGENE-1 and OmniNA:
//! pre-RMSNorm blocks, rotary positions at `rope_theta` (with `rope_scaling`'s linear or Llama 3
//! frequencies), grouped-query attention (`num_key_value_heads` key and value heads shared by the
//! query heads), a SwiGLU feed-forward with separate gate and up projections, causal attention,
//! a final RMSNorm. Mistral (`mistral.rs`) is this decoder with a sliding attention window.
//!
//! GENEB's extractors pool `hidden_states[-1]`, the final RMSNorm's output, which `forward`
//! returns. Positions count from the batch's first column whatever the padding, as transformers
//! counts them without `position_ids`: rotary attention depends only on the distance between
//! two tokens, so a left-padded sequence's real tokens see what they see unpadded.

use super::{
    Arch, ArchSpec, Kept, Pooling, check_layers, epsilon, optional_size, parse_config, size,
};
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::positions::{RopeScaling, Rotary};
use crate::encoder::layers::{
    Activation, EmbeddingTable, GroupedQueryAttention, Linear, RmsNorm, checkpoint_prefix,
    config_error, head_dim, padding_bias, sliding_causal_bias,
};
use crate::tokenize::TokenizerChoice;
use crate::{Error, Result};
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;
use serde_json::Value;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::LLAMA.architecture,
    family: family::LLAMA.name,
    serves: "metagene-ai/METAGENE-1, XLS/OmniNA-*, GenerTeam/GENERator-eukaryote-*",
    matches: |config| model_type(config) == Some("llama"),
    tokenizer: TokenizerChoice::Files,
    poolings: &[Pooling::MaskedMean, Pooling::UnmaskedMean],
    load: |config, ckpt, compute| {
        let decoder = Llama::load(config, ckpt, &compute.device, &family::LLAMA, None)?;
        Ok(Box::new(decoder))
    },
    recipe: &crate::encoder::recipe::GENERIC,
    published_config: None,
};

pub(super) fn model_type(config: &Value) -> Option<&str> {
    config.get("model_type").and_then(|v| v.as_str())
}

/// The `config.json` keys `LlamaConfig` (and `MistralConfig`) read, with their defaults.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    hidden_size: usize,
    #[serde(deserialize_with = "size")]
    intermediate_size: usize,
    #[serde(deserialize_with = "size")]
    num_attention_heads: usize,
    #[serde(default, deserialize_with = "optional_size")]
    num_key_value_heads: Option<usize>,
    #[serde(default, deserialize_with = "optional_size")]
    head_dim: Option<usize>,
    #[serde(deserialize_with = "size")]
    num_hidden_layers: usize,
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    #[serde(deserialize_with = "size")]
    max_position_embeddings: usize,
    #[serde(default = "default_rms_norm_eps", deserialize_with = "epsilon")]
    rms_norm_eps: f64,
    #[serde(default = "default_rope_theta")]
    rope_theta: f64,
    #[serde(default)]
    rope_scaling: Option<Value>,
    #[serde(default = "default_hidden_act")]
    hidden_act: String,
    #[serde(default)]
    attention_bias: bool,
    #[serde(default)]
    mlp_bias: bool,
}

fn default_rms_norm_eps() -> f64 {
    1e-6
}

fn default_rope_theta() -> f64 {
    10_000.0
}

fn default_hidden_act() -> String {
    "silu".into()
}

/// `rope_scaling` as transformers reads it (`rope_type`, or `type` in older configs).
fn rope_scaling(scaling: Option<&Value>) -> Result<Option<RopeScaling>> {
    let Some(scaling) = scaling.filter(|s| !s.is_null()) else {
        return Ok(None);
    };
    let kind = scaling["rope_type"]
        .as_str()
        .or_else(|| scaling["type"].as_str())
        .unwrap_or("(none)");
    let number = |key: &str| -> Result<f32> {
        match scaling[key].as_f64() {
            Some(value) if value.is_finite() && value > 0.0 => Ok(value as f32),
            _ => Err(config_error(&format!(
                "'rope_scaling.{key}' is not a positive number"
            ))),
        }
    };
    Ok(match kind {
        "default" => None,
        "linear" => Some(RopeScaling::Linear {
            factor: number("factor")?,
        }),
        "llama3" => Some(RopeScaling::Llama3 {
            factor: number("factor")?,
            low_freq_factor: number("low_freq_factor")?,
            high_freq_factor: number("high_freq_factor")?,
            original_max_position_embeddings: number("original_max_position_embeddings")?,
        }),
        other => {
            return Err(Error::in_file(
                "config.json",
                format!(
                    "rope_scaling type '{other}' is not supported (geneb runs default, linear \
                     and llama3)"
                ),
            ));
        }
    })
}

struct Layer {
    input_norm: RmsNorm,
    self_attn: GroupedQueryAttention,
    post_attention_norm: RmsNorm,
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
}

pub struct Llama {
    embed_tokens: EmbeddingTable,
    layers: Vec<Layer>,
    norm: RmsNorm,
    rotary: Rotary,
    activation: Activation,
    heads: usize,
    head_dim: usize,
    hidden: usize,
    intermediate: usize,
    max_tokens: usize,
    /// Keys at this distance or farther are not attended (Mistral); None: all earlier keys.
    sliding_window: Option<usize>,
    family: &'static str,
    device: Device,
}

impl Llama {
    /// The decoder `config` describes, from a `LlamaForCausalLM` (`model.` prefix, its
    /// `lm_head` skipped) or a bare `LlamaModel` checkpoint.
    pub fn load(
        config: &Value,
        ckpt: &mut Checkpoint,
        device: &Device,
        family: &'static family::Family,
        sliding_window: Option<usize>,
    ) -> Result<Llama> {
        let c: Config = parse_config(config)?;
        let (hidden, heads) = (c.hidden_size, c.num_attention_heads);
        let head_dim = match c.head_dim {
            Some(width) => width,
            None => head_dim(hidden, heads)?,
        };
        let kv_heads = c.num_key_value_heads.unwrap_or(heads);
        if head_dim == 0 || !head_dim.is_multiple_of(2) {
            return Err(config_error(&format!(
                "the attention heads are {head_dim} wide: rotary positions need an even width"
            )));
        }
        if kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
            return Err(config_error(&format!(
                "num_key_value_heads {kv_heads} does not divide num_attention_heads {heads}"
            )));
        }
        if !(c.rope_theta.is_finite() && c.rope_theta > 1.0) {
            return Err(config_error(&format!(
                "'rope_theta' is {}: rotary positions need a base above 1",
                c.rope_theta
            )));
        }
        if c.max_position_embeddings == 0 {
            return Err(config_error("'max_position_embeddings' is 0"));
        }
        let scaling = rope_scaling(c.rope_scaling.as_ref())?;
        let activation = Activation::from_config(&c.hidden_act)?;
        let (vocab, intermediate, eps) = (c.vocab_size, c.intermediate_size, c.rms_norm_eps);
        let probe = "embed_tokens.weight";
        let prefix = checkpoint_prefix(ckpt, &["model.", ""], probe, "Llama")?;
        let p = |name: &str| format!("{prefix}{name}");
        let embed_tokens = EmbeddingTable::load(ckpt, &p(probe), [vocab, hidden], device)?;
        let n_layers = check_layers("num_hidden_layers", c.num_hidden_layers, ckpt, |i| {
            p(&format!("layers.{i}.self_attn.o_proj.weight"))
        })?;
        let mut layers = Vec::with_capacity(n_layers);
        for i in 0..n_layers {
            let l = |name: &str| p(&format!("layers.{i}.{name}"));
            let mut linear = |name: &str, inputs, outputs, bias| {
                Linear::load(ckpt, &l(name), inputs, outputs, bias, device)
            };
            let (q_width, kv_width) = (heads * head_dim, kv_heads * head_dim);
            let attention_bias = c.attention_bias;
            let self_attn = GroupedQueryAttention {
                q_proj: linear("self_attn.q_proj", hidden, q_width, attention_bias)?,
                k_proj: linear("self_attn.k_proj", hidden, kv_width, attention_bias)?,
                v_proj: linear("self_attn.v_proj", hidden, kv_width, attention_bias)?,
                out_proj: linear("self_attn.o_proj", q_width, hidden, attention_bias)?,
                heads,
                kv_heads,
                head_dim,
                clip: None,
            };
            let gate_proj = linear("mlp.gate_proj", hidden, intermediate, c.mlp_bias)?;
            let up_proj = linear("mlp.up_proj", hidden, intermediate, c.mlp_bias)?;
            let down_proj = linear("mlp.down_proj", intermediate, hidden, c.mlp_bias)?;
            // Checkpoints of older transformers store the rotary frequencies; transformers
            // recomputes them from the config and ignores these, and so does geneb.
            ckpt.skip(&l("self_attn.rotary_emb.inv_freq"));
            layers.push(Layer {
                input_norm: RmsNorm::load(ckpt, &l("input_layernorm"), hidden, eps, device)?,
                self_attn,
                post_attention_norm: RmsNorm::load(
                    ckpt,
                    &l("post_attention_layernorm"),
                    hidden,
                    eps,
                    device,
                )?,
                gate_proj,
                up_proj,
                down_proj,
            });
        }
        let norm = RmsNorm::load(ckpt, &p("norm"), hidden, eps, device)?;
        ckpt.skip(&p("rotary_emb.inv_freq"));
        // The language-model head is not part of the decoder GENEB pools.
        ckpt.skip_prefix("lm_head.");
        Ok(Llama {
            embed_tokens,
            layers,
            norm,
            rotary: Rotary::from_theta(head_dim, c.rope_theta, scaling),
            activation,
            heads,
            head_dim,
            hidden,
            intermediate,
            max_tokens: c.max_position_embeddings,
            sliding_window,
            family: family.name,
            device: device.clone(),
        })
    }
}

impl Arch for Llama {
    fn hidden_size(&self) -> usize {
        self.hidden
    }

    fn token_rows(&self) -> usize {
        self.embed_tokens.rows()
    }

    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The gate's and the up projection's outputs, alive together.
    fn widest_activation(&self) -> usize {
        (2 * self.intermediate).max(3 * self.heads * self.head_dim)
    }

    /// `hidden_states[-1]` [batch, tokens, hidden]: the final RMSNorm's output.
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let tokens = input_ids.dims()[1];
        let mut x = self.embed_tokens.forward(input_ids);
        let bias = padding_bias(attention_mask)
            + sliding_causal_bias(tokens, self.sliding_window, &self.device);
        let rotary = self.rotary.tables(tokens, &self.device);
        let deepest = kept.deepest();
        for (i, layer) in self.layers.iter().enumerate().take(deepest) {
            kept.offer(i, &x);
            let h = layer.input_norm.forward(x.clone());
            x = x + layer.self_attn.forward(h, &rotary, bias.clone());
            let h = layer.post_attention_norm.forward(x.clone());
            let gated = self.activation.apply(layer.gate_proj.forward(h.clone()))
                * layer.up_proj.forward(h);
            x = x + layer.down_proj.forward(gated);
        }
        if deepest == self.layers.len() {
            x = self.norm.forward(x);
        }
        kept.offer(deepest, &x);
        x
    }

    /// As transformers' `output_hidden_states` gives them: the embeddings, each layer's output,
    /// the last after the final RMSNorm.
    fn layers(&self) -> usize {
        self.layers.len()
    }

    fn family(&self) -> &'static str {
        self.family
    }
}
