//! GENEB's linear probe: scikit-learn's `LogisticRegression(max_iter=1000)`, in f64.
//!
//! Same model, same objective, same optimiser path as sklearn 1.7: L2 with C = 1 on the
//! mean log-loss (intercepts unpenalised), no scaling, one weight vector for two classes and
//! a full multinomial `n_classes × (d + 1)` softmax otherwise, scipy's L-BFGS-B from zeros.
mod lbfgsb;
mod objective;
mod simd;
mod vmath;

use crate::protocol::{
    LBFGS_FTOL, LBFGS_HISTORY, LBFGS_MAX_LINE_SEARCH, PROBE_C, PROBE_MAX_ITER, PROBE_TOL,
};
use crate::{Error, Result};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array1, Array2, ArrayView2, Axis};

/// The element types the probe reads: f32 (embeddings as encoders and npz files give them)
/// and f64. Every product is taken in f64, and f32 → f64 is exact, so f32 input gives the
/// same arithmetic as an f64 copy of it, at half the memory traffic.
pub trait Element: Copy + Default + Send + Sync + Into<f64> + 'static {
    /// 8 values widened to f64 in `S`'s registers.
    /// (`Simd` is public in a private module: callers outside the probe cannot name it.)
    #[doc(hidden)]
    fn load<S: simd::Simd>(s: S, p: &[Self; simd::LANES]) -> S::V;

    /// `rows × d` values, row-major, as an f64 matrix: `x` itself for f64, a converted copy
    /// in `scratch` for f32.
    fn as_f64<'s>(
        x: &'s [Self],
        rows: usize,
        d: usize,
        scratch: &'s mut Vec<f64>,
    ) -> ArrayView2<'s, f64>;
}

/// Callers pass whole rows; a mismatch is a bug in this module.
const WHOLE_ROWS: &str = "the probe passes whole rows";

impl Element for f64 {
    fn load<S: simd::Simd>(s: S, p: &[f64; simd::LANES]) -> S::V {
        s.load(p)
    }
    fn as_f64<'s>(x: &'s [f64], rows: usize, d: usize, _: &'s mut Vec<f64>) -> ArrayView2<'s, f64> {
        ArrayView2::from_shape((rows, d), x).expect(WHOLE_ROWS)
    }
}

impl Element for f32 {
    fn load<S: simd::Simd>(s: S, p: &[f32; simd::LANES]) -> S::V {
        s.load_f32(p)
    }
    fn as_f64<'s>(
        x: &'s [f32],
        rows: usize,
        d: usize,
        scratch: &'s mut Vec<f64>,
    ) -> ArrayView2<'s, f64> {
        scratch.clear();
        scratch.extend(x.iter().map(|&v| f64::from(v)));
        ArrayView2::from_shape((rows, d), &scratch[..]).expect(WHOLE_ROWS)
    }
}

/// A fitted probe.
#[derive(Debug, Clone)]
pub struct LogisticRegression {
    /// The label indices seen in training, ascending (sklearn's `classes_`).
    pub classes: Vec<usize>,
    /// `d × k` weights: k = 1 for two classes (the score of `classes[1]`), else one column
    /// per class.
    pub coef: Array2<f64>,
    /// `k` intercepts.
    pub intercept: Array1<f64>,
    /// L-BFGS iterations run (sklearn's `n_iter_`).
    pub n_iter: usize,
    /// Whether the optimiser met its tolerance before `max_iter` (sklearn warns otherwise).
    pub converged: bool,
}

