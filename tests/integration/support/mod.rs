//! Support code shared by the integration tests.
//!
//! - [`fake_model`]: a scripted fake model server speaking both wires over real HTTP and SSE.
//!
//! Not every test crate uses every helper, hence the module-level `dead_code` allowance, which
//! belongs here and nowhere else.
#![allow(dead_code)]

pub mod fake_model;
pub mod procs;
pub mod runs;
pub mod zero;
