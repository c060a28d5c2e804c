//! Evo-1 (Nguyen et al. 2024; `togethercomputer/evo-1-131k-base`, revision `1.1_fix`) as
//! StripedHyena's `model.py` computes it (`model_type` "stripedhyena"), loaded as GENEB's
//! extractor loads it through evo's `Evo('evo-1-131k-base')`.
//!
//! Byte tokens (`CharLevelTokenizer(512)`: each byte of the text is its id, nothing added) →
//! embedding → `num_layers` blocks, each either attention (the indices `attn_layer_idxs`) or
//! Hyena (`hyena_layer_idxs`) → the final RMSNorm, whose output is the embedding's states. An
//! attention block is RMSNorm → flash-attn's `MHA` (fused `Wqkv` laid out as q, k, v; causal;
//! rotary over each whole head at base 10,000, positions divided by `rotary_emb_scaling_factor`
//! where `use_interpolated_rotary_pos_emb` is set) → residual, then RMSNorm → the gated MLP
//! (`l3(gelu(l1 z) · l2 z)`) → residual. A Hyena block is RMSNorm → `projections` to 3·hidden →
//! a causal depthwise short convolution (width `short_filter_length`, its bias added after) →
//! split per head into x2, x1, v (`column_split_hyena`) → x1·v convolved causally with the long
//! modal filter `h[d, t] = Re Σₛ residueₛ · poleₛᵗ`, plus `D`·x1·v, times x2 →
//! `out_filter_dense` → residual, then the gated MLP as above. StripedHyena's RMSNorm divides by
//! `rms(x) + eps` (eps outside the root).
//!
//! The filter is computed on the host in f64 for each input length (the reference: in f32, as
//! `exp(t · log p)`), then convolved as HyenaDNA's is (`layers::long_conv`: FFT on the CPU,
//! directly on the GPU).
//!
//! Padding: every operation is per position or causal, so with padding on the right the states
//! of real tokens do not depend on it; the mean over the mask is the extractor's plain mean of
//! its lone sequence.
//!
//! Layer K (`hidden_states`) follows StripedHyena's blocks (its code has no
//! `output_hidden_states`): 0 the embedding's output, K the output of block K, the last one
//! after the final RMSNorm (today's states).

use super::{Arch, ArchSpec, Kept, Pooling, check_layers, epsilon, parse_config, size};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::long_conv::{LongConv, PreparedFilter};
use crate::encoder::layers::positions::{RopeScaling, Rotary, RotaryTables};
use crate::encoder::layers::{
    GroupedQueryAttention, Linear, causal_bias, config_error, param, upload,
};
use crate::tokenize::TokenizerChoice;
use burn::tensor::activation::gelu;
use burn::tensor::module::{conv1d, embedding};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Mutex;

/// The longest input geneb gives the 131k model (`recipe::EVO_CONTEXT`).
pub const CONTEXT: usize = crate::encoder::recipe::EVO_CONTEXT;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::EVO.architecture,
    family: family::EVO.name,
    serves: "togethercomputer/evo-1-131k-base (revision 1.1_fix)",
    matches,
    tokenizer: TokenizerChoice::Bytes,
    poolings: &[Pooling::MaskedMean],
    load: |config, ckpt, compute| {
        let long_conv = LongConv::for_backend(compute.kind);
        Ok(Box::new(Evo::load(
            config,
            ckpt,
            long_conv,
            &compute.device,
        )?))
    },
    recipe: &crate::encoder::recipe::EVO,
    published_config: None,
};

