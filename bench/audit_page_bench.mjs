#!/usr/bin/env node
// The leak audit in the page against the native CLI on the same table: Debian's Chromium
// (headless) opens the page served by scripts/serve.mjs (cross-origin isolated, so the worker runs
// the threaded core with `?threads=N` rayon threads), the table goes into the page's task-file
// input, and the page audits it as it does every chosen task (www/audit.js → the worker → the wasm
// core's `audit`). Timed in the page from the input's change event to the audit table's first row
// (performance.now(), a capture-phase listener and a MutationObserver): handing the file to the
// worker, which reads it, parsing and auditing. Then, in the same page, where that time went: the
// page reading the file alone, and the same audit again through the worker (its code compiled,
// its memory grown) without the table's DOM. Native: `geneb audit --task T --json` with
// RAYON_NUM_THREADS=N, the process's whole wall time (start-up and reading included). Each side
// runs --runs times, the minimum is kept (the machine is shared); a fresh page for every run. The
// page's counts must equal the CLI's, or the bench exits 1: a fast wrong number cannot pass.
//
//   node bench/audit_page_bench.mjs --geneb target/release/geneb [--table T.csv] [--threads 1,2] [--runs 3]
//                                   [--wasm-from DIR]
//
// --wasm-from DIR serves DIR/pkg and DIR/pkg-threads as the page's cores (another checkout's
// build), to be compared with that checkout's native geneb.
//
// Needs the wasm (bash scripts/build-wasm.sh; the threaded build for --threads > 1) and the table
// (python3 bench/audit_bench.py writes target/bench-data/audit/families_100000.csv).

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  NO_WASM, REPO, byTestId, launchBrowser, openApp, pkgMounts, waitReady, wasmBuilt, wasmMemoryMib,
} from '../tests/e2e/helpers.mjs';
import { startServer } from '../scripts/serve.mjs';

function parseArgs(argv) {
  const args = {
    geneb: join(REPO, 'target', 'release', 'geneb'),
    table: join(REPO, 'target', 'bench-data', 'audit', 'families_100000.csv'),
    threads: [1, 2],
    runs: 3,
    wasmFrom: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
      return argv[++i];
    };
    const a = argv[i];
    if (a === '--geneb') args.geneb = resolve(value());
    else if (a === '--table') args.table = resolve(value());
    else if (a === '--threads') args.threads = value().split(',').map(Number);
    else if (a === '--runs') args.runs = Number(value());
    else if (a === '--wasm-from') args.wasmFrom = resolve(value());
    else throw new Error(`unknown argument ${a}; usage: node bench/audit_page_bench.mjs --geneb BIN [--table T.csv] [--threads 1,2] [--runs 3]`);
  }
  if (!args.threads.every((n) => Number.isInteger(n) && n > 0)) throw new Error('--threads: whole numbers ≥ 1');
  return args;
}

/** The native audit: wall seconds and the task's audit. */
function native(args, threads) {
  const start = performance.now();
  const out = spawnSync(args.geneb, ['audit', '--task', args.table, '--json'], {
    encoding: 'utf8', maxBuffer: 256 << 20, env: { ...process.env, RAYON_NUM_THREADS: String(threads) },
  });
  const seconds = (performance.now() - start) / 1000;
  if (out.status !== 0) throw new Error(`geneb audit failed: ${out.stderr.trim()}`);
  return { seconds, audit: JSON.parse(out.stdout).tasks[0] };
}

