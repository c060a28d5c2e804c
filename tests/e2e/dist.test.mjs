// The static site (scripts/build-dist.mjs) and how scripts/serve.mjs --dist serves it, without a
// browser or the real cores: a copy of www/ with a stand-in core is built, so these run in
// seconds. Content-hashed names with every reference rewritten (an import cycle too), a name
// that changes exactly when the file or something it loads changes, the service worker's
// manifest, the precompressed copies, and the server's choice of encoding and caching.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, readdir, rm, writeFile, appendFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { buildDist } from '../../scripts/build-dist.mjs';
import { HASHED, startServer } from '../../scripts/serve.mjs';
import { REPO } from './helpers.mjs';

let scratch;
let built;

/** A copy of www/ whose cores are stand-ins: glue that names its wasm, and a compressible "wasm". */
async function fakeRepo(dir) {
  await cp(join(REPO, 'www'), join(dir, 'www'), { recursive: true, filter: (src) => !/\/www\/pkg(-threads)?(\/|$)/.test(src) });
  // The offline suite's manifest without its 6 MB of tables: brotli at its best takes long.
  await cp(join(REPO, 'tasks'), join(dir, 'tasks'), { recursive: true, filter: (src) => !/\/tasks\/offline\/.*\.csv$/.test(src) });
  for (const pkg of ['pkg', 'pkg-threads']) {
    const at = join(dir, 'www', pkg);
    await cp(join(REPO, 'www', 'dom.js'), join(at, 'snippets', 'helper', 'helper.js')); // a file in a subfolder
    await writeFile(join(at, 'geneb.js'), `export default async function init() { return new URL('geneb_bg.wasm', import.meta.url); }\n// ${pkg}\n`);
    await writeFile(join(at, 'geneb_bg.wasm'), Buffer.concat([Buffer.from([0, 97, 115, 109, 1, 0, 0, 0]), Buffer.alloc(64 * 1024, pkg)]));
  }
  return dir;
}

const quiet = () => {};

async function files(dir, base = dir) {
  const out = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) out.push(...await files(full, base));
    else out.push(full.slice(base.length + 1));
  }
  return out;
}

/** The build's manifest, read back from its sw.js. */
async function manifest(dist) {
  const sw = await readFile(join(dist, 'sw.js'), 'utf8');
  const m = /^const BUILD = (\{.*\});$/m.exec(sw);
  assert.ok(m, 'dist/sw.js carries the build manifest');
  return JSON.parse(m[1]);
}

/** Page file (www name) → its name in `dist`. */
function names(list) {
  const out = {};
  for (const f of list) {
    const m = /^(.*?)\.[0-9a-f]{10}(\.[a-z]+)$/.exec(f);
    if (m && !f.includes('/')) out[m[1] + m[2]] = f;
    const dir = /^(pkg(?:-threads)?)\.[0-9a-f]{10}\/geneb\.js$/.exec(f);
    if (dir) out[dir[1]] = f.split('/')[0];
  }
  return out;
}

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'geneb-dist-'));
  const repo = await fakeRepo(join(scratch, 'a'));
  // An import cycle, as a refactor could make: hashed as one unit.
  await writeFile(join(repo, 'www', 'cycle-a.js'), "import { b } from './cycle-b.js';\nexport const a = () => b;\n");
  await writeFile(join(repo, 'www', 'cycle-b.js'), "import { a } from './cycle-a.js';\nexport const b = () => a;\n");
  await appendFile(join(repo, 'www', 'app.js'), "import './cycle-a.js';\n");
  built = await buildDist({ repo, out: join(scratch, 'dist-a'), cacheDir: join(scratch, 'cache'), log: quiet });
});

