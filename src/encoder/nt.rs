//! Nucleotide Transformer v2: an ESM-style encoder — pre-LayerNorm blocks, rotary position
//! embeddings on queries and keys, a bias-free SwiGLU feed-forward (`add_bias_fnn: false`), a
//! final LayerNorm — as in the checkpoints' own `modeling_esm.py` (InstaDeepAI/nucleotide-
//! transformer-v2-*). The 6-mer and 3-mer variants differ only in their tokenizer.
//!
//! GENEB's reference extractor pools `hidden_states[-1]` (after the final LayerNorm) with a
//! mean over the attention mask, `<cls>` included.

use super::layers::{
    LayerNorm, Linear, attention, checkpoint_prefix, config_epsilon, config_layers, config_usize,
    head_dim, load_qkv, padding_bias, split_heads, upload,
};
use crate::hf::Checkpoint;
use crate::{Error, Result};
use burn::tensor::activation::silu;
use burn::tensor::module::embedding;
use burn::tensor::{Device, Int, Tensor};

const PREFIXES: [&str; 2] = ["esm.", ""];

struct Layer {
    attention_norm: LayerNorm,
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    ffn_norm: LayerNorm,
    /// [hidden → 2·intermediate]: SiLU(first half) ⊙ second half.
    gated: Linear,
    output: Linear,
}

pub struct NucleotideTransformer {
    word_embeddings: Tensor<2>,
    layers: Vec<Layer>,
    final_norm: LayerNorm,
    /// Rotary inverse frequencies, [head_dim / 2].
    inv_freq: Vec<f32>,
    heads: usize,
    hidden: usize,
    intermediate: usize,
    max_tokens: usize,
    device: Device,
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
        let unsupported = |what: String| {
            Err(Error::in_file(
                "config.json",
                format!(
                    "{what}: geneb runs Nucleotide Transformer v2 (rotary, SwiGLU, no token dropout)"
                ),
            ))
        };
        let position_type = config
            .get("position_embedding_type")
            .and_then(|v| v.as_str())
            .unwrap_or("absolute");
        if position_type != "rotary" {
            return unsupported(format!(
                "position_embedding_type '{position_type}' (NT v1?)"
            ));
        }
        if config.get("token_dropout").and_then(|v| v.as_bool()) == Some(true) {
            return unsupported("token_dropout: true".into());
        }
        if config
            .get("emb_layer_norm_before")
            .and_then(|v| v.as_bool())
            == Some(true)
        {
            return unsupported("emb_layer_norm_before: true".into());
        }
        let hidden = config_usize(config, "hidden_size")?;
        let heads = config_usize(config, "num_attention_heads")?;
        let intermediate = config_usize(config, "intermediate_size")?;
        let vocab = config_usize(config, "vocab_size")?;
        let max_tokens = config_usize(config, "max_position_embeddings")?;
        let eps = config_epsilon(config, "layer_norm_eps", Some(1e-12))?;
        let ffn_bias = config
            .get("add_bias_fnn")
            .and_then(|v| v.as_bool())
            .unwrap_or(true);
        let head_dim = head_dim(hidden, heads)?;
        let probe = "embeddings.word_embeddings.weight";
        let prefix = checkpoint_prefix(ckpt, &PREFIXES, probe, "ESM")?;
        let p = |name: &str| format!("{prefix}{name}");
        let word = ckpt.take(&p(probe), &[vocab, hidden])?;
        ckpt.skip(&p("embeddings.position_ids"));

