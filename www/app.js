// UI state of the geneb page. The WebAssembly core and the GPU check live in worker.js; this
// file reads the user's files locally, sends their bytes to the worker, shows progress and the
// per-category profile, and offers the result JSON as a download. Finished runs are saved in the
// browser (library.js), and a service worker (sw.js) keeps the page usable offline. Nothing
// leaves the tab.

import { downloadText, bytesText, h, messageOf, plural } from './dom.js';
import { initLibrary, redrawLibrary, saveRun, setLibraryBusy } from './library.js';
import { renderProfile, setProtocol } from './profile-view.js';
import { keepTaskFiles, keptTaskFiles } from './store.js';
import { cacheSize, clearCache } from './embedding-cache.js';
import { initModels, modelFilesFor, selectedHubModels, setKnownModels } from './models.js';
import { OFFLINE_MANIFEST, initTasks } from './tasks.js';
import { coreFailed, coreReady, coreStarting } from './queue.js';
import { deviationList, initSplit, splitSettings, truncationList, updateSplitTables } from './split.js';
import { initMeta, metaList, metaOverrides } from './meta.js';
import { askToKeep, initStorage } from './storage.js';
import { initPredict, savingProbe, showProbe } from './predict.js';
import { callCore, startCore } from './core-client.js';

/** The baselines the demo runs. */
const DEMO_MODELS = ['kmer:4', 'random-cnn'];
const DEMO_REGIMES = ['full', '10shot', '1shot'];
const DEMO_MANIFEST = 'tasks/smoke/tasks.json';

/**
 * The files the core reads, and so the ones taken from a dropped or chosen folder (others there
 * are skipped): task tables and FASTA, each optionally gzip-compressed, `tasks.json`, and your
 * own embeddings (.npz, X.npy). Keep in step with `is_data_extension` and `MANIFEST` in
 * src/seq/layout.rs and `is_embeddings_file` in src/embeddings.rs.
 */
const DATA_EXTENSIONS = ['csv', 'tsv', 'parquet', 'fa', 'fasta', 'fna', 'npz', 'npy'];
/** Embeddings the core probes as they are, with no encoder (src/embeddings.rs). */
const OWN_EMBEDDINGS = /\.npz$|(^|\/)x\.npy$/i;
const hasOwnEmbeddings = () => state.files.some((f) => OWN_EMBEDDINGS.test(f.path));
const DATA_FILE = new RegExp(`\\.(${DATA_EXTENSIONS.join('|')})(\\.gz)?$|^tasks\\.json$`, 'i');
/** The file picker's hint (it cannot say ".csv.gz", so any .gz; the core names a wrong one). */
const DATA_ACCEPT = [...DATA_EXTENSIONS.map((e) => `.${e}`), '.gz', '.json'].join(',');

const $ = (sel) => document.querySelector(sel);
const el = {
  status: $('#status'),
  backend: $('#backend'),
  version: $('#version'),
  setup: $('#setup'),
  drop: $('#drop-zone'),
  filesInput: $('#task-files'),
  folderInput: $('#task-folder'),
  filesSummary: $('#files-summary'),
  fileList: $('#file-list'),
  clearFiles: $('#clear-files'),
  keepFiles: $('#keep-files'),
  category: $('#category'),
  models: $('#model'),
  modelsLoading: $('#models-loading'),
  regimes: $('#regimes'),
  run: $('#run'),
  cancel: $('#cancel'),
  demo: $('#demo'),
  offlineSuite: $('#offline-suite'),
  runHint: $('#run-hint'),
  progressBar: $('#progress-bar'),
  progressText: $('#progress-text'),
  progressLive: $('#progress-live'),
  notice: $('#notice'),
  error: $('#error'),
  download: $('#download'),
  resultSummary: $('#result-summary'),
  profile: $('#profile'),
  compute: $('#compute'),
  computeHint: $('#compute-hint'),
  reuseEmbeddings: $('#reuse-embeddings'),
  embeddingCacheSize: $('#embedding-cache-size'),
  clearEmbeddings: $('#clear-embeddings'),
  addDemoSuite: $('#add-demo-suite'),
  offline: $('#offline'),
};

const state = {
  workerReady: false, // the current worker's core has loaded
  phase: 'loading', // loading | ready | running | unavailable
  models: [], // from the worker's ready message
  modelsRendered: false,
  backend: null, // {kind, adapter, reason?} from the last GPU check
  threads: null, // {count, reason}: the core's CPU threads (www/worker.js)
  files: [], // [{path, file}]
  run: null, // {request, label, forcedCpu, startedAt, gpuNote, inFlight}
  epoch: 0, // bumped by cancel, so a run still reading its files knows it was cancelled
  pendingRun: null, // a run waiting for the (re)started worker to be ready
  result: null, // {submissions, profile, backend}
  comparing: false, // a comparison of saved results is with the core
};

