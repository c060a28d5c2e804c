// UI state of the geneb page. The WebAssembly core and the GPU check live in worker.js; this
// file reads the user's files locally, sends their bytes to the worker, shows progress and the
// per-category profile, and offers the result JSON as a download. Nothing leaves the tab.

import { initModels, modelFilesFor, selectedHubModels, setKnownModels } from './models.js';
import { OFFLINE_MANIFEST, initTasks } from './tasks.js';

/** GENEB's 13 categories, in the published leaderboard order (PROTOCOL.md). */
const CATEGORIES = [
  'Histone Mod.', 'Promoters', 'Enhancers', 'DNA Methyl.', 'Splice Sites', 'lncRNA',
  'Mouse Enh.', 'TF Binding', 'Species Clf.', 'Regulatory', 'Virus/Phage', 'Coding/NC',
  'Chromatin Acc.',
];

const REGIME_LABELS = {
  full: 'Full data',
  '10shot': '10-shot',
  '1shot': '1-shot',
};
const REGIME_NOTES = {
  full: 'probe trained on all training examples',
  '10shot': '10 examples per class; mean ± std over 5 seeds',
  '1shot': '1 example per class; mean ± std over 5 seeds',
};

/** The baselines the demo runs. */
const DEMO_MODELS = ['kmer:4', 'random-cnn'];
const DEMO_REGIMES = ['full', '10shot', '1shot'];
const DEMO_MANIFEST = 'tasks/smoke/tasks.json';

/**
 * The files the core reads, and so the ones taken from a dropped or chosen folder (others there
 * are skipped): task tables and FASTA, each optionally gzip-compressed, and `tasks.json`.
 * Keep in step with `is_data_extension` and `MANIFEST` in src/seq/layout.rs.
 */
const DATA_EXTENSIONS = ['csv', 'tsv', 'fa', 'fasta', 'fna'];
const DATA_FILE = new RegExp(`\\.(${DATA_EXTENSIONS.join('|')})(\\.gz)?$|^tasks\\.json$`, 'i');
/** The file picker's hint (it cannot say ".csv.gz", so any .gz; the core names a wrong one). */
const DATA_ACCEPT = [...DATA_EXTENSIONS.map((e) => `.${e}`), '.gz', '.json'].join(',');

/** A full GENEB run: only its macro and micro compare with the published leaderboard. */
const FULL_GENEB = { tasks: 100, categories: CATEGORIES.length };

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
  category: $('#category'),
  models: $('#model'),
  modelsLoading: $('#models-loading'),
  regimes: $('#regimes'),
  run: $('#run'),
  cancel: $('#cancel'),
  demo: $('#demo'),
  offline: $('#offline'),
  runHint: $('#run-hint'),
  progressBar: $('#progress-bar'),
  progressText: $('#progress-text'),
  notice: $('#notice'),
  error: $('#error'),
  download: $('#download'),
  resultSummary: $('#result-summary'),
  profile: $('#profile'),
  compute: $('#compute'),
  computeHint: $('#compute-hint'),
};

const state = {
  worker: null,
  workerReady: false,
  phase: 'loading', // loading | ready | running | unavailable
  models: [], // from the worker's ready message
  modelsRendered: false,
  backend: null, // {kind, adapter, reason?} from the last GPU check
  files: [], // [{path, file}]
  run: null, // {id, request, label, forcedCpu, startedAt, gpuNote}
  nextRunId: 1,
  epoch: 0, // bumped by cancel, so a run still reading its files knows it was cancelled
  pendingRun: null, // a run waiting for the (re)started worker to be ready
  result: null, // {submissions, profile, backend}
};

// ---------------------------------------------------------------------------------------------
// Small helpers

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

function fmt(x) {
  return typeof x === 'number' && Number.isFinite(x) ? x.toFixed(3) : '—';
}

function messageOf(err) {
  if (err == null) return 'unknown error';
  if (typeof err === 'string') return err;
  return err.message || String(err);
}

