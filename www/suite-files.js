// The suites this server ships beside the page (the demo suite, the offline real-genome suite):
// a suite's tasks.json, then every task file it lists, as the run's [{name, bytes}].

/** The built-in demo suite's manifest. */
export const DEMO_MANIFEST = 'tasks/smoke/tasks.json';

/** The files a manifest lists (plain relative names only: a suite cannot reach outside its folder). */
function suitePaths(manifest, manifestPath) {
  const list = Array.isArray(manifest) ? manifest
    : Array.isArray(manifest?.tasks) ? manifest.tasks
      : Array.isArray(manifest?.files) ? manifest.files : null;
  if (!list) throw new Error(`${manifestPath}: expected a list of tasks`);
  const paths = [];
  for (const t of list) {
    const p = typeof t === 'string' ? t : (t.file ?? t.path ?? t.table ?? (t.id ? `${t.id}.csv` : null));
    if (Array.isArray(t?.files)) paths.push(...t.files);
    else if (p) paths.push(p);
  }
  for (const p of paths) {
    if (typeof p !== 'string' || p.startsWith('/') || p.split('/').includes('..') || /^[a-z]+:/i.test(p)) {
      throw new Error(`${manifestPath}: bad file name ${JSON.stringify(p)}`);
    }
  }
  if (!paths.length) throw new Error(`${manifestPath}: lists no task files`);
  return paths;
}

/** A built-in suite from this server (demo, offline): its manifest, then every task file it lists. */
export async function fetchSuiteFiles(manifestPath) {
  const base = new URL(manifestPath, document.baseURI);
  const res = await fetch(base, { cache: 'no-cache' });
  if (!res.ok) throw new Error(`${manifestPath}: the suite is not available from this server (HTTP ${res.status})`);
  const manifestBytes = new Uint8Array(await res.arrayBuffer());
  let manifest;
  try {
    manifest = JSON.parse(new TextDecoder().decode(manifestBytes));
  } catch {
    throw new Error(`${manifestPath}: not valid JSON`);
  }
  // The manifest travels too: it gives the suite's tasks their categories.
  const files = [{ name: manifestPath.split('/').pop(), bytes: manifestBytes }];
  for (const p of suitePaths(manifest, manifestPath)) {
    const r = await fetch(new URL(p, base), { cache: 'no-cache' });
    if (!r.ok) throw new Error(`${new URL(p, base).pathname}: could not be fetched (HTTP ${r.status})`);
    files.push({ name: p, bytes: new Uint8Array(await r.arrayBuffer()) });
  }
  return files;
}
