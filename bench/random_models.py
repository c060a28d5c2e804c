"""Random checkpoints shaped like the four bench models, from a seed, with numpy alone.

    python3 bench/random_models.py OUT_DIR [--models a,b] [--seed S] [--layers N]

For a machine that has python3 and numpy but no PyTorch and no package registry (a lent GPU
machine: bench/gpu-check.sh): writes OUT_DIR/<model>/{config.json, model.safetensors, tokenizer
files} that `geneb embed --model hf:OUT_DIR/<model>` reads. Shapes as bench/model_bench.py's
(which writes its checkpoints with the PyTorch reference builders instead):

- nt-v2-50m: NT-v2-50m's (hidden 512, 12 layers, 16 heads, SwiGLU 2048, vocab 4107, rotary), the
  committed NT 6-mer vocabulary;
- dnabert2-117m: DNABERT-2-117M's (hidden 768, 12 layers, 12 heads, GLU 3072, vocab 4096, ALiBi)
  with the committed 1,024-token BPE fixture as its tokenizer (model_bench.py trains a 4,096-token
  one with HF `tokenizers`, which this machine may lack), so a sequence has more tokens here;
- hyenadna-tiny: HyenaDNA-tiny's shape (d_model 128, 2 layers, filter order 64, 1,026-token
  context) with random weights (model_bench.py runs the real fine-tuned weights);
- caduceus-ph-1k: caduceus-ph_seqlen-1k_d_model-256_n_layer-4's (d_state 16);
- enformer (by name only): enformer-official-rough's (dim 1536, depth 11, 8 heads, 896 bins,
  251M values, 1.0 GB): every input is 196,608 bp, so one sequence is the whole cost;
- nt-v2-narrow (by name only): NT-v2-50m's depth and layout at hidden 32, 4 heads, SwiGLU 64,
  so its arithmetic is negligible and its time per pass is what the kernel launches cost.

Values: uniform in +-1/sqrt(fan in) (the last dimension), as torch.nn.Linear initialises;
norm gains 1 + U(+-0.1) (Enformer's BatchNorm statistics: means U(+-0.1), variances 1 + U(0, 0.1));
Mamba's A_log as mamba_ssm initialises it (log 1..d_state), rotary
frequencies as computed. Same seed, same bytes. --layers N overrides the layer count (the
difference of two launch counts is one layer's).
"""

import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
TOKENIZERS = os.path.join(ROOT, "tests", "fixtures", "tokenizers")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "models")
MODELS = ("nt-v2-50m", "dnabert2-117m", "hyenadna-tiny", "caduceus-ph-1k")


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")


def write_safetensors(path, tensors):
    """The safetensors layout: u64 header length, JSON header, then the raw little-endian data."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


class Weights:
    """Named tensors drawn in the order they are asked for, from one seeded generator."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.tensors = {}

    def dense(self, name, *shape):
        bound = 1.0 / np.sqrt(shape[-1])
        self.tensors[name] = self.rng.uniform(-bound, bound, shape).astype(np.float32)

    def linear(self, name, fan_out, fan_in, bias=True):
        self.dense(f"{name}.weight", fan_out, fan_in)
        if bias:
            self.dense(f"{name}.bias", fan_out)

    def norm(self, name, width, bias=True):
        self.tensors[f"{name}.weight"] = (1.0 + self.rng.uniform(-0.1, 0.1, width)).astype(np.float32)
        if bias:
            self.dense(f"{name}.bias", width)

    def fixed(self, name, array):
        self.tensors[name] = np.asarray(array, dtype=np.float32)


def nt_v2(w, folder, layers, hidden=512, heads=16, inter=2048):
    vocab = 4107
    with open(os.path.join(FIXTURES, "nt_v2", "config.json")) as f:
        config = json.load(f)
    config.update(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=inter, max_position_embeddings=2050)
    head_dim = hidden // heads
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, head_dim, 2) / head_dim))
    w.dense("esm.embeddings.word_embeddings.weight", vocab, hidden)
    for i in range(layers):
        p = f"esm.encoder.layer.{i}."
        w.norm(p + "attention.LayerNorm", hidden)
        for proj in ("query", "key", "value"):
            w.linear(p + f"attention.self.{proj}", hidden, hidden)
        w.fixed(p + "attention.self.rotary_embeddings.inv_freq", inv_freq)
        w.linear(p + "attention.output.dense", hidden, hidden)
        w.norm(p + "LayerNorm", hidden)
        w.linear(p + "intermediate.dense", 2 * inter, hidden, bias=False)
        w.linear(p + "output.dense", hidden, inter, bias=False)
    w.norm("esm.encoder.emb_layer_norm_after", hidden)
    for name in ("vocab.txt", "special_tokens_map.json"):
        shutil.copy(os.path.join(TOKENIZERS, "nt6", name), folder)
    write_json(os.path.join(folder, "tokenizer_config.json"),
               {"tokenizer_class": "EsmTokenizer", "model_max_length": 2048, "eos_token": None})
    return config


