//! The pipe a guardian reports on, and what it says. Both sides live here so the protocol is
//! written once.
//!
//! The guardian writes one JSON line per report on [`REPORT_FD`], its stdin — the one standard
//! fd a guardian has no other use for, and one `posix_spawn` can place: first either `started`
//! (the command's pid and start time — the handshake) or `failed` (a typed startup error),
//! then a `refused` for each program of the command's tree the exec check refused (at most
//! [`MAX_REFUSALS_REPORTED`], each bounded, so that all of them fit in a pipe's buffer and a
//! runtime that reads them only once the guardian has ended never stalls it), and at the very
//! end `ended` (how the command ended and how many leftover processes the guardian had to
//! stop). The runtime trusts a command to be running only after `started`.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::time::Instant;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use serde::{Deserialize, Serialize};

use crate::runtime::identity::ProcessIdentity;
use crate::runtime::reap::ProcessEnd;
use crate::runtime::timing::HANDSHAKE_TIMEOUT;

/// The fd a guardian writes its reports on: its stdin, the write end of a pipe.
pub(crate) const REPORT_FD: RawFd = 0;

/// The most `refused` reports a guardian sends for one command; the refusals past it are still
/// refused and said on the command's stderr.
pub(crate) const MAX_REFUSALS_REPORTED: usize = 16;

/// A program of a command's tree that the exec check refused to start (see
/// `runtime::guardian::execs`): the process that tried, what it tried to run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRefusal {
    /// The process that called exec (in the guardian's pid namespace).
    pub pid: u32,
    /// The path it gave exec, as text, cut to a bound.
    pub path: String,
    /// The argv it gave, as text, cut to a bound (a last `…` says so).
    pub argv: Vec<String>,
    /// The deny rule that refused it, as written; `None` when its arguments could not be read
    /// to check them, which refuses too (fail closed).
    pub rule: Option<String>,
}

/// How a guarded command ended, as its guardian's last report says, with what the exec
/// check refused on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ending {
    /// How the command itself ended.
    pub(crate) end: ProcessEnd,
    /// How many leftovers were stopped after it ended.
    pub(crate) leftovers: usize,
    /// The programs of its tree the exec check refused (the first
    /// [`MAX_REFUSALS_REPORTED`]).
    pub(crate) refused: Vec<ExecRefusal>,
}

/// One line from the guardian.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "report",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Report {
    /// The command is running.
    Started {
        /// Its pid, which is also its process group id.
        pid: u32,
        /// Its start time in clock ticks since boot, where the platform tells.
        start_time: Option<u64>,
    },
    /// The command could not be started.
    Failed {
        /// Why, by kind.
        kind: CommandStartFailure,
        /// What the operating system said.
        message: String,
    },
    /// The exec check refused a program of the command's tree.
    Refused(ExecRefusal),
    /// The command ended and everything it left behind is gone.
    Ended {
        /// How the command itself ended.
        end: ProcessEnd,
        /// How many leftover processes (in its group or reparented to the guardian) were
        /// stopped after it ended.
        leftovers: usize,
    },
}

/// Why a guardian could not start its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommandStartFailure {
    /// The program does not exist.
    NotFound,
    /// The program may not be executed.
    PermissionDenied,
    /// Any other reason.
    Other,
}

impl CommandStartFailure {
    /// The kind of a spawn error.
    pub(crate) fn of(error: &io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::NotFound => CommandStartFailure::NotFound,
            io::ErrorKind::PermissionDenied => CommandStartFailure::PermissionDenied,
            _ => CommandStartFailure::Other,
        }
    }
}

/// Why a guarded command did not start. Whatever the variant, the guardian has been reaped
/// (or never existed).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The runtime was closed (the run is ending); nothing new may start.
    #[error("the run is ending, so no new command can start")]
    Closed,
    /// What the guardian needs could not be set up (its pipes), or it could not be followed.
    #[error("cannot start the guardian process: {0}")]
    Guardian(#[source] io::Error),
    /// The guardian process itself could not be spawned.
    #[error("cannot start the guardian process `{command}`: {source}")]
    Spawn {
        /// The guardian's command line, as a shell would read it.
        command: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The guardian started but could not start the command.
    #[error("{message}")]
    Command {
        /// Why, by kind.
        kind: CommandStartFailure,
        /// What the operating system said.
        message: String,
    },
    /// The guardian ended or went silent without saying whether the command started.
    #[error("the guardian process did not confirm the start: {0}")]
    Handshake(HandshakeFailure),
}

/// How a handshake went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeFailure {
    /// The pipe closed before a report came.
    #[error("it exited without a report")]
    Eof,
    /// No report came in time.
    #[error("no report within the time limit")]
    Timeout,
    /// The report was not one the runtime understands.
    #[error("its report could not be understood")]
    Malformed,
    /// Reading the pipe failed.
    #[error("reading its report failed ({0})")]
    Io(Errno),
}

/// The guardian's side: writes reports on [`REPORT_FD`].
pub(crate) struct ReportWriter {
    pipe: File,
}

