// The page's one-thread wasm core (www/pkg, the build the worker uses for WebGPU calls) run in
// Node on Dawn, the WebGPU implementation inside Chrome, through the npm package `webgpu`
// (Dawn's Node bindings). The core is called exactly as www/worker.js calls it; only the
// browser's globals are stood in for: `navigator.gpu`, and a `WorkerGlobalScope` that the
// global object is an instance of, which is how wgpu's web backend finds `navigator.gpu`.
//
// Shared by tests/e2e/dawn.test.mjs and bench/dawn_bench.mjs.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './helpers.mjs';

/**
 * Dawn rounds timestamps to 100 µs-scale steps by default (a browser's guard against timing
 * attacks): a short kernel then reads 0. Every kernel timing here asks for Dawn's raw ticks.
 */
export const RAW_TIMESTAMPS = 'disable-dawn-features=timestamp_quantization';

/**
 * Dawn's WebGPU entry point, or the reason there is none (the package is missing, or Dawn found
 * no adapter: Debian 12's own Mesa 22.3 lavapipe is refused by Dawn, Mesa 25 is taken).
 */
export async function dawnGpu({ flags = [] } = {}) {
  let webgpu;
  try {
    webgpu = await import('webgpu');
  } catch (e) {
    return { reason: `the npm package webgpu is not installed (npm ci): ${e.message}` };
  }
  Object.assign(globalThis, webgpu.globals);
  // `flags`: Dawn's own, e.g. 'enable-dawn-features=disable_robustness' (device toggles).
  const gpu = webgpu.create(flags);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) return { reason: 'Dawn found no WebGPU adapter (lavapipe needs Mesa ≥ 25: see .ci/run)' };
  const { vendor, architecture, description } = adapter.info;
  const label = [description || vendor, architecture].filter(Boolean).join(' ');
  return {
    gpu,
    adapter,
    label: `Dawn: ${label || 'unnamed adapter'}`,
    features: [...adapter.features],
    limits: {
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
      maxBufferSize: adapter.limits.maxBufferSize,
    },
  };
}

/**
 * The one-thread page core on Dawn: `{core, label, features, limits}`, or `{reason}`. The core's
 * WebGPU calls reach Dawn; its CPU calls run Burn's CPU backend in the same wasm, as in the page.
 */
export async function coreOnDawn({ pkg = join(REPO, 'www', 'pkg'), flags = [] } = {}) {
  const dawn = await dawnGpu({ flags });
  if (!dawn.gpu) return dawn;
  // What a browser's worker has: navigator.gpu, and a global that is a WorkerGlobalScope.
  if (globalThis.navigator === undefined) {
    Object.defineProperty(globalThis, 'navigator', { value: {}, configurable: true });
  }
  Object.defineProperty(globalThis.navigator, 'gpu', { value: dawn.gpu, configurable: true });
  globalThis.WorkerGlobalScope ??= class WorkerGlobalScope {
    static [Symbol.hasInstance](object) {
      return object === globalThis;
    }
  };
  const core = await import(pathToFileURL(join(pkg, 'geneb.js')).href);
  await core.default({ module_or_path: readFileSync(join(pkg, 'geneb_bg.wasm')) });
  return { ...dawn, core };
}

