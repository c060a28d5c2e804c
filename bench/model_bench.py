"""Encoder speed: PyTorch on CPU vs `geneb embed` (Burn flex CPU and wgpu), same weights, same DNA.

    python3 bench/model_bench.py [--quick] [--geneb PATH] [--threads N] [--models a,b] [--backends cpu,wgpu]
                                 [--torch-device cpu|cuda]

1. Writes, once, random checkpoints shaped like the real models under target/bench-models/
   (NT-v2-50m: hidden 512, 12 layers, 16 heads, SwiGLU 2048, vocab 4107, rotary; DNABERT-2-117M:
   hidden 768, 12 layers, 12 heads, GLU 3072, vocab 4096, ALiBi) with the PyTorch reference
   builders of tests/oracle/make_transformer_fixtures.py, and their tokenizer files: the
   committed NT 6-mer vocabulary; for DNABERT-2 a 4096-token BPE trained with HF `tokenizers`
   on two smoke tables the bench does not time (the committed fixture has 1024 tokens only).
   Caduceus-PH (d_model 256, 4 layers, d_state 16, 1,024-nt context: the shape of
   caduceus-ph_seqlen-1k_d_model-256_n_layer-4, 1.93M parameters) is made with the published
   Caduceus code on tests/oracle/make_caduceus_fixtures.py's pure-PyTorch mamba_ssm stand-in
   (needs a checkout in $CADUCEUS_SRC, default target/caduceus-src). HyenaDNA-tiny is the real
   fine-tuned checkpoint `bash scripts/fetch-real-models.sh` unpacks (target/real-models/
   hyenadna-tiny-anticapt-dataset1), run in PyTorch with the package's own modeling code, loaded
   as tests/oracle/make_hyena_fixtures.py loads it. GENA-LM bert-base-t2t-multi's shape
   (pre-LayerNorm BERT, hidden 768, 12 layers, vocab 32,000, 512 positions; the t2t tokenizer
   fixture) and MutBERT's (rotary BERT over one-hot inputs, hidden 768, 12 layers) are built by
   tests/oracle/make_gena_fixtures.py and make_mutbert_fixtures.py and run in the published
   code (checkouts in $GENA_SRC and $MUTBERT_SRC, defaults target/gena-src/src and
   target/mutbert-src/2-pretrain-code, at the commits those scripts name). Genomics-FM's
   (MosaicBERT with a learned position table, hidden 768, 12 layers, 7,268 embedding rows, 512
   positions; DNABERT-2's 4096-token BPE layout) by make_genomics_fm_fixtures.py, run in its
   published bert_layers.py ($GENOMICS_FM_SRC, default target/genomics-fm-src/genomics_fm) and
   pooled by [CLS], as its extractor pools; every other model by the masked mean. DeepGene's
   (RoFormer, hidden 768, 12 layers, 5,120 positions; DNABERT-2's 4096-token BPE layout) by
   make_deepgene_fixtures.py, run in its published modeling_roformer.py ($DEEPGENE_SRC, default
   target/deepgene-src/PanGeneGraphTrans) with its extractor's ids and positions. DNAGPT
   0.1B human's (`DNAGPT.from_name("dna_gpt0.1b_h")`: GPT-2, 768 wide, 12 layers, 4,096 positions,
   15,659 6-mer tokens) by make_dnagpt_fixtures.py, written as the published file alone
   (dna_gpt0.1b_h.pth, no config.json), run in its published dna_gpt/ ($DNAGPT_SRC, default
   target/dnagpt-src) and pooled over its masked-LM head's logits, as its extractor pools.
   JanusDNA_72_w's and _wo's (d_model 72, 8 layers, 16 experts, with and without the mid
   attention layer) by
   make_janus_fixtures.py, run in its published modeling_janusdna.py ($JANUS_SRC, default
   target/janusdna-src) on inputs padded on the right to 1,024 tokens without special tokens, as
   its extractor (janusdna.py) encodes them (make_janus_fixtures.encode).
2. Cuts real DNA from the other smoke tables into sequences of 200 and 1,000 nt.
3. Times, each in its own process (peak RSS from wait4): PyTorch (HF tokenizer + model + masked
   mean, torch.set_num_threads(N)) at batch 1 and 32 after loading and one warm-up call; and
   `geneb embed` (its own length-sorted, token-budget batches; rayon with N threads) on each
   backend, once on 1 sequence and once on all: seq/s = (n - 1) / (t_all - t_1), which leaves
   out process start, model load and first-call set-up; load = t_1.
4. Refuses to report a speed for wrong numbers: geneb's embeddings must equal PyTorch's
   (max |delta| <= 1e-3, printed) or the run exits 1.
Results also go to target/bench-models/results.json. wgpu needs a Vulkan driver (lavapipe on
a machine without a GPU). A geneb run that fails or outlasts --timeout seconds is reported in its
row, the others still run, and the bench exits 1 at the end.
"""

