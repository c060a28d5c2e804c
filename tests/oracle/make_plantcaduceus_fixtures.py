"""PlantCaduceus oracle: a Caduceus-PS checkpoint with PlantCaduceus's tokenizer, run through the
published Caduceus modeling code as GENEB's Caduceus extractor runs it.

PlantCaduceus (kuleshov-group/PlantCaduceus_l20 … _l32) is Caduceus-PS (`rcps`, bidirectional
Mamba with tied in/out projections, fused add + RMSNorm; l20: d_model 384, 20 layers, d_state 16,
an 8-row embedding) with GPN's DNA tokenizer instead of `CaduceusTokenizer`: a `tokenizer.json`
whose BPE has the vocabulary [PAD] [MASK] [UNK] a c g t and no merges, a Lowercase normalizer, a
Whitespace pre-tokenizer and no post-processor — so a 512-nt window is 512 ids, no [SEP] (the
repo's notebooks/examples.ipynb shows both). The tokenizer.json is built here with HF
`tokenizers`, not copied. The complement map pairs a↔t and c↔g on those ids.

The Caduceus code and the pure-PyTorch mamba_ssm stand-in are make_caduceus_fixtures.py's
(checkout in $CADUCEUS_SRC, commit 0060a6d). The reference extractor
(embedding_pipeline/extractors/caduceus.py): AutoTokenizer, `AutoModelForMaskedLM(...,
output_hidden_states=True)`, only input_ids to the model, `hidden_states[-1]` averaged over the
attention mask. Each sequence is run alone here (float64), so no padding enters the reverse
direction.

Writes tests/fixtures/models/plantcaduceus/ (a tiny checkpoint for CI) and, with
`--same-shape DIR`, a randomly initialised checkpoint of PlantCaduceus_l32's shape (d_model 1024,
32 layers: 225M parameters, 900 MB; not committed) with the same files, for
`cargo test --test hf_models -- --ignored`.

Run: CADUCEUS_SRC=... python3 tests/oracle/make_plantcaduceus_fixtures.py [--same-shape DIR]
"""

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/plantcaduceus"
VOCAB = ["[PAD]", "[MASK]", "[UNK]", "a", "c", "g", "t"]
COMPLEMENT = {"a": "t", "c": "g", "g": "c", "t": "a"}


