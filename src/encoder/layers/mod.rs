//! The building blocks any architecture (`encoder::arch`) can use, loaded from a checkpoint by
//! their PyTorch names: linear layers, LayerNorm and RMSNorm, activations and attention here;
//! Mamba in `mamba`, the Enformer trunk (Enformer, SPACE) in `enformer_trunk`, Hyena's long convolution in `long_conv`, rotary and ALiBi positions in
//! `positions`. Weights are uploaded tensor by tensor as they are taken.

#[cfg(feature = "wgpu")]
mod attention_kernel;
pub mod enformer_trunk;
#[cfg(feature = "wgpu")]
mod half_kernel;
pub mod long_conv;
pub mod mamba;
#[cfg(any(target_arch = "wasm32", test))]
mod packed_matmul;
pub mod positions;

use crate::Result;
use crate::checkpoint::{Checkpoint, Matrix};
use burn::tensor::activation::{gelu, relu, sigmoid};
use burn::tensor::module::{layer_norm, linear};
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Device, Int, Tensor, TensorData};
use positions::RotaryTables;

pub fn upload<const D: usize>(data: Vec<f32>, shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(data, shape), device)
}

/// A matrix held in half precision (`Checkpoint::take_matrix`) on its device, widened to f32
/// only where a product or a lookup uses it, so no second full-precision copy is ever held.
#[derive(Clone)]
pub enum HalfMatrix {
    /// The CPU: Burn's own bf16 or f16 tensor, cast.
    Cast(Tensor<2>),
    /// A GPU: the values two to a u32 word, each row padded to whole words, widened by
    /// `half_kernel` (WGSL has no bf16, and f16 only on adapters with `shader-f16`).
    #[cfg(feature = "wgpu")]
    Words {
        words: Tensor<2, Int>,
        width: usize,
        bf16: bool,
    },
}

impl HalfMatrix {
    /// `matrix` ([rows, width], bf16 or f16) onto `device`.
    fn upload(matrix: Matrix, [rows, width]: [usize; 2], device: &Device) -> HalfMatrix {
        #[cfg(feature = "wgpu")]
        if *device != Device::flex() {
            let (bits, bf16): (Vec<u16>, bool) = match matrix {
                Matrix::Bf16(values) => (values.iter().map(|v| v.to_bits()).collect(), true),
                Matrix::F16(values) => (values.iter().map(|v| v.to_bits()).collect(), false),
                Matrix::F32(_) => unreachable!("f32 matrices are not held in half"),
            };
            let per_row = width.div_ceil(2);
            let mut words = vec![0u32; rows * per_row];
            for (row, values) in bits.chunks_exact(width.max(1)).enumerate() {
                for (column, &value) in values.iter().enumerate() {
                    words[row * per_row + column / 2] |= u32::from(value) << (16 * (column % 2));
                }
            }
            let words = Tensor::from_data(
                TensorData::new(words, [rows, per_row]),
                (device, burn::tensor::DType::U32),
            );
            return HalfMatrix::Words { words, width, bf16 };
        }
        let cast = match matrix {
            Matrix::Bf16(values) => Tensor::from_data(
                TensorData::new(values, [rows, width]),
                (device, burn::tensor::DType::BF16),
            ),
            Matrix::F16(values) => Tensor::from_data(
                TensorData::new(values, [rows, width]),
                (device, burn::tensor::DType::F16),
            ),
            Matrix::F32(_) => unreachable!("f32 matrices are not held in half"),
        };
        HalfMatrix::Cast(cast)
    }

    fn rows(&self) -> usize {
        match self {
            HalfMatrix::Cast(matrix) => matrix.dims()[0],
            #[cfg(feature = "wgpu")]
            HalfMatrix::Words { words, .. } => words.dims()[0],
        }
    }

    /// The whole matrix in f32.
    fn widen(&self) -> Tensor<2> {
        match self {
            HalfMatrix::Cast(matrix) => matrix.clone().cast(burn::tensor::FloatDType::F32),
            #[cfg(feature = "wgpu")]
            HalfMatrix::Words { words, width, bf16 } => {
                half_kernel::widen(words.clone(), *width, *bf16)
            }
        }
    }

    /// The rows `ids` ([batch, tokens]) in f32: [batch, tokens, width]; only those are widened.
    fn widen_rows(&self, ids: Tensor<2, Int>) -> Tensor<3> {
        match self {
            HalfMatrix::Cast(matrix) => burn::tensor::module::embedding(matrix.clone(), ids)
                .cast(burn::tensor::FloatDType::F32),
            #[cfg(feature = "wgpu")]
            HalfMatrix::Words { words, width, bf16 } => {
                let [batch, tokens] = ids.dims();
                let rows = words.clone().select(0, ids.reshape([batch * tokens]));
                half_kernel::widen(rows, *width, *bf16).reshape([batch, tokens, *width])
            }
        }
    }
}

