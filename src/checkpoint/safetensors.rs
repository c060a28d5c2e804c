//! The safetensors format: an 8-byte little-endian header length, a JSON header mapping each
//! tensor name to its dtype, shape and byte range, then the raw little-endian data.

use super::ByteSource;
use super::tensors::{Checkpoint, DType, TensorEntry};
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

/// Reads a `.safetensors` file's header; each tensor is read from `file` when it is taken.
pub fn read(source: &str, file: Box<dyn ByteSource>) -> Result<Checkpoint> {
    let entries = read_header(source, file.as_ref(), 0)?;
    Checkpoint::new(source, vec![file], entries)
}

/// The index of a checkpoint split over several files (`model-00001-of-00002.safetensors`, …),
/// as transformers writes it.
pub const INDEX: &str = "model.safetensors.index.json";

#[derive(Deserialize)]
struct Index {
    #[serde(default)]
    metadata: IndexMetadata,
    /// Tensor name → the shard file holding it.
    weight_map: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct IndexMetadata {
    /// The bytes of every tensor together.
    total_size: Option<u64>,
}

fn parse_index(source: &str, index: &[u8]) -> Result<Index> {
    let bad = |message: String| Error::in_file(source, message);
    let parsed: Index = serde_json::from_slice(index).map_err(|e| {
        bad(format!(
            "not a safetensors index ({e}): expected {{\"weight_map\": {{tensor: file}}}}"
        ))
    })?;
    for file in parsed.weight_map.values() {
        let plain = !file.is_empty()
            && !file.contains(['/', '\\', ':'])
            && file != ".."
            && file != "."
            && file.ends_with(".safetensors");
        if !plain {
            return Err(bad(format!(
                "names the shard '{file}', which is not a .safetensors file in the index's own \
                 folder: geneb reads no file outside the model folder"
            )));
        }
    }
    Ok(parsed)
}

/// The shard files `index` names, each once, in name order: base names of `.safetensors`
/// files in the index's folder (an index naming anything else is refused here, before any
/// shard is opened).
pub fn shard_names(source: &str, index: &[u8]) -> Result<Vec<String>> {
    let parsed = parse_index(source, index)?;
    let names: std::collections::BTreeSet<String> = parsed.weight_map.into_values().collect();
    Ok(names.into_iter().collect())
}

/// A checkpoint split over `shards` (name, file) by `index`: every shard's header read (and
/// charged) as one file's, each tensor read from its shard, in its own dtype, when it is taken.
/// f32 tensors may sit beside bf16 or f16 ones, as real checkpoints keep some wide (StripedHyena
/// saves Evo-1's `poles` and `residues` in f32 beside bf16 weights, many keep norms in f32).
/// Refused before any tensor is read: a shard holding a tensor the index places elsewhere or
/// not at all, a tensor the index places in a shard that lacks it, bf16 beside f16 (no trainer
/// saves both: shards of two checkpoints), and an index whose `total_size` is not the shards'
/// tensor bytes.
pub fn read_sharded(
    source: &str,
    index: &[u8],
    shards: Vec<(String, Box<dyn ByteSource>)>,
) -> Result<Checkpoint> {
    let bad = |message: String| Error::in_file(source, message);
    let parsed = parse_index(source, index)?;
    let folder = source.rsplit_once('/').map_or("", |(folder, _)| folder);
    let mut entries = BTreeMap::new();
    let mut half_dtype: Option<(DType, &str)> = None;
    let mut files = Vec::with_capacity(shards.len());
    let mut total = 0u64;
    for (i, (name, file)) in shards.iter().enumerate() {
        let shard_source = format!("{folder}/{name}");
        for (tensor, entry) in read_header(&shard_source, file.as_ref(), i)? {
            match parsed.weight_map.get(&tensor) {
                Some(placed) if placed == name => {}
                Some(placed) => {
                    return Err(bad(format!(
                        "places tensor '{tensor}' in {placed}, but {name} holds it"
                    )));
                }
                None => {
                    return Err(bad(format!(
                        "does not name tensor '{tensor}', which {name} holds: is the index \
                         this checkpoint's own?"
                    )));
                }
            }
            if entry.dtype.is_half() {
                match half_dtype {
                    None => half_dtype = Some((entry.dtype, name)),
                    Some((dtype, first)) if dtype != entry.dtype => {
                        return Err(bad(format!(
                            "{first} stores {dtype:?} weights, {name} {:?} (tensor '{tensor}'): \
                             the shards are not of one checkpoint",
                            entry.dtype
                        )));
                    }
                    Some(_) => {}
                }
            }
            total += (entry.numel() * entry.dtype.size()) as u64;
            entries.insert(tensor, entry);
        }
    }
    if let Some((tensor, placed)) = parsed
        .weight_map
        .iter()
        .find(|(tensor, _)| !entries.contains_key(*tensor))
    {
        return Err(bad(format!(
            "places tensor '{tensor}' in {placed}, which does not hold it"
        )));
    }
    if let Some(claimed) = parsed.metadata.total_size
        && claimed != total
    {
        return Err(bad(format!(
            "claims {claimed} bytes of tensors, but its shards hold {total}: the index or a \
             shard is not this checkpoint's"
        )));
    }
    files.extend(shards.into_iter().map(|(_, file)| file));
    Checkpoint::new(source, files, entries)
}

/// The tensors a `.safetensors` file's header lists, placed in buffer `buffer`.
fn read_header(
    source: &str,
    file: &dyn ByteSource,
    buffer: usize,
) -> Result<BTreeMap<String, TensorEntry>> {
    let bad = |message: String| Error::in_file(source, message);
    let read_at =
        |offset: u64, len: usize| file.read_at(offset, len).map_err(|e| e.or_in_file(source));
    let file_len = file.size();
    if file_len < 8 {
        return Err(bad(
            "not a safetensors file (shorter than its 8-byte header length)".into(),
        ));
    }
    let header_len = u64::from_le_bytes(read_at(0, 8)?.try_into().expect("8 bytes"));
    if header_len > MAX_HEADER_BYTES as u64 {
        return Err(bad(format!(
            "not a safetensors file: its header claims {header_len} bytes, more than the \
             {MAX_HEADER_BYTES} any safetensors file has"
        )));
    }
    let header_len = header_len as usize;
    if 8 + header_len as u64 > file_len {
        return Err(bad(format!(
            "not a safetensors file, or truncated: its header claims {header_len} bytes, the file has {file_len}"
        )));
    }
    let data_start = 8 + header_len;
    // Parsed as JSON values: a number of a few characters becomes a 32-byte value.
    crate::budget::charge(
        source,
        "reading the safetensors header",
        header_len as u64,
        16,
    )?;
    let header: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&read_at(8, header_len)?)
            .map_err(|e| bad(format!("the safetensors header is not valid JSON ({e})")))?;
    let data_len = usize::try_from(file_len - data_start as u64).map_err(|_| {
        bad(format!(
            "{file_len} bytes, more than this build can address"
        ))
    })?;
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
            TensorEntry::contiguous(dt, entry.shape, buffer, data_start + begin),
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
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: &[u8]) -> Box<dyn ByteSource> {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        Box::new(bytes)
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

    /// A bf16 checkpoint keeping some tensors in f32 (Evo-1's poles and residues) over two
    /// shards: each tensor is read in its own dtype, bf16 matrices are held as stored, and only
    /// an f32 matrix taken in bf16 counts as narrowed.
    #[test]
    fn shards_may_keep_f32_tensors_beside_bf16_weights() {
        let bf16 = |values: &[f32]| -> Vec<u8> {
            values
                .iter()
                .flat_map(|v| half::bf16::from_f32(*v).to_le_bytes())
                .collect()
        };
        let f32_bytes =
            |values: &[f32]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
        let first = [bf16(&[1.0, -2.0, 0.5, 4.0]), f32_bytes(&[0.1, -0.3])].concat();
        let first_header = r#"{"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},"poles":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}"#;
        let second = f32_bytes(&[0.7, 0.9, 1.1, 1.3]);
        let second_header = r#"{"wide":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}"#;
        let index = br#"{"metadata":{"total_size":32},"weight_map":{"w":"a.safetensors","poles":"a.safetensors","wide":"b.safetensors"}}"#;
        let mut ckpt = read_sharded(
            "m/model.safetensors.index.json",
            index,
            vec![
                ("a.safetensors".into(), file(first_header, &first)),
                ("b.safetensors".into(), file(second_header, &second)),
            ],
        )
        .unwrap();
        assert_eq!(ckpt.float_bytes(), (40, Some(DType::BF16)));
        ckpt.hold_matrices_in(crate::checkpoint::Held::Bf16);
        assert_eq!(ckpt.take("poles", &[2]).unwrap(), vec![0.1, -0.3]);
        let w = ckpt.take_matrix("w", &[2, 2]).unwrap();
        assert_eq!(
            w,
            crate::checkpoint::Matrix::Bf16(
                [1.0, -2.0, 0.5, 4.0].map(half::bf16::from_f32).to_vec()
            )
        );
        assert_eq!(ckpt.narrowed_from(), None, "bf16 held as stored");
        ckpt.take_matrix("wide", &[2, 2]).unwrap();
        assert_eq!(ckpt.narrowed_from(), Some(DType::F32));
        ckpt.finish().unwrap();
    }

    /// A model is built tensor by tensor from the file: no read spans more than one tensor, and
    /// a head's tied copy of a matrix (the same bytes written twice) is found by reading it,
    /// once, not by holding the file.
    #[test]
    fn tensors_are_read_one_at_a_time() {
        use crate::checkpoint::source::tests::Recorded;
        let matrix = |seed: u32| -> Vec<u8> {
            (0..64 * 256)
                .flat_map(|i| ((i * 7 + seed) as f32).to_le_bytes())
                .collect()
        };
        let tensor_bytes = 64 * 256 * 4;
        let names = ["a", "b", "c", "head.tied"];
        let data: Vec<u8> = [matrix(1), matrix(2), matrix(3), matrix(1)].concat();
        let header: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                format!(
                    r#""{name}":{{"dtype":"F32","shape":[64,256],"data_offsets":[{},{}]}}"#,
                    i * tensor_bytes,
                    (i + 1) * tensor_bytes
                )
            })
            .collect();
        let header = format!("{{{}}}", header.join(","));
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&data);
        let file = std::rc::Rc::new(Recorded::new(bytes));
        let mut ckpt = read("m.safetensors", Box::new(std::rc::Rc::clone(&file))).unwrap();
        for name in &names[..3] {
            ckpt.take(name, &[64, 256]).unwrap();
        }
        ckpt.skip_prefix("head.");
        assert_eq!(ckpt.encoder_parameters().unwrap(), 3 * 64 * 256);
        assert_eq!(ckpt.model_parameters().unwrap(), 3 * 64 * 256);
        ckpt.finish().unwrap();
        assert_eq!(file.largest_read(), tensor_bytes);
        // The header, each tensor taken once, the first 64 bytes of each matrix compared (three
        // for the encoder's count, four for the model's) and the tied pair in full: no more.
        let read: usize = file.reads.borrow().iter().map(|r| r.1).sum();
        assert_eq!(read, 8 + header.len() + 5 * tensor_bytes + 7 * 64);
    }

    #[test]
    fn truncated_and_garbage_files_are_errors() {
        let header = r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
        let err = read("t.safetensors", file(header, &[0u8; 8]))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("truncated"), "{err}");
        let err = read(
            "g.safetensors",
            Box::new(b"PK\x03\x04garbage-bytes".to_vec()),
        )
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
