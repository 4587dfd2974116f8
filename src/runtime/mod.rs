//! The runtime: the one owner of every child process a run starts, and the one place where
//! zero spawns processes. Nothing here knows about models, tools or output formats.
//!
//! A [`Runtime`] is created once per run and shared (behind an `Arc`) by everything that runs
//! commands or starts, reads or stops tasks. It is lazy: until the first background task starts
//! it has no directory, no file and no lease, so a run that never starts one leaves no trace
//! (foreground commands need none). Once open it holds the run's lease, a private run
//! directory, and every task it started; it knows every foreground command it runs too.
//! [`Runtime::close`] stops what is still running, foreground or background, waits for it,
//! records how each task ended, and removes the run's footprint. `docs/RUNTIME.md` describes
//! the data directory, the record and the state machine.
//!
//! Operations that change state (start, stop, close, a foreground command) run as their own
//! tokio tasks, so a caller that gives up half-way (a cancelled tool call) cannot leave a child
//! unregistered or a stop half-done.
//!
//! The modules, by job: `spawn` is the door every process goes through (the guardian's
//! command line), `foreground` runs the commands a caller waits for, `task` the background
//! tasks and their state machine, `stop` the runtime's one stop ladder (and `hurry`),
//! `timing` every fixed wait and how they relate; `guardian`, `guardian_report` and `lifeline`
//! contain each command; `run`, `record`, `store` and `reconcile` are the data directory.

pub(crate) mod capture;
mod config;
mod error;
mod foreground;
pub(crate) mod git_metadata;
pub mod guardian;
mod identity;
pub(crate) mod lease;
pub(crate) mod lifeline;
pub(crate) mod output;
mod reap;
pub mod sandbox;
mod service;
mod stop;
mod tasks;
mod timing;
pub(crate) mod worktree;

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::future::Future;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub use config::{DEFAULT_MAX_RUNNING, RuntimeConfig};
pub use error::RuntimeError;
pub use foreground::{CommandOutput, Origin, ShellCommand, Termination};
pub use git_metadata::Restoration;
pub use guardian::report::{CommandStartFailure, ExecRefusal, HandshakeFailure, StartError};
pub use guardian::spawn::{GUARD_SUBCOMMAND, Launch};
pub use output::{OutputWindow, Window};
pub use service::{Service, ServiceNetwork, ServiceSpec, end_words, open_log, with_log_tail};
pub(crate) use stop::hurry;
pub use tasks::ids::{RunId, TaskId, WorktreeName};
pub use tasks::reconcile::reconcile_at_start;
pub use tasks::record::{RECORD_SCHEMA_VERSION, RecordError, TaskKind, TaskRecord, TaskStatus};
pub(crate) use tasks::store::{GcReport, Store};
pub(crate) use tasks::task::Stopped;
pub(crate) use timing::MAX_DURATION;
pub use worktree::checkout::{Checkout, CheckoutError, NewCheckout};
pub use worktree::record::{
    Directory, Transition, WORKTREE_SCHEMA_VERSION, WorktreeError, WorktreeLease, WorktreeRecord,
    WorktreeRecords, WorktreeState,
};

use foreground::Foreground;
use git_metadata::GitMetadata;
use guardian::spawn::Confinement;
use sandbox::Writes;
use tasks::run::{Layout, Run};
use tasks::task::{Change, StopCause, Task};

/// Something that happened to a task, for whoever reports the run (the runtime itself never
/// writes output).
#[derive(Debug)]
pub enum TaskEvent {
    /// A task's process started; its record says `running`.
    Started(TaskRecord),
    /// The exec check refused programs of a background command's tree: reported when its task
    /// ended, just before its `Finished` (the call that started it was answered long before).
    Refused(TaskRecord, Vec<ExecRefusal>),
    /// A task's process ended and was reaped; the record is final.
    Finished(TaskRecord),
    /// A task's record could not be persisted outside any caller's request (e.g. when its
    /// process ended on its own). The in-memory state is still right.
    Unrecorded(RuntimeError),
}

/// Receives [`TaskEvent`]s. It is called from runtime tasks, never under a runtime lock, and
/// must not block for long.
pub(crate) type TaskEventSink = Arc<dyn Fn(TaskEvent) + Send + Sync>;

