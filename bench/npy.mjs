// The .npy files the benches compare against (numpy.save of float32 embeddings).

import { readFileSync } from 'node:fs';

/** A little-endian float32 .npy (numpy.save of a C-order 2-D array) → {shape, data}. */
export function readNpy(path) {
  const buf = readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  if (!/'descr':\s*'<f4'/.test(header) || /'fortran_order':\s*True/.test(header)) {
    throw new Error(`${path}: expected little-endian float32 in C order, got ${header.trim()}`);
  }
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter((s) => s.trim()).map(Number);
  const body = buf.subarray(start + headerLen);
  const data = new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
  return { shape, data };
}
