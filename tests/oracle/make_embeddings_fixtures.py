"""Your own embeddings through the whole protocol, for tests/embeddings.rs.

Writes two tasks as a user would (numpy.savez and savez_compressed, with the optional `task` and
`category` strings), and for each the full-data and few-shot fits the GENEB reference runs: the
few-shot subsets from numpy's RandomState(seed) sampler (as in make_fewshot_fixtures.py) and
scikit-learn's LogisticRegression(max_iter=1000) on them, scored on the whole test split. The
classes are well separated, so the fits converge and their test predictions are the check; a
1-shot fit on another row would predict differently. Also one .npz whose X_test has the wrong width.

Usage: python3 tests/oracle/make_embeddings_fixtures.py tests/fixtures/own_embeddings
(scikit-learn 1.7.2, numpy 2.4.6 when the committed files were made).
"""

import json
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

SEEDS = [13, 17, 42, 123, 997]


def reference_sample(y, n_classes, k, seed):
    rng = np.random.RandomState(seed)
    picked = []
    for c in range(n_classes):
        pool = np.where(y == c)[0]
        picked.extend(int(i) for i in rng.choice(pool, size=min(k, len(pool)), replace=False))
    return picked


def make(rng, counts, n_test, dim, spread):
    centers = rng.normal(0, 3, size=(len(counts), dim))
    y_train = np.concatenate([np.full(n, c) for c, n in enumerate(counts)])
    rng.shuffle(y_train)
    y_test = rng.randint(0, len(counts), size=n_test)
    x = lambda y: (centers[y] + rng.normal(0, spread, size=(len(y), dim))).astype(np.float32)
    return x(y_train), y_train, x(y_test), y_test


def fits(x_train, y_train, x_test, n_classes):
    def fit(rows):
        clf = LogisticRegression(max_iter=1000).fit(x_train[rows], y_train[rows])
        return [int(v) for v in clf.predict(x_test)]
    out = {"full": [fit(np.arange(len(y_train)))]}
    for k, key in [(10, "10shot"), (1, "1shot")]:
        out[key] = [fit(reference_sample(y_train, n_classes, k, s)) for s in SEEDS]
        out[key + "_subsets"] = [reference_sample(y_train, n_classes, k, s) for s in SEEDS]
    return out


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(7)
    expected = {}
    xa, ya, ta, yta = make(rng, [30, 25, 35], 40, 6, 1.5)
    np.savez(out / "three_classes.npz", X_train=xa, y_train=ya, X_test=ta, y_test=yta,
             task="own_three", category="Promoters")
    expected["own_three"] = fits(xa, ya, ta, 3)
    xb, yb, tb, ytb = make(rng, [20, 40], 30, 4, 2.0)
    np.savez_compressed(out / "binary.npz", X_train=xb, y_train=yb, X_test=tb, y_test=ytb)
    expected["binary"] = fits(xb, yb, tb, 2)
    np.savez(out.parent / "own_embeddings_bad_shapes.npz", X_train=xa, y_train=ya,
             X_test=ta[:, :4], y_test=yta)
    (out / "expected.json").write_text(json.dumps(expected) + "\n")


if __name__ == "__main__":
    main()
