//! LayerNorm as one GPU kernel, for the wgpu backend (natively and WebGPU in the page).
//!
//! Burn's `layer_norm` is a chain of tensor ops (two means, the centring, the square root and
//! the division, then the scale and shift through reshaped vectors), which Burn's fusion leaves
//! as four to six launches; a transformer layer has two LayerNorms, and in the page each launch
//! costs more than the arithmetic of a short sequence (bench/README.md). Here one unit per row
//! reads the row three times (mean, then the variance about it, then the output): one launch,
//! the row's values in a fixed order, so every run and adapter gives the same numbers,
//! accumulated in f32 whatever the tensors' dtype.
//!
//! A Burn backend extension like `attention_kernel`: Burn's fusion records the call as one
//! operation in its stream.

use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, backend_extension};
use burn::tensor::Shape;
use burn_cubecl::CubeBackend;
use burn_cubecl::ops::numeric::empty_device_dtype;
use cubecl::prelude::*;
use cubecl::{CubeDim, calculate_cube_count_elemwise};

#[cube(launch, address_type = "dynamic")]
fn layer_norm_rows<E: Float>(
    x: &Tensor<E>,
    gamma: &Tensor<E>,
    beta: &Tensor<E>,
    out: &mut Tensor<E>,
    epsilon: f32,
    #[define(E)] _dtype: ElemType,
) {
    let tokens = x.shape(1);
    let width = x.shape(2);
    let row = ABSOLUTE_POS;
    if row >= x.shape(0) * tokens {
        terminate!();
    }
    let base = (row / tokens) * x.stride(0) + (row % tokens) * x.stride(1);
    let step = x.stride(2);
    let mut sum = f32::new(0.0);
    for i in 0..width {
        sum += f32::cast_from(x[base + i * step]);
    }
    let mean = sum / f32::cast_from(width);
    let mut squares = f32::new(0.0);
    for i in 0..width {
        let centred = f32::cast_from(x[base + i * step]) - mean;
        squares += centred * centred;
    }
    // The biased variance, as torch.nn.LayerNorm takes it.
    let denominator = f32::sqrt(squares / f32::cast_from(width) + epsilon);
    let (out_base, out_step) = (row * out.stride(1), out.stride(2));
    let (gamma_step, beta_step) = (gamma.stride(0), beta.stride(0));
    for i in 0..width {
        let normalised = (f32::cast_from(x[base + i * step]) - mean) / denominator;
        let value = normalised * f32::cast_from(gamma[i * gamma_step])
            + f32::cast_from(beta[i * beta_step]);
        out[out_base + i * out_step] = E::cast_from(value);
    }
}

#[backend_extension(Cube: cfg(feature = "wgpu"), Fusion: cfg(feature = "wgpu"))]
pub trait FusedLayerNorm: Backend {
    /// (x − mean) / √(var + ε) · gamma + beta over the last axis of x [batch, tokens, width],
    /// gamma and beta [width]; the output contiguous.
    #[fusion(dtype = x, shape = x.clone())]
    fn fused_layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f32,
    ) -> FloatTensor<Self>;
}

impl FusedLayerNorm for CubeBackend {
    fn fused_layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f32,
    ) -> FloatTensor<Self> {
        let shape: Shape = x.meta.shape.clone();
        let rows = shape[0] * shape[1];
        let out = empty_device_dtype(x.client.clone(), x.device.clone(), shape, x.dtype);
        let client = x.client.clone();
        let cube_dim = CubeDim::new(&client, rows);
        let cube_count = calculate_cube_count_elemwise(&client, rows, cube_dim);
        let address_type = [&x, &gamma, &beta, &out]
            .iter()
            .map(|t| t.required_address_type())
            .max()
            .unwrap_or_default();
        let dtype = burn::backend::cubecl::dtype_to_storage_type(x.dtype);
        layer_norm_rows::launch(
            &client,
            cube_count,
            cube_dim,
            address_type,
            x.into_tensor_arg(),
            gamma.into_tensor_arg(),
            beta.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            epsilon,
            dtype,
        );
        out
    }
}

/// `LayerNorm::forward` on a GPU device, as one kernel launch.
pub fn layer_norm(
    x: burn::Tensor<3>,
    gamma: burn::Tensor<1>,
    beta: burn::Tensor<1>,
    epsilon: f64,
) -> burn::Tensor<3> {
    burn::Tensor::from_dispatch(Dispatch::fused_layer_norm(
        x.into_dispatch(),
        gamma.into_dispatch(),
        beta.into_dispatch(),
        epsilon as f32,
    ))
}
