//! Choosing which layout a fused block iterates in.
//!
//! A block's reference layout decides how a global index maps to coordinates,
//! and therefore which tensors are read linearly and which are read strided.
//! Outputs used to be allocated contiguous in logical dimension order and the
//! reference taken from them, which is the right answer only when the inputs
//! are contiguous too.
//!
//! They often are not. Every convolution in `burn-cubecl` permutes to NHWC,
//! convolves, and permutes back, and a permute is a metadata change — so a
//! convolution hands its successor an NCHW *view* of NHWC memory. Iterating
//! that in NCHW order reads it strided, and on a tensor too large for the last
//! level cache that costs an order of magnitude in bandwidth.
//!
//! Nothing forces the output to be contiguous. Writing it in any dense layout
//! costs the same, as long as the reference iterates in that layout's memory
//! order. So the layout is free to choose, and the cost of a choice is the
//! traffic of the inputs that disagree with it.

use burn_std::Strides;

pub use burn_std::tensor::layout::{DimOrder, dim_order, is_contiguous_order, nested_dim_order};

/// The axis a vector runs along in a tensor laid out in a permuted order, or
/// `None` when the tensor is in logical dimension order, is not dense, or has no
/// axis to run along.
///
/// Everything written before a block could choose its layout takes a vector to run
/// along the last dimension, and for logical dimension order it does — including
/// across trailing degenerate dimensions, which a contiguous layout gives stride
/// one. Answering `None` there rather than an axis of our own leaves every such
/// block behaving exactly as it did, and keeps the two callers — the
/// [vector_axis](crate::engine::codegen::ir::FuseBlockConfig::vector_axis) a kernel
/// steps by and the axis the vectorization pass sizes against — from disagreeing
/// about what a vector is.
///
/// For a permuted order it is the innermost dimension of [dim_order], except that
/// degenerate dimensions are skipped. Their position in the order is arbitrary —
/// nothing distinguishes them, since density says nothing about their stride —
/// and their stride is arbitrary with it: a broadcast dimension carries stride
/// zero, so a vector stepping it would read the same element `width` times. Even a
/// benign stride of one costs the block its vectorization, because an extent of
/// one reads as broadcast to every access measured against it.
pub fn permuted_innermost_axis(shape: &[usize], strides: &[usize]) -> Option<usize> {
    let order = dim_order(shape, strides)?;

    if is_contiguous_order(&order) {
        return None;
    }

    order.iter().rev().find(|&&axis| shape[axis] > 1).copied()
}

/// The strides a tensor of this shape has when laid out in the given dimension
/// order.
///
/// The inverse of [dim_order] for dense tensors: `strides_for(shape,
/// dim_order(shape, strides))` reproduces `strides` up to the arbitrary strides
/// of size-one dimensions.
pub fn strides_for(shape: &[usize], order: &[usize]) -> Strides {
    let mut strides = vec![0usize; shape.len()];
    let mut current = 1;

    for &axis in order.iter().rev() {
        strides[axis] = current;
        current *= shape[axis];
    }

    Strides::new(&strides)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn_std::Shape;

    #[test]
    fn round_trips_through_strides() {
        let shape = [2, 48, 16, 16];
        let order = [0, 2, 3, 1];
        let strides = strides_for(&shape, &order);

        assert_eq!(&*strides, &[16 * 16 * 48, 1, 16 * 48, 48]);
        assert_eq!(
            dim_order(&shape, &strides),
            Some(Shape::from(order.to_vec()))
        );
    }

    #[test]
    fn a_permuted_order_skips_degenerate_dimensions() {
        // `dim_order` breaks stride ties by dimension index, so a degenerate
        // dimension whose stride happens to tie with the real innermost one sorts
        // last. It is not what a line advances along.
        let shape = [2, 48, 16, 1];
        let strides = [768, 1, 48, 1];

        assert_eq!(
            dim_order(&shape, &strides).unwrap().last(),
            Some(&3),
            "the order still ends at the degenerate dimension",
        );
        assert_eq!(permuted_innermost_axis(&shape, &strides), Some(1));
    }

    #[test]
    fn a_broadcast_degenerate_dimension_is_never_the_innermost() {
        // The case that makes this a correctness bug rather than a missed
        // vectorization: a stride of zero sorts last, and a line stepping it would
        // read the same element `width` times.
        let shape = [2, 48, 16, 1];
        let strides = [768, 1, 48, 0];

        assert!(dim_order(&shape, &strides).is_some(), "still dense");
        assert_eq!(permuted_innermost_axis(&shape, &strides), Some(1));
    }

    #[test]
    fn logical_dimension_order_asks_for_nothing() {
        // The callers fall back to the last dimension, which is what a contiguous
        // layout advances along — degenerate trailing dimensions included, since a
        // contiguous layout gives them stride one.
        assert_eq!(
            permuted_innermost_axis(&[2, 48, 16, 16], &[48 * 16 * 16, 16 * 16, 16, 1]),
            None
        );
        assert_eq!(
            permuted_innermost_axis(&[2, 48, 1, 1], &[48, 1, 1, 1]),
            None
        );
    }

    #[test]
    fn nhwc_memory_advances_along_the_channel() {
        let shape = [2, 48, 16, 16];
        let strides = [16 * 16 * 48, 1, 16 * 48, 48];

        assert_eq!(permuted_innermost_axis(&shape, &strides), Some(1));
    }

    #[test]
    fn a_tensor_that_is_not_dense_asks_for_nothing() {
        assert_eq!(permuted_innermost_axis(&[4, 8], &[16, 1]), None);
        assert_eq!(
            permuted_innermost_axis(&[2, 48, 16, 16], &[0, 1, 0, 0]),
            None
        );
    }

    #[test]
    fn a_single_element_tensor_asks_for_nothing() {
        assert_eq!(permuted_innermost_axis(&[1, 1, 1, 1], &[1, 1, 1, 1]), None);
    }
}
