//! The browser surface (wasm-bindgen), thin by design: it converts the page's request, calls the
//! same core as the CLI, and converts back. The page's worker owns this module; errors become JS
//! `Error`s whose message is the one-line `file:line: problem` the CLI would print.

use crate::encoder::{BackendKind, Encoder};
use crate::eval::{self, Progress};
use crate::protocol::Regime;
use crate::seq::{self, InputFile};
use crate::{Error, Result, profile};
use serde::{Deserialize, Serialize};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

// The static constructors wasm-ld gathers (`inventory` registrations in CubeCL's IR, 200+ of
// them). Unless the module calls this itself, wasm-ld treats it as a "command" and wraps every
// export in a call to it, so each JS → wasm call (every externref hand-over of wasm-bindgen's
// glue included) re-ran all of them: NT-v2-50m-shaped embedded 4.7× slower in a one-thread tab
// (bench/README.md, wasm_profile.mjs). One explicit call, at start, turns that wrapping off.
unsafe extern "C" {
    fn __wasm_call_ctors();
}

#[wasm_bindgen(start)]
pub fn start() {
    // SAFETY: runs once, first, on the thread that instantiated the module (wasm-bindgen runs
    // the start function on the main thread only); nothing has read the registries yet.
    unsafe { __wasm_call_ctors() };
    // A Rust panic is a bug; this makes it readable in the console instead of "unreachable".
    console_error_panic_hook::set_once();
}

/// The system allocator, noting the size of the last request the browser refused (WebAssembly
/// memory that could not grow). Rust then aborts, which the page sees as a bare `unreachable`
/// trap; `refusedAllocation()` tells the worker it was the tab's memory, not a bug.
struct NotingAllocator;

static REFUSED_BYTES: AtomicUsize = AtomicUsize::new(0);

impl NotingAllocator {
    fn noted(ptr: *mut u8, bytes: usize) -> *mut u8 {
        if ptr.is_null() {
            REFUSED_BYTES.store(bytes, Ordering::Relaxed);
        }
        ptr
    }
}

// SAFETY: every call is passed to `System` unchanged; only null results are noted.
unsafe impl GlobalAlloc for NotingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::noted(unsafe { System.alloc(layout) }, layout.size())
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::noted(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::noted(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: NotingAllocator = NotingAllocator;

/// The bytes of the last allocation the browser refused, 0 if none was: read by the worker
/// after a trap, to say the tab ran out of memory.
#[wasm_bindgen(js_name = refusedAllocation)]
pub fn refused_allocation() -> f64 {
    REFUSED_BYTES.load(Ordering::Relaxed) as f64
}

/// The threaded build's word to the page when a thread of the rayon pool runs out of memory. That
/// thread's trap is an error in a nested Web Worker whose parent, the page's worker, waits for
/// the pool's answer (Atomics.wait) and so never hears of it: the tab would hang. Before
/// aborting, the pool thread posts the refused size on the `BroadcastChannel` the page named
/// (one per worker, so another tab's core never answers for this one); the page then replaces
/// the wedged worker (www/app.js). A failure on the worker's own thread traps its call, which
/// the worker reports as in the one-thread build.
#[cfg(feature = "threads")]
mod pool_out_of_memory {
    use std::alloc::Layout;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering};
    use wasm_bindgen::prelude::*;

    static CHANNEL: OnceLock<String> = OnceLock::new();
    /// The hook may allocate (the JS object's slot); a failure there must not recurse.
    static TOLD: AtomicBool = AtomicBool::new(false);

    #[wasm_bindgen]
    extern "C" {
        type BroadcastChannel;
        #[wasm_bindgen(constructor)]
        fn new(name: &str) -> BroadcastChannel;
        #[wasm_bindgen(method, js_name = postMessage)]
        fn post_message(this: &BroadcastChannel, refused_bytes: f64);
    }

    /// Names the page's channel; the worker calls it once, right after loading.
    #[wasm_bindgen(js_name = signalPoolOutOfMemoryOn)]
    pub fn signal_on(channel: String) {
        if CHANNEL.set(channel).is_ok() {
            std::alloc::set_alloc_error_hook(tell_the_page);
        }
    }

    fn tell_the_page(layout: Layout) {
        let on_pool_thread = rayon::current_thread_index().is_some();
        if on_pool_thread
            && !TOLD.swap(true, Ordering::SeqCst)
            && let Some(name) = CHANNEL.get()
        {
            BroadcastChannel::new(name).post_message(layout.size() as f64);
        }
        // std aborts after the hook returns: the trap the page no longer waits for.
    }
}

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
    to_js(&crate::facts::Facts::get().map_err(|e| JsError::new(&e.to_string()))?)
}

