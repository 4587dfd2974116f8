//! The durable task record (`<data>/tasks/<id>.json`) and the small types it is made of.
//!
//! The record is a claim written by the run that owns the task; another process must not trust
//! its `running` without checking the run's lease (see `docs/RUNTIME.md`). Readers ignore
//! fields they do not know, so later versions can add fields without breaking older readers.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use super::run::open_own;
use crate::runtime::identity::ProcessIdentity;
use crate::runtime::{RunId, TaskId};

/// The version of the record's shape; bumped on any incompatible change.
pub const RECORD_SCHEMA_VERSION: u32 = 1;

/// What a task is. On the wire this is the `kind` field plus `name` (specialist) or `command`
/// (shell), so records and events carry the same words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TaskKind {
    /// A specialist: a child `zero exec` writing stream-json to its output file.
    Specialist {
        /// The specialist's name.
        name: String,
    },
    /// A background shell command writing plain text to its output file.
    Shell {
        /// The command line.
        command: String,
    },
}

impl TaskKind {
    /// The `kind` word, for tables and text lines. Serde cannot give it alone: it writes the
    /// word as the tag beside `name` or `command`.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            TaskKind::Specialist { .. } => "specialist",
            TaskKind::Shell { .. } => "shell",
        }
    }

    /// The same kind with every secret in its words masked, as it is recorded.
    pub(crate) fn redacted(self, secrets: &crate::redact::Secrets) -> TaskKind {
        match self {
            TaskKind::Specialist { name } => TaskKind::Specialist {
                name: secrets.apply(&name),
            },
            TaskKind::Shell { command } => TaskKind::Shell {
                command: secrets.apply(&command),
            },
        }
    }

    /// The specialist's name or the command line: what a person recognizes the task by.
    pub(crate) fn label(&self) -> &str {
        match self {
            TaskKind::Specialist { name } => name,
            TaskKind::Shell { command } => command,
        }
    }

    /// The output file's extension, which says how to read it.
    pub(crate) fn output_extension(&self) -> &'static str {
        match self {
            TaskKind::Specialist { .. } => "ndjson",
            TaskKind::Shell { .. } => "log",
        }
    }
}

/// Where a task is in its life. `Running` is the only non-terminal state; every other state is
/// final (see `docs/RUNTIME.md` for the state machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// The process was started and has not been seen to end.
    Running,
    /// It exited with code 0.
    Completed,
    /// It exited non-zero, was ended by a signal nobody sent on purpose, or could not start.
    Failed,
    /// The runtime stopped it (TaskStop, or the run closing). Set before the first signal.
    Killed,
    /// Its owning run died before it ended (found by reconciliation).
    Interrupted,
}

impl TaskStatus {
    /// The status word, for tables and text lines (`zero tasks`, `TaskOutput`): a plain
    /// `&'static str` where serde would give a JSON value to take apart. Serde stays the only
    /// name on the wire, and a test keeps the two the same.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Killed => "killed",
            TaskStatus::Interrupted => "interrupted",
        }
    }

    /// Whether the state is final.
    pub fn is_terminal(self) -> bool {
        self != TaskStatus::Running
    }
}

/// One task's durable record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// Always [`RECORD_SCHEMA_VERSION`] when written by this build.
    pub(crate) schema_version: u32,
    /// The task's id.
    pub id: TaskId,
    /// What the task is (`kind` plus `name` or `command`).
    #[serde(flatten)]
    pub kind: TaskKind,
    /// A short description given when the task was started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    /// The run that started it.
    pub run_id: RunId,
    /// The process id (also its process group id); absent when it could not start.
    pub pid: Option<u32>,
    /// The process start time in clock ticks since boot (`/proc/<pid>/stat` field 22), which
    /// with `pid` and `bootId` identifies the process even after the pid is reused.
    pub start_time: Option<u64>,
    /// The kernel boot id the start time belongs to (Linux).
    pub boot_id: Option<String>,
    /// When the task was started (RFC 3339, UTC).
    pub(crate) started_at: String,
    /// When its process was seen to end (RFC 3339, UTC).
    pub ended_at: Option<String>,
    /// Where it is in its life.
    pub status: TaskStatus,
    /// The exit code, when the process exited.
    pub exit_code: Option<i32>,
    /// The signal that ended the process, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Why it was stopped or failed, when that is not told by the exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The file its output is appended to.
    pub output_path: PathBuf,
}

impl TaskRecord {
    /// The first record of a task: `running` since now. `process` is what was started (`None`
    /// when nothing could be), and `boot_id` the boot it runs in, recorded only with a
    /// process.
    pub(crate) fn running(
        id: TaskId,
        kind: TaskKind,
        description: Option<String>,
        run_id: RunId,
        process: Option<ProcessIdentity>,
        boot_id: Option<String>,
        output_path: PathBuf,
    ) -> TaskRecord {
        TaskRecord {
            schema_version: RECORD_SCHEMA_VERSION,
            id,
            kind,
            description,
            run_id,
            pid: process.map(|identity| identity.pid),
            start_time: process.and_then(|identity| identity.start_time),
            boot_id: process.and(boot_id),
            started_at: now(),
            ended_at: None,
            status: TaskStatus::Running,
            exit_code: None,
            signal: None,
            reason: None,
            output_path,
        }
    }
}

