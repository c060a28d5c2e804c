"""MutBERT oracle: a tiny random checkpoint run through MutBERT's published modeling code.

MutBERT (JadenLong/MutBERT; code https://github.com/ai4nucleome/mutBERT,
`2-pretrain-code/modeling_mutbert.py`, the hub repo's remote code) is a post-LayerNorm BERT with
rotary positions (`RoPEBertModel`: no position table, `rotate_half` rotary over each head with
base `rope_theta`, token-type embeddings) that reads one-hot (or allele-frequency) vectors:
`inputs_embeds = one_hot @ word_embeddings`. Its tokenizer (`model_configs/tokenizer.json`):
BPE over [UNK] [CLS] [SEP] [PAD] [MASK] A C G T with no merges, a Whitespace pre-tokenizer,
TemplateProcessing [CLS] $A [SEP]; rebuilt here with HF `tokenizers`, not copied. The code is
imported unchanged from a checkout ($MUTBERT_SRC, the `2-pretrain-code` folder; commit 82344d2),
never committed, with make_gena_fixtures.py's stand-ins for what transformers 5 dropped.

The reference extractor (GENEB `embedding_pipeline/extractors/mutbert.py`): `tokenizer(batch,
padding=True, truncation=True)` (no model_max_length in the tokenizer files: nothing is cut),
`F.one_hot(input_ids, len(tokenizer)) * attention_mask`, `model(one_hot, attention_mask)`,
`last_hidden_state` averaged over the attention mask. Each sequence runs alone here.

Writes tests/fixtures/models/mutbert/ and, with `--same-shape DIR`, DIR/mutbert: random weights
of MutBERT's shape (its published config.json: 12 layers, hidden 768, 12 heads, FFN 3072,
vocabulary 9; not committed). Run:
    MUTBERT_SRC=.../mutBERT/2-pretrain-code python3 tests/oracle/make_mutbert_fixtures.py [--same-shape DIR]
"""

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/mutbert"
SOURCE = Path(os.environ.get("MUTBERT_SRC", ROOT / "target/mutbert-src/2-pretrain-code"))
VOCAB = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "A", "C", "G", "T"]


def oracle(name):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mutbert_code():
    if not (SOURCE / "modeling_mutbert.py").exists():
        sys.exit(f"{SOURCE}: no modeling_mutbert.py; set MUTBERT_SRC to mutBERT's 2-pretrain-code folder")
    gena = oracle("make_gena_fixtures")
    gena.install_pruning_stand_ins()
    sys.path.insert(0, str(SOURCE))
    import modeling_mutbert

    gena.install_transformers4_helpers(modeling_mutbert.RoPEBertPreTrainedModel)
    return modeling_mutbert, gena


def write_tokenizer(out):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import AutoTokenizer

    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(VOCAB)}, merges=[], unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(VOCAB[:5])
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    (out / "tokenizer.json").write_text(json.dumps(json.loads(tok.to_str()), indent=2) + "\n")
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "cls_token": "[CLS]",
         "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]"}) + "\n")
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    assert tokenizer("ACGTN")["input_ids"] == [1, 5, 6, 7, 8, 0, 2], tokenizer("ACGTN")
    return tokenizer


def transformers4_defaults(config):
    """transformers 4's PretrainedConfig defaults the code reads and 5 no longer sets."""
    for key, value in {"is_decoder": False, "add_cross_attention": False, "chunk_size_feed_forward": 0,
                       "attn_implementation": "sdpa"}.items():
        if not hasattr(config, key):
            setattr(config, key, value)
    return config


def hidden_states(model, ids, mask):
    """The reference extractor's forward: one-hot inputs (padding zeroed), the last hidden state."""
    one_hot = F.one_hot(ids, num_classes=len(VOCAB)).to(torch.float32) * mask.unsqueeze(-1)
    return model.bert(one_hot, attention_mask=mask, return_dict=True).last_hidden_state


def write(out, modeling, gena, hidden, layers, heads, inter, seed, texts):
    torch.manual_seed(seed)
    config = modeling.RoPEBertConfig(
        vocab_size=len(VOCAB), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=inter, max_position_embeddings=512, hidden_act="gelu", layer_norm_eps=1e-12,
        pad_token_id=3, type_vocab_size=2, pooler_type="mean", rope_theta=10000.0, rope_scaling=None,
    )
    transformers4_defaults(config)
    config.architectures = ["RoPEBertForMaskedLM"]
    config.model_type = "bert"
    config.auto_map = {"AutoConfig": "modeling_mutbert.RoPEBertConfig", "AutoModel": "modeling_mutbert.RoPEBertModel",
                       "AutoModelForMaskedLM": "modeling_mutbert.RoPEBertForMaskedLM"}
    model = modeling.RoPEBertForMaskedLM(config).eval()
    with torch.no_grad():  # off their inits: no unit LayerNorms, no zero biases
        for n, p in model.named_parameters():
            if n.endswith("bias") or "LayerNorm" in n:
                p.add_(torch.randn_like(p) * 0.1)
    out.mkdir(parents=True, exist_ok=True)
    config_json = config.to_dict()
    config_json["model_type"] = "bert"  # as the hub's config.json declares it
    for key in ("is_decoder", "add_cross_attention", "chunk_size_feed_forward", "attn_implementation", "rope_parameters"):
        config_json.pop(key, None)  # not in the published config.json
    (out / "config.json").write_text(json.dumps(config_json, indent=2, sort_keys=True) + "\n")
    tied = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items() if k not in tied}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    tokenizer = write_tokenizer(out)
    pooled = []
    with torch.no_grad():
        for text in texts:
            enc = tokenizer([text.upper()], padding=True, truncation=True, return_attention_mask=True, return_tensors="pt")
            mask = enc["attention_mask"]
            hidden = hidden_states(model, enc["input_ids"], mask)
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled += ((hidden * m).sum(1) / m.sum(1).clamp(min=1)).tolist()
    (out / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}) + "\n")
    print(f"{out}: {sum(p.numel() for p in model.parameters()):,} parameters, lengths {[len(t) for t in texts]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--same-shape", type=Path, help="also write a MutBERT-shaped checkpoint into DIR/mutbert")
    args = parser.parse_args()
    modeling, gena = mutbert_code()
    texts = gena.sequences() + [gena.sequences()[5] * 3]
    write(OUT, modeling, gena, hidden=32, layers=2, heads=4, inter=48, seed=5, texts=texts)
    if args.same_shape:
        write(args.same_shape.resolve() / "mutbert", modeling, gena, hidden=768, layers=12, heads=12, inter=3072,
              seed=6, texts=[t * 3 for t in texts[8:12]])


if __name__ == "__main__":
    main()
