//! Tokenizers that give the same token ids as the Hugging Face tokenizers of the supported DNA
//! models, called as the GENEB reference extractors call them: `tokenizer(seq, truncation=True,
//! max_length=M)`, i.e. with the special tokens the tokenizer adds by default, and truncation that
//! shortens the sequence's tokens and keeps the special tokens.
//!
//! Four kinds, chosen by the architecture (`TokenizerChoice`) and the tokenizer files:
//! - characters (HyenaDNA's `CharacterTokenizer`, Caduceus's `CaduceusTokenizer`, which
//!   upper-cases first): one token per character, `[SEP]` appended (PlantCaduceus, a Caduceus
//!   that ships a `tokenizer.json` instead, takes the pipeline below);
//! - longest match over `vocab.txt` (Nucleotide Transformer's `EsmTokenizer`): 6-mers (or
//!   3-mers) left to right, single nucleotides where no k-mer fits, `<cls>` prepended;
//! - WordPiece over `vocab.txt` (BERT: SpliceBERT, DNABERT), fed as these models are fed:
//!   single nucleotides or overlapping k-mers separated by spaces;
//! - bytes (Evo's `CharLevelTokenizer`): each byte of the text its id;
//! - non-overlapping k-mers (GENERator's `DNAKmerTokenizer`, which `tokenizer_config.json`
//!   names): built from its `k`, special-token names in the text read as those tokens;
//! - a `tokenizer.json` pipeline (DNABERT-2, GROVER): normalizer, pre-tokenizer, BPE or
//!   WordPiece model and post-processor, implementing the components those files use and
//!   refusing others by name.
//!
//! The ids are exact for ASCII input (geneb's sequence readers admit nothing else); text
//! normalisations that only change non-ASCII characters (Unicode NFD accent stripping, Unicode
//! punctuation) are not implemented. Nor is the splitting-out of special-token names written
//! in the text itself (`[SEP]` inside a sequence), which DNA never contains.

mod bpe;
mod chars;
mod dnagpt;
mod generator;
mod kmer;
mod pipeline;
mod trie;

pub use chars::FIRST_CHARACTER_ID as CHARACTER_IDS_FROM;
pub use dnagpt::vocab_size as dnagpt_vocab_size;

use crate::checkpoint::ModelFiles;
use crate::{Error, Result};
use serde_json::Value;

pub struct Tokenizer {
    kind: Kind,
    /// The special-token ids the HF tokenizer puts before and after every sequence.
    prefix: Vec<u32>,
    suffix: Vec<u32>,
    pad_id: u32,
    vocab_size: usize,
    model_max_length: Option<usize>,
    /// Whether the HF tokenizer pads a batch on the left (`padding_side`).
    pads_left: bool,
    description: String,
}

enum Kind {
    Chars(chars::Chars),
    Chunks(dnagpt::Chunks),
    LongestMatch(kmer::LongestMatch),
    GeneratorKmers(generator::Kmers),
    Pipeline(pipeline::Pipeline),
    /// The text's bytes (`np.frombuffer(text.encode(), dtype=np.uint8)`).
    Bytes,
}

/// The tokenizer an architecture's checkpoints come with, as the registry
/// (`encoder::arch::ArchSpec`) names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerChoice {
    /// One token per character, `[SEP]` appended (HyenaDNA's `CharacterTokenizer`; Caduceus's
    /// `CaduceusTokenizer` upper-cases first).
    Characters { upper_case: bool },
    /// `EsmTokenizer` over `vocab.txt` where the folder has one, else the tokenizer files.
    Esm,
    /// `CaduceusTokenizer` (upper-cased characters, `[SEP]` appended), unless the folder has a
    /// `tokenizer.json` that `tokenizer_config.json` does not override with `CaduceusTokenizer`,
    /// as `AutoTokenizer` decides: PlantCaduceus ships GPN's lower-casing single-nucleotide
    /// `tokenizer.json`, with no special tokens.
    CaduceusOrFiles,
    /// Whatever the tokenizer files say: `tokenizer.json`, else a BERT `vocab.txt`; GENERator's
    /// `DNAKmerTokenizer` where `tokenizer_config.json` names that class; BioFM's
    /// `AnnotationTokenizer` where the settings give its `char_ords`.
    Files,
    /// DeepGene's extractor: `tokenizer.json`'s tokens without its special tokens, after
    /// [CLS] (id 1) and [SEP] (id 2), padded with id 3, to the model's length alone
    /// (`tokenizer_config.json` is not read).
    DeepGene,
    /// DNAGPT's `KmerTokenizer`, from config.json's `kmer` and `dynamic_kmer`.
    DnaGptKmers,
    /// LucaOne's `LucaGPLMTokenizer` with `seq_type="gene"` (no files read: the class builds
    /// its vocabulary itself).
    LucaOneGene,
    /// Evo's `CharLevelTokenizer(512)`: each byte of the text is its id, nothing added; pads
    /// with id 1 (its `pad_id`).
    Bytes,
}