        let n_layers = config_layers(config, "num_hidden_layers", ckpt, |i| {
            p(&format!("encoder.layer.{i}.attention.output.dense.weight"))
        })?;
        let mut layers = Vec::with_capacity(n_layers);
        let mut inv_freq = None;
        for i in 0..n_layers {
            let l = |name: &str| p(&format!("encoder.layer.{i}.{name}"));
            let (query, key, value) = load_qkv(ckpt, &l("attention.self"), hidden, device)?;
            // Every layer stores the same rotary frequencies; the first copy is used.
            let freq = ckpt.take(
                &l("attention.self.rotary_embeddings.inv_freq"),
                &[head_dim / 2],
            )?;
            inv_freq.get_or_insert(freq);
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
                gated: Linear::load(
                    ckpt,
                    &l("intermediate.dense"),
                    hidden,
                    2 * intermediate,
                    ffn_bias,
                    device,
                )?,
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
        Ok(NucleotideTransformer {
            word_embeddings: upload(word, [vocab, hidden], device),
            layers,
            final_norm,
            inv_freq: inv_freq.unwrap_or_default(),
            heads,
            hidden,
            intermediate,
            max_tokens,
            device: device.clone(),
        })
    }

    /// Floats per token of the widest activation: the SwiGLU projection.
    pub fn widest_activation(&self) -> usize {
        2 * self.intermediate
    }

    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// last_hidden_state [batch, tokens, hidden] (after the final LayerNorm).
    pub fn forward(&self, input_ids: Tensor<2, Int>, attention_mask: Tensor<2>) -> Tensor<3> {
        let [batch, tokens] = input_ids.dims();
        // ESM zeroes the embeddings of padding before the first block.
        let keep = attention_mask.clone().reshape([batch, tokens, 1]);
        let mut x = embedding(self.word_embeddings.clone(), input_ids) * keep;
        let bias = padding_bias(attention_mask);
        let (cos, sin) = self.rotary_tables(tokens);
        let head_dim = self.hidden / self.heads;
        for layer in &self.layers {
            let h = layer.attention_norm.forward(x.clone());
            // ESM scales the queries before rotating them.
            let q = split_heads(layer.query.forward(h.clone()), self.heads)
                * (head_dim as f64).powf(-0.5);
            let k = split_heads(layer.key.forward(h.clone()), self.heads);
            let v = split_heads(layer.value.forward(h), self.heads);
            let q = rotate(q, &cos, &sin);
            let k = rotate(k, &cos, &sin);
            let context = attention(q, k, v, 1.0, bias.clone());
            let attended = layer.attention_out.forward(context) + x;
            let both = layer
                .gated
                .forward(layer.ffn_norm.forward(attended.clone()));
            let gate = both.clone().narrow(2, 0, self.intermediate);
            let value = both.narrow(2, self.intermediate, self.intermediate);
            x = layer.output.forward(silu(gate) * value) + attended;
        }
        self.final_norm.forward(x)
    }

    /// cos and sin of position · inv_freq, duplicated over both halves: [1, 1, tokens, head_dim].
    fn rotary_tables(&self, tokens: usize) -> (Tensor<4>, Tensor<4>) {
        let half = self.inv_freq.len();
        let mut cos = Vec::with_capacity(tokens * 2 * half);
        let mut sin = Vec::with_capacity(tokens * 2 * half);
        for t in 0..tokens {
            for _ in 0..2 {
                for f in &self.inv_freq {
                    // f32 product as torch.outer computes it, then cos/sin.
                    let angle = t as f32 * f;
                    cos.push(angle.cos());
                    sin.push(angle.sin());
                }
            }
        }
        (
            upload(cos, [1, 1, tokens, 2 * half], &self.device),
            upload(sin, [1, 1, tokens, 2 * half], &self.device),
        )
    }
}

/// x·cos + rotate_half(x)·sin, rotate_half(x) = [−x₂, x₁] over the two halves of head_dim.
fn rotate(x: Tensor<4>, cos: &Tensor<4>, sin: &Tensor<4>) -> Tensor<4> {
    let half = x.dims()[3] / 2;
    let first = x.clone().narrow(3, 0, half);
    let second = x.clone().narrow(3, half, half);
    let rotated = Tensor::cat(vec![-second, first], 3);
    x * cos.clone() + rotated * sin.clone()
}
