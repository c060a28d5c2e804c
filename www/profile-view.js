// The per-category profile as tables: one per regime (encoders × categories, macro, micro), and
// the tasks with their per-task scores. Shared by the latest run's results and the comparison of
// saved results, so both read the same way. The numbers all come from the wasm core.

import { coreFacts, fewShotSeeds, regimeLabel, regimeNote } from './core-facts.js';
import { fmt, h, plural } from './dom.js';

/**
 * Fill `container` with the profile's tables. `prefix` keeps ids and test ids unique when two
 * profiles are on the page ("profile" for the latest run, "compare" for the comparison);
 * `modelName(spec)` gives an encoder's readable name, or ''. With the core's `analysis` (a
 * report), cells also show their 95 % bootstrap interval and the model's rank in the column.
 */
export function renderProfile(container, profile, submissions, { prefix, modelName = () => '', analysis = null }) {
  container.textContent = '';
  if (!profile || !Array.isArray(profile.regimes)) {
    container.append(h('p', { class: 'hint' }, 'There is no profile to show.'));
    return;
  }
  const cats = Array.isArray(profile.categories) ? profile.categories : [];
  const metric = profile.metric || 'MCC';
  let bolded = false;
  for (const reg of profile.regimes) {
    const { section, bold } = regimeTable(reg, cats, metric, { prefix, modelName, analysis });
    container.append(section);
    bolded ||= bold;
  }
  container.append(h('p', { class: 'hint legend' },
    `${metric} from −1 to 1 (0 = chance). Category = mean over its tasks; macro = mean of the categories; micro = mean over all tasks.`,
    bolded ? ' Bold: the best encoder in that column.' : '',
    analysis ? ' [low, high]: 95 % bootstrap interval over the test examples; #n: rank in the column (1 = best).' : ''));
  // A full GENEB run, as the core counts one: only its macro and micro compare with the
  // published leaderboard.
  const full = coreFacts() && { tasks: coreFacts().officialTasks, categories: coreFacts().categories.length };
  const partial = profile.regimes.flatMap((r) => (Array.isArray(r.rows) ? r.rows : []))
    .find((r) => Number.isInteger(r.n_tasks) && Number.isInteger(r.n_categories)
      && (r.n_tasks !== full?.tasks || r.n_categories !== full?.categories));
  if (partial && full) {
    container.append(h('p', { class: 'hint scope-note', 'data-testid': `${prefix}-scope-note` },
      `macro and micro average the ${plural(partial.n_tasks, 'task')} in `
      + `${plural(partial.n_categories, 'category', 'categories')} given here; only a full GENEB run `
      + `(${full.tasks} tasks, ${full.categories} categories) compares with the published leaderboard.`));
  }
  if (Array.isArray(profile.tasks) && profile.tasks.length) {
    container.append(tasksDetails(profile.tasks, submissions, profile.regimes.map((r) => r.regime), prefix));
  }
}

/**
 * The interval and rank of one cell, from the report's `uncertainty` and `ranks` (which name
 * the macro column "macro"; micro has neither).
 */
function cellEvidence(analysis, regime, model, column) {
  const macro = column.agg === 'macro';
  const u = analysis.uncertainty?.find?.((x) => x.regime === regime && x.model === model);
  const estimate = macro ? u?.macro : u?.categories?.[column.key];
  const rank = analysis.ranks?.find?.((x) => x.regime === regime)?.ranks?.[model]?.[macro ? 'macro' : column.key];
  return { estimate: estimate ?? null, rank: Number.isFinite(rank) ? rank : null };
}

function scoreCell(entry, best, { estimate, rank } = {}) {
  const mean = typeof entry === 'number' ? entry : entry?.mean;
  const std = typeof entry === 'object' && entry ? entry.std : null;
  const td = h('td', { class: `num${best ? ' best' : ''}` }, fmt(mean));
  if (typeof std === 'number' && Number.isFinite(std)) {
    td.append(h('span', { class: 'std' }, ` ± ${std.toFixed(3)}`));
    td.title = `mean ${fmt(mean)}, standard deviation ${std.toFixed(3)} over the ${fewShotSeeds()} seeds`;
  }
  if (estimate) {
    td.append(h('span', { class: 'ci', title: '95 % bootstrap interval over the test examples' },
      ` [${fmt(estimate.lo)}, ${fmt(estimate.hi)}]`));
  }
  if (rank != null) td.append(h('span', { class: 'rank', title: 'rank in this column (1 = best)' }, ` #${rank}`));
  if (mean == null || !Number.isFinite(mean)) td.classList.add('missing');
  return td;
}