/// `CharLevelTokenizer`'s vocabulary and `pad_id`.
const BYTE_VOCAB: usize = 512;
const BYTE_PAD: u32 = 1;

/// The ids DeepGene's extractor writes itself.
const DEEPGENE_PREFIX: [u32; 2] = [1, 2];
const DEEPGENE_PAD: u32 = 3;

impl TokenizerChoice {
    pub fn describe(self) -> &'static str {
        match self {
            TokenizerChoice::Characters { upper_case: false } => "characters",
            TokenizerChoice::Characters { upper_case: true } => "characters (upper-cased)",
            TokenizerChoice::Esm => "k-mers, longest match over vocab.txt (EsmTokenizer)",
            TokenizerChoice::CaduceusOrFiles => {
                "characters (upper-cased), or the folder's tokenizer.json (PlantCaduceus)"
            }
            TokenizerChoice::Files => {
                "tokenizer.json (BPE or WordPiece), vocab.txt (WordPiece), the k-mers of \
                 GENERator's DNAKmerTokenizer, or BioFM's AnnotationTokenizer"
            }
            TokenizerChoice::DeepGene => {
                "tokenizer.json's tokens after [CLS] [SEP] (DeepGene's extractor)"
            }
            TokenizerChoice::DnaGptKmers => "non-overlapping k-mers (DNAGPT's KmerTokenizer)",
            TokenizerChoice::LucaOneGene => "nucleotides as LucaOne's gene tokens, [CLS] … [SEP]",
            TokenizerChoice::Bytes => "bytes (Evo's CharLevelTokenizer)",
        }
    }
}

impl Tokenizer {
    /// The model's tokenizer of the kind its architecture takes, read from its files
    /// (`tokenizer.json`, `vocab.txt`, `tokenizer_config.json`, `special_tokens_map.json`).
    pub fn from_files(files: &ModelFiles, choice: TokenizerChoice) -> Result<Tokenizer> {
        let settings = Settings::read(files)?;
        let model_max_length = settings.model_max_length();
        let caduceus_tokenizer = !files.contains("tokenizer.json")
            || settings.tokenizer_config["tokenizer_class"] == "CaduceusTokenizer";
        // GENERator's class is code, not files: tokenizer_config.json names it and its `k`.
        let generator_kmers = settings.tokenizer_config["tokenizer_class"] == "DNAKmerTokenizer";
        let mut tokenizer = match choice {
            TokenizerChoice::Characters { upper_case } => {
                chars::character_tokenizer(&settings, upper_case)
            }
            TokenizerChoice::CaduceusOrFiles if caduceus_tokenizer => {
                chars::character_tokenizer(&settings, true)
            }
            TokenizerChoice::Esm if files.contains("vocab.txt") => {
                kmer::esm_tokenizer(files, &settings)?
            }
            TokenizerChoice::DnaGptKmers => return dnagpt::dnagpt_tokenizer(files),
            TokenizerChoice::LucaOneGene => return Ok(chars::lucaone_gene_tokenizer()),
            TokenizerChoice::Bytes => {
                return Ok(Tokenizer {
                    kind: Kind::Bytes,
                    prefix: Vec::new(),
                    suffix: Vec::new(),
                    pad_id: BYTE_PAD,
                    vocab_size: BYTE_VOCAB,
                    model_max_length: None,
                    pads_left: false,
                    description: "bytes (CharLevelTokenizer)".to_string(),
                });
            }
            TokenizerChoice::DeepGene => {
                if !files.contains("tokenizer.json") {
                    return Err(Error::in_file(
                        &files.name,
                        "no tokenizer.json (DeepGene's tokenizer file)",
                    ));
                }
                let mut tokenizer = pipeline::from_tokenizer_json(files, &settings)?;
                if tokenizer.vocab_size <= DEEPGENE_PAD as usize {
                    return Err(settings.error(
                        "tokenizer.json",
                        format!(
                            "{} tokens: DeepGene's layout needs ids 1–3 for [CLS], [SEP], [PAD]",
                            tokenizer.vocab_size
                        ),
                    ));
                }
                tokenizer.prefix = DEEPGENE_PREFIX.to_vec();
                tokenizer.suffix.clear();
                tokenizer.pad_id = DEEPGENE_PAD;
                tokenizer.description += ", [CLS] [SEP] before the sequence (DeepGene)";
                return Ok(tokenizer);
            }
            TokenizerChoice::Files if generator_kmers => generator::generator_tokenizer(&settings)?,
            TokenizerChoice::Files => match annotation_settings(files, &settings)? {
                Some((annotation, source)) => {
                    return chars::annotation_tokenizer(&annotation, &source);
                }
                None => tokenizer_files(files, &settings)?,
            },
            TokenizerChoice::Esm | TokenizerChoice::CaduceusOrFiles => {
                tokenizer_files(files, &settings)?
            }
        };
        tokenizer.model_max_length = model_max_length;
        // `padding_side` where tokenizer_config.json sets it, else the class's default: left
        // for HyenaDNA's and Caduceus's character tokenizers, right for the others.
        tokenizer.pads_left = match settings.tokenizer_config["padding_side"].as_str() {
            Some(side) => side == "left",
            None => matches!(tokenizer.kind, Kind::Chars(_)),
        };
        Ok(tokenizer)
    }

