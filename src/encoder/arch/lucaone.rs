//! LucaOne (LucaGroup/LucaOne-*, `model_type` "lucaone", remote code `LucaGPLMModel`) as the
//! PyPI package `lucaone` 1.1.1 computes it — the same modeling file the hub repositories serve
//! as remote code: token embeddings (times `embed_scale`), plus the token-type row 0 (GENEB's
//! extractor passes no `token_type_ids`, so every token takes type 0, the gene type), plus
//! learned positions where `no_position_embeddings` is false, an optional LayerNorm, padding
//! tokens zeroed; then pre-LayerNorm blocks of rotary self-attention (`rotate_half` rotary on
//! queries and keys, PyTorch's SDPA scale 1/√head_dim) and an exact-GELU feed-forward of
//! 4 × hidden (the config's `ffn_dim` is not read by the code); a final LayerNorm. Every
//! LayerNorm is `torch.nn.LayerNorm` (or apex's) at its default ε 1e-5: the config's
//! `layer_norm_eps` is not read either.
//!
//! GENEB's extractor (`embedding_pipeline/extractors/lucaone.py`) loads it with
//! `task_level="token_level"`, `task_type="embedding"` (config attributes `LucaGPLMModel`
//! ignores), encodes each sequence with `seq_type="gene"` ([CLS] + A→1, T/U→2, C→3, G→4, any
//! other→5 + [SEP], cut at `max_position_embeddings` tokens with [SEP] kept last), pads on the
//! right with [PAD] and pools `last_hidden_state` by the attention mask.
//!
//! Layer K (`hidden_states`) follows the reference's encoder layers as its `repr_layers` do
//! (ESM's convention): 0 the embeddings' output (padding zeroed), K the output of layer K, the
//! last one after the last LayerNorm (`last_hidden_state`).

use super::{Arch, ArchSpec, Kept, Pooling, check_layers, parse_config, size};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::positions::Rotary;
use crate::encoder::layers::{
    Activation, EmbeddingTable, LayerNorm, Linear, attention, checkpoint_prefix, head_dim,
    padding_bias, split_heads, upload,
};
use crate::tokenize::TokenizerChoice;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;

/// `LucaGPLM1bLayerNorm` (apex's FusedLayerNorm or torch's LayerNorm) at its default ε.
const LAYER_NORM_EPS: f64 = 1e-5;
/// `LucaGPLMRotaryEmbedding`'s base.
const ROTARY_BASE: f64 = 10_000.0;
/// A bare `LucaGPLMModel` or one inside `LucaGPLMForMaskedLM` (`base_model_prefix`).
const PREFIXES: [&str; 2] = ["", "lucaone."];

pub const SPEC: ArchSpec = ArchSpec {
    name: family::LUCAONE.architecture,
    family: family::LUCAONE.name,
    serves: "LucaGroup/LucaOne-*",
    matches,
    tokenizer: TokenizerChoice::LucaOneGene,
    poolings: &[Pooling::MaskedMean],
    load: |config, ckpt, compute| Ok(Box::new(LucaOne::load(config, ckpt, &compute.device)?)),
    recipe: &crate::encoder::recipe::LUCAONE,
    published_config: None,
};

/// The `config.json` keys `LucaGPLMModel` reads; absent keys take `LucaGPLMConfig`'s defaults.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    hidden_size: usize,
    #[serde(deserialize_with = "size")]
    num_attention_heads: usize,
    #[serde(deserialize_with = "size")]
    num_hidden_layers: usize,
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    #[serde(default = "default_positions", deserialize_with = "size")]
    max_position_embeddings: usize,
    #[serde(default = "default_type_vocab", deserialize_with = "size")]
    type_vocab_size: usize,
    #[serde(default = "yes")]
    no_position_embeddings: bool,
    #[serde(default)]
    no_token_type_embeddings: bool,
    #[serde(default)]
    use_embed_layer_norm: bool,
    #[serde(default = "yes")]
    use_last_layer_norm: bool,
    #[serde(default = "one")]
    embed_scale: f32,
    #[serde(default, deserialize_with = "super::optional_size")]
    pad_token_id: Option<usize>,
}

fn default_positions() -> usize {
    4096
}
fn default_type_vocab() -> usize {
    2
}
fn yes() -> bool {
    true
}
fn one() -> f32 {
    1.0
}

