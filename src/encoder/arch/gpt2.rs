//! GPT-2 (transformers' `modeling_gpt2.py`), the decoder of dnagpt's gpt2_gene_v1 and
//! gpt2_gene_multi_v2_ft: learned absolute positions added to the token embeddings, pre-LayerNorm
//! blocks with biases everywhere, a fused `c_attn` (queries, keys, values) and every projection a
//! `Conv1D` (weights stored [in, out], transposed at load), a GELU MLP (`activation_function`,
//! tanh-approximated `gelu_new` by default), causal attention, a final LayerNorm `ln_f`.
//!
//! `forward` returns `ln_f`'s output, transformers' `last_hidden_state` and `hidden_states[-1]`.
//! Layer K (`hidden_states`) is transformers' `output_hidden_states[K]`: 0 the embeddings (with
//! positions), K the output of block K, the last one after `ln_f`.
//! Positions count from the batch's first column (transformers' default `position_ids`): with
//! the right padding geneb's recipes use for it, each sequence's real tokens see what they see
//! unpadded.

use super::{
    Arch, ArchSpec, Kept, Pooling, check_layers, epsilon, optional_size, parse_config, size,
};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::{
    Activation, EmbeddingTable, LayerNorm, Linear, attention, causal_bias, checkpoint_prefix,
    config_error, head_dim, padding_bias, split_heads,
};
use crate::tokenize::TokenizerChoice;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;
use serde_json::Value;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::GPT2.architecture,
    family: family::GPT2.name,
    serves: "dnagpt/gpt2_gene_v1, dnagpt/gpt2_gene_multi_v2_ft",
    matches: |config| config.get("model_type").and_then(|v| v.as_str()) == Some("gpt2"),
    tokenizer: TokenizerChoice::Files,
    poolings: &[Pooling::MaskedMean],
    load: |config, ckpt, compute| Ok(Box::new(Gpt2::load(config, ckpt, &compute.device)?)),
    recipe: &crate::encoder::recipe::GPT2,
    published_config: None,
};

/// The `config.json` keys `GPT2Config` reads, with its defaults.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    #[serde(deserialize_with = "size")]
    n_positions: usize,
    #[serde(deserialize_with = "size")]
    n_embd: usize,
    #[serde(deserialize_with = "size")]
    n_layer: usize,
    #[serde(deserialize_with = "size")]
    n_head: usize,
    /// None: 4 · n_embd.
    #[serde(default, deserialize_with = "optional_size")]
    n_inner: Option<usize>,
    #[serde(default = "default_activation")]
    activation_function: String,
    #[serde(default = "default_layer_norm_epsilon", deserialize_with = "epsilon")]
    layer_norm_epsilon: f64,
    #[serde(default = "default_true")]
    scale_attn_weights: bool,
    #[serde(default)]
    scale_attn_by_inverse_layer_idx: bool,
    #[serde(default)]
    add_cross_attention: bool,
}

fn default_activation() -> String {
    "gelu_new".to_string()
}

fn default_layer_norm_epsilon() -> f64 {
    1e-5
}

fn default_true() -> bool {
    true
}

/// The token embeddings plus the learned positions from the batch's first column, and the
/// padding and causal attention bias, for ids and mask [batch, tokens].
pub(super) fn embed(
    wte: &EmbeddingTable,
    wpe: &EmbeddingTable,
    input_ids: Tensor<2, Int>,
    attention_mask: Tensor<2>,
) -> (Tensor<3>, Tensor<4>) {
    let tokens = input_ids.dims()[1];
    let device = attention_mask.device();
    // Looked up as rows, so a table held in half widens only the positions used.
    let positions = Tensor::<1, Int>::arange(0..tokens as i64, &device).reshape([1, tokens]);
    let x = wte.forward(input_ids) + wpe.forward(positions);
    let bias = padding_bias(attention_mask) + causal_bias(tokens, &device);
    (x, bias)
}

/// One GPT-2 block: `x + attn(ln_1(x))`, then `x + mlp(ln_2(x))`. DNAGPT's decoder
/// (`dnagpt.rs`) is built of the same blocks, without biases.
pub(super) struct Block {
    pub ln_1: LayerNorm,
    /// `c_attn`'s three parts: queries, keys, values.
    pub q: Linear,
    pub k: Linear,
    pub v: Linear,
    pub attn_proj: Linear,
    pub ln_2: LayerNorm,
    pub c_fc: Linear,
    pub mlp_proj: Linear,
    /// The attention scores' factor: 1/√head_dim unless `scale_attn_weights` is false, divided
    /// by the layer's number where `scale_attn_by_inverse_layer_idx` asks.
    pub scale: f64,
}