impl ReportWriter {
    /// Takes over `fd`, making it close-on-exec so the command never inherits it (the runtime
    /// must see EOF as soon as the guardian is gone).
    pub(crate) fn new(fd: OwnedFd) -> Result<Self, Errno> {
        use std::os::fd::AsRawFd;
        crate::runtime::lifeline::set_cloexec(fd.as_raw_fd())?;
        Ok(ReportWriter {
            pipe: File::from(fd),
        })
    }

    /// The channel itself: a warm guardian reads its order from it (see
    /// `crate::runtime::guardian::order`).
    pub(crate) fn channel(&self) -> &File {
        &self.pipe
    }

    /// Sends one report. A runtime that stopped listening is not the guardian's problem.
    pub(crate) fn send(&mut self, report: &Report) {
        if let Ok(mut line) = serde_json::to_vec(report) {
            line.push(b'\n');
            let _ = self.pipe.write_all(&line);
        }
    }
}

/// The runtime's side: reads a guardian's reports. Blocking; use it off the async workers.
pub(crate) struct ReportReader {
    pipe: BufReader<File>,
}

impl ReportReader {
    /// Reads the reports arriving on `fd`.
    pub(crate) fn new(fd: OwnedFd) -> Self {
        ReportReader {
            pipe: BufReader::new(File::from(fd)),
        }
    }

    /// Waits (bounded) for the handshake and returns the command's identity.
    pub(crate) fn handshake(&mut self) -> Result<ProcessIdentity, StartError> {
        let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
        match self.next(Some(deadline)).map_err(StartError::Handshake)? {
            Report::Started { pid, start_time } => Ok(ProcessIdentity { pid, start_time }),
            Report::Failed { kind, message } => Err(StartError::Command { kind, message }),
            Report::Refused(_) | Report::Ended { .. } => {
                Err(StartError::Handshake(HandshakeFailure::Malformed))
            }
        }
    }

    /// The final report of a guardian that has exited, with the refusals reported before it:
    /// how its command ended and how many leftovers it stopped. `None` when the guardian died
    /// before it could say (SIGKILL).
    pub(crate) fn ended(&mut self) -> Option<Ending> {
        let mut refused = Vec::new();
        loop {
            match self.next(None) {
                Ok(Report::Refused(refusal)) => refused.push(refusal),
                Ok(Report::Ended { end, leftovers }) => {
                    return Some(Ending {
                        end,
                        leftovers,
                        refused,
                    });
                }
                _ => return None,
            }
        }
    }

    /// The next report, waiting until `deadline` (or for ever).
    fn next(&mut self, deadline: Option<Instant>) -> Result<Report, HandshakeFailure> {
        let mut line = String::new();
        loop {
            if self.pipe.buffer().is_empty() {
                self.wait_readable(deadline)?;
            }
            match self.pipe.read_line(&mut line) {
                Ok(0) => return Err(HandshakeFailure::Eof),
                Ok(_) if line.ends_with('\n') => {
                    return serde_json::from_str(&line).map_err(|_| HandshakeFailure::Malformed);
                }
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    return Err(HandshakeFailure::Io(Errno::from_raw(
                        error.raw_os_error().unwrap_or(0),
                    )));
                }
            }
        }
    }

    fn wait_readable(&self, deadline: Option<Instant>) -> Result<(), HandshakeFailure> {
        loop {
            let timeout = match deadline {
                None => PollTimeout::NONE,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(HandshakeFailure::Timeout);
                    }
                    PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX)
                }
            };
            let mut fds = [PollFd::new(self.pipe.get_ref().as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(0) | Err(Errno::EINTR) | Err(Errno::EAGAIN) => {}
                Ok(_) => return Ok(()),
                Err(errno) => return Err(HandshakeFailure::Io(errno)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::OFlag;

    fn pipe() -> (ReportReader, ReportWriter) {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        (ReportReader::new(read), ReportWriter::new(write).unwrap())
    }

    #[test]
    fn a_started_report_is_the_handshake_and_ended_follows() {
        let (mut reader, mut writer) = pipe();
        writer.send(&Report::Started {
            pid: 42,
            start_time: Some(7),
        });
        let refusal = ExecRefusal {
            pid: 43,
            path: "/usr/bin/git".into(),
            argv: vec!["git".into(), "push".into()],
            rule: Some("bash(git push *)".into()),
        };
        writer.send(&Report::Refused(refusal.clone()));
        writer.send(&Report::Ended {
            end: ProcessEnd::Signalled(15),
            leftovers: 2,
        });
        drop(writer);
        let identity = reader.handshake().unwrap();
        assert_eq!((identity.pid, identity.start_time), (42, Some(7)));
        assert_eq!(
            reader.ended(),
            Some(Ending {
                end: ProcessEnd::Signalled(15),
                leftovers: 2,
                refused: vec![refusal],
            })
        );
    }

    #[test]
    fn a_failed_report_and_a_silent_exit_are_typed_errors() {
        let (mut reader, mut writer) = pipe();
        writer.send(&Report::Failed {
            kind: CommandStartFailure::NotFound,
            message: "no such file".into(),
        });
        assert!(matches!(
            reader.handshake(),
            Err(StartError::Command {
                kind: CommandStartFailure::NotFound,
                ..
            })
        ));
        let (mut reader, writer) = pipe();
        drop(writer);
        assert!(matches!(
            reader.handshake(),
            Err(StartError::Handshake(HandshakeFailure::Eof))
        ));
    }
}
