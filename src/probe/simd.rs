//! The probe's two products, hand-written over 8 f64 lanes: dot products of rows with weight
//! vectors (the raw scores) and sums of scaled rows into gradient vectors.
//!
//! The compiler vectorised the plain-Rust versions only 2 lanes wide, with spills (perf
//! annotate), so these use `std::arch`: one 512-bit register per 8 lanes with AVX-512F, two
//! 256-bit ones with AVX2 + FMA, an `[f64; 8]` elsewhere (wasm32 among them). f32 input is
//! widened in registers (exact), so it gives the bits of its f64 widening at half the loads.
//!
//! Every row is summed in the same 8 lanes along d, added pairwise at the end, whichever rows
//! and weight vectors are blocked with it; gradients add rows in row order. So a row's result
//! does not depend on the blocking, and AVX-512 and AVX2 (both fused multiply-adds, same
//! lanes) give the same bits. The portable copy multiplies and adds separately (a fused
//! multiply-add without hardware support is a library call), so its last bits differ.

use super::Element;

/// Lanes of every vector here: fixed, so the sums have one layout on every instruction set.
pub const LANES: usize = 8;

/// 8 f64 lanes in one instruction set's registers. A value of an implementing type exists only
/// where its instructions can run (the x86 ones are built by a feature check), so its methods
/// are safe to call.
pub trait Simd: Copy {
    type V: Copy;
    fn zero(self) -> Self::V;
    fn splat(self, v: f64) -> Self::V;
    fn load(self, p: &[f64; LANES]) -> Self::V;
    fn load_f32(self, p: &[f32; LANES]) -> Self::V;
    fn store(self, v: Self::V, p: &mut [f64; LANES]);
    /// `a · b + c`.
    fn mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// The lanes added pairwise: (l, l + 4), then (l, l + 2), then (0, 1).
    fn sum(self, v: Self::V) -> f64;
}

/// Any target: plain arrays, separate multiply and add.
#[derive(Clone, Copy)]
pub(super) struct Portable;

