"""eccDNAMamba oracle: GENEB's extractor lines over GenAI-Lab's `BiMambaForMaskedLM` and
mamba_ssm 2.2.4, both from temporary copies (never committed):

  pip download --no-deps --no-binary :all: --no-build-isolation mamba-ssm==2.2.4  (with
      MAMBA_SKIP_CUDA_BUILD=TRUE), unpacked: MAMBA_SSM_SRC=<dir>/mamba_ssm-2.2.4
  zzq1zh/GenAI-Lab's BiMambaForMaskedLM.py at 37c717b (the file GENEB's extractor imports from
      utility_modules/GenAI_Lab_project; every version since 5643d80 computes the same):
      GENAI_LAB_SRC=<dir holding it>

mamba_ssm's kernels need CUDA, so its own pure-PyTorch reference paths stand in for them, and
nothing else is changed: each Mamba2 layer's non-fused path (`use_mem_eff_path=False`, the same
computation as the fused kernel; PyTorch's Conv1d where causal_conv1d is absent) with
`mamba_chunk_scan_combined` computed by mamba_ssm's `ssd_selective_scan` over its
`selective_scan_ref`, the gated RMSNorm by `layernorm_gated.rms_norm_ref`, and the blocks'
fused add + RMSNorm (`layer_norm_fn`) by `layer_norm.rms_norm_ref`. `selective_scan_cuda` (the
Mamba-1 kernel, never called here) is an empty module so that the package imports.

The extractor is `embedding_pipeline/extractors/eccdnamamba.py` of darlednik/GENEB (d18929a and
e3d5f45 embed alike): `tokenizer(batch, return_tensors="pt", padding=True, truncation=True)`,
`model(input_ids=…, attention_mask=…, return_dict=True).hidden_states` and its mean over the
mask, in batches of 4 (main.py's `--batch_size`) in file order.

Writes tests/fixtures/models/eccdnamamba/: a tiny BiMambaForMaskedLM on transformers'
`Mamba2Config` as train_model.py builds it (mamba2-130m's keys, shrunk: d_model 32, 2 layers,
Mamba2 with d_state 16 and headdim 8, so 8 heads; `vocab_size` the tokenizer's, `pad_token_id`
0, untied) saved by `save_pretrained`, every parameter random; its tokenizer trained as
GenAI-Lab's tokenize_sequences.py trains one (BPE, Whitespace pre-tokenizer, [PAD] [CLS] [UNK]
[MASK], `[CLS] $A`), on random DNA; pipeline.json: the sequences and the pooled embeddings.

Run: MAMBA_SSM_SRC=… GENAI_LAB_SRC=… python3 tests/oracle/make_eccdnamamba_fixtures.py
"""

import json
import os
import random
import sys
import types
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/eccdnamamba"
BATCH_SIZE = 4

sys.path.insert(0, os.environ["MAMBA_SSM_SRC"])
sys.path.insert(0, os.environ["GENAI_LAB_SRC"])
sys.modules["selective_scan_cuda"] = types.ModuleType("selective_scan_cuda")

import mamba_ssm.models.mixer_seq_simple as mixer_seq_simple  # noqa: E402
import mamba_ssm.modules.block as block  # noqa: E402
import mamba_ssm.modules.mamba2 as mamba2  # noqa: E402
import mamba_ssm.ops.selective_scan_interface as scan_interface  # noqa: E402
from mamba_ssm.ops.triton import layer_norm, layernorm_gated, ssd_combined  # noqa: E402

scan_interface.selective_scan_fn = scan_interface.selective_scan_ref


def chunk_scan_reference(x, dt, A, B, C, chunk_size, D=None, z=None, dt_bias=None,
                         dt_softplus=False, dt_limit=(0.0, float("inf")), **_):
    return ssd_combined.ssd_selective_scan(
        x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus, dt_limit=dt_limit
    )


def add_norm_reference(x, weight, bias, residual=None, eps=1e-6, prenorm=False,
                       residual_in_fp32=False, is_rms_norm=False, **_):
    reference = layer_norm.rms_norm_ref if is_rms_norm else layer_norm.layer_norm_ref
    return reference(x, weight, bias, residual=residual, eps=eps, prenorm=prenorm)


def gated_norm_reference(self, x, z=None):
    return layernorm_gated.rms_norm_ref(
        x, self.weight, self.bias, z=z, eps=self.eps, group_size=self.group_size,
        norm_before_gate=self.norm_before_gate,
    )


mamba2.mamba_chunk_scan_combined = chunk_scan_reference
layernorm_gated.RMSNorm.forward = gated_norm_reference
block.layer_norm_fn = add_norm_reference
mixer_seq_simple.layer_norm_fn = add_norm_reference

