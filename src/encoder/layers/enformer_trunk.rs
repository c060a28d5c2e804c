//! The Enformer trunk (Avsec et al. 2021) as enformer-pytorch's `modeling_enformer.py` builds it,
//! shared by Enformer (`arch/enformer.rs`) and SPACE (`arch/space.rs`, whose `modules.py` copies
//! these classes line for line): one-hot DNA, a stem (convolution of width 15, a residual
//! pointwise ConvBlock, attention pooling by 2), a tower of `num_downsamples − 1` blocks
//! (ConvBlock of width 5, residual pointwise ConvBlock, attention pooling by 2) whose widths grow
//! exponentially from dim/2 to dim, pre-LayerNorm attention with relative positions
//! (Transformer-XL style: content and position logits, each with its learned bias, the
//! positions' logits shifted to j − i), the feed-forward block, the centre crop
//! (`TargetLengthCrop`) and the final pointwise ConvBlock. A ConvBlock is BatchNorm (running
//! statistics, as in eval mode) → GELU (`sigmoid(1.702·x)·x`) → convolution.
//!
//! The relative positions are the model's fixed features of the distances −(n−1)…n−1: exponential
//! decays, central masks and gamma densities, each with its sign-multiplied copy. With
//! `use_tf_gamma=False` the gamma densities are computed, not read from TensorFlow's table;
//! geneb computes all of them on the host once per model, in f64.

use super::{LayerNorm, Linear, config_error, param, upload};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::backend::Compute;
use crate::tokenize::CHARACTER_IDS_FROM;
use burn::tensor::activation::{relu, sigmoid, softmax};
use burn::tensor::module::{conv1d, embedding};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Int, Tensor};

/// The character tokenizer's id of N (after A C G T), a row of zeros in the one-hot table.
pub const N_ID: i64 = CHARACTER_IDS_FROM as i64 + 4;
/// PyTorch's default epsilons: `nn.BatchNorm1d` and `nn.LayerNorm` are built without one.
const BATCH_NORM_EPS: f32 = 1e-5;
pub const LAYER_NORM_EPS: f64 = 1e-5;
/// `GELU` in enformer-pytorch is the sigmoid approximation `sigmoid(1.702·x)·x`.
const GELU_SLOPE: f64 = 1.702;
/// The three kinds of positional features, each with its sign-multiplied copy.
const POSITION_COMPONENTS: usize = 6;
/// `get_positional_features_exponential`'s `min_half_life` and the gamma's `eps`.
const MIN_HALF_LIFE: f64 = 3.0;
const GAMMA_EPS: f64 = 1e-8;

/// `nn.BatchNorm1d` in eval mode folded to `x·scale + shift` per channel, as PyTorch's CPU
/// kernel folds it (`invstd = 1/sqrt(var + eps)`, in f32).
struct BatchNorm {
    scale: Tensor<1>,
    shift: Tensor<1>,
}

