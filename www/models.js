// Foundation models in the page: the known-models table (with the GENEB authors' published
// profiles), loading a model from dropped files or by Hugging Face hub id (streamed download with
// byte progress, sha256-verified, kept in the Cache API for offline reuse: www/hub.js), and a small
// "embed sequences" tool that runs the loaded model in the worker.

import { bytesText, h, messageOf } from './dom.js';
import {
  bundle, cachedManifests, confirmPlan, download, downloadAll, fromCache, hubEndpoint, plannedBytes, probe, store,
  verificationNote,
} from './hub.js';
import { callCore } from './core-client.js';
import { whenCoreReady } from './queue.js';

const CACHE_NAME = 'geneb-models-v1';

/**
 * What a model folder holds that geneb reads (the core's hf::MODEL_FILE_NAMES, from the worker's
 * ready message): {config, publishedConfig, weights (preferred first), tokenizer,
 * publishedWeightsSuffixes}.
 * Anything else dropped is ignored. Null until the core is up.
 */
let modelFileNames = null;
/**
 * Weights published under a name of their own: a torch.save file without a config.json
 * (DNAGPT's dna_gpt0.1b_h.pth: the core takes the shape from the name, or says it cannot), or a
 * Lightning checkpoint beside its model_config.json (JanusDNA's last.ckpt).
 */
const isPublishedWeights = (name) => modelFileNames.publishedWeightsSuffixes.some((suffix) => name.endsWith(suffix));

/**
 * The largest weights file a tab can load (the core's known::TAB_WEIGHTS_LIMIT, from the
 * worker's ready message). Larger models are refused before any download or read.
 */
let tabWeightsLimit = null;

