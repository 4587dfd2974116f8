//! Foreground commands: a command the caller waits for (the `bash` tool without
//! `run_in_background`), with bounded output capture and a timeout. Whatever it left running
//! (in its group, or daemonized below its guardian) is stopped when it ends: a foreground
//! command's leftovers die with it.
//!
//! A foreground command leaves no record and needs no run directory, so running one opens
//! nothing on disk — unless the sandbox confines writes, when it gets the run's temporary
//! directory — and a run that only runs foreground commands leaves no trace after close. The runtime still
//! knows every one it started ([`Foreground`]): [`super::Runtime::close`] refuses new ones,
//! stops those still running, and waits until each is over, its stop's grace period included.

use std::process::ExitStatus;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinError;
use tokio_util::sync::CancellationToken;

use super::capture::BoundedCapture;
use super::guardian::report::{Ending, ExecRefusal, ReportReader, StartError};
use super::guardian::spawn::{Confinement, GuardianCommand, Launch, Stdio};
use super::guardian::warm::{Channel, Lent, Order, WarmSlot};
use super::identity::ProcessIdentity;
use super::reap::ProcessEnd;
use super::stop::{self, Guarded, GuardianEnd, StopRequest};
use super::timing::PIPE_DRAIN_GRACE;

/// Bytes kept from the start and from the end of each output stream.
const CAPTURE_HEAD: usize = 32 * 1024;
const CAPTURE_TAIL: usize = 32 * 1024;

/// A shell command to run in the foreground.
#[derive(Debug, Clone, Copy)]
pub struct ShellCommand<'a> {
    /// The command line, run by the shell.
    pub command: &'a str,
    /// The working directory.
    pub cwd: &'a std::path::Path,
    /// How long the command may run before it is stopped.
    pub timeout: Duration,
    /// Whose command it is: a caller's (a hook, a check) never runs in a guardian that has
    /// served a model's command.
    pub origin: Origin,
}

/// Whose command a foreground command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The model's (a `bash` call): it may run in a warm guardian.
    Model,
    /// The caller's own (a hook, a check), which the model must not reach: always in a
    /// guardian started for it alone.
    Caller,
}

/// How a foreground command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// It ran past its timeout and was stopped with everything it started.
    TimedOut,
    /// The run was cancelled (or the runtime closed) and the command was stopped with
    /// everything it started.
    Cancelled,
}

/// The outcome of a foreground command.
#[derive(Debug)]
pub struct CommandOutput {
    /// How it ended.
    pub termination: Termination,
    /// What it wrote to stdout (bounded).
    pub stdout: BoundedCapture,
    /// What it wrote to stderr (bounded).
    pub stderr: BoundedCapture,
    /// How many processes it left running that were stopped when it ended.
    pub leftovers: usize,
    /// The programs of its tree the exec check refused (see `guardian::execs`).
    pub refused: Vec<ExecRefusal>,
}

/// The runtime's foreground commands: how many are running or being stopped, and whether the
/// runtime has closed.
#[derive(Debug)]
pub(super) struct Foreground {
    /// The time between SIGTERM and SIGKILL when a command is stopped (the runtime's
    /// configuration, read once).
    grace: Duration,
    /// How many commands are running or being stopped.
    running: watch::Sender<usize>,
    /// Cancelled when the runtime closes: no command may start any more, and every one still
    /// running is stopped.
    closing: CancellationToken,
    /// The guardian waiting for the next command, if any ([`Foreground::prepare`]).
    warm: WarmSlot,
}

impl Foreground {
    /// No commands yet; each one stopped gets `grace` between SIGTERM and SIGKILL.
    pub(crate) fn new(grace: Duration) -> Self {
        Foreground {
            grace,
            running: watch::Sender::new(0),
            closing: CancellationToken::new(),
            warm: WarmSlot::default(),
        }
    }

    /// Makes sure a warm guardian for commands confined by `confinement` waits for the next
    /// command (see [`WarmSlot::prepare`]).
    pub(crate) async fn prepare(&self, confinement: Confinement) {
        self.warm
            .prepare(confinement, self.grace, &self.closing)
            .await;
    }

