// "1. Your tasks": the files the user chose, dropped or picked (a folder keeps only the files the
// core reads: www/core-facts.js), listed with their sizes, removable, optionally kept in this
// browser for the next visit (store.js), and read into bytes when a run starts. Nothing here
// leaves the tab.

import { bytesText, h, messageOf, plural } from './dom.js';
import { dataAccept, isDataFile, isOwnEmbeddings, onCoreFacts } from './core-facts.js';
import { whenCoreReady } from './queue.js';
import { keepTaskFiles, keptTaskFiles } from './store.js';
import { askToKeep } from './storage.js';
import { updateSplitTables } from './split.js';
import { updateAudit } from './audit.js';

const $ = (sel) => document.querySelector(sel);
const el = {};
let files = []; // [{path, file}], sorted by path
let hooks = null; // {onChange, showError, showNotice, isRunning}

/** The chosen files, [{path, file}]. */
export function taskFiles() {
  return files;
}

/** Whether the user's own embeddings (probed with no encoder) are among the files. */
export function hasOwnEmbeddings() {
  return files.some((f) => isOwnEmbeddings(f.path));
}

/** Add `entries` ([{path, file}]); a path already chosen is replaced. */
export function addTaskFiles(entries) {
  const byPath = new Map(files.map((f) => [f.path, f]));
  for (const e of entries) byPath.set(e.path, e);
  files = [...byPath.values()].sort((a, b) => a.path.localeCompare(b.path));
  renderFiles();
}

/** The chosen files' bytes for a run, [{name, bytes}]; a file moved since it was chosen says so. */
export async function readTaskFiles() {
  const out = [];
  for (const { path, file } of files) {
    try {
      out.push({ name: path, bytes: new Uint8Array(await file.arrayBuffer()) });
    } catch (err) {
      throw new Error(`${path}: could not be read (${messageOf(err)}); choose it again`);
    }
  }
  return out;
}

/** While a run reads them, the files stay as they are. */
export function setTaskFilesBusy(busy) {
  for (const input of [el.filesInput, el.folderInput, el.clearFiles, el.keepFiles]) input.disabled = busy;
}

function renderFiles() {
  el.fileList.textContent = '';
  for (const { path, file } of files) {
    el.fileList.append(h('li', {},
      h('span', { class: 'file-name', title: path }, path),
      h('span', { class: 'file-size' }, bytesText(file.size, 'KB')),
      h('button', {
        type: 'button', class: 'linkish remove', 'aria-label': `Remove ${path}`,
        onclick: () => removeFile(path),
      }, 'Remove'),
    ));
  }
  const n = files.length;
  const total = files.reduce((s, f) => s + f.file.size, 0);
  const where = el.keepFiles.checked ? 'kept in this browser' : 'read only in this tab';
  el.filesSummary.textContent = n ? `${plural(n, 'file')} chosen (${bytesText(total, 'KB')}), ${where}.` : 'No files chosen.';
  el.clearFiles.hidden = n === 0;
  if (el.keepFiles.checked) syncKeptFiles();
  updateSplitTables(files);
  updateAudit(files);
  hooks.onChange();
}

/** Mirror the file list into the browser's storage while "keep" is on. */
function syncKeptFiles() {
  keepTaskFiles(el.keepFiles.checked ? files : [])
    .then(() => (el.keepFiles.checked && files.length ? askToKeep() : undefined))
    .catch((err) => hooks.showError(`The task files could not be kept in this browser: ${messageOf(err)}`));
}

/** Bring back the files kept by an earlier visit. */
async function restoreKeptFiles() {
  let kept = [];
  try {
    kept = await keptTaskFiles();
  } catch (err) {
    hooks.showError(`The task files kept in this browser could not be read: ${messageOf(err)}`);
    return;
  }
  if (!kept.length) return;
  el.keepFiles.checked = true;
  addTaskFiles(kept);
  hooks.showNotice(`Restored ${plural(kept.length, 'task file')} kept in this browser.`);
}

/** Remove one file; focus moves to the next Remove button, else to the files summary. */
function removeFile(path) {
  const index = files.findIndex((f) => f.path === path);
  files = files.filter((f) => f.path !== path);
  renderFiles();
  const next = el.fileList.querySelectorAll('button.remove')[index];
  (next ?? el.filesSummary).focus();
}

