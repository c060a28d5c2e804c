"""Tiny randomly initialised transformer checkpoints in the genuine HF layout, and the pooled
embeddings an independent PyTorch implementation computes for them, for tests/hf_models.rs.

- BERT (DNABERT / GROVER / SpliceBERT): transformers' own BertForMaskedLM.
- NT-v2: transformers' EsmForMaskedLM with its feed-forward replaced by the bias-free SwiGLU of
  the checkpoints' remote modeling_esm.py (EsmIntermediate: Linear(h, 2i) → SiLU(x1)·x2;
  EsmOutput: Linear(i, h) + residual), tensor names unchanged.
- DNABERT-2: a PyTorch module written here after MosaicBERT's bert_layers.py (fused Wqkv,
  ALiBi, GLU FFN with exact GELU, post-LayerNorm), with the real checkpoint's tensor names.

Pooling as GENEB's reference extractors: masked mean of the final hidden layer over the
attention mask, special tokens included. Run: python3 tests/oracle/make_transformer_fixtures.py
(needs torch, transformers, safetensors; CI only reads the committed output).
"""

import json
import math
import pathlib

import torch
from safetensors.torch import save_file
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "models"
TOKENIZERS = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tokenizers"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
SMOKE = pathlib.Path(__file__).resolve().parents[2] / "tasks" / "smoke"


def real_sequences():
    """A few real sequences from the committed smoke suite, of different lengths."""
    table = sorted(SMOKE.glob("*.csv"))[0]
    rows = [line.split(",")[0] for line in table.read_text().splitlines()[1:40]]
    return [rows[0][:5], rows[1][:23], rows[2][:40], rows[3][:61]]


def batch_ids(sequences, encode, pad_id):
    ids = [encode(s) for s in sequences]
    width = max(map(len, ids))
    mask = [[1] * len(x) + [0] * (width - len(x)) for x in ids]
    ids = [x + [pad_id] * (width - len(x)) for x in ids]
    return torch.tensor(ids), torch.tensor(mask)


def masked_mean(hidden, mask):
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1)


def pipeline_sequences():
    """Real sequences, some longer than the fixture tokenizers' model_max_length (truncated)."""
    rows = []
    for table in sorted(SMOKE.glob("*.csv"))[:3]:
        rows += [line.split(",")[0] for line in table.read_text().splitlines()[1:6]]
    return [r[: 3 + 17 * i] for i, r in enumerate(rows)] + ["acgtnnACGT", "A"]


