//! The allocator wrapper that lets the page tell the tab's memory from a bug.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use wasm_bindgen::prelude::*;

/// The system allocator, noting the size of the last request the browser refused (WebAssembly
/// memory that could not grow). Rust then aborts, which the page sees as a bare `unreachable`
/// trap; `refusedAllocation()` tells the worker it was the tab's memory, not a bug.
struct NotingAllocator;

static REFUSED_BYTES: AtomicUsize = AtomicUsize::new(0);

impl NotingAllocator {
    fn noted(ptr: *mut u8, bytes: usize) -> *mut u8 {
        if ptr.is_null() {
            REFUSED_BYTES.store(bytes, Ordering::Relaxed);
        }
        ptr
    }
}

// SAFETY: every call is passed to `System` unchanged; only null results are noted.
unsafe impl GlobalAlloc for NotingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::noted(unsafe { System.alloc(layout) }, layout.size())
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::noted(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::noted(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: NotingAllocator = NotingAllocator;

/// The bytes of the last allocation the browser refused, 0 if none was: read by the worker
/// after a trap, to say the tab ran out of memory.
#[wasm_bindgen(js_name = refusedAllocation)]
pub fn refused_allocation() -> f64 {
    REFUSED_BYTES.load(Ordering::Relaxed) as f64
}
