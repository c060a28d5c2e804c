// "2. Encoders" and "3. Regimes": the core's built-in encoders (the k-mer spectrum as one choice
// with its K) and the protocol's regimes, both as the core lists them (the worker's ready
// message), and what the user ticked. The foundation models are models.js's.

import { h } from './dom.js';
import { regimeNote, regimeLabel } from './core-facts.js';
import { selectedHubModels } from './models.js';

/** The baselines the demo runs, ticked by default. */
export const DEMO_MODELS = ['kmer:4', 'random-cnn'];

const $ = (sel) => document.querySelector(sel);
const el = {};
let models = []; // the core's built-in encoders: [{spec, name, description, needsBackend}]
let rendered = false; // once: a restarted worker must not undo the user's choices

/**
 * The core is up: list its encoders and regimes, once (a restarted worker says the same).
 * `regimes` are the core's facts' ([{key, label, shots, seeds}]).
 */
export function showEncoders(builtin, regimes) {
  if (rendered) return;
  models = Array.isArray(builtin) ? builtin : [];
  renderModels();
  renderRegimes(regimes);
  rendered = true;
}

/** Whether the choices are on the page yet. */
export function encodersShown() {
  return rendered;
}

/** The built-in encoder with this spec, if any. */
export function builtinModel(spec) {
  return models.find((m) => m.spec === spec);
}

function renderRegimes(regimes) {
  el.regimesLoading?.remove();
  el.regimes.append(...regimes.map((r) => {
    const note = r.shots == null ? 'all training examples'
      : `${r.shots} example${r.shots === 1 ? '' : 's'} per class, ${r.seeds.length} seeds`;
    return h('label', { class: 'choice' },
      h('input', { type: 'checkbox', name: 'regime', value: r.key, 'data-testid': `regime-${r.key}`, checked: true, title: regimeNote(r.key) }),
      h('span', {}, regimeLabel(r.key), ' ', h('small', {}, note)));
  }));
}

/** Mount onto the page's encoder and regime fieldsets; `onChange()` when a choice changes. */
export function initEncoders({ onChange }) {
  Object.assign(el, {
    models: $('#model'), modelsLoading: $('#models-loading'), regimes: $('#regimes'), regimesLoading: $('#regimes-loading'),
  });
  el.models.addEventListener('change', onChange);
  el.regimes.addEventListener('change', onChange);
}

/** The encoders ticked for the next run (the built-in ones here, then the loaded models). */
export function selectedModels() {
  if (!rendered) return [];
  const specs = [];
  for (const box of el.models.querySelectorAll('input[type=checkbox][name=model]:checked')) {
    if (box.dataset.kmer != null) {
      const k = el.models.querySelector('select[name=kmer-k]');
      const canonical = el.models.querySelector('input[name=kmer-canonical]')?.checked;
      specs.push(`kmer:${k ? k.value : 4}${canonical ? ':canonical' : ''}`);
    } else {
      specs.push(box.value);
    }
  }
  return [...specs, ...selectedHubModels()];
}

/** The regimes ticked for the next run, by key. */
export function selectedRegimes() {
  return [...el.regimes.querySelectorAll('input[name=regime]:checked')].map((b) => b.value);
}

/** "random CNN (random-cnn[:SEED])" → "random CNN": the spec is shown beside it anyway. */
function shortName(name) {
  return String(name ?? '').replace(/\s*\([^()]*\)\s*$/, '');
}

/** An encoder's readable name ("4-mer spectrum"), or '' for one the page does not know. */
export function modelName(spec) {
  const k = /^kmer:(\d+)(:canonical)?$/.exec(spec);
  if (k) return `${k[1]}-mer spectrum${k[2] ? ', canonical' : ''}`;
  const base = spec.split(':')[0];
  const m = models.find((x) => x.spec === spec) ?? models.find((x) => x.spec === base);
  return m ? shortName(m.name) : '';
}

/** Group the k-mer entries (one entry "kmer:K" or several "kmer:1".."kmer:6") into one choice. */
function renderModels() {
  el.modelsLoading?.remove();
  const kmers = models.filter((m) => /^kmer(:\d+)?$/.test(m.spec));
  const others = models.filter((m) => !/^kmer(:\d+)?$/.test(m.spec));
  const rows = [];
  if (kmers.length) {
    let ks = kmers.map((m) => Number(/^kmer:(\d+)$/.exec(m.spec)?.[1])).filter(Number.isInteger);
    const listed = kmers.flatMap((m) => (Array.isArray(m.ks) ? m.ks : Array.isArray(m.k) ? m.k : []));
    if (listed.length) ks = listed.map(Number);
    if (ks.length <= 1) ks = [1, 2, 3, 4, 5, 6];
    ks = [...new Set(ks)].sort((a, b) => a - b);
    const first = kmers[0];
    const select = h('select', { id: 'kmer-k', name: 'kmer-k', 'data-testid': 'kmer-k' },
      ks.map((k) => h('option', { value: k, selected: k === 4 }, `K = ${k}`)));
    const box = h('input', {
      type: 'checkbox', name: 'model', value: 'kmer', id: 'model-kmer',
      'data-testid': 'model-kmer', 'data-kmer': '', checked: true,
      'aria-describedby': 'model-kmer-desc',
    });
    rows.push(h('div', { class: 'choice model-choice' },
      box,
      h('label', { for: 'model-kmer' }, h('span', { class: 'model-name' }, 'k-mer spectrum'), ' ',
        h('code', {}, 'kmer:K')),
      h('label', { class: 'kmer-k', for: 'kmer-k' }, h('span', { class: 'visually-hidden' }, 'k-mer size'), select),
      h('p', { class: 'model-desc', id: 'model-kmer-desc' },
        first.description || 'Counts of every DNA word of length K; no training.'),
      h('label', { class: 'kmer-canonical', for: 'kmer-canonical' },
        h('input', { type: 'checkbox', id: 'kmer-canonical', name: 'kmer-canonical', 'data-testid': 'kmer-canonical' }),
        'canonical (merge reverse complements)'),
    ));
  }
  for (const m of others) {
    const id = `model-${m.spec.replace(/[^a-z0-9]+/gi, '-')}`;
    rows.push(h('div', { class: 'choice model-choice' },
      h('input', {
        type: 'checkbox', name: 'model', value: m.spec, id, 'data-testid': id,
        checked: DEMO_MODELS.includes(m.spec), 'aria-describedby': `${id}-desc`,
      }),
      h('label', { for: id }, h('span', { class: 'model-name' }, shortName(m.name) || m.spec), ' ', h('code', {}, m.spec)),
      h('p', { class: 'model-desc', id: `${id}-desc` },
        m.description || '',
        m.needsBackend ? h('span', { class: 'tag' }, ' uses WebGPU when available') : null),
    ));
  }
  if (!rows.length) rows.push(h('p', { class: 'hint' }, 'No encoders are built into this version.'));
  el.models.append(...rows);
}

