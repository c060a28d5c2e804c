#!/usr/bin/env node
// Encoder speed and memory in the browser, through the page's own path: Debian's Chromium
// (headless, WebGPU on SwiftShader) opens the page served by scripts/serve.mjs, the model folder
// goes into the page's "Choose a folder" input (www/models.js reads it as a user's pick, then
// checks it with one short embedding), and the "Embed sequences" tool embeds the sequences in the
// page's worker (www/worker.js → the wasm core) with its compute set to "CPU" (the worker's
// forceBackend: 'cpu', Burn's CPU backend in wasm), then to "WebGPU". The slow case (WebGPU, the
// longer sequences) comes last: a call that outlasts --timeout leaves the worker busy, so that
// model's remaining runs are skipped and reported.
//
//   node bench/browser_bench.mjs [--quick] [--one-thread | --threads N] [--models a,b] [--lengths 200,1000] [--backends cpu,webgpu]
//                                [--count N] [--webgpu-count N] [--webgpu-lengths L,..] [--timeout S]
//                                [--models-dir DIR] [--reference FILE.npy]
//
// bench/gpu-check.sh passes --models-dir (its numpy-written models and runs, all four models in
// one folder) and --reference geneb_cpu.npy (native geneb's CPU embeddings, where no PyTorch is).
//
// Run `python3 bench/model_bench.py --quick ...` first: the models, the sequences and PyTorch's
// embeddings (target/bench-models/runs/<model>_<length>/{seqs.txt,torch_b32.npy}) are that
// bench's, so the browser embeds the same DNA with the same weights and must agree with PyTorch
// (max |Δ| ≤ 1e-3) or the run is a failure and the bench exits 1: a fast wrong number cannot pass.
//
// Timing: each embedding is timed in the page, from the click on "Embed" to the moment the tool
// shows its JSON (performance.now(), a capture-phase click listener and a MutationObserver), once
// for 1 sequence and once for all n: seq/s = (n − 1) / (t_all − t_1), as model_bench.py does.
// That leaves out what every click costs once: the page copying the model files to the worker
// (the page keeps them; every embed message carries a copy) and the core parsing the checkpoint
// and building the model (it does so per call); t_1 shows that cost. The worker lives on between
// calls, so one untimed 1-sequence call per backend and length comes first (its time is printed
// as "cold"): the first WebGPU call compiles the shaders, which no later call repeats. Load = from handing the
// folder to the input until the page lists the model (reading the files, plus the page's own
// check embedding of one 10-nt sequence on WebGPU).
// Memory: the RSS of every process of this Chromium (the browser, zygotes, renderer, GPU
// process, utilities; from /proc/<pid>/statm, every 100 ms), summed — shared pages count once per
// process, so the sum overstates what the machine lost; the PSS sum (smaps_rollup, every 1 s)
// splits shared pages and does not — with the renderer's (the page and its
// worker: the wasm heap lives there) and the GPU process's (SwiftShader's buffers) own peaks; and
// the wasm linear memory (WebAssembly.Memory of the worker's instance, which only grows).
// Results also go to target/bench-models/browser_results.json.

import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import {
  LOAD_TIMEOUT, NO_WASM, REPO, byTestId, launchBrowser, openApp, pkgMounts, waitReady, wasmBuilt, wasmMemoryMib,
} from '../tests/e2e/helpers.mjs';
import { startServer } from '../scripts/serve.mjs';
import { readNpy } from './npy.mjs';

// --models-dir (bench/gpu-check.sh) reads every model and run from one folder instead.
const MODELS_DIR_ARG = process.argv.indexOf('--models-dir');
const MODELS_DIR = MODELS_DIR_ARG > 0 ? process.argv[MODELS_DIR_ARG + 1] : join(REPO, 'target', 'bench-models');
const REAL_MODELS = process.env.GENEB_REAL_MODELS || join(REPO, 'target', 'real-models');
/** The folders model_bench.py writes (or, for HyenaDNA-tiny, checks). */
const MODELS = {
  'nt-v2-50m': join(MODELS_DIR, 'nt-v2-50m'),
  'nt-v2-250m': join(MODELS_DIR, 'nt-v2-250m'),
  'nt-v2-500m': join(MODELS_DIR, 'nt-v2-500m'),
  'dnabert2-117m': join(MODELS_DIR, 'dnabert2-117m'),
  'hyenadna-tiny': MODELS_DIR_ARG > 0 ? join(MODELS_DIR, 'hyenadna-tiny') : join(REAL_MODELS, 'hyenadna-tiny-anticapt-dataset1'),
  'caduceus-ph-1k': join(MODELS_DIR, 'caduceus-ph-1k'),
  'janusdna-72-w': join(MODELS_DIR, 'janusdna-72-w'),
};
const DEFAULT_MODELS = ['nt-v2-50m', 'dnabert2-117m', 'hyenadna-tiny'];
const TOLERANCE = 1e-3;
const SAMPLE_MS = 100;
const PAGE_SIZE = 4096;

