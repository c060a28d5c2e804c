//! Building a model from the files the page sent, and keeping the last one built between calls
//! (parsing a checkpoint and building the model is most of what a short call costs).

use crate::encoder::spec::{ModelKind, ModelSpec};
use crate::encoder::{BackendKind, Encoder};
use crate::{Error, Result};
use serde::Deserialize;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// One file of a model from the page: a Blob (a dropped file, or the hub cache's) that the core
/// reads by range, so the weights enter the tab's memory one tensor at a time and never beside
/// the whole file; or its bytes, where there is no Blob to read synchronously (Node).
#[derive(Deserialize)]
pub(super) struct ModelFile {
    name: String,
    #[serde(default, with = "serde_bytes")]
    bytes: Option<Vec<u8>>,
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    blob: JsValue,
}

/// The last `hf:` model the page used, kept loaded between calls: parsing the checkpoint and
/// building the model (and, on WebGPU, uploading its weights) is most of what a short call
/// costs. `key` is the page's key for that load of the model's files, plus the backend. One
/// model at most, and it is dropped before another is built: two 117M-parameter models at once
/// could pass wasm32's 4 GiB.
struct HeldEncoder {
    key: String,
    encoder: Rc<Encoder>,
}

thread_local! {
    static HELD: RefCell<Option<HeldEncoder>> = const { RefCell::new(None) };
}

/// The spec is part of the key: the same files under another spec (`?window=`) are another
/// encoder.
fn held_key(page_key: &str, spec: &ModelSpec, backend: BackendKind) -> String {
    format!("{page_key} as {spec} on {backend:?}")
}

/// Whether the core holds the model the page loaded under `key`, built for `spec` on `backend`
/// ("cpu" or "webgpu"), so the page can leave its files out of the next call.
#[wasm_bindgen(js_name = holdsModel)]
pub fn page_holds_model(key: &str, spec: &str, backend: &str) -> bool {
    match (ModelSpec::parse(spec), BackendKind::parse(backend)) {
        (Ok(spec), Ok(backend)) => holds_model(key, &spec, backend),
        _ => false,
    }
}

pub(super) fn holds_model(key: &str, spec: &ModelSpec, backend: BackendKind) -> bool {
    let wanted = held_key(key, spec, backend);
    HELD.with_borrow(|held| held.as_ref().is_some_and(|h| h.key == wanted))
}

/// Drop the held model. The page's worker calls it on one build of the core before the other
/// build (threaded CPU, one-thread WebGPU) loads a model, so the tab never holds two.
#[wasm_bindgen(js_name = releaseModel)]
pub fn release_model() {
    HELD.set(None);
}

/// A built-in encoder from its spec, or an `hf:` model from the files the page passed for it
/// (or the held one, when `key` names it; then the files may be absent). The flag says whether
/// the held model was used.
pub(super) async fn load_encoder(
    spec: &ModelSpec,
    files: Option<Vec<ModelFile>>,
    key: Option<&str>,
    backend: BackendKind,
) -> Result<(Rc<Encoder>, bool)> {
    let Some(key) = key.map(|k| held_key(k, spec, backend)) else {
        let encoder = match files {
            Some(files) => build_from_files(spec, files, backend).await?,
            None => Encoder::from_spec(spec, backend).await?,
        };
        return Ok((Rc::new(encoder), false));
    };
    let held = HELD.with_borrow(|held| {
        held.as_ref()
            .filter(|h| h.key == key)
            .map(|h| Rc::clone(&h.encoder))
    });
    if let Some(encoder) = held {
        return Ok((encoder, true));
    }
    HELD.set(None);
    let files = files.ok_or_else(|| {
        Error::new(format!(
            "{spec}: the page sent no model files and the model is no longer loaded; load it again"
        ))
    })?;
    let encoder = Rc::new(build_from_files(spec, files, backend).await?);
    HELD.set(Some(HeldEncoder {
        key,
        encoder: Rc::clone(&encoder),
    }));
    Ok((encoder, false))
}

async fn build_from_files(
    spec: &ModelSpec,
    files: Vec<ModelFile>,
    backend: BackendKind,
) -> Result<Encoder> {
    let ModelKind::Hf(hf) = &spec.kind else {
        return Err(Error::new(format!(
            "model '{spec}': model files were given, so its spec must be hf:NAME"
        )));
    };
    let mut model = crate::checkpoint::ModelFiles::new(&hf.source);
    for file in files {
        match file.bytes {
            Some(bytes) => model.insert(&file.name, bytes),
            None => {
                let source = super::blob_file::BlobFile::new(file.blob)
                    .map_err(|e| e.or_in_file(format!("{}/{}", hf.source, file.name)))?;
                model.insert_source(&file.name, Box::new(source))?;
            }
        }
    }
    let encoder = Encoder::from_model_files(hf, model, backend).await?;
    // The pipelines of a run's small shapes compiled now, not mid-run (issue 41).
    #[cfg(feature = "burn")]
    if let Encoder::Hf(model) = &encoder {
        model.warm_up().await?;
    }
    Ok(encoder)
}
