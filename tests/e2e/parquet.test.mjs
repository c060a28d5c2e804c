// Parquet task tables in the page (src/input/parquet.rs in the wasm core): a table written by
// pyarrow (tests/oracle/make_parquet_fixtures.py) gives the result `geneb eval` gives for the CSV
// it holds, a split-less one is split by the chosen group column as the CLI splits its CSV, a
// zstd one (a codec the page's wasm has not) and a broken one get one-line errors naming the
// file, and the page stays usable.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  NO_WASM, REPO, addFiles, byTestId, downloadResult, launchBrowser, nativeGeneb, openApp, runAndWait,
  runWithoutError, startTestServer, waitReady, wasmBuilt,
} from './helpers.mjs';

const FIXTURES = join(REPO, 'tests', 'fixtures', 'parquet');

function cli(table, extra = []) {
  const bin = nativeGeneb();
  assert.ok(bin && existsSync(bin), 'no native geneb: run `cargo build` first');
  const out = spawnSync(bin, ['eval', '--model', 'kmer:3', '--task', table, '--regimes', 'full,1shot', '--no-cache',
    '--quiet', ...extra], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20 });
  assert.equal(out.status, 0, out.stderr);
  return JSON.parse(out.stdout);
}

async function chooseKmer3(page) {
  await byTestId(page, 'model-random-cnn').uncheck();
  await byTestId(page, 'kmer-k').selectOption('3');
  await byTestId(page, 'regime-10shot').uncheck();
}

describe('Parquet task tables in the page', { timeout: 10 * 60_000 }, () => {
  let server;
  let browser;
  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    server = await startTestServer();
    browser = await launchBrowser({ webgpu: false });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('a Parquet table gives the result of its CSV, and a split-less one the CLI\'s split', async () => {
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      await addFiles(page, join(FIXTURES, 'snappy', 'yeast_fly.parquet'));
      await chooseKmer3(page);
      await runWithoutError(page);
      const [fromParquet] = (await downloadResult(page)).submissions;
      const fromCsv = cli(join(FIXTURES, 'csv', 'yeast_fly.csv'));
      assert.deepEqual(fromParquet.results, fromCsv.results);
      assert.deepEqual(fromParquet.predictions, fromCsv.predictions);
      assert.deepEqual(fromParquet.tasks, fromCsv.tasks);

      await byTestId(page, 'clear-files').click();
      await addFiles(page, join(FIXTURES, 'unsplit-snappy', 'donors.parquet'));
      await byTestId(page, 'split-panel').waitFor({ state: 'visible', timeout: 30_000 });
      assert.match(await byTestId(page, 'split-summary').textContent(), /donors\.parquet has no split column/);
      await byTestId(page, 'split-group').selectOption('donor');
      await runWithoutError(page);
      const [grouped] = (await downloadResult(page)).submissions;
      const native = cli(join(FIXTURES, 'unsplit-csv', 'donors.csv'), ['--group-column', 'donor']);
      assert.deepEqual(grouped.tasks.donors, native.tasks.donors, 'the same split, row for row');
      assert.deepEqual(grouped.results, native.results);
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('zstd and broken Parquet files get one-line errors naming the file; the page stays usable', async () => {
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      await chooseKmer3(page);
      for (const [file, message] of [
        [join(FIXTURES, 'unsplit-zstd', 'donors.parquet'), /donors\.parquet.*zstd-compressed.*use the CLI/],
        [join(FIXTURES, 'bad-parquet', 'truncated.parquet'), /truncated\.parquet.*not a readable Parquet file/],
      ]) {
        if (await byTestId(page, 'clear-files').isVisible()) await byTestId(page, 'clear-files').click();
        await addFiles(page, file);
        await runAndWait(page, 'run');
        const error = await byTestId(page, 'error-message').textContent();
        assert.match(error, message);
        assert.equal(error.trim().split('\n').length, 1, error);
      }
      // Still usable: the CSV runs.
      await byTestId(page, 'clear-files').click();
      await addFiles(page, join(FIXTURES, 'csv', 'yeast_fly.csv'));
      await runWithoutError(page);
    } finally {
      await app.close();
    }
  });
});
