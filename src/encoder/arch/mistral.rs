//! Mistral (transformers' `modeling_mistral.py`), the decoder of GenomeOcean and BioFM: Llama's
//! blocks (`llama.rs`) with a sliding attention window, each token attending to itself and the
//! `sliding_window − 1` tokens before it. `MistralConfig` defaults the window to 4,096 and
//! takes `null` for none.

use super::llama::{Llama, model_type};
use super::{ArchSpec, Pooling, parse_config};
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::tokenize::TokenizerChoice;
use crate::{Error, Result};
use burn::tensor::Device;
use serde::Deserialize;
use serde_json::Value;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::MISTRAL.architecture,
    family: family::MISTRAL.name,
    serves: "DOEJGI/GenomeOcean-*, m42-health/BioFM-265M",
    matches: |config| model_type(config) == Some("mistral"),
    tokenizer: TokenizerChoice::Files,
    poolings: &[Pooling::MaskedMean, Pooling::NonPadCountLessTwo],
    load: |config, ckpt, compute| Ok(Box::new(load(config, ckpt, &compute.device)?)),
    recipe: &crate::encoder::recipe::GENERIC,
    published_config: None,
};

/// `MistralConfig`'s window default.
const DEFAULT_WINDOW: u64 = 4096;

#[derive(Deserialize)]
struct Config {
    /// Absent: the default window; `null`: none.
    #[serde(default = "default_window")]
    sliding_window: Option<u64>,
}

fn default_window() -> Option<u64> {
    Some(DEFAULT_WINDOW)
}

pub fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Llama> {
    let c: Config = parse_config(config)?;
    let window = match c.sliding_window {
        None => None,
        Some(0) => {
            return Err(Error::in_file(
                "config.json",
                "'sliding_window' is 0: no token would see any other",
            ));
        }
        // A window past every position a model takes is no window.
        Some(window) => Some(usize::try_from(window).unwrap_or(usize::MAX)),
    };
    Llama::load(config, ckpt, device, &family::MISTRAL, window)
}
