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

Run: python3 tests/oracle/make_layer_fixtures.py [NAME ...]   (every fixture, or those named:
"bert", "caduceus/ph", "evo", …). Each reference comes from where its oracle script says, never
committed: scripts/fetch-real-models.sh for HyenaDNA; the `lucaone` package for LucaOne; the
`ai2-olmo` package for OLMo; CADUCEUS_SRC, DEEPGENE_SRC, DNAGPT_SRC and JANUS_SRC (checkouts);
MAMBA_SSM_SRC and GENAI_LAB_SRC for eccDNAMamba; EVO_CODE, make_evo_fixtures.py's --code folder;
SPACE_CODE, make_space_fixtures.py's --code folder (its docstring says how it is assembled).
"""

import importlib.util
import json
import os
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


def decoder(name, max_length=None, model=None):
    """make_llama_fixtures.embed's lines (batches of four, the mask passed, masked mean), on
    `model` or else transformers' own."""
    from transformers import AutoModel, AutoTokenizer

    folder = FIXTURES / name
    model = model or AutoModel.from_pretrained(folder, torch_dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    batches = []
    for i in range(0, len(seqs), 4):
        kwargs = {"max_length": max_length} if max_length else {}
        enc = tokenizer(seqs[i:i + 4], padding=True, truncation=True, return_tensors="pt", **kwargs)
        with torch.no_grad():
            states = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                           output_hidden_states=True).hidden_states
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


def dnabert2():
    """make_transformer_fixtures' MosaicBERT module (ALiBi, the gated MLP) on the committed
    weights, one sequence at a time as its write_pipeline: the embeddings' output (after their
    LayerNorm), then each layer's, from hooks on the module."""
    import transformers

    ref = oracle("make_transformer_fixtures")
    folder = FIXTURES / "dnabert2"
    config = json.loads((folder / "config.json").read_text())
    bert = ref.dnabert2_encoder(h=config["hidden_size"], heads=config["num_attention_heads"],
                                inter=config["intermediate_size"], vocab=config["vocab_size"],
                                layers=config["num_hidden_layers"])
    state = load_file(str(folder / "model.safetensors"))
    bert.load_state_dict({k[len("bert."):]: v for k, v in state.items() if k.startswith("bert.")})
    bert.eval()
    forward = ref.dnabert2_forward(bert)
    tokenizer_class = json.loads((folder / "tokenizer_config.json").read_text())["tokenizer_class"]
    tokenizer = getattr(transformers, tokenizer_class).from_pretrained(str(folder))
    states = []
    hooks = [m.register_forward_hook(lambda _m, _i, out: states.append(out))
             for m in [bert.embeddings.LayerNorm, *bert.encoder.layer]]
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    batches = []
    for seq in seqs:
        enc = tokenizer(seq.upper(), truncation=True, max_length=tokenizer.model_max_length,
                        return_tensors="pt")
        states.clear()
        with torch.no_grad():
            forward(enc["input_ids"], enc["attention_mask"])
        batches.append([masked_mean(h, enc["attention_mask"]) for h in states])
    for h in hooks:
        h.remove()
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
    # One sequence: each pass of it is 196,608 bp (tests/hf_models.rs runs four).
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:1]
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


def olmo():
    """make_olmo_fixtures.py's lines (omnidna.py's: batches of four, `max_length=250`, the mask
    passed, masked mean), which are `decoder`'s, on OLMo's own `output_hidden_states`."""
    ref = oracle("make_olmo_fixtures")
    folder = FIXTURES / "olmo"
    saved = json.loads((folder / "config.json").read_text())
    # model_type names Omni-DNA's remote code; OLMoConfig takes every other key.
    config = ref.OLMoConfig(**{k: v for k, v in saved.items() if k != "model_type"})
    assert ref.BATCH == 4
    decoder("olmo", ref.MAX_LENGTH, ref.OLMoForCausalLM.from_pretrained(folder, config=config).eval())


