//! OLMo (AI2's `olmo/model.py`, PyPI `ai2-olmo`), the decoder of Omni-DNA, whose config.json
//! names it `olmo-gfm` (`hf_olmo` in OLMo's own wrapper): sequential pre-norm blocks, LayerNorms
//! with or without weights, rotary positions, a fused `att_proj` (query, key and value rows) with
//! `clip_qkv`'s clamp, grouped-query attention, a fused SwiGLU `ff_proj` whose first half is the
//! value and second half the gate (`SwiGLU.forward`: `x, gate = x.chunk(2)`; `silu(gate) * x`),
//! causal attention and a final LayerNorm `ln_f`.
//!
//! GENEB's `omnidna.py` pools `hidden_states[-1]`, `ln_f`'s output, which `forward` returns.
//! Positions count from the batch's first column, as OLMo's rotary tables do; with right padding
//! every real token sits where it would unpadded.

use super::{
    Arch, ArchSpec, Kept, Pooling, check_layers, epsilon, optional_size, parse_config, size,
};
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::positions::Rotary;
use crate::encoder::layers::{
    Activation, EmbeddingTable, GroupedQueryAttention, LayerNorm, Linear, causal_bias,
    checkpoint_prefix, config_error, head_dim, padding_bias,
};
use crate::tokenize::TokenizerChoice;
use crate::{Error, Result};
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;
use serde_json::Value;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::OLMO.architecture,
    family: family::OLMO.name,
    serves: "zehui127/Omni-DNA-*",
    matches: |config| {
        matches!(
            config.get("model_type").and_then(|v| v.as_str()),
            Some("olmo-gfm" | "hf_olmo")
        )
    },
    tokenizer: TokenizerChoice::Files,
    poolings: &[Pooling::MaskedMean],
    load: |config, ckpt, compute| Ok(Box::new(Olmo::load(config, ckpt, &compute.device)?)),
    recipe: &crate::encoder::recipe::GENERIC,
    published_config: None,
};

/// The config.json keys OLMo's `ModelConfig` reads for the forward pass, with its defaults.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    d_model: usize,
    #[serde(deserialize_with = "size")]
    n_heads: usize,
    #[serde(default, deserialize_with = "optional_size")]
    n_kv_heads: Option<usize>,
    #[serde(default)]
    multi_query_attention: Option<bool>,
    #[serde(deserialize_with = "size")]
    n_layers: usize,
    #[serde(default = "default_mlp_ratio", deserialize_with = "size")]
    mlp_ratio: usize,
    #[serde(default, deserialize_with = "optional_size")]
    mlp_hidden_size: Option<usize>,
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    #[serde(default, deserialize_with = "optional_size")]
    embedding_size: Option<usize>,
    #[serde(default = "default_max_sequence_length", deserialize_with = "size")]
    max_sequence_length: usize,
    #[serde(default)]
    rope: bool,
    #[serde(default = "default_rope_theta")]
    rope_theta: f64,
    #[serde(default)]
    alibi: bool,
    #[serde(default = "default_block_type")]
    block_type: String,
    #[serde(default = "default_activation_type")]
    activation_type: String,
    #[serde(default = "default_layer_norm_type")]
    layer_norm_type: String,
    #[serde(default = "yes")]
    layer_norm_with_affine: bool,
    #[serde(default)]
    bias_for_layer_norm: Option<bool>,
    #[serde(default = "yes")]
    include_bias: bool,
    #[serde(default = "default_layer_norm_eps", deserialize_with = "epsilon")]
    layer_norm_eps: f64,
    #[serde(default)]
    clip_qkv: Option<f64>,
    #[serde(default)]
    attention_layer_norm: bool,
    #[serde(default)]
    embedding_layer_norm: bool,
    #[serde(default)]
    norm_after: bool,
    #[serde(default = "yes")]
    weight_tying: bool,
}

fn default_mlp_ratio() -> usize {
    4
}

fn default_max_sequence_length() -> usize {
    1024
}

fn default_rope_theta() -> f64 {
    10_000.0
}

fn default_block_type() -> String {
    "sequential".into()
}

fn default_activation_type() -> String {
    "swiglu".into()
}

fn default_layer_norm_type() -> String {
    "default".into()
}

fn default_layer_norm_eps() -> f64 {
    1e-5
}

fn yes() -> bool {
    true
}

impl Config {
    /// `ModelConfig.effective_n_kv_heads`.
    fn kv_heads(&self) -> Result<usize> {
        let heads = self.n_heads;
        match (self.n_kv_heads, self.multi_query_attention) {
            (None, Some(true)) => Ok(1),
            (None, _) => Ok(heads),
            (Some(kv), None) => Ok(kv),
            (Some(kv), Some(multi_query)) if kv == if multi_query { 1 } else { heads } => Ok(kv),
            (Some(kv), Some(multi_query)) => Err(config_error(&format!(
                "n_kv_heads {kv} contradicts multi_query_attention {multi_query}"
            ))),
        }
    }