impl Block {
    /// `x` [batch, tokens, dim] through the block; `bias` the padding and causal bias.
    pub(super) fn forward(
        &self,
        x: Tensor<3>,
        heads: usize,
        activation: Activation,
        bias: Tensor<4>,
    ) -> Tensor<3> {
        let h = self.ln_1.forward(x.clone());
        let split = |proj: &Linear| split_heads(proj.forward(h.clone()), heads);
        let mixed = attention(
            split(&self.q),
            split(&self.k),
            split(&self.v),
            self.scale,
            bias,
        );
        let x = x + self.attn_proj.forward(mixed);
        let inner = activation.apply(self.c_fc.forward(self.ln_2.forward(x.clone())));
        x.clone() + self.mlp_proj.forward(inner)
    }
}

pub struct Gpt2 {
    wte: EmbeddingTable,
    wpe: EmbeddingTable,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    activation: Activation,
    heads: usize,
    dim: usize,
    inner: usize,
    vocab: usize,
    max_tokens: usize,
}

impl Gpt2 {
    pub fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Gpt2> {
        let c: Config = parse_config(config)?;
        if c.add_cross_attention {
            return Err(config_error(
                "'add_cross_attention' is true: geneb runs GPT-2 as a decoder on its own",
            ));
        }
        if c.n_positions == 0 {
            return Err(config_error("'n_positions' is 0"));
        }
        let (dim, heads, vocab) = (c.n_embd, c.n_head, c.vocab_size);
        let inner = c.n_inner.unwrap_or(4 * dim);
        let head_width = head_dim(dim, heads)?;
        let activation = Activation::from_config(&c.activation_function)?;
        // GPT2LMHeadModel and GPT2ForSequenceClassification nest the model under
        // `transformer.`; a bare GPT2Model (and OpenAI's own export) does not.
        let prefix = checkpoint_prefix(ckpt, &["transformer.", ""], "wte.weight", "GPT-2")?;
        let p = |name: &str| format!("{prefix}{name}");
        let norm = |ckpt: &mut Checkpoint, name: &str| {
            LayerNorm::load(ckpt, &p(name), dim, c.layer_norm_epsilon, device)
        };
        let wte = EmbeddingTable::load(ckpt, &p("wte.weight"), [vocab, dim], device)?;
        let wpe = EmbeddingTable::load(ckpt, &p("wpe.weight"), [c.n_positions, dim], device)?;
        let layers = check_layers("n_layer", c.n_layer, ckpt, |i| {
            p(&format!("h.{i}.attn.c_attn.weight"))
        })?;
        let mut blocks = Vec::with_capacity(layers);
        for i in 0..layers {
            let b = |name: &str| p(&format!("h.{i}.{name}"));
            let [q, k, v] = Linear::load_conv1d_parts(ckpt, &b("attn.c_attn"), dim, dim, device)?;
            let [attn_proj] = Linear::load_conv1d_parts(ckpt, &b("attn.c_proj"), dim, dim, device)?;
            let [c_fc] = Linear::load_conv1d_parts(ckpt, &b("mlp.c_fc"), dim, inner, device)?;
            let [mlp_proj] = Linear::load_conv1d_parts(ckpt, &b("mlp.c_proj"), inner, dim, device)?;
            // The causal-mask buffers older transformers saved with the weights.
            ckpt.skip(&b("attn.bias"));
            ckpt.skip(&b("attn.masked_bias"));
            let mut scale = if c.scale_attn_weights {
                (head_width as f64).powf(-0.5)
            } else {
                1.0
            };
            if c.scale_attn_by_inverse_layer_idx {
                scale /= (i + 1) as f64;
            }
            blocks.push(Block {
                ln_1: norm(ckpt, &format!("h.{i}.ln_1"))?,
                q,
                k,
                v,
                attn_proj,
                ln_2: norm(ckpt, &format!("h.{i}.ln_2"))?,
                c_fc,
                mlp_proj,
                scale,
            });
        }
        let ln_f = norm(ckpt, "ln_f")?;
        // The language-model head (tied to wte) and a sequence classifier's `score`: no
        // extractor reads them.
        ckpt.skip_prefix("lm_head.");
        ckpt.skip_prefix("score.");
        Ok(Gpt2 {
            wte,
            wpe,
            blocks,
            ln_f,
            activation,
            heads,
            dim,
            inner,
            vocab,
            max_tokens: c.n_positions,
        })
    }
}

impl Arch for Gpt2 {
    /// `ln_f`'s output after the last block.
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let (mut x, bias) = embed(&self.wte, &self.wpe, input_ids, attention_mask);
        let deepest = kept.deepest();
        for (i, block) in self.blocks.iter().enumerate().take(deepest) {
            kept.offer(i, &x);
            x = block.forward(x, self.heads, self.activation, bias.clone());
        }
        if deepest == self.blocks.len() {
            x = self.ln_f.forward(x);
        }
        kept.offer(deepest, &x);
        x
    }

    /// As transformers' `output_hidden_states` gives them: the embeddings, each block's output,
    /// the last block's after `ln_f`.
    fn layers(&self) -> usize {
        self.blocks.len()
    }

    fn hidden_size(&self) -> usize {
        self.dim
    }

    fn token_rows(&self) -> usize {
        self.vocab
    }

    /// The position table's length (`n_positions`).
    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    fn widest_activation(&self) -> usize {
        self.inner.max(3 * self.dim)
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }
}
