"""A 7B Llama on the CPU: geneb's peak memory and seconds per 1,000-nt sequence beside PyTorch's.

    python3 bench/llama7b_bench.py --geneb PATH [--dir /tmp/geneb-llama7b] [--layers 32]
                                   [--sequences 2] [--keep] [--only geneb|pytorch]

1. Writes a checkpoint shaped like METAGENE-1 (LlamaForCausalLM: hidden 4096, 32 layers, 32
   heads, SwiGLU 11008, vocabulary 1024, 512 positions; 6.48B parameters) with random bf16
   weights, sharded as transformers shards it (`model-0000N-of-0000M.safetensors` of at most
   2 GB and `model.safetensors.index.json`), one tensor in memory at a time, in a temporary
   folder (`--dir`); the tokenizer files are the committed tiny METAGENE fixture's (a BPE of 96
   tokens: the token counts are printed), its `model_max_length` raised from the tiny model's
   64 to the 7B's 512 positions. `--layers N` writes
   a shallower model of the same width where the machine has less room.
2. Runs `geneb --max-memory 16GiB embed` on the `--sequences` sequences in one process
   (bench/measure.py): its wall and CPU seconds and peak RSS are the kernel's for the process,
   and the seconds per sequence are those after the model's files were read, over the
   sequences (to within measure.py's half-second sampling). 16 GiB is under the model's f32
   weights (25.9 GB), so geneb holds them in bf16 as stored.
3. Runs transformers' LlamaModel from the same folder in bf16 (`torch_dtype=torch.bfloat16`,
   as GENEB's extractors load on CUDA) on the same sequences in a fresh process: each forward
   pass's wall and CPU seconds (the first one included: no warm-up), the process's peak memory
   likewise, and metagene.py's pooling (the plain mean of the last hidden state); the largest
   |difference| from geneb's embeddings is reported (PyTorch computes in bf16, geneb in f32)
   over the sequences of the most tokens (metagene.py's mean takes a batch's padding in).
4. Deletes the folder unless `--keep`.

Prints one JSON object. Random DNA of 1,000 nt, seeded.
"""

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path


from measure import loadavg, measured, record_delta

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests/fixtures/models/metagene"
SHARD_BYTES = 2_000_000_000

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 1024,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 3,
    "torch_dtype": "bfloat16",
}


def tensors(config):
    """(name, shape) of every tensor of a LlamaForCausalLM, in the order transformers saves them."""
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    yield "model.embed_tokens.weight", (v, h)
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        for name in ["q_proj", "k_proj", "v_proj", "o_proj"]:
            yield p + f"self_attn.{name}.weight", (h, h)
        yield p + "mlp.gate_proj.weight", (i, h)
        yield p + "mlp.up_proj.weight", (i, h)
        yield p + "mlp.down_proj.weight", (h, i)
        yield p + "input_layernorm.weight", (h,)
        yield p + "post_attention_layernorm.weight", (h,)
    yield "model.norm.weight", (h,)
    yield "lm_head.weight", (v, h)


def write_checkpoint(folder, config):
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    for name in ["tokenizer.json", "special_tokens_map.json"]:
        shutil.copy(FIXTURE / name, folder / name)
    # The fixture's tokenizer stops at its tiny model's 64 tokens; geneb cuts there as the
    # tokenizer does, so the 7B's tokenizer must allow the model's positions (a 1,000-nt
    # sequence is ~350 tokens), as METAGENE-1's own does.
    tokenizer_config = json.loads((FIXTURE / "tokenizer_config.json").read_text())
    tokenizer_config["model_max_length"] = config["max_position_embeddings"]
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2))
    generator = torch.Generator().manual_seed(0)

    def drawn():
        for name, shape in tensors(config):
            if len(shape) == 1:
                yield name, torch.ones(shape, dtype=torch.bfloat16)
            else:
                yield name, (torch.randn(shape, generator=generator) * 0.02).to(torch.bfloat16)

    return save_sharded(folder, drawn())


def save_sharded(folder, named_tensors):
    """Saves (name, tensor) pairs as transformers shards a checkpoint: files of at most
    SHARD_BYTES named `model-0000N-of-0000M.safetensors` and their index, holding one shard's
    tensors at a time. Returns the tensors' bytes."""
    from safetensors.torch import save_file

    shards, current, current_bytes = [], {}, 0
    total = 0

    def flush():
        nonlocal current, current_bytes
        if current:
            path = folder / f"shard-{len(shards)}.tmp"
            save_file(current, str(path), metadata={"format": "pt"})
            shards.append((path, list(current)))
            current, current_bytes = {}, 0

    for name, tensor in named_tensors:
        size = tensor.numel() * tensor.element_size()
        if current_bytes + size > SHARD_BYTES:
            flush()
        current[name] = tensor.contiguous()
        current_bytes += size
        total += size
    flush()
    weight_map = {}
    for n, (path, names) in enumerate(shards, start=1):
        final = f"model-{n:05d}-of-{len(shards):05d}.safetensors"
        path.rename(folder / final)
        weight_map.update({name: final for name in names})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return total


