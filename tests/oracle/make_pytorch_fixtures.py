"""Oracle fixtures for the pytorch_model.bin reader (src/checkpoint/pytorch.rs).

Re-run from the repository root (needs torch; deterministic):
    python3 tests/oracle/make_pytorch_fixtures.py

Writes tests/fixtures/pytorch/:
  small_state.bin   torch.save of a small state dict, saved under a file name other than
                    "archive" so its zip folder is not the default one. It holds f32, f16,
                    bf16, f64 and i64 tensors, a transposed (non-contiguous) view, two views of
                    one shared storage (one with a storage offset), an nn.Parameter, a 0-d
                    tensor and dotted nested prefixes, as HF state dicts have.
  small_state.json  for each tensor: dtype, shape and its values in row-major order as torch
                    reads them back (floats widened to float64 exactly).
"""

import json
import os

import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "pytorch")


def state_dict():
    g = torch.Generator().manual_seed(7)
    base = torch.randn(3, 5, generator=g)
    shared = torch.randn(4, 6, generator=g)
    return {
        "bert.embeddings.word_embeddings.weight": torch.randn(6, 4, generator=g),
        "bert.encoder.layer.0.attention.self.query.weight": base.t(),  # strides (1, 5)
        "bert.encoder.layer.0.attention.self.query.bias": torch.randn(3, generator=g).half(),
        "bert.encoder.layer.0.output.dense.weight": torch.randn(2, 3, generator=g).bfloat16(),
        "bert.encoder.layer.0.output.LayerNorm.weight": torch.randn(5, generator=g).double(),
        "bert.embeddings.position_ids": torch.arange(7, dtype=torch.int64).unsqueeze(0),
        "shared.full": shared,
        "shared.row2": shared[2],  # same storage, storage_offset 12
        "shared.col1": shared[:, 1],  # same storage, offset 1, stride 6
        "head.scale": torch.nn.Parameter(torch.tensor(0.75), requires_grad=False),
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "small_state.bin")
    torch.save(state_dict(), path)
    # Read back with torch itself: the expected values are what torch.load gives.
    loaded = torch.load(path, weights_only=True)
    expected = {}
    for name, tensor in loaded.items():
        values = tensor.detach().contiguous().reshape(-1)
        expected[name] = {
            "dtype": str(tensor.dtype).removeprefix("torch."),
            "shape": list(tensor.shape),
            "values": values.tolist() if not tensor.is_floating_point() else values.double().tolist(),
        }
    with open(os.path.join(OUT, "small_state.json"), "w") as f:
        json.dump({"torch_version": torch.__version__, "tensors": expected}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
