//! `predict`: a saved probe on new sequences, as `geneb predict` applies it.

use super::held_model::{ModelFile, load_encoder};
use super::{DroppedFile, answer, from_page};
use crate::Error;
use crate::encoder::BackendKind;
use crate::input::{self, InputFile};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[derive(Deserialize)]
struct PredictRequest {
    /// The probe file (`geneb eval --save-probe`, or the page's download).
    probe: DroppedFile,
    /// The encoder's spec; its files (`hf:`) as for `run`.
    model: crate::encoder::spec::ModelSpec,
    #[serde(default, rename = "modelFiles")]
    model_files: Option<Vec<ModelFile>>,
    #[serde(default, rename = "modelKey")]
    model_key: Option<String>,
    /// FASTA, a table with a text or sequence column, or one sequence per line.
    input: DroppedFile,
    backend: String,
}

#[derive(Serialize)]
struct Predicted {
    /// `id,predicted,p_<label>…`, as `geneb predict` writes it.
    csv: String,
    rows: usize,
    task: String,
}

/// Apply a saved probe to new sequences: `{probe, model, modelFiles?, modelKey?, input,
/// backend}` → `{csv, rows, task}`. A probe fitted on another encoder is refused.
#[wasm_bindgen]
pub async fn predict(request: JsValue) -> std::result::Result<JsValue, JsError> {
    let request: PredictRequest = from_page(request)?;
    let run = async move {
        let saved = crate::predict::SavedProbe::read(&request.probe.name, &request.probe.bytes)?;
        let sequences = input::read_sequences(&InputFile::from(request.input))?;
        let rows = sequences.len();
        let (encoder, _) = load_encoder(
            &request.model,
            request.model_files,
            request.model_key.as_deref(),
            BackendKind::parse(&request.backend)?,
        )
        .await?;
        let csv =
            crate::predict::predict_sequences(&saved, &request.probe.name, &encoder, sequences)
                .await?;
        Ok::<_, Error>(Predicted {
            csv,
            rows,
            task: saved.task,
        })
    };
    answer(run.await)
}
