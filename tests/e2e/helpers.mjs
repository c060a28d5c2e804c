// Shared setup for the browser end-to-end tests: the local server on a free port, Debian's
// Chromium through playwright-core, a recorder that fails the test when any request goes
// anywhere but the local server (data: and blob: URLs excepted), and a local stand-in for the hub.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from '../../scripts/serve.mjs';

export const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/**
 * The native CLI the tests check the page against: GENEB_BIN, else the debug then release build
 * under CARGO_TARGET_DIR (when set) or the repo's target/. Undefined when none is built.
 */
export function nativeGeneb() {
  const targets = [process.env.CARGO_TARGET_DIR, join(REPO, 'target')].filter(Boolean);
  return [process.env.GENEB_BIN, ...targets.flatMap((t) => [join(t, 'debug', 'geneb'), join(t, 'release', 'geneb')])]
    .find((p) => p && existsSync(p));
}
export const FIXTURES = join(REPO, 'tests', 'e2e', 'fixtures');
export const ARTIFACTS = join(REPO, 'test-artifacts');
export const CHROMIUM = process.env.GENEB_CHROMIUM || '/usr/bin/chromium';

/** Generous: this may run on a slow 2-core machine with a software GPU (SwiftShader). */
export const LOAD_TIMEOUT = 120_000;
export const RUN_TIMEOUT = 600_000;

const BASE_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/**
 * Where the page's wasm comes from. Normally www/pkg/ (scripts/build-wasm.sh). For working on
 * the UI before the core builds, GENEB_E2E_PKG_DIR can point at another folder served as /pkg/.
 */
export function pkgMounts() {
  const dir = process.env.GENEB_E2E_PKG_DIR;
  if (dir) return [['/pkg/', resolve(dir)]];
  return [];
}

export function wasmBuilt() {
  if (process.env.GENEB_E2E_PKG_DIR) return existsSync(join(process.env.GENEB_E2E_PKG_DIR, 'geneb.js'));
  return existsSync(join(REPO, 'www', 'pkg', 'geneb.js')) && existsSync(join(REPO, 'www', 'pkg', 'geneb_bg.wasm'));
}

export const NO_WASM = 'www/pkg/ has no wasm build: run `bash scripts/build-wasm.sh` first (npm test does)';

export async function startTestServer() {
  return startServer({ port: 0, mounts: pkgMounts() });
}

/** Launch Chromium with (default) or without WebGPU; `jsFlags` go to V8 (`--js-flags`). */
export async function launchBrowser({ webgpu = true, jsFlags = '' } = {}) {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium or set GENEB_CHROMIUM`);
  }
  const args = [...BASE_ARGS, webgpu ? '--enable-unsafe-webgpu' : '--disable-webgpu', ...(jsFlags ? [`--js-flags=${jsFlags}`] : [])];
  return chromium.launch({ executablePath: CHROMIUM, args, headless: true });
}

/**
 * A fresh context and page on the app. `offsite` collects every request that did not go to the
 * local server; the route handler also aborts them, so nothing can leave even if one slips by.
 */
/**
 * `serviceWorkers: 'block'` is for tests that replace the page's files with `context.route`: a
 * service worker's own fetches would bypass those routes once it controls the page.
 * `abortOffsite: false` records offsite requests without routing every request: Chromium turns
 * its HTTP cache off while a route is set, so a test that measures transfer needs it on.
 */
export async function openApp(browser, server, {
  viewport = { width: 1280, height: 900 }, beforeGoto, serviceWorkers = 'allow', query = '', abortOffsite = true,
} = {}) {
  const context = await browser.newContext({ viewport, acceptDownloads: true, serviceWorkers });
  const origin = `http://127.0.0.1:${server.port}/`;
  const requests = [];
  const offsite = [];
  const allowed = (url) => url.startsWith(origin) || url.startsWith('data:') || url.startsWith('blob:');
  const record = (url) => {
    requests.push(url);
    if (!allowed(url)) offsite.push(url);
  };
  context.on('request', (req) => record(req.url()));
  if (abortOffsite) {
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (allowed(url)) return route.continue();
      record(url);
      return route.abort('blockedbyclient');
    });
  }
  const page = await context.newPage();
  page.on('request', (req) => record(req.url()));
  page.on('worker', (worker) => {
    record(worker.url());
  });
  const consoleErrors = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') consoleErrors.push(msg.text());
  });
  page.on('pageerror', (err) => consoleErrors.push(`pageerror: ${err.message}`));
  if (beforeGoto) await beforeGoto(context, origin);
  await page.goto(origin + query, { waitUntil: 'load' });
  return {
    context, page, requests, offsite, consoleErrors, origin,
    assertLocalOnly() {
      const unique = [...new Set(offsite)];
      if (unique.length) throw new Error(`requests left 127.0.0.1:\n  ${unique.join('\n  ')}`);
    },
    close: () => context.close(),
  };
}

