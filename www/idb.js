// IndexedDB as promises: the results store (store.js) and the embedding cache
// (embedding-cache.js) each keep a database of their own through these.

export function requestDone(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

export function transactionDone(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new Error('the browser aborted the storage transaction'));
    tx.onerror = () => reject(tx.error);
  });
}

/**
 * A function that opens the database `name` at `version` once and returns it on every call;
 * `upgrade(db, oldVersion)` creates its stores. `what` says what is kept, for the errors.
 */
export function database(name, version, upgrade, what) {
  let opened = null;
  return () => {
    opened ??= new Promise((resolve, reject) => {
      if (!self.indexedDB) {
        reject(new Error(`this browser offers no IndexedDB (private mode?): ${what} cannot be kept`));
        return;
      }
      const req = indexedDB.open(name, version);
      req.onupgradeneeded = (event) => upgrade(req.result, event.oldVersion);
      req.onsuccess = () => {
        const db = req.result;
        // A newer page in another tab (or this page's worker) upgrades it: let it, and reopen
        // on the next call.
        db.onversionchange = () => {
          db.close();
          opened = null;
        };
        resolve(db);
      };
      req.onerror = () => reject(req.error);
      req.onblocked = () => reject(new Error(`another tab holds an older version of the ${what}: close it and reload`));
    }).catch((err) => {
      opened = null; // let a later call try again
      throw err;
    });
    return opened;
  };
}
