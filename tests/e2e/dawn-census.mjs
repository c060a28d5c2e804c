// The census test's models and sequences, shared with bench/dawn_census.mjs.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from './helpers.mjs';

const MODELS = join(REPO, 'tests', 'fixtures', 'models');
/**
 * The tiny random checkpoints of DNABERT-2's and NT-v2's layouts, their tokenizers allowed the
 * lengths a real model takes (the fixtures cap them at 24 and 40 tokens).
 */
export const FIXTURES = {
  'dnabert-2': { dir: 'dnabert2', maxLength: 512, files: ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'] },
  'nt-v2': { dir: 'nt_v2', maxLength: 90, files: ['config.json', 'model.safetensors', 'special_tokens_map.json', 'tokenizer_config.json', 'vocab.txt'] },
};
const TASK = join(REPO, 'tasks', 'smoke', 'smoke_lambda_phage_vs_ecoli.csv');
/** One warm batch: 32 sequences of 200 to 510 nt, every tenth length. */
export const WARM_LENGTHS = Array.from({ length: 32 }, (_, i) => 200 + 10 * i);
/** 20 lengths the warm batch did not have (none a multiple of ten), 25 to 481 nt. */
export const NEW_LENGTHS = Array.from({ length: 20 }, (_, i) => 25 + 24 * i);

export function dna(lengths) {
  const genome = readFileSync(TASK, 'utf8').trim().split('\n').slice(1).map((row) => row.split(',')[0]).join('');
  return lengths.map((length, i) => genome.slice(97 * i, 97 * i + length));
}

export function fixtureCopy(name) {
  const { dir, maxLength, files } = FIXTURES[name];
  const copy = mkdtempSync(join(tmpdir(), `geneb-census-${dir}-`));
  cpSync(join(MODELS, dir), copy, { recursive: true });
  const configPath = join(copy, 'tokenizer_config.json');
  const config = JSON.parse(readFileSync(configPath, 'utf8'));
  writeFileSync(configPath, JSON.stringify({ ...config, model_max_length: maxLength }));
  return { dir: copy, files };
}
