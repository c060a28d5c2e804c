// "Works offline": registers sw.js, which keeps the page, the core and the demo suite for use
// without a network, and says how far that got.

import { messageOf } from './dom.js';

let el = null; // the status line
let offlineStatus = 'checking…'; // what the service worker's registration reached

function renderOffline() {
  const now = navigator.onLine === false ? ' (you are offline: running from the copy in this browser)' : '';
  el.textContent = `${offlineStatus}${offlineStatus.startsWith('ready') ? now : ''}`;
}

/** Register sw.js, which keeps the page, the core and the demo suite for use without a network. */
export async function setUpOffline(node) {
  el = node;
  addEventListener('online', renderOffline);
  addEventListener('offline', renderOffline);
  if (!('serviceWorker' in navigator)) {
    offlineStatus = 'not available in this browser';
    renderOffline();
    return;
  }
  try {
    const registration = await navigator.serviceWorker.register(new URL('./sw.js', import.meta.url), { scope: './' });
    const installing = registration.installing;
    installing?.addEventListener('statechange', () => {
      if (installing.state === 'redundant' && !registration.active) {
        offlineStatus = 'unavailable (the page could not be kept in this browser)';
        renderOffline();
      }
    });
    await navigator.serviceWorker.ready;
    offlineStatus = 'ready: works without a network';
  } catch (err) {
    offlineStatus = `unavailable (${messageOf(err)})`;
  }
  renderOffline();
}