def deepgene():
    """make_deepgene_fixtures.embed's lines (one batch of every sequence, [CLS] [SEP] first, the
    positions and mask passed, masked mean) on the DeepGene code's `output_hidden_states`
    (its RoFormer is transformers', adapted: the embeddings' output, then each layer's)."""
    import tokenizers

    ref = oracle("make_deepgene_fixtures")
    RoFormerConfig, RoFormerForMaskedLM = ref.deepgene_code()
    folder = FIXTURES / "deepgene"
    config = RoFormerConfig.from_json_file(folder / "config.json")
    model = RoFormerForMaskedLM(config).eval()
    # The head's decoder is tied to the word embeddings here but was saved apart (different
    # values): loaded, it would overwrite them. The hidden states never read it.
    state = {k: v for k, v in load_file(str(folder / "model.safetensors")).items()
             if k != "cls.predictions.decoder.weight"}
    missing, unexpected = model.load_state_dict(state, strict=False)
    # The sinusoidal table is built by the code, not saved (make_deepgene_fixtures.save).
    assert not unexpected and set(missing) == {"roformer.encoder.embed_positions.weight",
                                               "cls.predictions.decoder.weight"}, (missing, unexpected)
    tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    input_ids, mask, positions = ref.encode(tokenizer, seqs, config.max_position_embeddings)
    with torch.no_grad():
        states = model.roformer(input_ids=input_ids, pos_ids=positions, attention_mask=mask,
                                output_hidden_states=True, return_dict=True).hidden_states
    write(folder, [masked_mean(h, mask) for h in states])


def caduceus(variant):
    """make_batched_pipelines.caduceus's lines (CaduceusTokenizer, batches of four padded on the
    left, `input_ids` alone, float64, the mean over the attention mask) on Caduceus's own
    `output_hidden_states`: the embeddings, what each layer passes on, the final norm's output."""
    ref = oracle("make_caduceus_fixtures")
    ref.install_mamba_stand_in()
    sys.path.insert(0, str(ref.SOURCE))
    from caduceus.configuration_caduceus import CaduceusConfig
    from caduceus.modeling_caduceus import CaduceusForMaskedLM
    from caduceus.tokenization_caduceus import CaduceusTokenizer

    folder = FIXTURES / "caduceus" / variant
    config = CaduceusConfig.from_json_file(folder / "config.json")
    model = CaduceusForMaskedLM(config).eval()
    # The LM head is tied to the word embeddings here but was saved apart (different values):
    # loaded, it would overwrite them. The hidden states never read it.
    state = {k: v for k, v in load_file(str(folder / "model.safetensors")).items()
             if not k.startswith("lm_head.")}
    missing, unexpected = model.load_state_dict(state, strict=False)
    # The PS checkpoint leaves out the tied copies (make_caduceus_fixtures.main's `drop`);
    # loading their originals sets them.
    assert not unexpected and all(".mamba_rev." in k or k.startswith("lm_head.") for k in missing), missing
    model = model.double()
    tok_config = json.loads((folder / "tokenizer_config.json").read_text())
    tokenizer = CaduceusTokenizer(model_max_length=tok_config["model_max_length"])
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    batches = []
    with torch.no_grad():
        for i in range(0, len(seqs), 4):
            enc = tokenizer(seqs[i:i + 4], padding=True, truncation=True, return_attention_mask=True,
                            return_tensors="pt")
            states = model(input_ids=enc["input_ids"], output_hidden_states=True).hidden_states
            batches.append([masked_mean(h, enc["attention_mask"]) for h in states])
    write(folder, stack(batches))


def dnagpt(name):
    """make_dnagpt_fixtures.py's lines: DNAGPT's code has no `output_hidden_states`, so its
    blocks as src/encoder/arch/dnagpt.rs defines them, from the model's own modules: the
    embeddings, each block's output, the last after `ln_f`, and where the extractor pools the
    masked-LM head's logits (dnagpt/) one more, the logits (the head's last layer commutes with
    the mean). dnagpt/: each sequence alone, unmasked mean; dnagpt_hidden/: `<R>` first, batches
    of four padded with `<P>`, mean over the non-pad ids."""
    from torch.nn.utils.rnn import pad_sequence

    ref = oracle("make_dnagpt_fixtures")
    DNAGPT, KmerTokenizer = ref.dnagpt_code()
    folder = FIXTURES / name
    config = json.loads((folder / "config.json").read_text())
    model = DNAGPT(vocab_size=config["vocab_size"], max_len=config["max_len"], num_layers=config["num_layers"],
                   num_heads=config["num_heads"], embedding_dim=config["embedding_dim"], bias=config["bias"]).eval()
    model.load_state_dict(torch.load(folder / "dna_gpt_tiny.pth", weights_only=True)["model"])
    tokenizer = KmerTokenizer(config["kmer"], ref.SPECIAL, dynamic_kmer=config["dynamic_kmer"])
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    head = config.get("output") != "hidden"

    def blocks(input_ids):
        x = model._embedding_impl(input_ids)
        states = [x]
        for block in model.transformer.h:
            x = block(x)
            states.append(x)
        states[-1] = model.transformer.ln_f(x)
        if head:
            states.append(model.mlm_head(states[-1]))
        return states

    batches = []
    with torch.no_grad():
        if head:
            for text in seqs:
                input_ids = tokenizer.encode(text, max_len=model.max_len)[None]
                batches.append([h.mean(dim=1) for h in blocks(input_ids)])
        else:
            for i in range(0, len(seqs), 4):
                toks = [tokenizer.encode(f"<R>{s}", max_len=model.max_len) for s in seqs[i:i + 4]]
                input_ids = pad_sequence(toks, batch_first=True, padding_value=tokenizer.pad_id)
                mask = (input_ids != tokenizer.pad_id).long()
                batches.append([masked_mean(h, mask) for h in blocks(input_ids)])
    write(folder, stack(batches))