/// `{builtin: [{spec, name, description, needsBackend}], known: [{hubId (null off the hub),
/// weights (where those are), display, leaderboard,
/// parameters, context, contextUnit, tokenizer, architecture, supported, checked: {kind,
/// description}, published}]}`.
#[wasm_bindgen]
pub fn models() -> std::result::Result<JsValue, JsError> {
    to_js(&crate::encoder::catalogue().map_err(|e| JsError::new(&e.to_string()))?)
}

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
    /// The page's key for each `hf:` model's current load (see [`HeldEncoder`]); the files
    /// of a model the core still holds under its key are left out.
    #[serde(default, rename = "modelKeys")]
    model_keys: std::collections::BTreeMap<String, String>,
    /// How tables without a split column are split (the CLI's --test-fraction, --split-seed,
    /// --group-column, --folds).
    #[serde(default)]
    split: crate::split::SplitSettings,
    /// The user's corrections to what each submission's `meta` says (www/meta.js).
    #[serde(default)]
    meta: crate::encoder::card::MetaOverrides,
    /// Also fit the full-data probe of the run's one model on its one task, for download
    /// (what `geneb eval --save-probe` writes).
    #[serde(default, rename = "saveProbe")]
    save_probe: bool,
}

#[derive(Deserialize)]
struct DroppedFile {
    name: String,
    #[serde(with = "serde_bytes")]
    bytes: Vec<u8>,
}

/// One file of a model from the page: a Blob (a dropped file, or the hub cache's) that the core
/// reads by range, so the weights enter the tab's memory one tensor at a time and never beside
/// the whole file; or its bytes, where there is no Blob to read synchronously (Node).
#[derive(Deserialize)]
struct ModelFile {
    name: String,
    #[serde(default, with = "serde_bytes")]
    bytes: Option<Vec<u8>>,
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    blob: JsValue,
}

#[wasm_bindgen]
extern "C" {
    /// The part of the Blob API the core reads model files through.
    #[wasm_bindgen(js_name = Blob)]
    type JsBlob;
    #[wasm_bindgen(method, getter)]
    fn size(this: &JsBlob) -> f64;
    #[wasm_bindgen(method)]
    fn slice(this: &JsBlob, start: f64, end: f64) -> JsBlob;

    /// Synchronous reads, which a worker has: the checkpoint readers are synchronous, and the
    /// core runs in the page's worker.
    type FileReaderSync;
    #[wasm_bindgen(constructor, catch)]
    fn new() -> std::result::Result<FileReaderSync, JsValue>;
    #[wasm_bindgen(method, catch, js_name = readAsArrayBuffer)]
    fn read_as_array_buffer(
        this: &FileReaderSync,
        blob: &JsBlob,
    ) -> std::result::Result<js_sys::ArrayBuffer, JsValue>;
}

/// A model file the page holds as a Blob, read by range.
struct BlobFile {
    blob: JsBlob,
    reader: FileReaderSync,
    size: u64,
}

