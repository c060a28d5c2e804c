"""GENA-LM oracle: tiny random checkpoints run through GENA-LM's published modeling code.

GENA-LM (AIRI-Institute/gena-lm-bert-base, -bert-base-t2t-multi, …) is BERT with pre-layer
normalisation: `src/gena_lm/modeling_bert.py` of https://github.com/AIRI-Institute/GENA_LM
(the hub repos ship the same file as remote code). It is imported unchanged from a checkout
named by $GENA_SRC (its `src/` folder; these fixtures were made at commit 4a88463), never
committed. transformers 5 dropped helpers that file uses: the head-pruning imports get stand-ins
that raise (never called at inference), the attention-mask and head-mask helpers transformers
4's code.

The reference extractor (GENEB `embedding_pipeline/extractors/genalm.py`): AutoTokenizer,
`tokenizer(batch, padding=True, truncation=True, max_length=512)`, `model.bert(input_ids,
attention_mask).last_hidden_state` averaged over the attention mask. Here each sequence is
tokenized alone (padding changes nothing under the mask) with the fixture tokenizers of
tests/fixtures/tokenizers/{gena,gena-t2t} (make_tokenizer_fixtures.py), max_length = the
tiny model's position table.

Writes tests/fixtures/models/gena/{base,t2t-multi,lastln}/: config.json (the real configs'
keys: pre_layer_norm, last_layer_norm false for bert-base and t2t-multi; true for the -lastln-
models), model.safetensors (BertForMaskedLM's tensors, the tied decoder stored once),
tokenizer files, pipeline.json. With `--same-shape DIR`, also DIR/gena: random weights of
gena-lm-bert-base-t2t-multi's shape (12 layers, hidden 768, 12 heads, FFN 3072, 512 positions,
vocabulary 32,000; not committed), with the t2t tokenizer layout (its vocabulary the fixture's).

Run: GENA_SRC=.../GENA_LM/src python3 tests/oracle/make_gena_fixtures.py [--same-shape DIR]
"""

import argparse
import json
import os
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/gena"
TOKENIZERS = ROOT / "tests/fixtures/tokenizers"
SOURCE = Path(os.environ.get("GENA_SRC", ROOT / "target/gena-src/src"))
SMOKE = ROOT / "tasks/smoke"


def install_pruning_stand_ins():
    """transformers 5 dropped two head-pruning helpers that BERT-derived model files import
    (GENA-LM's, MutBERT's) and never call at inference."""
    import transformers.pytorch_utils as pytorch_utils

    def pruning(*_args, **_kwargs):
        raise NotImplementedError("head pruning is not used at inference")

    for name in ("find_pruneable_heads_and_indices", "prune_linear_layer"):
        if not hasattr(pytorch_utils, name):
            setattr(pytorch_utils, name, pruning)


def install_transformers4_helpers(model_class):
    """transformers 4's PreTrainedModel helpers that those files call and 5 dropped, as 4 had them."""
    def get_extended_attention_mask(self, attention_mask, input_shape, device=None, dtype=torch.float32):
        extended = attention_mask[:, None, None, :].to(dtype)
        return (1.0 - extended) * torch.finfo(dtype).min

    def get_head_mask(self, head_mask, num_hidden_layers, is_attention_chunked=False):
        assert head_mask is None, "head masks are not used at inference"
        return [None] * num_hidden_layers

    for name, helper in [("get_extended_attention_mask", get_extended_attention_mask),
                         ("get_head_mask", get_head_mask)]:
        if not hasattr(model_class, name):
            setattr(model_class, name, helper)


def gena_code():
    if not (SOURCE / "gena_lm/modeling_bert.py").exists():
        sys.exit(f"{SOURCE}: no gena_lm/modeling_bert.py; set GENA_SRC to the src/ folder of a GENA_LM checkout")
    install_pruning_stand_ins()
    sys.path.insert(0, str(SOURCE))
    from gena_lm import modeling_bert

    install_transformers4_helpers(modeling_bert.BertPreTrainedModel)
    return modeling_bert


