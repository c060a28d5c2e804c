//! `evaluate`: the protocol on the dropped files for each model, as `geneb eval` runs it.

use super::held_model::{ModelFile, holds_model, load_encoder};
use super::page_store::PageStore;
use super::{DroppedFile, answer, from_page, page_error};
use crate::encoder::BackendKind;
use crate::eval::{self, Progress};
use crate::input::{self, InputFile};
use crate::protocol::Regime;
use crate::{Error, Result, profile};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[derive(Deserialize)]
struct Request {
    files: Vec<DroppedFile>,
    models: Vec<String>,
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
    model_files: std::collections::BTreeMap<String, Vec<ModelFile>>,
    /// The page's key for each `hf:` model's current load (see `held_model`); the files
    /// of a model the core still holds under its key are left out.
    #[serde(default, rename = "modelKeys")]
    model_keys: std::collections::BTreeMap<String, String>,
    /// How tables without a split column are split (the CLI's --test-fraction, --split-seed,
    /// --group-column, --folds).
    #[serde(default)]
    split: crate::input::split::SplitSettings,
    /// The user's corrections to what each submission's `meta` says (www/meta.js).
    #[serde(default)]
    meta: crate::encoder::card::MetaOverrides,
    /// Also fit the full-data probe of the run's one model on its one task, for download
    /// (what `geneb eval --save-probe` writes).
    #[serde(default, rename = "saveProbe")]
    save_probe: bool,
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
pub async fn evaluate(
    request: JsValue,
    on_progress: js_sys::Function,
    embedding_cache: JsValue,
) -> std::result::Result<JsValue, JsError> {
    let request: Request = from_page(request)?;
    let store = PageStore::from_js(&embedding_cache).map_err(page_error)?;
    answer(run(request, &on_progress, store.as_ref()).await)
}

async fn run(
    request: Request,
    on_progress: &js_sys::Function,
    store: Option<&PageStore>,
) -> Result<Outcome> {
    let files: Vec<InputFile> = request.files.into_iter().map(InputFile::from).collect();
    // Dropped embeddings (.npz, X.npy + labels.csv) are probed as they are; the other files are
    // tasks for the chosen models.
    let (own, files) = crate::input::embeddings::partition(files);
    if request.models.is_empty() && own.is_empty() {
        return Err(Error::new("choose at least one model"));
    }
    if files.is_empty() && own.is_empty() {
        return Err(Error::new("add at least one task file"));
    }
    let regimes = Regime::parse_list(&request.regimes)?;
    let backend = BackendKind::parse(&request.backend)?;
    #[cfg(feature = "wgpu")]
    crate::encoder::backend::set_page_adapter_label(&request.adapter);
    let category = request.category.as_deref();
    let tasks = if files.is_empty() {
        Vec::new()
    } else {
        input::tasks_from_files_split(&files, category, &request.split)?
    };
    let own = if own.is_empty() {
        Vec::new()
    } else {
        crate::input::embeddings::tasks_from_files(&own, category, &request.split)?
    };
    let models = if tasks.is_empty() {
        &[][..]
    } else {
        &request.models[..]
    };
    if request.save_probe && (models.len() != 1 || tasks.len() != 1 || !own.is_empty()) {
        return Err(Error::new(format!(
            "the probe download saves one encoder's probe of one task; this run has {} encoder(s) \
             and {} task(s){}",
            models.len(),
            tasks.len(),
            if own.is_empty() {
                ""
            } else {
                " and dropped embeddings"
            }
        )));
    }
    let mut probe = None;

    let mut report = |p: Progress| {
        if let Ok(value) = serde_wasm_bindgen::to_value(&p) {
            // A throwing progress handler must not abort the run; the page only loses a tick.
            let _ = on_progress.call1(&JsValue::NULL, &value);
        }
    };
    let mut submissions = vec![None; models.len()];
    let mut backends = Vec::with_capacity(models.len());
    let mut model_files = request.model_files;
    // The held model first: loading any other drops it, and the page sent no files for it.
    let key_of = |spec: &String| request.model_keys.get(spec).map(String::as_str);
    let mut order: Vec<usize> = (0..models.len()).collect();
    order
        .sort_by_key(|&i| !key_of(&models[i]).is_some_and(|k| holds_model(k, &models[i], backend)));
    for i in order {
        let spec = &models[i];
        let (encoder, _) =
            load_encoder(spec, model_files.remove(spec), key_of(spec), backend).await?;
        let store = store.map(|s| s as &dyn eval::EmbeddingStore);
        submissions[i] =
            Some(eval::evaluate(&encoder, &tasks, &regimes, store, &mut report).await?);
        backends.push(encoder.backend_info());
        if request.save_probe {
            let saved = crate::predict::fit_saved(&encoder, &tasks[0]).await?;
            probe = Some(
                serde_json::to_string_pretty(&saved)
                    .map_err(|e| Error::new(format!("cannot write the probe: {e}")))?,
            );
        }
    }
    let mut submissions: Vec<_> = submissions.into_iter().flatten().collect();
    if !own.is_empty() {
        let id = "embeddings:dropped";
        submissions.push(crate::input::embeddings::evaluate(
            id,
            own,
            &regimes,
            &mut report,
        )?);
        backends.push(crate::encoder::BackendInfo {
            kind: "cpu".into(),
            adapter: String::new(),
            precision: crate::encoder::Precision::F32,
        });
    }
    request.meta.apply_all(&mut submissions)?;
    let profile = profile::build(&submissions)?;
    // The page reports the GPU when any model used it; k-mer models alone run on the CPU.
    let used = backends
        .iter()
        .find(|b| b.kind != "cpu")
        .or(backends.last())
        .cloned();
    let backend = used.ok_or_else(|| Error::new("no model ran"))?;
    Ok(Outcome {
        backend,
        submissions,
        profile,
        probe,
    })
}
