// Whether this browser runs WebAssembly relaxed SIMD, which the threaded core is built with
// (scripts/build-wasm.sh): its linear layers multiply with f32x4.relaxed_madd, the CPU's fused
// multiply-add: 1.2x a multiply and an add, 1.4-1.6x burn-flex's gemm (src/encoder/layers/packed_matmul.rs).
// Chrome and Edge 114+ and Firefox 146+ have it; Safari does not yet, and runs the one-thread core.

/** The smallest module that uses f32x4.relaxed_madd: () -> v128, splat(1) * splat(1) + splat(1). */
export const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type section: one func type, () -> v128
  0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
  0x0a, 0x1c, 0x01, 0x1a, 0x00, // code section: one body of 26 bytes, no locals
  0x43, 0x00, 0x00, 0x80, 0x3f, 0xfd, 0x13, // f32.const 1, f32x4.splat
  0x43, 0x00, 0x00, 0x80, 0x3f, 0xfd, 0x13,
  0x43, 0x00, 0x00, 0x80, 0x3f, 0xfd, 0x13,
  0xfd, 0x85, 0x02, // f32x4.relaxed_madd
  0x0b, // end
]);

export function hasRelaxedSimd() {
  try {
    return WebAssembly.validate(RELAXED_SIMD_PROBE);
  } catch {
    return false;
  }
}