/// A token embedding table [rows, width], held as the checkpoint's matrices are
/// (`Checkpoint::take_matrix`): in half precision, only the rows looked up are widened to f32.
pub enum EmbeddingTable {
    Full(Tensor<2>),
    Half(HalfMatrix),
}

impl EmbeddingTable {
    pub fn load(
        ckpt: &mut Checkpoint,
        name: &str,
        shape: [usize; 2],
        device: &Device,
    ) -> Result<EmbeddingTable> {
        Ok(match ckpt.take_matrix(name, &shape)? {
            Matrix::F32(values) => EmbeddingTable::Full(upload(values, shape, device)),
            half => EmbeddingTable::Half(HalfMatrix::upload(half, shape, device)),
        })
    }

    pub fn rows(&self) -> usize {
        match self {
            EmbeddingTable::Full(table) => table.dims()[0],
            EmbeddingTable::Half(table) => table.rows(),
        }
    }

    /// ids [batch, tokens] → [batch, tokens, width]
    pub fn forward(&self, ids: Tensor<2, Int>) -> Tensor<3> {
        match self {
            // A device computing in f16 (`--precision f16`) holds f32 tables as f16 already.
            EmbeddingTable::Full(table) => burn::tensor::module::embedding(table.clone(), ids),
            EmbeddingTable::Half(table) => table.widen_rows(ids),
        }
    }
}

/// A 3-D weight (a convolution's kernel [out, in, width], a mixture's experts [experts, in,
/// out]) held as the checkpoint's matrices are (`Checkpoint::take_matrix`): in half precision as
/// [d0, d1·d2], widened to f32 where it is used, one layer's at a time.
pub enum Weight3 {
    Full(Tensor<3>),
    Half {
        matrix: HalfMatrix,
        shape: [usize; 3],
    },
}

impl Weight3 {
    pub fn load(
        ckpt: &mut Checkpoint,
        name: &str,
        shape: [usize; 3],
        device: &Device,
    ) -> Result<Weight3> {
        Ok(match ckpt.take_matrix(name, &shape)? {
            Matrix::F32(values) => Weight3::Full(upload(values, shape, device)),
            half => Weight3::Half {
                matrix: HalfMatrix::upload(half, [shape[0], shape[1] * shape[2]], device),
                shape,
            },
        })
    }

    /// The weight in f32.
    pub fn widened(&self) -> Tensor<3> {
        match self {
            Weight3::Full(weight) => weight.clone(),
            Weight3::Half { matrix, shape } => matrix.widen().reshape(*shape),
        }
    }

    pub fn dims(&self) -> [usize; 3] {
        match self {
            Weight3::Full(weight) => weight.dims(),
            Weight3::Half { shape, .. } => *shape,
        }
    }
}

/// Takes a checkpoint tensor of the given shape onto `device`.
pub fn param<const D: usize>(
    ckpt: &mut Checkpoint,
    name: &str,
    shape: [usize; D],
    device: &Device,
) -> Result<Tensor<D>> {
    Ok(upload(ckpt.take(name, &shape)?, shape, device))
}

/// `torch.nn.Linear`: y = x Wᵀ + b. Cloning shares the weights (tied weights).
#[derive(Clone)]
#[allow(clippy::large_enum_variant, reason = "a few per layer, built once")]
pub enum Linear {
    /// Burn's `linear` on the device, with W stored transposed ([in, out]) once at load.
    Tensors {
        weight_t: Tensor<2>,
        bias: Option<Tensor<1>>,
    },
    /// Half-precision weights [out, in] as the checkpoint holds them (a model too large for
    /// f32): widened to f32 for each product, one layer at a time, so the model never holds a
    /// second full-precision copy of itself.
    Half {
        weight: HalfMatrix,
        bias: Option<Tensor<1>>,
    },
    /// The page's CPU backend: W packed for `packed_matmul`, 1.1–1.6× Burn's matmul there (see
    /// that module). The packed copy is the only copy of the weights.
    #[cfg(target_arch = "wasm32")]
    Packed(std::sync::Arc<packed_matmul::PackedLinear>),
}

impl Linear {
    /// Loads `{name}.weight` ([out, in]) and, when `bias`, `{name}.bias`.
    pub fn load(
        ckpt: &mut Checkpoint,
        name: &str,
        in_features: usize,
        out_features: usize,
        bias: bool,
        device: &Device,
    ) -> Result<Linear> {
        let [linear] = Linear::load_parts(ckpt, name, in_features, out_features, bias, device)?;
        Ok(linear)
    }

    /// `N` linear layers from one checkpoint weight `{name}.weight` [N·out, in] (and bias) that
    /// stacks their rows (a fused `Wqkv`, a GLU's gate and value): each its own product, rather
    /// than one product sliced into parts, which on a GPU are copy kernels that the work after
    /// them cannot fuse with.
    pub fn load_parts<const N: usize>(
        ckpt: &mut Checkpoint,
        name: &str,
        in_features: usize,
        out_features: usize,
        bias: bool,
        device: &Device,
    ) -> Result<[Linear; N]> {
        Linear::load_stacked(ckpt, name, in_features, [out_features; N], bias, device)
    }

