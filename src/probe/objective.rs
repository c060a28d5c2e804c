//! sklearn's `LinearModelLoss.loss_gradient` for `HalfBinomialLoss` / `HalfMultinomialLoss`:
//! mean log-loss + `l2/2 · ||W||²` (intercepts unpenalised), with `l2 = 1 / (C n)`.
//!
//! Coefficients use sklearn's flat layout, `(d + 1) × k` row-major: row j holds feature j's
//! weight for each of the k outputs (k = 1 for binary, n_classes otherwise; sklearn's
//! `ravel(order="F")` of its `(n_classes, d + 1)` array), the last row the intercepts.
//!
//! X is read in its own precision (f32 or f64) and every product is taken in f64: f32 → f64 is
//! exact, so f32 storage gives the f64 arithmetic of sklearn's f64 copy at half the traffic.
//!
//! One evaluation reads X once: rows go in fixed chunks, each chunk's raw predictions, loss
//! and gradient contribution are computed while it is in cache. Chunks are grouped in a
//! fixed number of contiguous shards whose partial sums are added in shard order, so the
//! result does not depend on how many threads ran the shards (rayon's, when there are any).

use super::Element;
use super::simd::{self, LANES, Portable, Simd};
use super::vmath;
use rayon::prelude::*;

/// Shards per evaluation: fixed, so that sums do not depend on the machine's core count.
const SHARDS: usize = 8;
/// Bytes of X per chunk: small enough to stay in L2 between the two passes.
const CHUNK_BYTES: usize = 256 * 1024;
/// Below this many multiply-adds per evaluation, handing shards to the pool costs more
/// than it saves.
pub(super) const PARALLEL_MIN_WORK: usize = 1 << 17;
/// Most classes the products take in one pass over a chunk: the blocks below keep their
/// sums, rows and weights in AVX-512's 32 registers (AVX2 spills some).
const CLASSES: usize = 12;

pub(crate) struct Objective<'a, T> {
    /// n × d, row-major.
    x: &'a [T],
    d: usize,
    /// Class index of each row, in 0..n_classes.
    y: &'a [usize],
    /// Columns of the coefficient matrix: 1 for binary, n_classes otherwise.
    k: usize,
    l2: f64,
    chunk_rows: usize,
}

/// Loss sum, gradient of the weights (k × d, one vector per output, as `loss_grad`'s
/// transposed weights) and of the intercepts (k) over some rows.
struct Partial {
    loss: f64,
    gw: Vec<f64>,
    gb: Vec<f64>,
}

impl<'a, T: Element> Objective<'a, T> {
    /// `x` holds n rows of `d` values, row-major; `n_classes ≥ 2`.
    pub(crate) fn new(x: &'a [T], d: usize, y: &'a [usize], n_classes: usize, c: f64) -> Self {
        let n = y.len();
        debug_assert_eq!(x.len(), n * d);
        let k = if n_classes == 2 { 1 } else { n_classes };
        // Sized as f64 rows whatever T is: the same chunks, so the same shards and sums, make
        // f32 and f64 input give the same bits.
        let chunk_rows = (CHUNK_BYTES / (size_of::<f64>() * d.max(1))).clamp(8, 1024);
        Objective {
            x,
            d,
            y,
            k,
            l2: 1.0 / (c * n as f64),
            chunk_rows,
        }
    }

    pub(crate) fn n_params(&self) -> usize {
        (self.d + 1) * self.k
    }

    /// The objective at `coef`; writes its gradient into `grad`.
    pub(crate) fn loss_grad(&self, coef: &[f64], grad: &mut [f64]) -> f64 {
        let (n, d, k) = (self.y.len(), self.d, self.k);
        let (w, b) = coef.split_at(d * k);
        // One contiguous weight vector per output, for the row products.
        let wt: Vec<f64> = (0..k * d).map(|i| w[(i % d) * k + i / d]).collect();
        let n_chunks = n.div_ceil(self.chunk_rows);
        let per_shard = n_chunks.div_ceil(SHARDS).max(1);
        let shard_rows: Vec<(usize, usize)> = (0..SHARDS)
            .map(|s| {
                let lo = (s * per_shard * self.chunk_rows).min(n);
                let hi = ((s + 1) * per_shard * self.chunk_rows).min(n);
                (lo, hi)
            })
            .filter(|(lo, hi)| lo < hi)
            .collect();
        // Both collect in shard order, whichever thread ran a shard.
        let parts: Vec<Partial> = if n * d * k < PARALLEL_MIN_WORK {
            shard_rows
                .iter()
                .map(|&(lo, hi)| self.shard(lo, hi, &wt, b))
                .collect()
        } else {
            shard_rows
                .par_iter()
                .map(|&(lo, hi)| self.shard(lo, hi, &wt, b))
                .collect()
        };

        let mut loss = 0.0;
        let mut gw = vec![0.0; d * k];
        let mut gb = vec![0.0; k];
        for p in &parts {
            loss += p.loss;
            gw.iter_mut().zip(&p.gw).for_each(|(a, b)| *a += b);
            gb.iter_mut().zip(&p.gb).for_each(|(a, b)| *a += b);
        }
        let norm2: f64 = w.iter().map(|v| v * v).sum();
        let (gw_out, gb_out) = grad.split_at_mut(d * k);
        for (i, (o, w)) in gw_out.iter_mut().zip(w).enumerate() {
            *o = gw[(i % k) * d + i / k] + self.l2 * w;
        }
        gb_out.copy_from_slice(&gb);
        loss / n as f64 + 0.5 * self.l2 * norm2
    }

