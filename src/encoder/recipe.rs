//! How GENEB's reference extractor turns each model's sequences into one vector: one record
//! per extractor file of `darlednik/GENEB` (its tokenizer call, padding, whether the attention
//! mask reaches the model, its pooling line, truncation or windows, batching and the dtype it
//! runs on CUDA). The loader applies the record (`encoder::hf`), `geneb models --json`, the
//! page's model list, the README's table (`geneb models --recipes-markdown`) and every result's
//! `protocol.encoder` print it: the facts are stated here once.
//!
//! A model's record: `?recipe=NAME` where the user names one (DNABERT-2 has two extractor
//! files), else the known model's (`known.rs`, by hub id), else its architecture's.

use serde::Serialize;

/// How the reference extractor turns the final hidden states into one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pooling {
    /// Mean over the attention mask, special tokens included.
    MaskedMean,
    /// The first token's final hidden state (Genomics-FM's `sequence_output[:, 0]`).
    ClsToken,
    /// The mean over the attention mask of the model's masked-LM head's logits (DNAGPT's
    /// extractor pools the model's output, which is that head's).
    HeadLogitsMean,
    /// The plain mean over every position of the padded batch, padding included (HyenaDNA's
    /// `hidden_states[-1].mean(dim=1)`).
    UnmaskedMean,
    /// The plain mean over the output bins of the model's `human` head (Enformer's
    /// `out['human'].mean(dim=1)`): every input is one fixed length, so nothing is padding.
    BinMean,
    /// The plain mean over the output bins of the trunk's final pointwise layer, before the
    /// heads (SPACE's `model(x, return_embeddings=True)[-1].mean(dim=1)`).
    TrunkBinMean,
    /// The final state at column (non-pad tokens − 2) of the padded row, counted from the row's
    /// start (biofm-eval's `extract_decoder_variant_hidden_states`): the last nucleotide before
    /// [SEP] for a row without padding; with left padding, an earlier column for the shorter rows.
    NonPadCountLessTwo,
}

impl Pooling {
    pub fn describe(self) -> &'static str {
        match self {
            Pooling::MaskedMean => "mean over the attention mask, special tokens included",
            Pooling::ClsToken => "the first ([CLS]) token's final hidden state",
            Pooling::HeadLogitsMean => "mean over the tokens of the masked-LM head's logits",
            Pooling::UnmaskedMean => {
                "mean over every position of the padded batch, padding included"
            }
            Pooling::BinMean => "mean over the output bins of the human head's tracks",
            Pooling::TrunkBinMean => {
                "mean over the output bins of the final pointwise layer, before the heads"
            }
            Pooling::NonPadCountLessTwo => {
                "the final state at column (non-pad tokens − 2) of the padded row"
            }
        }
    }
}

