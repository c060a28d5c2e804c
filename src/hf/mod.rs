//! Hugging Face model folders: `config.json`, the weights (`model.safetensors` or
//! `pytorch_model.bin`) and the tokenizer files. Everything here reads bytes the caller already
//! has (a local folder, dropped files, or the hub cache), so the same code serves the CLI and the
//! page.

pub mod checkpoint;
pub mod pytorch;
pub mod safetensors;

pub use checkpoint::{Checkpoint, DType};

use crate::{Error, Result};
use std::collections::BTreeMap;

/// The model card's file name in a Hugging Face model folder.
pub const MODEL_CARD: &str = "README.md";

/// The files of a model folder geneb reads, whoever reads it (`encoder::hf::read_folder`, the
/// page, the hub download): anything else there (TensorFlow or Flax weights, code, training
/// state) is left alone.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelFileNames {
    pub config: &'static str,
    /// In the order they are preferred: safetensors, as transformers prefers it.
    pub weights: [&'static str; 2],
    pub tokenizer: [&'static str; 4],
    /// The ending of a weights file published under its model's name, without a config.json
    /// (DNAGPT's `dna_gpt0.1b_h.pth`), read when neither of `weights` is there.
    #[serde(rename = "publishedWeightsSuffix")]
    pub published_weights_suffix: &'static str,
}

pub const MODEL_FILE_NAMES: ModelFileNames = ModelFileNames {
    config: "config.json",
    weights: ["model.safetensors", "pytorch_model.bin"],
    tokenizer: [
        "tokenizer.json",
        "vocab.txt",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ],
    published_weights_suffix: ".pth",
};

/// The files of one model as bytes by file name (`config.json`, `model.safetensors`, …),
/// however they arrived: a local folder, files dropped on the page, or the hub cache.
#[derive(Default)]
pub struct ModelFiles {
    /// How the user named the model (a folder, `owner/name@rev`), for messages.
    pub name: String,
    files: BTreeMap<String, Vec<u8>>,
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
        let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
        if base == MODEL_CARD {
            self.readme = Some(String::from_utf8_lossy(&bytes).into_owned());
            return;
        }
        self.files.insert(base.to_string(), bytes);
    }

    /// The model card's text, where the model came with one.
    pub fn readme(&self) -> Option<&str> {
        self.readme.as_deref()
    }

    pub fn get(&self, file: &str) -> Option<&[u8]> {
        self.files.get(file).map(Vec::as_slice)
    }

    pub fn contains(&self, file: &str) -> bool {
        self.files.contains_key(file)
    }

    /// Removes a file, handing over its bytes (the weights are moved, never copied).
    pub fn take(&mut self, file: &str) -> Option<Vec<u8>> {
        self.files.remove(file)
    }

    pub fn file_names(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// SHA-256 over every file's name and bytes, in name order: what the model is, whatever
    /// folder or cache it came from.
    pub fn fingerprint(&self) -> String {
        crate::digest::sha256_of_parts(
            self.files
                .iter()
                .flat_map(|(name, bytes)| [name.as_bytes(), bytes.as_slice()]),
        )
    }

    /// `config.json` parsed, or an error saying the folder is not an HF model.
    pub fn config(&self) -> Result<serde_json::Value> {
        let bytes = self.get("config.json").ok_or_else(|| {
            Error::in_file(
                &self.name,
                "no config.json: give a Hugging Face model folder (config.json, the weights, the tokenizer files)",
            )
        })?;
        serde_json::from_slice(bytes).map_err(|e| {
            Error::in_file(
                format!("{}/config.json", self.name),
                format!("not valid JSON ({e})"),
            )
        })
    }
}