export const byTestId = (page, id) => page.locator(`[data-testid="${id}"]`);

/** Wait until the status reads `ready` (the worker loaded the wasm and checked the GPU). */
export async function waitReady(page, timeout = LOAD_TIMEOUT) {
  await page.waitForFunction(() => {
    const s = document.querySelector('[data-testid="status"]');
    return s && (s.textContent === 'ready' || s.textContent === 'unavailable');
  }, null, { timeout, polling: 100 });
  const status = await byTestId(page, 'status').textContent();
  if (status !== 'ready') {
    const err = await byTestId(page, 'error').textContent();
    throw new Error(`the page did not become ready: ${status}: ${err}`);
  }
}

/** Wait for the end of a run: a new result, an error, or a return to ready after a cancel. */
export async function waitRunEnd(page, timeout = RUN_TIMEOUT) {
  await page.waitForFunction(() => {
    const s = document.querySelector('[data-testid="status"]');
    return s && s.textContent === 'ready';
  }, null, { timeout, polling: 250 });
}

/** Click a button and wait until the run it starts has ended. */
export async function runAndWait(page, testId, timeout = RUN_TIMEOUT) {
  await byTestId(page, testId).click();
  // The status leaves "ready" synchronously on click, so waiting for "ready" again is sound.
  await waitRunEnd(page, timeout);
}

/** The numbers shown in a profile table: [{model, cells: [text...]}]. */
export async function profileRows(page, regime) {
  // The leak-free rows under each model (www/profile-view.js) are not models.
  return page.locator(`[data-testid="profile-table-${regime}"] tbody tr:not(.leak-free)`).evaluateAll((trs) =>
    trs.map((tr) => ({
      model: tr.querySelector('th code')?.textContent ?? '',
      cells: [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()),
    })));
}

/** Pick task files with the page's file input and wait until it lists them. */
export async function addFiles(page, ...paths) {
  await byTestId(page, 'task-files').setInputFiles(paths);
  for (const p of paths) {
    const name = p.split('/').pop();
    await byTestId(page, 'file-list').locator('li', { hasText: name }).waitFor({ timeout: 10_000 });
  }
}

/** Click the results download; the parsed JSON (saved to `saveAs` too when given). */
export async function downloadResult(page, { saveAs } = {}) {
  const [download] = await Promise.all([
    page.waitForEvent('download', { timeout: 60_000 }),
    byTestId(page, 'download').click(),
  ]);
  assert.equal(download.suggestedFilename(), 'geneb-results.json');
  if (saveAs) await download.saveAs(saveAs);
  const path = saveAs ?? await download.path();
  return JSON.parse(await readFile(path, 'utf8'));
}

// --- foundation models through the page's own controls (www/models.js) ---

export async function folderFiles(dir) {
  const out = {};
  for (const name of await readdir(dir)) out[name] = await readFile(join(dir, name));
  return out;
}

