"""Per-layer oracle: every hidden state of the committed fixture checkpoints, pooled as the
fixture's pipeline.json pools the last one, for `hf:MODEL?layer=K` (issue 39).

For each fixture below, the reference code that made its pipeline.json (the oracle script named
beside it, or transformers) runs again on the committed weights and tokenizer files, on the
first sequences of pipeline.json, in the same batches, and every hidden state is pooled the way
the extractor pools `hidden_states[-1]`. transformers' `output_hidden_states` order: 0 the
embeddings' output, then each layer's, the last after the final norm; for models whose code has
none, the blocks as src/encoder/arch/<file>.rs documents them (hooks on the reference's own
modules). The last state is checked against pipeline.json first, so the oracle is the pipeline
that was already trusted. Writes layers.json beside pipeline.json:
{"sequences": n, "pooled": {"K": [[...] per sequence]}} for every K from 0 to L.

Run: python3 tests/oracle/make_layer_fixtures.py   (after scripts/fetch-real-models.sh for
HyenaDNA; CADUCEUS_SRC for Caduceus, as make_caduceus_fixtures.py says; the `lucaone` package for
LucaOne, as make_lucaone_fixtures.py says)
"""

import importlib.util
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parents[0] / "fixtures/models"
SEQUENCES = 8  # two of the extractors' batches of four


def oracle(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def masked_mean(hidden, mask):
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1)


def write(folder, pooled_by_layer):
    """pooled_by_layer: one [sequences, width] tensor per hidden state, 0..L."""
    expected = json.loads((folder / "pipeline.json").read_text())["pooled"]
    last = pooled_by_layer[-1]
    worst = (last - torch.tensor(expected[: len(last)], dtype=last.dtype)).abs().max().item()
    assert worst < 1e-5, f"{folder}: the last state is {worst} off pipeline.json"
    out = {"sequences": len(last),
           "pooled": {str(k): p.float().tolist() for k, p in enumerate(pooled_by_layer)}}
    (folder / "layers.json").write_text(json.dumps(out) + "\n")
    print(f"{folder}: {len(pooled_by_layer)} hidden states, last within {worst:.1e} of pipeline.json")


def stack(batches):
    """[[state per layer] per batch] -> [state over all sequences, per layer]."""
    return [torch.cat(per_layer) for per_layer in zip(*batches)]


def bert():
    from transformers import BertModel, BertTokenizer

    folder = FIXTURES / "bert"
    model = BertModel.from_pretrained(folder).eval()
    tokenizer = BertTokenizer.from_pretrained(folder)
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    batches = []
    for seq in seqs:  # one at a time, " "-joined, as make_transformer_fixtures.write_pipeline
        enc = tokenizer(" ".join(seq.upper()), truncation=True, max_length=tokenizer.model_max_length,
                        return_tensors="pt")
        with torch.no_grad():
            states = model(**enc, output_hidden_states=True).hidden_states
        batches.append([masked_mean(h, enc["attention_mask"]) for h in states])
    write(folder, stack(batches))


def decoder(name, max_length=None):
    """make_llama_fixtures.embed's lines (batches of four, the mask passed, masked mean)."""
    from transformers import AutoModel, AutoTokenizer

    folder = FIXTURES / name
    model = AutoModel.from_pretrained(folder, torch_dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    batches = []
    for i in range(0, len(seqs), 4):
        kwargs = {"max_length": max_length} if max_length else {}
        enc = tokenizer(seqs[i:i + 4], padding=True, truncation=True, return_tensors="pt", **kwargs)
        with torch.no_grad():
            states = model(**enc, output_hidden_states=True).hidden_states
        batches.append([masked_mean(h, enc["attention_mask"]) for h in states])
    write(folder, stack(batches))


def nt_v2():
    from transformers import AutoTokenizer

    ref = oracle("make_transformer_fixtures")
    folder = FIXTURES / "nt_v2"
    model, _ = ref.nt_v2_model(vocab_size=75, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=48,
                               max_position_embeddings=90)
    state = load_file(str(folder / "model.safetensors"))
    state = {k: v for k, v in state.items() if not k.endswith("inv_freq")}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all(k.startswith("lm_head.decoder") or k.endswith("inv_freq")
                                  for k in missing), (missing, unexpected)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    batches = []
    for seq in seqs:
        enc = tokenizer(seq.upper(), truncation=True, max_length=tokenizer.model_max_length,
                        return_tensors="pt")
        with torch.no_grad():
            states = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                           output_hidden_states=True).hidden_states
        batches.append([masked_mean(h, enc["attention_mask"]) for h in states])
    write(folder, stack(batches))