/** The worker says "webgpu"; the core's result says "wgpu" (or names another GPU kind). */
function isGpu(b) {
  return Boolean(b && b.kind && b.kind !== 'cpu');
}

function backendText(b, { fallback = false, gpuAvailable = false, chosen = false } = {}) {
  if (!b) return 'checking for WebGPU…';
  if (isGpu(b)) return `WebGPU — ${b.adapter || 'adapter'}${b.fallback ? ' (software fallback)' : ''}`;
  if (fallback) return 'CPU (WebGPU failed, fell back to the CPU)';
  if (chosen) return 'CPU (chosen)';
  if (gpuAvailable) return 'CPU (these encoders run on the CPU)';
  const reason = b.reason && b.reason !== 'forced' ? b.reason : 'no WebGPU adapter';
  return `CPU (${reason})`;
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
  updateControls();
}

function setProgress({ stage = '', model = '', task = '', done = 0, total = 0 } = {}, text) {
  if (total > 0) {
    el.progressBar.max = total;
    el.progressBar.value = Math.min(done, total);
  } else {
    el.progressBar.removeAttribute('value'); // indeterminate
  }
  el.progressText.textContent = text
    ?? [stage, model, task, total > 0 ? `${done}/${total}` : ''].filter(Boolean).join(' · ');
}

function resetProgress(text) {
  el.progressBar.max = 1;
  el.progressBar.value = 0;
  el.progressText.textContent = text;
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
      h('span', { class: 'file-size' }, formatBytes(file.size)),
      h('button', {
        type: 'button', class: 'linkish remove', 'aria-label': `Remove ${path}`,
        onclick: () => removeFile(path),
      }, 'Remove'),
    ));
  }
  const n = state.files.length;
  const total = state.files.reduce((s, f) => s + f.file.size, 0);
  el.filesSummary.textContent = n ? `${n} file${n === 1 ? '' : 's'} chosen (${formatBytes(total)}), read only in this tab.` : 'No files chosen.';
  el.clearFiles.hidden = n === 0;
  updateControls();
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
// Worker

function startWorker({ phase = 'loading' } = {}) {
  if (state.worker) state.worker.terminate();
  setPhase(phase);
  const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'geneb' });
  state.worker = worker;
  state.workerReady = false;
  worker.addEventListener('message', (e) => {
    if (worker === state.worker) onWorkerMessage(e.data);
  });
  worker.addEventListener('error', (e) => {
    if (worker !== state.worker) return;
    e.preventDefault?.();
    onWorkerCrash(e.message || 'the worker stopped unexpectedly');
  });
  worker.addEventListener('messageerror', () => {
    if (worker === state.worker) onWorkerCrash('a message from the worker could not be read');
  });
}

/** An uncaught error in the worker (a wasm panic inside an async step ends up here). */
function onWorkerCrash(message) {
  if (!state.workerReady) {
    // It never started: restarting would only loop.
    state.run = null;
    state.pendingRun = null;
    showError(`The compute worker could not start: ${message}`);
    resetProgress('failed');
    setPhase('unavailable');
    return;
  }
  const run = state.run;
  if (run && state.phase === 'running' && !run.forcedCpu && isGpu(state.backend)) {
    retryOnCpu(run, message);
    return;
  }
  state.run = null;
  state.pendingRun = null;
  showError(`The compute worker failed: ${message}`);
  resetProgress('failed');
  startWorker(); // the wasm is in an unknown state after a crash
}

