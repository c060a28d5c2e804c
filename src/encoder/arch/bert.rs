//! The BERT family: DNABERT (overlapping k-mers), GROVER (BPE), SpliceBERT (single nucleotides)
//! as the standard HF `BertModel` (learned absolute positions, post-LayerNorm, GELU FFN);
//! GENA-LM, the same with `pre_layer_norm` (AIRI's modeling_bert.py: each sublayer reads a
//! LayerNorm of its input and adds its output to it, and with `last_layer_norm` — by default
//! whenever `pre_layer_norm` — one more LayerNorm after the last layer); MutBERT, the standard
//! one with rotary positions on queries and keys instead of a position table (its
//! modeling_mutbert.py `RoPEBertModel`, recognised by `rope_theta`); and DNABERT-2,
//! MosaicBERT-style: no position embeddings but ALiBi attention biases, a fused `Wqkv`
//! projection and a gated-linear-unit FFN; and Genomics-FM, DNABERT-2's MosaicBERT code with a
//! learned position table added (its bert_layers.py adds the table unless `use_alibi` is passed,
//! and GENEB's extractor passes none, so the table it is and no ALiBi). The variant is read
//! from config.json (`pre_layer_norm`) and the checkpoint (a fused `Wqkv` tensor; with it, a
//! position table), so one loader serves every repo of the family.
//!
//! GENEB's reference extractors pool the final hidden layer with a mean over the attention mask
//! (special tokens included), except Genomics-FM's, which takes the [CLS] token's state
//! (`sequence_output[:, 0]`); the pooling itself lives in `hf.rs`.

use super::{
    Arch, ArchSpec, Kept, MAX_CONFIG_SIZE, Pooling, check_layers, epsilon, optional_size,
    parse_config, size, transformers_layer_norm_eps,
};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::positions::{Alibi, PairRotary, Rotary};
use crate::encoder::layers::{
    Activation, EmbeddingTable, GluProjection, LayerNorm, Linear, attention, checkpoint_prefix,
    config_error, head_dim, load_qkv, padding_bias, split_heads, upload,
};
use crate::encoder::recipe::{self, Recipe};
use crate::tokenize::TokenizerChoice;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;

/// Checkpoint prefixes: `BertForMaskedLM` stores `bert.…`, a bare `BertModel` nothing.
const PREFIXES: [&str; 2] = ["bert.", ""];

pub(super) enum Positions {
    /// [max_position_embeddings, hidden]
    Learned(Tensor<2>),
    /// DNABERT-2: attention biases instead of a table.
    Alibi(Alibi),
    /// Genomics-FM: a fused-`Wqkv` checkpoint that also holds a table
    /// [max_position_embeddings, hidden].
    LearnedMosaic(Tensor<2>),
    /// MutBERT: queries and keys rotated (`rotate_half` over each head).
    Rotary(Rotary),
    /// RoFormer (DeepGene): queries and keys rotated in adjacent pairs.
    PairRotary(PairRotary),
}

/// The query, key and value projections (a fused `Wqkv` is split into the three at load).
struct SelfAttention {
    query: Linear,
    key: Linear,
    value: Linear,
}

#[allow(
    clippy::large_enum_variant,
    reason = "one value per layer, built once: its size costs nothing"
)]
enum FeedForward {
    Standard {
        intermediate: Linear,
        output: Linear,
    },
    /// DNABERT-2: act(x W_g) ⊙ (x W_v) then W_o, `gated_layers` holding [W_g; W_v].
    Gated {
        gated: GluProjection,
        output: Linear,
    },
}

pub(super) struct Layer {
    attention: SelfAttention,
    attention_out: Linear,
    /// Post-LN: after the attention's residual sum. Pre-LN (`pre_attention_ln`): on its input.
    attention_norm: LayerNorm,
    ffn: FeedForward,
    /// Post-LN: after the FFN's residual sum. Pre-LN (`post_attention_ln`): on its input.
    ffn_norm: LayerNorm,
}

