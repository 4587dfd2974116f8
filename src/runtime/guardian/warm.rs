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
use tokio_util::sync::CancellationToken;

use crate::runtime::guardian::order::send_with_output;
use crate::runtime::guardian::report::{ReportReader, StartError};
use crate::runtime::guardian::spawn::{Confinement, GuardianCommand, WarmSpawn};
use crate::runtime::identity::ProcessIdentity;

/// A guardian waiting for its order. Dropped unused, it is SIGKILLed (its tokio child kills
/// on drop).
pub(in crate::runtime) struct WarmGuardian {
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

/// A warm guardian lent to one command ([`WarmSlot::lend`]): its process, followed like a
/// cold guardian's, the command's output, and the order still to send. What foreground sees
/// of the handover ends here: the order is sent by [`Order::send`], which leaves the channel
/// the guardian is given back through ([`Channel::give_back`]).
pub(in crate::runtime) struct Lent {
    /// The guardian.
    pub(in crate::runtime) child: tokio::process::Child,
    /// Its identity.
    pub(in crate::runtime) identity: ProcessIdentity,
    /// The order and the channel it goes down.
    pub(in crate::runtime) order: Order,
    /// The command's stdout and stderr, the runtime's reading ends.
    pub(in crate::runtime) output: [pipe::Receiver; 2],
}

/// An order not sent yet, with the writing ends of the command's output pipes, and the reader
/// of the reports that follow. Sending blocks: send it off the async workers, then wait for
/// the handshake.
pub(in crate::runtime) struct Order {
    confinement: Confinement,
    report: ReportReader,
    order: Vec<u8>,
    orders: UnixStream,
    output: [OwnedFd; 2],
}

/// A lent guardian's channel after its order went down it (its reports are read apart): what
/// it takes to give the guardian back for the next command.
pub(in crate::runtime) struct Channel {
    /// Where its next order goes.
    orders: UnixStream,
    /// The rules it confines its commands by.
    confinement: Confinement,
}

/// The slot of the guardian waiting for the next foreground command: one per runtime. An
/// async lock, held while one starts, so a command that comes meanwhile waits the moment that
/// takes rather than start a second guardian.
#[derive(Debug, Default)]
pub(in crate::runtime) struct WarmSlot {
    guardian: tokio::sync::Mutex<Option<WarmGuardian>>,
}

impl WarmSlot {
    /// Makes sure a guardian for commands confined by `confinement` (stopped with `grace`)
    /// waits: one that fits is kept, one that does not is dismissed and a new one started.
    /// Nothing once `closing` is cancelled; a failure to start one is left for the command
    /// itself to meet (with a guardian of its own).
    pub(in crate::runtime) async fn prepare(
        &self,
        confinement: Confinement,
        grace: Duration,
        closing: &CancellationToken,
    ) {
        let mut slot = self.guardian.lock().await;
        if closing.is_cancelled()
            || slot
                .as_ref()
                .is_some_and(|guardian| guardian.fits(&confinement))
        {
            return;
        }
        let unfit = slot.take();
        if let Ok(Ok(guardian)) =
            tokio::task::spawn_blocking(move || WarmGuardian::start(confinement, grace)).await
        {
            *slot = Some(guardian);
        }
        drop(slot);
        if let Some(unfit) = unfit {
            unfit.dismiss().await;
        }
    }

    /// Lends the waiting guardian to the command `order` encodes (see
    /// [`crate::runtime::guardian::order`]), if it fits a command confined by `confinement`
    /// and is still alive, with a fresh pair of pipes for the command's stdout and stderr;
    /// `None` when the command must start a guardian of its own. A guardian that does not fit
    /// stays for a later command; one that has ended is reaped.
    pub(in crate::runtime) async fn lend(
        &self,
        confinement: &Confinement,
        order: Vec<u8>,
    ) -> Option<std::io::Result<Lent>> {
        let mut warm = self.take(confinement).await?;
        if warm.ended() {
            warm.dismiss().await;
            return None;
        }
        Some(warm.lend(order))
    }

