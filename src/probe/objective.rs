//! sklearn's `LinearModelLoss.loss_gradient` for `HalfBinomialLoss` / `HalfMultinomialLoss`:
//! mean log-loss + `l2/2 · ||W||²` (intercepts unpenalised), with `l2 = 1 / (C n)`.
//!
//! Coefficients use sklearn's flat layout, `(d + 1) × k` row-major: row j holds feature j's
//! weight for each of the k outputs (k = 1 for binary, n_classes otherwise; sklearn's
//! `ravel(order="F")` of its `(n_classes, d + 1)` array), the last row the intercepts.
//!
//! One evaluation reads X once: rows go in fixed chunks, each chunk's raw predictions, loss
//! and gradient contribution are computed while it is in cache. Chunks are grouped in a
//! fixed number of contiguous shards whose partial sums are added in shard order, so the
//! result does not depend on how many threads ran the shards.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2, Axis, s};

/// Shards per evaluation: fixed, so that sums do not depend on the machine's core count.
const SHARDS: usize = 8;
/// Bytes of X per chunk: small enough to stay in L2 between the two products.
const CHUNK_BYTES: usize = 256 * 1024;
/// Below this many multiply-adds per evaluation, threads cost more than they save.
#[cfg(not(target_arch = "wasm32"))]
const PARALLEL_MIN_WORK: usize = 1 << 20;

pub(crate) struct Objective<'a> {
    x: ArrayView2<'a, f64>,
    /// Class index of each row, in 0..n_classes.
    y: &'a [usize],
    /// Columns of the coefficient matrix: 1 for binary, n_classes otherwise.
    k: usize,
    l2: f64,
    chunk_rows: usize,
}

/// Loss sum, gradient of the weights (d × k) and of the intercepts (k) over some rows.
struct Partial {
    loss: f64,
    gw: Array2<f64>,
    gb: Vec<f64>,
}

impl<'a> Objective<'a> {
    /// `x` must be in standard (row-major) layout; `n_classes ≥ 2`.
    pub(crate) fn new(x: ArrayView2<'a, f64>, y: &'a [usize], n_classes: usize, c: f64) -> Self {
        let (n, d) = x.dim();
        let k = if n_classes == 2 { 1 } else { n_classes };
        let chunk_rows = (CHUNK_BYTES / (8 * d.max(1))).clamp(8, 1024);
        Objective {
            x,
            y,
            k,
            l2: 1.0 / (c * n as f64),
            chunk_rows,
        }
    }

    pub(crate) fn n_params(&self) -> usize {
        (self.x.ncols() + 1) * self.k
    }