/// What to start as a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSpec {
    /// What the task is; also decides its output file's format.
    pub(crate) kind: TaskKind,
    /// A short description for records and events.
    pub(crate) description: Option<String>,
    /// The id to start it under, when it is made up front because something else is named
    /// after it (an isolated specialist's worktree and branch); a fresh one when `None`.
    pub(crate) id: Option<TaskId>,
    /// The program to run.
    pub launch: Launch,
}

impl TaskSpec {
    /// A background shell task: `command` run by the platform shell in `cwd`.
    pub fn shell(command: &str, cwd: &Path) -> Self {
        TaskSpec {
            kind: TaskKind::Shell {
                command: command.to_string(),
            },
            description: None,
            id: None,
            launch: Launch::shell(command, cwd),
        }
    }
}

/// What [`Runtime::close`] did.
#[derive(Debug, Default)]
pub struct CloseReport {
    /// The tasks close stopped, with their final records (`killed`).
    pub stopped: Vec<TaskRecord>,
    /// What went wrong, failures to stop a process first (they may leave something running),
    /// then records that could not be written, then the run's files that could not be removed.
    pub errors: Vec<RuntimeError>,
    /// The git metadata put back once everything had ended (see [`Runtime::restore_git`]).
    pub git: Restoration,
}

/// The run's shared runtime. See the module documentation.
pub struct Runtime {
    shared: Arc<Shared>,
}

struct Shared {
    config: RuntimeConfig,
    /// `None` when the environment names no data directory (an error only once used).
    layout: Option<Layout>,
    events: TaskEventSink,
    state: Mutex<State>,
    /// The foreground commands: counted apart from `state`, whose lock a background start
    /// holds while it spawns, so a foreground command never waits for one.
    foreground: Arc<Foreground>,
    /// The git metadata of the guarded roots as the run found it, when any are guarded.
    git: Option<std::sync::Mutex<GitMetadata>>,
    /// What the exec check refused in the model's foreground commands, until the caller takes
    /// it ([`Runtime::take_exec_refusals`]).
    refused: std::sync::Mutex<Vec<ExecRefusal>>,
}

struct State {
    phase: Phase,
    /// Every task this run started, also after close (so their final state stays readable).
    tasks: BTreeMap<TaskId, Arc<Task>>,
}

enum Phase {
    /// Nothing started yet: nothing exists on disk.
    Idle,
    /// The run holds its lease and directory.
    Open(Run),
    /// Closed: nothing may start any more.
    Closed,
}

impl Runtime {
    /// A runtime for one run. Does nothing else: no directory, file or lease is created until
    /// the first task starts. `events` hears of every task that starts and finishes.
    pub fn new(config: RuntimeConfig, events: TaskEventSink) -> Self {
        let layout = config.data_dir.clone().map(Layout::new);
        let foreground = Arc::new(Foreground::new(config.kill_grace));
        let git = (!config.guarded_git.is_empty())
            .then(|| std::sync::Mutex::new(GitMetadata::take(&config.guarded_git)));
        Runtime {
            shared: Arc::new(Shared {
                config,
                layout,
                events,
                state: Mutex::new(State {
                    phase: Phase::Idle,
                    tasks: BTreeMap::new(),
                }),
                foreground,
                git,
                refused: std::sync::Mutex::default(),
            }),
        }
    }

    /// Puts back the git metadata of the guarded roots that differs from what the run found
    /// (see `runtime::git_metadata`), and says what: called after each tool call, and by
    /// [`Runtime::close`] once everything has ended. Empty when no root is guarded.
    pub async fn restore_git(&self) -> Restoration {
        if self.shared.git.is_none() {
            return Restoration::default();
        }
        let shared = Arc::clone(&self.shared);
        blocking(move || shared.restore_git())
            .await
            .unwrap_or_default()
    }

    /// Runs `command` in the foreground to completion, its timeout, or cancellation (`cancel`
    /// or [`Runtime::close`]), capturing its output (bounded). Whatever it left running is
    /// stopped when it ends. A stopped command gets the configured grace between SIGTERM and
    /// SIGKILL, and a caller that stops waiting (drops this future) does not cut that short:
    /// the stop is carried through, and close waits for it. Opens nothing on disk. Fails when
    /// the command cannot start, or once the runtime is closed.
    pub async fn run_foreground(
        &self,
        command: ShellCommand<'_>,
        cancel: &CancellationToken,
    ) -> Result<CommandOutput, StartError> {
        self.run_writing(command, &[], cancel).await
    }

