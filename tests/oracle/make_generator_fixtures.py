"""GENERator oracles: its DNAKmerTokenizer's ids, and a tiny random Llama embedded with the lines
of GENEB's extractor (`embedding_pipeline/extractors/generator.py` of darlednik/GENEB at
e3d5f45).

GENERator's tokenizer is code the checkpoints ship (`tokenizer.py`, loaded with
trust_remote_code); it is third-party and never committed. Pass a copy of it:
    /work/pyenv/bin/python tests/oracle/make_generator_fixtures.py TOKENIZER_PY
The copy used (the code index's `DNAKmerTokenizer`, GENERanno's version of the file) appends
`</s>` in `build_inputs_with_special_tokens`; the GENERator checkpoints' tokenizer_config sets
`add_bos_token: true, add_eos_token: false` and their tokenizer gives no `</s>` (a pinned run of
GenerTeam/GENERator-eukaryote-3b-base at 7515b17 gave `[1, 1, 32, 1397]` for generator.py's
`"<s>AAAAAATTTTTT"`), so that method is replaced below by the two flags, and those pinned ids are
asserted. Its special tokens after `<->` are named differently from the checkpoints' (their
number, and so every id DNA gets, is the same).

- tokenizers/generator/: tokenizer_config.json (k 6, model_max_length 24) and expected.json
  over make_tokenizer_fixtures.py's corpus.json (untruncated, at 24, at 5), for
  tests/tokenizers.rs; config.json so that the registry picks the tokenizer.
- models/generator/: a LlamaForCausalLM of GENERator's vocabulary (4,128) and shape in small
  (hidden 16, 2 layers, 4 query and 2 key/value heads, rope_theta 500,000, 64 positions, tied
  embeddings), weights off their inits; config.json's `_name_or_path` names
  GenerTeam/GENERator-eukaryote-1.2b-base so that geneb applies generator.py's recipe.
  pipeline.json: the sequences (lengths not multiples of 6, under 6, past 64 positions, runs
  of N) and their embeddings as generator.py computes them, in batches of 4.
"""

import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures"
BATCH = 4  # main.py's default --batch_size
HUGE = 1000000000000000019884624838656  # transformers' "no limit", as the checkpoints' config


def module(name):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / f"{name}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def checkpoint_specials(self, token_ids_0, token_ids_1=None):
    """The checkpoints' special tokens: `<s>` where add_bos_token, `</s>` where add_eos_token."""
    assert token_ids_1 is None
    bos = [self.bos_token_id] if self.init_kwargs.get("add_bos_token", True) else []
    eos = [self.eos_token_id] if self.init_kwargs.get("add_eos_token", False) else []
    return bos + token_ids_0 + eos


def load_tokenizer(folder, tokenizer_py, **settings):
    """The folder's tokenizer as AutoTokenizer loads the checkpoints' (trust_remote_code)."""
    shutil.copy(tokenizer_py, folder / "tokenizer.py")
    config = {"tokenizer_class": "DNAKmerTokenizer", "k": 6,
              "auto_map": {"AutoTokenizer": ["tokenizer.DNAKmerTokenizer", None]},
              "add_bos_token": True, "add_eos_token": False, "bos_token": "<s>",
              "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<oov>", **settings}
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    type(tokenizer).build_inputs_with_special_tokens = checkpoint_specials
    for text, ids in [("<s>ACGTNACGTNAC", [1, 1, 0, 0]), ("<s>AAAAAATTTTTT", [1, 1, 32, 1397])]:
        assert tokenizer(text)["input_ids"] == ids, (text, tokenizer(text)["input_ids"])
    return tokenizer