    /// What geneb does not run, named rather than computed wrongly.
    fn refuse_unsupported(&self) -> Result<()> {
        let unsupported = |what: String| {
            Err(Error::in_file(
                "config.json",
                format!(
                    "{what}: geneb runs OLMo's sequential pre-norm blocks with rotary \
                         positions and SwiGLU, as Omni-DNA's"
                ),
            ))
        };
        if self.block_type != "sequential" {
            return unsupported(format!("block_type '{}'", self.block_type));
        }
        if self.activation_type != "swiglu" {
            return unsupported(format!("activation_type '{}'", self.activation_type));
        }
        if !matches!(self.layer_norm_type.as_str(), "default" | "low_precision") {
            return unsupported(format!("layer_norm_type '{}'", self.layer_norm_type));
        }
        if !self.rope || self.alibi {
            return unsupported("positions other than rotary (rope false or alibi)".into());
        }
        if self.attention_layer_norm || self.embedding_layer_norm || self.norm_after {
            return unsupported(
                "attention_layer_norm, embedding_layer_norm or norm_after set".into(),
            );
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 1.0) {
            return Err(config_error(&format!(
                "'rope_theta' is {}: rotary positions need a base above 1",
                self.rope_theta
            )));
        }
        if self
            .clip_qkv
            .is_some_and(|clip| !(clip.is_finite() && clip > 0.0))
        {
            return Err(config_error("'clip_qkv' is not a positive number"));
        }
        if self.max_sequence_length == 0 {
            return Err(config_error("'max_sequence_length' is 0"));
        }
        Ok(())
    }
}

struct Layer {
    attn_norm: LayerNorm,
    /// `att_proj` split into queries, keys and values, and `attn_out`.
    attention: GroupedQueryAttention,
    ff_norm: LayerNorm,
    /// `ff_proj`'s first half.
    value_proj: Linear,
    /// `ff_proj`'s second half.
    gate_proj: Linear,
    ff_out: Linear,
}

pub struct Olmo {
    wte: EmbeddingTable,
    layers: Vec<Layer>,
    ln_f: LayerNorm,
    rotary: Rotary,
    hidden: usize,
    /// The SwiGLU's width: half of `ff_proj`'s rows.
    intermediate: usize,
    max_tokens: usize,
    device: Device,
}

impl Olmo {
    /// The decoder `config` describes, from an `OLMoForCausalLM` (`model.transformer.` prefix)
    /// or a bare `OLMo` (`transformer.`) checkpoint; the language-model head is skipped.
    pub fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Olmo> {
        let c: Config = parse_config(config)?;
        c.refuse_unsupported()?;
        let (hidden, heads) = (c.d_model, c.n_heads);
        let head_dim = head_dim(hidden, heads)?;
        let kv_heads = c.kv_heads()?;
        if !head_dim.is_multiple_of(2) {
            return Err(config_error(&format!(
                "the attention heads are {head_dim} wide: rotary positions need an even width"
            )));
        }
        if kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
            return Err(config_error(&format!(
                "n_kv_heads {kv_heads} does not divide n_heads {heads}"
            )));
        }
        let ff_rows = c
            .mlp_hidden_size
            .unwrap_or(c.mlp_ratio.saturating_mul(hidden));
        if ff_rows == 0 || !ff_rows.is_multiple_of(2) {
            return Err(config_error(&format!(
                "the feed-forward projection has {ff_rows} rows: SwiGLU halves an even number"
            )));
        }
        let intermediate = ff_rows / 2;
        let rows = c.embedding_size.unwrap_or(c.vocab_size);
        let eps = c.layer_norm_eps;
        let norm_bias = c.bias_for_layer_norm.unwrap_or(c.include_bias);
        let norm = |ckpt: &mut Checkpoint, name: &str| {
            if c.layer_norm_with_affine {
                LayerNorm::load_with_bias(ckpt, name, hidden, eps, norm_bias, device)
            } else {
                Ok(LayerNorm::without_affine(hidden, eps, device))
            }
        };
        let probe = "wte.weight";
        let prefix =
            checkpoint_prefix(ckpt, &["model.transformer.", "transformer."], probe, "OLMo")?;
        let p = |name: &str| format!("{prefix}{name}");
        let wte = EmbeddingTable::load(ckpt, &p(probe), [rows, hidden], device)?;
        let n_layers = check_layers("n_layers", c.n_layers, ckpt, |i| {
            p(&format!("blocks.{i}.attn_out.weight"))
        })?;
        let kv_width = kv_heads * head_dim;
        let bias = c.include_bias;
        let mut layers = Vec::with_capacity(n_layers);
        for i in 0..n_layers {
            let l = |name: &str| p(&format!("blocks.{i}.{name}"));
            // att_proj stacks [hidden query rows; kv_width key rows; kv_width value rows].
            let [q_proj, k_proj, v_proj] = Linear::load_stacked(
                ckpt,
                &l("att_proj"),
                hidden,
                [hidden, kv_width, kv_width],
                bias,
                device,
            )?;
            let attention = GroupedQueryAttention {
                q_proj,
                k_proj,
                v_proj,
                out_proj: Linear::load(ckpt, &l("attn_out"), hidden, hidden, bias, device)?,
                heads,
                kv_heads,
                head_dim,
                clip: c.clip_qkv.map(|clip| clip as f32),
            };
            let [value_proj, gate_proj] =
                Linear::load_parts(ckpt, &l("ff_proj"), hidden, intermediate, bias, device)?;
            layers.push(Layer {
                attn_norm: norm(ckpt, &l("attn_norm"))?,
                attention,
                ff_norm: norm(ckpt, &l("ff_norm"))?,
                value_proj,
                gate_proj,
                ff_out: Linear::load(ckpt, &l("ff_out"), intermediate, hidden, bias, device)?,
            });
        }
        let ln_f = norm(ckpt, &p("ln_f"))?;
        if !c.weight_tying {
            // The untied language-model head is not part of the decoder GENEB pools.
            ckpt.skip_prefix(&p("ff_out."));
        }
        Ok(Olmo {
            wte,
            layers,
            ln_f,
            rotary: Rotary::from_theta(head_dim, c.rope_theta, None),
            hidden,
            intermediate,
            max_tokens: c.max_sequence_length,
            device: device.clone(),
        })
    }
}

