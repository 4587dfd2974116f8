//! The minimum of signal handling a run needs so that stopping it stops what it started:
//! SIGTERM, SIGINT and SIGHUP cancel the run, so the agent loop ends (killing a foreground
//! command's process group) and the task runtime closes before `run_end`.
//!
//! This matters most for specialists: the runtime stops a child `zero exec` with SIGTERM, and
//! the child's own foreground commands live in process groups of their own that the signal to
//! the child's group does not reach. Escalation on a second signal and the lifeline belong to
//! the full lifecycle handling (`ARCHITECTURE.md`), which will replace this module.

use std::sync::{Arc, OnceLock};

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::{ExitCode, Failure};

/// A signal that ended the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// SIGHUP.
    Hangup,
    /// SIGINT.
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Ended {
    /// The failure a run ended this way reports: exit 129/130/143 and its `error.code`.
    pub fn failure(self) -> Failure {
        let (exit, code, name) = match self {
            Ended::Hangup => (ExitCode::Hangup, "hangup", "SIGHUP"),
            Ended::Interrupt => (ExitCode::Interrupted, "interrupted", "SIGINT"),
            Ended::Terminate => (ExitCode::Terminated, "terminated", "SIGTERM"),
        };
        Failure {
            exit,
            code,
            message: format!("the run was stopped by {name}"),
            retryable: false,
        }
    }
}

/// Listens for the three signals for the rest of the process's life (must be called inside
/// the async runtime). The first one cancels `cancel`; the returned cell says which it was.
pub fn watch(cancel: CancellationToken) -> std::io::Result<Arc<OnceLock<Ended>>> {
    let mut hangup = signal(SignalKind::hangup())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let ended = Arc::new(OnceLock::new());
    let seen = Arc::clone(&ended);
    tokio::spawn(async move {
        let which = tokio::select! {
            _ = hangup.recv() => Ended::Hangup,
            _ = interrupt.recv() => Ended::Interrupt,
            _ = terminate.recv() => Ended::Terminate,
        };
        let _ = seen.set(which);
        cancel.cancel();
    });
    Ok(ended)
}
