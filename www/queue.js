// Work the user hands the page before the WebAssembly core is ready waits for it instead of
// being refused: a model folder picked in the first second, a hub id, a model from the cache.
// app.js says when a worker starts, becomes ready, or cannot start; the model panel (models.js)
// awaits `whenCoreReady` before its first call into the core and shows the wait meanwhile.
// (Task files, imports and GENEB task downloads need no core: they are kept at once, and the
// Run buttons stay disabled, saying why, until the core is up.)

let ready = false;
let failure = null; // why the core cannot start, once the page has given up on it
let waiting = []; // [{resolve, reject}]

/** A (new) worker is loading the core: later requests wait for it. */
export function coreStarting() {
  ready = false;
  failure = null;
}

/** The worker said `ready`: everything waiting proceeds, in the order it came. */
export function coreReady() {
  ready = true;
  const queued = waiting;
  waiting = [];
  for (const w of queued) w.resolve();
}

/** The core cannot be loaded in this tab (`message` says why): everything waiting fails with it. */
export function coreFailed(message) {
  ready = false;
  failure = message;
  const queued = waiting;
  waiting = [];
  for (const w of queued) w.reject(new Error(`the compute core could not be loaded: ${message}`));
}

/** Resolves once the core is ready; `onWait()` is called first when it is not ready yet. */
export function whenCoreReady(onWait) {
  if (ready) return Promise.resolve();
  if (failure != null) return Promise.reject(new Error(`the compute core could not be loaded: ${failure}`));
  onWait?.();
  return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
}