/// Fit on rows of `x` with label indices `y`.
pub fn fit<T: Element>(x: ArrayView2<T>, y: &[usize]) -> Result<LogisticRegression> {
    let (n, d) = x.dim();
    if y.len() != n {
        return Err(Error::new(format!(
            "the probe got {n} embedding rows but {} labels",
            y.len()
        )));
    }
    if d == 0 {
        return Err(Error::new("the probe needs at least one embedding column"));
    }
    if let Some((i, _)) = x.indexed_iter().find(|(_, v)| !(**v).into().is_finite()) {
        return Err(Error::new(format!(
            "embedding row {}, column {} is not a finite number; the probe needs finite values",
            i.0 + 1,
            i.1 + 1
        )));
    }
    let mut classes = y.to_vec();
    classes.sort_unstable();
    classes.dedup();
    if classes.len() < 2 {
        return Err(Error::new(format!(
            "the probe needs at least 2 classes in the training labels, found {}",
            classes.len()
        )));
    }
    // The optimiser holds its weights, gradient and L-BFGS history (two vectors per pair),
    // a few more of the same size and a block of scores per thread: all `(d + 1) × classes`
    // (or per row × classes). Refused before any of it is allocated when it cannot fit.
    let per_class = (d as u64 + 1)
        .checked_mul(2 * LBFGS_HISTORY as u64 + 8)
        .and_then(|v| v.checked_add(1024 * rayon::current_num_threads() as u64))
        .unwrap_or(u64::MAX);
    crate::budget::charge_argument(
        &format!(
            "the probe for {} classes of {d}-dimensional embeddings",
            classes.len()
        ),
        per_class,
        8 * classes.len() as u64,
    )?;
    // Dense class indices, as sklearn's LabelEncoder gives the loss.
    let yi: Vec<usize> = y
        .iter()
        .map(|v| classes.binary_search(v).unwrap_or_default())
        .collect();
    let x = x.as_standard_layout();
    let x = x
        .as_slice()
        .ok_or_else(|| Error::new("internal error: the probe's input is not contiguous"))?;
    let obj = objective::Objective::new(x, d, &yi, classes.len(), PROBE_C);
    let opts = lbfgsb::Options {
        history: LBFGS_HISTORY,
        max_iter: PROBE_MAX_ITER,
        max_line_search: LBFGS_MAX_LINE_SEARCH,
        gtol: PROBE_TOL,
        ftol: LBFGS_FTOL,
    };
    let out = lbfgsb::minimize(|w, g| obj.loss_grad(w, g), vec![0.0; obj.n_params()], &opts);
    let k = out.x.len() / (d + 1);
    let coef = Array2::from_shape_vec((d + 1, k), out.x)
        .map_err(|e| Error::new(format!("internal error shaping the probe weights: {e}")))?;
    Ok(LogisticRegression {
        classes,
        intercept: coef.row(d).to_owned(),
        coef: coef.slice_move(ndarray::s![..d, ..]),
        n_iter: out.n_iter,
        converged: out.converged,
    })
}

impl LogisticRegression {
    /// Raw scores, `n × k` (sklearn's `decision_function`).
    pub fn decision_function<T: Element>(&self, x: ArrayView2<T>) -> Array2<f64> {
        /// Rows converted at a time: f32 input is not copied whole.
        const BLOCK: usize = 1024;
        let d = x.ncols();
        let x = x.as_standard_layout();
        let mut out = Array2::zeros((x.nrows(), self.coef.ncols()));
        let mut scratch = Vec::new();
        for (xb, mut ob) in x
            .axis_chunks_iter(Axis(0), BLOCK)
            .zip(out.axis_chunks_iter_mut(Axis(0), BLOCK))
        {
            let rows = xb.nrows();
            let xb = T::as_f64(xb.to_slice().expect(WHOLE_ROWS), rows, d, &mut scratch);
            general_mat_mul(1.0, &xb, &self.coef, 0.0, &mut ob);
        }
        out + &self.intercept
    }

