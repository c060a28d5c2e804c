pub mod executor;
pub mod input;
pub mod layout;
pub mod output;
pub mod runner;
pub mod vectorization;

pub mod plan;
pub use plan::*;

mod base;
pub use base::*;
