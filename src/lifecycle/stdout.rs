//! Noticing that nobody reads stdout any more (`zero exec ... | head -c1`), even while the run
//! has nothing to write: a run blocked on a 10-minute command would otherwise learn of it only
//! when it next wrote, long after the reader left.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::stat::{SFlag, fstat};

/// Calls `on_closed` (once, from a watcher thread) when stdout is a pipe or socket whose
/// reading end has closed. Does nothing for a terminal or a file, which cannot close on us.
pub(crate) fn watch_stdout(on_closed: impl FnOnce() + Send + 'static) {
    let stdout = std::io::stdout();
    let Ok(stat) = fstat(stdout.as_fd().as_raw_fd()) else {
        return;
    };
    let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
    if kind != SFlag::S_IFIFO && kind != SFlag::S_IFSOCK {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("zero-stdout".into())
        .spawn(move || {
            // SAFETY: fd 1 stays open for the life of the process.
            let fd = unsafe { BorrowedFd::borrow_raw(libc::STDOUT_FILENO) };
            loop {
                // No events asked for: poll reports only POLLERR/POLLHUP, which is exactly
                // "the reader is gone" for the writing end of a pipe or socket.
                let mut fds = [PollFd::new(fd, PollFlags::empty())];
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(0) | Err(Errno::EINTR) | Err(Errno::EAGAIN) => {}
                    Ok(_) => {
                        let gone = PollFlags::POLLERR | PollFlags::POLLHUP;
                        if fds[0]
                            .revents()
                            .is_some_and(|events| events.intersects(gone))
                        {
                            on_closed();
                            return;
                        }
                    }
                    Err(_) => return,
                }
            }
        });
}
