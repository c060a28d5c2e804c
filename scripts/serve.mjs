#!/usr/bin/env node
// Local static server for the geneb page, on 127.0.0.1 only. By default it serves www/ as it is
// (the page, its worker and the generated wasm in www/pkg/) plus the built-in suites tasks/smoke/
// and tasks/offline/, the official task catalogue tasks/catalogue/geneb-catalogue.json and
// tasks/geneb-tasks.json; with --dist, the static site scripts/build-dist.mjs made, as a host
// would: each file's precompressed .br or .gz when the browser accepts it, and a year's caching
// for content-hashed names. Nothing here talks to any other host; the page runs everything in the tab.
//
//   node scripts/serve.mjs [--port N] [--dist]   (or PORT=N; default 8787; 0 picks a free port)
//
// `startServer({ port })` is exported for the browser end-to-end tests.

import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { stat, readFile } from 'node:fs/promises';
import { extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const HOST = '127.0.0.1';
const DEFAULT_PORT = 8787;

/**
 * The Hugging Face hub's hosts, the only ones the page may fetch from (models by id): the hub,
 * and the LFS/Xet CDN hosts its `resolve` URLs redirect to (hub-docs, "downloading behind a
 * firewall"). index.html's <meta> CSP lists the same.
 */
export const HUB_HOSTS = [
  'https://huggingface.co',
  'https://cdn-lfs.huggingface.co',
  'https://cdn-lfs-us-1.huggingface.co',
  'https://cdn-lfs.hf.co',
  'https://cdn-lfs-us-1.hf.co',
  'https://cdn-lfs-eu-1.hf.co',
  'https://cas-bridge.xethub.hf.co',
  'https://us.aws.cdn.hf.co',
  'https://us.gcp.cdn.hf.co',
];

/** The one Content-Security-Policy of the page (index.html repeats it in a <meta>). */
export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  // blob: for wasm-bindgen-rayon, which starts each thread of the threaded core from a blob URL
  // of its own same-origin helper script.
  "worker-src 'self' blob:",
  `connect-src 'self' ${HUB_HOSTS.join(' ')}`,
  "img-src 'self' data: blob:",
  "style-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** Hex digits of sha256 in the content-hashed names scripts/build-dist.mjs gives. */
export const HASH_LENGTH = 10;
/** A content-hashed name (app.3f9c0a1b2d.js) or folder (pkg.3f9c0a1b2d/) in a URL path: never changes. */
export const HASHED = new RegExp(`\\.[0-9a-f]{${HASH_LENGTH}}[./]`);

/** Precompressed copies beside a file, best first: [Accept-Encoding token, file suffix]. */
const ENCODINGS = [['br', '.br'], ['gzip', '.gz']];

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.csv': 'text/csv; charset=utf-8',
  '.tsv': 'text/tab-separated-values; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.fa': 'text/plain; charset=utf-8',
  '.fasta': 'text/plain; charset=utf-8',
  '.gz': 'application/gzip',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json; charset=utf-8',
};

/**
 * URL prefix → directory (or single file, when the prefix has no trailing slash).
 * The first matching prefix wins, so the more specific ones come first.
 */
export function defaultMounts(repo) {
  return [
    ['/tasks/smoke/', join(repo, 'tasks', 'smoke')],
    ['/tasks/offline/', join(repo, 'tasks', 'offline')],
    ['/tasks/catalogue/geneb-catalogue.json', join(repo, 'tasks', 'catalogue', 'geneb-catalogue.json')],
    ['/tasks/geneb-tasks.json', join(repo, 'tasks', 'geneb-tasks.json')],
    ['/', join(repo, 'www')],
  ];
}

/** The CSP with `hubOrigin` (a test's local hub) allowed too. */
function cspFor(hubOrigin) {
  return hubOrigin ? CSP.replace("connect-src 'self'", `connect-src 'self' ${hubOrigin}`) : CSP;
}

/**
 * COOP same-origin + COEP require-corp make the page cross-origin isolated, the condition for
 * SharedArrayBuffer and so for the threaded core (www/worker.js). `isolated: false` (tests of the
 * one-thread fallback only) serves without COEP.
 */