    /// Runs a caller's check (`--verify`) as [`Runtime::run_foreground`] runs a command,
    /// always in a guardian started for it alone, and allowed to write beneath `writable` too
    /// whatever the run's commands may write: a check proves the work was done, and a build or
    /// a test run writes (at `--auto low` the run's commands write only their temporary
    /// directory). Under a sandbox that does not confine writes, `writable` changes nothing.
    pub async fn run_check(
        &self,
        command: ShellCommand<'_>,
        writable: &[PathBuf],
        cancel: &CancellationToken,
    ) -> Result<CommandOutput, StartError> {
        let command = ShellCommand {
            origin: Origin::Caller,
            ..command
        };
        self.run_writing(command, writable, cancel).await
    }

    /// [`Runtime::run_foreground`], the command's writes also allowed beneath `writable`.
    async fn run_writing(
        &self,
        command: ShellCommand<'_>,
        writable: &[PathBuf],
        cancel: &CancellationToken,
    ) -> Result<CommandOutput, StartError> {
        let mut confinement = match command.origin {
            Origin::Model => self.shared.start_confinement().await?,
            Origin::Caller => self.shared.start_confinement().await?.without_exec_rules(),
        };
        for root in writable {
            confinement.sandbox = confinement.sandbox.also_writable(root.clone());
        }
        let output = self
            .shared
            .foreground
            .run(command, confinement, cancel)
            .await?;
        if !output.refused.is_empty() {
            crate::sync::lock(&self.shared.refused).extend(output.refused.iter().cloned());
        }
        Ok(output)
    }

    /// What the exec check refused in the model's foreground commands since the last call:
    /// the agent takes it after each `bash` call, which runs alone, to report it as that
    /// call's.
    pub(crate) fn take_exec_refusals(&self) -> Vec<ExecRefusal> {
        std::mem::take(&mut *crate::sync::lock(&self.shared.refused))
    }