def write_pipeline(name, tokenizer_fixture, feed, run_model, max_length=None, sequences=None):
    """The whole chain as GENEB's extractors run it: the real HF tokenizer of the fixture
    (truncation=True, max_length=model_max_length, one sequence at a time), the model, the
    masked mean. geneb must reproduce it from the folder alone. `name` may be an absolute path
    (a same-shape checkpoint outside the repo); `max_length` replaces the fixture's
    model_max_length."""
    import transformers

    out = ROOT / name
    for f in TOKENIZER_FILES:
        src = TOKENIZERS / tokenizer_fixture / f
        if src.exists():
            (out / f).write_bytes(src.read_bytes())
    if max_length is not None:
        config = json.loads((out / "tokenizer_config.json").read_text())
        (out / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": max_length}) + "\n")
    # The class the tokenizer_config names (AutoTokenizer would consult config.json's auto_map).
    tokenizer_class = json.loads((out / "tokenizer_config.json").read_text())["tokenizer_class"]
    tokenizer = getattr(transformers, tokenizer_class).from_pretrained(str(out))
    sequences = sequences or pipeline_sequences()
    pooled = []
    for seq in sequences:
        enc = tokenizer(feed(seq.upper()), truncation=True, max_length=tokenizer.model_max_length, return_tensors="pt")
        with torch.no_grad():
            hidden = run_model(enc["input_ids"], enc["attention_mask"])
        pooled += masked_mean(hidden, enc["attention_mask"]).tolist()
    (out / "pipeline.json").write_text(json.dumps({"sequences": sequences, "pooled": pooled}) + "\n")


def write(name, config, state, ids, mask, hidden):
    out = ROOT / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_file({k: v.detach().clone().contiguous() for k, v in state.items()}, str(out / "model.safetensors"))
    expected = {
        "input_ids": ids.tolist(),
        "attention_mask": mask.tolist(),
        "pooled": masked_mean(hidden, mask).tolist(),
        # Hidden states of real tokens only: padding rows are unconstrained by the model.
        "last_hidden_state_first": hidden[0, : int(mask[0].sum())].tolist(),
    }
    (out / "expected.json").write_text(json.dumps(expected) + "\n")


def char_ids(vocab_offset):
    table = {c: vocab_offset + i for i, c in enumerate("ACGTN")}
    return lambda s: [2] + [table.get(c, table["N"]) for c in s] + [3]


def bert_model(hidden, layers, heads, inter, positions, seed):
    """transformers' BertForMaskedLM with SpliceBERT's vocabulary (10 tokens), biases and
    LayerNorms perturbed. Returns (model, config)."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=10, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=inter, max_position_embeddings=positions, type_vocab_size=2,
        hidden_act="gelu", layer_norm_eps=1e-12, pad_token_id=0,
    )
    model = BertForMaskedLM(config).eval()
    # Random init leaves LayerNorm at identity and biases at 0: perturb them so they are tested.
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("bias") or "LayerNorm" in n:
                p.add_(torch.randn_like(p) * 0.1)
    return model, config


def bert_state(model):
    # Tied to the word embeddings / the prediction bias: save_pretrained stores them once, too.
    tied = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
    return {k: v for k, v in model.state_dict().items() if k not in tied}


def bert():
    model, config = bert_model(hidden=32, layers=2, heads=4, inter=64, positions=80, seed=1)
    ids, mask = batch_ids(real_sequences(), char_ids(5), 0)
    with torch.no_grad():
        hidden = model.bert(input_ids=ids, attention_mask=mask).last_hidden_state
    cfg = config.to_dict()
    cfg["architectures"] = ["BertForMaskedLM"]
    write("bert", cfg, bert_state(model), ids, mask, hidden)
    # SpliceBERT's usage: one token per nucleotide, fed space-separated.
    write_pipeline(
        "bert", "splicebert", lambda s: " ".join(s),
        lambda i, m: model.bert(input_ids=i, attention_mask=m).last_hidden_state,
    )


def splicebert_same_shape(out):
    """SpliceBERT-1024nt's shape (6 layers, hidden 512, 16 heads, FFN 2048, 1026 positions:
    19,710,474 parameters with the MLM head, the leaderboard's count) on random weights, with
    its tokenizer files and the whole chain's pooled outputs, in `out` (not committed)."""
    model, config = bert_model(hidden=512, layers=6, heads=16, inter=2048, positions=1026, seed=11)
    params = sum(p.numel() for p in model.parameters())
    assert params == 19_710_474, params
    out.mkdir(parents=True, exist_ok=True)
    cfg = config.to_dict()
    cfg["architectures"] = ["BertForMaskedLM"]
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    save_file({k: v.detach().clone().contiguous() for k, v in bert_state(model).items()}, str(out / "model.safetensors"))
    rows = [line.split(",")[0] for line in sorted(SMOKE.glob("*.csv"))[1].read_text().splitlines()[1:4]]
    sequences = [rows[0][:300], rows[1][:1000], (rows[1] + rows[2])[:1100]]
    write_pipeline(
        out, "splicebert", lambda s: " ".join(s),
        lambda i, m: model.bert(input_ids=i, attention_mask=m).last_hidden_state,
        max_length=1026, sequences=sequences,
    )
    print(f"{out}: SpliceBERT-1024nt-shaped, {params:,} parameters")


class Dnabert2Layer(nn.Module):
    def __init__(self, h, heads, inter):
        super().__init__()
        self.heads = heads
        self.attention = nn.Module()
        self.attention.self = nn.Module()
        self.attention.self.Wqkv = nn.Linear(h, 3 * h)
        self.attention.output = nn.Module()
        self.attention.output.dense = nn.Linear(h, h)
        self.attention.output.LayerNorm = nn.LayerNorm(h, eps=1e-12)
        self.mlp = nn.Module()
        self.mlp.gated_layers = nn.Linear(h, 2 * inter, bias=False)
        self.mlp.wo = nn.Linear(inter, h)
        self.mlp.layernorm = nn.LayerNorm(h, eps=1e-12)
        self.inter = inter

    def forward(self, x, bias):
        b, t, h = x.shape
        d = h // self.heads
        qkv = self.attention.self.Wqkv(x).view(b, t, 3, self.heads, d)
        q, k, v = (qkv[:, :, i].permute(0, 2, 1, 3) for i in range(3))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias
        ctx = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(b, t, h)
        a = self.attention.output.LayerNorm(self.attention.output.dense(ctx) + x)
        g = self.mlp.gated_layers(a)
        y = nn.functional.gelu(g[..., : self.inter]) * g[..., self.inter :]
        return self.mlp.layernorm(self.mlp.wo(y) + a)


def alibi_slopes(n):
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n - closest]


