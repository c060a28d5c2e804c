#!/usr/bin/env node
// Where a forward pass spends its GPU time, kernel by kernel, on Dawn (Chrome's WebGPU engine,
// npm `webgpu`, running the page's one-thread wasm core) and natively on wgpu, same adapter, same
// weights, same DNA:
//   - GPU µs per kernel from timestamp queries: natively `geneb embed --profile-kernels` (CubeCL's
//     launch observer), on Dawn `gpuKernelTimer` (tests/e2e/dawn.mjs: each dispatch replayed in a
//     pass of its own with timestampWrites). The two run the same kernels in the same order;
//     Dawn's dispatches carry CubeCL's entry points (the kernel's name in snake case and a hash),
//     so they join native launches in order by name; the kernels whose time differs most are
//     printed;
//   - the adapter as each engine sees it (limits, features, subgroup sizes), side by side;
//   - wall time per call (one sequence) at 1, 2 and 12 layers: the difference of 2 and 1 is one
//     layer, so cost per launch and cost per call (outside the layers) come apart;
//   - Dawn's robustness, validation and workgroup-memory zeroing each switched off
//     (`enable-dawn-features=disable_robustness | skip_validation | disable_workgroup_init`),
//     each checked for whether Dawn honours it (a probe whose result the toggle changes), with
//     the 12-layer call time under it.
// Dawn's timestamp quantization is switched off for every run (`timestamp_quantization`).
//
//   node bench/dawn_profile.mjs --geneb PATH --out DIR [--quick] [--models nt-v2-50m,dnabert2-117m]
//        [--layers 1,2,12] [--length 200] [--timeout S] [--no-toggles]
//
// Needs python3 + numpy (bench/random_models.py writes the checkpoints), the one-thread wasm core
// in www/pkg and node_modules/webgpu. Writes DIR/profile/ (checkpoints, native profiles) and
// DIR/profile.json; exits 1 when a run fails or the engines' launches do not join by kernel.
// --quick: the toggles on the first model only, 3 calls per Dawn timing instead of 5 (native
// geneb always times 5); --no-toggles: Dawn's default configuration only.

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { RAW_TIMESTAMPS, adapterFacts, coreOnDawn, gpuKernelTimer, modelFiles } from '../tests/e2e/dawn.mjs';
import { dna } from '../tests/e2e/dawn-census.mjs';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ALWAYS = [RAW_TIMESTAMPS];
/** Dawn's configurations: the default, each toggle off, all three off. */
const CONFIGS = {
  default: [],
  'robustness off': ['disable_robustness'],
  'validation off': ['skip_validation'],
  'workgroup zeroing off': ['disable_workgroup_init'],
  'all three off': ['disable_robustness', 'skip_validation', 'disable_workgroup_init'],
};
const flagsOf = (toggles) => [...ALWAYS, ...(toggles.length ? [`enable-dawn-features=${toggles.join(',')}`] : [])];

function parseArgs(argv) {
  const args = { geneb: null, out: null, quick: false, models: ['nt-v2-50m', 'dnabert2-117m'], layers: [1, 2, 12],
    length: 200, timeout: 300, toggles: true, child: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--geneb') args.geneb = resolve(value());
    else if (a === '--out') args.out = resolve(value());
    else if (a === '--quick') args.quick = true;
    else if (a === '--no-toggles') args.toggles = false;
    else if (a === '--models') args.models = value().split(',');
    else if (a === '--layers') args.layers = value().split(',').map(Number);
    else if (a === '--length') args.length = Number(value());
    else if (a === '--timeout') args.timeout = Number(value());
    else if (a === '--child') args.child = JSON.parse(value());
    else if (a === '--help' || a === '-h') {
      const lines = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1);
      console.log(lines.slice(0, lines.findIndex((l) => !l.startsWith('//'))).join('\n'));
      process.exit(0);
    } else throw new Error(`unknown argument ${a} (try --help)`);
  }
  if (!args.child && (!args.geneb || !args.out)) throw new Error('--geneb and --out are required (try --help)');
  return args;
}

const median = (values) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2 : null;
};
const sum = (values) => values.reduce((a, b) => a + b, 0);

// ---- Does Dawn honour each toggle? One probe each, on a device from the same adapter. ----

