//! The model families geneb runs, as a person reads them, written once: the architectures'
//! registry (`arch::ArchSpec::family`, and the variants one BERT stack serves) names them from
//! here. Plain text, no Burn.

/// The BERT stack's variants (`arch/bert.rs`), and RoFormer's, which builds the same stack
/// (`arch/roformer.rs`): each file reads its names here, neither from the other.
pub const BERT: &str = "BERT";
pub const DNABERT2: &str = "DNABERT-2 (BERT with ALiBi and GLU)";
pub const GENOMICS_FM: &str =
    "Genomics-FM (MosaicBERT with GLU and learned positions, pooled by [CLS])";
pub const GENA_LM: &str = "GENA-LM (BERT, pre-layer-norm)";
pub const MUTBERT: &str = "MutBERT (BERT with rotary positions)";
pub const DEEPGENE: &str = "DeepGene (RoFormer: BERT with rotary positions in pairs)";
