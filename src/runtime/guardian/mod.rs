//! The guardian: the zero binary itself in a hidden mode (`zero __guard`), which the runtime
//! starts in front of every external command so the command's whole subtree lives and dies
//! with it.
//!
//! A guardian:
//! 1. starts the command in a new process group, with stdin from `/dev/null` (a service's
//!    from its socket, the guardian's stdout), the stdout, stderr and working directory the
//!    runtime gave the guardian and the lifeline on fd 3, and
//!    reports its pid and start time (or a typed startup error) on the report pipe (the
//!    guardian's stdin) — the handshake;
//! 2. is a child subreaper (Linux), so descendants that daemonize (`setsid cmd &`, double
//!    forks) are reparented to it instead of init and stay within reach;
//! 3. watches the lifeline it inherited: EOF means the zero process that started it died;
//! 4. when the command exits, kills whatever it left behind (its group, and every process
//!    reparented to the guardian), reaps them, and reports how the command ended and how many
//!    leftovers it stopped;
//! 5. on a stop request (SIGTERM, SIGINT or SIGHUP) or lifeline EOF, TERMs the command's group,
//!    TERMs the rest of the subtree once the command has ended, KILLs whatever is left when the
//!    grace period is over, reaps, reports and exits. A second stop request skips what is
//!    left of the grace.
//!
//! A warm guardian (`--warm`, [`Command::Ordered`]) is started before its command is known: it
//! does everything up to 1 — the sandbox included — then waits for the order on its stdin (a
//! socket, the reports go back on it too; the command's stdout and stderr come with the order
//! as descriptors), leaving quietly if the socket closes, a stop request comes or the lifeline
//! ends first. After a command that ended on its own (4) it waits for the next order; a
//! stopped command (5) is its last (see `self::warm`).
//!
//! Its exit status mirrors the command's (the code, or 128 + the signal), so even a runtime
//! that missed the final report knows how the command ended.
//!
//! The guardian is single-threaded and spawns from its main thread, so it can safely give the
//! command `PR_SET_PDEATHSIG` (the signal fires when the *thread* that forked exits): if the
//! guardian is SIGKILLed, its command is SIGKILLed too.
//!
//! With deny rules on commands (`--deny-exec`), the guardian also checks every exec of the
//! command's tree against them, served from its one loop between its other waits (see
//! `self::execs`).
//!
//! Its stop ladder (`Stopping`) is its own, not the runtime's (`runtime/stop.rs`): it runs on
//! the guardian's one thread without an async runtime, signals every process of the subtree
//! itself and polls for those that are not its children. The runtime's ladder only asks the
//! guardian and backs it up; `runtime/timing.rs` says how the two sets of waits relate.

pub(in crate::runtime) mod execs;
pub(in crate::runtime) mod order;
pub(in crate::runtime) mod report;
pub(in crate::runtime) mod spawn;
pub(in crate::runtime) mod warm;

use crate::environ::names::ZERO_LIFELINE_FD;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpgrp};

use self::execs::{Execs, Serving};
use self::order::{OrderWithOutput, receive_with_output};
use self::report::{CommandStartFailure, REPORT_FD, Report, ReportWriter};
use super::identity;
use super::lifeline::{self, CHILD_LIFELINE_FD, Pulse};
use super::reap::ProcessEnd;
use super::sandbox::{self, ExecRules, Sandbox};
use super::timing::{GUARDIAN_AFTER_KILL, GUARDIAN_SWEEP_TICK, GUARDIAN_TICK};

/// The exit status of a guardian that could not do its job at all (no report pipe).
const UNUSABLE: i32 = 125;
/// The exit status of a warm guardian let go before any order came.
const DISMISSED: i32 = 0;
/// The exit status when the command could not be executed (the shell's convention).
const NOT_EXECUTABLE: i32 = 126;
/// The exit status when the command was not found (the shell's convention).
const NOT_FOUND: i32 = 127;

/// What to guard.
#[derive(Debug, Clone)]
pub struct GuardianArgs {
    /// Time between SIGTERM and SIGKILL when stopping.
    pub grace: Duration,
    /// What the command is confined by.
    pub sandbox: Sandbox,
    /// The deny rules every exec of the command's tree is checked against (none: no check).
    pub exec_rules: ExecRules,
    /// Whether the command reads its stdin from the guardian's stdout (a service's socket,
    /// see `runtime::service`) rather than from `/dev/null`.
    pub stdin_from_stdout: bool,
    /// What to run: given on the command line, or ordered later (a warm guardian).
    pub command: Command,
}

