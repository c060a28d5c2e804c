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
use super::vmath;
use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

/// Shards per evaluation: fixed, so that sums do not depend on the machine's core count.
const SHARDS: usize = 8;
/// Bytes of X per chunk: small enough to stay in L2 between the two passes.
const CHUNK_BYTES: usize = 256 * 1024;
/// Below this many multiply-adds per evaluation, handing shards to the pool costs more
/// than it saves.
pub(super) const PARALLEL_MIN_WORK: usize = 1 << 17;
/// Lanes of the hand-written passes: fixed (not the machine's vector width), so every
/// instruction set adds in the same order and gives the same bits.
const LANES: usize = 8;
/// Partial sums of a dot product: enough independent add chains to hide the add latency.
const DOT_LANES: usize = 32;
/// Rows the gradient pass adds at once (one load and store of g per group).
const ROWS: usize = 4;

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

/// Loss sum, gradient of the weights (d × k, flat) and of the intercepts (k) over some rows.
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
        // Sized as f64 rows whatever T is: multiclass chunks are converted to f64, and the
        // same chunks (so the same sums) make f32 and f64 input give the same bits.
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
                .map(|&(lo, hi)| self.shard(lo, hi, w, b))
                .collect()
        } else {
            shard_rows
                .par_iter()
                .map(|&(lo, hi)| self.shard(lo, hi, w, b))
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
        for ((o, g), w) in gw_out.iter_mut().zip(&gw).zip(w) {
            *o = g + self.l2 * w;
        }
        gb_out.copy_from_slice(&gb);
        loss / n as f64 + 0.5 * self.l2 * norm2
    }

    /// Rows lo..hi, chunk by chunk, in the widest vector instructions the CPU has (the
    /// arithmetic, and so the result, is the same in each).
    fn shard(&self, lo: usize, hi: usize, w: &[f64], b: &[f64]) -> Partial {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has the features this copy was compiled for.
                return unsafe { self.shard_avx512(lo, hi, w, b) };
            }
            if is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                return unsafe { self.shard_avx2(lo, hi, w, b) };
            }
        }
        self.shard_body(lo, hi, w, b)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn shard_avx512(&self, lo: usize, hi: usize, w: &[f64], b: &[f64]) -> Partial {
        self.shard_body(lo, hi, w, b)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn shard_avx2(&self, lo: usize, hi: usize, w: &[f64], b: &[f64]) -> Partial {
        self.shard_body(lo, hi, w, b)
    }

    #[inline(always)]
    fn shard_body(&self, lo: usize, hi: usize, w: &[f64], b: &[f64]) -> Partial {
        let (d, k) = (self.d, self.k);
        let mut part = Partial {
            loss: 0.0,
            gw: vec![0.0; d * k],
            gb: vec![0.0; k],
        };
        let inv_n = 1.0 / self.y.len() as f64;
        let mut raw = vec![0.0; self.chunk_rows * k];
        let mut scratch = Vec::new();
        let mut start = lo;
        while start < hi {
            let end = (start + self.chunk_rows).min(hi);
            let xc = &self.x[start * d..end * d];
            let yc = &self.y[start..end];
            let raw = &mut raw[..(end - start) * k];
            if k == 1 {
                binary_chunk(xc, d, yc, w, b[0], inv_n, raw, &mut part);
            } else {
                let xc = T::as_f64(xc, end - start, d, &mut scratch);
                multinomial_chunk(xc, yc, w, b, inv_n, raw, &mut part);
            }
            start = end;
        }
        part
    }
}

/// One chunk of a binary problem in three fused passes over its rows (raw scores, the loss
/// and its derivative, the gradient), each row read from cache after the first.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn binary_chunk<T: Element>(
    x: &[T],
    d: usize,
    y: &[usize],
    w: &[f64],
    b: f64,
    inv_n: f64,
    raw: &mut [f64],
    part: &mut Partial,
) {
    let n = y.len();
    let row = |i: usize| &x[i * d..(i + 1) * d];
    for (r, xi) in raw.iter_mut().zip(x.chunks_exact(d)) {
        *r = dot(xi, w) + b;
    }
    part.loss += binomial(raw, y, inv_n);
    // sklearn adds the pointwise gradients row by row.
    part.gb[0] = raw.iter().fold(part.gb[0], |a, v| a + v);
    let full = n / ROWS * ROWS;
    for i in (0..full).step_by(ROWS) {
        let rows = std::array::from_fn::<_, ROWS, _>(|r| row(i + r));
        axpy_rows(&mut part.gw, &raw[i..i + ROWS], rows);
    }
    for i in full..n {
        axpy_rows(&mut part.gw, &raw[i..=i], [row(i)]);
    }
}

