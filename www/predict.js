// Use the probe (src/predict.rs in the core): a run of one encoder on one task can also save its
// full-data probe (the probe.json `geneb eval --save-probe` writes, from the same Rust code), and
// a saved probe + its encoder + new sequences give each sequence's predicted label and class
// probabilities (what `geneb predict` writes), shown and downloadable as CSV. The core refuses a
// probe fitted on another encoder.

import { downloadText, h, messageOf } from './dom.js';
import { callCore } from './core-client.js';
import { modelFilesFor } from './models.js';

const ui = {};
let savedProbe = null; // {name, text} of the last run's probe

/** Mount the panel into `root`. */
export function initPredict(root) {
  ui.save = h('input', { type: 'checkbox', id: 'save-probe', 'data-testid': 'save-probe' });
  ui.download = h('button', { type: 'button', 'data-testid': 'probe-download', hidden: true }, 'Download the probe (JSON)');
  ui.download.addEventListener('click', () => savedProbe && downloadText(savedProbe.text, savedProbe.name, 'application/json'));
  ui.probe = h('input', { type: 'file', id: 'predict-probe', 'data-testid': 'predict-probe', accept: '.json' });
  ui.input = h('input', {
    type: 'file', id: 'predict-input', 'data-testid': 'predict-input', accept: '.fa,.fasta,.fna,.csv,.tsv,.txt,.gz',
  });
  ui.model = h('select', { id: 'predict-model', 'data-testid': 'predict-model' });
  ui.run = h('button', { type: 'button', 'data-testid': 'predict-run' }, 'Predict');
  ui.summary = h('p', { class: 'hint', 'data-testid': 'predict-summary', 'aria-live': 'polite' });
  ui.table = h('div', { 'data-testid': 'predict-table' });
  ui.csv = h('button', { type: 'button', 'data-testid': 'predict-download', hidden: true }, 'Download the predictions (CSV)');
  ui.probe.addEventListener('change', () => { refreshModels(); });
  ui.model.addEventListener('focus', refreshModels);
  ui.run.addEventListener('click', () => { predict().catch((err) => fail(messageOf(err))); });
  root.append(h('details', { class: 'predict-panel', 'data-testid': 'predict-panel' },
    h('summary', {}, 'Use a probe on new sequences'),
    h('label', { class: 'choice', for: 'save-probe' }, ui.save,
      h('span', {}, 'Save the full-data probe of the next run ',
        h('small', {}, 'one encoder on one task with the full regime: its weights, label order and the encoder’s identity, as geneb eval --save-probe saves it'))),
    ui.download,
    h('div', { class: 'split-fields' },
      h('label', { class: 'field', for: 'predict-probe' }, 'Probe (probe.json)', ui.probe),
      h('label', { class: 'field', for: 'predict-model' }, 'Its encoder', ui.model),
      h('label', { class: 'field', for: 'predict-input' }, 'Sequences (FASTA, a table, or one per line)', ui.input)),
    ui.run, ui.summary, ui.table, ui.csv));
}

/** Whether the next run should also save its probe. */
export function savingProbe() {
  return Boolean(ui.save?.checked);
}

/** After a run: offer the probe it saved (JSON text), or nothing. */
export function showProbe(text) {
  savedProbe = null;
  ui.download.hidden = true;
  if (typeof text !== 'string') return;
  const task = (() => { try { return JSON.parse(text).task; } catch { return ''; } })();
  savedProbe = { name: `probe-${task || 'task'}.json`, text };
  ui.download.hidden = false;
}

/** The probe's own encoder when the page has it built in, then the loaded foundation models. */
async function refreshModels() {
  const chosen = ui.model.value;
  const specs = [];
  const file = ui.probe.files?.[0];
  if (file) {
    try {
      const spec = JSON.parse(await file.text())?.encoder?.spec;
      if (typeof spec === 'string' && !spec.startsWith('hf:')) specs.push(spec);
    } catch { /* the core names a bad probe file when Predict is pressed */ }
  }
  // The loaded models are the model panel's (www/models.js) ticks.
  for (const input of document.querySelectorAll('[data-testid="loaded-model"] input')) specs.push(input.value);
  ui.model.replaceChildren(...[...new Set(specs)].map((s) => h('option', { value: s }, s)));
  if (specs.includes(chosen)) ui.model.value = chosen;
}

function fail(message) {
  ui.summary.textContent = message.split('\n')[0];
  ui.summary.classList.add('error');
  ui.table.replaceChildren();
  ui.csv.hidden = true;
}

async function predict() {
  ui.summary.classList.remove('error');
  await refreshModels();
  const probe = ui.probe.files?.[0];
  const input = ui.input.files?.[0];
  if (!probe || !input) { fail('Choose a probe file and a file of sequences.'); return; }
  const model = ui.model.value;
  if (!model) { fail('No encoder for this probe: load its model in “2. Encoders” first.'); return; }
  ui.summary.textContent = `Predicting with ${model}…`;
  const files = modelFilesFor([model]);
  const request = {
    probe: { name: probe.name, bytes: new Uint8Array(await probe.arrayBuffer()) },
    input: { name: input.name, bytes: new Uint8Array(await input.arrayBuffer()) },
    model, modelFiles: files.modelFiles[model], modelKey: files.modelKeys[model],
  };
  // A failure (the core's message) is shown by the caller's catch.
  show(await callCore('predict', { request }), input.name);
}

function show({ csv, rows, task }, inputName) {
  const lines = csv.trimEnd().split('\n');
  const shown = lines.slice(0, 21);
  ui.summary.textContent = `${rows} sequence${rows === 1 ? '' : 's'} of ${inputName} scored by the probe of task ${task}`
    + `${lines.length > shown.length ? ` (the first ${shown.length - 1} shown)` : ''}.`;
  // Cells are plain text (ids come from the user's file): split on commas outside quotes.
  const cells = (line) => line.match(/("([^"]|"")*"|[^,]*)(,|$)/g).slice(0, -1)
    .map((c) => c.replace(/,$/, '').replace(/^"|"$/g, '').replace(/""/g, '"'));
  const [head, ...body] = shown.map(cells);
  ui.table.replaceChildren(h('table', { class: 'predict-rows' },
    h('thead', {}, h('tr', {}, ...head.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, ...body.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c)))))));
  ui.csv.hidden = false;
  ui.csv.onclick = () => downloadText(csv, `predictions-${task}.csv`, 'text/csv');
}
