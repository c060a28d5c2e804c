//! The page's matrix product for linear layers on the CPU backend: y = x Wᵀ + b with W packed
//! once at load into panels of 8 output columns.
//!
//! Why not Burn's matmul there: burn-flex multiplies with the `gemm` crate, whose wasm simd128
//! kernels reach 29–33 GFLOP/s on one thread in Chromium 156 (x86-64, 1,088 × 512 × 2,048 and
//! 1,088 × 768 × 3,072; 18–28 at 1,088 × 512 × 512), where the page spent 73–85 % of an
//! embedding. This loop reaches 37–39 with a multiply and an add per step, and 45–48 with
//! relaxed SIMD's `f32x4.relaxed_madd`, which is the CPU's fused multiply-add: the threaded page
//! core is built with it (the `relaxed-simd` feature), the one-thread core, for browsers without
//! it, is not. Natively gemm's AVX2/AVX-512 kernels are far faster, so this module is wasm's
//! alone; its 4-lane type has a plain-array form so that the unit tests run the same loop
//! natively.
//!
//! Each output is its bias plus one sum over the inputs in index order, whatever the shapes or
//! threads: the same bits for the same inputs on one machine. With relaxed SIMD each step is
//! fused where the CPU has FMA (most x86-64 CPUs since Haswell, every arm64) and a multiply then an add
//! where it has not, so pages on two such CPUs can differ in the last bits.

/// Output columns per packed panel: two 4-lane vectors.
const PANEL: usize = 8;
/// Input rows per tile: 4 × 2 accumulators, 2 weight vectors and a broadcast value fit in
/// x86's 16 vector registers, which V8 allocates from (6 rows ran 25 % slower in V8).
const TILE_ROWS: usize = 4;
/// Input rows per block, so a block of x (96 × 768 floats at most in these models, 288 KiB)
/// stays in L2 while every panel passes over it.
const BLOCK_ROWS: usize = 96;

/// Four f32 lanes: one wasm v128 register.
#[cfg(target_arch = "wasm32")]
#[derive(Clone, Copy)]
struct F32x4(core::arch::wasm32::v128);

#[cfg(target_arch = "wasm32")]
impl F32x4 {
    #[inline(always)]
    fn splat(value: f32) -> F32x4 {
        F32x4(core::arch::wasm32::f32x4_splat(value))
    }

    #[inline(always)]
    fn load(values: &[f32; 4]) -> F32x4 {
        use core::arch::wasm32::*;
        // SAFETY: the reference covers 16 readable bytes; v128 loads need no alignment.
        F32x4(unsafe { v128_load(values.as_ptr().cast::<v128>()) })
    }

    #[inline(always)]
    fn store(self, out: &mut [f32; 4]) {
        use core::arch::wasm32::*;
        // SAFETY: as `load`, for 16 writable bytes.
        unsafe { v128_store(out.as_mut_ptr().cast::<v128>(), self.0) }
    }

    /// self + a·b.
    #[inline(always)]
    fn mul_add(self, a: F32x4, b: F32x4) -> F32x4 {
        use core::arch::wasm32::*;
        #[cfg(feature = "relaxed-simd")]
        return F32x4(f32x4_relaxed_madd(a.0, b.0, self.0));
        #[cfg(not(feature = "relaxed-simd"))]
        return F32x4(f32x4_add(self.0, f32x4_mul(a.0, b.0)));
    }
}

/// The same four lanes as plain floats, for the native unit tests.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone, Copy)]
struct F32x4([f32; 4]);

#[cfg(not(target_arch = "wasm32"))]
impl F32x4 {
    fn splat(value: f32) -> F32x4 {
        F32x4([value; 4])
    }

    fn load(values: &[f32; 4]) -> F32x4 {
        F32x4(*values)
    }

    fn store(self, out: &mut [f32; 4]) {
        *out = self.0;
    }

    fn mul_add(self, a: F32x4, b: F32x4) -> F32x4 {
        F32x4(std::array::from_fn(|i| self.0[i] + a.0[i] * b.0[i]))
    }
}

