// The worker owns the WebAssembly core and the GPU check, so the page never blocks.
//
// Page → worker:  {type: "run", id, request: {..., modelFiles, modelKeys, reuseEmbeddings}, forceBackend?: "cpu" | "webgpu"}
//                 {type: "embed", id, model, sequences, modelFiles, modelKey, forceBackend?}
//                 {type: "report", id, request: {files: [{name, text}], maxParams?}}
//                 {type: "columns", id, files: [{name, bytes}]}
//                 {type: "out-of-memory-channel", channel}: the BroadcastChannel the threaded core's
//                 pool threads post a refused allocation's size on (first, once per worker)
// Worker → page:  {type: "ready", version, models, backend, threads: {count, reason}}
//                 {type: "progress", id, stage, model, task, done, total, fromCache, pace}
//                 (pace: the core's rate, elapsed and time-left line for the run, src/progress.rs)
//                 {type: "result", id, backend, submissions, profile, cacheWarnings}
//                 {type: "embedded", id, dim, values, backend, modelKept}
//                 {type: "report", id, report: {html, csv, svg, official: {name: text}, analysis}}
//                 {type: "columns", id, tables: [{file, task, columns}], defaults, error?}
//                 {type: "error", id?, message, gpuFailure?, poisoned?, outOfMemory?}
//                 {type: "embed-error", id, message, poisoned?, outOfMemory?}
// `poisoned`: the wasm trapped (a Rust panic is a WebAssembly.RuntimeError); the instance may be
// left in a broken state, so the page must replace this worker before the next run.
// `outOfMemory`: the trap was the browser refusing the core more memory (the message says so).
// Requests that arrive while the core is still loading wait for it (`started`).
// The wasm runs synchronously, so cancelling is the page terminating this worker.

import { storeForRun } from './embedding-cache.js';
import { outOfMemoryMessage } from './out-of-memory.js';
import { hasRelaxedSimd } from './relaxed-simd.js';

// Two builds of one core (scripts/build-wasm.sh). The threaded one runs the CPU work on a rayon
// pool of Web Workers sharing its memory; shared memory needs a cross-origin isolated page
// (COOP + COEP, scripts/serve.mjs). Anywhere else the one-thread build runs.
const PKG = './pkg/geneb.js';
const PKG_THREADS = './pkg-threads/geneb.js';

/** Minimum time between two progress messages of the same step (ms). */
const PROGRESS_INTERVAL_MS = 80;

let wasm = null; // the core, once initialised: the threaded build where it could start
let threaded = false; // whether `wasm` is the threaded build, which has no WebGPU
let gpuCore = null; // the one-thread build beside the threaded one, for WebGPU calls
/** The call in progress, {type, id, core, kind}: whose failure a trap escaping its promise is. */
let current = null;

/**
 * The core for a call on `kind` ("cpu" or "webgpu"). The threaded build is the CPU's alone, so
 * WebGPU calls go to the one-thread build, loaded on first use. Each build holds at most one
 * model (src/web.rs HeldEncoder); the other build's is released first, so the tab never holds two.
 */
async function coreFor(kind) {
  if (!threaded || kind !== 'webgpu') {
    gpuCore?.releaseModel();
    return wasm;
  }
  if (!gpuCore) {
    const mod = await import(PKG);
    await mod.default();
    gpuCore = mod;
  }
  wasm.releaseModel();
  return gpuCore;
}

/** Describe a WebGPU adapter in one short line. */
async function describeAdapter(adapter) {
  let info = adapter.info;
  if (!info && typeof adapter.requestAdapterInfo === 'function') {
    try { info = await adapter.requestAdapterInfo(); } catch { info = null; }
  }
  if (!info) return 'WebGPU adapter';
  // The description usually says it all (it can be empty); else "vendor architecture device".
  const description = typeof info.description === 'string' ? info.description.trim() : '';
  if (description) return description;
  const parts = [info.vendor, info.architecture, info.device]
    .filter((s) => typeof s === 'string' && s.trim())
    .map((s) => s.trim());
  return parts.join(' ') || 'WebGPU adapter';
}

/** Ask for a WebGPU adapter; never throws. */
async function detectBackend() {
  try {
    const gpu = self.navigator?.gpu;
    if (!gpu || typeof gpu.requestAdapter !== 'function') {
      return { kind: 'cpu', adapter: '', reason: 'no WebGPU adapter' };
    }
    const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!adapter) return { kind: 'cpu', adapter: '', reason: 'no WebGPU adapter' };
    // A software adapter (SwiftShader) works, but is often slower than the CPU path.
    const fallback = Boolean(adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter);
    return { kind: 'webgpu', adapter: await describeAdapter(adapter), fallback };
  } catch (err) {
    return { kind: 'cpu', adapter: '', reason: `WebGPU unavailable: ${messageOf(err)}` };
  }
}