import argparse
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
MODELS_DIR = os.path.join(ROOT, "target", "bench-models")
SMOKE = os.path.join(ROOT, "tasks", "smoke")
TOKENIZERS = os.path.join(ROOT, "tests", "fixtures", "tokenizers")
# Real genomic DNA only (the CTCF table's negatives are dinucleotide shuffles); the BPE
# tokenizer is trained on the two tables the bench does not time.
BENCH_TABLES = ["smoke_yeast_coding_vs_intergenic.csv", "smoke_yeast_promoter_vs_terminator.csv",
                "smoke_yeast_vs_fly_species.csv"]
BPE_TRAINING_TABLES = ["smoke_ctcf_gm12878_vs_dinuc_shuffled.csv", "smoke_lambda_phage_vs_ecoli.csv"]
LENGTHS = (200, 1000)
TORCH_BATCHES = (1, 32)
COUNTS = {200: 128, 1000: 64}
QUICK_COUNTS = {200: 32, 1000: 32}
# Both sides are timed on the n sequences repeated until the timed run lasts this long (at most
# that many times): a shorter run is mostly noise.
MIN_RUN_S = 2.0
MAX_REPS = 40
TOLERANCE = 1e-3
REAL_MODELS = os.environ.get("GENEB_REAL_MODELS", os.path.join(ROOT, "target", "real-models"))
MODELS = {
    "nt-v2-50m": dict(kind="nt", vocab=4107, hidden=512, layers=12, heads=16, inter=2048, positions=2050,
                      max_length=2048),
    # NT-v2-250m-shaped (hidden 768, 24 layers, 16 heads, SwiGLU 3072: the 941 MB f32
    # pytorch_model.bin the hub lists), the largest NT-v2 a tab takes (browser_bench.mjs measures
    # its memory there).
    "nt-v2-250m": dict(kind="nt", vocab=4107, hidden=768, layers=24, heads=16, inter=3072, positions=2050,
                       max_length=2048),
    # NT-v2-500m-shaped (hidden 1024, 29 layers, 16 heads, SwiGLU 4096: 1.96 GB of f32 weights),
    # for what a tab holds now that the weights file is read tensor by tensor.
    "nt-v2-500m": dict(kind="nt", vocab=4107, hidden=1024, layers=29, heads=16, inter=4096, positions=2050,
                       max_length=2048),
    "dnabert2-117m": dict(kind="dnabert2", vocab=4096, hidden=768, layers=12, heads=12, inter=3072,
                          max_length=512),
    # Real weights (fetched, not written): the folder geneb reads is the one PyTorch loads.
    "hyenadna-tiny": dict(kind="hyena", folder=os.path.join(REAL_MODELS, "hyenadna-tiny-anticapt-dataset1"),
                          max_length=1026),
    "caduceus-ph-1k": dict(kind="caduceus", hidden=256, layers=4, d_state=16, max_length=1024),
    # GENA-LM bert-base-t2t-multi's shape (pre-LayerNorm BERT) with the t2t tokenizer fixture's
    # vocabulary, and MutBERT's (rotary BERT on one-hot inputs): tests/oracle's builders, random
    # weights, the published code (GENA_SRC, MUTBERT_SRC: see those scripts).
    "gena-lm-t2t-multi": dict(kind="gena", vocab=32000, hidden=768, layers=12, heads=12, inter=3072, positions=512,
                              max_length=512),
    # The reference tokenizes MutBERT without a length limit (its tokenizer files set none).
    "mutbert": dict(kind="mutbert", hidden=768, layers=12, heads=12, inter=3072, max_length=None),
    # Genomics-FM's shape (make_genomics_fm_fixtures.py: 7,268 embedding rows give its published
    # 119,906,660 parameters) with DNABERT-2's 4096-token BPE, as its tokenizer has; pooled by
    # [CLS] as its extractor pools.
    "genomics-fm": dict(kind="genomics-fm", vocab=4096, embedding_rows=7268, hidden=768, layers=12, heads=12,
                        inter=3072, positions=512, max_length=512),
    # DeepGene's shape (RoFormerConfig's defaults) with DNABERT-2's 4096-token BPE, as its
    # tokenizer has; tokenized and positioned as its extractor does (make_deepgene_fixtures.py).
    "deepgene": dict(kind="deepgene", vocab=4096, hidden=768, layers=12, heads=12, inter=3072, positions=5120,
                     max_length=5120),
    # DNAGPT 0.1B human, its shape from its name as DNAGPT.from_name gives it; batches of the
    # PyTorch peer are right-padded, which a causal model's real tokens never see.
    "dnagpt-0.1b-h": dict(kind="dnagpt", name="dna_gpt0.1b_h", max_length=4096),
    # JanusDNA_72_w's and _wo's shapes (make_janus_fixtures.same_shape_config: d_model 72, 8
    # layers, 16 experts, with and without the mid attention layer), run in its published code
    # ($JANUS_SRC); every input padded on the right to 1,024 tokens, as its extractor pads it.
    "janusdna-72-w": dict(kind="janus", mid_attention=True, max_length=1024),
    "janusdna-72-wo": dict(kind="janus", mid_attention=False, max_length=1024),
}


