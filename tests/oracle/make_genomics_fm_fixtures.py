"""Genomics-FM oracle: a tiny random checkpoint run through Genomics-FM's published model code.

Genomics-FM (https://github.com/terry-r123/Genomics-FM, `genomics_fm/bert_layers.py`; these
fixtures were made at commit edc9f16; its weights are on Google Drive, not the hub) is
DNABERT-2's MosaicBERT code (fused Wqkv, GLU FFN with exact GELU, post-LayerNorm, unpadded
attention) with a learned position table that `BertEmbeddings` adds unless `use_alibi` is
passed; ALiBi is then left out of the attention bias too. GENEB's extractor
(`embedding_pipeline/extractors/genomics-fm.py`) passes no `use_alibi`, so the table it is:
`model.bert(input_ids, attention_mask, token_type_ids)`, `sequence_output[:, 0]` (the [CLS]
token's final hidden state, not a mean), `tokenizer(batch, padding=True, truncation=True,
max_length=512)` after `re.sub(r"[^ACGT]", "N", s.strip().upper())`. Its tokenizer is
DNABERT-2's BPE layout (`genomics_fm/tokenizer_bpe/tokenizer.json`: Whitespace pre-tokenizer,
BPE without fused unknowns, [CLS] $A [SEP]); the fixture tokenizer of
tests/fixtures/tokenizers/dnabert2 has that layout.

The code is imported from a checkout ($GENOMICS_FM_SRC, its `genomics_fm/` folder), never
committed, with one line changed, as GENEB's run on a GPU never met it: `BertEmbeddings.forward`
computes an unused `gpu_number = int(input_ids.device.index)`, which raises on the CPU
(`device.index` is None there). Nothing else is touched.

Writes tests/fixtures/models/genomics_fm/ (config.json as the code's BertConfig writes it,
model.safetensors with BertForMaskedLM's tensors, the tied decoder stored once, tokenizer files,
pipeline.json) and, with `--same-shape DIR`, DIR/genomics-fm: random weights of Genomics-FM's
shape (not committed). Its config.json is not public; hidden 768, 12 layers, 12 heads, FFN 3072
(DNABERT-2's, whose code it extends), 512 positions and an embedding table of 7,268 rows (its
tokenizer has 4,100 tokens; the repository's BPE + k-mer vocabulary.txt about 7,267) give
exactly the published checkpoint's 119,906,660 parameters (BertForMaskedLM without a pooler,
the tied decoder once).
Run: GENOMICS_FM_SRC=.../Genomics-FM/genomics_fm python3 tests/oracle/make_genomics_fm_fixtures.py [--same-shape DIR]
"""

import argparse
import importlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/genomics_fm"
TOKENIZER = ROOT / "tests/fixtures/tokenizers/dnabert2"
SOURCE = Path(os.environ.get("GENOMICS_FM_SRC", ROOT / "target/genomics-fm-src/genomics_fm"))
SMOKE = ROOT / "tasks/smoke"
CPU_DEFECT = "        gpu_number = int(input_ids.device.index)\n"


def genomics_fm_code():
    """The package's modules, `bert_layers.py` with its CPU-only defect line dropped."""
    if not (SOURCE / "bert_layers.py").exists():
        sys.exit(f"{SOURCE}: no bert_layers.py; set GENOMICS_FM_SRC to the genomics_fm/ folder of a checkout")
    package = Path(tempfile.mkdtemp(prefix="genomics-fm-oracle-")) / "genomics_fm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("bert_padding.py", "configuration_bert.py"):
        shutil.copy(SOURCE / name, package / name)
    source = (SOURCE / "bert_layers.py").read_text()
    if source.count(CPU_DEFECT) != 1:
        sys.exit("bert_layers.py differs from the commit these fixtures were made at")
    (package / "bert_layers.py").write_text(source.replace(CPU_DEFECT, ""))
    sys.path.insert(0, str(package.parent))
    configuration = importlib.import_module("genomics_fm.configuration_bert")
    modeling = importlib.import_module("genomics_fm.bert_layers")
    modeling.flash_attn_qkvpacked_func = None  # as the extractor sets it: the PyTorch attention
    return configuration.BertConfig, modeling.BertForMaskedLM


