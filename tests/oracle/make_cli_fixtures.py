"""Fixtures for tests/cli.rs, computed by the reference tools: numpy's legacy few-shot sampler
and scikit-learn's LogisticRegression(max_iter=1000). Rerun after changing the inputs:

    python3 tests/oracle/make_cli_fixtures.py
"""
import json
import os

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cli")
os.makedirs(OUT, exist_ok=True)

# Few-shot: 40 string labels of 3 classes; the reference subsets for two (k, seed) pairs.
rs = np.random.RandomState(0)
labels = [["promoter", "enhancer", "other"][i] for i in rs.choice(3, 40, p=[0.5, 0.3, 0.2])]
with open(os.path.join(OUT, "labels_3class.txt"), "w") as f:
    f.write("\n".join(labels) + "\n")
classes, y = np.unique(np.array(labels), return_inverse=True)
fewshot = []
for k, seed in [(10, 13), (1, 997), (3, 42)]:
    rng = np.random.RandomState(seed)
    picked = []
    for c in range(len(classes)):
        pool = np.where(y == c)[0]
        picked += [int(i) for i in rng.choice(pool, min(k, len(pool)), replace=False)]
    fewshot.append({"k": k, "seed": seed, "indices": picked})
with open(os.path.join(OUT, "fewshot_expected.json"), "w") as f:
    json.dump(fewshot, f)

# Probe: float32 embeddings, integer labels that are not 0..k-1 (so predictions must come back
# as label values), three classes, a little overlap.
rs = np.random.RandomState(1)
label_values = np.array([3, 7, 11])
def draw(n):
    c = rs.randint(0, 3, n)
    x = rs.normal(size=(n, 8)) + 1.5 * np.eye(3, 8)[c] * 2.0
    return x.astype(np.float32), label_values[c]
X_train, y_train = draw(90)
X_test, y_test = draw(40)
np.savez(os.path.join(OUT, "probe_small.npz"), X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test)
# The same arrays deflated, as np.savez_compressed writes them: the reader's other zip method.
np.savez_compressed(os.path.join(OUT, "probe_small_compressed.npz"), X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test)
clf = LogisticRegression(max_iter=1000).fit(X_train.astype(np.float64), y_train)
pred = clf.predict(X_test.astype(np.float64))
with open(os.path.join(OUT, "probe_expected.json"), "w") as f:
    json.dump({
        "predictions": [int(p) for p in pred],
        "MCC": matthews_corrcoef(y_test, pred),
        "Acc": accuracy_score(y_test, pred),
        "F1": f1_score(y_test, pred, average="macro"),
    }, f)
print("wrote", sorted(os.listdir(OUT)))
