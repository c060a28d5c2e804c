mod bounds;
mod fuser;
mod optimization;

pub(crate) mod args;
pub(crate) mod tune;

pub use fuser::*;
pub use optimization::*;
