//! Enformer (Avsec et al. 2021) as PyPI `enformer-pytorch`'s `modeling_enformer.py` computes it
//! (the `EleutherAI/enformer-*` checkpoints, `model_type` "enformer"), loaded as GENEB's
//! extractor loads it: `from_pretrained(name, use_tf_gamma=False)`.
//!
//! The input is one-hot DNA [batch, 196,608, 4] (N and every other character a row of zeros):
//! a stem (convolution of width 15, a residual pointwise ConvBlock, attention pooling by 2), a
//! tower of `num_downsamples − 1` blocks (ConvBlock of width 5, residual pointwise ConvBlock,
//! attention pooling by 2) whose widths grow exponentially from dim/2 to dim, `depth`
//! pre-LayerNorm transformer layers with relative positions (Transformer-XL style: content and
//! position logits, each with its learned bias, the positions' logits shifted to j − i), the
//! centre crop to `target_length` bins, the final pointwise ConvBlock to 2·dim and GELU, then the
//! `human` head: a linear layer and softplus. A ConvBlock is BatchNorm (running statistics, as
//! in eval mode) → GELU (`sigmoid(1.702·x)·x`) → convolution. 196,608 = 3·2¹⁶ halves evenly at
//! every pooling, so the pooling's padding branch never runs.
//!
//! The relative positions are the model's fixed features of the distances −(n−1)…n−1 (n the
//! bins after the tower): exponential decays, central masks and gamma densities, each with its
//! sign-multiplied copy. With `use_tf_gamma=False` the gamma densities are computed, not read
//! from TensorFlow's table; geneb computes all of them on the host once per model, in f64.
//!
//! GENEB's extractor (`embedding_pipeline/extractors/enformer.py`) centre-crops or N-pads each
//! sequence to 196,608 bp, one-hot encodes it, and averages the `human` head's output
//! [batch, 896, 5313] over the bins: the embedding is 5,313 values. `forward` returns that
//! head's output per bin; the recipe's pooling is its plain mean.

use super::{Arch, ArchSpec, Kept, Pooling, parse_config, size};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::{LayerNorm, Linear, config_error, param, upload};
use crate::tokenize::{CHARACTER_IDS_FROM, TokenizerChoice};
use burn::tensor::activation::{relu, sigmoid, softmax, softplus};
use burn::tensor::module::{conv1d, embedding};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The extractor's input length, enformer-pytorch's `SEQUENCE_LENGTH`.
pub const SEQUENCE_LENGTH: usize = crate::encoder::recipe::ENFORMER_SEQUENCE_LENGTH;
/// The output head the extractor pools (`self.model(tensor)['human']`).
const HEAD: &str = "human";
/// The character tokenizer's id of N (after A C G T), a row of zeros in the one-hot table.
const N_ID: i64 = CHARACTER_IDS_FROM as i64 + 4;
/// PyTorch's default epsilons: `nn.BatchNorm1d` and `nn.LayerNorm` are built without one.
const BATCH_NORM_EPS: f32 = 1e-5;
const LAYER_NORM_EPS: f64 = 1e-5;
/// `GELU` in enformer-pytorch is the sigmoid approximation `sigmoid(1.702·x)·x`.
const GELU_SLOPE: f64 = 1.702;
/// The three kinds of positional features, each with its sign-multiplied copy.
const POSITION_COMPONENTS: usize = 6;
/// `get_positional_features_exponential`'s `min_half_life` and the gamma's `eps`.
const MIN_HALF_LIFE: f64 = 3.0;
const GAMMA_EPS: f64 = 1e-8;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::ENFORMER.architecture,
    family: family::ENFORMER.name,
    serves: "EleutherAI/enformer-official-rough, EleutherAI/enformer-*",
    matches,
    tokenizer: TokenizerChoice::Characters { upper_case: true },
    poolings: &[Pooling::BinMean],
    load: |config, ckpt, compute| {
        let model = Enformer::load(config, ckpt, &compute.device)?;
        // One pass is one sequence, so no batch split makes its tensors smaller: a GPU that
        // cannot bind the largest in one buffer is refused here, not failed in the pass.
        let limit = crate::encoder::backend::max_buffer_floats(&compute.device);
        if compute.kind == crate::encoder::BackendKind::Wgpu && model.largest_tensor > limit {
            return Err(crate::Error::new(format!(
                "Enformer's largest tensor holds {} MiB, more than this GPU binds in one buffer \
                 ({} MiB): run it with --backend cpu",
                (model.largest_tensor * 4) >> 20,
                (limit * 4) >> 20
            )));
        }
        Ok(Box::new(model))
    },
    recipe: &crate::encoder::recipe::ENFORMER,
    published_config: None,
};

