//! Attention as one GPU kernel: softmax(q kᵀ · scale + bias) v, heads merged, for the wgpu
//! backend (natively and WebGPU in the page).
//!
//! Written with Burn's tensor ops, attention is eight to ten launches per layer on a GPU: the
//! score matmul, the scale and bias, the softmax's reductions, the value matmul and the copies
//! that turn [batch, tokens, heads, head_dim] into [batch, heads, tokens, head_dim] and back.
//! In the page each launch costs more than the arithmetic of a short sequence (bench/README.md),
//! so this kernel does all of it in one: one unit per (sequence, head, query row) reads q, k,
//! v and the bias through their strides (no copies), and writes the context already merged
//! as [batch, tokens, heads·head_dim]. The score row is never stored: one pass over the keys
//! keeps the softmax online (a running maximum, the sum and context rescaled when it grows),
//! in a fixed order, so the result is the same on every run and every adapter, accumulated
//! in f32 whatever the tensors' dtype.
//!
//! Burn's own flash attention is no substitute: without autotune it runs its fallback (the
//! separate kernels) and it takes no additive bias (DNABERT-2's ALiBi).
//!
//! A Burn backend extension: Burn's fusion records the call as one operation in its stream and
//! hands the kernel the materialised inputs.

use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, backend_extension};
use burn::tensor::Shape;
use burn_cubecl::CubeBackend;
use burn_cubecl::ops::numeric::empty_device_dtype;
use cubecl::prelude::*;
use cubecl::{CubeDim, calculate_cube_count_elemwise};

#[cube(launch, address_type = "dynamic")]
fn attention_rows<E: Float>(
    q: &Tensor<E>,
    k: &Tensor<E>,
    v: &Tensor<E>,
    bias: &Tensor<E>,
    out: &mut Tensor<E>,
    scale: f32,
    #[comptime] head_dim: usize,
    #[define(E)] _dtype: ElemType,
) {
    let heads = q.shape(1);
    let tokens = q.shape(2);
    let row = ABSOLUTE_POS;
    if row >= q.shape(0) * heads * tokens {
        terminate!();
    }
    let query = row % tokens;
    let head = (row / tokens) % heads;
    let sequence = row / (tokens * heads);

    // Strides read once: each is a load from the kernel's metadata.
    let (k_key, k_step) = (k.stride(2), k.stride(3));
    let (v_key, v_step) = (v.stride(2), v.stride(3));
    let bias_key = bias.stride(3);
    let mut q_row = Array::<f32>::new(head_dim);
    let q_base = sequence * q.stride(0) + head * q.stride(1) + query * q.stride(2);
    let q_step = q.stride(3);
    for d in 0..head_dim {
        q_row[d] = f32::cast_from(q[q_base + d * q_step]);
    }
    // The bias broadcasts over any of its first three dimensions that has size 1.
    let mut bias_base = 0;
    if bias.shape(0) != 1usize {
        bias_base += sequence * bias.stride(0);
    }
    if bias.shape(1) != 1usize {
        bias_base += head * bias.stride(1);
    }
    if bias.shape(2) != 1usize {
        bias_base += query * bias.stride(2);
    }
    let k_base = sequence * k.stride(0) + head * k.stride(1);
    let v_base = sequence * v.stride(0) + head * v.stride(1);

    // One pass, the softmax kept online: when a score exceeds the running maximum, the sum
    // and the context so far are rescaled to it.
    let mut context = Array::<f32>::new(head_dim);
    for d in 0..head_dim {
        context[d] = f32::new(0.0);
    }
    let mut max = f32::new(-3.0e38);
    let mut total = f32::new(0.0);
    for key in 0..tokens {
        let k_row = k_base + key * k_key;
        let mut dot = f32::new(0.0);
        for d in 0..head_dim {
            dot += q_row[d] * f32::cast_from(k[k_row + d * k_step]);
        }
        let score = dot * scale + f32::cast_from(bias[bias_base + key * bias_key]);
        if score > max {
            let rescale = f32::exp(max - score);
            total *= rescale;
            for d in 0..head_dim {
                context[d] *= rescale;
            }
            max = score;
        }
        let weight = f32::exp(score - max);
        total += weight;
        let v_row = v_base + key * v_key;
        for d in 0..head_dim {
            context[d] += weight * f32::cast_from(v[v_row + d * v_step]);
        }
    }

    let out_base =
        sequence * out.stride(0) + query * out.stride(1) + head * head_dim * out.stride(2);
    let out_step = out.stride(2);
    for d in 0..head_dim {
        out[out_base + d * out_step] = E::cast_from(context[d] / total);
    }
}

/// [batch, heads, tokens, head_dim] → [batch, tokens, heads·head_dim]
fn merged_heads(q: &Shape) -> Shape {
    Shape::new([q[0], q[2], q[1] * q[3]])
}

#[backend_extension(Cube: cfg(feature = "wgpu"), Fusion: cfg(feature = "wgpu"))]
pub trait FusedAttention: Backend {
    /// softmax(q kᵀ · scale + bias) v with the heads merged: q, k, v [batch, heads, tokens,
    /// head_dim] in any layout, bias broadcastable to [batch, heads, tokens, tokens].
    #[fusion(dtype = q, shape = merged_heads(q))]
    fn fused_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        scale: f32,
    ) -> FloatTensor<Self>;
}

impl FusedAttention for CubeBackend {
    fn fused_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        scale: f32,
    ) -> FloatTensor<Self> {
        let shape = q.meta.shape.clone();
        let (rows, head_dim) = (shape[0] * shape[1] * shape[2], shape[3]);
        let out = empty_device_dtype(
            q.client.clone(),
            q.device.clone(),
            merged_heads(&shape),
            q.dtype,
        );
        let client = q.client.clone();
        let cube_dim = CubeDim::new(&client, rows);
        let cube_count = calculate_cube_count_elemwise(&client, rows, cube_dim);
        let address_type = [&q, &k, &v, &bias, &out]
            .iter()
            .map(|t| t.required_address_type())
            .max()
            .unwrap_or_default();
        let dtype = burn::backend::cubecl::dtype_to_storage_type(q.dtype);
        attention_rows::launch(
            &client,
            cube_count,
            cube_dim,
            address_type,
            q.into_tensor_arg(),
            k.into_tensor_arg(),
            v.into_tensor_arg(),
            bias.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            scale,
            head_dim,
            dtype,
        );
        out
    }
}

/// `super::attention` on a GPU device, as one kernel launch.
pub fn attention(
    q: burn::Tensor<4>,
    k: burn::Tensor<4>,
    v: burn::Tensor<4>,
    scale: f64,
    bias: burn::Tensor<4>,
) -> burn::Tensor<3> {
    burn::Tensor::from_dispatch(Dispatch::fused_attention(
        q.into_dispatch(),
        k.into_dispatch(),
        v.into_dispatch(),
        bias.into_dispatch(),
        scale as f32,
    ))
}