def tokenizer_fixture(tokenizer_py, work):
    tokens = module("make_tokenizer_fixtures")
    corpus = json.loads((OUT / "tokenizers/corpus.json").read_text())
    build = work / "tokenizer"
    build.mkdir()
    tokenizer = load_tokenizer(build, tokenizer_py, model_max_length=24)
    path = Path(tokens.folder("generator", {"model_type": "llama"}, {}))
    shutil.copy(build / "tokenizer_config.json", path / "tokenizer_config.json")
    tokens.write_json(str(path / "expected.json"), tokens.expected(tokenizer, corpus, 24))


def sequences():
    """Deterministic DNA: under 6 nt (the BOS text alone), lengths off multiples of 6, runs of N,
    and past the 64 positions (cut there)."""
    rng = torch.Generator().manual_seed(11)
    out = []
    for n in [1, 5, 6, 7, 11, 13, 17, 30, 47, 95, 200, 500]:
        s = "".join("ACGT"[i] for i in torch.randint(0, 4, (n,), generator=rng).tolist())
        out.append(s)
    out.append("ACGTN" * 9)
    out.append("N" * 14 + "ACGTAC" * 4)
    return out


class GeneratorExtractor:
    """generator.py's lines (e3d5f45), the model and tokenizer loaded from `folder`."""

    def __init__(self, folder, tokenizer):
        self.tokenizer = tokenizer
        self.model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
        self.tokenizer.padding_side = "right"
        self.max_length = self.model.config.max_position_embeddings
        self.bos_token = self.tokenizer.bos_token

    @staticmethod
    def _trim_to_multiple_of_6(seq):
        n = (len(seq) // 6) * 6
        return seq[:n]

    def _preprocess_batch(self, batch):
        processed = []
        for s in batch:
            s2 = self._trim_to_multiple_of_6(s)
            processed.append(self.bos_token + s2 if s2 else self.bos_token)
        return processed

    def extract_embeddings(self, seqs, batch_size):
        all_embs = []
        with torch.no_grad():
            for i in range(0, len(seqs), batch_size):
                processed = self._preprocess_batch(seqs[i:i + batch_size])
                enc = self.tokenizer(processed, add_special_tokens=True, return_tensors="pt",
                                     padding=True, max_length=self.max_length, truncation=True)
                out = self.model(**enc, return_dict=True, output_hidden_states=True)
                last_hidden = out.hidden_states[-1]
                mask = enc["attention_mask"].unsqueeze(-1).to(last_hidden.dtype)
                summed = (last_hidden * mask).sum(dim=1)
                counts = mask.sum(dim=1).clamp(min=1)
                all_embs.append((summed / counts).to(torch.float32).numpy())
        return [row.tolist() for batch in all_embs for row in batch]


def model_fixture(tokenizer_py, work):
    build = work / "model"
    build.mkdir()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=4128, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         rms_norm_eps=1e-5, rope_theta=500000.0, bos_token_id=1, eos_token_id=2,
                         pad_token_id=3, tie_word_embeddings=True)
    model = LlamaForCausalLM(config).eval()
    module("make_llama_fixtures").perturb(model, 16)
    model.save_pretrained(build, safe_serialization=True)
    saved = json.loads((build / "config.json").read_text())
    saved["_name_or_path"] = "GenerTeam/GENERator-eukaryote-1.2b-base"
    (build / "config.json").write_text(json.dumps(saved, indent=2) + "\n")
    tokenizer = load_tokenizer(build, tokenizer_py, model_max_length=HUGE)
    texts = sequences()
    pooled = GeneratorExtractor(build, tokenizer).extract_embeddings(texts, BATCH)
    long = tokenizer("<s>" + texts[11][:498])["input_ids"]
    assert len(long) > 64, "nothing is cut at the 64 positions"
    folder = OUT / "models/generator"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ["config.json", "model.safetensors", "tokenizer_config.json"]:
        shutil.copy(build / name, folder / name)
    (folder / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}))


def main():
    tokenizer_py = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as work:
        tokenizer_fixture(tokenizer_py, Path(work))
        model_fixture(tokenizer_py, Path(work))


if __name__ == "__main__":
    main()