def oracle(name="make_transformer_fixtures"):
    """A reference module of the committed fixtures, imported by path (tests/ is no package), once."""
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(ROOT, "tests", "oracle", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def hyena_code():
    """(modeling, configuration, tokenization) of the anticapt package, as the fixture script
    imports them (it exits naming scripts/fetch-real-models.sh when they are missing)."""
    return oracle("make_hyena_fixtures").hyena_code()


def caduceus_code():
    """The published Caduceus classes on the fixture script's pure-PyTorch mamba_ssm stand-in."""
    ref = oracle("make_caduceus_fixtures")
    if not (ref.SOURCE / "caduceus" / "modeling_caduceus.py").exists():
        sys.exit(f"model_bench: {ref.SOURCE}: no caduceus/modeling_caduceus.py; set CADUCEUS_SRC to a checkout of "
                 "https://github.com/kuleshov-group/caduceus (the fixtures used commit 0060a6d)")
    if "caduceus.modeling_caduceus" not in sys.modules:
        ref.install_mamba_stand_in()
        sys.path.insert(0, str(ref.SOURCE))
    from caduceus.configuration_caduceus import CaduceusConfig
    from caduceus.modeling_caduceus import CaduceusForMaskedLM
    from caduceus.tokenization_caduceus import CaduceusTokenizer

    if not getattr(CaduceusForMaskedLM, "_bench_patched", False):
        # As the fixture script does: transformers 5 passes tie_weights(recompute_mapping=...).
        tie_weights = CaduceusForMaskedLM.tie_weights
        CaduceusForMaskedLM.tie_weights = lambda self, *args, **kwargs: tie_weights(self)
        CaduceusForMaskedLM._bench_patched = True
    return CaduceusConfig, CaduceusForMaskedLM, CaduceusTokenizer


def caduceus_config(spec):
    """The Caduceus-PH configuration of the hub's caduceus-ph_seqlen-1k_d_model-256_n_layer-4."""
    CaduceusConfig, _, _ = caduceus_code()
    return CaduceusConfig(
        d_model=spec["hidden"], n_layer=spec["layers"], vocab_size=12, pad_vocab_size_multiple=8,
        ssm_cfg={"d_state": spec["d_state"], "d_conv": 4, "expand": 2, "dt_rank": "auto", "bias": False,
                 "conv_bias": True},
        rms_norm=True, residual_in_fp32=False, fused_add_norm=True, norm_epsilon=1e-5,
        bidirectional=True, bidirectional_strategy="add", bidirectional_weight_tie=True,
        rcps=False, complement_map=None, architectures=["CaduceusForMaskedLM"],
    )


def smoke_rows(table):
    with open(os.path.join(SMOKE, table)) as f:
        return [line.split(",")[0] for line in f.read().splitlines()[1:]]


def sequences(length, count):
    """Consecutive `length`-nt pieces of the bench tables' rows, concatenated in file order."""
    stream = "".join(row for table in BENCH_TABLES for row in smoke_rows(table))
    if len(stream) < length * count:
        sys.exit(f"model_bench: the smoke tables hold {len(stream)} nt, fewer than {count} x {length}")
    return [stream[i * length:(i + 1) * length] for i in range(count)]


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")


def nt_tokenizer(folder, spec):
    for name in ("vocab.txt", "special_tokens_map.json"):
        shutil.copy(os.path.join(TOKENIZERS, "nt6", name), folder)
    write_json(os.path.join(folder, "tokenizer_config.json"),
               {"tokenizer_class": "EsmTokenizer", "model_max_length": spec["max_length"], "eos_token": None})


def dnabert2_tokenizer(folder, spec):
    """DNABERT-2's tokenizer.json layout (the committed fixture's pipeline) with a BPE vocabulary
    of the real size, trained on DNA the bench does not time."""
    from tokenizers import Tokenizer
    from tokenizers.trainers import BpeTrainer

    fixture = os.path.join(TOKENIZERS, "dnabert2")
    tokenizer = Tokenizer.from_file(os.path.join(fixture, "tokenizer.json"))
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    corpus = [row for table in BPE_TRAINING_TABLES for row in smoke_rows(table)]
    tokenizer.train_from_iterator(corpus, BpeTrainer(vocab_size=spec["vocab"], special_tokens=specials,
                                                     show_progress=False))
    if tokenizer.get_vocab_size() != spec["vocab"]:
        sys.exit(f"model_bench: the trained BPE has {tokenizer.get_vocab_size()} tokens, not {spec['vocab']}")
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(fixture, "tokenizer_config.json")) as f:
        config = json.load(f)
    write_json(os.path.join(folder, "tokenizer_config.json"), {**config, "model_max_length": spec["max_length"]})


