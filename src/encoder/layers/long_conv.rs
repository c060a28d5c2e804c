//! The long causal depthwise convolution of Hyena operators, by FFT or directly, whichever the
//! backend computes exactly.

use crate::encoder::BackendKind;
use burn::signal::{irfft, rfft};
use burn::tensor::Tensor;
use burn::tensor::module::conv1d;
use burn::tensor::ops::ConvOptions;

/// How the long causal convolution `y[c, t] = Σ_{s ≤ t} k[c, s] · v[c, t − s]` is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongConv {
    /// A depthwise `conv1d` with the flipped filter over a left-padded input: O(L²) per
    /// channel. For the GPU, whose FFT twiddles would come from its sin/cos, which WebGPU only
    /// promises to 2⁻¹¹ (see `arch::hyena::sin_precise`).
    Direct,
    /// By FFT, as the original (`rfft` of input and filter, product, `irfft`): O(L log L). For
    /// the CPU backend, whose twiddles are exact: HyenaDNA-tiny at 1,000 tokens went from 17.2
    /// to 23.1 sequences/s (bench/README.md), and the gap widens with length.
    Fft,
}

impl LongConv {
    /// The FFT on the CPU backend, the direct form on the GPU.
    pub fn for_backend(kind: BackendKind) -> LongConv {
        match kind {
            BackendKind::Cpu => LongConv::Fft,
            BackendKind::Wgpu => LongConv::Direct,
        }
    }

    /// The filter k [channels, len] in the form `PreparedFilter::apply` takes.
    pub fn prepare(self, k: Tensor<2>) -> PreparedFilter {
        let [channels, len] = k.dims();
        match self {
            LongConv::Direct => PreparedFilter::Direct(k.flip([1]).reshape([channels, 1, len])),
            LongConv::Fft => {
                // Zero-padding to n ≥ 2L − 1 makes the circular convolution the linear one.
                let n = (2 * len).next_power_of_two();
                let (re, im) = rfft(k.unsqueeze_dim::<3>(0), 2, Some(n));
                PreparedFilter::Spectrum { re, im, n }
            }
        }
    }
}

/// A long filter ready to convolve: its flipped taps [channels, 1, len] for `conv1d`, or its
/// spectrum [1, channels, n / 2 + 1].
#[derive(Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "one value per layer, prepared once per pass"
)]
pub enum PreparedFilter {
    Direct(Tensor<3>),
    Spectrum {
        re: Tensor<3>,
        im: Tensor<3>,
        n: usize,
    },
}

impl PreparedFilter {
    /// y for v [batch, channels, len].
    pub fn apply(&self, v: Tensor<3>) -> Tensor<3> {
        let [_, channels, len] = v.dims();
        match self {
            PreparedFilter::Direct(weight) => {
                let options = ConvOptions::new_with_padding([1], [(len - 1, 0)], [1], channels);
                conv1d(v, weight.clone(), None, options)
            }
            PreparedFilter::Spectrum { re, im, n } => {
                let (v_re, v_im) = rfft(v, 2, Some(*n));
                let y_re = v_re.clone() * re.clone() - v_im.clone() * im.clone();
                let y_im = v_re * im.clone() + v_im * re.clone();
                irfft(y_re, y_im, 2, Some(*n)).narrow(2, 0, len)
            }
        }
    }
}
