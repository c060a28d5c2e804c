pub mod io;
pub mod ir;
pub mod kernel;
pub mod tensor;
pub mod view;

mod base;
pub use base::*;