/// A `torch.nn.Linear`'s weight and bias, packed for `forward`.
pub struct PackedLinear {
    in_features: usize,
    pub out_features: usize,
    /// Panel p holds, for each input k in order, W[p·8 .. p·8 + 8][k] (zeros past the last column).
    panels: Vec<f32>,
    bias: Option<Vec<f32>>,
}

impl PackedLinear {
    /// `weight`: [out, in] row-major, as PyTorch stores it; `bias`: [out].
    pub fn new(
        weight: &[f32],
        bias: Option<Vec<f32>>,
        in_features: usize,
        out_features: usize,
    ) -> PackedLinear {
        assert_eq!(weight.len(), in_features * out_features);
        let panel_count = out_features.div_ceil(PANEL);
        let mut panels = vec![0.0; panel_count * in_features * PANEL];
        for (column, row) in weight.chunks_exact(in_features.max(1)).enumerate() {
            let panel = &mut panels[column / PANEL * in_features * PANEL..];
            for (k, &w) in row.iter().enumerate() {
                panel[k * PANEL + column % PANEL] = w;
            }
        }
        PackedLinear {
            in_features,
            out_features,
            panels,
            bias,
        }
    }

    /// x: [rows, in] row-major → [rows, out].
    pub fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        forward(self, x, rows)
    }
}

/// `PackedLinear::forward`.
fn forward(linear: &PackedLinear, x: &[f32], rows: usize) -> Vec<f32> {
    let (k, n) = (linear.in_features, linear.out_features);
    assert_eq!(rows * k, x.len());
    let mut out = vec![0.0; rows * n];
    if k == 0 || n == 0 || rows == 0 {
        if let Some(bias) = &linear.bias {
            out.chunks_exact_mut(n.max(1))
                .for_each(|r| r.copy_from_slice(bias));
        }
        return out;
    }
    // Blocks of rows on rayon's threads: a pool thread that has run out of batches of its own
    // takes blocks of another's product (a task's last batches, a lone batch of a few
    // sequences). Each output is computed whole by one thread, so the bits do not change.
    // As many blocks as a whole number of turns of the pool, so a product of few rows (a
    // click's one sequence) goes to every thread in equal shares, in whole tiles.
    let blocks = rows
        .div_ceil(BLOCK_ROWS)
        .next_multiple_of(rayon::current_num_threads());
    let block_rows = rows.div_ceil(blocks).next_multiple_of(TILE_ROWS);
    use rayon::prelude::*;
    out.par_chunks_mut(block_rows * n)
        .zip(x.par_chunks(block_rows * k))
        .for_each(|(out, x)| block(linear, x, out));
    out
}

/// One block of input rows (at most `BLOCK_ROWS`) times every panel, with relaxed SIMD enabled
/// for it and the tiles inlined into it (not for the whole module: macerator 0.5.2, which
/// burn-flex vectorises with, does not compile with it).
#[cfg_attr(
    all(target_arch = "wasm32", feature = "relaxed-simd"),
    target_feature(enable = "relaxed-simd")
)]
#[inline(never)] // its own frame in profiles (bench/wasm_profile.mjs), not rayon's
fn block(linear: &PackedLinear, x: &[f32], out: &mut [f32]) {
    let (k, n) = (linear.in_features, linear.out_features);
    let rows = x.len() / k;
    for (p, panel) in linear.panels.chunks_exact(k * PANEL).enumerate() {
        let first_column = p * PANEL;
        let columns = (n - first_column).min(PANEL);
        let bias = linear
            .bias
            .as_ref()
            .map(|b| &b[first_column..first_column + columns]);
        let mut row = 0;
        while row < rows {
            let tile_rows = (rows - row).min(TILE_ROWS);
            let x = &x[row * k..(row + tile_rows) * k];
            let out = &mut out[row * n + first_column..];
            match tile_rows {
                4 => tile::<4>(x, k, panel, out, n, columns, bias),
                3 => tile::<3>(x, k, panel, out, n, columns, bias),
                2 => tile::<2>(x, k, panel, out, n, columns, bias),
                _ => tile::<1>(x, k, panel, out, n, columns, bias),
            }
            row += tile_rows;
        }
    }
}

