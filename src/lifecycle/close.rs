//! The scoped guard that closes the runtime on the way out of a panic.

use std::sync::Arc;

use crate::runtime::Runtime;

/// Closes `runtime` when dropped while armed — that is, when a panic unwinds past the scope
/// that owns the run's processes before it could close them itself. The normal path closes
/// the runtime and then `CloseOnDrop::disarm`s the guard.
pub struct CloseOnDrop<'a> {
    runtime: Arc<Runtime>,
    /// The async runtime the run's tasks are followed on. The guard drives it itself: on a
    /// current-thread runtime nothing else drives its timers and I/O once the panic has left
    /// `block_on` (a `Handle::block_on` would wait for ever on a grace period).
    tokio: &'a tokio::runtime::Runtime,
    armed: bool,
}

impl<'a> CloseOnDrop<'a> {
    /// A guard closing `runtime` on `tokio`, where its tasks are followed.
    pub fn new(runtime: Arc<Runtime>, tokio: &'a tokio::runtime::Runtime) -> Self {
        CloseOnDrop {
            runtime,
            tokio,
            armed: true,
        }
    }

    /// The runtime was closed on the normal path: nothing left to do.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        // `block_on` would panic inside an async context (a panic while panicking aborts, and
        // skips the close); the guard lives outside one, but be sure.
        if self.armed && tokio::runtime::Handle::try_current().is_err() {
            let _ = self.tokio.block_on(self.runtime.close());
        }
    }
}
