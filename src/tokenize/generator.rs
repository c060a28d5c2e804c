//! GENERator's `DNAKmerTokenizer` (the `tokenizer.py` its checkpoints ship, loaded with
//! `trust_remote_code`), built from its one argument, `tokenizer_config.json`'s `k`, as the class
//! builds it: 32 special tokens, then every k-mer over `ATCG` in `itertools.product` order; no
//! vocabulary file is read. `_tokenize` reads the text left to right: a special token's name where
//! one starts (the extractor writes `<s>` before each sequence), else `[A-Z]{k}|[A-Z]+` (k capital
//! letters, or the shorter run of capitals before anything else), else one character. Each piece
//! is its vocabulary id or `<oov>`: a k-mer holding an N, a remainder shorter than k, a lower-case
//! letter are all `<oov>`. `<s>` goes first (`add_bos_token`, true unless the configuration says
//! otherwise) and `</s>` last only where `add_eos_token` asks: the checkpoints' tokenizer gives
//! `<s> <s> AAAAAA TTTTTT` for generator.py's `"<s>AAAAAATTTTTT"`, no `</s>`.

use super::{Kind, Settings, Tokenizer};
use crate::Result;

/// The class's special tokens in their ids' order, as GENERator-eukaryote-1.2b-base's
/// tokenizer.py lists them. Other versions of the file (GENERanno's) rename the ones after
/// `<->`, never their number, so every id a DNA sequence can get is the same in all of them.
const SPECIALS: [&str; 32] = [
    "<oov>",
    "<s>",
    "</s>",
    "<pad>",
    "<mask>",
    "<bog>",
    "<eog>",
    "<bok>",
    "<eok>",
    "<+>",
    "<->",
    "<mam>",
    "<vrt>",
    "<inv>",
    "<pln>",
    "<fng>",
    "<prt>",
    "<cds>",
    "<pseudo>",
    "<tRNA>",
    "<rRNA>",
    "<ncRNA>",
    "<misc_RNA>",
    "<sp0>",
    "<sp1>",
    "<sp2>",
    "<sp3>",
    "<sp4>",
    "<sp5>",
    "<sp6>",
    "<sp7>",
    "<sp8>",
];
const OOV: u32 = 0;
const BOS: u32 = 1;
const EOS: u32 = 2;
/// The longest k whose vocabulary (4^k k-mers) has ids that fit a u32 with room to spare; the
/// published checkpoints use 6.
const LONGEST_K: u64 = 15;

pub(super) struct Kmers {
    k: usize,
}

impl Kmers {
    pub(super) fn tokens(&self, sequence: &str) -> Vec<u32> {
        let chars: Vec<char> = sequence.chars().collect();
        let mut ids = Vec::with_capacity(chars.len() / self.k + 2);
        let mut at = 0;
        while at < chars.len() {
            if let Some((id, name)) = special_at(&chars[at..]) {
                ids.push(id);
                at += name.chars().count();
                continue;
            }
            let capitals = chars[at..]
                .iter()
                .take(self.k)
                .take_while(|c| c.is_ascii_uppercase())
                .count();
            if capitals == 0 {
                ids.push(OOV);
                at += 1;
                continue;
            }
            // Fewer than k capitals: `[A-Z]+` takes the run, which no k-mer spells.
            let piece = &chars[at..at + capitals];
            ids.push(if capitals == self.k {
                self.kmer_id(piece)
            } else {
                OOV
            });
            at += capitals;
        }
        ids
    }

    /// A k-mer's id: its rank in `itertools.product("ATCG", repeat=k)` after the specials, or
    /// `<oov>` where it holds any other letter.
    fn kmer_id(&self, kmer: &[char]) -> u32 {
        let mut rank = 0u32;
        for c in kmer {
            let digit = match c {
                'A' => 0,
                'T' => 1,
                'C' => 2,
                'G' => 3,
                _ => return OOV,
            };
            rank = rank * 4 + digit;
        }
        SPECIALS.len() as u32 + rank
    }

    /// `_convert_token_to_id`: a special token's or a k-mer's id, else `<oov>`.
    fn id_of(&self, token: &str) -> u32 {
        if let Some(id) = SPECIALS.iter().position(|s| *s == token) {
            return id as u32;
        }
        let chars: Vec<char> = token.chars().collect();
        if chars.len() == self.k {
            self.kmer_id(&chars)
        } else {
            OOV
        }
    }
}

/// The special token whose name starts `text`, tried in the class's order as its regex
/// alternation tries them.
fn special_at(text: &[char]) -> Option<(u32, &'static str)> {
    SPECIALS.iter().enumerate().find_map(|(id, name)| {
        let matches =
            name.chars().count() <= text.len() && name.chars().zip(text).all(|(a, &b)| a == b);
        matches.then_some((id as u32, *name))
    })
}

pub(super) fn generator_tokenizer(settings: &Settings) -> Result<Tokenizer> {
    let k = match settings.tokenizer_config["k"].as_u64() {
        Some(k) if (1..=LONGEST_K).contains(&k) => k as usize,
        Some(k) => {
            return Err(settings.error(
                "tokenizer_config.json",
                format!(
                    "DNAKmerTokenizer's k is {k}: expected 1 to {LONGEST_K} (GENERator's is 6)"
                ),
            ));
        }
        None => {
            return Err(settings.error(
                "tokenizer_config.json",
                "DNAKmerTokenizer needs its k-mer length 'k' (GENERator's is 6)",
            ));
        }
    };
    let kmers = Kmers { k };
    let pad_id = settings
        .token_or("pad_token", "<pad>")
        .map_or(OOV, |name| kmers.id_of(&name));
    let prefix = if settings.bool_or("add_bos_token", true) {
        vec![BOS]
    } else {
        Vec::new()
    };
    let suffix = if settings.bool_or("add_eos_token", false) {
        vec![EOS]
    } else {
        Vec::new()
    };
    Ok(Tokenizer {
        kind: Kind::GeneratorKmers(kmers),
        prefix,
        suffix,
        pad_id,
        vocab_size: SPECIALS.len() + 4usize.pow(k as u32),
        model_max_length: None,
        pads_left: false,
        description: format!("non-overlapping {k}-mers (GENERator's DNAKmerTokenizer)"),
    })
}
