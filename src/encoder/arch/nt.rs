//! Nucleotide Transformer v2: an ESM-style encoder — pre-LayerNorm blocks, rotary position
//! embeddings on queries and keys, a bias-free SwiGLU feed-forward (`add_bias_fnn: false`), a
//! final LayerNorm — as in the checkpoints' own `modeling_esm.py` (InstaDeepAI/nucleotide-
//! transformer-v2-*). The 6-mer and 3-mer variants differ only in their tokenizer.
//!
//! The same file runs transformers' own ESM as Nucleotide Transformer v1 uses it
//! (nucleotide-transformer-2.5b-multi-species, …): learned absolute positions counted from
//! `pad_token_id + 1`, `token_dropout`'s rescaling of the embeddings, an optional LayerNorm
//! before the blocks, and a GELU feed-forward with biases. Which feed-forward a checkpoint has
//! is read from its first layer's `intermediate.dense` (2 × `intermediate_size` rows: SwiGLU).
//!
//! GENEB's reference extractor pools `hidden_states[-1]` (after the final LayerNorm) with a
//! mean over the attention mask, `<cls>` included.

use super::{
    Arch, ArchSpec, Kept, Pooling, check_layers, epsilon, parse_config, size,
    transformers_layer_norm_eps,
};
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::config_error;
use crate::encoder::layers::positions::Rotary;
use crate::encoder::layers::{
    Activation, EmbeddingTable, GluProjection, LayerNorm, Linear, attention, checkpoint_prefix,
    head_dim, load_qkv, padding_bias, split_heads, upload,
};
use crate::tokenize::TokenizerChoice;
use crate::{Error, Result};
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;

const PREFIXES: [&str; 2] = ["esm.", ""];

struct Layer {
    attention_norm: LayerNorm,
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    ffn_norm: LayerNorm,
    feed_forward: FeedForward,
    output: Linear,
}

#[allow(clippy::large_enum_variant, reason = "one per layer, built once")]
enum FeedForward {
    /// NT-v2's `intermediate.dense` [hidden → 2·intermediate]: SiLU(first half) ⊙ second half.
    SwiGlu(GluProjection),
    /// ESM's own: `intermediate.dense` [hidden → intermediate], exact GELU.
    Gelu(Linear),
}

/// Where a token's position enters.
#[allow(clippy::large_enum_variant, reason = "one per model, built once")]
enum Positions {
    /// Rotary, on queries and keys (NT-v2).
    Rotary(Rotary),
    /// A learned table added to the embeddings, row `pad_token_id + 1 + t` for the t-th
    /// token (transformers' `create_position_ids_from_input_ids` on right-padded input).
    Absolute { table: Tensor<2>, first_row: usize },
}

/// `token_dropout`: the embeddings of `<mask>` tokens zeroed and the rest scaled by
/// (1 − 0.15 · 0.8) / (1 − the sequence's share of `<mask>` tokens), as ESM trained.
struct TokenDropout {
    mask_token_id: i64,
}

pub struct NucleotideTransformer {
    word_embeddings: EmbeddingTable,
    positions: Positions,
    token_dropout: Option<TokenDropout>,
    norm_before: Option<LayerNorm>,
    layers: Vec<Layer>,
    final_norm: LayerNorm,
    heads: usize,
    hidden: usize,
    intermediate: usize,
    max_tokens: usize,
    device: Device,
}

pub const SPEC: ArchSpec = ArchSpec {
    name: family::NT_V2.architecture,
    family: family::NT_V2.name,
    serves: "InstaDeepAI/nucleotide-transformer-v2-*",
    matches,
    tokenizer: TokenizerChoice::Esm,
    poolings: &[Pooling::MaskedMean],
    load: |config, ckpt, compute| {
        Ok(Box::new(NucleotideTransformer::load(
            config,
            ckpt,
            &compute.device,
        )?))
    },
    recipe: &crate::encoder::recipe::NT,
    published_config: None,
};

/// The `config.json` keys the checkpoints' `modeling_esm.py` reads.
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
    #[serde(deserialize_with = "size")]
    max_position_embeddings: usize,
    #[serde(default = "transformers_layer_norm_eps", deserialize_with = "epsilon")]
    layer_norm_eps: f64,
    position_embedding_type: Option<String>,
    token_dropout: Option<bool>,
    emb_layer_norm_before: Option<bool>,
    add_bias_fnn: Option<bool>,
    #[serde(default, deserialize_with = "super::optional_size")]
    pad_token_id: Option<usize>,
    #[serde(default, deserialize_with = "super::optional_size")]
    mask_token_id: Option<usize>,
}