const HUB_ID = /^([A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*)(?:@([\w.\-/]+))?$/;

// The files are Blobs (a dropped File is read from disk only when the worker needs it), so the
// page never holds a model's bytes and posting them to the worker copies nothing.
const loaded = new Map(); // spec → {spec, label, source, key, files: [{name, blob}], checked}
// Each load of a model gets a new key; the worker's core keeps the last model it built under its
// key (src/web/held_model.rs), so a later call with the same key skips reading and building it.
let nextLoadKey = 1;
let ctx = null; // {onChange}
let known = [];
let panel = null;

/** `owner/name@rev` → {id, rev}; throws a message saying what a hub id looks like. */
export function parseHubId(text) {
  const m = HUB_ID.exec(String(text).trim().replace(/^hf:/, ''));
  if (!m) throw new Error(`'${text}' is not a hub id: write owner/name or owner/name@revision`);
  return { id: m[1], rev: m[2] || 'main' };
}

// ---------------------------------------------------------------------------------------------
// Hub download and cache (www/hub.js)

/** A 7B model's index is about 30 kB and names a few shards; anything far larger is not one. */
const MOST_INDEX_BYTES = 16 << 20;
const MOST_SHARDS = 1024;

/**
 * The shards the index `index` (a probed file) names, each HEAD-probed for its size: the index
 * itself is downloaded, and the core reads it by the rule it loads shards by (a .safetensors
 * file beside the index, nothing outside the model's folder). Refused before any shard is asked
 * for where the core refuses a name, there are too many, or the hub lacks one.
 */
async function shardsOf(b, index) {
  if (index.size > MOST_INDEX_BYTES) {
    throw new Error(`${b.label}: ${index.name} announces ${bytesText(index.size)}: that is no checkpoint index`);
  }
  const { blob } = await download(b, index, () => {});
  let names;
  try {
    names = await callCore('shards', { index: { name: index.name, file: blob } });
  } catch (err) {
    throw new Error(`${b.label}: ${messageOf(err)}; nothing else was downloaded`);
  }
  if (!names.length || names.length > MOST_SHARDS) {
    throw new Error(`${b.label}: ${index.name} names ${names.length} shards`
      + `${names.length ? `, more than any checkpoint has (${MOST_SHARDS} at most)` : ''}: nothing else was downloaded`);
  }
  const shards = [];
  for (const name of names) {
    const shard = await probe(b, name);
    if (!shard) throw new Error(`${b.label}: ${index.name} names ${name}, which the hub does not have`);
    shards.push(shard);
  }
  return shards;
}

/**
 * What loading a model will download: config, the tokenizer files it has, and one weights file
 * or a sharded checkpoint's index and the shards it names.
 */
async function plan(b, repo) {
  await waitForCore(b.label);
  const config = await probe(b, modelFileNames.config);
  if (!config) throw new Error(`${b.label}: no config.json on ${b.endpoint}: check the id and the revision`);
  const files = [config];
  for (const name of modelFileNames.tokenizer) {
    const f = await probe(b, name);
    if (f) files.push(f);
  }
  let weights = [];
  for (const name of modelFileNames.weights) {
    const file = await probe(b, name);
    if (file) { weights = [file]; break; }
  }
  let untouched = 'nothing was downloaded';
  if (!weights.length) {
    const index = await probe(b, modelFileNames.shardIndex);
    if (!index) {
      throw new Error(`${b.label}: no ${modelFileNames.weights.join(' or ')}, and no sharded checkpoint (${modelFileNames.shardIndex})`);
    }
    weights = await shardsOf(b, index);
    files.push(index);
    untouched = `nothing but its ${index.name} was downloaded`;
  }
  // Downloaded before the core can read their headers: twice the limit only where the known
  // model's weights are known to fit in half precision.
  const heldInHalf = known.some((m) => m.hubId === repo && m.tabWeights === 'half');
  checkFitsInTab(b.label, weights.map((w) => w.name).join(', '), plannedBytes(weights), untouched, heldInHalf);
  files.push(...weights);
  return files;
}

/**
 * Refuse weights the tab cannot hold, naming their size, before they are downloaded or read;
 * `untouched` says which of the two was spared. A bf16 or f16 checkpoint whose f32 would not fit
 * is held as it is stored, and an f32 one narrowed to bf16 (the core's rule, as the CLI's), so
 * files (all shards together) of up to twice the limit may fit, `heldInHalf`: the core then
 * refuses from their headers, before reading a tensor, weights still over the limit.
 */
function checkFitsInTab(label, name, size, untouched, heldInHalf) {
  const most = tabWeightsLimit * (heldInHalf ? 2 : 1);
  if (Number.isFinite(size) && tabWeightsLimit != null && size > most) {
    throw new Error(`${label}: its weights (${name}, ${bytesText(size)}) do not fit in a browser tab, which can hold `
      + `at most ${bytesText(tabWeightsLimit)} of weights (in half precision where f32 would not fit) beside the tensors `
      + `built from them and a task's embeddings: ${untouched}; run it with the command line (geneb eval), which has `
      + 'the whole machine\'s memory');
  }
}

// ---------------------------------------------------------------------------------------------
// Talking to the worker

/** Embed `sequences` with a loaded model in the worker: {dim, values, backend, modelKept, lastLayer, weights}. */
export function embedInWorker(spec, sequences, { backend = 'auto' } = {}) {
  const model = loadedFor(spec);
  if (!model) return Promise.reject(new Error(`no model ${spec} is loaded`));
  // Blob handles, not bytes: the core reads them by range in the worker (src/web/blob_file.rs).
  return callCore('embed', {
    model: spec, sequences, modelFiles: model.files, modelKey: model.key,
    forceBackend: backend === 'auto' ? undefined : backend,
  });
}

// ---------------------------------------------------------------------------------------------
// The panel

const ui = {};

function say(node, text, { error = false } = {}) {
  node.textContent = text;
  node.hidden = !text;
  node.classList.toggle('error', error);
}

/**
 * "yes" (in half precision where f32 would not fit: the checkpoint's bf16/f16 weights on the
 * tab's WebGPU device), or why not and the command that runs it instead.
 */
function fitsText(m) {
  if (m.fitsTab == null) return '—';
  if (m.tabWeights === 'half') return `yes, its weights held in half precision (${bytesText(m.parameters * 2)})`;
  if (m.fitsTab) return 'yes';
  const instead = `run it with geneb eval --model hf:${m.hubId ?? 'FOLDER'} (--backend wgpu for a GPU)`;
  return `no: ${bytesText(m.parameters * 2)} of weights even in half precision; ${instead}`;
}

function knownTable() {
  const categories = [...new Set(known.flatMap((m) => Object.keys(m.published?.categoryMcc ?? {})))].sort();
  const head = h('tr', {},
    h('th', { scope: 'col' }, 'Model (hub id)'), h('th', { scope: 'col' }, 'Parameters'),
    h('th', { scope: 'col' }, 'Context'), h('th', { scope: 'col' }, 'Tokenizer'),
    h('th', { scope: 'col' }, 'Runs in geneb'), h('th', { scope: 'col' }, 'Fits a tab'),
    h('th', { scope: 'col' }, 'Checked against'),
    h('th', { scope: 'col' }, "Embedded as GENEB's extractor embeds it"),
    h('th', { scope: 'col' }, 'GENEB macro MCC'),
    categories.map((c) => h('th', { scope: 'col', class: 'cat' }, c)));
  const rows = known.map((m) => {
    // Weights published off the hub (m.weights says where) are loaded as a folder.
    const useButton = m.supported && m.hubId
      ? h('button', { type: 'button', class: 'linkish', 'data-hub-id': m.hubId }, 'load')
      : null;
    const source = m.hubId
      ? h('code', {}, m.hubId)
      : h('span', {}, `not on the hub: ${m.weights}${m.supported ? '; choose its folder' : ''}`);
    return h('tr', { 'data-testid': 'known-model' },
      h('th', { scope: 'row' }, h('span', { class: 'model-name' }, m.display), h('br'), source),
      h('td', { class: 'num' }, m.parameters ? `${(m.parameters / 1e6).toFixed(m.parameters < 1e7 ? 2 : 0)} M` : '—'),
      h('td', { class: 'num' }, `${Number(m.context).toLocaleString('en')} ${m.contextUnit === 'tokens' ? 'tokens' : 'nt'}`),
      h('td', {}, m.tokenizer),
      h('td', {}, m.supported ? 'yes ' : `not yet (${m.architecture})`, useButton),
      h('td', { 'data-testid': 'known-model-fits' }, fitsText(m)),
      h('td', { 'data-testid': 'known-model-checked' }, m.supported ? m.checked.description : '—'),
      // The core's recipe record (src/encoder/recipe.rs), the same facts as README.md's table.
      h('td', { 'data-testid': 'known-model-recipe' }, m.supported ? m.recipeSummary : '—'),
      h('td', { class: 'num' }, m.published ? m.published.macroMcc.toFixed(3) : '—'),
      categories.map((c) => {
        const v = m.published?.categoryMcc?.[c];
        return h('td', { class: 'num cat' }, v == null ? '—' : v.toFixed(2));
      }));
  });
  return h('div', { class: 'table-wrap' },
    h('table', { class: 'known-models', 'data-testid': 'known-models' }, h('thead', {}, head), h('tbody', {}, rows)));
}

/**
 * Sliding windows instead of truncation for one loaded model (src/encoder/spec.rs: `?window=`):
 * windows of `size` nucleotides every `stride`, each embedded, a sequence's embedding the mean of
 * its windows'. Not GENEB's protocol, which truncates: the result lists it among its deviations.
 */
function windowControls(m, id) {
  const on = h('input', { type: 'checkbox', name: 'hf-window', id: `${id}-window`, 'data-testid': `${id}-window`, checked: m.window.on });
  const number = (key, label) => {
    const input = h('input', {
      type: 'number', min: 1, step: 1, value: m.window[key], class: 'window-nt', 'aria-label': label,
      'data-testid': `${id}-window-${key}`,
    });
    input.addEventListener('input', () => { m.window[key] = input.value; ctx.onChange(); });
    return input;
  };
  on.addEventListener('change', () => { m.window.on = on.checked; ctx.onChange(); });
  return h('div', { class: 'model-window' },
    on, h('label', { for: `${id}-window` }, ' Slide windows over long sequences instead of truncating them: '),
    number('size', 'window size in nucleotides'), ' nt every ', number('stride', 'window stride in nucleotides'), ' nt',
    h('p', { class: 'model-desc' }, 'Not GENEB\'s protocol (it truncates at the model\'s maximum length), so the '
      + 'result names it as a deviation: each window is embedded as a sequence of its own, and a sequence\'s '
      + 'embedding is the mean of its windows\'.'));
}

/**
 * Which hidden state of a loaded model a run probes (src/encoder/spec.rs: `?layer=K`, and
 * `geneb eval --layers all`): the last (GENEB's), one layer K, or every layer, each a result of
 * its own, from one pass. Shown once the load check has told the model's layer count.
 */
function layerControls(m, id) {
  if (!(m.lastLayer > 0)) return null;
  const last = m.lastLayer;
  const mode = h('select', { id: `${id}-layer`, 'data-testid': `${id}-layer` },
    h('option', { value: 'last', selected: m.layer.mode === 'last' }, `the last (${last}, GENEB's)`),
    h('option', { value: 'k', selected: m.layer.mode === 'k' }, 'layer K'),
    h('option', { value: 'all', selected: m.layer.mode === 'all' }, `all layers (0–${last}, one result each)`));
  const k = h('input', {
    type: 'number', step: 1, min: -(last + 1), max: last, value: m.layer.k, class: 'layer-k',
    'aria-label': `layer K, 0 to ${last}`, 'data-testid': `${id}-layer-k`, hidden: m.layer.mode !== 'k',
  });
  const error = h('p', { class: 'error', 'data-testid': `${id}-layer-error`, role: 'alert', hidden: true });
  // Said at once; a run with a bad K is refused by the core with the CLI's own message.
  const check = () => {
    const value = Number(k.value);
    const bad = m.layer.mode === 'k' && (k.value.trim() === '' || !Number.isInteger(value) || value < -(last + 1) || value > last);
    say(error, bad ? `layer '${k.value}': K must be a whole number from ${-(last + 1)} to ${last} `
      + `(0 = the embeddings' output, ${last} or -1 = the last layer's)` : '', { error: bad });
  };
  mode.addEventListener('change', () => { m.layer.mode = mode.value; k.hidden = mode.value !== 'k'; check(); ctx.onChange(); });
  k.addEventListener('input', () => { m.layer.k = k.value; check(); ctx.onChange(); });
  check(); // a list drawn again (another model loaded) keeps saying what is wrong
  return h('div', { class: 'model-layer' },
    h('label', { for: `${id}-layer` }, `Probe hidden state (the model has ${last} layers): `), mode, ' ', k,
    h('p', { class: 'model-desc' }, 'Another layer than the last is not GENEB\'s protocol: the result names it as a '
      + 'deviation. All layers run in one pass and the comparison of the saved results shows which layer is best.'),
    error);
}

/**
 * The spec a run uses for a loaded model: its own, with `?window=SIZE,STRIDE` when windows are
 * on and `layer=K` when one layer is chosen (every layer is asked for apart: `modelLayersFor`).
 */
function runSpec(m) {
  const options = [];
  if (m.window.on) options.push(`window=${m.window.size},${m.window.stride}`);
  if (m.layer.mode === 'k') options.push(`layer=${m.layer.k.trim()}`);
  return options.length ? `${m.spec}?${options.join('&')}` : m.spec;
}

/** The loaded model a run spec names (the part before its `?` options). */
function loadedFor(spec) {
  return loaded.get(spec.split('?')[0]);
}

function renderLoaded() {
  ui.loaded.replaceChildren(...[...loaded.values()].map((m) => {
    const id = `hf-${m.spec.replace(/[^a-z0-9]+/gi, '-')}`;
    const size = m.files.reduce((s, f) => s + f.blob.size, 0);
    return h('div', { class: 'choice model-choice', 'data-testid': 'loaded-model' },
      h('input', { type: 'checkbox', name: 'hf-model', value: m.spec, id, 'data-testid': id, checked: true }),
      h('label', { for: id }, h('span', { class: 'model-name' }, m.label), ' ', h('code', {}, m.spec)),
      h('p', { class: 'model-desc' }, `${m.files.length} files, ${bytesText(size)}, ${m.source}`),
      windowControls(m, id), layerControls(m, id));
  }));
  ui.embedModel.replaceChildren(...[...loaded.keys()].map((spec) => h('option', { value: spec }, spec)));
  ui.embedTool.hidden = loaded.size === 0;
  ctx.onChange();
}

/** Until the core is up (it knows the tab's limits and checks the model), saying so. */
function waitForCore(spec) {
  return whenCoreReady(() => say(ui.status, `${spec}: waiting for the WebAssembly core to load, then checking it…`));
}

/** Try the model on one short sequence, so a bad model is reported now rather than mid-run. */
async function addModel({ files, ...model }) {
  try {
    await waitForCore(model.spec);
  } catch (err) {
    say(ui.status, '');
    say(ui.error, `${model.spec} cannot be used: ${messageOf(err)}`, { error: true });
    return;
  }
  say(ui.status, `checking ${model.spec}…`);
  loaded.set(model.spec, {
    ...model,
    key: `${model.spec} load ${nextLoadKey++}`,
    window: { on: false, size: 1000, stride: 500 },
    layer: { mode: 'last', k: '' },
    files: files.map((f) => ({ name: f.name, blob: f.blob })),
  });
  try {
    const r = await embedInWorker(model.spec, ['ACGTACGTAC']);
    loaded.get(model.spec).lastLayer = r.lastLayer ?? null;
    say(ui.status, `${model.spec} is ready: ${r.dim}-dimensional embeddings, runs on ${r.backend.kind === 'cpu' ? 'the CPU' : `WebGPU (${r.backend.adapter})`}; ${heldText(r)}.`);
  } catch (err) {
    loaded.delete(model.spec);
    say(ui.status, '');
    say(ui.error, `${model.spec} cannot be used: ${messageOf(err)}`, { error: true });
    return;
  }
  renderLoaded();
}

/** What an embedding's model holds its weights in, from the core's answer. */
function heldText(r) {
  return `weights held in ${r.weights ?? 'f32'}`;
}

async function onModelFiles(list, folderName) {
  say(ui.error, '');
  const label = folderName || 'dropped model';
  const spec = `hf:${label.replace(/[^\w.-]+/g, '-')}`;
  try {
    await waitForCore(spec); // it knows which files a model folder holds, and the tab's limit
  } catch (err) {
    say(ui.error, messageOf(err), { error: true });
    return;
  }
  const { config, publishedConfig, weights: weightNames, tokenizer, shardIndex } = modelFileNames;
  const wanted = new Set([config, publishedConfig, ...weightNames, ...tokenizer, shardIndex]);
  const sharded = list.some((file) => file.name.split('/').pop() === shardIndex);
  // A sharded checkpoint's shards: the .safetensors files its index names (the core checks them).
  const isWeights = (name) => weightNames.includes(name) || isPublishedWeights(name) || (sharded && name.endsWith('.safetensors'));
  const byName = new Map();
  const ignored = [];
  for (const file of list) {
    const base = file.name.split('/').pop();
    if (wanted.has(base) || isWeights(base)) byName.set(base, file);
    else ignored.push(base);
  }
  const weights = [...byName.keys()].filter(isWeights);
  const missing = [];
  if (!byName.has(config) && !byName.has(publishedConfig) && !weights.some(isPublishedWeights)) missing.push(config);
  if (!weights.length) missing.push(`weights (${weightNames.join(' or ')}, or a published ${modelFileNames.publishedWeightsSuffixes.join(' or ')})`);
  if (missing.length) {
    say(ui.error, `The model files lack ${missing.join(' and ')}: drop the whole model folder or all its files.`, { error: true });
    return;
  }
  try {
    const size = weights.reduce((sum, w) => sum + byName.get(w).size, 0);
    checkFitsInTab(label, weights.join(', '), size, 'nothing was read', true);
  } catch (err) {
    say(ui.error, messageOf(err), { error: true });
    return;
  }
  const files = [];
  for (const [name, file] of byName) files.push({ name, blob: file });
  const note = ignored.length ? `; ignored ${ignored.join(', ')}` : '';
  await addModel({ spec, label, source: `from files${note}`, files });
}

async function onHubLoad(text) {
  say(ui.error, '');
  let parsed;
  try { parsed = parseHubId(text); } catch (err) { say(ui.error, messageOf(err), { error: true }); return; }
  const { id, rev } = parsed;
  const endpoint = hubEndpoint();
  const spec = `hf:${id}@${rev}`;
  ui.hubButton.disabled = true;
  try {
    const b = bundle(endpoint, id, rev);
    const cached = await fromCache(CACHE_NAME, b);
    if (cached) {
      await addModel({ spec, label: id, source: `from this browser's cache (stored ${cached.manifest.storedAt})`, files: cached.files });
      return;
    }
    say(ui.status, `asking ${endpoint} what ${id}@${rev} holds…`);
    const files = await plan(b, id);
    const total = plannedBytes(files);
    say(ui.status, 'confirm the download');
    const agreed = await confirmPlan(ui.plan, {
      summary: `${id}@${rev} from ${endpoint}: ${files.length} files, ${bytesText(total)} in all.`, files, total,
    });
    if (!agreed) { say(ui.status, 'download cancelled'); return; }
    ui.progress.hidden = false;
    ui.progress.max = total || 1;
    const got = await downloadAll(b, files, (done, name) => {
      ui.progress.value = done;
      say(ui.status, `downloading ${name}: ${bytesText(done)} of ${bytesText(total)}`);
    });
    const kept = await store(CACHE_NAME, b, got, { id, rev });
    await addModel({
      spec, label: id,
      source: `downloaded from ${endpoint}${kept ? ', kept for offline use' : ''}; ${verificationNote(got)}`,
      files: got,
    });
    refreshCached();
  } catch (err) {
    say(ui.status, '');
    say(ui.error, messageOf(err), { error: true });
  } finally {
    ui.hubButton.disabled = false;
    ui.progress.hidden = true;
  }
}

async function refreshCached() {
  const endpoint = hubEndpoint();
  let list = [];
  try { list = await cachedManifests(CACHE_NAME, endpoint); } catch { list = []; }
  ui.cached.replaceChildren(...list.map((m) => h('li', {},
    h('button', { type: 'button', class: 'linkish', 'data-hub-id': `${m.id}@${m.rev}`, 'data-testid': 'cached-model' }, `${m.id}@${m.rev}`),
    ` ${bytesText(m.size)}`)));
  ui.cachedBox.hidden = list.length === 0;
}

async function onEmbedClick() {
  // The layer chosen for the model's runs, when it is one layer K.
  const model = loaded.get(ui.embedModel.value);
  const base = model ? runSpec({ ...model, window: { on: false } }) : ui.embedModel.value;
  // ?weights= only where the user asks: else the core picks by the tab's memory.
  const held = model && ui.embedWeights.value !== 'auto' ? `weights=${ui.embedWeights.value}` : '';
  const spec = held ? `${base}${base.includes('?') ? '&' : '?'}${held}` : base;
  const sequences = ui.embedInput.value.split(/\s+/).filter(Boolean);
  say(ui.embedOut, 'embedding…');
  ui.embedJson.textContent = '';
  ui.embedButton.disabled = true;
  try {
    const r = await embedInWorker(spec, sequences, { backend: ui.embedBackend.value });
    const where = r.backend.kind === 'cpu' ? 'the CPU' : `WebGPU (${r.backend.adapter})`;
    const kept = r.modelKept ? ' (the model was still loaded from the last call)' : '';
    const weights = model ? `; ${heldText(r)}` : '';
    say(ui.embedOut, `${sequences.length} × ${r.dim} embeddings, computed on ${where}${kept}${weights}.`);
    ui.embedJson.textContent = JSON.stringify({
      model: spec, backend: r.backend, dim: r.dim, weights: r.weights ?? 'f32', values: Array.from(r.values),
    });
  } catch (err) {
    say(ui.embedOut, messageOf(err), { error: true });
  } finally {
    ui.embedButton.disabled = false;
  }
}

function build(root) {
  ui.status = h('p', { class: 'hint', 'data-testid': 'model-status', role: 'status', 'aria-live': 'polite', hidden: true });
  ui.error = h('p', { class: 'error', 'data-testid': 'model-error', role: 'alert', hidden: true });
  ui.progress = h('progress', { 'data-testid': 'hub-progress', max: 1, value: 0, hidden: true, 'aria-label': 'Download progress' });
  ui.plan = h('div', {});
  ui.loaded = h('div', { class: 'choices', 'data-testid': 'loaded-models' });
  ui.filesInput = h('input', { type: 'file', multiple: true, 'data-testid': 'model-files' });
  ui.folderInput = h('input', { type: 'file', multiple: true, webkitdirectory: true, 'data-testid': 'model-folder' });
  ui.hubInput = h('input', { type: 'text', id: 'hub-id', 'data-testid': 'hub-id', placeholder: 'owner/name@revision', spellcheck: 'false', autocomplete: 'off' });
  ui.hubButton = h('button', { type: 'button', 'data-testid': 'hub-load' }, 'Load');
  ui.cached = h('ul', { 'data-testid': 'cached-models' });
  ui.cachedBox = h('div', { hidden: true }, h('p', { class: 'hint' }, 'Kept in this browser (work offline):'), ui.cached);
  ui.embedModel = h('select', { 'data-testid': 'embed-model', 'aria-label': 'Model' });
  ui.embedInput = h('textarea', { 'data-testid': 'embed-input', rows: 3, 'aria-label': 'Sequences, one per line', placeholder: 'ACGT… one sequence per line' });
  ui.embedBackend = h('select', { id: 'embed-backend', 'data-testid': 'embed-backend' },
    h('option', { value: 'auto' }, 'Automatic'), h('option', { value: 'webgpu' }, 'WebGPU'), h('option', { value: 'cpu' }, 'CPU'));
  ui.embedWeights = h('select', { id: 'embed-weights', 'data-testid': 'embed-weights' },
    h('option', { value: 'auto' }, 'f32 if it fits, else half'), h('option', { value: 'half' }, 'half precision'),
    h('option', { value: 'f32' }, 'f32'));
  ui.embedButton = h('button', { type: 'button', 'data-testid': 'embed-run' }, 'Embed');
  ui.embedOut = h('p', { class: 'hint', 'data-testid': 'embed-summary', hidden: true });
  ui.embedJson = h('pre', { class: 'embed-json', 'data-testid': 'embed-json' });
  ui.embedTool = h('details', { hidden: true, 'data-testid': 'embed-tool' },
    h('summary', {}, 'Embed sequences with a loaded model'),
    ui.embedModel, ui.embedInput,
    h('label', { for: 'embed-backend' }, 'Compute ', ui.embedBackend), ' ',
    h('label', { for: 'embed-weights' }, 'Weights ', ui.embedWeights), ' ', ui.embedButton,
    ui.embedOut, ui.embedJson);
  const drop = h('div', { class: 'drop', 'data-testid': 'model-drop' },
    h('p', { class: 'drop-title' }, 'Drop a model folder or its files (config.json, weights, tokenizer files)'),
    h('div', { class: 'pickers' },
      h('label', { class: 'picker' }, 'Choose files', ui.filesInput),
      h('label', { class: 'picker' }, 'Choose a folder', ui.folderInput)));
  root.append(
    h('h2', { id: 'h-foundation' }, 'Foundation models'),
    h('p', { class: 'hint' }, 'Load a Hugging Face model by id or from its files; it runs in this tab on WebGPU when there is an adapter, else on the CPU. Downloads go to the hub only and are kept in this browser.'),
    ui.loaded,
    drop,
    h('div', { class: 'hub-row' }, h('label', { for: 'hub-id' }, 'Hub id '), ui.hubInput, ui.hubButton),
    ui.plan, ui.progress, ui.status, ui.error, ui.cachedBox, ui.embedTool,
    h('details', {}, h('summary', {}, 'Known models and their published GENEB profiles'), knownTable(),
      h('p', { class: 'credit' }, 'Profiles: full-data MCC from the GENEB leaderboard, by Daria Ledneva, Mikhail Nuridinov and Denis Kuznetsov (Apache-2.0); please cite “GENEB: Why Genomic Models Are Hard to Compare”, arXiv:2606.04525.')));

  const folderOf = (list) => (list[0]?.webkitRelativePath || '').split('/')[0] || '';
  ui.filesInput.addEventListener('change', () => { onModelFiles([...ui.filesInput.files], ''); ui.filesInput.value = ''; });
  ui.folderInput.addEventListener('change', () => {
    const list = [...ui.folderInput.files];
    onModelFiles(list, folderOf(list));
    ui.folderInput.value = '';
  });
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    e.stopPropagation();
    drop.classList.remove('over');
    const { files, folder } = await droppedFiles(e.dataTransfer);
    onModelFiles(files, folder);
  });
  ui.hubButton.addEventListener('click', () => onHubLoad(ui.hubInput.value));
  ui.hubInput.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); onHubLoad(ui.hubInput.value); } });
  root.addEventListener('click', (e) => {
    const id = e.target?.dataset?.hubId;
    if (id) { ui.hubInput.value = id; onHubLoad(id); }
  });
  ui.embedButton.addEventListener('click', onEmbedClick);
  ui.loaded.addEventListener('change', () => ctx.onChange());
}