/// StripedHyena's config keys, with the values of evo's `evo-1-131k-base_inference.yml` (the
/// file GENEB's extractor builds the model from) where config.json leaves one out.
#[derive(Deserialize)]
struct Config {
    #[serde(default = "default_vocab", deserialize_with = "size")]
    vocab_size: usize,
    #[serde(default = "default_hidden", deserialize_with = "size")]
    hidden_size: usize,
    #[serde(default = "default_layers", deserialize_with = "size")]
    num_layers: usize,
    attn_layer_idxs: Vec<usize>,
    hyena_layer_idxs: Vec<usize>,
    #[serde(default = "default_heads", deserialize_with = "size")]
    num_attention_heads: usize,
    #[serde(default = "default_short_filter", deserialize_with = "size")]
    short_filter_length: usize,
    #[serde(default = "default_true")]
    short_filter_bias: bool,
    #[serde(default = "default_state", deserialize_with = "size")]
    state_size: usize,
    #[serde(default = "default_eps", deserialize_with = "epsilon")]
    eps: f64,
    #[serde(default = "default_multiple", deserialize_with = "size")]
    inner_size_multiple_of: usize,
    #[serde(default)]
    inner_mlp_size: Option<usize>,
    #[serde(default = "default_one")]
    proj_groups: usize,
    #[serde(default = "default_one")]
    hyena_filter_groups: usize,
    #[serde(default = "default_one")]
    model_parallel_size: usize,
    #[serde(default = "default_true")]
    qkv_proj_bias: bool,
    #[serde(default = "default_true")]
    mha_out_proj_bias: bool,
    #[serde(default = "default_true")]
    final_norm: bool,
    #[serde(default = "default_true")]
    column_split_hyena: bool,
    #[serde(default = "default_activation")]
    mlp_activation: String,
    #[serde(default)]
    use_interpolated_rotary_pos_emb: bool,
    #[serde(default = "default_scaling")]
    rotary_emb_scaling_factor: f64,
    #[serde(default = "default_base")]
    rotary_emb_base: f64,
}

fn default_vocab() -> usize {
    512
}
fn default_hidden() -> usize {
    4096
}
fn default_layers() -> usize {
    32
}
fn default_heads() -> usize {
    32
}
fn default_short_filter() -> usize {
    3
}
fn default_state() -> usize {
    8
}
fn default_eps() -> f64 {
    1e-6
}
fn default_multiple() -> usize {
    16
}
fn default_one() -> usize {
    1
}
fn default_true() -> bool {
    true
}
fn default_activation() -> String {
    "gelu".to_string()
}
fn default_scaling() -> f64 {
    1.0
}
fn default_base() -> f64 {
    10_000.0
}

/// Whether `config.json` describes a StripedHyena checkpoint.
pub fn matches(config: &Value) -> bool {
    config["model_type"] == "stripedhyena"
        || config["architectures"]
            .as_array()
            .is_some_and(|a| a.iter().any(|n| n == "StripedHyenaModelForCausalLM"))
}

/// StripedHyena's `RMSNorm`: `scale · x / (rms(x) + eps)`.
struct RmsNorm {
    scale: Tensor<1>,
    eps: f64,
}

/// `ParallelGatedMLP`: `l3(act(l1 z) · l2 z)`, no biases.
struct GatedMlp {
    l1: Linear,
    l2: Linear,
    l3: Linear,
    silu: bool,
}

struct HyenaFilter {
    projections: Linear,
    /// `short_filter_weight` [3·hidden, 1, width] and its bias.
    short_weight: Tensor<3>,
    short_bias: Option<Tensor<1>>,
    /// `poles`, `residues` per channel and state, as (re, im), on the host for the filter.
    poles: Vec<[f64; 2]>,
    residues: Vec<[f64; 2]>,
    skip: Tensor<3>,
    out: Linear,
    long_conv: LongConv,
    /// The filter prepared for the last input length, reused while lengths repeat.
    prepared: Mutex<Option<(usize, PreparedFilter)>>,
}

#[allow(clippy::large_enum_variant, reason = "one per block, built once")]
enum Mixer {
    Attention(GroupedQueryAttention),
    Hyena(HyenaFilter),
}

struct Block {
    pre_norm: RmsNorm,
    mixer: Mixer,
    post_norm: RmsNorm,
    mlp: GatedMlp,
}

pub struct Evo {
    embedding: Tensor<2>,
    blocks: Vec<Block>,
    norm: RmsNorm,
    rotary: Rotary,
    hidden: usize,
    heads: usize,
    mlp_width: usize,
    notes: Vec<String>,
}

