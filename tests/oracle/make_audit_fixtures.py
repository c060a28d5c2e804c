"""Planted leaks and their audit, computed independently of geneb (tests/audit.rs compares).

The definitions are the issue's (and src/input/audit.rs's module doc), implemented here on
strings and Python sets: canonical 21-mers over A/C/G/T-only windows, informative when at most
64 training rows hold one, containment, exact / reverse-complement / near copies, the
nearest-neighbour baseline (ties: the first training row; none shared: the majority label,
ties by sorted label) scored with scikit-learn's matthews_corrcoef.

Writes tests/fixtures/audit/: the task `planted` in four layouts (a table with a split column,
a train/test pair, a FASTA with label= and split= headers, a Parquet table), `all_leaked`
(every test row a copy), `unsplit` (no split column) with the similarity clusters of its rows,
and expected.json.

Run: /work/pyenv/bin/python tests/oracle/make_audit_fixtures.py
"""

import json
import os
import random

import numpy as np
from sklearn.metrics import matthews_corrcoef

K = 21
MAX_HOLDERS = 64
NEAR = 0.5
OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "audit")

IUPAC = set("RYSWKMBDHVN")
COMPLEMENT = {"A": "T", "C": "G", "G": "C", "T": "A", "N": "N"}


def normalise(raw):
    out = []
    for ch in raw.strip().upper():
        if ch == "U":
            out.append("T")
        elif ch in IUPAC:
            out.append("N")
        else:
            assert ch in "ACGT", ch
            out.append(ch)
    return "".join(out)


def revcomp(seq):
    return "".join(COMPLEMENT[b] for b in reversed(seq))


def kmers(seq):
    out = set()
    for i in range(len(seq) - K + 1):
        window = seq[i : i + K]
        if set(window) <= set("ACGT"):
            out.add(min(window, revcomp(window)))
    return out


def audit(train, train_labels, test, test_labels):
    train_sets = [kmers(s) for s in train]
    holders = {}
    for s in train_sets:
        for k in s:
            holders[k] = holders.get(k, 0) + 1
    train_seqs = set(train)
    sorted_labels = sorted(set(train_labels) | set(test_labels))
    counts = {lab: train_labels.count(lab) for lab in sorted_labels}
    majority = max(sorted_labels, key=lambda lab: (counts[lab], -sorted_labels.index(lab)))
    exact = rc = near = no_informative = 0
    leaked, predicted, containments = [], [], []
    for row, t in enumerate(test):
        informative = {k for k in kmers(t) if holders.get(k, 0) <= MAX_HOLDERS}
        shared = [len(informative & s) for s in train_sets]
        best = max(shared) if shared else 0
        c = best / len(informative) if informative else 0.0
        containments.append(c)
        if not informative:
            no_informative += 1
        if best > 0:
            predicted.append(train_labels[shared.index(best)])  # index: the first maximum
        else:
            predicted.append(majority)
        if t in train_seqs:
            exact += 1
            leaked.append(row)
        elif revcomp(t) in train_seqs:
            rc += 1
            leaked.append(row)
        elif c >= NEAR:
            near += 1
            leaked.append(row)
    labels_of = {}
    for s, lab in zip(train, train_labels):
        labels_of.setdefault(s, set()).add(lab)
    return {
        "train": len(train),
        "test": len(test),
        "exact_copies": exact,
        "reverse_complement_copies": rc,
        "near_copies": near,
        "leaked_test_rows": leaked,
        "nearest_neighbour_mcc": float(matthews_corrcoef(test_labels, predicted)),
        "conflicting_training_duplicates": sum(1 for v in labels_of.values() if len(v) > 1),
        "test_rows_without_informative_kmers": no_informative,
        # Not compared: shows how close the planted near copies sit to the threshold.
        "containments": [round(c, 4) for c in containments],
    }


def clusters(seqs):
    """Rows linked by equality, reverse complement or containment >= 0.5 either way, with
    informative meaning held by at most 64 rows of the table; each row's cluster named by its
    first row (1-based)."""
    sets = [kmers(s) for s in seqs]
    holders = {}
    for s in sets:
        for k in s:
            holders[k] = holders.get(k, 0) + 1
    parent = list(range(len(seqs)))

    def root(x):
        while parent[x] != x:
            x = parent[x]
        return x

    def link(a, b):
        ra, rb = root(a), root(b)
        parent[max(ra, rb)] = min(ra, rb)

    for a in range(len(seqs)):
        informative = {k for k in sets[a] if holders[k] <= MAX_HOLDERS}
        for b in range(len(seqs)):
            if a == b:
                continue
            if seqs[a] == seqs[b] or seqs[a] == revcomp(seqs[b]):
                link(a, b)
            elif informative and len(informative & sets[b]) / len(informative) >= NEAR:
                link(a, b)
    return [f"cluster of row {root(r) + 1}" for r in range(len(seqs))]