function parseArgs(argv) {
  const args = {
    quick: false, models: DEFAULT_MODELS, lengths: [200, 1000], backends: ['cpu', 'webgpu'], count: null, timeout: 600,
    webgpuCount: null, webgpuLengths: null, oneThread: false, threads: null, reference: 'torch_b32.npy',
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--quick') args.quick = true;
    else if (a === '--one-thread') args.oneThread = true;
    else if (a === '--threads') args.threads = Number(value());
    else if (a === '--models') args.models = value().split(',');
    else if (a === '--lengths') args.lengths = value().split(',').map(Number);
    else if (a === '--backends') args.backends = value().split(',');
    else if (a === '--count') args.count = Number(value());
    else if (a === '--timeout') args.timeout = Number(value());
    else if (a === '--webgpu-count') args.webgpuCount = Number(value());
    else if (a === '--webgpu-lengths') args.webgpuLengths = value().split(',').map(Number);
    else if (a === '--models-dir') value();
    else if (a === '--reference') args.reference = value();
    else if (a === '--help' || a === '-h') {
      console.log('usage: node bench/browser_bench.mjs [--quick] [--one-thread | --threads N] [--models a,b] [--lengths 200,1000] [--backends cpu,webgpu] [--count N] [--webgpu-count N] [--webgpu-lengths 200] [--timeout S] [--models-dir DIR] [--reference FILE.npy]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a} (try --help)`);
  }
  for (const m of args.models) if (!MODELS[m]) throw new Error(`unknown model '${m}'; choose from ${Object.keys(MODELS).join(', ')}`);
  for (const b of args.backends) if (b !== 'webgpu' && b !== 'cpu') throw new Error(`unknown backend '${b}': webgpu or cpu`);
  // --quick: 8 sequences per length (the browser's SwiftShader WebGPU is the slow case).
  args.count ??= args.quick ? 8 : 32;
  // SwiftShader's WebGPU is a CPU emulation and 10-100x slower than the CPU backend: these let a
  // run give it fewer sequences, or only some lengths.
  args.webgpuCount ??= args.count;
  args.webgpuLengths ??= args.lengths;
  if (!(args.count >= 2 && args.webgpuCount >= 2)) throw new Error('--count and --webgpu-count must be at least 2 (seq/s needs t_1 and t_n)');
  return args;
}

/**
 * RSS of this process's descendants (the Chromium that Playwright launched: its browser process,
 * zygotes, renderers, GPU and utility processes), sampled from /proc every SAMPLE_MS: the sum
 * over them and each process type's own largest value, since the last reset().
 */
export function memorySampler(rootPid = process.pid) {
  const kinds = new Map(); // pid → 'browser' | 'renderer' | 'gpu-process' | 'utility' | 'zygote' | …
  let peak = null;
  const kindOf = (pid) => {
    if (!kinds.has(pid)) {
      let kind = 'other';
      try {
        // Chromium rewrites its process title: the arguments may be one space-separated string.
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split(/[\0 ]/);
        const type = cmd.find((a) => a.startsWith('--type='));
        kind = type ? type.slice('--type='.length) : /chrom/.test(cmd[0]) ? 'browser' : 'other';
      } catch { /* gone */ }
      kinds.set(pid, kind);
    }
    return kinds.get(pid);
  };
  const tree = () => {
    const parent = new Map();
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
        // Field 4 (ppid) comes after the ")" that closes the command name.
        parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      } catch { /* exited meanwhile */ }
    }
    const inTree = new Set([rootPid]);
    let grew = true;
    while (grew) {
      grew = false;
      for (const [pid, ppid] of parent) if (!inTree.has(pid) && inTree.has(ppid)) { inTree.add(pid); grew = true; }
    }
    inTree.delete(rootPid); // node itself (this bench and the page's server) is not the browser
    return [...inTree];
  };
  // PSS (shared pages split between their users) sums to what the browser really holds.
  let tick = 0;
  const pssOf = (pid) => {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1'));
    return m ? Number(m[1]) * 1024 : 0;
  };
  // Walking /proc for the tree and reading smaps_rollup cost a quarter of a core at 100 ms: the
  // tree is re-read every 10th sample, PSS every 10th too (once a second).
  let pids = [];
  const sample = () => {
    let total = 0;
    let pss = 0;
    const slow = tick++ % 10 === 0;
    if (slow) pids = tree();
    const withPss = slow;
    const byKind = {};
    for (const pid of pids) {
      let rss;
      try { rss = Number(readFileSync(`/proc/${pid}/statm`, 'latin1').split(' ')[1]) * PAGE_SIZE; } catch { continue; }
      if (withPss) { try { pss += pssOf(pid); } catch { /* exited */ } }
      total += rss;
      const kind = kindOf(pid);
      byKind[kind] = Math.max(byKind[kind] ?? 0, rss);
    }
    if (!peak) peak = { total: 0, pss: 0, byKind: {}, samples: 0 };
    peak.samples++;
    peak.total = Math.max(peak.total, total);
    peak.pss = Math.max(peak.pss, pss);
    for (const [k, v] of Object.entries(byKind)) peak.byKind[k] = Math.max(peak.byKind[k] ?? 0, v);
    return total;
  };
  const timer = setInterval(sample, SAMPLE_MS);
  return {
    reset() { peak = null; tick = 0; sample(); },
    /** The peaks since reset(), in MiB. */
    peak() {
      sample();
      const mib = (b) => b / 2 ** 20;
      return {
        total_mib: mib(peak.total), pss_mib: mib(peak.pss), renderer_mib: mib(peak.byKind.renderer ?? 0),
        gpu_mib: mib(peak.byKind['gpu-process'] ?? 0), browser_mib: mib(peak.byKind.browser ?? 0), samples: peak.samples,
      };
    },
    stop() { clearInterval(timer); },
  };
}

