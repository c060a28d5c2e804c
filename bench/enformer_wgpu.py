"""What one Enformer sequence costs geneb on wgpu, beside the CPU backend (issue 37).

    python3 bench/enformer_wgpu.py --geneb PATH [--model DIR] [--dir WORK] [--input FASTA]
                                   [--sequences 1] [--backends wgpu,cpu] [--timeout S]
                                   [--reference NPY] [--profile]

Every Enformer input is 196,608 bp whatever the sequence's length, so one sequence is one whole
pass: the figure issue 37 asks for. Needs python3 and numpy only (bench/gpu-check.sh runs it on
a lent GPU machine, which has no PyTorch):

1. The checkpoint: --model DIR (e.g. tests/oracle/make_enformer_fixtures.py --real-shape DIR,
   enformer-pytorch's own), else bench/random_models.py's `enformer` (enformer-official-rough's
   shape, numpy's random weights, seed 0) written to WORK/enformer unless already there.
2. The sequences: the first --sequences records of --input, else that many random 1,000-nt ones
   (the seed bench/fullsize_bench.py uses).
3. `geneb embed --backend B` for each backend, measured by bench/measure.py (wall and CPU
   seconds and peak RSS from the kernel; the seconds after the model's files were read are the
   embedding's), each stopped after --timeout seconds; on wgpu also the bytes the GPU holds
   after the pass (geneb's `peak_gpu_memory_bytes` figure, printed by `geneb embed`).
4. max |wgpu - CPU| over the embeddings, and each against --reference (row i, sequence i).
With --profile, wgpu runs again with --profile-kernels (5 more warm passes; GPU time per kernel
to WORK/profile.json): cheap on a GPU, hours on a software one.

Prints one JSON object; exits 1 if a run failed or wgpu and the CPU differ by more than 1e-3.
"""

import argparse
import json
import os
import random
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_models  # noqa: E402
from measure import loadavg, measured  # noqa: E402

TOLERANCE = 1e-3


def fasta_records(path):
    records, current = [], None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith(">"):
                current = []
                records.append(current)
            elif current is not None:
                current.append(line)
    return ["".join(r) for r in records]


def run_geneb(geneb, model, fasta, out, backend, timeout, extra=()):
    command = [geneb, "embed", "--model", f"hf:{model}", "--input", fasta, "--out", out,
               "--backend", backend, *extra]
    try:
        costs, _, err = measured(command, watch=True, timeout=timeout)
    except SystemExit as failed:
        return {"command": " ".join(command), "failed": str(failed)[-500:], "load_average_after": loadavg()}
    held = re.search(r"the GPU holds (\d+) bytes", err)
    if held:
        costs["gpu_bytes_after_pass"] = int(held.group(1))
    costs["command"] = " ".join(command)
    costs["said"] = err.strip().splitlines()
    return costs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--geneb", required=True)
    ap.add_argument("--model", help="an Enformer folder; default: a random one in WORK/enformer")
    ap.add_argument("--dir", default="/tmp/geneb-enformer", help="WORK: the outputs (and the checkpoint)")
    ap.add_argument("--input", help="a FASTA file; default: random 1,000-nt sequences")
    ap.add_argument("--sequences", type=int, default=1)
    ap.add_argument("--backends", default="wgpu,cpu")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed to each geneb run")
    ap.add_argument("--reference", help="a float32 .npy: row i is sequence i's embedding")
    ap.add_argument("--profile", action="store_true", help="also --profile-kernels on wgpu")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    report = {"sequences": args.sequences, "load_average_start": loadavg()}
    model = args.model
    if not model:
        model = os.path.join(args.dir, "enformer")
        if not os.path.exists(os.path.join(model, "model.safetensors")):
            written, _, _ = measured([sys.executable, random_models.__file__, args.dir, "--models", "enformer"])
            report["write"] = written
    report["model"] = model
    if args.input:
        texts = fasta_records(args.input)[: args.sequences]
    else:
        rng = random.Random(1000)
        texts = ["".join(rng.choice("ACGT") for _ in range(1000)) for _ in range(args.sequences)]
    fasta = os.path.join(args.dir, f"sequences{args.sequences}.fa")
    with open(fasta, "w") as f:
        f.write("".join(f">s{i}\n{t}\n" for i, t in enumerate(texts)))
    embeddings, failed = {}, []
    for backend in args.backends.split(","):
        out = os.path.join(args.dir, f"{backend}{args.sequences}.npy")
        run = report[backend] = run_geneb(args.geneb, model, fasta, out, backend, args.timeout)
        if "failed" in run:
            failed.append(f"{backend}: {run['failed']}")
            continue
        embeddings[backend] = np.load(out)
        if args.reference:
            reference = np.load(args.reference)[: len(texts)]
            run["max_abs_delta_vs_reference"] = float(np.abs(embeddings[backend] - reference).max())
    if "wgpu" in embeddings and "cpu" in embeddings:
        report["max_abs_delta_wgpu_cpu"] = float(np.abs(embeddings["wgpu"] - embeddings["cpu"]).max())
        if not report["max_abs_delta_wgpu_cpu"] <= TOLERANCE:
            failed.append(f"wgpu and the CPU differ by {report['max_abs_delta_wgpu_cpu']:.1e}")
    if args.profile and "wgpu" in embeddings:
        profile = os.path.join(args.dir, "profile.json")
        run = report["wgpu_profile"] = run_geneb(args.geneb, model, fasta, os.path.join(args.dir, "profiled.npy"),
                                                 "wgpu", args.timeout, ["--profile-kernels", profile])
        if "failed" in run:
            failed.append(f"--profile-kernels: {run['failed']}")
    report["load_average_end"] = loadavg()
    print(json.dumps(report, indent=2))
    if failed:
        sys.exit("enformer_wgpu: " + "; ".join(failed))


if __name__ == "__main__":
    main()
