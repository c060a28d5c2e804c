// Foundation models in the page (www/models.js): a model folder dropped into the page embeds
// PyTorch's pooled values on WebGPU (SwiftShader) and on the wasm CPU backend; the same model
// loaded by hub id from a local stand-in for the hub (same URL layout, ETag/X-Linked-Etag, a 302
// for the weights) with progress, then again from the Cache API with the hub gone; and bad models
// give a clear message while the page stays usable.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import {
  LOAD_TIMEOUT, NO_WASM, REPO, byTestId, downloadResult, dropModel, embedThroughPage, folderFiles, launchBrowser, nativeGeneb, openApp,
  openWithHub, pkgMounts, profileRows, readNpyF32, runAndWait, runWithoutError, startFakeHub, waitLoaded, waitModelError, waitReady,
  wasmBuilt, wasmMemoryMib,
} from './helpers.mjs';
import { startServer } from '../../scripts/serve.mjs';

const NT_V2 = join(REPO, 'tests', 'fixtures', 'models', 'nt_v2');
const LLAMA_BF16 = join(REPO, 'tests', 'fixtures', 'models', 'llama_sharded_bf16');
const TOLERANCE = 1e-4;
const GC_VS_AT = join(REPO, 'tests', 'e2e', 'fixtures', 'e2e_gc_vs_at.csv');
const LAMBDA = join(REPO, 'tasks', 'smoke', 'smoke_lambda_phage_vs_ecoli.csv');

/** A copy of safetensors `bytes` with the first element of f32 tensor `name` set to `value`. */
function withFirstElement(bytes, name, value) {
  const copy = Buffer.from(bytes);
  const headerLength = Number(copy.readBigUInt64LE(0));
  const header = JSON.parse(copy.subarray(8, 8 + headerLength).toString());
  copy.writeFloatLE(value, 8 + headerLength + header[name].data_offsets[0]);
  return copy;
}

/**
 * A model folder of NT-v2's architecture, wide enough (hidden 384, 8 layers: 76 MB of f32
 * weights) that holding its weights file beside its weights shows in the tab's memory; the
 * tokenizer and the rest of config.json are the NT-v2 fixture's. Values are a fixed LCG's,
 * uniform in ±1/√fan-in as torch.nn.Linear draws them. Returns {folder, weightsBytes}.
 */
function writeWideNtV2() {
  const hidden = 384, layers = 8, inter = 1536;
  const folder = mkdtempSync(join(tmpdir(), 'geneb-wide-nt-v2-'));
  const config = JSON.parse(readFileSync(join(NT_V2, 'config.json'), 'utf8'));
  const heads = config.num_attention_heads;
  Object.assign(config, { hidden_size: hidden, num_hidden_layers: layers, intermediate_size: inter });
  writeFileSync(join(folder, 'config.json'), JSON.stringify(config));
  for (const f of ['vocab.txt', 'special_tokens_map.json', 'tokenizer_config.json']) copyFileSync(join(NT_V2, f), join(folder, f));
  let state = 12345;
  const uniform = () => { state = (Math.imul(state, 1103515245) + 12345) >>> 0; return state / 2 ** 32 * 2 - 1; };
  const tensors = [];
  const dense = (name, ...shape) => {
    const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
    const bound = 1 / Math.sqrt(shape.at(-1));
    for (let i = 0; i < values.length; i += 1) values[i] = uniform() * bound;
    tensors.push([name, shape, values]);
  };
  const linear = (name, out, inp, bias = true) => { dense(`${name}.weight`, out, inp); if (bias) dense(`${name}.bias`, out); };
  const norm = (name) => {
    tensors.push([`${name}.weight`, [hidden], Float32Array.from({ length: hidden }, () => 1 + uniform() * 0.1)]);
    dense(`${name}.bias`, hidden);
  };
  const headDim = hidden / heads;
  dense('esm.embeddings.word_embeddings.weight', config.vocab_size, hidden);
  for (let i = 0; i < layers; i += 1) {
    const p = `esm.encoder.layer.${i}.`;
    norm(`${p}attention.LayerNorm`);
    for (const proj of ['query', 'key', 'value']) linear(`${p}attention.self.${proj}`, hidden, hidden);
    tensors.push([`${p}attention.self.rotary_embeddings.inv_freq`, [headDim / 2],
      Float32Array.from({ length: headDim / 2 }, (_, k) => 1 / 10000 ** ((2 * k) / headDim))]);
    linear(`${p}attention.output.dense`, hidden, hidden);
    norm(`${p}LayerNorm`);
    linear(`${p}intermediate.dense`, 2 * inter, hidden, false);
    linear(`${p}output.dense`, hidden, inter, false);
  }
  norm('esm.encoder.emb_layer_norm_after');
  const header = {};
  let offset = 0;
  for (const [name, shape, values] of tensors) {
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + values.byteLength] };
    offset += values.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  const weights = Buffer.concat([length, Buffer.from(json), ...tensors.map(([, , v]) => Buffer.from(v.buffer))]);
  writeFileSync(join(folder, 'model.safetensors'), weights);
  return { folder, weightsBytes: weights.length };
}

function worstDifference(values, pooled) {
  const expected = pooled.flat();
  assert.equal(values.length, expected.length, 'n × dim values');
  let worst = 0;
  values.forEach((v, i) => { worst = Math.max(worst, Math.abs(v - expected[i])); });
  return worst;
}

/**
 * Where the page embeds some of a fixture's sequences on WebGPU, not all, because SwiftShader
 * takes minutes over them; every one is checked natively on the CPU and on wgpu. Enformer's every
 * input is one whole window (196,608 bp): one padded and one cropped input. JanusDNA's batch runs
 * as long as its longest input: one short input and the one its 1,024 positions cut.
 */