/// NT-v2 repos declare no `model_type` (their config maps to remote code through `auto_map`),
/// so they are recognised by ESM markers: an `EsmForMaskedLM` architecture or esm auto_map,
/// with rotary positions.
pub fn matches(config: &serde_json::Value) -> bool {
    // A declared model_type decides; only a config without one falls back to ESM markers.
    if let Some(model_type) = config.get("model_type").and_then(|v| v.as_str()) {
        return model_type == "esm";
    }
    let esm_arch = config
        .get("architectures")
        .and_then(|v| v.as_array())
        .is_some_and(|a| {
            a.iter()
                .any(|x| x.as_str().is_some_and(|s| s.starts_with("Esm")))
        });
    let esm_auto = config
        .get("auto_map")
        .and_then(|v| v.as_object())
        .is_some_and(|m| {
            m.values()
                .any(|x| x.as_str().is_some_and(|s| s.contains("esm")))
        });
    esm_arch || esm_auto
}

impl NucleotideTransformer {
    pub fn load(
        config: &serde_json::Value,
        ckpt: &mut Checkpoint,
        device: &Device,
    ) -> Result<NucleotideTransformer> {
        let c: Config = parse_config(config)?;
        let position_type = c.position_embedding_type.as_deref().unwrap_or("absolute");
        if !matches!(position_type, "rotary" | "absolute") {
            return Err(Error::in_file(
                "config.json",
                format!(
                    "position_embedding_type '{position_type}' is not supported (geneb runs ESM \
                     with rotary or absolute positions)"
                ),
            ));
        }
        let (hidden, heads, n_layers) = (c.hidden_size, c.num_attention_heads, c.num_hidden_layers);
        let (intermediate, vocab, max_tokens) =
            (c.intermediate_size, c.vocab_size, c.max_position_embeddings);
        let eps = c.layer_norm_eps;
        let ffn_bias = c.add_bias_fnn != Some(false);
        let head_dim = head_dim(hidden, heads)?;
        let probe = "embeddings.word_embeddings.weight";
        let prefix = checkpoint_prefix(ckpt, &PREFIXES, probe, "ESM")?;
        let p = |name: &str| format!("{prefix}{name}");
        let word_embeddings = EmbeddingTable::load(ckpt, &p(probe), [vocab, hidden], device)?;
        ckpt.skip(&p("embeddings.position_ids"));
        let token_dropout = match (c.token_dropout == Some(true), c.mask_token_id) {
            (false, _) => None,
            (true, Some(id)) => Some(TokenDropout {
                mask_token_id: id as i64,
            }),
            (true, None) => {
                return Err(config_error("token_dropout is true without mask_token_id"));
            }
        };
        let norm_before = match c.emb_layer_norm_before {
            Some(true) => Some(p("embeddings.layer_norm")),
            _ => None,
        };
        let norm_before = norm_before
            .map(|name| LayerNorm::load(ckpt, &name, hidden, eps, device))
            .transpose()?;
        let absolute = if position_type == "absolute" {
            let first_row = c.pad_token_id.unwrap_or(0) + 1;
            if max_tokens <= first_row {
                return Err(config_error(&format!(
                    "max_position_embeddings {max_tokens} leaves no position after pad_token_id"
                )));
            }
            let table = ckpt.take(
                &p("embeddings.position_embeddings.weight"),
                &[max_tokens, hidden],
            )?;
            Some((upload(table, [max_tokens, hidden], device), first_row))
        } else {
            None
        };
        // SwiGLU's projection has twice the rows of the feed-forward's width.
        let swiglu = ckpt
            .shape(&p("encoder.layer.0.intermediate.dense.weight"))
            .is_some_and(|shape| shape.first() == Some(&(2 * intermediate)));

        let n_layers = check_layers("num_hidden_layers", n_layers, ckpt, |i| {
            p(&format!("encoder.layer.{i}.attention.output.dense.weight"))
        })?;
        let mut layers = Vec::with_capacity(n_layers);
        let mut inv_freq = None;
        for i in 0..n_layers {
            let l = |name: &str| p(&format!("encoder.layer.{i}.{name}"));
            let (query, key, value) = load_qkv(ckpt, &l("attention.self"), hidden, true, device)?;
            if absolute.is_none() {
                // Every layer stores the same rotary frequencies (a buffer); the first copy is used.
                let freq = ckpt.take_buffer(
                    &l("attention.self.rotary_embeddings.inv_freq"),
                    &[head_dim / 2],
                )?;
                inv_freq.get_or_insert(freq);
            }
            let (dense, width) = (l("intermediate.dense"), intermediate);
            let feed_forward = if swiglu {
                let gated = GluProjection::load(ckpt, &dense, hidden, width, ffn_bias, device)?;
                FeedForward::SwiGlu(gated)
            } else {
                FeedForward::Gelu(Linear::load(ckpt, &dense, hidden, width, ffn_bias, device)?)
            };
            layers.push(Layer {
                attention_norm: LayerNorm::load(
                    ckpt,
                    &l("attention.LayerNorm"),
                    hidden,
                    eps,
                    device,
                )?,
                query,
                key,
                value,
                attention_out: Linear::load(
                    ckpt,
                    &l("attention.output.dense"),
                    hidden,
                    hidden,
                    true,
                    device,
                )?,
                ffn_norm: LayerNorm::load(ckpt, &l("LayerNorm"), hidden, eps, device)?,
                feed_forward,
                output: Linear::load(
                    ckpt,
                    &l("output.dense"),
                    intermediate,
                    hidden,
                    ffn_bias,
                    device,
                )?,
            });
        }
        let final_norm = LayerNorm::load(
            ckpt,
            &p("encoder.emb_layer_norm_after"),
            hidden,
            eps,
            device,
        )?;
        // The masked-LM and contact heads are not part of the encoder GENEB probes.
        ckpt.skip_prefix("lm_head.");
        ckpt.skip_prefix(&p("contact_head."));
        let (positions, max_tokens) = match absolute {
            Some((table, first_row)) => (
                Positions::Absolute { table, first_row },
                max_tokens - first_row,
            ),
            None => (
                Positions::Rotary(Rotary::new(inv_freq.unwrap_or_default())),
                max_tokens,
            ),
        };
        Ok(NucleotideTransformer {
            word_embeddings,
            positions,
            token_dropout,
            norm_before,
            layers,
            final_norm,
            heads,
            hidden,
            intermediate,
            max_tokens,
            device: device.clone(),
        })
    }
}

