//! `embed`: pooled embeddings of a few sequences with one model (the page's model check and
//! embed tool).

use super::held_model::{ModelFile, load_encoder};
use super::{answer, from_page};
use crate::encoder::BackendKind;
use crate::input;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[derive(Deserialize)]
struct EmbedRequest {
    model: crate::encoder::spec::ModelSpec,
    backend: String,
    sequences: Vec<String>,
    /// The page's description of its WebGPU adapter, as for `run`.
    #[serde(default)]
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
    adapter: String,
    /// The model's files when `model` is an `hf:` model; absent when the core holds it under
    /// `model_key`.
    #[serde(default, rename = "modelFiles")]
    model_files: Option<Vec<ModelFile>>,
    #[serde(default, rename = "modelKey")]
    model_key: Option<String>,
}

#[derive(Serialize)]
struct Embedded {
    dim: usize,
    /// Row-major n × dim.
    values: Vec<f32>,
    backend: crate::encoder::BackendInfo,
    /// The model was the one held from an earlier call, not built for this one.
    #[serde(rename = "modelKept")]
    model_kept: bool,
    /// The last hidden state's index (states 0..=lastLayer, `?layer=K`), for the page's layer
    /// choice; absent for the baselines.
    #[serde(rename = "lastLayer", skip_serializing_if = "Option::is_none")]
    last_layer: Option<usize>,
    /// What an `hf:` model's weights are held in where not f32 (`pretrained::HeldWeights`): the
    /// tab picks f32 or half precision by its memory as the CLI does, and says which.
    #[serde(skip_serializing_if = "Option::is_none")]
    weights: Option<String>,
}

/// Pooled embeddings of raw sequences: `{model, backend, sequences, modelFiles?, modelKey?}` →
/// `{dim, values, backend, modelKept, lastLayer?, weights?}`.
/// Sequences are validated like task files (IUPAC codes → N).
#[wasm_bindgen]
pub async fn embed(request: JsValue) -> std::result::Result<JsValue, JsError> {
    let request: EmbedRequest = from_page(request)?;
    let run = async move {
        let sequences = request
            .sequences
            .iter()
            .enumerate()
            .map(|(i, s)| {
                input::normalize_sequence(s)
                    .map_err(|e| Error::new(format!("sequence {}: {}", i + 1, e.message)))
            })
            .collect::<Result<Vec<_>>>()?;
        let backend = BackendKind::parse(&request.backend)?;
        #[cfg(feature = "wgpu")]
        crate::encoder::backend::set_page_adapter_label(&request.adapter);
        let (encoder, model_kept) = load_encoder(
            &request.model,
            request.model_files,
            request.model_key.as_deref(),
            backend,
        )
        .await?;
        let x = encoder.embed(&sequences).await?;
        Ok::<_, Error>(Embedded {
            dim: encoder.dim(),
            values: x.into_iter().collect(),
            backend: encoder.backend_info(),
            model_kept,
            last_layer: encoder.layer().map(|(_, last)| last),
            weights: encoder.describe().weights,
        })
    };
    answer(run.await)
}
