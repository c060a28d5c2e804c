// The statistics of a comparison, as the core's report computes them: which model to pick per
// category and label budget, paired tests between models, which layer of a model is best, how
// rankings reorder under few-shot regimes, parameter count against score, and the notes on what
// could not be computed.
// Rendering only: every number comes from the wasm core.

import { fmt, h } from './dom.js';
import { regimeLabel } from './core-facts.js';

function paramsText(n) {
  if (!Number.isFinite(n) || n <= 0) return 'unknown';
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}B`;
  if (n >= 1e6) return `${Math.round(n / 1e6)}M`;
  return `${Math.round(n / 1e3)}K`;
}

const interval = (lo, hi) => `[${fmt(lo)}, ${fmt(hi)}]`;

/** A captioned table in a scrolling box; `rows` are arrays of cells (text or nodes). */
function table({ caption, testId, head, rows, numeric = [] }) {
  return h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption },
    h('table', { 'data-testid': testId },
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, head.map((c, i) => h('th', { scope: 'col', class: numeric.includes(i) ? 'num' : 'text' }, c)))),
      h('tbody', {}, rows.map((cells) => h('tr', {},
        cells.map((c, i) => (i === 0
          ? h('th', { scope: 'row' }, c)
          : h('td', { class: numeric.includes(i) ? 'num' : null }, c))))))));
}

function section(id, title, intro, ...body) {
  return h('section', { class: 'analysis', 'aria-labelledby': id },
    h('h3', { id }, title), intro ? h('p', { class: 'hint' }, intro) : null, ...body);
}

const modelCell = (name, published) => [h('code', {}, name), published ? h('span', { class: 'badge' }, 'published') : null];

/** The budget the core applied (`analysis.cost_budget`, src/profile/budget.rs) in words. */
function costLimits(cost) {
  return [
    cost?.max_seconds_per_1k_seqs ? `at most ${cost.max_seconds_per_1k_seqs} s per 1,000 sequences` : null,
    cost?.max_memory_bytes ? `at most ${(cost.max_memory_bytes / 1e9).toFixed(1)} GB of peak memory` : null,
  ].filter(Boolean);
}

function recommendations(list, maxParams, cost) {
  if (!list.length) return null;
  const costs = costLimits(cost);
  const limits = [maxParams ? `at most ${paramsText(maxParams)} parameters` : null, ...costs].filter(Boolean);
  const budget = limits.length ? `with ${limits.join(', ')}` : 'of any size';
  // Results without a measured cost are never silently kept or dropped: the rule is said here,
  // and each row's note names the models it left out.
  const rule = costs.length
    ? ' A time or memory budget picks among results with a measured cost (protocol.cost): published '
      + 'rows and results without one (older files, or embeddings all from the cache) are left out.'
    : '';
  return section('an-recommend', 'Which model for your category and label budget',
    `The best-scoring model per category and regime ${budget}, among your results and the published `
    + `GENEB leaderboard (published rows are marked; credit: the GENEB authors).${rule}`,
    table({
      caption: 'Recommendations',
      testId: 'recommendations',
      head: ['Category', 'Regime', 'Best model', 'Parameters', 'MCC', 'Your best (place)', 'Note'],
      numeric: [3, 4],
      rows: list.map((r) => [
        r.category, regimeLabel(r.regime), modelCell(r.model, r.published), paramsText(r.params), fmt(r.mcc),
        r.yours ? `${r.yours.model}: ${fmt(r.yours.mcc)} (${r.yours.place} of ${r.candidates}${r.yours.comparable ? '' : ', other tasks'})` : '—',
        r.note ?? '',
      ]),
    }));
}

function paired(list) {
  if (!list.length) return null;
  return section('an-paired', 'Is the difference real? Paired bootstrap per category',
    'Δ = A − B in category MCC on the same test examples; the 95 % interval and two-sided p come from '
    + 'resampling those examples. An interval that excludes 0 is evidence that A and B differ.',
    table({
      caption: 'Paired comparisons',
      testId: 'paired',
      head: ['Category', 'Regime', 'A − B', 'Δ MCC', '95 % interval', 'p', 'Tasks'],
      numeric: [3, 4, 5, 6],
      rows: list.map((p) => [
        p.category, regimeLabel(p.regime), `${p.a} − ${p.b}`, fmt(p.delta), interval(p.lo, p.hi),
        Number.isFinite(p.p) ? p.p.toFixed(3) : '—', p.n_tasks,
      ]),
    }));
}

/**
 * Which layer of a model to probe (src/profile/layers.rs): per model, each category's best
 * hidden state and its gain over the last with the paired test, then each layer's MCC with its
 * interval (the numbers of the report's MCC-by-layer plots). `prefix` keeps ids and test ids
 * unique where a second view is on the page (the latest run's own, www/app.js).
 */
function layers(list, prefix = '') {
  if (!list.length) return null;
  const gain = (c) => (c.gain == null ? 'last layer not run' : fmt(c.gain));
  return section(`${prefix}an-layers`, 'Which layer?',
    'Models probed at several hidden states (0 = the embeddings’ output): each category’s best layer, and its gain '
    + 'in MCC over the last layer (the one GENEB probes) with the 95 % interval and two-sided p of the paired bootstrap.',
    ...list.flatMap((m) => [table({
      caption: `${m.model}: best layer per category (layers 0–${m.last_layer})`,
      testId: `${prefix}layer-gain`,
      head: ['Category', 'Regime', 'Best layer', 'MCC', 'Last layer’s MCC', 'Gain', '95 % interval', 'p'],
      numeric: [2, 3, 4, 5, 6, 7],
      rows: m.regimes.flatMap((r) => r.categories.map((c) => {
        const best = c.layers.find((l) => l.layer === c.best_layer);
        const last = c.layers.find((l) => l.layer === m.last_layer);
        return [
          c.category, regimeLabel(r.regime), c.best_layer, fmt(best?.mcc), last ? fmt(last.mcc) : '—', gain(c),
          c.test ? interval(c.test.lo, c.test.hi) : '—', c.test ? c.test.p.toFixed(3) : '—',
        ];
      })),
    }), mccByLayer(m, prefix)]));
}

/** One model's MCC [95 % interval] per layer run, a row per category and regime. */
function mccByLayer(m, prefix) {
  const run = [...new Set(m.regimes.flatMap((r) => r.categories.flatMap((c) => c.layers.map((l) => l.layer))))]
    .sort((a, b) => a - b);
  const score = (c, k) => {
    const l = c.layers.find((x) => x.layer === k);
    if (!l) return '—';
    return l.interval ? `${fmt(l.mcc)} ${interval(l.interval.lo, l.interval.hi)}` : fmt(l.mcc);
  };
  return table({
    caption: `${m.model}: MCC by layer [95 % interval]`,
    testId: `${prefix}layer-mcc`,
    head: ['Category', 'Regime', ...run.map((k) => `Layer ${k}`)],
    numeric: run.map((_, i) => i + 2),
    rows: m.regimes.flatMap((r) => r.categories.map((c) => [c.category, regimeLabel(r.regime), ...run.map((k) => score(c, k))])),
  });
}

/** The by-layer view alone, of the report's `analysis` (the latest run's layer sweep). */
export function layerSection(analysis, { prefix }) {
  return layers(Array.isArray(analysis?.layers) ? analysis.layers : [], prefix);
}

function reordering(list) {
  if (!list.length) return null;
  const changed = list.filter((r) => r.winner_changed).length;
  return section('an-reorder', 'Do rankings hold with few labels?',
    `The full-data winner changes in ${changed} of ${list.length} category × regime pairs. `
    + 'τ-b compares the models’ full-data order with the few-shot order (1 = the same order).',
    table({
      caption: 'Ranking changes against full data',
      testId: 'reordering',
      head: ['Category', 'Regime', 'Full-data winner', 'Winner here', 'Changed', 'Kendall τ-b', 'Models'],
      numeric: [5, 6],
      rows: list.map((r) => [
        r.category, regimeLabel(r.regime), r.winner_full, r.winner, r.winner_changed ? 'yes' : 'no',
        r.tau == null ? '—' : fmt(r.tau), r.n_models,
      ]),
    }));
}

function paramsCorrelation(list) {
  if (!list.length) return null;
  return section('an-params', 'Parameter count against macro MCC',
    'Spearman’s ρ; your models count only when their result file gives a parameter count.',
    table({
      caption: 'Spearman ρ between parameter count and macro MCC',
      testId: 'params-correlation',
      head: ['Regime', 'Your models', 'With the published models'],
      numeric: [1, 2],
      rows: list.map((c) => [
        regimeLabel(c.regime),
        c.yours == null ? `— (${c.n_yours} with a count)` : `${fmt(c.yours)} (n = ${c.n_yours})`,
        c.with_published == null ? '—' : `${fmt(c.with_published)} (n = ${c.n_with_published})`,
      ]),
    }));
}

/**
 * Your models among the published leaderboard, one folded table per regime. A score of yours
 * on other tasks than GENEB's for that category is marked, as it is not directly comparable.
 */
function publishedContext(list, categories) {
  if (!list.length) return null;
  const folds = list.map((ctx) => {
    const cats = [...new Set([...categories, ...ctx.rows.flatMap((r) => Object.keys(r.categories ?? {}))])];
    const rows = [...ctx.rows].sort((a, b) => b.macro - a.macro);
    const cell = (r, c) => {
      const v = r.categories?.[c];
      if (!Number.isFinite(v)) return '—';
      return r.published || r.comparable?.includes(c) ? fmt(v) : `${fmt(v)} *`;
    };
    return h('details', { class: 'published-context', 'data-testid': `published-${ctx.regime}` },
      h('summary', {}, `${regimeLabel(ctx.regime)}: your models among ${rows.filter((r) => r.published).length} published`),
      table({
        caption: `MCC per category, ${regimeLabel(ctx.regime)}; * = scored on other tasks than GENEB's, not directly comparable`,
        testId: `published-table-${ctx.regime}`,
        head: ['Model', 'Parameters', ...cats, 'Macro'],
        numeric: [1, ...cats.map((_, i) => i + 2), cats.length + 2],
        rows: rows.map((r) => [modelCell(r.model, r.published), paramsText(r.params), ...cats.map((c) => cell(r, c)), fmt(r.macro)]),
      }));
  });
  return section('an-published', 'Next to the published leaderboard',
    'Published rows: the GENEB paper’s figures (credit: the GENEB authors, arXiv 2606.04525, Apache-2.0).',
    ...folds);
}

/** The analysis sections of a report, in reading order; absent parts are left out. */
export function analysisSections(analysis, { maxParams = null } = {}) {
  const list = (key) => (Array.isArray(analysis?.[key]) ? analysis[key] : []);
  const parts = [
    recommendations(list('recommendations'), maxParams, analysis?.cost_budget),
    paired(list('paired')),
    layers(list('layers')),
    reordering(list('reordering')),
    paramsCorrelation(list('params_vs_macro')),
    publishedContext(list('published'), Array.isArray(analysis?.categories) ? analysis.categories : []),
  ];
  const notes = list('notes');
  if (notes.length) {
    parts.push(section('an-notes', 'Notes', null,
      h('ul', { class: 'notes', 'data-testid': 'analysis-notes' }, notes.map((n) => h('li', {}, n)))));
  }
  if (analysis?.credit) parts.push(h('p', { class: 'credit hint' }, analysis.credit));
  return parts.filter(Boolean);
}
