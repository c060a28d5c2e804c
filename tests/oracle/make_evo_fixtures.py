"""Evo-1 oracle: GENEB's extractor lines over StripedHyena's published code (PyPI
`stripedhyena==0.2.0`, `evo-model==0.5` and `flash-attn==2.7.4.post1` sources, unpacked to a
temporary folder given as --code; never committed).

The extractor is `embedding_pipeline/extractors/evo.py` (its two versions, 18e4a8d and e3d5f45,
differ only in the base class): `Evo('evo-1-131k-base')`, which builds `StripedHyena` from evo's
`configs/evo-1-131k-base_inference.yml`, loads the hub checkpoint (`revision='1.1_fix'`) and
calls `to_bfloat16_except_poles_residues()`; then, per batch, `seqs[i:i+batch_size][0]`
tokenized by `CharLevelTokenizer(512)` (the text's bytes), and `outputs[-1].mean(dim=1)`, where
GENEB's copy of stripedhyena's model.py (utility_modules/EVO_project, a3c3bd1) returns the final
RMSNorm's output as the forward's last value. That copy differs from PyPI stripedhyena 0.2.0's
model.py only there; `last_hidden` below runs those forward lines on the PyPI model. At
main.py's default batch of 4 the `[0]` would give one embedding per four labels and the
classifier could not have been fitted, so the published row ran one sequence per batch, each
embedded whole: as here.

--code must hold: `src/` (stripedhyena 0.2.0's package, imported as `src` as it imports
itself), `flash_attn/` (flash-attn 2.7.4.post1's Python sources, no CUDA build) and
`evo/tokenizer.py` (evo-model 0.5). flash-attn's CUDA extension is replaced by an empty module
(its functions are not called: `use_flash_attn=False` takes MHA's PyTorch `SelfAttention`), and
its Triton rotary kernel by the library's own PyTorch reference, `apply_rotary_emb_torch`.

Writes tests/fixtures/models/evo/: a tiny random StripedHyena (hidden 32, 4 heads, three
blocks: Hyena, attention, Hyena; state size 4, 512 byte tokens, the 131k model's interpolated
rotary scaling of 16) as the hub lays it out (config.json, model.safetensors under `backbone.`),
and pipeline.json (sequences and embeddings, the model in float64 as far as stripedhyena lets
it: its filters and FFT convolution run in float32 whatever the model's dtype).

Run: python3 tests/oracle/make_evo_fixtures.py --code /tmp/evo-code
"""

import argparse
import json
import random
import sys
import types
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/evo"

# The 131k model's YAML, shrunk: every key that shapes the forward pass keeps its meaning.
TINY = dict(
    vocab_size=512,
    hidden_size=32,
    num_filters=32,
    attn_layer_idxs=[1],
    hyena_layer_idxs=[0, 2],
    num_layers=3,
    short_filter_length=3,
    num_attention_heads=4,
    short_filter_bias=True,
    eps=1e-6,
    state_size=4,
    inner_size_multiple_of=16,
    proj_groups=1,
    hyena_filter_groups=1,
    model_parallel_size=1,
    tie_embeddings=True,
    inner_mlp_size=None,
    mha_out_proj_bias=True,
    qkv_proj_bias=True,
    final_norm=True,
    use_flash_attn=False,
    use_flash_rmsnorm=False,
    use_flash_depthwise=False,
    use_flashfft=False,
    inference_mode=True,
    prefill_style="fft",
    mlp_activation="gelu",
    use_interpolated_rotary_pos_emb=True,
    rotary_emb_scaling_factor=16,
    max_seqlen=131072,
)


def shim_flash_attn():
    """flash-attn without its compiled parts: the CUDA module empty, the Triton rotary kernel
    replaced by the library's PyTorch reference of it."""
    sys.modules["flash_attn_2_cuda"] = types.ModuleType("flash_attn_2_cuda")
    triton_rotary = types.ModuleType("flash_attn.ops.triton.rotary")

    def apply_rotary(x, cos, sin, seqlen_offsets=0, cu_seqlens=None, max_seqlen=None,
                     interleaved=False, inplace=False, conjugate=False):
        from flash_attn.layers.rotary import apply_rotary_emb_torch

        assert cu_seqlens is None and isinstance(seqlen_offsets, int) and not conjugate
        seqlen = x.shape[1]
        out = apply_rotary_emb_torch(
            x, cos[seqlen_offsets:seqlen_offsets + seqlen], sin[seqlen_offsets:seqlen_offsets + seqlen],
            interleaved)
        if inplace:
            x.copy_(out)
            return x
        return out

    triton_rotary.apply_rotary = apply_rotary
    sys.modules["flash_attn.ops.triton.rotary"] = triton_rotary