    /// Starts the guardian of the next foreground command now, in the background, so the
    /// command finds it ready (see `docs/RUNTIME.md`, "Warm guardians"): called when a model
    /// request goes out that may bring a command. Returns at once; does nothing once the
    /// runtime is closed, nor before the run is open when the sandbox confines writes (the
    /// guardian needs the run's temporary directory then, and the first command opens it), and
    /// a guardian that cannot start is the command's to meet.
    pub fn prepare_foreground(&self) {
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            if let Some(confinement) = shared.confinement_at_hand().await {
                shared.foreground.prepare(confinement).await;
            }
        });
    }

    /// Starts a service (see [`Service`]): a long-lived command confined like every command
    /// (its network open only if `spec` says so), whose stdin and stdout are the returned
    /// socket. It ends when it exits, when its [`Service`] is stopped or dropped, or at
    /// [`Runtime::close`], which waits for it. Fails when it cannot start, or once the runtime
    /// is closed.
    pub async fn start_service(
        &self,
        spec: ServiceSpec,
    ) -> Result<(Service, tokio::net::UnixStream), StartError> {
        let confinement = self.shared.start_confinement().await?.without_exec_rules();
        service::start(&self.shared.foreground, spec, confinement).await
    }

    /// Starts a task and returns its `running` record once that is persisted. Fails when the
    /// runtime is closed, when [`RuntimeConfig::max_running`] tasks are running, or when the
    /// process cannot start — which is recorded as a `failed` task and frees its slot.
    pub async fn start(&self, spec: TaskSpec) -> Result<TaskRecord, RuntimeError> {
        detached(Arc::clone(&self.shared).start(spec)).await?
    }

    /// The private run directory (0700) for prompt files and other scratch, created (and the
    /// run opened) on first use. Removed by [`Runtime::close`].
    pub async fn run_dir(&self) -> Result<PathBuf, RuntimeError> {
        let shared = Arc::clone(&self.shared);
        detached(async move {
            let mut state = shared.state.lock().await;
            let run = shared.open(&mut state).await?;
            Ok(run.dir().to_path_buf())
        })
        .await?
    }

    /// The data directory, when the environment names one (`ZERO_HOME` or XDG's).
    pub(crate) fn data_dir(&self) -> Option<&Path> {
        self.shared.config.data_dir.as_deref()
    }

    /// The zero binary guardians and specialist children run as
    /// ([`RuntimeConfig::zero_binary`]).
    pub(crate) fn zero_binary(&self) -> &Path {
        &self.shared.config.zero_binary
    }

    /// The run's temporary directory (inside [`Runtime::run_dir`]): every confined command's
    /// `TMPDIR`, and the one place a service confined like them may always write.
    pub async fn temp_dir(&self) -> Result<PathBuf, RuntimeError> {
        let shared = Arc::clone(&self.shared);
        detached(async move {
            let mut state = shared.state.lock().await;
            let run = shared.open(&mut state).await?;
            Ok(run.temp_dir())
        })
        .await?
    }

    /// The task's record as it is now. `id` may be anything the model typed: malformed ids,
    /// unknown ids and ids of another run's tasks are told apart.
    pub async fn status(&self, id: &str) -> Result<TaskRecord, RuntimeError> {
        Ok(self.shared.lookup(id).await?.snapshot().await)
    }

    /// Waits until the task is over or `timeout` has passed, then returns its record (still
    /// `running` on a timeout).
    pub async fn wait(&self, id: &str, timeout: Duration) -> Result<TaskRecord, RuntimeError> {
        let task = self.shared.lookup(id).await?;
        task.wait_finished(timeout).await;
        Ok(task.snapshot().await)
    }

    /// Reads `window` of the task's output file (see `output::read_window`).
    pub async fn read_output(
        &self,
        id: &str,
        window: Window,
    ) -> Result<OutputWindow, RuntimeError> {
        let path = self.shared.lookup(id).await?.snapshot().await.output_path;
        let secrets = self.shared.config.secrets.clone();
        blocking(move || {
            output::read_window(&path, window, &secrets).map_err(RuntimeError::io("read", path))
        })
        .await?
    }

    /// Stops the task: `killed` is recorded before SIGTERM reaches its process group, SIGKILL
    /// follows after the grace period, and the call returns once the process is reaped. A task
    /// that already finished is not an error: its final record comes back.
    pub async fn stop(&self, id: &str) -> Result<Stopped, RuntimeError> {
        let task = self.shared.lookup(id).await?;
        let grace = self.shared.config.kill_grace;
        detached(async move { task.stop(StopCause::Requested, grace).await }).await?
    }

    /// The records of the tasks whose processes have not finished yet.
    pub async fn running(&self) -> Vec<TaskRecord> {
        let tasks: Vec<Arc<Task>> = {
            let state = self.shared.state.lock().await;
            state
                .tasks
                .values()
                .filter(|task| !task.is_finished())
                .cloned()
                .collect()
        };
        let mut records = Vec::with_capacity(tasks.len());
        for task in tasks {
            records.push(task.snapshot().await);
        }
        records
    }

    /// Ends the run's use of the runtime: nothing new may start; every task and foreground
    /// command still running is stopped (concurrently) and waited for, a foreground command
    /// whose caller gave up included; the run directory and the lease file are removed and the
    /// lease released. Idempotent: later calls stop nothing and report nothing (they still wait
    /// for foreground commands being stopped).
    pub async fn close(&self) -> CloseReport {
        detached(Arc::clone(&self.shared).close())
            .await
            .unwrap_or_else(|error| CloseReport {
                errors: vec![error],
                git: self.shared.restore_git(),
                ..CloseReport::default()
            })
    }
}

impl Shared {
    /// See [`Runtime::restore_git`].
    fn restore_git(&self) -> Restoration {
        match &self.git {
            Some(kept) => crate::sync::lock(kept).restore(),
            None => Restoration::default(),
        }
    }

    fn layout(&self) -> Result<&Layout, RuntimeError> {
        self.layout.as_ref().ok_or(RuntimeError::NoDataDir)
    }

    /// The rules every command starts with. When the sandbox confines writes, the run is
    /// opened first (if it is not yet), for its temporary directory.
    async fn confinement(&self) -> Result<Confinement, RuntimeError> {
        if !matches!(self.config.sandbox.writes, Writes::Beneath(_)) {
            return Ok(Confinement {
                sandbox: self.config.sandbox.clone(),
                temp_dir: None,
                withheld: self.config.withheld_env.clone(),
                guardian: self.config.zero_binary.clone(),
                exec_rules: self.config.exec_rules.clone(),
            });
        }
        let mut state = self.state.lock().await;
        let run = self.open(&mut state).await?;
        Ok(self.confinement_in(run))
    }

    /// [`Shared::confinement`], its failure as a command's start failure.
    async fn start_confinement(&self) -> Result<Confinement, StartError> {
        self.confinement().await.map_err(|error| match error {
            RuntimeError::Closed => StartError::Closed,
            error => StartError::Guardian(std::io::Error::other(error.to_string())),
        })
    }

