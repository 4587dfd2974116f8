//! Warm guardians: the guardian of the next foreground command, started while the model is
//! still answering, so a tool call finds it ready and only the command's own fork and exec are
//! left on its path (`docs/RUNTIME.md`, "Warm guardians").
//!
//! A warm guardian is an ordinary guardian (`zero __guard --warm`): its own process group, the
//! lifeline, a subreaper, the sandbox applied — everything but the command, which comes as an
//! order on its stdin, a socket pair the reports come back on too, with the command's stdout
//! and stderr passed as descriptors. It holds nothing a command could inherit that a cold
//! guardian would not: its stdin is the socket (the command gets `/dev/null`), its own stdout
//! and stderr `/dev/null`, the lifeline, and nothing else. After a command that ended on its
//! own it waits for the next order, and the runtime gives it back ([`WarmGuardian::back`]):
//! a run pays the guardian's exec once. It is used only for a command confined by exactly the rules it was started
//! with ([`WarmGuardian::fits`]); otherwise the command gets a guardian of its own. Unused, it
//! dies with the run: SIGKILLed at close or when dropped, and on its own when the lifeline
//! ends (zero SIGKILLed) or its socket closes.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use nix::fcntl::OFlag;
use tokio::net::unix::pipe;

use super::guardian_order::send_with_output;
use super::guardian_report::{ReportReader, StartError};
use super::identity::ProcessIdentity;
use super::spawn::{Confinement, GuardianCommand, WarmSpawn};

/// A guardian waiting for its order. Dropped unused, it is SIGKILLed (its tokio child kills
/// on drop).
pub(super) struct WarmGuardian {
    /// The rules it confines its command by.
    confinement: Confinement,
    /// The process.
    child: tokio::process::Child,
    /// Its identity, for stop requests.
    identity: ProcessIdentity,
    /// Its reports.
    report: ReportReader,
    /// Where its order goes.
    orders: UnixStream,
}

impl std::fmt::Debug for WarmGuardian {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmGuardian")
            .field("pid", &self.identity.pid)
            .finish_non_exhaustive()
    }
}

/// A warm guardian handed over to run one command: the process, the order still to send with
/// the command's output pipes, and what it takes to give the guardian back afterwards.
pub(super) struct Handover {
    /// The guardian.
    pub(super) child: tokio::process::Child,
    /// Its identity.
    pub(super) identity: ProcessIdentity,
    /// The order and the channel it goes down.
    pub(super) delivery: Delivery,
    /// The command's stdout and stderr, the runtime's reading ends.
    pub(super) output: [pipe::Receiver; 2],
}

/// An order not sent yet, with the writing ends of the command's output pipes, and the reader
/// of the reports that follow. Sending blocks: send it off the async workers, then wait for
/// the handshake.
pub(super) struct Delivery {
    report: ReportReader,
    order: Vec<u8>,
    orders: UnixStream,
    output: [OwnedFd; 2],
}

/// A guardian's channel after its order went down it: the reports to read, and the socket to
/// send the next order on if the guardian is given back.
pub(super) struct Channel {
    /// Its reports.
    pub(super) report: ReportReader,
    /// Where its next order goes.
    pub(super) orders: UnixStream,
}

impl WarmGuardian {
    /// Starts a warm guardian for commands confined by `confinement`, stopped with `grace`.
    /// Blocking (the spawn), and must run within the tokio runtime (a blocking thread of it
    /// will do).
    pub(super) fn start(confinement: Confinement, grace: Duration) -> Result<Self, StartError> {
        let WarmSpawn {
            child,
            report,
            orders,
        } = GuardianCommand::warm(&confinement, grace).spawn_warm()?;
        let identity = ProcessIdentity::of(child.id().unwrap_or_default());
        Ok(WarmGuardian {
            confinement,
            child,
            identity,
            report,
            orders,
        })
    }

    /// Whether it may run a command confined by `confinement`: only one with exactly the
    /// rules it was started with (sandbox, temporary directory, withheld variables, guardian
    /// program).
    pub(super) fn fits(&self, confinement: &Confinement) -> bool {
        self.confinement == *confinement
    }

    /// Whether it has already ended (killed from outside, or refused by the kernel's sandbox
    /// and gone after saying so): then it is no use, and the command starts its own guardian,
    /// which meets (and reports) whatever the warm one met.
    pub(super) fn ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Hands it over to run the command `order` encodes (see [`super::guardian_order`]), with
    /// a fresh pair of pipes for the command's stdout and stderr.
    pub(super) fn hand_over(self, order: Vec<u8>) -> std::io::Result<Handover> {
        let (stdout, stdout_writer) = output_pipe()?;
        let (stderr, stderr_writer) = output_pipe()?;
        Ok(Handover {
            child: self.child,
            identity: self.identity,
            delivery: Delivery {
                report: self.report,
                order,
                orders: self.orders,
                output: [stdout_writer, stderr_writer],
            },
            output: [stdout, stderr],
        })
    }

    /// A guardian whose command ended on its own, given back to wait for the next order: it
    /// has swept whatever the command left and holds nothing of it.
    pub(super) fn back(
        confinement: Confinement,
        child: tokio::process::Child,
        identity: ProcessIdentity,
        channel: Channel,
    ) -> Self {
        WarmGuardian {
            confinement,
            child,
            identity,
            report: channel.report,
            orders: channel.orders,
        }
    }

    /// Lets it go unused: SIGKILL (it has no command, so nothing to stop gently) and reap.
    pub(super) async fn dismiss(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

impl Delivery {
    /// Sends the order with the output pipes' writing ends, then closes this process's copies
    /// of them (the output ends when the command's side lets go), and returns the channel.
    /// Blocking. A guardian that died meanwhile is found by the handshake that follows (its
    /// report, or the end of the socket), so a failed send is not an error of its own.
    pub(super) fn send(self) -> Channel {
        let [stdout, stderr] = &self.output;
        let _ = send_with_output(&self.orders, &self.order, [stdout.as_fd(), stderr.as_fd()]);
        drop(self.output);
        Channel {
            report: self.report,
            orders: self.orders,
        }
    }
}

/// A pipe for a command's output: the runtime's reading end, non-blocking for tokio, and the
/// writing end for the command, left blocking (a command must not see `EAGAIN` on its
/// stdout).
fn output_pipe() -> std::io::Result<(pipe::Receiver, OwnedFd)> {
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    Ok((pipe::Receiver::from_owned_fd(read)?, write))
}
