//! Services: long-lived commands the run talks to over their stdin and stdout while they run
//! (MCP stdio servers). A service is a command like any other: it runs under a guardian, in
//! the run's sandbox, with the run's environment rules, and its whole subtree dies with the
//! run — also when zero is SIGKILLed, through the lifeline. What differs is its wiring: its
//! stdin and stdout are one end of a socket pair whose other end the caller gets (the
//! guardian hands its command its own stdout as stdin too, so it needs no fourth fd), and its
//! stderr is appended to a log file.
//!
//! A service leaves no record. The runtime counts it with the foreground commands, so
//! [`super::Runtime::close`] stops it (if its user has not already) and waits until it is over.

use std::fs::File;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::foreground::{self, Entered, Foreground, Termination};
use super::guardian_report::StartError;
use super::identity::ProcessIdentity;
use super::sandbox::Network;
use super::spawn::{Confinement, GuardianCommand, Launch, Stdio};
use super::stop::{Guarded, StopRequest};

/// What to start as a service.
#[derive(Debug)]
pub struct ServiceSpec {
    /// The program, its arguments, working directory and extra variables.
    pub launch: Launch,
    /// Whether it may use the network even where the run's commands may not.
    pub network: bool,
    /// Where its stderr goes.
    pub log: File,
}

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
    if spec.network {
        confinement.sandbox.network = Network::Open;
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
        let (command, report) = match handshake {
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
            (false, Some((end, _))) => end.into(),
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
