//! Starting external commands. Every process zero runs is spawned here, so the rules live in
//! one place: every command runs under a guardian (`zero __guard`, see [`super::guardian`]),
//! which gets its own process group, the report pipe as its stdin and the lifeline on the fd
//! [`LIFELINE_FD_VAR`] names, and which starts the command in a process group of its own.
//! Nothing runs between fork and exec, so the guardian is spawned the `vfork` way
//! (`posix_spawn`): forking a multi-threaded runtime of several MB costs more than the whole
//! guardian start. A command counts
//! as started only once its guardian has said so (the handshake). A foreground command gets
//! bounded output capture, and its leftovers die with it; a background task's output goes to a
//! file and its end is the runtime's business (see [`super::Runtime`]).

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use nix::fcntl::OFlag;
use nix::sys::signal::Signal;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::capture::BoundedCapture;
use super::guardian_report::{ReportReader, StartError};
use super::identity::ProcessIdentity;
use super::lifeline::{self, LIFELINE_FD_VAR};
use super::reap::{self, ProcessEnd};
use crate::redact::{HANDED_KEY_VARIABLE, KEY_VARIABLES};

/// Bytes kept from the start and from the end of each output stream.
const CAPTURE_HEAD: usize = 32 * 1024;
const CAPTURE_TAIL: usize = 32 * 1024;

/// How long output pipes may stay open after the command ended (a process that escaped the
/// guardian can hold them); after this the run stops reading instead of hanging.
const PIPE_DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How long past its own grace period a stopping guardian may take before it is SIGKILLed
/// together with its command's group.
pub(super) const GUARDIAN_MARGIN: Duration = Duration::from_secs(2);

/// A shell command to run in the foreground.
#[derive(Debug, Clone, Copy)]
pub struct ShellCommand<'a> {
    /// The command line, run by the shell.
    pub command: &'a str,
    /// The working directory.
    pub cwd: &'a Path,
    /// How long the command may run before it is stopped.
    pub timeout: Duration,
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
    /// The run was cancelled and the command was stopped with everything it started.
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
}

/// The shell that runs commands: bash when the machine has it (models write bash), else `sh`.
pub fn shell() -> &'static str {
    ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .unwrap_or("/bin/sh")
}

/// Makes the runtime start guardians from `program` instead of this process's own executable.
/// Only for programs that embed the runtime but are not `zero` themselves (integration tests,
/// whose executable is the test harness). The first call wins.
pub fn use_guardian_program(program: impl Into<PathBuf>) {
    let _ = GUARDIAN_PROGRAM.set(program.into());
}

static GUARDIAN_PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// The zero binary that runs guardians: this very executable. On Linux `/proc/self/exe`, which
/// names the running binary even if its file was replaced or deleted since (a rebuild).
fn guardian_program() -> PathBuf {
    if let Some(program) = GUARDIAN_PROGRAM.get() {
        return program.clone();
    }
    if cfg!(target_os = "linux") {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("zero"))
    }
}