/** Hand a model folder to the page's folder input and wait until the page lists the model. */
export async function loadFolder(page, folder, timeout) {
  const name = folder.split('/').filter(Boolean).pop();
  const spec = `hf:${name.replace(/[^\w.-]+/g, '-')}`; // as www/models.js names a picked folder
  const started = performance.now();
  await byTestId(page, 'model-folder').setInputFiles(folder);
  await page.waitForFunction((s) => {
    const loaded = [...document.querySelectorAll('[data-testid="loaded-model"] input')].some((i) => i.value === s);
    const error = document.querySelector('[data-testid="model-error"]');
    return loaded || (error && !error.hidden && error.textContent);
  }, spec, { timeout: timeout * 1000, polling: 100 });
  const seconds = (performance.now() - started) / 1000;
  const error = byTestId(page, 'model-error');
  if (await error.isVisible()) throw new Error(`loading ${folder} failed: ${await error.textContent()}`);
  const status = await byTestId(page, 'model-status').textContent();
  return { spec, seconds, status };
}

/**
 * Embed `sequences` with the page's embed tool; the time is measured in the page from the click
 * to the JSON's appearance. Returns {ms, result} (the JSON the tool shows).
 */
export async function timedEmbed(page, spec, sequences, { cpu, timeout }) {
  const tool = byTestId(page, 'embed-tool');
  if (!(await tool.evaluate((d) => d.open))) await tool.locator('summary').click();
  await byTestId(page, 'embed-model').selectOption(spec);
  await byTestId(page, 'embed-input').fill(sequences.join('\n'));
  await byTestId(page, 'embed-backend').selectOption(cpu ? 'cpu' : 'webgpu');
  await page.evaluate(() => {
    const json = document.querySelector('[data-testid="embed-json"]');
    const summary = document.querySelector('[data-testid="embed-summary"]');
    const button = document.querySelector('[data-testid="embed-run"]');
    json.textContent = '';
    const t = { start: 0, end: 0 };
    window.__benchTiming = t;
    button.addEventListener('click', () => { t.start = performance.now(); }, { capture: true, once: true });
    const observer = new MutationObserver(() => {
      if (t.start && (json.textContent || summary.classList.contains('error'))) {
        t.end = performance.now();
        observer.disconnect();
      }
    });
    observer.observe(json, { childList: true, characterData: true, subtree: true });
    observer.observe(summary, { attributes: true, attributeFilter: ['class'] });
  });
  await byTestId(page, 'embed-run').click();
  await page.waitForFunction(() => window.__benchTiming.end > 0, null, { timeout: timeout * 1000, polling: 200 });
  const ms = await page.evaluate(() => window.__benchTiming.end - window.__benchTiming.start);
  const json = await byTestId(page, 'embed-json').textContent();
  if (!json) throw new Error(`the page's embedding failed: ${await byTestId(page, 'embed-summary').textContent()}`);
  return { ms, result: JSON.parse(json) };
}

