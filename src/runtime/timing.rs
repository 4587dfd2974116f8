//! Every fixed duration the runtime and its guardians wait, in one place, with how they relate.
//!
//! Three ladders stop processes, each with the same configured grace (`ZERO_KILL_GRACE_MS`,
//! [`DEFAULT_KILL_GRACE`]) between SIGTERM and SIGKILL:
//!
//! - the **guardian's** own ([`super::guardian`]), on a stop request or lifeline EOF: SIGTERM
//!   the command's group at once, SIGKILL everything left when the grace is over (it notices
//!   on its next [`GUARDIAN_TICK`]), then wait at most [`GUARDIAN_AFTER_KILL`] for the
//!   processes to go, reap, report, exit;
//! - the **runtime's** ([`super::stop`]), for a command it started: send the guardian its stop
//!   request, wait for the guardian to end up to grace + [`GUARDIAN_MARGIN`], then SIGKILL
//!   guardian and command group and wait [`AFTER_KILL_WAIT`] more before calling the command
//!   unkillable;
//! - **reconciliation's** (`identity::stop_foreign_groups`), for another run's processes, which
//!   it cannot wait for: SIGTERM, grace, SIGKILL, [`AFTER_KILL_WAIT`], looking every
//!   [`FOREIGN_POLL`].
//!
//! How the runtime's waits sit against the guardian's:
//!
//! - [`GUARDIAN_MARGIN`] is what a stopping guardian may take past the grace: the tick on which
//!   it notices the grace is over, its SIGKILL, the reaping and the final report — normally a
//!   few milliseconds. It must exceed [`GUARDIAN_TICK`], or the runtime's backstop would race
//!   a guardian that is doing its job.
//! - [`GUARDIAN_MARGIN`] is shorter than [`GUARDIAN_AFTER_KILL`]. So when something outlives
//!   the guardian's SIGKILL (uninterruptible sleep), the runtime's backstop ends the wait, not
//!   the guardian's giving up: the guardian is SIGKILLed at grace + margin, its final report
//!   is lost, and the record takes the guardian's own end (SIGKILL) instead.
//! - [`AFTER_KILL_WAIT`] follows the runtime's own SIGKILL of the guardian, which ends it at
//!   once unless the guardian itself cannot be killed; it is not a wait for the guardian's
//!   ladder, and no relation to [`GUARDIAN_AFTER_KILL`] is needed.
//! - A stop from another process (`zero tasks stop`) waits [`OWNER_RECORDS_END`] for the
//!   owning run to record the end. The owner records once the guardian has ended, and a
//!   guardian whose command ended may sweep leftovers for up to [`GUARDIAN_AFTER_KILL`] first,
//!   so the wait is at least that long.
//!
//! Every poll is shorter than the wait it polls within, so the wait looks more than once.
//! The rest stand alone: [`HANDSHAKE_TIMEOUT`] bounds a guardian's start, and
//! [`PIPE_DRAIN_GRACE`] bounds reading a foreground command's pipes after its guardian ended
//! (only a process that escaped the subtree can still hold them).
//!
//! Apart from these, [`MAX_DURATION`] bounds every duration zero takes from anyone (a flag, a
//! configuration file, an MCP server's entry), so that no wait or deadline made of one can
//! overflow a clock.

use std::time::Duration;

/// The longest duration zero takes, as `humantime` counts years (365.25 days). Far beyond any
/// real timeout or age, and short enough that adding it to the present (a deadline), or taking
/// it away (a gc cutoff), stays inside the range every clock type can hold — `SystemTime`,
/// `Instant`, chrono's dates, milliseconds since 1970 in a `u64` — so no caller has to think
/// about overflow. (`18446744073709551615s` parses, and `now + it` panics.)
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(100 * 31_557_600);

/// How long a stopped command gets between SIGTERM and SIGKILL, unless configured otherwise.
pub(crate) const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// How long past its grace a stopping guardian may take before the runtime SIGKILLs it
/// together with its command's group.
pub(crate) const GUARDIAN_MARGIN: Duration = Duration::from_secs(2);

/// How long the runtime waits after its own SIGKILL before it reports a command unkillable,
/// and how long reconciliation waits after SIGKILLing another run's processes (a process in
/// uninterruptible sleep can outlive SIGKILL for a while).
pub(crate) const AFTER_KILL_WAIT: Duration = Duration::from_secs(5);

/// How long a guardian waits after its SIGKILL for its processes to go before it gives up on
/// them — when stopping, and when sweeping what a command left behind.
pub(crate) const GUARDIAN_AFTER_KILL: Duration = Duration::from_secs(3);

/// How often a stopping guardian looks again at processes that are not its children (their
/// deaths send it no SIGCHLD), and so how late it may notice that its grace is over.
pub(crate) const GUARDIAN_TICK: Duration = Duration::from_millis(20);

/// How often a guardian sweeping leftovers looks whether they are gone.
pub(crate) const GUARDIAN_SWEEP_TICK: Duration = Duration::from_millis(5);

/// How long a guardian may take to start its command and say so (the handshake).
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a foreground command's output pipes may stay open after its guardian ended (a
/// process that escaped the guardian can hold them); after this the call stops reading
/// instead of hanging.
pub(crate) const PIPE_DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How often reconciliation looks whether another run's processes have ended (only a parent
/// can wait for a process).
pub(crate) const FOREIGN_POLL: Duration = Duration::from_millis(20);

/// How long a lease held while the process that took it is gone is waited for: a copy in a
/// child that process was starting lets go at the child's `exec`, a reconciler at work when
/// it is done.
pub(crate) const LEASE_COPY_WAIT: Duration = Duration::from_secs(1);

/// How often such a lease is tried again.
pub(crate) const LEASE_COPY_POLL: Duration = Duration::from_millis(5);

/// How long a stop from another process waits for the owning run to record how the process
/// ended, so that the report it prints is complete.
pub(crate) const OWNER_RECORDS_END: Duration = Duration::from_secs(3);

/// How often a stop from another process looks for the owner's record of the end.
pub(crate) const OWNER_POLL: Duration = Duration::from_millis(20);

/// How long a lifeline watcher whose fd cannot be polled sleeps before it tries again
/// (sleeping beats spinning on an fd that tells nothing).
pub(crate) const LIFELINE_RETRY: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtimes_margin_covers_the_guardians_tick() {
        assert!(GUARDIAN_TICK < GUARDIAN_MARGIN);
    }

    #[test]
    fn a_stop_from_another_process_outwaits_a_guardians_sweep() {
        assert!(GUARDIAN_AFTER_KILL <= OWNER_RECORDS_END);
    }

    #[test]
    fn every_poll_is_shorter_than_the_wait_it_polls_within() {
        assert!(GUARDIAN_TICK < GUARDIAN_AFTER_KILL);
        assert!(GUARDIAN_SWEEP_TICK < GUARDIAN_AFTER_KILL);
        assert!(FOREIGN_POLL < AFTER_KILL_WAIT);
        assert!(OWNER_POLL < OWNER_RECORDS_END);
    }
}
