// The worker owns the WebAssembly core and the GPU check, so the page never blocks.
//
// Its messages are www/protocol.js's, the table the page's client (www/core-client.js) imports
// too: the calls it answers (HANDLERS below: one `done` or one `failed` each, `progress` between),
// the notice it takes, the events it sends. tests/e2e/protocol.test.mjs holds the three to it.
// A failure is www/protocol.js FAILURE: `poisoned` when the wasm trapped (the instance may be
// left broken, so the page replaces this worker before the next call), `outOfMemory` when the
// trap was the browser refusing the core more memory (the message says so), `gpuFailure` when a
// WebGPU run failed in a way worth retrying on the CPU.
// Requests that arrive while the core is still loading wait for it (`started`).
// The wasm runs synchronously, so cancelling is the page terminating this worker.

import { messageOf } from './dom.js';
import { storeForRun } from './embedding-cache.js';
import { outOfMemoryMessage } from './out-of-memory.js';
import { CALLS } from './protocol.js';
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
/** The call in progress, {id, core, kind}: whose failure a trap escaping its promise is. */
let current = null;

/**
 * The core for a call on `kind` ("cpu" or "webgpu"). The threaded build is the CPU's alone, so
 * WebGPU calls go to the one-thread build, loaded on first use. Each build holds at most one
 * model (src/web/held_model.rs); the other build's is released first, so the tab never holds two.
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
 * poisons the instance; where the core noted an allocation the browser refused (src/web/allocator.rs
 * `refusedAllocation`), it was the tab's memory, and the message says so instead of "unreachable".
 */
function failureOf(core, err) {
  const poisoned = err instanceof WebAssembly.RuntimeError;
  let refused = 0;
  try { refused = poisoned && core ? Number(core.refusedAllocation?.() ?? 0) : 0; } catch { refused = 0; }
  if (refused > 0) return { poisoned, outOfMemory: true, message: outOfMemoryMessage(refused) };
  return { poisoned, message: messageOf(err).split('\n')[0] };
}

/** A call's failure, thrown by a handler: `fields` are www/protocol.js FAILURE's. */
class Failure extends Error {
  constructor(fields) {
    super(fields.message);
    this.fields = fields;
  }
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
      type: 'unavailable',
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
  let facts = null;
  try {
    facts = plain(parseIfString(mod.facts())); // the core's rules the page shows (src/facts.rs)
    const modelList = plain(parseIfString(mod.models())) ?? {};
    models = modelList.builtin ?? [];
    known = modelList.known ?? []; // foundation models by hub id (www/models.js shows them)
    tabWeightsLimit = modelList.tabWeightsLimit ?? null;
    modelFiles = modelList.modelFiles ?? null;
  } catch (err) {
    self.postMessage({ type: 'unavailable', message: `Could not read the core's encoders and rules: ${messageOf(err)}` });
    return;
  }
  let version = '';
  try { version = String(mod.version()); } catch { version = ''; }
  warmUpAudit();
  self.postMessage({
    type: 'ready', version, models, known, tabWeightsLimit, modelFiles, facts, backend: await backendP, threads,
  });
}

/**
 * Run `work(core)` on the core for `kind` ("cpu" or "webgpu") as call `id`: a trap that escapes
 * its promise (see the error listener below) is then that call's failure, and one it throws
 * becomes a Failure naming the tab's memory or the trap.
 */
async function onCore(id, kind, work) {
  const core = await coreFor(kind);
  current = { id, core, kind };
  try {
    return await work(core);
  } catch (err) {
    throw new Failure(failureOf(core, err));
  } finally {
    current = null;
  }
}