def dnabert2_encoder(h, heads, inter, vocab, layers):
    """The MosaicBERT encoder (embeddings, layers, pooler), biases and LayerNorms perturbed."""
    bert = nn.Module()
    bert.embeddings = nn.Module()
    bert.embeddings.word_embeddings = nn.Embedding(vocab, h)
    bert.embeddings.token_type_embeddings = nn.Embedding(2, h)
    bert.embeddings.LayerNorm = nn.LayerNorm(h, eps=1e-12)
    bert.encoder = nn.Module()
    bert.encoder.layer = nn.ModuleList(Dnabert2Layer(h, heads, inter) for _ in range(layers))
    bert.pooler = nn.Module()
    bert.pooler.dense = nn.Linear(h, h)
    with torch.no_grad():
        for n, p in bert.named_parameters():
            if n.endswith("bias") or "LayerNorm" in n or "layernorm" in n:
                p.add_(torch.randn_like(p) * 0.1)
    return bert


def dnabert2_forward(bert):
    """(input_ids, attention_mask) -> last hidden state, as MosaicBERT computes it."""
    heads = bert.encoder.layer[0].heads

    def forward(ids, mask):
        t = ids.shape[1]
        rel = (torch.arange(t)[None, :] - torch.arange(t)[:, None]).abs()
        alibi = torch.tensor(alibi_slopes(heads))[:, None, None] * -rel
        bias = (1.0 - mask[:, None, None, :].float()) * -10000.0 + alibi[None]
        x = bert.embeddings.word_embeddings(ids) + bert.embeddings.token_type_embeddings(torch.zeros_like(ids))
        x = bert.embeddings.LayerNorm(x)
        for layer in bert.encoder.layer:
            x = layer(x, bias)
        return x

    return forward


def dnabert2_checkpoint(bert):
    """config.json and the tensors of the real checkpoint's layout (MLM head included)."""
    h = bert.embeddings.word_embeddings.embedding_dim
    vocab = bert.embeddings.word_embeddings.num_embeddings
    first = bert.encoder.layer[0]
    state = {f"bert.{k}": v for k, v in bert.state_dict().items()}
    # The MLM head the real checkpoint carries (BertForMaskedLM), unused by the encoder.
    state["cls.predictions.bias"] = torch.zeros(vocab)
    state["cls.predictions.transform.dense.weight"] = torch.randn(h, h)
    config = {
        "architectures": ["BertForMaskedLM"], "model_type": "bert", "alibi_starting_size": 512,
        "auto_map": {"AutoModel": "bert_layers.BertModel"},
        "hidden_size": h, "num_attention_heads": first.heads, "num_hidden_layers": len(bert.encoder.layer),
        "intermediate_size": first.inter, "vocab_size": vocab, "type_vocab_size": 2,
        "hidden_act": "gelu", "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
    }
    return config, state