/// Why a record file could not be used. A record written by another zero version, or damaged,
/// is reported and skipped by every reader — never rewritten, never deleted.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read (including: it does not exist).
    #[error("cannot read task record {}: {source}", path.display())]
    Unreadable {
        /// The record file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The file is not JSON: truncated or corrupted.
    #[error("task record {} is corrupt or truncated ({source}); skipping it", path.display())]
    Corrupt {
        /// The record file.
        path: PathBuf,
        /// Where the JSON broke.
        source: serde_json::Error,
    },
    /// A newer zero wrote it in a shape this one does not know.
    #[error(
        "task record {} has schema version {found}, newer than this zero's {RECORD_SCHEMA_VERSION}; skipping it",
        path.display()
    )]
    Newer {
        /// The record file.
        path: PathBuf,
        /// Its `schemaVersion`.
        found: u64,
    },
    /// It is JSON but lacks fields (or has values) this zero needs: an older zero wrote it.
    #[error("task record {} is not in a shape this zero reads ({source}); skipping it", path.display())]
    Incompatible {
        /// The record file.
        path: PathBuf,
        /// What was missing or wrong.
        source: serde_json::Error,
    },
}

impl RecordError {
    /// Whether the record simply does not exist (which callers usually treat as "no task").
    pub(crate) fn is_missing(&self) -> bool {
        matches!(self, RecordError::Unreadable { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// Reads the record at `path`, telling apart the ways it can be unusable. Blocking.
pub(crate) fn read(path: &Path) -> Result<TaskRecord, RecordError> {
    // Not through a symbolic link: what a link points to is not zero's to read as a record
    // (and then write back).
    let mut bytes = Vec::new();
    open_own(path)
        .and_then(|mut file| file.read_to_end(&mut bytes))
        .map_err(|source| RecordError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|source| RecordError::Corrupt {
            path: path.to_path_buf(),
            source,
        })?;
    // Checked before the shape: a newer zero may have changed the meaning of fields this one
    // would otherwise read (and then rewrite) without complaint.
    if let Some(found) = value["schemaVersion"].as_u64()
        && found > u64::from(RECORD_SCHEMA_VERSION)
    {
        return Err(RecordError::Newer {
            path: path.to_path_buf(),
            found,
        });
    }
    serde_json::from_value(value).map_err(|source| RecordError::Incompatible {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `record` to `path` atomically (through the one atomic-write door). Blocking.
pub(crate) fn write(path: &Path, record: &TaskRecord) -> io::Result<()> {
    let mut json = serde_json::to_vec_pretty(record)?;
    json.push(b'\n');
    crate::fsutil::write_atomic(path, &json)
}

/// The cross-process lock every read-modify-write of a record is made under: an exclusive
/// `flock` on the task's output file. The record itself cannot carry the lock (each write
/// renames a new file over it); the output file is created once, never replaced, and lives
/// exactly as long as the record. `flock` is advisory, so the task's own appends to the file
/// are unaffected.
pub(crate) struct RecordLock {
    _lock: Option<Flock<File>>,
}

impl RecordLock {
    /// Waits for the lock of the task whose output file is `output`. A missing output file
    /// gives an empty lock: the task's owner appends to that file for the task's whole life,
    /// so without it there is no writer left to exclude. Blocking.
    pub(crate) fn acquire(output: &Path) -> io::Result<RecordLock> {
        let file = match open_own(output) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Ok(RecordLock { _lock: None });
            }
            Err(error) => return Err(error),
        };
        let lock = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| io::Error::from(errno))?;
        Ok(RecordLock { _lock: Some(lock) })
    }
}

/// A `running` shell task record of `run_id` with no process identity, for tests.
#[cfg(test)]
pub(crate) fn running_for_test(run_id: &RunId, output_path: PathBuf) -> TaskRecord {
    TaskRecord::running(
        TaskId::generate(),
        TaskKind::Shell {
            command: "true".into(),
        },
        None,
        run_id.clone(),
        Some(ProcessIdentity {
            pid: 1234,
            start_time: None,
        }),
        None,
        output_path,
    )
}

/// The current time as the records write it.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_words_for_text_are_the_words_on_the_wire() {
        let statuses = [
            TaskStatus::Running,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Killed,
            TaskStatus::Interrupted,
        ];
        for status in statuses {
            assert_eq!(json!(status), status.as_str());
        }
        let kinds = [
            TaskKind::Specialist { name: "a".into() },
            TaskKind::Shell {
                command: "b".into(),
            },
        ];
        for kind in kinds {
            assert_eq!(json!(kind)["kind"], kind.as_str());
        }
    }

    #[test]
    fn records_use_the_documented_field_names_and_ignore_unknown_ones() {
        let record = TaskRecord {
            schema_version: RECORD_SCHEMA_VERSION,
            id: TaskId::parse("task_0123456789ab").unwrap(),
            kind: TaskKind::Shell {
                command: "make test".into(),
            },
            description: None,
            run_id: RunId::parse("run_20260102030405_0a1b2c").unwrap(),
            pid: Some(42),
            start_time: Some(7),
            boot_id: Some("b".into()),
            started_at: "2026-01-01T00:00:00.000Z".into(),
            ended_at: None,
            status: TaskStatus::Running,
            exit_code: None,
            signal: None,
            reason: None,
            output_path: "/d/tasks/task_0123456789ab.log".into(),
        };
        let value = serde_json::to_value(&record).unwrap();
        assert_eq!(
            value,
            json!({
                "schemaVersion": 1, "id": "task_0123456789ab", "kind": "shell",
                "command": "make test", "runId": "run_20260102030405_0a1b2c", "pid": 42, "startTime": 7,
                "bootId": "b", "startedAt": "2026-01-01T00:00:00.000Z", "endedAt": null,
                "status": "running", "exitCode": null,
                "outputPath": "/d/tasks/task_0123456789ab.log"
            })
        );
        let mut newer = value;
        newer["addedLater"] = json!(true);
        let read: TaskRecord = serde_json::from_value(newer).unwrap();
        assert_eq!(read, record);
    }
}
