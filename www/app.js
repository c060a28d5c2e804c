// The geneb page's runs: it starts the WebAssembly core's worker (core-client.js) and follows its
// life (ready, crashed, out of memory), sends a run of the chosen task files, encoders and
// regimes, shows its progress, retries on the CPU when WebGPU fails, and shows the per-category
// profile with the result JSON as a download; it also hands the results library (library.js)
// the core's comparisons. The panels are modules of their own: the task files (task-files.js),
// the encoders and regimes (encoders.js), the foundation models (models.js), the GENEB tasks
// (tasks.js), the split (split.js), the metadata (meta.js), the probe (predict.js), offline use
// (offline.js). Nothing leaves the tab.

// First: where the page must reload once to be cross-origin isolated, this import never
// completes, so the app starts only on the page that stays.
import './isolation.js';
import { bytesText, downloadText, h, messageOf, plural } from './dom.js';
import { callCore, startCore } from './core-client.js';
import { coreFacts, setCoreFacts } from './core-facts.js';
import { cacheSize, clearCache } from './embedding-cache.js';
import {
  DEMO_MODELS, builtinModel, encodersShown, initEncoders, modelName, selectedModels, selectedRegimes, showEncoders,
} from './encoders.js';
import { initLibrary, redrawLibrary, saveRun, setLibraryBusy } from './library.js';
import { initMeta, metaList, metaOverrides } from './meta.js';
import { initModels, modelFilesFor, modelLayersFor, setKnownModels } from './models.js';
import { setUpOffline } from './offline.js';
import { initPredict, savingProbe, showProbe } from './predict.js';
import { renderProfile } from './profile-view.js';
import { layerSection } from './analysis-view.js';
import { coreFailed, coreReady, coreStarting } from './queue.js';
import { deviationList, encoderNotes, initSplit, splitSettings, truncationList } from './split.js';
import { initAudit } from './audit.js';
import { initStorage } from './storage.js';
import { DEMO_MANIFEST, fetchSuiteFiles } from './suite-files.js';
import {
  addTaskFiles, hasOwnEmbeddings, initTaskFiles, readTaskFiles, setTaskFilesBusy, taskFiles,
} from './task-files.js';
import { OFFLINE_MANIFEST, initTasks } from './tasks.js';

const $ = (sel) => document.querySelector(sel);
const el = {
  status: $('#status'),
  backend: $('#backend'),
  version: $('#version'),
  setup: $('#setup'),
  category: $('#category'),
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
};

