// Threads in the page (www/worker.js, scripts/build-wasm.sh): served with COOP + COEP the page is
// cross-origin isolated and the core runs on a rayon pool of Web Workers; served without COEP
// (a host that cannot set headers) it still runs, on the one-thread build, and says so. Both give
// the native CLI's embeddings (within 1e-5) and its MCC, to the last digit; and the probe's fits
// are the same, bit for bit, on 1, 2 and 4 threads of the threaded core.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startServer } from '../../scripts/serve.mjs';
import {
  FIXTURES, LOAD_TIMEOUT, NO_WASM, REPO, addFiles, byTestId, downloadResult, dropModel, embedThroughPage,
  folderFiles, launchBrowser, nativeGeneb, openApp, pkgMounts, runAndWait, runWithoutError, waitLoaded, waitReady,
  wasmBuilt, readNpyF32,
} from './helpers.mjs';

const NT_V2 = join(REPO, 'tests', 'fixtures', 'models', 'nt_v2');
const TASK = join(FIXTURES, 'e2e_gc_vs_at.csv');
const TASK_ID = 'e2e_gc_vs_at';
const REGIMES = ['full', '10shot', '1shot'];
const TOLERANCE = 1e-5;

function native(args) {
  const cli = nativeGeneb();
  assert.ok(cli, 'no native geneb: run `cargo build` first');
  const out = spawnSync(cli, args, { encoding: 'utf8', timeout: 300_000 });
  assert.equal(out.status, 0, `geneb ${args.join(' ')}: ${out.stderr}`);
  return out;
}

/** The MCC of every fit, by regime: full once, few-shot per seed. */
function mccs(submission) {
  const out = {};
  for (const regime of REGIMES) {
    out[regime] = regime === 'full'
      ? [submission.results.full[TASK_ID].MCC]
      : submission.fewshot[regime][TASK_ID].map((s) => s.MCC);
  }
  return out;
}

describe('threads in the page', { timeout: 15 * 60_000 }, () => {
  let browser;
  let files;
  let sequences;
  let scratch;
  const expected = {};
  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    assert.ok(await import('node:fs').then((fs) => fs.existsSync(join(REPO, 'www', 'pkg-threads', 'geneb.js'))),
      'www/pkg-threads/ has no threaded build: run `bash scripts/build-wasm.sh` (npm test does)');
    // CPU only: the threads serve the CPU backend, and SwiftShader would only slow the test.
    browser = await launchBrowser({ webgpu: false });
    files = await folderFiles(NT_V2);
    sequences = JSON.parse(files['pipeline.json']).sequences;
    scratch = await mkdtemp(join(tmpdir(), 'geneb-threads-'));
    const fasta = join(scratch, 'seqs.fa');
    await writeFile(fasta, sequences.map((s, i) => `>s${i}\n${s}\n`).join(''));
    const npy = join(scratch, 'emb.npy');
    native(['embed', '--model', `hf:${NT_V2}`, '--input', fasta, '--out', npy]);
    expected.embeddings = readNpyF32(await readFile(npy));
    const out = join(scratch, 'native.json');
    native(['eval', '--model', `hf:${NT_V2}`, '--task', TASK, '--regimes', REGIMES.join(','), '--no-cache', '--quiet', '--out', out]);
    expected.mcc = mccs(JSON.parse(await readFile(out, 'utf8')));
  });
  after(async () => {
    await browser?.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  for (const isolated of [true, false]) {
    const name = isolated
      ? 'served cross-origin isolated, the core runs on several threads'
      : 'served without COEP, the page runs on one thread and says so';
    it(`${name}, with the native embeddings and MCC`, { timeout: LOAD_TIMEOUT * 6 }, async () => {
      const server = await startServer({ port: 0, mounts: pkgMounts(), isolated });
      const app = await openApp(browser, server);
      try {
        const { page } = app;
        await waitReady(page);
        assert.equal(await page.evaluate(() => self.crossOriginIsolated), isolated, 'crossOriginIsolated');
        const backend = await byTestId(page, 'backend').textContent();
        const cores = await page.evaluate(() => navigator.hardwareConcurrency);
        if (isolated) {
          assert.ok(cores > 1, `this test needs a machine with 2 or more cores (hardwareConcurrency ${cores})`);
          assert.match(backend, new RegExp(`^CPU, ${cores} threads — `), backend);
        } else {
          assert.match(backend, /^CPU, 1 thread \(one thread: the page is not cross-origin isolated\)/, backend);
        }
        console.log(`# ${isolated ? 'isolated' : 'not isolated'}: ${backend}`);

        await dropModel(page, files);
        await waitLoaded(page, 'hf:dropped-model');
        const r = await embedThroughPage(page, 'hf:dropped-model', sequences, { cpu: true });
        assert.equal(r.values.length, expected.embeddings.length);
        let worst = 0;
        r.values.forEach((v, i) => { worst = Math.max(worst, Math.abs(v - expected.embeddings[i])); });
        console.log(`# max |page - native| = ${worst}`);
        assert.ok(worst <= TOLERANCE, `max |page - native| = ${worst}`);

        await addFiles(page, TASK);
        await page.locator('[data-testid="loaded-model"] input[value="hf:dropped-model"]').check();
        await byTestId(page, 'model-random-cnn').setChecked(false);
        await runWithoutError(page);
        const json = await downloadResult(page);
        const sub = json.submissions.find((s) => s.model_id.startsWith('hf:'));
        assert.ok(sub, `an hf: submission among ${json.submissions.map((s) => s.model_id)}`);
        assert.deepEqual(mccs(sub), expected.mcc, 'every fit\'s MCC equals the native CLI\'s');
        assert.deepEqual(app.consoleErrors, [], 'no console errors');
        app.assertLocalOnly();
      } finally {
        await app.close();
        await server.close();
      }
    });
  }
});

