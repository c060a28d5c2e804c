// Browser end-to-end tests of the saved results and offline use: Debian's Chromium (CPU only:
// k-mer encoders never touch the GPU), the local server on a free port, the real wasm in www/pkg/.
//  (a) runs are kept in IndexedDB across reloads; the comparison shows the core's numbers, its
//      plots and downloads, and the HTML report opens with the network cut; export, import and
//      delete work;
//  (b) after one visit the page works with the network off: it runs kmer:3 on the task files
//      kept in the browser (the demo suite and a file of the user's), with the same scores as
//      the native CLI.
// Every test fails if any request leaves http://127.0.0.1:<port>/.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ARTIFACTS, FIXTURES, LOAD_TIMEOUT, NO_WASM, REPO, RUN_TIMEOUT,
  byTestId, ensureArtifacts, launchBrowser, openApp, pkgMounts, runAndWait,
  startTestServer, waitReady, nativeGeneb, wasmBuilt,
} from './helpers.mjs';
import { startServer } from '../../scripts/serve.mjs';

const TEST_TIMEOUT = RUN_TIMEOUT + LOAD_TIMEOUT;
const SMOKE = join(REPO, 'tasks', 'smoke');
const GENEB_CLI = nativeGeneb() ?? join(REPO, 'target', 'debug', 'geneb');

const savedRows = (page) => page.locator('[data-testid="saved-result"]');

async function waitSavedCount(page, n) {
  await page.waitForFunction((want) => document.querySelectorAll('[data-testid="saved-result"]').length === want,
    n, { timeout: 30_000 });
}

/** Put the demo suite in the task list, choose kmer:K alone, and run the given regimes. */
async function runKmerOnDemoSuite(page, k, regimes = ['full', '10shot', '1shot']) {
  if (await byTestId(page, 'file-list').locator('li').count() === 0) {
    await byTestId(page, 'add-demo-suite').click();
    await byTestId(page, 'file-list').locator('li', { hasText: 'tasks.json' }).waitFor({ timeout: 30_000 });
  }
  await byTestId(page, 'model-kmer').check();
  await byTestId(page, 'kmer-k').selectOption(String(k));
  await byTestId(page, 'model-random-cnn').uncheck();
  for (const regime of ['full', '10shot', '1shot']) {
    await byTestId(page, `regime-${regime}`).setChecked(regimes.includes(regime));
  }
  await runAndWait(page, 'run');
  assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
}

/** The stored records, read back through the page's own store module. */
function storedRecords(page) {
  return page.evaluate(async () => (await import('/store.js')).listResults());
}

/** Save a download under test-artifacts/ and return its path. */
async function download(page, click, name) {
  const [file] = await Promise.all([page.waitForEvent('download', { timeout: 60_000 }), click()]);
  const path = join(ensureArtifacts(), name ?? file.suggestedFilename());
  await file.saveAs(path);
  return { path, suggested: file.suggestedFilename() };
}

