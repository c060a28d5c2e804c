// What the page keeps in this browser (models and official tasks in the Cache API, kept task
// files, results and embeddings in IndexedDB) survives only while the browser does not evict
// it. When the page first caches a model or tasks it asks for persistent storage
// (navigator.storage.persist()), and it shows the storage used and left
// (navigator.storage.estimate()) and whether the browser granted persistence.

import { bytesText } from './dom.js';

let line = null;
let asked = null; // the one persist() request of this page, shared by every caller

/** Mount the storage line into `root` and fill it. */
export function initStorage(root) {
  line = document.createElement('p');
  line.className = 'hint';
  line.dataset.testid = 'storage';
  line.setAttribute('aria-live', 'polite');
  root.append(line);
  return refreshStorage();
}

/**
 * Ask, once per page, that the browser keep this origin's storage under pressure (it may say no
 * without asking the user); then show the new figures. Never throws: caching works either way.
 */
export async function askToKeep() {
  const storage = navigator.storage;
  if (!asked && storage?.persist) {
    asked = (async () => {
      try {
        return (await storage.persisted?.()) || await storage.persist();
      } catch {
        return false;
      }
    })();
  }
  await asked;
  await refreshStorage();
}

/** Rewrite the storage line from the browser's current estimate. */
export async function refreshStorage() {
  if (!line) return;
  const storage = navigator.storage;
  if (!storage?.estimate) {
    line.textContent = 'Storage: this browser does not say how much it keeps for the page.';
    return;
  }
  try {
    const [{ usage = 0, quota = 0 }, persisted] = await Promise.all([
      storage.estimate(), storage.persisted ? storage.persisted() : Promise.resolve(false)]);
    line.dataset.usage = String(usage);
    line.dataset.quota = String(quota);
    line.dataset.persisted = String(persisted);
    line.textContent = `Storage: ${bytesText(usage, 'KB')} used, ${bytesText(Math.max(0, quota - usage), 'KB')} left · `
      + (persisted
        ? 'kept: the browser will not clear cached models and tasks to free space'
        : 'not persistent: the browser may clear cached models and tasks when space runs low');
  } catch (err) {
    line.textContent = `Storage: unknown (${err?.message ?? err})`;
  }
}
