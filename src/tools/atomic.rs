//! Atomic file writes for the tools. The helper itself lives in [`crate::fsutil`] so the
//! runtime (which must not depend on tools) writes its task records through the same door.

pub use crate::fsutil::write_atomic as write;
