//! The scoped guard that closes the runtime on the way out of a panic.

use std::sync::Arc;

use crate::runtime::Runtime;

/// Closes `runtime` when dropped while armed — that is, when a panic unwinds past the scope
/// that owns the run's processes before it could close them itself. The normal path closes
/// the runtime and then [`CloseOnDrop::disarm`]s the guard.
pub struct CloseOnDrop {
    runtime: Arc<Runtime>,
    handle: tokio::runtime::Handle,
    armed: bool,
}

impl CloseOnDrop {
    /// A guard closing `runtime` on the async runtime behind `handle`, where its tasks are
    /// followed.
    pub fn new(runtime: Arc<Runtime>, handle: tokio::runtime::Handle) -> Self {
        CloseOnDrop {
            runtime,
            handle,
            armed: true,
        }
    }

    /// The runtime was closed on the normal path: nothing left to do.
    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        // `block_on` would panic inside an async context (a panic while panicking aborts, and
        // skips the close); the guard lives outside one, but be sure.
        if self.armed && tokio::runtime::Handle::try_current().is_err() {
            let _ = self.handle.block_on(self.runtime.close());
        }
    }
}
