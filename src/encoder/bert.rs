//! The BERT family: DNABERT (overlapping k-mers), GROVER (BPE), SpliceBERT (single nucleotides)
//! as the standard HF `BertModel` (learned absolute positions, post-LayerNorm, GELU FFN), and
//! DNABERT-2, MosaicBERT-style: no position embeddings but ALiBi attention biases, a fused
//! `Wqkv` projection and a gated-linear-unit FFN. The variant is read from the checkpoint (a
//! fused `Wqkv` tensor), so one loader serves every repo of the family.
//!
//! GENEB's reference extractors pool the final hidden layer with a mean over the attention mask
//! (special tokens included); the pooling itself lives in `hf.rs`.

use super::layers::{
    Activation, LayerNorm, Linear, attention, checkpoint_prefix, config_activation, config_epsilon,
    config_error, config_layers, config_usize, head_dim, load_qkv, padding_bias, split_heads,
    upload,
};
use crate::Result;
use crate::hf::Checkpoint;
use burn::tensor::module::embedding;
use burn::tensor::{Device, Int, Tensor};

/// Checkpoint prefixes: `BertForMaskedLM` stores `bert.…`, a bare `BertModel` nothing.
const PREFIXES: [&str; 2] = ["bert.", ""];

enum Positions {
    /// [max_position_embeddings, hidden]
    Learned(Tensor<2>),
    /// DNABERT-2: one slope per head; bias = −slope·|i − j|.
    Alibi(Vec<f32>),
}

enum SelfAttention {
    Separate {
        query: Linear,
        key: Linear,
        value: Linear,
    },
    Fused(Linear),
}

enum FeedForward {
    Standard {
        intermediate: Linear,
        output: Linear,
    },
    /// DNABERT-2: act(x W_g) ⊙ (x W_v) then W_o, `gated_layers` holding [W_g; W_v].
    Gated {
        gated: Linear,
        output: Linear,
        intermediate_size: usize,
    },
}

struct Layer {
    attention: SelfAttention,
    attention_out: Linear,
    attention_norm: LayerNorm,
    ffn: FeedForward,
    ffn_norm: LayerNorm,
}

pub struct Bert {
    /// Floats per token of the widest activation (fused QKV, or the FFN's inner width).
    widest: usize,
    word_embeddings: Tensor<2>,
    token_type: Tensor<1>,
    positions: Positions,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    activation: Activation,
    max_tokens: usize,
    device: Device,
}

/// Whether config.json describes a BERT-family model (`model_type` "bert", as the DNABERT,
/// DNABERT-2, GROVER and SpliceBERT repos all declare).
pub fn matches(config: &serde_json::Value) -> bool {
    config.get("model_type").and_then(|v| v.as_str()) == Some("bert")
}

