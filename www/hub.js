// Downloads from the Hugging Face hub, shared by the model panel (models.js) and the GENEB task
// picker (tasks.js): a HEAD plan of what will be fetched and how big, a confirmation box, streamed
// GETs with byte progress, sha256 verification, and the Cache API for offline reuse.
//
// A "bundle" is a set of files under one resolve URL prefix, fetched and cached together: a model
// (`{endpoint}/{id}/resolve/{rev}/`) or one GENEB task's tables
// (`{endpoint}/datasets/{id}/resolve/{rev}/tasks/{task}/`). Its cache manifest lists its files
// with their sha256 and is written last, so a manifest means every file it names is stored.
//
// The hub endpoint is https://huggingface.co. Tests (and nobody else) point it at a local server
// with `?hub=http://127.0.0.1:PORT` or localStorage `geneb.hub`; the page's CSP only lets the page
// reach the real hub's hosts, so another endpoint works only where the server serving the page
// adds it to the CSP (scripts/serve.mjs `hubOrigin`, used by the browser tests).

import { bytesText, h, messageOf } from './dom.js';
import { Sha256, sha256OfBlob } from './sha256.js';
import { askToKeep } from './storage.js';

const DEFAULT_HUB = 'https://huggingface.co';
/** The Cache API entry listing a bundle's files (a key no hub file can have). */
const MANIFEST = '.geneb-manifest.json';
const SHA256 = /^[0-9a-f]{64}$/;

export function hubEndpoint() {
  const fromQuery = new URLSearchParams(location.search).get('hub');
  let stored = null;
  try { stored = localStorage.getItem('geneb.hub'); } catch { stored = null; }
  return (fromQuery || stored || DEFAULT_HUB).replace(/\/+$/, '');
}

/**
 * A bundle: `repo` is `owner/name` for a model or `datasets/owner/name` for a dataset, `dir` an
 * optional folder inside it; `label` names it in messages.
 */
export function bundle(endpoint, repo, rev, { dir = '', label = `${repo}@${rev}` } = {}) {
  const folder = dir ? `${dir.replace(/\/+$/, '')}/` : '';
  return { endpoint, label, base: `${endpoint}/${repo}/resolve/${encodeURIComponent(rev)}/${folder}` };
}

/**
 * Downloaded chunks gathered into Blobs of about this size: the browser keeps Blob data outside
 * the page's heap (on disk when large), so a 2 GB model never sits in the page's memory.
 */
const BLOB_PART_BYTES = 32 << 20;

