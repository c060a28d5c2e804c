// Saved results and their comparison. Every finished run is kept in this browser (store.js);
// the list shows model, tasks and date, with checkboxes to compare, export or delete several.
// Result files (one submission, or the page's download) can be imported. The comparison asks
// the wasm core for the report (profile, intervals, ranks, plots, HTML, CSV) and offers every
// part of it for download. Nothing leaves the tab.

import { downloadBlob, downloadText, h, messageOf, plural } from './dom.js';
import { analysisSections } from './analysis-view.js';
import { renderProfile } from './profile-view.js';
import { deleteResults, listResults, saveSubmissions } from './store.js';

const $ = (sel) => document.querySelector(sel);

let el = null;
let hooks = null; // {requestReport(files, {maxParams, costBudget}) → Promise<report>, modelName(spec) → string}
const lib = {
  records: [], // newest first
  selected: new Set(), // record ids
  busy: false, // a run or a comparison is in progress
  comparison: null, // {records, report}
  maxParams: null, // the recommendations' parameter budget, when the user set one
  costBudget: {}, // their time and memory budget: {maxSecondsPer1kSeqs?, maxMemoryBytes?}
};

// ---------------------------------------------------------------------------------------------
// The list

function dateText(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

function computeText(backend) {
  if (!backend || !backend.kind) return '—';
  if (backend.kind === 'cpu') return 'CPU';
  return backend.adapter ? `WebGPU (${backend.adapter})` : 'WebGPU';
}

function tasksText(tasks) {
  const shown = tasks.slice(0, 3).join(', ');
  return tasks.length > 3 ? `${shown}, … (${tasks.length - 3} more)` : shown;
}

/** How a result came here ("import: <file>" is shown as it is). */
const SOURCE_TEXT = { run: 'run here', demo: 'demo run here' };

function recordLabel(r) {
  return `${r.model}, ${plural(r.tasks.length, 'task')}, ${dateText(r.date)}`;
}

function renderList() {
  el.rows.textContent = '';
  for (const r of lib.records) {
    const box = h('input', {
      type: 'checkbox', class: 'select-result', checked: lib.selected.has(r.id),
      'aria-label': `Select ${recordLabel(r)}`,
      onchange: (e) => {
        if (e.target.checked) lib.selected.add(r.id); else lib.selected.delete(r.id);
        updateLibraryControls();
      },
    });
    el.rows.append(h('tr', { 'data-testid': 'saved-result', 'data-model': r.model },
      h('td', { class: 'pick' }, box),
      h('th', { scope: 'row' }, h('code', {}, r.model),
        hooks.modelName(r.model) ? h('span', { class: 'model-sub' }, hooks.modelName(r.model)) : null),
      h('td', {}, plural(r.tasks.length, 'task'), h('span', { class: 'model-sub task-ids' }, tasksText(r.tasks))),
      h('td', {}, r.regimes.join(', ')),
      h('td', { class: 'when' }, h('time', { datetime: r.date }, dateText(r.date))),
      h('td', {}, computeText(r.backend)),
      h('td', {}, SOURCE_TEXT[r.source] ?? r.source)));
  }
  el.table.hidden = lib.records.length === 0;
  updateLibraryControls();
}

function updateLibraryControls() {
  // Forget selections of records that are gone.
  const ids = new Set(lib.records.map((r) => r.id));
  for (const id of lib.selected) if (!ids.has(id)) lib.selected.delete(id);
  const n = lib.selected.size;
  const total = lib.records.length;
  el.selectAll.checked = total > 0 && n === total;
  el.selectAll.indeterminate = n > 0 && n < total;
  el.selectAll.disabled = total === 0;
  el.compare.disabled = lib.busy || n === 0;
  el.export.disabled = n === 0;
  el.delete.disabled = lib.busy || n === 0;
  el.summary.textContent = total === 0
    ? 'No saved results yet. Finished runs are kept here, in this browser only.'
    : `${plural(total, 'saved result')}${n ? `, ${n} selected` : ''}.`;
}

async function refresh() {
  try {
    lib.records = await listResults();
  } catch (err) {
    lib.records = [];
    showLibraryError(`Saved results are unavailable: ${messageOf(err)}`);
  }
  renderList();
}

function showLibraryError(message) {
  el.error.textContent = message;
  el.error.hidden = !message;
}

function say(message) {
  showLibraryError('');
  el.notice.textContent = message;
}

function selectedRecords() {
  return lib.records.filter((r) => lib.selected.has(r.id));
}

// ---------------------------------------------------------------------------------------------
// Saving, importing, exporting, deleting

/** Keep a finished run's submissions; says how many were saved. */
export async function saveRun(submissions, { backend, source }) {
  try {
    const { added } = await saveSubmissions(submissions, { source, backend });
    await refresh();
    say(added.length ? `Saved ${plural(added.length, 'result')} in this browser.` : 'This result was already saved.');
  } catch (err) {
    showLibraryError(`The run could not be saved in this browser: ${messageOf(err)}`);
  }
}

/**
 * The submissions in one result file: a GENEB submission, or the page's download
 * `{"submissions": [...]}`. The core checks them fully when they are compared.
 */
function submissionsIn(name, text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${name}: not valid JSON (${messageOf(err)}); choose a result file from geneb`);
  }
  const list = Array.isArray(value?.submissions) ? value.submissions : [value];
  if (!list.length) throw new Error(`${name}: lists no submission`);
  list.forEach((sub, i) => {
    const where = list.length > 1 ? `${name}: submission ${i + 1}` : name;
    const ok = sub && typeof sub === 'object' && typeof sub.schema_version === 'string'
      && typeof sub.model_id === 'string' && sub.meta && typeof sub.meta === 'object'
      && sub.results && typeof sub.results === 'object';
    if (!ok) {
      throw new Error(`${where}: not a GENEB result file (a submission JSON or the page's download): `
        + 'expected schema_version, model_id, meta and results');
    }
  });
  return list;
}

