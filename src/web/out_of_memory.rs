//! The threaded build's word to the page when a thread of the rayon pool runs out of memory. That
//! thread's trap is an error in a nested Web Worker whose parent, the page's worker, waits for
//! the pool's answer (Atomics.wait) and so never hears of it: the tab would hang. Before
//! aborting, the pool thread posts the refused size on the `BroadcastChannel` the page named
//! (one per worker, so another tab's core never answers for this one); the page then replaces
//! the wedged worker (www/core-client.js). A failure on the worker's own thread traps its call, which
//! the worker reports as in the one-thread build.

use std::alloc::Layout;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use wasm_bindgen::prelude::*;

static CHANNEL: OnceLock<String> = OnceLock::new();
/// The hook may allocate (the JS object's slot); a failure there must not recurse.
static TOLD: AtomicBool = AtomicBool::new(false);

#[wasm_bindgen]
extern "C" {
    type BroadcastChannel;
    #[wasm_bindgen(constructor)]
    fn new(name: &str) -> BroadcastChannel;
    #[wasm_bindgen(method, js_name = postMessage)]
    fn post_message(this: &BroadcastChannel, refused_bytes: f64);
}

/// Names the page's channel; the worker calls it once, right after loading.
#[wasm_bindgen(js_name = signalPoolOutOfMemoryOn)]
pub fn signal_on(channel: String) {
    if CHANNEL.set(channel).is_ok() {
        std::alloc::set_alloc_error_hook(tell_the_page);
    }
}

fn tell_the_page(layout: Layout) {
    let on_pool_thread = rayon::current_thread_index().is_some();
    if on_pool_thread
        && !TOLD.swap(true, Ordering::SeqCst)
        && let Some(name) = CHANNEL.get()
    {
        BroadcastChannel::new(name).post_message(layout.size() as f64);
    }
    // std aborts after the hook returns: the trap the page no longer waits for.
}