    /// [`Shared::confinement`] if it needs no run opened for it: a run that has run no command
    /// yet must not make its run directory only for a guardian kept warm (a run that never
    /// calls a tool leaves nothing on disk but its session).
    async fn confinement_at_hand(&self) -> Option<Confinement> {
        if !matches!(self.config.sandbox.writes, Writes::Beneath(_)) {
            return self.confinement().await.ok();
        }
        match &self.state.lock().await.phase {
            Phase::Open(run) => Some(self.confinement_in(run)),
            Phase::Idle | Phase::Closed => None,
        }
    }

    /// The rules every command starts with, the temporary directory of the open `run`
    /// writable under a sandbox that confines writes.
    fn confinement_in(&self, run: &Run) -> Confinement {
        let sandbox = &self.config.sandbox;
        let confined = matches!(sandbox.writes, Writes::Beneath(_));
        Confinement {
            sandbox: sandbox.also_writable(run.temp_dir()),
            temp_dir: confined.then(|| run.temp_dir()),
            withheld: self.config.withheld_env.clone(),
            guardian: self.config.zero_binary.clone(),
            exec_rules: self.config.exec_rules.clone(),
        }
    }

    /// Opens the run on first use (directories, lease, run directory) and returns it.
    async fn open<'s>(&self, state: &'s mut State) -> Result<&'s Run, RuntimeError> {
        if let Phase::Idle = state.phase {
            let layout = self.layout()?.clone();
            let run_id = self.config.run_id.clone();
            state.phase = Phase::Open(blocking(move || Run::open(&layout, &run_id)).await??);
        }
        match &state.phase {
            Phase::Open(run) => Ok(run),
            Phase::Idle | Phase::Closed => Err(RuntimeError::Closed),
        }
    }

    async fn start(self: Arc<Self>, spec: TaskSpec) -> Result<TaskRecord, RuntimeError> {
        // Held throughout, so close cannot slip between the checks and the registration.
        let mut state = self.state.lock().await;
        let run = self.open(&mut state).await?;
        let (boot_id, index) = (run.boot_id.clone(), run.index_path().to_path_buf());
        let confinement = self.confinement_in(run);
        let running = state.tasks.values().filter(|t| !t.is_finished()).count();
        if running >= self.config.max_running {
            return Err(RuntimeError::TooManyTasks {
                limit: self.config.max_running,
            });
        }
        let layout = self.layout()?;
        let id = spec.id.unwrap_or_else(TaskId::generate);
        let output_path = layout.output(&id, &spec.kind);
        // No file of this id may exist: creating the output file exclusively claims the id
        // before anything (a record) is written under it.
        let claimed = output_path.clone();
        let indexed = id.clone();
        // Indexed before the process exists, so if this run dies, reconciliation finds the
        // task through the run's index (see `reconcile`).
        let output = blocking(move || {
            tasks::run::append_to_index(&index, &indexed)?;
            create_output(&claimed)
        })
        .await??;
        let launch = spec.launch;
        let grace = self.config.kill_grace;
        let started = blocking(move || {
            guardian::spawn::spawn_background(&launch, &confinement, &output, grace)
        })
        .await?;

        let command = started.as_ref().ok().map(|(guarded, _)| guarded.command);
        // What the record says is read back by `zero tasks` and the model: a key the model
        // typed into a command stays out of it.
        let record = TaskRecord::running(
            id.clone(),
            spec.kind.redacted(&self.config.secrets),
            spec.description
                .map(|description| self.config.secrets.apply(&description)),
            self.config.run_id.clone(),
            command,
            boot_id,
            output_path,
        );
        let process = started.as_ref().ok().map(|(guarded, _)| *guarded);
        let task = Arc::new(Task::new(layout.record(&id), record.clone(), process));
        state.tasks.insert(id.clone(), Arc::clone(&task));
        let (guarded, report) = match started {
            Ok(started) => started,
            Err(source) => {
                // Recorded as failed through the same transition as any other failure, still
                // under the state lock so a concurrent close cannot call it killed first. It is
                // finished at once, so it holds no slot. The reason may quote the command line
                // (a guardian that could not be spawned), which may hold a key.
                let reason = self
                    .config
                    .secrets
                    .apply(&format!("could not start: {source}"));
                task.apply(Change::Failed(reason)).await;
                task.finish_unstarted();
                return Err(RuntimeError::StartFailed { id, source });
            }
        };
        drop(state);
        let recorded = task.persist().await;
        (self.events)(TaskEvent::Started(record.clone()));
        let follower = Arc::clone(&task);
        let events = Arc::clone(&self.events);
        tokio::spawn(async move { follower.follow(report, &events).await });
        match recorded {
            Ok(()) => Ok(record),
            Err(error) => {
                // A process the disk does not know about must not keep running.
                task.apply(Change::Failed(format!("could not be recorded: {error}")))
                    .await;
                let _ = guarded
                    .command
                    .signal_group(nix::sys::signal::Signal::SIGKILL);
                let _ = guarded
                    .guardian
                    .signal_group(nix::sys::signal::Signal::SIGTERM);
                Err(error)
            }
        }
    }

    /// Finds a task of this run by the id a caller gave.
    async fn lookup(&self, id: &str) -> Result<Arc<Task>, RuntimeError> {
        let id = TaskId::parse(id)?;
        if let Some(task) = self.state.lock().await.tasks.get(&id) {
            return Ok(Arc::clone(task));
        }
        // Not ours: say whose it is when its record says (reading only, creating nothing).
        let Some(layout) = &self.layout else {
            return Err(RuntimeError::UnknownTask(id));
        };
        let path = layout.record(&id);
        let owner = blocking(move || {
            #[derive(Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Owner {
                run_id: RunId,
            }
            let bytes = std::fs::read(path).ok()?;
            serde_json::from_slice::<Owner>(&bytes).ok()
        })
        .await?;
        match owner {
            Some(owner) if owner.run_id != self.config.run_id => Err(RuntimeError::OtherRun {
                id,
                run_id: owner.run_id,
            }),
            _ => Err(RuntimeError::UnknownTask(id)),
        }
    }

    async fn close(self: Arc<Self>) -> CloseReport {
        let mut report = Arc::clone(&self).stop_everything().await;
        report.git = blocking(move || self.restore_git())
            .await
            .unwrap_or_default();
        report
    }

    /// The work of [`Shared::close`] before the git metadata is put back.
    async fn stop_everything(self: Arc<Self>) -> CloseReport {
        let (tasks, phase) = {
            let mut state = self.state.lock().await;
            let phase = std::mem::replace(&mut state.phase, Phase::Closed);
            (state.tasks.values().cloned().collect::<Vec<_>>(), phase)
        };
        self.foreground.close();
        self.foreground.dismiss_warm().await;
        let Phase::Open(run) = phase else {
            // No task ever started (or an earlier close did the rest): only foreground
            // commands can be left, and they leave no record.
            self.foreground.settled().await;
            return CloseReport::default();
        };
        let grace = self.config.kill_grace;
        let (stops, ()) = tokio::join!(
            futures_util::future::join_all(
                tasks
                    .iter()
                    .map(|task| task.stop(StopCause::Closing, grace)),
            ),
            self.foreground.settled(),
        );
        let mut report = CloseReport::default();
        let mut unrecorded = Vec::new();
        for stop in stops {
            match stop {
                Ok(stopped) => {
                    unrecorded.extend(stopped.unrecorded);
                    if stopped.stopped_here {
                        report.stopped.push(stopped.record);
                    }
                }
                Err(error) => report.errors.push(error),
            }
        }
        report.errors.extend(unrecorded);
        match blocking(move || run.close()).await {
            Ok(errors) => report.errors.extend(errors),
            Err(error) => report.errors.push(error),
        }
        report
    }
}

/// Creates a task's output file: exclusively (the id is fresh), private, append-only.
fn create_output(path: &Path) -> Result<File, RuntimeError> {
    OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(RuntimeError::io("create", path))
}

/// Runs `work` on a blocking thread (file system work, `waitpid`): never on an async worker.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, RuntimeError> {
    joined(tokio::task::spawn_blocking(work).await)
}

/// Runs `future` as its own tokio task, so it completes even if the caller stops waiting.
async fn detached<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
) -> Result<T, RuntimeError> {
    joined(tokio::spawn(future).await)
}

/// A panic in spawned work is re-raised in the caller; the only other way spawned work fails
/// is the async runtime shutting down, which ends the operation like a closed runtime.
fn joined<T>(result: Result<T, tokio::task::JoinError>) -> Result<T, RuntimeError> {
    result.map_err(|error| match error.try_into_panic() {
        Ok(panic) => std::panic::resume_unwind(panic),
        Err(_) => RuntimeError::Closed,
    })
}