    /// `load_parts` for parts of their own widths: `{name}.weight` [Σ widths, in] stacks them
    /// in order (OLMo's fused `att_proj`: the queries, then grouped-query attention's narrower
    /// keys and values), held as the checkpoint's matrices are (`Checkpoint::take_matrix`).
    pub fn load_stacked<const N: usize>(
        ckpt: &mut Checkpoint,
        name: &str,
        in_features: usize,
        widths: [usize; N],
        bias: bool,
        device: &Device,
    ) -> Result<[Linear; N]> {
        let rows = widths.iter().sum::<usize>();
        let weight = ckpt.take_matrix(&format!("{name}.weight"), &[rows, in_features])?;
        let bias = if bias {
            Some(ckpt.take(&format!("{name}.bias"), &[rows])?)
        } else {
            None
        };
        Ok(Linear::from_rows(weight, bias, in_features, widths, device))
    }

    /// `load_parts` for GPT-2's `Conv1D` (`{name}.weight` stored [in, N·out], y = x W + b,
    /// always with a bias): transposed on the host, one tensor at a time, in the type it is held
    /// in (`Checkpoint::take_matrix`), then split alike.
    pub fn load_conv1d_parts<const N: usize>(
        ckpt: &mut Checkpoint,
        name: &str,
        in_features: usize,
        out_features: usize,
        device: &Device,
    ) -> Result<[Linear; N]> {
        let columns = N * out_features;
        let stored = ckpt.take_matrix(&format!("{name}.weight"), &[in_features, columns])?;
        let weight = match stored {
            Matrix::F32(values) => Matrix::F32(transposed(&values, columns)),
            Matrix::Bf16(values) => Matrix::Bf16(transposed(&values, columns)),
            Matrix::F16(values) => Matrix::F16(transposed(&values, columns)),
        };
        let bias = ckpt.take(&format!("{name}.bias"), &[columns])?;
        Ok(Linear::from_rows(
            weight,
            Some(bias),
            in_features,
            [out_features; N],
            device,
        ))
    }

    /// `N` layers from a weight [Σ widths, in] (row-major) and bias [Σ widths] stacking their
    /// rows in order.
    fn from_rows<const N: usize>(
        mut weight: Matrix,
        mut bias: Option<Vec<f32>>,
        in_features: usize,
        widths: [usize; N],
        device: &Device,
    ) -> [Linear; N] {
        // Parts after the first are split off the end; the first keeps the vectors read, so a
        // single layer's weights are never copied.
        let mut parts: Vec<(Matrix, Option<Vec<f32>>)> = (1..N)
            .rev()
            .map(|part| {
                let first_row: usize = widths[..part].iter().sum();
                let weight = weight.split_off(first_row * in_features);
                let bias = bias.as_mut().map(|b| b.split_off(first_row));
                (weight, bias)
            })
            .collect();
        parts.push((weight, bias));
        parts.reverse();
        let mut parts = parts.into_iter();
        widths.map(|out_features| {
            let (weight, bias) = parts.next().expect("N parts were split off");
            Linear::from_matrix(weight, bias, in_features, out_features, device)
        })
    }

    /// From a matrix as taken: f32 as `new`; half-precision kept so (`Linear::Half`).
    fn from_matrix(
        weight: Matrix,
        bias: Option<Vec<f32>>,
        in_features: usize,
        out_features: usize,
        device: &Device,
    ) -> Linear {
        match weight {
            Matrix::F32(weight) => Linear::new(weight, bias, in_features, out_features, device),
            half => Linear::Half {
                weight: HalfMatrix::upload(half, [out_features, in_features], device),
                bias: bias.map(|b| upload(b, [out_features], device)),
            },
        }
    }

    /// From a weight matrix [out, in] in row-major order and an optional bias [out].
    pub fn new(
        weight: Vec<f32>,
        bias: Option<Vec<f32>>,
        in_features: usize,
        out_features: usize,
        device: &Device,
    ) -> Linear {
        #[cfg(target_arch = "wasm32")]
        if *device == Device::flex() {
            let packed = packed_matmul::PackedLinear::new(&weight, bias, in_features, out_features);
            return Linear::Packed(std::sync::Arc::new(packed));
        }
        Linear::Tensors {
            weight_t: upload(weight, [out_features, in_features], device).transpose(),
            bias: bias.map(|b| upload(b, [out_features], device)),
        }
    }