impl Arch for NucleotideTransformer {
    /// Floats per token of the widest activation: the feed-forward's (SwiGLU's two halves).
    fn widest_activation(&self) -> usize {
        2 * self.intermediate
    }

    fn hidden_size(&self) -> usize {
        self.hidden
    }

    fn token_rows(&self) -> usize {
        self.word_embeddings.rows()
    }

    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// last_hidden_state [batch, tokens, hidden] (after the final LayerNorm).
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let [batch, tokens] = input_ids.dims();
        let mut x = self.word_embeddings.forward(input_ids.clone());
        if let Some(dropout) = &self.token_dropout {
            x = dropout.apply(x, input_ids, attention_mask.clone());
        }
        let rotary = match &self.positions {
            Positions::Rotary(rotary) => Some(rotary.tables(tokens, &self.device)),
            Positions::Absolute { table, first_row } => {
                x = x + table.clone().narrow(0, *first_row, tokens).unsqueeze::<3>();
                None
            }
        };
        if let Some(norm) = &self.norm_before {
            x = norm.forward(x);
        }
        // ESM zeroes the embeddings of padding before the first block.
        let keep = attention_mask.clone().reshape([batch, tokens, 1]);
        x = x * keep;
        let bias = padding_bias(attention_mask);
        let head_dim = self.hidden / self.heads;
        let deepest = kept.deepest();
        for (i, layer) in self.layers.iter().enumerate().take(deepest) {
            kept.offer(i, &x);
            let h = layer.attention_norm.forward(x.clone());
            // ESM scales the queries before rotating them; rotation is linear, so the scale is
            // applied to the scores instead (attention's own, no launch of its own on a GPU).
            let q = split_heads(layer.query.forward(h.clone()), self.heads);
            let k = split_heads(layer.key.forward(h.clone()), self.heads);
            let v = split_heads(layer.value.forward(h), self.heads);
            let (q, k) = match &rotary {
                Some(rotary) => (rotary.apply(q), rotary.apply(k)),
                None => (q, k),
            };
            let context = attention(q, k, v, (head_dim as f64).powf(-0.5), bias.clone());
            let attended = layer.attention_out.forward(context) + x;
            let normed = layer.ffn_norm.forward(attended.clone());
            let inner = match &layer.feed_forward {
                FeedForward::SwiGlu(gated) => gated.forward(normed, Activation::Silu),
                FeedForward::Gelu(dense) => Activation::Gelu.apply(dense.forward(normed)),
            };
            x = layer.output.forward(inner) + attended;
        }
        if deepest == self.layers.len() {
            x = self.final_norm.forward(x);
        }
        kept.offer(deepest, &x);
        x
    }

    /// As transformers' ESM gives them: the embeddings' output (padding zeroed), each layer's,
    /// the last after `emb_layer_norm_after`.
    fn layers(&self) -> usize {
        self.layers.len()
    }

    fn family(&self) -> &'static str {
        match self.positions {
            Positions::Rotary(_) => SPEC.family,
            Positions::Absolute { .. } => family::NT_V1,
        }
    }
}

impl TokenDropout {
    /// x [batch, tokens, hidden] for `input_ids` and the attention mask [batch, tokens].
    fn apply(
        &self,
        x: Tensor<3>,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
    ) -> Tensor<3> {
        let [batch, tokens] = attention_mask.dims();
        let masked = input_ids.equal_elem(self.mask_token_id).float();
        let observed = masked.clone().sum_dim(1) / attention_mask.sum_dim(1);
        let scale = (observed.neg() + 1.0).recip() * (1.0 - 0.15 * 0.8);
        let keep = masked.neg() + 1.0;
        x * keep.reshape([batch, tokens, 1]) * scale.reshape([batch, 1, 1])
    }
}