impl Simd for Portable {
    type V = [f64; LANES];
    #[inline(always)]
    fn zero(self) -> Self::V {
        [0.0; LANES]
    }
    #[inline(always)]
    fn splat(self, v: f64) -> Self::V {
        [v; LANES]
    }
    #[inline(always)]
    fn load(self, p: &[f64; LANES]) -> Self::V {
        *p
    }
    #[inline(always)]
    fn load_f32(self, p: &[f32; LANES]) -> Self::V {
        p.map(f64::from)
    }
    #[inline(always)]
    fn store(self, v: Self::V, p: &mut [f64; LANES]) {
        *p = v;
    }
    #[inline(always)]
    fn mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V {
        std::array::from_fn(|l| a[l] * b[l] + c[l])
    }
    #[inline(always)]
    fn sum(self, v: Self::V) -> f64 {
        let h: [f64; 4] = std::array::from_fn(|l| v[l] + v[l + 4]);
        (h[0] + h[2]) + (h[1] + h[3])
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) use x86::{Avx2, Avx512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{LANES, Simd};
    use std::arch::x86_64::*;

    /// AVX-512F: one zmm register per vector.
    #[derive(Clone, Copy)]
    pub(in crate::probe) struct Avx512(());

    impl Avx512 {
        pub(in crate::probe) fn detect() -> Option<Self> {
            is_x86_feature_detected!("avx512f").then_some(Avx512(()))
        }
    }

    /// Four lanes of AVX2 added as the low and high halves of AVX-512's: the same bits.
    #[inline(always)]
    fn sum256(v: __m256d) -> f64 {
        // SAFETY: only reached through `Avx2` / `Avx512` values, built after a check that
        // the CPU has AVX2 / AVX-512F (either has AVX).
        unsafe {
            let h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd::<1>(v));
            _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)))
        }
    }

    // SAFETY (every block below): an `Avx512` exists only where `detect` found AVX-512F,
    // and the loads and stores go through references to 8 elements.
    impl Simd for Avx512 {
        type V = __m512d;
        #[inline(always)]
        fn zero(self) -> __m512d {
            unsafe { _mm512_setzero_pd() }
        }
        #[inline(always)]
        fn splat(self, v: f64) -> __m512d {
            unsafe { _mm512_set1_pd(v) }
        }
        #[inline(always)]
        fn load(self, p: &[f64; LANES]) -> __m512d {
            unsafe { _mm512_loadu_pd(p.as_ptr()) }
        }
        #[inline(always)]
        fn load_f32(self, p: &[f32; LANES]) -> __m512d {
            unsafe { _mm512_cvtps_pd(_mm256_loadu_ps(p.as_ptr())) }
        }
        #[inline(always)]
        fn store(self, v: __m512d, p: &mut [f64; LANES]) {
            unsafe { _mm512_storeu_pd(p.as_mut_ptr(), v) }
        }
        #[inline(always)]
        fn mul_add(self, a: __m512d, b: __m512d, c: __m512d) -> __m512d {
            unsafe { _mm512_fmadd_pd(a, b, c) }
        }
        #[inline(always)]
        fn sum(self, v: __m512d) -> f64 {
            let h =
                unsafe { _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd::<1>(v)) };
            sum256(h)
        }
    }

    /// AVX2 with FMA: two ymm registers per vector, lanes 0–3 and 4–7.
    #[derive(Clone, Copy)]
    pub(in crate::probe) struct Avx2(());

    impl Avx2 {
        pub(in crate::probe) fn detect() -> Option<Self> {
            (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
                .then_some(Avx2(()))
        }
    }

    // SAFETY (every block below): an `Avx2` exists only where `detect` found AVX2 and FMA,
    // and the loads and stores go through references to 8 elements (two halves of 4).
    impl Simd for Avx2 {
        type V = [__m256d; 2];
        #[inline(always)]
        fn zero(self) -> Self::V {
            unsafe { [_mm256_setzero_pd(); 2] }
        }
        #[inline(always)]
        fn splat(self, v: f64) -> Self::V {
            unsafe { [_mm256_set1_pd(v); 2] }
        }
        #[inline(always)]
        fn load(self, p: &[f64; LANES]) -> Self::V {
            unsafe {
                [
                    _mm256_loadu_pd(p.as_ptr()),
                    _mm256_loadu_pd(p.as_ptr().add(4)),
                ]
            }
        }
        #[inline(always)]
        fn load_f32(self, p: &[f32; LANES]) -> Self::V {
            unsafe {
                let v = _mm256_loadu_ps(p.as_ptr());
                [
                    _mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                    _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)),
                ]
            }
        }
        #[inline(always)]
        fn store(self, v: Self::V, p: &mut [f64; LANES]) {
            unsafe {
                _mm256_storeu_pd(p.as_mut_ptr(), v[0]);
                _mm256_storeu_pd(p.as_mut_ptr().add(4), v[1]);
            }
        }
        #[inline(always)]
        fn mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V {
            unsafe {
                [
                    _mm256_fmadd_pd(a[0], b[0], c[0]),
                    _mm256_fmadd_pd(a[1], b[1], c[1]),
                ]
            }
        }
        #[inline(always)]
        fn sum(self, v: Self::V) -> f64 {
            sum256(unsafe { _mm256_add_pd(v[0], v[1]) })
        }
    }
}

// The kernels below use loops over fixed-size arrays, not `array::map` or closures: those
// are separate functions LLVM may leave un-inlined, compiled without the caller's target
// features, so every intrinsic in them became a call (perf showed it).

/// A row's last `d % LANES` values, zero-padded to a full vector (zeros add nothing).
#[inline(always)]
fn padded<T: Element>(x: &[T]) -> [T; LANES] {
    let mut p = [T::default(); LANES];
    p[..x.len()].copy_from_slice(x);
    p
}

/// `acc[r][c] += xv[r] · w`, with w class c's vector: loaded as it is used, so that only
/// R·K sums, R rows and one weight vector are live (holding all K spilled the sums at K = 9).
#[inline(always)]
fn fma_class<S: Simd, const R: usize, const K: usize>(
    s: S,
    acc: &mut [[S::V; K]; R],
    xv: &[S::V; R],
    w: S::V,
    c: usize,
) {
    for r in 0..R {
        acc[r][c] = s.mul_add(xv[r], w, acc[r][c]);
    }
}

