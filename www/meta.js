// What the result's `meta` says about the model (src/encoder/card.rs): the core fills it from the
// weights (the parameter count), the known-models table, config.json and the model card; these
// fields override it, as `geneb eval --display --params --training-data --url --submitted-by`
// does. After a run, `metaList` shows what each submission records.

import { h } from './dom.js';

const FIELDS = [
  // [key in the core's MetaOverrides, label, input type, hint]
  ['display', 'Display name', 'text', 'e.g. My DNA LM 90M'],
  // Text, not number: a typo is named rather than silently emptied by the browser.
  ['params', 'Parameters', 'text', 'counted from the weights'],
  ['trainingData', 'Training data', 'text', 'e.g. hg38 + 1000 Genomes'],
  ['url', 'URL', 'url', 'the model’s page'],
  ['submittedBy', 'Submitted by', 'text', 'your name or lab'],
];

const inputs = {};

/** Mount the (collapsed) "Submission details" fields into `root`. */
export function initMeta(root) {
  const fields = FIELDS.map(([key, label, type, placeholder]) => {
    const id = `meta-${key}`;
    inputs[key] = h('input', {
      id, 'data-testid': id, type, placeholder, ...(key === 'params' ? { inputmode: 'numeric' } : {}),
    });
    return h('label', { class: 'field', for: id }, label, inputs[key]);
  });
  root.append(h('details', { class: 'meta-panel', 'data-testid': 'meta-panel' },
    h('summary', {}, 'Submission details (name, parameters, training data)'),
    h('p', { class: 'hint' }, 'Left empty, a field keeps what geneb reads from the model: its parameters counted from the '
      + 'weights, its name, context and URL from the known-models table or its config.json and model card. The display '
      + 'name, parameters, training data and URL describe one model: set them for a run of one.'),
    h('div', { class: 'split-fields' }, ...fields)));
}

/**
 * The fields the user filled, as the core's MetaOverrides ({display?, params?, trainingData?,
 * url?, submittedBy?}); throws with a message for a parameter count that is no whole number.
 */
export function metaOverrides() {
  const out = {};
  for (const [key] of FIELDS) {
    const value = inputs[key]?.value.trim() ?? '';
    if (!value) continue;
    if (key === 'params') {
      if (!/^\d+$/.test(value)) throw new Error(`Parameters: “${value}” is not a whole number of parameters`);
      out.params = Number(value);
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** What each submission records about its model, or null for none. */
export function metaList(submissions) {
  if (!submissions.length) return null;
  const count = (n) => (n > 0 ? `${Number(n).toLocaleString('en-US')} parameters` : 'parameters not recorded');
  return h('div', { class: 'meta-recorded', 'data-testid': 'meta-recorded' },
    h('h3', {}, 'Recorded with each result'),
    h('ul', {}, ...submissions.map((s) => h('li', { 'data-model': s.model_id },
      `${s.meta?.display ?? s.model_id} · ${count(s.meta?.params ?? 0)} · training data: ${s.meta?.training_data || '—'}`
      + `${s.meta?.url ? ` · ${s.meta.url}` : ''}${s.meta?.submitted_by ? ` · submitted by ${s.meta.submitted_by}` : ''}`))));
}