def make_caduceus(folder, spec):
    """A randomly initialised Caduceus-PH, every parameter nudged off its init (no unit norms or
    zero biases), its tensors saved under the hub's names, and the fixture's tokenizer config."""
    import torch
    from safetensors.torch import save_file

    _, CaduceusForMaskedLM, _ = caduceus_code()
    config = caduceus_config(spec)
    model = CaduceusForMaskedLM(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    config.to_json_file(os.path.join(folder, "config.json"))
    save_file({k: v.detach().clone().contiguous() for k, v in model.state_dict().items()},
              os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(ROOT, "tests", "fixtures", "models", "caduceus", "ph", "tokenizer_config.json")) as f:
        tokenizer = json.load(f)
    write_json(os.path.join(folder, "tokenizer_config.json"), {**tokenizer, "model_max_length": spec["max_length"]})
    print(f"model_bench: wrote {folder} ({sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters)")


def checkpoint_folder(name, spec):
    return spec["folder"] if spec["kind"] == "hyena" else os.path.join(MODELS_DIR, name)


def make_checkpoint(name, spec):
    """config.json, model.safetensors and tokenizer files in target/bench-models/NAME, once
    (HyenaDNA-tiny's real folder is only checked)."""
    if spec["kind"] == "hyena":
        if not os.path.exists(os.path.join(spec["folder"], "pytorch_model.bin")):
            sys.exit(f"model_bench: {spec['folder']}: no pytorch_model.bin; run bash scripts/fetch-real-models.sh")
        return spec["folder"]
    folder = os.path.join(MODELS_DIR, name)
    done = os.path.join(folder, ".complete")
    if os.path.exists(done):
        return folder
    import torch
    from safetensors.torch import save_file

    ref = oracle()
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(0)
    if spec["kind"] == "caduceus":
        make_caduceus(folder, spec)
        open(done, "w").close()
        return folder
    if spec["kind"] == "janus":
        janus = oracle("make_janus_fixtures")
        modeling, JanusDNAConfig, _ = janus.import_published_code()
        config = janus.same_shape_config(JanusDNAConfig, spec["mid_attention"])
        model, _ = janus.build(modeling, config, 9, final_mlp=False)
        janus.save(model, Path(folder), "model.")
        open(done, "w").close()
        return folder
    if spec["kind"] == "gena":
        gena = oracle("make_gena_fixtures")
        model, config = gena.build(gena.gena_code(), spec["vocab"], spec["hidden"], spec["layers"], spec["heads"],
                                   spec["inter"], spec["positions"], last_layer_norm=False, seed=4)
        gena.write(Path(folder), model, config, "gena-t2t", spec["max_length"], gena.sequences()[:2])
        open(done, "w").close()
        return folder
    if spec["kind"] == "mutbert":
        mutbert = oracle("make_mutbert_fixtures")
        modeling, gena = mutbert.mutbert_code()
        mutbert.write(Path(folder), modeling, gena, spec["hidden"], spec["layers"], spec["heads"], spec["inter"], seed=6,
                      texts=gena.sequences()[:2])
        open(done, "w").close()
        return folder
    if spec["kind"] == "genomics-fm":
        genomics_fm = oracle("make_genomics_fm_fixtures")
        model, config = genomics_fm.build(*genomics_fm.genomics_fm_code(), spec["embedding_rows"], spec["hidden"],
                                          spec["layers"], spec["heads"], spec["inter"], spec["positions"], seed=7)
        genomics_fm.save(Path(folder), model, config)
        dnabert2_tokenizer(folder, spec)
        open(done, "w").close()
        return folder
    if spec["kind"] == "dnagpt":
        dnagpt = oracle("make_dnagpt_fixtures")
        DNAGPT, KmerTokenizer = dnagpt.dnagpt_code()
        model = DNAGPT.from_name(spec["name"], vocab_size=len(KmerTokenizer(6, dnagpt.SPECIAL, False))).eval()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.02)
        dnagpt.save(Path(folder) / f"{spec['name']}.pth", model)
        open(done, "w").close()
        return folder
    if spec["kind"] == "deepgene":
        deepgene = oracle("make_deepgene_fixtures")
        model, config = deepgene.build(*deepgene.deepgene_code(), spec["vocab"], spec["hidden"], spec["layers"],
                                       spec["heads"], spec["inter"], spec["positions"], seed=8)
        deepgene.save(Path(folder), model, config)
        dnabert2_tokenizer(folder, spec)
        open(done, "w").close()
        return folder
    if spec["kind"] == "nt":
        model, config = ref.nt_v2_model(spec["vocab"], spec["hidden"], spec["layers"], spec["heads"],
                                         spec["inter"], spec["positions"])
        config, state = ref.nt_v2_checkpoint(model, config)
        nt_tokenizer(folder, spec)
    else:
        bert = ref.dnabert2_encoder(spec["hidden"], spec["heads"], spec["inter"], spec["vocab"], spec["layers"])
        config, state = ref.dnabert2_checkpoint(bert)
        dnabert2_tokenizer(folder, spec)
    write_json(os.path.join(folder, "config.json"), config)
    save_file({k: v.detach().clone().contiguous() for k, v in state.items()}, os.path.join(folder, "model.safetensors"))
    open(done, "w").close()
    return folder