impl Evo {
    pub fn load(
        config: &Value,
        ckpt: &mut Checkpoint,
        long_conv: LongConv,
        device: &Device,
    ) -> Result<Self> {
        let c: Config = parse_config(config)?;
        let (hidden, heads) = (c.hidden_size, c.num_attention_heads);
        if heads == 0 || hidden == 0 || !hidden.is_multiple_of(heads) {
            return Err(config_error(&format!(
                "hidden_size {hidden} must be divisible by num_attention_heads {heads}"
            )));
        }
        let head_dim = hidden / heads;
        // What the 131k model uses; other settings take code paths geneb does not have.
        let unsupported = [
            (c.proj_groups != 1, "proj_groups other than 1"),
            (
                c.hyena_filter_groups != 1,
                "hyena_filter_groups other than 1",
            ),
            (
                c.model_parallel_size != 1,
                "model_parallel_size other than 1",
            ),
            (!c.final_norm, "final_norm false"),
            (!c.column_split_hyena, "column_split_hyena false"),
            (!head_dim.is_multiple_of(2), "an odd head width"),
            (c.short_filter_length == 0, "short_filter_length 0"),
            (c.state_size == 0, "state_size 0"),
        ];
        if let Some((_, what)) = unsupported.iter().find(|(bad, _)| *bad) {
            return Err(config_error(&format!("{what} is not supported")));
        }
        let silu = match c.mlp_activation.as_str() {
            "gelu" => false,
            "silu" => true,
            other => {
                return Err(config_error(&format!(
                    "mlp_activation '{other}' is not gelu or silu"
                )));
            }
        };
        for &l in c.attn_layer_idxs.iter().chain(&c.hyena_layer_idxs) {
            if l >= c.num_layers {
                return Err(config_error(&format!(
                    "layer index {l} is past num_layers {}",
                    c.num_layers
                )));
            }
        }
        // `ParallelGatedMLP`: 2·hidden·4/3 rounded up to the multiple, unless set.
        let mlp_width = c.inner_mlp_size.unwrap_or_else(|| {
            let multiple = c.inner_size_multiple_of.max(1);
            (2 * hidden * 4 / 3).div_ceil(multiple) * multiple
        });
        let prefix = if ckpt.contains("backbone.embedding_layer.weight") {
            "backbone."
        } else {
            ""
        };
        let embedding = param(
            ckpt,
            &format!("{prefix}embedding_layer.weight"),
            [c.vocab_size, hidden],
            device,
        )?;
        let num_layers = check_layers("num_layers", c.num_layers, ckpt, |l| {
            format!("{prefix}blocks.{l}.pre_norm.scale")
        })?;
        let norm = |ckpt: &mut Checkpoint, name: &str| -> Result<RmsNorm> {
            Ok(RmsNorm {
                scale: param(ckpt, &format!("{name}.scale"), [hidden], device)?,
                eps: c.eps,
            })
        };
        let mut blocks = Vec::with_capacity(num_layers);
        for l in 0..num_layers {
            let p = format!("{prefix}blocks.{l}.");
            let mixer = if c.attn_layer_idxs.contains(&l) {
                let mha = format!("{p}inner_mha_cls.");
                let [q_proj, k_proj, v_proj] = Linear::load_parts(
                    ckpt,
                    &format!("{mha}Wqkv"),
                    hidden,
                    hidden,
                    c.qkv_proj_bias,
                    device,
                )?;
                let out_proj = Linear::load(
                    ckpt,
                    &format!("{mha}out_proj"),
                    hidden,
                    hidden,
                    c.mha_out_proj_bias,
                    device,
                )?;
                // A bf16 buffer in the reference, so flash-attn recomputes the frequencies in
                // f32 from the base instead of reading it (`_update_cos_sin_cache`).
                ckpt.skip(&format!("{mha}rotary_emb.inv_freq"));
                Mixer::Attention(GroupedQueryAttention {
                    q_proj,
                    k_proj,
                    v_proj,
                    out_proj,
                    heads,
                    kv_heads: heads,
                    head_dim,
                    clip: None,
                })
            } else if c.hyena_layer_idxs.contains(&l) {
                Mixer::Hyena(HyenaFilter::load(ckpt, &p, &c, long_conv, device)?)
            } else {
                return Err(config_error(&format!(
                    "block {l} is in neither attn_layer_idxs nor hyena_layer_idxs"
                )));
            };
            let mlp = GatedMlp {
                l1: Linear::load(
                    ckpt,
                    &format!("{p}mlp.l1"),
                    hidden,
                    mlp_width,
                    false,
                    device,
                )?,
                l2: Linear::load(
                    ckpt,
                    &format!("{p}mlp.l2"),
                    hidden,
                    mlp_width,
                    false,
                    device,
                )?,
                l3: Linear::load(
                    ckpt,
                    &format!("{p}mlp.l3"),
                    mlp_width,
                    hidden,
                    false,
                    device,
                )?,
                silu,
            };
            blocks.push(Block {
                pre_norm: norm(ckpt, &format!("{p}pre_norm"))?,
                mixer,
                post_norm: norm(ckpt, &format!("{p}post_norm"))?,
                mlp,
            });
        }
        let norm = norm(ckpt, &format!("{prefix}norm"))?;
        // The tied output embedding: the embedding's states are taken before it.
        ckpt.skip_prefix(&format!("{prefix}unembed."));
        let scaling = c
            .use_interpolated_rotary_pos_emb
            .then_some(RopeScaling::Linear {
                factor: c.rotary_emb_scaling_factor as f32,
            });
        let notes = vec![format!(
            "each sequence is embedded alone and whole up to {CONTEXT} bytes, as the published \
             row ran (GENEB's evo.py takes only the first sequence of each batch, \
             `seqs[i:i+bs][0]`: at main.py's default batch of 4 its classifier could not have \
             been fitted, so the row ran one sequence per batch); the embedding is the mean of \
             the final RMSNorm's output over the bytes"
        )];
        Ok(Evo {
            embedding,
            blocks,
            norm,
            rotary: Rotary::from_theta(head_dim, c.rotary_emb_base, scaling),
            hidden,
            heads,
            mlp_width,
            notes,
        })
    }
}