async function onImport() {
  const files = [...el.importInput.files];
  el.importInput.value = '';
  if (!files.length) return;
  const problems = [];
  let added = 0;
  let duplicates = 0;
  for (const file of files) {
    try {
      const subs = submissionsIn(file.name, await file.text());
      const r = await saveSubmissions(subs, { source: `import: ${file.name}`, date: new Date(file.lastModified || Date.now()) });
      added += r.added.length;
      duplicates += r.duplicates;
    } catch (err) {
      problems.push(messageOf(err));
    }
  }
  await refresh();
  el.notice.textContent = `Imported ${plural(added, 'result')}${duplicates ? ` (${duplicates} already saved)` : ''}.`;
  showLibraryError(problems.join('\n'));
}

function onExport() {
  const records = selectedRecords();
  if (!records.length) return;
  const submissions = records.map((r) => r.submission);
  downloadText(`${JSON.stringify({ submissions }, null, 2)}\n`, `geneb-results-${records.length}.json`, 'application/json');
  say(`Exported ${plural(records.length, 'result')} as one file (geneb profile reads it).`);
}

function onDeleteClick() {
  const records = selectedRecords();
  if (!records.length) return;
  el.confirmText.textContent = `Delete ${plural(records.length, 'saved result')} from this browser? `
    + `${records.map((r) => r.model).join(', ')}. This cannot be undone; export them first to keep a copy.`;
  el.confirm.returnValue = '';
  el.confirm.showModal();
}

async function onConfirmClose() {
  if (el.confirm.returnValue !== 'delete') {
    el.delete.focus();
    return;
  }
  const ids = selectedRecords().map((r) => r.id);
  try {
    await deleteResults(ids);
  } catch (err) {
    showLibraryError(`Could not delete: ${messageOf(err)}`);
    return;
  }
  if (lib.comparison?.records.some((r) => ids.includes(r.id))) closeComparison();
  await refresh();
  say(`Deleted ${plural(ids.length, 'result')}.`);
  el.summary.focus();
}

// ---------------------------------------------------------------------------------------------
// The comparison

/** Ask the core for the report on `records` and show it; false when it failed. */
async function compare(records) {
  if (!records.length || lib.busy) return false;
  showLibraryError('');
  let report;
  try {
    const files = records.map((r) => ({ name: `${r.model} (${r.source}, ${r.date})`, text: JSON.stringify(r.submission) }));
    report = await hooks.requestReport(files, { maxParams: lib.maxParams, costBudget: lib.costBudget });
  } catch (err) {
    if (!err?.cancelled) showLibraryError(`The comparison failed: ${messageOf(err)}`);
    return false;
  }
  lib.comparison = { records, report };
  renderComparison();
  el.compareSection.hidden = false;
  return true;
}

async function onCompare() {
  if (await compare(selectedRecords())) el.compareHeading.focus();
}