import BiMambaForMaskedLM as genai_lab  # noqa: E402

genai_lab.layer_norm_fn = add_norm_reference  # the patched MixerModel.forward's final norm

from tokenizers import Tokenizer  # noqa: E402
from tokenizers.models import BPE  # noqa: E402
from tokenizers.pre_tokenizers import Whitespace  # noqa: E402
from tokenizers.processors import TemplateProcessing  # noqa: E402
from tokenizers.trainers import BpeTrainer  # noqa: E402
from transformers import AutoTokenizer, Mamba2Config, PreTrainedTokenizerFast  # noqa: E402


def train_tokenizer(rng):
    """tokenize_sequences.py's tokenizer, trained on random DNA to 64 tokens."""
    corpus = ["".join(rng.choice("ACGT") for _ in range(rng.randint(20, 80))) for _ in range(300)]
    tokenizer = Tokenizer(BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    trainer = BpeTrainer(vocab_size=64, special_tokens=["[PAD]", "[CLS]", "[UNK]", "[MASK]"])
    tokenizer.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer)
    fast.add_special_tokens(
        {"pad_token": "[PAD]", "cls_token": "[CLS]", "unk_token": "[UNK]", "mask_token": "[MASK]"}
    )
    fast._tokenizer.post_processor = TemplateProcessing(
        single="[CLS] $A", special_tokens=[("[CLS]", fast.convert_tokens_to_ids("[CLS]"))]
    )
    fast.save_pretrained(OUT)


def extract(tokenizer, model, sequences):
    """The extractor's `extract_embeddings`, line for line."""
    all_embs = []
    with torch.no_grad():
        for i in range(0, len(sequences), BATCH_SIZE):
            batch = sequences[i : i + BATCH_SIZE]
            enc = tokenizer(batch, return_tensors="pt", padding=True, truncation=True)
            out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                        return_dict=True)
            hs = out.hidden_states
            mask = enc["attention_mask"].unsqueeze(-1)
            summed = (hs * mask).sum(dim=1)
            lengths = mask.sum(dim=1).clamp(min=1)
            all_embs.append((summed / lengths).cpu().numpy())
    return np.vstack(all_embs)


def main():
    rng = random.Random(37)
    OUT.mkdir(parents=True, exist_ok=True)
    train_tokenizer(rng)
    tokenizer = AutoTokenizer.from_pretrained(str(OUT))
    # mamba2-130m's config.json, shrunk; read as train_model.py's AutoConfig reads it.
    config = Mamba2Config.from_dict({
        "d_model": 32, "d_intermediate": 0, "n_layer": 2, "vocab_size": 50277,
        "ssm_cfg": {"layer": "Mamba2", "d_state": 16, "headdim": 8}, "attn_layer_idx": [],
        "attn_cfg": {}, "rms_norm": True, "residual_in_fp32": True, "fused_add_norm": True,
        "pad_vocab_size_multiple": 16, "tie_embeddings": True,
    })
    config.vocab_size = tokenizer.vocab_size
    config.pad_token_id = 0
    config.tie_embeddings = False
    config.architectures = ["BiMambaForMaskedLM"]
    torch.manual_seed(37)
    model = genai_lab.BiMambaForMaskedLM(config)
    g = torch.Generator().manual_seed(37)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.rand(p.shape, generator=g) * 2.0 - 1.0)
            elif p.ndim == 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.5 + (1.0 if "norm" in name else 0.0))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / max(1, p[0].numel()) ** 0.5)
    model.save_pretrained(OUT, safe_serialization=True)

    reference = genai_lab.BiMambaForMaskedLM.from_pretrained(str(OUT)).eval()
    # The extractor's line (an attribute of MambaLMHeadModel that nothing reads) ...
    reference.mamba_forward.use_mem_eff_path = False
    # ... and the CPU's: each Mamba2 layer's non-fused path.
    for module in reference.modules():
        if isinstance(module, mamba2.Mamba2):
            module.use_mem_eff_path = False

    def dna(n, alphabet="ACGT"):
        return "".join(rng.choice(alphabet) for _ in range(n))

    # Two batches of 4 and one of 2, lengths mixed so that each batch pads.
    sequences = [dna(60), dna(7), dna(33), "ACGTN" + dna(20, "ACGTN"),
                 dna(12), dna(90), dna(3), dna(45),
                 dna(25), "A"]
    pooled = extract(tokenizer, reference, sequences)
    (OUT / "pipeline.json").write_text(
        json.dumps({"sequences": sequences, "pooled": pooled.astype("float32").tolist()}) + "\n"
    )
    print(OUT, pooled.shape)


if __name__ == "__main__":
    torch.set_num_threads(2)
    main()
