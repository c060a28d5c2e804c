// Browser end-to-end tests of the page: Debian's Chromium (headless, WebGPU on SwiftShader and a
// second browser without WebGPU), the local server on a free port, the real wasm in www/pkg/.
// Every test fails if any request leaves http://127.0.0.1:<port>/.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CSP } from '../../scripts/serve.mjs';
import {
  ARTIFACTS, FIXTURES, LOAD_TIMEOUT, NO_WASM, REPO, RUN_TIMEOUT,
  addFiles, byTestId, cellMean, downloadResult, ensureArtifacts, launchBrowser, openApp, profileRows, runAndWait,
  startTestServer, waitReady, waitRunEnd, nativeGeneb, wasmBuilt,
} from './helpers.mjs';

const GOOD = join(FIXTURES, 'e2e_gc_vs_at.csv');
const GOOD_ID = 'e2e_gc_vs_at';
const BAD = join(FIXTURES, 'e2e_bad.csv');
const REGIMES = ['full', '10shot', '1shot'];

const TEST_TIMEOUT = RUN_TIMEOUT + LOAD_TIMEOUT;

/** The core names a model by its canonical spec: "random-cnn" runs as "random-cnn:0". */
const sameModel = (id, spec) => id === spec || id.startsWith(`${spec}:`);

function assertModels(ids, specs, what) {
  assert.equal(ids.length, specs.length, `${what}: ${ids.join(', ')}`);
  for (const spec of specs) assert.ok(ids.some((id) => sameModel(id, spec)), `${what}: ${spec} in ${ids.join(', ')}`);
}

/** The native CLI, built by `cargo build` (or `cargo test`). */
const GENEB_CLI = nativeGeneb() ?? join(REPO, 'target', 'debug', 'geneb');

/** The `protocol.cost` fields `geneb eval` writes (kmer:4 on `task`), to hold the page's to. */
function cliCostFields(task, scratch) {
  const out = join(scratch, 'cli-kmer4.json');
  const run = spawnSync(GENEB_CLI, ['eval', '--model', 'kmer:4', '--task', task, '--regimes', 'full', '--quiet', '--no-cache', '--out', out],
    { encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, `geneb eval exited with ${run.status}:\n${run.stderr}`);
  return Object.keys(JSON.parse(readFileSync(out, 'utf8')).protocol.cost).sort();
}

/**
 * Every result's cost as the CLI writes it (src/eval.rs), measured in the page: the host's peak
 * is the wasm heap's, and a model on WebGPU also reports the GPU buffers Burn holds.
 */
function checkCost(submissions, cliFields) {
  for (const sub of submissions) {
    const cost = sub.protocol.cost;
    const what = `${sub.model_id}: ${JSON.stringify(cost)}`;
    assert.deepEqual(Object.keys(cost).sort(), cliFields, what);
    assert.ok(cost.peak_memory_bytes > 0 && cost.load_s >= 0, what);
    // What came from the page's embedding cache cost nothing: rates only for what was computed.
    if (cost.embedded_sequences > 0) {
      for (const field of ['embedded_nucleotides', 'embedding_s', 'sequences_per_s', 'nucleotides_per_s']) {
        assert.ok(cost[field] > 0, `${field} of ${what}`);
      }
    }
    assert.equal(cost.device, sub.protocol.backend.kind, what);
    if (cost.device === 'wgpu') assert.ok(cost.peak_gpu_memory_bytes > 0, `GPU buffers of ${what}`);
    else assert.equal(cost.peak_gpu_memory_bytes, null, what);
  }
}

/** `geneb profile FILE` on a downloaded file: the download must feed back into the CLI. */
function cliProfile(file) {
  assert.ok(existsSync(GENEB_CLI), `no ${GENEB_CLI}: run \`cargo build\` first (the download is checked with \`geneb profile\`)`);
  const out = spawnSync(GENEB_CLI, ['profile', file], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(out.error, undefined, `geneb profile: ${out.error?.message}`);
  assert.equal(out.status, 0, `geneb profile ${file} exited with ${out.status}:\n${out.stderr}`);
  return out.stdout;
}

function checkSubmission(sub, taskId, regimes = REGIMES) {
  assert.equal(sub.schema_version, '1.0');
  assert.equal(typeof sub.model_id, 'string');
  assert.ok(sub.meta && typeof sub.meta === 'object', 'meta block');
  for (const regime of regimes) {
    const r = sub.results?.[regime]?.[taskId];
    assert.ok(r, `results.${regime}.${taskId} in ${sub.model_id}`);
    for (const k of ['MCC', 'Acc', 'F1']) {
      assert.equal(typeof r[k], 'number', `${regime}.${taskId}.${k}`);
      assert.ok(r[k] >= -1 && r[k] <= 1, `${regime}.${taskId}.${k} = ${r[k]}`);
    }
  }
  assert.ok(sub.protocol && typeof sub.protocol === 'object', 'protocol block');
  assert.ok(sub.protocol.backend, 'protocol.backend');
}

/** Assert the profile tables show numbers for every model and regime. */
async function checkProfileTables(page, models, regimes = REGIMES) {
  for (const regime of regimes) {
    const rows = await profileRows(page, regime);
    assertModels(rows.map((r) => r.model), models, `${regime} rows`);
    for (const row of rows) {
      assert.ok(row.cells.length >= 3, 'at least one category + macro + micro');
      for (const cell of row.cells) {
        const v = cellMean(cell);
        assert.ok(Number.isFinite(v) && v >= -1 && v <= 1, `${regime} ${row.model}: cell "${cell}"`);
      }
    }
    if (regime !== 'full') {
      const withStd = rows.flatMap((r) => r.cells).filter((c) => /±/.test(c));
      assert.ok(withStd.length > 0, `${regime}: few-shot cells show mean ± std`);
    }
  }
}

/** Drop a file on the drop zone, as a drag from the desktop would. */
async function dropFile(page, path) {
  const name = path.split('/').pop();
  const text = await readFile(path, 'utf8');
  await byTestId(page, 'drop-zone').evaluate((zone, { name, text }) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], name, { type: 'text/csv' }));
    for (const type of ['dragenter', 'dragover', 'drop']) {
      zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, { name, text });
  await byTestId(page, 'file-list').locator('li', { hasText: name }).waitFor({ timeout: 10_000 });
}

