"""LucaOne oracle: GENEB's extractor lines over the PyPI package `lucaone` 1.1.1 (the modeling,
configuration and tokenizer files the hub's LucaGroup/LucaOne-* repositories serve as remote
code; installed in the environment with `pip install --no-deps lucaone==1.1.1`, never committed).

The extractor is `embedding_pipeline/extractors/lucaone.py` of darlednik/GENEB (one version,
e3d5f45): the tokenizer's `encode_plus(seq, seq_type="gene", add_special_tokens=True,
truncation=True, max_length=config.max_position_embeddings)` for each sequence, ids padded on
the right with `pad_token_id` and the mask with 0 to the batch's longest, `AutoModel` loaded
with `task_level="token_level", task_type="embedding"`, called with `input_ids` and
`attention_mask` only, and the mean of `last_hidden_state` over the mask. Batches of 4, the
`--batch_size` default of GENEB's main.py.

Writes tests/fixtures/models/lucaone/: a tiny LucaGPLMModel (hidden 32, 4 heads, 2 layers,
the 39-token gene_prot vocabulary, 64 positions) saved by `save_pretrained` (config.json,
model.safetensors), every parameter drawn at random (LayerNorms included), with learned
positions, token types, the embedding LayerNorm and embed_scale 2 switched on so that each of
those paths is checked; and pipeline.json: the sequences, the reference tokenizer's ids and
the pooled embeddings (the model run in float64, so geneb's f32 is judged by its own rounding).

Run: python3 tests/oracle/make_lucaone_fixtures.py
"""

import json
import random
from pathlib import Path

import numpy as np
import torch
import lucaone  # noqa: F401  (registers the "lucaone" model type with the Auto classes)
from lucaone import LucaGPLMConfig, LucaGPLMModel, LucaGPLMTokenizer
from transformers import AutoModel

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/lucaone"
BATCH_SIZE = 4


def pad(x, val, max_len):
    return x + [val] * (max_len - len(x))


def extract(tokenizer, model, sequences, max_length):
    """The extractor's `_encode_batch` and `extract_embeddings`, line for line."""
    all_embs, all_ids = [], []
    with torch.no_grad():
        for i in range(0, len(sequences), BATCH_SIZE):
            batch = sequences[i : i + BATCH_SIZE]
            encs = [
                tokenizer.encode_plus(
                    text=seq,
                    seq_type="gene",
                    add_special_tokens=True,
                    truncation=True,
                    max_length=max_length,
                    return_attention_mask=True,
                )
                for seq in batch
            ]
            all_ids += [e["input_ids"] for e in encs]
            max_len = max(len(e["input_ids"]) for e in encs)
            input_ids = torch.tensor(
                [pad(e["input_ids"], tokenizer.pad_token_id, max_len) for e in encs],
                dtype=torch.long,
            )
            attention_mask = torch.tensor(
                [pad(e["attention_mask"], 0, max_len) for e in encs], dtype=torch.long
            )
            outputs = model(input_ids=input_ids, attention_mask=attention_mask)
            hidden = outputs.last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            emb = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
            all_embs.append(emb.cpu().numpy())
    return np.vstack(all_embs), all_ids


def main():
    torch.manual_seed(37)
    rng = random.Random(37)
    config = LucaGPLMConfig(
        vocab_size=39,
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=2,
        max_position_embeddings=64,
        no_position_embeddings=False,
        no_token_type_embeddings=False,
        use_embed_layer_norm=True,
        use_last_layer_norm=True,
        embed_scale=2.0,
    )
    config.architectures = ["LucaGPLMModel"]
    model = LucaGPLMModel(config)
    g = torch.Generator().manual_seed(37)
    with torch.no_grad():
        for name, p in model.named_parameters():
            scale = 0.5 if p.ndim == 1 else 1.0 / max(1, p.shape[-1]) ** 0.5
            p.copy_(torch.randn(p.shape, generator=g) * scale + (1.0 if name.endswith("norm.weight") else 0.0))
    OUT.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(OUT, safe_serialization=True)

    tokenizer = LucaGPLMTokenizer.from_pretrained(str(OUT))
    reference = AutoModel.from_pretrained(
        str(OUT), task_level="token_level", task_type="embedding"
    ).double().eval()
    max_length = reference.config.max_position_embeddings

    def dna(n, alphabet="ACGT"):
        return "".join(rng.choice(alphabet) for _ in range(n))

    sequences = [
        "A",
        "acgtuACGTU",
        "NNRYKMWSBDHVacgt" + dna(9, "ACGTN"),
        dna(40),
        dna(17, "acgtn"),
        # Longer than 62 nucleotides: the tokenizer keeps the first 62 and [SEP] last.
        dna(80),
        dna(5),
    ]
    pooled, ids = extract(tokenizer, reference, sequences, max_length)
    (OUT / "pipeline.json").write_text(
        json.dumps(
            {"sequences": sequences, "input_ids": ids, "pooled": pooled.astype("float32").tolist()}
        )
        + "\n"
    )
    print(OUT, pooled.shape)


if __name__ == "__main__":
    torch.set_num_threads(2)
    main()
