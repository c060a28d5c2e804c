//! The browser surface (wasm-bindgen), thin by design: it converts the page's request, calls the
//! same core as the CLI, and converts back. The page's worker (www/worker.js) owns it; errors
//! become JS `Error`s whose message is the one-line `file:line: problem` the CLI would print.
//! One module per job:
//!
//! - `start`: the start function (static constructors once, readable panics);
//! - `allocator`: the allocator that notes a refused allocation (the tab's memory, not a bug);
//! - `out_of_memory`: the threaded build's word to the page when a pool thread runs out of it;
//! - `blob_file`: model files read by range from the page's Blobs;
//! - `page_store`: the page's IndexedDB embedding cache as the eval's store;
//! - `held_model`: models built from the page's files, the last one kept between calls;
//! - `run`, `embed`, `predict`, `report`, `split`, `audit`: the calls the page makes
//!   (www/protocol.js);
//! - here: what the page reads once (version, threads, encoders, the core's facts) and the
//!   conversions every call shares.

mod allocator;
mod audit;
mod blob_file;
mod embed;
mod held_model;
#[cfg(feature = "threads")]
mod out_of_memory;
mod page_store;
mod predict;
mod report;
mod run;
mod split;
mod start;

use crate::input::InputFile;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// `initThreadPool(n)` in the threaded build: starts n rayon threads as Web Workers sharing this
/// module's memory (wasm-bindgen-rayon); the worker calls it once, right after loading.
#[cfg(feature = "threads")]
pub use wasm_bindgen_rayon::init_thread_pool;

/// Threads the core's CPU work runs on: rayon's pool, 1 in the one-thread build.
#[wasm_bindgen]
pub fn threads() -> usize {
    rayon::current_num_threads()
}

#[wasm_bindgen]
pub fn version() -> String {
    crate::VERSION.to_string()
}

/// The core's rules the page shows and checks input by (src/facts.rs): regimes, categories,
/// data file types, suites, the embedding budget; www/core-facts.js reads them.
#[wasm_bindgen]
pub fn facts() -> std::result::Result<JsValue, JsError> {
    answer(crate::facts::Facts::get())
}

/// `{builtin: [{spec, name, description, needsBackend}], known: [{hubId (null off the hub),
/// weights (where those are), display, leaderboard,
/// parameters, context, contextUnit, tokenizer, architecture, supported, checked: {kind,
/// description}, published}]}`.
#[wasm_bindgen]
pub fn models() -> std::result::Result<JsValue, JsError> {
    answer(crate::encoder::model_list())
}

/// `{name, bytes}` of a sharded checkpoint's index → the shard files it names, each once: the
/// core's rule (`checkpoint::safetensors::shard_names`) before the page asks a hub for any.
#[wasm_bindgen(js_name = shardNames)]
pub fn shard_names(index: JsValue) -> std::result::Result<JsValue, JsError> {
    let index: DroppedFile = from_page(index)?;
    answer(crate::checkpoint::safetensors::shard_names(
        &index.name,
        &index.bytes,
    ))
}

#[derive(Deserialize)]
struct DroppedFile {
    name: String,
    #[serde(with = "serde_bytes")]
    bytes: Vec<u8>,
}

impl From<DroppedFile> for InputFile {
    fn from(f: DroppedFile) -> Self {
        InputFile {
            name: f.name,
            bytes: f.bytes,
        }
    }
}

/// What a thrown JS value says: an Error's (or DOMException's) message, else its debug form.
fn js_message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map_or_else(|| format!("{e:?}"), |e| String::from(e.message()))
}

/// The page's request as `T`: a shape the core does not take is the page's bug, and says so.
fn from_page<T: serde::de::DeserializeOwned>(request: JsValue) -> std::result::Result<T, JsError> {
    serde_wasm_bindgen::from_value(request)
        .map_err(|e| JsError::new(&format!("malformed request from the page: {e}")))
}

/// A core error as the page's `Error`: the one-line message the CLI would print.
fn page_error(e: crate::Error) -> JsError {
    JsError::new(&e.to_string())
}

/// A call's answer for the page: its value as plain JS data, or its error.
fn answer(result: crate::Result<impl Serialize>) -> std::result::Result<JsValue, JsError> {
    to_js(&result.map_err(page_error)?)
}

fn to_js(value: &impl Serialize) -> std::result::Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("cannot pass the result to the page: {e}")))
}