/// One extractor's recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Recipe {
    /// Short stable name (`?recipe=NAME`).
    pub name: &'static str,
    /// The extractor file in `darlednik/GENEB` every fact below is read from.
    pub reference: &'static str,
    /// What the sequence text goes through before the tokenizer.
    pub input: Input,
    #[serde(rename = "specialTokens")]
    pub special_tokens: SpecialTokens,
    pub padding: Padding,
    /// Whether the attention mask is passed to the model (the pooling uses it either way,
    /// unless `pooling` is the unmasked mean).
    #[serde(rename = "maskToModel")]
    pub mask_to_model: bool,
    pub pooling: Pooling,
    pub truncation: Truncation,
    pub batching: Batching,
    /// What the reference runs in on CUDA (geneb runs f32, or f16 where asked).
    #[serde(rename = "referenceDtype")]
    pub reference_dtype: &'static str,
    /// Where geneb knowingly computes something else, and why.
    pub deviations: &'static [&'static str],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Input {
    /// The text as the task file gives it (the tokenizer does any case folding).
    AsGiven,
    /// Upper-cased, U → T, the IUPAC ambiguity codes → N; any other character is an error
    /// naming the sequence (SpliceBERT's `_normalize_sequence`).
    IupacToN,
    /// Upper-cased, U → T, then centre-cropped to `length` or padded with N on both sides to it
    /// (the extra N on the right), as Enformer's extractor's `one_hot_seq` does.
    Centred { length: usize },
    /// Cut at the end to a multiple of `multiple` nucleotides, then `prefix` (the tokenizer's
    /// BOS token's text) written before it, alone where nothing is left: GENERator's
    /// `_trim_to_multiple_of_6` and `self.bos_token + s2 if s2 else self.bos_token`. The
    /// tokenizer then reads the prefix as that token and adds its own BOS too.
    TrimmedAfterText {
        multiple: usize,
        prefix: &'static str,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpecialTokens {
    /// Those the tokenizer adds by default (`add_special_tokens=True`).
    Tokenizer,
    /// None (`add_special_tokens=False`).
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "side")]
pub enum Padding {
    /// On the right to the longest in the batch; the mask keeps it out of every result.
    Right,
    /// On the left to the longest of the batch.
    Left,
    /// On the side the model's tokenizer pads (`padding_side`: left for HyenaDNA's and
    /// Caduceus's character tokenizers, right for PlantCaduceus's `tokenizer.json`), to the
    /// longest of the batch.
    TokenizerSide,
    /// On the right to a fixed length (`padding="max_length"`).
    RightTo { length: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Truncation {
    /// Tokens cut at the model's maximum length, special tokens kept.
    ModelMaximum,
    /// Tokens cut at the extractor's own `max_length` (capped at the model's positions),
    /// special tokens kept.
    Tokens { length: usize },
    /// Windows of `size` nucleotides every `stride`, plus one ending at the sequence's end
    /// where the last regular one does not; each embedded alone, the sequence's embedding the
    /// plain mean of its windows'.
    Windows { size: usize, stride: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Batching {
    /// No result depends on its batch-mates (the mask keeps padding out), so geneb batches
    /// as it likes.
    Independent,
    /// Batches of `size` in the task file's order (`main.py`'s default `--batch_size 4`), the
    /// train and test sequences apart: padding reaches the states or the mean, so a
    /// sequence's embedding depends on its batch-mates, as the published rows' did.
    FileOrder { size: usize },
}

/// `main.py`'s default `--batch_size`.
pub const REFERENCE_BATCH: usize = 4;

impl Recipe {
    /// The windows this recipe embeds in, if any.
    pub fn windows(&self) -> Option<(usize, usize)> {
        match self.truncation {
            Truncation::Windows { size, stride } => Some((size, stride)),
            Truncation::ModelMaximum | Truncation::Tokens { .. } => None,
        }
    }

    /// The batch size when results depend on batch-mates.
    pub fn file_order_batch(&self) -> Option<usize> {
        match self.batching {
            Batching::FileOrder { size } => Some(size),
            Batching::Independent => None,
        }
    }
}

const GENEB: &str = "darlednik/GENEB";

/// A recipe whose facts are the common ones (right padding, the tokenizer's special tokens,
/// the mask passed, the masked mean, truncation at the model's maximum, f32), for `name`'s
/// extractor file.
const fn masked_mean(name: &'static str, reference: &'static str) -> Recipe {
    Recipe {
        name,
        reference,
        input: Input::AsGiven,
        special_tokens: SpecialTokens::Tokenizer,
        padding: Padding::Right,
        mask_to_model: true,
        pooling: Pooling::MaskedMean,
        truncation: Truncation::ModelMaximum,
        batching: Batching::Independent,
        reference_dtype: "f32",
        deviations: &[],
    }
}

pub const JANUSDNA: Recipe = Recipe {
    input: Input::AsGiven,
    special_tokens: SpecialTokens::None,
    padding: Padding::RightTo { length: 1024 },
    reference_dtype: "bf16",
    deviations: &[
        "runs in f32 where the reference casts the model to bf16 on CUDA",
        "a checkpoint lacking tensors the config needs is refused; the reference's \
         strict=False load would run them at their random initialisation",
    ],
    ..masked_mean("janusdna", "embedding_pipeline/extractors/janusdna.py")
};

pub const SPLICEBERT: Recipe = Recipe {
    input: Input::IupacToN,
    truncation: Truncation::Windows {
        size: 1024,
        stride: 512,
    },
    reference_dtype: "bf16 autocast",
    deviations: &["runs in f32 where the reference autocasts to bf16 on CUDA"],
    ..masked_mean("splicebert", "harness/extractors/splicebert.py")
};

pub const HYENADNA: Recipe = Recipe {
    padding: Padding::TokenizerSide,
    mask_to_model: false,
    pooling: Pooling::UnmaskedMean,
    batching: Batching::FileOrder {
        size: REFERENCE_BATCH,
    },
    reference_dtype: "bf16",
    deviations: &[
        "runs in f32 where the reference loads the model in bf16 on CUDA",
        "truncates at the model's maximum length; the reference asks the tokenizer for \
         160,000 tokens, beyond the shorter models' context",
    ],
    ..masked_mean("hyenadna", "embedding_pipeline/extractors/hyenadna.py")
};

pub const CADUCEUS: Recipe = Recipe {
    padding: Padding::TokenizerSide,
    mask_to_model: false,
    batching: Batching::FileOrder {
        size: REFERENCE_BATCH,
    },
    ..masked_mean("caduceus", "embedding_pipeline/extractors/caduceus.py")
};

pub const NT: Recipe = Recipe {
    deviations: &[
        "pads each batch to its longest sequence where the reference pads to \
         model_max_length: the mask keeps padding out of every real token, so only the \
         arithmetic differs",
    ],
    ..masked_mean("nt", "embedding_pipeline/extractors/nt.py")
};

/// DNABERT-2 has two extractor files of one class name, `DNABERT2Extractor`: `dnabert2.py`
/// (the masked mean) and `dnabert-2.py` ([CLS]). The published rows are taken to be
/// `dnabert2.py`'s: it is the file kept up to date with the pipeline (its later version, of the
/// commit that brought `janusdna.py` and `mutbert.py`, takes the `BaseEmbeddingExtractor` base
/// and `max_length=512` like them), while `dnabert-2.py` stayed at the older commit of
/// `hyenadna.py` and `nt.py`, without the base class. `?recipe=dnabert2-cls` runs the other.
pub const DNABERT2: Recipe = masked_mean("dnabert2", "embedding_pipeline/extractors/dnabert2.py");

/// `dnabert-2.py`: the same call, pooled by [CLS] (`?recipe=dnabert2-cls`).
pub const DNABERT2_CLS: Recipe = Recipe {
    pooling: Pooling::ClsToken,
    ..masked_mean("dnabert2-cls", "embedding_pipeline/extractors/dnabert-2.py")
};

pub const DNABERT_S: Recipe = Recipe {
    pooling: Pooling::ClsToken,
    deviations: &[
        "the reference loads it with AutoModel.from_pretrained and no trust_remote_code; geneb \
         runs the checkpoint's own MosaicBERT code (ALiBi, fused QKV, GLU), as DNABERT-2",
    ],
    ..masked_mean("dnabert-s", "embedding_pipeline/extractors/dnabert-s.py")
};

pub const GROVER: Recipe = masked_mean("grover", "embedding_pipeline/extractors/grover.py");

pub const GENALM: Recipe = masked_mean("genalm", "embedding_pipeline/extractors/genalm.py");

pub const MUTBERT: Recipe = masked_mean("mutbert", "embedding_pipeline/extractors/mutbert.py");

pub const GENOMICS_FM: Recipe = Recipe {
    pooling: Pooling::ClsToken,
    deviations: &[
        "the reference turns every character but ACGT into N after upper-casing (U too); \
         geneb's sequence readers turn U into T and the IUPAC codes into N before any model",
    ],
    ..masked_mean(
        "genomics-fm",
        "embedding_pipeline/extractors/genomics-fm.py",
    )
};

pub const DEEPGENE: Recipe = masked_mean("deepgene", "embedding_pipeline/extractors/deepgene.py");

pub const DNAGPT: Recipe = Recipe {
    pooling: Pooling::HeadLogitsMean,
    reference_dtype: "f16",
    deviations: &["runs in f32 where the reference casts the model to f16 on CUDA"],
    ..masked_mean("dnagpt", "embedding_pipeline/extractors/dnagpt.py")
};

/// `dnagpt.py` at e3d5f45, the newest of its versions, which the 3B model's row is taken to be
/// made with (`?recipe=dnagpt` runs the older reading on it). It imports GENEB's vendored copy of
/// DNAGPT (`utility_modules/DNAGPT_project`, a3c3bd1), whose forward returns `(logits, x)`,
/// writes `_, hidden = model(input_ids)` and pools `x`, `ln_f`'s output, over the non-pad ids of
/// `tokenizer.encode("<R>" + seq, max_len)`; no mask reaches the model (causal, padded on the
/// right: the real tokens see no padding). The versions disagree: 9fcbcbd imports the
/// upstream package, whose forward returns the head's logits alone, and pools `outputs[-1]`
/// (`recipe::DNAGPT`), and there with `main.py`'s batches of 4 `outputs[-1]` is the batch's last
/// sequence's logits, broadcast over every row; 17be5b0 pools `outputs[-1]` of
/// `utility_modules/DNAGPT` (not in the stored repository), with no `<R>`. Which version ran is
/// not recorded; this one is the only one whose output is each sequence's own hidden states.
pub const DNAGPT_HIDDEN: Recipe = Recipe {
    mask_to_model: false,
    reference_dtype: "f16",
    deviations: &["runs in f32 where the reference casts the model to f16 on CUDA"],
    ..masked_mean("dnagpt-hidden", "embedding_pipeline/extractors/dnagpt.py")
};

/// `omnina.py` (OmniNA): the common recipe; it sets the pad token to the eos token, which the
/// mask keeps out of every result.
pub const OMNINA: Recipe = masked_mean("omnina", "embedding_pipeline/extractors/omnina.py");

/// `metagene.py` (METAGENE-1): `last_hidden.mean(dim=1)`, the mean over every position of the
/// padded batch, padding included, though the mask reaches the model; padded on the tokenizer's
/// side. Its first version (9fcbcbd) and the newest (e3d5f45) pool alike.
pub const METAGENE: Recipe = Recipe {
    padding: Padding::TokenizerSide,
    pooling: Pooling::UnmaskedMean,
    batching: Batching::FileOrder {
        size: REFERENCE_BATCH,
    },
    reference_dtype: "the checkpoint's (no torch_dtype; device_map=\"auto\")",
    deviations: &[
        "a padded query of a left-padded batch sees no key; where the mean takes such rows in, \
         geneb's softmax over its all-masked row differs from transformers'",
    ],
    ..masked_mean("metagene", "embedding_pipeline/extractors/metagene.py")
};

/// `genomeocean.py` (GenomeOcean): the tokenizer loaded with `padding_side="left"`, cut at
/// `DICT_CONFIG_MODELS`' `max_length` (1,024 tokens for GenomeOcean-500M, 10,240 for -4B), the
/// mask passed and pooled, the model in bf16 on CUDA. Its versions agree on these lines.
const fn genomeocean(name: &'static str, length: usize) -> Recipe {
    Recipe {
        padding: Padding::Left,
        truncation: Truncation::Tokens { length },
        reference_dtype: "bf16",
        deviations: &["runs in f32 where the reference loads the model in bf16 on CUDA"],
        ..masked_mean(name, "embedding_pipeline/extractors/genomeocean.py")
    }
}

pub const GENOMEOCEAN_500M: Recipe = genomeocean("genomeocean-500m", 1024);
pub const GENOMEOCEAN_4B: Recipe = genomeocean("genomeocean-4b", 10240);

/// The length Enformer's extractor centres every sequence to (`self.seq_length = 196_608`).
pub const ENFORMER_SEQUENCE_LENGTH: usize = 196_608;

/// Enformer's extractor: `embedding_pipeline/extractors/enformer.py` as of commit 9fcbcbd
/// (`from_pretrained(name_model, use_tf_gamma=False)`, 196,608 bp, the `human` head's mean over
/// its 896 bins: 5,313 values). Its other versions cannot have produced the published row: the
/// first builds a randomly initialised `Enformer.from_hparams(...)` on 393,216 bp and embeds only
/// the first three sequences; the latest reads an undefined `seq_length` in `__init__` (a
/// NameError before any model is loaded).
pub const ENFORMER: Recipe = Recipe {
    input: Input::Centred {
        length: ENFORMER_SEQUENCE_LENGTH,
    },
    special_tokens: SpecialTokens::None,
    mask_to_model: false,
    pooling: Pooling::BinMean,
    ..masked_mean("enformer", "embedding_pipeline/extractors/enformer.py")
};

/// The length SPACE's extractor centres every sequence to (`self.seq_length = 131_072`).
pub const SPACE_SEQUENCE_LENGTH: usize = 131_072;

/// SPACE's extractor: `embedding_pipeline/extractors/space.py` (its two versions, 18e4a8d and
/// e3d5f45, differ only in the base class and a sys.path line): `Space.from_pretrained(name)`
/// on the model code GENEB vendors (`utility_modules/SPACE`, a3c3bd1), 131,072 bp centred as
/// Enformer's extractor centres, and `model(x, return_embeddings=True)[-1].mean(dim=1)`: the
/// mean over 896 bins of `final_pointwise`'s 2·dim features, before the heads.
pub const SPACE: Recipe = Recipe {
    input: Input::Centred {
        length: SPACE_SEQUENCE_LENGTH,
    },
    special_tokens: SpecialTokens::None,
    mask_to_model: false,
    pooling: Pooling::TrunkBinMean,
    ..masked_mean("space", "embedding_pipeline/extractors/space.py")
};

/// The longest input geneb gives Evo-1 131k: its name's context (8,192 positions of training,
/// stretched 16 times by its interpolated rotary positions). The extractor passes any length.
pub const EVO_CONTEXT: usize = 131_072;

/// Evo-1's extractor: `embedding_pipeline/extractors/evo.py` (its two versions, 18e4a8d and
/// e3d5f45, differ only in the base class): evo's `Evo('evo-1-131k-base')` (the model built
/// from evo's `evo-1-131k-base_inference.yml`, the hub weights at revision `1.1_fix`, cast to
/// bf16 but for the poles and residues), each sequence's bytes as tokens with nothing added,
/// and `outputs[-1].mean(dim=1)`, the final RMSNorm's output averaged (GENEB's copy of
/// stripedhyena's model.py returns it last).
pub const EVO: Recipe = Recipe {
    special_tokens: SpecialTokens::None,
    mask_to_model: false,
    reference_dtype: "bf16",
    deviations: &[
        "the extractor embeds only the first sequence of each batch (`seqs[i:i+bs][0]`); at \
         main.py's default batch of 4 its classifier could not have been fitted (one embedding \
         per four labels), so the published row ran one sequence per batch, every sequence \
         embedded alone and whole: geneb embeds every sequence, each as if alone",
        "runs in f32 where the reference casts every weight but the long filters' poles and \
         residues to bf16 on CUDA",
        "sequences longer than 131,072 bytes are cut there (and counted); the extractor \
         passes any length whole",
        "geneb's readers upper-case every sequence, turn U into T and IUPAC codes into N \
         before Evo reads its bytes; the extractor tokenizes the table's text as given, so \
         lower-case (soft-masked), U or IUPAC letters are other bytes there (text of A, C, G, \
         T and N alone is the same)",
    ],
    ..masked_mean("evo", "embedding_pipeline/extractors/evo.py")
};

/// `omnidna.py` (Omni-DNA): the common recipe cut at `max_length=250` tokens, Omni-DNA's
/// `max_sequence_length`, in its newest version (e3d5f45); its first (9fcbcbd) cut at 512,
/// past the positions the models were trained on. The model loads in f32 (no torch_dtype).
pub const OMNIDNA: Recipe = Recipe {
    padding: Padding::TokenizerSide,
    truncation: Truncation::Tokens { length: 250 },
    ..masked_mean("omnidna", "embedding_pipeline/extractors/omnidna.py")
};

/// `lucaone.py` (LucaOne; one version, e3d5f45): the common recipe. `encode_plus(seq_type="gene")`
/// one sequence at a time, cut at `max_position_embeddings` tokens ([SEP] kept last), padded on
/// the right with [PAD] to the batch's longest, the mask passed and pooled ([CLS] and [SEP]
/// included); the remote code's `task_level="token_level"` and `task_type="embedding"` change
/// nothing in `LucaGPLMModel`, which returns `last_hidden_state` after its last LayerNorm.
pub const LUCAONE: Recipe = masked_mean("lucaone", "embedding_pipeline/extractors/lucaone.py");

/// `eccdnamamba.py` (eccDNAMamba; its versions d18929a and e3d5f45 embed alike): the checkpoint's
/// tokenizer with `padding=True, truncation=True` (cut only at its `model_max_length`, which the
/// published tokenizer does not set), the mask passed, `hidden_states` (`lm_head_proj`'s output)
/// pooled by the mask ([CLS] included). The model's backward stream flips the whole padded
/// batch, so padding reaches the states: batches of 4 in file order, as main.py ran it. Its
/// `mamba_forward.use_mem_eff_path = False` sets an attribute nothing reads (the Mamba-2 layers
/// keep their fused CUDA path, the same computation).
pub const ECCDNAMAMBA: Recipe = Recipe {
    padding: Padding::TokenizerSide,
    batching: Batching::FileOrder {
        size: REFERENCE_BATCH,
    },
    ..masked_mean(
        "eccdnamamba",
        "embedding_pipeline/extractors/eccdnamamba.py",
    )
};
/// gpt2_gene_v1 and gpt2_gene_multi_v2_ft (dnagpt's GPT-2 models): darlednik/GENEB has no
/// extractor file for them in any stored version (its `extractors/` folder holds none naming
/// gpt2, and neither `main.py` nor the README names one), so the published rows are taken to be
/// the common recipe's, as `BaseEmbeddingExtractor`'s files write it: `AutoTokenizer` with its
/// special tokens, right padding, the mask passed, the masked mean of `hidden_states[-1]`, f32.
pub const GPT2: Recipe = masked_mean(
    "gpt2",
    "none (darlednik/GENEB has no gpt2 extractor file; the common recipe of the files)",
);

/// `generator.py` (GENERator) at e3d5f45, the newest of its three versions, which the published
/// rows are taken to be made with: each sequence cut to a multiple of 6 nt and the tokenizer's
/// `bos_token` (`<s>`) written before it as text, then `tokenizer(..., add_special_tokens=True,
/// padding=True, max_length=max_position_embeddings, truncation=True)` with `padding_side =
/// "right"`, the mask passed and `hidden_states[-1]` pooled over it, the model loaded with no
/// torch_dtype (f32). The checkpoints' tokenizer (add_bos_token, no add_eos_token) gives
/// `<s> <s> k-mers…`. The versions disagree: 18e4a8d tokenizes the sequence as given (a
/// remainder under 6 nt is one `<oov>`, no `<s>` text) and cuts only at the tokenizer's
/// model_max_length, which it does not set (`?recipe=generator-untrimmed`); 9fcbcbd passes
/// `remote_trust_code`, a misspelling with which the checkpoint's tokenizer code does not load.
pub const GENERATOR: Recipe = Recipe {
    input: Input::TrimmedAfterText {
        multiple: 6,
        prefix: "<s>",
    },
    ..masked_mean("generator", "embedding_pipeline/extractors/generator.py")
};

/// `generator.py` at 18e4a8d: the common recipe (see `GENERATOR`).
pub const GENERATOR_UNTRIMMED: Recipe = masked_mean(
    "generator-untrimmed",
    "embedding_pipeline/extractors/generator.py",
);

/// `biofm.py` (BioFM; one version, e3d5f45): biofm-eval's `Embedder.get_sequence_embeddings`
/// (m42-health/biofm-eval at 30d5ec2): the characters joined by spaces, `tokenizer(batch,
/// padding=True, truncation=True)` ([CLS] … [SEP], padded on the left, cut at the tokenizer's
/// `model_max_length`), the attention mask dropped before `model(input_ids,
/// output_hidden_states=True)` (so every real token attends the padding before it), and
/// `hidden_states[-1]` taken at column `(input_ids != pad).sum(1) − 2`. Padding reaches the
/// states and chooses the column: `main.py`'s batches of 4 in file order. The model loads in bf16.
pub const BIOFM: Recipe = Recipe {
    padding: Padding::Left,
    mask_to_model: false,
    pooling: Pooling::NonPadCountLessTwo,
    batching: Batching::FileOrder {
        size: REFERENCE_BATCH,
    },
    reference_dtype: "bf16",
    deviations: &["runs in f32 where the reference loads the model in bf16"],
    ..masked_mean("biofm", "embedding_pipeline/extractors/biofm.py")
};

/// For a model no extractor file names (a BERT, ESM, … of the user's own): the common recipe.
pub const GENERIC: Recipe = masked_mean("generic", "none (the common recipe of the files)");

/// Every recipe, for `?recipe=NAME`, the lists and the README.
pub const RECIPES: &[&Recipe] = &[
    &NT,
    &DNABERT2,
    &DNABERT2_CLS,
    &DNABERT_S,
    &GROVER,
    &HYENADNA,
    &CADUCEUS,
    &SPLICEBERT,
    &MUTBERT,
    &GENOMICS_FM,
    &DEEPGENE,
    &DNAGPT,
    &DNAGPT_HIDDEN,
    &GENALM,
    &JANUSDNA,
    &OMNINA,
    &METAGENE,
    &GENOMEOCEAN_500M,
    &GENOMEOCEAN_4B,
    &ENFORMER,
    &SPACE,
    &EVO,
    &OMNIDNA,
    &LUCAONE,
    &ECCDNAMAMBA,
    &GPT2,
    &GENERATOR,
    &GENERATOR_UNTRIMMED,
    &BIOFM,
    &GENERIC,
];

/// The recipe named `name`, or an error listing them.
pub fn by_name(name: &str) -> crate::Result<&'static Recipe> {
    RECIPES
        .iter()
        .copied()
        .find(|r| r.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = RECIPES.iter().map(|r| r.name).collect();
            crate::Error::new(format!(
                "no recipe '{name}': geneb knows {}",
                names.join(", ")
            ))
        })
}

/// What `Recipe::columns` states, in order: the README table's headers.
const FACTS: [&str; 7] = [
    "Special tokens",
    "Padding",
    "Mask to model",
    "Pooling",
    "Truncation",
    "Batches",
    "Reference dtype (CUDA)",
];

impl Recipe {
    /// The facts in words, one per column of the README's table (`FACTS`).
    pub fn columns(&self) -> [String; 7] {
        let padding = match self.padding {
            Padding::Right => "right, to the batch's longest".to_string(),
            Padding::Left => "left, to the batch's longest".to_string(),
            Padding::TokenizerSide => {
                "the tokenizer's side (left for HyenaDNA's and Caduceus's tokenizers, right for \
                 PlantCaduceus's), to the batch's longest"
                    .to_string()
            }
            Padding::RightTo { length } => format!("right, to {length} tokens"),
        };
        let specials = match self.special_tokens {
            SpecialTokens::Tokenizer => "the tokenizer's",
            SpecialTokens::None => "none",
        };
        let input = match self.input {
            Input::AsGiven => String::new(),
            Input::IupacToN => "; upper-cased, U→T, IUPAC codes → N, others refused".to_string(),
            Input::Centred { length } => format!(
                "; upper-cased, U→T, centre-cropped or N-padded to {length} nt, one-hot \
                 (N and any other character as zeros)"
            ),
            Input::TrimmedAfterText { multiple, prefix } => format!(
                "; cut to a multiple of {multiple} nt, then the text `{prefix}` before it (read \
                 as that token, after the one the tokenizer adds)"
            ),
        };
        let truncation = match self.truncation {
            Truncation::ModelMaximum => "model maximum".to_string(),
            Truncation::Tokens { length } => format!("{length} tokens (or the model maximum)"),
            Truncation::Windows { size, stride } => format!(
                "windows of {size} nt every {stride}, plus one ending at the end; mean of windows"
            ),
        };
        let batching = match self.batching {
            Batching::Independent => "any (mask)".to_string(),
            Batching::FileOrder { size } => format!("{size} in file order"),
        };
        [
            format!("{specials}{input}"),
            padding,
            if self.mask_to_model { "yes" } else { "no" }.to_string(),
            self.pooling.describe().to_string(),
            truncation,
            batching,
            self.reference_dtype.to_string(),
        ]
    }

    /// The facts in one line (the page's model table).
    pub fn summary(&self) -> String {
        let facts: Vec<String> = FACTS
            .iter()
            .zip(self.columns())
            .map(|(fact, value)| format!("{fact}: {value}"))
            .collect();
        format!("{} ({})", facts.join("; "), self.reference)
    }

    /// `geneb models --recipes-markdown`'s row for the models `models` (their display names).
    fn markdown_row(&self, models: &str) -> String {
        let deviations = if self.deviations.is_empty() {
            "none".to_string()
        } else {
            self.deviations.join("; ")
        };
        let reference = if self.reference.starts_with("none") {
            self.reference.to_string()
        } else {
            format!(
                "[`{}`](https://github.com/{GENEB}/blob/main/{})",
                self.reference, self.reference
            )
        };
        format!(
            "| {models} | `{}` | {} | {reference} | {deviations} |",
            self.name,
            self.columns().join(" | ")
        )
    }
}

/// The README's recipe table: one row per recipe, with the known models that use it.
pub fn markdown(models_of: impl Fn(&Recipe) -> Vec<&'static str>) -> String {
    let mut out = format!(
        "| Models | Recipe | {} | Reference file | Deviations |\n|{}\n",
        FACTS.join(" | "),
        "---|".repeat(FACTS.len() + 4)
    );
    for recipe in RECIPES {
        let models = models_of(recipe);
        let models = if models.is_empty() {
            "(by `?recipe=`)".to_string()
        } else {
            models.join(", ")
        };
        out.push_str(&recipe.markdown_row(&models));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipes_have_unique_names_and_are_found_by_them() {
        for recipe in RECIPES {
            assert_eq!(by_name(recipe.name).unwrap(), *recipe);
        }
        let err = by_name("nope").unwrap_err().to_string();
        assert!(
            err.contains("no recipe 'nope'") && err.contains("dnabert2-cls"),
            "{err}"
        );
    }
}
