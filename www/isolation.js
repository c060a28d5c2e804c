// Cross-origin isolation, before the app starts (app.js imports this first). The threaded core
// needs a cross-origin isolated page (COOP + COEP headers; www/worker.js). Where the host sends
// neither header (GitHub Pages, a bucket, `python3 -m http.server`), the service worker adds
// them (www/sw.js): this registers it, waits until it controls the tab and reloads once; until
// then this module does not finish, so the app does not start only to be reloaded. The "Threads"
// line says how the page got isolated, or why not.

/** sessionStorage key: the one reload for isolation was made in this tab. */
const RELOADED = 'geneb-isolation-reload';

function show(text) {
  const el = document.getElementById('isolation');
  if (el) el.textContent = text;
}

/** The host's COOP and COEP for this page (a HEAD passes the service worker); null offline. */
async function hostHeaders() {
  if (navigator.onLine === false) return null;
  try {
    const res = await fetch(location.href, { method: 'HEAD', cache: 'no-store' });
    return { coop: res.headers.get('Cross-Origin-Opener-Policy'), coep: res.headers.get('Cross-Origin-Embedder-Policy') };
  } catch {
    return null;
  }
}

/** Where an isolated page's headers came from. */
async function howIsolated() {
  if (!navigator.serviceWorker?.controller) return "from the host's COOP/COEP headers";
  const host = await hostHeaders();
  if (!host) return "from this page's service worker (offline copy)";
  return host.coep ? "from the host's COOP/COEP headers" : "from this page's service worker, which adds COOP/COEP (the host sends none)";
}

/** Resolves once a service worker controls this tab; rejects when its install fails. */
async function controlledBySw() {
  const registration = await navigator.serviceWorker.register(new URL('./sw.js', import.meta.url), { scope: './' });
  const pending = registration.installing ?? registration.waiting;
  // Active but not in control: a hard reload bypassed it; a plain reload brings it back.
  if (!pending) return;
  await new Promise((resolve, reject) => {
    navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true });
    pending.addEventListener('statechange', () => {
      if (pending.state === 'redundant') reject(new Error('the service worker could not be installed'));
    });
  });
}

/** Why this page is not isolated, or null when it reloads to be. */
async function whyNotIsolated() {
  const noHeaders = 'none: the host sends no COOP/COEP headers';
  if (!self.isSecureContext) return `${noHeaders}, and browsers allow service workers only on https or localhost`;
  if (!('serviceWorker' in navigator)) return `${noHeaders}, and this browser gives the page no service worker to add them (a private window?)`;
  const host = await hostHeaders();
  if (host && (host.coop || host.coep)) {
    return `none: the host's headers (COOP ${host.coop ?? 'absent'}, COEP ${host.coep ?? 'absent'}) do not isolate the page`;
  }
  if (sessionStorage.getItem(RELOADED)) return "none: the browser did not isolate the page even with its service worker's headers";
  show('setting up: keeping the page in this browser, then one reload for threads…');
  try {
    await controlledBySw();
  } catch (err) {
    return `${noHeaders}, and ${err.message}`;
  }
  sessionStorage.setItem(RELOADED, '1');
  location.reload();
  return null;
}

if (self.crossOriginIsolated) {
  sessionStorage.removeItem(RELOADED);
  // Not awaited: an isolated page starts at once.
  howIsolated().then(show);
} else {
  const why = await whyNotIsolated();
  // Reloading: never finish, so the app does not start.
  if (why === null) await new Promise(() => {});
  show(why);
}