    /// Kills and reaps the warm guardian, if there is one: the runtime's close, after
    /// [`Foreground::close`] (so no new one can start).
    pub(crate) async fn dismiss_warm(&self) {
        self.warm.dismiss().await;
    }

    /// Runs `spec` to completion, timeout or cancellation (`cancel`, or the runtime's close).
    /// Fails only when the command could not start, or when the runtime is closed.
    ///
    /// The command is run by a tokio task of its own, counted until it is over: a caller that
    /// stops waiting (the agent loop drops a cancelled tool call) does not cut the stop short
    /// — dropping this future sends the stop request at once, and the task carries the stop
    /// through, grace period and all, while close waits for it. The output comes back as soon
    /// as the guardian has reported the end (the command and whatever it left are gone); the
    /// task then reaps the exiting guardian, still counted — or, when the guardian goes on to
    /// the next command, has given it back first (see [`super::guardian::warm`]).
    pub(crate) async fn run(
        self: &Arc<Self>,
        spec: ShellCommand<'_>,
        confinement: Confinement,
        cancel: &CancellationToken,
    ) -> Result<CommandOutput, StartError> {
        let entered = Entered::new(self).ok_or(StartError::Closed)?;
        let stop = cancel.child_token();
        let stopper = Arc::new(Stopper::default());
        let abandoned = Abandoned {
            stopper: Arc::clone(&stopper),
            stop: stop.clone(),
            armed: true,
        };
        let launch = Launch::shell(spec.command, spec.cwd);
        let timeout = spec.timeout;
        let lend = spec.origin == Origin::Model;
        let (output, result) = oneshot::channel();
        let run = tokio::spawn(async move {
            supervise(
                &entered.0,
                (launch, lend),
                &confinement,
                timeout,
                stop,
                stopper,
                output,
            )
            .await;
            drop(entered);
        });
        let result = result.await;
        abandoned.disarm();
        match result {
            Ok(result) => result,
            // The task ended without a result: it panicked, or the async runtime is shutting
            // down.
            Err(_) => match run.await.map_err(JoinError::try_into_panic) {
                Err(Ok(panic)) => std::panic::resume_unwind(panic),
                Ok(()) | Err(Err(_)) => Err(shutting_down()),
            },
        }
    }

    /// The time between SIGTERM and SIGKILL when a command is stopped.
    pub(super) fn grace(&self) -> Duration {
        self.grace
    }

    /// Cancelled when the runtime closes.
    pub(super) fn closing(&self) -> &CancellationToken {
        &self.closing
    }

    /// Refuses new commands from now on and asks every running one to stop.
    pub(crate) fn close(&self) {
        self.closing.cancel();
    }

    /// Waits until no command is running or being stopped.
    pub(crate) async fn settled(&self) {
        let _ = self
            .running
            .subscribe()
            .wait_for(|running| *running == 0)
            .await;
    }
}

/// One command (or service) counted in [`Foreground::running`] for as long as this lives.
pub(super) struct Entered(pub(super) Arc<Foreground>);

impl Entered {
    /// Counts a command in, unless the runtime has closed.
    pub(super) fn new(foreground: &Arc<Foreground>) -> Option<Self> {
        let mut entered = false;
        // Checked under the count's lock: a close that cancels first and then finds nothing
        // running cannot miss a command that counted itself in meanwhile.
        foreground.running.send_if_modified(|running| {
            entered = !foreground.closing.is_cancelled();
            if entered {
                *running += 1;
            }
            entered
        });
        entered.then(|| Entered(Arc::clone(foreground)))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.0.running.send_modify(|running| *running -= 1);
    }
}

/// Dropped while armed when the caller of [`Foreground::run`] stops waiting: cancels the
/// command's task and sends the stop request at once, so the guardian starts stopping the
/// subtree even if that task is never polled again.
struct Abandoned {
    stopper: Arc<Stopper>,
    stop: CancellationToken,
    armed: bool,
}

impl Abandoned {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if self.armed {
            self.stop.cancel();
            self.stopper.request_stop();
        }
    }
}

/// The stop request of one foreground command, shared by the caller's future (which sends it
/// when abandoned) and the task that runs the command (whose stop sends it otherwise): sent
/// once, by whichever comes first.
#[derive(Debug, Default)]
struct Stopper {
    /// The command's processes, once its guardian has confirmed the start.
    guarded: OnceLock<Guarded>,
    request: StopRequest,
}

