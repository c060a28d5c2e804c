"""OLMo oracle (Omni-DNA's decoder): a tiny random checkpoint of OLMo's own code (PyPI
`ai2-olmo==0.6.0`: `hf_olmo.OLMoForCausalLM` around `olmo.model.OLMo`), embedded with the lines
of GENEB's `embedding_pipeline/extractors/omnidna.py` (darlednik/GENEB at e3d5f45).

- olmo/: Omni-DNA's block as its config.json describes it (`model_type` "olmo-gfm"): sequential
  pre-norm blocks, non-affine LayerNorms, rotary positions, a fused `att_proj` (q, k, v rows) and
  a fused SwiGLU `ff_proj` whose first half is the value and second half the gate (`SwiGLU`:
  `x, gate = x.chunk(2)`), no biases, tied embeddings, `max_sequence_length` 250 as Omni-DNA's.
  Here with 2 key/value heads for 4 query heads and `clip_qkv`, which the real configs leave off,
  so those paths are checked too. Its tokenizer.json is make_llama_fixtures.py's DNA BPE (`<s>`
  prepended, right padding). Embedded as omnidna.py embeds: `padding=True, truncation=True,
  max_length=250`, the mask passed, `hidden_states[-1]` (the final LayerNorm's output) pooled
  over the mask, in batches of 4; the last sequence passes 250 tokens, so the cut is taken.
  `_name_or_path` names zehui127/Omni-DNA-300M, so geneb applies omnidna.py's recipe.

Omni-DNA's own tokenizer files are not reproduced; geneb reads tokenizer.json as for any model.
Files: as make_llama_fixtures.py's. Needs `pip install ai2-olmo==0.6.0 omegaconf==2.3.0
importlib_resources==6.4.5` (with --no-deps for ai2-olmo; never committed).
Run: /work/pyenv/bin/python tests/oracle/make_olmo_fixtures.py
"""

import enum
import importlib.util
import json
import random
import sys
import types
from pathlib import Path

import torch

# olmo/util.py is cloud-storage and training I/O (boto3, google-cloud, datasets, rich) that the
# model never calls; olmo/config.py takes only its StrEnum, which this stands in for.
util = types.ModuleType("olmo.util")


class StrEnum(str, enum.Enum):
    def __str__(self):
        return self.value

    def __repr__(self):
        return f"'{str(self)}'"


util.StrEnum = StrEnum
sys.modules["olmo.util"] = util

from hf_olmo import OLMoConfig, OLMoForCausalLM  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models"
BATCH = 4  # main.py's default --batch_size
MAX_LENGTH = 250  # omnidna.py's self.max_length (e3d5f45; its first version, 9fcbcbd, said 512)


def llama_oracle():
    spec = importlib.util.spec_from_file_location(
        "make_llama_fixtures", Path(__file__).parent / "make_llama_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    llama = llama_oracle()
    texts = llama.sequences()
    rng = random.Random(11)
    texts.append("".join(rng.choice("ACGT") for _ in range(900)))  # past 250 tokens: cut
    folder = OUT / "olmo"
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = llama.dna_bpe(folder, MAX_LENGTH, "right")
    assert max(len(tokenizer(t)["input_ids"]) for t in texts) > MAX_LENGTH, "no sequence is cut"

    torch.manual_seed(0)
    config = OLMoConfig(
        d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, mlp_ratio=3, vocab_size=len(tokenizer),
        embedding_size=len(tokenizer) + 4, max_sequence_length=MAX_LENGTH, rope=True,
        rope_theta=10000.0, block_type="sequential", activation_type="swiglu",
        layer_norm_type="default", layer_norm_with_affine=False, include_bias=False,
        weight_tying=True, clip_qkv=0.6, attention_layer_norm=False, flash_attention=False,
        pad_token_id=3, eos_token_id=2)
    model = OLMoForCausalLM(config, init_params=True).eval()
    with torch.no_grad():  # peaked attention, so that a wrong rotation or head split shows
        for name, p in model.named_parameters():
            if name.endswith("att_proj.weight"):
                p.normal_(0, 2.0 / 32 ** 0.5)
            elif p.dim() == 2:
                p.normal_(0, 0.3)
    model.save_pretrained(folder, safe_serialization=True)
    saved = json.loads((folder / "config.json").read_text())
    saved["model_type"] = "olmo-gfm"  # as Omni-DNA's config.json names its remote code's type
    saved["_name_or_path"] = "zehui127/Omni-DNA-300M"  # so geneb applies omnidna.py's recipe
    (folder / "config.json").write_text(json.dumps(saved, indent=2) + "\n")

    # omnidna.py's lines.
    pooled, first = [], None
    for i in range(0, len(texts), BATCH):
        enc = tokenizer(texts[i:i + BATCH], return_tensors="pt", padding=True, truncation=True,
                        max_length=MAX_LENGTH)
        with torch.no_grad():
            outputs = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                            output_hidden_states=True)
        hidden = outputs.hidden_states[-1]
        mask = enc["attention_mask"].unsqueeze(-1)
        summed = (hidden * mask).sum(dim=1)
        counts = mask.sum(dim=1).clamp(min=1)
        pooled += (summed / counts).tolist()
        if first is None:
            first = (enc, hidden)
    llama.write_outputs(folder, texts, pooled, *first)


if __name__ == "__main__":
    main()
