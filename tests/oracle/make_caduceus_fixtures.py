"""Caduceus oracle: expected outputs from the published Caduceus modeling code (PyTorch).

The Caduceus HF code (kuleshov-group/caduceus, `caduceus/modeling_caduceus.py`,
`modeling_rcps.py`, `configuration_caduceus.py`, `tokenization_caduceus.py`) is imported
unchanged from a checkout named by $CADUCEUS_SRC (default target/caduceus-src; get it with
`git clone https://github.com/kuleshov-group/caduceus` — these fixtures were made at commit
0060a6d). Its dependency `mamba_ssm` needs CUDA to build, so this script installs, in memory,
a stand-in `mamba_ssm` with the pure-PyTorch paths of the same library: `Mamba.forward`'s
non-fused branch (conv1d + SiLU, x_proj, dt_proj, `selective_scan_ref`), `Block` and the
fused add+RMSNorm/LayerNorm as `rms_norm_ref`/`layer_norm_ref` compute them.

Writes tests/fixtures/models/caduceus/{ph,ps}/: a tiny randomly initialised checkpoint with the
real tensor names (CaduceusForMaskedLM, as the hub repos hold it) as config.json +
model.safetensors, and expected.json/expected.safetensors as make_hyena_fixtures.py does: token
ids from the Caduceus tokenizer, `last_hidden_state` = `hidden_states[-1]` of each sequence run
alone (as GENEB's extractor runs it), in float64, and `pooled` = its mean over all tokens.

Run: python3 tests/oracle/make_caduceus_fixtures.py
"""

import csv
import json
import math
import os
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/caduceus"
SOURCE = Path(os.environ.get("CADUCEUS_SRC", ROOT / "target/caduceus-src"))


# --- pure-PyTorch stand-in for mamba_ssm (semantics of its reference paths) ---------------

def selective_scan_ref(u, delta, A, B, C, D, z, delta_bias):
    """u, delta, z: [b, d, l]; A: [d, n]; B, C: [b, n, l]; D, delta_bias: [d]."""
    delta = F.softplus(delta + delta_bias[..., None])
    delta_a = torch.exp(torch.einsum("bdl,dn->bdln", delta, A))
    delta_b_u = torch.einsum("bdl,bnl,bdl->bdln", delta, B, u)
    x = u.new_zeros(u.shape[0], A.shape[0], A.shape[1])
    ys = []
    for i in range(u.shape[2]):
        x = delta_a[:, :, i] * x + delta_b_u[:, :, i]
        ys.append(torch.einsum("bdn,bn->bd", x, C[:, :, i]))
    y = torch.stack(ys, dim=2) + u * D[:, None]
    return y * F.silu(z)


