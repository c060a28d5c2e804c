pub mod block;

mod base;
mod fuser;

pub use base::*;
pub use fuser::*;
