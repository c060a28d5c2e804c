#!/usr/bin/env node
// The page's core on Dawn (Chrome's WebGPU engine) beside native geneb on wgpu, same GPU, same
// weights, same DNA: the one-thread wasm core (www/pkg, what the page's worker runs for WebGPU)
// in Node through the npm package `webgpu`, called as the worker calls it (`core.embed`, the
// model kept between calls under one key), against the native figures bench/gpu_check.py
// measured into the same folder a moment before.
//
//   python3 bench/gpu_check.py --geneb target/release/geneb --out DIR --models M --lengths L --count N
//   node bench/dawn_bench.mjs --models-dir DIR [--models a,b] [--lengths 200,1000] [--timeout S]
//
// gpu_check.py leaves DIR/<model>/ (the checkpoint), DIR/runs/<model>_<length>/{seqs.txt,
// geneb_cpu.npy} (the sequences and native geneb's CPU embeddings) and DIR/results.json (native
// seq/s on the CPU and on wgpu). Timing as model_bench.py's: seq/s = (N − 1) / (t_N − t_1), the
// N sequences repeated until their call lasts 2 s more than the 1-sequence call; one untimed
// call first builds the model and compiles the shaders. The embeddings must agree with native
// geneb's CPU ones (max |Δ| ≤ 1e-3) or the bench exits 1: a fast wrong number cannot pass.
// bench/gpu-check.sh runs this as its Dawn half; results also go to DIR/dawn_results.json.

import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { coreOnDawn, modelFiles } from '../tests/e2e/dawn.mjs';
import { readNpy } from './npy.mjs';

const TOLERANCE = 1e-3;
const MIN_RUN_MS = 2000;
const MAX_REPS = 40;

