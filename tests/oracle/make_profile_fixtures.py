"""Expected profile statistics from numpy/scipy/scikit-learn, for tests/profile.rs.

The bootstrap recipe is the one src/profile/bootstrap.rs documents:
    rng = RandomState((seed + zlib.crc32(task_id)) % 2**32)
    per replicate: idx = rng.randint(0, n, size=n); replicate = mean over fits of
    matthews_corrcoef(y_true[idx], y_pred[idx])
    interval = numpy.percentile(replicates, [2.5, 97.5])
Category replicate = mean of its tasks' replicates; the paired test subtracts two models'
category replicates (same indices) and reports p = min(1, 2 min(#<=0, #>=0) / B).

Labels and predictions are synthetic (seeded), stored as plain lists in the fixture.

Usage: python3 tests/oracle/make_profile_fixtures.py > tests/fixtures/profile/expected.json
"""

import json
import zlib

import numpy as np
import scipy.stats
from sklearn.metrics import matthews_corrcoef

SEED = 7
B = 200


def noisy(rng, y, n_classes, accuracy):
    """Predictions that equal y with probability `accuracy`, else a random class."""
    wrong = rng.randint(0, n_classes, size=len(y))
    return np.where(rng.random_sample(len(y)) < accuracy, y, wrong)


def task_seed(seed, task):
    return (seed + zlib.crc32(task.encode())) % 2**32


def replicates(task, y_true, fits):
    rng = np.random.RandomState(task_seed(SEED, task))
    n = len(y_true)
    out = []
    for _ in range(B):
        idx = rng.randint(0, n, size=n)
        out.append(np.mean([matthews_corrcoef(y_true[idx], f[idx]) for f in fits]))
    return np.array(out)


def interval(values):
    lo, hi = np.percentile(values, [2.5, 97.5])
    return [float(lo), float(hi)]


def main():
    data = np.random.RandomState(2026)
    # Two tasks of one category: a 3-class task (n=150) and a binary one (n=90).
    tasks = {"three_class_task": (150, 3), "binary_task": (90, 2)}
    out = {"seed": SEED, "replicates": B, "tasks": {}, "models": ["A", "B"]}
    per_model = {"A": [], "B": []}
    for task, (n, k) in tasks.items():
        y = data.randint(0, k, size=n)
        # Model A: one full-data fit; model B: five few-shot fits (one per seed).
        fits = {"A": [noisy(data, y, k, 0.7)], "B": [noisy(data, y, k, 0.62) for _ in range(5)]}
        entry = {"y_true": y.tolist(), "task_seed": task_seed(SEED, task), "models": {}}
        for model, model_fits in fits.items():
            reps = replicates(task, y, model_fits)
            per_model[model].append(reps)
            entry["models"][model] = {
                "fits": [f.tolist() for f in model_fits],
                "mcc": float(np.mean([matthews_corrcoef(y, f) for f in model_fits])),
                "replicates": reps.tolist(),
                "interval": interval(reps),
            }
        out["tasks"][task] = entry
    category = {m: np.mean(per_model[m], axis=0) for m in per_model}
    out["category_interval"] = {m: interval(category[m]) for m in category}
    deltas = category["A"] - category["B"]
    p = min(1.0, 2 * min(np.sum(deltas <= 0), np.sum(deltas >= 0)) / B)
    out["paired_A_minus_B"] = {"interval": interval(deltas), "p": float(p)}

    # The raw resampling stream: RandomState(13).randint(0, 20, size=20), then 5 more of n=1000.
    rng = np.random.RandomState(13)
    out["randint_seed13"] = {
        "n20": rng.randint(0, 20, size=20).tolist(),
        "then_n1000": rng.randint(0, 1000, size=1000)[:25].tolist(),
    }
    out["crc32"] = {t: zlib.crc32(t.encode()) for t in ["promoter_tata", "ü-task", ""]}

    # Rank statistics with ties, as scipy computes them.
    x = data.randint(0, 6, size=25).astype(float)
    y = (x + data.randint(0, 4, size=25)).astype(float)
    out["ranks"] = {
        "x": x.tolist(),
        "y": y.tolist(),
        "spearman": float(scipy.stats.spearmanr(x, y).statistic),
        "kendall_tau_b": float(scipy.stats.kendalltau(x, y).statistic),
        "percentiles": {str(q): float(np.percentile(y, q)) for q in [2.5, 25, 50, 97.5]},
    }
    json.dump(out, __import__("sys").stdout, indent=1)


main()
