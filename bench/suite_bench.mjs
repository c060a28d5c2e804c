#!/usr/bin/env node
// The committed offline suite (tasks/offline: 18 tasks of real genomes) with one foundation model,
// all three regimes, as a user runs it: in headless Chromium through the page (the model folder
// into "Choose a folder", that model alone ticked, full + 10-shot + 1-shot, "Run the offline
// suite", the wasm CPU backend on the threaded core when the page is cross-origin isolated), then
// `geneb eval` natively on the same folder, tasks and regimes with --no-cache. Prints both wall
// times and their ratio, and checks that the two profiles agree as far as the protocol lets them:
// the page's embeddings differ from native ones in the last bits (other kernels, other rounding),
// and lbfgs stopping at GENEB's tol = 1e-4 is not continuous in its input. Measured with
// scikit-learn itself (bench/README.md, "Page and CLI MCCs"): native embeddings moved by one f32
// ulp changed 10 of this suite's 198 fits, by up to 1.9e-2 MCC. So a fit may differ by up to
// MAX_FIT_DELTA and at most MAX_CHANGED_SHARE of the fits may differ at all; a wrong page (a
// pooling, a layer, a tokenizer off) moves most fits and cannot pass.
//
//   node bench/suite_bench.mjs [--model DIR] [--geneb PATH] [--threads N] [--timeout S]
//
// DIR defaults to target/bench-models/nt-v2-50m (`python3 bench/model_bench.py --make-checkpoint
// nt-v2-50m`). The page's time runs from the click on the button to the profile's table; the
// native time is the whole `geneb eval` process, model load included.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  NO_WASM, REPO, byTestId, downloadResult, launchBrowser, openApp, pkgMounts, waitReady, waitRunEnd, wasmBuilt,
} from '../tests/e2e/helpers.mjs';
import { startServer } from '../scripts/serve.mjs';

const REGIMES = ['full', '10shot', '1shot'];
const MAX_FIT_DELTA = 0.05;
const MAX_CHANGED_SHARE = 0.25;

function parseArgs(argv) {
  const args = {
    model: join(REPO, 'target', 'bench-models', 'nt-v2-50m'),
    geneb: join(REPO, 'target', 'release', 'geneb'),
    threads: null,
    timeout: 3 * 3600,
  };
  for (let i = 0; i < argv.length; i++) {
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
      return argv[++i];
    };
    if (argv[i] === '--model') args.model = value();
    else if (argv[i] === '--geneb') args.geneb = value();
    else if (argv[i] === '--threads') args.threads = Number(value());
    else if (argv[i] === '--timeout') args.timeout = Number(value());
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return args;
}

const load = () => loadavg()[0].toFixed(1);

/** Every fit's MCC: {`${task}/${regime}`: [MCC, ...]} (few-shot: one per seed). */
function mccs(result) {
  // The page's download is `{submissions: [...]}` (one per model of the run), the CLI's one submission.
  const submissions = result.submissions ?? [result];
  if (submissions.length !== 1) throw new Error(`expected one model's results, got ${submissions.length}`);
  const [submission] = submissions;
  const out = {};
  for (const [task, r] of Object.entries(submission.results.full)) out[`${task}/full`] = [r.MCC];
  for (const regime of REGIMES.slice(1)) {
    for (const [task, seeds] of Object.entries(submission.fewshot[regime])) out[`${task}/${regime}`] = seeds.map((s) => s.MCC);
  }
  return out;
}