    /// Rows lo..hi, chunk by chunk, in the widest vector instructions the CPU has (AVX-512
    /// and AVX2 give the same bits; see `simd`). `wt` holds the k weight vectors.
    fn shard(&self, lo: usize, hi: usize, wt: &[f64], b: &[f64]) -> Partial {
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(s) = simd::Avx512::detect() {
                // SAFETY: `s` exists, so the CPU has AVX-512F.
                return unsafe { self.shard_avx512(s, lo, hi, wt, b) };
            }
            if let Some(s) = simd::Avx2::detect() {
                // SAFETY: `s` exists, so the CPU has AVX2 and FMA.
                return unsafe { self.shard_avx2(s, lo, hi, wt, b) };
            }
        }
        self.shard_body(Portable, lo, hi, wt, b)
    }

    /// The whole shard compiled for AVX-512, so the kernels' intrinsics inline.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn shard_avx512(
        &self,
        s: simd::Avx512,
        lo: usize,
        hi: usize,
        wt: &[f64],
        b: &[f64],
    ) -> Partial {
        self.shard_body(s, lo, hi, wt, b)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn shard_avx2(&self, s: simd::Avx2, lo: usize, hi: usize, wt: &[f64], b: &[f64]) -> Partial {
        self.shard_body(s, lo, hi, wt, b)
    }

    #[inline(always)]
    fn shard_body<S: Simd>(&self, s: S, lo: usize, hi: usize, wt: &[f64], b: &[f64]) -> Partial {
        let (d, k) = (self.d, self.k);
        let mut part = Partial {
            loss: 0.0,
            gw: vec![0.0; d * k],
            gb: vec![0.0; k],
        };
        let inv_n = 1.0 / self.y.len() as f64;
        let mut raw = vec![0.0; self.chunk_rows * k];
        let mut start = lo;
        while start < hi {
            let end = (start + self.chunk_rows).min(hi);
            let xc = &self.x[start * d..end * d];
            let yc = &self.y[start..end];
            let raw = &mut raw[..(end - start) * k];
            scores(s, xc, d, wt, b, raw);
            if k == 1 {
                part.loss += binomial(raw, yc, inv_n);
                // sklearn adds the pointwise gradients row by row.
                part.gb[0] = raw.iter().fold(part.gb[0], |a, v| a + v);
            } else {
                // sklearn divides the pointwise gradient by n before multiplying by X.
                part.loss += multinomial(raw, yc, inv_n, &mut part.gb);
            }
            gradient(s, xc, d, raw, &mut part.gw);
            start = end;
        }
        part
    }
}

// No closures or `array::from_fn` in the blocks: see the note in `simd`.

/// `N` consecutive pieces of `len` from the start of `v`.
#[inline(always)]
fn pieces<T, const N: usize>(v: &[T], len: usize) -> [&[T]; N] {
    let mut out = [&v[..0]; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = &v[i * len..(i + 1) * len];
    }
    out
}

/// The classes of one block of the products: k ≤ `CLASSES` in one, more split evenly (so
/// each row is read once per block, not once per few classes).
#[inline(always)]
fn class_blocks(k: usize) -> impl Iterator<Item = (usize, usize)> {
    let blocks = k.div_ceil(CLASSES);
    (0..blocks).map(move |i| (i * k / blocks, (i + 1) * k / blocks))
}