describe('saved results and offline use in Chromium', { timeout: 60 * 60_000 }, () => {
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

  it('keeps runs across reloads, compares them with the core\'s numbers, exports, imports and deletes them (screenshots)', { timeout: TEST_TIMEOUT }, async () => {
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      assert.match(await byTestId(page, 'library-summary').textContent(), /No saved results yet/);
      await runKmerOnDemoSuite(page, 3);
      await waitSavedCount(page, 1);
      await runKmerOnDemoSuite(page, 4);
      await waitSavedCount(page, 2);

      // A reload keeps both, newest first, with their tasks and date.
      await page.reload();
      await waitReady(page);
      await waitSavedCount(page, 2);
      const rows = await savedRows(page).evaluateAll((trs) => trs.map((tr) => ({
        model: tr.dataset.model,
        text: tr.textContent,
        date: tr.querySelector('time')?.getAttribute('datetime'),
      })));
      assert.deepEqual(rows.map((r) => r.model), ['kmer:4', 'kmer:3']);
      for (const r of rows) {
        assert.match(r.text, /5 tasks/);
        assert.match(r.text, /smoke_ctcf_gm12878_vs_dinuc_shuffled/);
        assert.match(r.text, /full, 10shot, 1shot/);
        assert.ok(Math.abs(Date.now() - Date.parse(r.date)) < 30 * 60_000, `a recent date: ${r.date}`);
      }
      const records = await storedRecords(page);
      assert.deepEqual(records.map((r) => r.model), ['kmer:4', 'kmer:3']);

      // Compare both: the tables show the core's report, and on this suite (one task per
      // category) each category cell is that task's score in the run's own result.
      await byTestId(page, 'select-all-results').check();
      assert.equal(await byTestId(page, 'library-summary').textContent(), '2 saved results, 2 selected.');
      await runAndWait(page, 'compare-selected');
      assert.equal(await byTestId(page, 'library-error').isHidden(), true, await byTestId(page, 'library-error').textContent());
      assert.equal(await byTestId(page, 'compare').isVisible(), true);
      // The core's own report on the same files, called here directly.
      const core = await page.evaluate(async (files) => {
        const wasm = await import('/pkg/geneb.js');
        await wasm.default();
        return wasm.report({ files });
      }, records.map((r) => ({ name: r.model, text: JSON.stringify(r.submission) })));
      const profile = core.analysis;
      const cats = profile.categories;
      assert.equal(cats.length, 5);
      for (const reg of profile.regimes) {
        const shown = await page.locator(`[data-testid="compare-table-${reg.regime}"] tbody tr:not(.leak-free)`).evaluateAll((trs) =>
          trs.map((tr) => ({ model: tr.querySelector('th code').textContent, cells: [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()) })));
        assert.deepEqual(shown.map((r) => r.model), reg.rows.map((r) => r.model), reg.regime);
        reg.rows.forEach((row, i) => {
          const want = [...cats.map((c) => row.categories[c]), row.macro, row.micro]
            .map((e) => (typeof e === 'number' ? e : e.mean));
          const got = shown[i].cells.map((text) => Number(/^-?\d+\.\d{3}/.exec(text)?.[0]));
          // Each category and the macro cell carry the core's 95 % interval and rank.
          const u = profile.uncertainty.find((x) => x.regime === reg.regime && x.model === row.model);
          cats.forEach((c, j) => {
            const e = u.categories[c];
            assert.ok(shown[i].cells[j].includes(`[${e.lo.toFixed(3)}, ${e.hi.toFixed(3)}]`), `${reg.regime} ${row.model} ${c}: ${shown[i].cells[j]}`);
            assert.match(shown[i].cells[j], / #[12](\.5)?$/);
          });
          want.forEach((w, j) => assert.ok(Math.abs(got[j] - w) <= 0.0005, `${reg.regime} ${row.model} column ${j}: shown ${got[j]}, core ${w}`));
          if (reg.regime === 'full') {
            const sub = records.find((r) => r.model === row.model).submission;
            for (const [task, info] of Object.entries(sub.tasks)) {
              const j = cats.indexOf(info.category);
              assert.ok(Math.abs(got[j] - sub.results.full[task].MCC) <= 0.0005, `${row.model} ${task}`);
            }
          }
        });
      }

      // The plots are the core's SVGs, drawn inline: a heatmap cell per model and category.
      const plots = await byTestId(page, 'plots').locator('svg').count();
      assert.ok(plots >= 3, `several plots: ${plots}`);
      const svgNames = Object.keys(core.svg);
      const heatmap = svgNames.find((n) => /heatmap/i.test(n));
      assert.ok(heatmap, `a heatmap among ${svgNames.join(', ')}`);
      const heatmapStem = heatmap.replace(/\.svg$/i, '');
      const marks = await byTestId(page, `plot-${heatmapStem}`).evaluate((div) => ({
        rects: div.querySelectorAll('svg rect').length,
        text: div.querySelector('svg').textContent,
        title: div.querySelector('svg > title')?.textContent ?? '',
      }));
      assert.ok(marks.rects >= 2 * cats.length, `heatmap rects: ${marks.rects}`);
      for (const label of ['kmer:3', 'kmer:4', ...cats]) assert.ok(marks.text.includes(label), `heatmap names ${label}`);
      assert.ok(marks.title, 'the heatmap has a <title> for screen readers');

      // Downloads: SVG and PNG of a plot, a CSV, the submissions in the leaderboard's schema.
      const svgFile = await download(page, () => byTestId(page, `download-svg-${heatmapStem}`).click());
      assert.equal(await readFile(svgFile.path, 'utf8'), core.svg[heatmap]);
      const png = await readFile((await download(page, () => byTestId(page, `download-png-${heatmapStem}`).click())).path);
      assert.deepEqual([...png.subarray(1, 4)], [...Buffer.from('PNG')]);
      assert.ok(png.readUInt32BE(16) > 100 && png.readUInt32BE(20) > 100, `PNG size ${png.readUInt32BE(16)}×${png.readUInt32BE(20)}`);
      const csvName = Object.keys(core.csv)[0];
      await byTestId(page, 'csv-files').locator('summary').click();
      const csvFile = await download(page, () => byTestId(page, `download-csv-${csvName}`).click());
      assert.equal(await readFile(csvFile.path, 'utf8'), core.csv[csvName]);
      const officialName = Object.keys(core.official)[0];
      const official = await download(page, () => byTestId(page, `download-official-${officialName}`).click());
      assert.equal(await readFile(official.path, 'utf8'), core.official[officialName]);
      const sub = JSON.parse(core.official[officialName]);
      assert.deepEqual(Object.keys(sub).sort(), ['harness_version', 'meta', 'model_id', 'results', 'schema_version']);

      // The statistics: a paired test per category and regime between the two models.
      const paired = await byTestId(page, 'paired').locator('tbody tr').count();
      assert.equal(paired, profile.paired.length);
      assert.ok(paired >= cats.length, `paired rows: ${paired}`);

      // Your models next to the published leaderboard, marked as such.
      await byTestId(page, 'published-full').locator('summary').click();
      const context = profile.published.find((c) => c.regime === 'full');
      const contextRows = byTestId(page, 'published-table-full').locator('tbody tr');
      assert.equal(await contextRows.count(), context.rows.length);
      assert.equal(await contextRows.filter({ hasText: 'published' }).count(), context.rows.filter((r) => r.published).length);
      assert.ok(context.rows.filter((r) => r.published).length >= 40);

      // A parameter budget: the recommendations are the core's under that budget.
      const files = records.map((r) => ({ name: r.model, text: JSON.stringify(r.submission) }));
      const budgeted = await page.evaluate(async (request) => (await import('/pkg/geneb.js')).report(request),
        { files, maxParams: 120_000_000 });
      await byTestId(page, 'param-budget').fill('120');
      await runAndWait(page, 'apply-budget');
      const recommended = await byTestId(page, 'recommendations').locator('tbody tr td:nth-child(3) code').allTextContents();
      assert.deepEqual(recommended, budgeted.analysis.recommendations.map((r) => r.model));
      assert.ok(budgeted.analysis.recommendations.every((r) => r.params <= 120_000_000), 'within the budget');
      assert.notDeepEqual(recommended, profile.recommendations.map((r) => r.model), 'the budget changed the picks');
      assert.match(await page.locator('#an-recommend + p').textContent(), /with at most 120M parameters/);
      await byTestId(page, 'param-budget').fill('lots');
      await byTestId(page, 'apply-budget').click();
      assert.match(await byTestId(page, 'library-error').textContent(), /^Parameter budget: "lots" is not a positive number/);
      // A time budget from each result's measured cost: the core's picks, among your measured
      // results only (published rows have no cost), and the rule said beside them.
      await byTestId(page, 'param-budget').fill('120');
      const timed = await page.evaluate(async (request) => (await import('/pkg/geneb.js')).report(request),
        { files, maxParams: 120_000_000, costBudget: { maxSecondsPer1kSeqs: 1e6 } });
      assert.ok(timed.analysis.recommendations.length > 0 && timed.analysis.recommendations.every((r) => !r.published),
        JSON.stringify(timed.analysis.recommendations));
      await byTestId(page, 'time-budget').fill('1000000');
      await runAndWait(page, 'apply-budget');
      const recommendedTimed = await byTestId(page, 'recommendations').locator('tbody tr td:nth-child(3) code').allTextContents();
      assert.deepEqual(recommendedTimed, timed.analysis.recommendations.map((r) => r.model));
      const intro = await page.locator('#an-recommend + p').textContent();
      assert.match(intro, /at most 1000000 s per 1,000 sequences/);
      assert.match(intro, /results with a measured cost .* are left out/);
      await byTestId(page, 'memory-budget').fill('-2');
      await byTestId(page, 'apply-budget').click();
      assert.match(await byTestId(page, 'library-error').textContent(), /^Memory budget: "-2" is not a positive number of GB/);
      await byTestId(page, 'memory-budget').fill('');

      // The HTML report: one file that opens with the network cut and shows the same numbers.
      const report = await download(page, () => byTestId(page, 'download-report').click());
      assert.equal(report.suggested, 'geneb-report.html');
      const offlineContext = await browser.newContext({ offline: true });
      try {
        const requests = [];
        const reportUrl = pathToFileURL(report.path).href;
        await offlineContext.route('**/*', (route) => {
          const url = route.request().url();
          if (url === reportUrl || url.startsWith('data:')) return route.continue();
          requests.push(url);
          return route.abort();
        });
        const reportPage = await offlineContext.newPage();
        await reportPage.goto(reportUrl);
        const text = await reportPage.locator('body').innerText();
        for (const reg of profile.regimes) {
          for (const row of reg.rows) {
            const macro = typeof row.macro === 'number' ? row.macro : row.macro.mean;
            assert.ok(text.includes(macro.toFixed(3)), `the report shows ${row.model}'s ${reg.regime} macro ${macro.toFixed(3)}`);
          }
        }
        assert.match(text, /GENEB/);
        assert.ok(await reportPage.locator('svg').count() >= 3, 'the report carries its plots');
        assert.deepEqual(requests, [], 'the report asks for nothing');
      } finally {
        await offlineContext.close();
      }

      // Every visible control has a name for screen readers, and keyboard focus is visible.
      const unnamed = await page.evaluate(() => {
        const nameOf = (node) => node.getAttribute('aria-label')
          || (node.getAttribute('aria-labelledby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' ').trim()
          || [...(node.labels ?? [])].map((l) => l.textContent).join(' ').trim()
          || (node.type === 'file' ? '' : node.textContent.trim())
          || node.getAttribute('title');
        return [...document.querySelectorAll('button, input, select, summary, [tabindex="0"]')]
          .filter((node) => node.getClientRects().length && !nameOf(node))
          .map((node) => node.outerHTML.slice(0, 120));
      });
      assert.deepEqual(unnamed, [], 'controls without a name');
      await byTestId(page, 'download-report').focus();
      await page.keyboard.press('Shift+Tab');
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'download-report');
      assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), 'none', 'visible focus');

      // Screenshots of the comparison at desktop and phone width.
      await page.screenshot({ path: join(ARTIFACTS, 'compare-desktop-1280.png'), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, null, { timeout: 10_000 });
      await page.screenshot({ path: join(ARTIFACTS, 'compare-phone-390.png'), fullPage: true });
      await page.setViewportSize({ width: 1280, height: 900 });

      // Export the selection: one bundle that geneb reads back.
      const exported = await download(page, () => byTestId(page, 'export-selected').click(), 'exported.json');
      assert.equal(exported.suggested, 'geneb-results-2.json');
      const bundle = JSON.parse(await readFile(exported.path, 'utf8'));
      assert.deepEqual(bundle.submissions.map((s) => s.model_id), ['kmer:4', 'kmer:3']);

      // Delete kmer:3, keyboard only: the dialog opens on "Keep them"; Escape keeps it.
      await byTestId(page, 'select-all-results').uncheck();
      await page.getByRole('checkbox', { name: /^Select kmer:3,/ }).check();
      await byTestId(page, 'delete-selected').focus();
      await page.keyboard.press('Enter');
      const dialog = byTestId(page, 'confirm-delete');
      await dialog.waitFor({ state: 'visible' });
      assert.match(await dialog.textContent(), /Delete 1 saved result from this browser\? kmer:3\./);
      assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'confirm-keep');
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      assert.equal(await savedRows(page).count(), 2, 'kept');
      await byTestId(page, 'delete-selected').click();
      await byTestId(page, 'confirm-delete-yes').click();
      await waitSavedCount(page, 1);
      assert.equal(await byTestId(page, 'compare').isHidden(), true, 'the comparison of a deleted result closes');
      await page.reload();
      await waitReady(page);
      await waitSavedCount(page, 1);
      assert.equal(await savedRows(page).first().getAttribute('data-model'), 'kmer:4');
      assert.deepEqual(app.consoleErrors, [], 'no console errors');
      app.assertLocalOnly();

      // Import into a fresh browser profile: the bundle, again (nothing new), and a broken file.
      const other = await openApp(browser, server);
      try {
        await waitReady(other.page);
        await byTestId(other.page, 'import-results').setInputFiles(exported.path);
        await waitSavedCount(other.page, 2);
        assert.match(await byTestId(other.page, 'library-notice').textContent(), /^Imported 2 results\.$/);
        assert.match(await savedRows(other.page).first().textContent(), /import: exported\.json/);
        await byTestId(other.page, 'import-results').setInputFiles([
          { name: 'exported.json', mimeType: 'application/json', buffer: await readFile(exported.path) },
          { name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"results": ') },
          { name: 'other.json', mimeType: 'application/json', buffer: Buffer.from('{"hello": 1}') },
        ]);
        await byTestId(other.page, 'library-error').waitFor({ state: 'visible' });
        assert.match(await byTestId(other.page, 'library-notice').textContent(), /^Imported 0 results \(2 already saved\)\.$/);
        const problems = (await byTestId(other.page, 'library-error').textContent()).split('\n');
        assert.equal(problems.length, 2, problems.join(' | '));
        assert.match(problems[0], /^broken\.json: not valid JSON/);
        assert.match(problems[1], /^other\.json: not a GENEB result file .*expected schema_version, model_id, meta and results/);
        assert.equal(await savedRows(other.page).count(), 2);

        // A file that only looks like a result is stored, but the core refuses to compare it,
        // naming it; the page stays usable.
        const shallow = { schema_version: '1.0', model_id: 'lookalike', meta: {}, results: { full: { t: { MCC: 'high' } } } };
        await byTestId(other.page, 'import-results').setInputFiles(
          { name: 'lookalike.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(shallow)) });
        await waitSavedCount(other.page, 3);
        await other.page.getByRole('checkbox', { name: /^Select lookalike,/ }).check();
        await runAndWait(other.page, 'compare-selected');
        assert.match(await byTestId(other.page, 'library-error').textContent(),
          /^The comparison failed: lookalike \(import: lookalike\.json, [^)]*\): not a GENEB result file/);
        assert.equal(await byTestId(other.page, 'compare').isHidden(), true);
        assert.equal(await byTestId(other.page, 'status').textContent(), 'ready');
        other.assertLocalOnly();
      } finally {
        await other.close();
      }
    } finally {
      await app.close();
    }
  });

  it('works offline after one visit: kmer:3 on the kept task files, as the native CLI scores them', { timeout: TEST_TIMEOUT }, async () => {
    assert.ok(existsSync(GENEB_CLI), `no ${GENEB_CLI}: run \`cargo build\` first (offline scores are checked against the CLI)`);
    const scratch = await mkdtemp(join(tmpdir(), 'geneb-offline-'));
    // Its own server, stopped below: the network is really gone, not only emulated.
    const favicon = join(scratch, 'favicon.png');
    await copyFile(join(REPO, 'www', 'favicon.png'), favicon);
    const own = await startServer({ port: 0, mounts: [...pkgMounts(), ['/favicon.png', favicon]] });
    let stopped = false;
    const app = await openApp(browser, own);
    const { page, context } = app;
    try {
      await waitReady(page);
      await page.waitForFunction(() => /^ready/.test(document.querySelector('[data-testid="offline"]').textContent),
        null, { timeout: LOAD_TIMEOUT });

      // Every file of the page and the demo suite is in the cache (sw.js lists the shell by hand).
      const cached = await page.evaluate(async () => {
        const keys = [];
        for (const name of await caches.keys()) {
          for (const req of await (await caches.open(name)).keys()) keys.push(new URL(req.url).pathname);
        }
        return keys;
      });
      const www = join(REPO, 'www');
      const files = (dir) => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));
      const wanted = [...files(www).map((f) => `/${relative(www, f)}`).filter((p) => p !== '/sw.js' && !p.startsWith('/pkg/')),
        '/', '/pkg/geneb.js', '/pkg/geneb_bg.wasm', '/tasks/smoke/tasks.json',
        ...readdirSync(SMOKE).filter((f) => f.endsWith('.csv')).map((f) => `/tasks/smoke/${f}`)];
      for (const p of wanted) assert.ok(cached.includes(p), `${p} is cached (have ${cached.join(', ')})`);

      // The user keeps their task files in the browser: the demo suite and one of their own.
      await byTestId(page, 'add-demo-suite').click();
      await byTestId(page, 'task-files').setInputFiles(join(FIXTURES, 'e2e_gc_vs_at.csv'));
      await byTestId(page, 'keep-files').check();
      await byTestId(page, 'file-list').locator('li').nth(6).waitFor();
      assert.match(await byTestId(page, 'files-summary').textContent(), /^7 files chosen .*kept in this browser\.$/);

      // A new build on the server replaces the cached copy on the next online load.
      // (Bytes after a PNG's IEND chunk are ignored by decoders: still a valid icon.)
      const newIcon = Buffer.concat([await readFile(favicon), Buffer.from('new build')]);
      await writeFile(favicon, newIcon);
      await page.reload();
      await waitReady(page);
      await page.waitForFunction(async (want) => {
        const res = await caches.match('/favicon.png');
        return res && [...new Uint8Array(await res.arrayBuffer())].join() === want;
      }, [...newIcon].join(), { timeout: 30_000, polling: 200 });

      // Cut the network: the browser goes offline and the server stops.
      await context.setOffline(true);
      await own.close();
      stopped = true;
      await page.reload();
      await waitReady(page);
      assert.equal(await page.evaluate(() => Boolean(navigator.serviceWorker.controller)), true, 'served by the service worker');
      assert.match(await byTestId(page, 'offline').textContent(), /you are offline/);
      await byTestId(page, 'file-list').locator('li').nth(6).waitFor();
      assert.equal(await byTestId(page, 'notice').textContent(), 'Restored 7 task files kept in this browser.');
      assert.equal(await byTestId(page, 'keep-files').isChecked(), true);
      await runKmerOnDemoSuite(page, 3, ['full']);
      await waitSavedCount(page, 1);
      const [record] = await storedRecords(page);
      assert.equal(record.model, 'kmer:3');
      assert.ok(record.tasks.includes('e2e_gc_vs_at'), `the user's own task ran: ${record.tasks.join(', ')}`);

      // The same scores as the native CLI on the same files.
      const out = join(scratch, 'kmer3.json');
      const cli = spawnSync(GENEB_CLI, ['eval', '--model', 'kmer:3', '--task', SMOKE, '--regimes', 'full', '--out', out], { encoding: 'utf8', timeout: 120_000 });
      assert.equal(cli.status, 0, cli.stderr);
      const native = JSON.parse(await readFile(out, 'utf8'));
      const tasks = Object.keys(native.results.full);
      assert.equal(tasks.length, 5);
      assert.deepEqual(record.tasks, [...tasks, 'e2e_gc_vs_at'].sort());
      for (const task of tasks) {
        for (const metric of ['MCC', 'Acc', 'F1']) {
          const browserValue = record.submission.results.full[task][metric];
          assert.ok(Math.abs(browserValue - native.results.full[task][metric]) <= 1e-9,
            `${task} ${metric}: browser ${browserValue}, native ${native.results.full[task][metric]}`);
        }
      }
      ensureArtifacts();
      await page.screenshot({ path: join(ARTIFACTS, 'offline-run-1280.png'), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, null, { timeout: 10_000 });
      await page.screenshot({ path: join(ARTIFACTS, 'offline-run-phone-390.png'), fullPage: true });
      assert.deepEqual(app.consoleErrors, [], 'no console errors');
      app.assertLocalOnly();
    } finally {
      await app.close();
      if (!stopped) await own.close();
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
