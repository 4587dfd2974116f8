//! The exec check, served by the guardian: with deny rules on commands in force, every
//! `execve(2)`/`execveat(2)` of the command's tree stops in the kernel until the guardian has
//! read its path and argv from the caller's memory and matched them against the rules with
//! the line check's matcher (`command_pattern::Exec`): refused with `EACCES`, or let through
//! (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`).
//!
//! The design, in order:
//! - the guardian installs the filter on itself (`sandbox::watch_execs`), single-threaded,
//!   once, after the rest of the sandbox: a warm guardian installs it before its first order
//!   and it holds for every command it is lent; the kernel makes the listener close-on-exec
//!   and the guardian never execs, so no command holds it. The filter is inherited by every
//!   process of the tree, and a second filter refuses any later filter that would ask for a
//!   listener of its own (the kernel would hand the notification to it instead);
//! - the command's own exec stops too, while the guardian's main thread waits in the spawn
//!   for it, so a helper thread answers for the spawn's length ([`Execs::while_starting`]),
//!   letting through the exec of exactly the program and arguments being started, zero's own
//!   shell (the line it runs passed the line check);
//! - from then on the guardian's one loop (`watch`) answers each notification as it comes
//!   ([`Serving`]), between its other waits;
//! - a refusal is a line on the command's stderr, which the model reads in the call's output,
//!   and a `refused` report to the runtime, which makes it a `permission_denied` event;
//! - after reading, the notification's id is checked again (`SECCOMP_IOCTL_NOTIF_ID_VALID`),
//!   so a reused pid is never judged by another process's memory.
//!
//! What it cannot see is in `docs/RULES.md`: what a process does without exec (a shell's
//! builtins, a program that pushes by itself), and a process that changes its argv memory
//! between the guardian's read and the kernel's (another thread of it, or a tracer).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::report::{ExecRefusal, MAX_REFUSALS_REPORTED, Report, ReportWriter};
use crate::command_pattern::Exec;
use crate::runtime::sandbox::{self, ExecRules};

/// The room a notification and a response get, in 8-byte words: far above what the kernel
/// uses (80 and 24 bytes), checked against what it says when the filter is installed.
const BUFFER_WORDS: usize = 32;

/// The most argv words read; a longer argv is matched as read, with an unknown rest.
const MAX_WORDS: usize = 4096;
/// The most bytes of argv text read.
const MAX_TEXT: usize = 256 * 1024;
/// The most bytes of the path read (`PATH_MAX`).
const MAX_PATH: usize = 4096;
/// The most blocks of another process's memory read for one exec.
const MAX_BLOCKS: usize = 128;
/// The unit memory is read in: 4 KiB, aligned, so a block is never partly mapped.
const BLOCK: usize = 4096;

/// The most bytes of argv and of the path a refusal shows.
const SHOWN_ARGV: usize = 1024;
const SHOWN_PATH: usize = 512;

/// The exec check of one guardian: its listener and the rules it answers by.
pub(super) struct Execs {
    listener: OwnedFd,
    rules: ExecRules,
}

impl Execs {
    /// Installs the exec check on this process when `rules` has any (see the module
    /// documentation); `None` when there is nothing to check. The error says why it cannot
    /// be.
    pub(super) fn watch(rules: ExecRules) -> Result<Option<Execs>, String> {
        if rules.is_empty() {
            return Ok(None);
        }
        let listener = sandbox::watch_execs().map_err(|error| error.to_string())?;
        kernel_sizes_fit().map_err(|error| format!("the exec check cannot be served: {error}"))?;
        wake_synchronously(&listener);
        Ok(Some(Execs { listener, rules }))
    }

    /// The listener, readable when an exec waits for its answer.
    pub(super) fn listener(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }

    /// Runs `start` (the command's spawn) while a helper thread answers the execs that
    /// happen meanwhile: the one of `program` with `args` goes through unchecked, any other
    /// is judged. Returns what `start` returned and the refusals made meanwhile. Without a
    /// helper the spawn would wait for ever for its exec's answer, so when none can be
    /// started, neither is the command.
    pub(super) fn while_starting<T>(
        &self,
        program: &OsStr,
        args: &[OsString],
        start: impl FnOnce() -> io::Result<T>,
    ) -> (io::Result<T>, Vec<ExecRefusal>) {
        let mut exempt: Vec<&[u8]> = vec![program.as_bytes()];
        exempt.extend(args.iter().map(|arg| arg.as_bytes()));
        let (done, finished) = match nix::unistd::pipe2(OFlag::O_CLOEXEC) {
            Ok(pipe) => pipe,
            Err(errno) => return (Err(errno.into()), Vec::new()),
        };
        std::thread::scope(|scope| {
            let helper = std::thread::Builder::new()
                .spawn_scoped(scope, || self.serve_until(&done, &exempt));
            let helper = match helper {
                Ok(helper) => helper,
                Err(error) => return (Err(error), Vec::new()),
            };
            let started = start();
            drop(finished);
            (started, helper.join().unwrap_or_default())
        })
    }

    /// Answers notifications until `done` is readable (its writer closed); returns the
    /// refusals.
    fn serve_until(&self, done: &OwnedFd, exempt: &[&[u8]]) -> Vec<ExecRefusal> {
        let mut refused = Vec::new();
        loop {
            let mut fds = [
                PollFd::new(self.listener(), PollFlags::POLLIN),
                PollFd::new(done.as_fd(), PollFlags::POLLIN),
            ];
            if poll(&mut fds, PollTimeout::NONE).unwrap_or(0) <= 0 {
                continue;
            }
            let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|events| !events.is_empty());
            let (notified, finished) = (ready(&fds[0]), ready(&fds[1]));
            if notified {
                refused.extend(self.answer(Some(exempt)));
            }
            if finished {
                return refused;
            }
        }
    }

    /// Answers the exec waiting on the listener: through when no rule refuses it (or its argv
    /// is `exempt`), `EACCES` when one does or its arguments cannot be read. Returns the
    /// refusal, if it was refused; nothing when no exec was waiting after all (its process
    /// died meanwhile).
    pub(super) fn answer(&self, exempt: Option<&[&[u8]]>) -> Option<ExecRefusal> {
        let notification = self.receive()?;
        let read = read_exec(&notification);
        // The process may have died and its pid been reused while its memory was read: the
        // answer is only for a notification still pending.
        if !self.still_pending(notification.id) {
            return None;
        }
        let refusal = match &read {
            Ok(read) if exempt.is_some_and(|argv| read.is(argv)) => None,
            Ok(read) => read.judged(notification.pid, &self.rules),
            Err(_) => Some(unreadable(notification.pid, &notification)),
        };
        self.respond(notification.id, refusal.is_none());
        refusal
    }

    /// The next notification; `None` when there is none after all (`ENOENT`: its process
    /// died) or the wait was interrupted.
    fn receive(&self) -> Option<libc::seccomp_notif> {
        let mut buffer = [0u64; BUFFER_WORDS];
        // SAFETY: the buffer is zeroed (the kernel asks it) and larger than the kernel's
        // notification (checked at install); it lives across the call.
        let answer = unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                buffer.as_mut_ptr(),
            )
        };
        // SAFETY: the buffer is larger than the struct and aligned for it; the kernel filled
        // its start.
        (answer == 0).then(|| unsafe { std::ptr::read(buffer.as_ptr().cast()) })
    }

    /// Whether the notification `id` still waits for its answer.
    fn still_pending(&self, id: u64) -> bool {
        // SAFETY: the kernel reads the u64 the pointer names, which lives across the call.
        let answer = unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
                &id as *const u64,
            )
        };
        answer == 0
    }

    /// Lets the exec of notification `id` go on when `allowed`, else fails it with `EACCES`.
    /// A process that died meanwhile needs no answer.
    fn respond(&self, id: u64, allowed: bool) {
        let response = libc::seccomp_notif_resp {
            id,
            val: 0,
            error: if allowed { 0 } else { -libc::EACCES },
            flags: if allowed {
                libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32
            } else {
                0
            },
        };
        let mut buffer = [0u64; BUFFER_WORDS];
        // SAFETY: the response is written at the start of a larger, aligned, zeroed buffer
        // (the kernel reads its own size of it), which lives across the ioctl.
        unsafe {
            std::ptr::write(buffer.as_mut_ptr().cast(), response);
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                buffer.as_mut_ptr(),
            );
        }
    }
}