const PAGE_SUBSET = new Map([['enformer', [1, 2]], ['janus/w', [1, 5]], ['janus/wo', [1, 5]]]);
/**
 * Enformer's and SPACE's every input is one whole window: their layers are checked natively only
 * (tests/enformer.rs), and a pass gets a longer wait, since the first compiles their pipelines
 * (208 s of the tiny Enformer's first pass on SwiftShader; a second took 15.8 s).
 */
const WHOLE_WINDOW_EACH_PASS = new Set(['enformer', 'space']);
/**
 * SPACE runs Enformer's trunk (the same code, checked on WebGPU in the page just before it) with
 * species experts: in the page on the wasm CPU only, where a WebGPU pass cost CI 141 s of
 * SwiftShader; natively it is checked on wgpu at every input and layer (tests/enformer.rs).
 */
const PAGE_CPU_ONLY = new Set(['space']);

/**
 * Drop a model folder on a page that may hold an earlier one under the same spec
 * (hf:dropped-model): done when the page says the new one is ready (or why it is not).
 */
async function dropReplacingModel(page, folder) {
  await page.evaluate(() => { document.querySelector('[data-testid="model-status"]').textContent = ''; });
  await dropModel(page, folder);
  await page.waitForFunction(() => {
    const status = document.querySelector('[data-testid="model-status"]').textContent;
    const error = document.querySelector('[data-testid="model-error"]');
    return / is ready: /.test(status) || (error && !error.hidden && error.textContent);
  }, null, { timeout: LOAD_TIMEOUT, polling: 100 });
  const error = byTestId(page, 'model-error');
  if (await error.isVisible()) throw new Error(`loading the dropped model failed: ${await error.textContent()}`);
}

/**
 * Every hidden state K of the model loaded as `spec`, from the same load, on the wasm CPU and on
 * WebGPU, within 1e-4 of the reference's layers.json (tests/oracle/make_layer_fixtures.py, as the
 * native per-layer tests read it: its first `count` sequences of pipeline.json).
 */