function onWorkerMessage(msg) {
  switch (msg?.type) {
    case 'ready': {
      state.workerReady = true;
      state.models = Array.isArray(msg.models) ? msg.models : [];
      setKnownModels(msg.known);
      state.backend = msg.backend ?? null;
      el.version.textContent = msg.version || '—';
      if (!state.modelsRendered) renderModels(state.models);
      if (!state.result) el.backend.textContent = backendText(state.backend);
      el.computeHint.textContent = state.backend?.fallback
        ? 'This WebGPU adapter is a software fallback: choosing the CPU is often faster.'
        : isGpu(state.backend) ? '' : 'No WebGPU adapter in this browser: everything runs on the CPU.';
      setPhase('ready');
      if (state.pendingRun) {
        const pending = state.pendingRun;
        state.pendingRun = null;
        dispatchRun(pending);
      }
      break;
    }
    case 'progress':
      if (state.run && msg.id === state.run.id) setProgress(msg);
      break;
    case 'result':
      if (state.run && msg.id === state.run.id) onResult(msg);
      break;
    case 'error':
      if (msg.fatal) {
        state.run = null;
        showError(msg.message);
        setPhase('unavailable');
        el.backend.textContent = backendText(state.backend);
        break;
      }
      if (state.run && msg.id != null && msg.id !== state.run.id) break;
      onRunError(msg);
      break;
    default:
      break;
  }
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
  else if (!models.length) why = 'Choose at least one encoder.';
  else if (!regimes.length) why = 'Choose at least one regime.';
  el.run.disabled = !ready || Boolean(why);
  el.demo.disabled = !ready;
  el.offline.disabled = !ready;
  el.cancel.disabled = !running;
  el.filesInput.disabled = running;
  el.folderInput.disabled = running;
  el.clearFiles.disabled = running;
  el.compute.disabled = running;
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
  // Send copies: the files stay in the list for the next run.
  state.worker.postMessage({
    type: 'run',
    id: run.id,
    forceBackend: run.forcedCpu ? 'cpu' : undefined,
    request: run.request,
  });
}

