#!/usr/bin/env node
// Where the page's CPU time goes: the one-thread wasm core (the page's www/pkg build, with its
// function names kept) runs one model's embedding in Node's V8 under the inspector's sampling
// profiler, and the self time is printed per wasm function and per kind of work (matmul, the
// element-wise and reduction kernels, allocation, ...). Node's V8 compiles wasm as Chromium's
// does (Liftoff, then TurboFan), so the shares carry over to the tab; the seconds do not.
//
//   node bench/wasm_profile.mjs --model DIR [--seqs FILE | --length 200 --count 64] [--top 30]
//
// DIR is a model folder as the page takes it (config.json, weights, tokenizer files), e.g. one
// `python3 bench/model_bench.py --make-checkpoint NAME` wrote under target/bench-models/. FILE:
// one sequence per line (model_bench's runs/<model>_<length>/seqs.txt). Without it, `--count`
// random sequences of `--length` nt from a fixed seed. One untimed call on one sequence builds the
// model (held by the core between calls, as in the page) before the profiled call.
//
// Needs the wasm build (`bash scripts/build-wasm.sh`); the named copy of its module is made here
// with wasm-bindgen into target/wasm-profile/ (the page's copy drops the names to save 4 MB).

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const TARGET = process.env.CARGO_TARGET_DIR || join(REPO, 'target');
const RAW_WASM = join(TARGET, 'wasm32-unknown-unknown', process.env.GENEB_WASM_PROFILE || 'release', 'geneb.wasm');
const NAMED = join(TARGET, 'wasm-profile');

function parseArgs(argv) {
  const args = { model: null, seqs: null, length: 200, count: 64, top: 30 };
  for (let i = 0; i < argv.length; i++) {
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
      return argv[++i];
    };
    const a = argv[i];
    if (a === '--model') args.model = value();
    else if (a === '--seqs') args.seqs = value();
    else if (a === '--length') args.length = Number(value());
    else if (a === '--count') args.count = Number(value());
    else if (a === '--top') args.top = Number(value());
    else throw new Error(`unknown argument ${a}`);
  }
  if (!args.model) throw new Error('--model DIR is required');
  return args;
}

/** Deterministic DNA (a 32-bit LCG), so two profiles of one model embed the same sequences. */
function randomSequences(count, length) {
  let state = 12345;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
  return Array.from({ length: count }, () => Array.from({ length }, () => 'ACGT'[next() >>> 30]).join(''));
}

/** The named module: wasm-bindgen's output for the page's build, names kept. */
function namedCore() {
  if (!existsSync(RAW_WASM)) throw new Error(`${RAW_WASM} is missing: run bash scripts/build-wasm.sh first`);
  const js = join(NAMED, 'geneb.js');
  if (!existsSync(js) || statSync(js).mtimeMs < statSync(RAW_WASM).mtimeMs) {
    execFileSync('wasm-bindgen', ['--target', 'web', '--no-typescript', '--out-dir', NAMED, RAW_WASM], { stdio: 'inherit' });
  }
  return js;
}

/** The kind of work a wasm function does, from its (demangled) name. */
function kindOf(name) {
  const rules = [
    // wasm-ld's per-export constructor wrappers (src/web/start.rs says why they are gone).
    [/__wasm_call_ctors|inventory|__ctor|\.command_export/, 'static constructors'],
    [/^\((program|garbage collector|idle|root)\)$/, 'V8 itself (program, GC)'],
    // The page's linear layers (packed_matmul) first: its name also matches 'mul' below.
    [/packed_matmul|gemm|microkernel|pack_(lhs|rhs)|gemv|gevv/i, 'matmul (packed_matmul, gemm)'],
    [/softmax/i, 'softmax'],
    [/layer_norm|layernorm|rms_norm/i, 'norms'],
    [/erf|gelu|silu|sigmoid|tanh|exp|activation/i, 'activations'],
    [/reduce|sum|mean|max_dim|argmax/i, 'reductions'],
    [/binary|zip|broadcast|add|mul|sub|div/i, 'element-wise binary'],
    [/unary|map/i, 'element-wise unary'],
    [/copy|contiguous|reshape|permute|swap_dims|transpose|slice|narrow|cat|strided|gather|into_contiguous/i, 'copies and layout'],
    [/memcpy|memset|memmove/i, 'memcpy/memset'],
    [/dlmalloc|alloc|realloc|free|dealloc/i, 'allocation'],
    [/tokeni|vocab|kmer/i, 'tokenizer'],
  ];
  for (const [re, kind] of rules) if (re.test(name)) return kind;
  return 'other';
}

/** Self time per function of a V8 CPU profile, in ms. */
function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const ms = new Map();
  const dt = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]);
    const f = node.callFrame;
    const name = f.functionName || `(anonymous ${f.url}:${f.lineNumber})`;
    ms.set(name, (ms.get(name) ?? 0) + (dt[i] ?? 0) / 1000);
  }
  return ms;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const sequences = args.seqs
    ? readFileSync(args.seqs, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean)
    : randomSequences(args.count, args.length);
  const modelFiles = readdirSync(args.model)
    .filter((name) => !name.startsWith('.') && statSync(join(args.model, name)).isFile())
    .map((name) => ({ name, bytes: new Uint8Array(readFileSync(join(args.model, name))) }));
  const core = await import(namedCore());
  core.initSync({ module: readFileSync(join(NAMED, 'geneb_bg.wasm')) });
  const request = (seqs, files) => ({
    model: 'hf:model', backend: 'cpu', adapter: '', sequences: seqs, modelFiles: files, modelKey: 'profiled',
  });
  await core.embed(request(sequences.slice(0, 1), modelFiles));

  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  const start = performance.now();
  const out = await core.embed(request(sequences));
  const seconds = (performance.now() - start) / 1000;
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();

  const ms = selfTimes(profile);
  const total = [...ms.values()].reduce((a, b) => a + b, 0);
  const kinds = new Map();
  for (const [name, t] of ms) kinds.set(kindOf(name), (kinds.get(kindOf(name)) ?? 0) + t);
  const pct = (t) => `${((100 * t) / total).toFixed(1).padStart(5)} %`;
  console.log(`${sequences.length} sequences, dim ${out.dim}: ${seconds.toFixed(2)} s, ${(sequences.length / seconds).toFixed(2)} seq/s (one thread, Node ${process.versions.v8})`);
  console.log('\nby kind of work (self time):');
  for (const [kind, t] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(t)}  ${kind}`);
  console.log(`\ntop ${args.top} functions (self time):`);
  for (const [name, t] of [...ms].sort((a, b) => b[1] - a[1]).slice(0, args.top)) {
    console.log(`  ${pct(t)}  ${name.length > 150 ? `${name.slice(0, 147)}...` : name}`);
  }
}

main().catch((err) => {
  console.error(`wasm_profile: ${err.message}`);
  process.exit(2);
});