/// A program to start as a background task.
#[derive(Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program to run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Variables set for it on top of the inherited environment (which never includes the
    /// provider's key variables). `Debug` shows only their names.
    pub env: Vec<(OsString, OsString)>,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field(
                "env",
                &self.env.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Launch {
    /// `command` run by the platform [`shell`] in `cwd`.
    pub fn shell(command: &str, cwd: &Path) -> Self {
        Launch {
            program: shell().into(),
            args: vec!["-c".into(), command.into()],
            cwd: cwd.to_path_buf(),
            env: Vec::new(),
        }
    }
}

/// A guardian's command line for `launch`, with everything placed but its stdout and stderr.
/// The command holds the guardian's end of the report pipe: drop it right after the spawn, so
/// the reader sees EOF once the guardian is gone.
struct Prepared {
    command: std::process::Command,
    report: ReportReader,
}

fn prepare(launch: &Launch, grace: Duration) -> std::io::Result<Prepared> {
    let lifeline = lifeline::read_end()?;
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    let mut command = std::process::Command::new(guardian_program());
    command
        .arg0("zero")
        .arg("__guard")
        .arg("--grace-ms")
        .arg(grace.as_millis().to_string())
        .arg("--")
        .arg(&launch.program)
        .args(&launch.args)
        .current_dir(&launch.cwd)
        .env(LIFELINE_FD_VAR, lifeline.to_string())
        .stdin(Stdio::from(write))
        .process_group(0);
    // No command ever receives the provider's key, nor the file a parent handed this process
    // its key in. Only a launch that names the handed-key file on purpose (a specialist, see
    // `redact::HANDED_KEY_VARIABLE`) passes one on; a key variable never passes.
    for name in KEY_VARIABLES.iter().chain([&HANDED_KEY_VARIABLE]) {
        command.env_remove(name);
    }
    command.envs(
        launch
            .env
            .iter()
            .filter(|(name, _)| !KEY_VARIABLES.iter().any(|key| name == key))
            .map(|(name, value)| (name, value)),
    );
    Ok(Prepared {
        command,
        report: ReportReader::new(read),
    })
}

/// A command running under its guardian, after a successful handshake.
pub(super) struct Guarded {
    /// The guardian: our child, the process to wait for and to send stop requests to.
    pub guardian: ProcessIdentity,
    /// The command, as the guardian reported it.
    pub command: ProcessIdentity,
    /// Where the guardian's final report will arrive.
    pub report: ReportReader,
}

/// Starts `launch` under a guardian, with stdout and stderr appended to `output`, and waits for
/// the handshake. On any failure the guardian has been reaped before this returns. The guardian
/// is deliberately not reaped or killed when its handle is dropped: the runtime observes its
/// end and reaps it itself, after it has finished signalling, so the pid cannot be recycled
/// under it. Blocking.
pub(super) fn spawn_background(
    launch: &Launch,
    output: &File,
    grace: Duration,
) -> Result<Guarded, StartError> {
    let Prepared {
        mut command,
        mut report,
    } = prepare(launch, grace).map_err(StartError::Guardian)?;
    let stdout = output.try_clone().map_err(StartError::Guardian)?;
    let stderr = output.try_clone().map_err(StartError::Guardian)?;
    let child = command.stdout(stdout).stderr(stderr).spawn();
    drop(command);
    let child = child.map_err(StartError::Guardian)?;
    let guardian = ProcessIdentity::of(child.id());
    match report.handshake() {
        Ok(command) => Ok(Guarded {
            guardian,
            command,
            report,
        }),
        Err(error) => {
            let _ = nix::sys::signal::kill(guardian.pid(), Signal::SIGKILL);
            let _ = reap::reap(guardian.pid);
            Err(error)
        }
    }
}

/// The grace period the environment asks for (`ZERO_KILL_GRACE_MS`), for foreground commands,
/// which have no runtime configuration at hand.
fn foreground_grace() -> Duration {
    super::config::Environment::from_env()
        .map(|environment| environment.kill_grace)
        .unwrap_or(super::DEFAULT_KILL_GRACE)
}

/// Runs `spec` to completion, timeout or cancellation. Whatever the command left running (in
/// its group, or daemonized below its guardian) is stopped when it ends: a foreground
/// command's leftovers die with it.
///
/// The command is run by a tokio task of its own, counted until it is over (see [`settled`]):
/// a caller that stops waiting (the agent loop drops a cancelled tool call) does not cut the
/// stop short — dropping this future asks for the stop, and the task carries it through, grace
/// period and all.
pub async fn run_foreground(
    spec: ShellCommand<'_>,
    cancel: &CancellationToken,
) -> Result<CommandOutput, StartError> {
    let stop = cancel.child_token();
    let stopper = Arc::new(Stopper::default());
    let abandoned = Abandoned {
        stopper: Arc::clone(&stopper),
        stop: stop.clone(),
        armed: true,
    };
    let launch = Launch::shell(spec.command, spec.cwd);
    let timeout = spec.timeout;
    let counted = InFlight::enter();
    let run = tokio::spawn(async move {
        let _counted = counted;
        run_guarded(launch, timeout, stop, stopper).await
    });
    let result = run.await;
    abandoned.disarm();
    match result {
        Ok(result) => result,
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_) => Err(StartError::Guardian(std::io::Error::other(
                "the async runtime is shutting down",
            ))),
        },
    }
}

/// Dropped while armed when the caller of [`run_foreground`] stops waiting: cancels the
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

/// Waits until no foreground command is running or being stopped anywhere in the process.
/// The run calls it before closing, so a command whose tool call was abandoned has been
/// stopped — with its grace period — before the process goes.
pub async fn settled() {
    let _ = in_flight()
        .subscribe()
        .wait_for(|running| *running == 0)
        .await;
}

/// How many foreground commands are running or being stopped, process-wide.
fn in_flight() -> &'static watch::Sender<usize> {
    static IN_FLIGHT: OnceLock<watch::Sender<usize>> = OnceLock::new();
    IN_FLIGHT.get_or_init(|| watch::Sender::new(0))
}

/// One foreground command counted in [`in_flight`] for as long as this lives.
struct InFlight;

impl InFlight {
    fn enter() -> Self {
        in_flight().send_modify(|running| *running += 1);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        in_flight().send_modify(|running| *running -= 1);
    }
}