/** The page's compute worker (www/worker.js), for reading its wasm memory. */
export async function wasmMemoryMib(page, origin) {
  const worker = page.workers().find((w) => new URL(w.url()).pathname.endsWith('/worker.js'));
  if (!worker) return null;
  try {
    // The worker imported this same URL: the module (and its instance) is the worker's, and
    // wasm-bindgen's init returns the live exports when the instance exists.
    // The worker runs the threaded build where the page is cross-origin isolated (www/worker.js).
    return await worker.evaluate(async (urls) => {
      const mod = await import(self.crossOriginIsolated ? urls.threads : urls.one);
      const exports = await mod.default();
      return exports.memory.buffer.byteLength / 2 ** 20;
    }, { one: new URL('pkg/geneb.js', origin).href, threads: new URL('pkg-threads/geneb.js', origin).href });
  } catch (err) {
    return `unreadable: ${err.message.split('\n')[0]}`;
  }
}

/** Drop files onto the model panel as a user's drag and drop would. */
export async function dropModel(page, files) {
  const payload = Object.entries(files).map(([name, bytes]) => ({ name, bytes: [...bytes] }));
  await page.evaluate((list) => {
    const dt = new DataTransfer();
    for (const f of list) dt.items.add(new File([new Uint8Array(f.bytes)], f.name));
    const zone = document.querySelector('[data-testid="model-drop"]');
    zone.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, payload);
}

export async function waitLoaded(page, spec) {
  await page.waitForFunction((s) => {
    const loaded = [...document.querySelectorAll('[data-testid="loaded-model"] input')].some((i) => i.value === s);
    const error = document.querySelector('[data-testid="model-error"]');
    return loaded || (error && !error.hidden && error.textContent);
  }, spec, { timeout: LOAD_TIMEOUT, polling: 100 });
  const error = byTestId(page, 'model-error');
  if (await error.isVisible()) throw new Error(`loading ${spec} failed: ${await error.textContent()}`);
}

export async function waitModelError(page) {
  await page.waitForFunction(() => {
    const e = document.querySelector('[data-testid="model-error"]');
    return e && !e.hidden && e.textContent;
  }, null, { timeout: LOAD_TIMEOUT, polling: 100 });
  return byTestId(page, 'model-error').textContent();
}

/** Embed `sequences` through the page's embed tool; returns the JSON it shows and its summary line. */
export async function embedThroughPage(page, spec, sequences, { cpu, weights = 'auto', timeout = LOAD_TIMEOUT * 2 }) {
  const tool = byTestId(page, 'embed-tool');
  if (!(await tool.evaluate((d) => d.open))) await tool.locator('summary').click();
  await byTestId(page, 'embed-model').selectOption(spec);
  await byTestId(page, 'embed-input').fill(sequences.join('\n'));
  await byTestId(page, 'embed-backend').selectOption(cpu ? 'cpu' : 'webgpu');
  await byTestId(page, 'embed-weights').selectOption(weights);
  await page.evaluate(() => { document.querySelector('[data-testid="embed-json"]').textContent = ''; });
  await byTestId(page, 'embed-run').click();
  await page.waitForFunction(() => {
    const out = document.querySelector('[data-testid="embed-json"]');
    const summary = document.querySelector('[data-testid="embed-summary"]');
    return out.textContent || summary.classList.contains('error');
  }, null, { timeout, polling: 100 });
  const json = await byTestId(page, 'embed-json').textContent();
  const summary = await byTestId(page, 'embed-summary').textContent();
  if (!json) throw new Error(`embedding failed: ${summary}`);
  return { ...JSON.parse(json), summary };
}

/** Run the chosen tasks and models; the page must show no error. */
export async function runWithoutError(page) {
  await runAndWait(page, 'run');
  assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
}

export function ensureArtifacts() {
  mkdirSync(ARTIFACTS, { recursive: true });
  return ARTIFACTS;
}

/** A cell's value: "0.612" or "0.400 ± 0.050" → 0.612 / 0.4; anything else → NaN. */
export function cellMean(text) {
  const m = /^(-?\d+\.\d{3})(\s*±\s*\d+\.\d{3})?$/.exec(text.trim());
  return m ? Number(m[1]) : NaN;
}

/**
 * A stand-in for the hub on 127.0.0.1: `/{repo}/resolve/{rev}/{file}` serves `files` (name →
 * bytes; `repo` is `owner/name` for a model, `datasets/owner/name` for a dataset). Like the real
 * hub, LFS files (those `lfs(name)` picks) answer 302 to a CDN URL with their sha256 as
 * X-Linked-Etag, and the CDN answers with the sha256 as ETag; small files carry a git blob id as
 * ETag (not a sha256, so not verifiable). `revisions` serves other files (rev → files) at other
 * revisions. `hits` records every request.
 */
export async function startFakeHub(files, { repo, rev, lfs, revisions = {} }) {
  const hits = [];
  const sha256 = (b) => createHash('sha256').update(b).digest('hex');
  const gitId = (b) => createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex');
  const cors = {
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Expose-Headers': 'ETag, X-Linked-Etag, X-Linked-Size, Content-Length',
  };
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    const send = (status, headers, body) => {
      res.writeHead(status, { ...cors, ...headers });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    // Revision `corrupt` serves the same files, but its CDN flips one byte, as a damaged
    // transfer would.
    const cdn = /^\/cdn\/(\w+)\/([0-9a-f]{64})$/.exec(req.url);
    if (cdn) {
      let body = Object.values(files).find((b) => sha256(b) === cdn[2]);
      if (!body) return send(404, {}, 'no such object');
      if (cdn[1] === 'corrupt') { body = Buffer.from(body); body[body.length >> 1] ^= 0xff; }
      return send(200, { ETag: `"${cdn[2]}"`, 'Content-Length': body.length, 'Content-Type': 'application/octet-stream' }, body);
    }
    const resolved = /^\/(.+)\/resolve\/([^/]+)\/(.+)$/.exec(req.url);
    const served = resolved && resolved[1] === repo && Object.hasOwn(revisions, resolved[2]) ? revisions[resolved[2]] : files;
    const known = resolved && resolved[1] === repo && [rev, 'corrupt', ...Object.keys(revisions)].includes(resolved[2]);
    const revision = known ? resolved[2] : null;
    const name = revision ? decodeURIComponent(resolved[3]) : null;
    const body = name != null && Object.hasOwn(served, name) ? served[name] : null;
    if (!body) return send(404, { 'Content-Type': 'text/plain' }, 'Entry not found');
    if (lfs(name)) {
      const sha = sha256(body);
      return send(302, { Location: `/cdn/${revision}/${sha}`, 'X-Linked-Etag': `"${sha}"`, 'X-Linked-Size': body.length, 'Content-Length': 0 }, '');
    }
    return send(200, { ETag: `"${gitId(body)}"`, 'Content-Length': body.length }, body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    origin,
    hits,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
  };
}

/**
 * The app on a page server that lets it reach `hub` (a local stand-in: startFakeHub), with
 * `?hub=` pointing at it; `close` closes the page, its server and the hub.
 */
export async function openWithHub(browser, hub) {
  const pageServer = await startServer({ port: 0, mounts: pkgMounts(), hubOrigin: hub.origin });
  const app = await openApp(browser, pageServer, {
    beforeGoto: (context) => context.route(`${hub.origin}/**`, (route) => route.continue()),
    query: `?hub=${encodeURIComponent(hub.origin)}`,
  });
  return { app, close: async () => { await app.close(); await pageServer.close(); await hub.close(); } };
}

/** A little-endian float32 .npy (geneb embed's output) as a flat array. */
export function readNpyF32(bytes) {
  assert.equal(bytes.subarray(1, 6).toString('latin1'), 'NUMPY', 'an .npy file');
  const headerLen = bytes.readUInt16LE(8);
  const header = bytes.subarray(10, 10 + headerLen).toString('latin1');
  assert.match(header, /'descr': '<f4'/, header);
  const start = 10 + headerLen;
  return Array.from(new Float32Array(bytes.buffer.slice(bytes.byteOffset + start, bytes.byteOffset + bytes.length)));
}
