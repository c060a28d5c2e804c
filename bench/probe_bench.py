"""Probe speed: sklearn LogisticRegression(max_iter=1000) vs `geneb probe --npz`.

Run from anywhere; it first builds the CLI without the Burn encoders (seconds, into
target/light), or uses --geneb PATH:
    python3 bench/probe_bench.py [--quick] [--geneb PATH]

Generates embedding-like npz files (unscaled, correlated, float32) under target/bench-data/,
times sklearn fit+predict and the geneb CLI (process start and npz read included) on each,
and prints times, the speed ratio and prediction agreement. sklearn runs in a subprocess
with the caller's environment; `--native-blas` unsets OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE
for it (on the 2-core Zen 5 VM this was measured 20x *slower* than CORETYPE=Haswell).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "target", "bench-data")
CASES = [  # (n_train, n_test, d, classes)
    (2000, 1000, 128, 2),
    (2000, 1000, 256, 9),
    (5000, 2000, 512, 2),
    (5000, 2000, 512, 5),
    (10000, 5000, 768, 3),
    (20000, 5000, 1024, 2),
    (50000, 10000, 1024, 2),
    (50000, 10000, 1024, 9),
]
QUICK = CASES[:6]

SKLEARN = r"""
import sys, time, json, warnings, numpy as np
from sklearn.linear_model import LogisticRegression
warnings.simplefilter("ignore")
z = np.load(sys.argv[1])
t = time.perf_counter()
clf = LogisticRegression(max_iter=1000).fit(z["X_train"], z["y_train"])
p = clf.predict(z["X_test"])
dt = time.perf_counter() - t
json.dump({"seconds": dt, "n_iter": int(clf.n_iter_[0]), "predictions": p.tolist()}, sys.stdout)
"""


def make(path, n_train, n_test, d, k, seed):
    if os.path.exists(path):
        return
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    rank = 32
    y = rng.integers(0, k, n)
    centers = rng.normal(0, 0.4, (k, rank))
    z = rng.normal(0, 1, (n, rank)) + centers[y]
    x = z @ rng.normal(0, 1, (rank, d)) + rng.normal(0, 1.0, (n, d))
    x = x * 10.0 ** rng.uniform(-1, 1, d) + rng.normal(0, 20, d)
    x = x.astype(np.float32)
    np.savez(path, X_train=x[:n_train], y_train=y[:n_train], X_test=x[n_train:], y_test=y[n_train:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the smaller cases only")
    ap.add_argument("--native-blas", action="store_true",
                    help="unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for sklearn")
    ap.add_argument("--geneb", help="a geneb binary to use instead of building one")
    args = ap.parse_args()
    if args.geneb is None:
        root = os.path.join(HERE, "..")
        target = os.path.join(root, "target", "light")
        subprocess.run(["cargo", "build", "--release", "--quiet", "--no-default-features",
                        "--features", "cli", "--bin", "geneb"],
                       cwd=root, env={**os.environ, "CARGO_TARGET_DIR": target}, check=True)
        args.geneb = os.path.join(target, "release", "geneb")
    print(f"geneb: {os.path.normpath(args.geneb)}")
    os.makedirs(DATA, exist_ok=True)
    drop = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if args.native_blas else ()
    env = {k: v for k, v in os.environ.items() if k not in drop}
    print(f"{'n_train':>7} {'d':>5} {'k':>2} | {'sklearn s':>9} {'it':>4} | {'geneb s':>8} {'it':>4} | "
          f"{'speedup':>7} | {'agree':>6} | MCC sk / geneb")
    for i, (ntr, nte, d, k) in enumerate(QUICK if args.quick else CASES):
        path = os.path.join(DATA, f"probe_{ntr}x{d}_k{k}.npz")
        make(path, ntr, nte, d, k, seed=i)
        sk = json.loads(subprocess.run([sys.executable, "-c", SKLEARN, path], env=env,
                                       capture_output=True, text=True, check=True).stdout)
        t = time.perf_counter()
        out = subprocess.run([args.geneb, "probe", "--npz", path], capture_output=True, text=True)
        geneb_s = time.perf_counter() - t
        if out.returncode != 0:
            sys.exit(f"geneb failed: {out.stderr}")
        ge = json.loads(out.stdout)
        z = np.load(path)
        sk_pred, ge_pred = np.array(sk["predictions"]), np.array(ge["predictions"])
        from sklearn.metrics import matthews_corrcoef
        print(f"{ntr:>7} {d:>5} {k:>2} | {sk['seconds']:>9.2f} {sk['n_iter']:>4} | {geneb_s:>8.2f} "
              f"{ge.get('n_iter', -1):>4} | {sk['seconds'] / geneb_s:>6.2f}x | "
              f"{np.mean(sk_pred == ge_pred):>6.4f} | {matthews_corrcoef(z['y_test'], sk_pred):.4f} / "
              f"{ge['MCC']:.4f}", flush=True)


if __name__ == "__main__":
    main()