async function inThePage(args) {
  if (!wasmBuilt()) throw new Error(NO_WASM);
  const server = await startServer({ port: 0, mounts: pkgMounts() });
  const browser = await launchBrowser({ webgpu: false });
  const app = await openApp(browser, server, { query: args.threads ? `?threads=${args.threads}` : '' });
  const { page } = app;
  try {
    await waitReady(page);
    const backendLine = await byTestId(page, 'backend').textContent();
    const name = args.model.split('/').filter(Boolean).pop();
    const spec = `hf:${name.replace(/[^\w.-]+/g, '-')}`; // as www/models.js names a picked folder
    await byTestId(page, 'model-folder').setInputFiles(args.model);
    await page.waitForFunction((s) => [...document.querySelectorAll('[data-testid="loaded-model"] input')].some((i) => i.value === s),
      spec, { timeout: 600_000, polling: 200 });
    // The baselines off; of the loaded folders only this one (they are ticked when loaded).
    for (const box of await page.locator('input[name=model], input[name=hf-model]').all()) {
      await box.setChecked((await box.getAttribute('value')) === spec);
    }
    for (const regime of REGIMES) await byTestId(page, `regime-${regime}`).setChecked(true);
    const before = load();
    const start = performance.now();
    await byTestId(page, 'offline-suite').click();
    await waitRunEnd(page, args.timeout * 1000);
    const seconds = (performance.now() - start) / 1000;
    const error = byTestId(page, 'error');
    if (await error.isVisible()) throw new Error(`the page's run failed: ${await error.textContent()}`);
    const submission = await downloadResult(page);
    return { seconds, backendLine, spec, submission, load: `${before} → ${load()}` };
  } finally {
    await app.close();
    await browser.close();
    await server.close();
  }
}

function natively(args) {
  if (!existsSync(args.geneb)) throw new Error(`${args.geneb}: no native geneb (cargo build --release --bin geneb)`);
  const out = join(process.env.GENEB_BENCH_OUT ?? tmpdir(), `suite_bench_native_${process.pid}.json`);
  const env = { ...process.env, ...(args.threads ? { RAYON_NUM_THREADS: String(args.threads) } : {}) };
  const before = load();
  const start = performance.now();
  const run = spawnSync(args.geneb, ['eval', '--model', `hf:${args.model}`, '--task', join(REPO, 'tasks', 'offline'),
    '--regimes', REGIMES.join(','), '--no-cache', '--quiet', '--out', out], { env, encoding: 'utf8' });
  const seconds = (performance.now() - start) / 1000;
  if (run.status !== 0) throw new Error(`geneb eval failed: ${run.stderr}`);
  return { seconds, submission: JSON.parse(readFileSync(out, 'utf8')), load: `${before} → ${load()}` };
}

const args = parseArgs(process.argv.slice(2));
const tasks = JSON.parse(readFileSync(join(REPO, 'tasks', 'offline', 'tasks.json'), 'utf8')).tasks;
console.log(`offline suite: ${tasks.length} tasks, regimes ${REGIMES.join(', ')}; model ${args.model}; load ${load()}`);
const page = await inThePage(args);
console.log(`page:   ${page.seconds.toFixed(1)} s (${(page.seconds / 60).toFixed(1)} min), ${page.backendLine.trim()}; load ${page.load}`);
const native = natively(args);
console.log(`native: ${native.seconds.toFixed(1)} s (${(native.seconds / 60).toFixed(1)} min), geneb eval --no-cache${args.threads ? `, ${args.threads} threads` : ''}; load ${native.load}`);
console.log(`page / native wall time: ${(page.seconds / native.seconds).toFixed(2)}×`);

const [p, n] = [mccs(page.submission), mccs(native.submission)];
let [worst, fits, changed] = [0, 0, []];
for (const [key, values] of Object.entries(n)) {
  if (!p[key] || p[key].length !== values.length) throw new Error(`${key}: the page has no matching result`);
  values.forEach((v, i) => {
    const delta = Math.abs(v - p[key][i]);
    fits += 1;
    worst = Math.max(worst, delta);
    if (delta > 0) changed.push(`${key}${values.length > 1 ? ` seed ${i + 1}` : ''} ${delta.toExponential(1)}`);
  });
}
console.log(`${Object.keys(n).length} task × regime results, ${fits} fits; ${changed.length} differ page vs native, `
  + `max |ΔMCC| ${worst.toExponential(1)}${changed.length ? `: ${changed.join(', ')}` : ''}`);
if (worst > MAX_FIT_DELTA || changed.length > MAX_CHANGED_SHARE * fits) {
  console.error('the page and the native CLI disagree beyond the probe\'s own sensitivity: the timing does not count');
  process.exit(1);
}
