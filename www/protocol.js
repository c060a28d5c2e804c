// The one protocol between the page and its worker: every message either side sends, in one
// table that both import. The page speaks it through www/core-client.js (requests return
// promises), the worker (www/worker.js) answers it; tests/e2e/protocol.test.mjs checks that
// the worker handles exactly these requests and sends only these events.
//
// A request is `{type: 'call', id, call, args}`. The worker answers each with exactly one
// `done` (`{id, value}`) or `failed` (`{id, error}`), and may send `progress` events for it in
// between. Every failure has one shape, FAILURE below, whose `message` is the line the user reads.

/** What the page may ask of the core: `args` the page sends, `value` what `done` carries. */
export const CALLS = Object.freeze({
  run: {
    about: 'the protocol on the dropped files for each model (src/web/run.rs)',
    args: '{request: {files, models, regimes, category, modelFiles, modelKeys, reuseEmbeddings, split?, meta?, saveProbe?}, '
      + 'forceBackend?: "cpu" | "webgpu"}',
    value: '{backend, requestedBackend, submissions, profile, probe, cacheWarnings}',
    progress: true,
  },
  embed: {
    about: 'pooled embeddings of a few sequences with a loaded model (www/models.js)',
    args: '{model, sequences, modelFiles, modelKey, forceBackend?}',
    value: '{dim, values, backend, modelKept, lastLayer, weights}',
  },
  predict: {
    about: 'a saved probe on new sequences (www/predict.js)',
    args: '{request: {probe, input, model, modelFiles, modelKey}}',
    value: '{csv, rows, task}',
  },
  report: {
    about: 'the comparison of saved results, as geneb profile makes it (www/library.js)',
    args: '{request: {files: [{name, text}], maxParams?, costBudget?}}',
    value: '{html, csv, svg, official: {name: text}, analysis}',
  },
  shards: {
    about: 'the shard files a sharded checkpoint\'s index names, each once (www/models.js)',
    args: '{index: {name, file}} (file: a File or Blob, read by the worker)',
    value: '[name]',
  },
  columns: {
    about: 'the dropped tables without a split column, and their columns (www/split.js)',
    args: '{files: [{name, file}]} (file: a File or Blob, read by the worker)',
    value: '{tables: [{file, task, columns}], defaults}',
  },
  audit: {
    about: 'the leak audit of the dropped tasks, before anything is embedded (www/audit.js)',
    args: '{files: [{name, file}], split?} (file: a File or Blob, read by the worker)',
    value: '{k, max_training_holders, near_copy_containment, thresholds, tasks: [TaskAudit]}',
  },
});

/** Page → worker, besides the calls: no answer. */
export const NOTICES = Object.freeze({
  'out-of-memory-channel': '{channel}: the BroadcastChannel the threaded core\'s pool threads post a refused '
    + 'allocation\'s size on (first, once per worker: src/web/out_of_memory.rs)',
});

/** Worker → page. */
export const EVENTS = Object.freeze({
  ready: '{version, models, known, tabWeightsLimit, modelFiles, facts (src/facts.rs), backend, threads: {count, reason}}: '
    + 'the core is loaded; requests sent before this waited for it',
  unavailable: '{message}: the core could not be loaded in this tab; every request fails',
  progress: '{id, stage, model, task, done, total, fromCache, pace}: how far a call is '
    + '(pace: the core\'s rate, elapsed and time-left line, src/progress.rs)',
  done: '{id, value}: a call\'s answer (CALLS[call].value)',
  failed: '{id, error: FAILURE}: a call\'s failure',
});

/**
 * The one error shape. `poisoned`: the wasm trapped (a Rust panic is a WebAssembly.RuntimeError),
 * so the instance may be broken and the page replaces the worker before the next call.
 * `outOfMemory`: the trap was the browser refusing the core more memory (the message says so).
 * `gpuFailure`: a WebGPU call failed in a way the CPU may not (worth a retry there).
 * `crashed`: the worker itself stopped (the page's client says so; the worker never sends it).
 */
export const FAILURE = '{message, poisoned?, outOfMemory?, gpuFailure?, backend?, crashed?}';