/// The stack every member of the family shares; RoFormer (`roformer.rs`) builds one too.
pub struct Bert {
    /// Floats per token of the widest activation (fused QKV, or the FFN's inner width).
    pub(super) widest: usize,
    pub(super) embeddings: Embeddings,
    pub(super) positions: Positions,
    pub(super) layers: Vec<Layer>,
    pub(super) pre_norm: bool,
    /// GENA-LM's `last_layer_ln`, after the last pre-LN layer.
    pub(super) final_norm: Option<LayerNorm>,
    pub(super) heads: usize,
    pub(super) hidden: usize,
    pub(super) activation: Activation,
    pub(super) max_tokens: usize,
    pub(super) device: Device,
}

/// Word embeddings plus token type 0, then a LayerNorm (and RoFormer's projection to the hidden
/// width, where its `embedding_size` differs).
pub(super) struct Embeddings {
    word: EmbeddingTable,
    token_type: Tensor<1>,
    norm: LayerNorm,
    pub(super) project: Option<Linear>,
}

impl Embeddings {
    /// `{prefix}word_embeddings`, `{prefix}token_type_embeddings` and `{prefix}LayerNorm`, all
    /// `width` wide.
    pub(super) fn load(
        ckpt: &mut Checkpoint,
        prefix: &str,
        vocab: usize,
        width: usize,
        type_vocab: usize,
        eps: f64,
        device: &Device,
    ) -> Result<Embeddings> {
        let word = EmbeddingTable::load(
            ckpt,
            &format!("{prefix}word_embeddings.weight"),
            [vocab, width],
            device,
        )?;
        if type_vocab == 0 {
            return Err(config_error(
                "'type_vocab_size' is 0, but every input is read as token type 0",
            ));
        }
        let token_types = ckpt.take(
            &format!("{prefix}token_type_embeddings.weight"),
            &[type_vocab, width],
        )?;
        // Every GENEB input is a single segment: token type 0 for all tokens.
        let token_type = upload(token_types[..width].to_vec(), [width], device);
        // Buffers that hold no weights: position/token-type id ranges.
        ckpt.skip(&format!("{prefix}position_ids"));
        ckpt.skip(&format!("{prefix}token_type_ids"));
        Ok(Embeddings {
            word,
            token_type,
            norm: LayerNorm::load(ckpt, &format!("{prefix}LayerNorm"), width, eps, device)?,
            project: None,
        })
    }

    /// The word and token-type embeddings, before the LayerNorm: [batch, tokens, width].
    fn lookup(&self, input_ids: Tensor<2, Int>) -> Tensor<3> {
        let width = self.token_type.dims()[0];
        self.word.forward(input_ids) + self.token_type.clone().reshape([1, 1, width])
    }

    fn finish(&self, x: Tensor<3>) -> Tensor<3> {
        let x = self.norm.forward(x);
        match &self.project {
            Some(project) => project.forward(x),
            None => x,
        }
    }
}

/// One layer's widths and variants: the attention (fused `Wqkv` or separate), the LayerNorm
/// placement and whether the linear layers have biases (RoFormer's `use_bias`).
pub(super) struct LayerShape {
    pub hidden: usize,
    pub intermediate: usize,
    pub eps: f64,
    pub fused: bool,
    pub pre_norm: bool,
    pub bias: bool,
}

impl LayerShape {
    /// Floats per token of the widest activation.
    pub(super) fn widest(&self) -> usize {
        let ffn = if self.fused {
            2 * self.intermediate
        } else {
            self.intermediate
        };
        (3 * self.hidden).max(ffn)
    }
}

/// Layers 0 … n−1, `name(i, tensor)` naming layer i's tensors in the checkpoint.
pub(super) fn load_layers(
    ckpt: &mut Checkpoint,
    n_layers: usize,
    shape: &LayerShape,
    name: impl Fn(usize, &str) -> String,
    device: &Device,
) -> Result<Vec<Layer>> {
    let n_layers = check_layers("num_hidden_layers", n_layers, ckpt, |i| {
        name(i, "attention.output.dense.weight")
    })?;
    (0..n_layers)
        .map(|i| load_layer(ckpt, shape, &|tensor| name(i, tensor), device))
        .collect()
}

