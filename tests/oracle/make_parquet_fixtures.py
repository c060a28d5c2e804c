"""Parquet task tables written by pyarrow, each beside the CSV it holds, for tests/parquet.rs and
tests/e2e/parquet.test.mjs: geneb must read the Parquet file to the very result of its CSV.

Rows come from the committed smoke suite (tasks/smoke, real genomes). One fixture per codec
(snappy is pyarrow's default, then gzip, lz4, zstd) and per layout (a table with a split column,
a hub-style train/test pair, a table without a split column with a group column), plus bad files.

Run from the repository root: python3 tests/oracle/make_parquet_fixtures.py
"""
import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path("tests/fixtures/parquet")
SOURCE = Path("tasks/smoke/smoke_yeast_vs_fly_species.csv")


def rows():
    with SOURCE.open(newline="") as f:
        all_rows = list(csv.DictReader(f))
    # 60 of each label from each split keeps the fixture small and both classes present.
    picked = []
    for split in ("train", "test"):
        for label in sorted({r["label"] for r in all_rows}):
            picked += [r for r in all_rows if r["split"] == split and r["label"] == label][:30]
    return picked


def write_csv(path, header, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(records)


def write_parquet(path, columns, codec):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path, compression=codec)


def main():
    picked = rows()
    text = [r["text"] for r in picked]
    label = [r["label"] for r in picked]
    split = [r["split"] for r in picked]

    # A GENEB table (text,label,split), labels as strings.
    write_csv(OUT / "csv/yeast_fly.csv", ["text", "label", "split"], zip(text, label, split))
    write_parquet(OUT / "snappy/yeast_fly.parquet",
                  {"text": text, "label": label, "split": split}, "snappy")

    # A hub dataset: data/train-00000-of-00001.parquet + test, integer labels, an extra column.
    ints = [int(x) for x in label]
    for part, codec in (("train", "gzip"), ("test", "lz4")):
        idx = [i for i, s in enumerate(split) if s == part]
        write_csv(OUT / f"pair-csv/hubtask/{part}.csv", ["sequence", "label"],
                  [(text[i], ints[i]) for i in idx])
        write_parquet(OUT / f"pair-parquet/hubtask/{part}-00000-of-00001.parquet",
                      {"sequence": [text[i] for i in idx],
                       "label": pa.array([ints[i] for i in idx], pa.int64()),
                       "source_row": pa.array(idx, pa.int32())}, codec)

    # No split column, a donor column to keep together: zstd (read natively only).
    donor = [f"donor{i // 4:02d}" for i in range(len(text))]
    write_csv(OUT / "unsplit-csv/donors.csv", ["text", "label", "donor"], zip(text, label, donor))
    write_parquet(OUT / "unsplit-zstd/donors.parquet",
                  {"text": text, "label": label, "donor": donor}, "zstd")
    write_parquet(OUT / "unsplit-snappy/donors.parquet",
                  {"text": text, "label": label, "donor": donor}, "snappy")

    # Bad input: no label column (the CSV gives the same error), a truncated file.
    write_csv(OUT / "bad-csv/nolabel.csv", ["text", "split"], zip(text[:4], split[:4]))
    write_parquet(OUT / "bad-parquet/nolabel.parquet",
                  {"text": text[:4], "split": split[:4]}, "snappy")
    whole = (OUT / "snappy/yeast_fly.parquet").read_bytes()
    # Magic bytes at both ends, the middle cut out: looks like Parquet, is not readable.
    (OUT / "bad-parquet/truncated.parquet").write_bytes(whole[:200] + whole[-64:])


if __name__ == "__main__":
    main()
