//! DNAGPT's `KmerTokenizer` (TencentAILabHealthcare/DNAGPT, `dna_gpt/tokenizer.py`), built from
//! its arguments, not from files: 34 reserved tokens (`<0>` … `<9>`, operators, letters, `<P>`
//! the padding) then every k-mer over `NAGCT` in `itertools.product` order — only k-mers of
//! length k, or with `dynamic_kmer` every length from 1 to k, shorter first. A sequence is cut
//! into consecutive, non-overlapping chunks of k from its start; a chunk that is no token (the
//! short tail without `dynamic_kmer`, anything outside `NAGCT`) is id 0. No special tokens are
//! added, except the reserved token config.json's `prompt` names, before the sequence (`<R>`, as
//! dnagpt.py's newest version writes it).

use super::{Kind, Tokenizer};
use crate::checkpoint::ModelFiles;
use crate::{Error, Result};

/// The extractor's reserved tokens, in its order: 10 digits, 8 operators, 16 letters (`<P>`
/// the padding, `<R>` the prompt dnagpt.py's newest version writes before each sequence).
const RESERVED_NAMES: [&str; 34] = [
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "-", "*", "/", "=", "&", "|", "!", "M",
    "B", "P", "R", "I", "K", "L", "O", "Q", "S", "U", "V", "W", "Y", "X", "Z",
];
const RESERVED: usize = RESERVED_NAMES.len();
/// `<P>`, the 21st reserved token.
const PAD: u32 = 20;
const BASES: &[u8; 5] = b"NAGCT";

pub(super) struct Chunks {
    k: usize,
    /// The shortest k-mer in the vocabulary: k, or 1 with `dynamic_kmer`.
    shortest: usize,
}

/// Tokens in the vocabulary of `KmerTokenizer(k, 34 reserved tokens, dynamic)`.
pub fn vocab_size(k: usize, dynamic: bool) -> usize {
    let shortest = if dynamic { 1 } else { k };
    RESERVED
        + (shortest..=k)
            .map(|len| 5usize.pow(len as u32))
            .sum::<usize>()
}

impl Chunks {
    pub(super) fn tokens(&self, sequence: &str) -> Vec<u32> {
        sequence
            .as_bytes()
            .chunks(self.k)
            .map(|chunk| self.id(chunk).unwrap_or(0))
            .collect()
    }

    /// The k-mer's id: the reserved tokens, the shorter k-mers, then its rank among its length's
    /// k-mers (base 5 in `NAGCT` order, as `itertools.product` enumerates them).
    fn id(&self, chunk: &[u8]) -> Option<u32> {
        if chunk.len() < self.shortest {
            return None;
        }
        let shorter: usize = (self.shortest..chunk.len())
            .map(|len| 5usize.pow(len as u32))
            .sum();
        let mut rank = 0usize;
        for base in chunk {
            rank = rank * 5 + BASES.iter().position(|b| b == base)?;
        }
        Some((RESERVED + shorter + rank) as u32)
    }
}

/// The tokenizer `config.json`'s `kmer` and `dynamic_kmer` describe (DNAGPT's published
/// models: 6, and false for dna_gpt0.1b_h only).
pub(super) fn dnagpt_tokenizer(files: &ModelFiles) -> Result<Tokenizer> {
    let config = files.config()?;
    let bad = |what: &str| Error::in_file(format!("{}/config.json", files.name), what.to_string());
    let k = config["kmer"]
        .as_u64()
        .filter(|&k| (1..=8).contains(&k))
        .ok_or_else(|| bad("'kmer' must be a k-mer length from 1 to 8 (DNAGPT's is 6)"))?
        as usize;
    let dynamic = config["dynamic_kmer"]
        .as_bool()
        .ok_or_else(|| bad("'dynamic_kmer' must be true or false"))?;
    // config.json's `prompt`: the reserved token written before every sequence (`<R>`).
    let prefix = match &config["prompt"] {
        serde_json::Value::Null => Vec::new(),
        prompt => {
            let id = RESERVED_NAMES
                .iter()
                .position(|name| prompt.as_str() == Some(*name))
                .ok_or_else(|| bad("'prompt' must name one of DNAGPT's reserved tokens (\"R\")"))?;
            vec![id as u32]
        }
    };
    let vocab_size = vocab_size(k, dynamic);
    Ok(Tokenizer {
        kind: Kind::Chunks(Chunks {
            k,
            shortest: if dynamic { 1 } else { k },
        }),
        prefix,
        suffix: Vec::new(),
        pad_id: PAD,
        vocab_size,
        model_max_length: None,
        pads_left: false,
        description: format!(
            "non-overlapping {k}-mers{} (DNAGPT's KmerTokenizer)",
            if dynamic { ", shorter at the end" } else { "" }
        ),
    })
}
