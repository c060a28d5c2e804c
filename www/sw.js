// The service worker that keeps geneb usable with the network off (an air-gapped machine, a
// classroom with bad Wi-Fi) after one visit, and that makes the page cross-origin isolated (the
// condition for the threaded core) on hosts that cannot send the COOP/COEP headers.
//
// Install: copy the app shell, the wasm cores and the built-in demo suite into one cache.
// Fetch (same-origin GETs only): a content-hashed file (dist/, scripts/build-dist.mjs) never
// changes, so the cache answers it first; any other file is network first, so a new build on the
// server replaces the cached copy file by file as soon as the page loads online; when the network
// fails, the cached copy answers. Every good same-origin response is kept, so what the user
// fetched (the demo suite, the models and tasks they chose) works offline too.
// Isolation: a response that carries neither COOP nor COEP gets both (the coi-serviceworker
// technique); www/isolation.js reloads the page once so that its own document is served so.
// A host that sends either header has chosen: its responses pass unchanged.
// Versions: in dist/ the build fills in BUILD, its id names the cache and its list is every file
// of that build; a new build's worker installs its files beside the old cache, then activation
// deletes the old build's cache, so a page never mixes two builds' cores. Served from www/
// (development), BUILD stays null and CACHE_VERSION names the cache: bump it when this file's
// layout of the cache changes.
// Nothing here talks to any host but the page's own.

/** {id, precache}: written by scripts/build-dist.mjs; null in www/. */
const BUILD = null;
const CACHE_VERSION = 6;
const CACHE = BUILD ? `geneb-${BUILD.id}` : `geneb-v${CACHE_VERSION}`;
/**
 * This worker's caches, of any build: the page keeps the models and tasks a visitor downloaded in
 * caches of its own (geneb-models-v1, geneb-tasks-v1), which an update must not delete.
 */
const OWN_CACHE = /^geneb-(v\d+|[0-9a-f]{10})$/;

/** The headers that make a document cross-origin isolated (as scripts/serve.mjs sends them). */
const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

/** A content-hashed name (scripts/serve.mjs HASHED): its bytes never change. */
const HASHED = /\.[0-9a-f]{10}[./]/;

/** Served from www/: the app shell and the core, relative to this file. A missing one fails the install. */
const SHELL = [
  './', 'index.html', 'isolation.js', 'app.js', 'dom.js', 'store.js', 'library.js', 'profile-view.js', 'analysis-view.js',
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
    if (BUILD) {
      // Hashed names may come from the HTTP cache: the same name is the same bytes.
      await cache.addAll(BUILD.precache.map((f) => (HASHED.test(f) ? new Request(new URL(f, self.registration.scope)) : fresh(f))));
    } else {
      await cache.addAll(SHELL.map(fresh));
      // The demo suite and the threaded core are conveniences: the page works offline without them.
      await cacheDemoSuite(cache).catch(() => {});
      await cacheThreadedCore(cache).catch(() => {});
    }
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (OWN_CACHE.test(name) && name !== CACHE) await caches.delete(name);
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

/** A content-hashed file: this build's cached copy, else the network's (then kept). */
async function cacheFirst(event) {
  const cached = await caches.match(event.request, { ignoreSearch: true, cacheName: CACHE });
  return cached ?? networkFirst(event);
}

/**
 * `response` with COOP + COEP when it has neither (see the top of this file). A redirected
 * response passes as it is: rebuilt, the page would keep the URL it asked for, and its relative
 * links would break; the page it lands on is isolated on its own load.
 */
function isolated(response) {
  const { headers } = response;
  if (response.type !== 'basic' || response.redirected || response.status === 0
    || headers.has('Cross-Origin-Opener-Policy') || headers.has('Cross-Origin-Embedder-Policy')) return response;
  const copy = new Headers(headers);
  for (const [name, value] of Object.entries(ISOLATION)) copy.set(name, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers: copy });
}

self.addEventListener('fetch', (event) => {
  const { request } = event;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin) return;
  event.respondWith((HASHED.test(url.pathname) ? cacheFirst(event) : networkFirst(event)).then(isolated));
});