function regimeTable(reg, cats, metric, { prefix, modelName, analysis }) {
  const id = `${prefix}-${reg.regime}`;
  const rows = Array.isArray(reg.rows) ? reg.rows : [];
  const cols = [...cats.map((c) => ({ key: c, label: c, get: (r) => r.categories?.[c] })),
    { key: 'macro', label: 'Macro', get: (r) => r.macro, agg: 'macro' },
    { key: 'micro', label: 'Micro', get: (r) => r.micro, agg: 'micro' }];
  // The best row per column: only meaningful with two or more encoders scored on one task set.
  const comparable = rows.length >= 2 && new Set(rows.map((r) => r.n_tasks)).size === 1;
  const bestIdx = cols.map((c) => {
    if (!comparable) return -1;
    let best = -1; let bestV = -Infinity;
    rows.forEach((r, i) => {
      const e = c.get(r); const v = typeof e === 'number' ? e : e?.mean;
      if (typeof v === 'number' && v > bestV) { bestV = v; best = i; }
    });
    return best;
  });
  const table = h('table', { 'data-testid': `${prefix}-table-${reg.regime}`, 'data-regime': reg.regime },
    h('caption', {}, `${metric} per category — ${regimeLabel(reg.regime)}`),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Encoder'),
      cols.map((c) => h('th', { scope: 'col', class: c.agg ? 'agg' : null }, c.label)))),
    h('tbody', {}, rows.flatMap((r, i) => [h('tr', {},
      h('th', { scope: 'row' }, h('code', {}, r.model),
        modelName(r.model) ? h('span', { class: 'model-sub' }, modelName(r.model)) : null),
      cols.map((c, j) => {
        const evidence = analysis && c.agg !== 'micro' ? cellEvidence(analysis, reg.regime, r.model, c) : {};
        const td = scoreCell(c.get(r), bestIdx[j] === i, evidence);
        if (c.agg) td.classList.add('agg');
        return td;
      })), leakFreeRow(r, cols)])),
  );
  const section = h('section', { class: 'regime', 'aria-labelledby': `${id}-h` },
    h('h3', { id: `${id}-h` }, regimeLabel(reg.regime),
      regimeNote(reg.regime) ? h('small', {}, ` ${regimeNote(reg.regime)}`) : null),
    h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': `${id}-h` }, table));
  return { section, bold: bestIdx.some((i) => i >= 0) };
}

/**
 * Under a model's row, the same MCCs over the test rows the leak audit did not find leaked
 * (src/input/audit.rs); null when the result has no audit (older files, the user's embeddings).
 */
function leakFreeRow(r, cols) {
  const clean = r.leak_free;
  if (!clean) return null;
  const value = (c) => (c.agg ? clean[c.agg] : clean.categories?.[c.key]);
  return h('tr', { class: 'leak-free', 'data-testid': 'leak-free-row' },
    h('th', { scope: 'row', title: 'MCC over the test rows that are not copies or near copies of training rows' },
      'leak-free'),
    cols.map((c) => {
      const td = scoreCell(value(c) ?? null, false);
      if (c.agg) td.classList.add('agg');
      return td;
    }));
}

function tasksDetails(tasks, submissions, regimes, prefix) {
  const models = submissions.map((s) => s.model_id ?? s.meta?.display ?? '?');
  const parts = [h('summary', {}, `Tasks and per-task scores (${plural(tasks.length, 'task')})`)];
  parts.push(h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Tasks' },
    h('table', { 'data-testid': `${prefix === 'profile' ? '' : `${prefix}-`}tasks-table` },
      h('caption', {}, 'Tasks'),
      h('thead', {}, h('tr', {}, ['Task', 'Category', 'Train', 'Test'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, tasks.map((t) => h('tr', {},
        h('th', { scope: 'row' }, t.id),
        h('td', {}, t.category ?? ''),
        h('td', { class: 'num' }, t.n_train ?? ''),
        h('td', { class: 'num' }, t.n_test ?? '')))))));
  for (const regime of regimes) {
    parts.push(h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': `Per-task MCC, ${regimeLabel(regime)}` },
      h('table', {},
        h('caption', {}, `Per-task MCC — ${regimeLabel(regime)}`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Task'), models.map((m) => h('th', { scope: 'col' }, m)))),
        h('tbody', {}, tasks.map((t) => h('tr', {},
          h('th', { scope: 'row' }, t.id),
          submissions.map((s) => {
            const r = s.results?.[regime]?.[t.id];
            return h('td', { class: 'num', title: r ? `Acc ${fmt(r.Acc)} · F1 ${fmt(r.F1)}` : null }, fmt(r?.MCC));
          })))))));
  }
  return h('details', { class: 'tasks' }, parts);
}