function startRun({ files, models, regimes, category, label }) {
  clearError();
  showNotice('');
  dispatchRun({
    id: state.nextRunId++,
    label,
    forcedCpu: el.compute.value === 'cpu',
    cpuChosen: el.compute.value === 'cpu',
    gpuNote: '',
    request: { files, models, regimes, category: category || null, modelFiles: modelFilesFor(models) },
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
  if (!state.files.length || !models.length || !regimes.length) { updateControls(); return; }
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
    files, models, regimes: DEMO_REGIMES, category: null,
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
  state.epoch++;
  state.run = null;
  state.pendingRun = null;
  startWorker(); // terminates the busy worker: the only reliable way to stop synchronous wasm
  resetProgress('cancelled');
  showNotice('Run cancelled. Your files are still here.');
}

/** WebGPU failed to start (or panicked): run the same request on the CPU in a fresh worker. */
function retryOnCpu(run, message) {
  run.forcedCpu = true;
  run.gpuNote = `WebGPU failed (${message}); ran on the CPU instead.`;
  showNotice(`WebGPU failed (${message}); retrying on the CPU…`);
  state.pendingRun = run;
  startWorker({ phase: 'running' }); // stays cancellable while the fresh worker loads
}

function onRunError(msg) {
  const run = state.run;
  if (run && msg.gpuFailure && !run.forcedCpu) {
    retryOnCpu(run, msg.message); // in a fresh worker, so a trapped one is replaced too
    return;
  }
  state.run = null;
  resetProgress('failed');
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
  const seconds = (performance.now() - run.startedAt) / 1000;
  const fallback = Boolean(run.gpuNote);
  // The browser's own adapter description reads better than the core's wgpu summary.
  const used = isGpu(msg.backend) && isGpu(msg.requestedBackend)
    ? { ...msg.backend, adapter: msg.requestedBackend.adapter || msg.backend.adapter, fallback: msg.requestedBackend.fallback }
    : msg.backend;
  state.result.backend = used;
  el.backend.textContent = backendText(used, { fallback, chosen: run.cpuChosen, gpuAvailable: isGpu(state.backend) });
  resetProgress('done');
  el.progressBar.value = 1;
  renderResult(state.result, { label: run.label, seconds, fallback });
  showNotice(run.gpuNote || '');
  el.download.disabled = false;
  setPhase('ready');
}

// ---------------------------------------------------------------------------------------------
// Result rendering

function renderResult(result, { label, seconds, fallback }) {
  const { profile, submissions, backend } = result;
  el.profile.textContent = '';
  const where = isGpu(backend) ? `WebGPU (${backend.adapter || 'adapter'})` : 'the CPU';
  el.resultSummary.textContent = `${label} · ${submissions.length} encoder${submissions.length === 1 ? '' : 's'}`
    + ` · ran on ${where}${fallback ? ' after WebGPU failed' : ''} in ${seconds.toFixed(1)} s.`;
  if (!profile || !Array.isArray(profile.regimes)) {
    el.profile.append(h('p', { class: 'hint' }, 'The run returned no profile.'));
    return;
  }
  const cats = Array.isArray(profile.categories) ? profile.categories : [];
  const metric = profile.metric || 'MCC';
  let bolded = false;
  for (const reg of profile.regimes) {
    const { section, bold } = regimeTable(reg, cats, metric);
    el.profile.append(section);
    bolded ||= bold;
  }
  el.profile.append(h('p', { class: 'hint legend' },
    `${metric} from −1 to 1 (0 = chance). Category = mean over its tasks; macro = mean of the categories; micro = mean over all tasks.`,
    bolded ? ' Bold: the best encoder in that column.' : ''));
  const partial = profile.regimes.flatMap((r) => (Array.isArray(r.rows) ? r.rows : []))
    .find((r) => Number.isInteger(r.n_tasks) && Number.isInteger(r.n_categories)
      && (r.n_tasks !== FULL_GENEB.tasks || r.n_categories !== FULL_GENEB.categories));
  if (partial) {
    el.profile.append(h('p', { class: 'hint scope-note', 'data-testid': 'profile-scope-note' },
      `macro and micro average the ${partial.n_tasks} task${partial.n_tasks === 1 ? '' : 's'} in `
      + `${partial.n_categories} categor${partial.n_categories === 1 ? 'y' : 'ies'} given here; only a full GENEB run `
      + `(${FULL_GENEB.tasks} tasks, ${FULL_GENEB.categories} categories) compares with the published leaderboard.`));
  }
  if (Array.isArray(profile.tasks) && profile.tasks.length) {
    el.profile.append(tasksDetails(profile.tasks, submissions, profile.regimes.map((r) => r.regime)));
  }
}

function scoreCell(entry, best) {
  const mean = typeof entry === 'number' ? entry : entry?.mean;
  const std = typeof entry === 'object' && entry ? entry.std : null;
  const td = h('td', { class: `num${best ? ' best' : ''}` }, fmt(mean));
  if (typeof std === 'number' && Number.isFinite(std)) {
    td.append(h('span', { class: 'std' }, ` ± ${std.toFixed(3)}`));
    td.title = `mean ${fmt(mean)}, standard deviation ${std.toFixed(3)} over the 5 seeds`;
  }
  if (mean == null || !Number.isFinite(mean)) td.classList.add('missing');
  return td;
}

function regimeTable(reg, cats, metric) {
  const id = `profile-${reg.regime}`;
  const rows = Array.isArray(reg.rows) ? reg.rows : [];
  const cols = [...cats.map((c) => ({ key: c, label: c, get: (r) => r.categories?.[c] })),
    { key: '__macro', label: 'Macro', get: (r) => r.macro, agg: true },
    { key: '__micro', label: 'Micro', get: (r) => r.micro, agg: true }];
  // The best row per column: only meaningful with two or more encoders scored on one task set.
  const comparable = rows.length >= 2 && new Set(rows.map((r) => r.n_tasks)).size === 1;
  const bestIdx = cols.map((c) => {
    if (!comparable) return -1;
    let best = -1; let bestV = -Infinity;
    rows.forEach((r, i) => {
      const e = c.get(r); const v = typeof e === 'number' ? e : e?.mean;
      if (typeof v === 'number' && v > bestV) { bestV = v; best = i; }
    });
    return best;
  });
  const table = h('table', { 'data-testid': `profile-table-${reg.regime}`, 'data-regime': reg.regime },
    h('caption', {}, `${metric} per category — ${REGIME_LABELS[reg.regime] ?? reg.regime}`),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Encoder'),
      cols.map((c) => h('th', { scope: 'col', class: c.agg ? 'agg' : null }, c.label)))),
    h('tbody', {}, rows.map((r, i) => h('tr', {},
      h('th', { scope: 'row' }, h('code', {}, r.model),
        modelName(r.model) ? h('span', { class: 'model-sub' }, modelName(r.model)) : null),
      cols.map((c, j) => {
        const td = scoreCell(c.get(r), bestIdx[j] === i);
        if (c.agg) td.classList.add('agg');
        return td;
      })))),
  );
  const section = h('section', { class: 'regime', 'aria-labelledby': `${id}-h` },
    h('h3', { id: `${id}-h` }, REGIME_LABELS[reg.regime] ?? reg.regime,
      REGIME_NOTES[reg.regime] ? h('small', {}, ` ${REGIME_NOTES[reg.regime]}`) : null),
    h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': `${id}-h` }, table));
  return { section, bold: bestIdx.some((i) => i >= 0) };
}

function tasksDetails(tasks, submissions, regimes) {
  const models = submissions.map((s) => s.model_id ?? s.meta?.display ?? '?');
  const parts = [h('summary', {}, `Tasks and per-task scores (${tasks.length} task${tasks.length === 1 ? '' : 's'})`)];
  parts.push(h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Tasks' },
    h('table', { 'data-testid': 'tasks-table' },
      h('caption', {}, 'Tasks'),
      h('thead', {}, h('tr', {}, ['Task', 'Category', 'Train', 'Test'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, tasks.map((t) => h('tr', {},
        h('th', { scope: 'row' }, t.id),
        h('td', {}, t.category ?? ''),
        h('td', { class: 'num' }, t.n_train ?? ''),
        h('td', { class: 'num' }, t.n_test ?? '')))))));
  for (const regime of regimes) {
    parts.push(h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': `Per-task MCC, ${REGIME_LABELS[regime] ?? regime}` },
      h('table', {},
        h('caption', {}, `Per-task MCC — ${REGIME_LABELS[regime] ?? regime}`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Task'), models.map((m) => h('th', { scope: 'col' }, m)))),
        h('tbody', {}, tasks.map((t) => h('tr', {},
          h('th', { scope: 'row' }, t.id),
          submissions.map((s) => {
            const r = s.results?.[regime]?.[t.id];
            return h('td', { class: 'num', title: r ? `Acc ${fmt(r.Acc)} · F1 ${fmt(r.F1)}` : null }, fmt(r?.MCC));
          })))))));
  }
  return h('details', { class: 'tasks' }, parts);
}

function onDownloadClick() {
  if (!state.result) return;
  const { submissions, profile } = state.result;
  const blob = new Blob([JSON.stringify({ submissions, profile }, null, 2) + '\n'], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: 'geneb-results.json', hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

// ---------------------------------------------------------------------------------------------
// Wiring

function init() {
  for (const c of CATEGORIES) el.category.append(h('option', { value: c }, c));
  el.filesInput.accept = DATA_ACCEPT;
  el.setup.addEventListener('submit', onRunClick);
  el.cancel.addEventListener('click', onCancelClick);
  el.demo.addEventListener('click', onDemoClick);
  el.offline.addEventListener('click', onOfflineClick);
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
  renderFiles();
  initModels($('#models-panel'), { getWorker: () => state.worker, onChange: updateControls });
  initTasks($('#tasks-panel'), { addTaskFiles: addFiles });
  startWorker();
}

init();
