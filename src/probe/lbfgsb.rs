//! scipy's L-BFGS-B (`scipy.optimize.minimize(method="L-BFGS-B")`, the C port of Nocedal
//! et al.'s 3.0 code in scipy ≥ 1.15) restricted to the unbounded problems the probe solves.
//!
//! Why not `argmin`'s L-BFGS (0.11): its stopping tests (L2 norm of the gradient; absolute
//! change of the cost) differ from scipy's (max-abs projected gradient; relative reduction
//! `(f_old - f) / max(|f_old|, |f|, 1) <= factr·eps`), it stores every (s, y) pair where
//! L-BFGS-B skips pairs with too little curvature, its first line search starts at step 1
//! where L-BFGS-B starts at 1/||d||, and argmin-math 0.5 does not support ndarray 0.17. On
//! unscaled embeddings the reference stops at `max_iter`, far from the optimum, so the
//! predictions are those of the *path*: every one of these rules changes it.
//!
//! Without bounds, L-BFGS-B's generalized Cauchy point plus subspace minimisation reduce to
//! the L-BFGS step `d = -H g` with `H0 = I / theta`, `theta = y'y / s'y`: we compute it with
//! the two-loop recursion (equal up to rounding, as BLAS summation order is anyway), and keep
//! everything that decides the path exactly as scipy does: the first step, the Moré–Thuente
//! line search `dcsrch` with L-BFGS-B's parameters, the update-skip rule, the restarts, and
//! the order of the termination tests (scipy's Python loop checks `maxiter` before the
//! gradient test).

use std::collections::VecDeque;

/// L-BFGS-B's `dcsrch` parameters (`lnsrlb`): sufficient decrease, curvature, interval width.
const LS_FTOL: f64 = 1e-3;
const LS_GTOL: f64 = 0.9;
const LS_XTOL: f64 = 0.1;
/// L-BFGS-B's upper bound on the step for unbounded problems (`big` in `lnsrlb`).
const STPMX: f64 = 1e10;
/// scipy's default `maxfun` for L-BFGS-B, which sklearn leaves alone.
const SCIPY_MAXFUN: usize = 15000;

pub(crate) struct Options {
    pub history: usize,
    pub max_iter: usize,
    pub max_line_search: usize,
    /// scipy's `gtol`: bound on the max-abs gradient.
    pub gtol: f64,
    /// scipy's `ftol` (= `factr · eps`): bound on the relative reduction of f.
    pub ftol: f64,
}

pub(crate) struct Outcome {
    pub x: Vec<f64>,
    pub n_iter: usize,
    pub converged: bool,
}