/// `EnformerConfig`'s keys, with its defaults where config.json leaves one out (as
/// `PretrainedConfig` fills them).
#[derive(Deserialize)]
struct Config {
    #[serde(default = "default_dim", deserialize_with = "size")]
    dim: usize,
    #[serde(default = "default_depth", deserialize_with = "size")]
    depth: usize,
    #[serde(default = "default_heads", deserialize_with = "size")]
    heads: usize,
    #[serde(default = "default_output_heads")]
    output_heads: BTreeMap<String, u64>,
    #[serde(default = "default_target_length")]
    target_length: i64,
    #[serde(default = "default_attn_dim_key", deserialize_with = "size")]
    attn_dim_key: usize,
    #[serde(default = "default_num_downsamples", deserialize_with = "size")]
    num_downsamples: usize,
    #[serde(default = "default_dim_divisible_by", deserialize_with = "size")]
    dim_divisible_by: usize,
}

fn default_dim() -> usize {
    1536
}
fn default_depth() -> usize {
    11
}
fn default_heads() -> usize {
    8
}
fn default_output_heads() -> BTreeMap<String, u64> {
    BTreeMap::from([("human".to_string(), 5313), ("mouse".to_string(), 1643)])
}
fn default_target_length() -> i64 {
    896
}
fn default_attn_dim_key() -> usize {
    64
}
fn default_num_downsamples() -> usize {
    7
}
fn default_dim_divisible_by() -> usize {
    128
}

/// Whether `config.json` describes an Enformer checkpoint.
pub fn matches(config: &Value) -> bool {
    config["model_type"] == "enformer"
        || config["architectures"]
            .as_array()
            .is_some_and(|a| a.iter().any(|n| n == "Enformer"))
}

/// `nn.BatchNorm1d` in eval mode folded to `x·scale + shift` per channel, as PyTorch's CPU
/// kernel folds it (`invstd = 1/sqrt(var + eps)`, in f32).
struct BatchNorm {
    scale: Tensor<1>,
    shift: Tensor<1>,
}

/// BatchNorm → GELU → convolution, on [batch, positions, channels].
struct ConvBlock {
    norm: BatchNorm,
    conv: Conv,
}

enum Conv {
    /// Width 1: a linear layer over the channels.
    Pointwise(Linear),
    /// Wider: `nn.Conv1d` with `padding = width // 2`.
    Wide {
        weight: Tensor<3>,
        bias: Tensor<1>,
        width: usize,
    },
}

/// ConvBlock(in → out, width), residual ConvBlock(out, 1), attention pooling by 2.
struct TowerBlock {
    conv: ConvBlock,
    residual: ConvBlock,
    pool: Linear,
}

struct Layer {
    attention_norm: LayerNorm,
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
    /// `to_rel_k` applied to the fixed positional features: [1, heads, 2n − 1, key width].
    relative_keys: Tensor<4>,
    /// `rel_content_bias`, `rel_pos_bias`: [1, heads, 1, key width].
    content_bias: Tensor<4>,
    position_bias: Tensor<4>,
    ffn_norm: LayerNorm,
    ffn_in: Linear,
    ffn_out: Linear,
}