/// `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP` (linux/seccomp.h, Linux 6.6; not in the libc crate):
/// the kernel wakes the waiting side of a notification on the CPU of the side that woke it.
const SYNC_WAKE_UP: u64 = 1;

/// Asks the kernel to hand each exec's notification to this guardian, and its answer back, on
/// the current CPU: an exec and its answer are a strict hand-off (the exec waits while the
/// guardian reads and matches), which is what the flag was made for, and it saves the two
/// cross-CPU wake-ups of every checked exec. Best effort: an older kernel refuses it and the
/// check works the same, only slower.
fn wake_synchronously(listener: &OwnedFd) {
    // SAFETY: the flags are the ioctl's argument itself (no memory is passed); its failure
    // changes nothing.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS,
            SYNC_WAKE_UP,
        );
    }
}

/// Whether the kernel's notification and response fit the buffers [`Execs`] uses.
fn kernel_sizes_fit() -> Result<(), String> {
    let mut sizes = libc::seccomp_notif_sizes {
        seccomp_notif: 0,
        seccomp_notif_resp: 0,
        seccomp_data: 0,
    };
    // SAFETY: the kernel writes the struct the pointer names, which lives across the call.
    let answer = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_NOTIF_SIZES,
            0,
            &mut sizes as *mut libc::seccomp_notif_sizes,
        )
    };
    if answer != 0 {
        return Err(io::Error::last_os_error().to_string());
    }
    let room = BUFFER_WORDS * 8;
    if usize::from(sizes.seccomp_notif) > room || usize::from(sizes.seccomp_notif_resp) > room {
        return Err(format!(
            "the kernel's notifications ({} bytes) outgrow zero's {room}",
            sizes.seccomp_notif
        ));
    }
    Ok(())
}

/// An exec as read from the memory of the process that called it.
#[derive(Debug)]
struct ReadExec {
    path: Vec<u8>,
    argv: Vec<Vec<u8>>,
    /// Whether the argv went on past what was read.
    cut: bool,
}

impl ReadExec {
    /// Whether it runs exactly `argv`.
    fn is(&self, argv: &[&[u8]]) -> bool {
        !self.cut
            && self.argv.len() == argv.len()
            && self.argv.iter().zip(argv).all(|(a, b)| a == b)
    }

    /// The refusal of this exec by `process`, when one of `rules` refuses it.
    fn judged(&self, process: u32, rules: &ExecRules) -> Option<ExecRefusal> {
        let exec = Exec {
            path: &self.path,
            argv: &self.argv,
            cut: self.cut,
        };
        let rule = exec.refused_by(rules.rules())?;
        Some(ExecRefusal {
            pid: process,
            path: shown(&self.path, SHOWN_PATH),
            argv: shown_argv(&self.argv, self.cut),
            rule: Some(rule.rule.clone()),
        })
    }
}

/// The refusal of an exec by `process` whose arguments could not be read.
fn unreadable(process: u32, notification: &libc::seccomp_notif) -> ExecRefusal {
    ExecRefusal {
        pid: process,
        path: format!("(system call {})", notification.data.nr),
        argv: Vec::new(),
        rule: None,
    }
}

/// `bytes` as text, cut to about `limit` bytes.
fn shown(bytes: &[u8], limit: usize) -> String {
    let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(limit)]).into_owned();
    if bytes.len() > limit {
        text.push('…');
    }
    text
}

/// `argv` as text, cut to about [`SHOWN_ARGV`] bytes in all, a last `…` when anything was
/// left out.
fn shown_argv(argv: &[Vec<u8>], cut: bool) -> Vec<String> {
    let mut shown_words = Vec::new();
    let mut left = SHOWN_ARGV;
    for word in argv {
        if left == 0 {
            break;
        }
        let text = shown(word, left);
        left = left.saturating_sub(word.len());
        shown_words.push(text);
    }
    if cut || shown_words.len() < argv.len() {
        shown_words.push("…".into());
    }
    shown_words
}

