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

use super::{LayerNorm, Linear, Weight3, config_error, param, upload};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::arch::Kept;
use crate::encoder::backend::{Compute, max_buffer_floats};
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
/// The stem's convolution width and the tower's: each reaches `width / 2` positions either side.
const STEM_WIDTH: usize = 15;
const TOWER_WIDTH: usize = 5;
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
    Wide { kernel: Weight3, bias: Tensor<1> },
}

/// `nn.Conv1d` with `padding = width // 2`: x [batch, in, positions] → [batch, out, positions].
fn convolve(x: Tensor<3>, kernel: &Weight3, bias: &Tensor<1>) -> Tensor<3> {
    let width = kernel.dims()[2];
    conv1d(
        x,
        kernel.widened(),
        Some(bias.clone()),
        ConvOptions::new([1], [width / 2], [1], 1),
    )
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
    stem_kernel: Weight3,
    stem_bias: Tensor<1>,
    stem_residual: ConvBlock,
    stem_pool: Linear,
    tower: Vec<TowerBlock>,
    half_dim: usize,
    /// The most floats one tensor of the pass may hold (the device's buffer binding limit):
    /// longer inputs run in overlapping chunks along the sequence.
    chunk_floats: usize,
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
        let stem_kernel = Weight3::load(
            ckpt,
            &format!("{stem}0.weight"),
            [half_dim, 4, STEM_WIDTH],
            device,
        )?;
        let stem_bias = param(ckpt, &format!("{stem}0.bias"), [half_dim], device)?;
        let stem_residual =
            ConvBlock::load(ckpt, &format!("{stem}1.fn."), half_dim, half_dim, 1, device)?;
        let stem_pool = pool_logits(ckpt, &format!("{stem}2"), half_dim, device)?;
        let mut tower = Vec::with_capacity(widths.len() - 1);
        for (i, pair) in widths.windows(2).enumerate() {
            let (width_in, width_out) = (pair[0], pair[1]);
            let p = format!("{tower_prefix}{i}.");
            tower.push(TowerBlock {
                conv: ConvBlock::load(
                    ckpt,
                    &format!("{p}0."),
                    width_in,
                    width_out,
                    TOWER_WIDTH,
                    device,
                )?,
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
            stem_kernel,
            stem_bias,
            stem_residual,
            stem_pool,
            tower,
            half_dim,
            chunk_floats: max_buffer_floats(device),
        })
    }

    /// The stem's output (layer 0) and each tower block's after it, up to `kept`'s deepest
    /// layer or the tower's last: those `kept` asks for are offered to it, the deepest is
    /// returned [batch, L / 2^(layer + 1), its width]. An input whose stem activation
    /// (L·dim/2 floats) would exceed the buffer limit runs in chunks along the sequence, each
    /// widened by `halo` positions either side so that every kept position sees the same
    /// inputs as in one pass; the chunks' centres are concatenated.
    pub(crate) fn forward(&self, input_ids: Tensor<2, Int>, kept: &mut Kept) -> Tensor<3> {
        let last = kept.deepest().min(self.tower.len());
        let [batch, length] = input_ids.dims();
        let stride = 2 << last;
        let halo = self.halo(last);
        let span = self.chunk_floats / (batch * self.half_dim).max(1);
        let mut pieces: Vec<Vec<Tensor<3>>> = vec![Vec::new(); last + 1];
        for (start, end) in chunks(length, stride, halo, span) {
            let from = start.saturating_sub(halo);
            let to = (end + halo).min(length);
            let mut x = self.stem(input_ids.clone().narrow(1, from, to - from));
            for (layer, layer_pieces) in pieces.iter_mut().enumerate() {
                if layer > 0 {
                    x = self.block(layer - 1, x);
                }
                if layer == last || kept.wants(layer) {
                    let scale = 2 << layer;
                    let centre = x
                        .clone()
                        .narrow(1, (start - from) / scale, (end - start) / scale);
                    layer_pieces.push(centre);
                }
            }
        }
        let mut deepest = None;
        for (layer, layer_pieces) in pieces.into_iter().enumerate() {
            if layer_pieces.is_empty() {
                continue;
            }
            let x = if layer_pieces.len() == 1 {
                layer_pieces.into_iter().next().expect("one piece")
            } else {
                Tensor::cat(layer_pieces, 1)
            };
            kept.offer(layer, &x);
            deepest = Some(x);
        }
        deepest.expect("the deepest layer is always kept")
    }

    /// Input positions either side of a chunk (a multiple of the stride of `last`) past which
    /// the zeros a chunk's convolutions pad with, instead of its neighbours, cannot reach any
    /// layer up to `last`: each convolution spreads the wrong values `width / 2` positions
    /// further, each pooling halves their count (rounding up).
    fn halo(&self, last: usize) -> usize {
        let mut wrong = STEM_WIDTH / 2;
        let mut reach = wrong;
        for layer in 0..=last {
            if layer > 0 {
                wrong += TOWER_WIDTH / 2;
                reach = reach.max(wrong << layer);
            }
            wrong = wrong.div_ceil(2);
            reach = reach.max(wrong << (layer + 1));
        }
        reach.next_multiple_of(2 << last)
    }

    /// The stem: token ids [batch, L] → [batch, L / 2, dim / 2].
    fn stem(&self, input_ids: Tensor<2, Int>) -> Tensor<3> {
        // [batch, positions, 4] → channels first for the stem's convolution.
        let x = embedding(self.one_hot.clone(), input_ids).swap_dims(1, 2);
        let x = convolve(x, &self.stem_kernel, &self.stem_bias).swap_dims(1, 2);
        let x = self.stem_residual.forward(x.clone()) + x;
        attention_pool(x, &self.stem_pool)
    }

    /// The tower's blocks after the stem.
    pub fn blocks(&self) -> usize {
        self.tower.len()
    }

    /// Positions of one `sequence_length` input's states after `layer` blocks: the stem and
    /// each block halve them; the layers after the tower (transformer, pointwise, head) keep
    /// the tower's last count at most (their crop only shortens it).
    pub fn positions_at(&self, sequence_length: usize, layer: usize) -> usize {
        sequence_length >> (layer.min(self.blocks()) + 1)
    }

    /// Tower block `block`: [batch, n, its input width] → [batch, n / 2, its output width].
    fn block(&self, block: usize, x: Tensor<3>) -> Tensor<3> {
        let block = &self.tower[block];
        let y = block.conv.forward(x);
        let y = block.residual.forward(y.clone()) + y;
        attention_pool(y, &block.pool)
    }

    /// The floats of the stem's activation for the smallest chunk of one sequence at the
    /// tower's last layer: the least the tower needs bound in one buffer.
    fn smallest_chunk_floats(&self) -> usize {
        let last = self.tower.len();
        self.half_dim * ((2 << last) + 2 * self.halo(last))
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
    /// The most floats one tensor may hold: the heads' logits are formed a group at a time.
    buffer_floats: usize,
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
            buffer_floats: max_buffer_floats(device),
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
        // The published shape's position logits (8 heads × 1,536 × 3,071) exceed WebGPU's
        // 128 MiB binding: the heads go in groups whose logits fit (each head is independent).
        let group = (self.buffer_floats / (batch * n * 2 * n).max(1)).clamp(1, heads);
        let mut groups: Vec<Tensor<4>> = (0..heads)
            .step_by(group)
            .map(|first| {
                let count = group.min(heads - first);
                let part = |t: &Tensor<4>| t.clone().narrow(1, first, count);
                let content =
                    (part(&q) + part(&self.content_bias)).matmul(part(&k).swap_dims(2, 3));
                let relative = (part(&q) + part(&self.position_bias))
                    .matmul(part(&self.relative_keys).swap_dims(2, 3));
                softmax(content + relative_shift(relative), 3).matmul(part(&v))
            })
            .collect();
        let out = if groups.len() == 1 {
            groups.pop().expect("one group")
        } else {
            Tensor::cat(groups, 1)
        }
        .swap_dims(1, 2);
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

/// The floats of the largest tensor of one sequence's pass that no chunking or head grouping
/// splits: the tower's smallest chunk, one head's position logits, the feed-forward block's
/// [positions, 2·dim].
pub fn largest_unsplit_floats(tower: &ConvTower, shape: AttentionShape) -> usize {
    let n = shape.positions;
    tower
        .smallest_chunk_floats()
        .max(n * 2 * n)
        .max(n * 2 * shape.dim)
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
        let weight = &format!("{conv}.weight");
        let bias = ckpt.take(&format!("{conv}.bias"), &[width_out])?;
        let conv = if width == 1 {
            let weight = ckpt.take_matrix(weight, &[width_out, width_in, 1])?;
            Conv::Pointwise(Linear::from_matrix(
                weight,
                Some(bias),
                width_in,
                width_out,
                device,
            ))
        } else {
            Conv::Wide {
                kernel: Weight3::load(ckpt, weight, [width_out, width_in, width], device)?,
                bias: upload(bias, [width_out], device),
            }
        };
        Ok(ConvBlock { norm, conv })
    }

    /// [batch, positions, in] → [batch, positions, out]
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let x = gelu(self.norm.forward(x));
        match &self.conv {
            Conv::Pointwise(linear) => linear.forward(x),
            Conv::Wide { kernel, bias } => {
                convolve(x.swap_dims(1, 2), kernel, bias).swap_dims(1, 2)
            }
        }
    }
}

