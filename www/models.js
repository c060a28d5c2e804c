// Foundation models in the page: the known-models table (with the GENEB authors' published
// profiles), loading a model from dropped files or by Hugging Face hub id (streamed download with
// byte progress, sha256-verified, kept in the Cache API for offline reuse), and a small "embed
// sequences" tool that runs the loaded model in the worker.
//
// The hub endpoint is https://huggingface.co. Tests (and nobody else) point it at a local server
// with `?hub=http://127.0.0.1:PORT` or localStorage `geneb.hub`; the page's CSP only lets the page
// reach the real hub's hosts, so another endpoint works only where the server serving the page
// adds it to the CSP (scripts/serve.mjs `hubOrigin`, used by the browser tests).

const DEFAULT_HUB = 'https://huggingface.co';
const CACHE_NAME = 'geneb-models-v1';
/** The Cache API entry listing a downloaded model's files (a key no hub file can have). */
const MANIFEST = '.geneb-manifest.json';

const CONFIG = 'config.json';
const WEIGHTS = ['model.safetensors', 'pytorch_model.bin'];
const TOKENIZER_FILES = ['tokenizer.json', 'vocab.txt', 'tokenizer_config.json', 'special_tokens_map.json'];
/** What a Hugging Face model folder holds that geneb reads; anything else dropped is ignored. */
const MODEL_FILES = new Set([CONFIG, ...WEIGHTS, ...TOKENIZER_FILES]);

const HUB_ID = /^([A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*)(?:@([\w.\-/]+))?$/;
const SHA256 = /^[0-9a-f]{64}$/;

const loaded = new Map(); // spec → {spec, label, source, files: [{name, bytes}], checked}
let ctx = null; // {getWorker, onChange}
let known = [];
let nextRequestId = 1;
let panel = null;

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v == null) continue;
    node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c != null) node.append(c);
  return node;
}

