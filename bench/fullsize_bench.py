"""LucaOne, eccDNAMamba and Evo-1 at their published shapes on the CPU: geneb beside PyTorch.

    python3 bench/fullsize_bench.py lucaone --geneb PATH [--dir DIR] [--sequences 1] [--keep]
    MAMBA_SSM_SRC=… GENAI_LAB_SRC=… python3 bench/fullsize_bench.py eccdnamamba --geneb PATH …
    EVO_CODE=… python3 bench/fullsize_bench.py evo --geneb PATH …

1. Writes a checkpoint of the published shape with random weights to DIR (in a process of its
   own, not measured), unless DIR holds one:
   - lucaone: `LucaGPLMConfig()`'s defaults, which are LucaOne-default-step36M's shape (hidden
     2,560, 20 layers, 40 heads, feed-forward 10,240, rotary positions, token types, the last
     LayerNorm, 39-token gene_prot vocabulary, 4,096 positions), the model's own random
     initialisation, saved by `save_pretrained` in f32 (PyPI `lucaone` 1.1.1, as
     tests/oracle/make_lucaone_fixtures.py);
   - eccdnamamba: tests/oracle/make_eccdnamamba_fixtures.py's `--real-shape` checkpoint
     (mamba2-130m's d_model 768, 24 Mamba-2 layers per direction, 537M parameters), from the
     temporary copies of mamba_ssm and GenAI-Lab's code that script names;
   - evo: StripedHyena (stripedhyena 0.2.0, from the temporary folder EVO_CODE laid out as
     tests/oracle/make_evo_fixtures.py's --code) at evo-model 0.5's 131k-base shape (hidden
     4,096, 32 blocks, attention at 8, 16 and 24, state size 8: 6.5B parameters) with the
     oracle's random weights, held and saved in bf16 but for the poles and residues (f32), as
     `to_bfloat16_except_poles_residues` leaves the model the extractor runs: 2 GB shards and
     their index (13 GB), the model built in bf16 so that no f32 copy (26 GB) is ever held.
2. PyTorch: a fresh process loads the folder as GENEB's extractor does (f32; Evo in bf16 but for
   its poles and residues) and embeds the
   `--sequences` random 1,000-nt sequences one by one with the extractor's own lines (the
   oracle's `extract`), 2 threads; each sequence's wall and CPU seconds (no warm-up).
3. geneb: `geneb --max-memory 12GiB embed --backend cpu` (16GiB for Evo, under its 26 GB of f32
   weights, so geneb holds them as stored) on the same sequences, measured by
   bench/measure.py (the seconds after the model's files were read are the embedding's).
4. The largest |difference| between the two sides' embeddings; DIR is deleted unless --keep.

Every process's CPU seconds, wall seconds and peak RSS are the kernel's (os.wait4), with the
load average before and after. Prints one JSON object.
"""

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from measure import loadavg, measured, record_delta

ROOT = Path(__file__).resolve().parents[1]
ORACLES = ROOT / "tests/oracle"


def write_lucaone(folder):
    import torch
    from lucaone import LucaGPLMConfig, LucaGPLMModel

    torch.manual_seed(37)
    config = LucaGPLMConfig()
    config.architectures = ["LucaGPLMModel"]
    model = LucaGPLMModel(config)
    model.save_pretrained(folder, safe_serialization=True)
    return sum(p.numel() for p in model.parameters())


def embedder_lucaone(folder):
    import lucaone  # noqa: F401  (registers "lucaone" with the Auto classes)
    import make_lucaone_fixtures as oracle
    from lucaone import LucaGPLMTokenizer
    from transformers import AutoModel

    tokenizer = LucaGPLMTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(
        str(folder), task_level="token_level", task_type="embedding"
    ).eval()
    max_length = model.config.max_position_embeddings
    return lambda seq: oracle.extract(tokenizer, model, [seq], max_length)[0][0]


def write_eccdnamamba(folder):
    import make_eccdnamamba_fixtures as oracle

    _, reference = oracle.build(random.Random(768), folder, 768, 24, {"layer": "Mamba2"}, 4096,
                                20000)
    return sum(p.numel() for p in reference.parameters())


def embedder_eccdnamamba(folder):
    import make_eccdnamamba_fixtures as oracle
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = oracle.genai_lab.BiMambaForMaskedLM.from_pretrained(str(folder)).eval()
    # The oracle's CPU path (its `build`): each Mamba2 layer's non-fused, reference path.
    model.mamba_forward.use_mem_eff_path = False
    for module in model.modules():
        if isinstance(module, oracle.mamba2.Mamba2):
            module.use_mem_eff_path = False
    return lambda seq: oracle.extract(tokenizer, model, [seq])[0]


def evo_config():
    """evo-model 0.5's configs/evo-1-131k-base_inference.yml over the oracle's tiny config's
    keys (the CPU's attention: `use_flash_attn` off, as in the oracle)."""
    import make_evo_fixtures as oracle

    hyena = [i for i in range(32) if i not in (8, 16, 24)]
    return dict(oracle.TINY, hidden_size=4096, num_filters=4096, attn_layer_idxs=[8, 16, 24],
                hyena_layer_idxs=hyena, num_layers=32, num_attention_heads=32, state_size=8)