class Mamba(nn.Module):
    def __init__(self, d_model, d_state=16, d_conv=4, expand=2, dt_rank="auto", conv_bias=True,
                 bias=False, layer_idx=None, device=None, dtype=None, **_unused_init_args):
        super().__init__()
        self.d_inner = int(expand * d_model)
        self.d_state = d_state
        self.dt_rank = math.ceil(d_model / 16) if dt_rank == "auto" else dt_rank
        self.in_proj = nn.Linear(d_model, self.d_inner * 2, bias=bias)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, d_conv, groups=self.d_inner,
                                padding=d_conv - 1, bias=conv_bias)
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1.0)).repeat(self.d_inner, 1))
        self.D = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=bias)

    def forward(self, hidden_states, inference_params=None):
        seqlen = hidden_states.shape[1]
        xz = self.in_proj(hidden_states).transpose(1, 2)
        x, z = xz.chunk(2, dim=1)
        x = F.silu(self.conv1d(x)[..., :seqlen])
        x_dbl = self.x_proj(x.transpose(1, 2))
        dt, B, C = torch.split(x_dbl, [self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = (dt @ self.dt_proj.weight.t()).transpose(1, 2)
        y = selective_scan_ref(x, dt, -torch.exp(self.A_log), B.transpose(1, 2),
                               C.transpose(1, 2), self.D, z, self.dt_proj.bias)
        return self.out_proj(y.transpose(1, 2))


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.register_parameter("bias", None)

    def forward(self, x, residual=None, prenorm=False, residual_in_fp32=False):
        return rms_norm_fn(x, self.weight, self.bias, residual=residual, eps=self.eps,
                           prenorm=prenorm)


def add_norm(x, weight, bias, residual=None, prenorm=False, eps=1e-6, rms=True, **_):
    if residual is not None:
        x = x + residual
    if rms:
        out = x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps) * weight
    else:
        out = F.layer_norm(x, x.shape[-1:], weight, bias, eps)
    if rms and bias is not None:
        out = out + bias
    return (out, x) if prenorm else out


def rms_norm_fn(x, weight, bias, **kwargs):
    return add_norm(x, weight, bias, rms=True, **kwargs)


def layer_norm_fn(x, weight, bias, is_rms_norm=False, **kwargs):
    return add_norm(x, weight, bias, rms=is_rms_norm, **kwargs)


class Block(nn.Module):
    """mamba_ssm's Block without an MLP (Caduceus passes none)."""

    def __init__(self, dim, mixer_cls, norm_cls=nn.LayerNorm, fused_add_norm=False,
                 residual_in_fp32=False):
        super().__init__()
        self.fused_add_norm = fused_add_norm
        self.norm = norm_cls(dim)
        self.mixer = mixer_cls(dim)

    def forward(self, hidden_states, residual=None, inference_params=None):
        if not self.fused_add_norm:
            residual = hidden_states + residual if residual is not None else hidden_states
            hidden_states = self.norm(residual)
        else:
            hidden_states, residual = layer_norm_fn(
                hidden_states, self.norm.weight, self.norm.bias, residual=residual,
                prenorm=True, eps=self.norm.eps, is_rms_norm=isinstance(self.norm, RMSNorm))
        return self.mixer(hidden_states, inference_params=inference_params), residual


def install_mamba_stand_in():
    modules = {}
    for name in ["mamba_ssm", "mamba_ssm.modules", "mamba_ssm.modules.mamba_simple",
                 "mamba_ssm.ops", "mamba_ssm.ops.triton", "mamba_ssm.ops.triton.layernorm"]:
        modules[name] = sys.modules[name] = types.ModuleType(name)
    modules["mamba_ssm.modules.mamba_simple"].Mamba = Mamba
    modules["mamba_ssm.modules.mamba_simple"].Block = Block
    norm = modules["mamba_ssm.ops.triton.layernorm"]
    norm.RMSNorm, norm.layer_norm_fn, norm.rms_norm_fn = RMSNorm, layer_norm_fn, rms_norm_fn


# --- fixtures --------------------------------------------------------------------------------

def smoke_sequences():
    rows = []
    for name in ["smoke_yeast_promoter_vs_terminator.csv", "smoke_ctcf_gm12878_vs_dinuc_shuffled.csv"]:
        with open(ROOT / "tasks/smoke" / name) as f:
            rows += [r["text"] for r in csv.DictReader(f)]
    return rows


def write_expected(model, last_hidden_state, tokenizer, sequences, out_dir):
    """expected.json (sequences, token ids, pad id) and expected.safetensors: every real token's
    final state, `last_hidden_state(model, ids)` of each sequence run alone, and their mean."""
    ids = [tokenizer(s)["input_ids"] for s in sequences]
    states, pooled = [], []
    # In float64 (the model's exact values), as make_hyena_fixtures.py does.
    model = model.double()
    with torch.no_grad():
        for row in ids:
            last = last_hidden_state(model, row)
            states.append(last.float())
            pooled.append(last.mean(dim=0).float())
    model.float()
    save_file({"last_hidden_state": torch.cat(states).contiguous(), "pooled": torch.stack(pooled)},
              out_dir / "expected.safetensors")
    meta = {"sequences": sequences, "input_ids": ids, "pad_token_id": tokenizer.pad_token_id}
    (out_dir / "expected.json").write_text(json.dumps(meta) + "\n")
    return pooled


def write_fixture(model, config, tokenizer, sequences, out_dir, drop):
    out_dir.mkdir(parents=True, exist_ok=True)
    config.to_json_file(out_dir / "config.json")
    # The hub's safetensors files store tied tensors once; `drop` removes the tied copies.
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items() if not drop(k)}
    save_file(state, out_dir / "model.safetensors", metadata={"format": "pt"})
    def last_hidden_state(model, row):
        out = model(torch.tensor([row]), output_hidden_states=True, return_dict=True)
        return out.hidden_states[-1][0]

    write_expected(model, last_hidden_state, tokenizer, sequences, out_dir)
    size = sum(f.stat().st_size for f in out_dir.iterdir())
    print(f"{out_dir.relative_to(ROOT)}: {size / 1024:.0f} KiB")


def main():
    if not (SOURCE / "caduceus/modeling_caduceus.py").exists():
        sys.exit(f"{SOURCE}: no caduceus/modeling_caduceus.py; set CADUCEUS_SRC to a checkout")
    install_mamba_stand_in()
    sys.path.insert(0, str(SOURCE))
    from caduceus.configuration_caduceus import CaduceusConfig
    from caduceus.modeling_caduceus import CaduceusForMaskedLM
    from caduceus.tokenization_caduceus import CaduceusTokenizer

    # transformers 5 passes tie_weights(recompute_mapping=...), unknown to the 2024 code.
    tie_weights = CaduceusForMaskedLM.tie_weights
    CaduceusForMaskedLM.tie_weights = lambda self, *args, **kwargs: tie_weights(self)

    tokenizer = CaduceusTokenizer(model_max_length=1024)
    rows = smoke_sequences()
    sequences = [rows[0][:1], rows[1][:5], rows[2][:120], rows[3][:90] + "NN" + rows[60][:68]]
    for variant, rcps, seed in [("ph", False, 1), ("ps", True, 2)]:
        torch.manual_seed(seed)
        config = CaduceusConfig(
            d_model=16, n_layer=2, vocab_size=12, pad_vocab_size_multiple=8,
            ssm_cfg={"d_state": 8, "d_conv": 4, "expand": 2, "dt_rank": "auto", "bias": False,
                     "conv_bias": True},
            rms_norm=True, residual_in_fp32=False, fused_add_norm=True, norm_epsilon=1e-5,
            bidirectional=True, bidirectional_strategy="add", bidirectional_weight_tie=True,
            rcps=rcps, complement_map=tokenizer.complement_map if rcps else None,
            architectures=["CaduceusForMaskedLM"],
        )
        model = CaduceusForMaskedLM(config).eval()
        with torch.no_grad():
            for p in model.parameters():  # off their inits: no unit norms, no zero biases
                p.add_(torch.randn_like(p) * 0.2)
        # PH keeps every tied name (as a .bin would); PS drops the tied copies.
        if rcps:
            def drop(k):
                return (".mamba_rev.in_proj." in k or ".mamba_rev.out_proj." in k
                        or k == "lm_head.lm_head.weight")
        else:
            def drop(k):
                return False
        write_fixture(model, config, tokenizer, sequences, OUT / variant, drop)


if __name__ == "__main__":
    main()
