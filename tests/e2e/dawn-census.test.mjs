// What the page's GPU path asks of the engine, counted on Dawn (Chrome's WebGPU engine, over
// Mesa's lavapipe here) by wrapping its WebGPU methods: a warm pass must cost what the native
// launch count says and nothing more, and a sequence of a length the core has not embedded yet
// must not compile pipelines or allocate buffers (each costs milliseconds or more on a real GPU;
// BPE tokenizers make nearly every sequence a new length). The core pads batches to a small set
// of shapes for that (src/encoder/pretrained.rs, `run_shape`).
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NO_WASM, nativeGeneb, wasmBuilt } from './helpers.mjs';
import { RAW_TIMESTAMPS, coreOnDawn, gpuCensus, gpuKernelTimer, maxAbsDiff, modelFiles } from './dawn.mjs';
import { FIXTURES, NEW_LENGTHS, WARM_LENGTHS, dna, fixtureCopy } from './dawn-census.mjs';

/**
 * What 20 new lengths may cost, one sequence at a time after one warm batch: issue 41's goal
 * (lavapipe, 2026-12-07: 26 pipelines and 341 buffers for DNABERT-2, 14 and 132 for NT-v2, before
 * batches ran at shapes from a small set; 12 and 120, 8 and 116 with them, every buffer one of
 * CubeCL's cached metadata uniforms, every pipeline a smaller workgroup or another matmul tiling
 * for a one-row batch; now the cache is off, the uniforms made up front, and the one-row widths'
 * pipelines compiled at load: bench/README.md, "Shapes that repeat").
 */
const NEW_LENGTHS_MAY_MAKE = { pipelines: 2, buffers: 2 };

/** Native geneb's kernel launches for `sequences` after a warm first call (`--count-kernels`). */
function nativeLaunches(dir, sequences) {
  const cli = nativeGeneb();
  assert.ok(cli, 'no native geneb build (cargo build, or npm test, makes target/debug/geneb)');
  const fasta = join(dir, 'census.fa');
  writeFileSync(fasta, sequences.map((s, i) => `>s${i}\n${s}\n`).join(''));
  const run = spawnSync(cli, ['embed', '--model', `hf:${dir}`, '--backend', 'wgpu', '--count-kernels',
    '--input', fasta, '--out', join(dir, 'census.npy')], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const launches = /(\d+) kernel launches/.exec(run.stderr);
  assert.ok(launches, run.stderr);
  return Number(launches[1]);
}

describe('the page core\'s GPU calls on Dawn', { timeout: 10 * 60_000 }, () => {
  let dawn;
  let census;
  let timer;
  before(async () => {
    assert.ok(wasmBuilt(), NO_WASM);
    dawn = await coreOnDawn({ flags: [RAW_TIMESTAMPS] });
    assert.ok(dawn.core, dawn.reason);
    census = gpuCensus();
    timer = gpuKernelTimer();
    timer.pause();
  });

  for (const name of Object.keys(FIXTURES)) {
    it(`${name}: a warm pass costs its native launches; new lengths compile and allocate nothing`, async () => {
      const model = fixtureCopy(name);
      const embed = (sequences, withFiles = false) => dawn.core.embed({
        model: `hf:${name}`, backend: 'webgpu', adapter: dawn.label, sequences, modelKey: `census:${name}`,
        ...(withFiles ? { modelFiles: modelFiles(model.dir, model.files) } : {}),
      });
      const warm = dna(WARM_LENGTHS);
      const first = await embed(warm, true);
      assert.equal(first.backend.kind, 'wgpu');
      census.take();

      const again = await embed(warm);
      const passMade = census.made();
      const pass = census.take();
      assert.deepEqual(again.values, first.values, 'the same batch twice gave other embeddings');
      const launches = nativeLaunches(model.dir, warm);
      console.log(`${name}: warm pass ${JSON.stringify(pass)}; native wgpu ${launches} launches`);
      assert.equal(pass.pipelines, 0, `a warm pass compiled pipelines: ${passMade.join('; ')}`);
      assert.equal(pass.shaderModules, 0, 'a warm pass compiled shaders');
      assert.equal(pass.buffers, 0, `a warm pass created buffers: ${passMade.join('; ')}`);
      assert.equal(pass.maps, 1, 'a warm pass reads back once');
      assert.ok(pass.submits <= 16, `${pass.submits} submits`);
      assert.equal(pass.dispatches, launches, 'dispatches on Dawn differ from native wgpu\'s launches');

      const freshValues = [];
      for (const sequence of dna(NEW_LENGTHS)) freshValues.push((await embed([sequence])).values);
      const freshMade = census.made();
      const fresh = census.take();
      console.log(`${name}: ${NEW_LENGTHS.length} new lengths, one at a time: ${JSON.stringify(fresh)}`);
      const what = freshMade.join('; ');
      const most = NEW_LENGTHS_MAY_MAKE;
      assert.ok(fresh.pipelines <= most.pipelines, `${fresh.pipelines} pipelines compiled for new lengths: ${what}`);
      assert.ok(fresh.buffers <= most.buffers, `${fresh.buffers} buffers created for new lengths: ${what}`);
      // Padded to a repeating shape, each is still embedded as the page's CPU backend embeds it
      // (its batches take no repeating shapes): the mask keeps the padding out.
      const reference = await dawn.core.embed({
        model: `hf:${name}`, backend: 'cpu', sequences: dna(NEW_LENGTHS), modelFiles: modelFiles(model.dir, model.files),
      });
      const worst = maxAbsDiff(freshValues.flat(), reference.values);
      assert.ok(worst <= 1e-4, `new lengths on Dawn differ from the CPU's by up to ${worst}`);

      // The kernel profile's Dawn half (bench/dawn_profile.mjs): every dispatch of the warm pass
      // timed in a pass of its own, the embeddings unchanged by it.
      timer.resume();
      const timed = await embed(warm);
      timer.pause();
      const dispatches = await timer.take();
      census.take();
      assert.deepEqual(timed.values, first.values, 'timing each dispatch changed the embeddings');
      assert.equal(dispatches.length, launches, 'timed dispatches differ from native wgpu\'s launches');
      // A kernel shorter than the timer's tick reads 0 µs (CI once saw 65.536 µs steps): each
      // must be a labelled, non-negative time; the pass as a whole must have taken some.
      const unsound = dispatches.filter((d) => !d.label || !Number.isFinite(d.us) || d.us < 0);
      assert.deepEqual(unsound, [], 'dispatches without a label or a time');
      assert.ok(dispatches.some((d) => d.us > 0), 'every dispatch of the pass timed at 0 µs');
    });
  }
});
