//! The runtime: the one place where zero starts external processes, and (as it grows) the owner
//! of every child a run starts. Nothing here knows about models or tools.

pub mod capture;
pub mod process;
