//! A lease: an exclusive `flock` on a file that says a run is alive while it is held, and the
//! file naming the process that took it, so a lease held only by a copy of that process's
//! open file is told apart from a live run.
//!
//! A `flock` belongs to the open file, not to a process, and a child shares its parent's open
//! files from `fork` until its `exec` closes the close-on-exec ones. So a zero SIGKILLed while
//! it starts a child (the next command's warm guardian, its own `git`) leaves its lease held a
//! moment longer, by a process that will never use it, and the next zero would take the dead
//! run for a live one. The lease file's last line names its owner (`pid start_time boot_id`);
//! held while that process is gone, a lease is tried again for a while
//! ([`LEASE_COPY_WAIT`]) before it counts as held. An owner of another boot, or a file that
//! names none (empty, written by hand or by an older zero), is never guessed about: held means
//! alive.
//!
//! The run's lease (`runs/<run_id>.lock`), a run's worktree lease and a session's lease are
//! all taken and tried through here. Blocking (file system only, and the bounded wait).

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use nix::fcntl::{Flock, FlockArg};

use super::identity::{self, ProcessIdentity};
use super::timing::{LEASE_COPY_POLL, LEASE_COPY_WAIT};

/// The most of a lease file read for its owner: a holder's name line and the owner's line.
const OWNER_LIMIT: usize = 256;

/// What a lease taken by this process writes as its last line: its owner's line, or nothing
/// where the platform does not say a process's start time and the boot id (then a held lease
/// always means a live run).
pub(crate) fn owner_line() -> String {
    Owner::this_process().map_or_else(String::new, |owner| owner.to_string())
}

/// What [`lock_unless_held`] found.
pub(crate) enum Locked {
    /// Nobody held it; now the caller does, until the value is dropped.
    Taken(Flock<File>),
    /// Somebody holds it: the file, given back to be read (whom it names).
    Held(File),
}

/// Locks `file` (`arg`: a non-blocking exclusive or shared lock), or says it is held. Held
/// while the owner the file names is gone, the holder is a copy in a child that has not
/// reached its `exec` yet, or a reconciler at work on the dead run: that is waited for, up to
/// [`LEASE_COPY_WAIT`].
pub(crate) fn lock_unless_held(mut file: File, arg: FlockArg) -> io::Result<Locked> {
    let mut owner_gone = None;
    let deadline = Instant::now() + LEASE_COPY_WAIT;
    loop {
        file = match Flock::lock(file, arg) {
            Ok(lock) => return Ok(Locked::Taken(lock)),
            Err((file, nix::errno::Errno::EWOULDBLOCK)) => file,
            Err((_, errno)) => return Err(io::Error::from(errno)),
        };
        let gone =
            *owner_gone.get_or_insert_with(|| named_owner(&file).is_some_and(|o| o.is_gone()));
        if !gone || Instant::now() >= deadline {
            return Ok(Locked::Held(file));
        }
        std::thread::sleep(LEASE_COPY_POLL);
    }
}

/// The owner `lease`'s last line names. A file that cannot be read names none.
fn named_owner(lease: &File) -> Option<Owner> {
    let mut bytes = [0; OWNER_LIMIT];
    let read = lease.read_at(&mut bytes, 0).ok()?;
    let contents = std::str::from_utf8(&bytes[..read]).ok()?;
    Owner::parse(contents.lines().last()?)
}

/// The process that took a lease, as its lease file names it.
#[derive(Debug, PartialEq, Eq)]
struct Owner {
    pid: u32,
    start_time: u64,
    boot_id: String,
}

impl Owner {
    /// This process, where the platform says its start time and the boot id (Linux).
    fn this_process() -> Option<Owner> {
        let pid = std::process::id();
        Some(Owner {
            pid,
            start_time: identity::start_time(pid)?,
            boot_id: identity::boot_id()?,
        })
    }