/** The run's progress, at most one message per step every PROGRESS_INTERVAL_MS. */
function progressOf(id) {
  let last = { t: 0, key: '' };
  return (p) => {
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
}

async function run(id, { request, forceBackend }) {
  const backend = await chooseBackend(forceBackend);
  // Embeddings of earlier runs (www/embedding-cache.js), unless the user turned reuse off.
  const cacheWarnings = [];
  const cache = request.reuseEmbeddings === false ? null : storeForRun(cacheWarnings);
  let raw;
  try {
    raw = await onCore(id, backend.kind, (core) => core.run({
      files: request.files,
      models: request.models,
      regimes: request.regimes,
      backend: backend.kind,
      adapter: backend.adapter ?? '',
      category: request.category || null,
      // Blobs, unread: the core reads the weights one tensor at a time (src/web/blob_file.rs).
      modelFiles: Object.fromEntries(Object.entries(request.modelFiles ?? {})
        .filter(([spec]) => !core.holdsModel(request.modelKeys?.[spec] ?? '', spec, backend.kind))),
      modelKeys: request.modelKeys ?? {},
      // A loaded model run at every layer (www/models.js), each layer a result of its own.
      modelLayers: request.modelLayers ?? {},
      ...(request.split ? { split: request.split } : {}),
      ...(request.meta ? { meta: request.meta } : {}),
      ...(request.saveProbe ? { saveProbe: true } : {}),
    }, progressOf(id), cache));
  } catch (err) {
    const f = err.fields;
    if (f) {
      f.backend = backend.kind;
      f.gpuFailure = backend.kind === 'webgpu' && !f.outOfMemory && looksLikeGpuFailure(f.message);
    }
    throw err;
  }
  const result = plain(parseIfString(raw)) ?? {};
  return {
    backend: result.backend ?? { kind: backend.kind, adapter: backend.adapter },
    requestedBackend: backend,
    submissions: (result.submissions ?? []).map((s) => plain(parseIfString(s))),
    profile: plain(parseIfString(result.profile)) ?? null,
    probe: typeof result.probe === 'string' ? result.probe : null,
    cacheWarnings,
  };
}

// --- foundation models (www/models.js): pooled embeddings of a few sequences ---
async function embed(id, { model, sequences, modelFiles, modelKey, forceBackend }) {
  const backend = await chooseBackend(forceBackend);
  // The core may still hold this load of the model (src/web/held_model.rs): then its files are
  // neither read nor sent.
  const r = plain(parseIfString(await onCore(id, backend.kind, (core) => core.embed({
    model, backend: backend.kind, adapter: backend.adapter ?? '', sequences, modelKey,
    modelFiles: modelKey != null && core.holdsModel(modelKey, model, backend.kind) ? undefined : modelFiles,
  }))));
  return { dim: r.dim, values: r.values, backend: r.backend, modelKept: Boolean(r.modelKept), lastLayer: r.lastLayer ?? null, weights: r.weights ?? null };
}

// --- a saved probe on new sequences (www/predict.js) ---
async function predict(id, { request }) {
  const backend = await chooseBackend();
  const r = plain(parseIfString(await onCore(id, backend.kind, (core) => core.predict({
    ...request, backend: backend.kind,
    modelFiles: request.modelKey != null && core.holdsModel(request.modelKey, request.model, backend.kind)
      ? undefined : request.modelFiles,
  }))));
  return { csv: r.csv, rows: r.rows, task: r.task };
}

/** The comparison of saved submissions: the core's report (statistics, plots, HTML, CSV). */
async function report(id, { request }) {
  if (typeof wasm.report !== 'function') {
    throw new Failure({
      message: 'This build of the geneb core cannot compare results (it has no report function): '
        + 'rebuild it with scripts/build-wasm.sh.',
    });
  }
  return plain(parseIfString(await onCore(id, 'cpu', (core) => core.report(request)))) ?? {};
}

/** The shard files a sharded checkpoint's index names, by the core's rule (www/models.js). */
async function shards(id, { index }) {
  const [read] = await readFiles([index]);
  return plain(wasm.shardNames(read)) ?? [];
}

/** The dropped tables without a split column and their columns (www/split.js). */
async function columns(id, { files }) {
  return {
    tables: plain(parseIfString(wasm.unsplitTables({ files: await readFiles(files) }))) ?? [],
    defaults: plain(wasm.splitDefaults()),
  };
}

/**
 * The leak audit of the dropped tasks (www/audit.js, src/web/audit.rs). The page sends the files
 * themselves: read here, their bytes never cross from the page's thread to this one.
 */
async function audit(id, { files, split }) {
  return plain(parseIfString(wasm.audit({ files: await readFiles(files), ...(split ? { split } : {}) }))) ?? {};
}

/** `[{name, file}]` → `[{name, bytes}]`: the dropped files' bytes, read in this worker. */
function readFiles(files) {
  return Promise.all(files.map(async ({ name, file }) => ({ name, bytes: new Uint8Array(await file.arrayBuffer()) })));
}

/**
 * V8 compiles a WebAssembly function when it is first called, and first with its baseline
 * compiler: the page's first audit of a 100,000-row table ran 1.5–2× as long as the same audit
 * again (bench/README.md). So the worker audits a small made-up task as it starts, before it
 * says it is ready; it only speeds the first real audit up.
 */
function warmUpAudit() {
  try {
    wasm.audit({ files: [{ name: 'warm-up.csv', bytes: warmUpTable() }] });
  } catch { /* the real audit reports its own problems */ }
}

/**
 * 1,000 rows of 200 nt, 800 train and 200 test, that take the audit down each of its paths:
 * random rows, exact and reverse-complement copies, shifted near copies, and variants of one sequence held by more
 * than 64 rows (whose 21-mers are not informative).
 */
function warmUpTable() {
  let seed = 1;
  const random = (n) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return (seed >>> 8) % n; };
  const bases = (n) => Array.from({ length: n }, () => 'ACGT'[random(4)]).join('');
  const common = bases(200);
  const sequences = [];
  for (let i = 0; i < 1000; i++) {
    const earlier = sequences[random(Math.max(i, 1))];
    const at = random(200);
    if (i % 5 === 0) sequences.push(common.slice(0, at) + 'ACGT'[random(4)] + common.slice(at + 1));
    else if (i % 7 === 3) sequences.push(earlier);
    else if (i % 11 === 5) sequences.push([...earlier].reverse().map((b) => 'TGCA'['ACGT'.indexOf(b)]).join(''));
    else if (i % 3 === 1) sequences.push(earlier.slice(20) + bases(20));
    else sequences.push(bases(200));
  }
  const rows = sequences.map((s, i) => `${s},${i % 2},${i < 800 ? 'train' : 'test'}`);
  return new TextEncoder().encode(`sequence,label,split\n${rows.join('\n')}\n`);
}

