"""How far GENEB's probe moves MCC when the embeddings change in their last bits.

    python3 bench/probe_sensitivity.py [--geneb PATH] [--model SPEC] [--out DIR]

For each task of the offline suite (tasks/offline): `geneb embed` of its train and test
sequences (kept in DIR, reused), then scikit-learn's LogisticRegression(max_iter=1000), the
protocol's probe, fitted on those embeddings and again on the same embeddings with every value
moved by one float32 ulp in a random direction (numpy.nextafter), in the three regimes (full
data; 10 and 1 examples per class with PROTOCOL.md's sampler and seeds). Prints each fit whose
MCC changed and how many did. lbfgs stops at tol = 1e-4 after a number of iterations that a last
bit can change, so the page's embeddings (other kernels, other rounding) cannot be expected to
give the CLI's MCCs exactly; this measures by how much they may differ (bench/suite_bench.mjs).
"""
import argparse
import csv
import json
import os
import subprocess
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import matthews_corrcoef

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SEEDS = [13, 17, 42, 123, 997]
REGIMES = [("full", None), ("10shot", 10), ("1shot", 1)]


def embed(args, name, sequences):
    path = os.path.join(args.out, name + ".npy")
    if not os.path.exists(path):
        listing = os.path.join(args.out, name + ".txt")
        with open(listing, "w") as f:
            f.write("\n".join(sequences) + "\n")
        subprocess.run([args.geneb, "embed", "--model", args.model, "--input", listing, "--out", path], check=True)
    return np.load(path)


def fewshot(y, k, seed):
    """PROTOCOL.md's sampler: one RandomState per seed, classes in sorted order."""
    rng = np.random.RandomState(seed)
    return np.concatenate([rng.choice(np.flatnonzero(y == c), size=min(k, int((y == c).sum())), replace=False)
                           for c in np.unique(y)])


def fit(x_train, y_train, x_test, y_test):
    clf = LogisticRegression(max_iter=1000).fit(x_train, y_train)
    return matthews_corrcoef(y_test, clf.predict(x_test)), int(clf.n_iter_[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--geneb", default=os.path.join(ROOT, "target", "release", "geneb"))
    ap.add_argument("--model", default="hf:" + os.path.join(ROOT, "target", "bench-models", "nt-v2-50m"))
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "probe-sensitivity"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    warnings.simplefilter("ignore")  # lbfgs convergence warnings: the protocol's max_iter
    rng = np.random.default_rng(0)

    def one_ulp(x):
        return np.nextafter(x, np.where(rng.random(x.shape) < 0.5, np.inf, -np.inf).astype(np.float32))

    tasks = json.load(open(os.path.join(ROOT, "tasks", "offline", "tasks.json")))["tasks"]
    worst, fits, changed = {r: 0.0 for r, _ in REGIMES}, 0, 0
    for task in tasks:
        rows = list(csv.DictReader(open(os.path.join(ROOT, "tasks", "offline", f"{task['id']}.csv"))))
        train = [r for r in rows if r["split"] == "train"]
        test = [r for r in rows if r["split"] == "test"]
        labels = sorted({r["label"] for r in rows})
        y_train = np.array([labels.index(r["label"]) for r in train])
        y_test = np.array([labels.index(r["label"]) for r in test])
        x_train = embed(args, task["id"] + ".train", [r["text"] for r in train])
        x_test = embed(args, task["id"] + ".test", [r["text"] for r in test])
        moved_train, moved_test = one_ulp(x_train), one_ulp(x_test)
        for regime, k in REGIMES:
            for seed in [None] if k is None else SEEDS:
                rows_used = np.arange(len(y_train)) if k is None else fewshot(y_train, k, seed)
                a, iterations_a = fit(x_train[rows_used], y_train[rows_used], x_test, y_test)
                b, iterations_b = fit(moved_train[rows_used], y_train[rows_used], moved_test, y_test)
                fits += 1
                if a != b:
                    changed += 1
                    worst[regime] = max(worst[regime], abs(a - b))
                    print(f"{task['id']} {regime}{'' if seed is None else f' seed {seed}'}: MCC {a:.4f} vs {b:.4f} "
                          f"after one ulp (lbfgs iterations {iterations_a} vs {iterations_b})", flush=True)
    print(f"{changed} of {fits} fits changed MCC; max |ΔMCC| per regime: "
          + ", ".join(f"{r} {v:.1e}" for r, v in worst.items()))


if __name__ == "__main__":
    main()
