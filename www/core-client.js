// The page's one way to the WebAssembly core: it starts the worker (www/worker.js), sends each
// request of www/protocol.js and returns a promise of its answer, hands its progress events to
// the caller, and turns every failure — the core's, the worker's crash, a pool thread out of
// memory, a cancel — into one CoreError whose message is the user's. Every panel calls the core
// through `callCore`; app.js alone starts, restarts and listens to the worker's life.

import { CALLS } from './protocol.js';
import { outOfMemoryMessage } from './out-of-memory.js';

/** A call's failure: www/protocol.js FAILURE, plus `call` (which request) and `cancelled`. */
export class CoreError extends Error {
  constructor(call, failure) {
    super(failure.message || `the core could not ${call}`);
    this.call = call;
    for (const flag of ['poisoned', 'outOfMemory', 'gpuFailure', 'crashed', 'cancelled']) this[flag] = Boolean(failure[flag]);
    this.backend = failure.backend ?? null;
  }
}

let worker = null;
let outOfMemorySignal = null; // the worker's BroadcastChannel for a pool thread's out-of-memory
let nextId = 1;
const pending = new Map(); // id → {call, resolve, reject, onProgress}
/**
 * app.js's: `ready(msg)`, `unavailable(message)`, `failed(error)` (any call's failure, before its
 * caller hears of it) and `lost(error)` (the worker cannot go on: it crashed, or a pool thread
 * ran out of memory; any calls in flight have failed with `error` first).
 */
let listeners = {};

/** Fail every call in flight with `failure` (the worker that would answer them is gone). */
function failAll(failure) {
  const calls = [...pending.values()];
  pending.clear();
  for (const p of calls) p.reject(new CoreError(p.call, failure));
}

/**
 * Start a fresh worker, ending the current one: terminating it is the only reliable way to stop
 * synchronous wasm, so this is also how a run is cancelled. Calls in flight fail as cancelled.
 */
export function startCore(on = listeners) {
  listeners = on;
  if (worker) worker.terminate();
  outOfMemorySignal?.close();
  failAll({ message: 'cancelled', cancelled: true });
  const url = new URL('./worker.js', import.meta.url);
  // `?threads=N` on the page sizes the threaded core's pool (default: every logical core), for a
  // user who wants cores left free and for the tests of thread-count determinism.
  const threads = new URLSearchParams(location.search).get('threads');
  if (threads) url.searchParams.set('threads', threads);
  const w = new Worker(url, { type: 'module', name: 'geneb' });
  worker = w;
  const current = (handler) => (...args) => { if (w === worker) handler(...args); };
  // A pool thread of the threaded core that runs out of memory says so here before it traps,
  // as the worker, blocked waiting for that thread, never will (src/web/out_of_memory.rs).
  // One channel per worker: another tab's core must not answer for this one.
  const channel = `geneb-out-of-memory-${[...crypto.getRandomValues(new Uint32Array(4))].map((n) => n.toString(36)).join('')}`;
  outOfMemorySignal = new BroadcastChannel(channel);
  outOfMemorySignal.addEventListener('message', current((e) => {
    lose({ poisoned: true, outOfMemory: true, message: outOfMemoryMessage(Number(e.data)) });
  }));
  w.postMessage({ type: 'out-of-memory-channel', channel });
  w.addEventListener('message', current((e) => onMessage(e.data)));
  w.addEventListener('error', current((e) => {
    e.preventDefault?.();
    lose({ crashed: true, message: `the compute worker stopped: ${e.message || 'unknown error'}` });
  }));
  w.addEventListener('messageerror', current(() => {
    lose({ crashed: true, message: 'the compute worker stopped: a message from the worker could not be read' });
  }));
}

/** The worker cannot go on: its calls fail with `failure`, then app.js decides what follows. */
function lose(failure) {
  failAll(failure);
  listeners.lost?.(new CoreError('', failure));
}

function onMessage(msg) {
  switch (msg?.type) {
    case 'ready': listeners.ready?.(msg); break;
    case 'unavailable': listeners.unavailable?.(msg.message); break;
    case 'progress': pending.get(msg.id)?.onProgress?.(msg); break;
    case 'done': {
      const p = pending.get(msg.id);
      if (!p) break;
      pending.delete(msg.id);
      p.resolve(msg.value);
      break;
    }
    case 'failed': {
      const p = pending.get(msg.id);
      if (!p) break;
      pending.delete(msg.id);
      const error = new CoreError(p.call, msg.error ?? {});
      listeners.failed?.(error);
      p.reject(error);
      break;
    }
    default: break; // not the protocol's (a test's own messages)
  }
}

/**
 * Ask the core for `call` (www/protocol.js CALLS) with `args`: resolves to its value, rejects
 * with a CoreError. `onProgress({stage, model, task, done, total, fromCache, pace})` hears how
 * far it is. Requests sent while the core loads wait for it in the worker.
 */
export function callCore(call, args, { onProgress } = {}) {
  if (!Object.hasOwn(CALLS, call)) return Promise.reject(new Error(`no core call '${call}' (www/protocol.js)`));
  if (!worker) return Promise.reject(new CoreError(call, { message: 'the compute worker is not running' }));
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { call, resolve, reject, onProgress });
    worker.postMessage({ type: 'call', id, call, args });
  });
}
