// The service worker that keeps geneb usable with the network off (an air-gapped machine, a
// classroom with bad Wi-Fi) after one visit.
//
// Install: copy the app shell, the wasm core and the built-in demo suite into one cache.
// Fetch (same-origin GETs only): network first, so a new build on the server replaces the cached
// copy file by file as soon as the page loads online; when the network fails, the cached copy
// answers. Every good same-origin response is kept, so what the user fetched (today the demo
// suite; later the models and tasks they chose) works offline too.
// The cache name carries CACHE_VERSION: bump it when this file's layout of the cache changes, and
// activation deletes every older geneb cache.
// Nothing here talks to any host but the page's own.

const CACHE_VERSION = 5;
const CACHE = `geneb-v${CACHE_VERSION}`;

/** The app shell and the core, relative to this file. A missing one fails the install. */
const SHELL = [
  './', 'index.html', 'app.js', 'dom.js', 'store.js', 'library.js', 'profile-view.js', 'analysis-view.js',
  'worker.js', 'style.css', 'favicon.png', 'pkg/geneb.js', 'pkg/geneb_bg.wasm',
  'hub.js', 'models.js', 'tasks.js', 'idb.js', 'embedding-cache.js', 'queue.js', 'split.js', 'audit.js', 'meta.js', 'storage.js', 'predict.js', 'sha256.js',
  'out-of-memory.js', 'relaxed-simd.js', 'protocol.js', 'core-client.js', 'core-facts.js', 'task-files.js',
  'encoders.js', 'suite-files.js', 'offline.js',
];

/**
 * The threaded core (scripts/build-wasm.sh lists its files, whose helper folder is named by
 * hash). Optional: without it the page runs the one-thread core.
 */
const THREADED_MANIFEST = 'pkg-threads/files.json';

async function cacheThreadedCore(cache) {
  const res = await fetch(fresh(THREADED_MANIFEST));
  if (!res.ok) return;
  const { files = [] } = await res.clone().json();
  await cache.addAll(files.map((f) => fresh(`pkg-threads/${f}`)));
  await cache.put(fresh(THREADED_MANIFEST), res);
}

/** The demo suite: its manifest lists the task files. Optional (a server may not ship it). */
const DEMO_MANIFEST = 'tasks/smoke/tasks.json';

/** A request that skips the HTTP cache's copy without revalidating, so the install gets current files. */
const fresh = (url) => new Request(new URL(url, self.registration.scope), { cache: 'no-cache' });

async function cacheDemoSuite(cache) {
  const res = await fetch(fresh(DEMO_MANIFEST));
  if (!res.ok) return;
  const manifest = await res.clone().json();
  const files = (manifest.tasks ?? []).map((t) => t.file ?? `${t.id}.csv`);
  const base = new URL(DEMO_MANIFEST, self.registration.scope);
  await cache.addAll(files.map((f) => fresh(new URL(f, base))));
  await cache.put(fresh(DEMO_MANIFEST), res);
}

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await cache.addAll(SHELL.map(fresh));
    // The demo suite and the threaded core are conveniences: the page works offline without them.
    await cacheDemoSuite(cache).catch(() => {});
    await cacheThreadedCore(cache).catch(() => {});
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith('geneb-') && name !== CACHE) await caches.delete(name);
    }
    // Control the page that registered this worker at once, so it works offline without a reload.
    await self.clients.claim();
  })());
});

/** Keep `response` for `request` unless the cache already holds the same version (same ETag). */
async function keep(request, response) {
  const cache = await caches.open(CACHE);
  const etag = response.headers.get('ETag');
  if (etag) {
    const cached = await cache.match(request);
    if (cached && cached.headers.get('ETag') === etag) return;
  }
  await cache.put(request, response);
}

async function networkFirst(event) {
  const { request } = event;
  try {
    const response = await fetch(request);
    if (response.ok && response.type === 'basic') event.waitUntil(keep(request, response.clone()));
    return response;
  } catch (err) {
    const cached = await caches.match(request, { ignoreSearch: true, cacheName: CACHE })
      ?? (request.mode === 'navigate' ? await caches.match('./', { cacheName: CACHE }) : undefined);
    if (cached) return cached;
    throw err;
  }
}

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return;
  event.respondWith(networkFirst(event));
});
