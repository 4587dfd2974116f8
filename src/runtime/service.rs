//! Services: long-lived commands the run talks to while they run, over their stdin and stdout
//! (MCP stdio servers) or over a socket of their own (the local model's server). A service is a command like any other: it runs under a guardian, in
//! the run's sandbox, with the run's environment rules, and its whole subtree dies with the
//! run — also when zero is SIGKILLed, through the lifeline. What differs is its wiring: its
//! stdin and stdout are one end of a socket pair whose other end the caller gets (the
//! guardian hands its command its own stdout as stdin too, so it needs no fourth fd), and its
//! stderr is appended to a log file.
//!
//! A service leaves no record. The runtime counts it with the foreground commands, so
//! [`super::Runtime::close`] stops it (if its user has not already) and waits until it is over.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;

use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::foreground::{self, Entered, Foreground, Termination};
use super::guardian::report::StartError;
use super::guardian::spawn::{Confinement, GuardianCommand, Launch, Stdio};
use super::identity::ProcessIdentity;
use super::sandbox::{Network, Support};
use super::stop::{Guarded, StopRequest};

/// What to start as a service.
#[derive(Debug)]
pub struct ServiceSpec {
    /// The program, its arguments, working directory and extra variables.
    pub launch: Launch,
    /// Whether it may use the network.
    pub network: ServiceNetwork,
    /// Where its stderr goes.
    pub log: File,
}

/// Whether a service may use the network, apart from what the run's commands may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceNetwork {
    /// As the run's commands may.
    AsCommands,
    /// As a network client may, whatever the run's commands may (an MCP server configured
    /// with `"network": true`): never raw packet sockets below `--auto high`.
    Open,
    /// Never, where the kernel can block it (seccomp), whatever the run's commands may: a
    /// server that needs only Unix sockets (the local model's).
    Blocked,
}

/// The most of a service's log quoted when it failed.
const LOG_TAIL: u64 = 2000;

/// A running service, as its user holds it. Dropping it stops the service.
#[derive(Debug)]
pub struct Service {
    stop: CancellationToken,
    ended: watch::Receiver<Option<Termination>>,
}

impl Service {
    /// Asks the service to stop (TERM, grace, KILL, as every command) and returns at once;
    /// [`Service::ended`] says when it is over.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// How the service ended, once it has.
    pub fn termination(&self) -> Option<Termination> {
        *self.ended.borrow()
    }

