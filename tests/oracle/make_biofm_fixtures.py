"""BioFM oracles: biofm-eval's own AnnotationTokenizer and Embedder (m42-health/biofm-eval at
30d5ec2, third-party, never committed) on a tiny random MistralForCausalLM, called as GENEB's
extractor calls them (`embedding_pipeline/extractors/biofm.py` of darlednik/GENEB at e3d5f45).

Pass a checkout of biofm-eval (e.g. `git archive 30d5ec2 | tar -x -C DIR`):
    /work/pyenv/bin/python tests/oracle/make_biofm_fixtures.py BIOFM_EVAL_DIR
Its package `__init__` imports VCF and FASTA readers the embedding does not use, so the modules
are loaded from the checkout under a bare `biofm_eval` package; `datasets`, imported by
embedder.py for type names only, is stubbed when absent.

- tokenizers/biofm/: tokenizer_config.json as `AnnotationTokenizer.save_pretrained` writes it
  (`char_ords`, `model_max_length` 24) and expected.json over make_tokenizer_fixtures.py's
  corpus.json, for tests/tokenizers.rs.
- models/biofm/: a MistralForCausalLM (hidden 32, 2 layers, 4 query and 2 key/value heads,
  sliding_window 5, 64 positions), weights off their inits; the tokenizer's settings both in
  tokenizer_config.json and, as the hub's config.json carries them, in config.json's
  `tokenizer_config` (`model_max_length` 40, so long sequences are cut); `_name_or_path` names
  m42-health/BioFM-265M so that geneb applies biofm.py's recipe. pipeline.json: sequences of
  unequal lengths in file order and their embeddings from `Embedder.get_sequence_embeddings` in
  batches of 4 (main.py's), the model in f32 (biofm.py loads bf16; geneb runs f32).
"""

import importlib.util
import json
import sys
import types
from pathlib import Path

import torch
from transformers import MistralConfig

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures"
BATCH = 4  # main.py's default --batch_size
CHARACTERS = "ACGTN"


def load_biofm_eval(checkout):
    package = types.ModuleType("biofm_eval")
    package.__path__ = [str(Path(checkout) / "biofm_eval")]
    sys.modules["biofm_eval"] = package
    if importlib.util.find_spec("datasets") is None:
        stub = types.ModuleType("datasets")
        stub.Dataset = stub.DatasetDict = object
        sys.modules["datasets"] = stub
    from biofm_eval.embedder import Embedder
    from biofm_eval.models.base import AnnotatedModel
    from biofm_eval.tokenizers.base import AnnotationTokenizer
    return AnnotatedModel, AnnotationTokenizer, Embedder


def module(name):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / f"{name}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def tokenizer_fixture(AnnotationTokenizer):
    tokens = module("make_tokenizer_fixtures")
    corpus = json.loads((OUT / "tokenizers/corpus.json").read_text())
    path = Path(tokens.folder("biofm", {"model_type": "mistral"}, {}))
    tokenizer = AnnotationTokenizer(characters=list(CHARACTERS),
                                    variant_characters=list("ÂṰĜĈ"), model_max_length=24)
    tokenizer.save_pretrained(path)
    tokenizer = AnnotationTokenizer.from_pretrained(path)
    # As Embedder.get_sequence_embeddings feeds it: the characters joined by spaces.
    spaced = lambda s: " ".join(s)  # noqa: E731
    tokens.write_json(str(path / "expected.json"), tokens.expected(tokenizer, corpus, 24, spaced))


def sequences():
    """Unequal lengths within each batch of 4 (so padding and the column differ), one past the
    40 tokens, runs of N."""
    rng = torch.Generator().manual_seed(5)
    out = []
    for n in [3, 12, 25, 7, 30, 30, 1, 18, 60, 9, 22, 14]:
        out.append("".join("ACGT"[i] for i in torch.randint(0, 4, (n,), generator=rng).tolist()))
    out[5] = "ACGTN" * 6
    out[10] = "N" * 8 + out[10][8:]
    return out


def model_fixture(AnnotatedModel, AnnotationTokenizer, Embedder):
    folder = OUT / "models/biofm"
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(2)
    config = MistralConfig(vocab_size=32, hidden_size=32, intermediate_size=40,
                           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
                           sliding_window=5, bos_token_id=11, eos_token_id=10, pad_token_id=9,
                           tie_word_embeddings=False)
    model = AnnotatedModel(config).eval()
    module("make_llama_fixtures").perturb(model, 32)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer = AnnotationTokenizer(characters=list(CHARACTERS),
                                    variant_characters=list("ÂṰĜĈ"), model_max_length=40)
    tokenizer.save_pretrained(folder)
    saved = json.loads((folder / "config.json").read_text())
    saved["_name_or_path"] = "m42-health/BioFM-265M"
    saved["tokenizer_config"] = tokenizer.get_config()
    (folder / "config.json").write_text(json.dumps(saved, indent=2) + "\n")

    # biofm.py's lines (the model in f32, not bf16).
    model = AnnotatedModel.from_pretrained(folder, torch_dtype=torch.float32)
    tokenizer = AnnotationTokenizer.from_pretrained(folder)
    embedder = Embedder(model, tokenizer)
    model.eval()
    texts = sequences()
    pooled = []
    with torch.no_grad():
        for i in range(0, len(texts), BATCH):
            embs = embedder.get_sequence_embeddings(texts[i:i + BATCH])
            pooled += embs.to(torch.float32).tolist()
    assert len(tokenizer(" ".join(texts[8]))["input_ids"]) > 40, "nothing is cut at 40 tokens"
    (folder / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}))


def main():
    AnnotatedModel, AnnotationTokenizer, Embedder = load_biofm_eval(sys.argv[1])
    tokenizer_fixture(AnnotationTokenizer)
    model_fixture(AnnotatedModel, AnnotationTokenizer, Embedder)


if __name__ == "__main__":
    main()