impl BlobFile {
    fn new(blob: JsValue) -> Result<BlobFile> {
        let blob: JsBlob = blob
            .dyn_into()
            .map_err(|_| Error::new("the page sent neither the file's bytes nor a Blob"))?;
        let reader = FileReaderSync::new().map_err(|e| {
            Error::new(format!(
                "model files are read in the page's worker, which has no FileReaderSync here ({})",
                js_message(&e)
            ))
        })?;
        let size = blob.size() as u64;
        Ok(BlobFile { blob, reader, size })
    }
}

impl crate::hf::ByteSource for BlobFile {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        crate::hf::source::check_range(self.size, offset, len)?;
        let part = self.blob.slice(offset as f64, (offset + len as u64) as f64);
        let cannot = |why: String| {
            Error::new(format!(
                "cannot read it (was it moved or changed since it was dropped?): {why}"
            ))
        };
        let buffer = self
            .reader
            .read_as_array_buffer(&part)
            .map_err(|e| cannot(js_message(&e)))?;
        let array = js_sys::Uint8Array::new(&buffer);
        if array.length() as usize != len {
            return Err(cannot(format!(
                "{} bytes came back where {len} were asked for",
                array.length()
            )));
        }
        let mut bytes = vec![0; len];
        array.copy_to(&mut bytes);
        Ok(bytes)
    }
}

impl From<DroppedFile> for InputFile {
    fn from(f: DroppedFile) -> Self {
        InputFile {
            name: f.name,
            bytes: f.bytes,
        }
    }
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
    let request: Request = serde_wasm_bindgen::from_value(request)
        .map_err(|e| JsError::new(&format!("malformed request from the page: {e}")))?;
    let store = PageStore::from_js(&embedding_cache).map_err(|e| JsError::new(&e.to_string()))?;
    let outcome = run(request, &on_progress, store.as_ref())
        .await
        .map_err(|e| JsError::new(&e.to_string()))?;
    to_js(&outcome)
}

/// The page's embedding cache (IndexedDB, `www/embedding-cache.js`), reached through two
/// functions: `get(key, rows, dim)` → `Promise<Float32Array | null>` and
/// `put(key, dim, Float32Array)` → `Promise`. An entry of the wrong size is a miss.
struct PageStore {
    get: js_sys::Function,
    put: js_sys::Function,
}

impl PageStore {
    fn from_js(value: &JsValue) -> Result<Option<PageStore>> {
        if value.is_null() || value.is_undefined() {
            return Ok(None);
        }
        let method = |name: &str| {
            js_sys::Reflect::get(value, &JsValue::from_str(name))
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
                .ok_or_else(|| {
                    Error::new(format!("the page's embedding cache has no {name} function"))
                })
        };
        Ok(Some(PageStore {
            get: method("get")?,
            put: method("put")?,
        }))
    }
}

/// A JS promise (or plain value) settled.
async fn settled(
    value: std::result::Result<JsValue, JsValue>,
) -> std::result::Result<JsValue, JsValue> {
    wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&value?)).await
}

impl eval::EmbeddingStore for PageStore {
    fn get<'a>(
        &'a self,
        key: &'a str,
        rows: usize,
        dim: usize,
    ) -> eval::StoreFuture<'a, Option<ndarray::Array2<f32>>> {
        Box::pin(async move {
            let found = self.get.call3(
                &JsValue::NULL,
                &JsValue::from_str(key),
                &JsValue::from(rows as f64),
                &JsValue::from(dim as f64),
            );
            let values = settled(found)
                .await
                .ok()?
                .dyn_into::<js_sys::Float32Array>()
                .ok()?;
            ndarray::Array2::from_shape_vec((rows, dim), values.to_vec()).ok()
        })
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        embeddings: &'a ndarray::Array2<f32>,
    ) -> eval::StoreFuture<'a, Result<()>> {
        Box::pin(async move {
            let values: Vec<f32> = embeddings.iter().copied().collect();
            let stored = self.put.call3(
                &JsValue::NULL,
                &JsValue::from_str(key),
                &JsValue::from(embeddings.ncols() as f64),
                &js_sys::Float32Array::from(values.as_slice()),
            );
            settled(stored).await.map(|_| ()).map_err(|e| {
                Error::new(format!(
                    "cannot keep the embeddings in this browser: {}",
                    js_message(&e)
                ))
            })
        })
    }
}