/// `x · w` with `DOT_LANES` partial sums (independent add chains along the row), added
/// pairwise at the end.
#[inline(always)]
fn dot<T: Element>(x: &[T], w: &[f64]) -> f64 {
    let (xb, xt) = x.as_chunks::<DOT_LANES>();
    let (wb, wt) = w.as_chunks::<DOT_LANES>();
    let mut a = [0.0f64; DOT_LANES];
    for (xl, wl) in xb.iter().zip(wb) {
        for l in 0..DOT_LANES {
            a[l] += xl[l].into() * wl[l];
        }
    }
    let mut half = DOT_LANES;
    while half > 1 {
        half /= 2;
        for l in 0..half {
            a[l] += a[l + half];
        }
    }
    xt.iter().zip(wt).fold(a[0], |s, (x, w)| s + (*x).into() * w)
}

/// `g += c[i] · rows[i]`, the rows in order: the same sums as one row at a time, with one
/// load and store of g per group of rows.
#[inline(always)]
fn axpy_rows<T: Element, const R: usize>(g: &mut [f64], c: &[f64], rows: [&[T]; R]) {
    let (gb, gt) = g.as_chunks_mut::<LANES>();
    let body = gb.len();
    let rl = rows.map(|r| &r.as_chunks::<LANES>().0[..body]);
    for (j, g) in gb.iter_mut().enumerate() {
        let mut v = *g;
        for (r, c) in rl.iter().zip(c) {
            let xl = &r[j];
            for l in 0..LANES {
                v[l] += c * xl[l].into();
            }
        }
        *g = v;
    }
    for (t, g) in gt.iter_mut().enumerate() {
        for (row, c) in rows.iter().zip(c) {
            *g += c * row[body * LANES + t].into();
        }
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
        loss[l] = if low { lp - yt * r } else { lp + (1.0 - yt) * r };
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

/// One chunk of a multiclass problem: raw scores and the gradient as matrix products.
fn multinomial_chunk(
    xc: ArrayView2<f64>,
    y: &[usize],
    w: &[f64],
    b: &[f64],
    inv_n: f64,
    raw: &mut [f64],
    part: &mut Partial,
) {
    let (rows, d) = xc.dim();
    let k = b.len();
    // Shapes by construction: w is d × k, raw and the gradient are sized from the same d, k.
    let shape = "the probe's buffers are sized from d and k";
    let w = ArrayView2::from_shape((d, k), w).expect(shape);
    let mut r = ArrayViewMut2::from_shape((rows, k), raw).expect(shape);
    general_mat_mul(1.0, &xc, &w, 0.0, &mut r);
    for (row, &yi) in r.axis_iter_mut(Axis(0)).zip(y) {
        let row = row.into_slice().expect("raw rows are contiguous");
        row.iter_mut().zip(b).for_each(|(v, b)| *v += b);
        part.loss += multinomial(row, yi);
        // sklearn divides the pointwise gradient by n before multiplying by X.
        row.iter_mut().for_each(|v| *v *= inv_n);
        part.gb.iter_mut().zip(row.iter()).for_each(|(a, v)| *a += v);
    }
    let mut gw = ArrayViewMut2::from_shape((d, k), &mut part.gw[..]).expect(shape);
    general_mat_mul(1.0, &xc.t(), &r, 1.0, &mut gw);
}

/// `HalfMultinomialLoss` at one row: returns `logsumexp(raw) - raw[y]`, overwrites `raw`
/// with `softmax(raw) - onehot(y)` (sklearn's `sum_exp_minus_max` order of operations).
fn multinomial(raw: &mut [f64], yi: usize) -> f64 {
    let ry = raw[yi];
    let max = raw
        .iter()
        .skip(1)
        .fold(raw[0], |m, &v| if m < v { v } else { m });
    let mut sum = 0.0;
    for v in raw.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let loss = sum.ln() + max - ry;
    for (j, v) in raw.iter_mut().enumerate() {
        *v = *v / sum - if j == yi { 1.0 } else { 0.0 };
    }
    loss
}
