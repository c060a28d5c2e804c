// dist/ (npm run build) as hosts serve it, in Chromium: by a static server that sets no headers
// (Python's http.server) and by one that sends the precompressed files with COOP/COEP
// (scripts/serve.mjs --dist). On both, the page is cross-origin isolated after its first load
// and runs the threaded core, says how it got threads, keeps its CSP, works offline after one
// visit (the demo runs with the server gone), and sends nothing off the machine. The first
// visit's transfer (counted on the wire by a proxy) and its time to a usable page are printed
// (bench/README.md records them). A second build served on the same origin replaces the first's
// cores, and a page never loads one build's files with the other's.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, appendFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDist } from '../../scripts/build-dist.mjs';
import { startServer } from '../../scripts/serve.mjs';
import { LOAD_TIMEOUT, REPO, byTestId, launchBrowser, openApp, profileRows, runAndWait, waitReady } from './helpers.mjs';

const DIST = join(REPO, 'dist');
const NO_DIST = 'dist/ is not built: run `npm run build` (npm test does)';
/** The goal for a first visit from a server that compresses (bytes on the wire). */
const FIRST_VISIT_BUDGET = 12e6;

/** A free port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** `python3 -m http.server` on `dir`: no COOP, COEP, CSP or compression. */
async function startPython(dir) {
  const port = await freePort();
  const child = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', dir], { stdio: 'ignore' });
  const exited = new Promise((r) => child.once('exit', r));
  for (let i = 0; ; i++) {
    const up = await new Promise((r) => connect(port, '127.0.0.1').once('connect', function () { this.end(); r(true); }).once('error', () => r(false)));
    if (up) break;
    if (i > 100 || child.exitCode !== null) throw new Error(`python3 -m http.server did not start on port ${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, close: async () => { child.kill(); await exited; } };
}

/**
 * A TCP proxy on 127.0.0.1 that counts the bytes servers send: the page's origin. `retarget`
 * points it at another server (a new build on the same origin).
 */
async function countingProxy(targetPort) {
  let target = targetPort;
  let received = 0;
  const sockets = new Set();
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    for (const s of [client, upstream]) { sockets.add(s); s.on('close', () => sockets.delete(s)); s.on('error', () => { client.destroy(); upstream.destroy(); }); }
    upstream.on('data', (d) => { received += d.length; });
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    bytes: () => received,
    /** From now on `port`'s server answers: open connections (kept alive) are cut, as a deploy would. */
    retarget(port) { target = port; for (const s of sockets) s.destroy(); },
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

/** Wait until the page is ready, through the one reload isolation.js may make. */
async function settle(page) {
  const deadline = Date.now() + LOAD_TIMEOUT;
  for (;;) {
    try {
      await page.waitForFunction(() => ['ready', 'unavailable'].includes(document.querySelector('[data-testid="status"]')?.textContent),
        null, { timeout: Math.max(1, deadline - Date.now()), polling: 100 });
      break;
    } catch (err) {
      if (Date.now() >= deadline || !/context was destroyed|navigat/i.test(err.message)) throw err;
    }
  }
  await waitReady(page, 1000);
}

async function waitOfflineReady(page) {
  await page.waitForFunction(() => /^ready/.test(document.querySelector('[data-testid="offline"]').textContent), null, { timeout: LOAD_TIMEOUT });
}

/** The build's manifest, from its sw.js. */
async function manifestOf(dist) {
  const m = /^const BUILD = (\{.*\});$/m.exec(await readFile(join(dist, 'sw.js'), 'utf8'));
  assert.ok(m, `${dist}/sw.js carries the build manifest`);
  return JSON.parse(m[1]);
}

/** The service worker's caches (www/sw.js OWN_CACHE): each one's name → the paths it holds. */
function swCaches(page) {
  return page.evaluate(async () => {
    const out = {};
    for (const name of await caches.keys()) {
      if (/^geneb-(v\d+|[0-9a-f]{10})$/.test(name)) out[name] = (await (await caches.open(name)).keys()).map((r) => new URL(r.url).pathname);
    }
    return out;
  });
}

/** Threads, by the Compute and Threads lines: the page runs the threaded core on every core. */
async function assertThreads(page, how) {
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), true, 'crossOriginIsolated');
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  assert.ok(cores > 1, `this test needs 2 or more cores (hardwareConcurrency ${cores})`);
  assert.match(await byTestId(page, 'backend').textContent(), new RegExp(`^CPU, ${cores} threads — `));
  assert.match(await byTestId(page, 'isolation').textContent(), how);
}

/**
 * The page's CSP (on python's server, only index.html's <meta>) stops a fetch to `url`, another
 * origin on this machine (the server behind the proxy), and reports it.
 */
async function assertCsp(app, url) {
  const { page, consoleErrors } = app;
  const errorsBefore = consoleErrors.length;
  const { outcome, directive } = await page.evaluate(async (other) => {
    const violation = new Promise((resolve) => {
      document.addEventListener('securitypolicyviolation', (e) => resolve(e.effectiveDirective), { once: true });
      setTimeout(() => resolve('no violation reported'), 5000);
    });
    const fetched = await fetch(other).then(() => 'fetched', (err) => `blocked: ${err.message}`);
    return { outcome: fetched, directive: await violation };
  }, url);
  assert.match(outcome, /^blocked/);
  assert.equal(directive, 'connect-src');
  // Chromium logs the refusal: expected here, so not one of the page's errors.
  const logged = consoleErrors.splice(errorsBefore);
  assert.ok(logged.every((e) => e.includes(url) && /Content Security Policy/.test(e)), `only the refusal was logged: ${logged.join(' | ')}`);
}

describe('dist/ on a host', { timeout: 30 * 60_000 }, () => {
  let browser;
  before(async () => {
    assert.ok(existsSync(join(DIST, 'index.html')), NO_DIST);
    // CPU only: the threads serve the CPU backend.
    browser = await launchBrowser({ webgpu: false });
  });
  after(async () => {
    await browser?.close();
  });

  const hosts = [
    {
      name: 'python3 -m http.server, which sends no headers',
      start: () => startPython(DIST),
      how: /^from this page's service worker, which adds COOP\/COEP \(the host sends none\)$/,
    },
    {
      name: 'scripts/serve.mjs --dist, which sends precompressed files and COOP/COEP',
      start: () => startServer({ port: 0, dist: DIST }),
      how: /^from the host's COOP\/COEP headers$/,
      budget: FIRST_VISIT_BUDGET,
    },
  ];
  for (const host of hosts) {
    it(`${host.name}: threads, the CSP, then the demo offline`, { timeout: LOAD_TIMEOUT * 8 }, async () => {
      const server = await host.start();
      const proxy = await countingProxy(server.port);
      let stopped = false;
      const started = Date.now();
      // The browser's HTTP cache on, as a visitor's is (a route would turn it off); every request
      // is still recorded, and the page's CSP is what stops one to another host.
      const app = await openApp(browser, { port: proxy.port }, { abortOffsite: false });
      const { page, context } = app;
      try {
        await settle(page);
        const usable = Date.now() - started;
        await assertThreads(page, host.how);
        await waitOfflineReady(page);
        const bytes = proxy.bytes();
        console.log(`# ${host.name}: first visit (cold cache) usable after ${(usable / 1000).toFixed(1)} s; `
          + `${(bytes / 1e6).toFixed(2)} MB on the wire until the offline copy was complete`);
        if (host.budget) assert.ok(bytes <= host.budget, `first visit ${bytes} bytes, over the ${host.budget} budget`);
        await assertCsp(app, `http://127.0.0.1:${server.port}/index.html`);

        await context.setOffline(true);
        await proxy.close();
        await server.close();
        stopped = true;
        await page.reload();
        await settle(page);
        assert.equal(await page.evaluate(() => Boolean(navigator.serviceWorker.controller)), true, 'served by the service worker');
        await assertThreads(page, /^from this page's service worker \(offline copy\)$/);
        assert.match(await byTestId(page, 'offline').textContent(), /you are offline/);
        await runAndWait(page, 'demo');
        assert.equal(await byTestId(page, 'error').isHidden(), true, await byTestId(page, 'error').textContent());
        const rows = await profileRows(page, 'full');
        assert.ok(rows.length >= 2, `the demo's profile has a row per baseline: ${JSON.stringify(rows)}`);
        assert.deepEqual(app.consoleErrors, [], 'no console errors');
        app.assertLocalOnly();
      } finally {
        await app.close();
        if (!stopped) { await proxy.close(); await server.close(); }
      }
    });
  }

  it('a new build on the same origin replaces the old cores, and no page mixes the two builds', { timeout: LOAD_TIMEOUT * 8 }, async () => {
    const scratch = await mkdtemp(join(tmpdir(), 'geneb-update-'));
    // Build B: the same sources with both cores' glue changed, so every core folder is renamed
    // (its wasm bytes are the same, so a copy of build A's cache spares brotli's minutes; a copy,
    // because a build forgets what it did not use; with no cache to copy, B compresses its own).
    const repo = join(scratch, 'repo');
    await cp(join(REPO, 'www'), join(repo, 'www'), { recursive: true });
    await cp(join(REPO, 'tasks'), join(repo, 'tasks'), { recursive: true });
    for (const pkg of ['pkg', 'pkg-threads']) await appendFile(join(repo, 'www', pkg, 'geneb.js'), '// build B\n');
    const cacheDir = join(scratch, 'cache');
    await cp(join(process.env.CARGO_TARGET_DIR || join(REPO, 'target'), 'geneb-dist-cache'), cacheDir, { recursive: true }).catch(() => {});
    const distB = (await buildDist({ repo, out: join(scratch, 'dist'), cacheDir, log: () => {} })).out;
    const [a, b] = [await manifestOf(DIST), await manifestOf(distB)];
    const cores = (m) => new Set(m.precache.filter((f) => /^pkg(-threads)?\./.test(f)).map((f) => f.split('/')[0]));
    const [coresA, coresB] = [cores(a), cores(b)];
    assert.equal(coresA.size, 2, `build A has both cores: ${[...coresA]}`);
    assert.equal([...coresB].filter((c) => coresA.has(c)).length, 0, 'build B renames every core folder');
    const onlyA = new Set(a.precache.filter((f) => !b.precache.includes(f)).map((f) => `/${f}`));

    const serverA = await startServer({ port: 0, dist: DIST });
    const serverB = await startServer({ port: 0, dist: distB });
    const proxy = await countingProxy(serverA.port);
    const app = await openApp(browser, { port: proxy.port });
    const { page, context } = app;
    try {
      await settle(page);
      await waitOfflineReady(page);
      assert.deepEqual(Object.keys(await swCaches(page)), [`geneb-${a.id}`]);
      // What the visitor downloaded lives in the page's own caches: an update keeps it.
      await page.evaluate(async () => (await caches.open('geneb-models-v1')).put('/kept-model', new Response('weights')));

      proxy.retarget(serverB.port);
      const since = app.requests.length;
      await page.reload();
      await settle(page);
      // The browser found the new sw.js on that navigation: B's worker installs, takes over and
      // deletes A's cache.
      const deadline = Date.now() + LOAD_TIMEOUT;
      let caches;
      while ((caches = await swCaches(page)), Object.keys(caches).join() !== `geneb-${b.id}`) {
        assert.ok(Date.now() < deadline, `only B's cache, geneb-${b.id}, is left: have ${Object.keys(caches)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      const cached = caches[`geneb-${b.id}`];
      for (const f of b.precache) assert.ok(cached.includes(new URL(f, 'http://x/').pathname), `${f} is in B's cache`);
      assert.ok(!cached.some((p) => onlyA.has(p)), 'none of A\'s own files is in the cache');
      assert.equal(await page.evaluate(async () => (await caches.match('/kept-model'))?.text()), 'weights', 'the kept model survived the update');

      // Offline now: the page and both cores come from B's cache alone.
      await context.setOffline(true);
      await page.reload();
      await settle(page);
      await assertThreads(page, /^from this page's service worker \(offline copy\)$/);

      const after = app.requests.slice(since).map((u) => new URL(u).pathname);
      const coreFolders = new Set(after.filter((p) => /^\/pkg(-threads)?\.[0-9a-f]{10}\//.test(p)).map((p) => p.split('/')[1]));
      for (const c of coreFolders) assert.ok(coresB.has(c), `${c} is B's (asked for: ${after.filter((p) => p.startsWith('/pkg')).join(' ')})`);
      assert.ok([...coreFolders].some((c) => c.startsWith('pkg-threads.')), `the threaded core loaded: ${[...coreFolders]}`);
      const stale = after.filter((p) => onlyA.has(p));
      assert.deepEqual(stale, [], 'no file of A was asked for once B was served');
      assert.deepEqual(app.consoleErrors, [], 'no console errors');
      app.assertLocalOnly();
    } finally {
      await app.close();
      await proxy.close();
      await serverA.close();
      await serverB.close();
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
