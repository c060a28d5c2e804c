mod base;
mod block;
mod full;
mod full_analyzer;

pub use base::*;