pub struct Enformer {
    /// Token id → one-hot row (A, C, G, T) or zeros (N, anything else).
    one_hot: Tensor<2>,
    stem_weight: Tensor<3>,
    stem_bias: Tensor<1>,
    stem_residual: ConvBlock,
    stem_pool: Linear,
    tower: Vec<TowerBlock>,
    layers: Vec<Layer>,
    heads: usize,
    key_width: usize,
    /// The crop of the tower's bins to `target_length` (start, length).
    crop: (usize, usize),
    final_pointwise: ConvBlock,
    head: Linear,
    head_features: usize,
    half_dim: usize,
    /// The width of each layer's states (`Arch::hidden_size_at`): the stem's, each tower
    /// block's, each transformer layer's, the trunk's (final pointwise) and the head's.
    layer_widths: Vec<usize>,
    /// Floats of the pass's largest tensor: the stem's [196,608, dim/2] or the position
    /// logits [heads, n, 2n].
    largest_tensor: usize,
    notes: Vec<String>,
}

impl Enformer {
    pub fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Self> {
        let c: Config = parse_config(config)?;
        let (dim, heads, key_width) = (c.dim, c.heads, c.attn_dim_key);
        if heads == 0 || dim == 0 || !dim.is_multiple_of(heads) || !dim.is_multiple_of(2) {
            return Err(config_error(&format!(
                "dim {dim} must be even and divisible by heads {heads}"
            )));
        }
        let value_width = dim / heads;
        // `num_rel_pos_features = dim // heads`, split over the six components.
        let position_features = dim / heads;
        if !position_features.is_multiple_of(POSITION_COMPONENTS) {
            return Err(config_error(&format!(
                "dim / heads = {position_features} is not divisible by the {POSITION_COMPONENTS} \
                 relative-position components"
            )));
        }
        // `exponential_linspace_int` divides by `num - 1` = num_downsamples − 2; 196,608 halves
        // evenly 16 times.
        if !(3..=16).contains(&c.num_downsamples) {
            return Err(config_error(&format!(
                "num_downsamples {} is outside 3–16 (196,608 = 3·2¹⁶ bp)",
                c.num_downsamples
            )));
        }
        let half_dim = dim / 2;
        let mut widths = vec![half_dim];
        widths.extend(exponential_linspace_int(
            half_dim,
            dim,
            c.num_downsamples - 1,
            c.dim_divisible_by.max(1),
        ));
        if widths.last() != Some(&dim) {
            return Err(config_error(&format!(
                "the conv tower ends at width {:?}, not dim {dim}: dim_divisible_by {} does not \
                 divide dim",
                widths.last(),
                c.dim_divisible_by
            )));
        }
        let bins = SEQUENCE_LENGTH >> c.num_downsamples;
        let crop = centre_crop(bins, c.target_length).ok_or_else(|| {
            config_error(&format!(
                "target_length {} is longer than the {bins} bins a 196,608 bp input leaves",
                c.target_length
            ))
        })?;
        let head_features = match c.output_heads.get(HEAD) {
            Some(&n) if n > 0 && n <= super::MAX_CONFIG_SIZE => n as usize,
            _ => {
                return Err(config_error(
                    "output_heads has no 'human' head, the output GENEB's extractor pools",
                ));
            }
        };

        // A `.bin` saved from the model stores each trunk tensor twice, under the module's
        // name and under `_trunk.<index>` (one storage): read the first, skip the other.
        let module = |name: &str, index: usize, probe: &str| -> String {
            if ckpt.contains(&format!("{name}.{probe}")) {
                format!("{name}.")
            } else {
                format!("_trunk.{index}.")
            }
        };
        let stem = module("stem", 1, "0.weight");
        let tower_prefix = module("conv_tower", 2, "0.0.0.weight");
        let transformer = module("transformer", 4, "0.0.fn.0.weight");
        let pointwise = module("final_pointwise", 6, "1.0.weight");

        let one_hot = {
            let rows = CHARACTER_IDS_FROM as usize + 5;
            let mut table = vec![0f32; rows * 4];
            for base in 0..4 {
                table[(CHARACTER_IDS_FROM as usize + base) * 4 + base] = 1.0;
            }
            upload(table, [rows, 4], device)
        };
        let stem_weight = param(ckpt, &format!("{stem}0.weight"), [half_dim, 4, 15], device)?;
        let stem_bias = param(ckpt, &format!("{stem}0.bias"), [half_dim], device)?;
        let stem_residual =
            ConvBlock::load(ckpt, &format!("{stem}1.fn."), half_dim, half_dim, 1, device)?;
        let stem_pool = pool_logits(ckpt, &format!("{stem}2"), half_dim, device)?;
        let mut tower = Vec::with_capacity(widths.len() - 1);
        for (i, pair) in widths.windows(2).enumerate() {
            let (width_in, width_out) = (pair[0], pair[1]);
            let p = format!("{tower_prefix}{i}.");
            tower.push(TowerBlock {
                conv: ConvBlock::load(ckpt, &format!("{p}0."), width_in, width_out, 5, device)?,
                residual: ConvBlock::load(
                    ckpt,
                    &format!("{p}1.fn."),
                    width_out,
                    width_out,
                    1,
                    device,
                )?,
                pool: pool_logits(ckpt, &format!("{p}2"), width_out, device)?,
            });
        }

        let depth = super::check_layers("depth", c.depth, ckpt, |l| {
            format!("{transformer}{l}.0.fn.0.weight")
        })?;
        let features = upload(
            positional_features(bins, position_features),
            [2 * bins - 1, position_features],
            device,
        );
        let mut layers = Vec::with_capacity(depth);
        for l in 0..depth {
            let a = format!("{transformer}{l}.0.fn.");
            let f = format!("{transformer}{l}.1.fn.");
            let attn = format!("{a}1.");
            let projection = |ckpt: &mut Checkpoint, name: &str, out: usize| {
                Linear::load(ckpt, &format!("{attn}{name}"), dim, out, false, device)
            };
            let query = projection(ckpt, "to_q", key_width * heads)?;
            let key = projection(ckpt, "to_k", key_width * heads)?;
            let value = projection(ckpt, "to_v", value_width * heads)?;
            let to_relative = Linear::load(
                ckpt,
                &format!("{attn}to_rel_k"),
                position_features,
                key_width * heads,
                false,
                device,
            )?;
            let relative_keys = to_relative
                .forward(features.clone())
                .reshape([1, 2 * bins - 1, heads, key_width])
                .swap_dims(1, 2);
            let bias = |ckpt: &mut Checkpoint, name: &str| {
                param(
                    ckpt,
                    &format!("{attn}{name}"),
                    [1, heads, 1, key_width],
                    device,
                )
            };
            layers.push(Layer {
                attention_norm: LayerNorm::load(
                    ckpt,
                    &format!("{a}0"),
                    dim,
                    LAYER_NORM_EPS,
                    device,
                )?,
                query,
                key,
                value,
                out: Linear::load(
                    ckpt,
                    &format!("{attn}to_out"),
                    value_width * heads,
                    dim,
                    true,
                    device,
                )?,
                relative_keys,
                content_bias: bias(ckpt, "rel_content_bias")?,
                position_bias: bias(ckpt, "rel_pos_bias")?,
                ffn_norm: LayerNorm::load(ckpt, &format!("{f}0"), dim, LAYER_NORM_EPS, device)?,
                ffn_in: Linear::load(ckpt, &format!("{f}1"), dim, 2 * dim, true, device)?,
                ffn_out: Linear::load(ckpt, &format!("{f}4"), 2 * dim, dim, true, device)?,
            });
        }
        let final_pointwise =
            ConvBlock::load(ckpt, &format!("{pointwise}1."), dim, 2 * dim, 1, device)?;
        let head = Linear::load(
            ckpt,
            &format!("_heads.{HEAD}.0"),
            2 * dim,
            head_features,
            true,
            device,
        )?;
        // The duplicate names, the other species' heads (computed by the reference, unused by
        // its pooling) and BatchNorm's step counters.
        ckpt.skip_prefix("_trunk.");
        ckpt.skip_prefix("_heads.");
        let counters: Vec<String> = ckpt
            .names()
            .filter(|n| n.ends_with(".num_batches_tracked"))
            .map(str::to_string)
            .collect();
        for name in counters {
            ckpt.skip(&name);
        }
        let notes = vec![format!(
            "every sequence is centre-cropped or N-padded to {SEQUENCE_LENGTH} bp, as GENEB's \
             extractor does; the embedding is the mean over {} bins of the human head's {} \
             tracks (truncated_sequences counts the sequences cropped)",
            crop.1, head_features
        )];
        let layer_widths = widths
            .iter()
            .copied()
            .chain(std::iter::repeat_n(dim, layers.len()))
            .chain([2 * dim, head_features])
            .collect();
        Ok(Enformer {
            layer_widths,
            one_hot,
            stem_weight,
            stem_bias,
            stem_residual,
            stem_pool,
            tower,
            layers,
            heads,
            key_width,
            crop,
            final_pointwise,
            head,
            head_features,
            half_dim,
            largest_tensor: (SEQUENCE_LENGTH * half_dim).max(heads * bins * 2 * bins),
            notes,
        })
    }