/// The stretches [start, end) of `length` positions that one chunk each computes: all of it
/// where `span` positions fit, else equal stretches, multiples of `stride`, each short enough
/// that with `halo` positions either side it fits `span` (one stride at the least).
fn chunks(length: usize, stride: usize, halo: usize, span: usize) -> Vec<(usize, usize)> {
    if length <= span {
        return vec![(0, length)];
    }
    let widest = (span.saturating_sub(2 * halo) / stride * stride).max(stride);
    let core = length
        .div_ceil(length.div_ceil(widest))
        .next_multiple_of(stride);
    (0..length)
        .step_by(core)
        .map(|start| (start, (start + core).min(length)))
        .collect()
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
    let weight = ckpt.take_matrix(
        &format!("{name}.to_attn_logits.weight"),
        &[channels, channels, 1, 1],
    )?;
    Ok(Linear::from_matrix(
        weight, None, channels, channels, device,
    ))
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

    /// The tiny Enformer of tests/enformer.rs (dim 48, 7 poolings, 2 heads of key width 8).
    fn fixture() -> Checkpoint {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/models/enformer/pytorch_model.bin"
        );
        let bytes = std::fs::read(path).unwrap();
        crate::checkpoint::pytorch::read("pytorch_model.bin", Box::new(bytes)).unwrap()
    }

    /// `count` reproducible values in [0, 1).
    fn uniform(count: usize) -> Vec<f64> {
        let mut state = 37u64;
        (0..count)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

    fn max_difference(a: Tensor<3>, b: Tensor<3>) -> f32 {
        assert_eq!(a.dims(), b.dims());
        let values: Vec<f32> = (a - b).abs().into_data().try_to_vec().unwrap();
        values.into_iter().fold(0f32, f32::max)
    }

    /// Every layer of the tower, computed in four chunks of a 2,048 bp input of A, C, G, T
    /// and N (the first and last with their halo on one side only), equals one pass over it
    /// within `tolerance`. (A halo one stride short is off by 2e-7 at the last layer: the
    /// positions it misses are reached through five convolutions' outer taps.)
    fn chunks_equal_one_pass(device: &Device, tolerance: f32) {
        let widths = tower_widths(48, 7, 4, LENGTH).unwrap();
        let mut tower =
            ConvTower::load(&mut fixture(), "stem.", "conv_tower.", &widths, device).unwrap();
        let length = 2048;
        let ids: Vec<i64> = uniform(length)
            .into_iter()
            .map(|u| CHARACTER_IDS_FROM as i64 + (u * 5.0) as i64)
            .collect();
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [1, length]), device);
        let every_layer: Vec<usize> = (0..=tower.blocks()).collect();
        let run = |tower: &ConvTower| {
            let mut kept = Kept::new("Enformer", tower.blocks(), &every_layer).unwrap();
            tower.forward(ids.clone(), &mut kept);
            kept.into_states()
        };
        tower.chunk_floats = usize::MAX;
        let whole = run(&tower);
        let span = 1408;
        assert_eq!(tower.halo(6), 384);
        assert_eq!(chunks(length, 128, 384, span).len(), 4);
        tower.chunk_floats = span * tower.half_dim();
        let chunked = run(&tower);
        assert_eq!(chunked.len(), every_layer.len());
        for (layer, (one, parts)) in whole.into_iter().zip(chunked).enumerate() {
            // The positions a GPU must hold whole for `?layer=K` (`Arch::unsplit_state_floats`).
            assert_eq!(
                one.dims()[1],
                tower.positions_at(length, layer),
                "layer {layer}"
            );
            let worst = max_difference(one, parts);
            eprintln!("tower layer {layer} in chunks: max |Δ| = {worst:.1e}");
            assert!(worst <= tolerance, "layer {layer}: max |Δ| = {worst}");
        }
    }

    /// The attention with its heads' logits formed one head at a time equals all at once.
    fn head_groups_equal_all_heads(device: &Device) {
        let shape = AttentionShape {
            dim: 48,
            heads: 2,
            key_width: 8,
            positions: 64,
        };
        let features = shape.features(device).unwrap();
        let mut attention = RelativeAttention::load(
            &mut fixture(),
            "transformer.0.0.fn.0",
            "transformer.0.0.fn.1.",
            shape,
            &features,
            device,
        )
        .unwrap();
        let x: Vec<f32> = uniform(64 * 48)
            .into_iter()
            .map(|u| u as f32 * 2.0 - 1.0)
            .collect();
        let x = upload(x, [1, 64, 48], device);
        attention.buffer_floats = usize::MAX;
        let all = attention.forward(x.clone());
        attention.buffer_floats = 64 * 2 * 64;
        let grouped = attention.forward(x);
        let worst = max_difference(all, grouped);
        assert!(worst <= 1e-6, "max |Δ| = {worst}");
    }

    #[test]
    fn the_tower_in_chunks_equals_one_pass_on_the_cpu() {
        // Bit for bit: each position's sums run in the same order whatever the chunk.
        chunks_equal_one_pass(&Device::flex(), 0.0);
    }

    #[test]
    fn the_attention_by_head_equals_all_heads_on_the_cpu() {
        head_groups_equal_all_heads(&Device::flex());
    }

    /// The same on wgpu (Mesa lavapipe in CI), where the chunks exist for the binding limit.
    #[cfg(feature = "wgpu")]
    #[test]
    fn the_tower_in_chunks_and_the_attention_by_head_equal_one_pass_on_wgpu() {
        let device = match pollster::block_on(crate::encoder::backend::wgpu()) {
            Ok(compute) => compute.device,
            Err(e) => panic!("wgpu (Mesa lavapipe) is needed for this test: {e}"),
        };
        chunks_equal_one_pass(&device, 1e-5);
        head_groups_equal_all_heads(&device);
    }

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