/** Runs `code`'s entry points in order on one storage buffer of 256 u32; returns its contents. */
async function runWgsl(device, code, entries, { bindings = () => [] } = {}) {
  const module = device.createShaderModule({ code });
  const out = device.createBuffer({ size: 1024, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const read = device.createBuffer({ size: 1024, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  for (const entryPoint of entries) {
    const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint } });
    const group = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: out } }, ...bindings()],
    });
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(1);
    pass.end();
  }
  encoder.copyBufferToBuffer(out, 0, read, 0, 1024);
  device.queue.submit([encoder.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const values = new Uint32Array(read.getMappedRange().slice(0));
  read.unmap();
  return values;
}

const WORKGROUP_PROBE = `
var<workgroup> scratch: array<u32, 256>;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64) fn fill(@builtin(local_invocation_index) i: u32) {
  for (var k = i; k < 256u; k += 64u) { scratch[k] = 0xdeadbeefu; }
  workgroupBarrier();
  out[i] = scratch[(i * 3u) % 256u];
}
@compute @workgroup_size(64) fn leftover(@builtin(local_invocation_index) i: u32) {
  for (var k = i; k < 256u; k += 64u) { out[k] = scratch[k]; }
}`;

/** 16 KiB of workgroup memory (the default limit) of which one word is written: zeroing it is the kernel's cost. */
const ZEROING_COST_PROBE = `
var<workgroup> big: array<u32, 4096>;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) g: vec3<u32>) {
  if (i == 0u) { big[g.x % 4096u] = g.x; }
  workgroupBarrier();
  if (i == 0u && g.x < 256u) { out[g.x] = big[g.x % 4096u]; }
}`;

/** Wall ms of `workgroups` workgroups of ZEROING_COST_PROBE (median of 3, after a warm one). */
async function zeroingCostMs(device, workgroups) {
  const module = device.createShaderModule({ code: ZEROING_COST_PROBE });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const out = device.createBuffer({ size: 1024, usage: GPUBufferUsage.STORAGE });
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: out } }] });
  const once = async () => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(workgroups);
    pass.end();
    const start = performance.now();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
    return performance.now() - start;
  };
  await once();
  return median([await once(), await once(), await once()]);
}

const ROBUSTNESS_PROBE = `
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<storage, read> data: array<u32>;
@group(0) @binding(2) var<uniform> at: vec4<u32>;
@compute @workgroup_size(1) fn main() { out[0] = data[at.x]; }`;

async function toggleProbes(adapter) {
  const device = await adapter.requestDevice();
  // Workgroup memory read without writing, after a dispatch that filled it, 8 times: any value
  // left over shows zeroing off (none shows nothing where the driver hands out fresh memory, as
  // lavapipe's threads often do).
  let leftoverRounds = 0;
  for (let round = 0; round < 8; round++) {
    const leftover = await runWgsl(device, WORKGROUP_PROBE, ['fill', 'leftover']);
    if (leftover.slice(0, 256).some((v) => v !== 0)) leftoverRounds++;
  }
  const zeroingCost = await zeroingCostMs(device, 16384);
  // Robustness: element 40 of a 4-element binding of a longer buffer. Robust: clamped into the
  // binding (1003) or 0; not: the element past the binding (1040).
  const data = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true });
  new Uint32Array(data.getMappedRange()).set(Array.from({ length: 64 }, (_, i) => 1000 + i));
  data.unmap();
  const at = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
  new Uint32Array(at.getMappedRange()).set([40, 0, 0, 0]);
  at.unmap();
  const oob = (await runWgsl(device, ROBUSTNESS_PROBE, ['main'], {
    bindings: () => [{ binding: 1, resource: { buffer: data, offset: 0, size: 16 } }, { binding: 2, resource: { buffer: at } }],
  }))[0];
  // Validation: a buffer both mappable for reading and a storage buffer is invalid WebGPU.
  device.pushErrorScope('validation');
  device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE });
  const validationError = await device.popErrorScope();
  device.destroy();
  return {
    workgroupLeftovers: leftoverRounds,
    // 16,384 workgroups each declaring 16 KiB: zeroing is most of their time where it is done.
    zeroingCostMs: zeroingCost,
    // 1040: read past the binding (robustness off); 1003: clamped into it (Dawn's own bounds
    // checks); 0: the driver's (Vulkan robustBufferAccess2, or a driver that always checks).
    outOfBoundsRead: oob,
    validated: validationError !== null,
  };
}