/** A budget field's positive number, null when empty; throws the user's message otherwise. */
function budgetNumber(input, what, unit) {
  const text = input.value.trim();
  if (!text) return null;
  const value = Number(text);
  if (!(Number.isFinite(value) && value > 0)) {
    throw new Error(`${what}: "${text}" is not a positive number of ${unit}; leave it empty for no limit`);
  }
  return value;
}

/**
 * The recommendations under a new budget: parameters (millions), seconds per 1,000 sequences,
 * peak memory (GB); an empty field is no limit.
 */
async function onBudgetSubmit(event) {
  event.preventDefault();
  let millions, seconds, gigabytes;
  try {
    millions = budgetNumber(el.budget, 'Parameter budget', 'millions');
    seconds = budgetNumber(el.timeBudget, 'Time budget', 'seconds per 1,000 sequences');
    gigabytes = budgetNumber(el.memoryBudget, 'Memory budget', 'GB');
  } catch (err) {
    showLibraryError(err.message);
    return;
  }
  lib.maxParams = millions === null ? null : Math.round(millions * 1e6);
  lib.costBudget = {
    maxSecondsPer1kSeqs: seconds,
    maxMemoryBytes: gigabytes === null ? null : Math.round(gigabytes * 1e9),
  };
  if (lib.comparison) await compare(lib.comparison.records);
  el.budget.focus();
}

function closeComparison() {
  lib.comparison = null;
  el.compareSection.hidden = true;
  el.compareBody.textContent = '';
}

/**
 * An SVG from the core, as a node of this document. The core escapes every name in it
 * (src/report/svg.rs); should markup slip through anyway, nothing that could run or load is
 * kept: no scripts, foreign HTML, links or event-handler attributes (the CSP would block them,
 * and report each).
 */
function svgNode(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const root = doc.documentElement;
  if (root.nodeName !== 'svg') throw new Error('the core returned a plot that is not SVG');
  for (const node of root.querySelectorAll('script, foreignObject, a, iframe, image, use')) node.remove();
  for (const node of [root, ...root.querySelectorAll('*')]) {
    for (const { name } of [...node.attributes]) {
      if (/^on/i.test(name) || /(^|:)href$/i.test(name)) node.removeAttribute(name);
    }
  }
  return document.importNode(root, true);
}

/** Draw an SVG on a canvas at twice its size and download it as PNG. */
async function downloadPng(svgText, name) {
  const url = URL.createObjectURL(new Blob([svgText], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const scale = 2;
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(img.naturalWidth * scale));
    canvas.height = Math.max(1, Math.round(img.naturalHeight * scale));
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = '#ffffff'; // a plot on a transparent background is unreadable in dark viewers
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    const png = await new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('the browser could not encode the PNG'))), 'image/png'));
    downloadBlob(png, name);
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Plots in reading order: the profile, by layer, how it reorders, how it degrades, size against score. */
const PLOT_ORDER = [/^heatmap_full/, /^heatmap_10/, /^heatmap_1/, /^heatmap/, /^layers/, /^rank/, /degradation/,
  /^params.*full/, /^params.*_10/, /^params/];

function plotOrder(name) {
  const i = PLOT_ORDER.findIndex((re) => re.test(name));
  return i < 0 ? PLOT_ORDER.length : i;
}

function fileStem(text) {
  return String(text).replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^_+|_+$/g, '') || 'result';
}

function downloadButton(label, testId, onclick, describedBy) {
  return h('button', { type: 'button', class: 'small', 'data-testid': testId, onclick, 'aria-describedby': describedBy }, label);
}

