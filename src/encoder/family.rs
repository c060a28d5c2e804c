//! The model families geneb runs, as a person reads them, written once: the architectures'
//! registry (`arch::ArchSpec`, and the variants one BERT stack serves) and the known-models table
//! (`known.rs`) both name them from here. Plain text, no Burn: a light build lists the known
//! models too.

/// A family as the registry runs it: its architecture's name (`ArchSpec::name`) and the
/// family's name as a person reads it (`ArchSpec::family`).
#[derive(Debug)]
pub struct Family {
    pub architecture: &'static str,
    pub name: &'static str,
}

impl Family {
    const fn new(architecture: &'static str, name: &'static str) -> Family {
        Family { architecture, name }
    }
}

pub const HYENADNA: Family = Family::new("hyenadna", "HyenaDNA");
pub const CADUCEUS: Family =
    Family::new("caduceus", "Caduceus (bidirectional Mamba, RC-equivariant)");
pub const NT_V2: Family = Family::new(
    "nucleotide-transformer-v2",
    "Nucleotide Transformer v2 (ESM, rotary, SwiGLU)",
);
/// Nucleotide Transformer v1 on the same ESM file (`arch/nt.rs`): learned positions, GELU.
pub const NT_V1: &str = "Nucleotide Transformer v1 (ESM, learned positions, GELU)";
pub const DNAGPT: Family = Family::new(
    "dnagpt",
    "DNAGPT (GPT-2 decoder, pooled over its masked-LM head's logits)",
);
pub const ENFORMER: Family = Family::new(
    "enformer",
    "Enformer (convolutions, attention pooling, relative-position transformer)",
);
pub const ECCDNAMAMBA: Family = Family::new(
    "eccdnamamba",
    "eccDNAMamba (bidirectional Mamba-2, gated MLPs)",
);
pub const LUCAONE: Family = Family::new(
    "lucaone",
    "LucaOne (pre-LayerNorm transformer, rotary, token types)",
);
pub const SPACE: Family = Family::new(
    "space",
    "SPACE (Enformer's trunk with species mixture-of-experts feed-forward blocks)",
);
pub const EVO: Family = Family::new(
    "stripedhyena",
    "Evo-1 (StripedHyena: modal long filters and rotary attention over bytes; causal)",
);
pub const JANUSDNA: Family = Family::new(
    "janusdna",
    "JanusDNA (bidirectional Mamba, attention, mixture of experts)",
);

pub const LLAMA: Family = Family::new(
    "llama",
    "Llama (RMSNorm, rotary, grouped-query attention, SwiGLU; causal)",
);
pub const MISTRAL: Family =
    Family::new("mistral", "Mistral (Llama with a sliding attention window)");
pub const GPT2: Family = Family::new(
    "gpt2",
    "GPT-2 (learned positions, LayerNorm, GELU, biases; causal)",
);
pub const OLMO: Family = Family::new(
    "olmo",
    "OLMo (LayerNorm, rotary, fused projections, SwiGLU; causal)",
);

/// The BERT stack (`arch/bert.rs`) and its variants, and RoFormer, which builds the same stack
/// (`arch/roformer.rs`): each file reads its names here, neither from the other.
pub const BERT: Family = Family::new("bert", "BERT");
pub const DNABERT2: &str = "DNABERT-2 (BERT with ALiBi and GLU)";
pub const GENOMICS_FM: &str =
    "Genomics-FM (MosaicBERT with GLU and learned positions, pooled by [CLS])";
pub const GENA_LM: &str = "GENA-LM (BERT, pre-layer-norm)";
pub const MUTBERT: &str = "MutBERT (BERT with rotary positions)";
pub const DEEPGENE: Family = Family::new(
    "roformer",
    "DeepGene (RoFormer: BERT with rotary positions in pairs)",
);
