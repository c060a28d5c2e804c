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
}

impl Chars {
    pub(super) fn tokens(&self, sequence: &str) -> Vec<u32> {
        let id = |c: char| self.ids.get(&c).copied().unwrap_or(UNK);
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
        kind: Kind::Chars(Chars { ids, upper_case }),
        prefix: Vec::new(),
        suffix: vec![SEP],
        pad_id: PAD,
        vocab_size: SPECIALS.len() + configured.len(),
        model_max_length: None,
        pads_left: false,
        description: format!("characters{case} ({name})"),
    }
}
