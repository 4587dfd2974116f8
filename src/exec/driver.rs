//! What a job's async work runs on: one current-thread tokio runtime, and the stop every wait
//! of the job gives way to.

use tokio_util::sync::CancellationToken;

use crate::lifecycle::{self, Stop};

use super::failure::Failure;

/// `work`, unless the run is stopped first (a signal, the lifeline, its deadline, a closed
/// stdout): then that ending's failure, and `work` is dropped half-way (whatever it started
/// belongs to the runtime, whose close stops it).
pub(crate) async fn before_stop<T>(
    work: impl Future<Output = T>,
    cancel: &CancellationToken,
) -> Result<T, Failure> {
    tokio::select! {
        done = work => Ok(done),
        () = cancel.cancelled() => {
            Err(Failure::stopped(lifecycle::received().unwrap_or(Stop::Interrupt)))
        }
    }
}

/// The async runtime a job runs on. One thread drives the run, and blocking work (files,
/// fsync, handshakes) goes to the blocking pool, as it must anyway. A multi-thread runtime
/// hands each step of a turn from one worker to another, and waking an idle vCPU costs up to
/// a millisecond on a VM (docs/PERFORMANCE.md).
pub(crate) fn async_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::internal(format!("cannot start the async runtime: {e}")))
}