impl HyenaFilter {
    fn load(
        ckpt: &mut Checkpoint,
        block: &str,
        c: &Config,
        long_conv: LongConv,
        device: &Device,
    ) -> Result<Self> {
        let hidden = c.hidden_size;
        let f = format!("{block}filter.");
        let width = c.short_filter_length;
        let short_weight = param(
            ckpt,
            &format!("{f}short_filter_weight"),
            [3 * hidden, 1, width],
            device,
        )?;
        let short_bias = if c.short_filter_bias {
            Some(param(
                ckpt,
                &format!("{f}short_filter_bias"),
                [3 * hidden],
                device,
            )?)
        } else {
            None
        };
        let pairs = |values: Vec<f32>| -> Vec<[f64; 2]> {
            values
                .chunks_exact(2)
                .map(|pair| [pair[0] as f64, pair[1] as f64])
                .collect()
        };
        let shape = [hidden, c.state_size, 1, 2];
        let poles = pairs(ckpt.take(&format!("{f}poles"), &shape)?);
        let residues = pairs(ckpt.take(&format!("{f}residues"), &shape)?);
        let skip = param(ckpt, &format!("{f}D"), [hidden], device)?.reshape([1, hidden, 1]);
        Ok(HyenaFilter {
            projections: Linear::load(
                ckpt,
                &format!("{block}projections"),
                hidden,
                3 * hidden,
                true,
                device,
            )?,
            short_weight,
            short_bias,
            poles,
            residues,
            skip,
            out: Linear::load(
                ckpt,
                &format!("{block}out_filter_dense"),
                hidden,
                hidden,
                true,
                device,
            )?,
            long_conv,
            prepared: Mutex::new(None),
        })
    }

    /// `h[d, t] = Re Σₛ rₛ · pₛᵗ` for t < len, [hidden, len], in f64 by repeated
    /// multiplication (exact to far below f32's step at the 131k model's length).
    fn kernel(&self, len: usize, device: &Device) -> Tensor<2> {
        let channels = self.skip.dims()[1];
        let states = self.poles.len() / channels;
        let mut h = vec![0f32; channels * len];
        for (d, row) in h.chunks_exact_mut(len).enumerate() {
            let mut sum = vec![0f64; len];
            for s in d * states..(d + 1) * states {
                let [pr, pi] = self.poles[s];
                let [rr, ri] = self.residues[s];
                // r · pᵗ, starting from r at t = 0.
                let (mut re, mut im) = (rr, ri);
                for value in sum.iter_mut() {
                    *value += re;
                    (re, im) = (re * pr - im * pi, re * pi + im * pr);
                }
            }
            for (out, value) in row.iter_mut().zip(sum) {
                *out = value as f32;
            }
        }
        upload(h, [channels, len], device)
    }

