"""SpliceBERT oracle: GENEB's own SpliceBERT extractor run on a tiny random SpliceBERT.

The extractor is `harness/extractors/splicebert.py` of darlednik/GENEB (made at commit
e14bb82), imported unchanged from a checkout named by $GENEB_SRC (default target/geneb-src;
nothing of it is committed here). Its `extract_embeddings` runs as it is: `_normalize_sequence`
(upper case, U -> T, IUPAC ambiguity codes -> N, anything else an error), `_window_starts`
(1,024 nt every 512 plus a final end-anchored window), `_encode_batch` ([CLS] ... [SEP] per
window, its own token ids), the masked mean over every non-padding token (specials included),
and the plain mean of a sequence's windows. Its constructor is not run: it loads the real
checkpoint and refuses any other width (hidden 512); the tiny model here is given to the
instance directly, as the constructor gives `container.bert`, and the module's `HIDDEN_SIZE`
set to its width. Its package's `base.BaseEmbeddingExtractor` (an interface with no behaviour)
is stubbed.

Writes tests/fixtures/models/splicebert/: transformers' BertForMaskedLM with SpliceBERT's
vocabulary and 1,026 positions (hidden 8), config.json naming the hub copy
(`_name_or_path`: Taykhoom/SpliceBERT-1024nt, which geneb's known-models table ties to this
recipe), its vocab.txt, and pipeline.json: sequences of 300, 1,024, 1,500 and 2,600 nt (lower
case, RNA, IUPAC codes among them) and the extractor's output for them.

Needs: pip install torch transformers safetensors
Run: python3 tests/oracle/make_splicebert_fixtures.py
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
from make_caduceus_fixtures import smoke_sequences  # noqa: E402
from make_transformer_fixtures import bert_model, bert_state  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/splicebert"
SOURCE = Path(os.environ.get("GENEB_SRC", ROOT / "target/geneb-src"))
TOKENIZER = ROOT / "tests/fixtures/tokenizers/splicebert"


def import_extractor():
    if not (SOURCE / "harness/extractors/splicebert.py").exists():
        sys.exit(f"{SOURCE}: no harness/extractors/splicebert.py; set GENEB_SRC to a checkout")
    base = types.ModuleType("harness.extractors.base")
    base.BaseEmbeddingExtractor = type("BaseEmbeddingExtractor", (), {})
    sys.modules["harness.extractors.base"] = base
    sys.path.insert(0, str(SOURCE))
    import harness.extractors.splicebert as splicebert
    return splicebert


def sequences():
    """Real bases from the smoke suite: 300 nt lower case, 1,024 nt as RNA, 1,500 nt with IUPAC
    codes, 2,600 nt mixed case, and a short RNA with ambiguity codes."""
    bases = "".join(smoke_sequences())
    iupac = list(bases[2000:3500])
    for i, code in zip(range(7, 1500, 97), "RYSWKMBDHVNryswkmbdhv"):
        iupac[i] = code
    mixed = bases[4000:6600]
    return [
        bases[:300].lower(),
        bases[300:1324].replace("T", "U"),
        "".join(iupac),
        mixed[:1300].lower() + mixed[1300:],
        "acguRYNnu",
    ]


def main():
    splicebert = import_extractor()
    model, config = bert_model(hidden=8, layers=2, heads=2, inter=16, positions=1026, seed=21)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    cfg = config.to_dict()
    cfg["architectures"] = ["BertForMaskedLM"]
    cfg["_name_or_path"] = "Taykhoom/SpliceBERT-1024nt"
    (OUT / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    save_file({k: v.detach().clone().contiguous() for k, v in bert_state(model).items()},
              str(OUT / "model.safetensors"), metadata={"format": "pt"})
    shutil.copy(TOKENIZER / "vocab.txt", OUT / "vocab.txt")
    (OUT / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": False, "model_max_length": 1026}) + "\n")

    extractor = splicebert.SpliceBERTExtractor.__new__(splicebert.SpliceBERTExtractor)
    extractor.device = torch.device("cpu")
    extractor.model = model.bert.eval()
    splicebert.HIDDEN_SIZE = config.hidden_size
    seqs = sequences()
    pooled = extractor.extract_embeddings(seqs)
    windows = [len(splicebert._window_starts(len(s))) for s in seqs]
    (OUT / "pipeline.json").write_text(json.dumps(
        {"sequences": seqs, "windows": windows, "pooled": pooled.tolist()}) + "\n")
    try:
        extractor.extract_embeddings(["ACGTX"])
        raise SystemExit("the extractor took an X")
    except ValueError as e:
        print(f"refused as the reference refuses it: {e}")
    size = sum(f.stat().st_size for f in OUT.iterdir())
    print(f"{OUT}: {size / 1024:.0f} KiB, lengths {[len(s) for s in seqs]}, windows {windows}")


if __name__ == "__main__":
    main()