impl Arch for Olmo {
    fn hidden_size(&self) -> usize {
        self.hidden
    }

    fn token_rows(&self) -> usize {
        self.wte.rows()
    }

    /// OLMo's rotary tables have no end, but Omni-DNA was trained on `max_sequence_length`
    /// tokens and omnidna.py cuts there.
    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The SwiGLU's value and gate, alive together.
    fn widest_activation(&self) -> usize {
        (2 * self.intermediate).max(3 * self.hidden)
    }

    /// `hidden_states[-1]` [batch, tokens, hidden]: `ln_f`'s output.
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let tokens = input_ids.dims()[1];
        let mut x = self.wte.forward(input_ids);
        let bias = padding_bias(attention_mask) + causal_bias(tokens, &self.device);
        let rotary = self.rotary.tables(tokens, &self.device);
        let deepest = kept.deepest();
        for (i, layer) in self.layers.iter().enumerate().take(deepest) {
            kept.offer(i, &x);
            let h = layer.attn_norm.forward(x.clone());
            x = x + layer.attention.forward(h, &rotary, bias.clone());
            let h = layer.ff_norm.forward(x.clone());
            let gated = Activation::Silu.apply(layer.gate_proj.forward(h.clone()))
                * layer.value_proj.forward(h);
            x = x + layer.ff_out.forward(gated);
        }
        if deepest == self.layers.len() {
            x = self.ln_f.forward(x);
        }
        kept.offer(deepest, &x);
        x
    }

    /// As OLMo's code gives them (`output_hidden_states`): the embeddings, each block's output,
    /// the last after the final LayerNorm.
    fn layers(&self) -> usize {
        self.layers.len()
    }

    fn family(&self) -> &'static str {
        family::OLMO.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Omni-DNA-1B's forward-pass keys (its config.json), tiny widths.
    fn omni_dna(changes: Value) -> Value {
        let mut config = serde_json::json!({
            "model_type": "olmo-gfm", "d_model": 32, "n_heads": 4, "n_kv_heads": null,
            "n_layers": 2, "mlp_ratio": 8, "mlp_hidden_size": null, "vocab_size": 96,
            "embedding_size": 96, "max_sequence_length": 250, "rope": true, "alibi": false,
            "block_type": "sequential", "activation_type": "swiglu",
            "layer_norm_type": "default", "layer_norm_with_affine": false, "include_bias": false,
            "clip_qkv": null, "weight_tying": true
        });
        for (key, value) in changes.as_object().unwrap() {
            config[key] = value.clone();
        }
        config
    }

    fn refusal(changes: Value) -> String {
        let c: Config = parse_config(&omni_dna(changes)).unwrap();
        c.refuse_unsupported()
            .and_then(|()| c.kv_heads())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn omni_dnas_config_is_read_and_what_geneb_does_not_run_is_named() {
        let c: Config = parse_config(&omni_dna(serde_json::json!({}))).unwrap();
        c.refuse_unsupported().unwrap();
        assert_eq!(c.kv_heads().unwrap(), 4);
        let mqa: Config = parse_config(&omni_dna(
            serde_json::json!({"multi_query_attention": true}),
        ))
        .unwrap();
        assert_eq!(mqa.kv_heads().unwrap(), 1);
        for (changes, named) in [
            (
                serde_json::json!({"block_type": "llama"}),
                "block_type 'llama'",
            ),
            (
                serde_json::json!({"activation_type": "gelu"}),
                "activation_type 'gelu'",
            ),
            (
                serde_json::json!({"layer_norm_type": "rms"}),
                "layer_norm_type 'rms'",
            ),
            (
                serde_json::json!({"rope": false}),
                "positions other than rotary",
            ),
            (serde_json::json!({"norm_after": true}), "norm_after"),
            (serde_json::json!({"clip_qkv": -1.0}), "'clip_qkv'"),
            (
                serde_json::json!({"n_kv_heads": 2, "multi_query_attention": true}),
                "contradicts multi_query_attention",
            ),
        ] {
            let error = refusal(changes);
            assert!(
                error.contains("config.json") && error.contains(named),
                "{error}"
            );
        }
    }
}