/**
 * The backend for one call: `force` is the page's choice ("cpu", "webgpu", or undefined for
 * automatic). Automatic passes over a software adapter (SwiftShader): measured in bench/, the
 * wasm CPU backend is 8–51× faster than it; "webgpu" uses it anyway.
 */
async function chooseBackend(force) {
  if (force === 'cpu') return { kind: 'cpu', adapter: '', reason: 'forced' };
  const found = await detectBackend();
  if (force !== 'webgpu' && found.kind === 'webgpu' && found.fallback) {
    return { kind: 'cpu', adapter: '', reason: 'software WebGPU adapter passed over', passedOver: found.adapter };
  }
  return found;
}

/**
 * The fields of an error message for `err`, thrown by `core`: a trap (a Rust panic, or an abort)
 * poisons the instance; where the core noted an allocation the browser refused (src/web.rs
 * `refusedAllocation`), it was the tab's memory, and the message says so instead of "unreachable".
 */
function failureOf(core, err) {
  const poisoned = err instanceof WebAssembly.RuntimeError;
  let refused = 0;
  try { refused = poisoned && core ? Number(core.refusedAllocation?.() ?? 0) : 0; } catch { refused = 0; }
  if (refused > 0) return { poisoned, outOfMemory: true, message: outOfMemoryMessage(refused) };
  return { poisoned, message: messageOf(err).split('\n')[0] };
}

function messageOf(err) {
  if (err == null) return 'unknown error';
  if (typeof err === 'string') return err;
  if (typeof err.message === 'string' && err.message) return err.message;
  try { return String(err); } catch { return 'unknown error'; }
}

/**
 * Make a value from wasm-bindgen plain data: ES Maps (serde-wasm-bindgen's default for maps)
 * become objects, JSON strings stay strings, so rendering and JSON.stringify see one shape.
 * The objects have no prototype: their keys are the data's (a category may be "__proto__").
 * Structured cloning to the page keeps such keys as own properties.
 */
function plain(value) {
  if (value instanceof Map) {
    const out = Object.create(null);
    for (const [k, v] of value) out[String(k)] = plain(v);
    return out;
  }
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    const out = Object.create(null);
    for (const k of Object.keys(value)) out[k] = plain(value[k]);
    return out;
  }
  return value;
}

function parseIfString(v) {
  if (typeof v !== 'string') return v;
  try { return JSON.parse(v); } catch { return v; }
}

const GPU_WORDS = /\b(web ?gpu|wgpu|gpu|adapter|device lost|request_?device)\b/i;

/**
 * Whether a failed run on WebGPU is worth retrying on the CPU: only when the message names the
 * GPU. A trap alone is not enough (it may be any panic); it poisons the worker either way.
 */
function looksLikeGpuFailure(message) {
  // "file:line: problem" is a data error: the user's to fix, not the GPU's.
  if (/^[^:\n]+:\d+: /.test(message)) return false;
  return GPU_WORDS.test(message);
}

/**
 * The threaded core with one rayon thread per logical core, or why not: `{mod, threads: {count,
 * reason}}`, `mod` null when the one-thread build must run. Never throws.
 */
async function loadThreaded() {
  if (!self.crossOriginIsolated || typeof SharedArrayBuffer !== 'function') {
    return { mod: null, threads: { count: 1, reason: 'the page is not cross-origin isolated' } };
  }
  if (!hasRelaxedSimd()) {
    return {
      mod: null,
      threads: { count: 1, reason: 'this browser lacks WebAssembly relaxed SIMD, which the threaded core needs (Chrome or Edge 114+, Firefox 146+)' },
    };
  }
  try {
    const mod = await import(PKG_THREADS);
    await mod.default();
    const asked = Number.parseInt(new URL(self.location.href).searchParams.get('threads') ?? '', 10);
    const cores = Number(self.navigator?.hardwareConcurrency) || 1;
    // 64 bounds a mistyped `?threads=`.
    const count = Number.isInteger(asked) && asked >= 1 ? Math.min(asked, 64) : cores;
    await mod.initThreadPool(count);
    return { mod, threads: { count: mod.threads(), reason: '' } };
  } catch (err) {
    return { mod: null, threads: { count: 1, reason: `the threaded core did not start: ${messageOf(err)}` } };
  }
}