def load_torch_model(folder, spec, device):
    """The PyTorch reference with the checkpoint's tensors: (input_ids, mask) -> last hidden state."""
    from safetensors.torch import load_file

    ref = oracle()
    if spec["kind"] == "hyena":
        modeling, _, _ = hyena_code()
        model = modeling.HyenaDNAModel.from_pretrained(folder).to(device).eval()
        return lambda ids, mask: model(ids, return_dict=True).last_hidden_state
    if spec["kind"] == "caduceus":
        _, CaduceusForMaskedLM, _ = caduceus_code()
        model = CaduceusForMaskedLM(caduceus_config(spec)).eval()
        model.load_state_dict(load_file(os.path.join(folder, "model.safetensors")), strict=True)
        return lambda ids, mask: model(ids, output_hidden_states=True, return_dict=True).hidden_states[-1]
    if spec["kind"] == "janus":
        janus = oracle("make_janus_fixtures")
        modeling, JanusDNAConfig, _ = janus.import_published_code()
        model = janus.load(modeling, JanusDNAConfig, Path(folder)).eval()
        return lambda ids, mask: model.model(ids, return_dict=True).last_hidden_state
    if spec["kind"] == "dnagpt":
        import torch

        DNAGPT, KmerTokenizer = oracle("make_dnagpt_fixtures").dnagpt_code()
        model = DNAGPT.from_name(spec["name"], vocab_size=len(
            KmerTokenizer(6, oracle("make_dnagpt_fixtures").SPECIAL, False))).eval()
        model.load_state_dict(torch.load(os.path.join(folder, f"{spec['name']}.pth"))["model"], strict=True)
        return lambda ids, mask: model(ids)  # the masked-LM head's logits
    state = load_file(os.path.join(folder, "model.safetensors"))
    if spec["kind"] in ("gena", "mutbert", "genomics-fm", "deepgene"):
        if spec["kind"] == "deepgene":
            deepgene = oracle("make_deepgene_fixtures")
            RoFormerConfig, RoFormerForMaskedLM = deepgene.deepgene_code()
            model = RoFormerForMaskedLM(RoFormerConfig.from_pretrained(folder, **deepgene.OLD_CONFIG_DEFAULTS)).eval()
            # Tokenized, positioned and pooled by the extractor's own steps (torch_child).
            forward = model
            state["roformer.encoder.embed_positions.weight"] = model.roformer.encoder.embed_positions.weight
        elif spec["kind"] == "genomics-fm":
            BertConfig, BertForMaskedLM = oracle("make_genomics_fm_fixtures").genomics_fm_code()
            model = BertForMaskedLM(BertConfig.from_pretrained(folder)).eval()
            # MosaicBERT's BertModel returns (sequence_output, pooled_output).
            forward = lambda ids, mask: model.bert(input_ids=ids, attention_mask=mask)[0]  # noqa: E731
        elif spec["kind"] == "gena":
            from transformers.models.bert.configuration_bert import BertConfig

            modeling = oracle("make_gena_fixtures").gena_code()
            model = modeling.BertForMaskedLM(BertConfig.from_pretrained(folder)).eval()
            forward = lambda ids, mask: model.bert(input_ids=ids, attention_mask=mask).last_hidden_state  # noqa: E731
        else:
            mutbert = oracle("make_mutbert_fixtures")
            modeling, _ = mutbert.mutbert_code()
            config = mutbert.transformers4_defaults(modeling.RoPEBertConfig.from_pretrained(folder))
            model = modeling.RoPEBertForMaskedLM(config).eval()
            forward = lambda ids, mask: mutbert.hidden_states(model, ids, mask)  # noqa: E731
        # The checkpoints leave out the masked-LM decoder, which is tied to the word embeddings.
        missing, unexpected = model.load_state_dict(state, strict=False)
        if unexpected or set(missing) - {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}:
            sys.exit(f"model_bench: checkpoint/model mismatch: missing {missing}, unexpected {unexpected}")
        return forward
    if spec["kind"] == "nt":
        model, _ = ref.nt_v2_model(spec["vocab"], spec["hidden"], spec["layers"], spec["heads"], spec["inter"],
                                   spec["positions"])
        # The per-layer rotary buffers are the model's one fixed inv_freq, stored once per layer.
        state = {k: v for k, v in state.items() if not k.endswith("rotary_embeddings.inv_freq")}
        missing, unexpected = model.load_state_dict(state, strict=False)
        expected_missing = {"lm_head.decoder.weight", "esm.rotary_embeddings.inv_freq"}
        if unexpected or set(missing) - expected_missing:
            sys.exit(f"model_bench: checkpoint/model mismatch: missing {missing}, unexpected {unexpected}")
        return lambda ids, mask: ref.nt_v2_hidden(model, ids, mask)
    bert = ref.dnabert2_encoder(spec["hidden"], spec["heads"], spec["inter"], spec["vocab"], spec["layers"])
    bert.load_state_dict({k[len("bert."):]: v for k, v in state.items() if k.startswith("bert.")}, strict=True)
    return ref.dnabert2_forward(bert)