function bytesText(n) {
  if (!Number.isFinite(n)) return 'unknown size';
  if (n < 1024) return `${n} B`;
  const units = ['kB', 'MB', 'GB'];
  let v = n;
  let u = -1;
  do { v /= 1024; u++; } while (v >= 1024 && u < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

function messageOf(err) {
  return (err && typeof err.message === 'string' && err.message) || String(err);
}

export function hubEndpoint() {
  const fromQuery = new URLSearchParams(location.search).get('hub');
  let stored = null;
  try { stored = localStorage.getItem('geneb.hub'); } catch { stored = null; }
  return (fromQuery || stored || DEFAULT_HUB).replace(/\/+$/, '');
}

/** `owner/name@rev` → {id, rev}; throws a message saying what a hub id looks like. */
export function parseHubId(text) {
  const m = HUB_ID.exec(String(text).trim().replace(/^hf:/, ''));
  if (!m) throw new Error(`'${text}' is not a hub id: write owner/name or owner/name@revision`);
  return { id: m[1], rev: m[2] || 'main' };
}

// ---------------------------------------------------------------------------------------------
// Hub download and cache

function fileUrl(endpoint, id, rev, file) {
  return `${endpoint}/${id}/resolve/${encodeURIComponent(rev)}/${file}`;
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** The sha256 a hub response vouches for: LFS files carry it as their (linked) ETag. */
function announcedSha256(response) {
  for (const name of ['x-linked-etag', 'etag']) {
    const value = (response.headers.get(name) || '').replace(/^W\//, '').replace(/"/g, '').toLowerCase();
    if (SHA256.test(value)) return value;
  }
  return null;
}

/** HEAD one file: {name, size, sha256} when it exists, null on 404. */
async function probe(endpoint, id, rev, name) {
  let response;
  try {
    response = await fetch(fileUrl(endpoint, id, rev, name), { method: 'HEAD', cache: 'no-store' });
  } catch (err) {
    throw new Error(`cannot reach ${endpoint} (${messageOf(err)}): check the connection, or load the model from files`);
  }
  if (response.status === 404) return null;
  if (response.status === 401 || response.status === 403) {
    throw new Error(`${id}@${rev}: ${name} needs a login (gated or private model): download it yourself and load the files`);
  }
  if (!response.ok) throw new Error(`${id}@${rev}: ${name}: the hub answered ${response.status}`);
  const size = Number(response.headers.get('x-linked-size') || response.headers.get('content-length'));
  return { name, size: Number.isFinite(size) ? size : NaN, sha256: announcedSha256(response) };
}

/** What loading `id@rev` will download: config, the tokenizer files it has, one weights file. */
async function plan(endpoint, id, rev) {
  const config = await probe(endpoint, id, rev, CONFIG);
  if (!config) throw new Error(`${id}@${rev}: no config.json on ${endpoint}: check the id and the revision`);
  const files = [config];
  for (const name of TOKENIZER_FILES) {
    const f = await probe(endpoint, id, rev, name);
    if (f) files.push(f);
  }
  let weights = null;
  for (const name of WEIGHTS) {
    weights = await probe(endpoint, id, rev, name);
    if (weights) break;
  }
  if (!weights) {
    throw new Error(`${id}@${rev}: no model.safetensors or pytorch_model.bin (sharded checkpoints are not supported yet)`);
  }
  files.push(weights);
  return files;
}

/** GET one file with streamed reads, reporting bytes as they arrive; verifies the sha256. */
async function download(endpoint, id, rev, file, onBytes) {
  const response = await fetch(fileUrl(endpoint, id, rev, file.name), { cache: 'no-store' });
  if (!response.ok || !response.body) throw new Error(`${id}@${rev}: ${file.name}: the hub answered ${response.status}`);
  const reader = response.body.getReader();
  const chunks = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    received += value.length;
    onBytes(value.length);
  }
  const bytes = new Uint8Array(received);
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  if (Number.isFinite(file.size) && file.size !== received) {
    throw new Error(`${id}@${rev}: ${file.name}: got ${received} bytes, the hub announced ${file.size}: the download was cut; try again`);
  }
  const sha256 = await sha256Hex(bytes);
  const expected = file.sha256 || announcedSha256(response);
  if (expected && expected !== sha256) {
    throw new Error(`${id}@${rev}: ${file.name}: sha256 ${sha256} does not match the hub's ${expected}: the download is corrupt; try again`);
  }
  return { name: file.name, bytes, sha256, verified: Boolean(expected) };
}

async function openCache() {
  if (!('caches' in self)) return null; // an insecure context has no Cache API: nothing is kept
  return caches.open(CACHE_NAME);
}

/** The files of a cached model, checked against the sha256 recorded when it was stored. */
async function fromCache(endpoint, id, rev) {
  const cache = await openCache();
  if (!cache) return null;
  const manifestResponse = await cache.match(fileUrl(endpoint, id, rev, MANIFEST));
  if (!manifestResponse) return null;
  const manifest = await manifestResponse.json();
  const files = [];
  for (const entry of manifest.files) {
    const r = await cache.match(fileUrl(endpoint, id, rev, entry.name));
    if (!r) return null;
    const bytes = new Uint8Array(await r.arrayBuffer());
    if ((await sha256Hex(bytes)) !== entry.sha256) {
      await cache.delete(fileUrl(endpoint, id, rev, MANIFEST));
      throw new Error(`${id}@${rev}: the cached ${entry.name} is damaged; it was removed, load the model again`);
    }
    files.push({ name: entry.name, bytes });
  }
  return { files, manifest };
}

async function store(endpoint, id, rev, files) {
  const cache = await openCache();
  if (!cache) return false;
  for (const f of files) {
    await cache.put(fileUrl(endpoint, id, rev, f.name), new Response(f.bytes, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(f.bytes.length) },
    }));
  }
  // Written last: a manifest means every file it names is in the cache.
  const manifest = {
    id, rev, endpoint, storedAt: new Date().toISOString(),
    files: files.map((f) => ({ name: f.name, size: f.bytes.length, sha256: f.sha256, verified: f.verified })),
  };
  await cache.put(fileUrl(endpoint, id, rev, MANIFEST), new Response(JSON.stringify(manifest), {
    headers: { 'Content-Type': 'application/json' },
  }));
  return true;
}

/** The models kept in the Cache API for this endpoint: [{id, rev, size}]. */
async function cachedModels(endpoint) {
  const cache = await openCache();
  if (!cache) return [];
  const out = [];
  for (const request of await cache.keys()) {
    if (!request.url.startsWith(`${endpoint}/`) || !request.url.endsWith(`/${MANIFEST}`)) continue;
    const r = await cache.match(request);
    try {
      const m = await r.json();
      out.push({ id: m.id, rev: m.rev, size: m.files.reduce((s, f) => s + f.size, 0) });
    } catch { /* a damaged manifest: fromCache reports it when used */ }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Talking to the worker

/** Embed `sequences` with a loaded model in the worker: {dim, values, backend}. */
export function embedInWorker(spec, sequences, { cpu = false } = {}) {
  const model = loaded.get(spec);
  if (!model) return Promise.reject(new Error(`no model ${spec} is loaded`));
  const worker = ctx.getWorker();
  if (!worker) return Promise.reject(new Error('the compute worker is not running'));
  const id = `embed-${nextRequestId++}`;
  return new Promise((resolve, reject) => {
    const onMessage = (e) => {
      const msg = e.data;
      if (msg?.id !== id) return;
      worker.removeEventListener('message', onMessage);
      worker.removeEventListener('error', onError);
      if (msg.type === 'embedded') resolve(msg);
      else reject(new Error(msg.message));
    };
    const onError = (e) => {
      worker.removeEventListener('message', onMessage);
      reject(new Error(`the compute worker stopped: ${e.message || 'unknown error'}`));
    };
    worker.addEventListener('message', onMessage);
    worker.addEventListener('error', onError);
    // Copies, not transfers: the model stays loaded for the next run.
    worker.postMessage({ type: 'embed', id, model: spec, sequences, modelFiles: model.files, forceBackend: cpu ? 'cpu' : undefined });
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

function knownTable() {
  const categories = [...new Set(known.flatMap((m) => Object.keys(m.published?.categoryMcc ?? {})))].sort();
  const head = h('tr', {},
    h('th', { scope: 'col' }, 'Model (hub id)'), h('th', { scope: 'col' }, 'Parameters'),
    h('th', { scope: 'col' }, 'Context'), h('th', { scope: 'col' }, 'Tokenizer'),
    h('th', { scope: 'col' }, 'Runs in geneb'), h('th', { scope: 'col' }, 'GENEB macro MCC'),
    categories.map((c) => h('th', { scope: 'col', class: 'cat' }, c)));
  const rows = known.map((m) => {
    const useButton = m.supported
      ? h('button', { type: 'button', class: 'linkish', 'data-hub-id': m.hubId }, 'load')
      : null;
    return h('tr', { 'data-testid': 'known-model' },
      h('th', { scope: 'row' }, h('span', { class: 'model-name' }, m.display), h('br'), h('code', {}, m.hubId)),
      h('td', { class: 'num' }, m.parameters ? `${(m.parameters / 1e6).toFixed(m.parameters < 1e7 ? 2 : 0)} M` : '—'),
      h('td', { class: 'num' }, `${Number(m.context).toLocaleString('en')} ${m.contextUnit === 'tokens' ? 'tokens' : 'nt'}`),
      h('td', {}, m.tokenizer),
      h('td', {}, m.supported ? 'yes ' : `not yet (${m.architecture})`, useButton),
      h('td', { class: 'num' }, m.published ? m.published.macroMcc.toFixed(3) : '—'),
      categories.map((c) => {
        const v = m.published?.categoryMcc?.[c];
        return h('td', { class: 'num cat' }, v == null ? '—' : v.toFixed(2));
      }));
  });
  return h('div', { class: 'table-wrap' },
    h('table', { class: 'known-models', 'data-testid': 'known-models' }, h('thead', {}, head), h('tbody', {}, rows)));
}

function renderLoaded() {
  ui.loaded.replaceChildren(...[...loaded.values()].map((m) => {
    const id = `hf-${m.spec.replace(/[^a-z0-9]+/gi, '-')}`;
    const size = m.files.reduce((s, f) => s + f.bytes.length, 0);
    return h('div', { class: 'choice model-choice', 'data-testid': 'loaded-model' },
      h('input', { type: 'checkbox', name: 'hf-model', value: m.spec, id, 'data-testid': id, checked: true }),
      h('label', { for: id }, h('span', { class: 'model-name' }, m.label), ' ', h('code', {}, m.spec)),
      h('p', { class: 'model-desc' }, `${m.files.length} files, ${bytesText(size)}, ${m.source}`));
  }));
  ui.embedModel.replaceChildren(...[...loaded.keys()].map((spec) => h('option', { value: spec }, spec)));
  ui.embedTool.hidden = loaded.size === 0;
  ctx.onChange();
}

/** Try the model on one short sequence, so a bad model is reported now rather than mid-run. */
async function addModel(model) {
  say(ui.status, `checking ${model.spec}…`);
  loaded.set(model.spec, model);
  try {
    const r = await embedInWorker(model.spec, ['ACGTACGTAC']);
    say(ui.status, `${model.spec} is ready: ${r.dim}-dimensional embeddings, runs on ${r.backend.kind === 'cpu' ? 'the CPU' : `WebGPU (${r.backend.adapter})`}.`);
  } catch (err) {
    loaded.delete(model.spec);
    say(ui.status, '');
    say(ui.error, `${model.spec} cannot be used: ${messageOf(err)}`, { error: true });
    return;
  }
  renderLoaded();
}

async function onModelFiles(list, folderName) {
  say(ui.error, '');
  const byName = new Map();
  const ignored = [];
  for (const file of list) {
    const base = file.name.split('/').pop();
    if (MODEL_FILES.has(base)) byName.set(base, file);
    else ignored.push(base);
  }
  const missing = [];
  if (!byName.has(CONFIG)) missing.push(CONFIG);
  if (!WEIGHTS.some((w) => byName.has(w))) missing.push(`weights (${WEIGHTS.join(' or ')})`);
  if (missing.length) {
    say(ui.error, `The model files lack ${missing.join(' and ')}: drop the whole model folder or all its files.`, { error: true });
    return;
  }
  const files = [];
  for (const [name, file] of byName) files.push({ name, bytes: new Uint8Array(await file.arrayBuffer()) });
  const label = folderName || 'dropped model';
  const spec = `hf:${label.replace(/[^\w.-]+/g, '-')}`;
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
    const cached = await fromCache(endpoint, id, rev);
    if (cached) {
      await addModel({ spec, label: id, source: `from this browser's cache (stored ${cached.manifest.storedAt})`, files: cached.files });
      return;
    }
    say(ui.status, `asking ${endpoint} what ${id}@${rev} holds…`);
    const files = await plan(endpoint, id, rev);
    const total = files.reduce((s, f) => s + (Number.isFinite(f.size) ? f.size : 0), 0);
    const agreed = await confirmDownload(id, rev, endpoint, files, total);
    if (!agreed) { say(ui.status, 'download cancelled'); return; }
    let done = 0;
    ui.progress.hidden = false;
    ui.progress.max = total || 1;
    const got = [];
    for (const f of files) {
      got.push(await download(endpoint, id, rev, f, (n) => {
        done += n;
        ui.progress.value = done;
        say(ui.status, `downloading ${f.name}: ${bytesText(done)} of ${bytesText(total)}`);
      }));
    }
    const kept = await store(endpoint, id, rev, got);
    const unverified = got.filter((f) => !f.verified).map((f) => f.name);
    const verifiedNote = unverified.length ? `; no sha256 from the hub for ${unverified.join(', ')}` : '; every file sha256-verified';
    await addModel({
      spec, label: id,
      source: `downloaded from ${endpoint}${kept ? ', kept for offline use' : ''}${verifiedNote}`,
      files: got.map(({ name, bytes }) => ({ name, bytes })),
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

/** Say what will be fetched and how big, and wait for the user's answer. */
function confirmDownload(id, rev, endpoint, files, total) {
  return new Promise((resolve) => {
    const yes = h('button', { type: 'button', class: 'primary', 'data-testid': 'hub-confirm' }, `Download ${bytesText(total)}`);
    const no = h('button', { type: 'button', 'data-testid': 'hub-decline' }, 'Cancel');
    const box = h('div', { class: 'confirm', 'data-testid': 'hub-plan', role: 'group', 'aria-label': 'Download plan' },
      h('p', {}, `${id}@${rev} from ${endpoint}: ${files.length} files, ${bytesText(total)} in all.`),
      h('ul', {}, files.map((f) => h('li', {}, h('code', {}, f.name), ` ${bytesText(f.size)}`))),
      h('div', { class: 'buttons' }, yes, no));
    const finish = (answer) => { box.remove(); resolve(answer); };
    yes.addEventListener('click', () => finish(true));
    no.addEventListener('click', () => finish(false));
    ui.plan.replaceChildren(box);
    say(ui.status, 'confirm the download');
    yes.focus();
  });
}

async function refreshCached() {
  const endpoint = hubEndpoint();
  let list = [];
  try { list = await cachedModels(endpoint); } catch { list = []; }
  ui.cached.replaceChildren(...list.map((m) => h('li', {},
    h('button', { type: 'button', class: 'linkish', 'data-hub-id': `${m.id}@${m.rev}`, 'data-testid': 'cached-model' }, `${m.id}@${m.rev}`),
    ` ${bytesText(m.size)}`)));
  ui.cachedBox.hidden = list.length === 0;
}

async function onEmbedClick() {
  const spec = ui.embedModel.value;
  const sequences = ui.embedInput.value.split(/\s+/).filter(Boolean);
  say(ui.embedOut, 'embedding…');
  ui.embedJson.textContent = '';
  ui.embedButton.disabled = true;
  try {
    const r = await embedInWorker(spec, sequences, { cpu: ui.embedCpu.checked });
    const where = r.backend.kind === 'cpu' ? 'the CPU' : `WebGPU (${r.backend.adapter})`;
    say(ui.embedOut, `${sequences.length} × ${r.dim} embeddings, computed on ${where}.`);
    ui.embedJson.textContent = JSON.stringify({ model: spec, backend: r.backend, dim: r.dim, values: Array.from(r.values) });
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
  ui.embedCpu = h('input', { type: 'checkbox', id: 'embed-cpu', 'data-testid': 'embed-cpu' });
  ui.embedButton = h('button', { type: 'button', 'data-testid': 'embed-run' }, 'Embed');
  ui.embedOut = h('p', { class: 'hint', 'data-testid': 'embed-summary', hidden: true });
  ui.embedJson = h('pre', { class: 'embed-json', 'data-testid': 'embed-json' });
  ui.embedTool = h('details', { hidden: true, 'data-testid': 'embed-tool' },
    h('summary', {}, 'Embed sequences with a loaded model'),
    ui.embedModel, ui.embedInput,
    h('label', { for: 'embed-cpu' }, ui.embedCpu, ' CPU only'), ' ', ui.embedButton,
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
 * Mount the panel into `root`. `getWorker()` returns the page's current worker; `onChange()` is
 * called when the set of loaded models changes (the page re-checks its Run button).
 */
export function initModels(root, { getWorker, onChange }) {
  ctx = { getWorker, onChange };
  panel = root;
  build(root);
  refreshCached();
}

/** The known models from the worker's ready message. */
export function setKnownModels(list) {
  known = Array.isArray(list) ? list : [];
  const details = panel?.querySelector('[data-testid="known-models"]')?.closest('.table-wrap');
  if (details) details.replaceWith(knownTable());
}

/** The loaded models ticked for the next run. */
export function selectedHubModels() {
  if (!panel) return [];
  return [...panel.querySelectorAll('input[name=hf-model]:checked')].map((b) => b.value);
}

/** `modelFiles` for a run request: the files of each `hf:` spec among `specs`. */
export function modelFilesFor(specs) {
  const out = {};
  for (const spec of specs) if (loaded.has(spec)) out[spec] = loaded.get(spec).files;
  return out;
}