    /// x: [..., in] → [..., out]
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Linear::Tensors { weight_t, bias } => linear(x, weight_t.clone(), bias.clone()),
            Linear::Half { weight, bias } => linear(x, weight.widen().transpose(), bias.clone()),
            #[cfg(target_arch = "wasm32")]
            Linear::Packed(packed) => {
                let mut dims = x.dims();
                let rows = dims[..D - 1].iter().product();
                let values = host_values(x);
                dims[D - 1] = packed.out_features;
                let y = packed.forward(&values, rows);
                Tensor::from_data(TensorData::new(y, dims), &Device::flex())
            }
        }
    }
}

/// A row-major matrix of `columns` columns, transposed: [rows, columns] → [columns, rows].
fn transposed<T: Copy + Default>(values: &[T], columns: usize) -> Vec<T> {
    let rows = values.len() / columns.max(1);
    let mut out = vec![T::default(); values.len()];
    for (r, row) in values.chunks_exact(columns.max(1)).enumerate() {
        for (c, value) in row.iter().enumerate() {
            out[c * rows + r] = *value;
        }
    }
    out
}

/// A gated linear unit's input projection, stored in the checkpoint as one `{name}.weight`
/// [2·width, in] (the gate's rows first, then the value's), kept as two linear layers.
pub struct GluProjection {
    gate: Linear,
    value: Linear,
}

impl GluProjection {
    pub fn load(
        ckpt: &mut Checkpoint,
        name: &str,
        in_features: usize,
        width: usize,
        bias: bool,
        device: &Device,
    ) -> Result<GluProjection> {
        let [gate, value] = Linear::load_parts(ckpt, name, in_features, width, bias, device)?;
        Ok(GluProjection { gate, value })
    }

    /// activation(x W_gateᵀ + b) ⊙ (x W_valueᵀ + b): [..., in] → [..., width]
    pub fn forward<const D: usize>(&self, x: Tensor<D>, activation: Activation) -> Tensor<D> {
        activation.apply(self.gate.forward(x.clone())) * self.value.forward(x)
    }
}

/// The separate query, key and value projections of an HF self-attention block
/// (`{prefix}.query`, `.key`, `.value`, each [hidden, hidden], with biases when `bias`).
pub fn load_qkv(
    ckpt: &mut Checkpoint,
    prefix: &str,
    hidden: usize,
    bias: bool,
    device: &Device,
) -> Result<(Linear, Linear, Linear)> {
    let mut proj = |name: &str| {
        Linear::load(
            ckpt,
            &format!("{prefix}.{name}"),
            hidden,
            hidden,
            bias,
            device,
        )
    };
    Ok((proj("query")?, proj("key")?, proj("value")?))
}

pub struct LayerNorm {
    gamma: Tensor<1>,
    beta: Option<Tensor<1>>,
    eps: f64,
}

impl LayerNorm {
    pub fn load(
        ckpt: &mut Checkpoint,
        name: &str,
        features: usize,
        eps: f64,
        device: &Device,
    ) -> Result<LayerNorm> {
        Self::load_with_bias(ckpt, name, features, eps, true, device)
    }

    /// `load`, or a LayerNorm without `{name}.bias` (DNAGPT's `bias=False`).
    pub fn load_with_bias(
        ckpt: &mut Checkpoint,
        name: &str,
        features: usize,
        eps: f64,
        bias: bool,
        device: &Device,
    ) -> Result<LayerNorm> {
        let gamma = ckpt.take(&format!("{name}.weight"), &[features])?;
        let beta = if bias {
            Some(ckpt.take(&format!("{name}.bias"), &[features])?)
        } else {
            None
        };
        Ok(LayerNorm {
            gamma: upload(gamma, [features], device),
            beta: beta.map(|b| upload(b, [features], device)),
            eps,
        })
    }

    /// A LayerNorm with no weight or bias in the checkpoint (OLMo's `layer_norm_with_affine`
    /// false): the normalisation alone.
    pub fn without_affine(features: usize, eps: f64, device: &Device) -> LayerNorm {
        LayerNorm {
            gamma: upload(vec![1.0; features], [features], device),
            beta: None,
            eps,
        }
    }

    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        layer_norm(x, self.gamma.clone(), self.beta.clone(), self.eps)
    }
}

/// RMSNorm: x / √(mean(x²) + ε) · weight over the last dimension (no mean subtracted, no bias).
pub struct RmsNorm {
    weight: Tensor<1>,
    eps: f64,
}

impl RmsNorm {
    pub fn load(
        ckpt: &mut Checkpoint,
        name: &str,
        dim: usize,
        eps: f64,
        device: &Device,
    ) -> Result<RmsNorm> {
        Ok(RmsNorm {
            weight: param(ckpt, &format!("{name}.weight"), [dim], device)?,
            eps,
        })
    }

    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let mean_square = (x.clone() * x.clone()).mean_dim(2);
        x / mean_square.add_scalar(self.eps).sqrt() * self.weight.clone().unsqueeze::<3>()
    }
}

/// The activations HF configs name in `hidden_act`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// Exact (erf) GELU, PyTorch's default.
    Gelu,
    /// tanh-approximated GELU (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    Relu,
    Silu,
}

