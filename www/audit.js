// The leak audit of the chosen tasks (src/input/audit.rs through src/web/audit.rs), shown as soon
// as files are chosen and before anything is embedded: which test rows are exact,
// reverse-complement or near copies of training rows, and how well a nearest-neighbour baseline
// that only remembers training rows scores — what `geneb audit` prints. Nothing leaves the tab.

import { callCore } from './core-client.js';
import { isDataFile, isOwnEmbeddings, onCoreFacts } from './core-facts.js';
import { fmt, h, messageOf } from './dom.js';
import { splitSettings } from './split.js';

const ui = {};
let latest = 0; // the newest request's id: older answers are dropped
let chosen = []; // the page's task files, audited again once the core is up

/** Mount the (hidden until there are tasks) panel into `root`. */
export function initAudit(root) {
  ui.summary = h('p', { 'data-testid': 'audit-summary', 'aria-live': 'polite' });
  ui.table = h('table', { class: 'audit-table', 'data-testid': 'audit-table' });
  ui.panel = h('div', { class: 'audit-panel', 'data-testid': 'audit-panel', hidden: true },
    h('h3', {}, 'Leak audit'),
    ui.summary,
    // Nine columns: scrolled within, as the profile's tables are, so a phone's page stays its width.
    h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Leak audit' }, ui.table),
    h('p', { class: 'hint' }, 'A test row leaks when it equals a training row, its reverse complement, or '
      + 'shares at least half of its informative canonical 21-mers (held by at most 64 training rows) with '
      + 'one training row. Runs score every task on all test rows and on the rows that did not leak. '
      + 'Warn from 1 % near or 0.5 % exact copies (or a nearest-neighbour MCC of 0.5), fail from 10 % / 5 % '
      + '(seqleak’s thresholds). The same as ', h('code', {}, 'geneb audit --task …'), '.'));
  root.append(ui.panel);
  onCoreFacts(() => updateAudit(chosen));
  // A table without a split column is audited as the split panel's settings split it.
  document.querySelector('[data-testid="split-panel"]')?.addEventListener('change', () => updateAudit(chosen));
}

/** Audit the tasks among `entries` ([{path, file}]); the dropped embeddings have no sequences. */
export async function updateAudit(entries) {
  chosen = entries;
  const id = ++latest;
  // Embeddings (and labels.csv beside an X.npy) are probed as they are: no sequences to audit.
  const own = entries.some(({ path }) => isOwnEmbeddings(path));
  const tasks = own ? [] : entries.filter(({ path }) => isDataFile(path.split('/').pop()));
  if (!tasks.length) { show(null); return; }
  ui.panel.hidden = false;
  ui.summary.textContent = 'Auditing the tasks for leaks between train and test…';
  ui.table.replaceChildren();
  try {
    // The files themselves (handles, not their bytes): the worker reads them, so a 20 MB table
    // is neither read on the page's thread nor copied from it to the worker.
    const files = tasks.map(({ path, file }) => ({ name: path, file }));
    const split = splitSettings();
    const report = await callCore('audit', { files, ...(split ? { split } : {}) });
    if (id === latest) show(report);
  } catch (err) {
    // The run says the same problem with its file and line; here the audit only says it could not run.
    if (id === latest) show(null, messageOf(err));
  }
}

function show(report, problem = '') {
  const audits = report?.tasks ?? [];
  ui.panel.hidden = !audits.length && !problem;
  ui.table.replaceChildren();
  if (problem) { ui.summary.textContent = `The tasks could not be audited: ${problem}`; return; }
  if (!audits.length) return;
  const flagged = audits.filter((a) => a.verdict !== 'ok');
  ui.summary.textContent = flagged.length
    ? `${flagged.length} of ${audits.length} task${audits.length === 1 ? '' : 's'} leak: their scores partly measure memory of the training rows.`
    : `No leak found in ${audits.length === 1 ? 'the task' : `the ${audits.length} tasks`}.`;
  const head = ['task', 'train', 'test', 'exact', 'reverse complement', 'near', 'leaked', 'nearest-neighbour MCC', 'verdict'];
  ui.table.append(
    h('thead', {}, h('tr', {}, ...head.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, ...audits.map((a) => h('tr', { class: `verdict-${a.verdict}`, 'data-task': a.task },
      h('td', {}, a.task),
      h('td', {}, String(a.train)),
      h('td', {}, String(a.test)),
      h('td', {}, String(a.exact_copies)),
      h('td', {}, String(a.reverse_complement_copies)),
      h('td', {}, String(a.near_copies)),
      h('td', {}, `${a.leaked_test_rows.length} (${(100 * a.leaked_test_rows.length / Math.max(a.test, 1)).toFixed(1)} %)`),
      h('td', {}, fmt(a.nearest_neighbour_mcc)),
      h('td', { title: (a.flags ?? []).join('\n') }, a.verdict)))));
}
