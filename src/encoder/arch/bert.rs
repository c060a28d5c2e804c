//! The BERT family: DNABERT (overlapping k-mers), GROVER (BPE), SpliceBERT (single nucleotides)
//! as the standard HF `BertModel` (learned absolute positions, post-LayerNorm, GELU FFN), and
//! DNABERT-2, MosaicBERT-style: no position embeddings but ALiBi attention biases, a fused
//! `Wqkv` projection and a gated-linear-unit FFN. The variant is read from the checkpoint (a
//! fused `Wqkv` tensor), so one loader serves every repo of the family.
//!
//! GENEB's reference extractors pool the final hidden layer with a mean over the attention mask
//! (special tokens included); the pooling itself lives in `hf.rs`.

use super::{
    Arch, ArchSpec, Pooling, check_layers, epsilon, optional_size, parse_config, size,
    transformers_layer_norm_eps,
};
use crate::Result;
use crate::encoder::layers::positions::Alibi;
use crate::encoder::layers::{
    Activation, LayerNorm, Linear, attention, checkpoint_prefix, config_error, head_dim, load_qkv,
    padding_bias, split_heads, upload,
};
use crate::hf::Checkpoint;
use crate::tokenize::TokenizerChoice;
use burn::tensor::module::embedding;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;

/// Checkpoint prefixes: `BertForMaskedLM` stores `bert.…`, a bare `BertModel` nothing.
const PREFIXES: [&str; 2] = ["bert.", ""];

enum Positions {
    /// [max_position_embeddings, hidden]
    Learned(Tensor<2>),
    /// DNABERT-2: attention biases instead of a table.
    Alibi(Alibi),
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

pub const SPEC: ArchSpec = ArchSpec {
    name: "bert",
    family: "BERT",
    serves: "DNABERT, DNABERT-2, GROVER, SpliceBERT",
    matches,
    tokenizer: TokenizerChoice::Files,
    pooling: Pooling::MaskedMean,
    load: |config, ckpt, compute| Ok(Box::new(Bert::load(config, ckpt, &compute.device)?)),
};

/// The `config.json` keys `BertModel` (and DNABERT-2's MosaicBERT code) read.
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
    /// Only the learned-position variant has a table; ALiBi needs none.
    #[serde(default, deserialize_with = "optional_size")]
    max_position_embeddings: Option<usize>,
    #[serde(default = "transformers_layer_norm_eps", deserialize_with = "epsilon")]
    layer_norm_eps: f64,
    #[serde(default = "default_activation")]
    hidden_act: String,
    #[serde(default = "two", deserialize_with = "size")]
    type_vocab_size: usize,
}

fn default_activation() -> String {
    "gelu".into()
}

fn two() -> usize {
    2
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
        let c: Config = parse_config(config)?;
        let (hidden, heads, n_layers) = (c.hidden_size, c.num_attention_heads, c.num_hidden_layers);
        let (intermediate_size, vocab, eps) = (c.intermediate_size, c.vocab_size, c.layer_norm_eps);
        let activation = Activation::from_config(&c.hidden_act)?;
        // Validates the head split; forward() derives the width again.
        head_dim(hidden, heads)?;
        let probe = "embeddings.word_embeddings.weight";
        let prefix = checkpoint_prefix(ckpt, &PREFIXES, probe, "BERT")?;
        let p = |name: &str| format!("{prefix}{name}");
        let fused = ckpt.contains(&p("encoder.layer.0.attention.self.Wqkv.weight"));

        let word = ckpt.take(&p("embeddings.word_embeddings.weight"), &[vocab, hidden])?;
        let type_vocab = c.type_vocab_size;
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
            (Positions::Alibi(Alibi::new(heads)), usize::MAX)
        } else {
            let max_positions = c.max_position_embeddings.ok_or_else(|| {
                config_error("'max_position_embeddings' is missing (learned positions need it)")
            })?;
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

        let n_layers = check_layers("num_hidden_layers", n_layers, ckpt, |i| {
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
}

impl Arch for Bert {
    fn widest_activation(&self) -> usize {
        self.widest
    }

    fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// The longest input the position table allows (unbounded for ALiBi).
    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// last_hidden_state [batch, tokens, hidden].
    fn forward(&self, input_ids: Tensor<2, Int>, attention_mask: Tensor<2>) -> Tensor<3> {
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
            Positions::Alibi(alibi) => {
                bias = bias + alibi.bias(tokens, &self.device);
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

    fn family(&self) -> &'static str {
        match self.positions {
            Positions::Alibi(_) => "DNABERT-2 (BERT with ALiBi and GLU)",
            Positions::Learned(_) => SPEC.family,
        }
    }
}
