"""Expected splits of tables without a split column from scikit-learn itself, for tests/split.rs.

geneb's train/test split is `train_test_split(rows, test_size=f, random_state=seed, stratify=y)`
and its k-fold `StratifiedKFold(k, shuffle=True, random_state=seed)`; this records what
scikit-learn returns for label vectors built from the same recipe as tests/fewshot.rs (`counts[c]`
rows of class c, row i of that layout moved to (i * step) % n).

Usage: python3 tests/oracle/make_split_fixtures.py > tests/fixtures/split/expected.json
(scikit-learn 1.7.2, numpy 2.4.6 when the committed file was made).
"""

import json
import math

import numpy as np
import sklearn
from sklearn.model_selection import StratifiedKFold, train_test_split

CASES = [
    ("binary_balanced", [20, 20], 7),
    ("binary_imbalanced", [5, 97], 11),
    ("three_classes", [13, 7, 30], 17),
    ("ties_in_remainders", [5, 5, 5, 4], 5),
    ("nine_classes", [2, 5, 9, 10, 11, 100, 37, 4, 40], 31),
    ("larger_binary", [700, 331], 1009),
]
FRACTIONS = [0.2, 0.25, 0.5, 0.33]
SEEDS = [42, 0, 7, 2**32 - 1]
FOLDS = [2, 5]


def labels(counts, step):
    n = sum(counts)
    assert math.gcd(step, n) == 1, "step must be coprime to n"
    blocks = np.repeat(np.arange(len(counts)), counts)
    y = np.empty(n, dtype=np.int64)
    y[(np.arange(n, dtype=np.int64) * step) % n] = blocks
    return y


def main():
    cases = []
    for name, counts, step in CASES:
        y = labels(counts, step)
        rows = np.arange(len(y))
        splits = []
        for fraction in FRACTIONS:
            for seed in SEEDS:
                train, test = train_test_split(rows, test_size=fraction, random_state=seed, stratify=y)
                splits.append({"test_fraction": fraction, "seed": seed,
                               "train": train.tolist(), "test": test.tolist()})
        folds = []
        for k in FOLDS:
            if min(counts) < k:
                continue
            for seed in SEEDS:
                cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
                folds.append({"folds": k, "seed": seed,
                              "test": [test.tolist() for _, test in cv.split(rows, y)]})
        cases.append({"name": name, "counts": counts, "step": step, "splits": splits, "folds": folds})
    print(json.dumps({"sklearn": sklearn.__version__, "numpy": np.__version__, "cases": cases}))


if __name__ == "__main__":
    main()