impl Activation {
    /// `hidden_act` from config.json, or the error naming what is supported.
    pub fn from_config(name: &str) -> Result<Activation> {
        Ok(match name {
            "gelu" => Activation::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Activation::GeluTanh,
            "relu" => Activation::Relu,
            "silu" | "swish" => Activation::Silu,
            _ => {
                return Err(crate::Error::in_file(
                    "config.json",
                    format!("hidden_act '{name}' is not supported (gelu, gelu_new, relu, silu)"),
                ));
            }
        })
    }

    pub fn apply<const D: usize>(self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Activation::Gelu => gelu(x),
            Activation::GeluTanh => gelu_tanh(x),
            Activation::Relu => relu(x),
            Activation::Silu => silu(x),
        }
    }
}

/// tanh-approximated GELU, 0.5·x·(1 + tanh(z)) with z = √(2/π)·(x + 0.044715·x³), written as
/// x·sigmoid(2z) (the same function): Burn's `gelu_approximate` takes x³ by `powf` and calls
/// `tanh`, which on the CPU backend were 40 % of HyenaDNA-tiny's time (perf). On the CPU the
/// whole expression is one pass over the values (below); elsewhere it is the same arithmetic
/// in tensor ops.
pub fn gelu_tanh<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    if x.device() == Device::flex()
        && let Some(y) = map_on_cpu(&x, gelu_tanh_f32)
    {
        return y;
    }
    gelu_tanh_ops(x)
}

/// x·sigmoid(x), as `gelu_tanh`: on the CPU one pass with the vectorised exp below, since
/// Burn's `silu` takes libm's `expf` per value (5 % of an NT-v2 embedding in the page).
pub fn silu<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    if x.device() == Device::flex()
        && let Some(y) = map_on_cpu(&x, |v| v * sigmoid_f32(v))
    {
        return y;
    }
    burn::tensor::activation::silu(x)
}

fn gelu_tanh_ops<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let cubic = x.clone() * x.clone() * x.clone();
    let z2 = (cubic * GELU_CUBIC + x.clone()) * GELU_TWO_SQRT_2_OVER_PI;
    x * sigmoid(z2)
}

const GELU_CUBIC: f32 = 0.044715;
const GELU_TWO_SQRT_2_OVER_PI: f32 =
    (2.0 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2) as f32;

/// `gelu_tanh` of one value: the tensor form's arithmetic, with the exp below (within a few
/// ulp of the tensor form; unit-tested).
fn gelu_tanh_f32(x: f32) -> f32 {
    x * sigmoid_f32((x * x * x * GELU_CUBIC + x) * GELU_TWO_SQRT_2_OVER_PI)
}

/// sigmoid(x) from exp(−|x|), which never overflows.
fn sigmoid_f32(x: f32) -> f32 {
    let e = exp_nonpositive(-x.abs());
    if x >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    }
}

/// eˣ for x ≤ 0 within 2 ulp, with multiplies, adds and bit shifts only, so the compiler
/// vectorises the loop around it (libm's `expf` is a call per value). Cephes' `expf`: x = n·ln 2
/// + r with |r| ≤ ½ ln 2, a degree-7 polynomial for eʳ, then 2ⁿ into the exponent bits.
fn exp_nonpositive(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding and subtracting 1.5·2²³ rounds to the nearest integer without a libm call.
    const ROUND: f32 = 12_582_912.0;
    // Below −87 eˣ is under f32's smallest normal number: 0 (a select, so still vectorised).
    let underflow = x < -87.0;
    let x = x.max(-87.0);
    let n = (x * std::f32::consts::LOG2_E + ROUND) - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4_f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 5.0e-1; // Cephes' 5.0000001e-1, which is 0.5 in f32
    let y = p * r * r + r + 1.0;
    let value = y * f32::from_bits(((n as i32 + 127) as u32) << 23);
    if underflow { 0.0 } else { value }
}

/// A CPU-backend tensor's values: reading one completes at once, so the synchronous read is safe
/// in wasm too, and its floats are f32 (only the wgpu device is ever configured for f16).
pub fn host_values<const D: usize>(x: Tensor<D>) -> Vec<f32> {
    let values = x.into_data().try_into_vec::<f32>();
    values.expect("the CPU backend's float tensors are f32")
}

