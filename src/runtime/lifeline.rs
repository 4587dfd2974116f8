//! The lifeline: one pipe per process whose write end only this process holds, and whose read
//! end every child it starts inherits. When this process dies — however it dies, even by
//! SIGKILL — the kernel closes the write end and every child's read end reaches EOF at once.
//!
//! Invariants this module protects:
//! - the write end is never inherited: it is opened close-on-exec and never duplicated, so no
//!   child, grandchild or escaped daemon can hold it (if one did, EOF would never come);
//! - the read end is inheritable for the whole life of the process, so a child receives it
//!   with nothing to do between fork and exec (guardians are spawned the cheap `vfork` way);
//!   [`ZERO_LIFELINE_FD`] tells the child its number. A guardian moves it to
//!   [`CHILD_LIFELINE_FD`] for its command;
//! - only EOF means the parent died: interrupted reads, spurious wake-ups and non-blocking
//!   "try again" are retried, so a parent that is merely stopped (SIGSTOP) never looks dead.

use crate::environ::names::ZERO_LIFELINE_FD;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// The fd a guardian's command finds its lifeline on.
pub(crate) const CHILD_LIFELINE_FD: RawFd = 3;

/// The lowest fd lifeline ends are kept on: above the well-known [`CHILD_LIFELINE_FD`], so a
/// guardian placing its lifeline there never `dup2`s an fd onto itself (which would leave
/// close-on-exec set).
const HIGH_FD: RawFd = 10;

/// This process's lifeline.
struct Lifeline {
    read: OwnedFd,
    /// Held, never used: its only job is to be closed by the kernel when this process dies.
    _write: OwnedFd,
}

/// The read end of this process's lifeline (created on first use, inheritable), whose number
/// a child is told in [`ZERO_LIFELINE_FD`].
pub(crate) fn read_end() -> io::Result<RawFd> {
    static LIFELINE: OnceLock<Result<Lifeline, Errno>> = OnceLock::new();
    LIFELINE
        .get_or_init(|| {
            let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
            let read = fcntl(read.as_raw_fd(), FcntlArg::F_DUPFD(HIGH_FD))?;
            Ok(Lifeline {
                // SAFETY: fcntl just returned this fd and nothing else owns it.
                read: unsafe { OwnedFd::from_raw_fd(read) },
                _write: high_cloexec(write.as_raw_fd())?,
            })
        })
        .as_ref()
        .map(|lifeline| lifeline.read.as_raw_fd())
        .map_err(|errno| io::Error::from(*errno))
}

/// A close-on-exec duplicate of `fd` numbered at least [`HIGH_FD`]; the original is closed
/// when its owner drops it.
pub(crate) fn high_cloexec(fd: RawFd) -> Result<OwnedFd, Errno> {
    let duplicate = fcntl(fd, FcntlArg::F_DUPFD_CLOEXEC(HIGH_FD))?;
    // SAFETY: fcntl just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(duplicate) })
}

/// Places `source` on fd `target` in a freshly forked child, without close-on-exec.
/// Async-signal-safe (one `dup2`), for `pre_exec`.
pub(crate) fn place_in_child(source: RawFd, target: RawFd) -> io::Result<()> {
    // SAFETY: dup2 on fds this process owns; it allocates nothing.
    if unsafe { libc::dup2(source, target) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The lifeline this process inherited from its parent, if the environment names one that is
/// open. It is returned as inherited (inheritable); the caller decides what its own children
/// get. Only the first call can get it — every later one gets `None` — since whoever holds the
/// returned fd closes it, and a second owner would close it twice (or close whatever took its
/// number since).
pub(crate) fn inherited() -> Option<OwnedFd> {
    static TAKEN: AtomicBool = AtomicBool::new(false);
    take_once(&TAKEN, || std::env::var(ZERO_LIFELINE_FD).ok())
}

/// [`inherited`]'s work: the open fd `named` gives the number of, unless `taken` says it was
/// taken already.
fn take_once(taken: &AtomicBool, named: impl FnOnce() -> Option<String>) -> Option<OwnedFd> {
    if taken.swap(true, Ordering::SeqCst) {
        return None;
    }
    let fd: RawFd = named()?.trim().parse().ok()?;
    fcntl(fd, FcntlArg::F_GETFD).ok()?;
    // SAFETY: the parent placed this fd for us, and only this first call claims it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Marks `fd` close-on-exec, so this process's children do not inherit it.
pub(crate) fn set_cloexec(fd: RawFd) -> Result<(), Errno> {
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map(drop)
}

/// What one look at a lifeline found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pulse {
    /// The parent is alive (or the look was interrupted): keep watching.
    Alive,
    /// EOF: every write end is closed, so the parent is dead.
    ParentDied,
}

/// Reads from a lifeline that `poll` said was ready. Only a read of 0 bytes is EOF; stray data,
/// `EINTR` and `EAGAIN` mean nothing, and any other error is treated as alive (watching goes on
/// rather than tearing down on a guess).
pub(crate) fn read_pulse(fd: BorrowedFd<'_>) -> Pulse {
    let mut byte = [0u8; 1];
    match nix::unistd::read(fd.as_raw_fd(), &mut byte) {
        Ok(0) => Pulse::ParentDied,
        Ok(_) | Err(_) => Pulse::Alive,
    }
}

/// Blocks until the lifeline reaches EOF (the parent died). Never returns otherwise.
pub(crate) fn wait_for_eof(fd: BorrowedFd<'_>) {
    loop {
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(0) | Err(Errno::EINTR) | Err(Errno::EAGAIN) => continue,
            Ok(_) => {}
            // A bad fd cannot tell us anything; sleeping beats spinning.
            Err(_) => std::thread::sleep(super::timing::LIFELINE_RETRY),
        }
        if read_pulse(fd) == Pulse::ParentDied {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    #[test]
    fn the_read_end_is_high_and_inheritable() {
        let read = read_end().unwrap();
        assert!(read >= HIGH_FD);
        let flags = FdFlag::from_bits_truncate(fcntl(read, FcntlArg::F_GETFD).unwrap());
        assert!(!flags.contains(FdFlag::FD_CLOEXEC));
        assert_eq!(read_end().unwrap(), read, "one lifeline per process");
    }

    #[test]
    fn an_inherited_lifeline_is_taken_once() {
        let (read, _write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        let number = std::os::fd::IntoRawFd::into_raw_fd(read);
        let taken = AtomicBool::new(false);
        let first = take_once(&taken, || Some(number.to_string()));
        assert_eq!(first.as_ref().map(AsRawFd::as_raw_fd), Some(number));
        assert!(take_once(&taken, || Some(number.to_string())).is_none());
    }

    #[test]
    fn eof_is_seen_only_once_every_writer_is_gone() {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        nix::unistd::write(&write, b"x").unwrap();
        assert_eq!(read_pulse(read.as_fd()), Pulse::Alive, "data is not death");
        drop(write);
        wait_for_eof(read.as_fd());
        assert_eq!(read_pulse(read.as_fd()), Pulse::ParentDied);
    }
}