/// Whether `config.json` describes a LucaOne checkpoint.
pub fn matches(config: &serde_json::Value) -> bool {
    config["model_type"] == "lucaone"
        || config["architectures"].as_array().is_some_and(|a| {
            a.iter()
                .any(|n| n.as_str().is_some_and(|n| n.starts_with("LucaGPLM")))
        })
}

struct Layer {
    pre_layer_norm: LayerNorm,
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    out_proj: Linear,
    post_layer_norm: LayerNorm,
    fc1: Linear,
    fc2: Linear,
}

pub struct LucaOne {
    embed_tokens: EmbeddingTable,
    /// What every token adds besides its own embedding: `embed_scale` × the type-0 row, and
    /// `embed_scale` × the learned position rows where the model has them ([positions, hidden]).
    token_type: Option<Tensor<1>>,
    positions: Option<Tensor<2>>,
    embed_scale: f32,
    embed_layer_norm: Option<LayerNorm>,
    pad_token_id: i64,
    rotary: Rotary,
    layers: Vec<Layer>,
    last_layer_norm: Option<LayerNorm>,
    heads: usize,
    hidden: usize,
    max_tokens: usize,
    device: Device,
}

impl LucaOne {
    /// Builds from config.json and the checkpoint on `device`, taking every tensor it uses;
    /// errors name a missing or mis-shaped tensor. (The caller calls `ckpt.finish()` afterwards.)
    pub fn load(
        config: &serde_json::Value,
        ckpt: &mut Checkpoint,
        device: &Device,
    ) -> Result<Self> {
        let c: Config = parse_config(config)?;
        let (hidden, heads) = (c.hidden_size, c.num_attention_heads);
        let head_dim = head_dim(hidden, heads)?;
        let ffn = 4 * hidden;
        let probe = "embeddings.embed_tokens.weight";
        let prefix = checkpoint_prefix(ckpt, &PREFIXES, probe, "LucaOne")?;
        let p = |name: &str| format!("{prefix}{name}");
        let embed_tokens = EmbeddingTable::load(ckpt, &p(probe), [c.vocab_size, hidden], device)?;
        let token_type = if c.no_token_type_embeddings {
            None
        } else {
            let table = ckpt.take(
                &p("embeddings.embed_type.weight"),
                &[c.type_vocab_size, hidden],
            )?;
            // Only row 0 is ever used: the extractor passes no token types.
            Some(upload(table[..hidden].to_vec(), [hidden], device))
        };
        let positions = if c.no_position_embeddings {
            None
        } else {
            let table = ckpt.take(
                &p("embeddings.embed_pos.weight"),
                &[c.max_position_embeddings, hidden],
            )?;
            Some(upload(table, [c.max_position_embeddings, hidden], device))
        };
        let embed_layer_norm = c
            .use_embed_layer_norm
            .then(|| {
                LayerNorm::load(
                    ckpt,
                    &p("embeddings.embed_layer_norm"),
                    hidden,
                    LAYER_NORM_EPS,
                    device,
                )
            })
            .transpose()?;
        let n_layers = check_layers("num_hidden_layers", c.num_hidden_layers, ckpt, |i| {
            p(&format!("encoder.layers.{i}.fc2.weight"))
        })?;
        let mut layers = Vec::with_capacity(n_layers);
        let mut inv_freq = None;
        for i in 0..n_layers {
            let l = |name: &str| p(&format!("encoder.layers.{i}.{name}"));
            let linear = |ckpt: &mut Checkpoint, name: &str, from: usize, to: usize| {
                Linear::load(ckpt, &l(name), from, to, true, device)
            };
            // Every layer holds the same rotary frequencies (a buffer); the first copy is used.
            let frequencies = l("self_attn.rot_emb.inv_freq");
            if ckpt.contains(&frequencies) {
                let freq = ckpt.take_buffer(&frequencies, &[head_dim / 2])?;
                inv_freq.get_or_insert(freq);
            }
            layers.push(Layer {
                pre_layer_norm: LayerNorm::load(
                    ckpt,
                    &l("pre_layer_norm"),
                    hidden,
                    LAYER_NORM_EPS,
                    device,
                )?,
                q_proj: linear(ckpt, "self_attn.q_proj", hidden, hidden)?,
                k_proj: linear(ckpt, "self_attn.k_proj", hidden, hidden)?,
                v_proj: linear(ckpt, "self_attn.v_proj", hidden, hidden)?,
                out_proj: linear(ckpt, "self_attn.out_proj", hidden, hidden)?,
                post_layer_norm: LayerNorm::load(
                    ckpt,
                    &l("post_layer_norm"),
                    hidden,
                    LAYER_NORM_EPS,
                    device,
                )?,
                fc1: linear(ckpt, "fc1", hidden, ffn)?,
                fc2: linear(ckpt, "fc2", ffn, hidden)?,
            });
        }
        let last_layer_norm = c
            .use_last_layer_norm
            .then(|| {
                LayerNorm::load(
                    ckpt,
                    &p("encoder.last_layer_norm"),
                    hidden,
                    LAYER_NORM_EPS,
                    device,
                )
            })
            .transpose()?;
        // The masked-LM head is not part of the encoder GENEB probes.
        ckpt.skip_prefix("lm_head.");
        // A checkpoint saved without the buffer: the frequencies `__init__` computes.
        let rotary = match inv_freq {
            Some(freq) => Rotary::new(freq),
            None => Rotary::from_theta(head_dim, ROTARY_BASE, None),
        };
        Ok(LucaOne {
            embed_tokens,
            token_type,
            positions,
            embed_scale: c.embed_scale,
            embed_layer_norm,
            pad_token_id: c.pad_token_id.unwrap_or(0) as i64,
            rotary,
            layers,
            last_layer_norm,
            heads,
            hidden,
            max_tokens: c.max_position_embeddings,
            device: device.clone(),
        })
    }

