// The page's WebGPU path on a second engine: the one-thread wasm core on Dawn (Chrome's WebGPU
// implementation, through the npm package `webgpu`, on Mesa's lavapipe here) gives the
// embeddings and the profile that the same core gives on its CPU backend. Chromium's own
// WebGPU is SwiftShader in these tests (parity.test.mjs); Dawn on Vulkan is the path a user's
// GPU takes.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NO_WASM, REPO, wasmBuilt } from './helpers.mjs';
import { coreOnDawn, maxAbsDiff, modelFiles } from './dawn.mjs';

const MODELS = join(REPO, 'tests', 'fixtures', 'models');
/** Tiny random checkpoints of the published layouts (tests/oracle), their own tokenizer files. */
const FIXTURES = {
  'nt-v2': { dir: join(MODELS, 'nt_v2'), files: ['config.json', 'model.safetensors', 'special_tokens_map.json', 'tokenizer_config.json', 'vocab.txt'] },
  'dnabert-2': { dir: join(MODELS, 'dnabert2'), files: ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'] },
};
const TASK = join(REPO, 'tasks', 'smoke', 'smoke_lambda_phage_vs_ecoli.csv');

/** Sequences of several lengths, so batches pad and the mask matters. */
function sequences() {
  const rows = readFileSync(TASK, 'utf8').trim().split('\n').slice(1, 13);
  return rows.map((row, i) => row.split(',')[0].slice(0, 20 + 17 * i));
}

describe('the page core on Dawn', { timeout: 10 * 60_000 }, () => {
  let dawn;
  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    dawn = await coreOnDawn();
    // Required: a test that skipped for want of Dawn would pass without running.
    assert.ok(dawn.core, dawn.reason);
  });

  for (const [name, fixture] of Object.entries(FIXTURES)) {
    it(`embeds ${name} on Dawn as on the CPU backend`, async () => {
      const seqs = sequences();
      const out = {};
      for (const backend of ['webgpu', 'cpu']) {
        out[backend] = await dawn.core.embed({
          model: `hf:${name}`, backend, adapter: dawn.label, sequences: seqs,
          modelFiles: modelFiles(fixture.dir, fixture.files),
        });
      }
      assert.equal(out.webgpu.backend.kind, 'wgpu');
      // wgpu's WebGPU backend, on the adapter Dawn gave it (named by Dawn, or by the page).
      assert.match(out.webgpu.backend.adapter, /BrowserWebGpu/);
      assert.equal(out.cpu.backend.kind, 'cpu');
      assert.equal(out.webgpu.dim, out.cpu.dim);
      assert.equal(out.webgpu.values.length, seqs.length * out.cpu.dim);
      const worst = maxAbsDiff(out.webgpu.values, out.cpu.values);
      assert.ok(worst <= 1e-4, `max |Dawn − CPU| = ${worst}`);
    });
  }

  it('gives the CPU backend\'s profile on a real task', async () => {
    const profiles = {};
    for (const backend of ['webgpu', 'cpu']) {
      const result = await dawn.core.run({
        files: [{ name: 'smoke_lambda_phage_vs_ecoli.csv', bytes: new Uint8Array(readFileSync(TASK)) }],
        models: ['hf:nt-v2'], regimes: ['full'], backend, adapter: dawn.label,
        modelFiles: { 'hf:nt-v2': modelFiles(FIXTURES['nt-v2'].dir, FIXTURES['nt-v2'].files) },
      }, () => {}, null);
      assert.equal(result.backend.kind, backend === 'webgpu' ? 'wgpu' : 'cpu');
      profiles[backend] = result.profile;
      // The result's cost as the CLI writes it: the wasm heap's peak, and on WebGPU the buffers
      // Burn holds there; nothing came from a cache (none was given), so every rate is measured.
      const cost = result.submissions[0].protocol.cost;
      for (const field of ['sequences_per_s', 'nucleotides_per_s', 'load_s', 'peak_memory_bytes']) {
        assert.ok(cost[field] > 0, `${backend} ${field}: ${JSON.stringify(cost)}`);
      }
      if (backend === 'webgpu') assert.ok(cost.peak_gpu_memory_bytes > 0, JSON.stringify(cost));
      else assert.equal(cost.peak_gpu_memory_bytes, null, JSON.stringify(cost));
    }
    const cells = (profile) => profile.regimes.flatMap((r) => r.rows.flatMap((row) => [row.macro, row.micro]));
    const [gpu, cpu] = [cells(profiles.webgpu), cells(profiles.cpu)];
    assert.ok(gpu.length > 0 && gpu.every(Number.isFinite), JSON.stringify(profiles.webgpu.regimes));
    assert.ok(maxAbsDiff(gpu, cpu) <= 1e-3, `Dawn ${gpu} vs CPU ${cpu}`);
  });
});
