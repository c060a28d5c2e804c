//! HyenaDNA (Nguyen et al. 2023; the `LongSafari/hyenadna-*-hf` checkpoints, `model_type`
//! "hyenadna") as the published HF modeling code computes it: token embeddings → `n_layer` Hyena
//! blocks → final LayerNorm. A block is LayerNorm → Hyena operator → residual add → LayerNorm →
//! MLP (GELU, tanh form) → residual add. The Hyena operator projects to three streams, runs a
//! causal depthwise short convolution (width `short_filter_order`), gates, and applies the
//! implicit long filter: an MLP with sine activations over the checkpoint's positional
//! embedding `z`, times the exponential decay window `exp(-t·|deltas|) + 0.05`, convolved
//! causally over the whole sequence, plus a per-channel skip (`filter_fn.bias`).
//!
//! The original computes that long convolution by FFT (`rfft` with n = 2L). So does geneb on the
//! CPU backend (Burn's `signal` FFT, n the next power of two ≥ 2L); on the GPU it is computed
//! directly, as a depthwise `conv1d` whose kernel is the flipped filter, at O(L²) per channel,
//! because a GPU FFT's twiddles would come from WebGPU's imprecise sin/cos ([`LongConv`]). The
//! two agree to 3e-6 on the test checkpoint. `max_tokens` is the checkpoint's `max_seq_len`, and
//! the caller truncates to it.
//!
//! Padding: every operation is per position or causal, so with padding on the right the states
//! of real tokens do not depend on the padding (the attention mask is not needed and not read).
//!
//! Pooling in the GENEB reference (`embedding_pipeline/extractors/hyenadna.py`): the model is
//! loaded with `AutoModelForSequenceClassification`, `output_hidden_states=True`, and the
//! embedding is `hidden_states[-1].mean(dim=1)` — the final-LayerNorm output averaged over all
//! tokens without a mask, at batch size 1 (so no padding): the bases plus the `[SEP]` the
//! HyenaDNA tokenizer appends. With right padding that is the masked mean over real tokens.

use super::{
    Arch, ArchSpec, Kept, Pooling, check_layers, epsilon, optional_size, padded_vocab,
    parse_config, size,
};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::long_conv::{LongConv, PreparedFilter};
use crate::encoder::layers::{LayerNorm, Linear, config_error, gelu_tanh, param, upload};
use crate::tokenize::TokenizerChoice;
use burn::tensor::module::{conv1d, embedding};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Mutex;

/// `HyenaExponentialModulation.shift`: the decay window never reaches zero.
const MODULATION_SHIFT: f64 = 0.05;
/// `HyenaOperator.short_filter` is built with `padding=2` whatever its width.
const SHORT_FILTER_PADDING: usize = 2;
/// `HyenaBlock`'s two LayerNorms use PyTorch's default epsilon (only `ln_f` reads the config).
const BLOCK_NORM_EPS: f64 = 1e-5;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::HYENADNA.architecture,
    family: family::HYENADNA.name,
    serves: "LongSafari/hyenadna-*-hf",
    matches,
    tokenizer: TokenizerChoice::Characters { upper_case: false },
    poolings: &[Pooling::UnmaskedMean],
    load: |config, ckpt, compute| {
        let long_conv = LongConv::for_backend(compute.kind);
        Ok(Box::new(Hyena::load(
            config,
            ckpt,
            &compute.device,
            long_conv,
        )?))
    },
    recipe: &crate::encoder::recipe::HYENADNA,
    published_config: None,
};

/// The `config.json` keys HyenaDNA's modeling code reads.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    d_model: usize,
    #[serde(deserialize_with = "size")]
    n_layer: usize,
    #[serde(deserialize_with = "size")]
    d_inner: usize,
    #[serde(deserialize_with = "size")]
    max_seq_len: usize,
    #[serde(deserialize_with = "size")]
    emb_dim: usize,
    #[serde(deserialize_with = "size")]
    filter_order: usize,
    #[serde(deserialize_with = "size")]
    short_filter_order: usize,
    #[serde(deserialize_with = "size")]
    num_inner_mlps: usize,
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    #[serde(default, deserialize_with = "optional_size")]
    pad_vocab_size_multiple: Option<usize>,
    #[serde(deserialize_with = "epsilon")]
    layer_norm_epsilon: f64,
    #[serde(deserialize_with = "size")]
    hyena_order: usize,
    /// The sine frequency where the checkpoint has no trainable one.
    #[serde(default = "unit_frequency")]
    activation_freq: f64,
}