async function checkEveryLayer(page, spec, name, { sequences: count, pooled }, sequences) {
  const id = `hf-${spec.replace(/[^a-z0-9]+/gi, '-')}`;
  const started = performance.now();
  await byTestId(page, `${id}-layer`).selectOption('k');
  for (const [k, want] of Object.entries(pooled)) {
    await byTestId(page, `${id}-layer-k`).fill(k);
    for (const cpu of [true, false]) {
      const r = await embedThroughPage(page, spec, sequences.slice(0, count), { cpu });
      assert.equal(r.model, `${spec}?layer=${k}`, r.summary);
      const worst = worstDifference(r.values, want);
      console.log(`${name} layer ${k} in the page on ${r.backend.kind}: max |page - reference| = ${worst.toExponential(2)}`);
      assert.ok(worst <= TOLERANCE, `${name} layer ${k} on ${r.backend.kind}: max |page - reference| = ${worst}`);
    }
  }
  console.log(`${name}: ${Object.keys(pooled).length} layers checked in the page in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

describe('foundation models in the page', { timeout: 30 * 60_000 }, () => {
  let browser;
  let fixture;
  let files;
  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    browser = await launchBrowser({ webgpu: true });
    files = await folderFiles(NT_V2);
    fixture = JSON.parse(files['pipeline.json']);
  });
  after(async () => {
    await browser?.close();
  });

  it('a dropped NT-v2 folder embeds PyTorch\'s pooled values on WebGPU and on the CPU, narrowed to bf16 the CLI\'s, and runs as an encoder', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const server = await startServer({ port: 0, mounts: pkgMounts() });
    const app = await openApp(browser, server);
    try {
      await waitReady(app.page);
      // The known-models table is there, with a published profile.
      assert.ok(await byTestId(app.page, 'known-model').count() >= 10);
      // Each runnable row says what its numbers were checked against.
      const checked = await byTestId(app.page, 'known-model-checked').allTextContents();
      assert.ok(checked.includes('published code, random weights of the same shape'), checked.join(' | '));
      // And how GENEB's extractor embeds it, from the core's recipe records.
      const recipes = await byTestId(app.page, 'known-model-recipe').allTextContents();
      assert.ok(recipes.some((r) => r.toLowerCase().includes('padding: right, to 1024 tokens') && r.includes('janusdna.py')), recipes.join(' | '));
      assert.ok(recipes.some((r) => r.toLowerCase().includes('batches: 4 in file order') && r.includes('hyenadna.py')), recipes.join(' | '));
      // The categories a user's own task can be put in are the core's 13.
      const categories = await app.page.locator('[data-testid="category"] option').allTextContents();
      assert.equal(categories.length, 14, categories.join(' | '));
      assert.deepEqual([categories[1], categories[13]], ['Histone Mod.', 'Chromatin Acc.']);
      // And whether it fits a tab: the small ones do, a 1B model in half precision, a 3B model
      // is sent to the CLI with the command that runs it.
      const fits = await byTestId(app.page, 'known-model-fits').allTextContents();
      assert.ok(fits.includes('yes') && fits.some((f) => /^yes, its weights held in half precision/.test(f))
        && fits.some((f) => /^no: .* even in half precision; run it with geneb eval --model hf:\S+ /.test(f)), fits.join(' | '));
      await dropModel(app.page, files); // pipeline.json and expected.json ride along: ignored
      await waitLoaded(app.page, 'hf:dropped-model');
      assert.match(await byTestId(app.page, 'loaded-model').textContent(), /ignored .*pipeline\.json/);
      // The load check ran on the CPU (Automatic passes over SwiftShader). The worker keeps one
      // model built, per backend: WebGPU builds it anew, so does the CPU after it, and the next
      // CPU call reuses that one.
      for (const [cpu, kept] of [[false, false], [true, false], [true, true]]) {
        const r = await embedThroughPage(app.page, 'hf:dropped-model', fixture.sequences, { cpu });
        assert.equal(r.backend.kind, cpu ? 'cpu' : 'wgpu', JSON.stringify(r.backend));
        assert.equal(r.summary.includes('the model was still loaded from the last call'), kept, r.summary);
        const worst = worstDifference(r.values, fixture.pooled);
        console.log(`nt_v2 in the page on ${r.backend.kind} (${r.backend.adapter}): max |page - PyTorch| = ${worst.toExponential(2)}`);
        assert.ok(worst <= TOLERANCE, `${r.backend.kind}: max |page - PyTorch| = ${worst}`);
      }
      const cli = nativeGeneb();
      assert.ok(cli, 'no native geneb build to compare with');
      // Narrowed: the f32 checkpoint held in bf16, as a tab holds an f32 file whose f32 would not
      // fit (up to twice its limit), embeds what the native CLI's narrowed model embeds.
      const scratch = mkdtempSync(join(tmpdir(), 'geneb-narrowed-'));
      try {
        const input = join(scratch, 'sequences.txt');
        writeFileSync(input, `${fixture.sequences.join('\n')}\n`);
        const out = join(scratch, 'narrowed.npy');
        const narrowedNative = spawnSync(cli, ['embed', '--model', `hf:${NT_V2}?weights=half`, '--backend', 'cpu', '--input', input,
          '--out', out], { encoding: 'utf8', timeout: 120_000 });
        assert.equal(narrowedNative.status, 0, narrowedNative.stderr);
        const want = readNpyF32(readFileSync(out));
        const narrowed = await embedThroughPage(app.page, 'hf:dropped-model', fixture.sequences, { cpu: true, weights: 'half' });
        assert.match(narrowed.weights, /^NARROWED to bf16 from the checkpoint's F32/, narrowed.weights);
        const worst = Math.max(...want.map((v, i) => Math.abs(v - narrowed.values[i])));
        console.log(`nt_v2 narrowed to bf16, page CPU against geneb embed: max |Δ| = ${worst.toExponential(2)}`);
        assert.equal(narrowed.values.length, want.length);
        assert.ok(worst <= 1e-6, `narrowed: max |page - CLI| = ${worst}`);
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
      // The loaded model is an encoder for a run like the built-in ones: its files go with it.
      // The lambda table's 250 nt are at least 42 pieces, over the fixture's 40 tokens: each is
      // cut, and the page must count what the native CLI counts on both tables.
      await byTestId(app.page, 'task-files').setInputFiles([GC_VS_AT, LAMBDA]);
      await byTestId(app.page, 'model-random-cnn').setChecked(false);
      for (const regime of ['10shot', '1shot']) await byTestId(app.page, `regime-${regime}`).setChecked(false);
      await byTestId(app.page, 'compute').selectOption('cpu');
      await runWithoutError(app.page);
      const models = (await profileRows(app.page, 'full')).map((row) => row.model);
      assert.ok(models.some((m) => m.includes('dropped-model')), `the hf model has a profile row: ${models.join(', ')}`);
      const cut = await byTestId(app.page, 'truncated').locator('li').allTextContents();
      const native = spawnSync(cli, ['eval', '--model', `hf:${NT_V2}`, '--task', GC_VS_AT, '--task', LAMBDA,
        '--regimes', 'full', '--no-cache', '--quiet'], { encoding: 'utf8', timeout: 300_000, maxBuffer: 64 << 20 });
      assert.equal(native.status, 0, native.stderr);
      const counts = Object.entries(JSON.parse(native.stdout).protocol.truncated_sequences);
      assert.equal(Object.fromEntries(counts).smoke_lambda_phage_vs_ecoli, 738);
      assert.deepEqual(cut, counts.map(([task, n]) => `hf:dropped-model: ${n} sequences of ${task} cut at the model's maximum length`));
      // The windowed mode instead (a deviation, as in the CLI): 90-nt windows every 45 (30 3-mers
      // and a CLS) fit the 40 tokens, so nothing is cut, and every MCC is the native CLI's for the
      // same spec. The core still holds the model built without windows under the same load: it
      // must not reuse it.
      await byTestId(app.page, 'hf-hf-dropped-model-window').check();
      await byTestId(app.page, 'hf-hf-dropped-model-window-size').fill('90');
      await byTestId(app.page, 'hf-hf-dropped-model-window-stride').fill('45');
      await runWithoutError(app.page);
      const windowed = 'hf:dropped-model?window=90,45';
      const rows = (await profileRows(app.page, 'full')).map((row) => row.model);
      assert.ok(rows.includes('dropped-model (windows of 90 nt every 45)'), `a profile row for ${windowed}: ${rows.join(', ')}`);
      assert.match(await byTestId(app.page, 'deviations').textContent(), /sliding windows \(90 nt, stride 45\)/);
      assert.ok(!(await byTestId(app.page, 'truncated').isVisible()), 'no sequence is cut in windows of 90 nt');
      const pageResult = await downloadResult(app.page);
      const pageRun = (pageResult.submissions ?? [pageResult]).find((sub) => sub.protocol.encoder.spec === windowed);
      assert.ok(pageRun, `the download has the windowed run: ${JSON.stringify(Object.keys(pageResult))}`);
      const nativeWindowed = spawnSync(cli, ['eval', '--model', `hf:${NT_V2}?window=90,45`, '--task', GC_VS_AT, '--task', LAMBDA,
        '--regimes', 'full', '--no-cache', '--quiet'], { encoding: 'utf8', timeout: 300_000, maxBuffer: 64 << 20 });
      assert.equal(nativeWindowed.status, 0, nativeWindowed.stderr);
      const nativeRun = JSON.parse(nativeWindowed.stdout);
      assert.deepEqual(nativeRun.protocol.truncated_sequences ?? {}, {});
      for (const task of Object.keys(nativeRun.results.full)) {
        assert.equal(typeof pageRun.results.full[task]?.MCC, 'number', `${task}: no windowed MCC in the page`);
        assert.equal(pageRun.results.full[task].MCC, nativeRun.results.full[task].MCC, `${task}: windowed MCC, page vs CLI`);
      }
      await byTestId(app.page, 'hf-hf-dropped-model-window').uncheck();
      // A second model, whose load check leaves it the one the worker holds: a run of both
      // must still get every model's files to the core (the held one goes first).
      await byTestId(app.page, 'model-folder').setInputFiles(join(REPO, 'tests', 'fixtures', 'models', 'bert'));
      await waitLoaded(app.page, 'hf:bert');
      await runWithoutError(app.page);
      const both = (await profileRows(app.page, 'full')).map((row) => row.model);
      for (const name of ['dropped-model', 'bert']) {
        assert.ok(both.some((m) => m.includes(name)), `${name} has a profile row: ${both.join(', ')}`);
      }
      app.assertLocalOnly();
    } finally {
      await app.close();
      await server.close();
    }
  });

  it('a loaded model runs at one layer K or at all of them: K\'s embeddings are the CLI\'s, a bad K is a message, and the run\'s own tables and the comparison pick the best layer as geneb profile does', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const cli = nativeGeneb();
    assert.ok(cli, 'no native geneb build to compare with');
    const server = await startServer({ port: 0, mounts: pkgMounts() });
    const app = await openApp(browser, server);
    const { page } = app;
    const scratch = mkdtempSync(join(tmpdir(), 'geneb-layers-'));
    try {
      await waitReady(page);
      await dropModel(page, files);
      await waitLoaded(page, 'hf:dropped-model');
      const id = 'hf-hf-dropped-model';
      // NT-v2's fixture has 2 layers: hidden states 0 (the embeddings' output) to 2.
      assert.match(await page.locator(`label[for="${id}-layer"]`).textContent(), /the model has 2 layers/);
      await byTestId(page, `${id}-layer`).selectOption('k');
      await byTestId(page, `${id}-layer-k`).fill('3');
      assert.match(await byTestId(page, `${id}-layer-error`).textContent(), /K must be a whole number from -3 to 2/);
      // Run anyway: the core refuses it with the CLI's words, and the page stays usable.
      await byTestId(page, 'task-files').setInputFiles(GC_VS_AT);
      for (const model of ['model-random-cnn', 'model-kmer']) await byTestId(page, model).setChecked(false);
      for (const regime of ['10shot', '1shot']) await byTestId(page, `regime-${regime}`).setChecked(false);
      await byTestId(page, 'compute').selectOption('cpu');
      await runAndWait(page, 'run');
      assert.match(await byTestId(page, 'error').textContent(), /no layer 3.*K must be from -3 to 2/);

      // Layer 1: the page's embeddings are the native CLI's for hf:MODEL?layer=1.
      await byTestId(page, `${id}-layer-k`).fill('1');
      assert.equal(await byTestId(page, `${id}-layer-error`).isHidden(), true);
      const r = await embedThroughPage(page, 'hf:dropped-model', fixture.sequences, { cpu: true });
      assert.equal(r.model, 'hf:dropped-model?layer=1');
      const input = join(scratch, 'sequences.txt');
      writeFileSync(input, `${fixture.sequences.join('\n')}\n`);
      const npy = join(scratch, 'layer1.npy');
      const embedded = spawnSync(cli, ['embed', '--model', `hf:${NT_V2}?layer=1`, '--input', input, '--out', npy], { encoding: 'utf8', timeout: 120_000 });
      assert.equal(embedded.status, 0, embedded.stderr);
      const native = readNpyF32(readFileSync(npy));
      assert.equal(r.values.length, native.length);
      const worst = Math.max(...native.map((v, i) => Math.abs(v - r.values[i])));
      console.log(`nt_v2 layer 1, page (wasm CPU) against the native CLI: max |Δ| = ${worst.toExponential(2)}`);
      assert.ok(worst <= 1e-5, `layer 1: max |page - CLI| = ${worst}`);

      // Every layer from one run: three results, whose own tables then show the by-layer view,
      // and so does their comparison; both equal geneb profile's on the CLI's own sweep.
      await byTestId(page, `${id}-layer`).selectOption('all');
      await runWithoutError(page);
      const rows = (await profileRows(page, 'full')).map((row) => row.model);
      assert.equal(rows.length, 3, rows.join(', '));
      const sweep = join(scratch, 'sweep.json');
      const swept = spawnSync(cli, ['eval', '--model', `hf:${NT_V2}`, '--layers', 'all', '--task', GC_VS_AT, '--regimes', 'full',
        '--no-cache', '--quiet', '--out', sweep], { encoding: 'utf8', timeout: 300_000 });
      assert.equal(swept.status, 0, swept.stderr);
      const profiled = spawnSync(cli, ['profile', '--json', sweep], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20 });
      assert.equal(profiled.status, 0, profiled.stderr);
      const [view] = JSON.parse(profiled.stdout).layers;
      const want = view.regimes[0].categories.map((c) => [c.category, 'Full data', String(c.best_layer),
        c.layers.find((l) => l.layer === c.best_layer).mcc.toFixed(3), c.layers.find((l) => l.layer === 2).mcc.toFixed(3),
        c.gain.toFixed(3), c.test ? `[${c.test.lo.toFixed(3)}, ${c.test.hi.toFixed(3)}]` : '—', c.test ? c.test.p.toFixed(3) : '—']);
      const wantByLayer = view.regimes[0].categories.map((c) => [c.category, 'Full data', ...c.layers.map((l) => (l.interval
        ? `${l.mcc.toFixed(3)} [${l.interval.lo.toFixed(3)}, ${l.interval.hi.toFixed(3)}]` : l.mcc.toFixed(3)))]);
      const table = (testId) => page.locator(`[data-testid="${testId}"] tbody tr`)
        .evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
      await byTestId(page, 'profile-layer-gain').waitFor({ timeout: 60_000 });
      const ownGain = await table('profile-layer-gain');
      const ownByLayer = await table('profile-layer-mcc');
      console.log(`by layer, the run's own tables: ${JSON.stringify(ownGain)} ${JSON.stringify(ownByLayer)}`);
      assert.deepEqual(ownGain, want);
      assert.deepEqual(ownByLayer, wantByLayer);
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="saved-result"]').length === 3, null, { timeout: 30_000 });
      await byTestId(page, 'select-all-results').check();
      await runAndWait(page, 'compare-selected');
      assert.equal(await byTestId(page, 'library-error').isHidden(), true, await byTestId(page, 'library-error').textContent());
      const shown = await table('layer-gain');
      assert.ok(await byTestId(page, 'plot-layers_1_full').isVisible(), 'the MCC-by-layer plot');
      console.log(`by layer, page: ${JSON.stringify(shown)}`);
      assert.deepEqual(shown, want);
      assert.deepEqual(await table('layer-mcc'), wantByLayer);

      // Half precision: a sharded bf16 checkpoint dropped as a folder fits the tab in f32, so the
      // core holds it in f32 unless asked; held in bf16 (?weights=half) on WebGPU and on the wasm
      // CPU, it embeds what the native CLI embeds with hf:FOLDER?weights=half, and says so.
      await byTestId(page, 'model-folder').setInputFiles(LLAMA_BF16);
      await waitLoaded(page, 'hf:llama_sharded_bf16');
      assert.match(await byTestId(page, 'model-status').textContent(), /hf:llama_sharded_bf16 is ready: .*; weights held in f32\./);
      const llama = JSON.parse(readFileSync(join(LLAMA_BF16, 'pipeline.json'), 'utf8'));
      const llamaInput = join(scratch, 'llama.txt');
      writeFileSync(llamaInput, `${llama.sequences.join('\n')}\n`);
      for (const cpu of [false, true]) {
        const backend = cpu ? 'cpu' : 'wgpu';
        const halfNpy = join(scratch, `half-${backend}.npy`);
        const halfNative = spawnSync(cli, ['embed', '--model', `hf:${LLAMA_BF16}?weights=half`, '--backend', backend, '--input', llamaInput,
          '--out', halfNpy], { encoding: 'utf8', timeout: 120_000 });
        assert.equal(halfNative.status, 0, halfNative.stderr);
        const want16 = readNpyF32(readFileSync(halfNpy));
        const half = await embedThroughPage(page, 'hf:llama_sharded_bf16', llama.sequences, { cpu, weights: 'half' });
        assert.equal(half.model, 'hf:llama_sharded_bf16?weights=half');
        assert.equal(half.backend.kind, cpu ? 'cpu' : 'wgpu', JSON.stringify(half.backend));
        assert.match(half.weights, /^bf16 as the checkpoint stores them/, half.weights);
        assert.match(half.summary, /; weights held in bf16 /, half.summary);
        assert.equal(half.values.length, want16.length);
        const worst16 = Math.max(...want16.map((v, i) => Math.abs(v - half.values[i])));
        console.log(`llama bf16 held in half, page on ${half.backend.kind} against geneb embed --backend ${backend}: max |Δ| = ${worst16.toExponential(2)}`);
        assert.ok(worst16 <= 1e-6, `${backend}: max |page - CLI| = ${worst16}`);
      }
      app.assertLocalOnly();
    } finally {
      await app.close();
      await server.close();
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('loads a sharded checkpoint by hub id: its index, then the shards it names; an index naming a file outside the folder, or thousands of shards, is refused', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const id = 'test-org/llama-sharded';
    const all = await folderFiles(LLAMA_BF16);
    const served = Object.fromEntries(Object.entries(all).filter(([n]) => n !== 'pipeline.json'));
    const indexName = 'model.safetensors.index.json';
    const index = JSON.parse(served[indexName]);
    const [first] = Object.keys(index.weight_map);
    const outside = { ...index, weight_map: { ...index.weight_map, [first]: '../secret.safetensors' } };
    // Thousands of shards would be thousands of requests before anything is offered.
    const manyShards = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`t${i}`, `model-${i}.safetensors`]));
    const many = { ...index, weight_map: manyShards };
    const indexOf = (value) => ({ ...served, [indexName]: Buffer.from(JSON.stringify(value)) });
    const hub = await startFakeHub(served, {
      repo: id, rev: 'main', lfs: (name) => name.endsWith('.safetensors'), revisions: { outside: indexOf(outside), many: indexOf(many) },
    });
    const { app, close } = await openWithHub(browser, hub);
    const { page } = app;
    try {
      await waitReady(page);
      await byTestId(page, 'hub-id').fill(`${id}@outside`);
      await byTestId(page, 'hub-load').click();
      const refused = await waitModelError(page);
      assert.match(refused, /model\.safetensors\.index\.json: names the shard '\.\.\/secret\.safetensors', which is not a \.safetensors file in the index's own folder: geneb reads no file outside the model folder; nothing else was downloaded/, refused);
      assert.ok(!hub.hits.some((hit) => hit.includes('secret') || hit.includes('00001')), hub.hits.join('\n'));
      await byTestId(page, 'hub-id').fill(`${id}@many`);
      await byTestId(page, 'hub-load').click();
      await page.waitForFunction(() => /5000 shards/.test(document.querySelector('[data-testid="model-error"]')?.textContent ?? ''), null, { timeout: LOAD_TIMEOUT });
      assert.match(await byTestId(page, 'model-error').textContent(), /names 5000 shards, more than any checkpoint has \(1024 at most\): nothing else was downloaded/);
      assert.ok(!hub.hits.some((hit) => /model-\d+\.safetensors/.test(hit)), 'no shard asked for');

      await byTestId(page, 'hub-id').fill(`${id}@main`);
      await byTestId(page, 'hub-load').click();
      await byTestId(page, 'hub-plan').waitFor({ timeout: LOAD_TIMEOUT });
      const planText = await byTestId(page, 'hub-plan').textContent();
      for (const name of [indexName, 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']) {
        assert.ok(planText.includes(name), planText);
      }
      await byTestId(page, 'hub-confirm').click();
      await waitLoaded(page, `hf:${id}@main`);
      const llama = JSON.parse(all['pipeline.json']);
      const r = await embedThroughPage(page, `hf:${id}@main`, llama.sequences, { cpu: true });
      const worst = worstDifference(r.values, llama.pooled);
      console.log(`sharded bf16 Llama by hub id, page CPU against the reference: max |Δ| = ${worst.toExponential(2)}`);
      assert.ok(worst <= TOLERANCE, `max |page - PyTorch| = ${worst}`);
      const offsite = new Set(app.offsite.filter((u) => !u.startsWith(hub.origin)));
      assert.deepEqual([...offsite], [], 'only the page server and the local hub');
    } finally {
      await close();
    }
  });

  it('a rerun reuses the embeddings kept in the browser, with the same profile; reuse can be turned off and the cache cleared', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const server = await startServer({ port: 0, mounts: pkgMounts() });
    const app = await openApp(browser, server);
    try {
      await waitReady(app.page);
      await dropModel(app.page, files);
      await waitLoaded(app.page, 'hf:dropped-model');
      await byTestId(app.page, 'task-files').setInputFiles(GC_VS_AT);
      await byTestId(app.page, 'model-random-cnn').setChecked(false);
      await byTestId(app.page, 'model-kmer').setChecked(false);
      await byTestId(app.page, 'compute').selectOption('cpu');
      assert.equal(await byTestId(app.page, 'embedding-cache-size').textContent(), 'No embeddings kept.');
      // Every progress line the page shows, to see whether the encoder ran or the cache answered.
      await app.page.evaluate(() => {
        window.progressSeen = [];
        const text = document.querySelector('[data-testid="progress-text"]');
        new MutationObserver(() => window.progressSeen.push(text.textContent))
          .observe(text, { childList: true, characterData: true, subtree: true });
      });
      const run = async () => {
        await app.page.evaluate(() => { window.progressSeen = []; });
        await runWithoutError(app.page);
        const seen = await app.page.evaluate(() => window.progressSeen);
        return {
          reused: seen.some((t) => t.includes('reused from the embedding cache')),
          embedded: seen.some((t) => t.startsWith('embed') && !t.includes('reused')),
          rows: await profileRows(app.page, 'full'),
        };
      };
      const first = await run();
      assert.deepEqual([first.embedded, first.reused], [true, false]);
      // Train and test are kept apart (each is one list of sequences).
      assert.match(await byTestId(app.page, 'embedding-cache-size').textContent(), /^2 sets of embeddings kept \(.+\)\.$/);
      const second = await run();
      assert.deepEqual([second.embedded, second.reused], [false, true]);
      assert.deepEqual(second.rows, first.rows);
      await byTestId(app.page, 'reuse-embeddings').setChecked(false);
      const third = await run();
      assert.deepEqual([third.embedded, third.reused], [true, false]);
      assert.deepEqual(third.rows, first.rows);
      await byTestId(app.page, 'clear-embeddings').click();
      await app.page.waitForFunction(() => document.querySelector('[data-testid="embedding-cache-size"]').textContent === 'No embeddings kept.');
      assert.equal(await byTestId(app.page, 'clear-embeddings').isDisabled(), true);
      app.assertLocalOnly();
    } finally {
      await app.close();
      await server.close();
    }
  });

  it('every architecture (BERT, DNABERT-2, GENA-LM, MutBERT, Genomics-FM, DeepGene, DNAGPT, HyenaDNA, Caduceus PH and PS, PlantCaduceus, JanusDNA, SpliceBERT, Llama, Mistral, NT-v1, OLMo, Enformer, SPACE, Evo-1, LucaOne, eccDNAMamba, GPT-2, GENERator, BioFM, AgroNT) embeds as its GENEB extractor on WebGPU (SPACE, whose trunk is Enformer, on the CPU only) and on the CPU, and each with a layers.json gives every hidden state K within 1e-4 of its reference\'s', { timeout: LOAD_TIMEOUT * 30 }, async () => {
    const server = await startServer({ port: 0, mounts: pkgMounts() });
    // One page for every architecture, each dropped in turn over the last: the page's WebGPU
    // device, and the kernels CubeCL compiled on it, carry over, as for a user who tries one
    // model after another (on SwiftShader a new page's compiles were most of CI's time here).
    const app = await openApp(browser, server);
    const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);
    try {
      await waitReady(app.page);
      // janus/w and janus/wo as JanusDNA's training saves them: `{"config": …}` in
      // model_config.json and a Lightning last.ckpt, dropped as they are.
      for (const name of ['bert', 'dnabert2', 'gena/t2t-multi', 'gena/lastln', 'mutbert', 'genomics_fm', 'deepgene', 'dnagpt', 'hyena/tiny', 'caduceus/ph', 'caduceus/ps', 'plantcaduceus', 'janus/w', 'janus/wo', 'splicebert', 'llama', 'mistral', 'nt_v1', 'olmo', 'enformer', 'space', 'evo', 'lucaone', 'eccdnamamba', 'gpt2', 'generator', 'biofm', 'agro_nt']) {
        const folder = await folderFiles(join(REPO, 'tests', 'fixtures', 'models', ...name.split('/')));
        const expected = JSON.parse(folder['pipeline.json']);
        const picked = PAGE_SUBSET.get(name) ?? expected.sequences.map((_, i) => i);
        const sequences = picked.map((i) => expected.sequences[i]);
        const pooled = picked.map((i) => expected.pooled[i]);
        const dropped = performance.now();
        await dropReplacingModel(app.page, folder);
        const took = [`loaded in ${seconds(dropped)} s`];
        // HyenaDNA's sine filter once put it 2e-3 off here: WebGPU's sin only promises 2^-11
        // (hyena.rs now computes it to f32 precision).
        for (const cpu of PAGE_CPU_ONLY.has(name) ? [true] : [false, true]) {
          const started = performance.now();
          const timeout = LOAD_TIMEOUT * (WHOLE_WINDOW_EACH_PASS.has(name) ? 6 : 2);
          const r = await embedThroughPage(app.page, 'hf:dropped-model', sequences, { cpu, timeout });
          took.push(`${r.backend.kind} in ${seconds(started)} s`);
          assert.equal(r.backend.kind, cpu ? 'cpu' : 'wgpu', JSON.stringify(r.backend));
          const worst = worstDifference(r.values, pooled);
          const dim = pooled[0].length;
          const rows = pooled.map((row, i) => Math.max(...row.map((v, j) => Math.abs(v - r.values[i * dim + j]))).toExponential(1));
          console.log(`${name} in the page on ${r.backend.kind}: max |page - PyTorch| = ${worst.toExponential(2)} per sequence ${rows.join(' ')}`);
          assert.ok(worst <= TOLERANCE, `${name} on ${r.backend.kind}: max |page - PyTorch| = ${worst}`);
        }
        if (folder['layers.json'] && !WHOLE_WINDOW_EACH_PASS.has(name)) {
          await checkEveryLayer(app.page, 'hf:dropped-model', name, JSON.parse(folder['layers.json']), expected.sequences);
        }
        // CI's time is counted per architecture.
        console.log(`${name}: ${took.join(', ')}; ${seconds(dropped)} s in all`);
      }
      app.assertLocalOnly();
    } finally {
      await app.close();
      await server.close();
    }
  });

  it('says in the result what loading a model noted (a JanusDNA checkpoint without final_mlp), as the CLI does', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const server = await startServer({ port: 0, mounts: pkgMounts() });
    const app = await openApp(browser, server);
    try {
      await waitReady(app.page);
      await dropModel(app.page, await folderFiles(join(REPO, 'tests', 'fixtures', 'models', 'janus', 'w')));
      await waitLoaded(app.page, 'hf:dropped-model');
      await byTestId(app.page, 'task-files').setInputFiles([GC_VS_AT]);
      await byTestId(app.page, 'model-random-cnn').setChecked(false);
      for (const regime of ['10shot', '1shot']) await byTestId(app.page, `regime-${regime}`).setChecked(false);
      await byTestId(app.page, 'compute').selectOption('cpu');
      await runWithoutError(app.page);
      const notes = await byTestId(app.page, 'encoder-notes').locator('li').allTextContents();
      assert.equal(notes.length, 1, notes.join(' | '));
      assert.match(notes[0], /^hf:dropped-model: the checkpoint has no model\.model\.final_mlp\.\* tensors .*strict=False/);
      app.assertLocalOnly();
    } finally {
      await app.close();
      await server.close();
    }
  });

  it('loads a model by hub id with progress, then from the Cache API with the hub gone', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const id = 'test-org/nt-v2-tiny';
    const rev = 'main';
    const served = Object.fromEntries(Object.entries(files).filter(([n]) => n !== 'pipeline.json' && n !== 'expected.json'));
    const hub = await startFakeHub(served, { repo: id, rev, lfs: (name) => name.endsWith('.safetensors') });
    const { app, close } = await openWithHub(browser, hub);
    const { page } = app;
    try {
      await waitReady(page);
      // A damaged download is refused, not kept.
      await byTestId(page, 'hub-id').fill(`${id}@corrupt`);
      await byTestId(page, 'hub-load').click();
      await byTestId(page, 'hub-confirm').click({ timeout: LOAD_TIMEOUT });
      const corrupt = await waitModelError(page);
      assert.match(corrupt, /model\.safetensors: sha256 [0-9a-f]{64} does not match the hub's [0-9a-f]{64}/, corrupt);
      assert.equal(await byTestId(page, 'loaded-model').count(), 0);

      await byTestId(page, 'hub-id').fill(`${id}@${rev}`);
      await byTestId(page, 'hub-load').click();
      await byTestId(page, 'hub-plan').waitFor({ timeout: LOAD_TIMEOUT });
      const planText = await byTestId(page, 'hub-plan').textContent();
      assert.match(planText, /model\.safetensors/);
      assert.match(planText, /config\.json/);
      assert.match(planText, /model\.safetensors 88 kB/, 'the weights size from the HEAD request');
      // Record every status line, to see the byte progress go by.
      await page.evaluate(() => {
        window.__statuses = [];
        const node = document.querySelector('[data-testid="model-status"]');
        new MutationObserver(() => window.__statuses.push(node.textContent)).observe(node, { childList: true, characterData: true, subtree: true });
      });
      await byTestId(page, 'hub-confirm').click();
      await waitLoaded(page, `hf:${id}@${rev}`);
      const statuses = await page.evaluate(() => window.__statuses);
      assert.ok(statuses.some((s) => /downloading model\.safetensors: .* of /.test(s)), statuses.join(' | '));
      assert.match(await byTestId(page, 'loaded-model').textContent(), /kept for offline use/);
      assert.ok(hub.hits.includes(`GET /${id}/resolve/${rev}/model.safetensors`), hub.hits.join('\n'));
      assert.ok(hub.hits.some((h) => h.startsWith('GET /cdn/')), 'the weights came through the redirect');
      const offsite = new Set(app.offsite.filter((u) => !u.startsWith(hub.origin)));
      assert.deepEqual([...offsite], [], 'only the page server and the local hub');

      await hub.close();
      const before = hub.hits.length;
      await page.reload();
      await waitReady(page);
      const cached = byTestId(page, 'cached-model');
      await cached.first().waitFor({ timeout: LOAD_TIMEOUT });
      assert.deepEqual(await cached.allTextContents(), [`${id}@${rev}`], 'only the verified download was kept');
      await cached.first().click();
      await waitLoaded(page, `hf:${id}@${rev}`);
      assert.match(await byTestId(page, 'loaded-model').textContent(), /from this browser's cache/);
      assert.equal(hub.hits.length, before, 'nothing asked of the (stopped) hub');
      const r = await embedThroughPage(page, `hf:${id}@${rev}`, fixture.sequences.slice(0, 3), { cpu: true });
      const worst = worstDifference(r.values, fixture.pooled.slice(0, 3));
      assert.ok(worst <= TOLERANCE, `cached model: max |page - PyTorch| = ${worst}`);
    } finally {
      await close();
    }
  });

  it('a model is built from its weights file tensor by tensor: the tab never holds the file beside the weights', { timeout: LOAD_TIMEOUT * 2 }, async () => {
    const { folder, weightsBytes } = writeWideNtV2();
    // No WebGPU: the model is checked on the CPU core, whose memory is the one read here.
    const cpuBrowser = await launchBrowser({ webgpu: false });
    const server = await startServer({ port: 0, mounts: pkgMounts() });
    const app = await openApp(cpuBrowser, server);
    try {
      await waitReady(app.page);
      const before = await wasmMemoryMib(app.page, app.origin);
      assert.equal(typeof before, 'number', String(before));
      await byTestId(app.page, 'model-folder').setInputFiles(folder);
      const spec = `hf:${folder.split('/').pop()}`;
      await waitLoaded(app.page, spec);
      const grown = (await wasmMemoryMib(app.page, app.origin)) - before;
      const weightsMib = weightsBytes / 2 ** 20;
      console.log(`a ${weightsMib.toFixed(1)} MiB weights file grew the core's memory by ${grown.toFixed(1)} MiB`);
      // The weights once (f32 file → f32 tensors), plus the packed copy of one layer at a time
      // and the check's activations; the file read whole beside them would be 2×.
      assert.ok(grown < 1.5 * weightsMib, `${grown} MiB for ${weightsMib} MiB of weights`);
      const r = await embedThroughPage(app.page, spec, ['ACGTACGTACGTAGGCTTAACG'], { cpu: true });
      assert.equal(r.dim, 384);
      assert.ok(r.values.length === 384 && r.values.every(Number.isFinite), 'one finite 384-wide embedding');
      app.assertLocalOnly();
    } finally {
      await app.close();
      await server.close();
      await cpuBrowser.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('a bad model gives a clear message and the page stays usable', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const server = await startServer({ port: 0, mounts: pkgMounts() });
    const app = await openApp(browser, server);
    const { page } = app;
    try {
      await waitReady(page);
      const config = JSON.parse(files['config.json']);
      const unsupported = { ...files, 'config.json': Buffer.from(JSON.stringify({ ...config, model_type: 't5', architectures: ['T5EncoderModel'], auto_map: undefined })) };
      await dropModel(page, unsupported);
      const typeError = await waitModelError(page);
      assert.match(typeError, /model type 't5' is not supported; geneb runs .*Nucleotide Transformer/, typeError);

      const truncated = { ...files, 'model.safetensors': files['model.safetensors'].subarray(0, 4000) };
      await page.evaluate(() => { document.querySelector('[data-testid="model-error"]').hidden = true; });
      await dropModel(page, truncated);
      const weightsError = await waitModelError(page);
      assert.match(weightsError, /model\.safetensors/, weightsError);
      assert.doesNotMatch(weightsError, /panicked|unreachable|RuntimeError/, weightsError);

      // Hostile files (README, Reliability): a NaN weight, heads that do not divide the width.
      const nanWeights = { ...files, 'model.safetensors': withFirstElement(files['model.safetensors'], 'esm.embeddings.word_embeddings.weight', NaN) };
      await page.evaluate(() => { document.querySelector('[data-testid="model-error"]').hidden = true; });
      await dropModel(page, nanWeights);
      const nanError = await waitModelError(page);
      assert.match(nanError, /model\.safetensors: tensor 'esm\.embeddings\.word_embeddings\.weight' holds NaN at element 0/, nanError);
      const badHeads = { ...files, 'config.json': Buffer.from(JSON.stringify({ ...config, num_attention_heads: 5 })) };
      await page.evaluate(() => { document.querySelector('[data-testid="model-error"]').hidden = true; });
      await dropModel(page, badHeads);
      const headsError = await waitModelError(page);
      assert.match(headsError, /config\.json: hidden_size 32 is not divisible by num_attention_heads 5/, headsError);
      console.log(`bad models, as the page says:\n  ${typeError}\n  ${weightsError}\n  ${nanError}\n  ${headsError}`);
      assert.equal(await byTestId(page, 'loaded-model').count(), 0, 'neither bad model was kept');

      // Still usable: the good model loads and embeds.
      await dropModel(page, files);
      await waitLoaded(page, 'hf:dropped-model');
      const r = await embedThroughPage(page, 'hf:dropped-model', fixture.sequences.slice(0, 2), { cpu: true });
      assert.ok(worstDifference(r.values, fixture.pooled.slice(0, 2)) <= TOLERANCE);
      assert.equal(await byTestId(page, 'status').textContent(), 'ready');
    } finally {
      await app.close();
      await server.close();
    }
  });
});
