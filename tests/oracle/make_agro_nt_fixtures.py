"""AgroNT oracle: a tiny random checkpoint of transformers' own EsmForMaskedLM laid out as
InstaDeepAI/agro-nucleotide-transformer-1b's repository is, embedded with the lines of GENEB's
nt.py (darlednik/GENEB, `embedding_pipeline/extractors/nt.py`).

AgroNT's config.json names no auto_map (the hub marks the repository `esm`, not `custom_code`,
and its card loads it without trust_remote_code), so nt.py's
`AutoModelForMaskedLM.from_pretrained(..., trust_remote_code=True)` builds transformers'
EsmForMaskedLM, not the modeling_esm.py the repository also holds. What this fixture keeps of
the repository's layout:
- pytorch_model.bin (torch.save), not safetensors;
- vocab.txt of 4,107 lines, no final newline: <unk> <pad> <mask> <cls>, the 4,096 6-mers, A T C
  G N, then <eos> and <bos> past the model's 4,105 embedding rows (DNA never reaches them);
- tokenizer_config.json with `eos_token: null` (no <eos> appended), EsmTokenizer;
- special_tokens_map.json naming <unk> <pad> <mask> <cls>;
- config.json `_name_or_path` naming the hub id, so geneb applies nt.py's recipe.
In small: hidden 16, 2 layers, 4 heads, learned absolute positions, token_dropout, model_max_length
40. pipeline.json: nt.py's lines in batches of 4 (padded to the longest: nt.py pads to
model_max_length, which the mask keeps out of every real token).
Run: /work/pyenv/bin/python tests/oracle/make_agro_nt_fixtures.py
"""

import itertools
import json
import sys
from pathlib import Path

import torch
from transformers import EsmConfig, EsmForMaskedLM, EsmTokenizer

sys.path.insert(0, str(Path(__file__).parent))
from make_esm_v1_fixtures import perturb  # noqa: E402
from make_llama_fixtures import sequences  # noqa: E402 (make_deepgene_fixtures.py's)

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/agro_nt"
BATCH = 4
MAX_LENGTH = 40


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    kmers = ["".join(k) for k in itertools.product("ATCG", repeat=6)]
    vocab = ["<unk>", "<pad>", "<mask>", "<cls>"] + kmers + list("ATCGN") + ["<eos>", "<bos>"]
    (OUT / "vocab.txt").write_text("\n".join(vocab))
    (OUT / "tokenizer_config.json").write_text(json.dumps(
        {"clean_up_tokenization_spaces": True, "eos_token": None, "model_max_length": MAX_LENGTH,
         "tokenizer_class": "EsmTokenizer"}))
    (OUT / "special_tokens_map.json").write_text(json.dumps(
        {"cls_token": "<cls>", "mask_token": "<mask>", "pad_token": "<pad>",
         "unk_token": "<unk>"}))
    tokenizer = EsmTokenizer.from_pretrained(str(OUT))
    assert len(tokenizer) == 4107 and tokenizer("A")["input_ids"] == [3, 4100]

    torch.manual_seed(4)
    config = EsmConfig(
        vocab_size=4105, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=24, hidden_act="gelu", max_position_embeddings=MAX_LENGTH + 2,
        position_embedding_type="absolute", token_dropout=True, emb_layer_norm_before=False,
        pad_token_id=1, mask_token_id=2, layer_norm_eps=1e-12, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, tie_word_embeddings=True,
        architectures=["EsmForMaskedLM"])
    model = EsmForMaskedLM(config).eval()
    perturb(model)
    model.save_pretrained(OUT, safe_serialization=False)
    saved = json.loads((OUT / "config.json").read_text())
    saved["_name_or_path"] = "InstaDeepAI/agro-nucleotide-transformer-1b"
    (OUT / "config.json").write_text(json.dumps(saved, indent=2) + "\n")

    # nt.py's lines, loaded from the folder as it loads them.
    model = EsmForMaskedLM.from_pretrained(str(OUT)).eval()
    # 6-mers shorten the shared sequences below 40 tokens: two longer ones are cut there.
    rng = torch.Generator().manual_seed(8)
    texts = sequences() + ["".join("ACGTN"[i] for i in torch.randint(0, 5, (n,), generator=rng))
                           for n in (260, 300)]
    pooled = []
    with torch.no_grad():
        for i in range(0, len(texts), BATCH):
            enc = tokenizer(texts[i:i + BATCH], return_tensors="pt", padding=True,
                            truncation=True, max_length=tokenizer.model_max_length)
            outputs = model(enc["input_ids"], attention_mask=enc["attention_mask"],
                            output_hidden_states=True)
            hidden = outputs.hidden_states[-1]
            mask = enc["attention_mask"].unsqueeze(-1)
            pooled += ((hidden * mask).sum(dim=1) / mask.sum(dim=1)).tolist()
    assert any(len(tokenizer(t)["input_ids"]) > MAX_LENGTH for t in texts), "nothing is cut"
    (OUT / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}))


if __name__ == "__main__":
    main()
