// The official GENEB tasks in the page: a picker over the 100 catalogued tasks (grouped by
// category in the published order, with the named suites), which says what it will download from
// the hub and how big before it starts, fetches each task's train/test tables at the catalogue's
// pinned revision with byte progress, verifies and keeps them (www/hub.js), and hands them to the
// page's task files as `<id>/train.csv` + `<id>/test.csv` (the core knows each id's category).
// Also the credits of the committed offline real-genome suite, which app.js runs.

import { coreFacts, onCoreFacts } from './core-facts.js';
import { bytesText, h, messageOf } from './dom.js';
import {
  bundle, cachedManifests, confirmPlan, downloadAll, fromCache, hubEndpoint, plannedBytes, probe, store,
  verificationNote,
} from './hub.js';

/** Served by scripts/serve.mjs from this page's own origin: no request leaves for the list. */
const CATALOGUE_URL = 'tasks/catalogue/geneb-catalogue.json';
export const OFFLINE_MANIFEST = 'tasks/offline/tasks.json';
const CACHE_NAME = 'geneb-tasks-v1';

/** Tables past this, all together, will not fit beside their copies in a tab's 4 GiB. */
const TAB_TABLE_LIMIT = 2 ** 30;

let ctx = null; // {addTaskFiles}
let catalogue = null;
const ui = {};

function say(node, text, { error = false } = {}) {
  node.textContent = text;
  node.hidden = !text;
  node.classList.toggle('error', error);
}

/**
 * What a tab can hold, from the core's own budget (src/eval.rs EMBEDDING_BUDGET, via
 * www/core-facts.js): a larger task is refused with advice rather than trap the tab.
 */
function limitText({ embeddingBudget: budget, embeddingValueBytes: bytes }) {
  const maxRows = (dim) => Math.floor(budget / (dim * bytes)).toLocaleString('en');
  return `A tab holds at most ${budget / 2 ** 30} GiB of embeddings per task (rows × dimensions × ${bytes} bytes): `
    + `${maxRows(1024)} sequences for kmer:5 (1,024 dimensions), `
    + `${maxRows(4096)} for kmer:6, ${maxRows(768)} for a 768-dimensional model; `
    + `the run refuses a larger task with a message. Tables above ${bytesText(TAB_TABLE_LIMIT)} in all do not fit in a tab: use the CLI (geneb eval --suite …).`;
}

/** [{name, about, tasks}]: the core's named suites (geneb, geneb-lite, then one per category). */
function suites() {
  return coreFacts()?.suites ?? [];
}

/** The suite buttons, once both the catalogue and the core's suites are in. */
function renderSuites() {
  if (!catalogue) return;
  ui.suites.replaceChildren(...suites().map((s) => h('button', {
    type: 'button', class: 'linkish', 'data-suite': s.name, 'data-testid': `suite-${s.name.replace(':', '-')}`, title: s.about,
  }, `${s.name} (${s.tasks.length})`)));
}

function taskBundle(task) {
  const dir = task.files.train.replace(/\/[^/]+$/, '');
  return bundle(hubEndpoint(), `datasets/${task.hf_dataset}`, task.revision, { dir, label: task.id });
}

const fileName = (path) => path.split('/').pop();

function checkboxes() {
  return [...ui.list.querySelectorAll('input[name=geneb-task]')];
}

function chosenTasks() {
  const ids = new Set(checkboxes().filter((b) => b.checked).map((b) => b.value));
  return catalogue.tasks.filter((t) => ids.has(t.id));
}

function updateChosen() {
  const n = chosenTasks().length;
  ui.fetch.disabled = n === 0;
  ui.fetch.textContent = n ? `Get ${n} task${n === 1 ? '' : 's'}` : 'Get the chosen tasks';
}

function chooseSuite(ids) {
  const wanted = new Set(ids);
  for (const b of checkboxes()) b.checked = wanted.has(b.value);
  updateChosen();
}

function taskRow(t) {
  const id = `geneb-task-${t.id.replace(/[^a-z0-9]+/gi, '-')}`;
  const facts = [
    t.source,
    t.species ?? 'species not confirmed',
    t.n_classes ? `${t.n_classes} classes` : 'classes not confirmed',
    `licence: ${t.licence ?? 'not confirmed'}`,
  ].join(' · ');
  return h('li', { class: 'choice task-choice', 'data-testid': 'geneb-task', 'data-task-id': t.id },
    h('input', { type: 'checkbox', name: 'geneb-task', value: t.id, id }),
    h('div', {},
      h('label', { for: id }, h('span', { class: 'model-name' }, t.label), ' ', h('code', {}, t.id),
        h('span', { class: 'tag cached-tag', 'data-testid': 'task-cached', hidden: true }, ' kept in this browser')),
      h('p', { class: 'model-desc' }, facts),
      h('p', { class: 'model-desc cite' }, t.citation)));
}

