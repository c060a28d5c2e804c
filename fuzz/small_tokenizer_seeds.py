"""Small copies of the large tokenizer fixtures, as tokenizer seeds (fuzz/seed-corpus.sh).

The real files are 16-29 kB, and every execution of the tokenizer target parses them whole:
under the fuzzer's instrumentation that is ~8 ms of CPU each. Copies with a few dozen
vocabulary entries and merges keep every component (model type, normalizer, pre-tokenizer,
post-processor, special tokens) and run with -max_len=4096 (fuzz/README.md)."""

import json
import sys
from pathlib import Path

PART = b"\x1e"
NAMES = ["config.json", "tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"]
LIMIT = 4096


def small_tokenizer_json(text):
    tokenizer = json.loads(text)
    model = tokenizer["model"]
    vocab = model["vocab"]
    special = {added["content"] for added in tokenizer.get("added_tokens", [])}
    # The special tokens, the single characters, and the first entries (a WordPiece's k-mers).
    first = sorted(vocab, key=vocab.get)[:32]
    kept = {t for t in vocab if t in special or len(t) == 1 or t.startswith("[")} | set(first)
    merges = []
    for merge in model.get("merges", []):
        a, b = merge.split(" ") if isinstance(merge, str) else merge
        if a in kept and b in kept and a + b in vocab and len(merges) < 24:
            merges.append(merge)
            kept.add(a + b)
    if model["type"] == "BPE":
        model["merges"] = merges
    model["vocab"] = {t: i for t, i in vocab.items() if t in kept}
    return json.dumps(tokenizer, separators=(",", ":")).encode()


def small_vocab_txt(text):
    lines = text.decode().splitlines()
    return ("\n".join(lines[:40] + lines[-8:]) + "\n").encode()


def main(fixtures, corpus):
    for folder in sorted(Path(fixtures).iterdir()):
        if not folder.is_dir():
            continue
        files = [(folder / name).read_bytes() if (folder / name).exists() else b"" for name in NAMES]
        if sum(map(len, files)) <= LIMIT:
            continue
        if files[1]:
            files[1] = small_tokenizer_json(files[1])
        if files[2]:
            files[2] = small_vocab_txt(files[2])
        seed = PART.join(files)
        assert len(seed) <= LIMIT, (folder.name, len(seed))
        (Path(corpus) / f"{folder.name}-small").write_bytes(seed)


if __name__ == "__main__":
    main(*sys.argv[1:])