/// One layer, `l(tensor)` naming its tensors.
fn load_layer(
    ckpt: &mut Checkpoint,
    shape: &LayerShape,
    l: &dyn Fn(&str) -> String,
    device: &Device,
) -> Result<Layer> {
    let LayerShape {
        hidden,
        intermediate,
        eps,
        fused,
        pre_norm,
        bias,
    } = *shape;
    let [query, key, value] = if fused {
        Linear::load_parts(
            ckpt,
            &l("attention.self.Wqkv"),
            hidden,
            hidden,
            true,
            device,
        )?
    } else {
        let (query, key, value) = load_qkv(ckpt, &l("attention.self"), hidden, bias, device)?;
        [query, key, value]
    };
    let attention = SelfAttention { query, key, value };
    let attention_out = Linear::load(
        ckpt,
        &l("attention.output.dense"),
        hidden,
        hidden,
        bias,
        device,
    )?;
    let (attention_norm_name, ffn_norm_name) = if pre_norm {
        ("pre_attention_ln", "post_attention_ln")
    } else {
        ("attention.output.LayerNorm", "output.LayerNorm")
    };
    let attention_norm = LayerNorm::load(ckpt, &l(attention_norm_name), hidden, eps, device)?;
    let (ffn, ffn_norm) = if fused {
        let gated = GluProjection::load(
            ckpt,
            &l("mlp.gated_layers"),
            hidden,
            intermediate,
            false,
            device,
        )?;
        let output = Linear::load(ckpt, &l("mlp.wo"), intermediate, hidden, true, device)?;
        let norm = LayerNorm::load(ckpt, &l("mlp.layernorm"), hidden, eps, device)?;
        (FeedForward::Gated { gated, output }, norm)
    } else {
        let intermediate_dense = Linear::load(
            ckpt,
            &l("intermediate.dense"),
            hidden,
            intermediate,
            bias,
            device,
        )?;
        let output = Linear::load(ckpt, &l("output.dense"), intermediate, hidden, bias, device)?;
        let norm = LayerNorm::load(ckpt, &l(ffn_norm_name), hidden, eps, device)?;
        (
            FeedForward::Standard {
                intermediate: intermediate_dense,
                output,
            },
            norm,
        )
    };
    Ok(Layer {
        attention,
        attention_out,
        attention_norm,
        ffn,
        ffn_norm,
    })
}

pub const SPEC: ArchSpec = ArchSpec {
    name: family::BERT.architecture,
    family: family::BERT.name,
    serves: "DNABERT, DNABERT-2, GROVER, SpliceBERT, GENA-LM, MutBERT, Genomics-FM",
    matches,
    tokenizer: TokenizerChoice::Files,
    poolings: &[Pooling::MaskedMean, Pooling::ClsToken],
    load: |config, ckpt, compute| Ok(Box::new(Bert::load(config, ckpt, &compute.device)?)),
    recipe: &recipe::GENERIC,
    published_config: None,
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
    /// GENA-LM's modeling_bert.py.
    #[serde(default)]
    pre_layer_norm: bool,
    /// Defaults to `pre_layer_norm` (GENA-LM's code).
    #[serde(default)]
    last_layer_norm: Option<bool>,
    #[serde(default = "absolute")]
    position_embedding_type: String,
    /// MutBERT's rotary base; its presence selects rotary positions.
    #[serde(default)]
    rope_theta: Option<f64>,
    /// MutBERT's context extension (linear or dynamic NTK), not implemented.
    #[serde(default)]
    rope_scaling: Option<serde_json::Value>,
}

fn absolute() -> String {
    "absolute".into()
}

fn default_activation() -> String {
    "gelu".into()
}

fn two() -> usize {
    2
}

