// Tables without a split column (src/input/split.rs): the core says which dropped tables have none and
// which of their columns could group rows (a patient, a donor); this panel holds the settings the
// core splits them with — the CLI's --test-fraction, --split-seed, --group-column and --folds —
// and, after a run, lists what the result's protocol block says: where it deviates from GENEB,
// what was truncated, what loading the models noted.

import { callCore } from './core-client.js';
import { isTable, onCoreFacts } from './core-facts.js';
import { fmt, h, messageOf } from './dom.js';


const ui = {};
let tables = []; // [{file, task, columns}] from the core
let latest = 0; // the newest request's id: older answers are dropped
let chosen = []; // the page's task files, asked about again once the core says which are tables

/** Mount the (hidden until needed) panel into `root`. */
export function initSplit(root) {
  ui.summary = h('p', { 'data-testid': 'split-summary', 'aria-live': 'polite' });
  ui.fraction = h('input', {
    id: 'split-fraction', 'data-testid': 'split-fraction', type: 'number', min: '0.01', max: '0.99', step: '0.01',
  });
  ui.seed = h('input', { id: 'split-seed', 'data-testid': 'split-seed', type: 'number', min: '0', step: '1' });
  ui.group = h('select', { id: 'split-group', 'data-testid': 'split-group' });
  ui.similar = h('input', { id: 'split-similar', 'data-testid': 'split-similar', type: 'checkbox' });
  ui.folds = h('input', {
    id: 'split-folds', 'data-testid': 'split-folds', type: 'number', min: '2', step: '1', placeholder: 'one split',
  });
  ui.panel = h('div', { class: 'split-panel', 'data-testid': 'split-panel', hidden: true },
    h('h3', {}, 'Tables without a split column'),
    ui.summary,
    h('div', { class: 'split-fields' },
      h('label', { class: 'field', for: 'split-group' }, 'Keep together the rows of each', ui.group),
      h('label', { class: 'field', for: 'split-similar' }, ui.similar,
        ' Keep relatives together: exact, reverse-complement and near copies on one side (',
        h('code', {}, '--split-by similarity'), ')'),
      h('label', { class: 'field', for: 'split-fraction' }, 'Test fraction', ui.fraction),
      h('label', { class: 'field', for: 'split-seed' }, 'Seed', ui.seed),
      h('label', { class: 'field', for: 'split-folds' }, 'Folds (k-fold instead of one split)', ui.folds)),
    h('p', { class: 'hint' }, 'The split is stratified by label and the same as ',
      h('code', {}, 'geneb eval --test-fraction --split-seed --group-column --folds'),
      ' makes (scikit-learn’s train_test_split / StratifiedKFold without a group column). GENEB’s own tasks have fixed splits, so the result records this as a deviation.'));
  ui.folds.addEventListener('input', () => { ui.fraction.disabled = ui.folds.value.trim() !== ''; });
  // Clusters of relatives are the groups: a group column too would be two answers to one question.
  ui.similar.addEventListener('change', () => { ui.group.disabled = ui.similar.checked; });
  root.append(ui.panel);
  // Files chosen (or restored) before the core was up are looked at once it is.
  onCoreFacts(() => updateSplitTables(chosen));
}

/** Ask the core which of `entries` ([{path, file}]) are tables without a split column. */
export async function updateSplitTables(entries) {
  chosen = entries;
  const id = ++latest;
  // Tables, the only files that can lack a split column (the core's list): their headers alone.
  const candidates = entries.filter(({ path }) => isTable(path));
  if (!candidates.length) { show([], null); return; }
  try {
    // The files themselves: the worker reads them (a 20 MB table read and copied on the page's
    // thread delayed the audit the worker runs beside this call).
    const files = candidates.map(({ path, file }) => ({ name: path, file }));
    const reply = await callCore('columns', { files });
    if (id === latest) show(reply.tables ?? [], reply.defaults);
  } catch (err) {
    // The run reports the same problem with its file and line; here it only hides the panel.
    if (id === latest) show([], null, messageOf(err));
  }
}

