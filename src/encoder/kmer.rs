//! `kmer:K` — the normalised k-mer spectrum, the composition baseline every learned encoder
//! must beat. Each sequence becomes the frequency of each of the 4^K k-mers among its windows
//! that contain no `N`; `kmer:K:canonical` merges each k-mer with its reverse complement
//! (strand-symmetric features for tasks whose orientation is arbitrary).

use crate::{Error, Result};
use ndarray::Array2;

pub const MAX_K: usize = 6;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmerSpectrum {
    k: usize,
    canonical: bool,
    /// Column of each of the 4^K k-mers (equal for a k-mer and its reverse complement when
    /// canonical).
    column_of: Vec<usize>,
    dim: usize,
}

impl KmerSpectrum {
    pub fn new(k: usize, canonical: bool) -> Result<Self> {
        if !(1..=MAX_K).contains(&k) {
            return Err(Error::new(format!(
                "k-mer size must be 1 to {MAX_K}, got {k}"
            )));
        }
        let n = 1usize << (2 * k);
        let mut column_of = vec![usize::MAX; n];
        let mut dim = 0;
        for code in 0..n {
            if column_of[code] != usize::MAX {
                continue;
            }
            column_of[code] = dim;
            if canonical {
                column_of[reverse_complement(code, k)] = dim;
            }
            dim += 1;
        }
        Ok(KmerSpectrum {
            k,
            canonical,
            column_of,
            dim,
        })
    }

    pub fn spec(&self) -> String {
        if self.canonical {
            format!("kmer:{}:canonical", self.k)
        } else {
            format!("kmer:{}", self.k)
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// One row per sequence; a sequence with no N-free window gets a zero row.
    pub fn embed(&self, sequences: &[String]) -> Array2<f32> {
        let mut out = Array2::<f32>::zeros((sequences.len(), self.dim));
        let mut counts = vec![0u32; self.dim];
        let mask = (1usize << (2 * self.k)) - 1;
        for (row, seq) in sequences.iter().enumerate() {
            counts.iter_mut().for_each(|c| *c = 0);
            let (mut code, mut valid, mut total) = (0usize, 0usize, 0u32);
            for base in seq.bytes() {
                match base_code(base) {
                    Some(b) => {
                        code = ((code << 2) | b) & mask;
                        valid += 1;
                        if valid >= self.k {
                            counts[self.column_of[code]] += 1;
                            total += 1;
                        }
                    }
                    None => valid = 0,
                }
            }
            if total > 0 {
                let mut dst = out.row_mut(row);
                for (d, &c) in dst.iter_mut().zip(&counts) {
                    *d = c as f32 / total as f32;
                }
            }
        }
        out
    }
}

fn base_code(base: u8) -> Option<usize> {
    match base {
        b'A' => Some(0),
        b'C' => Some(1),
        b'G' => Some(2),
        b'T' => Some(3),
        _ => None,
    }
}

/// Reverse complement of a 2-bit-packed k-mer (A=0, C=1, G=2, T=3, so complement = 3 - b).
fn reverse_complement(code: usize, k: usize) -> usize {
    (0..k).fold(0, |rc, i| (rc << 2) | (3 - ((code >> (2 * i)) & 3)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_windows_and_skips_n() {
        let enc = KmerSpectrum::new(2, false).unwrap();
        assert_eq!(enc.dim(), 16);
        // AC CG | N breaks the run | GT: windows AC, CG, GT.
        let e = enc.embed(&["ACGNGT".to_string()]);
        let (ac, cg, gt) = (0b0001, 0b0110, 0b1011);
        assert_eq!(e[[0, ac]], 1.0 / 3.0);
        assert_eq!(e[[0, cg]], 1.0 / 3.0);
        assert_eq!(e[[0, gt]], 1.0 / 3.0);
        assert!((e.row(0).sum() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn short_or_all_n_sequences_embed_to_zero() {
        let enc = KmerSpectrum::new(3, false).unwrap();
        let e = enc.embed(&["AC".to_string(), "NNNNN".to_string()]);
        assert!(e.iter().all(|&v| v == 0.0));
    }

    #[test]
    fn canonical_merges_reverse_complements() {
        let enc = KmerSpectrum::new(2, true).unwrap();
        // 16 dinucleotides: 4 palindromes + 6 pairs = 10 columns.
        assert_eq!(enc.dim(), 10);
        let fwd = enc.embed(&["AACGTTGCA".to_string()]);
        let rev = enc.embed(&["TGCAACGTT".to_string()]);
        assert_eq!(
            fwd, rev,
            "a sequence and its reverse complement embed identically"
        );
        assert_eq!(KmerSpectrum::new(3, true).unwrap().dim(), 32);
    }

    #[test]
    fn rejects_k_out_of_range() {
        assert!(KmerSpectrum::new(0, false).is_err());
        assert!(KmerSpectrum::new(7, false).is_err());
    }
}
