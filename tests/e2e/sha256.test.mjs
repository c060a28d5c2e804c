// The page's incremental SHA-256 (www/sha256.js), which verifies hub downloads and cached models
// without holding them whole, against node:crypto: every length around the block and padding
// boundaries, many ways of cutting the input into pieces, and a Blob read in slices.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Sha256, sha256OfBlob } from '../../www/sha256.js';

const reference = (bytes) => createHash('sha256').update(bytes).digest('hex');

describe('incremental SHA-256', () => {
  it('matches node:crypto at every length up to three blocks', () => {
    const bytes = randomBytes(200);
    for (let n = 0; n <= bytes.length; n += 1) {
      assert.equal(new Sha256().update(bytes.subarray(0, n)).hex(), reference(bytes.subarray(0, n)), `${n} bytes`);
    }
    assert.equal(new Sha256().hex(), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('gives the same digest however the input is cut', () => {
    const bytes = randomBytes(100_003);
    const want = reference(bytes);
    for (const piece of [1, 7, 63, 64, 65, 1000, 65_536]) {
      const hasher = new Sha256();
      for (let at = 0; at < bytes.length; at += piece) hasher.update(bytes.subarray(at, at + piece));
      assert.equal(hasher.hex(), want, `pieces of ${piece}`);
    }
    let state = 1;
    const hasher = new Sha256();
    for (let at = 0; at < bytes.length;) {
      state = (state * 48271) % 2147483647;
      const piece = state % 5000;
      hasher.update(bytes.subarray(at, at + piece));
      at += piece;
    }
    assert.equal(hasher.hex(), want, 'pieces of random length, empty ones too');
  });

  it('hashes a Blob in slices across the slice boundary, or whole where it is small', async () => {
    const bytes = randomBytes((8 << 20) + 12_345);
    assert.equal(await sha256OfBlob(new Blob([bytes]), { wholeUpTo: 0 }), reference(bytes));
    assert.equal(await sha256OfBlob(new Blob([bytes])), reference(bytes));
    assert.equal(await sha256OfBlob(new Blob([]), { wholeUpTo: 0 }), reference(Buffer.alloc(0)));
  });
});