function render() {
  renderSuites();
  ui.list.replaceChildren(...catalogue.categories.map((c) => {
    const tasks = catalogue.tasks.filter((t) => t.category === c);
    return h('details', { class: 'task-category', 'data-testid': 'task-category', 'data-category': c },
      h('summary', {}, `${c} (${tasks.length})`),
      h('ul', { class: 'choices' }, tasks.map(taskRow)));
  }));
  updateChosen();
}

async function markCached() {
  let kept = [];
  try { kept = await cachedManifests(CACHE_NAME, hubEndpoint()); } catch { kept = []; }
  const have = new Set(kept.map((m) => `${m.id}@${m.rev}`));
  for (const row of ui.list.querySelectorAll('[data-testid="geneb-task"]')) {
    const t = catalogue.tasks.find((x) => x.id === row.dataset.taskId);
    row.querySelector('.cached-tag').hidden = !have.has(`${t.id}@${t.revision}`);
  }
}

/** What must be downloaded for `tasks` not kept yet: [{task, bundle, files}]. */
async function plan(tasks) {
  const out = [];
  for (const task of tasks) {
    const b = taskBundle(task);
    const files = [];
    for (const path of [task.files.train, task.files.test]) {
      const f = await probe(b, fileName(path));
      if (!f) throw new Error(`${task.id}: ${fileName(path)} is not on ${b.endpoint} at revision ${task.revision}`);
      files.push(f);
    }
    out.push({ task, bundle: b, files });
  }
  return out;
}

function asEntries(task, files) {
  return files.map((f) => ({ path: `${task.id}/${f.name}`, file: new File([f.blob], f.name, { type: 'text/csv' }) }));
}

async function onFetch() {
  say(ui.error, '');
  const tasks = chosenTasks();
  ui.fetch.disabled = true;
  try {
    const entries = [];
    const missing = [];
    for (const task of tasks) {
      const kept = await fromCache(CACHE_NAME, taskBundle(task));
      if (kept) entries.push(...asEntries(task, kept.files));
      else missing.push(task);
    }
    let downloadedNote = '';
    if (missing.length) {
      say(ui.status, `asking ${hubEndpoint()} for the sizes of ${missing.length} task${missing.length === 1 ? '' : 's'}…`);
      const planned = await plan(missing);
      const files = planned.flatMap((p) => p.files.map((f) => ({ ...f, name: `${p.task.id}/${f.name}` })));
      const total = plannedBytes(files);
      say(ui.status, 'confirm the download');
      const agreed = await confirmPlan(ui.plan, {
        summary: `${missing.length} GENEB task${missing.length === 1 ? '' : 's'} from ${hubEndpoint()}/datasets/${missing[0].hf_dataset} `
          + `at revision ${missing[0].revision.slice(0, 12)}: ${files.length} tables, ${bytesText(total)} in all`
          + `${entries.length ? ` (${entries.length / 2} more already kept in this browser)` : ''}.`,
        files, total,
        warning: total > TAB_TABLE_LIMIT
          ? `${bytesText(total)} is more than this tab can hold (${bytesText(TAB_TABLE_LIMIT)} of tables): choose fewer or smaller tasks, or use the CLI.`
          : ui.limit.textContent,
      });
      if (!agreed) { say(ui.status, 'download cancelled'); return; }
      ui.progress.hidden = false;
      ui.progress.max = total || 1;
      let before = 0;
      const notes = [];
      for (const p of planned) {
        const got = await downloadAll(p.bundle, p.files, (done, name) => {
          ui.progress.value = before + done;
          say(ui.status, `downloading ${p.task.id}/${name}: ${bytesText(before + done)} of ${bytesText(total)}`);
        });
        before += got.reduce((s, f) => s + f.blob.size, 0);
        await store(CACHE_NAME, p.bundle, got, { id: p.task.id, rev: p.task.revision });
        notes.push(`${p.task.id}: ${verificationNote(got)}`);
        entries.push(...asEntries(p.task, got));
      }
      downloadedNote = ` Downloaded ${bytesText(total)} and kept it for offline use (${notes.join('; ')}).`;
    }
    ctx.addTaskFiles(entries);
    say(ui.status, `Added ${tasks.length} GENEB task${tasks.length === 1 ? '' : 's'} to your task files`
      + `${missing.length < tasks.length ? `, ${tasks.length - missing.length} from this browser's cache` : ''}.${downloadedNote}`
      + ' Choose encoders and regimes, then Run.');
    markCached();
  } catch (err) {
    say(ui.status, '');
    say(ui.error, messageOf(err), { error: true });
  } finally {
    ui.progress.hidden = true;
    updateChosen();
  }
}