/// `out[r][c] = xs[r] · ws[c]`; every slice is d long.
#[inline(always)]
pub(super) fn dots<S: Simd, T: Element, const R: usize, const K: usize>(
    s: S,
    xs: &[&[T]; R],
    ws: &[&[f64]; K],
) -> [[f64; K]; R] {
    let d = ws[0].len();
    let body = d / LANES;
    let xb = whole(xs, body);
    let wb = whole(ws, body);
    let mut acc = [[s.zero(); K]; R];
    let mut xv = [s.zero(); R];
    for j in 0..body {
        for r in 0..R {
            xv[r] = T::load(s, &xb[r][j]);
        }
        for (c, w) in wb.iter().enumerate() {
            fma_class(s, &mut acc, &xv, s.load(&w[j]), c);
        }
    }
    if !d.is_multiple_of(LANES) {
        let tail = body * LANES;
        for r in 0..R {
            xv[r] = T::load(s, &padded(&xs[r][tail..d]));
        }
        for (c, w) in ws.iter().enumerate() {
            fma_class(s, &mut acc, &xv, s.load(&padded(&w[tail..])), c);
        }
    }
    let mut out = [[0.0; K]; R];
    for r in 0..R {
        for c in 0..K {
            out[r][c] = s.sum(acc[r][c]);
        }
    }
    out
}

/// `g[c·d + 8j ..][..8·P] += Σ_i coef[i·k + c0 + c] · x[i·d + 8j ..][..8·P]` for c < K and
/// the P whole vectors from `j`, adding the rows of `x` (rows of d) in order. The P·K sums stay
/// in registers across the rows: one load and store of `g` per call, none per row. `coef`
/// holds k values per row, `g` the K vectors of d of classes c0..c0 + K.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn add_rows<S: Simd, T: Element, const P: usize, const K: usize>(
    s: S,
    x: &[T],
    d: usize,
    coef: &[f64],
    k: usize,
    c0: usize,
    g: &mut [f64],
    j: usize,
) {
    let mut acc = [[s.zero(); P]; K];
    for c in 0..K {
        let gc = &g[c * d..(c + 1) * d].as_chunks::<LANES>().0[j..j + P];
        for p in 0..P {
            acc[c][p] = s.load(&gc[p]);
        }
    }
    let mut xv = [s.zero(); P];
    for (row, cs) in x.chunks_exact(d).zip(coef.chunks_exact(k)) {
        let xr = &row.as_chunks::<LANES>().0[j..j + P];
        let cs = &cs[c0..c0 + K];
        for p in 0..P {
            xv[p] = T::load(s, &xr[p]);
        }
        for c in 0..K {
            let cv = s.splat(cs[c]);
            for p in 0..P {
                acc[c][p] = s.mul_add(cv, xv[p], acc[c][p]);
            }
        }
    }
    for c in 0..K {
        let gc = &mut g[c * d..(c + 1) * d].as_chunks_mut::<LANES>().0[j..j + P];
        for p in 0..P {
            s.store(acc[c][p], &mut gc[p]);
        }
    }
}

/// `add_rows` for the last `d % LANES` values of each row (zero-padded to a vector), every
/// class of `g` (k vectors of d).
#[inline(always)]
pub(super) fn add_row_tails<S: Simd, T: Element>(
    s: S,
    x: &[T],
    d: usize,
    coef: &[f64],
    k: usize,
    g: &mut [f64],
) {
    let tail = d / LANES * LANES;
    for (c, gc) in g.chunks_exact_mut(d).enumerate() {
        let gt = &mut gc[tail..];
        let mut acc = s.load(&padded(gt));
        for (row, cs) in x.chunks_exact(d).zip(coef.chunks_exact(k)) {
            acc = s.mul_add(s.splat(cs[c]), T::load(s, &padded(&row[tail..])), acc);
        }
        let mut out = [0.0; LANES];
        s.store(acc, &mut out);
        gt.copy_from_slice(&out[..gt.len()]);
    }
}

