"""JanusDNA oracle: the published JanusDNA code run with GENEB's extractor recipe.

The JanusDNA code (Qihao-Duan/JanusDNA, `janusdna/configuration_janusdna.py`,
`modeling_janusdna.py`, `caduceus/tokenization_caduceus.py`) is imported unchanged from a
checkout named by $JANUS_SRC (default target/janusdna-src; get it with
`git clone https://github.com/Qihao-Duan/JanusDNA` — these fixtures were made at commit
03cd86e). Nothing of it is committed here.

The recipe is GENEB's `embedding_pipeline/extractors/janusdna.py` (darlednik/GENEB), step by
step: the config from the folder's `*.json` under "config" (the `bidirectional` string read as
it reads it), `JanusDNAModel(JanusDNAConfig(**cfg))`, the `*.ckpt`'s `state_dict` with the
`model.model.` / `model.` / `module.` prefixes stripped and the torchmetrics entries dropped,
loaded with `strict=False`, then `final_mlp = nn.Identity()`;
`CaduceusTokenizer(model_max_length=1024, padding_side="right")` called with
`padding="max_length", max_length=1024, truncation=True, add_special_tokens=False`; the model
given `input_ids` and `attention_mask`; the masked mean of `last_hidden_state`. Batches of
four (`main.py`'s default), as the published rows were made.

The published config sets `attn_implementation: "flash_attention_2"` (configs/model/janusdna.yaml):
the mid attention runs `JanusDNAFlashAttention2`, which with a mask holding a zero unpads the
masked-in positions, runs varlen causal flash attention over them and pads the output with
zeros. flash-attn needs CUDA; this script installs, in memory, a stand-in `flash_attn` with the
same semantics in PyTorch (`flash_attn_func`, `flash_attn_varlen_func`, `bert_padding`'s
`unpad_input` / `pad_input` / `index_first_axis`), so the published class runs as it is. Its
Mamba mixers run `slow_forward` (`use_mamba_kernels=False`, the same scan in PyTorch); the final
"Janus" attention is the code's own `flex_attention`, uncompiled on the CPU. `wandb`, imported
and unused by the forward pass, is stubbed. It runs in float64 (the extractor's bf16 is CUDA's).

Writes tests/fixtures/models/janus/{w,wo}/: tiny random `JanusDNAForCausalLM`s in the layout of
the published checkpoints (`same_shape_config`, `build`, `save` and `load` give the real
`JanusDNA_72_w` / `_wo` widths to bench/model_bench.py), saved as JanusDNA's pretraining saves them: `model_config.json`
(`{"config": {...}}`) and a PyTorch Lightning `last.ckpt` of a module holding the model as
`self.model`. `w` has the mid attention layer and, like the published 2025-06-28 checkpoints,
no `final_mlp` tensors (strict=False tolerates their absence); `wo` has no attention layer and
a `final_mlp` (replaced by Identity all the same). Beside them, expected.json /
expected.safetensors (each sequence's real tokens' final states, from its own padded row) and
pipeline.json (the extractor's pooled output).

Needs: pip install torch transformers lightning omegaconf
Run: python3 tests/oracle/make_janus_fixtures.py
"""

import json
import os
import shutil
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_caduceus_fixtures import smoke_sequences  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/janus"
SOURCE = Path(os.environ.get("JANUS_SRC", ROOT / "target/janusdna-src"))
MAX_LENGTH = 1024  # the extractor's `self.max_length`
BATCH = 4  # main.py's default --batch_size


# --- flash_attn stand-in: FlashAttention-2's semantics in PyTorch ---------------------------

def _attend(q, k, v, softmax_scale, causal):
    """q, k, v: [seq, heads, dim] of one sequence; causal bottom-right aligned (flash >= 2.1)."""
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    scores = torch.einsum("qhd,khd->hqk", q, k) * scale
    if causal:
        lq, lk = q.shape[0], k.shape[0]
        allowed = torch.ones(lq, lk, dtype=torch.bool).tril(diagonal=lk - lq)
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.einsum("hqk,khd->qhd", scores.softmax(dim=-1), v)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1)):
    """[batch, seq, heads, dim] each."""
    return torch.stack([_attend(q[b], k[b], v[b], softmax_scale, causal) for b in range(q.shape[0])])


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1)):
    """[total, heads, dim], sequences delimited by the cumulative lengths."""
    out = torch.zeros_like(q)
    for i in range(len(cu_seqlens_q) - 1):
        qs, qe = int(cu_seqlens_q[i]), int(cu_seqlens_q[i + 1])
        ks, ke = int(cu_seqlens_k[i]), int(cu_seqlens_k[i + 1])
        out[qs:qe] = _attend(q[qs:qe], k[ks:ke], v[ks:ke], softmax_scale, causal)
    return out