/// Whether config.json describes a BERT-family model (`model_type` "bert", as the DNABERT,
/// DNABERT-2, GROVER, SpliceBERT and GENA-LM repos all declare).
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
        let pre_norm = c.pre_layer_norm;
        if c.position_embedding_type != "absolute" {
            return Err(config_error(&format!(
                "position_embedding_type '{}' is not supported (geneb reads absolute)",
                c.position_embedding_type
            )));
        }
        if pre_norm && fused {
            return Err(config_error(
                "'pre_layer_norm' is true for a fused-Wqkv (DNABERT-2) checkpoint, which has none",
            ));
        }
        if c.last_layer_norm == Some(true) && !pre_norm {
            return Err(config_error(
                "'last_layer_norm' needs 'pre_layer_norm' (as GENA-LM's code requires)",
            ));
        }

        let embeddings = Embeddings::load(
            ckpt,
            &p("embeddings."),
            vocab,
            hidden,
            c.type_vocab_size,
            eps,
            device,
        )?;
        let position_table = p("embeddings.position_embeddings.weight");
        let learned_table = |ckpt: &mut Checkpoint| -> Result<(Tensor<2>, usize)> {
            let max_positions = c.max_position_embeddings.ok_or_else(|| {
                config_error("'max_position_embeddings' is missing (learned positions need it)")
            })?;
            let table = ckpt.take(&position_table, &[max_positions, hidden])?;
            Ok((
                upload(table, [max_positions, hidden], device),
                max_positions,
            ))
        };
        let (positions, max_tokens) = if fused && ckpt.contains(&position_table) {
            let (table, max_positions) = learned_table(ckpt)?;
            (Positions::LearnedMosaic(table), max_positions)
        } else if fused {
            // ALiBi extrapolates; the tokenizer's model_max_length bounds the input instead.
            (Positions::Alibi(Alibi::new(heads)), usize::MAX)
        } else if let Some(theta) = c.rope_theta {
            if c.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
                return Err(config_error(
                    "'rope_scaling' is set: geneb runs MutBERT's rotary positions unscaled only",
                ));
            }
            if !(theta.is_finite() && theta > 1.0) {
                return Err(config_error(&format!(
                    "'rope_theta' is {theta}, not a rotary base (a number above 1)"
                )));
            }
            let head_dim = hidden / heads;
            // As modeling_mutbert.py computes them, in f32.
            let inv_freq = (0..head_dim / 2)
                .map(|i| 1.0 / (theta as f32).powf((2 * i) as f32 / head_dim as f32))
                .collect();
            // Rotary positions have no table, and MutBERT's tokenizer sets no model_max_length:
            // the reference extractor truncates nothing, so neither does geneb (the bound is
            // only the largest size geneb takes anywhere).
            let unbounded = MAX_CONFIG_SIZE as usize;
            (Positions::Rotary(Rotary::new(inv_freq)), unbounded)
        } else {
            let (table, max_positions) = learned_table(ckpt)?;
            (Positions::Learned(table), max_positions)
        };
        let shape = LayerShape {
            hidden,
            intermediate: intermediate_size,
            eps,
            fused,
            pre_norm,
            bias: true,
        };
        let layers = load_layers(
            ckpt,
            n_layers,
            &shape,
            |i, tensor| p(&format!("encoder.layer.{i}.{tensor}")),
            device,
        )?;
        let final_norm = if c.last_layer_norm.unwrap_or(pre_norm) {
            Some(LayerNorm::load(
                ckpt,
                &p("encoder.last_layer_ln"),
                hidden,
                eps,
                device,
            )?)
        } else {
            None
        };
        // Heads for pre-training and classification: GENEB probes the encoder's hidden states.
        ckpt.skip_prefix(&p("pooler."));
        ckpt.skip_prefix("cls.");
        ckpt.skip_prefix("classifier.");
        Ok(Bert {
            widest: shape.widest(),
            embeddings,
            positions,
            layers,
            pre_norm,
            final_norm,
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

    fn token_rows(&self) -> usize {
        self.embeddings.word.rows()
    }

    /// The longest input the position table allows (unbounded for ALiBi).
    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// last_hidden_state [batch, tokens, hidden].
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let tokens = input_ids.dims()[1];
        let mut x = self.embeddings.lookup(input_ids);
        let mut bias = padding_bias(attention_mask);
        let mut rotary = None;
        match &self.positions {
            Positions::Learned(table) | Positions::LearnedMosaic(table) => {
                x = x + table
                    .clone()
                    .narrow(0, 0, tokens)
                    .reshape([1, tokens, self.hidden]);
            }
            Positions::Alibi(alibi) => {
                bias = bias + alibi.bias(tokens, &self.device);
            }
            Positions::Rotary(table) => rotary = Some(table.tables(tokens, &self.device)),
            Positions::PairRotary(table) => rotary = Some(table.tables(tokens, &self.device)),
        }
        let mut x = self.embeddings.finish(x);
        let head_dim = self.hidden / self.heads;
        let scale = 1.0 / (head_dim as f64).sqrt();
        let deepest = kept.deepest();
        for (i, layer) in self.layers.iter().enumerate().take(deepest) {
            kept.offer(i, &x);
            let attention_in = if self.pre_norm {
                layer.attention_norm.forward(x.clone())
            } else {
                x.clone()
            };
            let SelfAttention { query, key, value } = &layer.attention;
            let q = query.forward(attention_in.clone());
            let k = key.forward(attention_in.clone());
            let v = value.forward(attention_in);
            let (q, k) = (split_heads(q, self.heads), split_heads(k, self.heads));
            let (q, k) = match &rotary {
                Some(tables) => (tables.apply(q), tables.apply(k)),
                None => (q, k),
            };
            let context = attention(q, k, split_heads(v, self.heads), scale, bias.clone());
            let attended = layer.attention_out.forward(context) + x;
            let attended = if self.pre_norm {
                attended
            } else {
                layer.attention_norm.forward(attended)
            };
            let ffn_in = if self.pre_norm {
                layer.ffn_norm.forward(attended.clone())
            } else {
                attended.clone()
            };
            let ffn_out = match &layer.ffn {
                FeedForward::Standard {
                    intermediate,
                    output,
                } => output.forward(self.activation.apply(intermediate.forward(ffn_in))),
                FeedForward::Gated { gated, output } => {
                    output.forward(gated.forward(ffn_in, self.activation))
                }
            };
            x = if self.pre_norm {
                ffn_out + attended
            } else {
                layer.ffn_norm.forward(ffn_out + attended)
            };
        }
        if deepest == self.layers.len()
            && let Some(norm) = &self.final_norm
        {
            x = norm.forward(x);
        }
        kept.offer(deepest, &x);
        x
    }

    /// As transformers' `output_hidden_states` gives them (and DNABERT-2's and GENA-LM's code
    /// as their encoders' per-layer outputs): the embeddings' output, then each layer's, the
    /// last after the final LayerNorm where there is one.
    fn layers(&self) -> usize {
        self.layers.len()
    }

    fn recipe(&self) -> Option<&'static Recipe> {
        Some(match self.positions {
            Positions::Alibi(_) => &recipe::DNABERT2,
            // Genomics-FM's extractor pools by [CLS].
            Positions::LearnedMosaic(_) => &recipe::GENOMICS_FM,
            Positions::Learned(_) if self.pre_norm => &recipe::GENALM,
            Positions::Rotary(_) => &recipe::MUTBERT,
            Positions::PairRotary(_) => &recipe::DEEPGENE,
            Positions::Learned(_) => &recipe::GENERIC,
        })
    }

    fn family(&self) -> &'static str {
        match self.positions {
            Positions::Alibi(_) => family::DNABERT2,
            Positions::LearnedMosaic(_) => family::GENOMICS_FM,
            Positions::Learned(_) if self.pre_norm => family::GENA_LM,
            Positions::Rotary(_) => family::MUTBERT,
            Positions::PairRotary(_) => family::DEEPGENE.name,
            Positions::Learned(_) => family::BERT.name,
        }
    }
}