def dnabert2(w, folder, layers):
    hidden, heads, inter, vocab = 768, 12, 3072, 4096
    with open(os.path.join(FIXTURES, "dnabert2", "config.json")) as f:
        config = json.load(f)
    config.update(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=inter)
    w.dense("bert.embeddings.word_embeddings.weight", vocab, hidden)
    w.dense("bert.embeddings.token_type_embeddings.weight", 2, hidden)
    w.norm("bert.embeddings.LayerNorm", hidden)
    for i in range(layers):
        p = f"bert.encoder.layer.{i}."
        w.linear(p + "attention.self.Wqkv", 3 * hidden, hidden)
        w.linear(p + "attention.output.dense", hidden, hidden)
        w.norm(p + "attention.output.LayerNorm", hidden)
        w.linear(p + "mlp.gated_layers", 2 * inter, hidden, bias=False)
        w.linear(p + "mlp.wo", hidden, inter)
        w.norm(p + "mlp.layernorm", hidden)
    shutil.copy(os.path.join(TOKENIZERS, "dnabert2", "tokenizer.json"), folder)
    with open(os.path.join(TOKENIZERS, "dnabert2", "tokenizer_config.json")) as f:
        tokenizer = json.load(f)
    write_json(os.path.join(folder, "tokenizer_config.json"), {**tokenizer, "model_max_length": 512})
    return config


def hyena(w, folder, layers):
    d, inner, order, emb, length, vocab = 128, 512, 64, 5, 1026, 16
    with open(os.path.join(FIXTURES, "hyena", "tiny", "config.json")) as f:
        config = json.load(f)
    config.update(d_model=d, d_inner=inner, n_layer=layers, filter_order=order, emb_dim=emb, max_seq_len=length,
                  vocab_size=12)
    w.dense("backbone.embeddings.word_embeddings.weight", vocab, d)
    for i in range(layers):
        p = f"backbone.layers.{i}."
        f = p + "mixer.filter_fn."
        w.norm(p + "norm1", d)
        w.linear(p + "mixer.in_proj", 3 * d, d)
        w.dense(p + "mixer.short_filter.weight", 3 * d, 1, 3)
        w.dense(p + "mixer.short_filter.bias", 3 * d)
        w.linear(f + "implicit_filter.0", order, emb)
        w.linear(f + "implicit_filter.2", order, order)
        w.linear(f + "implicit_filter.4", order, order)
        w.linear(f + "implicit_filter.6", d, order, bias=False)
        w.dense(f + "bias", d)
        w.fixed(f + "modulation.deltas", w.rng.uniform(0.01, 0.5, (1, 1, d)))
        w.fixed(f + "pos_emb.t", np.linspace(0, 1, length).reshape(1, length, 1))
        w.dense(f + "pos_emb.z", 1, length, emb)
        w.linear(p + "mixer.out_proj", d, d)
        w.norm(p + "norm2", d)
        w.linear(p + "mlp.fc1", inner, d)
        w.linear(p + "mlp.fc2", d, inner)
    w.norm("backbone.ln_f", d)
    with open(os.path.join(FIXTURES, "hyena", "tiny", "tokenizer_config.json")) as f:
        tokenizer = json.load(f)
    write_json(os.path.join(folder, "tokenizer_config.json"), {**tokenizer, "model_max_length": length})
    return config