/// BatchNorm → GELU → convolution, on [batch, positions, channels].
pub struct ConvBlock {
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

/// One-hot input, stem and conv tower: token ids [batch, L] → [batch, L / 2^num_downsamples, dim].
pub struct ConvTower {
    /// Token id → one-hot row (A, C, G, T) or zeros (N, anything else).
    one_hot: Tensor<2>,
    stem_weight: Tensor<3>,
    stem_bias: Tensor<1>,
    stem_residual: ConvBlock,
    stem_pool: Linear,
    tower: Vec<TowerBlock>,
    half_dim: usize,
}

/// The widths of the stem and the tower's blocks, dim/2 … dim, as `exponential_linspace_int`
/// gives them; an error where they do not end at dim or `sequence_length` does not halve
/// evenly `num_downsamples` times.
pub fn tower_widths(
    dim: usize,
    num_downsamples: usize,
    dim_divisible_by: usize,
    sequence_length: usize,
) -> Result<Vec<usize>> {
    // `exponential_linspace_int` divides by `num - 1` = num_downsamples − 2.
    let halvings = sequence_length.trailing_zeros() as usize;
    if num_downsamples < 3 || num_downsamples > halvings {
        return Err(config_error(&format!(
            "num_downsamples {num_downsamples} is outside 3–{halvings} ({sequence_length} bp \
             halves evenly {halvings} times)"
        )));
    }
    if dim == 0 || !dim.is_multiple_of(2) {
        return Err(config_error(&format!("dim {dim} must be even")));
    }
    let half_dim = dim / 2;
    let mut widths = vec![half_dim];
    widths.extend(exponential_linspace_int(
        half_dim,
        dim,
        num_downsamples - 1,
        dim_divisible_by.max(1),
    ));
    if widths.last() != Some(&dim) {
        return Err(config_error(&format!(
            "the conv tower ends at width {:?}, not dim {dim}: dim_divisible_by \
             {dim_divisible_by} does not divide dim",
            widths.last()
        )));
    }
    Ok(widths)
}

impl ConvTower {
    /// The stem at `{stem}0` (convolution), `{stem}1.fn.` (residual ConvBlock), `{stem}2`
    /// (pool), and the tower's blocks at `{tower}{i}.`.
    pub fn load(
        ckpt: &mut Checkpoint,
        stem: &str,
        tower_prefix: &str,
        widths: &[usize],
        device: &Device,
    ) -> Result<Self> {
        let half_dim = widths[0];
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
        Ok(ConvTower {
            one_hot,
            stem_weight,
            stem_bias,
            stem_residual,
            stem_pool,
            tower,
            half_dim,
        })
    }

    /// The stem: token ids [batch, L] → [batch, L / 2, dim / 2].
    pub fn stem(&self, input_ids: Tensor<2, Int>) -> Tensor<3> {
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
        attention_pool(x, &self.stem_pool)
    }

    /// The tower's blocks after the stem.
    pub fn blocks(&self) -> usize {
        self.tower.len()
    }

    /// Tower block `block`: [batch, n, its input width] → [batch, n / 2, its output width].
    pub fn block(&self, block: usize, x: Tensor<3>) -> Tensor<3> {
        let block = &self.tower[block];
        let y = block.conv.forward(x);
        let y = block.residual.forward(y.clone()) + y;
        attention_pool(y, &block.pool)
    }

    /// Rows of the one-hot table: every id fed in must be below it.
    pub fn token_rows(&self) -> usize {
        self.one_hot.dims()[0]
    }

    /// The stem's dim/2 channels, at every input position.
    pub fn half_dim(&self) -> usize {
        self.half_dim
    }
}

/// `Residual(PreNorm(Attention))`: LayerNorm, attention with relative positions, added to its
/// input.
pub struct RelativeAttention {
    norm: LayerNorm,
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
    /// `to_rel_k` applied to the fixed positional features: [1, heads, 2n − 1, key width].
    relative_keys: Tensor<4>,
    /// `rel_content_bias`, `rel_pos_bias`: [1, heads, 1, key width].
    content_bias: Tensor<4>,
    position_bias: Tensor<4>,
    heads: usize,
    key_width: usize,
}

/// The shape of the attention: `dim` wide, `heads` of `key_width`, over `positions` positions.
#[derive(Clone, Copy)]
pub struct AttentionShape {
    pub dim: usize,
    pub heads: usize,
    pub key_width: usize,
    pub positions: usize,
}

impl AttentionShape {
    /// `num_rel_pos_features = dim // heads`, checked divisible into the six components.
    pub fn position_features(&self) -> Result<usize> {
        let (dim, heads) = (self.dim, self.heads);
        if heads == 0 || dim == 0 || !dim.is_multiple_of(heads) {
            return Err(config_error(&format!(
                "dim {dim} must be divisible by heads {heads}"
            )));
        }
        let features = dim / heads;
        if !features.is_multiple_of(POSITION_COMPONENTS) {
            return Err(config_error(&format!(
                "dim / heads = {features} is not divisible by the {POSITION_COMPONENTS} \
                 relative-position components"
            )));
        }
        Ok(features)
    }