function offlineCredits(manifest) {
  const tasks = Array.isArray(manifest?.tasks) ? manifest.tasks : [];
  return h('details', { class: 'offline-credits', 'data-testid': 'offline-credits' },
    h('summary', {}, `The offline real-genome suite: ${tasks.length} tasks, sources and licences`),
    h('p', { class: 'hint' }, 'Built from pinned registry packages by tasks/build_offline.py; committed, so it runs with no download. '
      + 'Tasks marked synthetic plant motifs from JASPAR profiles in real background sequence.'),
    h('ul', {}, tasks.map((t) => h('li', { 'data-testid': 'offline-task' },
      h('span', { class: 'model-name' }, t.label), ` (${t.category}${t.synthetic ? ', synthetic' : ''}) `, h('code', {}, t.id),
      h('p', { class: 'model-desc' }, (t.packages ?? []).map((p) => `${p.name} ${p.version} (${p.licence}, ${p.registry})`).join('; ')),
      h('p', { class: 'model-desc cite' }, t.citation ?? '')))));
}

async function fetchJson(url) {
  const res = await fetch(new URL(url, document.baseURI), { cache: 'no-cache' });
  if (!res.ok) throw new Error(`${url}: not available from this server (HTTP ${res.status})`);
  return res.json();
}

/** Mount the picker into `root`; `addTaskFiles([{path, file}])` adds tables to the page's task files. */
export async function initTasks(root, { addTaskFiles }) {
  ctx = { addTaskFiles };
  ui.suites = h('div', { class: 'suites', 'data-testid': 'task-suites' });
  ui.limit = h('p', { class: 'hint', 'data-testid': 'tasks-limit' });
  ui.summary = h('summary', {}, 'GENEB tasks: the official tasks from the hub');
  ui.list = h('div', { class: 'task-list', 'data-testid': 'geneb-tasks' });
  ui.fetch = h('button', { type: 'button', 'data-testid': 'tasks-fetch', disabled: true }, 'Get the chosen tasks');
  ui.plan = h('div', {});
  ui.progress = h('progress', { 'data-testid': 'tasks-progress', max: 1, value: 0, hidden: true, 'aria-label': 'Task download progress' });
  ui.status = h('p', { class: 'hint', 'data-testid': 'tasks-status', role: 'status', 'aria-live': 'polite', hidden: true });
  ui.error = h('p', { class: 'error', 'data-testid': 'tasks-error', role: 'alert', hidden: true });
  const credits = h('div', {});
  root.append(
    h('details', { class: 'geneb-picker', 'data-testid': 'geneb-picker' },
      ui.summary,
      h('p', { class: 'hint' }, 'Tick tasks or a suite; nothing is downloaded until you confirm the plan. '
        + 'Tables come from the Hugging Face dataset at the pinned revision, are sha256-checked where the hub gives a hash, and are kept in this browser for offline use.'),
      ui.limit,
      h('p', { class: 'hint' }, 'Suites: ', ui.suites),
      ui.list,
      h('div', { class: 'buttons' }, ui.fetch),
      ui.plan, ui.progress, ui.status, ui.error,
      h('p', { class: 'credit' }, 'Task list, categories and the packaged tables (darlednik/geneb-tasks, Apache-2.0) by the GENEB authors, '
        + 'Daria Ledneva, Mikhail Nuridinov and Denis Kuznetsov: please cite “GENEB: Why Genomic Models Are Hard to Compare”, arXiv:2606.04525, '
        + 'and each task\'s upstream source as listed; each task\'s licence is its source\'s.')),
    credits);
  ui.suites.addEventListener('click', (e) => {
    const name = e.target?.dataset?.suite;
    if (name) chooseSuite(suites().find((s) => s.name === name).tasks);
  });
  ui.list.addEventListener('change', updateChosen);
  ui.fetch.addEventListener('click', onFetch);
  onCoreFacts((facts) => {
    ui.summary.textContent = `GENEB tasks: the ${facts.officialTasks} official tasks from the hub`;
    ui.limit.textContent = limitText(facts);
    renderSuites();
  });
  const [cat, offline] = await Promise.allSettled([fetchJson(CATALOGUE_URL), fetchJson(OFFLINE_MANIFEST)]);
  if (cat.status === 'fulfilled') {
    catalogue = cat.value;
    render();
    markCached();
  } else {
    say(ui.error, messageOf(cat.reason), { error: true });
  }
  credits.replaceWith(offline.status === 'fulfilled'
    ? offlineCredits(offline.value)
    : h('p', { class: 'error' }, messageOf(offline.reason)));
}