    /// Waits until the service has ended, and says how.
    pub async fn ended(&self) -> Termination {
        let mut ended = self.ended.clone();
        match ended.wait_for(Option::is_some).await {
            Ok(end) => end.unwrap_or(Termination::Cancelled),
            Err(_) => Termination::Cancelled,
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Starts `spec` and returns it with the caller's end of its socket once its guardian has
/// confirmed the start. The service is supervised by a tokio task of its own, counted in
/// `foreground` until it is over, so a caller that gives up half-way (its start timed out)
/// leaves nothing running: the task stops a service nobody took.
pub(super) async fn start(
    foreground: &Arc<Foreground>,
    spec: ServiceSpec,
    mut confinement: Confinement,
) -> Result<(Service, tokio::net::UnixStream), StartError> {
    let entered = Entered::new(foreground).ok_or(StartError::Closed)?;
    match spec.network {
        ServiceNetwork::AsCommands => {}
        // A client's sockets, never raw ones: a run whose commands may open any socket
        // (`--auto high`) keeps that for its services too.
        ServiceNetwork::Open if confinement.sandbox.network == Network::Blocked => {
            confinement.sandbox.network = Network::Clients;
        }
        ServiceNetwork::Open => {}
        ServiceNetwork::Blocked if Support::probe().network => {
            confinement.sandbox.network = Network::Blocked;
        }
        ServiceNetwork::Blocked => {}
    }
    let (ours, theirs) = UnixStream::pair().map_err(StartError::Guardian)?;
    let (started, taken) = oneshot::channel();
    let grace = foreground.grace();
    tokio::spawn(async move {
        let foreground = Arc::clone(&entered.0);
        let spawned = GuardianCommand::new(
            &spec.launch,
            &confinement,
            grace,
            Stdio::Duplex {
                socket: &theirs,
                log: &spec.log,
            },
        )
        .spawn_async();
        // Only the guardian holds the service's end from now on: when it is gone, the
        // caller's reads see EOF.
        drop(theirs);
        let (mut child, mut report) = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                let _ = started.send(Err(error));
                return;
            }
        };
        let guardian = ProcessIdentity::of(child.id().unwrap_or_default());
        let handshake = super::blocking(move || (report.handshake(), report)).await;
        let (command, mut report) = match handshake {
            Ok((Ok(command), report)) => (command, report),
            Ok((Err(error), _)) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                let _ = started.send(Err(error));
                return;
            }
            Err(_) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                let _ = started.send(Err(foreground::shutting_down()));
                return;
            }
        };
        let stop = CancellationToken::new();
        let (ended_tx, ended) = watch::channel(None);
        let service = Service {
            stop: stop.clone(),
            ended,
        };
        let stream = ours
            .set_nonblocking(true)
            .and_then(|()| tokio::net::UnixStream::from_std(ours));
        match stream {
            Ok(stream) => {
                // A caller that gave up meanwhile drops the service, which stops it.
                let _ = started.send(Ok((service, stream)));
            }
            Err(error) => {
                let _ = started.send(Err(StartError::Guardian(error)));
            }
        }
        let guarded = Guarded { guardian, command };
        let stopped = tokio::select! {
            status = child.wait() => { drop(status); false }
            () = stop.cancelled() => true,
            () = foreground.closing().cancelled() => true,
        };
        if stopped {
            let _ =
                foreground::stop_child(&mut child, guarded, grace, &StopRequest::default()).await;
        }
        let end = super::blocking(move || report.ended()).await.ok().flatten();
        let termination = match (stopped, end) {
            (true, _) => Termination::Cancelled,
            (false, Some(ending)) => ending.end.into(),
            (false, None) => Termination::Signalled(libc::SIGKILL),
        };
        let _ = ended_tx.send(Some(termination));
        drop(entered);
    });
    match taken.await {
        Ok(started) => started,
        Err(_) => Err(foreground::shutting_down()),
    }
}

/// Opens (creating it if need be) the file a service's stderr is appended to, readable by
/// this user only: a server's log can hold what it was sent.
pub fn open_log(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// How a service ended, as words after "it …" (empty when it was stopped or is still running).
pub fn end_words(ended: Option<Termination>) -> String {
    match ended {
        Some(Termination::Exited(code)) => format!(" (it exited with status {code})"),
        Some(Termination::Signalled(signal)) => format!(" (it was ended by signal {signal})"),
        Some(Termination::TimedOut | Termination::Cancelled) | None => String::new(),
    }
}

/// `message`, with the end of the service's stderr `log` when it has anything in it: what a
/// server that failed to start says about why is nearly always in its last lines.
pub fn with_log_tail(message: &str, log: Option<&Path>) -> String {
    let tail = log.and_then(|log| log_tail(log).ok()).unwrap_or_default();
    let tail = tail.trim();
    if tail.is_empty() {
        message.to_string()
    } else {
        format!("{message}; its stderr ended with:\n{tail}")
    }
}

/// The last [`LOG_TAIL`] bytes of `log` as text, a character cut in two at the start dropped.
fn log_tail(log: &Path) -> std::io::Result<String> {
    let mut file = File::open(log)?;
    let length = file.seek(SeekFrom::End(0))?;
    let start = length.saturating_sub(LOG_TAIL);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text
        .trim_start_matches(char::REPLACEMENT_CHARACTER)
        .to_string())
}