function renderComparison() {
  const { records, report } = lib.comparison;
  const submissions = records.map((r) => r.submission);
  el.compareBody.textContent = '';
  const models = records.map((r) => r.model);
  el.compareSummary.textContent = `${plural(records.length, 'result')}: ${models.join(', ')}.`;

  el.compareBody.append(h('div', { class: 'downloads' },
    h('button', {
      type: 'button', class: 'primary', 'data-testid': 'download-report',
      onclick: () => downloadText(report.html, 'geneb-report.html', 'text/html'),
    }, 'HTML report (one file, opens offline)')));
  // One button per file: browsers hold back several downloads started by one click.
  const fileButtons = (key, type) => Object.keys(report[key] ?? {}).map((name) =>
    downloadButton(name, `download-${key}-${name}`, () => downloadText(report[key][name], name, type)));
  const official = fileButtons('official', 'application/json');
  if (official.length) {
    el.compareBody.append(h('div', { class: 'downloads', role: 'group', 'aria-labelledby': 'official-h' },
      h('span', { id: 'official-h', class: 'downloads-label' }, 'Submissions for the GENEB leaderboard:'), official));
  }
  const csv = fileButtons('csv', 'text/csv');
  if (csv.length) {
    el.compareBody.append(h('details', { class: 'csv-files', 'data-testid': 'csv-files' },
      h('summary', {}, `Every table as CSV (${plural(csv.length, 'file')})`),
      h('div', { class: 'downloads' }, csv)));
  }

  const tables = h('div', { class: 'profile', 'data-testid': 'compare-profile' });
  renderProfile(tables, report.analysis, submissions, { prefix: 'compare', modelName: hooks.modelName, analysis: report.analysis });
  el.compareBody.append(tables, ...analysisSections(report.analysis, { maxParams: lib.maxParams }));

  const svgNames = Object.keys(report.svg ?? {}).sort((a, b) => plotOrder(a) - plotOrder(b) || a.localeCompare(b));
  if (svgNames.length) {
    const plots = h('div', { class: 'plots', 'data-testid': 'plots' });
    for (const name of svgNames) {
      const id = `plot-${fileStem(name)}`;
      const stem = name.replace(/\.svg$/i, '');
      let figureBody;
      let title = stem;
      try {
        const svg = svgNode(report.svg[name]);
        title = svg.querySelector(':scope > title')?.textContent || stem;
        figureBody = h('div', { class: 'plot', 'data-testid': `plot-${stem}` }, svg);
      } catch (err) {
        figureBody = h('p', { class: 'error-message' }, `${name}: ${messageOf(err)}`);
      }
      plots.append(h('figure', { class: 'plot-figure', 'aria-labelledby': `${id}-cap` },
        figureBody,
        h('figcaption', { id: `${id}-cap` }, h('span', {}, title, ' ', h('code', {}, name)),
          downloadButton('SVG', `download-svg-${stem}`, () => downloadText(report.svg[name], name, 'image/svg+xml'), `${id}-cap`),
          downloadButton('PNG', `download-png-${stem}`, () => downloadPng(report.svg[name], `${stem}.png`)
            .catch((err) => showLibraryError(`${stem}.png: ${messageOf(err)}`)), `${id}-cap`))));
    }
    el.compareBody.append(h('h3', {}, 'Plots'), plots);
  }
  el.compareBody.append(h('p', { class: 'hint' },
    'Every number here comes from the geneb core: `geneb profile` prints the same for these results.'));
}

// ---------------------------------------------------------------------------------------------
// Wiring

/** Draw the list again (the encoders' names arrive with the core). */
export function redrawLibrary() {
  if (el) renderList();
}

/** While a run or a comparison is in progress, no new comparison and no deletion. */
export function setLibraryBusy(busy) {
  lib.busy = busy;
  if (el) updateLibraryControls();
}

export function initLibrary(options) {
  hooks = options;
  el = {
    rows: $('#saved-rows'),
    table: $('#saved-table'),
    selectAll: $('#select-all-results'),
    compare: $('#compare-selected'),
    export: $('#export-selected'),
    delete: $('#delete-selected'),
    importInput: $('#import-results'),
    summary: $('#library-summary'),
    notice: $('#library-notice'),
    error: $('#library-error'),
    confirm: $('#confirm-delete'),
    confirmText: $('#confirm-delete-text'),
    compareSection: $('#compare'),
    compareHeading: $('#h-compare'),
    compareSummary: $('#compare-summary'),
    compareBody: $('#compare-body'),
    compareClose: $('#compare-close'),
    budgetForm: $('#budget-form'),
    budget: $('#param-budget'),
    timeBudget: $('#time-budget'),
    memoryBudget: $('#memory-budget'),
  };
  el.selectAll.addEventListener('change', () => {
    lib.selected = el.selectAll.checked ? new Set(lib.records.map((r) => r.id)) : new Set();
    renderList();
  });
  el.compare.addEventListener('click', onCompare);
  el.export.addEventListener('click', onExport);
  el.delete.addEventListener('click', onDeleteClick);
  el.importInput.addEventListener('change', onImport);
  el.confirm.addEventListener('close', onConfirmClose);
  for (const button of el.confirm.querySelectorAll('button[value]')) {
    button.addEventListener('click', () => el.confirm.close(button.value));
  }
  el.compareClose.addEventListener('click', () => { closeComparison(); el.compare.focus(); });
  el.budgetForm.addEventListener('submit', onBudgetSubmit);
  return refresh();
}