async function start() {
  const backendP = detectBackend();
  let { mod, threads } = await loadThreaded();
  threaded = mod != null;
  try {
    if (!mod) {
      mod = await import(PKG);
      await mod.default();
    }
  } catch (err) {
    self.postMessage({
      type: 'error',
      fatal: true,
      message: `Could not load the geneb WebAssembly module (${PKG}): ${messageOf(err)}. `
        + 'If you serve the page yourself, build it first with scripts/build-wasm.sh. '
        // .cargo/config.toml builds it with WebAssembly SIMD.
        + 'It needs WebAssembly SIMD: Chrome or Edge 91+, Firefox 89+, Safari 16.4+.',
    });
    return;
  }
  wasm = mod;
  let models = [];
  let known = [];
  let tabWeightsLimit = null;
  let modelFiles = null;
  let protocol = null;
  try {
    protocol = plain(parseIfString(mod.protocol()));
    const catalogue = plain(parseIfString(mod.models())) ?? {};
    models = catalogue.builtin ?? [];
    known = catalogue.known ?? []; // foundation models by hub id (www/models.js shows them)
    tabWeightsLimit = catalogue.tabWeightsLimit ?? null;
    modelFiles = catalogue.modelFiles ?? null;
  } catch (err) {
    self.postMessage({ type: 'error', fatal: true, message: `Could not list the encoders: ${messageOf(err)}` });
    return;
  }
  let version = '';
  try { version = String(mod.version()); } catch { version = ''; }
  self.postMessage({
    type: 'ready', version, models, known, tabWeightsLimit, modelFiles, protocol, backend: await backendP, threads,
  });
}

async function run({ id, request, forceBackend }) {
  await started;
  if (!wasm) {
    self.postMessage({ type: 'error', id, message: 'The WebAssembly module could not be loaded.' });
    return;
  }
  const backend = await chooseBackend(forceBackend);
  const core = await coreFor(backend.kind);
  current = { type: 'error', id, core, kind: backend.kind };

  let last = { t: 0, key: '' };
  const onProgress = (p) => {
    try {
      p = plain(p) ?? {};
      const key = `${p.stage}\u0000${p.model}\u0000${p.task}`;
      const now = performance.now();
      const finished = p.total != null && p.done >= p.total;
      if (key === last.key && !finished && now - last.t < PROGRESS_INTERVAL_MS) return;
      last = { t: now, key };
      self.postMessage({
        type: 'progress', id,
        stage: p.stage ?? '', model: p.model ?? '', task: p.task ?? '',
        done: Number(p.done ?? 0), total: Number(p.total ?? 0), fromCache: Boolean(p.fromCache),
        pace: typeof p.pace === 'string' ? p.pace : '',
      });
    } catch { /* progress must never break the run */ }
  };

  const fullRequest = () => ({
    files: request.files,
    models: request.models,
    regimes: request.regimes,
    backend: backend.kind,
    adapter: backend.adapter ?? '',
    category: request.category || null,
    // Blobs, unread: the core reads the weights one tensor at a time (src/web.rs BlobFile).
    modelFiles: Object.fromEntries(Object.entries(request.modelFiles ?? {})
      .filter(([spec]) => !core.holdsModel(request.modelKeys?.[spec] ?? '', spec, backend.kind))),
    modelKeys: request.modelKeys ?? {},
    ...(request.split ? { split: request.split } : {}),
    ...(request.meta ? { meta: request.meta } : {}),
    ...(request.saveProbe ? { saveProbe: true } : {}),
  });
  // Embeddings of earlier runs (www/embedding-cache.js), unless the user turned reuse off.
  const cacheWarnings = [];
  const cache = request.reuseEmbeddings === false ? null : storeForRun(cacheWarnings);
  let raw;
  try {
    raw = await core.evaluate(fullRequest(), onProgress, cache);
  } catch (err) {
    const failure = failureOf(core, err);
    self.postMessage({
      type: 'error', id, ...failure,
      backend: backend.kind,
      gpuFailure: backend.kind === 'webgpu' && !failure.outOfMemory && looksLikeGpuFailure(failure.message),
    });
    return;
  } finally {
    current = null;
  }
  const result = plain(parseIfString(raw)) ?? {};
  const submissions = (result.submissions ?? []).map((s) => plain(parseIfString(s)));
  self.postMessage({
    type: 'result', id,
    backend: result.backend ?? { kind: backend.kind, adapter: backend.adapter },
    requestedBackend: backend,
    submissions,
    profile: plain(parseIfString(result.profile)) ?? null,
    probe: typeof result.probe === 'string' ? result.probe : null,
    cacheWarnings,
  });
}