function show(found, defaults, problem = '') {
  tables = found;
  ui.panel.hidden = !tables.length && !problem;
  if (problem) { ui.summary.textContent = `The tables could not be read: ${problem}`; return; }
  if (!tables.length) return;
  if (defaults && ui.fraction.value === '') ui.fraction.value = String(defaults.testFraction);
  if (defaults && ui.seed.value === '') ui.seed.value = String(defaults.seed);
  const names = tables.map((t) => t.file).join(', ');
  ui.summary.textContent = `${names} ${tables.length === 1 ? 'has' : 'have'} no split column: geneb splits ${tables.length === 1 ? 'it' : 'them'} into train and test.`;
  const chosen = ui.group.value;
  const columns = [...new Set(tables.flatMap((t) => t.columns))];
  ui.group.replaceChildren(h('option', { value: '' }, 'row (no group column: rows are independent)'),
    ...columns.map((c) => h('option', { value: c }, c)));
  ui.group.value = columns.includes(chosen) ? chosen : '';
}

/** The request's `split` (src/input/split.rs SplitSettings), or undefined to use the core's defaults. */
export function splitSettings() {
  if (!tables.length) return undefined;
  const bySimilarity = ui.similar.checked;
  const settings = { groupColumn: bySimilarity ? null : ui.group.value || null, folds: null, bySimilarity };
  // Blank fields are left out, so the core's defaults apply.
  if (ui.fraction.value.trim() !== '') settings.testFraction = Number(ui.fraction.value);
  if (ui.seed.value.trim() !== '') settings.seed = Number(ui.seed.value);
  if (ui.folds.value.trim() !== '') settings.folds = Number(ui.folds.value);
  return settings;
}

/**
 * Where a run's results deviate from GENEB, from each submission's protocol block, and each
 * k-fold task's mean ± std over its folds; null when there is nothing to say.
 */
export function deviationList(submissions) {
  const lines = new Set(submissions.flatMap((s) => s.protocol?.deviations ?? []));
  const folds = submissions.flatMap((s) => Object.entries(s.folds?.full ?? {}).map(([task, f]) => (
    `${s.model_id} on ${task}: full-data MCC ${fmt(f.mean?.MCC)} ± ${fmt(f.std?.MCC)} over ${f.per_fold?.length ?? 0} folds`)));
  if (!lines.size && !folds.length) return null;
  return h('div', { class: 'deviations', 'data-testid': 'deviations' },
    h('h3', {}, 'Deviations from GENEB'),
    h('ul', {}, ...[...lines].map((l) => h('li', {}, l))),
    folds.length ? h('ul', { 'data-testid': 'fold-scores' }, ...folds.map((l) => h('li', {}, l))) : null);
}

/**
 * The tasks whose sequences an encoder cut at its maximum length (`protocol.truncated_sequences`,
 * counted by the core); null when none was cut. GENEB truncates too: this is said, not flagged.
 */
export function truncationList(submissions) {
  const lines = submissions.flatMap((s) => Object.entries(s.protocol?.truncated_sequences ?? {})
    .map(([task, n]) => `${s.model_id}: ${n} sequence${n === 1 ? '' : 's'} of ${task} cut at the model's maximum length`));
  if (!lines.length) return null;
  return h('div', { class: 'deviations', 'data-testid': 'truncated' },
    h('h3', {}, 'Truncated inputs'),
    h('ul', {}, ...lines.map((l) => h('li', {}, l))));
}

/**
 * What loading each model noted (`protocol.encoder.notes`: a tensor GENEB's extractor tolerates
 * missing, …), as the CLI says it on stderr; null when nothing was noted.
 */
export function encoderNotes(submissions) {
  const lines = submissions.flatMap((s) => (s.protocol?.encoder?.notes ?? []).map((note) => `${s.model_id}: ${note}`));
  if (!lines.length) return null;
  return h('div', { class: 'deviations', 'data-testid': 'encoder-notes' },
    h('h3', {}, 'Notes from loading the models'),
    h('ul', {}, ...lines.map((l) => h('li', {}, l))));
}
