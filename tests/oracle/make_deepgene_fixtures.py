"""DeepGene oracle: a tiny random checkpoint run through DeepGene's published model code.

DeepGene (https://github.com/wds-seu/DeepGene, `PanGeneGraphTrans/modeling_roformer.py` and
`configuration_roformer.py`; these fixtures were made at commit 486343e; its weights are on
Google Drive, not the hub) is a RoFormer: BERT's post-LayerNorm stack, no position table, queries
and keys rotated in adjacent pairs by sinusoidal angles indexed by `pos_ids`. GENEB's extractor
(`embedding_pipeline/extractors/deepgene.py`) tokenizes with `tokenizers.Tokenizer.from_file(
"tokenizer.json").encode(s, add_special_tokens=False)`, truncates the ids to
max_position_embeddings − 2, writes [CLS] (1) at 0 and [SEP] (2) at 1 and the ids from 2, pads
with 3, gives positions 0 … n+1 to the real tokens and L−1 to the padding, calls
`model.roformer(input_ids, pos_ids, attention_mask)` and takes the mean of `last_hidden_state`
over the attention mask. This script does the same, for the whole batch at once (so padding is
exercised). DeepGene's tokenizer is DNABERT-2's layout (BPE, Whitespace pre-tokenizer, ids
0–4 [UNK] [CLS] [SEP] [PAD] [MASK]); the fixture tokenizer of tests/fixtures/tokenizers/dnabert2
has that layout.

The code is imported from a checkout ($DEEPGENE_SRC, its `PanGeneGraphTrans/` folder), never
committed and not changed. It was written for transformers 4.29; under transformers 5 it needs
what 4.29 gave it, supplied from outside: the helpers make_gena_fixtures.py stands in for (head
pruning, `get_head_mask`), imported from `modeling_utils` where 4.29 had them, and the config
defaults 4.29's `PretrainedConfig` set (`is_decoder`, `add_cross_attention`,
`chunk_size_feed_forward`).

Writes tests/fixtures/models/deepgene/ (config.json as the code's RoFormerConfig writes it,
model.safetensors with RoFormerForMaskedLM's tensors less the computed sinusoidal table, which
transformers leaves out on save, tokenizer.json, pipeline.json) and, with `--same-shape DIR`,
DIR/deepgene: random weights of DeepGene's shape (not committed): RoFormerConfig's defaults
(hidden 768, 12 layers, 12 heads, FFN 3072, 4,096 tokens — the size of its tokenizer.json —
and 5,120 positions), 85.7M parameters with the masked-LM head, as the published 85M.
Run: DEEPGENE_SRC=.../DeepGene/PanGeneGraphTrans python3 tests/oracle/make_deepgene_fixtures.py [--same-shape DIR]
"""

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/deepgene"
TOKENIZER = ROOT / "tests/fixtures/tokenizers/dnabert2/tokenizer.json"
SOURCE = Path(os.environ.get("DEEPGENE_SRC", ROOT / "target/deepgene-src/PanGeneGraphTrans"))
CLS, SEP, PAD = 1, 2, 3
# transformers 4.29's PretrainedConfig defaults that the code reads and transformers 5 dropped.
OLD_CONFIG_DEFAULTS = {"is_decoder": False, "add_cross_attention": False, "chunk_size_feed_forward": 0}


