// The page against what users and the internet hand it (issue 15): a model folder picked while
// the core still loads waits for it; a hostile result bundle stays inert (nothing runs, the CSP
// reports nothing, the downloads are escaped); a real out-of-memory in the worker (Chromium's
// own cap on WebAssembly memory) ends in a message and a fresh worker with everything kept; a
// model too big for the tab is refused before any download; a download cut mid-body or a tab
// closed mid-download keeps nothing; the worker dying mid-write leaves the embedding cache and
// the results library whole; files made to exhaust memory (issue 29) get a one-line message
// with everything kept. Real page, real core, real Chromium.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, truncate, writeFile, copyFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  FIXTURES, LOAD_TIMEOUT, NO_WASM, REPO, addFiles, byTestId, dropModel, folderFiles, launchBrowser, openApp,
  openWithHub, pkgMounts, runAndWait, runWithoutError, waitLoaded, waitModelError, waitReady, wasmBuilt,
} from './helpers.mjs';
import { startServer } from '../../scripts/serve.mjs';

const NT_V2 = join(REPO, 'tests', 'fixtures', 'models', 'nt_v2');
const GC_VS_AT = join(FIXTURES, 'e2e_gc_vs_at.csv');
const HOSTILE = join(FIXTURES, 'hostile-bundle.json');
// Files made to exhaust memory (tests/hostile_files.rs builds them and checks these copies).
const HOSTILE_FILES = join(FIXTURES, 'hostile');
const MODEL_FILES = ['config.json', 'model.safetensors', 'vocab.txt', 'tokenizer_config.json', 'special_tokens_map.json'];

/**
 * A hub on 127.0.0.1 serving `files` (name → bytes) under `/{repo}/resolve/{rev}/` (`repo`: one
 * id or several), with the
 * sizes HEAD announces overridable (`sizes`), and each GET answered as `mode(name)` says:
 * 'ok', 'cut' (half the body, then the connection is destroyed) or 'stall' (half, then nothing).
 */