/// The first `body` whole vectors of each slice, as arrays of exactly `body` (so indexing
/// them below `body` needs no bounds check).
#[inline(always)]
fn whole<'a, T, const N: usize>(xs: &[&'a [T]; N], body: usize) -> [&'a [[T; LANES]]; N] {
    let mut out = [&[][..]; N];
    for (o, x) in out.iter_mut().zip(xs) {
        *o = &x.as_chunks::<LANES>().0[..body];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked kernels against plain f64 loops, at lengths with and without a tail: a
    /// row's result does not depend on its block, and f32 rows give their f64 widening's bits.
    /// Returns every result, for comparing instruction sets.
    fn check<S: Simd>(s: S) -> Vec<u64> {
        let mut bits = Vec::new();
        for d in [1, 7, 8, 13, 64, 67] {
            let x: Vec<f64> = (0..3 * d)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0)
                .collect();
            let w: Vec<f64> = (0..2 * d)
                .map(|i| ((i * 53 % 89) as f64 - 44.0) / 3.0)
                .collect();
            let rows: [&[f64]; 3] = std::array::from_fn(|r| &x[r * d..(r + 1) * d]);
            let ws: [&[f64]; 2] = [&w[..d], &w[d..]];
            let got = dots(s, &rows, &ws);
            for (r, row) in rows.iter().enumerate() {
                for (c, w) in ws.iter().enumerate() {
                    let want: f64 = row.iter().zip(*w).map(|(a, b)| a * b).sum();
                    assert!(
                        (got[r][c] - want).abs() <= 1e-9 * (1.0 + want.abs()),
                        "d {d}"
                    );
                    assert_eq!(dots(s, &[*row], &[*w])[0][0].to_bits(), got[r][c].to_bits());
                    bits.push(got[r][c].to_bits());
                }
            }
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let x64: Vec<f64> = x32.iter().map(|&v| f64::from(v)).collect();
            let r32: [&[f32]; 3] = std::array::from_fn(|r| &x32[r * d..(r + 1) * d]);
            let r64: [&[f64]; 3] = std::array::from_fn(|r| &x64[r * d..(r + 1) * d]);
            assert_eq!(dots(s, &r32, &ws), dots(s, &r64, &ws));

            // 3 rows × 2 classes of coefficients.
            let cs = [0.5, -2.0, 1.25, 3.0, -0.75, 0.125];
            let body = d / LANES;
            // Both classes and two vectors at a time where d has them, the tails padded.
            fn blocked<S: Simd, T: Element>(s: S, x: &[T], d: usize, cs: &[f64], g: &mut [f64]) {
                let body = d / LANES;
                for j in (0..body / 2 * 2).step_by(2) {
                    add_rows::<_, _, 2, 2>(s, x, d, cs, 2, 0, g, j);
                }
                for j in body / 2 * 2..body {
                    add_rows::<_, _, 1, 2>(s, x, d, cs, 2, 0, g, j);
                }
                add_row_tails(s, x, d, cs, 2, g);
            }
            let mut g = w.clone();
            blocked(s, &x, d, &cs, &mut g);
            // One row, class and vector at a time, in order: the same bits as the blocks.
            let mut one = w.clone();
            for r in 0..3 {
                let (xr, cr) = (&x[r * d..(r + 1) * d], &cs[r * 2..r * 2 + 2]);
                for c in 0..2 {
                    for j in 0..body {
                        add_rows::<_, _, 1, 1>(s, xr, d, cr, 2, c, &mut one[c * d..(c + 1) * d], j);
                    }
                }
                add_row_tails(s, xr, d, cr, 2, &mut one);
            }
            assert_eq!(g, one, "d {d}");
            let (mut g32, mut g64) = (w.clone(), w.clone());
            blocked(s, &x32, d, &cs, &mut g32);
            blocked(s, &x64, d, &cs, &mut g64);
            assert_eq!(g32, g64, "d {d}");
            for j in 0..2 * d {
                let (c, jj) = (j / d, j % d);
                let want = w[j] + (0..3).map(|r| cs[r * 2 + c] * x[r * d + jj]).sum::<f64>();
                assert!((g[j] - want).abs() <= 1e-9 * (1.0 + want.abs()), "d {d}");
            }
            bits.extend(g.iter().map(|v| v.to_bits()));
        }
        bits
    }

    #[test]
    fn kernels_match_plain_loops() {
        check(Portable);
        #[cfg(target_arch = "x86_64")]
        {
            let wide = Avx512::detect().map(check);
            let avx2 = Avx2::detect().map(check);
            // Both fuse the multiply-adds over the same 8 lanes.
            if let (Some(a), Some(b)) = (wide, avx2) {
                assert_eq!(a, b, "AVX-512 and AVX2 differ");
            }
        }
    }
}
