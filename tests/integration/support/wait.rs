//! Waiting in tests: every wait polls a condition until a deadline, and a wait that runs out
//! fails the test saying what it waited for. No test sleeps and then assumes something
//! happened (or did not): it waits for a condition that proves it.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// How long a test waits for something that should take a moment (a record to appear, a run
/// to end, a phase to be reached) before it fails: far longer than that takes on a loaded
/// machine, far shorter than the long timeouts tests set to show they are not what ended a run.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(10);

/// Polls `probe` until it returns something, and returns that; fails the test once `within`
/// has passed. `what` names what is awaited; it is formatted only when the wait fails, so it
/// can describe the state at that moment.
pub fn wait_for<T>(
    what: impl Display,
    within: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}
