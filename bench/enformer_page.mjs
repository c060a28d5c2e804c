#!/usr/bin/env node
// One full-size model in the tab (issue 37: what one Enformer sequence costs there): headless
// Debian Chromium (WebGPU on SwiftShader where no GPU is) opens the page, the model folder goes
// into its "Choose a folder" input, and the "Embed sequences" tool embeds one sequence on each
// backend asked for, compared with native geneb's embedding of it. The page-driving parts are
// bench/browser_bench.mjs's; this script exists because that bench times seq/s from 1 and n
// sequences after a cold call, three or more passes per backend, and a 196,608 bp model pays a
// whole pass per sequence.
//
//   node bench/enformer_page.mjs --model DIR --input FASTA --reference NATIVE.npy
//                                [--backends cpu,webgpu] [--timeout S] [--repo DIR] [--out FILE.json]
//
// DIR holds only the files the page reads (config.json and the weights). --reference is native
// `geneb embed` of the FASTA's first sequence, or any float32 .npy whose row 0 is its embedding
// (the values are written to --out too). --repo serves another
// checkout's www/ as it is built (its www/pkg, no rebuild). Load = from handing the folder to
// the page until it lists the model, which includes the page's own check: one 10-nt embedding,
// itself a whole 196,608 bp pass for Enformer, on WebGPU, or on the wasm CPU where the adapter is
// a software one (SwiftShader), which the page passes over unless told WebGPU. If the page refuses the model, its exact
// message is printed and written, and the script exits 0: a refusal is the tab's answer.
// Memory: Chromium's processes summed (RSS and PSS) and the worker's wasm memory, as
// browser_bench.mjs measures them.

import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { REPO, byTestId, launchBrowser, openApp, pkgMounts, waitReady, wasmMemoryMib } from '../tests/e2e/helpers.mjs';
import { startServer } from '../scripts/serve.mjs';
import { loadFolder, memorySampler, timedEmbed } from './browser_bench.mjs';
import { readNpy } from './npy.mjs';

function parseArgs(argv) {
  const args = { backends: ['cpu', 'webgpu'], timeout: 7200, repo: REPO, out: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--model') args.model = resolve(value());
    else if (a === '--input') args.input = value();
    else if (a === '--reference') args.reference = value();
    else if (a === '--backends') args.backends = value().split(',');
    else if (a === '--timeout') args.timeout = Number(value());
    else if (a === '--repo') args.repo = resolve(value());
    else if (a === '--out') args.out = value();
    else throw new Error(`unknown argument ${a}`);
  }
  if (!args.model || !args.input || !args.reference) throw new Error('--model, --input and --reference are needed');
  for (const b of args.backends) if (b !== 'webgpu' && b !== 'cpu') throw new Error(`unknown backend '${b}': webgpu or cpu`);
  return args;
}

/** The first record of a FASTA file. */
function firstSequence(path) {
  const lines = readFileSync(path, 'utf8').split('\n').map((l) => l.trim());
  const start = lines.findIndex((l) => l.startsWith('>'));
  if (start < 0) throw new Error(`${path}: no FASTA record`);
  const end = lines.findIndex((l, i) => i > start && l.startsWith('>'));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('');
}

function maxDelta(values, reference) {
  const dim = reference.shape[1];
  if (values.length !== dim) throw new Error(`the page gave ${values.length} values, native ${dim}`);
  let worst = 0;
  for (let i = 0; i < dim; i++) {
    const d = Math.abs(values[i] - reference.data[i]);
    worst = Number.isNaN(d) ? Infinity : Math.max(worst, d);
  }
  return worst;
}

const mib = (x) => (typeof x === 'number' ? `${x.toFixed(0)} MiB` : String(x));
const load = () => loadavg().map((x) => x.toFixed(1)).join(' ');

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const sequence = firstSequence(args.input);
  const reference = readNpy(args.reference);
  const server = await startServer({ port: 0, repo: args.repo, mounts: pkgMounts() });
  const browser = await launchBrowser({ webgpu: true });
  const result = { date: new Date().toISOString(), chromium: browser.version(), model: args.model, length: sequence.length, runs: [] };
  console.log(`Chromium ${browser.version()}; page ${server.url} (${args.repo}/www); ${args.model}; one ${sequence.length}-nt sequence; load average ${load()}`);
  const app = await openApp(browser, server);
  const { page } = app;
  const sampler = memorySampler();
  try {
    await waitReady(page);
    result.core = await byTestId(page, 'backend').textContent();
    console.log(`the page's CPU line: ${result.core}`);
    sampler.reset();
    try {
      const loaded = await loadFolder(page, args.model, args.timeout);
      result.load = { ...loaded, memory: sampler.peak(), wasm_mib: await wasmMemoryMib(page, app.origin) };
      console.log(`loaded in ${loaded.seconds.toFixed(1)} s: ${loaded.status}\n  Chromium RSS sum ${mib(result.load.memory.total_mib)}, PSS sum ${mib(result.load.memory.pss_mib)}, GPU process ${mib(result.load.memory.gpu_mib)}, wasm memory ${mib(result.load.wasm_mib)}; load average ${load()}`);
    } catch (err) {
      result.refused = err.message.split('\n')[0];
      result.load = { memory: sampler.peak(), wasm_mib: await wasmMemoryMib(page, app.origin) };
      console.log(`the page refused the model: ${result.refused}\n  Chromium RSS sum ${mib(result.load.memory.total_mib)}, wasm memory ${mib(result.load.wasm_mib)}`);
      return result;
    }
    for (const backend of args.backends) {
      const cpu = backend === 'cpu';
      sampler.reset();
      const run = { backend, load_avg_before: loadavg()[0] };
      result.runs.push(run);
      try {
        const { ms, result: embedded } = await timedEmbed(page, result.load.spec, [sequence], { cpu, timeout: args.timeout });
        Object.assign(run, {
          seconds: ms / 1000, backend_used: embedded.backend, weights: embedded.weights,
          max_delta: maxDelta(embedded.values, reference), memory: sampler.peak(),
          wasm_mib: await wasmMemoryMib(page, app.origin), load_avg_after: loadavg()[0],
          values: embedded.values, // for comparing with other references afterwards
        });
        console.log(`${backend}: ${run.seconds.toFixed(1)} s, max |Δ| ${run.max_delta.toExponential(2)} vs the reference (${embedded.backend.kind}${embedded.backend.adapter ? `: ${embedded.backend.adapter}` : ''}; weights ${embedded.weights ?? 'f32'})\n  Chromium RSS sum ${mib(run.memory.total_mib)}, PSS sum ${mib(run.memory.pss_mib)}, renderer ${mib(run.memory.renderer_mib)}, GPU process ${mib(run.memory.gpu_mib)}, wasm memory ${mib(run.wasm_mib)}; load average ${load()}`);
      } catch (err) {
        run.failed = err.message.split('\n')[0];
        run.memory = sampler.peak();
        console.log(`${backend}: FAILED ${run.failed}`);
        break; // the worker may still be busy with it
      }
    }
    if (app.consoleErrors.length) result.console_errors = app.consoleErrors.slice(0, 20);
    return result;
  } finally {
    sampler.stop();
    await app.close();
    await browser.close();
    await server.close();
    if (args.out) writeFileSync(args.out, JSON.stringify(result, null, 2) + '\n');
  }
}

main().then((result) => {
  if (result.runs.some((r) => r.failed)) process.exit(1);
}).catch((err) => {
  console.error(`enformer_page: ${err.stack || err.message}`);
  process.exit(1);
});
