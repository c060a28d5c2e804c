#!/usr/bin/env node
// `npm run build`: the page as a folder of static files, dist/, that any web server can host.
//
//   node scripts/build-dist.mjs [--out DIR]
//
// It takes www/ (with both wasm cores, built by scripts/build-wasm.sh) and the built-in suites the
// page fetches (the mounts of scripts/serve.mjs), and writes:
// - every file the page loads under a content-hashed name (app.3f9c0a1b2d.js; each core's folder
//   as pkg.<hash>/), every reference to it rewritten, so a host may cache them for a year: a new
//   build has new names. index.html and sw.js keep their names (the entry points);
// - sw.js with the build's manifest: its id (the cache's name) and the files to keep for offline use;
// - beside every large text or wasm file, its .br and .gz, for servers that send precompressed files.
// The cores are wasm-bindgen's output as it is: binaryen's wasm-opt -Os made them 25 % and 10 %
// smaller raw but larger once compressed, and the demo slower (bench/README.md, "The page as a
// static site").
// Nothing here needs the network.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';
import { HASH_LENGTH, defaultMounts } from './serve.mjs';

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** The wasm-bindgen folders: each is hashed as one unit, so the paths inside it stay as generated. */
const CORE_DIRS = ['pkg', 'pkg-threads'];
/** Entry points: their URLs must not change between builds. */
const ENTRY = new Set(['index.html', 'sw.js']);
/** Files only the development server's service worker reads. */
const DEV_ONLY = new Set(['pkg-threads/files.json']);
/** Types worth precompressing, and the size below which compressing saves less than its headers. */
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.wasm', '.csv', '.tsv', '.txt', '.md', '.svg', '.fa', '.fasta']);
const MIN_COMPRESS_BYTES = 1024;
/**
 * Brotli at its best quality is slow (minutes for the one-thread core): its output for files this
 * large is kept in the build's cache folder by the hash of their input, so a rebuild with
 * unchanged cores and suites takes seconds; the cache holds only what the last build used.
 */
const CACHE_MIN_BYTES = 64 * 1024;

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const toPosix = (p) => p.split(sep).join('/');

async function walk(dir, base = dir) {
  const out = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...await walk(full, base));
    else if (entry.isFile()) out.push(toPosix(relative(base, full)));
  }
  return out.sort();
}

/** `name` with `hash` before its extension: app.js → app.<hash>.js; a folder: pkg → pkg.<hash>. */
function hashedName(name, hash) {
  const ext = posix.extname(name);
  return `${name.slice(0, name.length - ext.length)}.${hash.slice(0, HASH_LENGTH)}${ext}`;
}

/**
 * The references in a text file: quoted relative paths in JavaScript ('./dom.js', "./pkg/geneb.js",
 * `new URL('./worker.js', import.meta.url)`), src/href in HTML, url() in CSS. Each is
 * {start, end, path}, path resolved against the file's folder (site-relative, no leading slash).
 */
