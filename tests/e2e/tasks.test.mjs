// Official GENEB tasks and the offline suite in the page (www/tasks.js): two GENEB-format task
// tables served in the hub's dataset URL layout from 127.0.0.1 are chosen in the picker, planned
// (HEAD sizes), confirmed, downloaded with byte progress and run with kmer:3; the profile shows them
// under their catalogue categories with the MCC `geneb eval` gives natively; with the hub stopped,
// a reload takes them from the Cache API. And the committed offline suite runs with no network.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  LOAD_TIMEOUT, NO_WASM, REPO, byTestId, cellMean, launchBrowser, openApp, pkgMounts, runAndWait,
  startFakeHub, waitReady, nativeGeneb, wasmBuilt,
} from './helpers.mjs';
import { startServer } from '../../scripts/serve.mjs';

const HUB_TASKS = join(REPO, 'tests', 'fixtures', 'hub');
const TASK_IDS = ['deep4mc_E.coli_4mC', 'iDHS-EL_DNase_I'];
/**
 * `geneb eval --model kmer:3 --regimes full --task DIR` on a folder holding the two fixture task
 * folders, from the native build; used when no native binary is built here (GENEB_BIN, or
 * target/{release,debug}/geneb under CARGO_TARGET_DIR or the repo).
 */
const NATIVE_FALLBACK = join(REPO, 'tests', 'e2e', 'fixtures', 'geneb-tasks-kmer3.json');

async function nativeMcc() {
  const bin = nativeGeneb();
  let submission;
  if (bin) {
    const out = execFileSync(bin, ['eval', '--model', 'kmer:3', '--regimes', 'full', '--quiet',
      ...TASK_IDS.flatMap((id) => ['--task', join(HUB_TASKS, 'tasks', id)])]);
    submission = JSON.parse(out);
    console.log(`native MCC from ${bin}`);
  } else {
    submission = JSON.parse(await readFile(NATIVE_FALLBACK, 'utf8'));
    console.log(`native MCC from ${NATIVE_FALLBACK} (no native build here)`);
  }
  return { mcc: Object.fromEntries(TASK_IDS.map((id) => [id, submission.results.full[id].MCC])), tasks: submission.tasks };
}

/** Choose kmer:3 alone and the full-data regime alone. */
async function chooseKmer3Full(page) {
  for (const box of await page.locator('#model input[name=model]').all()) {
    await box.setChecked((await box.getAttribute('data-testid')) === 'model-kmer');
  }
  await byTestId(page, 'kmer-k').selectOption('3');
  for (const regime of ['full', '10shot', '1shot']) await byTestId(page, `regime-${regime}`).setChecked(regime === 'full');
}

async function pickTasks(page) {
  const picker = byTestId(page, 'geneb-picker');
  if (!(await picker.evaluate((d) => d.open))) await picker.locator(':scope > summary').click();
  await byTestId(page, 'geneb-task').first().waitFor({ state: 'attached', timeout: LOAD_TIMEOUT });
  for (const id of TASK_IDS) {
    const row = page.locator(`[data-testid="geneb-task"][data-task-id="${id}"]`);
    const category = row.locator('xpath=ancestor::details[1]');
    if (!(await category.evaluate((d) => d.open))) await category.locator(':scope > summary').click();
    await row.locator('input').check();
  }
  await byTestId(page, 'tasks-fetch').click();
}

async function waitTasksAdded(page) {
  await page.waitForFunction(() => {
    const status = document.querySelector('[data-testid="tasks-status"]');
    const error = document.querySelector('[data-testid="tasks-error"]');
    return /^Added /.test(status?.textContent ?? '') || (error && !error.hidden && error.textContent);
  }, null, { timeout: LOAD_TIMEOUT, polling: 100 });
  const error = byTestId(page, 'tasks-error');
  if (await error.isVisible()) throw new Error(`getting the tasks failed: ${await error.textContent()}`);
  return byTestId(page, 'tasks-status').textContent();
}