async function startHub(files, { repo, rev, sizes = {}, mode = () => 'ok' }) {
  const hits = [];
  const stalled = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    const headers = {
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Expose-Headers': 'ETag, X-Linked-Etag, X-Linked-Size, Content-Length',
    };
    const m = /^\/(.+)\/resolve\/([^/]+)\/(.+)$/.exec(req.url);
    const name = m && [repo].flat().includes(m[1]) && m[2] === rev ? decodeURIComponent(m[3]) : null;
    const body = name != null && Object.hasOwn(files, name) ? files[name] : null;
    if (!body) {
      res.writeHead(404, headers);
      res.end('Entry not found');
      return;
    }
    const sha = createHash('sha256').update(body).digest('hex');
    res.writeHead(200, {
      ...headers, 'Content-Length': body.length, 'X-Linked-Size': sizes[name] ?? body.length, 'X-Linked-Etag': `"${sha}"`,
    });
    if (req.method === 'HEAD') { res.end(); return; }
    const how = mode(name);
    if (how === 'ok') { res.end(body); return; }
    res.write(body.subarray(0, body.length >> 1));
    if (how === 'cut') setTimeout(() => res.socket.destroy(), 50);
    else stalled.push(res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    hits,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** The keys of the page's Cache API entry `name` (empty without one). */
function cachedUrls(page, name) {
  return page.evaluate(async (n) => ((await caches.has(n)) ? (await (await caches.open(n)).keys()).map((r) => r.url) : []), name);
}

/** A page that reports every CSP violation, dialog and page error into `app.violations`. */
async function openWatched(browser, server, options = {}) {
  const violations = [];
  const app = await openApp(browser, server, {
    ...options,
    async beforeGoto(context, origin) {
      await context.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) => {
          console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI} ${e.sample}`);
        });
      });
      await options.beforeGoto?.(context, origin);
    },
  });
  app.page.on('dialog', (d) => { violations.push(`dialog: ${d.message()}`); d.dismiss(); });
  app.violations = violations;
  return app;
}

describe('the page holds up against hostile input and failures', { timeout: 15 * 60_000 }, () => {
  let browser;
  let server;
  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    browser = await launchBrowser({ webgpu: false });
    server = await startServer({ port: 0, mounts: pkgMounts() });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('a model folder, a task file and a result file handed over while the core loads: the model waits for it, says so, and loads', { timeout: LOAD_TIMEOUT * 2 }, async () => {
    let wasmAsked = 0;
    const app = await openApp(browser, server, {
      serviceWorkers: 'block',
      // Both builds' core arrives 4 s late: the page is up long before its core.
      beforeGoto: (context, origin) => context.route(new RegExp(`^${origin}pkg(-threads)?/geneb_bg\\.wasm$`), async (route) => {
        wasmAsked++;
        await new Promise((r) => setTimeout(r, 4000));
        await route.continue();
      }),
    });
    const { page } = app;
    try {
      // A model folder, a task file and a result file, all before the core is up.
      await byTestId(page, 'model-folder').setInputFiles(NT_V2);
      await byTestId(page, 'task-files').setInputFiles(GC_VS_AT);
      await byTestId(page, 'import-results').setInputFiles(join(FIXTURES, 'geneb-tasks-kmer3.json'));
      assert.equal(await byTestId(page, 'status').textContent(), 'loading…', 'all handed over before the core was up');
      await page.waitForFunction(() => /waiting for the WebAssembly core/.test(document.querySelector('[data-testid="model-status"]').textContent),
        null, { timeout: 10_000 });
      assert.equal(await byTestId(page, 'run-hint').textContent(), 'Loading the WebAssembly core…');
      await waitLoaded(page, 'hf:nt_v2');
      assert.deepEqual(await byTestId(page, 'file-list').locator('.file-name').allTextContents(), ['e2e_gc_vs_at.csv']);
      assert.equal(await byTestId(page, 'saved-result').count(), 1);
      assert.equal(await byTestId(page, 'run').isEnabled(), true);
      assert.ok(wasmAsked >= 1, 'the core was delayed');
      assert.match(await byTestId(page, 'model-status').textContent(), /hf:nt_v2 is ready: \d+-dimensional embeddings/);
      assert.deepEqual(app.consoleErrors, []);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('a hostile result bundle is inert: nothing runs, the CSP reports nothing, and the downloads are escaped', { timeout: LOAD_TIMEOUT * 2 }, async () => {
    const app = await openWatched(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      const before = await page.evaluate(() => document.querySelectorAll('*').length);
      await byTestId(page, 'import-results').setInputFiles(HOSTILE);
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="saved-result"]').length === 2, null, { timeout: 30_000 });
      // The names are shown as text.
      const models = await page.locator('[data-testid="saved-result"] th code').allTextContents();
      assert.ok(models.includes('<img src=x onerror="alert(\'model\')">'), models.join(' | '));
      await byTestId(page, 'select-all-results').check();
      await runAndWait(page, 'compare-selected');
      await byTestId(page, 'plots').waitFor({ timeout: 30_000 });
      const compare = await byTestId(page, 'compare').textContent();
      assert.ok(compare.includes('<svg onload=alert("task")>'), 'the hostile task id is shown as text');
      // No element came from the bundle where its text is shown (none of the kinds it holds),
      // and no handler attribute or javascript: URL anywhere.
      const injected = await page.evaluate(() => [
        ...[...document.querySelectorAll('#library, #compare')].flatMap((part) => [...part.querySelectorAll('script, img, iframe, b, a, style, foreignObject')])
          .map((n) => n.outerHTML.slice(0, 80)),
        ...[...document.querySelectorAll('*')].flatMap((n) => [...n.attributes]
          .filter((a) => /^on/i.test(a.name) || /^\s*javascript:/i.test(a.value)).map((a) => `${n.localName} ${a.name}="${a.value}"`)),
      ]);
      assert.deepEqual(injected, []);
      assert.ok(await page.evaluate(() => document.querySelectorAll('*').length) > before, 'the comparison was drawn');

      const download = async (testId) => {
        const [file] = await Promise.all([page.waitForEvent('download', { timeout: 60_000 }), byTestId(page, testId).click()]);
        return readFile(await file.path(), 'utf8');
      };
      const html = await download('download-report');
      assert.doesNotMatch(html, /<(script|img|iframe|svg onload|b onmouseover|a href)/i);
      assert.ok(html.includes('&lt;script&gt;alert(&quot;display&quot;)&lt;/script&gt;'));
      await page.locator('[data-testid="csv-files"] > summary').click();
      const tasksCsv = await download('download-csv-tasks.csv');
      const formulas = tasksCsv.split(/\r\n/).flatMap((line) => line.split(','))
        .map((c) => c.replace(/^"/, '')).filter((c) => /^[=+\-@\t\r]/.test(c) && !Number.isFinite(Number(c)));
      assert.deepEqual(formulas, [], 'no CSV cell starts a formula');
      assert.match(tasksCsv, /'-2\+3\+cmd/);

      // The report opened on its own (no CSP of ours there) runs nothing either.
      const report = await app.context.newPage();
      const dialogs = [];
      report.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
      await report.setContent(html, { waitUntil: 'load' });
      assert.equal(await report.evaluate(() => document.querySelectorAll('script, img, iframe, [onload], [onerror], [onmouseover]').length), 0);
      await report.close();
      assert.deepEqual(dialogs, []);
      assert.deepEqual(app.violations, []);
      assert.deepEqual(app.consoleErrors, [], 'no page error and no CSP violation');
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  // Chromium caps every WebAssembly memory at 256 MiB (4096 pages of 64 KiB), and the core's
  // allocations fail for real. Not cross-origin isolated: the one-thread core, as Firefox without
  // COOP gets; 20,000 sequences' 6-mer spectra (4,096 dimensions, 328 MB) cannot be held, and
  // the failure traps the worker's own call. Isolated: the threaded core; 10,000 spectra
  // (164 MB) fit, but the probes then fitted at once on its rayon pool each take a block of
  // rows in f64 (34 MB) to predict, so an allocation fails on a pool thread, whose trap the
  // worker, waiting for it, never hears of.
  for (const threaded of [false, true]) {
    const core = threaded ? 'the threaded core (on a pool thread)' : 'the one-thread core';
    it(`out of memory in ${core}: a message, a fresh worker, and the files, results and settings kept`, { timeout: LOAD_TIMEOUT * 4 }, async () => {
      const small = await launchBrowser({ webgpu: false, jsFlags: '--wasm-max-mem-pages=4096' });
      const server = await startServer({ port: 0, mounts: pkgMounts(), isolated: threaded });
      const dir = await mkdtemp(join(tmpdir(), 'geneb-oom-'));
      const big = join(dir, 'big.csv');
      let seed = 1;
      const base = () => 'ACGT'[((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 3];
      const rows = Array.from({ length: threaded ? 10_000 : 20_000 }, (_, i) => `${Array.from({ length: 80 }, base).join('')},${i % 2},${i % 5 ? 'train' : 'test'}`);
      await writeFile(big, `text,label,split\n${rows.join('\n')}\n`);
      // The page names a channel per worker for its pool threads (www/app.js): note the names,
      // to listen beside the page and see which way the failure came.
      const app = await openApp(small, server, {
        ...(threaded ? { query: '?threads=4' } : {}),
        beforeGoto: (context) => context.addInitScript(() => {
          const Real = window.BroadcastChannel;
          window.outOfMemoryChannels = [];
          window.BroadcastChannel = class extends Real {
            constructor(name) { super(name); window.outOfMemoryChannels.push(name); }
          };
        }),
      });
      const { page } = app;
      let workers = 0;
      page.on('worker', () => { workers++; });
      const listen = () => page.evaluate(() => {
        const [name, ...more] = window.outOfMemoryChannels;
        if (more.length) throw new Error(`one page worker so far, but channels ${window.outOfMemoryChannels}`);
        new BroadcastChannel(name).onmessage = (e) => { (self.poolOutOfMemory ??= []).push(e.data); };
      });
      try {
        await waitReady(page);
        assert.match(await byTestId(page, 'backend').textContent(), threaded ? /^CPU, 4 threads/ : /^CPU, 1 thread/);
        await addFiles(page, GC_VS_AT);
        // Settings a user made: k = 6, CPU only, no 1-shot, no random CNN.
        await byTestId(page, 'kmer-k').selectOption('6');
        await byTestId(page, 'compute').selectOption('cpu');
        await byTestId(page, 'regime-1shot').uncheck();
        await byTestId(page, 'model-random-cnn').uncheck();
        await runAndWait(page, 'run');
        assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
        const summary = await byTestId(page, 'result-summary').textContent();
        await page.waitForFunction(() => document.querySelectorAll('[data-testid="saved-result"]').length === 1, null, { timeout: 30_000 });

        await addFiles(page, big);
        await listen();
        const startedBefore = workers;
        await runAndWait(page, 'run');
        const error = await byTestId(page, 'error').textContent();
        console.log(`# out of memory in ${core}, as the page says: ${error}`);
        assert.match(error, /This tab ran out of memory: the core needed [\d.]+ [kMG]B more/);
        assert.match(error, /restarted; your files, choices and results are kept/);
        assert.ok(workers > startedBefore, 'a fresh worker');
        const signals = await page.evaluate(() => self.poolOutOfMemory ?? []);
        if (threaded) {
          assert.equal(signals.length, 1, 'the pool thread said it ran out of memory');
          assert.ok(signals[0] > 0, `the refused size: ${signals[0]}`);
        } else {
          assert.deepEqual(signals, [], 'the one-thread core has no pool');
        }
        assert.deepEqual(await byTestId(page, 'file-list').locator('.file-name').allTextContents(), ['big.csv', 'e2e_gc_vs_at.csv']);
        assert.equal(await byTestId(page, 'result-summary').textContent(), summary, 'the last result is still shown');
        assert.equal(await byTestId(page, 'saved-result').count(), 1);
        assert.equal(await byTestId(page, 'kmer-k').inputValue(), '6');
        assert.equal(await byTestId(page, 'compute').inputValue(), 'cpu');
        assert.equal(await byTestId(page, 'regime-1shot').isChecked(), false);
        assert.equal(await byTestId(page, 'model-random-cnn').isChecked(), false);
        // The fresh worker runs what fits.
        await page.getByRole('button', { name: 'Remove big.csv' }).click();
        await runAndWait(page, 'run');
        assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
        assert.match(await byTestId(page, 'result-summary').textContent(), /1 file · 1 encoder/);
      } finally {
        await app.close();
        await server.close();
        await small.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  it('files made to exhaust memory get a one-line message; the page, its files, settings and results stay', { timeout: LOAD_TIMEOUT * 3 }, async () => {
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      await byTestId(page, 'model-random-cnn').uncheck();
      await byTestId(page, 'kmer-k').selectOption('3');
      await byTestId(page, 'regime-10shot').uncheck();
      await addFiles(page, GC_VS_AT);
      await runWithoutError(page);
      const saved = await byTestId(page, 'saved-result').count();
      for (const [name, message] of [
        // The header's 2 GiB dictionary is refused before the Parquet library sizes a buffer by it.
        ['dictionary-2gib.parquet', /dictionary-2gib\.parquet: reading row group 0 needs .+, over geneb's memory budget of /],
        // 4·10^8 rows in 381 bytes: refused before a row is made.
        ['rle-rows.parquet', /rle-rows\.parquet: a table of 400000000 rows needs .+, over geneb's memory budget of /],
        // A string dtype 2^62 characters wide.
        ['absurd-width.npz', /absurd-width\.npz: task\.npy: dtype <U4611686018427387904 is wider than any machine holds/],
      ]) {
        await addFiles(page, join(HOSTILE_FILES, name));
        await runAndWait(page, 'run');
        const error = await byTestId(page, 'error-message').textContent();
        assert.match(error, message);
        assert.equal(error.trim().split('\n').length, 1, error);
        // The user's table, settings and saved results are all still there.
        const names = await byTestId(page, 'file-list').locator('.file-name').allTextContents();
        assert.ok(names.includes('e2e_gc_vs_at.csv'), names.join(', '));
        assert.equal(await byTestId(page, 'kmer-k').inputValue(), '3');
        assert.equal(await byTestId(page, 'regime-10shot').isChecked(), false);
        assert.equal(await byTestId(page, 'saved-result').count(), saved);
        await byTestId(page, 'clear-files').click();
        await addFiles(page, GC_VS_AT);
      }
      // And the page still runs.
      await runWithoutError(page);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('a model too big for the tab is refused with its size before any download or read, one that fits in half precision is not', { timeout: LOAD_TIMEOUT * 2 }, async () => {
    const files = await folderFiles(NT_V2);
    const id = 'test-org/huge';
    // AgroNT-1B's weights fit a tab in half precision (geneb models): its 3 GB is offered.
    const agroNt = 'InstaDeepAI/agro-nucleotide-transformer-1b';
    const hub = await startHub(files, { repo: [id, agroNt], rev: 'main', sizes: { 'model.safetensors': 3 * 2 ** 30 } });
    const { app, close } = await openWithHub(browser, hub);
    const dir = await mkdtemp(join(tmpdir(), 'geneb-huge-'));
    const { page } = app;
    try {
      await waitReady(page);
      await byTestId(page, 'hub-id').fill(id);
      await byTestId(page, 'hub-load').click();
      const refused = await waitModelError(page);
      assert.match(refused, /test-org\/huge@main: its weights \(model\.safetensors, 3\.0 GB\) do not fit in a browser tab.*nothing was downloaded/, refused);
      assert.equal(await byTestId(page, 'hub-plan').count(), 0, 'no download offered');
      assert.deepEqual(hub.hits.filter((h) => h.startsWith('GET')), []);
      await page.evaluate(() => { document.querySelector('[data-testid="model-error"]').hidden = true; });
      await byTestId(page, 'hub-id').fill(agroNt);
      await byTestId(page, 'hub-load').click();
      await byTestId(page, 'hub-plan').waitFor({ timeout: LOAD_TIMEOUT });
      assert.match(await byTestId(page, 'hub-plan').textContent(), /model\.safetensors/);
      await byTestId(page, 'hub-decline').click();
      assert.deepEqual(hub.hits.filter((h) => h.startsWith('GET')), [], 'declined: nothing downloaded');
      assert.ok(!(await byTestId(page, 'model-error').isVisible()), await byTestId(page, 'model-error').textContent());

      // Weights files on disk (sparse: nothing is written) a tab cannot hold, refused unread:
      // 4.5 GB, over twice the limit, by the page's size check; 2.5 GB of bf16 matrices, within
      // it (an f32 file that size would be held in half precision), by the core from the header.
      for (const name of ['config.json', 'vocab.txt']) await copyFile(join(NT_V2, name), join(dir, name));
      const weights = join(dir, 'model.safetensors');
      const drop = async () => {
        await page.evaluate(() => { document.querySelector('[data-testid="model-error"]').hidden = true; });
        await byTestId(page, 'model-files').setInputFiles(['config.json', 'vocab.txt', 'model.safetensors'].map((n) => join(dir, n)));
        return waitModelError(page);
      };
      await writeFile(weights, '');
      await truncate(weights, 4.5 * 2 ** 30);
      const dropped = await drop();
      assert.match(dropped, /its weights \(model\.safetensors, 4\.5 GB\) do not fit in a browser tab.*nothing was read/, dropped);
      const side = 16384;
      const each = side * side * 2;
      const tensors = Object.fromEntries([0, 1, 2, 3, 4].map((i) => [`layer.${i}.weight`, { dtype: 'BF16', shape: [side, side], data_offsets: [i * each, (i + 1) * each] }]));
      const header = Buffer.from(JSON.stringify(tensors));
      const length = Buffer.alloc(8);
      length.writeBigUInt64LE(BigInt(header.length));
      await writeFile(weights, Buffer.concat([length, header]));
      await truncate(weights, 8 + header.length + 5 * each);
      const held = await drop();
      assert.match(held, /model\.safetensors: its weights would take 2\.5 GiB \(2684354560 bytes\) held in bf16, over the 2\.0 GiB \(2147483648 bytes\) a browser tab holds: nothing was read/, held);
      assert.equal(await byTestId(page, 'loaded-model').count(), 0);
      assert.equal(await byTestId(page, 'status').textContent(), 'ready');
    } finally {
      await close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a download cut mid-body or a tab closed mid-download keeps nothing; the next try downloads it whole', { timeout: LOAD_TIMEOUT * 3 }, async () => {
    const all = await folderFiles(NT_V2);
    const files = Object.fromEntries(MODEL_FILES.map((n) => [n, all[n]]));
    const id = 'test-org/flaky';
    let weights = 'cut';
    const hub = await startHub(files, { repo: id, rev: 'main', mode: (name) => (name === 'model.safetensors' ? weights : 'ok') });
    const { app, close } = await openWithHub(browser, hub);
    let { page } = app;
    const load = async () => {
      await byTestId(page, 'hub-id').fill(id);
      await byTestId(page, 'hub-load').click();
      await byTestId(page, 'hub-confirm').click({ timeout: LOAD_TIMEOUT });
    };
    try {
      await waitReady(page);
      await load();
      const cut = await waitModelError(page);
      assert.match(cut, /model\.safetensors: the download was cut after 44 kB of 88 kB \(network error\); nothing was kept: try again/, cut);
      assert.deepEqual(await cachedUrls(page, 'geneb-models-v1'), []);

      // The tab closed mid-body: a fresh tab finds nothing kept, and asks the hub again.
      weights = 'stall';
      await page.evaluate(() => { document.querySelector('[data-testid="model-error"]').hidden = true; });
      await load();
      await page.waitForFunction(() => /downloading model\.safetensors/.test(document.querySelector('[data-testid="model-status"]').textContent),
        null, { timeout: LOAD_TIMEOUT });
      await page.close();
      page = await app.context.newPage();
      await page.goto(`${app.origin}?hub=${encodeURIComponent(hub.origin)}`);
      await waitReady(page);
      assert.equal(await byTestId(page, 'cached-model').count(), 0);
      // What a tab closed between storing the files and their manifest would leave: unused, freed.
      const orphan = `${hub.origin}/${id}/resolve/main/pytorch_model.bin`;
      await page.evaluate(async (url) => (await caches.open('geneb-models-v1')).put(url, new Response('half')), orphan);
      weights = 'ok';
      const gets = hub.hits.filter((h) => h === `GET /${id}/resolve/main/model.safetensors`).length;
      await load();
      await waitLoaded(page, `hf:${id}@main`);
      assert.match(await byTestId(page, 'loaded-model').textContent(), /kept for offline use; every file sha256-verified/);
      assert.equal(hub.hits.filter((h) => h === `GET /${id}/resolve/main/model.safetensors`).length, gets + 1, 'downloaded anew');
      const kept = await cachedUrls(page, 'geneb-models-v1');
      assert.equal(kept.length, MODEL_FILES.length + 1, kept.join('\n'));
      assert.ok(!kept.includes(orphan), 'the orphan was freed');
    } finally {
      await close();
    }
  });

  it('a GENEB task table cut mid-body is not kept; the next try adds the task', { timeout: LOAD_TIMEOUT * 2 }, async () => {
    const catalogue = JSON.parse(await readFile(join(REPO, 'tasks', 'catalogue', 'geneb-catalogue.json'), 'utf8'));
    const task = catalogue.tasks.find((t) => t.id === 'deep4mc_E.coli_4mC');
    const files = {};
    for (const path of [task.files.train, task.files.test]) files[path] = await readFile(join(REPO, 'tests', 'fixtures', 'hub', path));
    let tables = 'cut';
    const hub = await startHub(files, {
      repo: `datasets/${task.hf_dataset}`, rev: task.revision, mode: (name) => (name.endsWith('/train.csv') ? tables : 'ok'),
    });
    const { app, close } = await openWithHub(browser, hub);
    const { page } = app;
    const getTask = async () => {
      const picker = byTestId(page, 'geneb-picker');
      if (!(await picker.evaluate((d) => d.open))) await picker.locator(':scope > summary').click();
      const row = page.locator(`[data-testid="geneb-task"][data-task-id="${task.id}"]`);
      await row.waitFor({ state: 'attached', timeout: LOAD_TIMEOUT });
      const category = row.locator('xpath=ancestor::details[1]');
      if (!(await category.evaluate((d) => d.open))) await category.locator(':scope > summary').click();
      await row.locator('input').check();
      await byTestId(page, 'tasks-fetch').click();
      await byTestId(page, 'tasks-panel').locator('[data-testid="hub-confirm"]').click({ timeout: LOAD_TIMEOUT });
    };
    try {
      await waitReady(page);
      await getTask();
      await byTestId(page, 'tasks-error').waitFor({ state: 'visible', timeout: LOAD_TIMEOUT });
      const cut = await byTestId(page, 'tasks-error').textContent();
      assert.match(cut, /^deep4mc_E\.coli_4mC: train\.csv: the download was cut after .*; nothing was kept: try again$/, cut);
      assert.deepEqual(await cachedUrls(page, 'geneb-tasks-v1'), []);
      assert.equal(await byTestId(page, 'file-list').locator('li').count(), 0, 'no task file added');
      tables = 'ok';
      await getTask();
      await page.waitForFunction(() => /^Added 1 GENEB task/.test(document.querySelector('[data-testid="tasks-status"]').textContent),
        null, { timeout: LOAD_TIMEOUT });
      assert.equal((await cachedUrls(page, 'geneb-tasks-v1')).length, 3, 'both tables and their manifest');
      assert.equal(await byTestId(page, 'file-list').locator('li').count(), 2);
    } finally {
      await close();
    }
  });

  it('the worker dying mid-write leaves the embedding cache and the results library whole', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const original = await readFile(join(REPO, 'www', 'worker.js'), 'utf8');
    // Once armed (a message from the test), the worker stops dead right after it has issued both
    // writes of an embedding cache entry (www/embedding-cache.js), before the transaction can
    // commit; the test then ends it as Cancel does, or a crash would. Arming by message, not by
    // restarting the worker with other code, keeps the test independent of how fast a run is.
    const prelude = `{ let armed = false;
      self.addEventListener('message', (e) => {
        if (e.data?.type === 'test:arm') { armed = true; e.stopImmediatePropagation(); }
      });
      const put = IDBObjectStore.prototype.put;
      IDBObjectStore.prototype.put = function (...args) {
        const request = put.apply(this, args);
        if (armed && this.name === 'entries') {
          self.postMessage({ type: 'test:cache-write-open' });
          const end = Date.now() + 60_000; while (Date.now() < end) { /* the worker hangs mid-write */ }
        }
        return request;
      }; }\n`;
    const app = await openApp(browser, server, {
      serviceWorkers: 'block',
      async beforeGoto(context, origin) {
        await context.addInitScript(() => {
          window.__cacheWriteOpen = false;
          window.__workers = [];
          const Real = window.Worker;
          window.Worker = class extends Real {
            constructor(...args) {
              super(...args);
              window.__workers.push(this);
              this.addEventListener('message', (e) => { if (e.data?.type === 'test:cache-write-open') window.__cacheWriteOpen = true; });
            }
          };
        });
        await context.route(`${origin}worker.js`, async (route) => route.fulfill({
          response: await route.fetch(), body: prelude + original,
        }));
      },
    });
    const { page } = app;
    const cacheState = () => page.evaluate(() => new Promise((resolve, reject) => {
      const open = indexedDB.open('geneb-embeddings');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const tx = open.result.transaction(['embeddings', 'entries']);
        const values = tx.objectStore('embeddings').getAll();
        const entries = tx.objectStore('entries').getAll();
        tx.oncomplete = () => {
          open.result.close();
          resolve({
            values: values.result.map((v) => ({ key: v.key, length: v.values.length })),
            entries: entries.result.map((e) => ({ key: e.key, length: e.rows * e.dim })),
          });
        };
      };
    }));
    try {
      await waitReady(page);
      await addFiles(page, GC_VS_AT);
      await byTestId(page, 'regime-10shot').uncheck();
      await byTestId(page, 'regime-1shot').uncheck();
      await byTestId(page, 'model-random-cnn').uncheck();
      await runAndWait(page, 'run'); // kmer:4: a saved result
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="saved-result"]').length === 1, null, { timeout: 30_000 });
      const all = await folderFiles(NT_V2);
      await dropModel(page, Object.fromEntries(MODEL_FILES.map((n) => [n, all[n]])));
      await waitLoaded(page, 'hf:dropped-model');
      await byTestId(page, 'model-kmer').uncheck();

      // Arm the page's current worker (the last one started; the core's own pool threads are
      // started by the core, not by the page, so they are not in the list).
      await page.evaluate(() => window.__workers.at(-1).postMessage({ type: 'test:arm' }));
      await byTestId(page, 'run').click();
      await page.waitForFunction(() => window.__cacheWriteOpen, null, { timeout: LOAD_TIMEOUT });
      await byTestId(page, 'cancel').click(); // terminates the hung worker mid-transaction
      await waitReady(page);
      const afterCrash = await cacheState();
      console.log(`# embedding cache after the worker died mid-write: ${afterCrash.entries.length} entries, ${afterCrash.values.length} value sets`);
      assert.deepEqual(afterCrash.values, afterCrash.entries, 'an entry and its values, both or neither');
      assert.equal(await byTestId(page, 'saved-result').count(), 1);

      await runAndWait(page, 'run');
      assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
      assert.equal(await byTestId(page, 'notice').textContent(), '', 'the embeddings were kept');
      const kept = await cacheState();
      assert.ok(kept.entries.length >= 1);
      assert.deepEqual(kept.values, kept.entries);
      await page.reload();
      await waitReady(page);
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="saved-result"]').length === 2, null, { timeout: 30_000 });
      assert.match(await byTestId(page, 'embedding-cache-size').textContent(), /^\d+ sets? of embeddings kept/);
      assert.deepEqual(await cacheState(), kept);
    } finally {
      await app.close();
    }
  });
});