def torch_tokenizer(folder, spec):
    """HF's tokenizer for the transformers; the packages' own single-nucleotide tokenizers (which
    append [SEP], as geneb does) for HyenaDNA and Caduceus."""
    import transformers

    if spec["kind"] == "hyena":
        _, _, tokenization = hyena_code()
        return tokenization.HyenaDNATokenizer(model_max_length=spec["max_length"])
    if spec["kind"] == "caduceus":
        _, _, CaduceusTokenizer = caduceus_code()
        return CaduceusTokenizer(model_max_length=spec["max_length"])
    if spec["kind"] == "janus":
        tokenizer = oracle("make_janus_fixtures").import_published_code()[2]
        return tokenizer(model_max_length=spec["max_length"], padding_side="right")
    if spec["kind"] == "deepgene":
        import tokenizers

        return tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    if spec["kind"] == "dnagpt":
        dnagpt = oracle("make_dnagpt_fixtures")
        return dnagpt.dnagpt_code()[1](6, dnagpt.SPECIAL, False)
    with open(os.path.join(folder, "tokenizer_config.json")) as f:
        tokenizer_class = json.load(f)["tokenizer_class"]
    return getattr(transformers, tokenizer_class).from_pretrained(folder)


def torch_child(job):
    """One PyTorch timing in this process: load, one warm-up call, then passes over every sequence
    in order until MIN_RUN_S. Its stdout carries only the timings: what the published code prints
    (DNAGPT's parameter count, Genomics-FM's vocabulary checks) goes to stderr."""
    import torch

    timings, sys.stdout = sys.stdout, sys.stderr
    torch.set_num_threads(job["threads"])
    device = torch.device(job["device"])
    # Modules, the oracle's helper tensors and the tokenizers' outputs are made on this device.
    torch.set_default_device(device)
    spec = MODELS[job["model"]]
    ref = oracle()
    started = time.perf_counter()
    forward = load_torch_model(job["folder"], spec, device)
    tokenizer = torch_tokenizer(job["folder"], spec)
    load_s = time.perf_counter() - started
    with open(job["input"]) as f:
        texts = f.read().split()

    def embed(batch):
        if spec["kind"] == "deepgene":
            return oracle("make_deepgene_fixtures").embed(forward, tokenizer, batch, spec["max_length"])
        if spec["kind"] == "dnagpt":
            ids = [tokenizer.encode(t, max_len=spec["max_length"], to_tensor=False) for t in batch]
            width = max(len(i) for i in ids)
            input_ids = torch.tensor([i + [tokenizer.pad_id] * (width - len(i)) for i in ids])
            mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i in ids])
            return ref.masked_mean(forward(input_ids, mask), mask), int(mask.sum())
        if spec["kind"] == "janus":
            # janusdna.py's call: right padding to 1,024, no special tokens, the mask passed.
            enc = oracle("make_janus_fixtures").encode(tokenizer, batch)
        else:
            enc = tokenizer(batch, padding=True, truncation=True, max_length=spec["max_length"], return_tensors="pt")
        if spec["kind"] in ("hyena", "caduceus"):
            # One token per base. Their reference extractors run each sequence alone: a padded
            # batch would change the states (left padding runs through the convolutions and
            # scans), so a batch must not need padding; the pooled mean is then over all tokens.
            if len({len(t) for t in batch}) != 1:
                sys.exit("model_bench: a HyenaDNA/Caduceus batch needs padding; give it sequences of one length")
            enc = {"input_ids": enc["input_ids"], "attention_mask": torch.ones_like(enc["input_ids"])}
        enc = {k: v.to(device) for k, v in enc.items()}
        hidden = forward(enc["input_ids"], enc["attention_mask"])
        pooled = hidden[:, 0] if spec["kind"] == "genomics-fm" else ref.masked_mean(hidden, enc["attention_mask"])
        return pooled, int(enc["attention_mask"].sum())

    batch = job["batch"]
    with torch.inference_mode():
        embed(texts[:1])
        started = time.perf_counter()
        pooled, tokens, passes = [], 0, 0
        # Whole passes over the sequences until MIN_RUN_S, as geneb is timed; the first pass's
        # embeddings are kept.
        while passes == 0 or (time.perf_counter() - started < MIN_RUN_S and passes < MAX_REPS):
            for i in range(0, len(texts), batch):
                vectors, n = embed(texts[i:i + batch])
                if passes == 0:
                    pooled.append(vectors.cpu().numpy())
                    tokens += n
            passes += 1
            if device.type == "cuda":
                # Kernels run asynchronously: a pass is over when the device says so.
                torch.cuda.synchronize()
        run_s = time.perf_counter() - started
    np.save(job["out"], np.concatenate(pooled).astype(np.float32))
    json.dump({"load_s": load_s, "run_s": run_s, "tokens": tokens, "passes": passes}, timings)


