//! Observing a task's process end, and reaping it — two separate steps on purpose.
//!
//! Between them the process is a zombie: it still owns its pid, so neither the pid nor its
//! process group id can be handed to another process. That is what makes signalling the group
//! safe at any moment before the reap, and why the runtime reaps only once it has finished
//! signalling. Both calls block; run them on blocking threads.

use nix::errno::Errno;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum ProcessEnd {
    /// It exited with this code.
    Exited(i32),
    /// This signal ended it.
    Signalled(i32),
}

impl ProcessEnd {
    /// The end a wait status describes, if it describes one.
    pub(crate) fn from_status(status: WaitStatus) -> Option<Self> {
        match status {
            WaitStatus::Exited(_, code) => Some(ProcessEnd::Exited(code)),
            WaitStatus::Signaled(_, signal, _) => Some(ProcessEnd::Signalled(signal as i32)),
            _ => None,
        }
    }
}

/// Blocks until child `pid` has ended and says how, leaving it unreaped.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
pub(crate) fn wait_for_end(pid: u32) -> Result<ProcessEnd, Errno> {
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
    until_ended(|| waitid(Id::Pid(Pid::from_raw(pid as i32)), flags))
}

/// Where `waitid(WNOWAIT)` is unavailable the end is observed by reaping, so the zombie's
/// protection is lost: between this reap and the runtime's last signal a recycled pid could in
/// principle lead a new group. The identity check before each signal narrows that window.
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
pub(crate) fn wait_for_end(pid: u32) -> Result<ProcessEnd, Errno> {
    until_ended(|| waitpid(Pid::from_raw(pid as i32), None))
}

/// Repeats a wait call until it reports an end, retrying interruptions.
fn until_ended(mut wait: impl FnMut() -> nix::Result<WaitStatus>) -> Result<ProcessEnd, Errno> {
    loop {
        match wait() {
            Ok(status) => {
                if let Some(end) = ProcessEnd::from_status(status) {
                    return Ok(end);
                }
            }
            Err(Errno::EINTR) => {}
            Err(errno) => return Err(errno),
        }
    }
}

/// Reaps child `pid`, which has already ended (a child that is already gone is fine).
pub(crate) fn reap(pid: u32) -> Result<(), Errno> {
    loop {
        match waitpid(Pid::from_raw(pid as i32), None) {
            Ok(_) | Err(Errno::ECHILD) => return Ok(()),
            Err(Errno::EINTR) => {}
            Err(errno) => return Err(errno),
        }
    }
}