def index_first_axis(x, indices):
    return x[indices]


def unpad_input(hidden_states, attention_mask):
    seqlens = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(attention_mask.flatten(), as_tuple=False).flatten()
    cu = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    flat = hidden_states.reshape(-1, *hidden_states.shape[2:])
    return flat[indices], indices, cu, int(seqlens.max())


def pad_input(hidden_states, indices, batch, seqlen):
    out = hidden_states.new_zeros(batch * seqlen, *hidden_states.shape[1:])
    out[indices] = hidden_states
    return out.reshape(batch, seqlen, *hidden_states.shape[1:])


def install_flash_attn_stand_in():
    flash_attn = types.ModuleType("flash_attn")
    flash_attn.flash_attn_func = flash_attn_func
    flash_attn.flash_attn_varlen_func = flash_attn_varlen_func
    padding = types.ModuleType("flash_attn.bert_padding")
    padding.index_first_axis = index_first_axis
    padding.pad_input = pad_input
    padding.unpad_input = unpad_input
    flash_attn.bert_padding = padding
    sys.modules["flash_attn"] = flash_attn
    sys.modules["flash_attn.bert_padding"] = padding


def import_published_code():
    if not (SOURCE / "janusdna/modeling_janusdna.py").exists():
        sys.exit(f"{SOURCE}: no janusdna/modeling_janusdna.py; set JANUS_SRC to a checkout")
    sys.modules["wandb"] = types.ModuleType("wandb")
    import transformers.utils
    # transformers probes for flash_attn at its own import: imported before the stand-in is.
    import transformers.activations  # noqa: F401
    import transformers.modeling_utils  # noqa: F401
    install_flash_attn_stand_in()
    # Gone from some transformers releases; the modeling file imports it by name.
    if not hasattr(transformers.utils, "is_flash_attn_greater_or_equal_2_10"):
        transformers.utils.is_flash_attn_greater_or_equal_2_10 = lambda: True
    sys.path.insert(0, str(SOURCE))
    sys.path.insert(0, str(SOURCE / "caduceus"))
    import janusdna.modeling_janusdna as modeling
    from janusdna.configuration_janusdna import JanusDNAConfig
    from tokenization_caduceus import CaduceusTokenizer
    # A current flash-attn is >= 2.1 (bottom-right causal masks); transformers cannot look up
    # the stand-in's version.
    modeling.is_flash_attn_greater_or_equal_2_10 = lambda: True
    # transformers 5 asks for `_supports_flash_attn` (the published class declares the older
    # `_supports_flash_attn_2`) and for CUDA: the implementation the config names is kept.
    modeling.JanusDNAPreTrainedModel._check_and_adjust_attn_implementation = (
        lambda self, implementation, *args, **kwargs: implementation)
    # Uncompiled flex attention: the module compiles it for the GPU at import.
    from torch.nn.attention.flex_attention import flex_attention, create_block_mask
    modeling.flex_attention = flex_attention
    modeling.create_block_mask = lambda *a, **k: create_block_mask(*a, **{**k, "_compile": False})
    return modeling, JanusDNAConfig, CaduceusTokenizer


def with_flash_attention(config):
    """The config as the published yaml's `attn_implementation: "flash_attention_2"` sets it.
    transformers refuses to select flash-attn without CUDA, so the private field is set."""
    config._attn_implementation_internal = "flash_attention_2"
    return config


# The layout of the published checkpoints (configs/model/janusdna.yaml and the pretraining
# scripts), whatever their widths. `bidirectional` is the string the yaml's `true,` reads as.
PUBLISHED_LAYOUT = dict(
    vocab_size=12, num_attention_heads=4, num_experts_per_tok=2, expert_layer_period=2,
    mamba_d_conv=4, mamba_expand=2, use_mamba_kernels=False,
    bidirectional="true,", bidirectional_weight_tie=True, bidirectional_attn_tie=False,
    layer_fusion=False, final_attention=True, layer_fusion_strategy="pool",
    mid_single_direction_attention=True, final_attention_class="flex_attention",
    rms_norm_eps=1e-6,
)