    /// The trunk and the human head: [batch, bins after the crop, head features], or the
    /// states after `kept`'s deepest layer, keeping those asked for.
    fn run(&self, input_ids: Tensor<2, Int>, kept: &mut Kept) -> Tensor<3> {
        // [batch, positions, 4] → channels first for the stem's convolution.
        let x = embedding(self.one_hot.clone(), input_ids).swap_dims(1, 2);
        let x = conv1d(
            x,
            self.stem_weight.clone(),
            Some(self.stem_bias.clone()),
            ConvOptions::new([1], [7], [1], 1),
        )
        .swap_dims(1, 2);
        let x = self.stem_residual.forward(x.clone()) + x;
        let mut x = attention_pool(x, &self.stem_pool);
        let deepest = kept.deepest();
        let mut layer = 0;
        for block in &self.tower {
            kept.offer(layer, &x);
            if layer == deepest {
                return x;
            }
            let y = block.conv.forward(x);
            let y = block.residual.forward(y.clone()) + y;
            x = attention_pool(y, &block.pool);
            layer += 1;
        }
        for transformer_layer in &self.layers {
            kept.offer(layer, &x);
            if layer == deepest {
                return x;
            }
            x = transformer_layer.forward(x, self.heads, self.key_width);
            layer += 1;
        }
        kept.offer(layer, &x);
        if layer == deepest {
            return x;
        }
        let (start, length) = self.crop;
        let x = gelu(self.final_pointwise.forward(x.narrow(1, start, length)));
        kept.offer(layer + 1, &x);
        if layer + 1 == deepest {
            return x;
        }
        let x = softplus(self.head.forward(x), 1.0);
        kept.offer(layer + 2, &x);
        x
    }
}

