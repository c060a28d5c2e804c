#!/usr/bin/env node
// The page core's WebGPU calls on Dawn (tests/e2e/dawn.mjs's census) for a warm pass and for 20
// single sequences of 20 new lengths, on the tiny DNABERT-2 and NT-v2 checkpoints the census test
// uses: the before/after figures of bench/README.md ("Shapes that repeat"), with each pipeline
// (CubeCL's kernel name) and buffer (size, usage) made after the first batch, by length, and the
// wall time of the first batch (the model's load and warm-up in it) and of the second.
//   node bench/dawn_census.mjs [--pkg www/pkg]
import { join, resolve } from 'node:path';
import { coreOnDawn, gpuCensus, modelFiles } from '../tests/e2e/dawn.mjs';
import { FIXTURES, NEW_LENGTHS, WARM_LENGTHS, dna, fixtureCopy } from '../tests/e2e/dawn-census.mjs';

const at = process.argv.indexOf('--pkg');
const pkg = at > 0 ? resolve(process.argv[at + 1]) : undefined;
const dawn = await coreOnDawn(pkg ? { pkg } : {});
if (!dawn.core) {
  console.error(`dawn_census: ${dawn.reason}`);
  process.exit(2);
}
const census = gpuCensus();
for (const name of Object.keys(FIXTURES)) {
  const model = fixtureCopy(name);
  const embed = (sequences, withFiles = false) => dawn.core.embed({
    model: `hf:${name}`, backend: 'webgpu', adapter: dawn.label, sequences, modelKey: `census:${name}`,
    ...(withFiles ? { modelFiles: modelFiles(model.dir, model.files) } : {}),
  });
  census.take();
  let started = performance.now();
  await embed(dna(WARM_LENGTHS), true);
  const coldMs = performance.now() - started;
  const cold = census.take();
  started = performance.now();
  await embed(dna(WARM_LENGTHS));
  const warmMs = performance.now() - started;
  const warmMade = census.made();
  const warm = census.take();
  const freshMade = [];
  const fresh = {};
  for (const [i, sequence] of dna(NEW_LENGTHS).entries()) {
    await embed([sequence]);
    freshMade.push(...census.made().map((what) => `${NEW_LENGTHS[i]} nt: ${what}`));
    for (const [key, count] of Object.entries(census.take())) fresh[key] = (fresh[key] ?? 0) + count;
  }
  console.log(`${name}: first batch of 32 (the model's load included) ${coldMs.toFixed(0)} ms ${JSON.stringify(cold)}`);
  console.log(`${name}: the same batch again ${warmMs.toFixed(0)} ms ${JSON.stringify(warm)}`);
  for (const what of warmMade) console.log(`  ${what}`);
  console.log(`${name}: 20 new lengths, one at a time ${JSON.stringify(fresh)}`);
  for (const what of freshMade) console.log(`  ${what}`);
}
process.exit(0);
