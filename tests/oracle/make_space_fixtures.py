"""SPACE oracle: GENEB's extractor lines over SPACE's own modeling code, as darlednik/GENEB
vendors it (never committed here).

The extractor is `embedding_pipeline/extractors/space.py` (its two versions, 18e4a8d and
e3d5f45, differ only in the base class and the sys.path line): `Space.from_pretrained(name)`
(which loads `TrainingSpace` and returns its `.model`), each sequence upper-cased, U -> T,
centre-cropped or N-padded to 131,072 bp, one-hot (A C G T; N and anything else zeros), and
`self.model(tensor, return_embeddings=True)[-1].mean(dim=1)`: the mean over the 896 bins (the
forward's default `target_length=896`, whatever config.json says) of `final_pointwise`'s output,
2·dim values. The species token the transformer appends (`species_embedding['human']`) is
dropped before the crop.

The model code is `embedding_pipeline/utility_modules/SPACE/model/{config_space,modeling_space,
modules}.py` of darlednik/GENEB at a3c3bd1, copied to a temporary folder given as --code (with
model/__init__.py empty; model/data.py, absent from that tree, re-exporting enformer-pytorch's
`str_to_one_hot` and `seq_indices_to_one_hot`; a `wandb` module that is imported and never
used; and model/precomputed/tf_gammas.pt, read at import and unused with use_tf_gamma=False).
Of modules.py, TracksMoE's forward is not needed: the tiny model has no track experts (they
change only the head's output, which the extractor does not read; geneb skips their tensors).

Writes tests/fixtures/models/space/: a tiny randomly initialised SPACE (dim 48, depth 2, 2
heads, species experts: 4, top 3; heads human=10 and mouse=6; target_length 32 in config.json,
which the forward overrides with 896) saved as `TrainingSpace.save_pretrained` writes it
(config.json, model.safetensors under `model.`), and pipeline.json (the sequences and their
pooled embeddings, the reference run in float64).

Run: python3 tests/oracle/make_space_fixtures.py --code /tmp/space-code
"""

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/space"
SEQ_LENGTH = 131_072


def one_hot_seq(seq: str, seq_length: int = 131072):
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
    return torch.from_numpy(arr)


def extract_embeddings(model, sequences, dtype):
    """The extractor's `extract_embeddings` at batch size 1, in `dtype`."""
    all_embs = []
    with torch.no_grad():
        for s in sequences:
            tensor = torch.stack([one_hot_seq(s, SEQ_LENGTH)], dim=0).to(dtype)
            output = model(tensor, return_embeddings=True)
            all_embs.append(output[-1].mean(dim=1).detach().cpu().numpy())
    return np.vstack(all_embs)


def randomise(model, seed):
    """Every parameter and BatchNorm statistic drawn at random: the library's init zeroes
    `to_out` and makes the pools plain averages, which would hide mistakes there. Weight
    matrices at twice the usual 1/sqrt(fan-in): at 1/sqrt(fan-in) the signal fades through the
    tower and a window of all A pools within 1e-3 of one of all C; at twice it, 1.6 apart."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:
                scale = 0.5
            elif "species_embedding" in name:
                scale = 1.0
            elif name.endswith(("input.weight", "output.weight")) and p.ndim == 3:
                scale = 2 * p.shape[1] ** -0.5  # Experts: [experts, in, out]
            else:
                scale = 2 * max(1, p[0].numel()) ** -0.5
            p.copy_(torch.randn(p.shape, generator=g) * scale)
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
            elif name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)


def random_dna(rng, n, alphabet="ACGT"):
    return "".join(rng.choice(alphabet) for _ in range(n))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=Path, required=True,
                        help="folder holding SPACE's model/ package (see the docstring)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code))
    torch.set_num_threads(2)
    from model.config_space import SpaceConfig
    from model.modeling_space import Space, TrainingSpace

    TrainingSpace.config_class = SpaceConfig  # as the extractor sets it
    config = SpaceConfig(
        dim=48,
        depth=2,
        heads=2,
        attn_dim_key=8,
        dim_divisible_by=4,
        output_heads=dict(human=10, mouse=6),
        target_length=32,
        moe=["species"],
        species_num_experts=4,
        topk=3,
    )
    config.architectures = ["TrainingSpace"]
    torch.manual_seed(40)
    training = TrainingSpace(config)
    randomise(training, 40)
    training.save_pretrained(OUT)
    reference = Space.from_pretrained(str(OUT)).double().eval()

    rng = random.Random(40)
    # The mean over 896 bins hides much of what a few hundred bases change: the last two fill
    # the window with long runs, whose embeddings move by far more than the tolerance wherever
    # a bin or a base is misplaced.
    sequences = [
        "G",
        "acgtnNRYacgu" + random_dna(rng, 300, "ACGTN"),
        # Longer than the input: the extractor's centre crop (odd excess: one more on the right)
        # keeps 70,000 A and 61,072 G, none of the T.
        "T" * 1000 + "A" * 70_000 + "G" * 62_073,
        "C" * 40_000 + random_dna(rng, 51_072) + "A" * 40_000,
    ]
    pooled = extract_embeddings(reference, sequences, torch.float64)
    (OUT / "pipeline.json").write_text(
        json.dumps({"sequences": sequences, "pooled": pooled.astype("float32").tolist()}) + "\n"
    )
    print(OUT, pooled.shape)


if __name__ == "__main__":
    main()
