mod bounds;
mod fuser;
mod optimization;

pub mod args;
pub(crate) mod tune;

pub use fuser::*;
pub use optimization::*;