/**
 * Of the files found in a folder, those the core reads; the others (hidden files, notes,
 * images) are counted and said. Waits for the core, which knows which files it reads.
 */
async function keepReadable(found) {
  const inFolder = found.filter((f) => f.inFolder);
  if (inFolder.length) await whenCoreReady(() => hooks.showNotice('Waiting for the WebAssembly core to load…'));
  const picked = [];
  let skipped = 0;
  for (const f of found) {
    const base = f.path.split('/').pop();
    if (f.inFolder && (base.startsWith('.') || !isDataFile(base))) skipped++;
    else picked.push({ path: f.path, file: f.file });
  }
  addTaskFiles(picked);
  hooks.showNotice(skipped ? `Skipped ${skipped} file${skipped === 1 ? '' : 's'} in the folder that are not sequence tables.` : '');
}

/** A FileList as {path, file, inFolder} entries (a folder pick gives relative paths). */
function fromFileList(list, { folder = false } = {}) {
  return [...list].map((file) => ({ file, path: (file.webkitRelativePath || file.name).replace(/^\/+/, ''), inFolder: folder }));
}

/** Read a dropped directory tree (webkitGetAsEntry) into {path, file, inFolder} entries. */
async function readEntry(entry, out) {
  if (entry.isFile) {
    const file = await new Promise((res, rej) => entry.file(res, rej));
    out.push({ file, path: entry.fullPath.replace(/^\/+/, ''), inFolder: entry.fullPath.split('/').length > 2 });
  } else if (entry.isDirectory) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const child of batch) await readEntry(child, out);
    }
  }
}

async function onDrop(event) {
  event.preventDefault();
  el.drop.classList.remove('over');
  if (hooks.isRunning()) return;
  const dt = event.dataTransfer;
  if (!dt) return;
  try {
    const items = [...(dt.items || [])].filter((i) => i.kind === 'file');
    const entries = items.map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null));
    let found = [];
    if (entries.length && entries.every(Boolean)) {
      for (const e of entries) await readEntry(e, found);
    } else {
      found = fromFileList(dt.files);
    }
    await keepReadable(found);
  } catch (err) {
    hooks.showError(`Could not read the dropped files: ${messageOf(err)}`);
  }
}

/**
 * Mount the file pickers, the drop zone and the list. `onChange()` when the list changes;
 * `showError(text)`, `showNotice(text)` the page's; `isRunning()` refuses drops during a run.
 */
export function initTaskFiles(on) {
  hooks = on;
  Object.assign(el, {
    drop: $('#drop-zone'),
    filesInput: $('#task-files'),
    folderInput: $('#task-folder'),
    filesSummary: $('#files-summary'),
    fileList: $('#file-list'),
    clearFiles: $('#clear-files'),
    keepFiles: $('#keep-files'),
  });
  onCoreFacts(() => { el.filesInput.accept = dataAccept(); });
  el.clearFiles.addEventListener('click', () => { files = []; renderFiles(); el.filesSummary.focus(); });
  el.filesInput.addEventListener('change', () => {
    addTaskFiles(fromFileList(el.filesInput.files));
    el.filesInput.value = '';
  });
  el.folderInput.addEventListener('change', () => {
    const found = fromFileList(el.folderInput.files, { folder: true });
    el.folderInput.value = '';
    keepReadable(found).catch((err) => hooks.showError(`Could not read the folder: ${messageOf(err)}`));
  });
  for (const type of ['dragenter', 'dragover']) {
    el.drop.addEventListener(type, (e) => {
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = hooks.isRunning() ? 'none' : 'copy';
      el.drop.classList.add('over');
    });
  }
  el.drop.addEventListener('dragleave', (e) => {
    if (!el.drop.contains(e.relatedTarget)) el.drop.classList.remove('over');
  });
  el.drop.addEventListener('drop', onDrop);
  // A file dropped beside the zone must not make the browser navigate away from the page.
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => { if (!el.drop.contains(e.target)) e.preventDefault(); });
  el.keepFiles.addEventListener('change', () => {
    if (!el.keepFiles.checked) syncKeptFiles(); // forget them; renderFiles keeps them when checked
    renderFiles();
  });
  renderFiles();
  restoreKeptFiles();
}