/** The sha256 a hub response vouches for: LFS files carry it as their (linked) ETag. */
function announcedSha256(response) {
  for (const name of ['x-linked-etag', 'etag']) {
    const value = (response.headers.get(name) || '').replace(/^W\//, '').replace(/"/g, '').toLowerCase();
    if (SHA256.test(value)) return value;
  }
  return null;
}

/** HEAD one file of a bundle: {name, size, sha256} when it exists, null on 404. */
export async function probe(b, name) {
  let response;
  try {
    response = await fetch(b.base + name, { method: 'HEAD', cache: 'no-store' });
  } catch (err) {
    throw new Error(`cannot reach ${b.endpoint} (${messageOf(err)}): check the connection, or load the files yourself`);
  }
  if (response.status === 404) return null;
  if (response.status === 401 || response.status === 403) {
    throw new Error(`${b.label}: ${name} needs a login (gated or private): download it yourself and load the files`);
  }
  if (!response.ok) throw new Error(`${b.label}: ${name}: the hub answered ${response.status}`);
  const size = Number(response.headers.get('x-linked-size') || response.headers.get('content-length'));
  return { name, size: Number.isFinite(size) ? size : NaN, sha256: announcedSha256(response) };
}

/**
 * GET one file with streamed reads, reporting bytes as they arrive, hashing them on the way;
 * verifies the size and the sha256. The file is a Blob until the whole bundle is in (`store`
 * writes it), so a cut connection or a closed tab leaves nothing a later visit could take for it.
 */
export async function download(b, file, onBytes) {
  const cut = (received, err) => new Error(`${b.label}: ${file.name}: the download was cut after ${bytesText(received)}`
    + `${Number.isFinite(file.size) ? ` of ${bytesText(file.size)}` : ''} (${messageOf(err)}); nothing was kept: try again`);
  let response;
  try {
    response = await fetch(b.base + file.name, { cache: 'no-store' });
  } catch (err) {
    throw cut(0, err);
  }
  if (!response.ok || !response.body) throw new Error(`${b.label}: ${file.name}: the hub answered ${response.status}`);
  const reader = response.body.getReader();
  const hasher = new Sha256();
  const parts = [];
  let chunks = [];
  let pending = 0;
  let received = 0;
  for (;;) {
    let next;
    try {
      next = await reader.read();
    } catch (err) {
      throw cut(received, err);
    }
    const { done, value } = next;
    if (done) break;
    hasher.update(value);
    chunks.push(value);
    pending += value.length;
    if (pending >= BLOB_PART_BYTES) {
      parts.push(new Blob(chunks));
      chunks = [];
      pending = 0;
    }
    received += value.length;
    onBytes(value.length);
  }
  const blob = new Blob([...parts, ...chunks]);
  if (Number.isFinite(file.size) && file.size !== received) {
    throw new Error(`${b.label}: ${file.name}: got ${received} bytes, the hub announced ${file.size}: the download was cut; try again`);
  }
  const sha256 = hasher.hex();
  const expected = file.sha256 || announcedSha256(response);
  if (expected && expected !== sha256) {
    throw new Error(`${b.label}: ${file.name}: sha256 ${sha256} does not match the hub's ${expected}: the download is corrupt; try again`);
  }
  return { name: file.name, blob, sha256, verified: Boolean(expected) };
}

/** The bytes a plan announces (files of unknown size count 0). */
export function plannedBytes(files) {
  return files.reduce((s, f) => s + (Number.isFinite(f.size) ? f.size : 0), 0);
}

/** Download every planned file of a bundle in turn; `onProgress(doneBytes, fileName)`. */
export async function downloadAll(b, files, onProgress) {
  let done = 0;
  const got = [];
  for (const f of files) {
    got.push(await download(b, f, (n) => { done += n; onProgress(done, f.name); }));
  }
  return got;
}

/** How far the hub vouched for downloaded files (small git files come with no sha256). */
export function verificationNote(got) {
  const unverified = got.filter((f) => !f.verified).map((f) => f.name);
  return unverified.length ? `no sha256 from the hub for ${unverified.join(', ')}` : 'every file sha256-verified';
}

async function openCache(cacheName) {
  if (!('caches' in self)) return null; // an insecure context has no Cache API: nothing is kept
  return caches.open(cacheName);
}

/** A cached bundle's files, checked against the sha256 recorded when it was stored; null if absent. */
export async function fromCache(cacheName, b) {
  const cache = await openCache(cacheName);
  if (!cache) return null;
  const manifestResponse = await cache.match(b.base + MANIFEST);
  if (!manifestResponse) {
    // Files without a manifest are what a tab closed while storing leaves: never used, so freed.
    for (const request of await cache.keys()) if (request.url.startsWith(b.base)) await cache.delete(request);
    return null;
  }
  const manifest = await manifestResponse.json();
  const files = [];
  for (const entry of manifest.files) {
    const r = await cache.match(b.base + entry.name);
    if (!r) return null;
    // A Blob backed by the cache's storage, hashed in slices: never whole in the page's memory.
    const blob = await r.blob();
    if ((await sha256OfBlob(blob)) !== entry.sha256) {
      await cache.delete(b.base + MANIFEST);
      throw new Error(`${b.label}: the cached ${entry.name} is damaged; it was removed, load it again`);
    }
    files.push({ name: entry.name, blob });
  }
  return { files, manifest };
}

/**
 * Keep downloaded files; `about` (e.g. {id, rev}) goes into the manifest. False without a Cache
 * API. Complete, then commit: the manifest goes in last, and `fromCache` trusts nothing without
 * one, so a tab closed halfway through leaves files no visit will use.
 */
export async function store(cacheName, b, files, about = {}) {
  const cache = await openCache(cacheName);
  if (!cache) return false;
  for (const f of files) {
    await cache.put(b.base + f.name, new Response(f.blob, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(f.blob.size) },
    }));
  }
  const manifest = {
    ...about, endpoint: b.endpoint, storedAt: new Date().toISOString(),
    files: files.map((f) => ({ name: f.name, size: f.blob.size, sha256: f.sha256, verified: f.verified })),
  };
  await cache.put(b.base + MANIFEST, new Response(JSON.stringify(manifest), {
    headers: { 'Content-Type': 'application/json' },
  }));
  await askToKeep(); // a cached model or task should outlive a full disk (www/storage.js)
  return true;
}

/** The manifests of the bundles kept under `endpoint`, each with its total `size`. */
export async function cachedManifests(cacheName, endpoint) {
  const cache = await openCache(cacheName);
  if (!cache) return [];
  const out = [];
  for (const request of await cache.keys()) {
    if (!request.url.startsWith(`${endpoint}/`) || !request.url.endsWith(`/${MANIFEST}`)) continue;
    const r = await cache.match(request);
    try {
      const m = await r.json();
      out.push({ ...m, size: m.files.reduce((s, f) => s + f.size, 0) });
    } catch { /* a damaged manifest: fromCache reports it when used */ }
  }
  return out;
}

/**
 * Say what will be fetched and how big in `container`, and resolve to the user's answer.
 * `files` are [{name, size}]; `warning` (optional) is shown above the buttons.
 */
export function confirmPlan(container, { summary, files, total, warning = '' }) {
  return new Promise((resolve) => {
    const yes = h('button', { type: 'button', class: 'primary', 'data-testid': 'hub-confirm' }, `Download ${bytesText(total)}`);
    const no = h('button', { type: 'button', 'data-testid': 'hub-decline' }, 'Cancel');
    const box = h('div', { class: 'confirm', 'data-testid': 'hub-plan', role: 'group', 'aria-label': 'Download plan' },
      h('p', {}, summary),
      h('ul', {}, files.map((f) => h('li', {}, h('code', {}, f.name), ` ${bytesText(f.size)}`))),
      warning ? h('p', { class: 'warning', 'data-testid': 'hub-plan-warning' }, warning) : null,
      h('div', { class: 'buttons' }, yes, no));
    const finish = (answer) => { box.remove(); resolve(answer); };
    yes.addEventListener('click', () => finish(true));
    no.addEventListener('click', () => finish(false));
    container.replaceChildren(box);
    yes.focus();
  });
}