    /// The objective at `coef`; writes its gradient into `grad`.
    pub(crate) fn loss_grad(&self, coef: &[f64], grad: &mut [f64]) -> f64 {
        let (n, d) = self.x.dim();
        let k = self.k;
        let w = ArrayView2::from_shape((d, k), &coef[..d * k]).expect("coef has (d + 1)·k entries");
        let b = &coef[d * k..];
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
        let parts = self.run_shards(&shard_rows, w, b);

        let mut loss = 0.0;
        let mut gw = Array2::<f64>::zeros((d, k));
        let mut gb = vec![0.0; k];
        for p in &parts {
            loss += p.loss;
            gw += &p.gw;
            gb.iter_mut().zip(&p.gb).for_each(|(a, b)| *a += b);
        }
        let norm2: f64 = w.iter().map(|v| v * v).sum();
        let (gw_out, gb_out) = grad.split_at_mut(d * k);
        for ((o, g), w) in gw_out.iter_mut().zip(gw.iter()).zip(w.iter()) {
            *o = g + self.l2 * w;
        }
        gb_out.copy_from_slice(&gb);
        loss / n as f64 + 0.5 * self.l2 * norm2
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn run_shards(&self, shards: &[(usize, usize)], w: ArrayView2<f64>, b: &[f64]) -> Vec<Partial> {
        let (n, d) = self.x.dim();
        let threads = std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(shards.len());
        if threads <= 1 || n * d * self.k < PARALLEL_MIN_WORK {
            return shards
                .iter()
                .map(|&(lo, hi)| self.shard(lo, hi, w, b))
                .collect();
        }
        // Shard i goes to thread i % threads; results are put back in shard order.
        let mut out: Vec<Option<Partial>> = (0..shards.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    scope.spawn(move || {
                        shards
                            .iter()
                            .enumerate()
                            .skip(t)
                            .step_by(threads)
                            .map(|(i, &(lo, hi))| (i, self.shard(lo, hi, w, b)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for h in handles {
                // A panic in a shard is a bug in this module: re-raise it where it happened.
                let done = h.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
                for (i, p) in done {
                    out[i] = Some(p);
                }
            }
        });
        out.into_iter().flatten().collect()
    }

    #[cfg(target_arch = "wasm32")]
    fn run_shards(&self, shards: &[(usize, usize)], w: ArrayView2<f64>, b: &[f64]) -> Vec<Partial> {
        shards
            .iter()
            .map(|&(lo, hi)| self.shard(lo, hi, w, b))
            .collect()
    }

    /// Rows lo..hi, chunk by chunk.
    fn shard(&self, lo: usize, hi: usize, w: ArrayView2<f64>, b: &[f64]) -> Partial {
        let d = self.x.ncols();
        let k = self.k;
        let mut part = Partial {
            loss: 0.0,
            gw: Array2::zeros((d, k)),
            gb: vec![0.0; k],
        };
        let inv_n = 1.0 / self.x.nrows() as f64;
        let mut raw = Array2::<f64>::zeros((self.chunk_rows, k));
        let mut start = lo;
        while start < hi {
            let end = (start + self.chunk_rows).min(hi);
            let xc = self.x.slice(s![start..end, ..]);
            let mut r = raw.slice_mut(s![..end - start, ..]);
            general_mat_mul(1.0, &xc, &w, 0.0, &mut r);
            for (row, &yi) in r.axis_iter_mut(Axis(0)).zip(&self.y[start..end]) {
                let row = row.into_slice().expect("raw rows are contiguous");
                row.iter_mut().zip(b).for_each(|(v, b)| *v += b);
                part.loss += if k == 1 {
                    binomial(row, yi)
                } else {
                    multinomial(row, yi)
                };
                // sklearn divides the pointwise gradient by n before multiplying by X.
                row.iter_mut().for_each(|v| *v *= inv_n);
                part.gb
                    .iter_mut()
                    .zip(row.iter())
                    .for_each(|(a, v)| *a += v);
            }
            general_mat_mul(1.0, &xc.t(), &r, 1.0, &mut part.gw);
            start = end;
        }
        part
    }
}

/// `HalfBinomialLoss` at one row: returns the loss, overwrites `raw[0]` with its gradient
/// (sklearn's `closs_grad_half_binomial`, branch for branch).
fn binomial(raw: &mut [f64], yi: usize) -> f64 {
    let r = raw[0];
    let yt = if yi == 1 { 1.0 } else { 0.0 };
    let (loss, grad);
    if r <= -37.0 {
        let e = r.exp();
        loss = e - yt * r;
        grad = e - yt;
    } else if r <= -2.0 {
        let e = r.exp();
        loss = e.ln_1p() - yt * r;
        grad = ((1.0 - yt) * e - yt) / (1.0 + e);
    } else if r <= 18.0 {
        let e = (-r).exp();
        loss = e.ln_1p() + (1.0 - yt) * r;
        grad = ((1.0 - yt) - yt * e) / (1.0 + e);
    } else {
        let e = (-r).exp();
        loss = e + (1.0 - yt) * r;
        grad = ((1.0 - yt) - yt * e) / (1.0 + e);
    }
    raw[0] = grad;
    loss
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
