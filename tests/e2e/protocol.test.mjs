// The page and its worker speak one protocol, www/protocol.js: the worker answers exactly its
// calls and sends only its events, the page's client (www/core-client.js) handles every event
// and sends only calls and its notices, and every panel asks for a call the table has. Read
// from the sources, so a message added on one side alone fails here, not in a user's tab.

import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO } from './helpers.mjs';
import { CALLS, EVENTS, NOTICES } from '../../www/protocol.js';

const WWW = join(REPO, 'www');
const source = (name) => readFile(join(WWW, name), 'utf8');
const sorted = (list) => [...new Set(list)].sort();
const matches = (text, re) => [...text.matchAll(re)].map((m) => m[1]);

describe('the page ⇄ worker protocol (www/protocol.js)', () => {
  it('the worker handles exactly the calls and sends only the events', async () => {
    const worker = await source('worker.js');
    const handlers = /const HANDLERS = \{([^}]*)\};/.exec(worker);
    assert.ok(handlers, 'worker.js names its handlers in `const HANDLERS = { … };`');
    assert.deepEqual(sorted(handlers[1].split(',').map((s) => s.trim()).filter(Boolean)), sorted(Object.keys(CALLS)));
    const sent = matches(worker, /postMessage\(\{\s*type: '([^']+)'/g);
    assert.ok(sent.length >= 4, `the worker's messages were found: ${sent}`);
    for (const type of sent) assert.ok(Object.hasOwn(EVENTS, type), `worker.js sends '${type}', which www/protocol.js EVENTS lacks`);
    for (const type of Object.keys(EVENTS)) assert.ok(sent.includes(type), `EVENTS has '${type}', which worker.js never sends`);
    const taken = matches(worker, /msg\?\.type === '([^']+)'/g);
    assert.deepEqual(sorted(taken), sorted(['call', ...Object.keys(NOTICES)]));
  });

  it('the client handles every event and sends only calls and notices', async () => {
    const client = await source('core-client.js');
    const handled = matches(client, /case '([^']+)':/g);
    assert.deepEqual(sorted(handled), sorted(Object.keys(EVENTS)));
    const sent = matches(client, /postMessage\(\{\s*type: '([^']+)'/g);
    assert.deepEqual(sorted(sent), sorted(['call', ...Object.keys(NOTICES)]));
  });

  it('only the client talks to the worker, and every panel asks for a call the table has', async () => {
    const names = (await readdir(WWW)).filter((n) => n.endsWith('.js'));
    const asked = [];
    for (const name of names) {
      const text = await source(name);
      if (name !== 'core-client.js' && name !== 'worker.js' && name !== 'sw.js') {
        assert.doesNotMatch(text, /new Worker\(|\.postMessage\(/, `${name} talks to the worker itself: use core-client.js`);
      }
      asked.push(...matches(text, /callCore\('([^']+)'/g));
    }
    for (const call of asked) assert.ok(Object.hasOwn(CALLS, call), `callCore('${call}'): not in www/protocol.js CALLS`);
    assert.deepEqual(sorted(asked), sorted(Object.keys(CALLS)), 'every call has a caller');
  });
});