/** The files of a drop (a folder is read one level deep: model folders are flat). */
async function droppedFiles(dataTransfer) {
  const entries = [...(dataTransfer?.items ?? [])].map((i) => i.webkitGetAsEntry?.()).filter(Boolean);
  const folder = entries.length === 1 && entries[0].isDirectory ? entries[0] : null;
  if (!folder) return { files: [...(dataTransfer?.files ?? [])], folder: '' };
  const children = await new Promise((resolve, reject) => folder.createReader().readEntries(resolve, reject));
  const files = await Promise.all(children.filter((c) => c.isFile).map((c) => new Promise((resolve, reject) => c.file(resolve, reject))));
  return { files, folder: folder.name };
}

/**
 * Mount the panel into `root`. `onChange()` is called when the set of loaded models changes (the
 * page re-checks its Run button).
 */
export function initModels(root, { onChange }) {
  ctx = { onChange };
  panel = root;
  build(root);
  refreshCached();
}

/** The known models, the tab's weights limit and the model-file names from the worker's ready message. */
export function setKnownModels({ known: list, tabWeightsLimit: limit, modelFiles: names }) {
  known = Array.isArray(list) ? list : [];
  tabWeightsLimit = Number.isFinite(limit) ? limit : null;
  modelFileNames = names ?? null;
  const details = panel?.querySelector('[data-testid="known-models"]')?.closest('.table-wrap');
  if (details) details.replaceWith(knownTable());
}

/** The loaded models ticked for the next run. */
export function selectedHubModels() {
  if (!panel) return [];
  return [...panel.querySelectorAll('input[name=hf-model]:checked')].map((b) => runSpec(loaded.get(b.value)));
}

/** For a run request: each `hf:` spec among `specs` whose model runs every layer → "all". */
export function modelLayersFor(specs) {
  return Object.fromEntries(specs.filter((spec) => loaded.get(spec)?.layer.mode === 'all').map((spec) => [spec, 'all']));
}

/** For a run request: the files and the load key of each `hf:` spec among `specs`. */
export function modelFilesFor(specs) {
  const modelFiles = {};
  const modelKeys = {};
  for (const spec of specs) {
    const model = loadedFor(spec);
    if (model) { modelFiles[spec] = model.files; modelKeys[spec] = model.key; }
  }
  return { modelFiles, modelKeys };
}