// ---- One Dawn configuration, in a process of its own (Dawn's toggles are per instance). ----

async function child({ flags, runs, length, calls, timeout }) {
  const dawn = await coreOnDawn({ flags });
  if (!dawn.core) throw new Error(dawn.reason);
  const timer = gpuKernelTimer();
  timer.pause();
  const probes = await toggleProbes(dawn.adapter);
  const [sequence] = dna([length]);
  const results = [];
  for (const { model, folder } of runs) {
    const files = readdirSync(folder).filter((f) => statSync(join(folder, f)).isFile());
    const embed = (withFiles) => {
      let timer;
      const limit = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${folder}: no answer in ${timeout} s`)), timeout * 1000);
      });
      return Promise.race([dawn.core.embed({
        model: `hf:${model}`, backend: 'webgpu', adapter: dawn.label, sequences: [sequence], modelKey: `profile:${folder}`,
        ...(withFiles ? { modelFiles: modelFiles(folder, files) } : {}),
      }), limit]).finally(() => clearTimeout(timer));
    };
    const cold = await embed(true);
    if (cold.backend.kind !== 'wgpu') throw new Error(`${folder} ran on ${cold.backend.kind}, not WebGPU`);
    await embed(false);
    const callMs = [];
    for (let i = 0; i < calls; i++) {
      const start = performance.now();
      await embed(false);
      callMs.push(performance.now() - start);
    }
    timer.resume();
    const profiled = await embed(false);
    timer.pause();
    const dispatches = await timer.take();
    results.push({ folder, call_ms: callMs, call_ms_median: median(callMs), dispatches,
      gpu_us: sum(dispatches.map((d) => d.us)), first_values: profiled.values.slice(0, 8) });
  }
  return { label: dawn.label, facts: adapterFacts(dawn.adapter), probes, runs: results };
}

function runChild(config, toggles, runs, args) {
  const spec = { flags: flagsOf(toggles), runs, length: args.length, calls: args.quick ? 3 : 5, timeout: args.timeout };
  const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', JSON.stringify(spec)],
    { encoding: 'utf8', maxBuffer: 256 << 20, timeout: 2 * args.timeout * 1000 * Math.max(1, runs.length) });
  const last = run.stdout.trim().split('\n').at(-1) ?? '';
  if (run.status !== 0 || !last.startsWith('{')) {
    const said = `${run.stderr}\n${run.stdout}`.split('\n').filter((l) => l.trim() && !l.startsWith('Warning: '));
    return { config, failed: said.slice(-2).join(' | ') || `exit ${run.status}` };
  }
  // Dawn says what it made of the flags on stderr (an unknown toggle, say): kept with the run.
  const said = run.stderr.split('\n').filter((l) => /toggle|feature/i.test(l)).slice(0, 5);
  return { config, toggles, ...JSON.parse(last), dawn_said: said };
}

// ---- Native: geneb embed --profile-kernels on the same checkpoints. ----

function nativeProfile(geneb, folder, sequence, timeout) {
  const fasta = join(folder, 'profile.fa');
  writeFileSync(fasta, `>s\n${sequence}\n`);
  const json = join(folder, 'native_profile.json');
  const run = spawnSync(geneb, ['embed', '--model', `hf:${folder}`, '--input', fasta, '--out', join(folder, 'profile.npy'),
    '--backend', 'wgpu', '--profile-kernels', json], { encoding: 'utf8', timeout: timeout * 1000 });
  if (run.status !== 0) return { failed: (run.stderr || `exit ${run.status}`).trim().split('\n').at(-1) };
  return JSON.parse(readFileSync(json, 'utf8'));
}

// ---- The join and the printout. ----

/** CubeCL's entry point for a kernel starts with its type's name in snake case. */
const entryPrefix = (nativeName) => nativeName.split(' | ')[0].replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
const sameKernel = (label, nativeName) => {
  const prefix = entryPrefix(nativeName);
  return label === prefix || label.startsWith(`${prefix}_`);
};

/**
 * Native launches and Dawn's dispatches of the same pass paired in order: an alignment that pairs
 * a launch only with a dispatch of the same kernel (its entry point starts with the kernel's
 * name) and leaves out as few as it can; what is left out is a launch one engine made and the
 * other did not.
 */
function align(order, dispatches) {
  const n = order.length;
  const m = dispatches.length;
  const kept = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      kept[i][j] = sameKernel(dispatches[j].label, order[i][0])
        ? kept[i + 1][j + 1] + 1
        : Math.max(kept[i + 1][j], kept[i][j + 1]);
    }
  }
  const pairs = [];
  const nativeOnly = [];
  const dawnOnly = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && sameKernel(dispatches[j].label, order[i][0]) && kept[i][j] === kept[i + 1][j + 1] + 1) {
      pairs.push([i++, j++]);
    } else if (i < n && (j === m || kept[i + 1][j] >= kept[i][j + 1])) {
      nativeOnly.push(order[i++][0]);
    } else {
      dawnOnly.push(dispatches[j++].label);
    }
  }
  return { pairs, nativeOnly, dawnOnly };
}

/** Dawn's dispatches joined to native launches (`align`), summed by native kernel name. */
function joinByKernel(native, dispatches) {
  const { pairs, nativeOnly, dawnOnly } = align(native.order, dispatches);
  const byName = new Map();
  for (const [i, j] of pairs) {
    const [name, us] = native.order[i];
    const row = byName.get(name) ?? { name, launches: 0, native_us: 0, dawn_us: 0, labels: new Set() };
    row.launches++;
    row.native_us += us ?? 0;
    row.dawn_us += dispatches[j].us;
    row.labels.add(dispatches[j].label);
    byName.set(name, row);
  }
  const rows = [...byName.values()].map((r) => ({ ...r, labels: [...r.labels], diff_us: r.dawn_us - r.native_us }));
  rows.sort((a, b) => Math.abs(b.diff_us) - Math.abs(a.diff_us));
  return { joined: pairs.length, native_only: nativeOnly, dawn_only: dawnOnly, rows };
}

const short = (name, n = 58) => (name.length > n ? `${name.slice(0, n - 1)}…` : name);
const fmt = (v, digits = 1) => (v === null || v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits));

function printFacts(native, dawn) {
  console.log('\nadapter, as each engine sees it');
  console.log(`  native wgpu: ${native.name} (${native.backend}, ${native.device_type}), driver ${native.driver} ${native.driver_info}`);
  console.log(`  Dawn:        ${[dawn.vendor, dawn.architecture, dawn.description].filter(Boolean).join(' ')}`);
  console.log(`  subgroup sizes: native ${native.subgroupMinSize}–${native.subgroupMaxSize}, Dawn ${dawn.subgroupMinSize}–${dawn.subgroupMaxSize}`);
  console.log(`  ${'limit'.padEnd(36)} ${'native'.padStart(12)} ${'Dawn'.padStart(12)}`);
  for (const [key, value] of Object.entries(native.limits)) {
    const theirs = dawn.limits[key];
    console.log(`  ${key.padEnd(36)} ${String(value).padStart(12)} ${String(theirs ?? '-').padStart(12)}${theirs !== undefined && theirs !== value ? '  ≠' : ''}`);
  }
  const nativeFeatures = new Set(native.features);
  const dawnFeatures = new Set(dawn.features);
  console.log(`  features in both: ${[...nativeFeatures].filter((f) => dawnFeatures.has(f)).join(', ') || '-'}`);
  console.log(`  native only: ${[...nativeFeatures].filter((f) => !dawnFeatures.has(f)).join(', ') || '-'}`);
  console.log(`  Dawn only:   ${[...dawnFeatures].filter((f) => !nativeFeatures.has(f)).join(', ') || '-'}`);
}

/**
 * Per layer and outside the layers, from the shallowest and the deepest model: a layer is their
 * difference over the layers between (the widest span, the least noise), the rest is outside.
 */
function perLayer(byLayers) {
  const depths = Object.keys(byLayers).map(Number).filter((d) => typeof byLayers[d] === 'number').sort((a, b) => a - b);
  if (depths.length < 2) return null;
  const [lo, hi] = [depths[0], depths.at(-1)];
  const layer = (byLayers[hi] - byLayers[lo]) / (hi - lo);
  return { layer, outside: byLayers[lo] - lo * layer, from: [lo, hi] };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.child) {
    console.log(JSON.stringify(await child(args.child)));
    process.exit(0);
  }
  const dir = join(args.out, 'profile');
  mkdirSync(dir, { recursive: true });
  const runs = [];
  for (const layers of args.layers) {
    const at = join(dir, `layers-${layers}`);
    const made = spawnSync('python3', [join(HERE, 'random_models.py'), at, '--models', args.models.join(','), '--layers', String(layers)],
      { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`random_models.py: ${made.stderr.trim()}`);
    for (const model of args.models) runs.push({ model, layers, folder: join(at, model) });
  }
  const [sequence] = dna([args.length]);
  const failures = [];

  console.log(`dawn_profile: native geneb --profile-kernels, ${runs.length} checkpoints, one ${args.length}-nt sequence a call`);
  for (const run of runs) {
    run.native = nativeProfile(args.geneb, run.folder, sequence, args.timeout);
    if (run.native.failed) failures.push(`native ${run.model} × ${run.layers}: ${run.native.failed}`);
  }
  console.log('dawn_profile: Dawn, default toggles');
  const dawn = { default: runChild('default', [], runs.map(({ model, folder }) => ({ model, folder })), args) };
  if (dawn.default.failed) failures.push(`Dawn: ${dawn.default.failed}`);
  const deepest = Math.max(...args.layers);
  const toggled = runs.filter((r) => r.layers === deepest && (!args.quick || r.model === args.models[0]));
  for (const [config, toggles] of Object.entries(CONFIGS).slice(args.toggles ? 1 : Infinity)) {
    console.log(`dawn_profile: Dawn, ${config}`);
    dawn[config] = runChild(config, toggles, toggled.map(({ model, folder }) => ({ model, folder })), args);
    if (dawn[config].failed) failures.push(`Dawn ${config}: ${dawn[config].failed}`);
  }
  const dawnRun = (config, folder) => dawn[config].runs?.find((r) => r.folder === folder);

  const someNative = runs.find((r) => r.native.adapter)?.native.adapter;
  if (someNative && dawn.default.facts) printFacts(someNative, dawn.default.facts);

  console.log('\ntime per call (one sequence), median ms; GPU µs summed over the launches');
  console.log(`  ${'model'.padEnd(16)} ${'layers'.padStart(6)} ${'launches'.padStart(8)} ${'native ms'.padStart(10)} ${'Dawn ms'.padStart(9)} `
    + `${'Dawn/native'.padStart(11)} ${'native GPU µs'.padStart(13)} ${'Dawn GPU µs'.padStart(12)}`);
  const summary = [];
  for (const run of runs) {
    const d = dawnRun('default', run.folder);
    const n = run.native;
    const row = { model: run.model, layers: run.layers, launches: n.launches ?? null, dispatches: d?.dispatches.length ?? null,
      native_call_ms: n.call_ms_median ?? null, dawn_call_ms: d?.call_ms_median ?? null,
      native_gpu_us: n.gpu_us ?? null, dawn_gpu_us: d?.gpu_us ?? null, native_timing: n.timing ?? null };
    summary.push(row);
    console.log(`  ${run.model.padEnd(16)} ${String(run.layers).padStart(6)} ${String(row.launches ?? '-').padStart(8)} `
      + `${fmt(row.native_call_ms, 2).padStart(10)} ${fmt(row.dawn_call_ms, 2).padStart(9)} `
      + `${fmt(row.dawn_call_ms / row.native_call_ms, 2).padStart(10)}× ${fmt(row.native_gpu_us, 0).padStart(13)} ${fmt(row.dawn_gpu_us, 0).padStart(12)}`);
  }

  console.log(`\ncost per launch and per call (one layer = the difference of the shallowest and deepest calls over their layers)`);
  const costs = [];
  for (const model of args.models) {
    const of = (key) => Object.fromEntries(summary.filter((r) => r.model === model).map((r) => [r.layers, r[key]]));
    const launches = perLayer(of('launches'));
    if (!launches || !(launches.layer > 0)) continue;
    for (const [engine, key] of [['native', 'native_call_ms'], ['Dawn', 'dawn_call_ms']]) {
      const ms = perLayer(of(key));
      if (!ms) continue;
      const cost = { model, engine, launches_per_layer: launches.layer, launches_outside: launches.outside,
        ms_per_layer: ms.layer, ms_outside: ms.outside, us_per_launch: (1000 * ms.layer) / launches.layer };
      costs.push(cost);
      console.log(`  ${model.padEnd(16)} ${engine.padEnd(7)} ${launches.layer} launches a layer: ${fmt(ms.layer, 2)} ms a layer, `
        + `${fmt(cost.us_per_launch, 0)} µs a launch; outside the layers ${launches.outside} launches, ${fmt(ms.outside, 2)} ms`);
    }
  }

  const joins = [];
  for (const run of runs) {
    const d = dawnRun('default', run.folder);
    if (!d || !run.native.order) continue;
    const joined = joinByKernel(run.native, d.dispatches);
    joins.push({ model: run.model, layers: run.layers, ...joined });
    const unjoined = joined.native_only.length + joined.dawn_only.length;
    if (unjoined) {
      console.log(`\n${run.model}, ${run.layers} layers: ${joined.joined} launches joined; native only: `
        + `${joined.native_only.map((k) => short(k, 40)).join(', ') || '-'}; Dawn only: ${joined.dawn_only.join(', ') || '-'}`);
    }
    // A handful left out is one engine's extra launch (a copy, a cast); more is a failed join.
    if (unjoined > Math.max(4, run.native.order.length / 10)) {
      failures.push(`${run.model} × ${run.layers}: ${unjoined} launches did not join by kernel name`);
    }
    if (run.layers !== deepest) continue;
    console.log(`\n${run.model}, ${run.layers} layers: kernels whose GPU time differs most (Dawn − native, µs; ${joined.joined} launches joined by name in order)`);
    console.log(`  ${'kernel (native name)'.padEnd(58)} ${'n'.padStart(4)} ${'native µs'.padStart(10)} ${'Dawn µs'.padStart(10)} ${'Dawn−native'.padStart(11)}`);
    for (const r of joined.rows.slice(0, 10)) {
      console.log(`  ${short(r.name).padEnd(58)} ${String(r.launches).padStart(4)} ${fmt(r.native_us, 0).padStart(10)} `
        + `${fmt(r.dawn_us, 0).padStart(10)} ${fmt(r.diff_us, 0).padStart(11)}`);
    }
  }

  console.log(`\nDawn's toggles (${deepest} layers; probes: rounds of 8 where unwritten workgroup memory held leftovers, the time to zero it, `
    + 'an out-of-bounds read (1040 = past the binding, 1003 = clamped, 0 = the driver\'s), an invalid buffer)');
  console.log(`  ${'configuration'.padEnd(22)} ${'leftovers'.padStart(9)} ${'zeroing ms'.padStart(10)} ${'OOB read'.padStart(8)} `
    + `${'validated'.padStart(9)} ${'call ms'.padStart(9)} ${'GPU µs'.padStart(9)}  model`);
  const toggleRows = [];
  for (const [config, result] of Object.entries(dawn)) {
    if (result.failed) {
      console.log(`  ${config.padEnd(22)} FAILED ${result.failed}`);
      continue;
    }
    for (const run of toggled) {
      const d = dawnRun(config, run.folder);
      if (!d) continue;
      const p = result.probes;
      toggleRows.push({ config, model: run.model, ...p, call_ms: d.call_ms_median, gpu_us: d.gpu_us });
      console.log(`  ${config.padEnd(22)} ${`${p.workgroupLeftovers}/8`.padStart(9)} ${fmt(p.zeroingCostMs, 2).padStart(10)} `
        + `${String(p.outOfBoundsRead).padStart(8)} ${String(p.validated).padStart(9)} ${fmt(d.call_ms_median, 2).padStart(9)} `
        + `${fmt(d.gpu_us, 0).padStart(9)}  ${run.model}`);
    }
    if (result.dawn_said?.length) console.log(`    Dawn said: ${result.dawn_said.join(' | ')}`);
  }

  writeFileSync(join(args.out, 'profile.json'), JSON.stringify({
    adapter: { native: someNative ?? null, dawn: dawn.default.facts ?? null },
    summary, costs, joins: joins.map(({ rows, ...rest }) => ({ ...rest, rows: rows?.slice(0, 40) })), toggles: toggleRows,
    native: runs.map(({ model, layers, native }) => ({ model, layers, ...native, order: undefined })),
  }, null, 1));
  console.log(`\ndawn_profile: figures in ${join(args.out, 'profile.json')}`);
  if (failures.length) {
    console.error(`dawn_profile: failures:\n  ${failures.join('\n  ')}`);
    process.exit(1);
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(`dawn_profile: ${e.message}`);
  process.exit(2);
});