/** One audit in a fresh page with `threads` rayon threads: seconds, the table's cells, wasm memory. */
async function inPage(browser, server, args, threads) {
  const app = await openApp(browser, server, { query: `?threads=${threads}` });
  const { page } = app;
  try {
    await waitReady(page);
    const core = await byTestId(page, 'backend').textContent();
    // The clock starts when the input changes and stops when the audit table has its row.
    await page.evaluate(() => {
      const input = document.querySelector('[data-testid="task-files"]');
      const table = document.querySelector('[data-testid="audit-table"]');
      window.auditTiming = new Promise((done) => {
        let start = 0;
        input.addEventListener('change', () => { start = performance.now(); }, { capture: true, once: true });
        new MutationObserver((_, observer) => {
          if (start && table.querySelector('tbody tr')) {
            observer.disconnect();
            done((performance.now() - start) / 1000);
          }
        }).observe(table, { childList: true, subtree: true });
      });
    });
    await byTestId(page, 'task-files').setInputFiles(args.table);
    const seconds = await page.evaluate(() => window.auditTiming);
    const cells = await byTestId(page, 'audit-table').locator('tbody tr td')
      .evaluateAll((tds) => tds.map((td) => td.textContent.trim()));
    // Where the time went, in the same page afterwards: the page reading the file (the worker
    // reads it as fast), and the same audit again through the worker and the core, its code now
    // compiled and its memory grown, without the table's DOM.
    // (The page empties its own input once it has the files: the bench's input holds the table.)
    await page.evaluate(() => document.body.append(Object.assign(document.createElement('input'), { type: 'file', id: 'bench-file' })));
    await page.locator('#bench-file').setInputFiles(args.table);
    const parts = await page.evaluate(async () => {
      const file = document.querySelector('#bench-file').files[0];
      let start = performance.now();
      await file.arrayBuffer();
      const read = (performance.now() - start) / 1000;
      const { callCore } = await import('/core-client.js');
      start = performance.now();
      await callCore('audit', { files: [{ name: file.name, file }] });
      return { read, again: (performance.now() - start) / 1000 };
    });
    const wasm = await wasmMemoryMib(page, app.origin);
    app.assertLocalOnly();
    return { seconds, cells, core, wasm, ...parts };
  } finally {
    await app.close();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!args.wasmFrom && !wasmBuilt()) throw new Error(NO_WASM);
  for (const path of [args.geneb, args.table]) if (!existsSync(path)) throw new Error(`${path}: not found (see the header of this file)`);
  const mounts = args.wasmFrom
    ? [['/pkg/', join(args.wasmFrom, 'pkg')], ['/pkg-threads/', join(args.wasmFrom, 'pkg-threads')]]
    : pkgMounts();
  const server = await startServer({ port: 0, mounts, isolated: true });
  const browser = await launchBrowser({ webgpu: false });
  let failed = false;
  console.log(`Chromium ${browser.version()} (headless); ${args.table}; wasm from ${args.wasmFrom ?? 'www/'}; ${args.runs} runs each, minimum kept; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  try {
    for (const threads of args.threads) {
      const nativeRuns = [];
      const pageRuns = [];
      // Alternated, so both sides see the same machine.
      for (let run = 0; run < args.runs; run++) {
        nativeRuns.push(native(args, threads));
        pageRuns.push(await inPage(browser, server, args, threads));
      }
      const want = nativeRuns[0].audit;
      const wantCells = [String(want.exact_copies), String(want.reverse_complement_copies), String(want.near_copies),
        `${want.leaked_test_rows.length} (${(100 * want.leaked_test_rows.length / Math.max(want.test, 1)).toFixed(1)} %)`];
      for (const run of pageRuns) {
        const got = run.cells.slice(3, 7);
        if (JSON.stringify(got) !== JSON.stringify(wantCells)) {
          failed = true;
          console.log(`  FAILED: the page's exact / reverse-complement / near / leaked cells ${JSON.stringify(got)} ≠ the CLI's ${JSON.stringify(wantCells)}`);
        }
      }
      const nativeBest = Math.min(...nativeRuns.map((r) => r.seconds));
      const pageBest = Math.min(...pageRuns.map((r) => r.seconds));
      console.log(`${threads} thread(s): native ${nativeBest.toFixed(2)} s (runs ${nativeRuns.map((r) => r.seconds.toFixed(2)).join(', ')}), `
        + `page ${pageBest.toFixed(2)} s (runs ${pageRuns.map((r) => r.seconds.toFixed(2)).join(', ')}; core: ${pageRuns[0].core}; wasm memory ${pageRuns.at(-1).wasm} MiB; `
        + `reading the file ${Math.min(...pageRuns.map((r) => r.read)).toFixed(2)} s, the same audit again ${Math.min(...pageRuns.map((r) => r.again)).toFixed(2)} s); `
        + `page speed / native speed = ${(nativeBest / pageBest).toFixed(2)}; ${want.leaked_test_rows.length} of ${want.test} test rows leaked on both`);
    }
  } finally {
    await browser.close();
    await server.close();
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
