//! Character tokenizers: HyenaDNA's `CharacterTokenizer` and Caduceus's `CaduceusTokenizer`
//! (published with those models' code, not in transformers). Both have a fixed vocabulary —
//! seven special tokens, then the configured characters — map every other character to
//! `[UNK]` and append `[SEP]`; Caduceus upper-cases the sequence first, HyenaDNA does not.

use super::{Kind, Settings, Tokenizer};
use crate::{Error, Result};
use serde_json::Value;
use std::collections::HashMap;

const SPECIALS: [&str; 7] = [
    "[CLS]",
    "[SEP]",
    "[BOS]",
    "[MASK]",
    "[PAD]",
    "[RESERVED]",
    "[UNK]",
];
/// The id of the first configured character (A with the default A C G T N).
pub const FIRST_CHARACTER_ID: u32 = SPECIALS.len() as u32;
const SEP: u32 = 1;
const PAD: u32 = 4;
const UNK: u32 = 6;

pub(super) struct Chars {
    ids: HashMap<char, u32>,
    upper_case: bool,
    /// The id of a character not in `ids`.
    other: u32,
    /// Whitespace gives no token (BioFM's characters are joined by spaces, then split).
    skips_whitespace: bool,
}

/// Python's `str.isspace`: Unicode whitespace and the separators U+001C to U+001F.
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

impl Chars {
    pub(super) fn tokens(&self, sequence: &str) -> Vec<u32> {
        let id = |c: char| self.ids.get(&c).copied().unwrap_or(self.other);
        if self.skips_whitespace {
            return sequence
                .chars()
                .filter(|&c| !python_space(c))
                .map(id)
                .collect();
        }
        if self.upper_case {
            // Python's str.upper(), which like char::to_uppercase may give several characters.
            sequence
                .chars()
                .flat_map(char::to_uppercase)
                .map(id)
                .collect()
        } else {
            sequence.chars().map(id).collect()
        }
    }
}

/// The characters come from `tokenizer_config.json` (`characters`), A C G T N by default; a
/// multi-character entry can never match one character, so it only takes an id, as in Python.
pub(super) fn character_tokenizer(settings: &Settings, upper_case: bool) -> Tokenizer {
    let configured: Vec<String> = settings.tokenizer_config["characters"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_else(|| ["A", "C", "G", "T", "N"].map(String::from).to_vec());
    let mut ids = HashMap::new();
    for (i, entry) in configured.iter().enumerate() {
        let mut chars = entry.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            ids.insert(c, (SPECIALS.len() + i) as u32);
        }
    }
    let (name, case) = if upper_case {
        ("Caduceus", ", upper-cased")
    } else {
        ("HyenaDNA", "")
    };
    Tokenizer {
        kind: Kind::Chars(Chars {
            ids,
            upper_case,
            other: UNK,
            skips_whitespace: false,
        }),
        prefix: Vec::new(),
        suffix: vec![SEP],
        pad_id: PAD,
        vocab_size: SPECIALS.len() + configured.len(),
        model_max_length: None,
        pads_left: false,
        description: format!("characters{case} ({name})"),
    }
}

/// LucaOne's `LucaGPLMTokenizer` (the `lucaone` package) as GENEB's extractor calls it,
/// `encode_plus(seq_type="gene")`: `gene_seq_replace` writes A→1, T/U→2, C→3, G→4 (either case)
/// and any other character as 5, each of which is one token of the `gene_prot` vocabulary
/// (`from_pretrained` always builds that one: [PAD] [UNK] [CLS] [SEP] [MASK], then 1 … 5 as ids
/// 5 … 9, then the amino acids), between [CLS] (2) and [SEP] (3). [PAD] is 0.
pub(super) fn lucaone_gene_tokenizer() -> Tokenizer {
    const CLS: u32 = 2;
    const SEP: u32 = 3;
    const PAD: u32 = 0;
    /// The id of '1' (A); 2, 3, 4 follow, and 5 (any other character) is `OTHER`.
    const A: u32 = 5;
    const OTHER: u32 = 9;
    /// The `gene_prot` vocabulary: 5 special tokens, 34 standard ones.
    const VOCABULARY: usize = 39;
    let mut ids = HashMap::new();
    for (offset, letters) in ["Aa", "TtUu", "Cc", "Gg"].iter().enumerate() {
        for c in letters.chars() {
            ids.insert(c, A + offset as u32);
        }
    }
    Tokenizer {
        kind: Kind::Chars(Chars {
            ids,
            upper_case: false,
            other: OTHER,
            skips_whitespace: false,
        }),
        prefix: vec![CLS],
        suffix: vec![SEP],
        pad_id: PAD,
        vocab_size: VOCABULARY,
        model_max_length: None,
        pads_left: false,
        description: "nucleotides A T/U C G, others as N (LucaOne's gene tokens)".to_string(),
    }
}