    /// The waiting guardian, if it fits a command confined by `confinement`; it stays for a
    /// later command otherwise.
    async fn take(&self, confinement: &Confinement) -> Option<WarmGuardian> {
        let mut slot = self.guardian.lock().await;
        slot.take_if(|guardian| guardian.fits(confinement))
    }

    /// Takes back a guardian whose command ended on its own, to wait for the next command:
    /// kept unless `closing` is cancelled or another already waits (then it is let go).
    async fn give_back(&self, guardian: WarmGuardian, closing: &CancellationToken) {
        let mut slot = self.guardian.lock().await;
        if closing.is_cancelled() || slot.is_some() {
            drop(slot);
            guardian.dismiss().await;
        } else {
            *slot = Some(guardian);
        }
    }

    /// Kills and reaps the waiting guardian, if there is one.
    pub(in crate::runtime) async fn dismiss(&self) {
        let guardian = self.guardian.lock().await.take();
        if let Some(guardian) = guardian {
            guardian.dismiss().await;
        }
    }
}

impl WarmGuardian {
    /// Starts a warm guardian for commands confined by `confinement`, stopped with `grace`.
    /// Blocking (the spawn), and must run within the tokio runtime (a blocking thread of it
    /// will do).
    pub(in crate::runtime) fn start(
        confinement: Confinement,
        grace: Duration,
    ) -> Result<Self, StartError> {
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
    pub(in crate::runtime) fn fits(&self, confinement: &Confinement) -> bool {
        self.confinement == *confinement
    }

    /// Whether it has already ended (killed from outside, or refused by the kernel's sandbox
    /// and gone after saying so): then it is no use, and the command starts its own guardian,
    /// which meets (and reports) whatever the warm one met.
    pub(in crate::runtime) fn ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Lends it to run the command `order` encodes, with a fresh pair of pipes for the
    /// command's stdout and stderr.
    fn lend(self, order: Vec<u8>) -> std::io::Result<Lent> {
        let (stdout, stdout_writer) = output_pipe()?;
        let (stderr, stderr_writer) = output_pipe()?;
        Ok(Lent {
            child: self.child,
            identity: self.identity,
            order: Order {
                confinement: self.confinement,
                report: self.report,
                order,
                orders: self.orders,
                output: [stdout_writer, stderr_writer],
            },
            output: [stdout, stderr],
        })
    }

    /// Lets it go unused: SIGKILL (it has no command, so nothing to stop gently) and reap.
    pub(in crate::runtime) async fn dismiss(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

impl Order {
    /// Sends the order with the output pipes' writing ends, then closes this process's copies
    /// of them (the output ends when the command's side lets go), and returns the reports'
    /// reader and the channel.
    /// Blocking. A guardian that died meanwhile is found by the handshake that follows (its
    /// report, or the end of the socket), so a failed send is not an error of its own.
    pub(in crate::runtime) fn send(self) -> (ReportReader, Channel) {
        let [stdout, stderr] = &self.output;
        let _ = send_with_output(&self.orders, &self.order, [stdout.as_fd(), stderr.as_fd()]);
        drop(self.output);
        let channel = Channel {
            orders: self.orders,
            confinement: self.confinement,
        };
        (self.report, channel)
    }
}

impl Channel {
    /// Gives the guardian `child` (`identity`, its reports read by `report`), whose command ended on its own and which no
    /// stop request can reach any more, back to `slot` to wait for the next command: it has
    /// swept whatever the command left and holds nothing of it. Let go instead once `closing`
    /// is cancelled or another guardian already waits.
    pub(in crate::runtime) async fn give_back(
        self,
        report: ReportReader,
        child: tokio::process::Child,
        identity: ProcessIdentity,
        slot: &WarmSlot,
        closing: &CancellationToken,
    ) {
        let guardian = WarmGuardian {
            confinement: self.confinement,
            child,
            identity,
            report,
            orders: self.orders,
        };
        slot.give_back(guardian, closing).await;
    }
}

/// A pipe for a command's output: the runtime's reading end, non-blocking for tokio, and the
/// writing end for the command, left blocking (a command must not see `EAGAIN` on its
/// stdout).
fn output_pipe() -> std::io::Result<(pipe::Receiver, OwnedFd)> {
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    Ok((pipe::Receiver::from_owned_fd(read)?, write))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::runtime::sandbox::{ExecRules, Network, Privileges, Sandbox, Writes};

    /// Commands confined to `/w`, their guardian a program that ends at once: what is checked
    /// here is which command a warm guardian is handed to, not what it does.
    fn medium() -> Confinement {
        Confinement {
            sandbox: Sandbox {
                writes: Writes::Beneath(vec!["/w".into(), "/w/tmp".into()]),
                network: Network::Blocked,
                privileges: Privileges::Dropped,
            },
            temp_dir: Some("/w/tmp".into()),
            withheld: vec!["GITHUB_TOKEN".into()],
            guardian: PathBuf::from("/bin/true"),
            exec_rules: ExecRules::default(),
        }
    }

    #[tokio::test]
    async fn a_warm_guardian_serves_only_commands_confined_exactly_as_it_is() {
        let (slot, open) = (WarmSlot::default(), CancellationToken::new());
        let grace = Duration::from_millis(10);
        slot.prepare(medium(), grace, &open).await;
        let others = [
            Confinement {
                sandbox: Sandbox::open(),
                ..medium()
            },
            Confinement {
                sandbox: Sandbox {
                    writes: Writes::Beneath(vec!["/w".into(), "/elsewhere".into()]),
                    ..medium().sandbox
                },
                ..medium()
            },
            Confinement {
                sandbox: Sandbox {
                    network: Network::Clients,
                    ..medium().sandbox
                },
                ..medium()
            },
            Confinement {
                sandbox: Sandbox {
                    privileges: Privileges::Kept,
                    ..medium().sandbox
                },
                ..medium()
            },
            Confinement {
                temp_dir: Some("/w/other-tmp".into()),
                ..medium()
            },
            Confinement {
                withheld: Vec::new(),
                ..medium()
            },
            Confinement {
                guardian: PathBuf::from("/bin/false"),
                ..medium()
            },
            Confinement {
                exec_rules: ExecRules::new(vec![crate::command_pattern::DenyRule {
                    rule: "bash(git push *)".into(),
                    pattern: crate::command_pattern::CommandPattern::parse("git push *").unwrap(),
                }]),
                ..medium()
            },
        ];
        for other in &others {
            assert!(slot.take(other).await.is_none(), "{other:?}");
        }
        let warm = slot.take(&medium()).await.expect("it fits its own");
        assert!(slot.take(&medium()).await.is_none(), "taken once");
        // Given back, it waits again; asked for other rules, the slot replaces it.
        slot.give_back(warm, &open).await;
        slot.prepare(others[2].clone(), grace, &open).await;
        assert!(
            slot.take(&medium()).await.is_none(),
            "replaced for other rules"
        );
        assert!(slot.take(&others[2]).await.is_some());
    }

    #[tokio::test]
    async fn no_guardian_is_kept_or_started_once_the_runtime_closes() {
        let (slot, closing) = (WarmSlot::default(), CancellationToken::new());
        let grace = Duration::from_millis(10);
        slot.prepare(medium(), grace, &closing).await;
        let warm = slot.take(&medium()).await.expect("one waits");
        closing.cancel();
        slot.give_back(warm, &closing).await;
        assert!(
            slot.take(&medium()).await.is_none(),
            "not taken back once closing"
        );
        slot.prepare(medium(), grace, &closing).await;
        assert!(
            slot.take(&medium()).await.is_none(),
            "none started once closing"
        );
    }
}