def peak_rss_kib(pid):
    """VmHWM of a running process (KiB), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def measure(command, env, timeout):
    """Run one process: {wall_s, rss_mib, stdout, stderr, returncode}, or None past the timeout.
    Peak RSS is the child's own high-water mark (VmHWM, read every 20 ms while it runs). Not
    wait4's ru_maxrss: Linux carries the pre-exec address space's high-water mark into it, and
    Popen's vfork child shares this process's, so every child would report at least this
    process's RSS (1.2 GB once it had written a checkpoint with torch)."""
    with open(os.devnull) as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        # Popen returns once the child has exec'd: every VmHWM read below is the command's own.
        child = subprocess.Popen(command, env=env, stdin=stdin, stdout=out, stderr=err)
        peak_kib = 0
        while True:
            peak_kib = max(peak_kib, peak_rss_kib(child.pid) or 0)
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > timeout:
                child.kill()
                os.wait4(child.pid, 0)
                child.returncode = -9
                return None
            time.sleep(0.02)
        wall = time.perf_counter() - started
        # Popen must not wait for the process wait4 already reaped.
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"wall_s": wall, "rss_mib": peak_kib / 1024, "stdout": out.read().decode(),
                "stderr": err.read().decode(), "returncode": child.returncode}


def write_fasta(path, texts):
    with open(path, "w") as f:
        f.writelines(f">s{i}\n{t}\n" for i, t in enumerate(texts))


def time_pytorch(name, folder, texts_path, batch, threads, work, device):
    out = os.path.join(work, f"torch_b{batch}.npy")
    job = {"model": name, "folder": folder, "input": texts_path, "batch": batch, "threads": threads, "out": out,
           "device": device}
    run = measure([sys.executable, os.path.abspath(__file__), "--torch-child", json.dumps(job)], os.environ, 1e9)
    if run["returncode"] != 0:
        sys.exit(f"model_bench: the PyTorch reference failed:\n{run['stderr']}")
    timing = json.loads(run["stdout"])
    n = len(np.load(out))
    return {"seq_s": n * timing["passes"] / timing["run_s"], "load_s": timing["load_s"], "rss_mib": run["rss_mib"],
            "sequences_timed": n * timing["passes"],
            "tokens_per_seq": timing["tokens"] / n, "embeddings": np.load(out)}


def time_geneb(geneb, folder, texts, backend, threads, work, timeout):
    """seq/s from embedding 1 and N sequences (the difference leaves out start-up and load).
    N is the n sequences, repeated until their run lasts MIN_RUN_S."""
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads)}

    def run(count, reps=1):
        fasta = os.path.join(work, f"seqs_{count}.fa")
        write_fasta(fasta, (texts[:count] * reps) if reps > 1 else texts[:count])
        npy = os.path.join(work, f"geneb_{backend}_{count}.npy")
        command = [geneb, "embed", "--model", f"hf:{folder}", "--input", fasta, "--out", npy, "--backend", backend]
        result = measure(command, env, timeout)
        if result is None:
            return {"failed": f"timeout (> {timeout:.0f} s)"}
        if result["returncode"] != 0:
            # A geneb failure is a finding to report beside the speeds, not a reason to stop.
            reason = result["stderr"].strip().splitlines()[-1]
            # wgpu's chained errors put the cause at the end of one long line.
            short = reason if len(reason) <= 300 else f"{reason[:120]} ... {reason[-180:]}"
            return {"failed": f"on {count} seq: {short}"}
        result["embeddings"] = np.load(npy)[: min(count, len(texts))]
        return result

    # The first, untimed run reads the checkpoint into the page cache: otherwise the 1-sequence
    # run alone pays for the disk and the difference undercounts the n-sequence time.
    for count in (1, 1):
        one = run(count)
        if "failed" in one:
            return one
    n, reps = len(texts), 1
    while True:
        all_ = run(n, reps)
        if "failed" in all_:
            return all_
        spent = all_["wall_s"] - one["wall_s"]
        if spent >= MIN_RUN_S or reps >= MAX_REPS:
            break
        per_seq = max(spent, 0.01) / (n * reps - 1)
        reps = min(MAX_REPS, max(reps + 1, math.ceil(1.25 * MIN_RUN_S / per_seq / n)))
    if spent <= 0:
        sys.exit(f"model_bench: geneb-{backend} took no longer on {n * reps} sequences than on 1; time more")
    return {"seq_s": (n * reps - 1) / spent, "load_s": one["wall_s"], "rss_mib": all_["rss_mib"],
            "embeddings": all_["embeddings"], "sequences_timed": n * reps}