function maxDelta(values, reference, n) {
  const [rows, dim] = reference.shape;
  if (n > rows) throw new Error(`PyTorch embedded ${rows} sequences, fewer than ${n}`);
  if (values.length !== n * dim) throw new Error(`the page gave ${values.length} values, not ${n} × ${dim}`);
  let worst = 0;
  for (let i = 0; i < n * dim; i++) {
    const d = Math.abs(values[i] - reference.data[i]);
    worst = Number.isNaN(d) ? Infinity : Math.max(worst, d);
  }
  return worst;
}

async function benchModel(browser, server, name, args, failures) {
  const folder = MODELS[name];
  if (!existsSync(join(folder, 'config.json'))) {
    throw new Error(`${folder}: no model; run python3 bench/model_bench.py --quick --models ${name} first`);
  }
  const inputs = args.lengths.map((length) => {
    const work = join(MODELS_DIR, 'runs', `${name}_${length}`);
    const seqsPath = join(work, 'seqs.txt');
    const refPath = join(work, args.reference);
    if (!existsSync(seqsPath) || !existsSync(refPath)) {
      throw new Error(`${work}: no seqs.txt/${args.reference}; run python3 bench/model_bench.py --quick --models ${name} --lengths ${length} first`);
    }
    const texts = readFileSync(seqsPath, 'utf8').split(/\s+/).filter(Boolean);
    const reference = readNpy(refPath);
    const n = Math.min(Math.max(args.count, args.webgpuCount), texts.length, reference.shape[0]);
    return { length, texts: texts.slice(0, n), reference };
  });
  // --threads N: the page's `?threads=N` sizes the threaded core's pool (www/app.js).
  const app = await openApp(browser, server, { query: args.threads ? `?threads=${args.threads}` : '' });
  const { page } = app;
  const sampler = memorySampler();
  const out = { model: name, folder, runs: [] };
  try {
    await waitReady(page);
    out.core = await byTestId(page, 'backend').textContent();
    console.log(`\n${name}: the page's CPU line: ${out.core}`);
    sampler.reset();
    out.idle = sampler.peak();
    sampler.reset();
    const load = await loadFolder(page, folder, args.timeout);
    out.load = { ...load, memory: sampler.peak(), wasm_mib: await wasmMemoryMib(page, app.origin) };
    console.log(`\n${name}: loaded in ${load.seconds.toFixed(2)} s (${load.status}); Chromium RSS (PSS) sum ${out.idle.total_mib.toFixed(0)} (${out.idle.pss_mib.toFixed(0)}) MiB idle, peak ${out.load.memory.total_mib.toFixed(0)} (${out.load.memory.pss_mib.toFixed(0)}) MiB while loading; wasm memory ${out.load.wasm_mib} MiB`);
    console.log(`  ${'length'.padEnd(6)} ${'n'.padStart(3)} ${'backend'.padEnd(7)} ${'seq/s'.padStart(7)} ${'cold s'.padStart(7)} ${'t1 s'.padStart(6)} ${'tn s'.padStart(7)} ${'RSS sum'.padStart(8)} ${'PSS sum'.padStart(8)} ${'renderer'.padStart(8)} ${'gpu'.padStart(6)} ${'wasm'.padStart(6)}  max |Δ|`);
    for (const { length, texts: all_texts, reference } of inputs) {
      for (const backend of args.backends) {
        const cpu = backend === 'cpu';
        if (!cpu && !args.webgpuLengths.includes(length)) continue;
        const texts = cpu ? all_texts : all_texts.slice(0, args.webgpuCount);
        const run = { length, n: texts.length, backend, load_avg_before: loadavg()[0] };
        try {
          // The worker outlives each call: the first call of a backend and length pays one-off set-up
          // (WebGPU shader compilation) that a later call does not. One untimed call first, so
          // t_1 and t_n both run warm (each separate geneb process of model_bench.py runs cold).
          const cold = await timedEmbed(page, load.spec, texts.slice(0, 1), { cpu, timeout: args.timeout });
          run.cold_s = cold.ms / 1000;
          sampler.reset();
          const one = await timedEmbed(page, load.spec, texts.slice(0, 1), { cpu, timeout: args.timeout });
          sampler.reset(); // the peak of the n-sequence run
          const all = await timedEmbed(page, load.spec, texts, { cpu, timeout: args.timeout });
          run.memory = sampler.peak();
          run.wasm_mib = await wasmMemoryMib(page, app.origin);
          run.t1_s = one.ms / 1000;
          run.tn_s = all.ms / 1000;
          run.seq_s = (texts.length - 1) / (run.tn_s - run.t1_s);
          run.backend_used = all.result.backend;
          run.max_delta = maxDelta(all.result.values, reference, texts.length);
          run.max_delta_1 = maxDelta(one.result.values, reference, 1);
          const wanted = cpu ? 'cpu' : 'wgpu';
          if (all.result.backend?.kind !== wanted) {
            failures.push(`${name} ${length} nt ${backend}: ran on ${JSON.stringify(all.result.backend)}, not ${wanted}`);
          }
          if (!(run.max_delta <= TOLERANCE && run.max_delta_1 <= TOLERANCE)) {
            failures.push(`${name} ${length} nt ${backend}: max |Δ| ${Math.max(run.max_delta, run.max_delta_1).toExponential(2)} (the page disagrees with PyTorch: its speed is void)`);
          }
          if (!(run.tn_s > run.t1_s)) failures.push(`${name} ${length} nt ${backend}: n sequences took no longer than 1; time more`);
        } catch (err) {
          run.failed = err.message.split('\n')[0];
          failures.push(`${name} ${length} nt ${backend}: ${run.failed}`);
          console.log(`  ${String(length).padEnd(6)} ${String(texts.length).padStart(3)} ${backend.padEnd(7)} FAILED ${run.failed}`);
          out.runs.push(run);
          // The worker may still be busy with the failed call: this page is done.
          break;
        }
        run.load_avg_after = loadavg()[0];
        out.runs.push(run);
        const wasm = typeof run.wasm_mib === 'number' ? run.wasm_mib.toFixed(0) : '?';
        console.log(`  ${String(length).padEnd(6)} ${String(texts.length).padStart(3)} ${backend.padEnd(7)} ${run.seq_s.toFixed(2).padStart(7)} ${run.cold_s.toFixed(2).padStart(7)} ${run.t1_s.toFixed(2).padStart(6)} ${run.tn_s.toFixed(2).padStart(7)} ${run.memory.total_mib.toFixed(0).padStart(8)} ${run.memory.pss_mib.toFixed(0).padStart(8)} ${run.memory.renderer_mib.toFixed(0).padStart(8)} ${run.memory.gpu_mib.toFixed(0).padStart(6)} ${wasm.padStart(6)}  ${run.max_delta.toExponential(1)}   (${run.backend_used.kind}${run.backend_used.adapter ? `: ${run.backend_used.adapter}` : ''}; load average ${run.load_avg_before.toFixed(1)} → ${run.load_avg_after.toFixed(1)})`);
      }
      if (out.runs.at(-1)?.failed) break;
    }
    if (app.consoleErrors.length) out.console_errors = app.consoleErrors.slice(0, 20);
    app.assertLocalOnly();
  } finally {
    sampler.stop();
    await app.close();
  }
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!wasmBuilt()) throw new Error(NO_WASM);
  // --one-thread: served without COEP, the page is not cross-origin isolated and runs the
  // one-thread core, as on a host that cannot set headers.
  const server = await startServer({ port: 0, mounts: pkgMounts(), isolated: !args.oneThread });
  const browser = await launchBrowser({ webgpu: true });
  const failures = [];
  const results = { date: new Date().toISOString(), chromium: browser.version(), count: args.count, models: [] };
  console.log(`Chromium ${browser.version()} (headless, WebGPU on SwiftShader); page ${server.url}; ${args.count} sequences per length; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  try {
    for (const name of args.models) {
      try {
        results.models.push(await benchModel(browser, server, name, args, failures));
      } catch (err) {
        failures.push(`${name}: ${err.message.split('\n')[0]}`);
        console.log(`\n${name}: FAILED ${err.message.split('\n')[0]}`);
        results.models.push({ model: name, failed: err.message.split('\n')[0] });
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
  writeFileSync(join(MODELS_DIR, 'browser_results.json'), JSON.stringify(results, null, 2) + '\n');
  if (failures.length) {
    console.error(`browser_bench: failures:\n  ${failures.join('\n  ')}`);
    process.exit(1);
  }
}

// Run as a script; bench/enformer_page.mjs imports the page-driving functions above.
if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    console.error(`browser_bench: ${err.stack || err.message}`);
    process.exit(1);
  });
}
