//! Hugging Face model folders: `config.json`, the weights (`model.safetensors` or
//! `pytorch_model.bin`) and the tokenizer files. Everything here reads bytes the caller already
//! has (a local folder, dropped files, or the hub cache), so the same code serves the CLI and the
//! page.

pub mod pytorch;
pub mod safetensors;
pub mod source;
pub mod tensors;

pub use source::ByteSource;
pub use tensors::{Checkpoint, DType, Held, Matrix};

use crate::{Error, Result};
use std::collections::BTreeMap;

/// The model card's file name in a Hugging Face model folder.
pub const MODEL_CARD: &str = "README.md";

/// The files of a model folder geneb reads, whoever reads it (`encoder::pretrained::read_folder`, the
/// page, the hub download): anything else there (TensorFlow or Flax weights, code, training
/// state) is left alone.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelFileNames {
    pub config: &'static str,
    /// The config JanusDNA's training writes beside its checkpoint (`model_config.json`), read
    /// as config.json where a folder has none.
    #[serde(rename = "publishedConfig")]
    pub published_config: &'static str,
    /// In the order they are preferred: safetensors, as transformers prefers it.
    pub weights: [&'static str; 2],
    pub tokenizer: [&'static str; 4],
    /// The endings of a weights file published under a name of its own, read when neither of
    /// `weights` is there: a `torch.save` file (DNAGPT's `dna_gpt0.1b_h.pth`, without a
    /// config.json) or a PyTorch Lightning checkpoint (JanusDNA's `last.ckpt`).
    #[serde(rename = "publishedWeightsSuffixes")]
    pub published_weights_suffixes: [&'static str; 2],
    /// A sharded checkpoint's index, which names its `.safetensors` shards.
    #[serde(rename = "shardIndex")]
    pub shard_index: &'static str,
}

pub const MODEL_FILE_NAMES: ModelFileNames = ModelFileNames {
    config: "config.json",
    published_config: "model_config.json",
    weights: ["model.safetensors", "pytorch_model.bin"],
    tokenizer: [
        "tokenizer.json",
        "vocab.txt",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ],
    published_weights_suffixes: [".pth", ".ckpt"],
    shard_index: safetensors::INDEX,
};

impl ModelFileNames {
    /// Whether `file` (a base name) holds weights, which are read tensor by tensor where they
    /// lie rather than whole: the weights files, those published under a name of their own,
    /// and the shards a `model.safetensors.index.json` names.
    pub fn is_weights(&self, file: &str) -> bool {
        self.weights.contains(&file)
            || self.is_published_weights(file)
            || file.ends_with(".safetensors")
    }

    /// Whether `file` (a base name) is a weights file published under a name of its own.
    pub fn is_published_weights(&self, file: &str) -> bool {
        self.published_weights_suffixes
            .iter()
            .any(|suffix| file.ends_with(suffix))
    }
}

/// A dropped file's name without the folders it came in.
fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// What `fingerprint` reads of the weights at a time.
const FINGERPRINT_CHUNK: usize = 16 << 20;

/// The largest file besides the weights that a model folder has a use for (a tokenizer.json
/// of a large vocabulary is tens of MB): anything larger is refused before it is read whole.
pub const MAX_SMALL_FILE_BYTES: u64 = 256 << 20;

/// One file of a model: read whole (config, tokenizer, card) or, for the weights, a source
/// read by range.
enum Contents {
    Bytes(Vec<u8>),
    Source(Box<dyn ByteSource>),
}

impl Contents {
    fn source(&self) -> &dyn ByteSource {
        match self {
            Contents::Bytes(bytes) => bytes,
            Contents::Source(source) => source.as_ref(),
        }
    }
}

/// The files of one model by file name (`config.json`, `model.safetensors`, …), however they
/// arrived: a local folder, files dropped on the page, or the hub cache.
#[derive(Default)]
pub struct ModelFiles {
    /// How the user named the model (a folder, `owner/name@rev`), for messages.
    pub name: String,
    files: BTreeMap<String, Contents>,
    /// The model card (`README.md`): metadata only, so not part of the model's identity.
    readme: Option<String>,
}

impl ModelFiles {
    pub fn new(name: impl Into<String>) -> ModelFiles {
        ModelFiles {
            name: name.into(),
            files: BTreeMap::new(),
            readme: None,
        }
    }

    /// Adds a file under its base name (folders dropped on the page carry paths); the model
    /// card is kept aside (`readme`).
    pub fn insert(&mut self, path: &str, bytes: Vec<u8>) {
        let base = base_name(path);
        if base == MODEL_CARD {
            self.readme = Some(String::from_utf8_lossy(&bytes).into_owned());
            return;
        }
        self.files.insert(base.to_string(), Contents::Bytes(bytes));
    }

    /// Adds a file that can be read by range: the weights stay where they are (a local file, a
    /// dropped Blob) and are read tensor by tensor; any other file is read whole now.
    pub fn insert_source(&mut self, path: &str, source: Box<dyn ByteSource>) -> Result<()> {
        let base = base_name(path);
        if MODEL_FILE_NAMES.is_weights(base) {
            self.files
                .insert(base.to_string(), Contents::Source(source));
            return Ok(());
        }
        let size = source.size();
        if size > MAX_SMALL_FILE_BYTES {
            return Err(Error::in_file(
                format!("{}/{base}", self.name),
                format!(
                    "{size} bytes, more than the {MAX_SMALL_FILE_BYTES} a model's {base} can \
                     need: is it the right file?"
                ),
            ));
        }
        let bytes = source
            .read_at(0, size as usize)
            .map_err(|e| e.or_in_file(format!("{}/{base}", self.name)))?;
        self.insert(path, bytes);
        Ok(())
    }

    /// The model card's text, where the model came with one.
    pub fn readme(&self) -> Option<&str> {
        self.readme.as_deref()
    }

    /// A file read whole (config, tokenizer); `None` for a missing file or the weights.
    pub fn get(&self, file: &str) -> Option<&[u8]> {
        match self.files.get(file)? {
            Contents::Bytes(bytes) => Some(bytes),
            Contents::Source(_) => None,
        }
    }

    pub fn contains(&self, file: &str) -> bool {
        self.files.contains_key(file)
    }

    /// Removes a file, handing over its contents to read by range (the weights: moved, never
    /// copied).
    pub fn take(&mut self, file: &str) -> Option<Box<dyn ByteSource>> {
        Some(match self.files.remove(file)? {
            Contents::Bytes(bytes) => Box::new(bytes),
            Contents::Source(source) => source,
        })
    }

    /// Files `from` under the name `to` (a published config read as config.json).
    pub fn rename(&mut self, from: &str, to: &str) {
        if let Some(contents) = self.files.remove(from) {
            self.files.insert(to.to_string(), contents);
        }
    }

    pub fn file_names(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// SHA-256 over every file's name and bytes, in name order: what the model is, whatever
    /// folder or cache it came from. The weights are read for it in chunks, never whole.
    pub fn fingerprint(&self) -> Result<String> {
        let mut hasher = crate::digest::PartsHasher::default();
        for (name, contents) in &self.files {
            hasher.part(name.as_bytes());
            let source = contents.source();
            hasher.begin_part(source.size());
            source::for_each_chunk(source, FINGERPRINT_CHUNK, |chunk| hasher.more(chunk))
                .map_err(|e| e.or_in_file(format!("{}/{name}", self.name)))?;
        }
        Ok(hasher.finish())
    }

    /// `config.json` parsed, or an error saying the folder is not an HF model.
    pub fn config(&self) -> Result<serde_json::Value> {
        let bytes = self.get("config.json").ok_or_else(|| {
            Error::in_file(
                &self.name,
                "no config.json: give a Hugging Face model folder (config.json, the weights, the tokenizer files)",
            )
        })?;
        serde_json::from_slice(bytes)
            .or_else(|e| serde_json::from_slice(&python_constants_as_null(bytes)).map_err(|_| e))
            .map_err(|e| {
                Error::in_file(
                    format!("{}/config.json", self.name),
                    format!("not valid JSON ({e})"),
                )
            })
    }
}

/// Python's `json.dumps` writes `Infinity`, `-Infinity` and `NaN`, which JSON lacks
/// (transformers' `Mamba2Config` saves `"time_step_limit": [0.0, Infinity]`): outside strings,
/// each becomes `null`, which no key geneb reads can hold.
fn python_constants_as_null(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if in_string {
            in_string = escaped || byte != b'"';
            escaped = !escaped && byte == b'\\';
        } else if let Some(word) = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .into_iter()
            .find(|word| bytes[i..].starts_with(word))
        {
            out.extend_from_slice(b"null");
            i += word.len();
            continue;
        } else {
            in_string = byte == b'"';
        }
        out.push(byte);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_with_pythons_infinity_and_nan_reads_them_as_null_outside_strings() {
        let mut files = ModelFiles::new("m");
        let text =
            r#"{"limit": [0.0, Infinity], "low": -Infinity, "x": NaN, "name": "NaN \"Infinity\""}"#;
        files.insert("config.json", text.as_bytes().to_vec());
        let config = files.config().unwrap();
        assert_eq!(config["limit"], serde_json::json!([0.0, null]));
        assert!(config["low"].is_null() && config["x"].is_null());
        assert_eq!(config["name"], "NaN \"Infinity\"");
        files.insert("config.json", b"{\"a\": Infinit}".to_vec());
        assert!(
            files
                .config()
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
    }
}