const state = {
  workerReady: false, // the current worker's core has loaded
  phase: 'loading', // loading | ready | running | unavailable
  backend: null, // {kind, adapter, reason?} from the last GPU check
  threads: null, // {count, reason}: the core's CPU threads (www/worker.js)
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
// The core's worker (www/core-client.js speaks to it)

function startWorker({ phase = 'loading' } = {}) {
  setPhase(phase);
  state.workerReady = false;
  coreStarting();
  startCore({ ready: onCoreReady, unavailable: onCoreUnavailable, failed: onCallFailed, lost: onWorkerLost });
}

function onCoreReady(msg) {
  state.workerReady = true;
  setCoreFacts(msg.facts);
  setKnownModels(msg);
  // GENEB's categories, for the user's own tasks (the first option, "from the task id", stays).
  if (el.category.options.length <= 1) {
    for (const c of msg.facts.categories) el.category.append(h('option', { value: c }, c));
  }
  state.backend = msg.backend ?? null;
  state.threads = msg.threads ?? null;
  el.version.textContent = msg.version || '—';
  if (!encodersShown()) {
    showEncoders(msg.models, msg.facts.regimes);
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
  const models = selectedModels();
  const regimes = selectedRegimes();
  let why = '';
  if (state.phase === 'loading') why = 'Loading the WebAssembly core…';
  else if (state.phase === 'unavailable') why = 'The compute core could not be loaded (see the error above).';
  else if (!taskFiles().length) why = 'Choose or drop at least one task file to run.';
  else if (!models.length && !hasOwnEmbeddings()) why = 'Choose at least one encoder.';
  else if (!regimes.length) why = 'Choose at least one regime.';
  el.run.disabled = !ready || Boolean(why);
  el.demo.disabled = !ready;
  el.offlineSuite.disabled = !ready;
  el.cancel.disabled = !running;
  setTaskFilesBusy(running);
  el.compute.disabled = running;
  el.reuseEmbeddings.disabled = running;
  el.addDemoSuite.disabled = running;
  el.runHint.textContent = running ? '' : why;
  el.setup.setAttribute('aria-busy', running ? 'true' : 'false');
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
      files, models, regimes, category: category || null, ...modelFilesFor(models), modelLayers: modelLayersFor(models),
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
  if (!taskFiles().length || (!models.length && !hasOwnEmbeddings()) || !regimes.length) { updateControls(); return; }
  const files = await loadRunInput('reading files', readTaskFiles);
  if (!files) return;
  const n = files.length;
  startRun({
    files, models, regimes,
    category: el.category.value,
    label: `${n} file${n === 1 ? '' : 's'}`,
  });
}

async function onDemoClick() {
  if (state.phase !== 'ready') return;
  clearError();
  showNotice('');
  const files = await loadRunInput('fetching the demo suite', () => fetchSuiteFiles(DEMO_MANIFEST));
  if (!files) return;
  const models = DEMO_MODELS.filter((m) => m.startsWith('kmer:') || builtinModel(m));
  startRun({
    // Every regime of the protocol.
    files, models, regimes: coreFacts().regimes.map((r) => r.key), category: null, source: 'demo',
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
  const swept = Object.keys(run.request.modelLayers ?? {}).length > 0;
  renderResult(state.result, { label: run.label, seconds, fallback, swept });
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
      ? `${plural(entries, 'set')} of embeddings kept (${bytesText(bytes, 'KB')}).`
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
 * of the recommended models and `costBudget` ({maxSecondsPer1kSeqs?, maxMemoryBytes?}) their measured
 * time and memory. Rejects with `cancelled` when the user cancels it.
 */
async function requestReport(files, { maxParams = null, costBudget = {} } = {}) {
  if (state.phase !== 'ready') throw new Error('wait for the current run to finish');
  clearError();
  showNotice('');
  state.comparing = true;
  setPhase('running');
  setProgress({}, `comparing ${plural(files.length, 'result')}`);
  try {
    const report = await callCore('report', { request: { files, maxParams, costBudget } });
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
// The demo suite as task files

async function onAddDemoSuite() {
  el.addDemoSuite.disabled = true;
  clearError();
  try {
    const files = await fetchSuiteFiles(DEMO_MANIFEST);
    addTaskFiles(files.map((f) => ({ path: f.name, file: new File([f.bytes], f.name.split('/').pop()) })));
    showNotice(`Added the demo suite: ${plural(files.length - 1, 'task file')} and its tasks.json.`);
  } catch (err) {
    showError(messageOf(err));
  } finally {
    updateControls();
  }
}

// ---------------------------------------------------------------------------------------------
// Result rendering

function renderResult(result, { label, seconds, fallback, swept }) {
  const { profile, submissions, backend } = result;
  const where = isGpu(backend) ? `WebGPU (${backend.adapter || 'adapter'})` : 'the CPU';
  el.resultSummary.textContent = `${label} · ${plural(submissions.length, 'encoder')}`
    + ` · ran on ${where}${fallback ? ' after WebGPU failed' : ''} in ${seconds.toFixed(1)} s.`;
  renderProfile(el.profile, profile, submissions, { prefix: 'profile', modelName });
  if (swept) showLayerView(result);
  el.profile.append(deviationList(submissions) ?? '', truncationList(submissions) ?? '', encoderNotes(submissions) ?? '',
    metaList(submissions) ?? '');
}

/**
 * A layer sweep's by-layer view under its tables: the core's report on the run's results,
 * shown as the comparison of saved results shows it (www/analysis-view.js), so the two agree.
 */
async function showLayerView(result) {
  const view = h('div', { class: 'profile-layers', 'data-testid': 'profile-layers' },
    h('p', { class: 'hint' }, 'Working out the best layer per category…'));
  el.profile.append(view);
  try {
    const files = result.submissions.map((sub) => ({ name: sub.model_id ?? 'this run', text: JSON.stringify(sub) }));
    const report = await callCore('report', { request: { files } });
    if (state.result !== result) return;
    view.replaceChildren(layerSection(report.analysis, { prefix: 'profile-' })
      ?? h('p', { class: 'hint' }, 'No category was scored at two layers or more.'));
  } catch (err) {
    if (state.result === result) {
      view.replaceChildren(h('p', { class: 'error-message', 'data-testid': 'profile-layers-error' },
        `The by-layer view could not be worked out: ${messageOf(err)}`));
    }
  }
}

function onDownloadClick() {
  if (!state.result) return;
  const { submissions, profile } = state.result;
  downloadText(`${JSON.stringify({ submissions, profile }, null, 2)}\n`, 'geneb-results.json', 'application/json');
}

// ---------------------------------------------------------------------------------------------
// Wiring

function init() {
  el.setup.addEventListener('submit', onRunClick);
  el.cancel.addEventListener('click', onCancelClick);
  el.demo.addEventListener('click', onDemoClick);
  el.offlineSuite.addEventListener('click', onOfflineClick);
  el.download.addEventListener('click', onDownloadClick);
  el.addDemoSuite.addEventListener('click', onAddDemoSuite);
  el.clearEmbeddings.addEventListener('click', onClearEmbeddingsClick);
  showEmbeddingCacheSize();
  initEncoders({ onChange: updateControls });
  // Before the task files: their list tells the split panel which tables lack a split column.
  initSplit($('#split-panel'));
  initAudit($('#audit-panel'));
  initMeta($('#meta-fields'));
  initStorage($('#storage-line'));
  initPredict($('#predict-panel'));
  initTaskFiles({ onChange: updateControls, showError, showNotice, isRunning: () => state.phase === 'running' });
  initModels($('#models-panel'), { onChange: updateControls });
  initTasks($('#tasks-panel'), { addTaskFiles });
  startWorker();
  initLibrary({ requestReport, modelName });
  setUpOffline($('#offline'));
}

init();
