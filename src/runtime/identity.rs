//! Knowing which process a record means, and signalling its group only while it is still that
//! process. A pid alone is not an identity: once a process is reaped its pid can be handed to
//! an unrelated process, so the runtime pairs the pid with the process's start time.

use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Pid, getpgrp};

use super::TaskRecord;
use super::timing::{AFTER_KILL_WAIT, FOREIGN_POLL};

/// A process as the runtime recorded it: its pid (which is also its process group id, since
/// every task leads its own group) and, where the platform tells, its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcessIdentity {
    /// The process id.
    pub(crate) pid: u32,
    /// Start time in clock ticks since boot (Linux); `None` where the platform does not say.
    pub(crate) start_time: Option<u64>,
}

impl ProcessIdentity {
    /// The identity of a process that was just started.
    pub(crate) fn of(pid: u32) -> Self {
        ProcessIdentity {
            pid,
            start_time: start_time(pid),
        }
    }

    /// The process a record names, when that can be checked on this machine now: the record
    /// must carry all three of pid, start time and boot id, and the boot id must be this
    /// boot's. Anything less is no evidence across processes, so such a record's pid is never
    /// signalled (`None`).
    pub(crate) fn recorded(record: &TaskRecord, current_boot: Option<&str>) -> Option<Self> {
        let same_boot =
            matches!((record.boot_id.as_deref(), current_boot), (Some(a), Some(b)) if a == b);
        match (record.pid, record.start_time) {
            (Some(pid), Some(start_time)) if same_boot => Some(ProcessIdentity {
                pid,
                start_time: Some(start_time),
            }),
            _ => None,
        }
    }

    /// Whether the recorded process is still running: it is the same process and not a zombie
    /// (a zombie of a dead run waits for a reaper this process cannot be, and has ended).
    pub(crate) fn is_running(&self) -> bool {
        self.is_current() && !is_zombie(self.pid)
    }

    /// Whether the process is still the one recorded (alive or an unreaped zombie). Where the
    /// start time is unknown, existence is the best evidence there is.
    fn is_current(&self) -> bool {
        match self.start_time {
            Some(recorded) => start_time(self.pid) == Some(recorded),
            None => nix::sys::signal::kill(self.pid(), None).is_ok(),
        }
    }

    /// The pid as nix wants it.
    pub(crate) fn pid(&self) -> Pid {
        Pid::from_raw(self.pid as i32)
    }

    /// Sends `signal` to the process's group — but never to our own group, never to a group
    /// whose leader is no longer this process, and a group that is already empty is fine.
    pub(crate) fn signal_group(&self, signal: Signal) -> Result<(), Errno> {
        let pgid = self.pid();
        if self.pid <= 1 || pgid == getpgrp() || !self.is_current() {
            return Ok(());
        }
        match killpg(pgid, signal) {
            Ok(()) | Err(Errno::ESRCH) => Ok(()),
            Err(errno) => Err(errno),
        }
    }
}

/// The fields of `/proc/<pid>/stat` zero uses, read in one place.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    /// The parent's pid (field 4).
    pub(crate) ppid: i32,
    /// The process group id (field 5).
    pub(crate) pgid: i32,
    /// Whether it has ended and waits to be reaped (state `Z`, or `X` while going).
    pub(crate) zombie: bool,
    /// Start time in clock ticks since boot (field 22).
    pub(crate) start_time: u64,
}

#[cfg(target_os = "linux")]
impl ProcStat {
    /// Reads `/proc/<pid>/stat`; `None` when the process is gone or the line is malformed.
    pub(crate) fn read(pid: i32) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Field 2 (the command name) is parenthesized and may itself contain spaces and ')', so
        // count fields from the last ')': field 3 is the first one after it.
        let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
        let field = |number: usize| fields.get(number - 3).copied();
        let state = field(3)?;
        Some(ProcStat {
            ppid: field(4)?.parse().ok()?,
            pgid: field(5)?.parse().ok()?,
            zombie: state == "Z" || state == "X",
            start_time: field(22)?.parse().ok()?,
        })
    }
}

/// The start time of `pid` in clock ticks since boot.
#[cfg(target_os = "linux")]
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    ProcStat::read(pid as i32).map(|stat| stat.start_time)
}

/// Other platforms do not expose a start time this cheaply.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start_time(_pid: u32) -> Option<u64> {
    None
}

/// Whether `pid` is a zombie.
#[cfg(target_os = "linux")]
fn is_zombie(pid: u32) -> bool {
    ProcStat::read(pid as i32).is_some_and(|stat| stat.zombie)
}

/// Other platforms: no cheap way to tell; a zombie counts as running.
#[cfg(not(target_os = "linux"))]
fn is_zombie(_pid: u32) -> bool {
    false
}

/// Stops the process groups of processes this process did not start (another run's tasks):
/// SIGTERM to every group, up to `grace` for all of them to end, SIGKILL to what is left, and
/// a last bounded wait. Each signal is identity-checked ([`ProcessIdentity::signal_group`]).
/// Ending is observed by polling, since only a parent can wait for a process. Returns the
/// processes still running at the end. Blocking.
///
/// This ladder is not the runtime's (`stop::stop_guarded`): there is no guardian of ours to
/// ask and no child to wait for, so it signals the groups itself and polls. `timing` says how
/// its waits relate to the others'.
pub(crate) fn stop_foreign_groups(
    processes: &[ProcessIdentity],
    grace: Duration,
) -> Vec<ProcessIdentity> {
    let mut left: Vec<ProcessIdentity> = processes.to_vec();
    for (signal, wait) in [(Signal::SIGTERM, grace), (Signal::SIGKILL, AFTER_KILL_WAIT)] {
        for process in &left {
            // An error here (EPERM) leaves the process running, which the result reports.
            let _ = process.signal_group(signal);
        }
        let deadline = Instant::now() + wait;
        loop {
            left.retain(ProcessIdentity::is_running);
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(FOREIGN_POLL);
        }
        if left.is_empty() {
            break;
        }
    }
    left
}

/// The kernel's boot id, which scopes start times to one boot (Linux).
pub(crate) fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn our_own_start_time_is_stable_and_a_dead_pid_has_none() {
        let me = std::process::id();
        let first = start_time(me).expect("own start time");
        assert_eq!(start_time(me), Some(first));
        assert!(ProcessIdentity::of(me).is_current());
        let impostor = ProcessIdentity {
            pid: me,
            start_time: Some(first + 1),
        };
        assert!(!impostor.is_current());
        assert!(boot_id().is_some());
    }

    #[test]
    fn our_own_group_is_never_signalled() {
        let me = ProcessIdentity::of(getpgrp().as_raw() as u32);
        // Were this delivered, the test process would die.
        assert_eq!(me.signal_group(Signal::SIGKILL), Ok(()));
    }
}