/// The path and argv of the exec `notification` stopped, read from its process's memory.
fn read_exec(notification: &libc::seccomp_notif) -> io::Result<ReadExec> {
    let data = &notification.data;
    let mut remote = Remote::new(notification.pid);
    let (path, argv, dirfd) = match i64::from(data.nr) {
        libc::SYS_execve => (data.args[0], data.args[1], None),
        libc::SYS_execveat => (data.args[1], data.args[2], Some(data.args[0])),
        // x32's numbers, whose 32-bit pointers are not read: refused.
        _ => return Err(io::Error::from(io::ErrorKind::Unsupported)),
    };
    let (mut path, _) = remote.string(path as usize, MAX_PATH)?;
    if path.is_empty()
        && let Some(dirfd) = dirfd
    {
        // `fexecve`: the file is the descriptor's.
        let link = format!("/proc/{}/fd/{}", notification.pid, dirfd as i32);
        path = std::fs::read_link(link)?.into_os_string().into_vec();
    }
    let (argv, cut) = remote.argv(argv as usize)?;
    Ok(ReadExec { path, argv, cut })
}

/// Another process's memory, read in aligned blocks with `process_vm_readv(2)`, each block
/// once (an argv's pointers and strings mostly share a few).
struct Remote {
    pid: libc::pid_t,
    blocks: Vec<(usize, Box<[u8; BLOCK]>)>,
}

impl Remote {
    fn new(pid: u32) -> Self {
        Remote {
            pid: pid as libc::pid_t,
            blocks: Vec::new(),
        }
    }

    /// The bytes from `address` to the end of its block.
    fn rest_of_block(&mut self, address: usize) -> io::Result<&[u8]> {
        let start = address - address % BLOCK;
        let index = match self.blocks.iter().position(|(at, _)| *at == start) {
            Some(index) => index,
            None => self.read_block(start)?,
        };
        Ok(&self.blocks[index].1[address - start..])
    }

    /// Reads the block at `start` and returns its index.
    fn read_block(&mut self, start: usize) -> io::Result<usize> {
        if self.blocks.len() >= MAX_BLOCKS {
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        let mut block = Box::new([0u8; BLOCK]);
        let local = libc::iovec {
            iov_base: block.as_mut_ptr().cast(),
            iov_len: BLOCK,
        };
        let remote = libc::iovec {
            iov_base: start as *mut libc::c_void,
            iov_len: BLOCK,
        };
        // SAFETY: `local` points at a live buffer of BLOCK bytes; the kernel writes only there
        // and reads only the other process.
        let read = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
        if read != BLOCK as isize {
            return Err(io::Error::last_os_error());
        }
        self.blocks.push((start, block));
        Ok(self.blocks.len() - 1)
    }

    /// The pointer at `address`.
    fn pointer(&mut self, address: usize) -> io::Result<usize> {
        let mut bytes = [0u8; size_of::<usize>()];
        let mut filled = 0;
        while filled < bytes.len() {
            let rest = self.rest_of_block(address + filled)?;
            let take = rest.len().min(bytes.len() - filled);
            bytes[filled..filled + take].copy_from_slice(&rest[..take]);
            filled += take;
        }
        Ok(usize::from_ne_bytes(bytes))
    }

    /// The NUL-terminated string at `address`, at most `limit` bytes of it, and whether it
    /// was read whole.
    fn string(&mut self, address: usize, limit: usize) -> io::Result<(Vec<u8>, bool)> {
        let mut text = Vec::new();
        while text.len() < limit {
            let wanted = limit - text.len();
            let rest = self.rest_of_block(address + text.len())?;
            let rest = &rest[..rest.len().min(wanted)];
            match memchr::memchr(0, rest) {
                Some(end) => {
                    text.extend_from_slice(&rest[..end]);
                    return Ok((text, true));
                }
                None => text.extend_from_slice(rest),
            }
        }
        Ok((text, false))
    }

    /// The NULL-terminated argv at `address` (none when it is NULL), within [`MAX_WORDS`]
    /// and [`MAX_TEXT`], and whether it went on past them.
    fn argv(&mut self, address: usize) -> io::Result<(Vec<Vec<u8>>, bool)> {
        let mut argv = Vec::new();
        let mut text = 0;
        if address == 0 {
            return Ok((argv, false));
        }
        loop {
            let word = self.pointer(address + argv.len() * size_of::<usize>())?;
            if word == 0 {
                return Ok((argv, false));
            }
            if argv.len() == MAX_WORDS || text >= MAX_TEXT {
                return Ok((argv, true));
            }
            let (bytes, whole) = self.string(word, MAX_TEXT - text)?;
            text += bytes.len();
            argv.push(bytes);
            if !whole {
                return Ok((argv, true));
            }
        }
    }
}

/// A guardian's serving of its exec check while it follows one command: the answers, and for
/// each refusal a line on the command's stderr and (for the first
/// [`MAX_REFUSALS_REPORTED`]) a report. Dropped before the command's last report, so it holds
/// the command's stderr no longer than the command does.
pub(super) struct Serving<'a> {
    execs: &'a Execs,
    /// The command's stderr, when it could be copied.
    stderr: Option<File>,
    report: &'a mut ReportWriter,
    reported: usize,
    /// The last refusal said, by process and argv: a program looked for along `PATH`
    /// (`execvp`) is refused once for each directory, and said once.
    last: Option<(u32, Vec<String>)>,
}

