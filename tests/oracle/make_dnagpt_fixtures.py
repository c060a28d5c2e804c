"""DNAGPT oracle: a tiny random checkpoint run through DNAGPT's published code, as GENEB's
extractor runs it.

DNAGPT (https://github.com/TencentAILabHealthcare/DNAGPT, `dna_gpt/`; these fixtures were made at
commit 9b6c093; its weights are on Google Drive and Tencent Weiyun, not the hub) is a GPT-2
decoder with a masked-LM head. GENEB's extractor (`embedding_pipeline/extractors/dnagpt.py`)
builds `KmerTokenizer(6, <34 reserved tokens>, dynamic)` (dynamic false for dna_gpt0.1b_h),
`DNAGPT.from_name(name, len(tokenizer))`, loads `torch.load(path)["model"]` and, one sequence at a
time, pools `model(input_ids, attention_mask)[-1]` by the mean over the attention mask: DNAGPT's
forward returns the masked-LM head's logits (the mask goes to its unused `numbers` argument), so
the embedding is the mean of those logits. This script does exactly that, one sequence per call.

The code is imported from a checkout ($DNAGPT_SRC, the folder holding `dna_gpt/`), never
committed and not changed.

Writes tests/fixtures/models/dnagpt/: config.json (DNAGPT's constructor arguments and the
tokenizer's k and dynamic, which geneb reads where the published files have no config.json),
dna_gpt_tiny.pth (`torch.save({"model": state_dict, "epoch": 3})`, as the published files nest
it) and pipeline.json; the tiny model uses 3-mers without dynamic k-mers (the dna_gpt0.1b_h
tokenizer's layout at k = 3, 159 tokens), so the pooled vectors stay small. Also tokenizer_ids.json:
the ids of the corpus for k = 6 both ways, from the published tokenizer class. With
`--same-shape DIR`, DIR/dnagpt/dna_gpt0.1b_h.pth alone (no config.json: geneb takes the shape from
the name, as `from_name` does): random weights of dna_gpt0.1b_h's shape, not committed.
Also tests/fixtures/models/dnagpt_hidden/: the recipe of dnagpt.py's newest version (e3d5f45),
which dna_gpt3b_m's published name implies in geneb (recipe.rs's DNAGPT_HIDDEN): 3-mers with
dynamic k-mers, `<R>` before each sequence, ln_f's hidden states pooled over the non-pad ids.
Run: DNAGPT_SRC=.../DNAGPT python3 tests/oracle/make_dnagpt_fixtures.py [--same-shape DIR]
"""

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

import torch
from torch.nn.utils.rnn import pad_sequence

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/dnagpt"
SOURCE = Path(os.environ.get("DNAGPT_SRC", ROOT / "target/dnagpt-src"))
# The extractor's reserved tokens, in its order.
SPECIAL = [str(i) for i in range(10)] + ["+", "-", "*", "/", "=", "&", "|", "!"] + \
    ["M", "B", "P", "R", "I", "K", "L", "O", "Q", "S", "U", "V", "W", "Y", "X", "Z"]


def dnagpt_code():
    if not (SOURCE / "dna_gpt/model/dna_gpt.py").exists():
        sys.exit(f"{SOURCE}: no dna_gpt/model/dna_gpt.py; set DNAGPT_SRC to a checkout of DNAGPT")
    sys.path.insert(0, str(SOURCE))
    from dna_gpt.model import DNAGPT
    from dna_gpt.tokenizer import KmerTokenizer
    return DNAGPT, KmerTokenizer