def janus(variant, sequences=2):
    """make_janus_fixtures.run's lines (the extractor's: padded to 1,024 on the right, no special
    tokens, the mask passed, float64, masked mean; one batch, of two: each row is 2 × 1,024
    positions whatever its length). JanusDNA's code keeps no hidden states, so its blocks as
    src/encoder/arch/janus.rs defines them, from hooks on the model's own modules: the embeddings' output and each decoder layer's (both streams, the
    reverse one in reverse order), each fused by the model's own `final_fusion` as its last
    states are (the streams side by side, the reverse one flipped back), then the model's output."""
    ref = oracle("make_janus_fixtures")
    modeling, JanusDNAConfig, CaduceusTokenizer = ref.import_published_code()
    folder = FIXTURES / "janus" / variant
    model, _ = ref.extractor_model(modeling, JanusDNAConfig, folder)
    tokenizer = CaduceusTokenizer(model_max_length=ref.MAX_LENGTH, padding_side="right")
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:sequences]
    streams = []
    hooks = [model.embed_tokens.register_forward_hook(
        lambda _m, _i, out: streams.append(torch.cat([out, out.flip(dims=(1,))], dim=1)))]
    hooks += [layer.register_forward_hook(lambda _m, _i, out: streams.append(out[0])) for layer in model.layers]

    def fused(both):
        half = both.shape[1] // 2
        return model.final_fusion(torch.cat([both[:, :half], both[:, half:].flip(dims=[1])], dim=1))

    enc = ref.encode(tokenizer, seqs)
    with torch.no_grad():
        last = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                     return_dict=True).last_hidden_state
        states = [fused(both) for both in streams] + [last]
    for h in hooks:
        h.remove()
    write(folder, [masked_mean(h, enc["attention_mask"]) for h in states])


def eccdnamamba():
    """make_eccdnamamba_fixtures.extract's lines (batches of four, the mask passed, masked mean).
    BiMambaForMaskedLM's `hidden_states` is its last state only, so its blocks as
    src/encoder/arch/eccdnamamba.rs defines them, from hooks on the two backbones' own blocks:
    after i blocks each stream's residual sum (the block's output plus its residual, both
    masked as the patched MixerModel.forward masks them; the embeddings at 0), the forward and
    the flipped-back backward side by side, and last the model's `hidden_states`."""
    ref = oracle("make_eccdnamamba_fixtures")
    from transformers import AutoTokenizer

    folder = FIXTURES / "eccdnamamba"
    model = ref.genai_lab.BiMambaForMaskedLM.from_pretrained(str(folder)).eval()
    for module in model.modules():  # the CPU's path, as make_eccdnamamba_fixtures.build
        if isinstance(module, ref.mamba2.Mamba2):
            module.use_mem_eff_path = False
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    outputs = {"forward": [], "backward": []}
    hooks = [layer.register_forward_hook(lambda _m, _i, out, stream=stream: outputs[stream].append(out))
             for stream, lm in [("forward", model.mamba_forward), ("backward", model.mamba_backward)]
             for layer in lm.backbone.layers]
    batches = []
    with torch.no_grad():
        for i in range(0, len(seqs), ref.BATCH_SIZE):
            enc = tokenizer(seqs[i:i + ref.BATCH_SIZE], return_tensors="pt", padding=True, truncation=True)
            for stream in outputs.values():
                stream.clear()
            last = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                         return_dict=True).hidden_states
            mask = enc["attention_mask"].unsqueeze(-1)
            embedded = model.token_embedding(enc["input_ids"])
            states = [torch.cat([embedded, embedded], dim=-1)]
            for (h_f, r_f), (h_b, r_b) in zip(outputs["forward"], outputs["backward"]):
                forward = (h_f + r_f) * mask
                backward = ((h_b + r_b) * mask.flip(dims=[1])).flip(dims=[1])
                states.append(torch.cat([forward, backward], dim=-1))
            states[-1] = last
            batches.append([masked_mean(h, enc["attention_mask"]) for h in states])
    for h in hooks:
        h.remove()
    write(folder, stack(batches))