function referencesIn(file, text) {
  const patterns = {
    '.js': /(['"])(\.\.?\/[^'"\s]+)\1/dg,
    '.html': /\s(?:src|href)=(["'])([^"'#?:]+)\1/dg,
    '.css': /url\((["']?)([^"')#?:]+)\1\)/dg,
  };
  const pattern = patterns[posix.extname(file)];
  if (!pattern) return [];
  const refs = [];
  for (const m of text.matchAll(pattern)) {
    const [start, end] = m.indices[2];
    refs.push({ start, end, written: m[2], from: file, path: posix.normalize(posix.join(posix.dirname(file), m[2])) });
  }
  return refs;
}

/** `text` with each reference to a renamed file rewritten, keeping how it was written (./, ../). */
function rewrite(text, refs, renamed) {
  let out = '';
  let at = 0;
  for (const ref of refs) {
    const to = renamed.get(ref.path);
    if (to === undefined) continue;
    const rel = posix.relative(posix.dirname(ref.from), to);
    const written = ref.written.startsWith('./') && !rel.startsWith('../') ? `./${rel}` : rel;
    out += text.slice(at, ref.start) + written;
    at = ref.end;
  }
  return out + text.slice(at);
}

/**
 * Strongly connected components of `graph` (node → its targets), each listed after every
 * component it reaches (Tarjan): an import cycle is hashed as one unit.
 */
function components(nodes, graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const out = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next); low.set(v, next); next++;
    stack.push(v); onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const scc = [];
      let w;
      do { w = stack.pop(); onStack.delete(w); scc.push(w); } while (w !== v);
      out.push(scc.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return out;
}

/** The build's cache of slow results: `cached(step, input, make)` returns make(input)'s bytes. */
function buildCache(dir) {
  const used = new Set();
  return {
    async cached(step, input, make) {
      if (input.length < CACHE_MIN_BYTES) return make(input);
      const file = join(dir, `${sha256(step).slice(0, 16)}-${sha256(input)}`);
      used.add(basename(file));
      const hit = await readFile(file).catch(() => null);
      if (hit) return hit;
      const made = await make(input);
      await mkdir(dir, { recursive: true });
      await writeFile(`${file}.tmp`, made);
      await rename(`${file}.tmp`, file);
      return made;
    },
    /** Forget what this build did not use. */
    async prune() {
      for (const name of await readdir(dir).catch(() => [])) if (!used.has(name)) await rm(join(dir, name), { force: true });
    },
  };
}

/** Copy a core's folder to `to`; returns its files. */
async function stageCore(from, to) {
  const files = (await walk(from)).filter((f) => !DEV_ONLY.has(`${basename(from)}/${f}`));
  for (const f of files) {
    await mkdir(dirname(join(to, f)), { recursive: true });
    await copyFile(join(from, f), join(to, f));
  }
  return files;
}

/** Write `file`.br and `file`.gz where each is smaller than `file`; their sizes. */
async function precompress(file, cache) {
  const bytes = await readFile(file);
  const sizes = { raw: bytes.length };
  if (bytes.length < MIN_COMPRESS_BYTES || !COMPRESSIBLE.has(extname(file).toLowerCase())) return sizes;
  const [br, gz] = await Promise.all([
    cache.cached('brotli 11 24', bytes, (b) => promisify(brotliCompress)(b, {
      params: {
        [zlibConstants.BROTLI_PARAM_QUALITY]: zlibConstants.BROTLI_MAX_QUALITY,
        [zlibConstants.BROTLI_PARAM_LGWIN]: zlibConstants.BROTLI_MAX_WINDOW_BITS,
        [zlibConstants.BROTLI_PARAM_SIZE_HINT]: b.length,
      },
    })),
    cache.cached('gzip 9', bytes, (b) => promisify(gzip)(b, { level: 9 })),
  ]);
  if (br.length < bytes.length) { await writeFile(`${file}.br`, br); sizes.br = br.length; }
  if (gz.length < bytes.length) { await writeFile(`${file}.gz`, gz); sizes.gz = gz.length; }
  return sizes;
}

/**
 * Build the site into `out` (replaced whole). Resolves to {out, id, precache, sizes} where
 * `sizes` maps each file to {raw, br?, gz?}.
 */
export async function buildDist({
  repo = REPO, www = join(repo, 'www'), out = join(repo, 'dist'), log = console.error,
  cacheDir = join(process.env.CARGO_TARGET_DIR || join(repo, 'target'), 'geneb-dist-cache'),
} = {}) {
  const cache = buildCache(cacheDir);
  if (!existsSync(join(www, 'pkg', 'geneb.js'))) {
    throw new Error(`${relative(repo, www) || www}/pkg/ has no wasm build: run \`bash scripts/build-wasm.sh\` first`);
  }
  const stage = await mkdtemp(join(dirname(resolve(out)), '.dist-'));
  try {
    // 1. The cores, each folder one unit named by the hash of all its files.
    const renamed = new Map(); // site path → hashed site path
    for (const dir of CORE_DIRS) {
      if (!existsSync(join(www, dir, 'geneb.js'))) {
        log(`geneb: ${dir}/ is not built: dist/ has no ${dir === 'pkg-threads' ? 'threaded core (the page runs on one thread)' : dir}`);
        continue;
      }
      const tmp = join(stage, `.${dir}`);
      const files = await stageCore(join(www, dir), tmp);
      const digest = createHash('sha256');
      for (const f of files) digest.update(`${f}\0`).update(await readFile(join(tmp, f))).update('\0');
      const named = hashedName(dir, digest.digest('hex'));
      await rename(tmp, join(stage, named));
      for (const f of files) renamed.set(`${dir}/${f}`, `${named}/${f}`);
    }

    // 2. The page's own files, hashed in dependency order (an import cycle as one unit).
    const pageFiles = (await walk(www)).filter((f) => !CORE_DIRS.some((d) => f.startsWith(`${d}/`)));
    const texts = new Map();
    const refs = new Map();
    for (const f of pageFiles) {
      if (!['.js', '.html', '.css'].includes(posix.extname(f))) continue;
      const text = await readFile(join(www, f), 'utf8');
      texts.set(f, text);
      refs.set(f, referencesIn(f, text));
    }
    const pageSet = new Set(pageFiles);
    const graph = new Map(pageFiles.map((f) => [f, (refs.get(f) ?? []).map((r) => r.path).filter((p) => pageSet.has(p) && p !== f)]));
    const finalName = new Map(); // page file → its path in dist
    for (const scc of components(pageFiles, graph)) {
      const digest = createHash('sha256');
      for (const f of scc) {
        digest.update(`${f}\0`).update(texts.get(f) ?? await readFile(join(www, f))).update('\0');
        // What each member's references will point to outside the unit (already named).
        for (const r of refs.get(f) ?? []) digest.update(`${renamed.get(r.path) ?? r.path}\0`);
      }
      const hash = digest.digest('hex');
      for (const f of scc) {
        const name = ENTRY.has(f) ? f : hashedName(f, hash);
        finalName.set(f, name);
        if (name !== f) renamed.set(f, name);
      }
    }
    const reached = new Set();
    const reach = (f) => { if (reached.has(f)) return; reached.add(f); for (const g of graph.get(f) ?? []) reach(g); };
    reach('index.html');
    for (const f of pageFiles) {
      if (f === 'sw.js') continue;
      const to = join(stage, finalName.get(f));
      await mkdir(dirname(to), { recursive: true });
      if (texts.has(f)) await writeFile(to, rewrite(texts.get(f), refs.get(f), renamed));
      else await copyFile(join(www, f), to);
      // A file no literal reaches keeps its name, in case something builds its URL at run time.
      if (!reached.has(f) && !ENTRY.has(f)) {
        await copyFile(to, join(stage, f));
        log(`geneb: ${f} is not referenced from index.html: copied under its own name too`);
      }
    }

    // 3. The built-in suites and catalogues, under the paths the page fetches (serve.mjs's mounts).
    const suites = [];
    for (const [prefix, path] of defaultMounts(repo)) {
      if (prefix === '/') continue;
      const site = prefix.slice(1);
      const files = prefix.endsWith('/') ? (await walk(path)).map((f) => [`${site}${f}`, join(path, f)]) : [[site, path]];
      for (const [to, from] of files) {
        await mkdir(dirname(join(stage, to)), { recursive: true });
        await copyFile(from, join(stage, to));
        suites.push(to);
      }
    }

    // 4. The service worker, with the build's manifest: what to keep for offline use.
    // The demo suite, and the manifests and catalogues the page reads on every load; the offline
    // suite's tables (6 MB) are kept when a visitor first runs it.
    const demo = suites.filter((f) => f.startsWith('tasks/smoke/') || f.endsWith('.json'));
    const precache = ['./', 'index.html', ...[...reached].filter((f) => !ENTRY.has(f)).map((f) => finalName.get(f)),
      ...[...renamed.values()].filter((p) => CORE_DIRS.some((d) => p.startsWith(`${d}.`))), ...demo];
    const all = await walk(stage);
    const template = await readFile(join(www, 'sw.js'), 'utf8');
    const id = sha256(JSON.stringify([template, ...await Promise.all(all.map(async (f) => [f, sha256(await readFile(join(stage, f)))]))])).slice(0, HASH_LENGTH);
    const marker = 'const BUILD = null;';
    if (!template.includes(marker)) throw new Error(`${relative(repo, www)}/sw.js lacks \`${marker}\`, where the build's manifest goes`);
    await writeFile(join(stage, 'sw.js'), template.replace(marker, `const BUILD = ${JSON.stringify({ id, precache })};`));

    // 5. Precompressed copies.
    const sizes = {};
    const files = await walk(stage);
    // Two at a time: zlib's work runs off the main thread, so both cores of a small machine work.
    for (let i = 0; i < files.length; i += 2) {
      await Promise.all(files.slice(i, i + 2).map(async (f) => { sizes[f] = await precompress(join(stage, f), cache); }));
    }
    await cache.prune();

    await rm(out, { recursive: true, force: true });
    await rename(stage, out);
    return { out, id, precache, sizes };
  } catch (err) {
    await rm(stage, { recursive: true, force: true });
    throw err;
  }
}

/** Bytes a first visit transfers for the precached files: brotli where a server sends it, raw where not. */
export function firstVisitBytes({ precache, sizes }, encoding) {
  const files = new Set(precache.map((p) => (p === './' ? 'index.html' : p)));
  let total = 0;
  for (const f of files) total += (encoding && sizes[f]?.[encoding]) || sizes[f]?.raw || 0;
  return total;
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = process.argv.slice(2);
  let out = join(REPO, 'dist');
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--out') out = resolve(args[++i] ?? '');
    else if (args[i].startsWith('--out=')) out = resolve(args[i].slice('--out='.length));
    else {
      console.error(`geneb: unknown argument ${args[i]} (usage: node scripts/build-dist.mjs [--out DIR])`);
      process.exit(2);
    }
  }
  const started = Date.now();
  buildDist({ out }).then((built) => {
    const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
    console.error(`geneb: built ${relative(process.cwd(), built.out) || '.'} (build ${built.id}) in ${Math.round((Date.now() - started) / 1000)} s; `
      + `a first visit fetches ${mb(firstVisitBytes(built, 'br'))} with brotli, ${mb(firstVisitBytes(built, 'gz'))} with gzip, `
      + `${mb(firstVisitBytes(built))} uncompressed`);
  }, (err) => {
    console.error(`geneb: ${err.message}`);
    process.exit(1);
  });
}
