pub mod codegen;
pub mod fuser;
pub mod launch;
pub(crate) mod scoring;
pub mod settings;

pub mod trace;