def random_seq(rng, n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def mutate(rng, seq, every):
    out = list(seq)
    for i in range(every // 2, len(out), every):
        out[i] = rng.choice([b for b in "ACGT" if b != out[i]])
    return "".join(out)


def mixed_case(rng, seq):
    return "".join(b.lower() if rng.random() < 0.5 else b for b in seq)


def planted():
    rng = random.Random(38)
    labels = ["exon", "intron", "utr"]
    train, train_labels = [], []
    # 20 / 20 / 12 rows per class: the majority label ties between exon and intron.
    for lab, n in zip(labels, [20, 20, 12]):
        for _ in range(n):
            train.append(random_seq(rng, 200))
            train_labels.append(lab)
    order = list(range(len(train)))
    rng.shuffle(order)
    train = [train[i] for i in order]
    train_labels = [train_labels[i] for i in order]
    # More training rows to carry the repeats: 70 with a 40-nt repeat (not informative),
    # 64 of them with another (informative: held by exactly 64).
    repeat70, repeat64 = random_seq(rng, 40), random_seq(rng, 40)
    for i in range(70):
        head = random_seq(rng, 60)
        middle = repeat64 if i < 64 else random_seq(rng, 40)
        train.append(head + repeat70 + middle + random_seq(rng, 60))
        train_labels.append(labels[i % 2])  # exon / intron: the majority tie stays
    # A conflicting duplicate, and a training row shorter than 21 nt.
    conflicting = "utr" if train_labels[3] != "utr" else "exon"
    train.append(train[3])
    train_labels.append(conflicting)
    train.append("ACGTACGTAC")
    train_labels.append("utr" if conflicting == "utr" else "intron")
    assert train_labels.count("exon") == train_labels.count("intron"), "the majority must tie"

    test_raw, test_labels = [], []

    def add(seq, lab):
        test_raw.append(seq)
        test_labels.append(lab)

    # Exact copies: mixed case, and written as RNA (U).
    add(mixed_case(rng, train[0]), train_labels[0])
    add(train[1].replace("T", "U"), train_labels[1])
    add(train[2].lower().replace("t", "u"), "utr")
    # Reverse-complement copies.
    add(revcomp(train[4]), train_labels[4])
    add(mixed_case(rng, revcomp(train[5])), train_labels[5])
    # Shifted near copies around containment 0.5 (180 windows; shift s keeps 180 - s).
    for j, shift in enumerate([80, 88, 89, 90, 91, 92, 100, 120]):
        s = train[6 + j]
        add(s[shift:] + random_seq(rng, shift), train_labels[6 + j] if j % 2 else "utr")
    # The same shifted the other way, reverse complemented.
    add(revcomp(random_seq(rng, 90) + train[14][:110]), train_labels[14])
    # Mutated near copies: a base changed every `every` positions.
    for j, every in enumerate([60, 45, 42, 40, 38, 30, 20]):
        add(mutate(rng, train[15 + j], every), train_labels[15 + j])
    # A tie: half of one training row, half of another: the first row's label wins.
    add(train[22][:100] + train[23][100:], train_labels[23])
    # The repeats inside otherwise new sequences.
    add(random_seq(rng, 50) + train[52][60:100] + random_seq(rng, 50), "exon")
    add(random_seq(rng, 30) + train[52][100:140] + random_seq(rng, 30), "intron")
    # Only the >64 repeat: no informative 21-mer is shared, and every 21-mer of it is a repeat.
    add(train[52][60:100], "utr")
    # Shorter than 21 nt, and N-rich.
    add("ACGTACGTACGTACGTACG", "exon")
    add("acgun", "intron")
    add("".join(b if i % 15 else "N" for i, b in enumerate(random_seq(rng, 200))), "utr")
    add("NNNNNRYKMACGTNNNNNNNNNNNNNNNNNNNNNNNNNACG", "exon")
    add("".join(b if i % 20 else "N" for i, b in enumerate(train[30])), train_labels[30])
    # Unrelated rows.
    for i in range(20):
        add(random_seq(rng, 150 + i), labels[i % 3])
    return train, train_labels, test_raw, test_labels


def write_layouts(name, train, train_labels, test_raw, test_labels):
    # The table: raw test sequences (mixed case, U), as a user's file may hold them.
    os.makedirs(os.path.join(OUT, "table"), exist_ok=True)
    with open(os.path.join(OUT, "table", f"{name}.csv"), "w") as f:
        f.write("label,split,sequence\n")
        for s, lab in zip(train, train_labels):
            f.write(f"{lab},train,{s}\n")
        for s, lab in zip(test_raw, test_labels):
            f.write(f"{lab},test,{s}\n")
    pair = os.path.join(OUT, "pair", name)
    os.makedirs(pair, exist_ok=True)
    for part, seqs, labs in [("train", train, train_labels), ("test", test_raw, test_labels)]:
        with open(os.path.join(pair, f"{part}.tsv"), "w") as f:
            f.write("sequence\tlabel\n")
            for s, lab in zip(seqs, labs):
                f.write(f"{s}\t{lab}\n")
    os.makedirs(os.path.join(OUT, "fasta"), exist_ok=True)
    with open(os.path.join(OUT, "fasta", f"{name}.fa"), "w") as f:
        rows = [("train", s, lab) for s, lab in zip(train, train_labels)]
        rows += [("test", s, lab) for s, lab in zip(test_raw, test_labels)]
        for i, (part, s, lab) in enumerate(rows):
            f.write(f">r{i} label={lab} split={part}\n")
            for j in range(0, len(s), 60):
                f.write(s[j : j + 60] + "\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(os.path.join(OUT, "parquet"), exist_ok=True)
    table = pa.table(
        {
            "sequence": train + test_raw,
            "label": train_labels + test_labels,
            "split": ["train"] * len(train) + ["test"] * len(test_raw),
        }
    )
    pq.write_table(table, os.path.join(OUT, "parquet", f"{name}.parquet"))


def main():
    expected = {}
    train, train_labels, test_raw, test_labels = planted()
    write_layouts("planted", train, train_labels, test_raw, test_labels)
    test = [normalise(s) for s in test_raw]
    expected["planted"] = audit(train, train_labels, test, test_labels)

    # Every test row leaks: exact, reverse-complement and near copies only.
    rng = random.Random(7)
    train2 = [random_seq(rng, 120) for _ in range(12)]
    labels2 = ["0", "1"] * 6
    test2 = [train2[0], revcomp(train2[1]), train2[2][10:] + "ACGTACGTAC", train2[3]]
    tlabels2 = ["0", "1", "0", "1"]
    os.makedirs(os.path.join(OUT, "leaked"), exist_ok=True)
    with open(os.path.join(OUT, "leaked", "all_leaked.csv"), "w") as f:
        f.write("sequence,label,split\n")
        for s, lab in zip(train2, labels2):
            f.write(f"{s},{lab},train\n")
        for s, lab in zip(test2, tlabels2):
            f.write(f"{s},{lab},test\n")
    expected["all_leaked"] = audit(train2, labels2, test2, tlabels2)

    # A table without a split column: families of relatives (copies, reverse complements,
    # shifted copies, chains of near copies) among unrelated rows.
    rng = random.Random(40)
    rows, row_labels = [], []
    for family in range(12):
        base = random_seq(rng, 160)
        members = [base, revcomp(base), base[30:] + random_seq(rng, 30)]
        if family % 3 == 2:
            # A chain: each member a near copy of the previous only.
            members.append(members[-1][40:] + random_seq(rng, 40))
        for m in members[: 2 + family % 3]:
            rows.append(m)
            row_labels.append(str(family % 2))
    for i in range(30):
        rows.append(random_seq(rng, 140))
        row_labels.append(str(i % 2))
    order = list(range(len(rows)))
    rng.shuffle(order)
    rows = [rows[i] for i in order]
    row_labels = [row_labels[i] for i in order]
    os.makedirs(os.path.join(OUT, "unsplit"), exist_ok=True)
    with open(os.path.join(OUT, "unsplit", "unsplit.csv"), "w") as f:
        f.write("sequence,label\n")
        for s, lab in zip(rows, row_labels):
            f.write(f"{s},{lab}\n")
    expected["unsplit_clusters"] = clusters(rows)

    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print({lab: train_labels.count(lab) for lab in sorted(set(train_labels))})
    print(json.dumps({k: v for k, v in expected["planted"].items() if k != "containments"}))
    print(sorted(expected["planted"]["containments"]))


if __name__ == "__main__":
    main()