def caduceus_oracle():
    spec = importlib.util.spec_from_file_location("make_caduceus_fixtures", Path(__file__).parent / "make_caduceus_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_tokenizer(out, max_length):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    ids = {token: i for i, token in enumerate(VOCAB)}
    tokenizer = Tokenizer(models.BPE(vocab=ids, merges=[], unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens(["[PAD]", "[MASK]", "[UNK]"])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", mask_token="[MASK]",
                                   unk_token="[UNK]", model_max_length=max_length)
    fast.save_pretrained(str(out))
    # GPN's file has no post-processor (transformers 5 writes an empty template).
    saved = json.loads((out / "tokenizer.json").read_text())
    saved["post_processor"] = None
    (out / "tokenizer.json").write_text(json.dumps(saved, indent=2) + "\n")
    # As GPN's tokenizer repo writes it (transformers 5 would name its own backend class).
    config = {"mask_token": "[MASK]", "pad_token": "[PAD]", "unk_token": "[UNK]",
              "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": max_length}
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(out))
    assert tokenizer("ACgtN")["input_ids"] == [3, 4, 5, 6, 2], tokenizer("ACgtN")
    return tokenizer


def complement_map(vocab_rows):
    ids = {token: i for i, token in enumerate(VOCAB)}
    mapping = {i: i for i in range(vocab_rows)}
    for a, b in COMPLEMENT.items():
        mapping[ids[a]] = ids[b]
    return mapping


def build(ref, d_model, n_layer, seed, scale):
    from caduceus.configuration_caduceus import CaduceusConfig
    from caduceus.modeling_caduceus import CaduceusForMaskedLM

    torch.manual_seed(seed)
    config = CaduceusConfig(
        d_model=d_model, n_layer=n_layer, vocab_size=8, pad_vocab_size_multiple=8,
        ssm_cfg={"d_state": 16, "d_conv": 4, "expand": 2, "dt_rank": "auto", "bias": False, "conv_bias": True},
        rms_norm=True, residual_in_fp32=False, fused_add_norm=True, norm_epsilon=1e-5,
        bidirectional=True, bidirectional_strategy="add", bidirectional_weight_tie=True,
        rcps=True, complement_map=complement_map(8), architectures=["CaduceusForMaskedLM"],
    )
    model = CaduceusForMaskedLM(config).eval()
    with torch.no_grad():
        for p in model.parameters():  # off their inits: no unit norms, no zero biases
            p.add_(torch.randn_like(p) * scale)
    return config, model


def write(out, config, model, tokenizer, sequences):
    out.mkdir(parents=True, exist_ok=True)
    config.to_json_file(out / "config.json")
    # The hub's safetensors store tied tensors once (as make_caduceus_fixtures.py's PS does).
    tied = (".mamba_rev.in_proj.", ".mamba_rev.out_proj.")
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items()
             if not any(t in k for t in tied) and k != "lm_head.lm_head.weight"}
    save_file(state, out / "model.safetensors", metadata={"format": "pt"})
    model = model.double()
    pooled = []
    with torch.no_grad():
        for seq in sequences:
            enc = tokenizer(seq, truncation=True, return_attention_mask=True, return_tensors="pt")
            out_states = model(enc["input_ids"], output_hidden_states=True, return_dict=True)
            last = out_states.hidden_states[-1]
            mask = enc["attention_mask"].unsqueeze(-1).to(last.dtype)
            pooled += ((last * mask).sum(1) / mask.sum(1)).float().tolist()
    model.float()
    (out / "pipeline.json").write_text(json.dumps({"sequences": sequences, "pooled": pooled}) + "\n")
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{out}: {size / 1024:.0f} KiB, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--same-shape", type=Path, help="also write a PlantCaduceus_l32-shaped checkpoint here")
    args = parser.parse_args()
    ref = caduceus_oracle()
    if not (ref.SOURCE / "caduceus/modeling_caduceus.py").exists():
        sys.exit(f"{ref.SOURCE}: no caduceus/modeling_caduceus.py; set CADUCEUS_SRC to a checkout")
    ref.install_mamba_stand_in()
    sys.path.insert(0, str(ref.SOURCE))
    from caduceus.modeling_caduceus import CaduceusForMaskedLM

    # transformers 5 passes tie_weights(recompute_mapping=...), unknown to the 2024 code.
    tie_weights = CaduceusForMaskedLM.tie_weights
    CaduceusForMaskedLM.tie_weights = lambda self, *a, **k: tie_weights(self)

    rows = ref.smoke_sequences()
    # Lower and upper case, an N run ([UNK]), and one longer than the tiny model_max_length.
    sequences = [rows[0][:1], rows[1][:7].lower(), rows[2][:120], rows[3][:50] + "NNN" + rows[60][:40], rows[4][:80]]
    OUT.mkdir(parents=True, exist_ok=True)
    tokenizer = write_tokenizer(OUT, max_length=64)
    config, model = build(ref, d_model=16, n_layer=2, seed=3, scale=0.2)
    write(OUT, config, model, tokenizer, sequences)
    if args.same_shape:
        args.same_shape.mkdir(parents=True, exist_ok=True)
        tokenizer = write_tokenizer(args.same_shape, max_length=512)
        config, model = build(ref, d_model=1024, n_layer=32, seed=4, scale=0.02)
        write(args.same_shape, config, model, tokenizer, [rows[5][:300], rows[6][:600]])


if __name__ == "__main__":
    main()