    /// The ids for one sequence, special tokens included. With `max_length`, the sequence's own
    /// tokens are cut so that the whole, special tokens kept, is at most that long.
    pub fn encode(&self, sequence: &str, max_length: Option<usize>) -> Vec<u32> {
        let mut tokens = self.tokens(sequence);
        if let Some(max) = max_length {
            tokens.truncate(self.room(max));
        }
        let mut ids = Vec::with_capacity(self.prefix.len() + tokens.len() + self.suffix.len());
        ids.extend_from_slice(&self.prefix);
        ids.extend(tokens);
        ids.extend_from_slice(&self.suffix);
        ids
    }

    /// Whether `encode(sequence, Some(max_length))` cuts tokens off the sequence.
    pub fn truncates(&self, sequence: &str, max_length: usize) -> bool {
        self.tokens(sequence).len() > self.room(max_length)
    }

    /// The sequence's own tokens, no special tokens.
    fn tokens(&self, sequence: &str) -> Vec<u32> {
        match &self.kind {
            Kind::Chars(chars) => chars.tokens(sequence),
            Kind::Chunks(chunks) => chunks.tokens(sequence),
            Kind::LongestMatch(kmers) => kmers.tokens(sequence),
            Kind::GeneratorKmers(kmers) => kmers.tokens(sequence),
            Kind::Pipeline(pipeline) => pipeline.tokens(sequence),
            Kind::Bytes => sequence.bytes().map(u32::from).collect(),
        }
    }

    /// How many of a sequence's own tokens fit in `max_length` beside the special tokens.
    fn room(&self, max_length: usize) -> usize {
        max_length.saturating_sub(self.prefix.len() + self.suffix.len())
    }

    /// The tokenizer called with `add_special_tokens=False` (JanusDNA's extractor).
    pub fn without_special_tokens(mut self) -> Tokenizer {
        if !(self.prefix.is_empty() && self.suffix.is_empty()) {
            self.prefix.clear();
            self.suffix.clear();
            self.description += ", no special tokens";
        }
        self
    }

    /// Whether the HF tokenizer pads a batch on the left.
    pub fn pads_left(&self) -> bool {
        self.pads_left
    }

    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// `model_max_length` from `tokenizer_config.json`, where it sets a real limit.
    pub fn model_max_length(&self) -> Option<usize> {
        self.model_max_length
    }

    /// What the tokenizer is, for the user: e.g. "BPE (tokenizer.json), 4096 tokens".
    pub fn describe(&self) -> String {
        format!("{}, {} tokens", self.description, self.vocab_size)
    }
}

/// The tokenizer `tokenizer.json` describes, else a BERT `vocab.txt`.
fn tokenizer_files(files: &ModelFiles, settings: &Settings) -> Result<Tokenizer> {
    if files.contains("tokenizer.json") {
        pipeline::from_tokenizer_json(files, settings)
    } else if files.contains("vocab.txt") {
        pipeline::bert_from_vocab(files, settings)
    } else {
        Err(Error::in_file(
            &files.name,
            "no tokenizer files: expected tokenizer.json or vocab.txt",
        ))
    }
}