/// `f` applied to every value of a CPU-backend tensor in one pass, on rayon's threads:
/// Burn's CPU backend runs each element-wise op as its own single-threaded pass, and an
/// activation made of several ops (each with a transcendental function) cost more than the
/// matrix products around it. `None` when the values are not f32.
fn map_on_cpu<const D: usize, F>(x: &Tensor<D>, f: F) -> Option<Tensor<D>>
where
    F: Fn(f32) -> f32 + Send + Sync,
{
    const CHUNK: usize = 1 << 14;
    // Reading a CPU-backend tensor completes at once, so the synchronous read is safe in wasm too.
    let mut values = x.clone().into_data().try_into_vec::<f32>().ok()?;
    let apply = |chunk: &mut [f32]| chunk.iter_mut().for_each(|v| *v = f(*v));
    // On rayon's pool: the machine's threads natively and in the threaded page core; the
    // one-thread page core's rayon runs it on the calling thread.
    use rayon::prelude::*;
    values.par_chunks_mut(CHUNK).for_each(apply);
    Some(Tensor::from_data(
        TensorData::new(values, x.shape()),
        &x.device(),
    ))
}

/// Additive attention bias that removes padded keys: [batch, 1, 1, tokens], 0 where the mask
/// is 1 and a large negative number where it is 0: finite in f16 too (whose largest value is
/// 65,504; 1e30 became inf there, and 0 · inf is NaN), so no backend meets inf − inf, and large
/// enough that the softmax weight of a padded key is exactly 0 in either precision.
pub fn padding_bias(attention_mask: Tensor<2>) -> Tensor<4> {
    let [batch, tokens] = attention_mask.dims();
    ((attention_mask - 1.0) * 3.0e4).reshape([batch, 1, 1, tokens])
}

/// Additive bias that keeps each query from the keys after it (a causal decoder), with
/// `padding_bias`'s value: [1, 1, tokens, tokens].
pub fn causal_bias(tokens: usize, device: &Device) -> Tensor<4> {
    sliding_causal_bias(tokens, None, device)
}

/// `causal_bias` that also keeps each query from the keys `window` or more positions before it
/// (Mistral's sliding window: key j is seen by query i when i − window < j ≤ i).
pub fn sliding_causal_bias(tokens: usize, window: Option<usize>, device: &Device) -> Tensor<4> {
    let window = window.unwrap_or(usize::MAX);
    let bias = (0..tokens)
        .flat_map(|i| {
            (0..tokens).map(move |j| {
                if j > i || i - j >= window {
                    -3.0e4
                } else {
                    0.0
                }
            })
        })
        .collect();
    upload(bias, [1, 1, tokens, tokens], device)
}

/// Grouped-query attention's keys or values, [batch, kv_heads, tokens, head_dim], repeated to
/// [batch, kv_heads · groups, tokens, head_dim]: query head h reads key head h / groups, as
/// transformers' `repeat_kv` lays them out.
pub fn repeat_kv(x: Tensor<4>, groups: usize) -> Tensor<4> {
    if groups == 1 {
        return x;
    }
    let [batch, kv_heads, tokens, head_dim] = x.dims();
    x.unsqueeze_dim::<5>(2)
        .expand([batch, kv_heads, groups, tokens, head_dim])
        .reshape([batch, kv_heads * groups, tokens, head_dim])
}

/// [batch, tokens, heads·head_dim] → [batch, heads, tokens, head_dim]
pub fn split_heads(x: Tensor<3>, heads: usize) -> Tensor<4> {
    let [batch, tokens, width] = x.dims();
    x.reshape([batch, tokens, heads, width / heads])
        .swap_dims(1, 2)
}

/// Causal self-attention with grouped key/value heads and rotary positions, as Llama, Mistral
/// and OLMo compute it: q, k, v projected (and clamped where OLMo's `clip_qkv` asks), rotated,
/// the key/value heads repeated to the query heads, attended, projected out.
pub struct GroupedQueryAttention {
    pub q_proj: Linear,
    pub k_proj: Linear,
    pub v_proj: Linear,
    pub out_proj: Linear,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub clip: Option<f32>,
}

impl GroupedQueryAttention {
    /// `h` [batch, tokens, hidden] → [batch, tokens, hidden]; `bias` broadcastable to
    /// [batch, heads, tokens, tokens] (padding, causality, a sliding window).
    pub fn forward(&self, h: Tensor<3>, rotary: &RotaryTables, bias: Tensor<4>) -> Tensor<3> {
        let project = |proj: &Linear, heads: usize| {
            let x = proj.forward(h.clone());
            let x = match self.clip {
                Some(clip) => x.clamp(-clip, clip),
                None => x,
            };
            split_heads(x, heads)
        };
        let groups = self.heads / self.kv_heads;
        let q = rotary.apply(project(&self.q_proj, self.heads));
        let k = repeat_kv(rotary.apply(project(&self.k_proj, self.kv_heads)), groups);
        let v = repeat_kv(project(&self.v_proj, self.kv_heads), groups);
        let scale = (self.head_dim as f64).powf(-0.5);
        self.out_proj.forward(attention(q, k, v, scale, bias))
    }
}

