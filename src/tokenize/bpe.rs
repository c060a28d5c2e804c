//! The `tokenizers` library's BPE model: a word starts as its characters (unknown ones become
//! `[UNK]`), then the adjacent pair with the best-ranked merge is merged, leftmost first on
//! ties, until no pair has a merge — with a heap, as the library does, so long DNA "words"
//! (a whole sequence is one word) stay fast.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

pub(super) struct Bpe {
    pub(super) vocab: HashMap<String, u32>,
    /// (left id, right id) → (rank, merged id).
    pub(super) merges: HashMap<(u32, u32), (u32, u32)>,
    pub(super) unk: Option<u32>,
    pub(super) continuing_subword_prefix: Option<String>,
    pub(super) end_of_word_suffix: Option<String>,
    pub(super) fuse_unk: bool,
    pub(super) ignore_merges: bool,
}

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: Option<usize>,
    next: Option<usize>,
    /// 0 once merged into its left neighbour.
    len: usize,
}

impl Bpe {
    pub(super) fn tokenize_word(&self, word: &str, out: &mut Vec<u32>) {
        if self.ignore_merges
            && let Some(&id) = self.vocab.get(word)
        {
            out.push(id);
            return;
        }
        let mut symbols = self.initial_symbols(word);
        let mut queue = BinaryHeap::new();
        for pos in 0..symbols.len().saturating_sub(1) {
            if let Some(&(rank, id)) = self.merges.get(&(symbols[pos].id, symbols[pos + 1].id)) {
                queue.push(Reverse((rank, pos, id)));
            }
        }
        while let Some(Reverse((_, pos, merged))) = queue.pop() {
            let left = symbols[pos];
            // Skip entries made stale by earlier merges.
            let Some(next) = left.next.filter(|_| left.len > 0) else {
                continue;
            };
            let right = symbols[next];
            if self.merges.get(&(left.id, right.id)).map(|m| m.1) != Some(merged) {
                continue;
            }
            symbols[pos] = Symbol {
                id: merged,
                prev: left.prev,
                next: right.next,
                len: left.len + right.len,
            };
            symbols[next].len = 0;
            if let Some(after) = right.next {
                symbols[after].prev = Some(pos);
            }
            if let Some(before) = left.prev
                && let Some(&(rank, id)) = self.merges.get(&(symbols[before].id, merged))
            {
                queue.push(Reverse((rank, before, id)));
            }
            if let Some(after) = right.next
                && let Some(&(rank, id)) = self.merges.get(&(merged, symbols[after].id))
            {
                queue.push(Reverse((rank, pos, id)));
            }
        }
        out.extend(symbols.iter().filter(|s| s.len > 0).map(|s| s.id));
    }

    /// One symbol per character (with the continuing-subword prefix after the first and the
    /// end-of-word suffix on the last, where the model has them); characters outside the
    /// vocabulary become `[UNK]` (runs of them one `[UNK]` with `fuse_unk`), or are dropped
    /// when the model has no unknown token — all as the library does.
    fn initial_symbols(&self, word: &str) -> Vec<Symbol> {
        let count = word.chars().count();
        let mut symbols: Vec<Symbol> = Vec::with_capacity(count);
        let mut last_was_unk = false;
        let mut piece = String::new();
        for (i, c) in word.chars().enumerate() {
            piece.clear();
            if i > 0
                && let Some(prefix) = &self.continuing_subword_prefix
            {
                piece.push_str(prefix);
            }
            piece.push(c);
            if i + 1 == count
                && let Some(suffix) = &self.end_of_word_suffix
            {
                piece.push_str(suffix);
            }
            let id = match self.vocab.get(&piece) {
                Some(&id) => {
                    last_was_unk = false;
                    id
                }
                None => match self.unk {
                    Some(_) if self.fuse_unk && last_was_unk => {
                        symbols.last_mut().expect("an unk before").len += 1;
                        continue;
                    }
                    Some(unk) => {
                        last_was_unk = true;
                        unk
                    }
                    None => continue,
                },
            };
            let at = symbols.len();
            if let Some(previous) = symbols.last_mut() {
                previous.next = Some(at);
            }
            symbols.push(Symbol {
                id,
                prev: at.checked_sub(1),
                next: None,
                len: 1,
            });
        }
        symbols
    }
}
