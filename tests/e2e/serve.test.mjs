// The local static server: headers, MIME types, mounts, no directory traversal, the CLI line.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, CSP } from '../../scripts/serve.mjs';
import { REPO } from './helpers.mjs';

let server;
let scratch;

before(async () => {
  // A scratch mount with one file of each interesting type, so the MIME checks do not depend
  // on whether the wasm has been built.
  scratch = mkdtempSync(join(tmpdir(), 'geneb-serve-'));
  writeFileSync(join(scratch, 'm.wasm'), Buffer.from([0, 97, 115, 109, 1, 0, 0, 0]));
  writeFileSync(join(scratch, 'm.js'), 'export {};\n');
  writeFileSync(join(scratch, 'm.mjs'), 'export {};\n');
  mkdirSync(join(scratch, 'sub dir'));
  server = await startServer({ port: 0, mounts: [['/scratch/', scratch]] });
});

after(async () => {
  await server?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A raw GET: the path goes out exactly as written (fetch would normalise "..").*/
function rawGet(path, method = 'GET', headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: server.port, path, method, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('every response, the service worker and errors too, carries COOP + COEP (cross-origin isolation, for the threaded core)', async () => {
  for (const path of ['/', '/sw.js', '/worker.js', '/scratch/m.wasm', '/no-such-file', '/scratch/sub%20dir']) {
    const r = await rawGet(path);
    assert.equal(r.headers['cross-origin-opener-policy'], 'same-origin', path);
    assert.equal(r.headers['cross-origin-embedder-policy'], 'require-corp', path);
    assert.equal(r.headers['cross-origin-resource-policy'], 'same-origin', path);
  }
  // A host that cannot set COEP, as the one-thread fallback test serves the page.
  const plain = await startServer({ port: 0, isolated: false });
  try {
    const r = await new Promise((resolve, reject) => {
      request({ host: '127.0.0.1', port: plain.port, path: '/' }, (res) => { res.resume(); resolve(res); })
        .on('error', reject).end();
    });
    assert.equal(r.headers['cross-origin-embedder-policy'], undefined);
  } finally {
    await plain.close();
  }
});

test('serves the page with the CSP, no-cache and the right types', async () => {
  const res = await rawGet('/');
  assert.equal(res.status, 200);
  assert.match(res.headers['content-type'], /^text\/html/);
  assert.equal(res.headers['content-security-policy'], CSP);
  assert.equal(res.headers['cache-control'], 'no-cache');
  assert.match(res.body, /Your data never leaves this tab/);
  // The same policy is in the page, for when another server serves it.
  const meta = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(res.body);
  assert.ok(meta, 'index.html carries the CSP in a <meta>');
  assert.equal(meta[1], CSP);
  for (const [path, type] of [['/app.js', 'text/javascript'], ['/worker.js', 'text/javascript'], ['/style.css', 'text/css'],
    ['/scratch/m.wasm', 'application/wasm'], ['/scratch/m.js', 'text/javascript'], ['/scratch/m.mjs', 'text/javascript']]) {
    const r = await rawGet(path);
    assert.equal(r.status, 200, path);
    assert.equal(r.headers['content-type'].split(';')[0], type, path);
    assert.equal(r.headers['content-security-policy'], CSP, path);
  }
});

test('serves the demo and offline suites and the task catalogues', async () => {
  const cat = await rawGet('/tasks/geneb-tasks.json');
  assert.equal(cat.status, 200);
  assert.equal(JSON.parse(cat.body).tasks.length, 100);
  const official = await rawGet('/tasks/catalogue/geneb-catalogue.json');
  assert.equal(official.status, 200);
  assert.equal(JSON.parse(official.body).tasks.length, 100);
  const offline = await rawGet('/tasks/offline/tasks.json');
  assert.equal(offline.status, 200);
  const first = JSON.parse(offline.body).tasks[0];
  assert.equal((await rawGet(`/tasks/offline/${first.id}.csv`)).status, 200, 'the offline suite\'s tables');
  const smoke = await rawGet('/tasks/smoke/tasks.json');
  if (smoke.status === 404) return; // the demo suite is optional for the server itself
  assert.equal(smoke.status, 200);
  assert.match(smoke.headers['content-type'], /^application\/json/);
});

test('answers a repeated request with 304 while the file is unchanged, 200 once it changes', async () => {
  const path = join(scratch, 'etag.js');
  writeFileSync(path, 'export const a = 1;\n');
  const first = await rawGet('/scratch/etag.js');
  assert.equal(first.status, 200);
  const etag = first.headers.etag;
  assert.match(etag, /^W\/"[0-9a-f]+-[0-9a-f]+"$/);
  const again = await rawGet('/scratch/etag.js', 'GET', { 'If-None-Match': etag });
  assert.equal(again.status, 304);
  assert.equal(again.body, '');
  assert.equal(again.headers.etag, etag);
  assert.equal(again.headers['content-security-policy'], CSP);
  // A new build of the file (another size) gets a new validator and the new bytes.
  writeFileSync(path, 'export const a = 22;\n');
  const changed = await rawGet('/scratch/etag.js', 'GET', { 'If-None-Match': etag });
  assert.equal(changed.status, 200);
  assert.notEqual(changed.headers.etag, etag);
  assert.equal(changed.body, 'export const a = 22;\n');
});

test('refuses directory traversal and unknown paths', async () => {
  for (const path of ['/../Cargo.toml', '/%2e%2e/Cargo.toml', '/tasks/smoke/../../Cargo.toml',
    '/tasks/smoke/..%2f..%2fCargo.toml', '/..%5cCargo.toml', '/scratch/..%2f..%2f..%2fetc%2fpasswd',
    '/pkg/../../Cargo.toml', '/%00']) {
    const r = await rawGet(path);
    assert.ok([400, 404].includes(r.status), `${path} → ${r.status}`);
    assert.doesNotMatch(r.body, /\[package\]|root:/, path);
    assert.equal(r.headers['content-security-policy'], CSP, path);
  }
  assert.equal((await rawGet('/nope.html')).status, 404);
  assert.equal((await rawGet('/tasks/catalogue/README.md')).status, 404, 'the catalogue file alone');
  assert.equal((await rawGet('/tasks/')).status, 404, 'only the suites and the catalogues are served');
  assert.equal((await rawGet('/', 'POST')).status, 405);
  const head = await rawGet('/app.js', 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
});

test('redirects a folder to its slash on this host only (no open redirect)', async () => {
  // A folder without its slash: redirected, with the path kept percent-encoded.
  for (const [path, location] of [['/scratch/sub%20dir', '/scratch/sub%20dir/'], ['/%73cratch/sub%20dir', '/%73cratch/sub%20dir/']]) {
    const r = await rawGet(path);
    assert.equal(r.status, 301, path);
    assert.equal(r.headers.location, location, path);
  }
  // "%2F" decodes to a second slash: redirecting to the decoded "//scratch/" would send the
  // browser to the host "scratch". Any path with an empty segment is refused instead.
  for (const path of ['/%2Fscratch/sub%20dir', '/%2fscratch', '//scratch/sub%20dir', '/scratch//sub%20dir',
    '/%2F%2Fexample.com', '/\\example.com']) {
    const r = await rawGet(path);
    assert.equal(r.status, 400, `${path} → ${r.status} ${r.headers.location ?? ''}`);
    assert.equal(r.headers.location, undefined, path);
  }
  // An encoded backslash is just a (missing) file name here, never a redirect.
  const r = await rawGet('/%5C%5Cexample.com');
  assert.equal(r.status, 404);
  assert.equal(r.headers.location, undefined);
});

test('the CLI prints its address and serves on the port it picked', async () => {
  const child = spawn(process.execPath, [join(REPO, 'scripts', 'serve.mjs'), '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const line = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        const m = /geneb: serving (http:\/\/127\.0\.0\.1:(\d+)\/)\n/.exec(out);
        if (m) resolve(m);
      });
      child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
    });
    const res = await fetch(line[1]);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-security-policy'), CSP);
  } finally {
    child.kill('SIGTERM');
  }
});
