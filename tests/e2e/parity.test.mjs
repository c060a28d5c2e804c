// The wasm core computes the same network as the native build: random-cnn embeddings in the
// browser, on WebGPU (SwiftShader) and on the wasm CPU backend, against the native CPU
// embeddings committed by tests/backend_parity.rs (max abs difference ≤ 1e-4).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LOAD_TIMEOUT, NO_WASM, REPO, launchBrowser, openApp, startTestServer, wasmBuilt } from './helpers.mjs';

const FIXTURE = join(REPO, 'tests', 'fixtures', 'embeddings', 'random_cnn_7.json');

describe('random-cnn embeddings in the browser', { timeout: 10 * 60_000 }, () => {
  let server;
  let browser;
  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    server = await startTestServer();
    browser = await launchBrowser({ webgpu: true });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('match the native CPU embeddings on WebGPU and on the wasm CPU backend', { timeout: LOAD_TIMEOUT * 4 }, async () => {
    const fixture = JSON.parse(await readFile(FIXTURE, 'utf8'));
    const app = await openApp(browser, server);
    try {
      const results = await app.page.evaluate(async ({ model, sequences }) => {
        const wasm = await import('/pkg/geneb.js');
        await wasm.default();
        const out = {};
        for (const backend of ['webgpu', 'cpu']) {
          const r = await wasm.embed({ model, backend, sequences });
          out[backend] = { dim: r.dim, values: Array.from(r.values), kind: r.backend.kind, adapter: r.backend.adapter };
        }
        return out;
      }, { model: fixture.model, sequences: fixture.sequences });

      assert.equal(results.webgpu.kind, 'wgpu', `ran on WebGPU: ${results.webgpu.adapter}`);
      assert.equal(results.cpu.kind, 'cpu');
      for (const [backend, r] of Object.entries(results)) {
        assert.equal(r.dim, fixture.dim, backend);
        assert.equal(r.values.length, fixture.values.length, backend);
        let worst = 0;
        r.values.forEach((v, i) => { worst = Math.max(worst, Math.abs(v - fixture.values[i])); });
        assert.ok(worst <= 1e-4, `${backend}: max |browser - native| = ${worst}`);
      }
      app.assertLocalOnly();
    } finally {
      await app.close();
    }
  });
});
