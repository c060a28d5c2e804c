// The page's one-thread wasm core (www/pkg, the build the worker uses for WebGPU calls) run in
// Node on Dawn, the WebGPU implementation inside Chrome, through the npm package `webgpu`
// (Dawn's Node bindings). The core is called exactly as www/worker.js calls it; only the
// browser's globals are stood in for: `navigator.gpu`, and a `WorkerGlobalScope` that the
// global object is an instance of, which is how wgpu's web backend finds `navigator.gpu`.
//
// Shared by tests/e2e/dawn.test.mjs and bench/dawn_bench.mjs.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './helpers.mjs';

/**
 * Dawn's WebGPU entry point, or the reason there is none (the package is missing, or Dawn found
 * no adapter: Debian 12's own Mesa 22.3 lavapipe is refused by Dawn, Mesa 25 is taken).
 */
export async function dawnGpu() {
  let webgpu;
  try {
    webgpu = await import('webgpu');
  } catch (e) {
    return { reason: `the npm package webgpu is not installed (npm ci): ${e.message}` };
  }
  Object.assign(globalThis, webgpu.globals);
  const gpu = webgpu.create([]);
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
export async function coreOnDawn({ pkg = join(REPO, 'www', 'pkg') } = {}) {
  const dawn = await dawnGpu();
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

/** A model folder as the page passes its files when it has no Blob to give: `{name, bytes}`. */
export function modelFiles(dir, names) {
  return names.map((name) => ({ name, bytes: new Uint8Array(readFileSync(join(dir, name))) }));
}

/**
 * Counts the WebGPU calls a GPU engine pays for beyond the kernels themselves, by wrapping the
 * methods on Dawn's prototypes (so every device the core creates is counted): pipelines and
 * shader modules compiled, buffers created, queue submits, dispatches and buffer maps.
 * `take()` returns the counts since the last take and starts again from zero.
 */
export function gpuCensus() {
  const zero = () => ({ pipelines: 0, shaderModules: 0, buffers: 0, submits: 0, dispatches: 0, maps: 0 });
  let counts = zero();
  const wrap = (proto, method, key) => {
    const original = proto[method];
    if (original.counted) return;
    proto[method] = Object.assign(function counted(...args) {
      counts[key]++;
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
      return taken;
    },
  };
}
