//! Support code shared by the integration tests.
//!
//! - [`ci`]: CI jobs' shell steps run as the runners run them (docs/CI.md, the action, the
//!   component).
//! - [`fake_model`]: a scripted fake model server speaking both wires over real HTTP and SSE.
//! - [`zero`]: the real binary with a clean environment, and the stream-json contract.
//! - [`marks`]: markers that prove a planted program never ran.
//! - [`runs`]: runs and `zero tasks` sharing one data directory.
//! - [`procs`]: the processes a test started, found by a nonce, and making sure they are gone.
//! - [`wait`]: the one way tests wait — a condition polled until [`wait::DEADLINE`].

pub mod ci;
pub mod fake_model;
pub mod marks;
pub mod procs;
pub mod runs;
pub mod wait;
pub mod zero;