def sequences():
    rows = []
    for table in sorted(SMOKE.glob("*.csv"))[:3]:
        rows += [line.split(",")[0] for line in table.read_text().splitlines()[1:6]]
    # Lengths from one token to past the tiny position table, and runs of N (unknown to the
    # vocabulary: one [UNK] each).
    return [r[: 3 + 23 * i] for i, r in enumerate(rows)] + ["acgtnnACGT", "A", rows[0][:30] + "N" * 9 + rows[1][:30]]


def build(BertConfig, BertForMaskedLM, vocab, hidden, layers, heads, inter, positions, seed):
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=inter, max_position_embeddings=positions, type_vocab_size=2,
        hidden_act="gelu", layer_norm_eps=1e-12, pad_token_id=3, hidden_dropout_prob=0.0,
        architectures=["BertForMaskedLM"],
    )
    model = BertForMaskedLM(config).eval()
    with torch.no_grad():  # off their inits: no unit LayerNorms, no zero biases
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name or "layernorm" in name:
                p.add_(torch.randn_like(p) * 0.1)
            if "position_embeddings" in name:
                p.normal_(0, 0.5)  # large enough that a run without them shows
    return model, config


def save(out, model, config):
    """config.json and model.safetensors (the decoder tied to the word embeddings left out)."""
    out.mkdir(parents=True, exist_ok=True)
    config.to_json_file(out / "config.json")
    state = model.state_dict()
    embeddings = state["bert.embeddings.word_embeddings.weight"]
    tied = {k for k, v in state.items() if k != "bert.embeddings.word_embeddings.weight"
            and v.data_ptr() == embeddings.data_ptr()}
    state = {k: v.detach().clone().contiguous() for k, v in state.items() if k not in tied}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})


def write(out, model, config, max_length, texts):
    from transformers import AutoTokenizer

    save(out, model, config)
    shutil.copy(TOKENIZER / "tokenizer.json", out / "tokenizer.json")
    # No model_max_length: the extractor passes max_length itself (512, the position table).
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "cls_token": "[CLS]",
        "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]"}) + "\n")
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    pooled = []
    with torch.no_grad():
        for text in texts:
            text = re.sub(r"[^ACGT]", "N", text.strip().upper())
            enc = tokenizer([text], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            # The real tokenizer returns token type 0 for every token of one sequence; the fixture's
            # returns none.
            types = enc.get("token_type_ids", torch.zeros_like(enc["input_ids"]))
            sequence_output, _ = model.bert(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                                            token_type_ids=types)
            pooled += sequence_output[:, 0].tolist()
    (out / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}) + "\n")
    params = sum(p.numel() for p in model.parameters())
    print(f"{out}: {params:,} parameters, {sum(f.stat().st_size for f in out.iterdir()) / 1024:.0f} KiB")
    return params


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--same-shape", type=Path, help="also write a Genomics-FM-shaped checkpoint into DIR/genomics-fm")
    args = parser.parse_args()
    BertConfig, BertForMaskedLM = genomics_fm_code()
    texts = sequences()
    vocab = len(json.loads((TOKENIZER / "tokenizer.json").read_text())["model"]["vocab"])
    model, config = build(BertConfig, BertForMaskedLM, vocab, hidden=32, layers=2, heads=4, inter=48,
                          positions=64, seed=1)
    write(OUT, model, config, 64, texts)
    if args.same_shape:
        model, config = build(BertConfig, BertForMaskedLM, 7268, hidden=768, layers=12, heads=12, inter=3072,
                              positions=512, seed=2)
        params = write(args.same_shape.resolve() / "genomics-fm", model, config, 512, [r * 4 for r in texts[:6]])
        assert params == 119_906_660, params


if __name__ == "__main__":
    main()