describe('geneb page in Chromium', { timeout: 60 * 60_000 }, () => {
  let server;
  let gpuBrowser;
  let cpuBrowser;

  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    server = await startTestServer();
    gpuBrowser = await launchBrowser({ webgpu: true });
  });

  after(async () => {
    await gpuBrowser?.close();
    await cpuBrowser?.close();
    await server?.close();
  });

  it('loads, finds the WebGPU adapter and becomes ready without console errors', { timeout: LOAD_TIMEOUT * 2 }, async () => {
    const app = await openApp(gpuBrowser, server);
    try {
      const { page } = app;
      await waitReady(page);
      const backend = await byTestId(page, 'backend').textContent();
      assert.match(backend, /^WebGPU — \S/, `backend: ${backend}`);
      console.log(`# backend: ${backend}`);
      if (/software fallback/.test(backend)) {
        assert.match(await byTestId(page, 'compute-hint').textContent(), /software fallback/);
      }
      assert.match(await byTestId(page, 'version').textContent(), /^\d+\.\d+\.\d+/);
      // Default choices: kmer:4 + random-cnn, all three regimes.
      assert.equal(await byTestId(page, 'model-kmer').isChecked(), true);
      assert.equal(await byTestId(page, 'kmer-k').inputValue(), '4');
      assert.equal(await byTestId(page, 'model-random-cnn').isChecked(), true);
      for (const r of REGIMES) assert.equal(await byTestId(page, `regime-${r}`).isChecked(), true, r);
      assert.equal(await byTestId(page, 'run').isDisabled(), true, 'no files yet');
      assert.equal(await byTestId(page, 'demo').isEnabled(), true);
      assert.match(await byTestId(page, 'privacy').textContent(), /Your data never leaves this tab/);
      // Every control has an accessible name.
      const unlabeled = await page.evaluate(() => [...document.querySelectorAll('input, select, button, textarea')]
        .filter((e) => !(e.labels?.length || e.getAttribute('aria-label') || e.getAttribute('aria-labelledby')
          || (e.tagName === 'BUTTON' && e.textContent.trim())))
        .map((e) => e.outerHTML.slice(0, 80)));
      assert.deepEqual(unlabeled, []);
      // The only external address is the paper's, as a plain link.
      const external = await page.evaluate(() => [...document.querySelectorAll('[href], [src]')]
        .map((e) => e.href || e.src).filter((u) => !u.startsWith(location.origin) && !u.startsWith('data:')));
      assert.deepEqual(external, ['https://arxiv.org/abs/2606.04525']);
      // The recorder sees the worker's requests too (the worker imports the wasm glue).
      assert.ok(app.requests.some((u) => /\/pkg\/geneb\.js$/.test(u)), `worker request recorded: ${app.requests.join(' ')}`);
      assert.deepEqual(app.consoleErrors, [], 'no console errors on load');
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('runs kmer:4 + random-cnn on WebGPU and downloads the result JSON', { timeout: TEST_TIMEOUT }, async () => {
    const app = await openApp(gpuBrowser, server);
    try {
      const { page } = app;
      await waitReady(page);
      await addFiles(page, GOOD);
      assert.match(await byTestId(page, 'file-list').textContent(), /e2e_gc_vs_at\.csv\s*\d+(\.\d)? KB/);
      assert.equal(await byTestId(page, 'run').isEnabled(), true);
      // Automatic passes over a software adapter (SwiftShader is one), which the CPU outruns.
      const software = /software fallback/.test(await byTestId(page, 'compute-hint').textContent());
      await runAndWait(page, 'run');
      assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
      assert.match(await byTestId(page, 'backend').textContent(),
        software ? /^CPU, \d+ threads? .*— faster than the software WebGPU adapter, \S/ : /^WebGPU — /);
      await byTestId(page, 'compute').selectOption('webgpu');
      await runAndWait(page, 'run');
      assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
      await checkProfileTables(page, ['kmer:4', 'random-cnn']);
      const backend = await byTestId(page, 'backend').textContent();
      assert.match(backend, /^WebGPU — /, `the result ran on: ${backend}`);
      assert.match(await byTestId(page, 'progress-text').textContent(), /done/);

      const scratch = await mkdtemp(join(tmpdir(), 'geneb-download-'));
      const saved = join(scratch, 'geneb-results.json');
      let json;
      try {
        json = await downloadResult(page, { saveAs: saved });
        // The CLI reads the whole bundle back and prints the same profile.
        const category = json.profile.tasks.find((t) => t.id === GOOD_ID)?.category;
        assert.ok(category, `a category for ${GOOD_ID}`);
        const text = cliProfile(saved);
        assert.ok(text.includes(category), `geneb profile names the category ${category}:\n${text}`);
        assert.match(text, /macro/i, `geneb profile shows macro:\n${text}`);
        checkCost(json.submissions, cliCostFields(GOOD, scratch));
        // k-mer spectra are never cached: the page embedded them itself.
        const kmerCost = json.submissions.find((s) => sameModel(s.model_id, 'kmer:4')).protocol.cost;
        assert.ok(kmerCost.sequences_per_s > 0, JSON.stringify(kmerCost));
        // The random CNN ran on WebGPU, whose buffers the result reports.
        const cnnCost = json.submissions.find((s) => sameModel(s.model_id, 'random-cnn')).protocol.cost;
        assert.equal(cnnCost.device, 'wgpu', JSON.stringify(cnnCost));
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
      assert.equal(json.submissions.length, 2);
      assertModels(json.submissions.map((s) => s.model_id), ['kmer:4', 'random-cnn'], 'submissions');
      for (const sub of json.submissions) checkSubmission(sub, GOOD_ID);
      assert.equal(json.profile.metric, 'MCC');
      assert.deepEqual(json.profile.regimes.map((r) => r.regime), REGIMES);
      assert.ok(json.profile.tasks.some((t) => t.id === GOOD_ID));
      // GC-rich vs AT-rich is easy for a 4-mer spectrum: the probe must find it.
      const kmer = json.submissions.find((s) => sameModel(s.model_id, 'kmer:4'));
      assert.ok(kmer.results.full[GOOD_ID].MCC > 0.5, `kmer:4 full MCC ${kmer.results.full[GOOD_ID].MCC}`);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('runs on the CPU in a browser without WebGPU', { timeout: TEST_TIMEOUT }, async () => {
    cpuBrowser ??= await launchBrowser({ webgpu: false });
    const app = await openApp(cpuBrowser, server);
    try {
      const { page } = app;
      await waitReady(page);
      assert.match(await byTestId(page, 'backend').textContent(), /^CPU, \d+ threads? .*— no WebGPU adapter/);
      await addFiles(page, GOOD);
      await runAndWait(page, 'run');
      assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
      assert.match(await byTestId(page, 'backend').textContent(), /^CPU/);
      await checkProfileTables(page, ['kmer:4', 'random-cnn']);
      const json = await downloadResult(page);
      for (const sub of json.submissions) {
        checkSubmission(sub, GOOD_ID);
        const b = sub.protocol.backend;
        if (b && typeof b === 'object' && 'kind' in b) assert.equal(b.kind, 'cpu');
      }
      assert.deepEqual(app.consoleErrors, [], 'no console errors');
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('shows a file:line error for a malformed file and stays usable', { timeout: TEST_TIMEOUT }, async () => {
    const app = await openApp(gpuBrowser, server);
    try {
      const { page } = app;
      await waitReady(page);
      await addFiles(page, BAD);
      await runAndWait(page, 'run');
      const error = byTestId(page, 'error');
      assert.equal(await error.isVisible(), true, 'the error region is shown');
      assert.equal(await error.getAttribute('role'), 'alert');
      const message = await byTestId(page, 'error-message').textContent();
      assert.match(message, /^e2e_bad\.csv:\d+: \S/, `message: ${message}`);
      assert.equal(await byTestId(page, 'status').textContent(), 'ready');
      assert.equal(await byTestId(page, 'profile').locator('table').count(), 0);
      // Swap the bad file for a good one, dropped on the drop zone this time: the page runs it.
      await byTestId(page, 'file-list').getByRole('button', { name: 'Remove e2e_bad.csv' }).click();
      assert.equal(await byTestId(page, 'file-list').locator('li').count(), 0);
      // Focus does not fall to <body>: with no file left it lands on the files summary.
      assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'files-summary');
      await dropFile(page, GOOD);
      assert.equal(await byTestId(page, 'file-list').locator('li').count(), 1);
      await runAndWait(page, 'run');
      assert.equal(await error.isHidden(), true, 'the error is cleared by a good run');
      await checkProfileTables(page, ['kmer:4', 'random-cnn']);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('cancels a run, returns to ready with the files kept, and runs again', { timeout: TEST_TIMEOUT }, async () => {
    const app = await openApp(gpuBrowser, server);
    try {
      const { page } = app;
      await waitReady(page);
      await addFiles(page, GOOD);
      // Press Cancel as soon as the first progress report shows: deterministic, no sleeps.
      await page.evaluate(() => {
        const text = document.querySelector('[data-testid="progress-text"]');
        const obs = new MutationObserver(() => {
          if (/^(read|embed|probe)\b/.test(text.textContent)) {
            obs.disconnect();
            window.__cancelledAt = text.textContent;
            document.querySelector('[data-testid="cancel"]').click();
          }
        });
        obs.observe(text, { childList: true, characterData: true, subtree: true });
      });
      await byTestId(page, 'run').click();
      await page.waitForFunction(() => window.__cancelledAt, null, { timeout: RUN_TIMEOUT });
      await waitRunEnd(page, LOAD_TIMEOUT);
      assert.match(await byTestId(page, 'notice').textContent(), /cancelled/i);
      assert.equal(await byTestId(page, 'progress-text').textContent(), 'cancelled');
      assert.equal(await byTestId(page, 'profile').locator('table').count(), 0, 'no result from the cancelled run');
      assert.equal(await byTestId(page, 'cancel').isDisabled(), true);
      assert.match(await byTestId(page, 'file-list').textContent(), /e2e_gc_vs_at\.csv/, 'files kept');
      // The fresh worker runs the next request.
      await runAndWait(page, 'run');
      await checkProfileTables(page, ['kmer:4', 'random-cnn']);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('falls back to the CPU when WebGPU fails to start, and says so', { timeout: TEST_TIMEOUT }, async () => {
    // A browser without WebGPU, whose worker is told it has an adapter that cannot give a
    // device: the wasm's GPU start fails, and the page must retry on the CPU. The worker script
    // is served with a prelude by the test itself (still from 127.0.0.1).
    cpuBrowser ??= await launchBrowser({ webgpu: false });
    const app = await openApp(cpuBrowser, server, {
      serviceWorkers: 'block',
      async beforeGoto(context, origin) {
        const original = await readFile(join(REPO, 'www', 'worker.js'), 'utf8');
        const prelude = `Object.defineProperty(self.navigator, 'gpu', { configurable: true, value: {
          requestAdapter: async () => ({
            info: { vendor: 'test', architecture: '', device: '', description: 'Broken test adapter' },
            features: new Set(), limits: {},
            requestDevice: async () => { throw new Error('GPU device request failed (test)'); },
          }),
          getPreferredCanvasFormat: () => 'rgba8unorm',
        } });\n`;
        // The server's own response, headers kept: a cross-origin isolated page only starts a
        // worker whose script carries COEP too.
        await context.route(`${origin}worker.js`, async (route) => route.fulfill({
          response: await route.fetch(),
          body: prelude + original,
        }));
      },
    });
    try {
      const { page } = app;
      await waitReady(page);
      assert.match(await byTestId(page, 'backend').textContent(), /^WebGPU — Broken test adapter/);
      await addFiles(page, GOOD);
      await runAndWait(page, 'run');
      assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
      const notice = await byTestId(page, 'notice').textContent();
      console.log(`# fallback notice: ${notice}`);
      assert.match(notice, /WebGPU failed .*ran on the CPU instead/);
      assert.match(await byTestId(page, 'backend').textContent(), /^CPU, \d+ threads? .*— WebGPU failed/);
      await checkProfileTables(page, ['kmer:4', 'random-cnn']);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('the demo button runs both baselines on the built-in suite, on the CPU by choice (screenshots)', { timeout: TEST_TIMEOUT }, async () => {
    const app = await openApp(gpuBrowser, server);
    try {
      const { page } = app;
      await waitReady(page);
      // The demo on the CPU: on SwiftShader's software WebGPU it takes minutes; the WebGPU path
      // is covered above. This also exercises the compute choice.
      await byTestId(page, 'compute').selectOption('cpu');
      await runAndWait(page, 'demo');
      assert.match(await byTestId(page, 'backend').textContent(), /^CPU, \d+ threads? .*— chosen/);
      assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
      await checkProfileTables(page, ['kmer:4', 'random-cnn']);
      const header = await page.locator('[data-testid="profile-table-full"] thead th').allTextContents();
      assert.ok(header.length >= 5, `several categories in the demo: ${header.join(' | ')}`);
      assert.match(await byTestId(page, 'result-summary').textContent(), /Demo/);
      assert.ok(app.requests.some((u) => u.endsWith('/tasks/smoke/tasks.json')), 'demo manifest fetched locally');

      ensureArtifacts();
      await page.screenshot({ path: join(ARTIFACTS, 'result-desktop-1280.png'), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      // At phone width nothing may overflow the page sideways (tables scroll inside their boxes).
      await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, null, { timeout: 10_000 });
      await page.screenshot({ path: join(ARTIFACTS, 'result-phone-390.png'), fullPage: true });
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('with a stand-in core: "__proto__" categories, partial-run note, and a fresh worker after a trap', { timeout: LOAD_TIMEOUT * 3 }, async () => {
    cpuBrowser ??= await launchBrowser({ webgpu: false });
    const fake = await readFile(join(FIXTURES, 'fake-core.js'), 'utf8');
    const app = await openApp(cpuBrowser, server, {
      serviceWorkers: 'block',
      async beforeGoto(context, origin) {
        // Both builds: the threaded one (which the fake cannot start: it has no thread pool)
        // would otherwise run where the page is cross-origin isolated.
        for (const core of ['pkg/geneb.js', 'pkg-threads/geneb.js']) {
          await context.route(`${origin}${core}`, (route) => route.fulfill({
            status: 200,
            headers: { 'content-type': 'text/javascript', 'content-security-policy': CSP },
            body: fake,
          }));
        }
      },
    });
    const csv = (name) => ({ name, mimeType: 'text/csv', buffer: Buffer.from('text,label,split\nACGT,0,train\n') });
    try {
      const { page } = app;
      let workers = 0;
      page.on('worker', () => { workers++; });
      await waitReady(page);
      assert.equal(await byTestId(page, 'version').textContent(), '0.0.0-fake');
      const startedWorkers = workers;

      // A category named "__proto__" is data like any other: shown, and in the download.
      await byTestId(page, 'task-files').setInputFiles([csv('a.csv'), csv('b.csv')]);
      await runAndWait(page, 'run');
      assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
      assert.equal(await byTestId(page, 'result-summary').getAttribute('aria-live'), 'polite');
      const header = await page.locator('[data-testid="profile-table-full"] thead th').allTextContents();
      assert.deepEqual(header, ['Encoder', '__proto__', 'Promoters', 'Macro', 'Micro']);
      const rows = await profileRows(page, 'full');
      assert.deepEqual(rows.map((r) => r.cells), [
        ['0.500', '0.250', '0.375', '0.375'],
        ['0.125', '0.750', '0.438', '0.438'],
      ]);
      // Both encoders saw the same tasks: the best per column is bold.
      assert.equal(await page.locator('[data-testid="profile-table-full"] td.best').count(), 4);
      assert.equal(await byTestId(page, 'profile-scope-note').textContent(),
        'macro and micro average the 2 tasks in 2 categories given here; only a full GENEB run '
        + '(100 tasks, 13 categories) compares with the published leaderboard.');
      const json = await downloadResult(page);
      assert.deepEqual(Object.keys(json.profile.regimes[0].rows[0].categories), ['__proto__', 'Promoters']);
      assert.equal(json.profile.regimes[0].rows[0].categories.__proto__, 0.5);

      // Remove the first file: focus moves to the next Remove button.
      await byTestId(page, 'file-list').getByRole('button', { name: 'Remove a.csv' }).click();
      assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Remove b.csv');

      // A trap (a Rust panic) on the CPU: said in the error region, and the worker is replaced.
      await byTestId(page, 'task-files').setInputFiles([csv('trap.csv')]);
      await runAndWait(page, 'run');
      const message = await byTestId(page, 'error-message').textContent();
      assert.match(message, /internal error \(unreachable\).*restarted.*files and choices are kept/, message);
      assert.equal(workers, startedWorkers + 1, 'a fresh worker after the trap');
      assert.match(await byTestId(page, 'notice').textContent(), /^$/, 'no CPU retry: the message names no GPU');
      assert.match(await byTestId(page, 'file-list').textContent(), /b\.csv.*trap\.csv/s, 'files kept');
      assert.equal(await byTestId(page, 'model-kmer').isChecked(), true, 'choices kept');

      // The fresh worker runs; with encoders scored on different task sets nothing is bold.
      await byTestId(page, 'file-list').getByRole('button', { name: 'Remove trap.csv' }).click();
      await byTestId(page, 'task-files').setInputFiles([csv('uneven.csv')]);
      await runAndWait(page, 'run');
      assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
      assert.equal(await page.locator('[data-testid="profile-table-full"] td.best').count(), 0);
      assert.match(await byTestId(page, 'profile-scope-note').textContent(), /^macro and micro average the \d+ tasks? in 2 categories/);
      assert.doesNotMatch(await byTestId(page, 'profile').textContent(), /Bold:/);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('the CSP blocks requests to other hosts, and nothing leaves 127.0.0.1', { timeout: LOAD_TIMEOUT * 2 }, async () => {
    const app = await openApp(gpuBrowser, server);
    try {
      const { page } = app;
      await waitReady(page);
      const outcome = await page.evaluate(async () => {
        const violations = [];
        document.addEventListener('securitypolicyviolation', (e) => violations.push({ uri: e.blockedURI, directive: e.effectiveDirective }));
        let fetched;
        try {
          await fetch('https://example.com/');
          fetched = 'fetched';
        } catch (err) {
          fetched = `blocked: ${err.message}`;
        }
        // Violation events are dispatched asynchronously.
        for (let i = 0; i < 50 && !violations.length; i++) await new Promise((r) => setTimeout(r, 20));
        return { fetched, violations };
      });
      assert.match(outcome.fetched, /^blocked/);
      assert.ok(outcome.violations.some((v) => v.directive === 'connect-src' && v.uri.includes('example.com')),
        `a connect-src violation: ${JSON.stringify(outcome.violations)}`);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });
});