def evo_model():
    """StripedHyena at the 131k model's shape in bf16 but for its poles and residues, as
    `to_bfloat16_except_poles_residues` leaves it, built without an f32 copy (26 GB)."""
    import make_evo_fixtures as oracle
    import torch

    sys.path.insert(0, os.environ["EVO_CODE"])
    oracle.shim_flash_attn()
    from src.model import StripedHyena
    from src.utils import dotdict

    torch.set_default_dtype(torch.bfloat16)
    model = StripedHyena(dotdict(evo_config()))
    torch.set_default_dtype(torch.float32)
    model.to_bfloat16_except_poles_residues()
    for name, p in model.named_parameters():
        if "poles" in name or "residues" in name:
            p.data = p.data.float()
    return model


def write_evo(folder):
    import make_evo_fixtures as oracle
    from llama7b_bench import save_sharded

    model = evo_model()
    oracle.randomise(model, 41)
    config = dict(evo_config(), model_type="stripedhyena",
                  architectures=["StripedHyenaModelForCausalLM"])
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    # The unembedding is the embedding (tied): safetensors stores no shared memory.
    tensors = model.state_dict()
    tensors["unembed.weight"] = tensors["unembed.weight"].clone()
    save_sharded(folder, ((f"backbone.{n}", t) for n, t in tensors.items()))
    return sum(p.numel() for p in model.parameters())


def embedder_evo(folder):
    import make_evo_fixtures as oracle
    from safetensors.torch import load_file

    model = evo_model()
    for shard in sorted(folder.glob("model*.safetensors")):
        tensors = {k.removeprefix("backbone."): v for k, v in load_file(shard).items()}
        model.load_state_dict(tensors, strict=False)
        del tensors
    model.eval()
    from evo.tokenizer import CharLevelTokenizer

    tokenizer = CharLevelTokenizer(512)
    return lambda seq: oracle.extract_embeddings(model, tokenizer, [seq])[0]


MODELS = {
    "lucaone": (write_lucaone, embedder_lucaone),
    "eccdnamamba": (write_eccdnamamba, embedder_eccdnamamba),
    "evo": (write_evo, embedder_evo),
}


def torch_side(model, folder, sequences):
    """In its own process: load, embed each sequence, write torch.npy, print the timings."""
    import torch

    torch.set_num_threads(2)
    started = time.perf_counter()
    embed = MODELS[model][1](folder)
    loaded = time.perf_counter() - started
    pooled, seconds, cpu = [], [], []
    for seq in sequences:
        t, c = time.perf_counter(), time.process_time()
        with torch.no_grad():
            pooled.append(np.asarray(embed(seq), dtype=np.float64))
        seconds.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    np.save(folder / "torch.npy", np.stack(pooled))
    print(json.dumps({"load_s": loaded, "seconds": seconds, "cpu_seconds": cpu}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("--geneb")
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--sequences", type=int, default=1)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--only", choices=["geneb", "pytorch"])
    parser.add_argument("--step", choices=["write", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ORACLES))
    folder = args.dir or Path(f"/tmp/geneb-fullsize-{args.model}")
    rng = random.Random(1000)
    sequences = ["".join(rng.choice("ACGT") for _ in range(1000)) for _ in range(args.sequences)]

    if args.step == "write":
        folder.mkdir(parents=True, exist_ok=True)
        print(json.dumps({"parameters": MODELS[args.model][0](folder)}))
        return
    if args.step == "torch":
        torch_side(args.model, folder, sequences)
        return
    if not args.geneb and args.only != "pytorch":
        sys.exit("--geneb PATH: a release build of geneb (cargo build --release --bin geneb)")

    itself = [sys.executable, str(Path(__file__).resolve()), args.model, "--dir", str(folder),
              "--sequences", str(args.sequences)]
    report = {"model": args.model, "sequences": args.sequences}
    try:
        if not (folder / "config.json").exists():
            written, out, _ = measured(itself + ["--step", "write"])
            report["write"] = dict(written, **json.loads(out.strip().splitlines()[-1]))
        report["checkpoint_bytes"] = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
        if args.only != "geneb":
            run, out, _ = measured(itself + ["--step", "torch"])
            run.update(json.loads(out.strip().splitlines()[-1]))
            run["seconds_per_sequence"] = sum(run["seconds"]) / args.sequences
            run["cpu_seconds_per_sequence"] = sum(run["cpu_seconds"]) / args.sequences
            report["pytorch"] = run
        if args.only != "pytorch":
            fasta = folder / "sequences.fa"
            fasta.write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(sequences)))
            budget = "16GiB" if args.model == "evo" else "12GiB"
            command = [args.geneb, "--max-memory", budget, "embed", "--model", f"hf:{folder}",
                       "--input", str(fasta), "--out", str(folder / "geneb.npy"),
                       "--backend", "cpu"]
            run, _, err = measured(command, watch=True)
            run["seconds_per_sequence"] = run["after_loading"]["wall_s"] / args.sequences
            run["cpu_seconds_per_sequence"] = run["after_loading"]["cpu_s"] / args.sequences
            run["said"] = err.strip().splitlines()[-1]
            report["geneb"] = run
        if args.only is None:
            record_delta(report, folder)
        report["load_average_end"] = loadavg()
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