def sequences():
    rows = []
    for table in sorted(SMOKE.glob("*.csv"))[:3]:
        rows += [line.split(",")[0] for line in table.read_text().splitlines()[1:6]]
    # Lengths from one token to past the tiny position table, a run of 12 N (one "-" token in
    # the t2t tokenizer) and one of 9 (plain BPE).
    return [r[: 3 + 23 * i] for i, r in enumerate(rows)] + ["acgtnnACGT", "A", rows[0][:40] + "N" * 12 + rows[1][:40],
                                                           rows[2][:30] + "N" * 9 + rows[3][:30]]


def build(modeling_bert, vocab, hidden, layers, heads, inter, positions, last_layer_norm, seed):
    from transformers.models.bert.configuration_bert import BertConfig

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=inter, max_position_embeddings=positions, type_vocab_size=2,
        hidden_act="gelu", layer_norm_eps=1e-12, pad_token_id=3,
        architectures=["BertForMaskedLM"],
        auto_map={"AutoConfig": "configuration_bert.BertConfig", "AutoModel": "modeling_bert.BertModel",
                  "AutoModelForMaskedLM": "modeling_bert.BertForMaskedLM"},
    )
    config.pre_layer_norm = True
    config.last_layer_norm = last_layer_norm
    config.position_embedding_type = "absolute"
    model = modeling_bert.BertForMaskedLM(config).eval()
    assert any(n.endswith("pre_attention_ln.weight") for n, _ in model.named_parameters())
    with torch.no_grad():  # off their inits: no unit LayerNorms, no zero biases
        for n, p in model.named_parameters():
            if n.endswith("bias") or "_ln" in n or "LayerNorm" in n:
                p.add_(torch.randn_like(p) * 0.1)
    return model, config


def write(out, model, config, tokenizer_fixture, max_length, texts):
    from transformers import AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    config.to_json_file(out / "config.json")
    tied = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items() if k not in tied}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    for name in ("tokenizer.json", "special_tokens_map.json"):
        (out / name).write_bytes((TOKENIZERS / tokenizer_fixture / name).read_bytes())
    # The hub files set no model_max_length; the extractor passes max_length=512 (= positions).
    (out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}) + "\n")
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    pooled = []
    with torch.no_grad():
        for text in texts:
            enc = tokenizer([text.upper()], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            hidden = model.bert(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled += ((hidden * mask).sum(1) / mask.sum(1)).tolist()
    (out / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}) + "\n")
    params = sum(p.numel() for p in model.parameters())
    print(f"{out}: {params:,} parameters, {sum(f.stat().st_size for f in out.iterdir()) / 1024:.0f} KiB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--same-shape", type=Path, help="also write a gena-lm-bert-base-t2t-multi-shaped checkpoint into DIR/gena")
    args = parser.parse_args()
    modeling_bert = gena_code()
    texts = sequences()
    for name, tokenizer, last_ln, seed in [("base", "gena", False, 1), ("t2t-multi", "gena-t2t", False, 2),
                                           ("lastln", "gena-t2t", True, 3)]:
        vocab = len(json.loads((TOKENIZERS / tokenizer / "tokenizer.json").read_text())["model"]["vocab"])
        model, config = build(modeling_bert, vocab, hidden=32, layers=2, heads=4, inter=48, positions=64,
                              last_layer_norm=last_ln, seed=seed)
        write(OUT / name, model, config, tokenizer, 64, texts)
    if args.same_shape:
        model, config = build(modeling_bert, 32000, hidden=768, layers=12, heads=12, inter=3072, positions=512,
                              last_layer_norm=False, seed=4)
        long_texts = [r * 4 for r in texts[:6]]
        write(args.same_shape.resolve() / "gena", model, config, "gena-t2t", 512, long_texts)


if __name__ == "__main__":
    main()