/// `raw[i·k + c] = x_i · wt_c + b_c` for the chunk's rows (`wt` holds k vectors of d).
#[inline(always)]
fn scores<S: Simd, T: Element>(s: S, x: &[T], d: usize, wt: &[f64], b: &[f64], raw: &mut [f64]) {
    /// Classes c0..c0 + K, R rows at a time: R·K sums, R rows and K weight vectors in
    /// registers.
    #[inline(always)]
    fn block<S: Simd, T: Element, const R: usize, const K: usize>(
        s: S,
        x: &[T],
        d: usize,
        wt: &[f64],
        b: &[f64],
        c0: usize,
        raw: &mut [f64],
    ) {
        #[inline(always)]
        fn put<const K: usize>(raw: &mut [f64], v: &[f64; K], b: &[f64]) {
            for c in 0..K {
                raw[c] = v[c] + b[c];
            }
        }
        let k = b.len();
        let (ws, b) = (pieces::<_, K>(&wt[c0 * d..], d), &b[c0..c0 + K]);
        let rows = x.len() / d;
        let full = rows / R * R;
        for i in (0..full).step_by(R) {
            let out = simd::dots(s, &pieces::<_, R>(&x[i * d..], d), &ws);
            for r in 0..R {
                put(&mut raw[(i + r) * k + c0..], &out[r], b);
            }
        }
        for i in full..rows {
            let out = simd::dots(s, &[&x[i * d..(i + 1) * d]], &ws);
            put(&mut raw[i * k + c0..], &out[0], b);
        }
    }
    for (c0, c1) in class_blocks(b.len()) {
        match c1 - c0 {
            1 => block::<S, T, 8, 1>(s, x, d, wt, b, c0, raw),
            2 => block::<S, T, 4, 2>(s, x, d, wt, b, c0, raw),
            3 => block::<S, T, 4, 3>(s, x, d, wt, b, c0, raw),
            4 => block::<S, T, 4, 4>(s, x, d, wt, b, c0, raw),
            5 => block::<S, T, 3, 5>(s, x, d, wt, b, c0, raw),
            6 => block::<S, T, 3, 6>(s, x, d, wt, b, c0, raw),
            7 => block::<S, T, 2, 7>(s, x, d, wt, b, c0, raw),
            8 => block::<S, T, 2, 8>(s, x, d, wt, b, c0, raw),
            9 => block::<S, T, 2, 9>(s, x, d, wt, b, c0, raw),
            10 => block::<S, T, 2, 10>(s, x, d, wt, b, c0, raw),
            11 => block::<S, T, 1, 11>(s, x, d, wt, b, c0, raw),
            _ => block::<S, T, 1, CLASSES>(s, x, d, wt, b, c0, raw),
        }
    }
}

/// `g_c += Σ_i raw[i·k + c] · x_i` for the chunk's rows in order (`g` holds k vectors of d).
#[inline(always)]
fn gradient<S: Simd, T: Element>(s: S, x: &[T], d: usize, raw: &[f64], g: &mut [f64]) {
    /// Classes c0..c0 + K, P vectors of d at a time (the last few one at a time).
    #[inline(always)]
    fn block<S: Simd, T: Element, const P: usize, const K: usize>(
        s: S,
        x: &[T],
        d: usize,
        raw: &[f64],
        g: &mut [f64],
        c0: usize,
    ) {
        let k = g.len() / d;
        let gb = &mut g[c0 * d..(c0 + K) * d];
        let body = d / LANES;
        let full = body / P * P;
        for j in (0..full).step_by(P) {
            simd::add_rows::<S, T, P, K>(s, x, d, raw, k, c0, gb, j);
        }
        for j in full..body {
            simd::add_rows::<S, T, 1, K>(s, x, d, raw, k, c0, gb, j);
        }
    }
    let k = g.len() / d;
    for (c0, c1) in class_blocks(k) {
        match c1 - c0 {
            1 => block::<S, T, 8, 1>(s, x, d, raw, g, c0),
            2 => block::<S, T, 8, 2>(s, x, d, raw, g, c0),
            3 => block::<S, T, 4, 3>(s, x, d, raw, g, c0),
            4 => block::<S, T, 4, 4>(s, x, d, raw, g, c0),
            5 => block::<S, T, 4, 5>(s, x, d, raw, g, c0),
            6 => block::<S, T, 4, 6>(s, x, d, raw, g, c0),
            7 => block::<S, T, 2, 7>(s, x, d, raw, g, c0),
            8 => block::<S, T, 2, 8>(s, x, d, raw, g, c0),
            9 => block::<S, T, 2, 9>(s, x, d, raw, g, c0),
            10 => block::<S, T, 2, 10>(s, x, d, raw, g, c0),
            11 => block::<S, T, 2, 11>(s, x, d, raw, g, c0),
            _ => block::<S, T, 2, CLASSES>(s, x, d, raw, g, c0),
        }
    }
    if !d.is_multiple_of(LANES) {
        simd::add_row_tails(s, x, d, raw, k, g);
    }
}