// ---------------------------------------------------------------------------------------------
// Small helpers

/** The worker says "webgpu"; the core's result says "wgpu" (or names another GPU kind). */
function isGpu(b) {
  return Boolean(b && b.kind && b.kind !== 'cpu');
}

/** "CPU, 4 threads", or "CPU, 1 thread" and why (the worker's `threads`, www/worker.js). */
function cpuText() {
  const t = state.threads;
  if (!t) return 'CPU';
  const n = Math.max(1, Number(t.count) || 1);
  return `CPU, ${n} thread${n === 1 ? '' : 's'}${t.reason ? ` (one thread: ${t.reason})` : ''}`;
}

function backendText(b, { fallback = false, gpuAvailable = false, chosen = false, passedOver = '' } = {}) {
  if (!b) return 'checking for WebGPU…';
  if (isGpu(b)) return `WebGPU — ${b.adapter || 'adapter'}${b.fallback ? ' (software fallback)' : ''}`;
  const cpu = cpuText();
  if (fallback) return `${cpu} — WebGPU failed, fell back to the CPU`;
  if (passedOver) return `${cpu} — faster than the software WebGPU adapter, ${passedOver}`;
  if (chosen) return `${cpu} — chosen`;
  if (gpuAvailable) return `${cpu} — these encoders run on the CPU`;
  const reason = b.reason && b.reason !== 'forced' ? b.reason : 'no WebGPU adapter';
  return `${cpu} — ${reason}`;
}

// ---------------------------------------------------------------------------------------------
// Messages, errors, status

function showError(message) {
  el.error.textContent = '';
  el.error.append(
    h('p', { class: 'error-title', text: 'Something went wrong' }),
    h('p', { class: 'error-message', 'data-testid': 'error-message', text: message }),
  );
  el.error.hidden = false;
}

function clearError() {
  el.error.hidden = true;
  el.error.textContent = '';
}

function showNotice(text) {
  el.notice.textContent = text;
  el.notice.hidden = !text;
}

function setPhase(phase) {
  state.phase = phase;
  el.status.textContent = {
    loading: 'loading…',
    ready: 'ready',
    running: 'running…',
    unavailable: 'unavailable',
  }[phase];
  el.status.dataset.phase = phase;
  document.body.dataset.phase = phase;
  setLibraryBusy(phase !== 'ready');
  updateControls();
}

function setProgress({ stage = '', model = '', task = '', done = 0, total = 0, fromCache = false, pace = '' } = {}, text) {
  if (total > 0) {
    el.progressBar.max = total;
    el.progressBar.value = Math.min(done, total);
  } else {
    el.progressBar.removeAttribute('value'); // indeterminate
  }
  const count = total > 0 ? `${done}/${total}` : '';
  el.progressText.textContent = text
    ?? [stage, model, task, count, fromCache ? 'reused from the embedding cache' : '', pace].filter(Boolean).join(' · ');
  // Screen readers hear each new stage and model, not every count.
  announce(text ?? [stage, model].filter(Boolean).join(' · '));
}

function resetProgress(text) {
  el.progressBar.max = 1;
  el.progressBar.value = 0;
  el.progressText.textContent = text;
  announce(text);
}

function announce(text) {
  if (text && el.progressLive.textContent !== text) el.progressLive.textContent = text;
}

// ---------------------------------------------------------------------------------------------
// Encoders and regimes

function selectedModels() {
  const specs = [];
  for (const box of el.models.querySelectorAll('input[type=checkbox][name=model]:checked')) {
    if (box.dataset.kmer != null) {
      const k = el.models.querySelector('select[name=kmer-k]');
      const canonical = el.models.querySelector('input[name=kmer-canonical]')?.checked;
      specs.push(`kmer:${k ? k.value : 4}${canonical ? ':canonical' : ''}`);
    } else {
      specs.push(box.value);
    }
  }
  return [...specs, ...selectedHubModels()];
}

function selectedRegimes() {
  return [...el.regimes.querySelectorAll('input[name=regime]:checked')].map((b) => b.value);
}

/** "random CNN (random-cnn[:SEED])" → "random CNN": the spec is shown beside it anyway. */
function shortName(name) {
  return String(name ?? '').replace(/\s*\([^()]*\)\s*$/, '');
}

function modelName(spec) {
  const k = /^kmer:(\d+)(:canonical)?$/.exec(spec);
  if (k) return `${k[1]}-mer spectrum${k[2] ? ', canonical' : ''}`;
  const base = spec.split(':')[0];
  const m = state.models.find((x) => x.spec === spec) ?? state.models.find((x) => x.spec === base);
  return m ? shortName(m.name) : '';
}

