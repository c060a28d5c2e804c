// The results kept in this browser (IndexedDB), so runs survive a reload and can be compared
// later. One record per submission (one model's run on a set of tasks):
//   {id, digest, model, tasks: [task ids], regimes: [..], date: ISO text, backend: {kind, adapter},
//    source: "run" | "demo" | "import: <file>", submission}
// `digest` (SHA-256 of the submission's JSON) keeps the same result from being stored twice.
// The task files the user chose to keep are stored too ({path, file}), so they can be run
// offline later. Nothing here talks to a server.

import { regimeRank } from './core-facts.js';
import { database, requestDone, transactionDone } from './idb.js';

const DB_NAME = 'geneb';
const DB_VERSION = 2;
const STORE = 'results';
const TASK_FILES = 'taskFiles';


const openDb = database(DB_NAME, DB_VERSION, (db, oldVersion) => {
  if (oldVersion < 1) {
    const store = db.createObjectStore(STORE, { keyPath: 'id', autoIncrement: true });
    store.createIndex('digest', 'digest', { unique: true });
  }
  if (oldVersion < 2) db.createObjectStore(TASK_FILES, { keyPath: 'path' });
}, 'results');

async function sha256(text) {
  const bytes = new TextEncoder().encode(text);
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return [...hash].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** The task ids a submission scored, in sorted order, and its regimes in protocol order. */
export function describeSubmission(sub) {
  const results = sub.results ?? {};
  // The protocol's order; others (none today) after them, in the file's order.
  const regimes = Object.keys(results).sort((a, b) => regimeRank(a) - regimeRank(b));
  const tasks = new Set();
  for (const r of regimes) for (const id of Object.keys(results[r] ?? {})) tasks.add(id);
  return { model: String(sub.model_id), tasks: [...tasks].sort(), regimes };
}

/**
 * Store submissions. `backend` is used when a submission's protocol block names none.
 * Resolves to {added: [records], duplicates: number}.
 */
export async function saveSubmissions(submissions, { source, date = new Date(), backend = null }) {
  const prepared = [];
  for (const submission of submissions) {
    const digest = await sha256(JSON.stringify(submission));
    const b = submission.protocol?.backend;
    prepared.push({
      digest,
      ...describeSubmission(submission),
      date: date.toISOString(),
      backend: b && typeof b === 'object' ? { kind: String(b.kind ?? ''), adapter: String(b.adapter ?? '') } : backend,
      source,
      submission,
    });
  }
  const db = await openDb();
  const tx = db.transaction(STORE, 'readwrite');
  const store = tx.objectStore(STORE);
  const byDigest = store.index('digest');
  const added = [];
  let duplicates = 0;
  for (const record of prepared) {
    if (await requestDone(byDigest.getKey(record.digest)) !== undefined) {
      duplicates++;
      continue;
    }
    record.id = await requestDone(store.add(record));
    added.push(record);
  }
  await transactionDone(tx);
  return { added, duplicates };
}

/** Every stored result, newest first. */
export async function listResults() {
  const db = await openDb();
  const all = await requestDone(db.transaction(STORE).objectStore(STORE).getAll());
  // Within one run (one date), the run's own order.
  return all.sort((a, b) => b.date.localeCompare(a.date) || a.id - b.id);
}

export async function deleteResults(ids) {
  const db = await openDb();
  const tx = db.transaction(STORE, 'readwrite');
  for (const id of ids) tx.objectStore(STORE).delete(id);
  await transactionDone(tx);
}

/** Keep exactly these task files ({path, file}) in the browser, replacing those kept before. */
export async function keepTaskFiles(entries) {
  const db = await openDb();
  const tx = db.transaction(TASK_FILES, 'readwrite');
  const store = tx.objectStore(TASK_FILES);
  store.clear();
  for (const { path, file } of entries) store.put({ path, file });
  await transactionDone(tx);
}

/** The kept task files, as {path, file}. */
export async function keptTaskFiles() {
  const db = await openDb();
  return requestDone(db.transaction(TASK_FILES).objectStore(TASK_FILES).getAll());
}