    /// `get_positional_embed(positions, features)` on the device, for `RelativeAttention::load`.
    pub fn features(&self, device: &Device) -> Result<Tensor<2>> {
        let features = self.position_features()?;
        Ok(upload(
            positional_features(self.positions, features),
            [2 * self.positions - 1, features],
            device,
        ))
    }
}

impl RelativeAttention {
    /// The LayerNorm at `norm`, the attention's projections and biases at `{attention}to_q` ….
    pub fn load(
        ckpt: &mut Checkpoint,
        norm: &str,
        attention: &str,
        shape: AttentionShape,
        features: &Tensor<2>,
        device: &Device,
    ) -> Result<Self> {
        let AttentionShape {
            dim,
            heads,
            key_width,
            positions,
        } = shape;
        let position_features = shape.position_features()?;
        let value_width = dim / heads;
        let projection = |ckpt: &mut Checkpoint, name: &str, out: usize| {
            Linear::load(ckpt, &format!("{attention}{name}"), dim, out, false, device)
        };
        let query = projection(ckpt, "to_q", key_width * heads)?;
        let key = projection(ckpt, "to_k", key_width * heads)?;
        let value = projection(ckpt, "to_v", value_width * heads)?;
        let to_relative = Linear::load(
            ckpt,
            &format!("{attention}to_rel_k"),
            position_features,
            key_width * heads,
            false,
            device,
        )?;
        let relative_keys = to_relative
            .forward(features.clone())
            .reshape([1, 2 * positions - 1, heads, key_width])
            .swap_dims(1, 2);
        let bias = |ckpt: &mut Checkpoint, name: &str| {
            param(
                ckpt,
                &format!("{attention}{name}"),
                [1, heads, 1, key_width],
                device,
            )
        };
        Ok(RelativeAttention {
            norm: LayerNorm::load(ckpt, norm, dim, LAYER_NORM_EPS, device)?,
            query,
            key,
            value,
            out: Linear::load(
                ckpt,
                &format!("{attention}to_out"),
                value_width * heads,
                dim,
                true,
                device,
            )?,
            relative_keys,
            content_bias: bias(ckpt, "rel_content_bias")?,
            position_bias: bias(ckpt, "rel_pos_bias")?,
            heads,
            key_width,
        })
    }

    /// x + Attention(LayerNorm(x)), x [batch, n, dim].
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch, n, _] = x.dims();
        let heads = self.heads;
        let h = self.norm.forward(x.clone());
        let split = |t: Tensor<3>| {
            let width = t.dims()[2] / heads;
            t.reshape([batch, n, heads, width]).swap_dims(1, 2)
        };
        let q = split(self.query.forward(h.clone())) * (self.key_width as f64).powf(-0.5);
        let k = split(self.key.forward(h.clone()));
        let v = split(self.value.forward(h));
        let content = (q.clone() + self.content_bias.clone()).matmul(k.swap_dims(2, 3));
        let relative =
            (q + self.position_bias.clone()).matmul(self.relative_keys.clone().swap_dims(2, 3));
        let weights = softmax(content + relative_shift(relative), 3);
        let out = weights.matmul(v).swap_dims(1, 2);
        let width = out.dims()[3] * heads;
        self.out.forward(out.reshape([batch, n, width])) + x
    }
}

/// The feed-forward block with its residual: LayerNorm, linear to 2·dim, ReLU, linear to dim.
pub struct FeedForward {
    norm: LayerNorm,
    input: Linear,
    output: Linear,
}

impl FeedForward {
    /// The LayerNorm at `norm`, the two linear layers at `input` and `output`.
    pub fn load(
        ckpt: &mut Checkpoint,
        norm: &str,
        input: &str,
        output: &str,
        dim: usize,
        device: &Device,
    ) -> Result<Self> {
        Ok(FeedForward {
            norm: LayerNorm::load(ckpt, norm, dim, LAYER_NORM_EPS, device)?,
            input: Linear::load(ckpt, input, dim, 2 * dim, true, device)?,
            output: Linear::load(ckpt, output, 2 * dim, dim, true, device)?,
        })
    }

    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let h = self.norm.forward(x.clone());
        self.output.forward(relu(self.input.forward(h))) + x
    }
}