def last_hidden(model, x):
    """GENEB's StripedHyena.forward up to its `last_hidden` (the stateless path)."""
    x = model.embedding_layer.embed(x)
    x, _ = model.stateless_forward(x, padding_mask=None)
    x = model.norm(x)
    return x


def extract_embeddings(model, tokenizer, seqs, batch_size=1):
    """The extractor's `extract_embeddings`, line for line, at the batch size the row ran."""
    all_embeds = []
    with torch.no_grad():
        for i in range(0, len(seqs), batch_size):
            batch = seqs[i : i + batch_size][0]
            inputs_ids = torch.tensor(tokenizer.tokenize(batch), dtype=torch.int).unsqueeze(0)
            outputs = last_hidden(model, inputs_ids)
            all_embeds.append(outputs.mean(dim=1).float().cpu().numpy())
    return np.vstack(all_embeds)


def randomise(model, seed):
    """Every weight at random (the library zeroes D and starts the poles near 0, which would
    hide the long filter): poles of modulus 0.5–0.97 at any phase, so the filter reaches far."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("poles"):
                modulus = 0.5 + 0.47 * torch.rand(p.shape[:-1], generator=g, dtype=torch.float64)
                phase = (torch.rand(p.shape[:-1], generator=g, dtype=torch.float64) * 2 - 1) * np.pi
                p.copy_(torch.stack([modulus * phase.cos(), modulus * phase.sin()], -1))
            elif name.endswith("residues"):
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.5)
            elif name.endswith(".scale") or p.ndim == 1:
                p.copy_(1 + 0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64))
            elif name.endswith("embedding_layer.weight"):
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
            else:
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * p.shape[-1] ** -0.5)


def random_dna(rng, n, alphabet="ACGT"):
    return "".join(rng.choice(alphabet) for _ in range(n))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=Path, required=True)
    args = parser.parse_args()
    sys.path.insert(0, str(args.code))
    shim_flash_attn()
    torch.set_num_threads(2)
    from safetensors.torch import save_file
    from src.model import StripedHyena
    from src.utils import dotdict
    from evo.tokenizer import CharLevelTokenizer

    config = dotdict(dict(TINY, attn_block_dtype=torch.float32, mlp_dtype=torch.float32))
    torch.manual_seed(41)
    model = StripedHyena(config)
    model = model.double()
    randomise(model, 41)
    with torch.no_grad():  # the reference runs on exactly the weights the file holds
        for p in model.parameters():
            if p.dtype == torch.float64:
                p.copy_(p.float().double())
    model.eval()
    attention = model.blocks[1].inner_mha_cls
    assert type(attention.rotary_emb).__name__ == "LinearlyScaledRotaryEmbedding"
    assert type(attention.inner_attn).__name__ == "SelfAttention"

    OUT.mkdir(parents=True, exist_ok=True)
    hub_config = dict(TINY, model_type="stripedhyena",
                      architectures=["StripedHyenaModelForCausalLM"])
    (OUT / "config.json").write_text(json.dumps(hub_config, indent=2) + "\n")
    tensors = {
        f"backbone.{name}": t.detach().to(torch.float32).clone().contiguous()
        for name, t in model.state_dict().items()
    }
    save_file(tensors, OUT / "model.safetensors")

    tokenizer = CharLevelTokenizer(512)
    rng = random.Random(41)
    # As geneb's readers give them (upper-cased, IUPAC codes as N): the byte tokenizer reads
    # the text as it is, so the reference sees the same text.
    sequences = [
        "G",
        "ACGTNNNNACGT" + random_dna(rng, 60, "ACGTN"),
        random_dna(rng, 700),
        random_dna(rng, 33),
    ]
    pooled = extract_embeddings(model, tokenizer, sequences)
    (OUT / "pipeline.json").write_text(
        json.dumps({"sequences": sequences, "pooled": pooled.astype("float32").tolist()}) + "\n"
    )
    print(OUT, pooled.shape, sorted(tensors)[:3])


if __name__ == "__main__":
    main()