describe('the probe in the page at any thread count', { timeout: 10 * 60_000 }, () => {
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

  it('the demo on 1, 2 and 4 threads: every fit\'s predictions identical, k-mer MCC as the native CLI\'s', { timeout: LOAD_TIMEOUT * 6 }, async () => {
    const runs = {};
    for (const threads of [1, 2, 4]) {
      const app = await openApp(browser, server, { query: `?threads=${threads}` });
      try {
        await waitReady(app.page);
        assert.match(await byTestId(app.page, 'backend').textContent(), new RegExp(`^CPU, ${threads} threads? — `));
        await runAndWait(app.page, 'demo');
        assert.equal(await byTestId(app.page, 'error').isHidden(), true, await byTestId(app.page, 'error').textContent());
        runs[threads] = (await downloadResult(app.page)).submissions;
        app.assertLocalOnly();
      } finally {
        await app.close();
      }
    }
    const evidence = (subs) => subs.map((s) => ({ model: s.model_id, results: s.results, fewshot: s.fewshot, predictions: s.predictions }));
    assert.deepEqual(evidence(runs[2]), evidence(runs[1]), '2 threads vs 1');
    assert.deepEqual(evidence(runs[4]), evidence(runs[1]), '4 threads vs 1');
    const kmer = runs[1].find((s) => s.model_id.startsWith('kmer:'));
    const out = native(['eval', '--model', kmer.model_id, '--task', join(REPO, 'tasks', 'smoke'), '--no-cache', '--quiet']);
    const cli = JSON.parse(out.stdout);
    for (const [regime, tasks] of Object.entries(kmer.results)) {
      for (const [task, r] of Object.entries(tasks)) assert.equal(r.MCC, cli.results[regime][task].MCC, `${regime}/${task}`);
    }
  });
});

describe('relaxed SIMD, which the threaded core is built with', () => {
  it('the worker\'s probe says yes exactly where the threaded core compiles; the one-thread core needs none', () => {
    const wasm = (pkg) => join(REPO, 'www', pkg, 'geneb_bg.wasm');
    assert.ok(wasmBuilt(), NO_WASM);
    const script = `
      import { readFileSync } from 'node:fs';
      import { hasRelaxedSimd } from ${JSON.stringify(pathToFileURL(join(REPO, 'www', 'relaxed-simd.js')).href)};
      const compiles = (file) => WebAssembly.validate(readFileSync(file));
      console.log(JSON.stringify({
        probe: hasRelaxedSimd(),
        threaded: compiles(${JSON.stringify(wasm('pkg-threads'))}),
        oneThread: compiles(${JSON.stringify(wasm('pkg'))}),
      }));`;
    // Node 20's V8 has relaxed SIMD behind this flag, so both answers are seen.
    const seen = new Set();
    for (const flags of [[], ['--experimental-wasm-relaxed-simd']]) {
      const out = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script], { encoding: 'utf8' });
      // A Node whose V8 ships relaxed SIMD may no longer know the flag: its plain run says yes.
      if (flags.length && out.status !== 0 && /bad option/.test(out.stderr)) continue;
      assert.equal(out.status, 0, out.stderr);
      const { probe, threaded, oneThread } = JSON.parse(out.stdout);
      assert.equal(probe, threaded, `node ${flags.join(' ')}: the probe says ${probe}, the threaded core compiles: ${threaded}`);
      assert.equal(oneThread, true, `node ${flags.join(' ')}: the one-thread core must compile without relaxed SIMD`);
      seen.add(probe);
    }
    assert.ok(seen.has(true), 'relaxed SIMD was never available, so the probe was never seen saying yes');
  });
});