impl Arch for Enformer {
    /// The human head's output per bin. The recipe centres every sequence's text to 196,608
    /// positions; ids of another length (another recipe asked for by name) are centred here the
    /// same way, with N. The mask is not read: the extractor passes none.
    fn forward(&self, input_ids: Tensor<2, Int>, _attention_mask: Tensor<2>) -> Tensor<3> {
        self.run(
            centre_ids(input_ids),
            &mut Kept::last(self.layer_widths.len() - 1),
        )
    }

    /// enformer-pytorch's blocks (it has no `output_hidden_states`): 0 the stem's output, then
    /// each conv tower block's, each transformer layer's, the trunk's (`return_only_embeddings`:
    /// cropped, final pointwise), and last the human head's (today's embedding). Each is
    /// pooled by the recipe's mean over its bins, as many as that layer has.
    fn layers(&self) -> Option<usize> {
        Some(self.layer_widths.len() - 1)
    }

    fn hidden_size_at(&self, layer: usize) -> usize {
        self.layer_widths
            .get(layer)
            .copied()
            .unwrap_or(self.head_features)
    }

    fn hidden_states(
        &self,
        input_ids: Tensor<2, Int>,
        _attention_mask: Tensor<2>,
        layers: &[usize],
    ) -> Result<Vec<Tensor<3>>> {
        let mut kept = Kept::new(self.family(), self.layer_widths.len() - 1, layers)?;
        self.run(centre_ids(input_ids), &mut kept);
        Ok(kept.into_states())
    }

    fn hidden_size(&self) -> usize {
        self.head_features
    }

    fn token_rows(&self) -> usize {
        self.one_hot.dims()[0]
    }

    fn max_tokens(&self) -> usize {
        SEQUENCE_LENGTH
    }

    /// The stem's dim/2 channels at every input position.
    fn widest_activation(&self) -> usize {
        self.half_dim
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }

    fn notes(&self) -> &[String] {
        &self.notes
    }
}

impl BatchNorm {
    fn load(ckpt: &mut Checkpoint, name: &str, channels: usize, device: &Device) -> Result<Self> {
        let weight = ckpt.take(&format!("{name}.weight"), &[channels])?;
        let bias = ckpt.take(&format!("{name}.bias"), &[channels])?;
        let mean = ckpt.take_buffer(&format!("{name}.running_mean"), &[channels])?;
        let var = ckpt.take_buffer(&format!("{name}.running_var"), &[channels])?;
        let mut scale = Vec::with_capacity(channels);
        let mut shift = Vec::with_capacity(channels);
        for c in 0..channels {
            let alpha = weight[c] / (var[c] + BATCH_NORM_EPS).sqrt();
            scale.push(alpha);
            shift.push(bias[c] - mean[c] * alpha);
        }
        Ok(BatchNorm {
            scale: upload(scale, [channels], device),
            shift: upload(shift, [channels], device),
        })
    }

    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let c = self.scale.dims()[0];
        x * self.scale.clone().reshape([1, 1, c]) + self.shift.clone().reshape([1, 1, c])
    }
}

impl ConvBlock {
    /// `ConvBlock(in, out, width)` at `{prefix}0` (BatchNorm) and `{prefix}2` (the convolution).
    fn load(
        ckpt: &mut Checkpoint,
        prefix: &str,
        width_in: usize,
        width_out: usize,
        width: usize,
        device: &Device,
    ) -> Result<Self> {
        let norm = BatchNorm::load(ckpt, &format!("{prefix}0"), width_in, device)?;
        let conv = format!("{prefix}2");
        let weight = ckpt.take(&format!("{conv}.weight"), &[width_out, width_in, width])?;
        let bias = ckpt.take(&format!("{conv}.bias"), &[width_out])?;
        let conv = if width == 1 {
            Conv::Pointwise(Linear::new(weight, Some(bias), width_in, width_out, device))
        } else {
            Conv::Wide {
                weight: upload(weight, [width_out, width_in, width], device),
                bias: upload(bias, [width_out], device),
                width,
            }
        };
        Ok(ConvBlock { norm, conv })
    }

    /// [batch, positions, in] → [batch, positions, out]
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let x = gelu(self.norm.forward(x));
        match &self.conv {
            Conv::Pointwise(linear) => linear.forward(x),
            Conv::Wide {
                weight,
                bias,
                width,
            } => conv1d(
                x.swap_dims(1, 2),
                weight.clone(),
                Some(bias.clone()),
                ConvOptions::new([1], [width / 2], [1], 1),
            )
            .swap_dims(1, 2),
        }
    }
}

impl Layer {
    fn forward(&self, x: Tensor<3>, heads: usize, key_width: usize) -> Tensor<3> {
        let [batch, n, _] = x.dims();
        let h = self.attention_norm.forward(x.clone());
        let split = |t: Tensor<3>| {
            let width = t.dims()[2] / heads;
            t.reshape([batch, n, heads, width]).swap_dims(1, 2)
        };
        let q = split(self.query.forward(h.clone())) * (key_width as f64).powf(-0.5);
        let k = split(self.key.forward(h.clone()));
        let v = split(self.value.forward(h));
        let content = (q.clone() + self.content_bias.clone()).matmul(k.swap_dims(2, 3));
        let relative =
            (q + self.position_bias.clone()).matmul(self.relative_keys.clone().swap_dims(2, 3));
        let weights = softmax(content + relative_shift(relative), 3);
        let out = weights.matmul(v).swap_dims(1, 2);
        let width = out.dims()[3] * heads;
        let x = self.out.forward(out.reshape([batch, n, width])) + x;
        let h = self.ffn_norm.forward(x.clone());
        self.ffn_out.forward(relu(self.ffn_in.forward(h))) + x
    }
}

