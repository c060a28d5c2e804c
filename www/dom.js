// Small DOM and formatting helpers shared by the page's modules (and, for the text ones, its
// worker: nothing here touches the DOM until called).

/** Create an element: h('p', {class, text, onclick, ...attrs}, ...children). */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

/**
 * "512 B", "88 kB", "3.0 GB"; "unknown size" for a size nobody announced. `kilo` spells the
 * 1,024-byte unit: downloads say "kB", the lists of the user's own files have always said "KB".
 */
export function bytesText(n, kilo = 'kB') {
  if (!Number.isFinite(n)) return 'unknown size';
  if (n < 1024) return `${n} B`;
  const units = [kilo, 'MB', 'GB'];
  let v = n;
  let u = -1;
  do { v /= 1024; u++; } while (v >= 1024 && u < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

/** A score with three decimals, or an em dash when there is none. */
export function fmt(x) {
  return typeof x === 'number' && Number.isFinite(x) ? x.toFixed(3) : '—';
}

/** What a thrown value says, never throwing itself (the worker reports with it too). */
export function messageOf(err) {
  if (err == null) return 'unknown error';
  if (typeof err === 'string') return err;
  if (typeof err.message === 'string' && err.message) return err.message;
  try { return String(err); } catch { return 'unknown error'; }
}

export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/** Offer `blob` as a download named `name`; nothing leaves the tab (a blob: URL). */
export function downloadBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export function downloadText(text, name, type) {
  downloadBlob(new Blob([text], { type }), name);
}