/** Group the k-mer entries (one entry "kmer:K" or several "kmer:1".."kmer:6") into one choice. */
function renderModels(models) {
  el.modelsLoading?.remove();
  const kmers = models.filter((m) => /^kmer(:\d+)?$/.test(m.spec));
  const others = models.filter((m) => !/^kmer(:\d+)?$/.test(m.spec));
  const rows = [];
  if (kmers.length) {
    let ks = kmers.map((m) => Number(/^kmer:(\d+)$/.exec(m.spec)?.[1])).filter(Number.isInteger);
    const listed = kmers.flatMap((m) => (Array.isArray(m.ks) ? m.ks : Array.isArray(m.k) ? m.k : []));
    if (listed.length) ks = listed.map(Number);
    if (ks.length <= 1) ks = [1, 2, 3, 4, 5, 6];
    ks = [...new Set(ks)].sort((a, b) => a - b);
    const first = kmers[0];
    const select = h('select', { id: 'kmer-k', name: 'kmer-k', 'data-testid': 'kmer-k' },
      ks.map((k) => h('option', { value: k, selected: k === 4 }, `K = ${k}`)));
    const box = h('input', {
      type: 'checkbox', name: 'model', value: 'kmer', id: 'model-kmer',
      'data-testid': 'model-kmer', 'data-kmer': '', checked: true,
      'aria-describedby': 'model-kmer-desc',
    });
    rows.push(h('div', { class: 'choice model-choice' },
      box,
      h('label', { for: 'model-kmer' }, h('span', { class: 'model-name' }, 'k-mer spectrum'), ' ',
        h('code', {}, 'kmer:K')),
      h('label', { class: 'kmer-k', for: 'kmer-k' }, h('span', { class: 'visually-hidden' }, 'k-mer size'), select),
      h('p', { class: 'model-desc', id: 'model-kmer-desc' },
        first.description || 'Counts of every DNA word of length K; no training.'),
      h('label', { class: 'kmer-canonical', for: 'kmer-canonical' },
        h('input', { type: 'checkbox', id: 'kmer-canonical', name: 'kmer-canonical', 'data-testid': 'kmer-canonical' }),
        'canonical (merge reverse complements)'),
    ));
  }
  for (const m of others) {
    const id = `model-${m.spec.replace(/[^a-z0-9]+/gi, '-')}`;
    rows.push(h('div', { class: 'choice model-choice' },
      h('input', {
        type: 'checkbox', name: 'model', value: m.spec, id, 'data-testid': id,
        checked: DEMO_MODELS.includes(m.spec), 'aria-describedby': `${id}-desc`,
      }),
      h('label', { for: id }, h('span', { class: 'model-name' }, shortName(m.name) || m.spec), ' ', h('code', {}, m.spec)),
      h('p', { class: 'model-desc', id: `${id}-desc` },
        m.description || '',
        m.needsBackend ? h('span', { class: 'tag' }, ' uses WebGPU when available') : null),
    ));
  }
  if (!rows.length) rows.push(h('p', { class: 'hint' }, 'No encoders are built into this version.'));
  el.models.append(...rows);
  state.modelsRendered = true;
}

// ---------------------------------------------------------------------------------------------
// Files

function addFiles(entries) {
  const byPath = new Map(state.files.map((f) => [f.path, f]));
  for (const e of entries) byPath.set(e.path, e);
  state.files = [...byPath.values()].sort((a, b) => a.path.localeCompare(b.path));
  renderFiles();
}

function renderFiles() {
  el.fileList.textContent = '';
  for (const { path, file } of state.files) {
    el.fileList.append(h('li', {},
      h('span', { class: 'file-name', title: path }, path),
      h('span', { class: 'file-size' }, bytesText(file.size)),
      h('button', {
        type: 'button', class: 'linkish remove', 'aria-label': `Remove ${path}`,
        onclick: () => removeFile(path),
      }, 'Remove'),
    ));
  }
  const n = state.files.length;
  const total = state.files.reduce((s, f) => s + f.file.size, 0);
  const where = el.keepFiles.checked ? 'kept in this browser' : 'read only in this tab';
  el.filesSummary.textContent = n ? `${plural(n, 'file')} chosen (${bytesText(total)}), ${where}.` : 'No files chosen.';
  el.clearFiles.hidden = n === 0;
  if (el.keepFiles.checked) syncKeptFiles();
  updateSplitTables(state.files);
  updateControls();
}

/** Mirror the file list into the browser's storage while "keep" is on. */
function syncKeptFiles() {
  keepTaskFiles(el.keepFiles.checked ? state.files : [])
    .then(() => (el.keepFiles.checked && state.files.length ? askToKeep() : undefined))
    .catch((err) => showError(`The task files could not be kept in this browser: ${messageOf(err)}`));
}

/** Bring back the files kept by an earlier visit. */
async function restoreKeptFiles() {
  let kept = [];
  try {
    kept = await keptTaskFiles();
  } catch (err) {
    showError(`The task files kept in this browser could not be read: ${messageOf(err)}`);
    return;
  }
  if (!kept.length) return;
  el.keepFiles.checked = true;
  addFiles(kept);
  showNotice(`Restored ${plural(kept.length, 'task file')} kept in this browser.`);
}