after(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

test('every file the page loads has a content-hashed name, and every reference points at one that exists', async () => {
  const dist = built.out;
  const all = await files(dist);
  const served = all.filter((f) => !/\.(br|gz)$/.test(f));
  for (const f of served) {
    if (f === 'index.html' || f === 'sw.js' || f.startsWith('tasks/')) continue;
    assert.match(`/${f}`, HASHED, `${f} has a hashed name`);
  }
  const html = await readFile(join(dist, 'index.html'), 'utf8');
  const refs = [...html.matchAll(/\s(?:src|href)="([^"#:]+)"/g)].map((m) => m[1]);
  assert.equal(refs.length, 3, `index.html references its icon, style and script: ${refs}`);
  for (const f of served.filter((p) => p.endsWith('.js'))) {
    const text = await readFile(join(dist, f), 'utf8');
    for (const [, path] of text.matchAll(/['"](\.\.?\/[^'"\s]+\.(?:js|wasm|css|png))['"]/g)) {
      refs.push(posix.join(posix.dirname(f), path));
    }
  }
  for (const ref of refs) assert.ok(existsSync(join(dist, ref)), `${ref} exists in dist/`);
  // The rewritten references are the hashed ones: no page module is loaded under its www/ name.
  const n = names(served);
  const worker = await readFile(join(dist, n['worker.js']), 'utf8');
  assert.ok(worker.includes(`'./${n.pkg}/geneb.js'`) && worker.includes(`'./${n['pkg-threads']}/geneb.js'`), 'the worker imports the hashed cores');
  assert.ok(worker.includes(`'./${n['dom.js']}'`), 'the worker imports the hashed dom.js');
  assert.doesNotMatch(worker, /'\.\/dom\.js'/);
  assert.ok(refs.includes(n['app.js']), 'index.html loads the hashed app.js');
  assert.ok((await readFile(join(dist, n['app.js']), 'utf8')).includes(`import './${n['isolation.js']}';`), 'which imports the hashed isolation.js');
  // The cycle's two modules name each other.
  assert.ok((await readFile(join(dist, n['cycle-a.js']), 'utf8')).includes(`'./${n['cycle-b.js']}'`));
  assert.ok((await readFile(join(dist, n['cycle-b.js']), 'utf8')).includes(`'./${n['cycle-a.js']}'`));
  // Inside a core's folder the paths stay as wasm-bindgen wrote them.
  assert.ok(existsSync(join(dist, n.pkg, 'geneb_bg.wasm')) && existsSync(join(dist, n.pkg, 'snippets', 'helper', 'helper.js')));
  assert.ok(!existsSync(join(dist, n['pkg-threads'], 'files.json')), 'the development manifest of the threaded core stays out');
});

test('the service worker lists every file of the build, the cores and the demo suite', async () => {
  const m = await manifest(built.out);
  assert.equal(m.id, built.id);
  assert.match(m.id, /^[0-9a-f]{10}$/);
  for (const f of m.precache) if (f !== './') assert.ok(existsSync(join(built.out, f)), `${f} exists`);
  const n = names(await files(built.out));
  for (const f of ['index.html', n['app.js'], n['worker.js'], n['style.css'], n['favicon.png'],
    `${n.pkg}/geneb.js`, `${n.pkg}/geneb_bg.wasm`, `${n['pkg-threads']}/geneb_bg.wasm`, 'tasks/smoke/tasks.json',
    'tasks/offline/tasks.json', 'tasks/catalogue/geneb-catalogue.json', 'tasks/geneb-tasks.json']) {
    assert.ok(m.precache.includes(f), `${f} is precached (${m.precache.join(', ')})`);
  }
  const smoke = JSON.parse(await readFile(join(REPO, 'tasks', 'smoke', 'tasks.json'), 'utf8'));
  for (const t of smoke.tasks) assert.ok(m.precache.includes(`tasks/smoke/${t.file ?? `${t.id}.csv`}`), t.id);
  assert.ok(!m.precache.includes('sw.js'));
  assert.ok(!m.precache.some((f) => /^tasks\/offline\/.*\.csv$/.test(f)), 'the offline suite\'s tables are kept when first run, not on install');
});

test('a name changes when its file or anything it loads changes, and no other', async () => {
  const repo = join(scratch, 'a');
  const before = names(await files(built.out));
  await appendFile(join(repo, 'www', 'relaxed-simd.js'), '// changed\n');
  const again = await buildDist({ repo, out: join(scratch, 'dist-b'), cacheDir: join(scratch, 'cache'), log: quiet });
  const after = names(await files(again.out));
  // relaxed-simd.js is loaded by worker.js alone, which core-client.js names, which app.js imports …
  for (const f of ['relaxed-simd.js', 'worker.js', 'core-client.js', 'app.js']) assert.notEqual(after[f], before[f], f);
  for (const f of ['dom.js', 'protocol.js', 'style.css', 'favicon.png', 'cycle-a.js', 'pkg', 'pkg-threads']) assert.equal(after[f], before[f], f);
  assert.notEqual(again.id, built.id, 'a new build id, so the service worker updates');
  // The same input builds the same site.
  const same = await buildDist({ repo, out: join(scratch, 'dist-c'), cacheDir: join(scratch, 'cache'), log: quiet });
  assert.equal(same.id, again.id);
});

test('large files have .br and .gz copies that decompress to them; small ones are left alone', async () => {
  const all = await files(built.out);
  const wasm = all.find((f) => /^pkg\.[0-9a-f]{10}\/geneb_bg\.wasm$/.test(f));
  const original = await readFile(join(built.out, wasm));
  assert.deepEqual(brotliDecompressSync(await readFile(join(built.out, `${wasm}.br`))), original);
  assert.deepEqual(gunzipSync(await readFile(join(built.out, `${wasm}.gz`))), original);
  assert.ok(built.sizes[wasm].br < original.length / 10, 'brotli shrinks the repetitive stand-in');
  const smallest = all.filter((f) => !/\.(br|gz)$/.test(f)).find((f) => built.sizes[f].raw < 1024);
  assert.ok(smallest, 'some file is under 1 KiB');
  assert.ok(!all.includes(`${smallest}.br`), `${smallest} (${built.sizes[smallest].raw} bytes) is not compressed`);
  assert.ok(!all.some((f) => /\.png\.(br|gz)$/.test(f)), 'a PNG is not compressed again');
});

/** A raw GET to `server` with these request headers. */
function get(server, path, headers = {}) {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: server.port, path, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject).end();
  });
}

