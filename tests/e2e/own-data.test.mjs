// Your own data on the page, against the native CLI on the same files. A table without a split
// column: the core lists its columns for the group picker, splits it with the seed, fraction and
// group column chosen (or into folds), and the result equals `geneb eval` with the same options —
// the same test rows in the same order, the same scores and predictions — with the deviation
// shown. Your own embeddings (.npz): the whole protocol with no encoder, equal to
// `geneb eval --embeddings`.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  NO_WASM, REPO, addFiles, byTestId, downloadResult, ensureArtifacts, launchBrowser, nativeGeneb, openApp,
  runWithoutError, startTestServer, waitReady, wasmBuilt,
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

function geneb(args) {
  const bin = nativeGeneb();
  assert.ok(bin && existsSync(bin), 'no native geneb: run `cargo build` first');
  const out = spawnSync(bin, ['eval', ...args, '--quiet'], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20 });
  assert.equal(out.status, 0, out.stderr);
  return JSON.parse(out.stdout);
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
});