def sequences():
    """make_deepgene_fixtures.py's: one base (a chunk shorter than k: id 0) to past the tiny
    position table, runs of N, normalised as geneb's readers normalise them."""
    spec = importlib.util.spec_from_file_location("make_deepgene_fixtures",
                                                  Path(__file__).parent / "make_deepgene_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sequences()


def build(DNAGPT, vocab, max_len, layers, heads, dim, seed):
    torch.manual_seed(seed)
    model = DNAGPT(vocab_size=vocab, max_len=max_len, num_layers=layers, num_heads=heads, embedding_dim=dim,
                   bias=False).eval()
    with torch.no_grad():  # off their inits: no unit LayerNorms
        for name, p in model.named_parameters():
            if "ln" in name or ".2." in name:
                p.add_(torch.randn_like(p) * 0.1)
            if name.endswith("c_attn.weight"):
                p.normal_(0, 0.2)  # peaked attention, so that a wrong mask shows
    return model


def embed(model, tokenizer, text):
    """The extractor's embedding of one sequence (its batch of one)."""
    ids = tokenizer.encode(text, max_len=model.max_len)
    input_ids = ids[None]
    attention_mask = torch.ones_like(input_ids)
    hidden = model(input_ids, attention_mask)[-1]
    mask = attention_mask.unsqueeze(-1)
    return ((hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1))[0]


def embed_hidden(model, tokenizer, texts):
    """dnagpt.py's newest lines (e3d5f45): `<R>` before each sequence, batches of 4 padded with
    `<P>`, `_, hidden = model(input_ids)` with GENEB's vendored DNAGPT, whose forward returns
    `(logits, x)`: `x` is `_transformer_impl(_embedding_impl(ids))`, computed here from the
    upstream model's own methods, and pooled over the non-pad ids."""
    pooled = []
    for i in range(0, len(texts), 4):
        toks = [tokenizer.encode(f"<R>{s}", max_len=model.max_len) for s in texts[i:i + 4]]
        input_ids = pad_sequence(toks, batch_first=True, padding_value=tokenizer.pad_id)
        mask = (input_ids != tokenizer.pad_id).float().unsqueeze(-1)
        hidden = model._transformer_impl(model._embedding_impl(input_ids))
        pooled += ((hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).tolist()
    return pooled


def save(path, model):
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "epoch": 3}, path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--same-shape", type=Path, help="also write dna_gpt0.1b_h's shape into DIR/dnagpt")
    args = parser.parse_args()
    DNAGPT, KmerTokenizer = dnagpt_code()
    texts = sequences()

    tokenizer = KmerTokenizer(3, SPECIAL, dynamic_kmer=False)
    model = build(DNAGPT, len(tokenizer), max_len=24, layers=2, heads=4, dim=32, seed=1)
    save(OUT / "dna_gpt_tiny.pth", model)
    config = {"model_type": "dnagpt", "vocab_size": len(tokenizer), "max_len": model.max_len,
              "num_layers": model.num_layers, "num_heads": model.num_heads, "embedding_dim": model.embedding_dim,
              "bias": False, "kmer": 3, "dynamic_kmer": False}
    (OUT / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    with torch.no_grad():
        pooled = [embed(model, tokenizer, t).tolist() for t in texts]
    (OUT / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}) + "\n")
    # The published tokenizers' ids (k = 6, both ways), for the tokenizer test.
    ids = {str(dynamic).lower(): [KmerTokenizer(6, SPECIAL, dynamic_kmer=dynamic).encode(t, to_tensor=False)
                                  for t in texts] for dynamic in (False, True)}
    sizes = {str(dynamic).lower(): len(KmerTokenizer(6, SPECIAL, dynamic_kmer=dynamic)) for dynamic in (False, True)}
    (OUT / "tokenizer_ids.json").write_text(json.dumps({"sequences": texts, "ids": ids, "vocab_size": sizes}) + "\n")
    print(f"{OUT}: {sum(p.numel() for p in model.parameters()):,} parameters")

    # dna_gpt3b_m's recipe (dynamic k-mers, `<R>`, ln_f's states) on a tiny model: dnagpt_hidden/.
    hidden_out = OUT.parent / "dnagpt_hidden"
    tokenizer = KmerTokenizer(3, SPECIAL, dynamic_kmer=True)
    model = build(DNAGPT, len(tokenizer), max_len=24, layers=2, heads=4, dim=32, seed=2)
    save(hidden_out / "dna_gpt_tiny.pth", model)
    config = {"model_type": "dnagpt", "vocab_size": len(tokenizer), "max_len": model.max_len,
              "num_layers": model.num_layers, "num_heads": model.num_heads, "embedding_dim": model.embedding_dim,
              "bias": False, "kmer": 3, "dynamic_kmer": True, "output": "hidden", "prompt": "R"}
    (hidden_out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    with torch.no_grad():
        pooled = embed_hidden(model, tokenizer, texts)
    (hidden_out / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}) + "\n")
    if args.same_shape:
        tokenizer = KmerTokenizer(6, SPECIAL, dynamic_kmer=False)
        model = DNAGPT.from_name("dna_gpt0.1b_h", vocab_size=len(tokenizer)).eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.add_(torch.randn_like(p) * 0.02)
        folder = args.same_shape.resolve() / "dnagpt"
        save(folder / "dna_gpt0.1b_h.pth", model)
        with torch.no_grad():
            pooled = [embed(model, tokenizer, t * 20).tolist() for t in texts[:4]]
        (folder / "pipeline.json").write_text(json.dumps({"sequences": [t * 20 for t in texts[:4]],
                                                          "pooled": pooled}) + "\n")
        print(f"{folder}: {sum(p.numel() for p in model.parameters()):,} parameters")


if __name__ == "__main__":
    main()