fn unit_frequency() -> f64 {
    1.0
}

/// Whether `config.json` describes a HyenaDNA checkpoint.
pub fn matches(config: &Value) -> bool {
    config["model_type"] == "hyenadna"
        || config["architectures"].as_array().is_some_and(|a| {
            a.iter()
                .any(|n| n.as_str().is_some_and(|n| n.starts_with("HyenaDNA")))
        })
}

pub struct Hyena {
    /// Floats per token of the widest activation (in_proj's 3·d_model or the MLP's d_inner).
    widest: usize,
    word_embeddings: Tensor<2>,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    hidden: usize,
    max_seq_len: usize,
}

struct Block {
    norm1: LayerNorm,
    mixer: Operator,
    norm2: LayerNorm,
    fc1: Linear,
    fc2: Linear,
}

struct Operator {
    long_conv: LongConv,
    in_proj: Linear,
    out_proj: Linear,
    short_weight: Tensor<3>,
    short_bias: Tensor<1>,
    filter: ImplicitFilter,
    /// The long filter of the last length it was made for: it depends only on the weights and
    /// the length, and consecutive batches (ordered by length) mostly share one.
    prepared: Mutex<Option<(usize, PreparedFilter)>>,
    /// `filter_fn.bias`: the skip term added to the long convolution, per channel.
    skip: Tensor<3>,
}

/// The implicit long filter: positions → sine MLP → decay window, one tap per position.
struct ImplicitFilter {
    /// `pos_emb.z` [max_seq_len, emb_dim] and `pos_emb.t` [max_seq_len, 1].
    z: Tensor<2>,
    t: Tensor<2>,
    /// (linear, sine frequency [1, filter_order]) pairs, then the bias-free output linear.
    hidden: Vec<(Linear, Tensor<2>)>,
    output: Linear,
    /// `-|deltas|` [1, d_model], so the window is `exp(t · neg_abs_deltas) + shift`.
    neg_abs_deltas: Tensor<2>,
}

