// Your own data on the page, against the native CLI on the same files. A table without a split
// column: the core lists its columns for the group picker, splits it with the seed, fraction and
// group column chosen (or into folds), and the result equals `geneb eval` with the same options —
// the same test rows in the same order, the same scores and predictions — with the deviation
// shown. Your own embeddings (.npz): the whole protocol with no encoder, equal to
// `geneb eval --embeddings`.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  NO_WASM, REPO, addFiles, byTestId, downloadResult, ensureArtifacts, launchBrowser, nativeGeneb, openApp,
  runWithoutError, startTestServer, waitLoaded, waitReady, wasmBuilt,
} from './helpers.mjs';

/** 40 patients with 1–4 sequences each; every fifth patient has both classes. */
function cohort() {
  const lines = ['sequence,label,patient,site'];
  const words = ['ACGTTGCA', 'TTGACCAG', 'GGCATACG', 'CATGGTTA'];
  for (let p = 0; p < 40; p++) {
    for (let s = 0; s <= (p * 7) % 4; s++) {
      const label = p % 5 === 0 ? s % 2 : p % 2;
      // Class 1 sequences carry more GC, so a 3-mer probe has something to find.
      const extra = label ? 'GCGCGC' : 'ATATAT';
      lines.push(`${words[s]}${words[p % 4]}${extra},${label},P${p},S${p % 3}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function native(args) {
  const bin = nativeGeneb();
  assert.ok(bin && existsSync(bin), 'no native geneb: run `cargo build` first');
  const out = spawnSync(bin, args, { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20 });
  assert.equal(out.status, 0, out.stderr);
  return out.stdout;
}

function geneb(args) {
  return JSON.parse(native(['eval', ...args, '--quiet']));
}

/** Click a download button; the downloaded file's text. */
/**
 * `actual` deep-equals `expected`, numbers to 1e-9 relative: the CLI's probe sums with FMA where
 * the CPU has it and wasm has none, so a fit agrees to rounding across the two, not bit for bit
 * (on one platform it is bit for bit at any thread count: src/probe's tests and threads.test).
 */
function assertClose(actual, expected, what, path = '') {
  if (typeof expected === 'number') {
    assert.equal(typeof actual, 'number', `${what}${path}: ${actual}`);
    assert.ok(Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)), `${what}${path}: ${actual} vs ${expected}`);
  } else if (expected !== null && typeof expected === 'object') {
    assert.deepEqual(Object.keys(actual ?? {}).sort(), Object.keys(expected).sort(), `${what}${path}: keys`);
    for (const key of Object.keys(expected)) assertClose(actual[key], expected[key], what, `${path}.${key}`);
  } else {
    assert.equal(actual, expected, `${what}${path}`);
  }
}

async function downloadOf(page, testId) {
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 60_000 }), byTestId(page, testId).click()]);
  return readFileSync(await download.path(), 'utf8');
}

function cli(table, extra) {
  return geneb(['--model', 'kmer:3', '--task', table, '--regimes', 'full,1shot', '--no-cache', ...extra]);
}

const OWN_EMBEDDINGS = join(REPO, 'tests', 'fixtures', 'own_embeddings');

describe('your own data: tables without a split column, your own embeddings', { timeout: 10 * 60_000 }, () => {
  let server;
  let browser;
  let table;
  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    const dir = join(ensureArtifacts(), 'split');
    mkdirSync(dir, { recursive: true });
    table = join(dir, 'cohort.csv');
    writeFileSync(table, cohort());
    server = await startTestServer();
    browser = await launchBrowser({ webgpu: false });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('are split in the page exactly as the CLI splits them, by group and into folds', async () => {
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      await addFiles(page, table);
      await byTestId(page, 'split-panel').waitFor({ state: 'visible', timeout: 30_000 });
      assert.match(await byTestId(page, 'split-summary').textContent(), /cohort\.csv has no split column/);
      const options = await byTestId(page, 'split-group').locator('option').allTextContents();
      assert.deepEqual(options.slice(1), ['patient', 'site']);
      assert.equal(await byTestId(page, 'split-fraction').inputValue(), '0.2', 'the core\'s default');
      assert.equal(await byTestId(page, 'split-seed').inputValue(), '42', 'the core\'s default');

      await byTestId(page, 'model-random-cnn').uncheck();
      await byTestId(page, 'kmer-k').selectOption('3');
      await byTestId(page, 'regime-10shot').uncheck();
      await byTestId(page, 'split-group').selectOption('patient');
      await byTestId(page, 'split-fraction').fill('0.25');
      await byTestId(page, 'split-seed').fill('7');
      await runWithoutError(page);
      const grouped = (await downloadResult(page)).submissions[0];
      assert.match(await byTestId(page, 'deviations').textContent(),
        /task cohort has no split column: geneb made one train\/test split with 25 % test rows/);

      const native = cli(table, ['--group-column', 'patient', '--test-fraction', '0.25', '--split-seed', '7']);
      assert.deepEqual(grouped.tasks.cohort, native.tasks.cohort, 'the same split, row for row');
      assert.deepEqual(grouped.results, native.results);
      assert.deepEqual(grouped.predictions, native.predictions);

      await byTestId(page, 'split-group').selectOption('');
      await byTestId(page, 'split-folds').fill('3');
      await runWithoutError(page);
      const folded = (await downloadResult(page)).submissions[0];
      assert.match(await byTestId(page, 'fold-scores').textContent(), /kmer:3 on cohort: full-data MCC -?\d\.\d{3} ± \d\.\d{3} over 3 folds/);
      const nativeFolds = cli(table, ['--folds', '3', '--split-seed', '7']);
      assert.deepEqual(folded.folds, nativeFolds.folds);
      assert.deepEqual(folded.tasks.cohort, nativeFolds.tasks.cohort);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('your own .npz embeddings run the whole protocol as the CLI runs them', async () => {
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      await addFiles(page, join(OWN_EMBEDDINGS, 'binary.npz'), join(OWN_EMBEDDINGS, 'three_classes.npz'));
      await byTestId(page, 'model-kmer').uncheck();
      await byTestId(page, 'model-random-cnn').uncheck();
      await runWithoutError(page);
      const [own] = (await downloadResult(page)).submissions;
      assert.equal(own.model_id, 'embeddings:dropped');
      const native = geneb(['--embeddings', OWN_EMBEDDINGS]);
      assert.deepEqual(own.results, native.results);
      assert.deepEqual(own.predictions, native.predictions);
      assert.deepEqual(own.tasks, native.tasks);
      assert.match(await byTestId(page, 'deviations').textContent(), /the embeddings were made outside geneb/);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('records the model\'s counted parameters and the user\'s submission details, as the CLI does', async () => {
    const app = await openApp(browser, server);
    const { page } = app;
    const bert = join(REPO, 'tests', 'fixtures', 'models', 'bert');
    try {
      await waitReady(page);
      await addFiles(page, table);
      await byTestId(page, 'model-folder').setInputFiles(bert);
      await waitLoaded(page, 'hf:bert');
      await byTestId(page, 'model-kmer').uncheck();
      await byTestId(page, 'model-random-cnn').uncheck();
      await byTestId(page, 'regime-10shot').uncheck();
      await byTestId(page, 'regime-1shot').uncheck();
      await byTestId(page, 'compute').selectOption('cpu');
      await runWithoutError(page);
      const [found] = (await downloadResult(page)).submissions;
      const cliMeta = geneb(['--model', `hf:${bert}`, '--task', table, '--regimes', 'full', '--no-cache']).meta;
      assert.ok(cliMeta.params > 0);
      assert.equal(found.meta.params, cliMeta.params, 'the parameters counted from the same weights');
      assert.equal(found.meta.display, 'bert');
      assert.ok((await byTestId(page, 'meta-recorded').textContent())
        .includes(`bert · ${cliMeta.params.toLocaleString('en-US')} parameters`));

      await byTestId(page, 'meta-panel').locator('summary').click();
      await byTestId(page, 'meta-display').fill('My BERT');
      await byTestId(page, 'meta-params').fill('1234');
      await byTestId(page, 'meta-trainingData').fill('hg38 (in-house)');
      await byTestId(page, 'meta-url').fill('https://example.org/my-bert');
      await byTestId(page, 'meta-submittedBy').fill('A. Lab');
      await runWithoutError(page);
      const [given] = (await downloadResult(page)).submissions;
      assert.deepEqual(given.meta, {
        ...cliMeta, display: 'My BERT', params: 1234, training_data: 'hg38 (in-house)',
        url: 'https://example.org/my-bert', submitted_by: 'A. Lab',
      });
      assert.ok((await byTestId(page, 'meta-recorded').textContent()).includes(
        'My BERT · 1,234 parameters · training data: hg38 (in-house) · https://example.org/my-bert · submitted by A. Lab'));
      await byTestId(page, 'meta-params').fill('12x');
      await byTestId(page, 'run').click();
      assert.match(await byTestId(page, 'error-message').textContent(), /Parameters: “12x” is not a whole number/);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('asks for persistent storage when it keeps tasks, and shows the storage used and left', async () => {
    const app = await openApp(browser, server, {
      beforeGoto: (context) => context.addInitScript(() => {
        // Count the page's requests; the browser's own answer is still the one it gets.
        const persist = navigator.storage.persist.bind(navigator.storage);
        window.persistCalls = 0;
        navigator.storage.persist = () => { window.persistCalls++; return persist(); };
      }),
    });
    const { page } = app;
    try {
      await waitReady(page);
      const line = byTestId(page, 'storage');
      await page.waitForFunction(() => document.querySelector('[data-testid="storage"]')?.dataset.quota);
      const before = Number(await line.getAttribute('data-usage'));
      assert.equal(await page.evaluate(() => window.persistCalls), 0, 'nothing kept, nothing asked');
      assert.ok(Number(await line.getAttribute('data-quota')) > 0);
      assert.match(await line.textContent(), /^Storage: .+ used, .+ left · /);

      await addFiles(page, table);
      await byTestId(page, 'keep-files').check();
      await page.waitForFunction(() => window.persistCalls === 1);
      await page.waitForFunction((b) => Number(document.querySelector('[data-testid="storage"]').dataset.usage) > b, before);
      const persisted = await page.evaluate(() => navigator.storage.persisted());
      assert.equal(await line.getAttribute('data-persisted'), String(persisted));
      assert.match(await line.textContent(), persisted ? /kept: the browser will not clear/ : /not persistent: the browser may clear/);
      // Asked once per page, however often it keeps files.
      await byTestId(page, 'keep-files').uncheck();
      await byTestId(page, 'keep-files').check();
      await page.waitForTimeout(500);
      assert.equal(await page.evaluate(() => window.persistCalls), 1);
    } finally {
      await app.close();
    }
  });

  it('saves the probe the CLI saves and predicts what geneb predict predicts; another encoder is refused', async () => {
    const dir = join(ensureArtifacts(), 'predict');
    mkdirSync(dir, { recursive: true });
    const sequences = join(dir, 'new.fa');
    writeFileSync(sequences, '>s1\nACGTTGCAACGTGCGCGC\n>s2 a second one\nTTGACCAGATATATATAT\n>s3\nGGCATACGGCGCGCGCGC\n');
    const cliProbe = join(dir, 'probe.json');
    const cliScores = join(dir, 'scores.csv');
    native(['eval', '--model', 'kmer:3', '--task', table, '--regimes', 'full', '--no-cache', '--quiet', '--save-probe', cliProbe]);
    native(['predict', '--probe', cliProbe, '--model', 'kmer:3', '--input', sequences, '--out', cliScores]);
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      await addFiles(page, table);
      await byTestId(page, 'model-random-cnn').uncheck();
      await byTestId(page, 'kmer-k').selectOption('3');
      await byTestId(page, 'regime-10shot').uncheck();
      await byTestId(page, 'regime-1shot').uncheck();
      await byTestId(page, 'predict-panel').locator('summary').click();
      await byTestId(page, 'save-probe').check();
      await runWithoutError(page);
      const pageProbe = await downloadOf(page, 'probe-download');
      assertClose(JSON.parse(pageProbe), JSON.parse(readFileSync(cliProbe, 'utf8')), 'the probe file');

      const probeFile = join(dir, 'page-probe.json');
      writeFileSync(probeFile, pageProbe);
      await byTestId(page, 'predict-probe').setInputFiles(probeFile);
      await byTestId(page, 'predict-input').setInputFiles(sequences);
      await byTestId(page, 'predict-run').click();
      await byTestId(page, 'predict-download').waitFor({ state: 'visible', timeout: 60_000 });
      assert.match(await byTestId(page, 'predict-summary').textContent(), /^3 sequences of new\.fa scored by the probe of task cohort/);
      const csvValues = (text) => text.trim().split('\n').map((line) => line.split(',').map((v) => (Number.isNaN(Number(v)) ? v : Number(v))));
      assertClose(csvValues(await downloadOf(page, 'predict-download')), csvValues(readFileSync(cliScores, 'utf8')), 'geneb predict\'s CSV');
      assert.equal(await byTestId(page, 'predict-table').locator('tbody tr').count(), 3);

      // The same probe on a model it was not fitted on.
      await byTestId(page, 'model-folder').setInputFiles(join(REPO, 'tests', 'fixtures', 'models', 'bert'));
      await waitLoaded(page, 'hf:bert');
      await byTestId(page, 'predict-model').focus();
      await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="predict-model"] option')].some((o) => o.value === 'hf:bert'));
      await byTestId(page, 'predict-model').selectOption('hf:bert');
      await byTestId(page, 'predict-run').click();
      await page.waitForFunction(() => document.querySelector('[data-testid="predict-summary"]').classList.contains('error'));
      assert.match(await byTestId(page, 'predict-summary').textContent(), /this probe was fitted on kmer:3/);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });
});
