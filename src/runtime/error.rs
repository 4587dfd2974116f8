//! Why a runtime operation failed. Callers decide by the variant; the messages are for people.

use std::io;
use std::path::PathBuf;

use nix::errno::Errno;

use super::{RunId, TaskId};

/// A failed runtime operation.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The text is not shaped like a task id.
    #[error(
        "`{0}` is not a task id: a task id is `task_` and 12 lowercase hex digits, like task_0123456789ab"
    )]
    MalformedId(String),
    /// The text is not shaped like a run id.
    #[error(
        "`{0}` is not a run id: a run id is `run_`, the run's start time (UTC, yyyymmddHHMMSS), `_` and 6 lowercase hex digits, like run_20260102030405_0a1b2c"
    )]
    MalformedRunId(String),
    /// The text cannot be a worktree name.
    #[error(
        "`{0}` is not a usable worktree name: use 1 to {max} letters, digits, `-`, `_` or `.`, starting with a letter or digit, without `..` or a `.lock` ending",
        max = super::tasks::ids::MAX_WORKTREE_NAME_LEN
    )]
    MalformedWorktreeName(String),
    /// No task with this id exists in this run or on disk.
    #[error("there is no task {0}")]
    UnknownTask(TaskId),
    /// The task exists, but another run owns it; a run only reads and stops its own tasks.
    #[error("task {id} belongs to another run ({run_id})")]
    OtherRun {
        /// The task.
        id: TaskId,
        /// The run that owns it.
        run_id: RunId,
    },
    /// Starting another task would exceed the run's limit on concurrently running tasks.
    #[error("{limit} background tasks are already running, the most one run may have at once")]
    TooManyTasks {
        /// The limit.
        limit: usize,
    },
    /// The runtime was closed (the run is ending); nothing new may start.
    #[error("the run is ending, so no new task can start")]
    Closed,
    /// No data directory could be determined from the environment.
    #[error("cannot find a data directory for tasks: set ZERO_HOME (or XDG_DATA_HOME or HOME)")]
    NoDataDir,
    /// An environment setting has a value the runtime cannot use.
    #[error("{name} must be {expected}, not `{value}`")]
    InvalidSetting {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// The task's process could not be started; the task is recorded as `failed`.
    #[error("task {id} could not start: {source}")]
    StartFailed {
        /// The task.
        id: TaskId,
        /// Why.
        source: super::StartError,
    },
    /// Signalling the task's process group failed for a reason other than it being gone.
    #[error("cannot signal task {id}: {source}")]
    SignalFailed {
        /// The task.
        id: TaskId,
        /// The error `killpg` returned.
        source: Errno,
    },
    /// The task's process was still alive after SIGKILL and a further wait.
    #[error("task {id} (pid {pid}) did not exit after SIGKILL")]
    Unkillable {
        /// The task.
        id: TaskId,
        /// Its process.
        pid: u32,
    },
    /// A task record exists but cannot be used (unreadable, corrupt, or another zero
    /// version's).
    #[error(transparent)]
    Record(#[from] super::RecordError),
    /// Another run's task cannot be stopped from here: its record does not identify its
    /// process by pid, start time and boot id (this boot's), so signalling its pid could hit an
    /// unrelated process.
    #[error(
        "task {id} cannot be stopped from another process: its record does not identify its process on this boot"
    )]
    Unverifiable {
        /// The task.
        id: TaskId,
    },
    /// An entry of the data directory has a name zero gives but is not what zero makes there
    /// (a symbolic link where zero keeps a file or a directory, say). It is left alone: never
    /// followed, changed or removed.
    #[error("left {} alone: zero keeps {expected} there, but this is {found}", path.display())]
    Foreign {
        /// The entry.
        path: PathBuf,
        /// What zero would have made there.
        expected: &'static str,
        /// What is there.
        found: &'static str,
    },
    /// Reading or writing the data directory failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`create`, `write`, `read`, `remove`, `lock`).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl RuntimeError {
    /// Wraps an I/O error with what was being done to which path.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| RuntimeError::Io {
            action,
            path,
            source,
        }
    }
}