impl<'a> Serving<'a> {
    /// Serves `execs` for the command whose stderr is `stderr`, reporting on `report`.
    pub(super) fn new(
        execs: &'a Execs,
        stderr: Option<OwnedFd>,
        report: &'a mut ReportWriter,
    ) -> Self {
        Serving {
            execs,
            stderr: stderr.map(File::from),
            report,
            reported: 0,
            last: None,
        }
    }

    /// The listener, readable when an exec waits for its answer.
    pub(super) fn listener(&self) -> BorrowedFd<'_> {
        self.execs.listener()
    }

    /// Answers the exec waiting on the listener.
    pub(super) fn answer(&mut self) {
        if let Some(refusal) = self.execs.answer(None) {
            self.refused(refusal);
        }
    }

    /// Says that `refusal` was made, unless it was just said: on the command's stderr, and in
    /// a report.
    pub(super) fn refused(&mut self, refusal: ExecRefusal) {
        let seen = (refusal.pid, refusal.argv.clone());
        if self.last.as_ref() == Some(&seen) {
            return;
        }
        self.last = Some(seen);
        if let Some(stderr) = &mut self.stderr {
            // One write, so the line is not interleaved with the command's own output. A
            // command whose stderr is gone has nobody to tell.
            let _ = stderr.write_all(format!("{}\n", line(&refusal)).as_bytes());
        }
        if self.reported < MAX_REFUSALS_REPORTED {
            self.reported += 1;
            self.report.send(&Report::Refused(refusal));
        }
    }
}

/// The line a refusal puts on the command's stderr.
fn line(refusal: &ExecRefusal) -> String {
    let program = if refusal.argv.is_empty() {
        refusal.path.clone()
    } else {
        refusal.argv.join(" ")
    };
    match &refusal.rule {
        Some(rule) => format!("zero: refused by the deny rule `{rule}`: {program}"),
        None => format!(
            "zero: refused {program}: its arguments could not be read to check them against \
             the deny rules"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_shows_a_bounded_argv_and_says_why() {
        let long = vec![b'x'; 3000];
        let argv = vec![b"git".to_vec(), b"push".to_vec(), long];
        let shown_words = shown_argv(&argv, false);
        assert_eq!(shown_words[..2], ["git", "push"]);
        assert!(shown_words[2].len() < 1100 && shown_words[2].ends_with('…'));
        assert_eq!(shown_argv(&argv[..2], true).last().unwrap(), "…");
        let refusal = ExecRefusal {
            pid: 7,
            path: "/usr/bin/git".into(),
            argv: vec!["git".into(), "push".into()],
            rule: Some("bash(git push *)".into()),
        };
        assert_eq!(
            line(&refusal),
            "zero: refused by the deny rule `bash(git push *)`: git push"
        );
    }

    #[test]
    fn this_process_reads_its_own_strings_and_argv_as_another_would() {
        let words = [c"git".as_ptr(), c"push".as_ptr(), std::ptr::null()];
        let mut remote = Remote::new(std::process::id());
        let (argv, cut) = remote.argv(words.as_ptr() as usize).unwrap();
        assert_eq!(
            (argv, cut),
            (vec![b"git".to_vec(), b"push".to_vec()], false)
        );
        let (text, whole) = remote.string(c"abcdef".as_ptr() as usize, 3).unwrap();
        assert_eq!((text, whole), (b"abc".to_vec(), false));
        assert!(remote.argv(0).unwrap().0.is_empty());
    }
}
