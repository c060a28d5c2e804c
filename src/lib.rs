//! geneb: the GENEB probing protocol — frozen encoder → pooled embedding → logistic-regression
//! probe → per-category profile — as one core for the native CLI and the browser (wasm32).

// The threaded page build is nightly-only (scripts/build-wasm.sh); it tells the page when a
// pool thread runs out of memory (src/web/out_of_memory.rs).
#![cfg_attr(
    all(target_arch = "wasm32", feature = "threads"),
    feature(alloc_error_hook)
)]

#[cfg(feature = "cli")]
pub mod atomic_file;
pub mod budget;
pub mod checkpoint;
pub mod digest;
#[cfg(feature = "cli")]
pub mod embedding_cache;
pub mod encoder;
pub mod error;
pub mod eval;
pub mod facts;
#[cfg(all(feature = "hub", not(target_arch = "wasm32")))]
pub mod hub;
pub mod input;
#[cfg(feature = "cli")]
pub mod merge;
pub mod metrics;
pub mod predict;
pub mod probe;
pub mod profile;
pub mod progress;
pub mod protocol;
pub mod report;
pub mod rng;
pub mod run;
#[cfg(feature = "cli")]
pub mod shard;
pub mod submission;
pub mod task;
pub mod tokenize;
#[cfg(target_arch = "wasm32")]
pub mod web;
pub mod zip;

pub use error::{Error, Result};

/// The harness version recorded in every result file.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