TORCH_RUN = r"""
import json, sys, time, numpy, torch
from transformers import AutoModel, AutoTokenizer
folder, sequences, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[4]
torch.set_num_threads(int(sys.argv[3]))
start = time.perf_counter()
model = AutoModel.from_pretrained(folder, torch_dtype=torch.bfloat16).eval()
tokenizer = AutoTokenizer.from_pretrained(folder)
loaded = time.perf_counter() - start
times, cpu, tokens, pooled = [], [], [], []
with torch.no_grad():
    for s in sequences:
        ids = tokenizer(s, return_tensors="pt", truncation=True, max_length=512)
        t, c = time.perf_counter(), time.process_time()
        # metagene.py's pooling: the plain mean of the last hidden state.
        pooled.append(model(**ids).last_hidden_state.float().mean(dim=1)[0].numpy())
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        tokens.append(ids["input_ids"].shape[1])
numpy.save(out, numpy.stack(pooled))
print(json.dumps({"load_s": loaded, "seconds": times, "cpu_seconds": cpu, "tokens": tokens}))
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--geneb")
    parser.add_argument("--dir", default="/tmp/geneb-llama7b")
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--sequences", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--only", choices=["geneb", "pytorch"])
    args = parser.parse_args()

    config = dict(CONFIG, num_hidden_layers=args.layers)
    folder = Path(args.dir)
    rng = random.Random(0)
    sequences = ["".join(rng.choice("ACGT") for _ in range(1000)) for _ in range(args.sequences)]
    report = {"layers": args.layers, "threads": args.threads}
    try:
        if not (folder / "model.safetensors.index.json").exists():
            start = time.perf_counter()
            report["bf16_bytes"] = write_checkpoint(folder, config)
            report["write_s"] = time.perf_counter() - start
        else:
            index = json.loads((folder / "model.safetensors.index.json").read_text())
            report["bf16_bytes"] = index["metadata"]["total_size"]
        report["parameters"] = report["bf16_bytes"] // 2

        if args.only != "pytorch":
            report["geneb"] = run_geneb(args, folder, sequences, report["bf16_bytes"])
        if args.only != "geneb":
            report["pytorch"] = run_torch(args, folder, sequences, report["bf16_bytes"])
        if args.only is None:
            # Only the rows no batch padded: metagene.py's mean takes padding in, so a shorter
            # sequence's row depends on its batch, which PyTorch's one-by-one run does not have.
            tokens = report["pytorch"]["tokens"]
            whole = [i for i, n in enumerate(tokens) if n == max(tokens)]
            report["compared_rows"] = whole
            record_delta(report, folder, whole)
        report["load_average_end"] = loadavg()
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(report, indent=2))


def run_geneb(args, folder, sequences, bf16_bytes):
    """`geneb embed` on the sequences: peak memory, and the seconds after loading per sequence."""
    if not args.geneb:
        sys.exit("--geneb PATH: a release build of geneb (cargo build --release --bin geneb)")
    fasta = folder / "sequences.txt"
    fasta.write_text("\n".join(sequences) + "\n")
    command = [args.geneb, "--max-memory", "16GiB", "embed", "--model", f"hf:{folder}",
               "--input", str(fasta), "--out", str(folder / "geneb.npy")]
    run, _, _ = measured(command, watch=True)
    embedding = run["after_loading"]
    run.update(
        seconds_per_sequence=embedding["wall_s"] / len(sequences),
        cpu_seconds_per_sequence=embedding["cpu_s"] / len(sequences),
        peak_over_bf16=run["peak_rss_bytes"] / bf16_bytes,
    )
    return run


def run_torch(args, folder, sequences, bf16_bytes):
    """transformers' LlamaModel in bf16: load seconds, seconds per sequence, peak memory."""
    command = [sys.executable, "-c", TORCH_RUN, str(folder), json.dumps(sequences),
               str(args.threads), str(folder / "torch.npy")]
    run, out, _ = measured(command)
    run.update(json.loads(out.strip().splitlines()[-1]), peak_over_bf16=run["peak_rss_bytes"] / bf16_bytes)
    run["seconds_per_sequence"] = sum(run["seconds"]) / len(run["seconds"])
    run["cpu_seconds_per_sequence"] = sum(run["cpu_seconds"]) / len(run["cpu_seconds"])
    return run


if __name__ == "__main__":
    main()