impl Hyena {
    /// Builds from config.json and the checkpoint on `device`, taking every tensor it uses;
    /// errors name a missing/mis-shaped tensor. (The caller calls `ckpt.finish()` afterwards.)
    pub fn load(
        config: &Value,
        ckpt: &mut Checkpoint,
        device: &Device,
        long_conv: LongConv,
    ) -> Result<Self> {
        let c: Config = parse_config(config)?;
        let (d, n_layer, d_inner, max_seq_len) = (c.d_model, c.n_layer, c.d_inner, c.max_seq_len);
        let (emb_dim, filter_order, short_order, inner_mlps) = (
            c.emb_dim,
            c.filter_order,
            c.short_filter_order,
            c.num_inner_mlps,
        );
        let vocab = padded_vocab(c.vocab_size, c.pad_vocab_size_multiple.unwrap_or(1));
        let ln_eps = c.layer_norm_epsilon;
        if c.hyena_order != 2 {
            // The published filter emits d_model channels, which only order 2 can use.
            return Err(config_error(
                "hyena_order must be 2 (the only order the HyenaDNA checkpoints use)",
            ));
        }
        if !(1..=2 * SHORT_FILTER_PADDING + 1).contains(&short_order) {
            return Err(config_error("short_filter_order must be between 1 and 5"));
        }

        // A bare backbone (`HyenaDNAModel`) or one inside a task model (`hyena.backbone.…`).
        let prefix = ckpt
            .find_prefix(
                &["", "hyena."],
                "backbone.embeddings.word_embeddings.weight",
            )
            .unwrap_or("");
        // Heads on top of the backbone: the embedding is taken before them.
        ckpt.skip_prefix("lm_head.weight");
        ckpt.skip_prefix("score.weight");
        let p = format!("{prefix}backbone.");
        let word_embeddings = param(
            ckpt,
            &format!("{p}embeddings.word_embeddings.weight"),
            [vocab, d],
            device,
        )?;
        // Without trainable frequencies there is no tensor: every sine uses `activation_freq`.
        let default_freq = c.activation_freq as f32;
        let n_layer = check_layers("n_layer", n_layer, ckpt, |layer| {
            format!("{p}layers.{layer}.norm1.weight")
        })?;
        // The filter's MLP: Linear layers at the even indices of `implicit_filter`, the last
        // (index 2·n + 2) its output.
        let inner_mlps = check_layers("num_inner_mlps", inner_mlps, ckpt, |i| {
            format!(
                "{p}layers.0.mixer.filter_fn.implicit_filter.{}.weight",
                2 * i + 2
            )
        })?;
        let mut blocks = Vec::with_capacity(n_layer);
        for layer in 0..n_layer {
            let b = format!("{p}layers.{layer}.");
            let m = format!("{b}mixer.");
            let f = format!("{m}filter_fn.");
            let mut hidden = Vec::with_capacity(inner_mlps + 1);
            // One activation module is shared by all sine positions (1, 3, 5, …); a .bin has it
            // under every name, a safetensors file under the first only.
            let mut freq: Option<Vec<f32>> = None;
            for i in 0..=inner_mlps {
                let linear_name = format!("{f}implicit_filter.{}", 2 * i);
                let fan_in = if i == 0 { emb_dim } else { filter_order };
                let linear = Linear::load(ckpt, &linear_name, fan_in, filter_order, true, device)?;
                let freq_name = format!("{f}implicit_filter.{}.freq", 2 * i + 1);
                if ckpt.contains(&freq_name) {
                    freq = Some(ckpt.take(&freq_name, &[1, filter_order])?);
                }
                let values = freq
                    .clone()
                    .unwrap_or_else(|| vec![default_freq; filter_order]);
                hidden.push((linear, upload(values, [1, filter_order], device)));
            }
            let output_name = format!("{f}implicit_filter.{}", 2 * inner_mlps + 2);
            // `deltas` and `pos_emb.t` are buffers (registered with lr 0), not parameters.
            let deltas = ckpt.take_buffer(&format!("{f}modulation.deltas"), &[1, 1, d])?;
            let filter = ImplicitFilter {
                z: param(
                    ckpt,
                    &format!("{f}pos_emb.z"),
                    [1, max_seq_len, emb_dim],
                    device,
                )?
                .reshape([max_seq_len, emb_dim]),
                t: upload(
                    ckpt.take_buffer(&format!("{f}pos_emb.t"), &[1, max_seq_len, 1])?,
                    [1, max_seq_len, 1],
                    device,
                )
                .reshape([max_seq_len, 1]),
                hidden,
                output: Linear::load(ckpt, &output_name, filter_order, d, false, device)?,
                neg_abs_deltas: upload(deltas.iter().map(|x| -x.abs()).collect(), [1, d], device),
            };
            let mixer = Operator {
                long_conv,
                in_proj: Linear::load(ckpt, &format!("{m}in_proj"), d, 3 * d, true, device)?,
                out_proj: Linear::load(ckpt, &format!("{m}out_proj"), d, d, true, device)?,
                short_weight: param(
                    ckpt,
                    &format!("{m}short_filter.weight"),
                    [3 * d, 1, short_order],
                    device,
                )?,
                short_bias: param(ckpt, &format!("{m}short_filter.bias"), [3 * d], device)?,
                filter,
                prepared: Mutex::new(None),
                skip: param(ckpt, &format!("{f}bias"), [d], device)?.reshape([1, d, 1]),
            };
            blocks.push(Block {
                norm1: LayerNorm::load(ckpt, &format!("{b}norm1"), d, BLOCK_NORM_EPS, device)?,
                mixer,
                norm2: LayerNorm::load(ckpt, &format!("{b}norm2"), d, BLOCK_NORM_EPS, device)?,
                fc1: Linear::load(ckpt, &format!("{b}mlp.fc1"), d, d_inner, true, device)?,
                fc2: Linear::load(ckpt, &format!("{b}mlp.fc2"), d_inner, d, true, device)?,
            });
        }
        let ln_f = LayerNorm::load(ckpt, &format!("{p}ln_f"), d, ln_eps, device)?;
        Ok(Hyena {
            widest: (3 * d).max(d_inner),
            word_embeddings,
            blocks,
            ln_f,
            hidden: d,
            max_seq_len,
        })
    }
}