    /// `LucaGPLMEmbeddings.forward` at inference, token types all 0.
    fn embed(&self, input_ids: Tensor<2, Int>) -> Tensor<3> {
        let [batch, tokens] = input_ids.dims();
        let mut x = self.embed_tokens.forward(input_ids.clone());
        if let Some(table) = &self.positions {
            x = x + table.clone().narrow(0, 0, tokens).unsqueeze::<3>();
        }
        if let Some(row) = &self.token_type {
            x = x + row.clone().reshape([1, 1, self.hidden]);
        }
        // Every term is scaled alike, so the sum is scaled once.
        if self.embed_scale != 1.0 {
            x = x * self.embed_scale;
        }
        if let Some(norm) = &self.embed_layer_norm {
            x = norm.forward(x);
        }
        // The tokens whose id is [PAD] are zeroed (by id, as the reference does).
        let keep = input_ids.not_equal_elem(self.pad_token_id).float();
        x * keep.reshape([batch, tokens, 1])
    }
}

impl Arch for LucaOne {
    /// last_hidden_state [batch, tokens, hidden] (after the last LayerNorm).
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let tokens = input_ids.dims()[1];
        let mut x = self.embed(input_ids);
        let rotary = self.rotary.tables(tokens, &self.device);
        let bias = padding_bias(attention_mask);
        let scale = ((self.hidden / self.heads) as f64).powf(-0.5);
        let deepest = kept.deepest();
        for (i, layer) in self.layers.iter().enumerate().take(deepest) {
            kept.offer(i, &x);
            let h = layer.pre_layer_norm.forward(x.clone());
            let q = rotary.apply(split_heads(layer.q_proj.forward(h.clone()), self.heads));
            let k = rotary.apply(split_heads(layer.k_proj.forward(h.clone()), self.heads));
            let v = split_heads(layer.v_proj.forward(h), self.heads);
            x = layer
                .out_proj
                .forward(attention(q, k, v, scale, bias.clone()))
                + x;
            let h = layer.post_layer_norm.forward(x.clone());
            x = layer
                .fc2
                .forward(Activation::Gelu.apply(layer.fc1.forward(h)))
                + x;
        }
        if deepest == self.layers.len()
            && let Some(norm) = &self.last_layer_norm
        {
            x = norm.forward(x);
        }
        kept.offer(deepest, &x);
        x
    }

    fn layers(&self) -> usize {
        self.layers.len()
    }

    fn hidden_size(&self) -> usize {
        self.hidden
    }

    fn token_rows(&self) -> usize {
        self.embed_tokens.rows()
    }

    /// `max_position_embeddings`: the extractor's `max_length`.
    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Floats per token of the widest activation: the feed-forward's 4 × hidden.
    fn widest_activation(&self) -> usize {
        4 * self.hidden
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }
}
