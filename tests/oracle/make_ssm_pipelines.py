"""Whole-chain fixtures for the HyenaDNA and Caduceus test checkpoints, for tests/hf_models.rs
and the browser tests: each folder gets the tokenizer_config.json its family's HF tokenizer
reads (the same files tests/fixtures/tokenizers/{hyenadna,caduceus} are checked against the
real tokenizer code with), and pipeline.json = the sequences of expected.json with the pooled
outputs the oracle computed from them (make_hyena_fixtures.py, make_caduceus_fixtures.py: the
published modeling code, batch size 1, float64). No model is run here.

Run: python3 tests/oracle/make_ssm_pipelines.py (after the two oracle scripts)
"""

import json
from pathlib import Path

from safetensors.numpy import load_file

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
FOLDERS = {"models/hyena/tiny": "hyenadna", "models/caduceus/ph": "caduceus", "models/caduceus/ps": "caduceus"}

for folder, tokenizer in FOLDERS.items():
    out = ROOT / folder
    config = json.loads((out / "config.json").read_text())
    tok = json.loads((ROOT / "tokenizers" / tokenizer / "tokenizer_config.json").read_text())
    # Long enough for every fixture sequence: the oracle ran them untruncated.
    tok["model_max_length"] = config.get("max_seq_len", 1024)
    (out / "tokenizer_config.json").write_text(json.dumps(tok, sort_keys=True) + "\n")
    expected = json.loads((out / "expected.json").read_text())
    pooled = load_file(str(out / "expected.safetensors"))["pooled"]
    (out / "pipeline.json").write_text(
        json.dumps({"sequences": expected["sequences"], "pooled": pooled.astype("float32").tolist()}) + "\n"
    )
    print(out)
