"""Llama and Mistral oracles: tiny random checkpoints of transformers' own LlamaForCausalLM and
MistralForCausalLM, embedded with the recipe lines of GENEB's extractors
(`embedding_pipeline/extractors/*.py` of darlednik/GENEB at e3d5f45).

- llama/: grouped-query attention (4 query heads, 2 key/value heads), rope_theta 500,000 with
  Llama 3 rope_scaling (short original context, so every branch of the scaling is taken), biases
  off, weights off their inits. Its tokenizer.json is a small DNA BPE with `<s>` prepended by a
  TemplateProcessing, `padding_side` right. Embedded as omnina.py embeds (`padding=True,
  truncation=True`, the mask passed, `hidden_states[-1]` pooled over the mask) in batches of 4;
  with no hub id, geneb applies the common recipe, which is that one.
- metagene/: llama/'s decoder under METAGENE-1's hub id, so geneb applies metagene.py's recipe:
  `last_hidden.mean(dim=1)` over every position of the padded batch of 4, the mask passed.
- llama_sharded_bf16/: llama/'s decoder saved in bf16 over several shards with
  model.safetensors.index.json, as GENERator's and METAGENE-1's checkpoints are stored; embedded
  from its bf16 weights upcast to f32.
- mistral/: the same shape with `sliding_window` 5, so that the window cuts inside the tiny
  inputs; `_name_or_path` names DOEJGI/GenomeOcean-500M, so geneb applies genomeocean.py's recipe:
  left padding, `max_length=1024` (DICT_CONFIG_MODELS' 500M entry), the mask passed and pooled.

Each folder: config.json, model.safetensors (the ForCausalLM checkpoint, lm_head included),
tokenizer.json, tokenizer_config.json, special_tokens_map.json, pipeline.json (sequences, pooled)
and expected.json (ids, mask, the first sequence's final states and every masked mean, for the
forward-pass test). Run: /work/pyenv/bin/python tests/oracle/make_llama_fixtures.py
"""

import importlib.util
import json
import random
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, processors, trainers
from transformers import (AutoModel, AutoTokenizer, LlamaConfig, LlamaForCausalLM, MistralConfig,
                          MistralForCausalLM, PreTrainedTokenizerFast)

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/models"
BATCH = 4  # main.py's default --batch_size


def sequences():
    """make_deepgene_fixtures.py's: short to past the tiny position table, runs of N."""
    spec = importlib.util.spec_from_file_location(
        "make_deepgene_fixtures", Path(__file__).parent / "make_deepgene_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sequences()


def dna_bpe(folder, max_length, padding_side):
    """A DNA BPE tokenizer.json (trained here on random DNA, 96 tokens) with `<s>` before every
    sequence, saved as transformers saves a fast tokenizer."""
    rng = random.Random(7)
    corpus = ["".join(rng.choice("ACGT") for _ in range(300)) for _ in range(200)] + ["N" * 40]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    trainer = trainers.BpeTrainer(vocab_size=96, special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
                                  show_progress=False)
    bpe.train_from_iterator(corpus, trainer)
    bpe.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        pad_token="<pad>", model_max_length=max_length, padding_side=padding_side)
    tokenizer.save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def perturb(model, hidden):
    """Off the inits: no unit RMSNorms, and peaked attention so a wrong rotation shows."""
    torch.manual_seed(3)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.2)
            if name.endswith(("q_proj.weight", "k_proj.weight")):
                p.normal_(0, 2.0 / hidden ** 0.5)


def shape(vocab, positions):
    return dict(vocab_size=vocab, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=positions,
                rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, pad_token_id=3,
                tie_word_embeddings=False)


def embed(folder, tokenizer, texts, max_length=None, over_padding=False):
    """The extractor's lines: tokenizer(batch, padding=True, truncation=True[, max_length]),
    model(**enc, output_hidden_states=True), hidden_states[-1] pooled over the mask (or, as
    metagene.py pools, `.mean(dim=1)` over every position)."""
    model = AutoModel.from_pretrained(folder, torch_dtype=torch.float32).eval()
    pooled, first = [], None
    for i in range(0, len(texts), BATCH):
        kwargs = {"max_length": max_length} if max_length else {}
        enc = tokenizer(texts[i:i + BATCH], padding=True, truncation=True, return_tensors="pt",
                        **kwargs)
        with torch.no_grad():
            hidden = model(**enc, output_hidden_states=True).hidden_states[-1]
        mask = enc["attention_mask"].unsqueeze(-1).float()
        if over_padding:
            mask = torch.ones_like(mask)
        pooled += ((hidden * mask).sum(1) / mask.sum(1).clamp(min=1)).tolist()
        if first is None:
            first = (enc, hidden)
    return pooled, first


def write(folder, model, config_extra, tokenizer, texts, max_length=None, over_padding=False):
    model.config.update(config_extra)
    model.save_pretrained(folder, safe_serialization=True)
    config = json.loads((folder / "config.json").read_text())
    config.update(config_extra)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    pooled, (enc, hidden) = embed(folder, tokenizer, texts, max_length, over_padding)
    write_outputs(folder, texts, pooled, enc, hidden)


def write_outputs(folder, texts, pooled, enc, hidden):
    """pipeline.json (every sequence's embedding) and expected.json (the first batch's ids, mask
    and embeddings, and its first sequence's final states)."""
    (folder / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}))
    expected = {
        "input_ids": enc["input_ids"].tolist(),
        "attention_mask": enc["attention_mask"].tolist(),
        "pooled": pooled[:BATCH],
        "last_hidden_state_first": hidden[0].tolist(),
    }
    (folder / "expected.json").write_text(json.dumps(expected))


def main():
    texts = sequences()
    positions = 64

    folder = OUT / "llama"
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = dna_bpe(folder, positions, "right")
    torch.manual_seed(0)
    config = LlamaConfig(**shape(len(tokenizer), positions), rope_theta=500000.0,
                         rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 16})
    model = LlamaForCausalLM(config).eval()
    perturb(model, 32)
    write(folder, model, {}, tokenizer, texts)

    # METAGENE-1's recipe on the same decoder: metagene.py's mean over every position of its
    # batches of 4, padding included.
    folder = OUT / "metagene"
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = dna_bpe(folder, positions, "right")
    write(folder, model, {"_name_or_path": "metagene-ai/METAGENE-1"}, tokenizer, texts,
          over_padding=True)
    model.config._name_or_path = ""

    # The same decoder stored as the real checkpoints are: bf16, in shards with an index.
    folder = OUT / "llama_sharded_bf16"
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = dna_bpe(folder, positions, "right")
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True, max_shard_size="40KB")
    assert (folder / "model.safetensors.index.json").exists(), "not sharded"
    pooled, _ = embed(folder, tokenizer, texts)  # the bf16 weights upcast, run in f32
    (folder / "pipeline.json").write_text(json.dumps({"sequences": texts, "pooled": pooled}))

    folder = OUT / "mistral"
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = dna_bpe(folder, 100_000, "left")
    torch.manual_seed(1)
    config = MistralConfig(**shape(len(tokenizer), positions), rope_theta=10000.0,
                           sliding_window=5)
    model = MistralForCausalLM(config).eval()
    perturb(model, 32)
    # genomeocean.py truncates at DICT_CONFIG_MODELS' 1,024 tokens, past this tiny model's 64
    # positions: the sequences here stay within them.
    short = [s for s in texts if len(tokenizer(s)["input_ids"]) <= positions]
    write(folder, model, {"_name_or_path": "DOEJGI/GenomeOcean-500M"}, tokenizer, short, 1024)


if __name__ == "__main__":
    main()