def dnabert2():
    torch.manual_seed(2)
    # 6 heads is not a power of two: exercises ALiBi's interleaved slopes.
    bert = dnabert2_encoder(h=24, heads=6, inter=40, vocab=1024, layers=2)
    ids, mask = batch_ids(real_sequences(), char_ids(5), 0)
    forward = dnabert2_forward(bert)
    with torch.no_grad():
        x = forward(ids, mask)
    config, state = dnabert2_checkpoint(bert)
    write("dnabert2", config, state, ids, mask, x)
    write_pipeline("dnabert2", "dnabert2", lambda s: s, forward)


def nt_v2_model(vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size,
                max_position_embeddings):
    """transformers' EsmForMaskedLM with NT-v2's bias-free SwiGLU feed-forward (the checkpoints'
    remote modeling_esm.py), biases and LayerNorms perturbed. Returns (model, config)."""
    from transformers import EsmConfig, EsmForMaskedLM
    from transformers.models.esm import modeling_esm

    class GatedIntermediate(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.dense = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)

        def forward(self, x):
            x1, x2 = self.dense(x).chunk(2, -1)
            return nn.functional.silu(x1) * x2

    class BiasFreeOutput(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.dense = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

        def forward(self, hidden_states, input_tensor):
            return self.dense(hidden_states) + input_tensor

    modeling_esm.EsmIntermediate = GatedIntermediate
    modeling_esm.EsmOutput = BiasFreeOutput
    config = EsmConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings, position_embedding_type="rotary",
        layer_norm_eps=1e-12, pad_token_id=1, mask_token_id=2, token_dropout=False,
        emb_layer_norm_before=False,
    )
    model = EsmForMaskedLM(config).eval()
    assert isinstance(model.esm.encoder.layer[0].intermediate, GatedIntermediate)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("bias") or "LayerNorm" in n or "layer_norm" in n:
                p.add_(torch.randn_like(p) * 0.1)
    return model, config


def nt_v2_hidden(model, ids, mask):
    return model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1]


def nt_v2_checkpoint(model, config):
    """config.json and the tensors as the real NT-v2 checkpoints lay them out."""
    cfg = config.to_dict()
    cfg.pop("model_type", None)
    cfg["add_bias_fnn"] = False
    cfg["architectures"] = ["EsmForMaskedLM"]
    cfg["auto_map"] = {"AutoConfig": "esm_config.EsmConfig", "AutoModelForMaskedLM": "modeling_esm.EsmForMaskedLM"}
    state = dict(model.state_dict())
    # The real checkpoints (older remote code) keep the rotary frequencies as a persistent
    # buffer in every layer; transformers 5 holds one copy on the model.
    inv_freq = model.esm.rotary_embeddings.inv_freq
    state.pop("esm.rotary_embeddings.inv_freq", None)
    for i in range(config.num_hidden_layers):
        state[f"esm.encoder.layer.{i}.attention.self.rotary_embeddings.inv_freq"] = inv_freq
    state.pop("lm_head.decoder.weight", None)
    return cfg, state


def nt_v2():
    torch.manual_seed(3)
    model, config = nt_v2_model(
        vocab_size=75, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=48, max_position_embeddings=90,
    )
    ids, mask = batch_ids(real_sequences(), lambda s: [3] + [5 + "ACGTN".index(c) if c in "ACGT" else 9 for c in s], 1)
    with torch.no_grad():
        hidden = nt_v2_hidden(model, ids, mask)
    cfg, state = nt_v2_checkpoint(model, config)
    write("nt_v2", cfg, state, ids, mask, hidden)
    write_pipeline("nt_v2", "nt3", lambda s: s, lambda i, m: nt_v2_hidden(model, i, m))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--same-shape", type=pathlib.Path,
                        help="only write a SpliceBERT-1024nt-shaped checkpoint into DIR/splicebert")
    args = parser.parse_args()
    if args.same_shape:
        splicebert_same_shape(args.same_shape.resolve() / "splicebert")
    else:
        bert()
        dnabert2()
        nt_v2()
        print("fixtures written to", ROOT)
