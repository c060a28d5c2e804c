//! The safetensors format: an 8-byte little-endian header length, a JSON header mapping each
//! tensor name to its dtype, shape and byte range, then the raw little-endian data.

use super::checkpoint::{Checkpoint, DType, TensorEntry};
use crate::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct HeaderEntry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

fn dtype(name: &str) -> Option<DType> {
    Some(match name {
        "F64" => DType::F64,
        "F32" => DType::F32,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "I64" => DType::I64,
        "I32" => DType::I32,
        "I16" => DType::I16,
        "I8" => DType::I8,
        "U8" => DType::U8,
        "BOOL" => DType::Bool,
        _ => return None,
    })
}

/// The largest JSON header read, as the reference `safetensors` library caps it: a header is a
/// few hundred bytes per tensor, and a claimed length is checked against this before parsing.
const MAX_HEADER_BYTES: usize = 100 << 20;

/// Reads a whole `.safetensors` file. The bytes are kept once; tensors are converted when taken.
pub fn read(source: &str, bytes: Vec<u8>) -> Result<Checkpoint> {
    let bad = |message: String| Error::in_file(source, message);
    if bytes.len() < 8 {
        return Err(bad(
            "not a safetensors file (shorter than its 8-byte header length)".into(),
        ));
    }
    let header_len = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    if header_len > MAX_HEADER_BYTES as u64 {
        return Err(bad(format!(
            "not a safetensors file: its header claims {header_len} bytes, more than the \
             {MAX_HEADER_BYTES} any safetensors file has"
        )));
    }
    let header_len = header_len as usize;
    let data_start = 8usize
        .checked_add(header_len)
        .filter(|end| *end <= bytes.len())
        .ok_or_else(|| {
            bad(format!(
                "not a safetensors file, or truncated: its header claims {header_len} bytes, the file has {}",
                bytes.len()
            ))
        })?;
    let header: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&bytes[8..data_start])
        .map_err(|e| bad(format!("the safetensors header is not valid JSON ({e})")))?;
    let data_len = bytes.len() - data_start;
    let mut entries = BTreeMap::new();
    let mut ranges = Vec::new();
    for (name, value) in header {
        if name == "__metadata__" {
            continue;
        }
        let entry: HeaderEntry = serde_json::from_value(value).map_err(|e| {
            bad(format!(
                "tensor '{name}' has a malformed header entry ({e})"
            ))
        })?;
        let dt = dtype(&entry.dtype).ok_or_else(|| {
            bad(format!(
                "tensor '{name}' has dtype {}, which geneb cannot read",
                entry.dtype
            ))
        })?;
        let [begin, end] = entry.data_offsets;
        let bytes_needed = entry
            .shape
            .iter()
            .try_fold(dt.size(), |n, &d| n.checked_mul(d));
        if begin > end || end > data_len || bytes_needed != Some(end - begin) {
            return Err(bad(format!(
                "tensor '{name}' has byte range {begin}..{end}, which does not fit its shape {:?} \
                 and dtype {} in {data_len} data bytes — the file is truncated or corrupt",
                entry.shape, entry.dtype
            )));
        }
        ranges.push((begin, end, name.clone()));
        entries.insert(
            name,
            TensorEntry::contiguous(dt, entry.shape, 0, data_start + begin),
        );
    }
    // Tensors sharing bytes would make one weight's corruption another's: the format forbids it.
    ranges.sort();
    for pair in ranges.windows(2) {
        let ((_, first_end, first), (second_begin, _, second)) = (&pair[0], &pair[1]);
        if second_begin < first_end {
            return Err(bad(format!(
                "tensors '{first}' and '{second}' overlap in the data (bytes {second_begin}..{first_end}) \
                 — the file is corrupt"
            )));
        }
    }
    Checkpoint::new(source, vec![bytes], entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    #[test]
    fn reads_f32_and_f16_and_reports_unused() {
        let mut data = Vec::new();
        for v in [1.0f32, -2.5, 3.0, 0.25] {
            data.extend_from_slice(&v.to_le_bytes());
        }
        data.extend_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
        data.extend_from_slice(&half::f16::from_f32(-8.0).to_le_bytes());
        let header = r#"{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"h":{"dtype":"F16","shape":[2],"data_offsets":[16,20]}}"#;
        let mut ckpt = read("m.safetensors", file(header, &data)).unwrap();
        assert_eq!(ckpt.take("w", &[2, 2]).unwrap(), vec![1.0, -2.5, 3.0, 0.25]);
        let err = ckpt.finish().unwrap_err().to_string();
        assert!(
            err.starts_with("m.safetensors: 1 tensor(s)") && err.contains(": h"),
            "{err}"
        );
        let mut ckpt = read("m.safetensors", file(header, &data)).unwrap();
        assert_eq!(ckpt.take("h", &[2]).unwrap(), vec![0.5, -8.0]);
        let err = ckpt.take("w", &[4]).unwrap_err().to_string();
        assert!(err.contains("shape [2, 2]") && err.contains("[4]"), "{err}");
        assert!(
            ckpt.take("missing", &[1])
                .unwrap_err()
                .to_string()
                .contains("no tensor 'missing'")
        );
    }

    #[test]
    fn truncated_and_garbage_files_are_errors() {
        let header = r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
        let err = read("t.safetensors", file(header, &[0u8; 8]))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("truncated"), "{err}");
        let err = read("g.safetensors", b"PK\x03\x04garbage-bytes".to_vec())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("g.safetensors: not a safetensors file"),
            "{err}"
        );
        let err = read("j.safetensors", file("{nope", &[]))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("not valid JSON"), "{err}");
    }
}
