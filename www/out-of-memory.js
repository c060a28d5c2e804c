// What the page says when the browser refuses the core more memory: the same words whether the
// worker caught the trap on its own thread (worker.js) or a thread of the threaded core's pool
// said so just before trapping (core-client.js, src/web/out_of_memory.rs).

import { bytesText } from './dom.js';

export function outOfMemoryMessage(refusedBytes) {
  return `This tab ran out of memory: the core needed ${bytesText(refusedBytes)} more and the browser would not `
    + 'let WebAssembly grow. Use fewer or shorter sequences per task, a smaller encoder (or a smaller k), '
    + 'or the command line (geneb eval), which has the whole machine\'s memory.';
}