def tiny_config(mid_attention):
    return dict(
        hidden_size=16, flex_attn_n_embd=32, intermediate_size=24, num_hidden_layers=3,
        num_experts=4, expert_layer_offset=0, attn_layer_period=2,
        attn_layer_offset=1 if mid_attention else 100, mamba_d_state=4, **PUBLISHED_LAYOUT,
    )


def same_shape_cfg(mid_attention=True):
    """`scripts/pre_train/slurm_JanusDNA_w_midattn_72dim.sh` (or `_wo_midattn_`: no attention
    layer) over `configs/model/janusdna.yaml`."""
    return dict(
        hidden_size=72, flex_attn_n_embd=128, intermediate_size=288, num_hidden_layers=8,
        num_experts=16, expert_layer_offset=1, attn_layer_period=8,
        attn_layer_offset=4 if mid_attention else 100, mamba_d_state=16, **PUBLISHED_LAYOUT,
    )


def janus_config(JanusDNAConfig, cfg):
    """`JanusDNAConfig(**cfg)` after the extractor's reading of `bidirectional`."""
    cfg = dict(cfg)
    cfg["bidirectional"] = str(cfg["bidirectional"]).strip().lower().strip(",") == "true"
    return with_flash_attention(JanusDNAConfig(**cfg))


def build(modeling, config, seed, final_mlp):
    """A `JanusDNAForCausalLM` with random weights off their inits (no unit norms, no zero
    biases); without `final_mlp` its module is dropped, so the state dict lacks it as the
    published 2025-06-28 checkpoints do. Returns the model and `final_mlp`."""
    torch.manual_seed(seed)
    model = modeling.JanusDNAForCausalLM(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    if not final_mlp:
        del model.model.final_mlp
    return model, final_mlp


# bench/model_bench.py's entry points: the published shapes as config.json + model.safetensors.

def same_shape_config(JanusDNAConfig, mid_attention=True):
    return janus_config(JanusDNAConfig, same_shape_cfg(mid_attention))


def save(model, out_dir, prefix):
    """config.json and model.safetensors, every tensor name under `prefix`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(out_dir / "config.json")
    state = {prefix + k: v.clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, out_dir / "model.safetensors", metadata={"format": "pt"})


def load(modeling, JanusDNAConfig, folder):
    """The model `save` wrote to `folder`, with `final_mlp` replaced by Identity as GENEB's
    extractor replaces it."""
    from safetensors.torch import load_file

    state = load_file(str(folder / "model.safetensors"))
    model = modeling.JanusDNAModel(with_flash_attention(JanusDNAConfig.from_pretrained(folder)))
    model.load_state_dict({k.removeprefix("model."): v for k, v in state.items()
                           if not k.startswith("lm_head.")}, strict=False)
    model.final_mlp = torch.nn.Identity()
    return model


def write_lightning(model, cfg, out_dir, weights_only):
    """`model_config.json` ({"config": ...}) and a Lightning `last.ckpt` of a module holding the
    model as `self.model` with its OmegaConf hyper-parameters (and, unless `weights_only`, Adam's
    and the loops' state: one step at learning rate 0 makes it without moving a weight)."""
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
    (out_dir / "model_config.json").write_text(json.dumps({"config": cfg}, indent=2) + "\n")
    hparams = OmegaConf.create({"model": {"_name_": "janusdna_lm", "config": cfg},
                                "train": {"seed": 2222, "global_batch_size": 8}})
    module = Module(hparams)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(4)), batch_size=4)
    trainer = lightning.Trainer(max_steps=1, accelerator="cpu", logger=False, enable_progress_bar=False,
                                enable_model_summary=False, default_root_dir=str(out_dir / "run"))
    trainer.fit(module, data)
    trainer.save_checkpoint(out_dir / "last.ckpt", weights_only=weights_only)
    shutil.rmtree(out_dir / "run", ignore_errors=True)