impl Stopper {
    /// Asks the guardian to stop the subtree, if the command has started.
    fn request_stop(&self) {
        if let Some(guarded) = self.guarded.get() {
            let _ = self.request.send(guarded);
        }
    }
}

/// [`Foreground::run`]'s work, on its own tokio task.
async fn supervise(
    foreground: &Foreground,
    (launch, lend): (Launch, bool),
    confinement: &Confinement,
    timeout: Duration,
    stop: CancellationToken,
    stopper: Arc<Stopper>,
    output: oneshot::Sender<Result<CommandOutput, StartError>>,
) {
    let mut after = After::default();
    let result = follow(
        foreground,
        (&launch, lend),
        confinement,
        timeout,
        stop,
        stopper,
        &mut after,
    )
    .await;
    match (after.guardian, after.reusable) {
        // Given back before the result goes out, so the next request finds it waiting.
        (Some(child), Some((identity, report, channel))) => {
            channel
                .give_back(
                    report,
                    child,
                    identity,
                    &foreground.warm,
                    &foreground.closing,
                )
                .await;
            let _ = output.send(result);
        }
        // A guardian exits right after its last report: reaped here, after the caller has
        // its result, and before the command stops counting.
        (Some(mut child), None) => {
            let _ = output.send(result);
            let _ = child.wait().await;
        }
        (None, _) => {
            let _ = output.send(result);
        }
    }
}

/// What [`follow`] leaves its caller: the guardian to reap, and, from a warm guardian whose
/// command ended on its own, what it takes to give the guardian back for the next command.
#[derive(Default)]
struct After {
    guardian: Option<tokio::process::Child>,
    reusable: Option<(ProcessIdentity, ReportReader, Channel)>,
}

/// [`supervise`]'s work up to the result: the command started, followed to its end (or its
/// timeout, or cancellation) and its output captured. The guardian is left in `after`.
async fn follow(
    foreground: &Foreground,
    (launch, lend): (&Launch, bool),
    confinement: &Confinement,
    timeout: Duration,
    stop: CancellationToken,
    stopper: Arc<Stopper>,
    after: &mut After,
) -> Result<CommandOutput, StartError> {
    let grace = foreground.grace;
    let Started {
        child,
        identity: guardian,
        reports,
        output: [stdout_pipe, stderr_pipe],
    } = start_guardian(foreground, launch, lend, confinement).await?;
    let child = after.guardian.insert(child);
    let (mut report, orders, command) =
        confirm_start(child, guardian, reports, &stopper, &stop).await?;
    let guarded = Guarded { guardian, command };
    // The last report, read from now on off the async workers: it comes once the command and
    // whatever it left are gone, before the guardian exits (or, warm, waits for its next
    // order).
    let mut last_report = tokio::task::spawn_blocking(move || {
        let ended = report.ended();
        (report, ended)
    });

    let mut stdout = BoundedCapture::new(CAPTURE_HEAD, CAPTURE_TAIL);
    let mut stderr = BoundedCapture::new(CAPTURE_HEAD, CAPTURE_TAIL);
    let (seen, stopped) = {
        let reading = async {
            tokio::join!(
                drain(stdout_pipe, &mut stdout),
                drain(stderr_pipe, &mut stderr)
            )
        };
        let ending = async {
            let stopped = tokio::select! {
                last = &mut last_report => return (Seen::Report(last.ok()), None),
                status = child.wait() => return (Seen::Exit(status), None),
                () = tokio::time::sleep(timeout) => Termination::TimedOut,
                () = stop.cancelled() => Termination::Cancelled,
                () = foreground.closing.cancelled() => Termination::Cancelled,
            };
            let status = stop_child(child, guarded, grace, &stopper.request).await;
            (Seen::Exit(status), Some(stopped))
        };
        tokio::pin!(reading, ending);
        let mut reading_done = false;
        let ended = loop {
            tokio::select! {
                ended = &mut ending => break ended,
                _ = &mut reading, if !reading_done => reading_done = true,
            }
        };
        if !reading_done {
            let _ = tokio::time::timeout(PIPE_DRAIN_GRACE, &mut reading).await;
        }
        ended
    };
    let (end, reader) = settle(seen, child, last_report).await;
    // A warm guardian whose command ended on its own, which no stop request can reach any
    // more, waits for its next order: it can be given back.
    if stopped.is_none()
        && let (Some(report), Some(orders)) = (reader, orders)
        && stopper.request.retire()
    {
        after.reusable = Some((guardian, report, orders));
    }
    let (termination, ending) = match (stopped, end) {
        (Some(stopped), End::Reported(ending)) => (stopped, Some(ending)),
        (Some(stopped), End::Unreported(_)) => (stopped, None),
        (None, End::Reported(ending)) => (ending.end.into(), Some(ending)),
        (None, End::Unreported(Ok(status))) => (exit_termination(status), None),
        (None, End::Unreported(Err(error))) => return Err(StartError::Guardian(error)),
    };
    let (leftovers, refused) =
        ending.map_or((0, Vec::new()), |ending| (ending.leftovers, ending.refused));
    Ok(CommandOutput {
        termination,
        stdout,
        stderr,
        leftovers,
        refused,
    })
}

