//! The module's start function: runs the static constructors once, and makes panics readable.

use wasm_bindgen::prelude::*;

// The static constructors wasm-ld gathers (`inventory` registrations in CubeCL's IR, 200+ of
// them). Unless the module calls this itself, wasm-ld treats it as a "command" and wraps every
// export in a call to it, so each JS → wasm call (every externref hand-over of wasm-bindgen's
// glue included) re-ran all of them: NT-v2-50m-shaped embedded 4.7× slower in a one-thread tab
// (bench/README.md, wasm_profile.mjs). One explicit call, at start, turns that wrapping off.
unsafe extern "C" {
    fn __wasm_call_ctors();
}

#[wasm_bindgen(start)]
pub fn start() {
    // SAFETY: runs once, first, on the thread that instantiated the module (wasm-bindgen runs
    // the start function on the main thread only); nothing has read the registries yet.
    unsafe { __wasm_call_ctors() };
    // A Rust panic is a bug; this makes it readable in the console instead of "unreachable".
    console_error_panic_hook::set_once();
}