    /// Predicted label indices (the same index space as the `y` it was fitted on).
    pub fn predict<T: Element>(&self, x: ArrayView2<T>) -> Vec<usize> {
        let scores = self.decision_function(x);
        scores
            .axis_iter(Axis(0))
            .map(|row| {
                let best = if row.len() == 1 {
                    usize::from(row[0] > 0.0)
                } else {
                    // First maximum, as numpy's argmax.
                    (1..row.len()).fold(0, |b, j| if row[j] > row[b] { j } else { b })
                };
                self.classes[best]
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn rejects_bad_input() {
        let x = array![[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]];
        let e = fit(x.view(), &[0, 1]).unwrap_err();
        assert!(e.message.contains("3 embedding rows but 2 labels"), "{e}");
        let e = fit(x.view(), &[4, 4, 4]).unwrap_err();
        assert!(e.message.contains("at least 2 classes"), "{e}");
        let bad = array![[0.0, 1.0], [1.0, f64::NAN], [2.0, 2.0]];
        let e = fit(bad.view(), &[0, 1, 0]).unwrap_err();
        assert!(e.message.contains("row 2, column 2"), "{e}");
        let e = fit(Array2::<f64>::zeros((2, 0)).view(), &[0, 1]).unwrap_err();
        assert!(e.message.contains("at least one embedding column"), "{e}");
        let inf = array![[0.0, f64::INFINITY], [1.0, 0.0]];
        assert!(fit(inf.view(), &[0, 1]).is_err());
    }

    #[test]
    fn predictions_are_in_the_label_space_of_y() {
        // Sparse label indices 3 and 7: predictions must be 3 or 7, not 0 or 1.
        let x = array![[-2.0], [-1.0], [1.0], [2.0]];
        let m = fit(x.view(), &[3, 3, 7, 7]).unwrap();
        assert_eq!(m.predict(x.view()), vec![3, 3, 7, 7]);
        assert_eq!(m.classes, vec![3, 7]);
        assert_eq!(m.coef.dim(), (1, 1));
        assert!(m.converged);
        let x3 = array![
            [-5.0, 0.0],
            [-4.0, 0.5],
            [5.0, 0.0],
            [4.0, 0.5],
            [0.0, 6.0],
            [0.5, 5.0]
        ];
        let m = fit(x3.view(), &[2, 2, 0, 0, 5, 5]).unwrap();
        assert_eq!(m.coef.dim(), (2, 3));
        assert_eq!(m.predict(x3.view()), vec![2, 2, 0, 0, 5, 5]);
    }

    #[test]
    fn fit_is_deterministic() {
        // Big enough to run the threaded shards.
        let (n, d) = (1200, 300);
        let x = Array2::from_shape_fn((n, d), |(i, j)| {
            ((i * 31 + j * 17) % 97) as f64 / 9.0 + (j % 5) as f64 * 40.0
        });
        let y: Vec<usize> = (0..n).map(|i| (i * 7 + i / 3) % 3).collect();
        let a = fit(x.view(), &y).unwrap();
        let b = fit(x.view(), &y).unwrap();
        assert_eq!(a.n_iter, b.n_iter);
        assert!(
            a.coef
                .iter()
                .zip(b.coef.iter())
                .all(|(p, q)| p.to_bits() == q.to_bits())
        );
        // Column-major input gives the same model as row-major.
        let xt = x.t().as_standard_layout().into_owned();
        let xf = xt.t();
        let c = fit(xf.view(), &y).unwrap();
        assert!(
            a.coef
                .iter()
                .zip(c.coef.iter())
                .all(|(p, q)| p.to_bits() == q.to_bits())
        );
    }

    /// Bit-identical coefficients on pools of 1, 2 and 4 threads, for f32 and f64 input,
    /// binary and multiclass, on problems past the parallel threshold with several shards.
    #[test]
    fn fits_do_not_depend_on_the_thread_count() {
        fn on_threads<T: Element>(threads: usize, x: ArrayView2<T>, y: &[usize]) -> Vec<u64> {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let m = pool.install(|| fit(x, y)).unwrap();
            m.coef
                .iter()
                .chain(&m.intercept)
                .map(|v| v.to_bits())
                .collect()
        }
        fn check<T: Element>(x: ArrayView2<T>, y: &[usize]) -> Vec<u64> {
            let one = on_threads(1, x, y);
            assert_eq!(one, on_threads(2, x, y));
            assert_eq!(one, on_threads(4, x, y));
            one
        }
        let (n, d) = (3000, 100);
        // 3000 rows are 10 chunks, so 5 shards; every case is past the work threshold.
        assert!(n * d >= objective::PARALLEL_MIN_WORK);
        let x = Array2::from_shape_fn((n, d), |(i, j)| {
            (((i * 7919 + j * 104_729) % 1009) as f64 / 1009.0 - 0.5) * (1.0 + (j % 3) as f64)
        });
        for classes in [2, 3] {
            let y: Vec<usize> = (0..n)
                .map(|i| usize::from(x[[i, 0]] + x[[i, 1]] > 0.0) + (classes - 2) * (i % 2))
                .collect();
            check(x.view(), &y);
            // f32 input is read as the f64 values it widens to: the same model, bit for bit.
            let x32 = x.mapv(|v| v as f32);
            assert_eq!(check(x32.view(), &y), check(x32.mapv(f64::from).view(), &y));
        }
    }
}