/// softmax(q kᵀ · scale + bias) v, heads merged back: q, k, v [batch, heads, tokens, head_dim],
/// bias broadcastable to [batch, heads or 1, tokens, tokens].
pub fn attention(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    scale: f64,
    bias: Tensor<4>,
) -> Tensor<3> {
    #[cfg(feature = "wgpu")]
    if q.device() != Device::flex() {
        return attention_kernel::attention(q, k, v, scale, bias);
    }
    // burn-flex's fused attention: per (sequence, head) on the thread pool, the scores of
    // one head at a time in cache (tiled with an online softmax past 512 tokens), instead
    // of [batch, heads, tokens, tokens] tensors written and reread by five separate ops.
    // Its bias must span whole [tokens, tokens] tiles (a broadcast over the query rows is
    // expanded to all heads), so a per-key padding bias is spread over the rows here, once.
    let [batch, heads, tokens, head_dim] = q.dims();
    let [bias_batch, bias_heads, ..] = bias.dims();
    let bias = bias.expand([bias_batch, bias_heads, tokens, tokens]);
    let options = AttentionModuleOptions {
        scale: Some(scale),
        ..Default::default()
    };
    burn::tensor::module::attention(q, k, v, None, Some(bias), options)
        .swap_dims(1, 2)
        .reshape([batch, tokens, heads * head_dim])
}

/// The width of one attention head, or the error when the heads do not divide the width.
pub fn head_dim(hidden: usize, heads: usize) -> Result<usize> {
    if hidden == 0 || heads == 0 || !hidden.is_multiple_of(heads) {
        return Err(config_error(&format!(
            "hidden_size {hidden} is not divisible by num_attention_heads {heads}"
        )));
    }
    Ok(hidden / heads)
}

/// The prefix (`bert.`, `esm.`, none…) under which the checkpoint holds `probe`: task-head
/// checkpoints nest the encoder, bare ones do not.
pub fn checkpoint_prefix<'p>(
    ckpt: &Checkpoint,
    prefixes: &[&'p str],
    probe: &str,
    family: &str,
) -> Result<&'p str> {
    ckpt.find_prefix(prefixes, probe).ok_or_else(|| {
        let tried: Vec<String> = prefixes.iter().map(|p| format!("'{p}{probe}'")).collect();
        crate::Error::in_file(
            ckpt.source(),
            format!(
                "no {family} embeddings ({}) in the checkpoint",
                tried.join(" or ")
            ),
        )
    })
}