/// BioFM's `AnnotationTokenizer` settings (`char_ords`) and the file they are in: config.json's
/// `tokenizer_config`, which `AnnotationTokenizer.from_pretrained` reads given a hub id (as
/// GENEB's biofm.py gives it), else tokenizer_config.json, which it reads given a folder.
fn annotation_settings(files: &ModelFiles, settings: &Settings) -> Result<Option<(Value, String)>> {
    if files.contains("config.json") {
        let embedded = &files.config()?["tokenizer_config"];
        if embedded.get("char_ords").is_some() {
            return Ok(Some((
                embedded.clone(),
                format!("{}/config.json", files.name),
            )));
        }
    }
    Ok(settings.tokenizer_config.get("char_ords").map(|_| {
        (
            settings.tokenizer_config.clone(),
            format!("{}/tokenizer_config.json", files.name),
        )
    }))
}

/// `tokenizer_config.json` and `special_tokens_map.json`, either of which may be absent.
struct Settings {
    /// The model as the user named it, for messages.
    model: String,
    tokenizer_config: Value,
    special_tokens_map: Value,
}

/// A special token as the configuration sets it.
enum TokenSetting {
    Absent,
    /// Explicitly `null`: the tokenizer has none (NT-v2's eos token).
    Disabled,
    Named(String),
}

impl Settings {
    fn read(files: &ModelFiles) -> Result<Settings> {
        let json = |file: &str| -> Result<Value> {
            match files.get(file) {
                None => Ok(Value::Null),
                Some(bytes) => serde_json::from_slice(bytes).map_err(|e| {
                    Error::in_file(
                        format!("{}/{file}", files.name),
                        format!("not valid JSON ({e})"),
                    )
                }),
            }
        };
        Ok(Settings {
            model: files.name.clone(),
            tokenizer_config: json("tokenizer_config.json")?,
            special_tokens_map: json("special_tokens_map.json")?,
        })
    }

    fn model_max_length(&self) -> Option<usize> {
        // Without a limit, transformers writes a huge float (1e30), which as_u64 rejects.
        self.tokenizer_config["model_max_length"]
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
    }

    /// `tokenizer_config.json` wins over `special_tokens_map.json`; a token is a string or an
    /// AddedToken object with `content`.
    fn token(&self, key: &str) -> TokenSetting {
        for source in [&self.tokenizer_config, &self.special_tokens_map] {
            match source.get(key) {
                None => continue,
                Some(Value::Null) => return TokenSetting::Disabled,
                Some(Value::String(s)) => return TokenSetting::Named(s.clone()),
                Some(other) => {
                    if let Some(s) = other["content"].as_str() {
                        return TokenSetting::Named(s.to_string());
                    }
                }
            }
        }
        TokenSetting::Absent
    }

    /// The token's name, or `default` where the configuration does not set it.
    fn token_or(&self, key: &str, default: &str) -> Option<String> {
        match self.token(key) {
            TokenSetting::Absent => Some(default.to_string()),
            TokenSetting::Disabled => None,
            TokenSetting::Named(name) => Some(name),
        }
    }

    fn bool_or(&self, key: &str, default: bool) -> bool {
        self.tokenizer_config[key].as_bool().unwrap_or(default)
    }

    fn error(&self, file: &str, message: impl Into<String>) -> Error {
        Error::in_file(format!("{}/{file}", self.model), message)
    }
}

/// `vocab.txt`: one token per line, its id the line number (a repeated token keeps the last).
fn read_vocab_txt(files: &ModelFiles) -> Result<Vec<String>> {
    let bytes = files
        .get("vocab.txt")
        .ok_or_else(|| Error::in_file(&files.name, "vocab.txt is missing"))?;
    let text = std::str::from_utf8(bytes).map_err(|_| {
        Error::in_file(
            format!("{}/vocab.txt", files.name),
            "not UTF-8 text: is it the model's vocab.txt?",
        )
    })?;
    Ok(text.lines().map(|line| line.trim().to_string()).collect())
}

fn lookup(
    vocab: &std::collections::HashMap<String, u32>,
    settings: &Settings,
    file: &str,
    what: &str,
    token: &str,
) -> Result<u32> {
    vocab.get(token).copied().ok_or_else(|| {
        settings.error(
            file,
            format!("the {what} token '{token}' is not in the vocabulary"),
        )
    })
}
