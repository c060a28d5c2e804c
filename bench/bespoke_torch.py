"""PyTorch's side of the full-size Enformer and SPACE costs in bench/README.md: one 1,000 nt
sequence through GENEB's extractor lines (the oracles' `embed` / `extract_embeddings`) in f32 on
the CPU, 2 threads, timed after loading; prints the seconds and the process's peak RSS and
writes the embedding to DIR/torch.json for geneb's to be compared with.

    python3 bench/bespoke_torch.py enformer DIR   # DIR: make_enformer_fixtures.py --real-shape DIR
    python3 bench/bespoke_torch.py space DIR --code SPACE_CODE

For SPACE, DIR is written first if it holds no checkpoint: the published trunk (dim 768, depth
11, 8 heads, 131,072 bp, species experts 4 keeping 3, heads human 5,313 and mouse 1,643) with
random weights as make_space_fixtures.py draws them; the track experts are left out (they
change only the heads, which the embedding does not read). SPACE_CODE is the folder that
script's --code names (SPACE's model/ package, never committed). The sequence is written to
DIR/one.fa for `geneb embed`.
"""

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests/oracle"))


def enformer(folder):
    import make_enformer_fixtures as oracle
    from enformer_pytorch import from_pretrained

    model = from_pretrained(str(folder), use_tf_gamma=False).eval()
    return lambda seq: oracle.embed(model, [seq], torch.float32)


def space(folder, code):
    sys.path.insert(0, str(code))
    import make_space_fixtures as oracle
    from model.config_space import SpaceConfig
    from model.modeling_space import Space, TrainingSpace

    TrainingSpace.config_class = SpaceConfig  # as the extractor sets it
    if not (folder / "model.safetensors").exists():
        config = SpaceConfig(dim=768, depth=11, heads=8, attn_dim_key=64, dim_divisible_by=128,
                             output_heads=dict(human=5313, mouse=1643), moe=["species"],
                             species_num_experts=4, topk=3)
        config.architectures = ["TrainingSpace"]
        torch.manual_seed(40)
        training = TrainingSpace(config)
        oracle.randomise(training, 40)
        training.save_pretrained(folder)
        del training
    model = Space.from_pretrained(str(folder)).eval()
    return lambda seq: oracle.extract_embeddings(model, [seq], torch.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["enformer", "space"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--code", type=Path, help="SPACE's model/ package folder")
    args = parser.parse_args()
    torch.set_num_threads(2)
    embed = enformer(args.folder) if args.model == "enformer" else space(args.folder, args.code)
    rng = random.Random(1)
    seq = "".join(rng.choice("ACGT") for _ in range(1000))
    (args.folder / "one.fa").write_text(">s\n" + seq + "\n")
    started = time.time()
    embedding = embed(seq)
    seconds = time.time() - started
    (args.folder / "torch.json").write_text(json.dumps(embedding.tolist()))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"{args.model}: PyTorch f32, one sequence: {seconds:.1f} s; peak RSS {peak:.2f} GiB")


if __name__ == "__main__":
    main()