/// The order (to a warm guardian) and the handshake, on a blocking thread that needs no
/// polling, and the processes made known to stop requests: a caller that gave up meanwhile
/// gets its stop request delivered even if this task is never polled again. Either the
/// caller's request finds the processes set, or this finds the token cancelled and sends it.
/// Returns the reports' reader, a warm guardian's order channel and the command; a guardian
/// that does not confirm the start is killed and reaped.
async fn confirm_start(
    child: &mut tokio::process::Child,
    guardian: ProcessIdentity,
    reports: Reports,
    stopper: &Arc<Stopper>,
    stop: &CancellationToken,
) -> Result<(ReportReader, Option<Channel>, ProcessIdentity), StartError> {
    let confirmed = Arc::clone(stopper);
    let abandoned = stop.clone();
    let (report, orders, handshake) = super::blocking(move || {
        let (mut report, orders) = match reports {
            Reports::Reading(report) => (report, None),
            Reports::Ordering(order) => {
                let (report, channel) = order.send();
                (report, Some(channel))
            }
        };
        let handshake = report.handshake();
        if let Ok(command) = &handshake {
            let _ = confirmed.guarded.set(Guarded {
                guardian,
                command: *command,
            });
            if abandoned.is_cancelled() {
                confirmed.request_stop();
            }
        }
        (report, orders, handshake)
    })
    .await
    .map_err(|_| shutting_down())?;
    match handshake {
        Ok(command) => Ok((report, orders, command)),
        Err(error) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            Err(error)
        }
    }
}

/// How the command ended, from what was `seen` first: the guardian's last report when it
/// came (with the reader it came on, for a guardian that goes on), the exit status only when
/// the guardian died without one.
async fn settle(
    seen: Seen,
    child: &mut tokio::process::Child,
    last_report: tokio::task::JoinHandle<LastReport>,
) -> (End, Option<ReportReader>) {
    match seen {
        Seen::Report(Some((reader, Some(ending)))) => (End::Reported(ending), Some(reader)),
        Seen::Report(_) => (End::Unreported(child.wait().await), None),
        Seen::Exit(status) => match last_report.await.ok() {
            Some((_, Some(ending))) => (End::Reported(ending), None),
            _ => (End::Unreported(status), None),
        },
    }
}

/// A guardian's last report as read off the async workers: the reader, and the ending (`None`
/// from a guardian that ended without one).
type LastReport = (ReportReader, Option<Ending>);

/// What ended the wait for a command: its guardian's last report with the reader it came on
/// (`None` from a guardian that ended without one), or the guardian's exit.
enum Seen {
    Report(Option<LastReport>),
    Exit(std::io::Result<ExitStatus>),
}

/// How a command ended, as far as the runtime can tell: its guardian's report (the end, the
/// leftovers stopped and the execs refused), or, from a guardian that died without one, the
/// guardian's exit status.
enum End {
    Reported(Ending),
    Unreported(std::io::Result<ExitStatus>),
}

