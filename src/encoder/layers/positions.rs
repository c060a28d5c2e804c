//! Position encodings that act inside attention rather than on the embeddings: rotary, in the
//! half-split form of ESM/NT-v2's `rotate_half` and in RoFormer's own form over adjacent pairs,
//! and ALiBi (MosaicBERT / DNABERT-2's linear biases).

use super::upload;
use burn::tensor::{Device, Int, Tensor, TensorData};

/// A rotary encoding's tables for one input length, applied over the last dimension of
/// [batch, heads, tokens, head_dim] as x · cos + x[partner] · signed_sin: each element is
/// rotated with its partner (the other half's element in `rotate_half`, the other element of
/// its pair in RoFormer's form), the sign of the partner's term folded into the sine table.
/// The same arithmetic as the narrow/negate/concatenate form, value for value (a negated
/// product is exact), but a gather and two products, which Burn's fusion runs as one kernel on
/// a GPU where that form took five launches per tensor.
pub struct RotaryTables {
    cos: Tensor<4>,
    signed_sin: Tensor<4>,
    partner: Tensor<1, Int>,
}

impl RotaryTables {
    /// From per-token rows of `head_dim` cosines and signed sines, and each dimension's partner.
    fn new(
        cos: Vec<f32>,
        signed_sin: Vec<f32>,
        partner: Vec<i64>,
        tokens: usize,
        device: &Device,
    ) -> RotaryTables {
        let head_dim = partner.len();
        RotaryTables {
            cos: upload(cos, [1, 1, tokens, head_dim], device),
            signed_sin: upload(signed_sin, [1, 1, tokens, head_dim], device),
            partner: Tensor::from_data(TensorData::new(partner, [head_dim]), device),
        }
    }

    pub fn apply(&self, x: Tensor<4>) -> Tensor<4> {
        // The gather first: Burn's fusion takes it into a kernel only as the kernel's first op.
        x.clone().select(3, self.partner.clone()) * self.signed_sin.clone() + x * self.cos.clone()
    }
}

/// Rotary position embeddings over the two halves of each head.
pub struct Rotary {
    /// Inverse frequencies, [head_dim / 2], as the checkpoint stores them.
    inv_freq: Vec<f32>,
}

/// How a config's `rope_scaling` changes the inverse frequencies (transformers'
/// `ROPE_INIT_FUNCTIONS`); the kinds that change them with the input's length are refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RopeScaling {
    /// Every frequency divided by `factor` (positions stretched).
    Linear { factor: f32 },
    /// Llama 3's: long wavelengths divided by `factor`, short ones kept, those between
    /// interpolated.
    Llama3 {
        factor: f32,
        low_freq_factor: f32,
        high_freq_factor: f32,
        original_max_position_embeddings: f32,
    },
}

impl Rotary {
    pub fn new(inv_freq: Vec<f32>) -> Rotary {
        Rotary { inv_freq }
    }

    /// The frequencies transformers computes for a head of `head_dim` (even) at base `theta`,
    /// in f32 as it does: 1 / θ^(2i / head_dim), then `scaling`.
    pub fn from_theta(head_dim: usize, theta: f64, scaling: Option<RopeScaling>) -> Rotary {
        let base = theta as f32;
        let inv_freq = (0..head_dim / 2)
            .map(|i| 1.0 / base.powf((2 * i) as f32 / head_dim as f32))
            .map(|f| match scaling {
                None => f,
                Some(RopeScaling::Linear { factor }) => f / factor,
                Some(RopeScaling::Llama3 {
                    factor,
                    low_freq_factor,
                    high_freq_factor,
                    original_max_position_embeddings: context,
                }) => {
                    let wavelength = 2.0 * std::f32::consts::PI / f;
                    if wavelength < context / high_freq_factor {
                        f
                    } else if wavelength > context / low_freq_factor {
                        f / factor
                    } else {
                        let smooth = (context / wavelength - low_freq_factor)
                            / (high_freq_factor - low_freq_factor);
                        (1.0 - smooth) * f / factor + smooth * f
                    }
                }
            })
            .collect();
        Rotary { inv_freq }
    }

    /// x·cos + rotate_half(x)·sin with rotate_half(x) = [−x₂, x₁]: the cos and sin of
    /// position · inv_freq duplicated over both halves, the first half's sine negated.
    pub fn tables(&self, tokens: usize, device: &Device) -> RotaryTables {
        let half = self.inv_freq.len();
        let mut cos = Vec::with_capacity(tokens * 2 * half);
        let mut signed_sin = Vec::with_capacity(tokens * 2 * half);
        for t in 0..tokens {
            for sign in [-1.0, 1.0] {
                for f in &self.inv_freq {
                    // f32 product as torch.outer computes it, then cos/sin.
                    let angle = t as f32 * f;
                    cos.push(angle.cos());
                    signed_sin.push(sign * angle.sin());
                }
            }
        }
        let partner = (0..2 * half).map(|d| ((d + half) % (2 * half)) as i64);
        RotaryTables::new(cos, signed_sin, partner.collect(), tokens, device)
    }
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

    /// (x₂ᵢ·cos − x₂ᵢ₊₁·sin, x₂ᵢ₊₁·cos + x₂ᵢ·sin) for each pair i.
    pub fn tables(&self, tokens: usize, device: &Device) -> RotaryTables {
        let half = self.head_dim / 2;
        let mut cos = Vec::with_capacity(tokens * 2 * half);
        let mut signed_sin = Vec::with_capacity(tokens * 2 * half);
        for t in 0..tokens {
            for i in 0..half {
                let angle = t as f64 / 10000f64.powf((2 * i) as f64 / self.head_dim as f64);
                let (c, s) = (angle.cos() as f32, angle.sin() as f32);
                cos.extend([c, c]);
                signed_sin.extend([-s, s]);
            }
        }
        let partner = (0..2 * half).map(|d| (d ^ 1) as i64);
        RotaryTables::new(cos, signed_sin, partner.collect(), tokens, device)
    }
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
