//! The data directory as any process sees it — not just the run that owns a task. This is what
//! `zero tasks` and reconciliation read and change.
//!
//! A record's `running` is a claim; the run's lease is the evidence (a transient status is
//! never trusted across processes). Every reader here derives the truth from the lease, and
//! every change to another run's record is a compare-and-set under the record's cross-process
//! lock ([`RecordLock`]), so the owning run, a stopper and a reconciler can never write over
//! each other's terminal state.
//!
//! A record this zero cannot use (damaged, or written by another version) is reported once per
//! process through [`Store::take_warnings`] and skipped: never rewritten, never deleted. So is
//! every entry whose name zero would not give it, or that is not what zero makes under that
//! name (a symbolic link, say): names read from disk are parsed, not trusted, before they
//! become paths.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use super::record::{self, RecordLock};
use super::run::{self, EntryKind, Layout, Lease, RunFile};
use super::task::Stopped;
use crate::runtime::config::Environment;
use crate::runtime::identity::{self, ProcessIdentity};
use crate::runtime::timing::{OWNER_POLL, OWNER_RECORDS_END};
use crate::runtime::{RunId, RuntimeError, TaskId, TaskRecord, TaskStatus};

/// The reason recorded on a task stopped by `zero tasks stop`.
const STOPPED_ELSEWHERE: &str = "stopped by `zero tasks stop`";

/// The data directory, for processes other than a task's owner. Blocking throughout.
pub(crate) struct Store {
    pub(in crate::runtime) layout: Layout,
    root: PathBuf,
    pub(in crate::runtime) kill_grace: Duration,
    pub(in crate::runtime) boot_id: Option<String>,
    warnings: Mutex<Warnings>,
}

#[derive(Default)]
struct Warnings {
    /// Warnings already given: each is given once per process, however often a scan finds
    /// the same problem.
    seen: HashSet<String>,
    /// Warnings not yet taken by the caller.
    pending: Vec<String>,
}

/// What [`Store::gc`] deleted (or, on a dry run, would delete).
#[derive(Debug, Default)]
pub(crate) struct GcReport {
    /// The finished tasks whose record and output went.
    pub(crate) tasks: Vec<TaskRecord>,
    /// Leftovers of closed or reconciled runs (run directories, task indexes, half-created
    /// leases).
    pub(crate) leftovers: Vec<PathBuf>,
    /// The bytes freed.
    pub(crate) bytes: u64,
}

impl Store {
    /// The data directory at `root`; tasks stopped from here get `kill_grace` between SIGTERM
    /// and SIGKILL.
    pub(crate) fn new(root: impl Into<PathBuf>, kill_grace: Duration) -> Self {
        let root = root.into();
        Store {
            layout: Layout::new(root.clone()),
            root,
            kill_grace,
            boot_id: identity::boot_id(),
            warnings: Mutex::new(Warnings::default()),
        }
    }

    /// The data directory the environment names (see [`crate::runtime::RuntimeConfig::from_vars`]), or
    /// `None` when it names none. Creates nothing.
    pub(crate) fn from_env() -> Result<Option<Self>, RuntimeError> {
        let environment = Environment::from_env()?;
        Ok(environment
            .data_dir
            .map(|root| Store::new(root, environment.kill_grace)))
    }

    /// The data directory of a run configured with `config`, or `None` when it has none.
    pub(crate) fn of_run(config: &crate::runtime::RuntimeConfig) -> Option<Self> {
        let root = config.data_dir.clone()?;
        Some(Store::new(root, config.kill_grace))
    }

    /// The data directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the data directory exists (if not, there is nothing to read or reconcile).
    pub(crate) fn exists(&self) -> bool {
        self.root.is_dir()
    }