// --- foundation models (www/models.js): pooled embeddings of a few sequences ---
async function embed({ id, model, sequences, modelFiles, modelKey, forceBackend }) {
  await started;
  if (!wasm) throw new Error('The WebAssembly module could not be loaded.');
  const backend = await chooseBackend(forceBackend);
  const core = await coreFor(backend.kind);
  // The core may still hold this load of the model (src/web.rs HeldEncoder): then its files are
  // neither read nor sent.
  const held = modelKey != null && core.holdsModel(modelKey, model, backend.kind);
  current = { type: 'embed-error', id, core, kind: backend.kind };
  let r;
  try {
    r = plain(parseIfString(await core.embed({
      model, backend: backend.kind, adapter: backend.adapter ?? '', sequences, modelKey,
      modelFiles: held ? undefined : modelFiles,
    })));
  } catch (err) {
    // A trapped instance stays broken (re-importing the glue returns the same one): the page
    // replaces this worker on `poisoned`.
    self.postMessage({ type: 'embed-error', id, ...failureOf(core, err) });
    return;
  } finally {
    current = null;
  }
  self.postMessage({
    type: 'embedded', id, dim: r.dim, values: r.values, backend: r.backend, modelKept: Boolean(r.modelKept),
  });
}

// --- a saved probe on new sequences (www/predict.js) ---
async function predict({ id, request }) {
  await started;
  if (!wasm) throw new Error('The WebAssembly module could not be loaded.');
  const backend = await chooseBackend();
  const core = await coreFor(backend.kind);
  const held = request.modelKey != null && core.holdsModel(request.modelKey, request.model, backend.kind);
  current = { type: 'predict-error', id, core, kind: backend.kind };
  let r;
  try {
    r = plain(parseIfString(await core.predict({
      ...request, backend: backend.kind,
      modelFiles: held ? undefined : request.modelFiles,
    })));
  } catch (err) {
    self.postMessage({ type: 'predict-error', id, ...failureOf(core, err) });
    return;
  } finally {
    current = null;
  }
  self.postMessage({ type: 'predicted', id, csv: r.csv, rows: r.rows, task: r.task });
}

/** The comparison of saved submissions: the core's report (statistics, plots, HTML, CSV). */
async function report({ id, request }) {
  await started;
  if (!wasm) {
    self.postMessage({ type: 'error', id, message: 'The WebAssembly module could not be loaded.' });
    return;
  }
  if (typeof wasm.report !== 'function') {
    self.postMessage({
      type: 'error', id,
      message: 'This build of the geneb core cannot compare results (it has no report function): '
        + 'rebuild it with scripts/build-wasm.sh.',
    });
    return;
  }
  let raw;
  current = { type: 'error', id, core: wasm, kind: 'cpu' };
  try {
    raw = await wasm.report(request);
  } catch (err) {
    self.postMessage({ type: 'error', id, ...failureOf(wasm, err) });
    return;
  } finally {
    current = null;
  }
  self.postMessage({ type: 'report', id, report: plain(parseIfString(raw)) ?? {} });
}

/** The dropped tables without a split column and their columns (www/split.js). */
async function columns({ id, files }) {
  await started;
  if (!wasm) throw new Error('The WebAssembly module is not loaded yet.');
  const tables = plain(parseIfString(wasm.unsplitTables({ files }))) ?? [];
  self.postMessage({ type: 'columns', id, tables, defaults: plain(wasm.splitDefaults()) });
}

const HANDLERS = new Map([['run', run], ['report', report]]);

self.addEventListener('message', (event) => {
  const msg = event.data;
  const handler = HANDLERS.get(msg?.type);
  if (handler) {
    handler(msg).catch((err) => self.postMessage({ type: 'error', id: msg.id, message: messageOf(err) }));
  }
  if (msg?.type === 'columns') {
    // Its own reply type: an `error` would read as the failure of a run.
    columns(msg).catch((err) => self.postMessage({ type: 'columns', id: msg.id, error: messageOf(err).split('\n')[0] }));
  }
  if (msg?.type === 'out-of-memory-channel') {
    // Where a pool thread that runs out of memory tells the page (src/web.rs pool_out_of_memory).
    // The page sends it first, so it is set before any call that follows it.
    started.then(() => { if (threaded) wasm.signalPoolOutOfMemoryOn(msg.channel); });
  }
  if (msg && msg.type === 'embed') {
    embed(msg).catch((err) => self.postMessage({ type: 'embed-error', id: msg.id, message: messageOf(err).split('\n')[0] }));
  }
  if (msg?.type === 'predict') {
    predict(msg).catch((err) => self.postMessage({ type: 'predict-error', id: msg.id, message: messageOf(err).split('\n')[0] }));
  }
});

// A trap inside the core's async work (a future wasm-bindgen-futures polls) escapes the call's
// promise as an uncaught error, and the call never settles: report it as that call's failure,
// so the page can say what happened (the tab's memory, or a bug) and replace this worker. A
// trap on WebGPU is worth the CPU retry, as a crash there always was.
self.addEventListener('error', (event) => {
  if (!current || !(event.error instanceof WebAssembly.RuntimeError)) return;
  event.preventDefault();
  const { type, id, core, kind } = current;
  current = null;
  const failure = failureOf(core, event.error);
  self.postMessage({ type, id, ...failure, gpuFailure: kind === 'webgpu' && !failure.outOfMemory });
});

const started = start();