/// The command a guardian runs.
#[derive(Debug, Clone)]
pub enum Command {
    /// The program and its arguments, from the guardian's command line; run in the
    /// guardian's working directory with its environment.
    Given {
        /// The program to run.
        program: OsString,
        /// Its arguments.
        args: Vec<OsString>,
    },
    /// A warm guardian: everything is made ready (the sandbox included), then each command
    /// comes as an order (`guardian_order`) on the guardian's stdin, a socket the reports go
    /// back on too, one after another while they end on their own. The guardian leaves
    /// quietly if the socket closes, a stop request comes or the lifeline ends while it waits.
    Ordered,
}

/// The command as the guardian starts it.
struct Target {
    program: OsString,
    args: Vec<OsString>,
    /// Variables set on top of the guardian's environment.
    env: Vec<(OsString, OsString)>,
    /// Its stdout and stderr, when the order brought them; else the guardian's own.
    output: Option<[OwnedFd; 2]>,
}

/// Runs the guardian to the end and returns its exit status (see the module documentation).
pub fn run(args: GuardianArgs) -> i32 {
    // Before anything of a command exists: nothing of the command's tree may attach to this
    // process, read or write its memory, or take its descriptors (see `undumpable`).
    let hidden = undumpable();
    let ordered = matches!(args.command, Command::Ordered);
    let Some(mut report) = report_channel(ordered) else {
        eprintln!("zero __guard is started by zero itself, with a report pipe as its stdin");
        return UNUSABLE;
    };
    become_subreaper();
    if let Err(error) = keep_inherited_descriptors_from_the_command() {
        report.send(&Report::Failed {
            kind: CommandStartFailure::Other,
            message: format!("the guardian cannot close the descriptors it inherited: {error}"),
        });
        return UNUSABLE;
    }
    // Passed on to the command on fd 3 (a nested `zero exec`, say, watches it too), and to
    // nothing else: kept close-on-exec, and above fd 3 so placing it there is a real copy.
    let lifeline = lifeline::inherited().and_then(|fd| lifeline::high_cloexec(fd.as_raw_fd()).ok());
    let wakeups = match Wakeups::install() {
        Ok(wakeups) => wakeups,
        Err(error) => {
            report.send(&Report::Failed {
                kind: CommandStartFailure::Other,
                message: format!("the guardian cannot handle signals: {error}"),
            });
            return UNUSABLE;
        }
    };
    // On the guardian itself, just before the command starts: inherited by the command and
    // everything it starts, and never lifted. What the run was promised is enforced or the
    // command does not run.
    if let Err(error) = sandbox::enforce(&args.sandbox) {
        report.send(&Report::Failed {
            kind: CommandStartFailure::Other,
            message: error.to_string(),
        });
        return UNUSABLE;
    }
    // Last of the confinement, once: a warm guardian's holds for every command it is lent.
    let execs = match Execs::watch(args.exec_rules) {
        Ok(execs) => execs,
        Err(message) => {
            report.send(&Report::Failed {
                kind: CommandStartFailure::Other,
                message,
            });
            return UNUSABLE;
        }
    };
    // Again after the sandbox: a change of credentials resets the flag, and whatever the
    // capability drop did must not leave this process open to the command.
    if let Err(error) = hidden.and_then(|()| undumpable()) {
        report.send(&Report::Failed {
            kind: CommandStartFailure::Other,
            message: format!("the guardian cannot make itself undumpable: {error}"),
        });
        return UNUSABLE;
    }
    let guard = Guard {
        grace: args.grace,
        stdin_from_stdout: args.stdin_from_stdout,
        lifeline: lifeline.as_ref(),
        wakeups: &wakeups,
        execs: execs.as_ref(),
    };
    match args.command {
        Command::Given { program, args } => {
            let target = Target {
                program,
                args,
                env: Vec::new(),
                output: None,
            };
            match guard.one(target, &mut report) {
                Guarded::Ended { status, .. } | Guarded::NotStarted(status) => status,
            }
        }
        Command::Ordered => loop {
            let target = match await_order(&report, guard.lifeline, guard.wakeups) {
                Ok(Some(target)) => target,
                Ok(None) => return DISMISSED,
                Err(message) => {
                    report.send(&Report::Failed {
                        kind: CommandStartFailure::Other,
                        message,
                    });
                    return UNUSABLE;
                }
            };
            // After a natural end, clean (the command and whatever it left are gone), the
            // guardian waits for the next order; a stopped command or one that did not start
            // is its last.
            match guard.one(target, &mut report) {
                Guarded::Ended { stopped: false, .. } => {}
                Guarded::Ended { status, .. } | Guarded::NotStarted(status) => return status,
            }
        },
    }
}

