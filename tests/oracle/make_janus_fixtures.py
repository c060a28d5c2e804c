"""JanusDNA oracle: expected outputs from the published JanusDNA modeling code (PyTorch).

The JanusDNA code (Qihao-Duan/JanusDNA, `janusdna/configuration_janusdna.py`,
`modeling_janusdna.py`) is imported unchanged from a checkout named by $JANUS_SRC (default
target/janusdna-src; get it with `git clone https://github.com/Qihao-Duan/JanusDNA` — these
fixtures were made at commit 03cd86e). It needs CUDA-only kernels for speed, none for meaning:
with `use_mamba_kernels=False` its Mamba mixer runs `slow_forward` (the same scan in PyTorch).
Its mid-stack attention is FlashAttention-2 in training (causal, no mask); here it runs as the
code's SDPA class with no mask (`_update_causal_mask` → None, as the flash path computes it), so
`is_causal=True`: the same causal softmax attention. The final "Janus" attention is the code's
own `flex_attention` with its block mask, run uncompiled on the CPU. `wandb`, imported at the
top of the file and never used for the forward pass, is stubbed.

Input as the GENEB extractor feeds JanusDNA (its published checkpoints were trained on 1,024-nt
windows): CaduceusTokenizer ids (upper-cased characters, [SEP] appended), padded with [PAD] to
1,024 on the tokenizer's default side (left), only `input_ids` to the model; the embedding is
the final output (`last_hidden_state`) averaged over the real tokens.

Writes tests/fixtures/models/janus/{w,wo-mlp}/: tiny random checkpoints with the real tensor
names of the pretraining checkpoints (`JanusDNAForCausalLM` with its LM head, the weight-tied
reverse Mamba projections stored twice as `state_dict()` gives them) as config.json +
model.safetensors, and expected.json / expected.safetensors as make_caduceus_fixtures.py writes
them (each real token's final state, in float64, and their mean). `w` has the mid attention
layer (`JanusDNA_72_w`'s layout); `wo-mlp` has none, and the two-layer `final_mlp` added to the
code on 2025-08-01. bench/model_bench.py builds the published `JanusDNA_72_w` and `_wo` shapes
(d_model 72, 8 layers, 16 experts: `same_shape_config`) with `build`, `save` and `load`.

`published/` holds the `w` model once more, as its pretraining run saves it (`write_lightning`;
needs `pip install lightning omegaconf`).

Run: python3 tests/oracle/make_janus_fixtures.py
"""

import json
import os
import shutil
import sys
import types
from pathlib import Path

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_caduceus_fixtures import smoke_sequences, write_expected  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/janus"
SOURCE = Path(os.environ.get("JANUS_SRC", ROOT / "target/janusdna-src"))
# The length GENEB's extractor pads every JanusDNA input to.
PADDED_LENGTH = 1024


def import_published_code():
    if not (SOURCE / "janusdna/modeling_janusdna.py").exists():
        sys.exit(f"{SOURCE}: no janusdna/modeling_janusdna.py; set JANUS_SRC to a checkout")
    sys.modules["wandb"] = types.ModuleType("wandb")
    import transformers.utils
    # Gone from transformers 5; only the flash path, which does not run here, reads it.
    if not hasattr(transformers.utils, "is_flash_attn_greater_or_equal_2_10"):
        transformers.utils.is_flash_attn_greater_or_equal_2_10 = lambda: False
    sys.path.insert(0, str(SOURCE))
    sys.path.insert(0, str(SOURCE / "caduceus"))
    import janusdna.modeling_janusdna as modeling
    from janusdna.configuration_janusdna import JanusDNAConfig
    from tokenization_caduceus import CaduceusTokenizer
    # Uncompiled flex attention: the module compiles it for the GPU at import.
    from torch.nn.attention.flex_attention import flex_attention, create_block_mask
    modeling.flex_attention = flex_attention
    modeling.create_block_mask = lambda *a, **k: create_block_mask(*a, **{**k, "_compile": False})
    modeling.JanusDNAModel._update_causal_mask = lambda self, *args: None
    return modeling, JanusDNAConfig, CaduceusTokenizer


# The layout of the published checkpoints (configs/model/janusdna.yaml and the pretraining
# scripts), whatever their widths; the mid attention runs as SDPA (see above).
PUBLISHED_LAYOUT = dict(
    vocab_size=12, num_attention_heads=4, num_experts_per_tok=2, expert_layer_period=2,
    mamba_d_conv=4, mamba_expand=2, use_mamba_kernels=False,
    bidirectional=True, bidirectional_weight_tie=True, bidirectional_attn_tie=False,
    layer_fusion=False, final_attention=True, layer_fusion_strategy="pool",
    mid_single_direction_attention=True, final_attention_class="flex_attention",
    attn_implementation="sdpa", rms_norm_eps=1e-6, architectures=["JanusDNAForCausalLM"],
)


def tiny_config(JanusDNAConfig, mid_attention):
    return JanusDNAConfig(
        hidden_size=32, flex_attn_n_embd=64, intermediate_size=48, num_hidden_layers=3,
        num_experts=4, expert_layer_offset=0, attn_layer_period=2,
        attn_layer_offset=1 if mid_attention else 100, mamba_d_state=8, **PUBLISHED_LAYOUT,
    )


