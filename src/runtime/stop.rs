//! Stopping a command the runtime started: the runtime's side of the ladder, written once and
//! used for foreground commands ([`super::foreground`]) and background tasks
//! ([`super::tasks::task`]) alike.
//!
//! The guardian owns the TERM → grace → KILL sequence for its subtree; the runtime only asks
//! for it and makes sure it ends: it sends the stop request, waits for the guardian to end up
//! to the grace plus [`GUARDIAN_MARGIN`], and SIGKILLs guardian and command group if the
//! guardian overran. [`hurry`] (a second signal) makes every stop skip the rest of its grace.
//!
//! Two other ladders have a different shape and stay apart: the guardian's own
//! ([`super::guardian`]: single-threaded and synchronous, it signals the subtree itself and
//! polls for processes that are not its children), and reconciliation's
//! (`identity::stop_foreign_groups`: blocking, for another run's processes, which it cannot
//! wait for and so polls). [`super::timing`] says how their waits relate.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::Signal;
use tokio_util::sync::CancellationToken;

use super::identity::ProcessIdentity;
use super::timing::{AFTER_KILL_WAIT, GUARDIAN_MARGIN};

/// Makes every stop in progress, and every later one, skip the rest of its grace period and
/// SIGKILL at once — foreground commands and background tasks alike. For the second signal
/// during close: the user wants out now. Process-wide, like the signal that calls for it.
pub(crate) fn hurry() {
    hurried().cancel();
}

/// Cancelled once [`hurry`] was called.
fn hurried() -> &'static CancellationToken {
    static HURRY: OnceLock<CancellationToken> = OnceLock::new();
    HURRY.get_or_init(CancellationToken::new)
}

/// A command running under its guardian, after a successful handshake: the two processes a
/// stop signals.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Guarded {
    /// The guardian: our child, which stop requests go to and whose end is the command's end.
    pub(crate) guardian: ProcessIdentity,
    /// The command the guardian runs, leading its own process group.
    pub(crate) command: ProcessIdentity,
}

/// The stop request of one stop, sent at most once: a guardian reads a second request as
/// "skip the rest of the grace", so a first request repeated (by a caller that gave up and
/// by the stop it started) must not look like one.
#[derive(Debug, Default)]
pub(crate) struct StopRequest {
    sent: AtomicBool,
}

impl StopRequest {
    /// Asks the guardian to stop its subtree (SIGTERM), unless this request was sent already.
    pub(crate) fn send(&self, guarded: &Guarded) -> Result<(), Errno> {
        if self.sent.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        guarded.guardian.signal_group(Signal::SIGTERM)
    }

    /// Spends the request without sending it: from now on [`StopRequest::send`] does nothing.
    /// Says whether it was still unsent, so nothing was or will be asked of the guardian (a
    /// guardian whose command ended on its own may then go on to the next command).
    pub(crate) fn retire(&self) -> bool {
        !self.sent.swap(true, Ordering::SeqCst)
    }
}

/// How the ladder learns that the guardian has ended, from whoever observes that end (the
/// task's follower, or the foreground command's own wait).
pub(crate) trait GuardianEnd: Send {
    /// Waits until the guardian has ended or `limit` has passed; says whether it has ended.
    fn within(&mut self, limit: Duration) -> impl Future<Output = bool> + Send;
}

/// Why a stop could not be carried through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopFailure {
    /// Signalling a process group failed for a reason other than it being gone.
    Signal(Errno),
    /// The guardian was still there after SIGKILL and [`AFTER_KILL_WAIT`].
    Unkillable,
}

/// Stops `guarded` and waits until its guardian has ended: sends the stop request (the
/// guardian TERMs the subtree, waits `grace`, KILLs, reaps and exits) and waits for the end up
/// to `grace` + [`GUARDIAN_MARGIN`]. If [`hurry`] is called meanwhile, or was before, the
/// command's group is SIGKILLed at once and the guardian asked again, which makes it skip the
/// rest of its grace. A guardian that overruns is SIGKILLed with the command's group, and
/// given [`AFTER_KILL_WAIT`] to end.
pub(crate) async fn stop_guarded(
    guarded: Guarded,
    grace: Duration,
    request: &StopRequest,
    end: &mut impl GuardianEnd,
) -> Result<(), StopFailure> {
    let signal = |identity: ProcessIdentity, signal| {
        identity.signal_group(signal).map_err(StopFailure::Signal)
    };
    let hurry = hurried();
    if hurry.is_cancelled() {
        signal(guarded.command, Signal::SIGKILL)?;
    }
    request.send(&guarded).map_err(StopFailure::Signal)?;
    let ended = tokio::select! {
        ended = end.within(grace + GUARDIAN_MARGIN) => ended,
        () = hurry.cancelled() => {
            signal(guarded.command, Signal::SIGKILL)?;
            signal(guarded.guardian, Signal::SIGTERM)?;
            end.within(GUARDIAN_MARGIN).await
        }
    };
    if ended {
        return Ok(());
    }
    signal(guarded.command, Signal::SIGKILL)?;
    signal(guarded.guardian, Signal::SIGKILL)?;
    if end.within(AFTER_KILL_WAIT).await {
        return Ok(());
    }
    Err(StopFailure::Unkillable)
}