/// Makes this process non-dumpable (`PR_SET_DUMPABLE` 0): the kernel then lets only a
/// process with `CAP_SYS_PTRACE` attach to it with `ptrace`, read or write its memory
/// (`/proc/<pid>/mem`, `process_vm_readv`/`writev`) or take its descriptors (`pidfd_getfd`),
/// and below `--auto high` a command has no capability at all. The command itself is not
/// affected: its exec makes it dumpable again, so it can still trace its own children (`gdb`,
/// `strace` in a test run). Without this, a command (same user, same Landlock domain) could
/// attach to its guardian — a warm one waits for the next command's order — and rewrite what
/// it runs next.
fn undumpable() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_dumpable(false).map_err(|error| error.to_string())
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(())
    }
}

/// What a guardian guards its commands with, once set up.
struct Guard<'a> {
    grace: Duration,
    stdin_from_stdout: bool,
    lifeline: Option<&'a OwnedFd>,
    wakeups: &'a Wakeups,
    /// The exec check, when deny rules on commands are in force.
    execs: Option<&'a Execs>,
}

/// How guarding one command went.
enum Guarded {
    /// It ran and ended (naturally, or `stopped` on a stop request or the lifeline's end), and
    /// everything it left is gone; `status` mirrors its end.
    Ended { status: i32, stopped: bool },
    /// It could not be started; the exit status that says why.
    NotStarted(i32),
}

impl Guard<'_> {
    /// Starts `target`, reports the handshake, follows it to its end and reports that.
    fn one(&self, target: Target, report: &mut ReportWriter) -> Guarded {
        let program = target.program.clone();
        let given_output = target.output.is_none();
        let stderr = self.execs.and_then(|_| command_stderr(&target));
        let (child, early) = self.spawn(target);
        let command = match child {
            Ok(child) => Pid::from_raw(child.id() as i32),
            Err(error) => {
                report.send(&Report::Failed {
                    kind: CommandStartFailure::of(&error),
                    message: format!("cannot run {}: {error}", program.to_string_lossy()),
                });
                return Guarded::NotStarted(if error.kind() == std::io::ErrorKind::NotFound {
                    NOT_FOUND
                } else {
                    NOT_EXECUTABLE
                });
            }
        };
        report.send(&Report::Started {
            pid: command.as_raw() as u32,
            start_time: identity::start_time(command.as_raw() as u32),
        });
        let subtree = Subtree {
            guardian: Pid::this(),
            command,
        };
        let mut serving = self.execs.map(|execs| Serving::new(execs, stderr, report));
        if let Some(serving) = &mut serving {
            early
                .into_iter()
                .for_each(|refusal| serving.refused(refusal));
        }
        let watched = watch(
            &subtree,
            self.grace,
            (self.lifeline, self.wakeups),
            serving.as_mut(),
        );
        // The command's stderr is let go with it, before the last report.
        drop(serving);
        // `end` is None only if the command was never seen to end (it could not be killed).
        let end = watched
            .end
            .unwrap_or(ProcessEnd::Signalled(Signal::SIGKILL as i32));
        if given_output {
            // Nothing of the command holds its output any more: let go of it before the last
            // report, so the runtime's reader sees the end of the output with the report, not
            // only once this process has exited. (An ordered command's output was its own.)
            release_output();
        }
        report.send(&Report::Ended {
            end,
            leftovers: watched.leftovers,
        });
        let status = match end {
            ProcessEnd::Exited(code) => code,
            ProcessEnd::Signalled(signal) => 128 + signal,
        };
        Guarded::Ended {
            status,
            stopped: watched.stopped,
        }
    }
}