function baseHeaders(extra = {}, { hubOrigin = '', isolated = true } = {}) {
  return {
    'Content-Security-Policy': cspFor(hubOrigin),
    'Cache-Control': 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Opener-Policy': 'same-origin',
    ...(isolated ? { 'Cross-Origin-Embedder-Policy': 'require-corp' } : {}),
    'Cross-Origin-Resource-Policy': 'same-origin',
    ...extra,
  };
}

function sendText(res, status, text, extra = {}, options = {}) {
  const body = Buffer.from(text + '\n', 'utf8');
  res.writeHead(status, baseHeaders({
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': body.length,
    ...extra,
  }, options));
  res.end(body);
}

/** Map a request path to a file on disk, or null when it is outside every mount. */
function resolvePath(mounts, pathname) {
  for (const [prefix, target] of mounts) {
    if (!prefix.endsWith('/')) {
      if (pathname === prefix) return target;
      continue;
    }
    if (!pathname.startsWith(prefix) && pathname + '/' !== prefix) continue;
    const rest = pathname.slice(prefix.length);
    const root = resolve(target);
    const file = resolve(root, '.' + sep + rest);
    // No directory traversal: the resolved file must stay inside the mount's root.
    if (file !== root && !file.startsWith(root + sep)) return null;
    return file;
  }
  return null;
}

async function handle(mounts, req, res, options) {
  const { hubOrigin } = options;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return sendText(res, 405, 'method not allowed', { Allow: 'GET, HEAD' }, options);
  }
  // `encoded` is the path as sent (percent-encoded, normalised by the URL parser); `pathname` is
  // its decoded form, used only to find the file. Parsed after the origin, so "//host/x" stays
  // a path rather than naming another host.
  let encoded;
  let pathname;
  try {
    if (!req.url.startsWith('/')) throw new Error('not an origin-form path');
    encoded = new URL(`http://localhost${req.url}`).pathname;
    pathname = decodeURIComponent(encoded);
  } catch {
    return sendText(res, 400, 'bad request', {}, options);
  }
  // No empty segments: "//" (however encoded) would make a redirect to another host.
  if (pathname.includes('\0') || pathname.includes('//') || pathname.split('/').some((seg) => seg === '..')) {
    return sendText(res, 400, 'bad request', {}, options);
  }
  let file = resolvePath(mounts, pathname);
  if (!file) return sendText(res, 404, 'not found', {}, options);
  let info;
  try {
    info = await stat(file);
    if (info.isDirectory()) {
      if (!pathname.endsWith('/')) {
        // The still-encoded path: a decoded "%2F" or "%5C" must not shape the Location.
        return sendText(res, 301, 'moved', { Location: `${encoded}/` }, options);
      }
      file = join(file, 'index.html');
      info = await stat(file);
    }
  } catch {
    return sendText(res, 404, 'not found', {}, options);
  }
  if (!info.isFile()) return sendText(res, 404, 'not found', {}, options);
  const type = MIME[extname(file).toLowerCase()] ?? 'application/octet-stream';
  // Tests only: the <meta> CSP must allow the local hub as well as the header.
  const rewriteCsp = Boolean(hubOrigin && type.startsWith('text/html'));
  const variant = rewriteCsp ? null : await precompressed(file, req.headers['accept-encoding']);
  if (variant) info = variant.info;
  let body = await readFile(variant?.file ?? file);
  if (rewriteCsp) body = Buffer.from(body.toString('utf8').replace("connect-src 'self'", `connect-src 'self' ${hubOrigin}`));
  const headers = {
    // A content-hashed name never changes, so it may be kept; any other file is revalidated.
    ...(HASHED.test(pathname) ? { 'Cache-Control': 'public, max-age=31536000, immutable' } : {}),
    ...(variant ? { 'Content-Encoding': variant.encoding } : {}),
    ...(variant || await hasVariant(file) ? { Vary: 'Accept-Encoding' } : {}),
  };
  // A validator, so a reload (and the service worker's network-first fetch) costs a 304, not
  // the whole wasm again. Each encoding is its own representation.
  const etag = `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}${variant ? `-${variant.encoding}` : ''}"`;
  if (req.headers['if-none-match']?.split(/\s*,\s*/).includes(etag)) {
    res.writeHead(304, baseHeaders({ ...headers, ETag: etag }, options));
    return res.end();
  }
  res.writeHead(200, baseHeaders({ ...headers, 'Content-Type': type, 'Content-Length': body.length, ETag: etag }, options));
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The encodings `header` (Accept-Encoding) accepts: its tokens without q=0. */
function accepted(header = '') {
  return new Set(header.split(',').map((part) => part.trim().split(/\s*;\s*/))
    .filter(([token, ...params]) => token && !params.some((p) => /^q=0(\.0*)?$/.test(p)))
    .map(([token]) => token.toLowerCase()));
}

