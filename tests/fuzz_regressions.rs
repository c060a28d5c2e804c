//! Replays the inputs that once crashed a fuzz target (`tests/fixtures/fuzz-regressions/<target>/`,
//! see fuzz/README.md) through the entry points the targets call, on the stable toolchain and
//! without a fuzzer: a panic here is a parser bug come back.

#[path = "support/parsers.rs"]
mod parsers;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;

/// libFuzzer fails any single allocation above its memory limit (2 GiB, fuzz/README.md), which
/// is how a size a file made up shows; this replay refuses the same, so such an input aborts the
/// test here too instead of reserving untouched pages the OS is glad to promise.
struct LikeLibFuzzer;

const LARGEST_ALLOCATION: usize = 2 << 30;

// SAFETY: every call within the limit is passed to `System` unchanged; a refusal is a null
// pointer, which `GlobalAlloc` allows.
unsafe impl GlobalAlloc for LikeLibFuzzer {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LARGEST_ALLOCATION {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > LARGEST_ALLOCATION {
            return std::ptr::null_mut();
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LikeLibFuzzer = LikeLibFuzzer;

type Entry = fn(&[u8]);

/// Feeds every file of the target's folder to `entry`; returns how many there were.
fn replay(target: &str, entry: Entry) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz-regressions")
        .join(target);
    let Ok(files) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut count = 0;
    for file in files {
        let path = file.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        eprintln!("{target}: {}", path.display());
        entry(&bytes);
        count += 1;
    }
    count
}

#[test]
fn inputs_that_crashed_the_parsers_are_handled() {
    let targets: &[(&str, Entry)] = &[
        ("task_files", parsers::task_files),
        ("safetensors", parsers::safetensors),
        ("pytorch", parsers::pytorch),
        ("tokenizer", parsers::tokenizer),
        ("results", parsers::results),
        ("npz", parsers::npz),
        #[cfg(feature = "burn")]
        ("model_config", parsers::model_config),
    ];
    let replayed: usize = targets
        .iter()
        .map(|&(target, entry)| replay(target, entry))
        .sum();
    assert!(replayed > 0, "no regression inputs found");
}