    /// The warnings gathered since the last call, each given once per process.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.lock_warnings().pending)
    }

    /// Notes a problem for [`Store::take_warnings`], unless it was noted before.
    pub(in crate::runtime) fn warn(&self, message: String) {
        let mut warnings = self.lock_warnings();
        if warnings.seen.insert(message.clone()) {
            warnings.pending.push(message);
        }
    }

    fn lock_warnings(&self) -> std::sync::MutexGuard<'_, Warnings> {
        crate::sync::lock(&self.warnings)
    }

    /// The task's record, its status as the evidence says (see `Store::view`).
    pub(crate) fn task(&self, id: &TaskId) -> Result<TaskRecord, RuntimeError> {
        let record = self.read(id)?;
        Ok(self.view(record, &mut HashMap::new()))
    }

    /// Opens the task's output for reading, and says where it is. The path is derived from the
    /// task's id and kind, never taken from the record, so a hand-edited record cannot point a
    /// reader at another file; and it is not opened through a symbolic link.
    pub(crate) fn open_output(&self, record: &TaskRecord) -> Result<(PathBuf, File), RuntimeError> {
        let path = self.layout.output(&record.id, &record.kind);
        let file = run::open_own(&path).map_err(RuntimeError::io("open", path.as_path()))?;
        Ok((path, file))
    }

    /// Every readable task record, newest first, each status as the evidence says. Records
    /// that cannot be used are warned about and left out.
    pub(crate) fn tasks(&self) -> Result<Vec<TaskRecord>, RuntimeError> {
        let mut alive = HashMap::new();
        let mut records: Vec<TaskRecord> = self
            .scan()?
            .into_iter()
            .map(|(_, record)| self.view(record, &mut alive))
            .collect();
        records.sort_by(|a, b| (b.started_at.as_str(), &b.id).cmp(&(a.started_at.as_str(), &a.id)));
        Ok(records)
    }

    /// Stops a running task of a live run from outside that run: records `killed` (a
    /// compare-and-set from `running` under the record lock) before the first signal, then
    /// SIGTERM, the grace period and SIGKILL to its process group — only while pid, start time
    /// and boot id all still match. The owning run, which observes its child's end, keeps
    /// `killed` and fills in how the process ended; this waits briefly for that.
    ///
    /// A task that is already over is not an error: its record comes back unchanged. A task
    /// whose run has died is reconciled (`interrupted`) rather than stopped.
    pub(crate) fn stop(&self, id: &TaskId) -> Result<Stopped, RuntimeError> {
        let record = self.read(id)?;
        let over = |record| Stopped {
            record,
            stopped_here: false,
            unrecorded: None,
        };
        if record.status.is_terminal() {
            return Ok(over(record));
        }
        let lease = self.layout.lease(&record.run_id);
        match Lease::try_take(&lease).map_err(RuntimeError::io("lock", lease.as_path()))? {
            Lease::Held => {}
            Lease::Taken(lock) => {
                drop(lock);
                self.reconcile();
                return Ok(over(self.view(self.read(id)?, &mut HashMap::new())));
            }
            Lease::Absent => return Ok(over(self.view(self.read(id)?, &mut HashMap::new()))),
        }
        // Checked before anything is written: `killed` on disk must mean this stop will signal
        // the process, and a process that already ended is its owner's to record.
        let Some(process) = ProcessIdentity::recorded(&record, self.boot_id.as_deref()) else {
            return Err(RuntimeError::Unverifiable { id: id.clone() });
        };
        let killed = if process.is_running() {
            let output = self.layout.output(id, &record.kind);
            let _lock =
                RecordLock::acquire(&output).map_err(RuntimeError::io("lock", output.as_path()))?;
            let mut current = self.read(id)?;
            if current.status.is_terminal() {
                return Ok(over(current));
            }
            current.status = TaskStatus::Killed;
            current.reason = Some(STOPPED_ELSEWHERE.to_string());
            let path = self.layout.record(id);
            record::write(&path, &current).map_err(RuntimeError::io("write", path))?;
            Some(current)
        } else {
            None
        };
        if killed.is_some()
            && !identity::stop_foreign_groups(&[process], self.kill_grace).is_empty()
        {
            return Err(RuntimeError::Unkillable {
                id: id.clone(),
                pid: process.pid,
            });
        }
        // The owner observes its child's end and records it (keeping `killed`); wait briefly
        // for that so the report is complete.
        let deadline = Instant::now() + OWNER_RECORDS_END;
        let mut latest = killed.clone().unwrap_or(record);
        while latest.ended_at.is_none() && Instant::now() < deadline {
            std::thread::sleep(OWNER_POLL);
            if let Ok(record) = record::read(&self.layout.record(id)) {
                latest = record;
            }
        }
        Ok(Stopped {
            record: latest,
            stopped_here: killed.is_some(),
            unrecorded: None,
        })
    }

    /// Deletes the records and outputs of tasks that are over and ended more than
    /// `older_than` ago, and the leftovers of runs that are gone (by modification time). Never
    /// touches a task recorded `running` or any task of a run that is still alive, and never a
    /// record it cannot read. With `dry_run`, deletes nothing and reports what it would delete.
    pub(crate) fn gc(&self, older_than: Duration, dry_run: bool) -> Result<GcReport, RuntimeError> {
        let cutoff = SystemTime::now()
            .checked_sub(older_than)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut report = GcReport::default();
        let mut alive = HashMap::new();
        for (path, record) in self.scan()? {
            let ended = record.ended_at.as_deref().unwrap_or(&record.started_at);
            let old_enough = chrono::DateTime::parse_from_rfc3339(ended)
                .is_ok_and(|ended| SystemTime::from(ended) < cutoff);
            if !record.status.is_terminal()
                || !old_enough
                || self.run_alive(&record.run_id, &mut alive)
            {
                continue;
            }
            let output = self.layout.output(&record.id, &record.kind);
            // Something else in the output's place is not zero's: the task stays as it is.
            if let Err(error) = EntryKind::File.present(&output) {
                self.warn(error.to_string());
                continue;
            }
            // The output goes first: a record without output still explains what happened.
            for file in [&output, &path] {
                report.bytes += fs::symlink_metadata(file).map_or(0, |meta| meta.len());
                if !dry_run {
                    run::remove_own(file, EntryKind::File)?;
                }
            }
            report.tasks.push(record);
        }
        for (leftover, kind) in self.run_leftovers(cutoff)? {
            if !dry_run {
                run::remove_own(&leftover, kind)?;
            }
            report.leftovers.push(leftover);
        }
        Ok(report)
    }

    /// Entries in `runs/` that belong to no lease (their run closed or was reconciled without
    /// removing them, or died while creating its lease), last modified before `cutoff`.
    fn run_leftovers(&self, cutoff: SystemTime) -> Result<Vec<(PathBuf, EntryKind)>, RuntimeError> {
        let mut leftovers = Vec::new();
        for (run_id, file, entry) in self.run_entries()? {
            let orphan = file != RunFile::Lease && !self.layout.lease(&run_id).exists();
            let old = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .is_ok_and(|modified| modified < cutoff);
            if orphan && old {
                leftovers.push((entry.path(), file.kind()));
            }
        }
        Ok(leftovers)
    }

    /// The entries of `runs/` that are a run's files, each with its run and what it is. Every
    /// other entry — a name zero never gives, or a symbolic link (or anything else) where zero
    /// keeps a file or a directory — is warned about and left out, so nothing acts on it.
    pub(in crate::runtime) fn run_entries(
        &self,
    ) -> Result<Vec<(RunId, RunFile, fs::DirEntry)>, RuntimeError> {
        let mut runs = Vec::new();
        for entry in read_dir(&self.layout.runs_dir())? {
            let Some((run_id, file)) = entry.file_name().to_str().and_then(RunFile::parse) else {
                self.warn_stranger(&entry.path());
                continue;
            };
            if self.is_own(&entry, file.kind()) {
                runs.push((run_id, file, entry));
            }
        }
        Ok(runs)
    }

    /// Reads the record of `id`; a missing one is an unknown task.
    pub(in crate::runtime) fn read(&self, id: &TaskId) -> Result<TaskRecord, RuntimeError> {
        record::read(&self.layout.record(id)).map_err(|error| {
            if error.is_missing() {
                RuntimeError::UnknownTask(id.clone())
            } else {
                RuntimeError::Record(error)
            }
        })
    }

    /// Every usable record in `tasks/`, with its path; warns about the others, and about
    /// record files that are not named or made as zero makes them.
    fn scan(&self) -> Result<Vec<(PathBuf, TaskRecord)>, RuntimeError> {
        let mut records = Vec::new();
        for entry in read_dir(&self.layout.tasks_dir())? {
            let path = entry.path();
            // Output files and temporary files are not records; nothing here acts on them.
            let Some(named) = entry.file_name().to_str().and_then(Layout::record_id) else {
                continue;
            };
            let Ok(id) = named else {
                self.warn_stranger(&path);
                continue;
            };
            if !self.is_own(&entry, EntryKind::File) {
                continue;
            }
            match record::read(&path) {
                Ok(record) if record.id == id => records.push((path, record)),
                // Its output file and its lock are found by id: acting on it would touch
                // another task's files.
                Ok(record) => self.warn(format!(
                    "{} holds a record of task {}, not of {id}; skipping it",
                    path.display(),
                    record.id
                )),
                // Deleted since the directory was listed (gc, or a record never written).
                Err(error) if error.is_missing() => {}
                Err(error) => self.warn(error.to_string()),
            }
        }
        Ok(records)
    }

    /// The record with its status as the evidence says: `running` whose run's lease nobody
    /// holds is `interrupted` (the record itself is left for reconciliation to change).
    fn view(&self, mut record: TaskRecord, alive: &mut HashMap<RunId, bool>) -> TaskRecord {
        if record.status == TaskStatus::Running && !self.run_alive(&record.run_id, alive) {
            record.status = TaskStatus::Interrupted;
            record.reason = Some(format!("its run {} is no longer alive", record.run_id));
        }
        record
    }

    /// Whether the run's lease is held, asking the lock once per run per call.
    fn run_alive(&self, run_id: &RunId, alive: &mut HashMap<RunId, bool>) -> bool {
        *alive
            .entry(run_id.clone())
            .or_insert_with(|| Lease::is_held(&self.layout.lease(run_id)))
    }

    /// Whether `entry` is what zero keeps under its name; warns about it when it is not.
    fn is_own(&self, entry: &fs::DirEntry, kind: EntryKind) -> bool {
        let path = entry.path();
        // The entry's own type: a symbolic link is not followed.
        let checked = entry
            .file_type()
            .map_err(RuntimeError::io("read", path.as_path()))
            .and_then(|found| kind.check(&path, found));
        match checked {
            Ok(()) => true,
            Err(error) => {
                self.warn(error.to_string());
                false
            }
        }
    }

    /// Warns about an entry whose name zero never gives: it is left alone.
    fn warn_stranger(&self, path: &Path) {
        self.warn(format!(
            "left {} alone: zero never names anything there like that",
            path.display()
        ));
    }
}

/// The entries of `dir`; a directory that does not exist has none.
fn read_dir(dir: &Path) -> Result<Vec<fs::DirEntry>, RuntimeError> {
    match fs::read_dir(dir) {
        Ok(entries) => Ok(entries.flatten().collect()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(error) => Err(RuntimeError::io("read", dir)(error)),
    }
}