impl Guard<'_> {
    /// Starts `target` (see [`spawn_command`]), its own exec answered meanwhile when execs are
    /// checked; returns the child and what the exec check refused during the start.
    fn spawn(
        &self,
        target: Target,
    ) -> (
        std::io::Result<std::process::Child>,
        Vec<report::ExecRefusal>,
    ) {
        let lifeline = self.lifeline.map(AsRawFd::as_raw_fd);
        let Some(execs) = self.execs else {
            return (
                spawn_command(target, (self.stdin_from_stdout, false), lifeline),
                Vec::new(),
            );
        };
        let (program, args) = (target.program.clone(), target.args.clone());
        execs.while_starting(&program, &args, || {
            spawn_command(target, (self.stdin_from_stdout, true), lifeline)
        })
    }
}

/// A copy of the stderr `target` will get (close-on-exec): the order's, or the guardian's
/// own. `None` when it cannot be copied, and then refusals are only reported.
fn command_stderr(target: &Target) -> Option<OwnedFd> {
    match &target.output {
        Some([_, stderr]) => stderr.try_clone().ok(),
        None => std::io::stderr().as_fd().try_clone_to_owned().ok(),
    }
}

/// Points stdout and stderr at `/dev/null`, closing the guardian's hold on the command's output
/// (a pipe the runtime reads to its end, a task's output file, a service's socket). Numbers 1
/// and 2 stay taken, so nothing opened later lands on them.
fn release_output() {
    let Ok(null) = nix::fcntl::open(
        "/dev/null",
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    ) else {
        return;
    };
    for target in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: dup2 onto the standard descriptors this process owns.
        unsafe { libc::dup2(null.as_raw_fd(), target) };
    }
}

/// The report channel the runtime gave this guardian as its stdin: the write end of a pipe, or
/// for a guardian that waits for its order a socket — which a terminal or `/dev/null` (someone
/// running `zero __guard` by hand) is not.
fn report_channel(ordered: bool) -> Option<ReportWriter> {
    let flags = nix::fcntl::fcntl(REPORT_FD, nix::fcntl::FcntlArg::F_GETFL).ok()?;
    let access = OFlag::from_bits_truncate(flags) & OFlag::O_ACCMODE;
    let usable = if ordered {
        access == OFlag::O_RDWR && is_socket(REPORT_FD)
    } else {
        access == OFlag::O_WRONLY
    };
    if !usable {
        return None;
    }
    // SAFETY: the runtime placed this pipe for this guardian; nothing else owns it.
    ReportWriter::new(unsafe { OwnedFd::from_raw_fd(REPORT_FD) }).ok()
}