/// An error about config.json, with the question that usually resolves it.
pub fn config_error(what: &str) -> crate::Error {
    crate::Error::in_file(
        "config.json",
        format!("{what} — is this config.json from the model's own repository?"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_nonpositive_is_within_2_ulp_of_exp() {
        let mut worst = 0f64;
        for i in 0..=870_000 {
            let x = -(i as f32) * 1e-4;
            let exact = f64::from(x).exp();
            worst = worst.max((f64::from(exp_nonpositive(x)) - exact).abs() / exact);
        }
        assert!(
            worst <= 2.0 * f64::from(f32::EPSILON),
            "worst relative error {worst}"
        );
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-1e4), 0.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn gelu_tanh_in_one_pass_matches_the_tensor_ops_and_the_f64_values() {
        let device = crate::encoder::backend::cpu().device;
        // Both signs, the far tails (the sigmoid's exp must not overflow) and over 2 chunks.
        let mut x: Vec<f32> = (0..40_000).map(|i| (i as f32 - 20_000.0) * 1e-3).collect();
        x.extend([
            0.0,
            -0.0,
            1e-30,
            -1e-30,
            88.0,
            -88.0,
            1e4,
            -1e4,
            f32::MAX,
            f32::MIN,
        ]);
        let n = x.len();
        let read = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap();
        let one_pass = read(gelu_tanh(upload(x.clone(), [n], &device)));
        let ops = read(gelu_tanh_ops(upload(x.clone(), [n], &device)));
        for ((&x, &a), &b) in x.iter().zip(&one_pass).zip(&ops) {
            let close = (a - b).abs() <= 4.0 * f32::EPSILON * b.abs().max(1.0);
            assert!(close, "x = {x}: one pass {a}, ops {b}");
            let x = f64::from(x);
            let z = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3));
            let exact = 0.5 * x * (1.0 + z.tanh());
            if x.abs() < 1e4 {
                let error = (f64::from(a) - exact).abs();
                assert!(
                    error <= 1e-6 * exact.abs().max(1.0),
                    "x = {x}: {a} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn silu_in_one_pass_matches_burns_and_the_f64_values() {
        let device = crate::encoder::backend::cpu().device;
        let mut x: Vec<f32> = (0..40_000).map(|i| (i as f32 - 20_000.0) * 1e-3).collect();
        x.extend([0.0, -0.0, 1e-30, -1e-30, 88.0, -88.0, 1e4, -1e4]);
        let n = x.len();
        let read = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap();
        let one_pass = read(silu(upload(x.clone(), [n], &device)));
        let burns = read(burn::tensor::activation::silu(upload(
            x.clone(),
            [n],
            &device,
        )));
        for ((&x, &a), &b) in x.iter().zip(&one_pass).zip(&burns) {
            let close = (a - b).abs() <= 4.0 * f32::EPSILON * b.abs().max(1.0);
            assert!(close, "x = {x}: one pass {a}, Burn {b}");
            let x = f64::from(x);
            let exact = x / (1.0 + (-x).exp());
            let error = (f64::from(a) - exact).abs();
            assert!(
                error <= 1e-6 * exact.abs().max(1.0),
                "x = {x}: {a} vs {exact}"
            );
        }
    }

    /// softmax(q kᵀ · scale + bias) v as Burn's tensor ops compute it, heads merged back: the
    /// oracle for both fused attentions.
    fn attention_with_tensor_ops(
        q: Tensor<4>,
        k: Tensor<4>,
        v: Tensor<4>,
        scale: f64,
        bias: Tensor<4>,
    ) -> Vec<f32> {
        let [batch, heads, tokens, head_dim] = q.dims();
        let scores = q.matmul(k.swap_dims(2, 3)) * scale + bias;
        burn::tensor::activation::softmax(scores, 3)
            .matmul(v)
            .swap_dims(1, 2)
            .reshape([batch, tokens, heads * head_dim])
            .into_data()
            .try_to_vec()
            .unwrap()
    }

    /// Attention's inputs of a small case on `device`: q, k, v [2, 4, 7, 3] and two biases, a
    /// per-key padding one (the last two keys of the second sequence removed) and a full
    /// per-head one (ALiBi's shape plus padding).
    fn attention_case(device: &Device) -> ([Tensor<4>; 3], [Tensor<4>; 2]) {
        let values = |n: usize, seed: f32| -> Vec<f32> {
            (0..n)
                .map(|i| (i as f32 * 0.37 + seed).sin() * 1.3)
                .collect()
        };
        let [batch, heads, tokens, head_dim] = [2, 4, 7, 3];
        let shape = [batch, heads, tokens, head_dim];
        let n = shape.iter().product();
        let q = upload(values(n, 0.1), shape, device);
        let k = upload(values(n, 0.7), shape, device);
        let v = upload(values(n, 1.9), shape, device);
        let mut mask = vec![1f32; batch * tokens];
        mask[2 * tokens - 2..].fill(0.0);
        let padding = padding_bias(upload(mask, [batch, tokens], device));
        let full = upload(
            values(batch * heads * tokens * tokens, 2.3),
            [batch, heads, tokens, tokens],
            device,
        ) + padding.clone();
        ([q, k, v], [padding, full])
    }

    fn assert_close(fused: &[f32], ops: &[f32], tolerance: f32) {
        assert_eq!(fused.len(), ops.len());
        for (a, b) in fused.iter().zip(ops) {
            assert!((a - b).abs() <= tolerance, "fused {a}, tensor ops {b}");
        }
    }

    #[test]
    fn fused_cpu_attention_equals_the_tensor_ops() {
        let device = crate::encoder::backend::cpu().device;
        let ([q, k, v], biases) = attention_case(&device);
        for bias in biases {
            let fused: Vec<f32> = attention(q.clone(), k.clone(), v.clone(), 0.5, bias.clone())
                .into_data()
                .try_to_vec()
                .unwrap();
            let ops = attention_with_tensor_ops(q.clone(), k.clone(), v.clone(), 0.5, bias);
            assert_close(&fused, &ops, 1e-6);
        }
    }

    /// The GPU kernel (on Mesa's lavapipe here) reads q, k, v through their strides: a layout
    /// as the models give it ([batch, tokens, heads, head_dim] with the middle axes swapped) as
    /// well as a contiguous one.
    #[cfg(feature = "wgpu")]
    #[test]
    fn gpu_attention_kernel_equals_the_tensor_ops() {
        let device = match pollster::block_on(crate::encoder::backend::wgpu()) {
            Ok(compute) => compute.device,
            Err(e) => panic!("wgpu (Mesa lavapipe) is needed for this test: {e}"),
        };
        let ([q, k, v], biases) = attention_case(&device);
        // The same values stored as [batch, tokens, heads, head_dim], seen through swapped axes.
        let swapped = |x: &Tensor<4>| {
            Tensor::<4>::from_data(x.clone().swap_dims(1, 2).into_data(), &device).swap_dims(1, 2)
        };
        for bias in biases {
            let ops = attention_with_tensor_ops(q.clone(), k.clone(), v.clone(), 0.5, bias.clone());
            let fused: Vec<f32> = attention(q.clone(), k.clone(), v.clone(), 0.5, bias.clone())
                .into_data()
                .try_to_vec()
                .unwrap();
            assert_close(&fused, &ops, 1e-6);
            let strided: Vec<f32> = attention(swapped(&q), swapped(&k), swapped(&v), 0.5, bias)
                .into_data()
                .try_to_vec()
                .unwrap();
            assert_close(&strided, &ops, 1e-6);
        }
    }
}