impl Arch for Hyena {
    /// last_hidden_state [batch, tokens, hidden] for token ids [batch, tokens] and the attention
    /// mask (unused: the model is causal, so right padding cannot reach real tokens).
    /// `tokens` must not exceed `max_tokens()`.
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        _attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let tokens = input_ids.dims()[1];
        assert!(
            tokens <= self.max_seq_len,
            "HyenaDNA got {tokens} tokens; the caller must truncate to max_tokens() = {}",
            self.max_seq_len
        );
        let mut h = embedding(self.word_embeddings.clone(), input_ids);
        let (deepest, blocks) = (kept.deepest(), self.blocks.len());
        for (i, block) in self.blocks.iter().enumerate().take(deepest) {
            kept.offer(i, &h);
            h = block.forward(h);
        }
        if deepest > blocks {
            kept.offer(blocks, &h);
            h = self.ln_f.forward(h);
        }
        kept.offer(deepest, &h);
        h
    }

    /// As the HF modeling code's `output_hidden_states` gives them: the embeddings, each
    /// block's output, then the final LayerNorm's (one more than the blocks).
    fn layers(&self) -> usize {
        self.blocks.len() + 1
    }

    fn widest_activation(&self) -> usize {
        self.widest
    }

    fn hidden_size(&self) -> usize {
        self.hidden
    }

    fn token_rows(&self) -> usize {
        self.word_embeddings.dims()[0]
    }

    /// `max_seq_len`: the positional embedding of the implicit filters has that many positions.
    fn max_tokens(&self) -> usize {
        self.max_seq_len
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }
}

impl Block {
    fn forward(&self, h: Tensor<3>) -> Tensor<3> {
        let h = self.mixer.forward(self.norm1.forward(h.clone())) + h;
        let mlp = self
            .fc2
            .forward(gelu_tanh(self.fc1.forward(self.norm2.forward(h.clone()))));
        mlp + h
    }
}

impl Operator {
    fn forward(&self, u: Tensor<3>) -> Tensor<3> {
        let [_, len, d] = u.dims();
        // [batch, 3·d, len]: channels first for the convolutions.
        let u = self.in_proj.forward(u).swap_dims(1, 2);
        let short = conv1d(
            u,
            self.short_weight.clone(),
            Some(self.short_bias.clone()),
            ConvOptions::new([1], [SHORT_FILTER_PADDING], [1], 3 * d),
        )
        .narrow(2, 0, len);
        let x0 = short.clone().narrow(1, 0, d);
        let x1 = short.clone().narrow(1, d, d);
        let v = short.narrow(1, 2 * d, d) * x1;
        let v = self.filter_for(len).apply(v.clone()) + v * self.skip.clone();
        self.out_proj.forward((v * x0).swap_dims(1, 2))
    }

    fn filter_for(&self, len: usize) -> PreparedFilter {
        // A panic elsewhere cannot leave the cache half-written: keep using it.
        let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cached_len, filter)) = prepared.as_ref()
            && *cached_len == len
        {
            return filter.clone();
        }
        let filter = self.long_conv.prepare(self.filter.kernel(len));
        *prepared = Some((len, filter.clone()));
        filter
    }
}

impl ImplicitFilter {
    /// The long filter for `len` positions, [d_model, len].
    fn kernel(&self, len: usize) -> Tensor<2> {
        let mut h = self.z.clone().narrow(0, 0, len);
        for (linear, freq) in &self.hidden {
            h = sin_precise(linear.forward(h) * freq.clone());
        }
        let t = self.t.clone().narrow(0, 0, len);
        let window = (t * self.neg_abs_deltas.clone())
            .exp()
            .add_scalar(MODULATION_SHIFT);
        (self.output.forward(h) * window).transpose()
    }
}

/// sin(x) to f32 precision on every backend. GPU sin only has to be within 2⁻¹¹ absolute
/// (Vulkan/WebGPU precision rules); SwiftShader's WebGPU is that loose, which put HyenaDNA's
/// pooled embeddings 2e-3 off PyTorch. So: reduce x to [−π, π], then its Taylor series to x¹⁷
/// by Horner's rule in x² (truncation error < 3e-8 there), with multiplies and adds only.
pub(crate) fn sin_precise(x: Tensor<2>) -> Tensor<2> {
    use std::f64::consts::TAU;
    let r = x.clone() - (x * (1.0 / TAU)).round() * TAU;
    let r2 = r.clone() * r.clone();
    let mut series = r2.ones_like();
    for n in (1..=8u32).rev() {
        let k = f64::from(2 * n * (2 * n + 1));
        series = (r2.clone() * series).mul_scalar(-1.0 / k).add_scalar(1.0);
    }
    r * series
}