test('serve.mjs --dist sends the precompressed copy the browser accepts, and caches hashed names for a year', async () => {
  const server = await startServer({ port: 0, dist: built.out });
  try {
    const wasm = (await files(built.out)).find((f) => /^pkg\.[0-9a-f]{10}\/geneb_bg\.wasm$/.test(f));
    const original = await readFile(join(built.out, wasm));
    const cases = [
      ['gzip, deflate, br, zstd', 'br', brotliDecompressSync],
      ['gzip', 'gzip', gunzipSync],
      ['br;q=0, gzip;q=0.5', 'gzip', gunzipSync],
      ['', undefined, (b) => b],
      ['identity', undefined, (b) => b],
    ];
    const etags = new Set();
    for (const [accept, encoding, decode] of cases) {
      const r = await get(server, `/${wasm}`, { 'accept-encoding': accept });
      assert.equal(r.status, 200, accept);
      assert.equal(r.headers['content-encoding'], encoding, `Accept-Encoding: ${accept}`);
      assert.equal(r.headers['content-type'], 'application/wasm');
      assert.equal(r.headers.vary, 'Accept-Encoding');
      assert.equal(r.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(r.headers['cross-origin-embedder-policy'], 'require-corp');
      assert.deepEqual(decode(r.body), original, accept);
      etags.add(r.headers.etag);
      const again = await get(server, `/${wasm}`, { 'accept-encoding': accept, 'if-none-match': r.headers.etag });
      assert.equal(again.status, 304, `revalidated: ${accept}`);
    }
    assert.equal(etags.size, 3, 'each encoding has its own ETag');
    // The entry points are revalidated on every load: a new build reaches visitors at once.
    for (const path of ['/', '/sw.js', '/tasks/smoke/tasks.json']) {
      const r = await get(server, path, { 'accept-encoding': 'br' });
      assert.equal(r.status, 200, path);
      assert.equal(r.headers['cache-control'], 'no-cache', path);
    }
    const page = await get(server, '/', { 'accept-encoding': 'br' });
    assert.equal(page.headers['content-encoding'], 'br');
    assert.match(brotliDecompressSync(page.body).toString('utf8'), /Your data never leaves this tab/);
  } finally {
    await server.close();
  }
});
