"""Oracle fixtures for tests/probe_oracle.rs: scikit-learn's probe and metrics.

Re-run from the repository root (needs numpy, scikit-learn; deterministic):
    python3 tests/oracle/make_probe_fixtures.py

Writes tests/fixtures/probe/:
  <name>.json    shapes, labels, and sklearn's LogisticRegression(max_iter=1000) result
                 (predictions, n_iter, converged, metrics of its predictions)
  <name>.f64.gz  X_train then X_test, row-major little-endian float64, gzip
                 (values are float32-representable, as real embeddings are)
  metrics.json   (y_true, y_pred) pairs with sklearn's MCC, accuracy and macro-F1
"""

import gzip
import json
import os
import warnings

import numpy as np
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

PERTURBATIONS = 6
OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "probe")


def metrics(y_true, y_pred):
    return {
        "MCC": float(matthews_corrcoef(y_true, y_pred)),
        "Acc": float(accuracy_score(y_true, y_pred)),
        "F1": float(f1_score(y_true, y_pred, average="macro")),
    }


def embedding_like(rng, n, d, k, *, rank, offset, scale_range, noise, sep):
    """Unscaled, correlated features: low-rank class signal + shared factors, per-column
    offsets and scales spanning orders of magnitude (like pooled transformer states)."""
    y = rng.integers(0, k, n)
    centers = rng.normal(0, sep, (k, rank))
    factors = rng.normal(0, 1, (n, rank)) + centers[y]
    mix = rng.normal(0, 1, (rank, d))
    x = factors @ mix + rng.normal(0, noise, (n, d))
    scales = 10.0 ** rng.uniform(*scale_range, d)
    offsets = rng.normal(0, offset, d)
    return x * scales + offsets, y


def standard(rng, n, d, k, sep):
    y = rng.integers(0, k, n)
    centers = rng.normal(0, sep, (k, d))
    return rng.normal(0, 1, (n, d)) + centers[y], y


def collinear(rng, n, d, k):
    x, y = embedding_like(rng, n, d // 2, k, rank=4, offset=5, scale_range=(0, 1),
                          noise=0.5, sep=1.0)
    # Each column twice, the copy nearly identical: a near-singular Hessian.
    dup = x * (1 + 1e-4 * rng.normal(0, 1, x.shape[1])) + 1e-3 * rng.normal(0, 1, x.shape)
    return np.hstack([x, dup]), y


def case(name, gen, n_train, n_test, labels, seed):
    rng = np.random.default_rng(seed)
    x, y = gen(rng, n_train + n_test)
    x = x.astype(np.float32).astype(np.float64)
    y = np.asarray(labels)[y]
    xtr, xte, ytr, yte = x[:n_train], x[n_train:], y[:n_train], y[n_train:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LogisticRegression(max_iter=1000).fit(xtr, ytr)
    pred = clf.predict(xte)
    n_iter = int(clf.n_iter_[0])
    # sklearn warns exactly when L-BFGS-B stops without meeting its tolerances.
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always", ConvergenceWarning)
        LogisticRegression(max_iter=1000).fit(xtr, ytr)
        converged = not any(issubclass(i.category, ConvergenceWarning) for i in w)
    # The reference's own reproducibility: on max_iter-bound problems L-BFGS-B amplifies
    # rounding, so refits on X perturbed by a few ulps (as another BLAS kernel would) can
    # predict differently. The test holds geneb to sklearn's spread where there is one.
    agree, dmcc = [], []
    for j in range(1, PERTURBATIONS + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            p = LogisticRegression(max_iter=1000).fit(xtr * (1 + j * 2.0**-52), ytr).predict(xte)
        agree.append(float(np.mean(p == pred)))
        dmcc.append(abs(float(matthews_corrcoef(yte, p)) - float(matthews_corrcoef(yte, pred))))
    meta = {
        "sklearn": sklearn.__version__,
        "n_train": n_train, "n_test": n_test, "d": x.shape[1],
        "y_train": ytr.tolist(), "y_test": yte.tolist(),
        "predictions": pred.tolist(), "n_iter": n_iter, "converged": converged,
        "metrics": metrics(yte, pred),
        "sklearn_self_agreement_min": min(agree),
        "sklearn_self_mcc_spread": max(dmcc),
    }
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(meta, f, separators=(",", ":"))
    raw = np.concatenate([xtr.ravel(), xte.ravel()]).astype("<f8").tobytes()
    with gzip.GzipFile(os.path.join(OUT, name + ".f64.gz"), "wb", mtime=0) as f:
        f.write(raw)
    print(f"{name:24s} n={n_train}/{n_test} d={x.shape[1]:4d} k={len(set(ytr))} "
          f"n_iter={n_iter:4d} converged={converged} MCC={meta['metrics']['MCC']:.4f} "
          f"self-agreement>={min(agree):.4f} self-|dMCC|<={max(dmcc):.4f}")


def metric_cases():
    rng = np.random.default_rng(7)
    cases = [
        ([1, 1, 1, 0], [1, 0, 1, 1]),
        ([0, 1, 1, 2], [1, 1, 1, 1]),           # one predicted class: MCC denominator 0
        ([3, 3, 3], [3, 3, 3]),                 # one class everywhere
        ([0, 0, 1, 1], [1, 1, 0, 0]),           # perfectly wrong
        ([0, 1, 2, 3], [4, 5, 6, 7]),           # disjoint label sets
        ([5, 2, 2, 9], [5, 2, 9, 9]),
    ]
    for k in (2, 3, 5, 9):
        for n in (10, 101, 1000):
            t = rng.integers(0, k, n)
            p = np.where(rng.random(n) < 0.6, t, rng.integers(0, k + 1, n))
            cases.append((t.tolist(), p.tolist()))
    out = [{"y_true": t, "y_pred": p, **metrics(np.array(t), np.array(p))} for t, p in cases]
    with open(os.path.join(OUT, "metrics.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))


def main():
    os.makedirs(OUT, exist_ok=True)
    E = embedding_like
    case("bin_standard", lambda r, n: standard(r, n, 20, 2, 0.4), 400, 200, [0, 1], 1)
    case("multi5_standard", lambda r, n: standard(r, n, 30, 5, 0.3), 500, 250, range(5), 2)
    case("bin_unscaled", lambda r, n: E(r, n, 64, 2, rank=8, offset=50, scale_range=(-2, 2),
                                        noise=1.0, sep=0.5), 600, 300, [0, 1], 3)
    case("multi9_unscaled", lambda r, n: E(r, n, 48, 9, rank=12, offset=100,
                                           scale_range=(-1, 2), noise=0.8, sep=0.8),
         700, 300, range(9), 4)
    case("bin_collinear", lambda r, n: collinear(r, n, 40, 2), 300, 200, [3, 7], 5)
    case("multi4_collinear", lambda r, n: collinear(r, n, 48, 4), 400, 200, [0, 2, 5, 6], 6)
    case("multi3_wide", lambda r, n: E(r, n, 256, 3, rank=10, offset=20, scale_range=(-1, 1),
                                       noise=1.0, sep=0.6), 120, 200, range(3), 7)
    case("bin_wide", lambda r, n: E(r, n, 200, 2, rank=6, offset=300, scale_range=(0, 1),
                                    noise=2.0, sep=0.7), 80, 150, [0, 1], 8)
    metric_cases()


if __name__ == "__main__":
    main()