/// `AttentionPool(channels, 2)` on [batch, positions, channels]: per channel, a softmax over
/// each pair of positions of the pointwise `to_attn_logits`, and the weighted sum.
fn attention_pool(x: Tensor<3>, logits: &Linear) -> Tensor<3> {
    let [batch, positions, channels] = x.dims();
    let pairs = [batch, positions / 2, 2, channels];
    let weights = softmax(logits.forward(x.clone()).reshape(pairs), 2);
    (x.reshape(pairs) * weights)
        .sum_dim(2)
        .reshape([batch, positions / 2, channels])
}

/// `one_hot_seq`'s centring on ids: the middle 196,608 of longer rows, shorter rows between
/// (196,608 − L) // 2 N on the left and the rest on the right.
fn centre_ids(ids: Tensor<2, Int>) -> Tensor<2, Int> {
    let [batch, len] = ids.dims();
    if len >= SEQUENCE_LENGTH {
        return ids.narrow(1, (len - SEQUENCE_LENGTH) / 2, SEQUENCE_LENGTH);
    }
    let left = (SEQUENCE_LENGTH - len) / 2;
    let device = ids.device();
    let n = |width: usize| Tensor::<2, Int>::full([batch, width], N_ID, &device);
    Tensor::cat(vec![n(left), ids, n(SEQUENCE_LENGTH - len - left)], 1)
}

/// `to_attn_logits`, a bias-free 1×1 `nn.Conv2d` [channels, channels, 1, 1], as a linear layer.
fn pool_logits(
    ckpt: &mut Checkpoint,
    name: &str,
    channels: usize,
    device: &Device,
) -> Result<Linear> {
    let weight = ckpt.take(
        &format!("{name}.to_attn_logits.weight"),
        &[channels, channels, 1, 1],
    )?;
    Ok(Linear::new(weight, None, channels, channels, device))
}

fn gelu(x: Tensor<3>) -> Tensor<3> {
    sigmoid(x.clone() * GELU_SLOPE) * x
}

/// enformer-pytorch's `relative_shift`: logits over the distances −(n−1)…n−1 [b, h, n, 2n − 1]
/// to logits over keys [b, h, n, n], where query i and key j take distance j − i.
fn relative_shift(x: Tensor<4>) -> Tensor<4> {
    let [batch, heads, n, distances] = x.dims();
    let zeros = Tensor::zeros([batch, heads, n, 1], &x.device());
    Tensor::cat(vec![zeros, x], 3)
        .reshape([batch, heads, distances + 1, n])
        .narrow(2, 1, distances)
        .reshape([batch, heads, n, distances])
        .narrow(3, 0, n)
}

/// `TargetLengthCrop`: `x[:, -trim:trim]` with `trim = (target - bins) // 2` (Python's floor
/// division), all of it for −1 or the full length; None where the target is longer.
fn centre_crop(bins: usize, target: i64) -> Option<(usize, usize)> {
    if target == -1 || target == bins as i64 {
        return Some((0, bins));
    }
    if target < 0 || target > bins as i64 {
        return None;
    }
    let trim = (target - bins as i64).div_euclid(2).unsigned_abs() as usize;
    Some((trim, bins.checked_sub(2 * trim)?))
}

/// `exponential_linspace_int(start, end, num, divisible_by)`: Python's `round`, half to even.
fn exponential_linspace_int(
    start: usize,
    end: usize,
    num: usize,
    divisible_by: usize,
) -> Vec<usize> {
    let base = ((end as f64 / start as f64).ln() / (num - 1) as f64).exp();
    (0..num)
        .map(|i| {
            let x = start as f64 * base.powi(i as i32);
            ((x / divisible_by as f64).round_ties_even() * divisible_by as f64) as usize
        })
        .collect()
}