/** The calls of www/protocol.js CALLS, each `(id, args) → value`. */
const HANDLERS = { run, embed, predict, report, columns, audit, shards };

/** Answer one call: exactly one `done` or `failed`. */
async function answer({ id, call, args }) {
  try {
    if (!Object.hasOwn(CALLS, call)) throw new Failure({ message: `no core call '${call}' (www/protocol.js)` });
    await started;
    if (!wasm) throw new Failure({ message: 'The WebAssembly module could not be loaded.' });
    self.postMessage({ type: 'done', id, value: await HANDLERS[call](id, args ?? {}) });
  } catch (err) {
    const error = err instanceof Failure ? err.fields : { message: messageOf(err).split('\n')[0] };
    self.postMessage({ type: 'failed', id, error });
  }
}

self.addEventListener('message', (event) => {
  const msg = event.data;
  if (msg?.type === 'call') answer(msg);
  if (msg?.type === 'out-of-memory-channel') {
    // Where a pool thread that runs out of memory tells the page (src/web/out_of_memory.rs).
    // The page sends it first, so it is set before any call that follows it.
    started.then(() => { if (threaded) wasm.signalPoolOutOfMemoryOn(msg.channel); });
  }
});

// A trap inside the core's async work (a future wasm-bindgen-futures polls) escapes the call's
// promise as an uncaught error, and the call never settles: report it as that call's failure,
// so the page can say what happened (the tab's memory, or a bug) and replace this worker. A
// trap on WebGPU is worth the CPU retry, as a crash there always was.
self.addEventListener('error', (event) => {
  if (!current || !(event.error instanceof WebAssembly.RuntimeError)) return;
  event.preventDefault();
  const { id, core, kind } = current;
  current = null;
  const failure = failureOf(core, event.error);
  self.postMessage({ type: 'failed', id, error: { ...failure, gpuFailure: kind === 'webgpu' && !failure.outOfMemory } });
});

const started = start();
