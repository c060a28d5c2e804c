"""GPT-2 oracle: a tiny random checkpoint of transformers' own GPT2LMHeadModel (as dnagpt's
gpt2_gene_v1 and gpt2_gene_multi_v2_ft are published), embedded with the common recipe of GENEB's
extractor files (darlednik/GENEB has no gpt2 extractor file; see recipe.rs's GPT2).

- gpt2/: n_embd 32, 4 heads, 2 layers, 64 learned positions, n_inner unset (4 · n_embd),
  `gelu_new`; every bias and LayerNorm moved off its init and the queries and keys scaled up so
  that a missed bias, a wrong transpose of a Conv1D weight or a wrong split of the fused c_attn
  shows. Its tokenizer.json is a byte-level BPE as GPT2TokenizerFast saves one (ByteLevel
  pre-tokenizer and post-processor), <|endoftext|> its eos and pad, padding on the right,
  model_max_length 64, so the longer sequences are cut. Embedded as the extractors' common lines
  do: `tokenizer(batch, padding=True, truncation=True)`, the mask passed, `hidden_states[-1]`
  (ln_f's output) pooled over the mask, in batches of 4.

Writes config.json, model.safetensors (lm_head tied, so not stored), the tokenizer files,
pipeline.json and expected.json. Run: /work/pyenv/bin/python tests/oracle/make_gpt2_fixtures.py
"""

import random
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoModel, AutoTokenizer, GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

import make_llama_fixtures as llama  # this folder's: the sequences and the outputs' layout

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models/gpt2"
BATCH = 4  # main.py's default --batch_size
POSITIONS = 64


def byte_level_bpe(folder):
    rng = random.Random(11)
    corpus = ["".join(rng.choice("ACGT") for _ in range(300)) for _ in range(200)] + ["N" * 40]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=80, special_tokens=["<|endoftext|>"],
                                  show_progress=False)
    bpe.train_from_iterator(corpus, trainer)
    GPT2TokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                      unk_token="<|endoftext|>", pad_token="<|endoftext|>",
                      model_max_length=POSITIONS).save_pretrained(folder)
    for slow in ["vocab.json", "merges.txt"]:  # the gpt2_gene repositories ship tokenizer.json
        (folder / slow).unlink()
    return AutoTokenizer.from_pretrained(folder)


def main():
    texts = llama.sequences()
    OUT.mkdir(parents=True, exist_ok=True)
    tokenizer = byte_level_bpe(OUT)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=POSITIONS, n_embd=32, n_layer=2,
                        n_head=4, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "ln_" in name:
                p.add_(torch.randn_like(p) * 0.2)
            if name.endswith("c_attn.weight"):
                p.normal_(0, 2.0 / 32 ** 0.5)
    model.save_pretrained(OUT, safe_serialization=True)
    model = AutoModel.from_pretrained(OUT, torch_dtype=torch.float32).eval()
    pooled, first = [], None
    for i in range(0, len(texts), BATCH):
        enc = tokenizer(texts[i:i + BATCH], padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**enc, output_hidden_states=True).hidden_states[-1]
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled += ((hidden * mask).sum(1) / mask.sum(1).clamp(min=1)).tolist()
        if first is None:
            first = (enc, hidden)
    assert any(len(tokenizer(t)["input_ids"]) > POSITIONS for t in texts), "nothing is cut"
    llama.write_outputs(OUT, texts, pooled, *first)


if __name__ == "__main__":
    main()
