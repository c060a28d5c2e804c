//! The Nucleotide Transformer's `EsmTokenizer`: every `vocab.txt` entry is a token that is never
//! split, so transformers cuts the text with a trie into leftmost-longest vocabulary matches
//! (6-mers, or 3-mers, then single nucleotides where no k-mer fits: near an N, at the tail).
//! Text between matches is split on whitespace and each piece is one token, `<unk>` unless it
//! is in the vocabulary. `<cls>` goes first; `<eos>` last unless the configuration disables it.

use super::trie::Trie;
use super::{Kind, Settings, Tokenizer, lookup, read_vocab_txt};
use crate::Result;
use crate::checkpoint::ModelFiles;
use std::collections::HashMap;

pub(super) struct LongestMatch {
    vocab: HashMap<String, u32>,
    /// The vocabulary as a trie: a match costs at most the characters it reads (see `trie`).
    trie: Trie,
    unk: u32,
}

impl LongestMatch {
    pub(super) fn tokens(&self, sequence: &str) -> Vec<u32> {
        let chars: Vec<char> = sequence.chars().collect();
        let mut ids = Vec::new();
        let mut unmatched = String::new();
        let mut at = 0;
        while at < chars.len() {
            match self.trie.longest_match(Trie::ROOT, &chars[at..]) {
                Some((id, len)) => {
                    self.flush(&mut unmatched, &mut ids);
                    ids.push(id);
                    at += len;
                }
                None => {
                    unmatched.push(chars[at]);
                    at += 1;
                }
            }
        }
        self.flush(&mut unmatched, &mut ids);
        ids
    }

    fn flush(&self, unmatched: &mut String, ids: &mut Vec<u32>) {
        ids.extend(
            unmatched
                .split_whitespace()
                .map(|word| self.vocab.get(word).copied().unwrap_or(self.unk)),
        );
        unmatched.clear();
    }
}

pub(super) fn esm_tokenizer(files: &ModelFiles, settings: &Settings) -> Result<Tokenizer> {
    let tokens = read_vocab_txt(files)?;
    let vocab: HashMap<String, u32> = tokens
        .iter()
        .enumerate()
        .filter(|(_, token)| !token.is_empty())
        .map(|(id, token)| (token.clone(), id as u32))
        .collect();
    let id = |key: &str, default: &str| -> Result<Option<u32>> {
        settings
            .token_or(key, default)
            .map(|token| lookup(&vocab, settings, "vocab.txt", key, &token))
            .transpose()
    };
    let unk = id("unk_token", "<unk>")?;
    let pad = id("pad_token", "<pad>")?;
    let (Some(unk), Some(pad)) = (unk, pad) else {
        return Err(settings.error(
            "tokenizer_config.json",
            "EsmTokenizer needs an unk and a pad token",
        ));
    };
    let prefix: Vec<u32> = id("cls_token", "<cls>")?.into_iter().collect();
    let suffix: Vec<u32> = id("eos_token", "<eos>")?.into_iter().collect();
    let k = tokens
        .iter()
        .filter(|t| t.chars().all(|c| c.is_ascii_alphabetic()))
        .map(|t| t.len())
        .max()
        .unwrap_or(1);
    Ok(Tokenizer {
        kind: Kind::LongestMatch(LongestMatch {
            trie: Trie::new(vocab.iter().map(|(token, &id)| (token.as_str(), id))),
            vocab,
            unk,
        }),
        prefix,
        suffix,
        pad_id: pad,
        vocab_size: tokens.len(),
        model_max_length: None,
        pads_left: false,
        description: format!("{k}-mers, longest match first (EsmTokenizer, vocab.txt)"),
    })
}
