//! Running one child and measuring it: wall time, how it ended, its own peak RSS, and the peak
//! RSS of its whole process tree (sampled).
//!
//! Its own peak is `wait4`'s `ru_maxrss` when that can be trusted, else the last sampled
//! `VmHWM`. Linux folds the high-water mark of the memory a process had *before* `exec` into
//! `ru_maxrss`, and a child spawned with `vfork` (as std does) had the harness's: once the
//! harness has grown past zero (it keeps every request of a 200-turn job), `ru_maxrss` reports
//! the harness. `VmHWM` belongs to the post-`exec` memory only, but is read while the process
//! lives, so it misses growth in the last sampling interval.
//!
//! `RUSAGE_CHILDREN` would give the largest single descendant, not the sum of what runs at
//! once, so the tree figure sums `VmRSS` of zero and every descendant alive at a sample, every
//! [`SAMPLE_EVERY`]; it can miss a peak shorter than that, it overstates a little (pages a
//! child shares with zero, such as libc's, count in both), and it costs a `/proc` scan per
//! sample (about 100 processes here: well under a millisecond).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::support::procs::stat;

/// How often the tree's memory is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// A started child whose tree is being sampled.
pub struct Running {
    child: Child,
    /// Just before `spawn`.
    pub launched: Instant,
    /// The harness's own high-water mark when it spawned the child: a `ru_maxrss` at or below
    /// it may be the harness's, not the child's.
    harness_peak_kib: u64,
    sampler: Sampler,
}

/// How a measured child ended.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    /// Launch to the moment `wait4` returned.
    pub wall: Duration,
    /// When `wait4` returned.
    pub ended: Instant,
    /// The exit code, or `128 + signal` when a signal ended it (as a shell reports it).
    pub code: i32,
    /// The child's own peak resident set, in KiB (see the module documentation).
    pub own_peak_kib: u64,
    /// The sampled peak of the summed resident sets of the child and its descendants, in KiB.
    pub tree_peak_kib: u64,
    /// The largest peak resident set (`VmHWM`) any single descendant reached, as last sampled,
    /// in KiB: a specialist child's own peak, when it is the big one.
    pub descendant_peak_kib: u64,
}

/// Starts `command` and begins sampling its tree.
pub fn start(command: &mut Command) -> io::Result<Running> {
    let harness_peak_kib = kib(std::process::id() as i32, "VmHWM:").unwrap_or(u64::MAX);
    let launched = Instant::now();
    let child = command.spawn()?;
    let sampler = Sampler::start(child.id() as i32);
    Ok(Running {
        child,
        launched,
        harness_peak_kib,
        sampler,
    })
}

impl Running {
    /// The child's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits for the child with `wait4`, so the kernel's rusage for it comes back too.
    pub fn wait(self) -> io::Result<Finished> {
        let (status, usage) = wait4(self.pid())?;
        let ended = Instant::now();
        // `std::process::Child` never waited, so dropping it neither reaps nor kills anything.
        drop(self.child);
        let peaks = self.sampler.stop();
        let max_rss = usage.ru_maxrss as u64;
        Ok(Finished {
            wall: ended - self.launched,
            ended,
            code: shell_code(status),
            own_peak_kib: if max_rss > self.harness_peak_kib {
                max_rss
            } else {
                peaks.own
            },
            tree_peak_kib: peaks.tree,
            descendant_peak_kib: peaks.descendant,
        })
    }
}

fn wait4(pid: i32) -> io::Result<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own unreaped child; both pointers are to live locals.
        if unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } == pid {
            return Ok((status, usage));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

fn shell_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }
}

/// The peaks a [`Sampler`] saw, in KiB.
#[derive(Debug, Default)]
struct Peaks {
    /// The root's `VmHWM`, once it has exec'd.
    own: u64,
    tree: u64,
    descendant: u64,
}

/// A thread that samples a tree's memory until stopped.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Peaks>,
}

impl Sampler {
    fn start(root: i32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = Arc::clone(&stop);
            move || {
                let mut peaks = Peaks::default();
                while !stop.load(Ordering::Relaxed) {
                    if !unexecuted_fork(root) {
                        peaks.own = peaks.own.max(kib(root, "VmHWM:").unwrap_or(0));
                    }
                    let below: Vec<i32> = descendants(root)
                        .into_iter()
                        .filter(|&pid| !unexecuted_fork(pid))
                        .collect();
                    let tree = std::iter::once(root).chain(below.iter().copied());
                    peaks.tree = peaks
                        .tree
                        .max(tree.filter_map(|pid| kib(pid, "VmRSS:")).sum());
                    let largest = below.iter().filter_map(|&pid| kib(pid, "VmHWM:")).max();
                    peaks.descendant = peaks.descendant.max(largest.unwrap_or(0));
                    std::thread::sleep(SAMPLE_EVERY);
                }
                peaks
            }
        });
        Sampler { stop, thread }
    }

    /// Stops sampling and returns the peaks seen.
    fn stop(self) -> Peaks {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// Whether `pid` is a fork that has not exec'd yet: its command line is its parent's. Such a
/// child shares its parent's pages (`vfork`, or copy-on-write), so adding its RSS would count
/// the parent twice.
fn unexecuted_fork(pid: i32) -> bool {
    let cmdline = |pid: i32| fs::read(format!("/proc/{pid}/cmdline")).ok();
    ppid(pid).is_some_and(|ppid| cmdline(pid).is_some_and(|own| cmdline(ppid) == Some(own)))
}

/// A `/proc/<pid>/status` field given in kB (`VmRSS:`, `VmHWM:`).
fn kib(pid: i32, field: &str) -> Option<u64> {
    status_field(&status(pid)?, field)
}

/// The parent's pid.
fn ppid(pid: i32) -> Option<i32> {
    status_field(&status(pid)?, "PPid:")
}

/// `/proc/<pid>/status`, if the process is still there.
fn status(pid: i32) -> Option<String> {
    fs::read_to_string(format!("/proc/{pid}/status")).ok()
}

/// The first word after `field` on the line of `status` that starts with it, parsed.
fn status_field<T: std::str::FromStr>(status: &str, field: &str) -> Option<T> {
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Every live process below `root`, found by walking parent links in `/proc`.
pub fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, ppid) in processes() {
        children.entry(ppid).or_default().push(pid);
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        let below = children.remove(&parent).unwrap_or_default();
        found.extend(&below);
        queue.extend(below);
    }
    found
}

/// Whether `pid` names a process that has not exited (a zombie counts as gone).
pub fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|stat| !stat.zombie())
}

/// The command name of `pid`, if it is still there.
pub fn name(pid: i32) -> Option<String> {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|name| name.trim_end().to_string())
}

/// `(pid, ppid)` of every live process.
fn processes() -> Vec<(i32, i32)> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            // One read a process: this runs in the sampler, alongside what it measures.
            let status = status(pid)?;
            let zombie = status_field::<String>(&status, "State:")? == "Z";
            (!zombie).then_some((pid, status_field(&status, "PPid:")?))
        })
        .collect()
}

/// Polls until `done` holds or `limit` passes; returns how long it took, or `None` on timeout.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}
