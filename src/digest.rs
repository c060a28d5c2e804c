//! Content hashes: a model's identity, the dataset key of the embedding cache, hub downloads.

use sha2::{Digest, Sha256};

/// Lowercase hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hex SHA-256 of `parts`, each prefixed by its length (u64, little-endian) so that where
/// one part ends and the next begins changes the hash.
pub fn sha256_of_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut hasher = PartsHasher::default();
    for part in parts {
        hasher.part(part);
    }
    hasher.finish()
}

/// `sha256_of_parts` fed one part at a time, for parts that are made on the way.
#[derive(Default)]
pub struct PartsHasher(Sha256);

impl PartsHasher {
    pub fn part(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }

    /// Starts a part of `len` bytes given in pieces (`more`): the same hash as `part` on them
    /// joined, without joining them.
    pub fn begin_part(&mut self, len: u64) {
        self.0.update(len.to_le_bytes());
    }

    pub fn more(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> String {
        hex(&self.0.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_boundaries_change_the_hash() {
        let ab_c = sha256_of_parts([b"ab".as_slice(), b"c"]);
        let a_bc = sha256_of_parts([b"a".as_slice(), b"bc"]);
        assert_ne!(ab_c, a_bc);
        assert_eq!(ab_c.len(), 64);
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        let mut pieces = PartsHasher::default();
        pieces.part(b"ab");
        pieces.begin_part(1);
        pieces.more(b"c");
        assert_eq!(pieces.finish(), ab_c);
    }
}
