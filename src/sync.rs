//! Locks that keep working after a panic. zero's blocking mutexes guard plain data (the
//! output queue, the known secrets, the signal hook's token, the store's warnings) that no
//! panic can leave half-updated, while the paths that take them — closing the run, writing its
//! `run_end`, masking a secret — must still run after a panic elsewhere. So a poisoned lock is
//! used as it is, in this one place, instead of turning one panic into a second.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Locks `mutex`, poisoned or not.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar` with `guard`, for at most `timeout` when one is given; the guard comes
/// back poisoned or not.
pub(crate) fn wait<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Option<Duration>,
) -> MutexGuard<'a, T> {
    match timeout {
        Some(timeout) => {
            condvar
                .wait_timeout(guard, timeout)
                .unwrap_or_else(PoisonError::into_inner)
                .0
        }
        None => condvar.wait(guard).unwrap_or_else(PoisonError::into_inner),
    }
}
