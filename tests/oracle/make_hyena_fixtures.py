"""HyenaDNA oracle: expected outputs from the original HyenaDNA modeling code (PyTorch).

Needs torch, transformers, safetensors and the GPL-3 `anticapt==1.0` wheel unpacked by
`scripts/fetch-real-models.sh` (its modeling code is imported from there at run time and never
committed). Writes, under tests/fixtures/models/hyena/:

  tiny/        a randomly initialised checkpoint made with that code (config shrunk to d_model 32,
               2 layers, max_seq_len 1024) as config.json + model.safetensors, and its outputs;
  anticapt-dataset1/  outputs of the real HyenaDNA-tiny weights (the weights stay downloaded).

Each `expected.json` holds the sequences, their token ids (the package's own HyenaDNA tokenizer:
one id per base, [SEP] appended), and `expected.safetensors` holds `last_hidden_state`
[all tokens, hidden] (the sequences' states one after another, no padding stored) and `pooled`
[sequences, hidden]. Every
sequence is run alone, as the GENEB reference extractor runs it (batch size 1, no padding),
in float64; `pooled` is its plain mean over all tokens, as that extractor pools.

Run: python3 tests/oracle/make_hyena_fixtures.py   (after bash scripts/fetch-real-models.sh)
"""

import csv
import importlib
import json
import os
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/hyena"
REAL = Path(os.environ.get("GENEB_REAL_MODELS", ROOT / "target/real-models"))
PACKAGE = REAL / "anticapt-1.0/anticapt/models/dataset1"


def hyena_code():
    if not (PACKAGE / "finetuned_hyenadna/modeling_hyena.py").exists():
        sys.exit(f"{PACKAGE}: missing; run bash scripts/fetch-real-models.sh first")
    sys.path.insert(0, str(PACKAGE))
    modeling = importlib.import_module("finetuned_hyenadna.modeling_hyena")
    configuration = importlib.import_module("finetuned_hyenadna.configuration_hyena")
    tokenization = importlib.import_module("finetuned_hyenadna.tokenization_hyena")
    return modeling, configuration, tokenization


def smoke_sequences():
    with open(ROOT / "tasks/smoke/smoke_lambda_phage_vs_ecoli.csv") as f:
        rows = [r["text"] for r in csv.DictReader(f)]
    with open(ROOT / "tasks/smoke/smoke_yeast_coding_vs_intergenic.csv") as f:
        rows += [r["text"] for r in csv.DictReader(f)]
    return rows


def write_expected(model, tokenizer, sequences, out_dir):
    ids = [tokenizer(s)["input_ids"] for s in sequences]
    states, pooled = [], []
    # In float64: the model's exact values, so a float32 implementation is judged by its own
    # rounding only (PyTorch's float32 FFT path is itself ~1e-5 off them).
    model = model.double()
    with torch.no_grad():
        for row in ids:
            last = model(torch.tensor([row]), return_dict=True).last_hidden_state[0]
            states.append(last.float())
            pooled.append(last.mean(dim=0).float())
    model.float()
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(
        {"last_hidden_state": torch.cat(states).contiguous(), "pooled": torch.stack(pooled)},
        out_dir / "expected.safetensors",
    )
    meta = {"sequences": sequences, "input_ids": ids, "pad_token_id": tokenizer.pad_token_id}
    (out_dir / "expected.json").write_text(json.dumps(meta) + "\n")


def main():
    modeling, configuration, tokenization = hyena_code()
    torch.manual_seed(0)
    rows = smoke_sequences()
    tokenizer = tokenization.HyenaDNATokenizer(model_max_length=1024)

    # Tiny random model: every parameter perturbed, so biases and norms are not their inits,
    # at scales like the trained model's (larger filter weights make the long convolution
    # ill-conditioned: float32 PyTorch then differs from float64 by 2e-4).
    config = configuration.HyenaConfig(
        d_model=32, n_layer=2, d_inner=64, vocab_size=12, max_seq_len=1024, emb_dim=5,
        filter_order=16, short_filter_order=3, num_inner_mlps=2, hyena_order=2,
        activation_freq=10, train_freq=True, use_bias=True, pad_vocab_size_multiple=8,
        layer_norm_epsilon=1e-5,
    )
    model = modeling.HyenaDNAModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            scale = 1.0 if name.endswith("freq") else 0.1
            p.add_(torch.randn_like(p) * scale)
    tiny = OUT / "tiny"
    if tiny.exists():
        shutil.rmtree(tiny)
    tiny.mkdir(parents=True)
    config.save_pretrained(tiny)
    # One sine activation (one `freq`) is shared by every filter MLP layer; hub safetensors
    # checkpoints store it once, under its first name, so this one does too.
    state = {
        k: v.clone().contiguous()
        for k, v in model.state_dict().items()
        if not k.endswith(("implicit_filter.3.freq", "implicit_filter.5.freq"))
    }
    save_file(state, tiny / "model.safetensors", metadata={"format": "pt"})
    # Several lengths (1 nt, the short-filter width, typical, longer) and N, within max_seq_len.
    tiny_seqs = [rows[0][:1], rows[1][:3], rows[2][:150], rows[3][:200] + "NNNN" + rows[40][:96]]
    write_expected(model, tokenizer, tiny_seqs, tiny)

    # Real HyenaDNA-tiny (fine-tuned, from the anticapt package), up to its full 1,026 tokens.
    real_dir = PACKAGE / "finetuned_hyenadna"
    real = modeling.HyenaDNAModel.from_pretrained(real_dir).eval()
    long_seq = "".join(rows[5:20])[:1025]
    real_seqs = [rows[4][:40], rows[41][:150], long_seq]
    write_expected(real, tokenizer, real_seqs, OUT / "anticapt-dataset1")
    for d in (tiny, OUT / "anticapt-dataset1"):
        size = sum(f.stat().st_size for f in d.iterdir())
        print(f"{d.relative_to(ROOT)}: {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