/** Category → cell text of the kmer:3 row in the full-data profile table. */
async function profileByCategory(page) {
  const table = byTestId(page, 'profile-table-full');
  const heads = await table.locator('thead th').allTextContents();
  const cells = await table.locator('tbody tr').first().locator('td').allTextContents();
  return Object.fromEntries(heads.slice(1).map((c, i) => [c, cells[i].trim()]));
}

/** The downloaded result JSON of the last run. */
async function downloadedResult(page) {
  const [download] = await Promise.all([page.waitForEvent('download'), byTestId(page, 'download').click()]);
  return JSON.parse(await readFile(await download.path(), 'utf8'));
}

describe('official GENEB tasks and the offline suite in the page', { timeout: 15 * 60_000 }, () => {
  let browser;
  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    browser = await launchBrowser({ webgpu: false });
  });
  after(async () => {
    await browser?.close();
  });

  it('GENEB tasks from the hub: plan, confirm, progress, run under their categories, then from the cache', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const catalogue = JSON.parse(await readFile(join(REPO, 'tasks', 'catalogue', 'geneb-catalogue.json'), 'utf8'));
    const records = TASK_IDS.map((id) => catalogue.tasks.find((t) => t.id === id));
    const served = {};
    for (const t of records) {
      for (const path of [t.files.train, t.files.test]) served[path] = await readFile(join(HUB_TASKS, path));
    }
    // The train tables come as LFS files (redirect, sha256), the test tables as small git files.
    const hub = await startFakeHub(served, { repo: `datasets/${records[0].hf_dataset}`, rev: records[0].revision, lfs: (name) => name.endsWith('/train.csv') });
    const server = await startServer({ port: 0, mounts: pkgMounts(), hubOrigin: hub.origin });
    const app = await openApp(browser, server, {
      beforeGoto: (context) => context.route(`${hub.origin}/**`, (route) => route.continue()),
    });
    const { page } = app;
    const native = await nativeMcc();
    try {
      await page.goto(`${app.origin}?hub=${encodeURIComponent(hub.origin)}`);
      await waitReady(page);
      assert.equal(await byTestId(page, 'geneb-task').count(), 100);
      assert.deepEqual(await byTestId(page, 'task-category').evaluateAll((ds) => ds.map((d) => d.dataset.category)), catalogue.categories);
      assert.match(await byTestId(page, 'tasks-limit').textContent(), /1 GiB of embeddings per task/);
      // The lite suite ticks its 13 tasks.
      await byTestId(page, 'geneb-picker').locator(':scope > summary').click();
      await byTestId(page, 'suite-geneb-lite').click();
      assert.equal(await page.locator('input[name=geneb-task]:checked').count(), 13);
      await page.locator('input[name=geneb-task]:checked').evaluateAll((bs) => bs.forEach((b) => { b.checked = false; }));

      await pickTasks(page);
      const plan = byTestId(page, 'tasks-panel').locator('[data-testid="hub-plan"]');
      await plan.waitFor({ timeout: LOAD_TIMEOUT });
      const planText = await plan.textContent();
      for (const path of Object.keys(served)) {
        const size = served[path].length;
        const shown = size < 1024 ? `${size} B` : `${(size / 1024).toFixed(size < 10 * 1024 ? 1 : 0)} kB`;
        assert.ok(planText.includes(`${path.replace(/^tasks\//, '')} ${shown}`), `${path} and its HEAD size in the plan: ${planText}`);
      }
      assert.ok(!hub.hits.some((hit) => hit.startsWith('GET ')), 'nothing downloaded before the confirmation');
      await page.evaluate(() => {
        window.__statuses = [];
        const node = document.querySelector('[data-testid="tasks-status"]');
        new MutationObserver(() => window.__statuses.push(node.textContent)).observe(node, { childList: true, characterData: true, subtree: true });
      });
      await plan.locator('[data-testid="hub-confirm"]').click();
      const added = await waitTasksAdded(page);
      assert.match(added, /Added 2 GENEB tasks .*kept it for offline use/);
      assert.match(added, /deep4mc_E\.coli_4mC: no sha256 from the hub for test\.csv/, 'train.csv verified by its sha256, test.csv has none');
      const statuses = await page.evaluate(() => window.__statuses);
      assert.ok(statuses.some((s) => /^downloading deep4mc_E\.coli_4mC\/train\.csv: .* of /.test(s)), statuses.join(' | '));
      const filesShown = await byTestId(page, 'file-list').textContent();
      for (const id of TASK_IDS) for (const f of ['train.csv', 'test.csv']) assert.ok(filesShown.includes(`${id}/${f}`), filesShown);
      assert.deepEqual([...new Set(app.offsite.filter((u) => !u.startsWith(hub.origin)))], [], 'only the page server and the local hub');

      await chooseKmer3Full(page);
      await runAndWait(page, 'run');
      const byCategory = await profileByCategory(page);
      for (const t of records) {
        assert.equal(cellMean(byCategory[t.category]), Number(native.mcc[t.id].toFixed(3)), `${t.id} under ${t.category}: ${JSON.stringify(byCategory)}`);
      }
      const result = await downloadedResult(page);
      for (const t of records) {
        assert.equal(result.submissions[0].results.full[t.id].MCC, native.mcc[t.id], `${t.id}: page MCC equals the native one`);
        assert.equal(result.submissions[0].tasks[t.id].category, t.category);
      }
      console.log(`page = native kmer:3 full MCC: ${JSON.stringify(native.mcc)}`);

      // The hub goes away; the tasks come from the Cache API.
      await hub.close();
      const hitsBefore = hub.hits.length;
      await page.reload();
      await waitReady(page);
      await page.waitForFunction((ids) => ids.every((id) => {
        const tag = document.querySelector(`[data-task-id="${id}"] [data-testid="task-cached"]`);
        return tag && !tag.hidden;
      }), TASK_IDS, { timeout: LOAD_TIMEOUT, polling: 100 });
      await pickTasks(page);
      assert.match(await waitTasksAdded(page), /Added 2 GENEB tasks to your task files, 2 from this browser's cache\./);
      assert.equal(await byTestId(page, 'tasks-panel').locator('[data-testid="hub-plan"]').count(), 0, 'no plan: nothing to download');
      assert.equal(hub.hits.length, hitsBefore, 'nothing asked of the (stopped) hub');
      await chooseKmer3Full(page);
      await runAndWait(page, 'run');
      const again = await downloadedResult(page);
      for (const id of TASK_IDS) assert.equal(again.submissions[0].results.full[id].MCC, native.mcc[id]);
    } finally {
      await app.close();
      await server.close();
      await hub.close();
    }
  });

  it('the offline real-genome suite runs from the page with no network, its credits shown', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const manifest = JSON.parse(await readFile(join(REPO, 'tasks', 'offline', 'tasks.json'), 'utf8'));
    const server = await startServer({ port: 0, mounts: pkgMounts() });
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      assert.equal(await byTestId(page, 'offline-task').count(), manifest.tasks.length);
      const credits = await byTestId(page, 'offline-credits').textContent();
      for (const p of new Set(manifest.tasks.flatMap((t) => t.packages.map((x) => `${x.name} ${x.version} (${x.licence}`)))) {
        assert.ok(credits.includes(p), `credit for ${p}`);
      }
      await chooseKmer3Full(page);
      await runAndWait(page, 'offline-suite');
      const error = byTestId(page, 'error');
      assert.ok(!(await error.isVisible()), await error.textContent());
      const byCategory = await profileByCategory(page);
      const categories = [...new Set(manifest.tasks.map((t) => t.category))];
      for (const c of categories) assert.ok(Number.isFinite(cellMean(byCategory[c])), `${c}: ${JSON.stringify(byCategory)}`);
      assert.equal(await byTestId(page, 'tasks-table').locator('tbody tr').count(), manifest.tasks.length);
      console.log(`offline suite, kmer:3 full, per category: ${JSON.stringify(byCategory)}`);
      app.assertLocalOnly();
    } finally {
      await app.close();
      await server.close();
    }
  });
});
