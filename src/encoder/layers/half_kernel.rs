//! Half-precision weights on a GPU: a matrix held as the checkpoint stores it (bf16 or f16, two
//! 16-bit values to a u32 word) is widened to f32 by one kernel of our own, where a product or
//! a lookup uses it.
//!
//! WGSL has no bf16 and has f16 only behind the adapter's optional `shader-f16`, so Burn's own
//! half tensors would not run on every adapter. Words of u32 and integer operations do: bf16 is
//! the upper half of an f32 (widening is a shift), f16's sign, exponent and mantissa move into
//! f32's fields (a subnormal is its mantissa times 2⁻²⁴, exact in f32). Both are exact, so the
//! numbers are those of the same stored values widened on the host. Non-finite values never
//! reach here (`Checkpoint::take_matrix` refuses them).

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Dispatch, backend_extension};
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeBackend;
use burn_cubecl::ops::numeric::empty_device_dtype;
use cubecl::prelude::*;
use cubecl::{CubeDim, calculate_cube_count_elemwise};

/// out [rows, width] f32 (contiguous) from words [rows, ⌈width/2⌉]: element c of a row in word c/2, the
/// even ones in its low 16 bits (the file's little-endian order).
#[cube(launch, address_type = "dynamic")]
fn widen_words(words: &Tensor<u32>, out: &mut Tensor<f32>, #[comptime] bf16: bool) {
    let width = out.shape(1);
    let at = ABSOLUTE_POS;
    if at >= out.shape(0) * width {
        terminate!();
    }
    let (row, column) = (at / width, at % width);
    let word = words[row * words.stride(0) + (column / 2) * words.stride(1)];
    let bits = if column % 2 == 0 {
        word & 0xFFFFu32
    } else {
        word >> 16u32
    };
    out[at] = if bf16 {
        bf16_bits_to_f32(bits)
    } else {
        f16_bits_to_f32(bits)
    };
}

#[cube]
fn bf16_bits_to_f32(bits: u32) -> f32 {
    f32::reinterpret(bits << 16u32)
}

#[cube]
fn f16_bits_to_f32(bits: u32) -> f32 {
    let sign = (bits & 0x8000u32) << 16u32;
    let exponent = (bits >> 10u32) & 0x1Fu32;
    let mantissa = bits & 0x3FFu32;
    let normal = sign | ((exponent + 112u32) << 23u32) | (mantissa << 13u32);
    let subnormal = u32::reinterpret(f32::cast_from(mantissa) * f32::new(5.960_464_5e-8)) | sign;
    f32::reinterpret(select(exponent == 0u32, subnormal, normal))
}

fn widened(words: &Shape, width: usize) -> Shape {
    Shape::new([words[0], width])
}

#[backend_extension(Cube: cfg(feature = "wgpu"), Fusion: cfg(feature = "wgpu"))]
pub trait WidenHalf: Backend {
    /// words [rows, ⌈width/2⌉] of packed bf16 (`bf16`) or f16 values → [rows, width] f32.
    #[fusion(dtype = DType::F32, shape = widened(words, *width))]
    fn widen_half(words: IntTensor<Self>, width: usize, bf16: bool) -> FloatTensor<Self>;
}

impl WidenHalf for CubeBackend {
    fn widen_half(words: IntTensor<Self>, width: usize, bf16: bool) -> FloatTensor<Self> {
        let shape = widened(&words.meta.shape, width);
        let elements = shape[0] * width;
        let out = empty_device_dtype(
            words.client.clone(),
            words.device.clone(),
            shape,
            DType::F32,
        );
        let client = words.client.clone();
        let cube_dim = CubeDim::new(&client, elements);
        let cube_count = calculate_cube_count_elemwise(&client, elements, cube_dim);
        let address_type = words
            .required_address_type()
            .max(out.required_address_type());
        widen_words::launch(
            &client,
            cube_count,
            cube_dim,
            address_type,
            words.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            bf16,
        );
        out
    }
}

/// `words` widened on its GPU device: [rows, width] f32.
pub fn widen(
    words: burn::Tensor<2, burn::tensor::Int>,
    width: usize,
    bf16: bool,
) -> burn::Tensor<2> {
    burn::Tensor::from_dispatch(Dispatch::widen_half(words.into_dispatch(), width, bf16))
}