/// `final_pointwise`: the ConvBlock(dim → 2·dim, 1) at `{prefix}1.` and GELU.
pub struct FinalPointwise(ConvBlock);

impl FinalPointwise {
    pub fn load(ckpt: &mut Checkpoint, prefix: &str, dim: usize, device: &Device) -> Result<Self> {
        Ok(FinalPointwise(ConvBlock::load(
            ckpt,
            &format!("{prefix}1."),
            dim,
            2 * dim,
            1,
            device,
        )?))
    }

    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        gelu(self.0.forward(x))
    }
}

/// One pass is one sequence of a fixed length, so no batch split makes its tensors smaller: a
/// GPU that cannot bind the largest (`floats`) in one buffer is refused at load, not failed in
/// the pass.
pub fn refuse_unbindable(compute: &Compute, model: &str, floats: usize) -> Result<()> {
    let limit = crate::encoder::backend::max_buffer_floats(&compute.device);
    if compute.kind == crate::encoder::BackendKind::Wgpu && floats > limit {
        return Err(crate::Error::new(format!(
            "{model}'s largest tensor holds {} MiB, more than this GPU binds in one buffer \
             ({} MiB): run it with --backend cpu",
            (floats * 4) >> 20,
            (limit * 4) >> 20
        )));
    }
    Ok(())
}

/// BatchNorm's running statistics, and the step counters `nn.BatchNorm1d` saves beside them
/// (read by nothing): skipped so `Checkpoint::finish` does not name them.
pub fn skip_batch_norm_counters(ckpt: &mut Checkpoint) {
    let counters: Vec<String> = ckpt
        .names()
        .filter(|n| n.ends_with(".num_batches_tracked"))
        .map(str::to_string)
        .collect();
    for name in counters {
        ckpt.skip(&name);
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

/// The extractors' `one_hot_seq` centring on ids: the middle `length` of longer rows, shorter
/// rows between (length − L) // 2 N on the left and the rest on the right.
pub fn centre_ids(ids: Tensor<2, Int>, length: usize) -> Tensor<2, Int> {
    let [batch, len] = ids.dims();
    if len >= length {
        return ids.narrow(1, (len - length) / 2, length);
    }
    let left = (length - len) / 2;
    let device = ids.device();
    let n = |width: usize| Tensor::<2, Int>::full([batch, width], N_ID, &device);
    Tensor::cat(vec![n(left), ids, n(length - len - left)], 1)
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
pub fn centre_crop(bins: usize, target: i64) -> Option<(usize, usize)> {
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

    const LENGTH: usize = 196_608;

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
        let short = read(centre_ids(ids(vec![7, 8, 9]), LENGTH));
        let left = (LENGTH - 3) / 2;
        assert_eq!(short.len(), LENGTH);
        assert_eq!(&short[left - 1..left + 4], &[N_ID, 7, 8, 9, N_ID]);
        assert!(
            short[..left]
                .iter()
                .chain(&short[left + 3..])
                .all(|&id| id == N_ID)
        );
        // Three too many: one off the left, two off the right (`start = (L − length) // 2`).
        let long: Vec<i64> = (0..LENGTH as i64 + 3).collect();
        let cropped = read(centre_ids(ids(long), LENGTH));
        assert_eq!((cropped[0], cropped.len()), (1, LENGTH));
    }

    #[test]
    fn the_tower_widths_are_the_published_models() {
        // Enformer's published tower: 768 → 1536 in six steps, multiples of 128.
        assert_eq!(
            tower_widths(1536, 7, 128, LENGTH).unwrap(),
            vec![768, 768, 896, 1024, 1152, 1280, 1536]
        );
        // 196,608 = 3·2¹⁶ halves 16 times, SPACE's 131,072 = 2¹⁷ 17 times.
        assert!(tower_widths(1536, 17, 128, LENGTH).is_err());
        assert!(tower_widths(1536, 17, 128, 131_072).is_ok());
    }
}
