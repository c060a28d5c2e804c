"""Expected by-layer profile (src/profile/layers.rs) from numpy/scikit-learn, for tests/profile.rs.

Three hidden states (0, 1, 2 = the last) of one model, scored on three tasks in two categories
(Promoters: a binary and a 3-class task; Enhancers: one binary task), full data, one fit each.
The bootstrap recipe is src/profile/bootstrap.rs's (as make_profile_fixtures.py writes it):
    rng = RandomState((seed + zlib.crc32(task_id)) % 2**32)
    per replicate: idx = rng.randint(0, n, size=n); MCC of every layer's predictions on idx
A category's replicate is the mean of its tasks'; its interval numpy.percentile(.., [2.5, 97.5]).
The best layer has the highest category MCC (a tie goes to the deeper layer); its gain over the
last is best - last, tested on the paired replicate differences:
    interval = percentile(best* - last*, [2.5, 97.5]), p = min(1, 2 min(#<=0, #>=0) / B).

Usage: python3 tests/oracle/make_layer_profile_fixtures.py > tests/fixtures/profile/layers.json
"""

import json
import sys
import zlib

import numpy as np
from sklearn.metrics import matthews_corrcoef

SEED = 7
B = 200
LAYERS = [0, 1, 2]
# task → (category, n_test, classes, accuracy of layer 0, 1, 2): Promoters peak in the middle,
# Enhancers at the last layer.
TASKS = {
    "promoter_binary": ("Promoters", 120, 2, [0.6, 0.85, 0.7]),
    "promoter_three": ("Promoters", 80, 3, [0.55, 0.8, 0.65]),
    "enhancer_binary": ("Enhancers", 100, 2, [0.55, 0.65, 0.8]),
}


def noisy(rng, y, n_classes, accuracy):
    """Predictions that equal y with probability `accuracy`, else a random class."""
    wrong = rng.randint(0, n_classes, size=len(y))
    return np.where(rng.random_sample(len(y)) < accuracy, y, wrong)


def interval(values):
    lo, hi = np.percentile(values, [2.5, 97.5])
    return [float(lo), float(hi)]


def main():
    data = np.random.RandomState(39)
    out = {"seed": SEED, "replicates": B, "last_layer": LAYERS[-1], "tasks": {}, "categories": {}}
    # category → layer → [task MCCs], [task replicate arrays]
    points = {}
    reps = {}
    for task, (category, n, k, accuracy) in TASKS.items():
        y = data.randint(0, k, size=n)
        preds = [noisy(data, y, k, a) for a in accuracy]
        rng = np.random.RandomState((SEED + zlib.crc32(task.encode())) % 2**32)
        replicates = [[] for _ in LAYERS]
        for _ in range(B):
            idx = rng.randint(0, n, size=n)
            for layer in LAYERS:
                replicates[layer].append(matthews_corrcoef(y[idx], preds[layer][idx]))
        out["tasks"][task] = {
            "category": category,
            "y_true": y.tolist(),
            "predictions": [p.tolist() for p in preds],
            "mcc": [float(matthews_corrcoef(y, p)) for p in preds],
        }
        for layer in LAYERS:
            points.setdefault(category, {}).setdefault(layer, []).append(matthews_corrcoef(y, preds[layer]))
            reps.setdefault(category, {}).setdefault(layer, []).append(np.array(replicates[layer]))
    for category in points:
        mcc = [float(np.mean(points[category][layer])) for layer in LAYERS]
        category_reps = [np.mean(reps[category][layer], axis=0) for layer in LAYERS]
        best = max(LAYERS, key=lambda layer: (mcc[layer], layer))
        last = LAYERS[-1]
        entry = {
            "mcc": mcc,
            "interval": [interval(r) for r in category_reps],
            "best_layer": best,
            "gain": mcc[best] - mcc[last],
        }
        if best != last:
            deltas = category_reps[best] - category_reps[last]
            entry["test"] = {
                "interval": interval(deltas),
                "p": float(min(1.0, 2 * min(np.sum(deltas <= 0), np.sum(deltas >= 0)) / B)),
            }
        out["categories"][category] = entry
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