def extractor_model(modeling, JanusDNAConfig, folder):
    """`JanusDNAExtractor.__init__` on `folder`, as janusdna.py does it."""
    raw = json.loads(next(folder.glob("*.json")).read_text())
    model = modeling.JanusDNAModel(janus_config(JanusDNAConfig, raw["config"])).eval()
    state = torch.load(next(folder.glob("*.ckpt")), map_location="cpu", weights_only=False)["state_dict"]
    cleaned = {}
    for k, v in state.items():
        if k.startswith(("train_torchmetrics.", "val_torchmetrics.", "test_torchmetrics.")):
            continue
        if k.startswith("model.model."):
            k = k[len("model.model."):]
        elif k.startswith("model."):
            k = k[len("model."):]
        if k.startswith("module."):
            k = k[len("module."):]
        cleaned[k] = v
    missing, unexpected = model.load_state_dict(cleaned, strict=False)
    assert all(k.startswith("final_mlp.") for k in missing), missing
    model.final_mlp = torch.nn.Identity()
    return model.double(), missing


def encode(tokenizer, batch):
    return tokenizer(batch, return_tensors="pt", padding="max_length", max_length=MAX_LENGTH,
                     truncation=True, add_special_tokens=False, return_attention_mask=True)


def run(model, tokenizer, batch):
    """`extract_embeddings` on one batch: the final states and the pooled embeddings."""
    enc = encode(tokenizer, batch)
    attention_mask = enc["attention_mask"]
    attn = attention_mask.unsqueeze(-1).double()
    with torch.no_grad():
        hs = model(input_ids=enc["input_ids"], attention_mask=attention_mask,
                   return_dict=True).last_hidden_state
    pooled = (hs * attn).sum(dim=1) / attn.sum(dim=1).clamp(min=1.0)
    return enc, hs, pooled


def write_expected(model, tokenizer, sequences, out_dir):
    """expected.json / expected.safetensors: each sequence's ids and its real tokens' states from
    its own row (padding to 1,024 makes rows independent); pipeline.json: the extractor's
    output in batches of four."""
    ids, states, pooled_alone = [], [], []
    for s in sequences:
        enc, hs, pooled = run(model, tokenizer, [s])
        n = int(enc["attention_mask"][0].sum())
        ids.append(enc["input_ids"][0, :n].tolist())
        states.append(hs[0, :n].float())
        pooled_alone.append(pooled[0].float())
    save_file({"last_hidden_state": torch.cat(states).contiguous(),
               "pooled": torch.stack(pooled_alone).contiguous()}, out_dir / "expected.safetensors")
    meta = {"sequences": sequences, "input_ids": ids, "pad_token_id": tokenizer.pad_token_id}
    (out_dir / "expected.json").write_text(json.dumps(meta) + "\n")
    pooled = torch.cat([run(model, tokenizer, sequences[i:i + BATCH])[2]
                        for i in range(0, len(sequences), BATCH)])
    assert torch.allclose(pooled.float(), torch.stack(pooled_alone), atol=1e-5)
    (out_dir / "pipeline.json").write_text(json.dumps(
        {"sequences": sequences, "pooled": pooled.float().tolist()}) + "\n")


def main():
    modeling, JanusDNAConfig, CaduceusTokenizer = import_published_code()
    tokenizer = CaduceusTokenizer(model_max_length=MAX_LENGTH, padding_side="right")
    rows = smoke_sequences()
    long = "".join(rows[:8])
    sequences = [rows[0][:3], rows[1][:5].lower(), rows[2][:120], rows[3][:90] + "NN" + rows[60][:68],
                 long[:MAX_LENGTH], long[:MAX_LENGTH + 37]]
    for variant, mid_attention, final_mlp, seed, weights_only in [
        ("w", True, False, 1, False),
        ("wo", False, True, 2, True),
    ]:
        out_dir = OUT / variant
        shutil.rmtree(out_dir, ignore_errors=True)
        cfg = tiny_config(mid_attention)
        model, _ = build(modeling, janus_config(JanusDNAConfig, cfg), seed, final_mlp)
        write_lightning(model, cfg, out_dir, weights_only)
        model, missing = extractor_model(modeling, JanusDNAConfig, out_dir)
        write_expected(model, tokenizer, sequences, out_dir)
        size = sum(f.stat().st_size for f in out_dir.iterdir())
        print(f"{out_dir}: {size / 1024:.0f} KiB, missing under strict=False: {len(missing)}")


if __name__ == "__main__":
    main()