async fn run(
    request: Request,
    on_progress: &js_sys::Function,
    store: Option<&PageStore>,
) -> Result<Outcome> {
    let files: Vec<InputFile> = request.files.into_iter().map(InputFile::from).collect();
    // Dropped embeddings (.npz, X.npy + labels.csv) are probed as they are; the other files are
    // tasks for the chosen models.
    let (own, files) = crate::embeddings::partition(files);
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
        seq::tasks_from_files_split(&files, category, &request.split)?
    };
    let own = if own.is_empty() {
        Vec::new()
    } else {
        crate::embeddings::tasks_from_files(&own, category, &request.split)?
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
        submissions.push(crate::embeddings::evaluate(id, own, &regimes, &mut report)?);
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

#[derive(Deserialize)]
struct PredictRequest {
    /// The probe file (`geneb eval --save-probe`, or the page's download).
    probe: DroppedFile,
    /// The encoder's spec; its files (`hf:`) as for `evaluate`.
    model: String,
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
    let request: PredictRequest = serde_wasm_bindgen::from_value(request)
        .map_err(|e| JsError::new(&format!("malformed request from the page: {e}")))?;
    let run = async move {
        let saved = crate::predict::SavedProbe::read(&request.probe.name, &request.probe.bytes)?;
        let sequences = seq::read_sequences(&InputFile::from(request.input))?;
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
    to_js(&run.await.map_err(|e| JsError::new(&e.to_string()))?)
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
fn held_key(page_key: &str, spec: &str, backend: BackendKind) -> String {
    format!("{page_key} as {spec} on {backend:?}")
}

/// Whether the core holds the model the page loaded under `key`, built for `spec` on `backend`
/// ("cpu" or "webgpu"), so the page can leave its files out of the next call.
#[wasm_bindgen(js_name = holdsModel)]
pub fn page_holds_model(key: &str, spec: &str, backend: &str) -> bool {
    BackendKind::parse(backend).is_ok_and(|backend| holds_model(key, spec, backend))
}

fn holds_model(key: &str, spec: &str, backend: BackendKind) -> bool {
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
async fn load_encoder(
    spec: &str,
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
    spec: &str,
    files: Vec<ModelFile>,
    backend: BackendKind,
) -> Result<Encoder> {
    let crate::encoder::spec::ModelSpec::Hf(hf) = crate::encoder::spec::ModelSpec::parse(spec)?
    else {
        return Err(crate::Error::new(format!(
            "model '{spec}': model files were given, so its spec must be hf:NAME"
        )));
    };
    let mut model = crate::hf::ModelFiles::new(&hf.source);
    for file in files {
        match file.bytes {
            Some(bytes) => model.insert(&file.name, bytes),
            None => {
                let source = BlobFile::new(file.blob)
                    .map_err(|e| e.or_in_file(format!("{}/{}", hf.source, file.name)))?;
                model.insert_source(&file.name, Box::new(source))?;
            }
        }
    }
    Encoder::from_model_files(spec.to_string(), model, backend).await
}

/// The split settings the core uses where the page names none: `{testFraction, seed,
/// groupColumn, folds}`.
#[wasm_bindgen(js_name = splitDefaults)]
pub fn split_defaults() -> std::result::Result<JsValue, JsError> {
    to_js(&crate::split::SplitSettings::default())
}

#[derive(Deserialize)]
struct FilesRequest {
    files: Vec<DroppedFile>,
}

/// `{files: [{name, bytes}]}` → `[{file, task, columns}]`: the task tables without a split
/// column (which the core splits, see `crate::split`) and the columns that could group them.
#[wasm_bindgen(js_name = unsplitTables)]
pub fn unsplit_tables(request: JsValue) -> std::result::Result<JsValue, JsError> {
    let request: FilesRequest = serde_wasm_bindgen::from_value(request)
        .map_err(|e| JsError::new(&format!("malformed request from the page: {e}")))?;
    let files: Vec<InputFile> = request.files.into_iter().map(InputFile::from).collect();
    to_js(&seq::unsplit_tables(&files).map_err(|e| JsError::new(&e.to_string()))?)
}

/// What a thrown JS value says: an Error's (or DOMException's) message, else its debug form.
fn js_message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map_or_else(|| format!("{e:?}"), |e| String::from(e.message()))
}

fn to_js(value: &impl Serialize) -> std::result::Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("cannot pass the result to the page: {e}")))
}