impl Bert {
    pub fn load(
        config: &serde_json::Value,
        ckpt: &mut Checkpoint,
        device: &Device,
    ) -> Result<Bert> {
        let hidden = config_usize(config, "hidden_size")?;
        let heads = config_usize(config, "num_attention_heads")?;
        let intermediate_size = config_usize(config, "intermediate_size")?;
        let vocab = config_usize(config, "vocab_size")?;
        let eps = config_epsilon(config, "layer_norm_eps", Some(1e-12))?;
        let activation = config_activation(config, "gelu")?;
        // Validates the head split; forward() derives the width again.
        head_dim(hidden, heads)?;
        let probe = "embeddings.word_embeddings.weight";
        let prefix = checkpoint_prefix(ckpt, &PREFIXES, probe, "BERT")?;
        let p = |name: &str| format!("{prefix}{name}");
        let fused = ckpt.contains(&p("encoder.layer.0.attention.self.Wqkv.weight"));

        let word = ckpt.take(&p("embeddings.word_embeddings.weight"), &[vocab, hidden])?;
        let type_vocab = config_usize(config, "type_vocab_size").unwrap_or(2);
        if type_vocab == 0 {
            return Err(config_error(
                "'type_vocab_size' is 0, but every input is read as token type 0",
            ));
        }
        let token_types = ckpt.take(
            &p("embeddings.token_type_embeddings.weight"),
            &[type_vocab, hidden],
        )?;
        // Every GENEB input is a single segment: token type 0 for all tokens.
        let token_type = upload(token_types[..hidden].to_vec(), [hidden], device);
        let (positions, max_tokens) = if fused {
            // ALiBi extrapolates; the tokenizer's model_max_length bounds the input instead.
            (Positions::Alibi(alibi_slopes(heads)), usize::MAX)
        } else {
            let max_positions = config_usize(config, "max_position_embeddings")?;
            let table = ckpt.take(
                &p("embeddings.position_embeddings.weight"),
                &[max_positions, hidden],
            )?;
            (
                Positions::Learned(upload(table, [max_positions, hidden], device)),
                max_positions,
            )
        };
        // Buffers that hold no weights: position/token-type id ranges.
        ckpt.skip(&p("embeddings.position_ids"));
        ckpt.skip(&p("embeddings.token_type_ids"));
        let embedding_norm =
            LayerNorm::load(ckpt, &p("embeddings.LayerNorm"), hidden, eps, device)?;

        let n_layers = config_layers(config, "num_hidden_layers", ckpt, |i| {
            p(&format!("encoder.layer.{i}.attention.output.dense.weight"))
        })?;
        let mut layers = Vec::with_capacity(n_layers);
        for i in 0..n_layers {
            let l = |name: &str| p(&format!("encoder.layer.{i}.{name}"));
            let attention = if fused {
                SelfAttention::Fused(Linear::load(
                    ckpt,
                    &l("attention.self.Wqkv"),
                    hidden,
                    3 * hidden,
                    true,
                    device,
                )?)
            } else {
                let (query, key, value) = load_qkv(ckpt, &l("attention.self"), hidden, device)?;
                SelfAttention::Separate { query, key, value }
            };
            let attention_out = Linear::load(
                ckpt,
                &l("attention.output.dense"),
                hidden,
                hidden,
                true,
                device,
            )?;
            let attention_norm =
                LayerNorm::load(ckpt, &l("attention.output.LayerNorm"), hidden, eps, device)?;
            let (ffn, ffn_norm) = if fused {
                let gated = Linear::load(
                    ckpt,
                    &l("mlp.gated_layers"),
                    hidden,
                    2 * intermediate_size,
                    false,
                    device,
                )?;
                let output =
                    Linear::load(ckpt, &l("mlp.wo"), intermediate_size, hidden, true, device)?;
                let norm = LayerNorm::load(ckpt, &l("mlp.layernorm"), hidden, eps, device)?;
                (
                    FeedForward::Gated {
                        gated,
                        output,
                        intermediate_size,
                    },
                    norm,
                )
            } else {
                let intermediate = Linear::load(
                    ckpt,
                    &l("intermediate.dense"),
                    hidden,
                    intermediate_size,
                    true,
                    device,
                )?;
                let output = Linear::load(
                    ckpt,
                    &l("output.dense"),
                    intermediate_size,
                    hidden,
                    true,
                    device,
                )?;
                let norm = LayerNorm::load(ckpt, &l("output.LayerNorm"), hidden, eps, device)?;
                (
                    FeedForward::Standard {
                        intermediate,
                        output,
                    },
                    norm,
                )
            };
            layers.push(Layer {
                attention,
                attention_out,
                attention_norm,
                ffn,
                ffn_norm,
            });
        }
        // Heads for pre-training and classification: GENEB probes the encoder's hidden states.
        ckpt.skip_prefix(&p("pooler."));
        ckpt.skip_prefix("cls.");
        ckpt.skip_prefix("classifier.");
        let ffn_width = if fused {
            2 * intermediate_size
        } else {
            intermediate_size
        };
        Ok(Bert {
            widest: (3 * hidden).max(ffn_width),
            word_embeddings: upload(word, [vocab, hidden], device),
            token_type,
            positions,
            embedding_norm,
            layers,
            heads,
            hidden,
            activation,
            max_tokens,
            device: device.clone(),
        })
    }

    pub fn widest_activation(&self) -> usize {
        self.widest
    }

    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// DNABERT-2's variant (ALiBi, fused QKV, GLU) rather than the classic BERT.
    pub fn uses_alibi(&self) -> bool {
        matches!(self.positions, Positions::Alibi(_))
    }

