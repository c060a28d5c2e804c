"""Nucleotide Transformer v1 oracle: a tiny random checkpoint of transformers' own
EsmForMaskedLM as NT-v1 configures it (nucleotide-transformer-2.5b-multi-species and its
siblings run on transformers' ESM code): learned absolute positions (`position_embedding_type:
absolute`, positions counted from pad_token_id + 1), `token_dropout: true` (the embeddings scaled
by 0.88 / (1 − the share of <mask> tokens)), no LayerNorm before the blocks, a GELU feed-forward
with biases, `emb_layer_norm_after`. Weights off their inits, so no LayerNorm is the identity.

Writes tests/fixtures/models/nt_v1/: config.json, model.safetensors, the tiny 3-mer EsmTokenizer
of tests/fixtures/tokenizers/nt3 (model_max_length 40), expected.json (a padded batch: ids, mask,
the first sequence's final states and the masked means) and pipeline.json (GENEB's nt.py lines:
the tokenizer with truncation, `hidden_states[-1]` pooled over the mask, in batches of 4 padded
to the longest). Run: /work/pyenv/bin/python tests/oracle/make_esm_v1_fixtures.py
"""

import json
import shutil
import sys
from pathlib import Path

import torch
from transformers import EsmConfig, EsmForMaskedLM, EsmTokenizer

sys.path.insert(0, str(Path(__file__).parent))
from make_llama_fixtures import sequences  # noqa: E402 (make_deepgene_fixtures.py's)

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/nt_v1"
TOKENIZER = ROOT / "tests/fixtures/tokenizers/nt3"
BATCH = 4


def perturb(model):
    """Off the inits: no LayerNorm the identity, no zero bias, positions that matter."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
            if "position_embeddings" in name:
                p.normal_(0, 0.5)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for f in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        if (TOKENIZER / f).exists():
            shutil.copy(TOKENIZER / f, OUT / f)
    tokenizer = EsmTokenizer.from_pretrained(str(OUT))
    torch.manual_seed(0)
    config = EsmConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=48, hidden_act="gelu", max_position_embeddings=tokenizer.model_max_length + 2,
        position_embedding_type="absolute", token_dropout=True, emb_layer_norm_before=False,
        pad_token_id=tokenizer.pad_token_id, mask_token_id=tokenizer.mask_token_id,
        layer_norm_eps=1e-12, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        architectures=["EsmForMaskedLM"])
    model = EsmForMaskedLM(config).eval()
    perturb(model)
    model.save_pretrained(OUT, safe_serialization=True)

    def run(enc):
        with torch.no_grad():
            out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                        output_hidden_states=True)
        return out.hidden_states[-1]

    def masked_mean(hidden, mask):
        mask = mask.unsqueeze(-1).float()
        return ((hidden * mask).sum(1) / mask.sum(1)).tolist()

    texts = sequences()
    pooled, first = [], None
    for i in range(0, len(texts), BATCH):
        enc = tokenizer(texts[i:i + BATCH], padding=True, truncation=True, return_tensors="pt")
        hidden = run(enc)
        pooled += masked_mean(hidden, enc["attention_mask"])
        if first is None:
            first = (enc, hidden)
    (OUT / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}))
    enc, hidden = first
    (OUT / "expected.json").write_text(json.dumps({
        "input_ids": enc["input_ids"].tolist(),
        "attention_mask": enc["attention_mask"].tolist(),
        "pooled": pooled[:BATCH],
        "last_hidden_state_first": hidden[0].tolist(),
    }))


if __name__ == "__main__":
    main()