/// `get_positional_embed(n, features, use_tf_gamma=False)` [2n − 1, features], row d + n − 1
/// for distance d: exponential decays, central masks, gamma densities (each features/6), then
/// the three multiplied by sign(d). Computed in f64 and rounded once: in f32 the gamma
/// log-densities of the real model are differences of numbers near 3·10⁴, where one f32 step
/// is 2·10⁻³, so PyTorch's own f32 features carry that rounding (tests/enformer.rs measures it).
fn positional_features(n: usize, features: usize) -> Vec<f32> {
    let per = features / POSITION_COMPONENTS;
    let seq_len = n as f64;
    let linspace = |start: f64, end: f64| -> Vec<f64> {
        let step = if per > 1 {
            (end - start) / (per - 1) as f64
        } else {
            0.0
        };
        (0..per).map(|i| start + step * i as f64).collect()
    };
    let half_lives: Vec<f64> = linspace(MIN_HALF_LIFE, seq_len.log2())
        .into_iter()
        .map(|e| 2f64.powf(e))
        .collect();
    let centre_widths: Vec<f64> = (1..=per).map(|k| 2f64.powi(k as i32) - 1.0).collect();
    let stddev = seq_len / (2.0 * per as f64);
    let gammas: Vec<(f64, f64, f64)> = linspace(seq_len / per as f64, seq_len)
        .into_iter()
        .map(|mean| {
            let concentration = (mean / stddev).powi(2);
            let rate = mean / (stddev * stddev);
            let log_normalization = libm::lgamma(concentration) - concentration * rate.ln();
            (concentration, rate, log_normalization)
        })
        .collect();
    let mut out = Vec::with_capacity((2 * n - 1) * features);
    let mut row = vec![0f64; 3 * per];
    for d in -(n as i64 - 1)..n as i64 {
        let x = d.unsigned_abs() as f64;
        for i in 0..per {
            row[i] = (-std::f64::consts::LN_2 / half_lives[i] * x).exp();
            row[per + i] = if centre_widths[i] > x { 1.0 } else { 0.0 };
            let (concentration, rate, log_normalization) = gammas[i];
            // xlogy: 0 where the factor is 0; concentration ≥ 4 here, so log(0)'s −∞ gives 0.
            let log_density = (concentration - 1.0) * x.ln() - rate * x - log_normalization;
            row[2 * per + i] = log_density.exp() + GAMMA_EPS;
        }
        let peak = row[2 * per..].iter().copied().fold(f64::MIN, f64::max);
        for value in &mut row[2 * per..] {
            *value /= peak;
        }
        let sign = d.signum() as f64;
        out.extend(row.iter().map(|&v| v as f32));
        out.extend(row.iter().map(|&v| (v * sign) as f32));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    #[test]
    fn the_crop_follows_pythons_floor_division() {
        assert_eq!(centre_crop(1536, 896), Some((320, 896)));
        // (895 − 1536) // 2 = −321: x[:, 321:-321] keeps 894, as the reference does.
        assert_eq!(centre_crop(1536, 895), Some((321, 894)));
        assert_eq!(centre_crop(1536, -1), Some((0, 1536)));
        assert_eq!(centre_crop(1536, 1537), None);
    }

    #[test]
    fn ids_of_another_length_are_centred_as_the_extractor_centres_text() {
        let ids = |values: Vec<i64>| {
            let len = values.len();
            Tensor::<2, Int>::from_data(TensorData::new(values, [1, len]), &Device::flex())
        };
        let read = |t: Tensor<2, Int>| {
            t.into_data()
                .convert::<i64>()
                .try_into_vec::<i64>()
                .unwrap()
        };
        let short = read(centre_ids(ids(vec![7, 8, 9])));
        let left = (SEQUENCE_LENGTH - 3) / 2;
        assert_eq!(short.len(), SEQUENCE_LENGTH);
        assert_eq!(&short[left - 1..left + 4], &[N_ID, 7, 8, 9, N_ID]);
        assert!(
            short[..left]
                .iter()
                .chain(&short[left + 3..])
                .all(|&id| id == N_ID)
        );
        // Three too many: one off the left, two off the right (`start = (L − 196,608) // 2`).
        let long: Vec<i64> = (0..SEQUENCE_LENGTH as i64 + 3).collect();
        let cropped = read(centre_ids(ids(long)));
        assert_eq!((cropped[0], cropped.len()), (1, SEQUENCE_LENGTH));
    }

    #[test]
    fn the_tower_widths_are_the_published_models() {
        // Enformer's published tower: 768 → 1536 in six steps, multiples of 128.
        assert_eq!(
            exponential_linspace_int(768, 1536, 6, 128),
            vec![768, 896, 1024, 1152, 1280, 1536]
        );
    }
}
