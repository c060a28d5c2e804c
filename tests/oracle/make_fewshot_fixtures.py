"""Expected few-shot subsets from numpy itself, for tests/fewshot.rs.

Runs the GENEB reference sampler (one RandomState(seed); per class in label order,
rng.choice(np.where(y == c)[0], size=min(k, n_c), replace=False); concatenated) on label
vectors built from a recipe, so the fixture stores recipes, not 100k-long label vectors.

Recipe (tests/fewshot.rs builds the same vector): `counts[c]` rows of class c, laid out
class by class, then row i of that layout moved to position (i * step) % n, with
gcd(step, n) == 1 so it is a permutation. A count of 0 is a class that occurs only in test.

Usage: python3 tests/oracle/make_fewshot_fixtures.py > tests/fixtures/fewshot/expected.json
"""

import json
import math

import numpy as np

SEEDS = [13, 17, 42, 123, 997, 0, 1, 2**32 - 1]
KS = [1, 10, 0, 2, 50]

CASES = [
    ("binary_balanced", [20, 20], 7),
    ("binary_imbalanced", [3, 500], 11),
    ("binary_blocks_unshuffled", [40, 25], 1),
    ("three_classes_one_test_only", [50, 0, 30], 17),
    ("pools_smaller_than_k", [1, 2, 4, 9], 5),
    ("five_classes", [200, 150, 300, 250, 100], 101),
    ("nine_classes_mixed", [1, 5, 9, 10, 11, 100, 37, 2, 400], 31),
    ("pool_above_2_16", [65537, 3], 40009),
    ("large_binary_100k", [70000, 33000], 1000003),
]


def labels(counts, step):
    n = sum(counts)
    assert math.gcd(step, n) == 1, "step must be coprime to n"
    blocks = np.repeat(np.arange(len(counts)), counts)
    y = np.empty(n, dtype=np.int64)
    y[(np.arange(n, dtype=np.int64) * step) % n] = blocks
    return y


def reference_sample(y, n_classes, k, seed):
    rng = np.random.RandomState(seed)
    picked = []
    for c in range(n_classes):
        pool = np.where(y == c)[0]
        picked.extend(int(i) for i in rng.choice(pool, size=min(k, len(pool)), replace=False))
    return picked


def main():
    cases = []
    for name, counts, step in CASES:
        y = labels(counts, step)
        expected = [
            {"k": k, "seed": seed, "indices": reference_sample(y, len(counts), k, seed)}
            for k in KS
            for seed in SEEDS
        ]
        cases.append({"name": name, "counts": counts, "step": step, "expected": expected})
    print(json.dumps({"numpy": np.__version__, "cases": cases}, separators=(",", ":")))


if __name__ == "__main__":
    main()
