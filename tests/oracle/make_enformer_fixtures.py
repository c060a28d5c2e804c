"""Enformer oracle: GENEB's extractor lines over PyPI `enformer-pytorch` (version 0.8.12,
installed in the environment, never committed).

The extractor is `embedding_pipeline/extractors/enformer.py` of darlednik/GENEB at commit
9fcbcbd (the version that can have produced the published row; src/encoder/recipe.rs says
why): `from_pretrained(name_model, use_tf_gamma=False)`, each sequence upper-cased, U -> T,
centre-cropped or N-padded to 196,608 bp, one-hot (A C G T; N and anything else zeros), run
alone (batch size 1), and `out['human'].mean(dim=1)`.

Writes tests/fixtures/models/enformer/: a tiny randomly initialised Enformer (dim 48, depth 2,
2 heads, target length 32, heads human=10 and mouse=6) as the hub's checkpoints are laid out:
config.json and pytorch_model.bin holding the state dict as `torch.save` writes it (each trunk
tensor under its module's name and again under `_trunk.<i>`, one storage), and pipeline.json
(the sequences and their pooled embeddings). Every parameter and BatchNorm statistic is drawn
at random (the library's own init zeroes `to_out` and makes the pools plain averages, which
would hide mistakes there). The reference runs in float64, so geneb's f32 is judged by its own
rounding.

With --real-shape DIR it instead writes, to DIR (not committed: 1 GB), the published shape
(dim 1536, depth 11, 8 heads, 896 bins, human=5313, mouse=1643) with random weights and the
embeddings of two sequences, in float64 and, for scale, in float32 as the extractor ran it.

Run: python3 tests/oracle/make_enformer_fixtures.py [--real-shape DIR]
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
from enformer_pytorch import Enformer, from_pretrained

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/enformer"
SEQ_LENGTH = 196_608


def one_hot_seq(seq: str, seq_length: int):
    """The extractor's `one_hot_seq`, line for line."""
    mapping = {"A": 0, "C": 1, "G": 2, "T": 3}
    seq = seq.upper().replace("U", "T")
    L = len(seq)
    if L >= seq_length:
        start = (L - seq_length) // 2
        sub = seq[start : start + seq_length]
    else:
        pad = seq_length - L
        left = pad // 2
        sub = "N" * left + seq + "N" * (pad - left)
    arr = np.zeros((seq_length, 4), dtype=np.float32)
    for i, c in enumerate(sub):
        if c in mapping:
            arr[i, mapping[c]] = 1.0
    return torch.tensor(arr)


def embed(model, sequences, dtype):
    """The extractor's `extract_embeddings` at batch size 1, in `dtype`."""
    out = []
    with torch.no_grad():
        for s in sequences:
            tensor = torch.stack([one_hot_seq(s, SEQ_LENGTH)], dim=0).to(dtype)
            human = model(tensor)["human"]
            out.append(human.mean(dim=1).cpu().numpy())
    return np.concatenate(out, axis=0)


def randomise(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (0.5 if p.ndim == 1 else 1.0 / max(1, p[0].numel()) ** 0.5))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
            elif name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)


def save(model, folder):
    folder.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(folder / "config.json")
    torch.save(model.state_dict(), folder / "pytorch_model.bin")


def random_dna(rng, n, alphabet="ACGT"):
    return "".join(rng.choice(alphabet) for _ in range(n))


def tiny():
    rng = random.Random(37)
    model = Enformer.from_hparams(
        dim=48,
        depth=2,
        heads=2,
        attn_dim_key=8,
        dim_divisible_by=4,
        output_heads=dict(human=10, mouse=6),
        target_length=32,
    )
    randomise(model, 37)
    model.config.architectures = ["Enformer"]  # as the hub's config.json names it
    save(model, OUT)
    reference = from_pretrained(str(OUT), use_tf_gamma=False).double().eval()
    # Each costs a whole 196,608 bp pass, whatever its length: three, for the page's test.
    sequences = [
        "G",
        "acgtnNRYacgu" + random_dna(rng, 300, "ACGTN"),
        # Longer than the input: the extractor's centre crop (odd excess: one more on the right).
        random_dna(rng, SEQ_LENGTH + 1001),
    ]
    pooled = embed(reference, sequences, torch.float64)
    (OUT / "pipeline.json").write_text(
        json.dumps({"sequences": sequences, "pooled": pooled.astype("float32").tolist()}) + "\n"
    )
    print(OUT, pooled.shape)


def real_shape(folder: Path):
    rng = random.Random(1536)
    model = Enformer.from_hparams(
        dim=1536, depth=11, heads=8, output_heads=dict(human=5313, mouse=1643), target_length=896
    )
    randomise(model, 1536)
    model.config.architectures = ["Enformer"]
    save(model, folder)
    sequences = [random_dna(rng, 1000), random_dna(rng, SEQ_LENGTH + 5000)]
    reference = from_pretrained(str(folder), use_tf_gamma=False).eval()
    started = time.time()
    as_run = embed(reference, sequences, torch.float32)
    seconds_f32 = (time.time() - started) / len(sequences)
    pooled = embed(reference.double(), sequences, torch.float64)
    print(f"PyTorch f32 on the CPU: {seconds_f32:.1f} s per sequence; "
          f"max |f32 - f64| = {np.abs(as_run - pooled).max():.2e}", file=sys.stderr)
    (folder / "pipeline.json").write_text(
        json.dumps(
            {"sequences": sequences, "pooled": pooled.astype("float32").tolist(),
             "pooled_f32": as_run.tolist(), "torch_f32_seconds_per_sequence": seconds_f32}
        ) + "\n"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--real-shape", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(2)
    if args.real_shape:
        real_shape(args.real_shape)
    else:
        tiny()
