//! Per-example evidence in result files (a geneb extra the reference schema ignores): the test
//! labels and every fit's test predictions, so profiles can bootstrap over test examples.
//!
//! Encoding: each vector of class indices (0-based, in the task's sorted label order) is stored as
//! standard base64 (RFC 4648, `+/`, `=` padding) of little-endian `u16`s — 2 bytes per example
//! instead of the ~3 a JSON array needs, and checkable in Python with
//! `numpy.frombuffer(base64.b64decode(s), "<u2")`.
//!
//! ```json
//! "predictions": {"<task_id>": {"y_true": "AAABAA==",
//!                               "full": ["AQABAA=="], "10shot": ["…", "…", "…", "…", "…"]}}
//! ```
//! Regime keys hold one vector per fit: one for full data, one per few-shot seed (seed order as in
//! `fewshot`). Files written before this existed have no `predictions`; they still load, and their
//! profiles say that no intervals can be computed for them.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Test labels and predictions of one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPredictions {
    pub y_true: ClassIndices,
    /// Regime key → one prediction vector per fit.
    #[serde(flatten)]
    pub regimes: BTreeMap<String, Vec<ClassIndices>>,
}

/// Class indices as base64 of little-endian u16 (see the module doc). Decoded on use, so a
/// damaged file fails with a message naming the model and task rather than "not a result file".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClassIndices(String);

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

impl ClassIndices {
    /// Fails when a class index does not fit in 16 bits (more than 65,536 classes).
    pub fn encode(classes: &[usize]) -> Result<Self> {
        let mut bytes = Vec::with_capacity(classes.len() * 2);
        for &c in classes {
            let c = u16::try_from(c).map_err(|_| {
                Error::new(format!(
                    "class index {c} does not fit the result file's 16-bit evidence encoding; \
                     tasks may have at most 65,536 classes"
                ))
            })?;
            bytes.extend_from_slice(&c.to_le_bytes());
        }
        let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let word = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
            for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
                text.push(if i <= chunk.len() {
                    ALPHABET[(word >> shift & 63) as usize] as char
                } else {
                    '='
                });
            }
        }
        Ok(ClassIndices(text))
    }

    /// The class indices; `what` names the vector in the error ("model m, task t, y_true").
    pub fn decode(&self, what: &str) -> Result<Vec<usize>> {
        let corrupt = |why: &str| {
            Error::new(format!(
                "{what}: the recorded per-example evidence is damaged ({why}); re-run geneb eval \
                 to record it again"
            ))
        };
        let text = self.0.as_bytes();
        if !text.len().is_multiple_of(4) {
            return Err(corrupt("base64 length is not a multiple of 4"));
        }
        let mut bytes = Vec::with_capacity(text.len() / 4 * 3);
        for (q, quad) in text.chunks(4).enumerate() {
            let last = q == text.len() / 4 - 1;
            let padding = quad.iter().rev().take_while(|&&c| c == b'=').count();
            if padding > 2 || (padding > 0 && !last) {
                return Err(corrupt("misplaced '=' padding"));
            }
            let mut word = 0u32;
            for &c in &quad[..4 - padding] {
                let value = ALPHABET
                    .iter()
                    .position(|&a| a == c)
                    .ok_or_else(|| corrupt("a character outside the base64 alphabet"))?;
                word = word << 6 | value as u32;
            }
            word <<= 6 * padding as u32;
            bytes.extend_from_slice(&word.to_be_bytes()[1..4 - padding]);
        }
        if bytes.len() % 2 != 0 {
            return Err(corrupt("an odd number of bytes, not 16-bit indices"));
        }
        Ok(bytes
            .chunks(2)
            .map(|p| usize::from(u16::from_le_bytes([p[0], p[1]])))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_matches_python_base64() {
        // base64.b64encode(numpy.array([0, 1, 2, 65535, 258], "<u2").tobytes())
        let encoded = ClassIndices::encode(&[0, 1, 2, 65535, 258]).unwrap();
        assert_eq!(encoded.0, "AAABAAIA//8CAQ==");
        assert_eq!(encoded.decode("t").unwrap(), [0, 1, 2, 65535, 258]);
        for n in 0..5 {
            let v: Vec<usize> = (0..n).map(|i| i * 7).collect();
            assert_eq!(ClassIndices::encode(&v).unwrap().decode("t").unwrap(), v);
        }
    }

    #[test]
    fn damage_and_overflow_are_errors() {
        assert!(ClassIndices::encode(&[65536]).is_err());
        for bad in ["AAA", "AA=A", "AA!A", "AA=="] {
            let err = ClassIndices(bad.into()).decode("m, task t").unwrap_err();
            assert!(err.message.starts_with("m, task t: "), "{bad}: {err}");
        }
    }
}