/// `HalfBinomialLoss` over rows: returns the loss sum, overwrites `raw` with the gradient
/// divided by n (sklearn's `closs_grad_half_binomial`, its four branches as selects, in
/// groups of `LANES` rows so they vectorise).
#[inline(always)]
fn binomial(raw: &mut [f64], y: &[usize], inv_n: f64) -> f64 {
    let targets = |y: &[usize]| {
        let mut t = [0.0; LANES];
        t.iter_mut()
            .zip(y)
            .for_each(|(t, &y)| *t = f64::from(u8::from(y == 1)));
        t
    };
    let (groups, rest) = raw.as_chunks_mut::<LANES>();
    let mut loss = 0.0;
    for (r, y) in groups.iter_mut().zip(y.chunks_exact(LANES)) {
        let l = binomial_lanes(r, &targets(y), inv_n);
        loss = l.iter().fold(loss, |a, v| a + v);
    }
    // The last rows, padded to a full group (the padding's results are dropped).
    let mut padded = [0.0; LANES];
    padded[..rest.len()].copy_from_slice(rest);
    let l = binomial_lanes(&mut padded, &targets(&y[y.len() - rest.len()..]), inv_n);
    rest.copy_from_slice(&padded[..rest.len()]);
    l[..rest.len()].iter().fold(loss, |a, v| a + v)
}

#[inline(always)]
fn binomial_lanes(raw: &mut [f64; LANES], yt: &[f64; LANES], inv_n: f64) -> [f64; LANES] {
    let mut loss = [0.0; LANES];
    for l in 0..LANES {
        let (r, yt) = (raw[l], yt[l]);
        let low = r <= -2.0;
        let e = vmath::exp(if low { r } else { -r });
        // log1p(e) ≈ e past -37 and 18, where sklearn skips it.
        let lp = if r <= -37.0 || r > 18.0 {
            e
        } else {
            vmath::log1p(e)
        };
        loss[l] = if low {
            lp - yt * r
        } else {
            lp + (1.0 - yt) * r
        };
        let g = if r <= -37.0 {
            e - yt
        } else if low {
            ((1.0 - yt) * e - yt) / (1.0 + e)
        } else {
            ((1.0 - yt) - yt * e) / (1.0 + e)
        };
        raw[l] = g * inv_n;
    }
    loss
}

/// `HalfMultinomialLoss` over rows (`raw` holds k per row): returns the loss sum, overwrites
/// `raw` with `(softmax(raw) - onehot(y)) / n` and adds that into `gb` (sklearn's
/// `sum_exp_minus_max` order of operations). Rows go `LANES` at a time, one per lane, so the
/// branch-free exp and log vectorise; a libm call per class and row was a fifth of a fit.
#[inline(always)]
fn multinomial(raw: &mut [f64], y: &[usize], inv_n: f64, gb: &mut [f64]) -> f64 {
    let k = gb.len();
    let mut t = vec![[0.0; LANES]; k];
    let mut loss = 0.0;
    for (rows, y) in raw.chunks_mut(LANES * k).zip(y.chunks(LANES)) {
        // Lanes past the last row compute on zeros; their results are dropped.
        let mut yl = [0; LANES];
        yl[..y.len()].copy_from_slice(y);
        for (c, t) in t.iter_mut().enumerate() {
            for (l, t) in t.iter_mut().enumerate() {
                *t = rows.get(l * k + c).copied().unwrap_or_default();
            }
        }
        let lanes = multinomial_lanes(&mut t, &yl);
        for (l, row) in rows.chunks_exact_mut(k).enumerate() {
            loss += lanes[l];
            for ((v, g), t) in row.iter_mut().zip(gb.iter_mut()).zip(&t) {
                *v = t[l] * inv_n;
                *g += *v;
            }
        }
    }
    loss
}

/// One row per lane: `t[c][l]` is class c's raw score in row l, overwritten with its
/// `softmax - onehot`; returns each row's `logsumexp - raw[y]`.
#[inline(always)]
fn multinomial_lanes(t: &mut [[f64; LANES]], y: &[usize; LANES]) -> [f64; LANES] {
    let mut ry = [0.0; LANES];
    for (l, r) in ry.iter_mut().enumerate() {
        *r = t[y[l]][l];
    }
    let mut max = t[0];
    for tc in &t[1..] {
        for l in 0..LANES {
            max[l] = if max[l] < tc[l] { tc[l] } else { max[l] };
        }
    }
    let mut sum = [0.0; LANES];
    for tc in t.iter_mut() {
        for l in 0..LANES {
            tc[l] = vmath::exp(tc[l] - max[l]);
            sum[l] += tc[l];
        }
    }
    let mut loss = [0.0; LANES];
    for l in 0..LANES {
        // sum ≥ 1 (the maximum's term is 1), so sum - 1 is exact and log1p gives ln(sum).
        loss[l] = vmath::log1p(sum[l] - 1.0) + max[l] - ry[l];
    }
    for (c, tc) in t.iter_mut().enumerate() {
        for l in 0..LANES {
            tc[l] = tc[l] / sum[l] - f64::from(u8::from(y[l] == c));
        }
    }
    loss
}
