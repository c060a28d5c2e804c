// The leak audit in the page, against the native CLI on the same files: the audit of every
// dropped task is shown as soon as it is chosen (before anything is embedded) and equals
// `geneb audit --json`; a run records the same audit and leak-free MCCs as `geneb eval`, and
// "Keep relatives together" splits as `--split-by similarity` does.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  NO_WASM, REPO, addFiles, byTestId, downloadResult, launchBrowser, nativeGeneb, openApp,
  runWithoutError, startTestServer, waitReady, wasmBuilt,
} from './helpers.mjs';

const FIXTURES = join(REPO, 'tests', 'fixtures', 'audit');

function native(args) {
  const bin = nativeGeneb();
  assert.ok(bin && existsSync(bin), 'no native geneb: run `cargo build` first');
  const out = spawnSync(bin, args, { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20 });
  assert.equal(out.status, 0, out.stderr);
  return JSON.parse(out.stdout);
}

/** The audit panel's rows: [{task, cells: [text...]}]. */
async function auditRows(page) {
  return byTestId(page, 'audit-table').locator('tbody tr').evaluateAll((trs) =>
    trs.map((tr) => ({ task: tr.dataset.task, cells: [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()) })));
}

describe('the leak audit in the page', { timeout: 10 * 60_000 }, () => {
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

  it('audits the dropped tasks before anything is embedded, as geneb audit does, and a run records it', async () => {
    const planted = join(FIXTURES, 'table', 'planted.csv');
    const leaked = join(FIXTURES, 'leaked', 'all_leaked.csv');
    // The page reads its tasks sorted by id, as the core's readers give them.
    const want = native(['audit', '--task', planted, '--task', leaked, '--json']).tasks
      .sort((a, b) => a.task.localeCompare(b.task));
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      await addFiles(page, planted, leaked);
      await byTestId(page, 'audit-table').locator('tbody tr').nth(1).waitFor({ timeout: 60_000 });
      assert.equal(await byTestId(page, 'status').textContent(), 'ready', 'nothing runs for the audit');
      const rows = await auditRows(page);
      assert.deepEqual(rows.map((r) => r.task), want.map((a) => a.task));
      for (const [row, a] of rows.map((r, i) => [r, want[i]])) {
        const share = (100 * a.leaked_test_rows.length / a.test).toFixed(1);
        assert.deepEqual(row.cells, [
          a.task, String(a.train), String(a.test), String(a.exact_copies), String(a.reverse_complement_copies),
          String(a.near_copies), `${a.leaked_test_rows.length} (${share} %)`, a.nearest_neighbour_mcc.toFixed(3), a.verdict,
        ], a.task);
      }
      assert.match(await byTestId(page, 'audit-summary').textContent(), /2 of 2 tasks leak/);

      await byTestId(page, 'model-random-cnn').uncheck();
      await byTestId(page, 'kmer-k').selectOption('3');
      await byTestId(page, 'regime-10shot').uncheck();
      await runWithoutError(page);
      const result = (await downloadResult(page)).submissions[0];
      const cli = native(['eval', '--model', 'kmer:3', '--task', planted, '--task', leaked, '--regimes', 'full,1shot',
        '--no-cache', '--quiet']);
      assert.deepEqual(result.audit, cli.audit, 'the same audit in the result');
      assert.deepEqual(Object.keys(result.leak_free).sort(), ['1shot', 'full']);
      assert.equal(result.leak_free.full.all_leaked.MCC, null, 'no row left to score');
      for (const regime of ['full', '1shot']) {
        const [page_, cli_] = [result.leak_free[regime].planted.MCC, cli.leak_free[regime].planted.MCC];
        assert.ok(Math.abs(page_ - cli_) <= 1e-9, `${regime}: ${page_} vs ${cli_}`);
      }
      await byTestId(page, 'leak-free-row').first().waitFor({ timeout: 10_000 });
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });

  it('keeps relatives together as geneb eval --split-by similarity does', async () => {
    const unsplit = join(FIXTURES, 'unsplit', 'unsplit.csv');
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      await addFiles(page, unsplit);
      await byTestId(page, 'split-panel').waitFor({ state: 'visible', timeout: 30_000 });
      await byTestId(page, 'split-similar').check();
      await byTestId(page, 'model-random-cnn').uncheck();
      await byTestId(page, 'kmer-k').selectOption('3');
      await byTestId(page, 'regime-10shot').uncheck();
      await byTestId(page, 'regime-1shot').uncheck();
      await runWithoutError(page);
      const result = (await downloadResult(page)).submissions[0];
      const cli = native(['eval', '--model', 'kmer:3', '--task', unsplit, '--regimes', 'full', '--split-by', 'similarity',
        '--no-cache', '--quiet']);
      assert.deepEqual(result.tasks.unsplit, cli.tasks.unsplit, 'the same split, row for row');
      assert.match(result.tasks.unsplit.split.method, /^by similarity cluster/);
      assert.deepEqual(result.audit.unsplit.leaked_test_rows, [], 'no relative across the split');
      assert.match(await byTestId(page, 'deviations').textContent(), /clusters of related sequences/);
    } finally {
      await app.close();
    }
  });
});