    /// The longest input the position table allows (unbounded for ALiBi).
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// last_hidden_state [batch, tokens, hidden].
    pub fn forward(&self, input_ids: Tensor<2, Int>, attention_mask: Tensor<2>) -> Tensor<3> {
        let tokens = input_ids.dims()[1];
        let mut x = embedding(self.word_embeddings.clone(), input_ids)
            + self.token_type.clone().reshape([1, 1, self.hidden]);
        let mut bias = padding_bias(attention_mask);
        match &self.positions {
            Positions::Learned(table) => {
                x = x + table
                    .clone()
                    .narrow(0, 0, tokens)
                    .reshape([1, tokens, self.hidden]);
            }
            Positions::Alibi(slopes) => {
                bias = bias + self.alibi_bias(slopes, tokens);
            }
        }
        let mut x = self.embedding_norm.forward(x);
        let head_dim = self.hidden / self.heads;
        let scale = 1.0 / (head_dim as f64).sqrt();
        for layer in &self.layers {
            let (q, k, v) = match &layer.attention {
                SelfAttention::Separate { query, key, value } => (
                    query.forward(x.clone()),
                    key.forward(x.clone()),
                    value.forward(x.clone()),
                ),
                SelfAttention::Fused(wqkv) => {
                    let mut parts = wqkv.forward(x.clone()).chunk(3, 2).into_iter();
                    let mut next = || parts.next().expect("chunk(3) yields three parts");
                    (next(), next(), next())
                }
            };
            let context = attention(
                split_heads(q, self.heads),
                split_heads(k, self.heads),
                split_heads(v, self.heads),
                scale,
                bias.clone(),
            );
            let attended = layer
                .attention_norm
                .forward(layer.attention_out.forward(context) + x);
            let ffn_out = match &layer.ffn {
                FeedForward::Standard {
                    intermediate,
                    output,
                } => output.forward(
                    self.activation
                        .apply(intermediate.forward(attended.clone())),
                ),
                FeedForward::Gated {
                    gated,
                    output,
                    intermediate_size,
                } => {
                    let both = gated.forward(attended.clone());
                    let gate = both.clone().narrow(2, 0, *intermediate_size);
                    let value = both.narrow(2, *intermediate_size, *intermediate_size);
                    output.forward(self.activation.apply(gate) * value)
                }
            };
            x = layer.ffn_norm.forward(ffn_out + attended);
        }
        x
    }

    /// −slope_h · |i − j| as [1, heads, tokens, tokens].
    fn alibi_bias(&self, slopes: &[f32], tokens: usize) -> Tensor<4> {
        let mut bias = Vec::with_capacity(slopes.len() * tokens * tokens);
        for slope in slopes {
            for i in 0..tokens {
                for j in 0..tokens {
                    bias.push(-slope * i.abs_diff(j) as f32);
                }
            }
        }
        upload(bias, [1, slopes.len(), tokens, tokens], &self.device)
    }
}

/// ALiBi head slopes as MosaicBERT computes them: a geometric sequence for a power-of-two
/// head count, otherwise that of the next lower power of two plus every other slope of the
/// next higher one.
fn alibi_slopes(heads: usize) -> Vec<f32> {
    fn power_of_two(n: usize) -> Vec<f64> {
        let start = 2f64.powf(-(2f64.powf(-((n as f64).log2() - 3.0))));
        (0..n).map(|i| start * start.powi(i as i32)).collect()
    }
    fn slopes(n: usize) -> Vec<f64> {
        if n.is_power_of_two() {
            return power_of_two(n);
        }
        let closest = 1usize << (usize::BITS - 1 - n.leading_zeros());
        let mut out = power_of_two(closest);
        out.extend(slopes(2 * closest).into_iter().step_by(2).take(n - closest));
        out
    }
    slopes(heads).into_iter().map(|s| s as f32).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn alibi_slopes_match_mosaicbert() {
        // Values from MosaicBERT's _get_alibi_head_slopes (8 heads: 2^-1 … 2^-8; 12 heads
        // interleaves the 16-head sequence).
        let eight = super::alibi_slopes(8);
        assert_eq!(eight, (1..=8).map(|i| 2f32.powi(-i)).collect::<Vec<_>>());
        let twelve = super::alibi_slopes(12);
        assert_eq!(twelve[..8], eight[..]);
        let sixteen = super::alibi_slopes(16);
        assert_eq!(
            twelve[8..],
            [sixteen[0], sixteen[2], sixteen[4], sixteen[6]]
        );
    }
}