/// Whether `fd` is a socket.
fn is_socket(fd: RawFd) -> bool {
    nix::sys::stat::fstat(fd).is_ok_and(|stat| stat.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

/// A warm guardian's wait for its order (see [`Command::Ordered`]): the target, with the
/// guardian moved into the order's working directory; `None` when it is dismissed first (its
/// channel closed, a stop request, the lifeline's end); an error for an order it cannot follow.
fn await_order(
    report: &ReportWriter,
    lifeline: Option<&OwnedFd>,
    wakeups: &Wakeups,
) -> Result<Option<Target>, String> {
    loop {
        let mut fds = vec![
            PollFd::new(report.channel().as_fd(), PollFlags::POLLIN),
            PollFd::new(wakeups.reader.as_fd(), PollFlags::POLLIN),
        ];
        if let Some(lifeline) = lifeline {
            fds.push(PollFd::new(lifeline.as_fd(), PollFlags::POLLIN));
        }
        // EINTR just goes round the loop again.
        if poll(&mut fds, PollTimeout::NONE).unwrap_or(0) <= 0 {
            continue;
        }
        let ready = |index: usize| {
            fds.get(index)
                .and_then(|fd| fd.revents())
                .is_some_and(|events| !events.is_empty())
        };
        let (order_ready, lifeline_ready) = (ready(0), ready(2));
        drop(fds);
        wakeups.drain();
        if wakeups.stops.load(Ordering::SeqCst) > 0 {
            return Ok(None);
        }
        if lifeline_ready
            && let Some(lifeline) = lifeline
            && lifeline::read_pulse(lifeline.as_fd()) == Pulse::ParentDied
        {
            // Whatever order may be on its way, the run that sent it is gone.
            return Ok(None);
        }
        if !order_ready {
            continue;
        }
        let received = receive_with_output(report.channel())
            .map_err(|error| format!("the guardian could not read its order: {error}"))?;
        let Some(OrderWithOutput { order, output }) = received else {
            return Ok(None);
        };
        std::env::set_current_dir(&order.cwd).map_err(|error| {
            format!(
                "cannot enter the working directory {}: {error}",
                order.cwd.display()
            )
        })?;
        return Ok(Some(Target {
            program: order.program,
            args: order.args,
            env: order.env,
            output: Some(output),
        }));
    }
}

/// Marks every descriptor above stderr close-on-exec, whatever zero's caller left open: the
/// command gets stdin, stdout, stderr and the lifeline (placed on fd 3 after this) and
/// nothing else. A descriptor zero's own parent leaked (a file outside the workspace opened
/// for writing, say) would otherwise pass the sandbox straight through, since Landlock checks
/// a file when it is opened, not when it is written. The guardian keeps them (it uses none of
/// them); its command never sees them.
///
/// One `close_range(2)` with `CLOSE_RANGE_CLOEXEC` (Linux 5.11); older kernels and other
/// systems get the same from a walk of the open descriptors.
fn keep_inherited_descriptors_from_the_command() -> std::io::Result<()> {
    const FIRST: RawFd = 3;
    #[cfg(target_os = "linux")]
    {
        // SAFETY: close_range only changes descriptor flags; no pointer is passed.
        let answer = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                FIRST as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if answer == 0 {
            return Ok(());
        }
    }
    for fd in open_descriptors()?.into_iter().filter(|fd| *fd >= FIRST) {
        // A descriptor that closed since it was listed (the listing's own) is no matter.
        let _ = nix::fcntl::fcntl(
            fd,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        );
    }
    Ok(())
}

/// The descriptors open in this process, from `/proc/self/fd` (Linux) or `/dev/fd`.
fn open_descriptors() -> std::io::Result<Vec<RawFd>> {
    let dir = if cfg!(target_os = "linux") {
        "/proc/self/fd"
    } else {
        "/dev/fd"
    };
    Ok(std::fs::read_dir(dir)?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect())
}

/// Starts the command in its own process group, with the lifeline (if any) on fd 3. Runs on
/// the guardian's only thread, so the parent-death signal is tied to the guardian's whole life.
/// With `exec_checked`, the child makes itself dumpable again just before its exec (which
/// would do so anyway), so the exec check can read the exec's arguments: until then it is a
/// copy of the guardian, which is not dumpable.
fn spawn_command(
    target: Target,
    (stdin_from_stdout, exec_checked): (bool, bool),
    lifeline: Option<RawFd>,
) -> std::io::Result<std::process::Child> {
    let stdin = if stdin_from_stdout {
        Stdio::from(std::io::stdout().as_fd().try_clone_to_owned()?)
    } else {
        Stdio::null()
    };
    let mut command = std::process::Command::new(&target.program);
    command
        .args(&target.args)
        .envs(target.env.iter().map(|(name, value)| (name, value)))
        .stdin(stdin)
        .process_group(0);
    // The guardian's copies go with the command object, dropped once it has started: the
    // output ends when the command's subtree lets go of it.
    if let Some([stdout, stderr]) = target.output {
        command.stdout(stdout).stderr(stderr);
    }
    match lifeline {
        Some(_) => command.env(ZERO_LIFELINE_FD, CHILD_LIFELINE_FD.to_string()),
        None => command.env_remove(ZERO_LIFELINE_FD),
    };
    // SAFETY: only prctl and dup2, which are async-signal-safe, run between fork and exec. The
    // lifeline is numbered above fd 3 (see `run`), so dup2 really copies it, without
    // close-on-exec.
    unsafe {
        command.pre_exec(move || {
            #[cfg(target_os = "linux")]
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1
                || (exec_checked && libc::prctl(libc::PR_SET_DUMPABLE, 1) == -1)
            {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(lifeline) = lifeline {
                lifeline::place_in_child(lifeline, CHILD_LIFELINE_FD)?;
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Follows the command until it ends (then sweeps its leftovers) or until a stop request or
/// lifeline EOF (then stops the whole subtree). Returns how the command ended, if that was
/// seen, and how many leftovers were stopped after a natural end.
fn watch(
    subtree: &Subtree,
    grace: Duration,
    (lifeline, wakeups): (Option<&OwnedFd>, &Wakeups),
    mut serving: Option<&mut Serving<'_>>,
) -> Watched {
    let mut end = None;
    let mut stopping: Option<Stopping> = None;
    let mut lifeline_open = lifeline.is_some();
    let mut stops_seen = 0;
    loop {
        let children_left = reap_children(subtree.command, &mut end);
        match &mut stopping {
            None if end.is_some() => {
                return Watched {
                    end,
                    leftovers: subtree.sweep(),
                    stopped: false,
                };
            }
            None => {}
            Some(stopping) => {
                if stopping.killing {
                    subtree.signal(Signal::SIGKILL);
                } else if end.is_some() && !stopping.rest_asked {
                    // The command is gone: now whatever it left gets its TERM, within what
                    // is left of the grace.
                    subtree.signal(Signal::SIGTERM);
                    stopping.rest_asked = true;
                }
                let done = !children_left && subtree.members().is_empty();
                if done || (stopping.killing && Instant::now() >= stopping.deadline) {
                    return Watched {
                        end,
                        leftovers: 0,
                        stopped: true,
                    };
                }
                if Instant::now() >= stopping.deadline {
                    stopping.escalate(subtree);
                }
            }
        }
        let timeout = match &stopping {
            None => PollTimeout::NONE,
            Some(stopping) => PollTimeout::try_from(
                stopping
                    .deadline
                    .saturating_duration_since(Instant::now())
                    .min(GUARDIAN_TICK),
            )
            .unwrap_or(PollTimeout::ZERO),
        };
        let mut requested = false;
        let exec_waits = {
            let mut fds = vec![PollFd::new(wakeups.reader.as_fd(), PollFlags::POLLIN)];
            if let Some(serving) = &serving {
                fds.push(PollFd::new(serving.listener(), PollFlags::POLLIN));
            }
            let at_lifeline = fds.len();
            if let (true, Some(lifeline)) = (lifeline_open, lifeline) {
                fds.push(PollFd::new(lifeline.as_fd(), PollFlags::POLLIN));
            }
            // EINTR and timeouts just go round the loop again.
            let ready = poll(&mut fds, timeout).unwrap_or(0);
            let readable = |index: usize| {
                ready > 0
                    && fds
                        .get(index)
                        .and_then(|fd| fd.revents())
                        .is_some_and(|events| !events.is_empty())
            };
            if readable(at_lifeline)
                && let Some(lifeline) = lifeline
                && lifeline::read_pulse(lifeline.as_fd()) == Pulse::ParentDied
            {
                lifeline_open = false;
                requested = true;
            }
            serving.is_some() && readable(1)
        };
        if exec_waits && let Some(serving) = &mut serving {
            serving.answer();
        }
        wakeups.drain();
        let stops = wakeups.stops.load(Ordering::SeqCst);
        if stops > stops_seen {
            stops_seen = stops;
            requested = true;
        }
        if requested {
            match &mut stopping {
                None => {
                    subtree.signal_group(Signal::SIGTERM);
                    stopping = Some(Stopping {
                        deadline: Instant::now() + grace,
                        rest_asked: false,
                        killing: false,
                    });
                }
                Some(stopping) if !stopping.killing => stopping.escalate(subtree),
                Some(_) => {}
            }
        }
    }
}

/// How [`watch`] saw a command end.
struct Watched {
    /// How it ended, if that was seen (not when it could not be killed).
    end: Option<ProcessEnd>,
    /// How many leftovers were stopped after a natural end.
    leftovers: usize,
    /// Whether it was stopped (a stop request, or the lifeline's end) rather than ending.
    stopped: bool,
}

/// A stop in progress. The command's group is asked first (SIGTERM), so a command that
/// cleans up after itself — a specialist `zero exec` closing its own runtime, whose guardians
/// stop its commands — can do so before anything below it is touched; once the command has
/// ended, the rest of the subtree is asked too; when the grace is over, everything left is
/// SIGKILLed.
struct Stopping {
    /// When the current step (grace, or the wait after SIGKILL) is over.
    deadline: Instant,
    /// Whether the rest of the subtree has been sent SIGTERM (after the command ended).
    rest_asked: bool,
    /// Whether SIGKILL has been sent.
    killing: bool,
}

impl Stopping {
    /// Ends the grace: SIGKILL now, then wait at most [`GUARDIAN_AFTER_KILL`].
    fn escalate(&mut self, subtree: &Subtree) {
        subtree.signal(Signal::SIGKILL);
        self.killing = true;
        self.deadline = Instant::now() + GUARDIAN_AFTER_KILL;
    }
}

/// Reaps every child that has ended (the command, and anything reparented to the guardian),
/// noting how the command ended. Says whether children remain.
fn reap_children(command: Pid, end: &mut Option<ProcessEnd>) -> bool {
    loop {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return true,
            Ok(status) => {
                if status.pid() == Some(command)
                    && let Some(ended) = ProcessEnd::from_status(status)
                {
                    *end = Some(ended);
                }
            }
            Err(Errno::EINTR) => {}
            Err(_) => return false, // ECHILD: no children left
        }
    }
}

/// The processes a guardian answers for: the command's process group and every live
/// descendant of the guardian.
struct Subtree {
    guardian: Pid,
    command: Pid,
}

impl Subtree {
    /// Sends `signal` to every member and to the command's group; returns the members found.
    fn signal(&self, signal: Signal) -> Vec<Pid> {
        let members = self.members();
        for pid in &members {
            let _ = kill(*pid, signal);
        }
        self.signal_group(signal);
        members
    }

    /// Sends `signal` to the command's process group only. The group id stays reserved while
    /// any member lives (and the guardian has not reaped the leader); never our own group.
    fn signal_group(&self, signal: Signal) {
        if self.command != getpgrp() {
            let _ = killpg(self.command, signal);
        }
    }

    /// Kills what the command left behind after it ended on its own, until nothing is left or
    /// [`GUARDIAN_AFTER_KILL`] has passed; returns how many processes that was.
    fn sweep(&self) -> usize {
        // The common case, without a /proc scan: as the subreaper, the guardian inherits every
        // orphan of the command, so a guardian with no child left has no descendant left.
        // Only a process that joined the group from outside could remain; the group signal
        // reaches it.
        let mut ignored = None;
        if !reap_children(self.command, &mut ignored) {
            self.signal_group(Signal::SIGKILL);
            return 0;
        }
        let deadline = Instant::now() + GUARDIAN_AFTER_KILL;
        let mut stopped = BTreeSet::new();
        loop {
            let found = self.signal(Signal::SIGKILL);
            let mut ignored = None;
            reap_children(self.command, &mut ignored);
            if found.is_empty() || Instant::now() >= deadline {
                break;
            }
            stopped.extend(found);
            std::thread::sleep(GUARDIAN_SWEEP_TICK);
        }
        stopped.len()
    }

    /// The live (not zombie) processes in the command's group or below the guardian.
    #[cfg(target_os = "linux")]
    fn members(&self) -> Vec<Pid> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut children: std::collections::HashMap<i32, Vec<i32>> = Default::default();
        let mut members = BTreeSet::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Some(stat) = identity::ProcStat::read(pid) else {
                continue;
            };
            if stat.zombie {
                continue;
            }
            if stat.pgid == self.command.as_raw() {
                members.insert(pid);
            }
            children.entry(stat.ppid).or_default().push(pid);
        }
        let mut descendants = BTreeSet::new();
        let mut below = vec![self.guardian.as_raw()];
        while let Some(parent) = below.pop() {
            for child in children.get(&parent).into_iter().flatten() {
                if descendants.insert(*child) {
                    below.push(*child);
                }
            }
        }
        members.extend(descendants);
        members.remove(&self.guardian.as_raw());
        members.into_iter().map(Pid::from_raw).collect()
    }

    /// Without `/proc` the subtree cannot be listed; the group signal is all there is.
    #[cfg(not(target_os = "linux"))]
    fn members(&self) -> Vec<Pid> {
        Vec::new()
    }
}

/// Makes orphaned descendants reparent to this process instead of init (Linux).
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain prctl on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
}

/// Signals turned into something `poll` can wait for: every SIGCHLD and stop request writes a
/// byte to a socket pair, and stop requests are also counted.
struct Wakeups {
    reader: UnixStream,
    stops: Arc<AtomicUsize>,
}

impl Wakeups {
    fn install() -> std::io::Result<Self> {
        let (reader, writer) = UnixStream::pair()?;
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        let stops = Arc::new(AtomicUsize::new(0));
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            let counter = Arc::clone(&stops);
            // SAFETY: the action only increments an atomic, which is async-signal-safe.
            unsafe {
                signal_hook::low_level::register(signal, move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                })?;
            }
        }
        for signal in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            signal_hook::low_level::pipe::register(signal, writer.try_clone()?)?;
        }
        Ok(Wakeups { reader, stops })
    }

    /// Empties the socket (the bytes only ever meant "look again").
    fn drain(&self) {
        use std::io::Read;
        let mut buffer = [0u8; 64];
        while matches!((&self.reader).read(&mut buffer), Ok(n) if n > 0) {}
    }
}