def gena_fixtures():
    spec = importlib.util.spec_from_file_location("make_gena_fixtures", Path(__file__).parent / "make_gena_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def deepgene_code():
    if not (SOURCE / "modeling_roformer.py").exists():
        sys.exit(f"{SOURCE}: no modeling_roformer.py; set DEEPGENE_SRC to the PanGeneGraphTrans/ folder of a checkout")
    import transformers.modeling_utils as modeling_utils
    import transformers.pytorch_utils as pytorch_utils

    gena = gena_fixtures()
    gena.install_pruning_stand_ins()
    for name in ("apply_chunking_to_forward", "find_pruneable_heads_and_indices", "prune_linear_layer"):
        setattr(modeling_utils, name, getattr(pytorch_utils, name))
    sys.path.insert(0, str(SOURCE))
    configuration = importlib.import_module("configuration_roformer")
    modeling = importlib.import_module("modeling_roformer")
    gena.install_transformers4_helpers(modeling.RoFormerPreTrainedModel)
    return configuration.RoFormerConfig, modeling.RoFormerForMaskedLM


def sequences():
    """make_gena_fixtures.py's (one token to past the tiny position table, runs of N), as geneb's
    readers normalise them (upper case, other letters N), which the extractor's input already is."""
    return [re.sub(r"[^ACGT]", "N", s.upper()) for s in gena_fixtures().sequences()]


def build(RoFormerConfig, RoFormerForMaskedLM, vocab, hidden, layers, heads, inter, positions, seed):
    torch.manual_seed(seed)
    config = RoFormerConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=inter, max_position_embeddings=positions, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, architectures=["RoFormerForMaskedLM"], **OLD_CONFIG_DEFAULTS,
    )
    model = RoFormerForMaskedLM(config).eval()
    with torch.no_grad():  # off their inits: no unit LayerNorms, no zero biases
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.1)
            if name.endswith(("query.weight", "key.weight")):
                p.normal_(0, 1.13 / hidden ** 0.5)  # peaked attention, so that a wrong rotation shows
    # The table must be the sinusoidal one the code builds, whatever transformers 5 initialises.
    table = model.roformer.encoder.embed_positions.weight
    head = hidden // heads
    angle = torch.arange(positions, dtype=torch.float64)[:, None] / 10000 ** (
        torch.arange(0, head, 2, dtype=torch.float64) / head)
    assert torch.allclose(table[:, : head // 2].double(), angle.sin(), atol=1e-6), "sinusoidal table overwritten"
    return model, config


def encode(tokenizer, texts, max_positions):
    """The extractor's `_encode_batch`, for one batch of every text."""
    ids = [tokenizer.encode(s, add_special_tokens=False).ids[: max_positions - 2] for s in texts]
    length = min(max(len(i) for i in ids) + 2, max_positions)
    input_ids = torch.full((len(ids), length), PAD, dtype=torch.long)
    mask = torch.zeros((len(ids), length), dtype=torch.bool)
    positions = torch.full((len(ids), length), length - 1, dtype=torch.long)
    for row, seq in enumerate(ids):
        n = len(seq)
        input_ids[row, :2] = torch.tensor([CLS, SEP])
        input_ids[row, 2 : 2 + n] = torch.tensor(seq, dtype=torch.long)
        mask[row, : 2 + n] = True
        positions[row, : 2 + n] = torch.arange(2 + n)
    return input_ids, mask, positions


def save(out, model, config):
    """config.json and model.safetensors (less the sinusoidal table, as transformers saves)."""
    out.mkdir(parents=True, exist_ok=True)
    config.to_json_file(out / "config.json")
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()
             if k != "roformer.encoder.embed_positions.weight"}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})


def embed(model, tokenizer, texts, max_positions):
    """The extractor's pooled embeddings of one batch."""
    input_ids, mask, positions = encode(tokenizer, texts, max_positions)
    hidden = model.roformer(input_ids=input_ids, pos_ids=positions, attention_mask=mask,
                            return_dict=True).last_hidden_state
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0), int(mask.sum())


def write(out, model, config, texts):
    import tokenizers

    save(out, model, config)
    shutil.copy(TOKENIZER, out / "tokenizer.json")
    tokenizer = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    with torch.no_grad():
        pooled = embed(model, tokenizer, texts, config.max_position_embeddings)[0].tolist()
    (out / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}) + "\n")
    params = sum(p.numel() for p in model.parameters())
    print(f"{out}: {params:,} parameters, {sum(f.stat().st_size for f in out.iterdir()) / 1024:.0f} KiB")
    return params


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--same-shape", type=Path, help="also write a DeepGene-shaped checkpoint into DIR/deepgene")
    args = parser.parse_args()
    RoFormerConfig, RoFormerForMaskedLM = deepgene_code()
    texts = sequences()
    vocab = len(json.loads(TOKENIZER.read_text())["model"]["vocab"])
    model, config = build(RoFormerConfig, RoFormerForMaskedLM, vocab, hidden=32, layers=2, heads=4, inter=48,
                          positions=64, seed=1)
    write(OUT, model, config, texts)
    if args.same_shape:
        model, config = build(RoFormerConfig, RoFormerForMaskedLM, 4096, hidden=768, layers=12, heads=12,
                              inter=3072, positions=5120, seed=2)
        write(args.same_shape.resolve() / "deepgene", model, config, [r * 4 for r in texts[:6]])


if __name__ == "__main__":
    main()