/** The largest |a[i] − b[i]| of two embeddings of the same length. */
export function maxAbsDiff(a, b) {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

/** A model folder as the page passes its files when it has no Blob to give: `{name, bytes}`. */
export function modelFiles(dir, names) {
  return names.map((name) => ({ name, bytes: new Uint8Array(readFileSync(join(dir, name))) }));
}

/** A buffer's usage flags by name, e.g. 'UNIFORM|STORAGE|COPY_DST'. */
function usageNames(usage) {
  return Object.entries(globalThis.GPUBufferUsage).filter(([, bit]) => usage & bit).map(([name]) => name).join('|');
}

/**
 * Counts the WebGPU calls a GPU engine pays for beyond the kernels themselves, by wrapping the
 * methods on Dawn's prototypes (so every device the core creates is counted): pipelines and
 * shader modules compiled, buffers created, queue submits, dispatches and buffer maps.
 * `take()` returns the counts since the last take and starts again from zero; `made()` what
 * those pipelines and buffers were since the last take (each pipeline's label, CubeCL's kernel
 * name and hash; each buffer's size and usage), to say what a count is made of.
 */
export function gpuCensus() {
  const zero = () => ({ pipelines: 0, shaderModules: 0, buffers: 0, submits: 0, dispatches: 0, maps: 0 });
  let counts = zero();
  let made = [];
  const describe = {
    pipelines: (descriptor) => `pipeline ${descriptor?.label ?? '(unlabelled)'}`,
    buffers: (descriptor) => `buffer ${descriptor?.size} B ${usageNames(descriptor?.usage ?? 0)}`,
  };
  const wrap = (proto, method, key) => {
    const original = proto[method];
    if (original.counted) return;
    proto[method] = Object.assign(function counted(...args) {
      counts[key]++;
      if (describe[key]) made.push(describe[key](args[0]));
      return original.apply(this, args);
    }, { counted: true, original });
  };
  const { GPUDevice, GPUQueue, GPUComputePassEncoder, GPUBuffer } = globalThis;
  wrap(GPUDevice.prototype, 'createComputePipeline', 'pipelines');
  wrap(GPUDevice.prototype, 'createComputePipelineAsync', 'pipelines');
  wrap(GPUDevice.prototype, 'createShaderModule', 'shaderModules');
  wrap(GPUDevice.prototype, 'createBuffer', 'buffers');
  wrap(GPUQueue.prototype, 'submit', 'submits');
  wrap(GPUComputePassEncoder.prototype, 'dispatchWorkgroups', 'dispatches');
  wrap(GPUComputePassEncoder.prototype, 'dispatchWorkgroupsIndirect', 'dispatches');
  wrap(GPUBuffer.prototype, 'mapAsync', 'maps');
  return {
    take() {
      const taken = counts;
      counts = zero();
      made = [];
      return taken;
    },
    made() {
      return [...made];
    },
  };
}

/**
 * What Dawn's adapter offers, for setting beside what native wgpu sees: its info (subgroup sizes
 * included), features and every limit.
 */
export function adapterFacts(adapter) {
  const info = {};
  for (const key of ['vendor', 'architecture', 'device', 'description', 'subgroupMinSize', 'subgroupMaxSize']) {
    info[key] = adapter.info[key];
  }
  const limits = {};
  for (const key in adapter.limits) limits[key] = adapter.limits[key];
  return { ...info, features: [...adapter.features].sort(), limits };
}

/** How many dispatches one pooled query set times (two timestamps each). */
const DISPATCHES_PER_QUERY_SET = 256;

/**
 * GPU time of every dispatch the core makes, from WebGPU timestamp queries, by wrapping Dawn's
 * prototypes (as `gpuCensus` does): each compute pass the core opens is replayed as one pass per
 * dispatch carrying `timestampWrites`, its timestamps resolved when its encoder finishes. Each
 * kernel then runs in a pass of its own, as CubeCL's own per-launch timing does natively. Only
 * on devices with 'timestamp-query' (otherwise passes are left as they are and nothing is timed).
 * `take()` resolves to `[{label, us}]` (the pipeline's label, CubeCL's kernel entry point) in
 * submission order since the last take; between `pause()` and `resume()` passes are left as they are.
 */
export function gpuKernelTimer() {
  const { GPUDevice, GPUCommandEncoder, GPUQueue, GPUMapMode, GPUBufferUsage } = globalThis;
  const encoders = new WeakMap(); // encoder -> {device, dispatches: [label], chunks}
  const commandBuffers = new WeakMap(); // finished command buffer -> its encoder's record
  const pools = new WeakMap(); // device -> idle chunks
  let submitted = [];
  let timing = true;

  // The methods as they are now, so a census installed first still counts what passes through.
  const createEncoder = GPUDevice.prototype.createCommandEncoder;
  const beginPass = GPUCommandEncoder.prototype.beginComputePass;
  const finish = GPUCommandEncoder.prototype.finish;
  const submit = GPUQueue.prototype.submit;

  const chunk = (device) => {
    const pool = pools.get(device) ?? [];
    pools.set(device, pool);
    if (pool.length) return pool.pop();
    const bytes = DISPATCHES_PER_QUERY_SET * 16;
    return {
      device,
      used: 0,
      querySet: device.createQuerySet({ type: 'timestamp', count: 2 * DISPATCHES_PER_QUERY_SET }),
      resolve: device.createBuffer({ size: bytes, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC }),
      read: device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }),
    };
  };

  /** A compute pass as the core sees it: records state, runs each dispatch in a timed pass. */
  class TimedPass {
    constructor(encoder, record, label) {
      Object.assign(this, { encoder, record, label, pipeline: null, bindGroups: [] });
    }
    setPipeline(pipeline) { this.pipeline = pipeline; }
    setBindGroup(index, ...rest) { this.bindGroups[index] = rest; }
    pushDebugGroup() {}
    popDebugGroup() {}
    insertDebugMarker() {}
    dispatchWorkgroups(...size) { this.timed('dispatchWorkgroups', size); }
    dispatchWorkgroupsIndirect(...args) { this.timed('dispatchWorkgroupsIndirect', args); }
    end() {}
    timed(method, args) {
      const { record } = this;
      let current = record.chunks.at(-1);
      if (!current || current.used === DISPATCHES_PER_QUERY_SET) {
        current = chunk(record.device);
        record.chunks.push(current);
      }
      const slot = current.used++;
      const pass = beginPass.call(this.encoder, {
        label: this.label,
        timestampWrites: { querySet: current.querySet, beginningOfPassWriteIndex: 2 * slot, endOfPassWriteIndex: 2 * slot + 1 },
      });
      pass.setPipeline(this.pipeline);
      this.bindGroups.forEach((args, index) => { if (args) pass.setBindGroup(index, ...args); });
      pass[method](...args);
      pass.end();
      record.dispatches.push(this.pipeline?.label ?? '');
    }
  }

  GPUDevice.prototype.createCommandEncoder = Object.assign(function timedEncoder(...args) {
    const encoder = createEncoder.apply(this, args);
    if (this.features.has('timestamp-query')) encoders.set(encoder, { device: this, dispatches: [], chunks: [] });
    return encoder;
  }, { original: createEncoder });
  GPUCommandEncoder.prototype.beginComputePass = Object.assign(function timedPass(descriptor = {}) {
    // Decided per pass: the core opens its next encoder before the call that uses it.
    const record = encoders.get(this);
    if (!timing || !record || descriptor.timestampWrites) return beginPass.call(this, descriptor);
    return new TimedPass(this, record, descriptor.label);
  }, { original: beginPass });
  GPUCommandEncoder.prototype.finish = Object.assign(function timedFinish(...args) {
    const record = encoders.get(this);
    for (const c of record?.chunks ?? []) {
      this.resolveQuerySet(c.querySet, 0, 2 * c.used, c.resolve, 0);
      this.copyBufferToBuffer(c.resolve, 0, c.read, 0, 16 * c.used);
    }
    const buffer = finish.apply(this, args);
    if (record) commandBuffers.set(buffer, record);
    return buffer;
  }, { original: finish });
  GPUQueue.prototype.submit = Object.assign(function timedSubmit(buffers, ...rest) {
    for (const buffer of buffers) {
      const record = commandBuffers.get(buffer);
      if (record) submitted.push(record);
    }
    return submit.call(this, buffers, ...rest);
  }, { original: submit });

  return {
    pause() { timing = false; },
    resume() { timing = true; },
    async take() {
      const records = submitted;
      submitted = [];
      const times = [];
      for (const { dispatches, chunks } of records) {
        let next = 0;
        for (const c of chunks) {
          await c.read.mapAsync(GPUMapMode.READ, 0, 16 * c.used);
          const ticks = new BigUint64Array(c.read.getMappedRange(0, 16 * c.used));
          for (let i = 0; i < c.used; i++) {
            times.push({ label: dispatches[next++], us: Number(ticks[2 * i + 1] - ticks[2 * i]) / 1000 });
          }
          c.read.unmap();
          c.used = 0;
          pools.get(c.device).push(c);
        }
      }
      return times;
    },
  };
}
