//! Finding the processes a test started, by a nonce in their command line, and making sure
//! they are gone.

use std::time::Duration;

use super::wait::wait_for;

/// A `sleep` argument unique to this test (`300.<digits>`), to find its process by.
pub fn nonce() -> String {
    format!("300.{}{}", std::process::id(), fastrand::u32(..1_000_000))
}

/// A live process, by pid and argv.
#[derive(Debug, Clone)]
pub struct Process {
    /// Its pid.
    pub pid: u32,
    /// Its command line, one string per argument.
    pub argv: Vec<String>,
}

/// The fields of `/proc/<pid>/stat` the tests and the benchmark harness read.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    /// The state letter (`R`, `S`, `Z`...).
    pub state: char,
    /// The parent's pid.
    pub ppid: i32,
    /// The process group id.
    pub pgid: i32,
    /// Start time in clock ticks since boot.
    pub start_time: u64,
}

impl Stat {
    /// Whether the process has ended and waits to be reaped.
    pub fn zombie(&self) -> bool {
        self.state == 'Z'
    }
}

/// `/proc/<pid>/stat` of `pid`, or `None` once it is gone. The command name can hold spaces
/// and parentheses, so the fields are counted after its last `)`.
pub fn stat(pid: i32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // Field 3 of the line is the first after the name.
    let field = |number: usize| fields.get(number - 3).copied();
    Some(Stat {
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        pgid: field(5)?.parse().ok()?,
        start_time: field(22)?.parse().ok()?,
    })
}

/// Whether a thread of process `pid` is inside a `write` to fd 1: its stdout is full and
/// nobody reads it (the kernel's view, from `/proc/<pid>/task/<tid>/syscall`: the syscall
/// number, then its arguments).
pub fn blocked_writing_stdout(pid: i32) -> bool {
    let blocked = format!("{} 0x1 ", libc::SYS_write);
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("syscall")).ok())
        .any(|syscall| syscall.starts_with(&blocked))
}

/// The live (non-zombie) processes with `needle` in their command line.
pub fn processes(needle: &str) -> Vec<Process> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let zombie = stat(pid as i32)?.zombie();
            let argv: Vec<String> = cmdline
                .split(|byte| *byte == 0)
                .filter(|part| !part.is_empty())
                .map(|part| String::from_utf8_lossy(part).into_owned())
                .collect();
            (!zombie && argv.iter().any(|arg| arg.contains(needle)))
                .then_some(Process { pid, argv })
        })
        .collect()
}

/// The live (non-zombie) processes below `ancestor`, its children's children included.
pub fn descendants(ancestor: u32) -> Vec<Process> {
    let mut all = processes("");
    let parent = |pid: u32| stat(pid as i32).map(|stat| stat.ppid as u32);
    all.retain(|process| {
        let mut pid = process.pid;
        while let Some(up) = parent(pid).filter(|up| *up > 1) {
            if up == ancestor {
                return true;
            }
            pid = up;
        }
        false
    });
    all
}

/// The pids of live (non-zombie) processes with `needle` in their command line.
pub fn processes_with(needle: &str) -> Vec<u32> {
    processes(needle).into_iter().map(|p| p.pid).collect()
}

/// How long the processes a test started may outlive what ends them (a run that exited, a
/// stopped task, a killed run whose guardians saw their lifeline close): far more than the
/// tests' 300 ms grace periods and the kernel's delivery of the signals take.
const GONE_WITHIN: Duration = Duration::from_secs(3);

/// Waits until no live process has `needle` in its command line, failing the test (and naming
/// the survivors) after [`GONE_WITHIN`].
pub fn assert_gone_soon(needle: &str) {
    wait_for(Survivors(needle), GONE_WITHIN, || {
        processes(needle).is_empty().then_some(())
    });
}

/// What [`assert_gone_soon`] waits on, formatted when the wait fails: the processes still there.
struct Survivors<'a>(&'a str);

impl std::fmt::Display for Survivors<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let survivors: Vec<(u32, String)> = processes(self.0)
            .into_iter()
            .map(|p| (p.pid, p.argv.join(" ")))
            .collect();
        write!(
            f,
            "the processes with {} to end; still running: {survivors:?}",
            self.0
        )
    }
}

/// SIGKILLs whatever still carries the nonce when the test ends, pass or fail.
pub struct KillOnDrop(pub String);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in processes_with(&self.0) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The same open file as `pid`'s descriptor of `path` (not a new open of it, which would have
/// a lock of its own), as a child process of `pid` has one between fork and exec.
pub fn fd_copy_of(pid: u32, path: &std::path::Path) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    let fd = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .find(|entry| std::fs::read_link(entry.path()).is_ok_and(|target| target == path))
        .unwrap_or_else(|| panic!("zero holds no descriptor of {}", path.display()))
        .file_name()
        .to_string_lossy()
        .parse::<i32>()
        .unwrap();
    // SAFETY: plain system calls; each result is checked before it is used as a descriptor.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) as libc::c_int;
        assert!(
            pidfd >= 0,
            "pidfd_open: {}",
            std::io::Error::last_os_error()
        );
        let copy = libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) as libc::c_int;
        let error = std::io::Error::last_os_error();
        libc::close(pidfd);
        assert!(copy >= 0, "pidfd_getfd: {error}");
        std::os::fd::OwnedFd::from_raw_fd(copy)
    }
}

/// Lets go of `copy` a moment from now, on a thread of its own (join it), as a child between
/// fork and exec lets go of its parent's files when it reaches its `exec`.
pub fn let_go_soon(copy: std::os::fd::OwnedFd) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(copy);
    })
}