def evo(code):
    """make_evo_fixtures.extract_embeddings's lines (each sequence alone, the plain mean; the
    model in float64 as the oracle ran it). StripedHyena keeps no hidden states, so its blocks
    as src/encoder/arch/evo.rs defines them, from hooks on the model's own blocks: the
    embeddings, each block's output (the residual stream), the last after the final RMSNorm.
    `code`: make_evo_fixtures.py's --code folder."""
    sys.path.insert(0, str(code))
    ref = oracle("make_evo_fixtures")
    ref.shim_flash_attn()
    from src.model import StripedHyena
    from src.utils import dotdict
    from evo.tokenizer import CharLevelTokenizer

    folder = FIXTURES / "evo"
    model = StripedHyena(dotdict(dict(ref.TINY, attn_block_dtype=torch.float32, mlp_dtype=torch.float32)))
    model = model.double()
    state = {k.removeprefix("backbone."): v.double() for k, v in load_file(str(folder / "model.safetensors")).items()}
    model.load_state_dict(state)
    model.eval()
    tokenizer = CharLevelTokenizer(512)
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:SEQUENCES]
    outputs = []
    hooks = [block.register_forward_hook(lambda _m, _i, out: outputs.append(out[0])) for block in model.blocks]
    per_sequence = []
    with torch.no_grad():
        for seq in seqs:
            outputs.clear()
            ids = torch.tensor(tokenizer.tokenize(seq), dtype=torch.int).unsqueeze(0)
            embedded = model.embedding_layer.embed(ids)
            last = ref.last_hidden(model, ids)
            per_sequence.append([h.mean(dim=1) for h in [embedded, *outputs[:-1], last]])
    for h in hooks:
        h.remove()
    write(folder, stack(per_sequence))


def space(code):
    """make_space_fixtures.extract_embeddings's lines (batch size 1, float64) on SPACE's own
    code, which keeps no per-layer states: its blocks as src/encoder/arch/space.rs defines them,
    from hooks on the model's own modules, as enformer() does: the stem's output, each conv
    tower block's, each transformer layer's over the bins (the species token the transformer
    appends left out, as the forward drops it after the last layer), and last the trunk's
    (`return_embeddings`: cropped, final pointwise; SPACE has no head after it). Each pooled by
    the mean over its bins. `code`: make_space_fixtures.py's --code folder."""
    sys.path.insert(0, str(code))
    ref = oracle("make_space_fixtures")
    from model.config_space import SpaceConfig
    from model.modeling_space import Space, TrainingSpace

    TrainingSpace.config_class = SpaceConfig  # as the extractor sets it
    folder = FIXTURES / "space"
    model = Space.from_pretrained(str(folder)).double().eval()
    # One sequence: each pass of it is 131,072 bp (tests/hf_models.rs runs four).
    seqs = json.loads((folder / "pipeline.json").read_text())["sequences"][:1]
    outputs = []
    tower = [model.stem, *model.conv_tower]
    # The stem and the tower run channels first; a transformer layer returns (x, gates, zloss,
    # cvloss) bins first, the species token last.
    hooks = [m.register_forward_hook(lambda _m, _i, out: outputs.append(out.transpose(1, 2))) for m in tower]
    hooks += [m.register_forward_hook(lambda _m, _i, out: outputs.append(out[0][:, :-1]))
              for m in model.transformer.transformer]
    per_sequence = []
    with torch.no_grad():
        for seq in seqs:
            outputs.clear()
            tensor = ref.one_hot_seq(seq, ref.SEQ_LENGTH)[None].double()
            _, trunk = model(tensor, return_embeddings=True)
            per_sequence.append([s.mean(dim=1) for s in [*outputs, trunk]])
    for h in hooks:
        h.remove()
    write(folder, stack(per_sequence))


if __name__ == "__main__":
    only = set(sys.argv[1:])
    for name, make in [("bert", bert), ("dnabert2", dnabert2), ("llama", lambda: decoder("llama")),
                       ("mistral", lambda: decoder("mistral", 1024)), ("nt_v2", nt_v2),
                       ("gpt2", lambda: decoder("gpt2")), ("lucaone", lucaone),
                       ("hyena", hyena), ("enformer", enformer), ("olmo", olmo),
                       ("deepgene", deepgene), ("caduceus/ph", lambda: caduceus("ph")),
                       ("caduceus/ps", lambda: caduceus("ps")), ("dnagpt", lambda: dnagpt("dnagpt")),
                       ("dnagpt_hidden", lambda: dnagpt("dnagpt_hidden")),
                       ("janus/w", lambda: janus("w")), ("eccdnamamba", eccdnamamba),
                       ("evo", lambda: evo(os.environ.get("EVO_CODE", "/tmp/evo-code"))),
                       ("space", lambda: space(os.environ.get("SPACE_CODE", "/tmp/space-code")))]:
        if not only or name in only:
            make()
