// What the page says when the browser refuses the core more memory: the same words whether the
// worker caught the trap on its own thread (worker.js) or a thread of the threaded core's pool
// said so just before trapping (app.js, src/web.rs pool_out_of_memory).

/** "1.2 GB": the size the core asked for. */
function bytesText(n) {
  const units = ['bytes', 'kB', 'MB', 'GB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

export function outOfMemoryMessage(refusedBytes) {
  return `This tab ran out of memory: the core needed ${bytesText(refusedBytes)} more and the browser would not `
    + 'let WebAssembly grow. Use fewer or shorter sequences per task, a smaller encoder (or a smaller k), '
    + 'or the command line (geneb eval), which has the whole machine\'s memory.';
}
