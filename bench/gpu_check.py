"""Native half of bench/gpu-check.sh: `geneb embed` on wgpu vs on the CPU, same weights, same DNA.

    python3 bench/gpu_check.py --geneb PATH --out DIR [--models a,b] [--lengths 200,1000] [--count N]

Needs python3 and numpy only. Writes the four bench-shaped random checkpoints with
bench/random_models.py (seed 0) into DIR/<model>, cuts the same real DNA as bench/model_bench.py
into sequences of each length, and times geneb on each backend as model_bench.py does
(seq/s = (N - 1) / (t_N - t_1), N repeated until the run lasts 2 s more than the 1-sequence one).
Prints per model and length: seq/s on the CPU and on wgpu, their ratio, max |wgpu - CPU| of the
embeddings (over 1e-3 fails the run: exit 1 at the end), and the kernel launches of one forward
pass on one sequence (`geneb embed --count-kernels`). The sequences and the CPU embeddings go to
DIR/runs/<model>_<length>/{seqs.txt,geneb_cpu.npy}, where bench/browser_bench.mjs
--models-dir DIR --reference geneb_cpu.npy reads them; the figures to DIR/results.json.
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_bench  # noqa: E402  (numpy and the standard library only at import)
import random_models  # noqa: E402

TOLERANCE = 1e-3


def count_launches(geneb, folder, text, work):
    """(launches, adapter) of one forward pass on one sequence, from --count-kernels."""
    fasta = os.path.join(work, "count.fa")
    model_bench.write_fasta(fasta, [text])
    command = [geneb, "embed", "--model", f"hf:{folder}", "--input", fasta, "--out",
               os.path.join(work, "count.npy"), "--backend", "wgpu", "--count-kernels"]
    run = subprocess.run(command, capture_output=True, text=True)
    found = re.search(r"(\d+) kernel launches and (\d+) host reads for 1 sequences \((.*)\)$", run.stderr, re.M)
    if run.returncode != 0 or not found:
        return None, (run.stderr.strip().splitlines() or ["no output"])[-1]
    return int(found.group(1)), found.group(3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--geneb", required=True, help="a release geneb binary")
    ap.add_argument("--out", required=True, help="folder for the checkpoints, sequences and results")
    ap.add_argument("--models", default=",".join(random_models.MODELS))
    ap.add_argument("--lengths", default="200,1000")
    ap.add_argument("--count", type=int, default=16, help="sequences per length")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="RAYON_NUM_THREADS")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed to one geneb run")
    args = ap.parse_args()
    rows, failures = [], []
    print(f"{'model, length':<24} {'cpu seq/s':>10} {'wgpu seq/s':>10} {'wgpu/cpu':>8} "
          f"{'max |d|':>8} {'launches/pass':>13}  adapter")
    for name in args.models.split(","):
        if name not in random_models.BUILDERS:
            sys.exit(f"gpu_check: unknown model '{name}'; choose from {', '.join(random_models.BUILDERS)}")
        folder = os.path.join(args.out, name)
        if not os.path.exists(os.path.join(folder, "model.safetensors")):
            random_models.write_model(args.out, name, seed=0)
        for length in (int(n) for n in args.lengths.split(",")):
            texts = model_bench.sequences(length, args.count)
            work = os.path.join(args.out, "runs", f"{name}_{length}")
            os.makedirs(work, exist_ok=True)
            with open(os.path.join(work, "seqs.txt"), "w") as f:
                f.write("\n".join(texts) + "\n")
            row = {"model": name, "length": length, "n": len(texts)}
            for backend in ("cpu", "wgpu"):
                row[backend] = model_bench.time_geneb(args.geneb, folder, texts, backend, args.threads, work,
                                                      args.timeout)
            row["launches"], row["adapter"] = count_launches(args.geneb, folder, texts[0], work)
            cpu, gpu = row["cpu"], row["wgpu"]
            label = f"{name}, {length} nt"
            if "failed" in cpu or "failed" in gpu:
                reason = cpu.get("failed") or gpu.get("failed")
                failures.append(f"{label}: {reason}")
                print(f"{label:<24} FAILED {reason}", flush=True)
            else:
                np.save(os.path.join(work, "geneb_cpu.npy"), cpu["embeddings"])
                row["max_delta"] = float(np.abs(gpu["embeddings"] - cpu["embeddings"]).max())
                row["ratio"] = gpu["seq_s"] / cpu["seq_s"]
                if not row["max_delta"] <= TOLERANCE:
                    failures.append(f"{label}: wgpu and CPU embeddings differ by {row['max_delta']:.1e}")
                print(f"{label:<24} {cpu['seq_s']:>10.2f} {gpu['seq_s']:>10.2f} {row['ratio']:>7.2f}x "
                      f"{row['max_delta']:>8.1e} {row['launches'] if row['launches'] is not None else '-':>13}  "
                      f"{row['adapter']}", flush=True)
            for result in (cpu, gpu):
                result.pop("embeddings", None)
            rows.append(row)
    model_bench.write_json(os.path.join(args.out, "results.json"), {"threads": args.threads, "rows": rows})
    if failures:
        sys.exit("gpu_check: failures:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