#[derive(Deserialize)]
struct EmbedRequest {
    model: String,
    backend: String,
    sequences: Vec<String>,
    /// The page's description of its WebGPU adapter, as for `evaluate`.
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
}

/// Pooled embeddings of raw sequences: `{model, backend, sequences, modelFiles?, modelKey?}` →
/// `{dim, values, backend, modelKept}`.
/// Sequences are validated like task files (IUPAC codes → N).
#[wasm_bindgen]
pub async fn embed(request: JsValue) -> std::result::Result<JsValue, JsError> {
    let request: EmbedRequest = serde_wasm_bindgen::from_value(request)
        .map_err(|e| JsError::new(&format!("malformed request from the page: {e}")))?;
    let run = async move {
        let sequences = request
            .sequences
            .iter()
            .enumerate()
            .map(|(i, s)| {
                seq::normalize_sequence(s)
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
        })
    };
    to_js(&run.await.map_err(|e| JsError::new(&e.to_string()))?)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReportRequest {
    /// Result files as text (what `evaluate` returned, stored by the page, or a downloaded
    /// `geneb eval` file); `name` labels errors.
    files: Vec<ResultText>,
    #[serde(default)]
    max_params: Option<u64>,
    #[serde(default)]
    bootstrap: Option<usize>,
    #[serde(default)]
    seed: Option<u32>,
}

#[derive(Deserialize)]
struct ResultText {
    name: String,
    text: String,
}

#[derive(Serialize)]
struct Report {
    #[serde(flatten)]
    outputs: crate::report::html::Outputs,
    /// The profile with intervals, paired tests, ranks and recommendations (as `geneb profile
    /// --json` prints it).
    analysis: profile::analysis::Analysis,
}

/// The comparison report of stored results, exactly as `geneb profile` makes it:
/// `{files: [{name, text}], maxParams?, bootstrap? (1000), seed? (0)}` →
/// `{html, csv: {name: text}, svg: {name: text}, official: {name: text}, analysis}`.
#[wasm_bindgen]
pub fn report(request: JsValue) -> std::result::Result<JsValue, JsError> {
    let request: ReportRequest = serde_wasm_bindgen::from_value(request)
        .map_err(|e| JsError::new(&format!("malformed request from the page: {e}")))?;
    let build = || {
        let mut submissions = Vec::new();
        for file in &request.files {
            submissions.extend(crate::submission::read_results(
                &file.name,
                file.text.as_bytes(),
            )?);
        }
        let defaults = profile::bootstrap::Settings::default();
        let settings = profile::bootstrap::Settings {
            replicates: request.bootstrap.unwrap_or(defaults.replicates),
            seed: request.seed.unwrap_or(defaults.seed),
        };
        let analysis = profile::analysis::analyse(&submissions, settings, request.max_params)?;
        let outputs = crate::report::html::render(&analysis, &submissions)?;
        Ok::<_, Error>(Report { outputs, analysis })
    };
    to_js(&build().map_err(|e| JsError::new(&e.to_string()))?)
}