/** The precompressed copy of `file` to send for `acceptEncoding`, {file, info, encoding}, or null. */
async function precompressed(file, acceptEncoding) {
  const ok = accepted(acceptEncoding);
  for (const [encoding, suffix] of ENCODINGS) {
    if (!ok.has(encoding)) continue;
    const info = await stat(file + suffix).catch(() => null);
    if (info?.isFile()) return { file: file + suffix, info, encoding };
  }
  return null;
}

async function hasVariant(file) {
  for (const [, suffix] of ENCODINGS) if (await stat(file + suffix).then((i) => i.isFile(), () => false)) return true;
  return false;
}

/**
 * Start the server. Resolves to { server, port, url, close() }.
 * @param {{port?: number, repo?: string, dist?: string, mounts?: Array<[string, string]>, hubOrigin?: string, isolated?: boolean}} [options]
 *   port 0 (the default here) picks a free port; `dist`, a folder scripts/build-dist.mjs built,
 *   is served instead of www/ and the suites; `mounts` are extra [urlPrefix, path] pairs
 *   checked before the others; `hubOrigin` (browser tests only) lets the page fetch models
 *   from a local stand-in for the hub.
 */
export function startServer({ port = 0, repo = REPO, dist = '', mounts = [], hubOrigin = '', isolated = true } = {}) {
  const all = [...mounts, ...(dist ? [['/', resolve(dist)]] : defaultMounts(repo))];
  const server = createServer((req, res) => {
    handle(all, req, res, { hubOrigin, isolated }).catch((err) => {
      if (!res.headersSent) sendText(res, 500, 'internal error');
      else res.destroy();
      console.error(`geneb: ${req.url}: ${err.message}`);
    });
  });
  return new Promise((resolveStart, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => {
      server.off('error', reject);
      const actual = server.address().port;
      resolveStart({
        server,
        port: actual,
        url: `http://${HOST}:${actual}/`,
        close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
      });
    });
  });
}

function parseArgs(argv, env) {
  let value = env.PORT;
  let dist = '';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--port' || a === '-p') value = argv[++i];
    else if (a.startsWith('--port=')) value = a.slice('--port='.length);
    else if (a === '--dist') dist = join(REPO, 'dist');
    else if (a === '--help' || a === '-h') {
      console.log('usage: node scripts/serve.mjs [--port N] [--dist]   (or PORT=N; default 8787; 0 = a free port;\n'
        + '  --dist serves dist/, which `npm run build` makes, instead of www/)');
      process.exit(0);
    } else {
      console.error(`geneb: unknown argument ${a} (try --help)`);
      process.exit(2);
    }
  }
  if (dist && !existsSync(join(dist, 'index.html'))) {
    console.error(`geneb: ${dist} has no index.html: run \`npm run build\` first`);
    process.exit(2);
  }
  if (value === undefined || value === '') return { port: DEFAULT_PORT, dist };
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    console.error(`geneb: bad port ${JSON.stringify(value)}: give a number from 0 to 65535`);
    process.exit(2);
  }
  return { port: n, dist };
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const { port, dist } = parseArgs(process.argv.slice(2), process.env);
  startServer({ port, dist }).then(
    ({ url, close }) => {
      console.log(`geneb: serving ${url}${dist ? ` (${relative(process.cwd(), dist) || '.'})` : ''}`);
      const stop = () => close().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    },
    (err) => {
      console.error(`geneb: cannot listen on ${HOST}:${port}: ${err.message}`);
      process.exit(1);
    },
  );
}