    /// The owner `line` names: `pid start_time boot_id`, and nothing else.
    fn parse(line: &str) -> Option<Owner> {
        let mut words = line.split_ascii_whitespace();
        let owner = Owner {
            pid: words.next()?.parse().ok()?,
            start_time: words.next()?.parse().ok()?,
            boot_id: words.next()?.to_string(),
        };
        words.next().is_none().then_some(owner)
    }

    /// Whether it is gone for certain: named on this boot, and its pid no longer that process.
    fn is_gone(&self) -> bool {
        identity::boot_id().is_some_and(|boot| boot == self.boot_id)
            && !ProcessIdentity {
                pid: self.pid,
                start_time: Some(self.start_time),
            }
            .is_running()
    }
}

/// The owner's line in a lease file.
impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} {} {}", self.pid, self.start_time, self.boot_id)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::Write;

    use super::*;

    /// A lease file written as a lease is: `lines` first (a holder's name), then `owner`.
    fn lease_naming(owner: &Owner, lines: &str) -> (tempfile::NamedTempFile, Flock<File>) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        write!(file, "{lines}{owner}").unwrap();
        let lock = Flock::lock(file.reopen().unwrap(), FlockArg::LockExclusiveNonblock).unwrap();
        (file, lock)
    }

    fn gone_owner() -> Owner {
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id();
        gone.wait().unwrap();
        Owner {
            pid,
            start_time: 1,
            ..Owner::this_process().unwrap()
        }
    }

    #[test]
    fn only_a_well_formed_last_line_names_an_owner() {
        let owner = Owner::this_process().unwrap();
        assert_eq!(
            Owner::parse(owner.to_string().trim_end()),
            Some(Owner::this_process().unwrap())
        );
        assert!(!owner.is_gone(), "this process is its owner");
        for hostile in [
            "",
            "12",
            "12 34",
            "x 34 boot",
            "12 34 boot extra",
            "-1 34 boot",
        ] {
            assert_eq!(Owner::parse(hostile), None, "{hostile:?}");
        }
        let elsewhere = Owner {
            boot_id: "another-boot".into(),
            ..owner
        };
        assert!(
            !elsewhere.is_gone(),
            "an owner of another boot is not known gone"
        );
        assert!(gone_owner().is_gone());
    }

    /// A copy of the lease's open file kept (as a child between fork and exec keeps one) while
    /// the owner the file names is gone: the lease is waited for, and taken once the copy lets
    /// go — also under a holder's name line. With the owner alive, held means held.
    #[test]
    fn a_lease_held_by_a_copy_after_its_owner_is_gone_is_waited_for() {
        for lines in ["", "run_holder\n"] {
            let (path, copy) = lease_naming(&gone_owner(), lines);
            let child_execs = std::thread::spawn(move || {
                std::thread::sleep(LEASE_COPY_WAIT / 4);
                drop(copy);
            });
            let file = path.reopen().unwrap();
            let lock = lock_unless_held(file, FlockArg::LockExclusiveNonblock).unwrap();
            assert!(matches!(lock, Locked::Taken(_)), "{lines:?}");
            child_execs.join().unwrap();
        }
        // A forged owner (the file rewritten to name a gone process) costs a live run's lease
        // a wait, never the run: the lock it still holds is never taken.
        let (path, _live) = lease_naming(&gone_owner(), "");
        let file = path.reopen().unwrap();
        let lock = lock_unless_held(file, FlockArg::LockExclusiveNonblock).unwrap();
        assert!(matches!(lock, Locked::Held(_)));
        let (path, _held) = lease_naming(&Owner::this_process().unwrap(), "");
        let file = path.reopen().unwrap();
        let started = Instant::now();
        let lock = lock_unless_held(file, FlockArg::LockSharedNonblock).unwrap();
        assert!(matches!(lock, Locked::Held(_)));
        assert!(
            started.elapsed() < LEASE_COPY_WAIT,
            "a live owner is not waited for"
        );
    }
}
