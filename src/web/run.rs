//! `run`: the page's Run button. The request becomes a `crate::run::Run` (the one `geneb
//! eval` runs) and its outcome the page's answer; this file only converts.

use super::held_model::{ModelFile, holds_model, load_encoder};
use super::page_store::PageStore;
use super::{DroppedFile, answer, from_page, page_error};
use crate::encoder::BackendKind;
use crate::encoder::spec::ModelSpec;
use crate::eval::Progress;
use crate::input::{self, InputFile};
use crate::protocol::Regime;
use crate::run::{EncoderFuture, Encoders, OwnEmbeddings, Run};
use crate::{Error, Result, profile};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use wasm_bindgen::prelude::*;

#[derive(Deserialize)]
struct Request {
    files: Vec<DroppedFile>,
    models: Vec<ModelSpec>,
    #[serde(default = "all_regimes")]
    regimes: Vec<String>,
    /// "webgpu" when the page found an adapter, else "cpu".
    backend: String,
    /// The page's description of its WebGPU adapter (browsers hide the name from wgpu).
    #[serde(default)]
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))] // the threaded build has no WebGPU
    adapter: String,
    #[serde(default)]
    category: Option<String>,
    /// The files of each `hf:NAME` model in `models`, keyed by that spec: dropped by the user
    /// or from the page's hub cache; the weights are read from them one tensor at a time.
    #[serde(default, rename = "modelFiles")]
    model_files: BTreeMap<String, Vec<ModelFile>>,
    /// The page's key for each `hf:` model's current load (see `held_model`); the files
    /// of a model the core still holds under its key are left out.
    #[serde(default, rename = "modelKeys")]
    model_keys: BTreeMap<String, String>,
    /// How tables without a split column are split (the CLI's --test-fraction, --split-seed,
    /// --group-column, --folds).
    #[serde(default)]
    split: crate::input::split::SplitSettings,
    /// The user's corrections to what each submission's `meta` says (www/meta.js).
    #[serde(default)]
    meta: crate::encoder::card::MetaOverrides,
    /// Also keep the full-data probe of the run's one model on its one task, for download
    /// (what `geneb eval --save-probe` writes).
    #[serde(default, rename = "saveProbe")]
    save_probe: bool,
    /// `geneb eval --layers`: "all" or "0,6,-1"; each `hf:` model's layers, each its own
    /// submission.
    #[serde(default)]
    layers: Option<crate::encoder::spec::LayerSweep>,
    /// The page's layer choice per `hf:` model (its spec in `models` → "all" or "0,6,-1"),
    /// over `layers`: one loaded model swept, the others as they are.
    #[serde(default, rename = "modelLayers")]
    model_layers: BTreeMap<String, crate::encoder::spec::LayerSweep>,
}

fn all_regimes() -> Vec<String> {
    Regime::ALL.iter().map(|r| r.key().to_string()).collect()
}

#[derive(Serialize)]
struct Outcome {
    backend: crate::encoder::BackendInfo,
    submissions: Vec<crate::submission::Submission>,
    profile: profile::Profile,
    /// The saved probe's JSON, when the request asked for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<String>,
}

/// Run the protocol on the dropped files for each model. `on_progress` receives
/// `{stage, model, task, done, total, fromCache}` objects. `embedding_cache` is the page's
/// store of earlier embeddings (`{get, put}`, see [`PageStore`]), or null to embed afresh.
#[wasm_bindgen]
pub async fn run(
    request: JsValue,
    on_progress: js_sys::Function,
    embedding_cache: JsValue,
) -> std::result::Result<JsValue, JsError> {
    let request: Request = from_page(request)?;
    let store = PageStore::from_js(&embedding_cache).map_err(page_error)?;
    answer(execute(request, &on_progress, store.as_ref()).await)
}

/// The page's encoders: built from the files it sent for each `hf:` spec, or the one the core
/// still holds under the page's key for it.
struct PageEncoders {
    files: BTreeMap<String, Vec<ModelFile>>,
    keys: BTreeMap<String, String>,
    backend: BackendKind,
}

impl PageEncoders {
    fn key(&self, model: &ModelSpec) -> Option<&str> {
        self.keys.get(&model.to_string()).map(String::as_str)
    }
}

impl Encoders for PageEncoders {
    fn holds(&self, model: &ModelSpec) -> bool {
        self.key(model)
            .is_some_and(|key| holds_model(key, model, self.backend))
    }

    fn load<'a>(&'a mut self, model: &'a ModelSpec) -> EncoderFuture<'a> {
        Box::pin(async move {
            let files = self.files.remove(&model.to_string());
            let key = self.key(model).map(str::to_string);
            let (encoder, _) = load_encoder(model, files, key.as_deref(), self.backend).await?;
            Ok(encoder)
        })
    }
}

async fn execute(
    request: Request,
    on_progress: &js_sys::Function,
    store: Option<&PageStore>,
) -> Result<Outcome> {
    let files: Vec<InputFile> = request.files.into_iter().map(InputFile::from).collect();
    // Dropped embeddings (.npz, X.npy + labels.csv) are probed as they are; the other files are
    // tasks for the chosen models.
    let (own, files) = crate::input::embeddings::partition(files);
    let category = request.category.as_deref();
    let tasks = if files.is_empty() {
        Vec::new()
    } else {
        input::tasks_from_files_split(&files, category, &request.split)?
    };
    let own = if own.is_empty() {
        None
    } else {
        Some(OwnEmbeddings {
            id: "embeddings:dropped".to_string(),
            tasks: crate::input::embeddings::tasks_from_files(&own, category, &request.split)?,
        })
    };
    let backend = BackendKind::parse(&request.backend)?;
    #[cfg(feature = "wgpu")]
    crate::encoder::backend::set_page_adapter_label(&request.adapter);
    let run = Run {
        models: request.models,
        tasks,
        own,
        regimes: Regime::parse_list(&request.regimes)?,
        meta: request.meta,
        save_probe: request.save_probe,
        layers: request.layers,
        model_layers: request.model_layers,
    };
    let mut encoders = PageEncoders {
        files: request.model_files,
        keys: request.model_keys,
        backend,
    };
    let mut report = |p: Progress| {
        if let Ok(value) = serde_wasm_bindgen::to_value(&p) {
            // A throwing progress handler must not abort the run; the page only loses a tick.
            let _ = on_progress.call1(&JsValue::NULL, &value);
        }
    };
    let store = store.map(|s| s as &dyn crate::eval::EmbeddingStore);
    let outcome = run.execute(&mut encoders, store, &mut report).await?;
    let profile = profile::build(&outcome.submissions)?;
    // The page reports the GPU when any model used it; k-mer models alone run on the CPU.
    let backend = outcome
        .backends
        .iter()
        .find(|b| b.kind != "cpu")
        .or(outcome.backends.last())
        .cloned()
        .ok_or_else(|| Error::new("no model ran"))?;
    let probe = outcome
        .probe
        .map(|saved| {
            serde_json::to_string_pretty(&saved)
                .map_err(|e| Error::new(format!("cannot write the probe: {e}")))
        })
        .transpose()?;
    Ok(Outcome {
        backend,
        submissions: outcome.submissions,
        profile,
        probe,
    })
}