/// R rows of x (each `k` long) times one panel into R × `columns` outputs (row stride `n`).
#[inline(always)]
fn tile<const R: usize>(
    x: &[f32],
    k: usize,
    panel: &[f32],
    out: &mut [f32],
    n: usize,
    columns: usize,
    bias: Option<&[f32]>,
) {
    // Slices of known length, so the loop below has no bounds checks left.
    let (halves, _) = panel[..k * PANEL].as_chunks::<4>();
    let x_rows: [&[f32]; R] = std::array::from_fn(|r| &x[r * k..(r + 1) * k]);
    let mut acc = [[F32x4::splat(0.0); 2]; R];
    for (i, weights) in halves.chunks_exact(2).enumerate() {
        let low = F32x4::load(&weights[0]);
        let high = F32x4::load(&weights[1]);
        for r in 0..R {
            // SAFETY: i < k, the length of every row.
            let value = F32x4::splat(unsafe { *x_rows[r].get_unchecked(i) });
            acc[r][0] = acc[r][0].mul_add(value, low);
            acc[r][1] = acc[r][1].mul_add(value, high);
        }
    }
    for (r, [low, high]) in acc.into_iter().enumerate() {
        let mut halves = [[0f32; 4]; 2];
        low.store(&mut halves[0]);
        high.store(&mut halves[1]);
        let sums = halves.as_flattened();
        let out = &mut out[r * n..r * n + columns];
        match bias {
            Some(bias) => {
                for ((o, s), b) in out.iter_mut().zip(sums).zip(bias) {
                    *o = s + b;
                }
            }
            None => out.copy_from_slice(&sums[..columns]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                s as f32 / u32::MAX as f32 - 0.5
            })
            .collect()
    }

    /// x Wᵀ + b in f64, from the unpacked [out, in] weight.
    fn reference(x: &[f32], w: &[f32], b: Option<&[f32]>, k: usize, n: usize) -> Vec<f64> {
        let rows = x.len() / k;
        let mut out = vec![0.0; rows * n];
        for i in 0..rows {
            for j in 0..n {
                let dot: f64 = (0..k)
                    .map(|t| x[i * k + t] as f64 * w[j * k + t] as f64)
                    .sum();
                out[i * n + j] = dot + b.map_or(0.0, |b| b[j] as f64);
            }
        }
        out
    }

    #[test]
    fn matches_a_plain_product_on_every_remainder_of_rows_and_columns() {
        // Rows past a block and a tile; columns short of, at and past a panel; k = 1 and odd.
        for (rows, k, n) in [
            (0, 5, 7),
            (1, 1, 1),
            (3, 5, 7),
            (4, 8, 8),
            (5, 3, 9),
            (97, 13, 17),
            (203, 64, 24),
        ] {
            for bias in [false, true] {
                let x = values(rows * k, 1);
                let w = values(n * k, 2);
                let b = bias.then(|| values(n, 3));
                let packed = PackedLinear::new(&w, b.clone(), k, n);
                let got = packed.forward(&x, rows);
                let want = reference(&x, &w, b.as_deref(), k, n);
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (*g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "{rows}×{k}×{n} bias {bias}: {g} vs {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn each_output_is_the_bias_plus_one_sum_in_input_order() {
        // The exact f32 arithmetic, so a change to the summation order shows up as a failure;
        // several blocks of rows on three threads, so splitting the rows must not change a bit.
        let (rows, k, n) = (2 * BLOCK_ROWS + 6, 11, 10);
        let (x, w, b) = (values(rows * k, 4), values(n * k, 5), values(n, 6));
        let packed = PackedLinear::new(&w, Some(b.clone()), k, n);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let got = pool.install(|| packed.forward(&x, rows));
        for i in 0..rows {
            for j in 0..n {
                let sum = (0..k).fold(0f32, |s, t| s + x[i * k + t] * w[j * k + t]);
                assert_eq!(got[i * n + j].to_bits(), (sum + b[j]).to_bits());
            }
        }
    }

    #[test]
    fn no_inputs_gives_the_bias() {
        let packed = PackedLinear::new(&[], Some(vec![1.0, 2.0]), 0, 2);
        assert_eq!(packed.forward(&[], 3), [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
    }
}
