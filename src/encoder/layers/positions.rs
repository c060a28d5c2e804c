//! Position encodings that act inside attention rather than on the embeddings: rotary, in the
//! half-split form of ESM/NT-v2's `rotate_half` and in RoFormer's own form over adjacent pairs,
//! and ALiBi (MosaicBERT / DNABERT-2's linear biases).

use super::upload;
use burn::tensor::{Device, Tensor};

/// Rotary position embeddings over the two halves of each head.
pub struct Rotary {
    /// Inverse frequencies, [head_dim / 2], as the checkpoint stores them.
    inv_freq: Vec<f32>,
}

impl Rotary {
    pub fn new(inv_freq: Vec<f32>) -> Rotary {
        Rotary { inv_freq }
    }

    /// cos and sin of position · inv_freq, duplicated over both halves: [1, 1, tokens, head_dim].
    pub fn tables(&self, tokens: usize, device: &Device) -> (Tensor<4>, Tensor<4>) {
        let half = self.inv_freq.len();
        let mut cos = Vec::with_capacity(tokens * 2 * half);
        let mut sin = Vec::with_capacity(tokens * 2 * half);
        for t in 0..tokens {
            for _ in 0..2 {
                for f in &self.inv_freq {
                    // f32 product as torch.outer computes it, then cos/sin.
                    let angle = t as f32 * f;
                    cos.push(angle.cos());
                    sin.push(angle.sin());
                }
            }
        }
        (
            upload(cos, [1, 1, tokens, 2 * half], device),
            upload(sin, [1, 1, tokens, 2 * half], device),
        )
    }
}

/// x·cos + rotate_half(x)·sin, rotate_half(x) = [−x₂, x₁] over the two halves of head_dim.
pub fn rotate(x: Tensor<4>, cos: &Tensor<4>, sin: &Tensor<4>) -> Tensor<4> {
    let half = x.dims()[3] / 2;
    let first = x.clone().narrow(3, 0, half);
    let second = x.clone().narrow(3, half, half);
    let rotated = Tensor::cat(vec![-second, first], 3);
    x * cos.clone() + rotated * sin.clone()
}

/// RoFormer's rotary positions: dimensions 2i and 2i+1 of each head rotated together by
/// position · 10000^(−2i/head_dim), from the sinusoidal table `RoFormerSinusoidalPositionalEmbedding`
/// builds (in f64, then rounded to f32: an f32 angle would be off by up to 3e-4 rad at position
/// 5,000).
pub struct PairRotary {
    head_dim: usize,
}

impl PairRotary {
    pub fn new(head_dim: usize) -> PairRotary {
        PairRotary { head_dim }
    }

    /// cos and sin per position and pair: [1, 1, tokens, head_dim / 2, 1].
    pub fn tables(&self, tokens: usize, device: &Device) -> (Tensor<5>, Tensor<5>) {
        let half = self.head_dim / 2;
        let mut cos = Vec::with_capacity(tokens * half);
        let mut sin = Vec::with_capacity(tokens * half);
        for t in 0..tokens {
            for i in 0..half {
                let angle = t as f64 / 10000f64.powf((2 * i) as f64 / self.head_dim as f64);
                cos.push(angle.cos() as f32);
                sin.push(angle.sin() as f32);
            }
        }
        (
            upload(cos, [1, 1, tokens, half, 1], device),
            upload(sin, [1, 1, tokens, half, 1], device),
        )
    }
}

/// RoFormer's `apply_rotary`: each pair (x₁, x₂) = (x[2i], x[2i+1]) becomes
/// (x₁·cos − x₂·sin, x₂·cos + x₁·sin). x: [batch, heads, tokens, head_dim].
pub fn rotate_pairs(x: Tensor<4>, cos: &Tensor<5>, sin: &Tensor<5>) -> Tensor<4> {
    let [batch, heads, tokens, head_dim] = x.dims();
    let pairs = x.reshape([batch, heads, tokens, head_dim / 2, 2]);
    let first = pairs.clone().narrow(4, 0, 1);
    let second = pairs.narrow(4, 1, 1);
    let rotated = Tensor::cat(
        vec![
            first.clone() * cos.clone() - second.clone() * sin.clone(),
            second * cos.clone() + first * sin.clone(),
        ],
        4,
    );
    rotated.reshape([batch, heads, tokens, head_dim])
}

/// ALiBi: one slope per head, attention bias −slope_h · |i − j|.
pub struct Alibi {
    slopes: Vec<f32>,
}

impl Alibi {
    pub fn new(heads: usize) -> Alibi {
        Alibi {
            slopes: alibi_slopes(heads),
        }
    }

    /// The bias as [1, heads, tokens, tokens].
    pub fn bias(&self, tokens: usize, device: &Device) -> Tensor<4> {
        let mut bias = Vec::with_capacity(self.slopes.len() * tokens * tokens);
        for slope in &self.slopes {
            for i in 0..tokens {
                for j in 0..tokens {
                    bias.push(-slope * i.abs_diff(j) as f32);
                }
            }
        }
        upload(bias, [1, self.slopes.len(), tokens, tokens], device)
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
