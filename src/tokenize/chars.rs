//! Character tokenizers: HyenaDNA's `CharacterTokenizer` and Caduceus's `CaduceusTokenizer`
//! (published with those models' code, not in transformers). Both have a fixed vocabulary —
//! seven special tokens, then the configured characters — map every other character to
//! `[UNK]` and append `[SEP]`; Caduceus upper-cases the sequence first, HyenaDNA does not.

use super::{Kind, Settings, Tokenizer};
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
}

impl Chars {
    pub(super) fn tokens(&self, sequence: &str) -> Vec<u32> {
        let id = |c: char| self.ids.get(&c).copied().unwrap_or(self.other);
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
