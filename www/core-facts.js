// The core's rules the page shows and checks input by, as the core itself states them (the wasm
// `facts()` export, src/facts.rs, sent in the worker's ready message): the regimes with their
// shots and seeds, GENEB's categories, the files the readers take, the named suites, the memory
// budget of one task's embeddings. The page restates none of them: until the core is up, what
// needs them waits (`onCoreFacts`).

let facts = null;
const listeners = [];

/**
 * The worker's ready message brought the facts: everything waiting on them runs, once (a
 * restarted worker's core states the same rules).
 */
export function setCoreFacts(value) {
  if (facts || !value) return;
  facts = value;
  for (const fn of listeners) fn(facts);
}

/** The facts, or null until the core is up. */
export function coreFacts() {
  return facts;
}

/** Call `fn(facts)` once the core has stated them (now, if it has). */
export function onCoreFacts(fn) {
  listeners.push(fn);
  if (facts) fn(facts);
}

/** How a regime reads in a heading: the core's label, capitalised ("Full data", "10-shot"). */
export function regimeLabel(key) {
  const label = facts?.regimes.find((r) => r.key === key)?.label ?? key;
  return label.charAt(0).toUpperCase() + label.slice(1);
}

/** What a regime trains the probe on ("10 examples per class; mean ± std over 5 seeds"). */
export function regimeNote(key) {
  const r = facts?.regimes.find((x) => x.key === key);
  if (!r) return '';
  if (r.shots == null) return 'probe trained on all training examples';
  return `${r.shots} example${r.shots === 1 ? '' : 's'} per class; mean ± std over ${r.seeds.length} seeds`;
}

/** The number of few-shot seeds (for "over the 5 seeds"). */
export function fewShotSeeds() {
  return facts?.regimes.find((r) => r.seeds.length)?.seeds.length ?? null;
}

/** A regime's place in the protocol's order; unknown keys after the known ones. */
export function regimeRank(key) {
  const i = facts ? facts.regimes.findIndex((r) => r.key === key) : -1;
  return i < 0 ? Number.MAX_SAFE_INTEGER : i;
}

/** A lower-cased name without the compression the readers undo (`t.csv.gz` → `t.csv`). */
function uncompressed(name) {
  const { compression } = facts.dataFiles;
  const lower = name.toLowerCase();
  return lower.endsWith(`.${compression}`) ? lower.slice(0, -compression.length - 1) : lower;
}

/** Whether a base name is a file the core reads (for picking a dropped folder's files). */
export function isDataFile(base) {
  if (!facts) return false;
  const { tasks, embeddings } = facts.dataFiles;
  const lower = base.toLowerCase();
  const plain = uncompressed(base);
  const extension = plain.includes('.') ? plain.slice(plain.lastIndexOf('.') + 1) : '';
  return [...tasks.extensions, ...embeddings.extensions].includes(extension)
    || [...tasks.names, ...embeddings.names].includes(lower);
}

/** Whether a path is a task table (the only kind of task file that can lack a split column). */
export function isTable(path) {
  if (!facts) return false;
  const plain = uncompressed(path);
  return facts.dataFiles.tables.some((e) => plain.endsWith(`.${e}`));
}

/** Whether a path is the user's own embeddings (.npz, X.npy), probed with no encoder. */
export function isOwnEmbeddings(path) {
  if (!facts) return false;
  const { embeddings } = facts.dataFiles;
  const lower = path.split('/').pop().toLowerCase();
  return embeddings.extensions.some((e) => lower.endsWith(`.${e}`)) || embeddings.names.includes(lower);
}

/** The file picker's hint: every read extension, and the compressed ones as any `.gz`. */
export function dataAccept() {
  if (!facts) return '';
  const { tasks, embeddings, compression } = facts.dataFiles;
  const names = [...tasks.names, ...embeddings.names].map((n) => n.slice(n.lastIndexOf('.')));
  return [...new Set([...tasks.extensions, ...embeddings.extensions].map((e) => `.${e}`).concat(`.${compression}`, names))].join(',');
}