def same_shape_config(JanusDNAConfig, mid_attention=True):
    """`scripts/pre_train/slurm_JanusDNA_w_midattn_72dim.sh` (or `_wo_midattn_`: no attention
    layer) over `configs/model/janusdna.yaml`."""
    return JanusDNAConfig(
        hidden_size=72, flex_attn_n_embd=128, intermediate_size=288, num_hidden_layers=8,
        num_experts=16, expert_layer_offset=1, attn_layer_period=8,
        attn_layer_offset=4 if mid_attention else 100, mamba_d_state=16, **PUBLISHED_LAYOUT,
    )


class Zero(torch.nn.Module):
    def forward(self, hidden_states):
        return torch.zeros_like(hidden_states)


def build(modeling, config, seed, final_mlp):
    torch.manual_seed(seed)
    model = modeling.JanusDNAForCausalLM(config).eval()
    if not final_mlp:
        # The published (2025-06-28) checkpoints predate `final_mlp`: that commit's forward
        # ends at `final_layernorm`, which `h + 0` reproduces exactly.
        model.model.final_mlp = Zero()
    with torch.no_grad():
        for p in model.parameters():  # off their inits: no unit norms, no zero biases
            p.add_(torch.randn_like(p) * 0.2)
    return model, final_mlp


def run_padded(model, ids):
    """The final states of `ids`' real tokens, run alone, left-padded to PADDED_LENGTH."""
    pad = PADDED_LENGTH - len(ids)
    row = torch.tensor([[4] * pad + ids])
    out = model.model(row, return_dict=True)
    return out.last_hidden_state[0, pad:]


def save(model, out_dir, prefix):
    """config.json and model.safetensors, every tensor name under `prefix`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(out_dir / "config.json")
    state = {prefix + k: v.clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, out_dir / "model.safetensors", metadata={"format": "pt"})


def load(modeling, JanusDNAConfig, folder):
    """The model `save` wrote to `folder` (with `final_mlp` when the checkpoint has one)."""
    from safetensors.torch import load_file

    state = load_file(str(folder / "model.safetensors"))
    with_mlp = any(".final_mlp." in k for k in state)
    model, _ = build(modeling, JanusDNAConfig.from_pretrained(folder), 0, with_mlp)
    model.load_state_dict({k.removeprefix("model."): v for k, v in state.items()}, strict=True)
    return model


def write_fixture(model, with_mlp, tokenizer, sequences, out_dir, prefix):
    save(model, out_dir, prefix)
    pooled = write_expected(model, run_padded, tokenizer, sequences, out_dir)
    (out_dir / "pipeline.json").write_text(json.dumps(
        {"sequences": sequences, "pooled": torch.stack(pooled).tolist()}) + "\n")
    size = sum(f.stat().st_size for f in out_dir.iterdir())
    print(f"{out_dir}: {size / 1024:.0f} KiB, final_mlp {with_mlp}")


def write_lightning(model, out_dir):
    """The files JanusDNA's pretraining leaves (train.py, `nt_janusdna.sh`'s CONFIG_PATH and
    PRETRAINED_PATH): `model_config.json` and a PyTorch Lightning `last.ckpt` of a module holding
    the model as `self.model`, with its OmegaConf hyper-parameters, Adam's state and the loops'
    and callbacks' state beside `state_dict`. One optimiser step at learning rate 0 makes that
    state without moving a weight, so the model is `model`, unchanged."""
    import lightning
    from omegaconf import OmegaConf

    class Module(lightning.LightningModule):
        def __init__(self, hparams):
            super().__init__()
            self.save_hyperparameters(hparams)
            self.model = model

        def training_step(self, batch, _):
            return (self.model.model.embed_tokens.weight[batch[0]] ** 2).mean()

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=0.0)

    out_dir.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(out_dir / "model_config.json")
    hparams = OmegaConf.create({"model": {"_name_": "janusdna_lm", "config": model.config.to_dict()},
                                "train": {"seed": 2222, "global_batch_size": 8}})
    module = Module(hparams)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(4)), batch_size=4)
    trainer = lightning.Trainer(max_steps=1, accelerator="cpu", logger=False, enable_progress_bar=False,
                                enable_model_summary=False, default_root_dir=str(out_dir / "run"))
    trainer.fit(module, data)
    trainer.save_checkpoint(out_dir / "last.ckpt")
    shutil.rmtree(out_dir / "run", ignore_errors=True)
    print(f"{out_dir}: {(out_dir / 'last.ckpt').stat().st_size / 1024:.0f} KiB (lightning {lightning.__version__})")


def main():
    modeling, JanusDNAConfig, CaduceusTokenizer = import_published_code()
    tokenizer = CaduceusTokenizer(model_max_length=PADDED_LENGTH)
    rows = smoke_sequences()
    sequences = [rows[0][:3], rows[1][:5].lower(), rows[2][:120], rows[3][:90] + "NN" + rows[60][:68]]
    # `w` is named as the Lightning module holds it (`model.model.…`, `model.lm_head.…`),
    # `wo-mlp` as `save_pretrained` writes it (`model.…`, `lm_head.…`).
    variants = [("w", True, False, 1, "model."), ("wo-mlp", False, True, 2, "")]
    for variant, mid_attention, final_mlp, seed, prefix in variants:
        model, with_mlp = build(modeling, tiny_config(JanusDNAConfig, mid_attention), seed, final_mlp)
        write_fixture(model, with_mlp, tokenizer, sequences, OUT / variant, prefix)
        if variant == "w":
            write_lightning(model, OUT / "published")
            shutil.copy(OUT / "w" / "pipeline.json", OUT / "published" / "pipeline.json")


if __name__ == "__main__":
    main()
