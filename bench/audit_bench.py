"""The leak audit's speed and memory: `geneb audit --json` on generated tables, timed with
/usr/bin/time (wall seconds, peak RSS).

Tables (written once to target/bench-data/audit/): `families` — N sequences of 200 nt, a third
of them near copies (shifted or mutated) of others, split 80/20 in file order; `near_identical`
— N copies of one 200-nt sequence, each with one base changed (the informative rule keeps the
index small; 600 variants, so most rows repeat one); `near_identical_distinct` — the same with
three bases changed per row, nearly every row distinct. N = 100,000 by default (`--rows`).

With `--seqleak PATH` (PyPI seqleak 0.4.1) the same table is audited by seqleak too, restricted to
the same checks at full sampling (`--checks overlap.exact,overlap.near,baseline.lookup
--sketch-scale 1 --homology off --threads N --out R.json --fail-on never --quiet`), the two alternating `--runs` times; the minimum
wall time and the minimum peak RSS of each are kept (the machine is shared) and geneb's speed and
memory are printed as ratios to seqleak's.

Run: python3 bench/audit_bench.py --geneb target/release/geneb [--seqleak /work/pyenv/bin/seqleak]
     [--rows 100000] [--threads 1,2] [--runs 3]
     [--tables families,near_identical,near_identical_distinct]
"""

import argparse
import json
import os
import random
import re
import subprocess


def random_seq(rng, n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def families(path, rows):
    rng = random.Random(1)
    with open(path, "w") as f:
        f.write("sequence,label,split\n")
        bases = []
        for i in range(rows):
            if bases and i % 3 == 0:
                s = rng.choice(bases)
                if rng.random() < 0.5:
                    cut = rng.randrange(20, 120)
                    s = s[cut:] + random_seq(rng, cut)
                else:
                    s = "".join(b if rng.random() > 0.02 else rng.choice("ACGT") for b in s)
            else:
                s = random_seq(rng, 200)
                bases.append(s)
                if len(bases) > 5000:
                    bases.pop(0)
            split = "train" if i < rows * 0.8 else "test"
            f.write(f"{s},{i % 2},{split}\n")


def near_identical(path, rows):
    rng = random.Random(2)
    base = random_seq(rng, 200)
    with open(path, "w") as f:
        f.write("sequence,label,split\n")
        for i in range(rows):
            p = rng.randrange(200)
            s = base[:p] + rng.choice([b for b in "ACGT" if b != base[p]]) + base[p + 1 :]
            split = "train" if i < rows * 0.8 else "test"
            f.write(f"{s},{i % 2},{split}\n")


def near_identical_distinct(path, rows):
    """As near_identical but three bases changed per row: nearly every row distinct, so
    reading each distinct sequence once gains nothing."""
    rng = random.Random(3)
    base = random_seq(rng, 200)
    with open(path, "w") as f:
        f.write("sequence,label,split\n")
        for i in range(rows):
            s = list(base)
            for p in rng.sample(range(200), 3):
                s[p] = rng.choice([b for b in "ACGT" if b != base[p]])
            split = "train" if i < rows * 0.8 else "test"
            f.write(f"{''.join(s)},{i % 2},{split}\n")


def timed(cmd, env):
    out = subprocess.run(
        ["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env, check=True
    )
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", out.stderr).group(1)
    parts = [float(p) for p in wall.split(":")]
    seconds = sum(p * 60 ** (len(parts) - 1 - i) for i, p in enumerate(parts))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1))
    return seconds, rss / 1024, out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--geneb", required=True)
    ap.add_argument("--seqleak")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--tables", default="families,near_identical,near_identical_distinct")
    args = ap.parse_args()
    root = os.path.join("target", "bench-data", "audit")
    os.makedirs(root, exist_ok=True)
    makers = {
        "families": families,
        "near_identical": near_identical,
        "near_identical_distinct": near_identical_distinct,
    }
    for name in args.tables.split(","):
        path = os.path.join(root, f"{name}_{args.rows}.csv")
        if not os.path.exists(path):
            makers[name](path, args.rows)
        for threads in args.threads.split(","):
            env = dict(os.environ, RAYON_NUM_THREADS=threads)
            ours, theirs = [], []
            for _ in range(args.runs):
                ours.append(timed([args.geneb, "audit", "--task", path, "--json"], env))
                if args.seqleak:
                    theirs.append(timed(seqleak_command(args.seqleak, path, threads), env))
            seconds, rss = min(r[0] for r in ours), min(r[1] for r in ours)
            task = json.loads(ours[0][2])["tasks"][0]
            print(
                f"{name} {args.rows} rows, {threads} thread(s): geneb {seconds:.2f} s, peak RSS "
                f"{rss:.0f} MiB; {len(task['leaked_test_rows'])} of {task['test']} test rows "
                f"leaked, nearest-neighbour MCC {task['nearest_neighbour_mcc']:.3f}"
            )
            if theirs:
                their_seconds, their_rss = min(r[0] for r in theirs), min(r[1] for r in theirs)
                print(
                    f"  seqleak {their_seconds:.2f} s, peak RSS {their_rss:.0f} MiB: geneb "
                    f"{their_seconds / seconds:.1f}x as fast with {rss / their_rss:.2f}x the memory"
                )


def seqleak_command(seqleak, path, threads):
    """seqleak restricted to geneb's checks, every k-mer counted (sampling scale 1)."""
    report = os.path.join("target", "bench-data", "audit", "seqleak_report.json")
    return [
        seqleak, "audit", "--data", path,
        "--checks", "overlap.exact,overlap.near,baseline.lookup",
        "--sketch-scale", "1", "--homology", "off", "--threads", threads,
        "--out", report, "--fail-on", "never", "--quiet",
    ]


if __name__ == "__main__":
    main()