/// A started guardian's reports: being read, or (a warm guardian's) after the order is sent.
enum Reports {
    /// A guardian started for the command: its reports.
    Reading(ReportReader),
    /// A warm guardian lent: its order, then its reports.
    Ordering(Order),
}

/// The reading end of a command's stdout or stderr.
type OutputPipe = Box<dyn AsyncRead + Send + Unpin>;

/// A guardian started, or handed over, for one command.
struct Started {
    child: tokio::process::Child,
    identity: ProcessIdentity,
    reports: Reports,
    /// The command's stdout and stderr.
    output: [Option<OutputPipe>; 2],
}

/// The guardian of `launch`: the warm one when it fits and may be lent (its order still to
/// send), else one started for it now.
async fn start_guardian(
    foreground: &Foreground,
    launch: &Launch,
    lend: bool,
    confinement: &Confinement,
) -> Result<Started, StartError> {
    // An order that cannot be encoded (a NUL in a word) goes the cold way, which refuses it
    // as it always has.
    let order = (lend && launch.confined())
        .then_some(())
        .and_then(|()| launch.order().encode().ok());
    if let Some(order) = order
        && let Some(lent) = foreground.warm.lend(confinement, order).await
    {
        let Lent {
            child,
            identity,
            order,
            output: [stdout, stderr],
        } = lent.map_err(StartError::Guardian)?;
        return Ok(Started {
            child,
            identity,
            reports: Reports::Ordering(order),
            output: [Some(Box::new(stdout)), Some(Box::new(stderr))],
        });
    }
    let (mut child, report) =
        GuardianCommand::new(launch, confinement, foreground.grace, Stdio::Piped).spawn_async()?;
    let identity = ProcessIdentity::of(child.id().unwrap_or_default());
    let output: [Option<OutputPipe>; 2] = [
        child.stdout.take().map(|pipe| Box::new(pipe) as OutputPipe),
        child.stderr.take().map(|pipe| Box::new(pipe) as OutputPipe),
    ];
    Ok(Started {
        child,
        identity,
        reports: Reports::Reading(report),
        output,
    })
}

/// Stops the guarded command whose guardian is our `child` (the runtime's ladder, with
/// `request` as its stop request) and returns the guardian's exit status. A stop that could
/// not be carried through leaves nothing to do but wait: the guardian is our child, and it
/// ends once SIGKILL reaches it.
pub(super) async fn stop_child(
    child: &mut tokio::process::Child,
    guarded: Guarded,
    grace: Duration,
    request: &StopRequest,
) -> std::io::Result<ExitStatus> {
    let mut end = ChildEnd {
        child,
        status: None,
    };
    let _ = stop::stop_guarded(guarded, grace, request, &mut end).await;
    match end.status {
        Some(status) => status,
        None => end.child.wait().await,
    }
}

/// The guardian's end as a foreground command observes it: by waiting for its own child.
struct ChildEnd<'a> {
    child: &'a mut tokio::process::Child,
    /// The guardian's exit status, once it has ended.
    status: Option<std::io::Result<ExitStatus>>,
}

impl GuardianEnd for ChildEnd<'_> {
    async fn within(&mut self, limit: Duration) -> bool {
        if self.status.is_none()
            && let Ok(status) = tokio::time::timeout(limit, self.child.wait()).await
        {
            self.status = Some(status);
        }
        self.status.is_some()
    }
}

/// The error of a start cut short by the async runtime's shutdown.
pub(super) fn shutting_down() -> StartError {
    StartError::Guardian(std::io::Error::other("the async runtime is shutting down"))
}

impl From<ProcessEnd> for Termination {
    fn from(end: ProcessEnd) -> Self {
        match end {
            ProcessEnd::Exited(code) => Termination::Exited(code),
            ProcessEnd::Signalled(signal) => Termination::Signalled(signal),
        }
    }
}

fn exit_termination(status: ExitStatus) -> Termination {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Termination::Exited(code),
        (None, Some(signal)) => Termination::Signalled(signal),
        (None, None) => Termination::Exited(-1),
    }
}

async fn drain(pipe: Option<impl AsyncRead + Unpin>, capture: &mut BoundedCapture) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut buffer = vec![0u8; 16 * 1024];
    while let Ok(read) = pipe.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        capture.push(&buffer[..read]);
    }
}