struct Pair {
    s: Vec<f64>,
    y: Vec<f64>,
    rho: f64,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    // Four accumulators so the loop vectorises; the order is fixed, so results are too.
    let mut acc = [0.0f64; 4];
    let (ca, ra) = a.split_at(a.len() / 4 * 4);
    let (cb, rb) = b.split_at(ca.len());
    for (x, y) in ca.chunks_exact(4).zip(cb.chunks_exact(4)) {
        for l in 0..4 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

fn max_abs(g: &[f64]) -> f64 {
    g.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// `d = -H g` by the two-loop recursion, `H0 = I / theta`; `-g` without history.
fn direction(g: &[f64], history: &VecDeque<Pair>, theta: f64) -> Vec<f64> {
    let mut q = g.to_vec();
    let mut alpha = vec![0.0; history.len()];
    for (i, p) in history.iter().enumerate().rev() {
        alpha[i] = p.rho * dot(&p.s, &q);
        q.iter_mut().zip(&p.y).for_each(|(q, y)| *q -= alpha[i] * y);
    }
    q.iter_mut().for_each(|q| *q /= theta);
    for (i, p) in history.iter().enumerate() {
        let beta = p.rho * dot(&p.y, &q);
        q.iter_mut()
            .zip(&p.s)
            .for_each(|(q, s)| *q += (alpha[i] - beta) * s);
    }
    q.iter_mut().for_each(|q| *q = -*q);
    q
}

/// Minimise `fg` (which returns f and writes the gradient) from `x0`.
pub(crate) fn minimize(
    mut fg: impl FnMut(&[f64], &mut [f64]) -> f64,
    x0: Vec<f64>,
    opt: &Options,
) -> Outcome {
    let n = x0.len();
    let mut x = x0;
    let mut g = vec![0.0; n];
    let mut f = fg(&x, &mut g);
    let mut nfev = 1;
    if max_abs(&g) <= opt.gtol {
        return Outcome {
            x,
            n_iter: 0,
            converged: true,
        };
    }
    let mut history: VecDeque<Pair> = VecDeque::with_capacity(opt.history);
    let mut theta = 1.0;
    let mut iter = 0;
    let mut x_old = vec![0.0; n];
    let mut g_old = vec![0.0; n];
    loop {
        let mut d = direction(&g, &history, theta);
        let mut stp = if iter == 0 {
            (1.0 / dot(&d, &d).sqrt()).min(STPMX)
        } else {
            1.0
        };
        x_old.copy_from_slice(&x);
        g_old.copy_from_slice(&g);
        let f_old = f;
        let gd_old = dot(&g, &d);
        let mut gd = gd_old;
        // Ascent direction or a line search that ran out of evaluations: L-BFGS-B restores
        // the iterate, drops its memory and retries with -g; with no memory it gives up.
        let mut failed = gd_old >= 0.0;
        if !failed {
            let mut search = Dcsrch::start(f, gd_old, stp, STPMX);
            let mut ifun = 0;
            while search.task == Task::Fg {
                ifun += 1;
                if ifun > opt.max_line_search {
                    failed = true;
                    break;
                }
                if stp == 1.0 {
                    x.iter_mut()
                        .zip(&x_old)
                        .zip(&d)
                        .for_each(|((x, t), d)| *x = t + d);
                } else {
                    x.iter_mut()
                        .zip(&x_old)
                        .zip(&d)
                        .for_each(|((x, t), d)| *x = stp * d + t);
                }
                f = fg(&x, &mut g);
                nfev += 1;
                gd = dot(&g, &d);
                search.step(f, gd, &mut stp);
            }
        }
        if failed {
            x.copy_from_slice(&x_old);
            g.copy_from_slice(&g_old);
            if history.is_empty() {
                return Outcome {
                    x,
                    n_iter: iter,
                    converged: false,
                };
            }
            history.clear();
            theta = 1.0;
            continue;
        }
        iter += 1;
        // scipy's Python loop: the iteration and evaluation budgets come first.
        if iter >= opt.max_iter || nfev > SCIPY_MAXFUN {
            return Outcome {
                x,
                n_iter: iter,
                converged: false,
            };
        }
        if max_abs(&g) <= opt.gtol {
            return Outcome {
                x,
                n_iter: iter,
                converged: true,
            };
        }
        if f_old - f <= opt.ftol * f_old.abs().max(f.abs()).max(1.0) {
            return Outcome {
                x,
                n_iter: iter,
                converged: true,
            };
        }
        // The update, with L-BFGS-B's s = stp·d and its curvature test on y's.
        let y: Vec<f64> = g.iter().zip(&g_old).map(|(g, o)| g - o).collect();
        let rr = dot(&y, &y);
        let (dr, ddum) = if stp == 1.0 {
            (gd - gd_old, -gd_old)
        } else {
            d.iter_mut().for_each(|d| *d *= stp);
            ((gd - gd_old) * stp, -gd_old * stp)
        };
        if dr <= f64::EPSILON * ddum {
            continue;
        }
        theta = rr / dr;
        if history.len() == opt.history {
            history.pop_front();
        }
        let rho = 1.0 / dot(&d, &y);
        history.push_back(Pair { s: d, y, rho });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Task {
    Fg,
    Converged,
    Warning,
}

/// MINPACK-2 `dcsrch` (Moré & Thuente), as L-BFGS-B calls it, with `stpmin = 0`.
struct Dcsrch {
    task: Task,
    brackt: bool,
    stage1: bool,
    ginit: f64,
    gtest: f64,
    finit: f64,
    width: f64,
    width1: f64,
    stx: f64,
    fx: f64,
    gx: f64,
    sty: f64,
    fy: f64,
    gy: f64,
    stmin: f64,
    stmax: f64,
    stpmax: f64,
}

const XTRAPL: f64 = 1.1;
const XTRAPU: f64 = 4.0;
const P5: f64 = 0.5;
const P66: f64 = 0.66;

impl Dcsrch {
    /// `task = 'START'`: the caller has checked `g < 0`, and `0 < stp <= stpmax`.
    fn start(f: f64, g: f64, stp: f64, stpmax: f64) -> Self {
        let width = stpmax;
        Dcsrch {
            task: Task::Fg,
            brackt: false,
            stage1: true,
            ginit: g,
            gtest: LS_FTOL * g,
            finit: f,
            width,
            width1: width / P5,
            stx: 0.0,
            fx: f,
            gx: g,
            sty: 0.0,
            fy: f,
            gy: g,
            stmin: 0.0,
            stmax: stp + XTRAPU * stp,
            stpmax,
        }
    }

    /// One call with f, g at the trial `stp`; sets the next trial step or ends the search.
    fn step(&mut self, f: f64, g: f64, stp: &mut f64) {
        let ftest = self.finit + *stp * self.gtest;
        if self.stage1 && f <= ftest && g >= 0.0 {
            self.stage1 = false;
        }
        // Later tests override earlier ones, as in the Fortran.
        let mut end = None;
        if self.brackt && (*stp <= self.stmin || *stp >= self.stmax) {
            end = Some(Task::Warning);
        }
        if self.brackt && self.stmax - self.stmin <= LS_XTOL * self.stmax {
            end = Some(Task::Warning);
        }
        if *stp == self.stpmax && f <= ftest && g <= self.gtest {
            end = Some(Task::Warning);
        }
        if *stp == 0.0 && (f > ftest || g >= self.gtest) {
            end = Some(Task::Warning);
        }
        if f <= ftest && g.abs() <= LS_GTOL * (-self.ginit) {
            end = Some(Task::Converged);
        }
        if let Some(task) = end {
            self.task = task;
            return;
        }
        if self.stage1 && f <= self.fx && f > ftest {
            // Modified function values: psi(stp) = f(stp) - f(0) - stp·gtest.
            let gt = self.gtest;
            let mut fxm = self.fx - self.stx * gt;
            let mut fym = self.fy - self.sty * gt;
            let mut gxm = self.gx - gt;
            let mut gym = self.gy - gt;
            let fm = f - *stp * gt;
            let gm = g - gt;
            self.dcstep(&mut fxm, &mut gxm, &mut fym, &mut gym, stp, fm, gm);
            self.fx = fxm + self.stx * gt;
            self.fy = fym + self.sty * gt;
            self.gx = gxm + gt;
            self.gy = gym + gt;
        } else {
            let (mut fx, mut gx, mut fy, mut gy) = (self.fx, self.gx, self.fy, self.gy);
            self.dcstep(&mut fx, &mut gx, &mut fy, &mut gy, stp, f, g);
            (self.fx, self.gx, self.fy, self.gy) = (fx, gx, fy, gy);
        }
        if self.brackt {
            if (self.sty - self.stx).abs() >= P66 * self.width1 {
                *stp = self.stx + P5 * (self.sty - self.stx);
            }
            self.width1 = self.width;
            self.width = (self.sty - self.stx).abs();
            self.stmin = self.stx.min(self.sty);
            self.stmax = self.stx.max(self.sty);
        } else {
            self.stmin = *stp + XTRAPL * (*stp - self.stx);
            self.stmax = *stp + XTRAPU * (*stp - self.stx);
        }
        *stp = stp.max(0.0).min(self.stpmax);
        if self.brackt
            && (*stp <= self.stmin
                || *stp >= self.stmax
                || self.stmax - self.stmin <= LS_XTOL * self.stmax)
        {
            *stp = self.stx;
        }
        self.task = Task::Fg;
    }

    /// MINPACK-2 `dcstep`: the safeguarded cubic/quadratic step; updates the interval.
    #[allow(clippy::too_many_arguments)]
    fn dcstep(
        &mut self,
        fx: &mut f64,
        dx: &mut f64,
        fy: &mut f64,
        dy: &mut f64,
        stp: &mut f64,
        fp: f64,
        dp: f64,
    ) {
        let (stx, sty, stpmin, stpmax) = (self.stx, self.sty, self.stmin, self.stmax);
        let sgnd = dp * (*dx / dx.abs());
        let stpf;
        if fp > *fx {
            let theta = 3.0 * (*fx - fp) / (*stp - stx) + *dx + dp;
            let s = theta.abs().max(dx.abs()).max(dp.abs());
            let mut gamma = s * ((theta / s).powi(2) - (*dx / s) * (dp / s)).sqrt();
            if *stp < stx {
                gamma = -gamma;
            }
            let p = (gamma - *dx) + theta;
            let q = ((gamma - *dx) + gamma) + dp;
            let r = p / q;
            let stpc = stx + r * (*stp - stx);
            let stpq = stx + ((*dx / ((*fx - fp) / (*stp - stx) + *dx)) / 2.0) * (*stp - stx);
            stpf = if (stpc - stx).abs() < (stpq - stx).abs() {
                stpc
            } else {
                stpc + (stpq - stpc) / 2.0
            };
            self.brackt = true;
        } else if sgnd < 0.0 {
            let theta = 3.0 * (*fx - fp) / (*stp - stx) + *dx + dp;
            let s = theta.abs().max(dx.abs()).max(dp.abs());
            let mut gamma = s * ((theta / s).powi(2) - (*dx / s) * (dp / s)).sqrt();
            if *stp > stx {
                gamma = -gamma;
            }
            let p = (gamma - dp) + theta;
            let q = ((gamma - dp) + gamma) + *dx;
            let r = p / q;
            let stpc = *stp + r * (stx - *stp);
            let stpq = *stp + (dp / (dp - *dx)) * (stx - *stp);
            stpf = if (stpc - *stp).abs() > (stpq - *stp).abs() {
                stpc
            } else {
                stpq
            };
            self.brackt = true;
        } else if dp.abs() < dx.abs() {
            let theta = 3.0 * (*fx - fp) / (*stp - stx) + *dx + dp;
            let s = theta.abs().max(dx.abs()).max(dp.abs());
            let mut gamma = s * ((theta / s).powi(2) - (*dx / s) * (dp / s)).max(0.0).sqrt();
            if *stp > stx {
                gamma = -gamma;
            }
            let p = (gamma - dp) + theta;
            let q = (gamma + (*dx - dp)) + gamma;
            let r = p / q;
            let stpc = if r < 0.0 && gamma != 0.0 {
                *stp + r * (stx - *stp)
            } else if *stp > stx {
                stpmax
            } else {
                stpmin
            };
            let stpq = *stp + (dp / (dp - *dx)) * (stx - *stp);
            if self.brackt {
                let f = if (stpc - *stp).abs() < (stpq - *stp).abs() {
                    stpc
                } else {
                    stpq
                };
                stpf = if *stp > stx {
                    (*stp + P66 * (sty - *stp)).min(f)
                } else {
                    (*stp + P66 * (sty - *stp)).max(f)
                };
            } else {
                let f = if (stpc - *stp).abs() > (stpq - *stp).abs() {
                    stpc
                } else {
                    stpq
                };
                stpf = f.min(stpmax).max(stpmin);
            }
        } else if self.brackt {
            let theta = 3.0 * (fp - *fy) / (sty - *stp) + *dy + dp;
            let s = theta.abs().max(dy.abs()).max(dp.abs());
            let mut gamma = s * ((theta / s).powi(2) - (*dy / s) * (dp / s)).sqrt();
            if *stp > sty {
                gamma = -gamma;
            }
            let p = (gamma - dp) + theta;
            let q = ((gamma - dp) + gamma) + *dy;
            let r = p / q;
            stpf = *stp + r * (sty - *stp);
        } else if *stp > stx {
            stpf = stpmax;
        } else {
            stpf = stpmin;
        }
        if fp > *fx {
            self.sty = *stp;
            *fy = fp;
            *dy = dp;
        } else {
            if sgnd < 0.0 {
                self.sty = stx;
                *fy = *fx;
                *dy = *dx;
            }
            self.stx = *stp;
            *fx = fp;
            *dx = dp;
        }
        *stp = stpf;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(max_iter: usize) -> Options {
        Options {
            history: 10,
            max_iter,
            max_line_search: 50,
            gtol: 1e-8,
            ftol: 0.0,
        }
    }

    #[test]
    fn rosenbrock_reaches_the_minimum() {
        let mut nfev = 0;
        let fg = |x: &[f64], g: &mut [f64]| {
            nfev += 1;
            let (a, b) = (x[0], x[1]);
            g[0] = -2.0 * (1.0 - a) - 400.0 * a * (b - a * a);
            g[1] = 200.0 * (b - a * a);
            (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2)
        };
        let out = minimize(fg, vec![-1.2, 1.0], &opts(1000));
        assert!(out.converged);
        assert!(
            (out.x[0] - 1.0).abs() < 1e-6 && (out.x[1] - 1.0).abs() < 1e-6,
            "{:?}",
            out.x
        );
        // scipy.optimize.minimize(rosen, [-1.2, 1], jac=rosen_der, method="L-BFGS-B",
        // options=dict(gtol=1e-8, ftol=0)) takes 38 iterations and 46 evaluations.
        assert_eq!((out.n_iter, nfev), (38, 46));
    }

    #[test]
    fn max_iter_stops_without_convergence() {
        let fg = |x: &[f64], g: &mut [f64]| {
            g[0] = 2.0 * x[0] - 2.0;
            g[1] = 2e6 * x[1] + 4.0;
            (x[0] - 1.0).powi(2) + 1e6 * x[1] * x[1] + 4.0 * x[1]
        };
        let out = minimize(fg, vec![0.0, 0.0], &opts(1));
        assert_eq!(out.n_iter, 1);
        assert!(!out.converged);
    }

    #[test]
    fn zero_gradient_start_is_converged_at_once() {
        let fg = |_: &[f64], g: &mut [f64]| {
            g.fill(0.0);
            1.0
        };
        let out = minimize(fg, vec![0.0; 3], &opts(10));
        assert_eq!(out.n_iter, 0);
        assert!(out.converged);
    }
}