    fn filter_for(&self, len: usize, device: &Device) -> PreparedFilter {
        // A panic elsewhere cannot leave the cache half-written: keep using it.
        let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cached_len, filter)) = prepared.as_ref()
            && *cached_len == len
        {
            return filter.clone();
        }
        let filter = self.long_conv.prepare(self.kernel(len, device));
        *prepared = Some((len, filter.clone()));
        filter
    }

    /// z [batch, len, hidden] (after the pre-norm) → the block's mixer output, [batch, len,
    /// hidden], before the residual.
    fn forward(&self, z: Tensor<3>, heads: usize) -> Tensor<3> {
        let [batch, len, hidden] = z.dims();
        let width = self.short_weight.dims()[2];
        // [batch, 3·hidden, len]: channels first for the convolutions.
        let z = self.projections.forward(z).swap_dims(1, 2);
        let z = conv1d(
            z,
            self.short_weight.clone(),
            None,
            ConvOptions::new([1], [width - 1], [1], 3 * hidden),
        )
        .narrow(2, 0, len);
        let z = match &self.short_bias {
            Some(bias) => z + bias.clone().reshape([1, 3 * hidden, 1]),
            None => z,
        };
        // `column_split`: per head, x2, x1 and v side by side.
        let head_dim = hidden / heads;
        let z = z.reshape([batch, heads, 3, head_dim, len]);
        let part = |i: usize| z.clone().narrow(2, i, 1).reshape([batch, hidden, len]);
        let (x2, x1, v) = (part(0), part(1), part(2));
        let x1v = x1 * v;
        let y = self.filter_for(len, &x1v.device()).apply(x1v.clone()) + x1v * self.skip.clone();
        self.out.forward((y * x2).swap_dims(1, 2))
    }
}

impl RmsNorm {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let rms = (x.clone() * x.clone()).mean_dim(2).sqrt();
        x / rms.add_scalar(self.eps) * self.scale.clone().unsqueeze::<3>()
    }
}

impl GatedMlp {
    fn forward(&self, z: Tensor<3>) -> Tensor<3> {
        let gate = self.l1.forward(z.clone());
        let gate = if self.silu {
            crate::encoder::layers::silu(gate)
        } else {
            gelu(gate)
        };
        self.l3.forward(gate * self.l2.forward(z))
    }
}

impl Arch for Evo {
    /// The final RMSNorm's output. The mask is not read: everything is causal, so right padding
    /// never reaches a real byte's states.
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        _attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let [_, tokens] = input_ids.dims();
        let device = input_ids.device();
        let mut x = embedding(self.embedding.clone(), input_ids);
        // The rotary tables and the causal bias, made at the first attention block.
        let mut attention: Option<(RotaryTables, Tensor<4>)> = None;
        let deepest = kept.deepest();
        for (i, block) in self.blocks.iter().enumerate().take(deepest) {
            kept.offer(i, &x);
            let h = block.pre_norm.forward(x.clone());
            let mixed = match &block.mixer {
                Mixer::Attention(mha) => {
                    let (rotary, bias) = attention.get_or_insert_with(|| {
                        (
                            self.rotary.tables(tokens, &device),
                            causal_bias(tokens, &device),
                        )
                    });
                    mha.forward(h, rotary, bias.clone())
                }
                Mixer::Hyena(filter) => filter.forward(h, self.heads),
            };
            x = mixed + x;
            x = block.mlp.forward(block.post_norm.forward(x.clone())) + x;
        }
        if deepest == self.blocks.len() {
            x = self.norm.forward(x);
        }
        kept.offer(deepest, &x);
        x
    }

    /// StripedHyena's code keeps no hidden states, so its blocks: the embeddings, each block's
    /// output (the residual stream the next block reads), the last after the final RMSNorm.
    fn layers(&self) -> usize {
        self.blocks.len()
    }

    fn hidden_size(&self) -> usize {
        self.hidden
    }

    fn token_rows(&self) -> usize {
        self.embedding.dims()[0]
    }

    fn max_tokens(&self) -> usize {
        CONTEXT
    }

    /// The projections to 3·hidden and the MLP's inner width, whichever is wider.
    fn widest_activation(&self) -> usize {
        (3 * self.hidden).max(self.mlp_width)
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }

    fn notes(&self) -> &[String] {
        &self.notes
    }
}