def build_geneb():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "geneb"], cwd=ROOT, check=True)
    return os.path.join(target, "release", "geneb")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_COUNTS} sequences per length")
    ap.add_argument("--geneb", help="a geneb binary (with the Burn encoders) instead of building one")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="torch.set_num_threads and RAYON_NUM_THREADS (default: the CPUs this process may use)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, of: " + ", ".join(MODELS))
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="sequence lengths in nt")
    ap.add_argument("--backends", default="cpu,wgpu", help="geneb backends to time (none: PyTorch alone)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed to one geneb run")
    ap.add_argument("--torch-device", default="cpu", help="where PyTorch runs: cpu, or cuda on a GPU machine")
    ap.add_argument("--torch-child", help=argparse.SUPPRESS)
    ap.add_argument("--make-checkpoint", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_child:
        return torch_child(json.loads(args.torch_child))
    if args.make_checkpoint:
        return make_checkpoint(args.make_checkpoint, MODELS[args.make_checkpoint])
    # "none": PyTorch alone, writing the models and runs the browser bench reuses.
    backends = [b for b in args.backends.split(",") if b not in ("", "none")]
    geneb = (args.geneb or build_geneb()) if backends else None
    counts = QUICK_COUNTS if args.quick else COUNTS
    lengths = [int(n) for n in args.lengths.split(",")]
    if not set(lengths) <= set(counts):
        sys.exit(f"model_bench: --lengths takes {', '.join(map(str, LENGTHS))}")
    print(f"geneb: {os.path.normpath(geneb) if geneb else 'not run'}; threads: {args.threads} (torch.set_num_threads, RAYON_NUM_THREADS); "
          f"PyTorch on {args.torch_device}")
    rows, failures = [], []
    for name in args.models.split(","):
        if name not in MODELS:
            sys.exit(f"model_bench: unknown model '{name}'; choose from {', '.join(MODELS)}")
        # Written in a child: this process stays small (torch is never imported here).
        made = subprocess.run([sys.executable, os.path.abspath(__file__), "--make-checkpoint", name])
        if made.returncode != 0:
            # The child has said why (a missing package, weights or checkout); no traceback here.
            sys.exit(f"model_bench: no {name} checkpoint (above)")
        folder = checkpoint_folder(name, MODELS[name])
        for length in lengths:
            texts = sequences(length, counts[length])
            work = os.path.join(MODELS_DIR, "runs", f"{name}_{length}")
            os.makedirs(work, exist_ok=True)
            texts_path = os.path.join(work, "seqs.txt")
            with open(texts_path, "w") as f:
                f.write("\n".join(texts) + "\n")
            # Other work on the machine slows every runner; the load average says how busy it was.
            row = {"model": name, "length": length, "n": len(texts), "load_avg_before": os.getloadavg()[0]}
            for batch in TORCH_BATCHES:
                row[f"torch_b{batch}"] = time_pytorch(name, folder, texts_path, batch, args.threads, work,
                                                      args.torch_device)
            reference = row[f"torch_b{TORCH_BATCHES[-1]}"]["embeddings"]
            row["torch_b1"]["max_delta"] = float(np.abs(row["torch_b1"]["embeddings"] - reference).max())
            for backend in backends:
                result = time_geneb(geneb, folder, texts, backend, args.threads, work, args.timeout)
                if "embeddings" in result:
                    result["max_delta"] = float(np.abs(result["embeddings"] - reference).max())
                    if not result["max_delta"] <= TOLERANCE:
                        failures.append(f"{name} {length} nt geneb-{backend}: max |delta| {result['max_delta']:.2e} "
                                        "(geneb disagrees with PyTorch: its speed is void)")
                else:
                    failures.append(f"{name} {length} nt geneb-{backend}: {result['failed']}")
                row[f"geneb_{backend}"] = result
            row["load_avg_after"] = os.getloadavg()[0]
            for result in row.values():
                if isinstance(result, dict):
                    result.pop("embeddings", None)
            rows.append(row)
            report_row(row, backends)
    write_json(os.path.join(MODELS_DIR, "results.json"), {"threads": args.threads, "quick": args.quick, "rows": rows})
    if failures:
        sys.exit("model_bench: failures:\n  " + "\n  ".join(failures))


def report_row(row, backends):
    best_torch = max(row["torch_b1"]["seq_s"], row["torch_b32"]["seq_s"])
    print(f"\n{row['model']}, {row['length']} nt x {row['n']} ({row['torch_b32']['tokens_per_seq']:.0f} tokens/seq; "
          f"load average {row['load_avg_before']:.1f} -> {row['load_avg_after']:.1f})")
    print(f"  {'runner':<12} {'seq/s':>8} {'vs best torch':>13} {'load s':>7} {'peak RSS MiB':>12} {'max |delta|':>11}")
    for key in ["torch_b1", "torch_b32"] + [f"geneb_{b}" for b in backends]:
        r = row[key]
        if "failed" in r:
            print(f"  {key:<12} FAILED {r['failed']}")
            continue
        delta = "reference" if key == "torch_b32" else f"{r['max_delta']:.1e}"
        timed = f"  (timed on {r['sequences_timed']})" if r.get("sequences_timed", row["n"]) != row["n"] else ""
        print(f"  {key:<12} {r['seq_s']:>8.2f} {r['seq_s'] / best_torch:>12.2f}x {r['load_s']:>7.2f} "
              f"{r['rss_mib']:>12.0f} {delta:>11}{timed}", flush=True)


if __name__ == "__main__":
    main()
