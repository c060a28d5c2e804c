mod fuser;
mod optimization;

pub use fuser::*;
pub use optimization::*;
