// The embedding cache: pooled embeddings kept in this browser (IndexedDB), so a rerun, another
// regime set or another probe setting on the same sequences never pays for a second embedding
// pass with a foundation model. The core makes the keys (model files' SHA-256, windows, backend,
// geneb version / SHA-256 of the sequences: src/encoder/mod.rs `cache_identity`), so a changed
// model, input or core is a miss, never a stale hit. Per list of sequences, two records:
//   embeddings: {key, values: Float32Array (row-major)}
//   entries:    {key, rows, dim, bytes, stored: ISO date}  (small: sizing the cache reads only these)
// Its own database, so the results store (store.js) and this one upgrade independently. The worker
// reads and writes it during a run; the page shows its size and clears it. Nothing leaves the
// browser.

import { database, requestDone, transactionDone } from './idb.js';

const DB_NAME = 'geneb-embeddings';
const DB_VERSION = 1;
const VALUES = 'embeddings';
const ENTRIES = 'entries';

const openDb = database(DB_NAME, DB_VERSION, (db) => {
  db.createObjectStore(VALUES, { keyPath: 'key' });
  db.createObjectStore(ENTRIES, { keyPath: 'key' });
}, 'embedding cache');

/** `work(valueStore, entryStore)` in one transaction over both stores; its result once committed. */
async function transact(mode, work) {
  const db = await openDb();
  const tx = db.transaction([VALUES, ENTRIES], mode);
  const [result] = await Promise.all([work(tx.objectStore(VALUES), tx.objectStore(ENTRIES)), transactionDone(tx)]);
  return result;
}

/** The embeddings stored under `key` when they have the expected shape, else null. */
export async function getEmbeddings(key, rows, dim) {
  const [entry, record] = await transact('readonly', (values, entries) => Promise.all([
    requestDone(entries.get(key)), requestDone(values.get(key)),
  ]));
  const stored = record?.values;
  if (!(stored instanceof Float32Array) || entry?.rows !== rows || entry?.dim !== dim
      || stored.length !== rows * dim) {
    return null;
  }
  return stored;
}

/** Keep `values` (row-major, `dim` columns) under `key`, replacing what was there. */
export async function putEmbeddings(key, dim, values) {
  const entry = { key, dim, rows: values.length / dim, bytes: values.byteLength, stored: new Date().toISOString() };
  await transact('readwrite', (valueStore, entryStore) => Promise.all([
    requestDone(valueStore.put({ key, values })), requestDone(entryStore.put(entry)),
  ]));
}

/** {entries, bytes} of what is kept. */
export async function cacheSize() {
  const all = await transact('readonly', (_, entries) => requestDone(entries.getAll()));
  return { entries: all.length, bytes: all.reduce((sum, e) => sum + (Number(e.bytes) || 0), 0) };
}

export async function clearCache() {
  await transact('readwrite', (values, entries) => Promise.all([
    requestDone(values.clear()), requestDone(entries.clear()),
  ]));
}

/**
 * The store the core's `run` takes ({get, put}). A read that fails is a miss; a write that
 * fails (quota, private mode) is noted in `warnings` and the run goes on without caching.
 */
export function storeForRun(warnings) {
  return {
    get: (key, rows, dim) => getEmbeddings(key, rows, dim).catch(() => null),
    put: (key, dim, values) => putEmbeddings(key, dim, values).catch((err) => {
      const why = err?.name === 'QuotaExceededError' ? 'the browser\'s storage is full' : (err?.message || String(err));
      if (!warnings.includes(why)) warnings.push(why);
    }),
  };
}
