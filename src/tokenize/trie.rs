//! The vocabulary as a character trie, for the longest-match tokenizers (WordPiece, the
//! EsmTokenizer's k-mers). Finding the longest token at a position walks the text one character
//! at a time and stops where no token continues, so a match costs at most the characters left
//! in the text, whatever the longest token in the file: trying every candidate length and
//! hashing each candidate cost the square of the longest token per position (a vocabulary with
//! one 20,000-character token hung WordPiece).

use std::collections::HashMap;

/// A node of the trie; the root is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Node(u32);

pub(super) struct Trie {
    /// (node, next character) → child.
    edges: HashMap<(Node, char), Node>,
    /// The token that ends at each node, if one does.
    ids: Vec<Option<u32>>,
}

impl Trie {
    pub(super) const ROOT: Node = Node(0);

    pub(super) fn new<'t>(tokens: impl IntoIterator<Item = (&'t str, u32)>) -> Trie {
        let mut trie = Trie {
            edges: HashMap::new(),
            ids: vec![None],
        };
        for (token, id) in tokens {
            let mut node = Self::ROOT;
            for c in token.chars() {
                let next = Node(trie.ids.len() as u32);
                node = *trie.edges.entry((node, c)).or_insert_with(|| {
                    trie.ids.push(None);
                    next
                });
            }
            trie.ids[node.0 as usize] = Some(id);
        }
        trie
    }

    /// The node `text` leads to from `from`, if tokens continue that way.
    pub(super) fn walk(&self, from: Node, text: &str) -> Option<Node> {
        text.chars()
            .try_fold(from, |node, c| self.edges.get(&(node, c)).copied())
    }

    /// The longest token that `chars` starts with, read on from `from`: its id and length in
    /// characters. (From the root for whole tokens, from a prefix's node for continuations.)
    pub(super) fn longest_match(&self, from: Node, chars: &[char]) -> Option<(u32, usize)> {
        let mut node = from;
        let mut found = None;
        for (i, &c) in chars.iter().enumerate() {
            let Some(&next) = self.edges.get(&(node, c)) else {
                break;
            };
            node = next;
            if let Some(id) = self.ids[node.0 as usize] {
                found = Some((id, i + 1));
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_longest_token_and_continuations_after_a_prefix() {
        let trie = Trie::new([("A", 1), ("AC", 2), ("ACGT", 3), ("##G", 4), ("##GT", 5)]);
        let chars: Vec<char> = "ACGA".chars().collect();
        assert_eq!(trie.longest_match(Trie::ROOT, &chars), Some((2, 2)));
        let continuing = trie.walk(Trie::ROOT, "##").unwrap();
        assert_eq!(trie.longest_match(continuing, &chars[2..]), Some((4, 1)));
        assert_eq!(trie.longest_match(Trie::ROOT, &['G']), None);
        assert_eq!(trie.walk(Trie::ROOT, "T"), None);
    }
}