def caduceus(w, folder, layers):
    d, n, vocab = 256, 16, 16
    inner, rank = 2 * d, -(-d // 16)
    with open(os.path.join(FIXTURES, "caduceus", "ph", "config.json")) as f:
        config = json.load(f)
    config.update(d_model=d, n_layer=layers, vocab_size=12)
    config["ssm_cfg"] = {**config["ssm_cfg"], "d_state": n}
    p0 = "caduceus.backbone."
    w.dense(p0 + "embeddings.word_embeddings.weight", vocab, d)
    for i in range(layers):
        p = f"{p0}layers.{i}."
        w.norm(p + "norm", d, bias=False)
        for direction in ("mamba_fwd", "mamba_rev"):
            m = f"{p}mixer.{direction}."
            # bidirectional_weight_tie: the reverse Mamba shares the forward's in/out projections.
            tied = direction == "mamba_rev"
            if not tied:
                w.linear(m + "in_proj", 2 * inner, d, bias=False)
            w.dense(m + "conv1d.weight", inner, 1, 4)
            w.dense(m + "conv1d.bias", inner)
            w.linear(m + "x_proj", rank + 2 * n, inner, bias=False)
            w.linear(m + "dt_proj", inner, rank)
            w.fixed(m + "A_log", np.log(np.tile(np.arange(1, n + 1), (inner, 1))))
            w.fixed(m + "D", np.ones(inner))
            if not tied:
                w.linear(m + "out_proj", d, inner, bias=False)
    w.norm(p0 + "norm_f", d, bias=False)
    with open(os.path.join(FIXTURES, "caduceus", "ph", "tokenizer_config.json")) as f:
        tokenizer = json.load(f)
    write_json(os.path.join(folder, "tokenizer_config.json"), {**tokenizer, "model_max_length": 1024})
    return config


def nt_v2_narrow(w, folder, layers):
    return nt_v2(w, folder, layers, hidden=32, heads=4, inter=64)


# The stem's and the conv tower's widths at dim 1536: enformer-pytorch's filter list, 768 and
# then exponential_linspace_int(768, 1536, 6, divisible_by=128), as the published checkpoint has.
ENFORMER_TOWER = (768, 768, 896, 1024, 1152, 1280, 1536)


def enformer(w, folder, layers, dim=1536, heads=8, key=64):
    """enformer-official-rough's shape (dim 1536, 8 heads, 896 bins, human 5,313 and mouse 1,643
    tracks; 251M values) under enformer-pytorch's state-dict names, each module once (a saved
    `.bin` repeats the trunk under `_trunk.<i>`, which geneb skips)."""
    with open(os.path.join(FIXTURES, "enformer", "config.json")) as f:
        config = json.load(f)
    config.update(dim=dim, depth=layers, heads=heads, attn_dim_key=key, dim_divisible_by=128,
                  target_length=896, output_heads={"human": 5313, "mouse": 1643})

    def batch_norm(name, width):
        w.norm(name, width)
        w.fixed(f"{name}.running_mean", w.rng.uniform(-0.1, 0.1, width))
        w.fixed(f"{name}.running_var", 1.0 + w.rng.uniform(0.0, 0.1, width))

    def conv(name, fan_out, fan_in, kernel):
        bound = 1.0 / np.sqrt(fan_in * kernel)
        w.fixed(f"{name}.weight", w.rng.uniform(-bound, bound, (fan_out, fan_in, kernel)))
        w.fixed(f"{name}.bias", w.rng.uniform(-bound, bound, fan_out))

    def block(name, fan_out, fan_in, kernel):  # BatchNorm, GELU, conv
        batch_norm(f"{name}.0", fan_in)
        conv(f"{name}.2", fan_out, fan_in, kernel)

    def attention_pool(name, width):
        w.fixed(f"{name}.to_attn_logits.weight", w.rng.uniform(-0.1, 0.1, (width, width, 1, 1)))

    stem = ENFORMER_TOWER[0]
    conv("stem.0", stem, 4, 15)
    block("stem.1.fn", stem, stem, 1)
    attention_pool("stem.2", stem)
    for i, (fan_in, fan_out) in enumerate(zip(ENFORMER_TOWER, ENFORMER_TOWER[1:])):
        block(f"conv_tower.{i}.0", fan_out, fan_in, 5)
        block(f"conv_tower.{i}.1.fn", fan_out, fan_out, 1)
        attention_pool(f"conv_tower.{i}.2", fan_out)
    for i in range(layers):
        a, f = f"transformer.{i}.0.fn.", f"transformer.{i}.1.fn."
        w.norm(a + "0", dim)
        for bias in ("rel_content_bias", "rel_pos_bias"):
            w.fixed(a + "1." + bias, w.rng.uniform(-0.1, 0.1, (1, heads, 1, key)))
        w.linear(a + "1.to_q", heads * key, dim, bias=False)
        w.linear(a + "1.to_k", heads * key, dim, bias=False)
        w.linear(a + "1.to_v", dim, dim, bias=False)
        w.linear(a + "1.to_out", dim, dim)
        w.linear(a + "1.to_rel_k", heads * key, dim // heads, bias=False)
        w.norm(f + "0", dim)
        w.linear(f + "1", 2 * dim, dim)
        w.linear(f + "4", dim, 2 * dim)
    batch_norm("final_pointwise.1.0", dim)
    conv("final_pointwise.1.2", 2 * dim, dim, 1)
    for species, tracks in config["output_heads"].items():
        w.linear(f"_heads.{species}.0", tracks, 2 * dim)
    return config


BUILDERS = {"nt-v2-50m": (nt_v2, 12), "dnabert2-117m": (dnabert2, 12), "hyenadna-tiny": (hyena, 2),
            "caduceus-ph-1k": (caduceus, 4), "nt-v2-narrow": (nt_v2_narrow, 12),
            "enformer": (enformer, 11)}


def write_model(out_dir, name, seed, layers=None):
    build, default_layers = BUILDERS[name]
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    weights = Weights(seed)
    config = build(weights, folder, layers or default_layers)
    write_json(os.path.join(folder, "config.json"), config)
    write_safetensors(os.path.join(folder, "model.safetensors"), weights.tensors)
    count = sum(t.size for t in weights.tensors.values())
    print(f"random_models: wrote {folder} ({count / 1e6:.2f}M values, seed {seed})")
    return folder


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, help="override the layer count")
    args = ap.parse_args()
    for name in args.models.split(","):
        if name not in BUILDERS:
            sys.exit(f"random_models: unknown model '{name}'; choose from {', '.join(BUILDERS)}")
        write_model(args.out_dir, name, args.seed, args.layers)


if __name__ == "__main__":
    main()