/** Remove one file; focus moves to the next Remove button, else to the files summary. */
function removeFile(path) {
  const index = state.files.findIndex((f) => f.path === path);
  state.files = state.files.filter((f) => f.path !== path);
  renderFiles();
  const next = el.fileList.querySelectorAll('button.remove')[index];
  (next ?? el.filesSummary).focus();
}

function fromFileList(list, { folder = false } = {}) {
  const out = [];
  let skipped = 0;
  for (const file of list) {
    const path = (file.webkitRelativePath || file.name).replace(/^\/+/, '');
    const base = path.split('/').pop();
    if (folder && (base.startsWith('.') || !DATA_FILE.test(base))) { skipped++; continue; }
    out.push({ path, file });
  }
  return { entries: out, skipped };
}

/** Read a dropped directory tree (webkitGetAsEntry) into {path, file} entries. */
async function readEntry(entry, out) {
  if (entry.isFile) {
    const file = await new Promise((res, rej) => entry.file(res, rej));
    out.push({ file, path: entry.fullPath.replace(/^\/+/, ''), inFolder: entry.fullPath.split('/').length > 2 });
  } else if (entry.isDirectory) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const child of batch) await readEntry(child, out);
    }
  }
}

async function onDrop(event) {
  event.preventDefault();
  el.drop.classList.remove('over');
  if (state.phase === 'running') return;
  const dt = event.dataTransfer;
  if (!dt) return;
  try {
    const items = [...(dt.items || [])].filter((i) => i.kind === 'file');
    const entries = items.map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null));
    let picked = [];
    let skipped = 0;
    if (entries.length && entries.every(Boolean)) {
      const all = [];
      for (const e of entries) await readEntry(e, all);
      for (const f of all) {
        const base = f.path.split('/').pop();
        if (f.inFolder && (base.startsWith('.') || !DATA_FILE.test(base))) skipped++;
        else picked.push({ path: f.path, file: f.file });
      }
    } else {
      picked = fromFileList(dt.files).entries;
    }
    addFiles(picked);
    showNotice(skipped ? `Skipped ${skipped} file${skipped === 1 ? '' : 's'} in the folder that are not sequence tables.` : '');
  } catch (err) {
    showError(`Could not read the dropped files: ${messageOf(err)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The core's worker (www/core-client.js speaks to it)

function startWorker({ phase = 'loading' } = {}) {
  setPhase(phase);
  state.workerReady = false;
  coreStarting();
  startCore({ ready: onCoreReady, unavailable: onCoreUnavailable, failed: onCallFailed, lost: onWorkerLost });
}

function onCoreReady(msg) {
  state.workerReady = true;
  state.models = Array.isArray(msg.models) ? msg.models : [];
  setKnownModels(msg);
  setProtocol(msg.protocol);
  // GENEB's categories, for the user's own tasks (the first option, "from the task id", stays).
  if (el.category.options.length <= 1) {
    for (const c of msg.protocol?.categories ?? []) el.category.append(h('option', { value: c }, c));
  }
  state.backend = msg.backend ?? null;
  state.threads = msg.threads ?? null;
  el.version.textContent = msg.version || '—';
  if (!state.modelsRendered) {
    renderModels(state.models);
    redrawLibrary();
  }
  if (!state.result) el.backend.textContent = backendText(state.backend);
  el.computeHint.textContent = state.backend?.fallback
    ? 'This WebGPU adapter is a software fallback, slower than the CPU: Automatic runs on the CPU (choose WebGPU to use it anyway).'
    : isGpu(state.backend) ? '' : 'No WebGPU adapter in this browser: everything runs on the CPU.';
  setPhase('ready');
  coreReady();
  if (state.pendingRun) {
    const pending = state.pendingRun;
    state.pendingRun = null;
    dispatchRun(pending);
  }
}

/** The core cannot be loaded in this tab. */
function onCoreUnavailable(message) {
  state.run = null;
  showError(message);
  setPhase('unavailable');
  coreFailed(message);
  el.backend.textContent = backendText(state.backend);
}

/**
 * Any call's failure, before its caller hears of it: a trapped core (a model check, the embed
 * tool, a prediction) must not take the next call. A run or a comparison (the page is running)
 * replaces the worker itself, after deciding what to say.
 */
function onCallFailed(error) {
  if (error.poisoned && state.phase !== 'running') startWorker();
}

/**
 * The worker cannot go on (it crashed, or a pool thread ran out of memory). A run or comparison
 * in flight has failed with the same error and handles it; else the page restarts the worker.
 */
function onWorkerLost(error) {
  if (!state.workerReady) {
    // It never started: restarting would only loop.
    state.run = null;
    state.pendingRun = null;
    showError(`The compute worker could not start (${error.message}).`);
    resetProgress('failed');
    setPhase('unavailable');
    coreFailed(error.message);
    return;
  }
  if (state.run?.inFlight || state.comparing) return;
  state.run = null;
  state.pendingRun = null;
  if (!error.outOfMemory) {
    showError(`The compute worker failed (${error.message}); it has been restarted.`);
    resetProgress('failed');
  }
  startWorker(); // the wasm is in an unknown state after a crash
}

// ---------------------------------------------------------------------------------------------
// Runs

function updateControls() {
  const running = state.phase === 'running';
  const ready = state.phase === 'ready';
  const models = state.modelsRendered ? selectedModels() : [];
  const regimes = selectedRegimes();
  let why = '';
  if (state.phase === 'loading') why = 'Loading the WebAssembly core…';
  else if (state.phase === 'unavailable') why = 'The compute core could not be loaded (see the error above).';
  else if (!state.files.length) why = 'Choose or drop at least one task file to run.';
  else if (!models.length && !hasOwnEmbeddings()) why = 'Choose at least one encoder.';
  else if (!regimes.length) why = 'Choose at least one regime.';
  el.run.disabled = !ready || Boolean(why);
  el.demo.disabled = !ready;
  el.offlineSuite.disabled = !ready;
  el.cancel.disabled = !running;
  el.filesInput.disabled = running;
  el.folderInput.disabled = running;
  el.clearFiles.disabled = running;
  el.keepFiles.disabled = running;
  el.compute.disabled = running;
  el.reuseEmbeddings.disabled = running;
  el.addDemoSuite.disabled = running;
  el.runHint.textContent = running ? '' : why;
  el.setup.setAttribute('aria-busy', running ? 'true' : 'false');
}

async function readFiles(entries) {
  const files = [];
  for (const { path, file } of entries) {
    try {
      files.push({ name: path, bytes: new Uint8Array(await file.arrayBuffer()) });
    } catch (err) {
      throw new Error(`${path}: could not be read (${messageOf(err)}); choose it again`);
    }
  }
  return files;
}

function dispatchRun(run) {
  state.run = run;
  run.startedAt = performance.now();
  setPhase('running');
  setProgress({}, `starting · ${run.request.files.length} file${run.request.files.length === 1 ? '' : 's'}`);
  run.inFlight = true;
  // The worker gets copies: the files stay in the list for the next run.
  callCore('run', {
    forceBackend: run.forcedCpu ? 'cpu' : run.compute === 'webgpu' ? 'webgpu' : undefined,
    request: run.request,
  }, { onProgress: (p) => { if (state.run === run) setProgress(p); } }).then(
    (value) => { run.inFlight = false; if (state.run === run) onResult(value); },
    (error) => { run.inFlight = false; if (state.run === run) onRunError(error); },
  );
}

function startRun({ files, models, regimes, category, label, source = 'run' }) {
  clearError();
  showNotice('');
  let meta;
  try {
    meta = metaOverrides();
  } catch (err) {
    setPhase('ready');
    resetProgress('idle');
    showError(messageOf(err));
    return;
  }
  dispatchRun({
    label,
    source,
    compute: el.compute.value, // auto | webgpu | cpu
    forcedCpu: el.compute.value === 'cpu',
    cpuChosen: el.compute.value === 'cpu',
    gpuNote: '',
    request: {
      files, models, regimes, category: category || null, ...modelFilesFor(models),
      reuseEmbeddings: el.reuseEmbeddings.checked, split: splitSettings(), meta, saveProbe: savingProbe(),
    },
  });
}

/**
 * Gather a run's input files with `load` while the page shows `stage` as running. Resolves to
 * the files, or to null when loading failed (the error is shown and the page is ready again) or
 * the user cancelled meanwhile (the cancel has already reset the page).
 */
async function loadRunInput(stage, load) {
  const epoch = state.epoch;
  setPhase('running');
  setProgress({}, stage);
  let files;
  try {
    files = await load();
  } catch (err) {
    if (epoch !== state.epoch) return null;
    setPhase('ready');
    resetProgress('idle');
    showError(messageOf(err));
    return null;
  }
  return epoch === state.epoch ? files : null;
}

async function onRunClick(event) {
  event?.preventDefault();
  if (state.phase !== 'ready') return;
  const models = selectedModels();
  const regimes = selectedRegimes();
  if (!state.files.length || (!models.length && !hasOwnEmbeddings()) || !regimes.length) { updateControls(); return; }
  const files = await loadRunInput('reading files', () => readFiles(state.files));
  if (!files) return;
  const n = files.length;
  startRun({
    files, models, regimes,
    category: el.category.value,
    label: `${n} file${n === 1 ? '' : 's'}`,
  });
}

function suitePaths(manifest, manifestPath) {
  const list = Array.isArray(manifest) ? manifest
    : Array.isArray(manifest?.tasks) ? manifest.tasks
      : Array.isArray(manifest?.files) ? manifest.files : null;
  if (!list) throw new Error(`${manifestPath}: expected a list of tasks`);
  const paths = [];
  for (const t of list) {
    const p = typeof t === 'string' ? t : (t.file ?? t.path ?? t.table ?? (t.id ? `${t.id}.csv` : null));
    if (Array.isArray(t?.files)) paths.push(...t.files);
    else if (p) paths.push(p);
  }
  for (const p of paths) {
    if (typeof p !== 'string' || p.startsWith('/') || p.split('/').includes('..') || /^[a-z]+:/i.test(p)) {
      throw new Error(`${manifestPath}: bad file name ${JSON.stringify(p)}`);
    }
  }
  if (!paths.length) throw new Error(`${manifestPath}: lists no task files`);
  return paths;
}

/** A built-in suite from this server (demo, offline): its manifest, then every task file it lists. */
async function fetchSuiteFiles(manifestPath) {
  const base = new URL(manifestPath, document.baseURI);
  const res = await fetch(base, { cache: 'no-cache' });
  if (!res.ok) throw new Error(`${manifestPath}: the suite is not available from this server (HTTP ${res.status})`);
  const manifestBytes = new Uint8Array(await res.arrayBuffer());
  let manifest;
  try {
    manifest = JSON.parse(new TextDecoder().decode(manifestBytes));
  } catch {
    throw new Error(`${manifestPath}: not valid JSON`);
  }
  // The manifest travels too: it gives the suite's tasks their categories.
  const files = [{ name: 'tasks.json', bytes: manifestBytes }];
  for (const p of suitePaths(manifest, manifestPath)) {
    const r = await fetch(new URL(p, base), { cache: 'no-cache' });
    if (!r.ok) throw new Error(`${new URL(p, base).pathname}: could not be fetched (HTTP ${r.status})`);
    files.push({ name: p, bytes: new Uint8Array(await r.arrayBuffer()) });
  }
  return files;
}

async function onDemoClick() {
  if (state.phase !== 'ready') return;
  clearError();
  showNotice('');
  const files = await loadRunInput('fetching the demo suite', () => fetchSuiteFiles(DEMO_MANIFEST));
  if (!files) return;
  const models = DEMO_MODELS.filter((m) => m.startsWith('kmer:') || state.models.some((x) => x.spec === m));
  startRun({
    files, models, regimes: DEMO_REGIMES, category: null, source: 'demo',
    label: `Demo: the built-in suite (${files.length - 1} task${files.length === 2 ? '' : 's'})`,
  });
}

/** The committed offline real-genome suite, with the encoders and regimes chosen above. */
async function onOfflineClick() {
  if (state.phase !== 'ready') return;
  clearError();
  showNotice('');
  const models = selectedModels();
  const regimes = selectedRegimes();
  if (!models.length || !regimes.length) {
    showError('Choose at least one encoder and one regime for the offline suite.');
    return;
  }
  const files = await loadRunInput('fetching the offline suite', () => fetchSuiteFiles(OFFLINE_MANIFEST));
  if (!files) return;
  startRun({
    files, models, regimes, category: null,
    label: `The offline real-genome suite (${files.length - 1} tasks)`,
  });
}

function onCancelClick() {
  if (state.phase !== 'running') return;
  if (state.comparing) {
    startWorker(); // the comparison's call fails as cancelled
    resetProgress('cancelled');
    showNotice('Comparison cancelled.');
    return;
  }
  state.epoch++;
  state.run = null;
  state.pendingRun = null;
  startWorker(); // terminates the busy worker: the only reliable way to stop synchronous wasm
  resetProgress('cancelled');
  showNotice('Run cancelled. Your files are still here.');
}

/** Whether `run` may be on WebGPU: automatic passes over a software adapter (worker.js). */
function mayUseGpu(run) {
  if (run.forcedCpu || !isGpu(state.backend)) return false;
  return run.compute === 'webgpu' || !state.backend.fallback;
}

/** WebGPU failed to start (or panicked): run the same request on the CPU in a fresh worker. */
function retryOnCpu(run, message) {
  run.inFlight = false;
  run.forcedCpu = true;
  run.gpuNote = `WebGPU failed (${message}); ran on the CPU instead.`;
  showNotice(`WebGPU failed (${message}); retrying on the CPU…`);
  state.pendingRun = run;
  startWorker({ phase: 'running' }); // stays cancellable while the fresh worker loads
}

/** The run's CoreError (www/core-client.js): the core's, or the worker's crash. */
function onRunError(msg) {
  const run = state.run;
  if (run && (msg.gpuFailure || msg.crashed) && mayUseGpu(run)) {
    retryOnCpu(run, msg.message); // in a fresh worker, so a trapped one is replaced too
    return;
  }
  if (msg.crashed) {
    state.run = null;
    state.pendingRun = null;
    showError(`The compute worker failed (${msg.message}); it has been restarted.`);
    resetProgress('failed');
    startWorker(); // the wasm is in an unknown state after a crash
    return;
  }
  state.run = null;
  resetProgress('failed');
  if (msg.outOfMemory) {
    // The browser refused the core more memory (www/worker.js): that instance is spent.
    showError(`${msg.message} The compute core has been restarted; your files, choices and results are kept.`);
    startWorker();
    return;
  }
  if (msg.poisoned) {
    // The wasm trapped (a panic): its instance may be left broken, so later runs in it would be
    // suspect. Replace the worker; the files and choices live on the page and stay.
    showError(`The compute core stopped on an internal error (${msg.message || 'a WebAssembly trap'}). `
      + 'It has been restarted; your files and choices are kept, so you can run again.');
    startWorker();
    return;
  }
  showError(msg.message || 'The run failed.');
  setPhase('ready');
}

function onResult(msg) {
  const run = state.run;
  state.run = null;
  state.result = { submissions: msg.submissions ?? [], profile: msg.profile ?? null, backend: msg.backend };
  showProbe(msg.probe);
  const seconds = (performance.now() - run.startedAt) / 1000;
  const fallback = Boolean(run.gpuNote);
  // The browser's own adapter description reads better than the core's wgpu summary.
  const used = isGpu(msg.backend) && isGpu(msg.requestedBackend)
    ? { ...msg.backend, adapter: msg.requestedBackend.adapter || msg.backend.adapter, fallback: msg.requestedBackend.fallback }
    : msg.backend;
  state.result.backend = used;
  el.backend.textContent = backendText(used, {
    fallback, chosen: run.cpuChosen, gpuAvailable: isGpu(state.backend), passedOver: msg.requestedBackend?.passedOver ?? '',
  });
  resetProgress('done');
  el.progressBar.value = 1;
  renderResult(state.result, { label: run.label, seconds, fallback });
  const notCached = (msg.cacheWarnings ?? []).length
    ? `The embeddings could not be kept for reuse (${msg.cacheWarnings.join('; ')}); the result is complete.`
    : '';
  showNotice([run.gpuNote, notCached].filter(Boolean).join(' '));
  showEmbeddingCacheSize();
  el.download.disabled = false;
  setPhase('ready');
  saveRun(state.result.submissions, { backend: used, source: run.source });
}

/** How much the embedding cache holds (www/embedding-cache.js), next to its controls. */
async function showEmbeddingCacheSize() {
  try {
    const { entries, bytes } = await cacheSize();
    el.embeddingCacheSize.textContent = entries
      ? `${plural(entries, 'set')} of embeddings kept (${bytesText(bytes)}).`
      : 'No embeddings kept.';
    el.clearEmbeddings.disabled = entries === 0;
  } catch (err) {
    el.embeddingCacheSize.textContent = `The embedding cache is unavailable: ${messageOf(err)}`;
    el.clearEmbeddings.disabled = true;
  }
}

async function onClearEmbeddingsClick() {
  try {
    await clearCache();
  } catch (err) {
    showError(`Could not clear the kept embeddings: ${messageOf(err)}`);
  }
  showEmbeddingCacheSize();
}

// ---------------------------------------------------------------------------------------------
// Comparisons of saved results: the worker's wasm core builds the report

/**
 * Ask the core for the report on result files [{name, text}]: {html, csv, svg, official (each
 * {file name: text}), analysis (the profile with its statistics)}; `maxParams` limits the size
 * of the recommended models. Rejects with `cancelled` when the user cancels it.
 */
async function requestReport(files, { maxParams = null } = {}) {
  if (state.phase !== 'ready') throw new Error('wait for the current run to finish');
  clearError();
  showNotice('');
  state.comparing = true;
  setPhase('running');
  setProgress({}, `comparing ${plural(files.length, 'result')}`);
  try {
    const report = await callCore('report', { request: { files, maxParams } });
    resetProgress('done');
    el.progressBar.value = 1;
    setPhase('ready');
    return report;
  } catch (err) {
    if (err.cancelled) throw err;
    resetProgress('failed');
    if (err.poisoned || err.crashed) startWorker(); else setPhase('ready');
    throw err.crashed ? err : new Error(err.message || 'the core could not build the report');
  } finally {
    state.comparing = false;
  }
}

// ---------------------------------------------------------------------------------------------
// The demo suite as task files, and offline use

async function onAddDemoSuite() {
  el.addDemoSuite.disabled = true;
  clearError();
  try {
    const files = await fetchSuiteFiles(DEMO_MANIFEST);
    addFiles(files.map((f) => ({ path: f.name, file: new File([f.bytes], f.name.split('/').pop()) })));
    showNotice(`Added the demo suite: ${plural(files.length - 1, 'task file')} and its tasks.json.`);
  } catch (err) {
    showError(messageOf(err));
  } finally {
    updateControls();
  }
}

let offlineStatus = 'checking…'; // what the service worker's registration reached

function renderOffline() {
  const now = navigator.onLine === false ? ' (you are offline: running from the copy in this browser)' : '';
  el.offline.textContent = `${offlineStatus}${offlineStatus.startsWith('ready') ? now : ''}`;
}

/** Register sw.js, which keeps the page, the core and the demo suite for use without a network. */
async function setUpOffline() {
  addEventListener('online', renderOffline);
  addEventListener('offline', renderOffline);
  if (!('serviceWorker' in navigator)) {
    offlineStatus = 'not available in this browser';
    renderOffline();
    return;
  }
  try {
    const registration = await navigator.serviceWorker.register(new URL('./sw.js', import.meta.url), { scope: './' });
    const installing = registration.installing;
    installing?.addEventListener('statechange', () => {
      if (installing.state === 'redundant' && !registration.active) {
        offlineStatus = 'unavailable (the page could not be kept in this browser)';
        renderOffline();
      }
    });
    await navigator.serviceWorker.ready;
    offlineStatus = 'ready: works without a network';
  } catch (err) {
    offlineStatus = `unavailable (${messageOf(err)})`;
  }
  renderOffline();
}

// ---------------------------------------------------------------------------------------------
// Result rendering

function renderResult(result, { label, seconds, fallback }) {
  const { profile, submissions, backend } = result;
  const where = isGpu(backend) ? `WebGPU (${backend.adapter || 'adapter'})` : 'the CPU';
  el.resultSummary.textContent = `${label} · ${plural(submissions.length, 'encoder')}`
    + ` · ran on ${where}${fallback ? ' after WebGPU failed' : ''} in ${seconds.toFixed(1)} s.`;
  renderProfile(el.profile, profile, submissions, { prefix: 'profile', modelName });
  el.profile.append(deviationList(submissions) ?? '', truncationList(submissions) ?? '', metaList(submissions) ?? '');
}

function onDownloadClick() {
  if (!state.result) return;
  const { submissions, profile } = state.result;
  downloadText(`${JSON.stringify({ submissions, profile }, null, 2)}\n`, 'geneb-results.json', 'application/json');
}

// ---------------------------------------------------------------------------------------------
// Wiring

function init() {
  el.filesInput.accept = DATA_ACCEPT;
  el.setup.addEventListener('submit', onRunClick);
  el.cancel.addEventListener('click', onCancelClick);
  el.demo.addEventListener('click', onDemoClick);
  el.offlineSuite.addEventListener('click', onOfflineClick);
  el.download.addEventListener('click', onDownloadClick);
  el.clearFiles.addEventListener('click', () => { state.files = []; renderFiles(); el.filesSummary.focus(); });
  el.models.addEventListener('change', updateControls);
  el.regimes.addEventListener('change', updateControls);
  el.filesInput.addEventListener('change', () => {
    addFiles(fromFileList(el.filesInput.files).entries);
    el.filesInput.value = '';
  });
  el.folderInput.addEventListener('change', () => {
    const { entries, skipped } = fromFileList(el.folderInput.files, { folder: true });
    addFiles(entries);
    showNotice(skipped ? `Skipped ${skipped} file${skipped === 1 ? '' : 's'} in the folder that are not sequence tables.` : '');
    el.folderInput.value = '';
  });
  for (const type of ['dragenter', 'dragover']) {
    el.drop.addEventListener(type, (e) => {
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = state.phase === 'running' ? 'none' : 'copy';
      el.drop.classList.add('over');
    });
  }
  el.drop.addEventListener('dragleave', (e) => {
    if (!el.drop.contains(e.relatedTarget)) el.drop.classList.remove('over');
  });
  el.drop.addEventListener('drop', onDrop);
  // A file dropped beside the zone must not make the browser navigate away from the page.
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => { if (!el.drop.contains(e.target)) e.preventDefault(); });
  el.addDemoSuite.addEventListener('click', onAddDemoSuite);
  el.clearEmbeddings.addEventListener('click', onClearEmbeddingsClick);
  showEmbeddingCacheSize();
  el.keepFiles.addEventListener('change', () => {
    if (!el.keepFiles.checked) syncKeptFiles(); // forget them; renderFiles keeps them when checked
    renderFiles();
  });
  // Before the first renderFiles: it tells the split panel which tables lack a split column.
  initSplit($('#split-panel'));
  initMeta($('#meta-fields'));
  initStorage($('#storage-line'));
  initPredict($('#predict-panel'));
  renderFiles();
  restoreKeptFiles();
  initModels($('#models-panel'), { onChange: updateControls });
  initTasks($('#tasks-panel'), { addTaskFiles: addFiles });
  startWorker();
  initLibrary({ requestReport, modelName });
  setUpOffline();
}

init();