/// [`run_foreground`]'s work, on its own tokio task.
async fn run_guarded(
    launch: Launch,
    timeout: Duration,
    cancel: CancellationToken,
    stopper: Arc<Stopper>,
) -> Result<CommandOutput, StartError> {
    let grace = foreground_grace();
    let Prepared {
        mut command,
        mut report,
    } = prepare(&launch, grace).map_err(StartError::Guardian)?;
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    // The temporary command, and with it the guardian's end of the report pipe, is dropped
    // right after the spawn.
    let mut child = tokio::process::Command::from(command)
        .spawn()
        .map_err(StartError::Guardian)?;
    let guardian = ProcessIdentity::of(child.id().unwrap_or_default());
    let confirmed = Arc::clone(&stopper);
    let abandoned = cancel.clone();
    // The handshake, and making the processes known to stop requests, happen on a blocking
    // thread that needs no polling: a caller that gave up meanwhile gets its stop request
    // delivered even if this task is never polled again. Either the caller's request finds the
    // processes set, or this finds the token cancelled and sends it.
    let (report, handshake) = super::blocking(move || {
        let handshake = report.handshake();
        if let Ok(command) = &handshake {
            let _ = confirmed.processes.set(Processes {
                guardian,
                command: *command,
            });
            if abandoned.is_cancelled() {
                confirmed.request_stop();
            }
        }
        (report, handshake)
    })
    .await
    .map_err(|_| {
        StartError::Guardian(std::io::Error::other("the async runtime is shutting down"))
    })?;
    if let Err(error) = handshake {
        let _ = child.start_kill();
        let _ = child.wait().await;
        return Err(error);
    }

    let mut stdout = BoundedCapture::new(CAPTURE_HEAD, CAPTURE_TAIL);
    let mut stderr = BoundedCapture::new(CAPTURE_HEAD, CAPTURE_TAIL);
    let stdout_pipe = child.stdout.take();
    let stderr_pipe = child.stderr.take();
    let (status, stopped) = {
        let reading = async {
            tokio::join!(
                drain(stdout_pipe, &mut stdout),
                drain(stderr_pipe, &mut stderr)
            )
        };
        tokio::pin!(reading);
        let mut reading_done = false;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        // The guardian's grace plus a margin after the stop request; the first request comes
        // at the timeout at the latest, and an earlier one moves this forward.
        let backstop = tokio::time::sleep(timeout + grace + GUARDIAN_MARGIN);
        tokio::pin!(backstop);
        let mut stopped: Option<Termination> = None;
        let (mut requested, mut hurried, mut killed) = (false, false, false);
        let hurry = super::hurried();
        let status = loop {
            tokio::select! {
                _ = &mut reading, if !reading_done => reading_done = true,
                status = child.wait() => break status,
                () = &mut deadline, if stopped.is_none() => stopped = Some(Termination::TimedOut),
                () = cancel.cancelled(), if stopped.is_none() => {
                    stopped = Some(Termination::Cancelled);
                }
                () = hurry.cancelled(), if requested && !hurried => {
                    hurried = true;
                    stopper.hurry();
                }
                () = &mut backstop, if !killed => {
                    killed = true;
                    stopper.kill();
                }
            }
            if stopped.is_some() && !requested {
                requested = true;
                stopper.request_stop();
                backstop
                    .as_mut()
                    .reset(tokio::time::Instant::now() + grace + GUARDIAN_MARGIN);
            }
        };
        if !reading_done {
            let _ = tokio::time::timeout(PIPE_DRAIN_GRACE, &mut reading).await;
        }
        (status, stopped)
    };
    let ended = super::blocking(move || report.ended()).await.ok().flatten();
    let leftovers = ended.map_or(0, |(_, leftovers)| leftovers);
    let termination = match (stopped, ended, status) {
        (Some(stopped), _, _) => stopped,
        (None, Some((end, _)), _) => end.into(),
        (None, None, Ok(status)) => exit_termination(status),
        (None, None, Err(error)) => return Err(StartError::Guardian(error)),
    };
    Ok(CommandOutput {
        termination,
        stdout,
        stderr,
        leftovers,
    })
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

/// The processes of a foreground command, once its guardian has confirmed the start.
#[derive(Debug, Clone, Copy)]
struct Processes {
    guardian: ProcessIdentity,
    command: ProcessIdentity,
}

/// Stop requests for one foreground command, shared by the caller's future and the task that
/// runs the command. Each kind of request is sent at most once: the guardian reads a second
/// stop request as "skip the grace", so a repeated first request must not look like one.
#[derive(Debug, Default)]
struct Stopper {
    processes: OnceLock<Processes>,
    requested: AtomicBool,
    hurried: AtomicBool,
}

impl Stopper {
    /// Asks the guardian to stop the subtree (TERM, grace, KILL).
    fn request_stop(&self) {
        if let Some(processes) = self.processes.get() {
            if !self.requested.swap(true, Ordering::SeqCst) {
                let _ = processes.guardian.signal_group(Signal::SIGTERM);
            }
        }
    }

    /// Skips the grace: the command's group is killed now, and a second request makes the
    /// guardian kill the rest of the subtree.
    fn hurry(&self) {
        if let Some(processes) = self.processes.get() {
            if !self.hurried.swap(true, Ordering::SeqCst) {
                let _ = processes.command.signal_group(Signal::SIGKILL);
                let _ = processes.guardian.signal_group(Signal::SIGTERM);
            }
        }
    }

    /// The guardian did not finish in time: kill it and the command's group.
    fn kill(&self) {
        if let Some(processes) = self.processes.get() {
            let _ = processes.command.signal_group(Signal::SIGKILL);
            let _ = processes.guardian.signal_group(Signal::SIGKILL);
        }
    }
}