def hyena():
    """make_batched_pipelines.hyenadna's lines: batches of four, no mask, the plain mean."""
    batched = oracle("make_batched_pipelines")
    ref = oracle("make_hyena_fixtures")
    modeling, configuration, tokenization = ref.hyena_code()
    folder = FIXTURES / "hyena/tiny"
    config = configuration.HyenaConfig.from_pretrained(folder)
    config.pad_token_id = 4
    model = modeling.HyenaDNAForSequenceClassification(config).eval()
    state = {f"hyena.{k}": v for k, v in load_file(str(folder / "model.safetensors")).items()}
    model.load_state_dict(state, strict=False)
    tok_config = json.loads((folder / "tokenizer_config.json").read_text())
    tokenizer = tokenization.HyenaDNATokenizer(
        model_max_length=tok_config["model_max_length"], padding_side=tok_config["padding_side"])
    model = model.double()
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    batches = []
    with torch.no_grad():
        for batch in batched.batches(seqs):
            inputs = tokenizer(batch, padding=True, truncation=True, max_length=160_000,
                               return_tensors="pt")
            states = model(input_ids=inputs["input_ids"], output_hidden_states=True).hidden_states
            batches.append([h.mean(dim=1) for h in states])
    write(folder, stack(batches))


def enformer():
    """make_enformer_fixtures.embed's lines (batch size 1, float64), the trunk's blocks kept by
    hooks on enformer-pytorch's own modules, each pooled by the mean over its bins; the last
    two the trunk's output (`return_embeddings`) and the human head's."""
    from enformer_pytorch import from_pretrained

    ref = oracle("make_enformer_fixtures")
    folder = FIXTURES / "enformer"
    model = from_pretrained(str(folder), use_tf_gamma=False).double().eval()
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:2]
    outputs = []
    transformer = set(model.transformer)

    def keep(module, _inputs, output):
        # The stem and the tower run channels first, the transformer bins first.
        outputs.append(output if module in transformer else output.transpose(1, 2))

    hooks = [m.register_forward_hook(keep) for m in [model.stem, *model.conv_tower, *model.transformer]]
    per_sequence = []
    with torch.no_grad():
        for seq in seqs:
            outputs.clear()
            tensor = ref.one_hot_seq(seq, ref.SEQ_LENGTH)[None].double()
            heads, trunk = model(tensor, return_embeddings=True)
            states = [*outputs, trunk, heads["human"]]
            per_sequence.append([s.mean(dim=1) for s in states])
    for h in hooks:
        h.remove()
    write(folder, stack(per_sequence))


def lucaone():
    """make_lucaone_fixtures.extract's lines (batches of four, the mask passed, masked mean,
    float64), once per hidden state of the package's own `output_hidden_states`."""
    from types import SimpleNamespace

    from lucaone import LucaGPLMTokenizer
    from transformers import AutoModel

    ref = oracle("make_lucaone_fixtures")
    folder = FIXTURES / "lucaone"
    tokenizer = LucaGPLMTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder), task_level="token_level",
                                      task_type="embedding").double().eval()
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]

    def at(k):
        return lambda **kw: SimpleNamespace(
            last_hidden_state=model(**kw, output_hidden_states=True).hidden_states[k])

    pooled = [torch.from_numpy(ref.extract(tokenizer, at(k), seqs, model.config.max_position_embeddings)[0])
              for k in range(model.config.num_hidden_layers + 1)]
    write(folder, pooled)


if __name__ == "__main__":
    only = set(sys.argv[1:])
    for name, make in [("bert", bert), ("llama", lambda: decoder("llama")),
                       ("mistral", lambda: decoder("mistral", 1024)), ("nt_v2", nt_v2),
                       ("gpt2", lambda: decoder("gpt2")), ("lucaone", lucaone),
                       ("hyena", hyena), ("enformer", enformer)]:
        if not only or name in only:
            make()