/// BioFM's `AnnotationTokenizer` (m42-health/biofm-eval at 30d5ec2, `tokenizers/base.py`) as
/// `Embedder.get_sequence_embeddings` calls it: the sequence's characters joined by spaces, then
/// split on whitespace, so each character is one token and whitespace none. Ids as its
/// `_vocab_str_to_int` builds them: the configured characters from 0, [CLS] 6, [SEP] 7, [UNK] 8,
/// [PAD] 9, [EOS] 10, [BOS] 11, [SPECIAL] 12, the variant letters ÂṰĜĈ from 13, then its 7
/// annotation tokens after the entries so far; any other character is [UNK]. [CLS] before, [SEP]
/// after, padded on the left, cut at `model_max_length`.
pub(super) fn annotation_tokenizer(annotation: &Value, source: &str) -> Result<Tokenizer> {
    const CLS: u32 = 6;
    const SEP: u32 = 7;
    const UNK: u32 = 8;
    const PAD: u32 = 9;
    const SPECIALS: [&str; 7] = [
        "[CLS]",
        "[SEP]",
        "[UNK]",
        "[PAD]",
        "[EOS]",
        "[BOS]",
        "[SPECIAL]",
    ];
    const VARIANTS: [char; 4] = ['Â', 'Ṱ', 'Ĝ', 'Ĉ'];
    const ANNOTATIONS: usize = 7;
    let bad = |what: &str| Error::in_file(source, format!("AnnotationTokenizer's {what}"));
    let ords = annotation["char_ords"]
        .as_array()
        .ok_or_else(|| bad("'char_ords' is not a list of character codes"))?;
    let mut vocab: HashMap<String, u32> = HashMap::new();
    for (i, ord) in ords.iter().enumerate() {
        let c = ord
            .as_u64()
            .and_then(|o| u32::try_from(o).ok())
            .and_then(char::from_u32)
            .ok_or_else(|| bad(&format!("'char_ords' entry {ord} is no character code")))?;
        vocab.insert(c.to_string(), i as u32);
    }
    for (i, special) in SPECIALS.iter().enumerate() {
        vocab.insert(special.to_string(), CLS + i as u32);
    }
    for (i, variant) in VARIANTS.iter().enumerate() {
        vocab.insert(variant.to_string(), 13 + i as u32);
    }
    // The annotation tokens' ids start at the entries so far, as `len(self._vocab_str_to_int)`.
    let vocab_size = vocab.len() + ANNOTATIONS;
    let model_max_length = annotation["model_max_length"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| bad("'model_max_length' is not a whole number"))?;
    let ids = vocab
        .iter()
        .filter_map(|(token, &id)| {
            let mut chars = token.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Some((c, id)),
                _ => None,
            }
        })
        .collect();
    Ok(Tokenizer {
        kind: Kind::Chars(Chars {
            ids,
            upper_case: false,
            other: UNK,
            skips_whitespace: true,
        }),
        prefix: vec![CLS],
        suffix: vec![SEP],
        pad_id: PAD,
        vocab_size,
        model_max_length: Some(model_max_length),
        pads_left: true,
        description: "characters, [CLS] … [SEP] (BioFM's AnnotationTokenizer)".to_string(),
    })
}