function parseArgs(argv) {
  const args = { modelsDir: null, models: null, lengths: [200, 1000], timeout: 300 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--models-dir') args.modelsDir = value();
    else if (a === '--models') args.models = value().split(',');
    else if (a === '--lengths') args.lengths = value().split(',').map(Number);
    else if (a === '--timeout') args.timeout = Number(value());
    else if (a === '--help' || a === '-h') {
      console.log('usage: node bench/dawn_bench.mjs --models-dir DIR [--models a,b] [--lengths 200,1000] [--timeout S]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a} (try --help)`);
  }
  if (!args.modelsDir) throw new Error('--models-dir is required (the --out folder of bench/gpu_check.py)');
  return args;
}

/** Native seq/s per `${model}_${length}` from gpu_check.py's results.json, where there is one. */
function nativeFigures(dir) {
  const path = join(dir, 'results.json');
  if (!existsSync(path)) return {};
  const rows = JSON.parse(readFileSync(path, 'utf8')).rows ?? [];
  return Object.fromEntries(rows.map((r) => [`${r.model}_${r.length}`, r]));
}

async function timed(call) {
  const start = performance.now();
  const result = await call();
  return { ms: performance.now() - start, result };
}

function withTimeout(promise, seconds, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${seconds} s`)), seconds * 1000);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

async function benchOne(dawn, folder, model, texts, timeout) {
  const files = readdirSync(folder).filter((f) => statSync(join(folder, f)).isFile());
  const modelKey = `bench:${folder}`;
  const embed = (sequences, withFiles) => withTimeout(dawn.core.embed({
    model: `hf:${model}`, backend: 'webgpu', adapter: dawn.label, sequences, modelKey,
    ...(withFiles ? { modelFiles: modelFiles(folder, files) } : {}),
  }), timeout, `${model}, ${sequences.length} sequences`);
  // Untimed: reads the checkpoint, builds the model, compiles the shaders.
  const cold = await timed(() => embed(texts.slice(0, 1), true));
  if (cold.result.backend.kind !== 'wgpu') throw new Error(`ran on ${cold.result.backend.kind}, not WebGPU`);
  const one = await timed(() => embed(texts.slice(0, 1), false));
  let reps = 1;
  let all;
  for (;;) {
    const batch = Array.from({ length: reps }, () => texts).flat();
    all = await timed(() => embed(batch, false));
    const spent = all.ms - one.ms;
    if (spent >= MIN_RUN_MS || reps >= MAX_REPS) break;
    const perSeq = Math.max(spent, 10) / (texts.length * reps - 1);
    reps = Math.min(MAX_REPS, Math.max(reps + 1, Math.ceil((1.25 * MIN_RUN_MS) / perSeq / texts.length)));
  }
  const n = texts.length * reps;
  const spent = all.ms - one.ms;
  if (!(spent > 0)) throw new Error(`${n} sequences took no longer than 1; time more`);
  return {
    seqPerS: ((n - 1) / spent) * 1000,
    t1Ms: one.ms,
    coldMs: cold.ms,
    values: all.result.values.slice(0, texts.length * all.result.dim),
    dim: all.result.dim,
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const dawn = await coreOnDawn();
  if (!dawn.core) {
    console.error(`dawn_bench: ${dawn.reason}`);
    process.exit(2);
  }
  const native = nativeFigures(args.modelsDir);
  const models = args.models ?? [...new Set(Object.values(native).map((r) => r.model))];
  console.log(`dawn_bench: ${dawn.label}; shader-f16 ${dawn.features.includes('shader-f16') ? 'yes' : 'no'}, `
    + `maxStorageBufferBindingSize ${dawn.limits.maxStorageBufferBindingSize}`);
  console.log(`${'model, length'.padEnd(24)} ${'page/Dawn'.padStart(10)} ${'native wgpu'.padStart(11)} `
    + `${'page/native'.padStart(11)} ${'t1 ms'.padStart(8)} ${'max |d|'.padStart(8)}`);
  const rows = [];
  const failures = [];
  for (const model of models) {
    for (const length of args.lengths) {
      const label = `${model}, ${length} nt`;
      const run = join(args.modelsDir, 'runs', `${model}_${length}`);
      const texts = readFileSync(join(run, 'seqs.txt'), 'utf8').split('\n').filter(Boolean);
      try {
        const r = await benchOne(dawn, join(args.modelsDir, model), model, texts, args.timeout);
        const reference = readNpy(join(run, 'geneb_cpu.npy'));
        let worst = 0;
        r.values.forEach((v, i) => { worst = Math.max(worst, Math.abs(v - reference.data[i])); });
        if (!(worst <= TOLERANCE)) failures.push(`${label}: Dawn and native CPU embeddings differ by ${worst}`);
        const nativeGpu = native[`${model}_${length}`]?.wgpu?.seq_s;
        const ratio = nativeGpu ? r.seqPerS / nativeGpu : null;
        rows.push({ model, length, dawn_seq_s: r.seqPerS, native_wgpu_seq_s: nativeGpu ?? null, ratio,
          t1_ms: r.t1Ms, cold_ms: r.coldMs, max_delta: worst });
        console.log(`${label.padEnd(24)} ${r.seqPerS.toFixed(2).padStart(10)} ${(nativeGpu?.toFixed(2) ?? '-').padStart(11)} `
          + `${(ratio ? `${ratio.toFixed(3)}x` : '-').padStart(11)} ${r.t1Ms.toFixed(1).padStart(8)} ${worst.toExponential(1).padStart(8)}`);
      } catch (e) {
        failures.push(`${label}: ${e.message}`);
        console.log(`${label.padEnd(24)} FAILED ${e.message}`);
      }
    }
  }
  writeFileSync(join(args.modelsDir, 'dawn_results.json'), JSON.stringify({ adapter: dawn.label, rows }, null, 1));
  if (failures.length) {
    console.error(`dawn_bench: failures:\n  ${failures.join('\n  ')}`);
    process.exit(1);
  }
  // Dawn's instance keeps the event loop alive; the bench is done.
  process.exit(0);
}

main().catch((e) => {
  console.error(`dawn_bench: ${e.stack ?? e}`);
  process.exit(1);
});
