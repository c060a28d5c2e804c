//! `random-cnn[:SEED]` — the untrained-network control: one-hot DNA through three dilated
//! convolutions with seeded random weights, ReLU, masked mean over positions. Whatever a
//! pretrained encoder scores above this is what pretraining bought, not what architecture and
//! pooling give for free.
//!
//! Weights are drawn on the host from MT19937 (not from a backend's RNG), so the same seed gives
//! the same network on the CPU backend, on wgpu and in the browser.

use super::backend::Compute;
use crate::Result;
use crate::rng::RandomState;
use burn::tensor::activation::relu;
use burn::tensor::module::conv1d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Tensor, TensorData};
use ndarray::Array2;

const KERNEL: usize = 7;
/// (channels out, dilation) per layer; dilation widens the receptive field to 43 nt cheaply.
const LAYERS: [(usize, usize); 3] = [(32, 1), (64, 2), (128, 4)];
const ONE_HOT: usize = 4;
/// Positions per batch (sequences × padded length), bounding device memory per step.
const BATCH_POSITIONS: usize = 1 << 16;
/// Longer sequences are truncated to their first `MAX_LENGTH` bases, as the reference truncates
/// to a model's maximum length; it keeps one batch within `BATCH_POSITIONS`.
pub const MAX_LENGTH: usize = BATCH_POSITIONS;

struct Conv {
    weight: Tensor<3>,
    bias: Tensor<1>,
    dilation: usize,
}

pub struct RandomCnn {
    seed: u32,
    layers: Vec<Conv>,
    compute: Compute,
}

impl RandomCnn {
    pub fn new(seed: u32, compute: Compute) -> Self {
        let mut rng = RandomState::new(seed);
        let mut channels_in = ONE_HOT;
        let layers = LAYERS
            .iter()
            .map(|&(channels_out, dilation)| {
                let fan_in = channels_in * KERNEL;
                // He-uniform weights keep activations at a similar scale through the ReLUs;
                // PyTorch's default bias bound 1/sqrt(fan_in).
                let w_bound = (6.0 / fan_in as f32).sqrt();
                let b_bound = 1.0 / (fan_in as f32).sqrt();
                let weight = uniform(&mut rng, channels_out * fan_in, w_bound);
                let bias = uniform(&mut rng, channels_out, b_bound);
                let conv = Conv {
                    weight: Tensor::from_data(
                        TensorData::new(weight, [channels_out, channels_in, KERNEL]),
                        &compute.device,
                    ),
                    bias: Tensor::from_data(TensorData::new(bias, [channels_out]), &compute.device),
                    dilation,
                };
                channels_in = channels_out;
                conv
            })
            .collect();
        RandomCnn {
            seed,
            layers,
            compute,
        }
    }

    pub fn spec(&self) -> String {
        format!("random-cnn:{}", self.seed)
    }

    pub fn dim(&self) -> usize {
        LAYERS[LAYERS.len() - 1].0
    }

    pub fn compute(&self) -> &Compute {
        &self.compute
    }

    /// Pooled embeddings, one row per sequence, in input order. Sequences are batched by
    /// position count; padding is masked after every layer, so a sequence's embedding does
    /// not depend on what it was batched with.
    pub async fn embed(&self, sequences: &[String]) -> Result<Array2<f32>> {
        let mut out = Array2::<f32>::zeros((sequences.len(), self.dim()));
        let mut start = 0;
        while start < sequences.len() {
            let mut end = start + 1;
            let mut longest = truncated(&sequences[start]).len().max(1);
            while end < sequences.len() {
                let longer = longest.max(truncated(&sequences[end]).len());
                if longer * (end + 1 - start) > BATCH_POSITIONS {
                    break;
                }
                longest = longer;
                end += 1;
            }
            let pooled = self.embed_batch(&sequences[start..end], longest).await?;
            for (row, values) in pooled.chunks_exact(self.dim()).enumerate() {
                out.row_mut(start + row)
                    .assign(&ndarray::ArrayView1::from(values));
            }
            start = end;
        }
        Ok(out)
    }

    /// How many of `sequences` are longer than `MAX_LENGTH` bases (only their start is read).
    pub fn truncated(&self, sequences: &[String]) -> usize {
        sequences.iter().filter(|s| s.len() > MAX_LENGTH).count()
    }

    async fn embed_batch(&self, batch: &[String], length: usize) -> Result<Vec<f32>> {
        let n = batch.len();
        let mut one_hot = vec![0f32; n * ONE_HOT * length];
        let mut mask = vec![0f32; n * length];
        let mut inverse_len = vec![0f32; n];
        for (i, seq) in batch.iter().enumerate() {
            let seq = truncated(seq);
            for (pos, base) in seq.bytes().enumerate() {
                let at = |channel: usize| (i * ONE_HOT + channel) * length + pos;
                match base {
                    b'A' => one_hot[at(0)] = 1.0,
                    b'C' => one_hot[at(1)] = 1.0,
                    b'G' => one_hot[at(2)] = 1.0,
                    b'T' => one_hot[at(3)] = 1.0,
                    // N: equally likely to be any base.
                    _ => (0..ONE_HOT).for_each(|c| one_hot[at(c)] = 0.25),
                }
                mask[i * length + pos] = 1.0;
            }
            inverse_len[i] = 1.0 / seq.len().max(1) as f32;
        }
        let device = &self.compute.device;
        let mask: Tensor<3> = Tensor::from_data(TensorData::new(mask, [n, 1, length]), device);
        let mut x: Tensor<3> =
            Tensor::from_data(TensorData::new(one_hot, [n, ONE_HOT, length]), device);
        for conv in &self.layers {
            let pad = conv.dilation * (KERNEL - 1) / 2;
            let options = ConvOptions::new([1], [pad], [conv.dilation], 1);
            x = relu(conv1d(
                x,
                conv.weight.clone(),
                Some(conv.bias.clone()),
                options,
            )) * mask.clone();
        }
        let inverse_len: Tensor<3> =
            Tensor::from_data(TensorData::new(inverse_len, [n, 1, 1]), device);
        let pooled = x.sum_dim(2) * inverse_len;
        self.compute.read(pooled).await
    }
}

/// Sequences are upper-case ASCII (the readers guarantee it), so any byte index is a boundary.
fn truncated(sequence: &str) -> &str {
    &sequence[..sequence.len().min(MAX_LENGTH)]
}

/// `count` draws uniform on [-bound, bound] from MT19937's 32-bit output.
fn uniform(rng: &mut RandomState, count: usize, bound: f32) -> Vec<f32> {
    (0..count)
        .map(|_| {
            let unit = rng.next_u32() as f64 / (u32::MAX as f64 + 1.0);
            ((2.0 * unit - 1.0) * bound as f64) as f32
        })
        .collect()
}
