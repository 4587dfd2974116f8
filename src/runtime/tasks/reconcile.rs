//! Reconciliation: cleaning up after runs that died without closing (SIGKILL, a crash, a power
//! cut). Every zero process does this when it starts, before it writes to the data directory.
//!
//! Evidence, never guesses: a run is dead exactly when nobody holds its lease
//! (`runs/<run_id>.lock`), and a task's process is signalled only while its pid, start time and
//! boot id all still match its record. For each dead run:
//!
//! 1. its lease is taken (non-blocking) and held throughout, so of two reconcilers racing over
//!    the same run exactly one does the work — the other sees it held and moves on;
//! 2. every task its index (`runs/<run_id>.tasks`) names that is still `running` on disk
//!    becomes `interrupted`, persisted under the record lock *before* any signal;
//! 3. those whose process is still running get their process groups stopped together
//!    (SIGTERM, grace, SIGKILL);
//! 4. the run directory, the index and — last — the lease file are removed, which marks the
//!    run reconciled.
//!
//! Worktree records whose run died are reconciled first (`WorktreeRecords::reconcile`: a
//! `preparing` one undone and `failed`, an `active` one kept and `interrupted`).
//!
//! The cost is one directory listing of `runs/` (which holds only live and unreconciled runs)
//! plus work proportional to the dead runs' tasks; it never reads all of `tasks/`. When no run
//! is dead it only reads. Runs whose lease is held are never touched, and neither is anything
//! in `runs/` that zero would not have made: a name that is not a run's file, or a symbolic
//! link where a run keeps a file or its directory, is warned about and left alone.

use std::io::{self, Read};
use std::path::Path;

use super::record::{self, RecordLock, now};
use super::run::{self, EntryKind, Lease, RunFile};
use super::store::Store;
use crate::runtime::identity::{self, ProcessIdentity};
use crate::runtime::{
    RunId, RuntimeConfig, RuntimeError, TaskId, TaskRecord, TaskStatus, WorktreeRecords,
};

/// Reconciles the dead runs of the data directory a run configured with `config` uses, before
/// that run touches it, and returns what could not be cleaned up, for the caller to print
/// (`exec` does, as warnings). Reads only, unless a run is dead; does nothing when there is no
/// data directory yet. Blocking: it may wait out a grace period on a dead run's leftovers.
pub fn reconcile_at_start(config: &RuntimeConfig) -> Vec<String> {
    Store::of_run(config).map_or_else(Vec::new, |store| store.reconciled())
}

/// What one reconciliation pass did.
#[derive(Debug, Default)]
pub(crate) struct Reconciliation {
    /// The dead runs it cleaned up.
    pub(crate) runs: Vec<RunId>,
    /// The tasks it marked `interrupted`, as recorded.
    pub(crate) interrupted: Vec<TaskRecord>,
}

impl Store {
    /// Reconciles every dead run when the data directory exists, and returns the warnings
    /// gathered (see [`Store::reconcile`]).
    pub(crate) fn reconciled(&self) -> Vec<String> {
        if !self.exists() {
            return Vec::new();
        }
        self.reconcile();
        self.take_warnings()
    }

    /// Reconciles every dead run (see the module documentation). Problems — a record it cannot
    /// use, a file it cannot remove, a process that would not die — are reported through
    /// [`Store::take_warnings`]; none stops the pass. Blocking.
    pub(crate) fn reconcile(&self) -> Reconciliation {
        let mut done = Reconciliation::default();
        for warning in WorktreeRecords::new(self.root()).reconcile() {
            self.warn(warning);
        }
        let entries = match self.run_entries() {
            Ok(entries) => entries,
            Err(error) => {
                self.warn(error.to_string());
                return done;
            }
        };
        for (run_id, file, entry) in entries {
            if file != RunFile::Lease {
                continue;
            }
            match Lease::try_take(&entry.path()) {
                Ok(Lease::Taken(lease)) => {
                    self.reconcile_run(&run_id, &mut done);
                    // Released only after its file is gone (the run is then reconciled).
                    drop(lease);
                }
                Ok(Lease::Held | Lease::Absent) => {}
                Err(error) => {
                    let path = entry.path();
                    self.warn(format!("cannot lock {}: {error}", path.display()));
                }
            }
        }
        done
    }

    /// Cleans up one dead run whose lease the caller holds.
    fn reconcile_run(&self, run_id: &RunId, done: &mut Reconciliation) {
        let index = self.layout.task_index(run_id);
        let ids = match read_index(&index) {
            Ok(ids) => ids,
            Err(error) => {
                // Left in place (lease included) so a later pass can try again.
                self.warn(error.to_string());
                return;
            }
        };
        let mut running = Vec::new();
        for line in ids.lines().filter(|line| !line.is_empty()) {
            let Ok(id) = TaskId::parse(line) else {
                self.warn(format!(
                    "{} names `{line}`, which is not a task id",
                    index.display()
                ));
                continue;
            };
            match self.interrupt(&id, run_id) {
                Ok(Some((record, process))) => {
                    running.extend(process);
                    done.interrupted.push(record);
                }
                Ok(None) => {}
                Err(error) => self.warn(error.to_string()),
            }
        }
        for process in identity::stop_foreign_groups(&running, self.kill_grace) {
            let pid = process.pid;
            self.warn(format!(
                "a task process (pid {pid}) of dead run {run_id} did not exit after SIGKILL"
            ));
        }
        for error in run::remove_footprint(
            &self.layout.run_dir(run_id),
            &index,
            &self.layout.lease(run_id),
        ) {
            self.warn(error.to_string());
        }
        done.runs.push(run_id.clone());
    }

    /// Marks the task `interrupted` if its record still says `running` (a compare-and-set under
    /// the record lock) and returns the new record with its process, when that is still
    /// running with a matching identity.
    fn interrupt(
        &self,
        id: &TaskId,
        run_id: &RunId,
    ) -> Result<Option<(TaskRecord, Option<ProcessIdentity>)>, RuntimeError> {
        let path = self.layout.record(id);
        let record = match self.read(id) {
            Ok(record) => record,
            // Indexed, but the run died before writing the record.
            Err(RuntimeError::UnknownTask(_)) => return Ok(None),
            Err(error) => return Err(error),
        };
        // The index may only name this run's tasks; a record of another run is not ours to end.
        if record.status.is_terminal() || record.run_id != *run_id {
            return Ok(None);
        }
        let output = self.layout.output(id, &record.kind);
        let _lock =
            RecordLock::acquire(&output).map_err(RuntimeError::io("lock", output.as_path()))?;
        let mut record = self.read(id)?;
        if record.status.is_terminal() {
            return Ok(None);
        }
        let process = ProcessIdentity::recorded(&record, self.boot_id.as_deref())
            .filter(ProcessIdentity::is_running);
        record.status = TaskStatus::Interrupted;
        record.ended_at = Some(now());
        record.reason = Some(match process {
            Some(_) => format!(
                "its run {run_id} ended without closing it; its process was still running and was stopped"
            ),
            None => format!("its run {run_id} ended without closing it"),
        });
        record::write(&path, &record).map_err(RuntimeError::io("write", path))?;
        Ok(Some((record, process)))
    }
}

/// A dead run's task index, empty when the run never started a task. Something other than a
/// file in its place (a symbolic link) is not read: it is not zero's.
fn read_index(index: &Path) -> Result<String, RuntimeError> {
    if !EntryKind::File.present(index)? {
        return Ok(String::new());
    }
    let mut ids = String::new();
    match run::open_own(index).and_then(|mut file| file.read_to_string(&mut ids)) {
        Ok(_) => Ok(ids),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(RuntimeError::io("read", index)(error)),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::runtime::tasks::record::running_for_test;
    use crate::runtime::tasks::run::{Layout, Run};

    /// Writes a `running` record of `run_id` (no process identity, so nothing is signalled),
    /// its output file, and the run's index entry.
    fn running_task(root: &Path, run_id: &RunId) -> TaskRecord {
        let layout = Layout::new(root.to_path_buf());
        fs::create_dir_all(layout.tasks_dir()).unwrap();
        fs::create_dir_all(layout.runs_dir()).unwrap();
        let mut record = running_for_test(run_id, PathBuf::new());
        record.output_path = layout.output(&record.id, &record.kind);
        fs::write(&record.output_path, "").unwrap();
        record::write(&layout.record(&record.id), &record).unwrap();
        run::append_to_index(&layout.task_index(run_id), &record.id).unwrap();
        record
    }

    fn store(root: &Path) -> Store {
        Store::new(root, Duration::from_millis(50))
    }

    /// The lease file of a run that died: nobody holds it.
    fn dead_lease(root: &Path, run_id: &RunId) {
        fs::write(Layout::new(root.to_path_buf()).lease(run_id), "").unwrap();
    }

    #[test]
    fn racing_reconcilers_do_a_dead_runs_work_once() {
        let root = tempfile::tempdir().unwrap();
        let dead = RunId::generate();
        running_task(root.path(), &dead);
        dead_lease(root.path(), &dead);
        let passes: Vec<Reconciliation> = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..6)
                .map(|_| scope.spawn(|| store(root.path()).reconcile()))
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let runs: usize = passes.iter().map(|pass| pass.runs.len()).sum();
        let interrupted: usize = passes.iter().map(|pass| pass.interrupted.len()).sum();
        assert_eq!((runs, interrupted), (1, 1));
        assert!(
            fs::read_dir(root.path().join("runs"))
                .unwrap()
                .next()
                .is_none()
        );
    }

    #[test]
    fn a_run_whose_lease_is_held_is_never_touched() {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path().to_path_buf());
        let run_id = RunId::generate();
        let live = Run::open(&layout, &run_id).unwrap();
        let record = running_task(root.path(), &run_id);
        let store = store(root.path());
        let pass = store.reconcile();
        assert!(pass.runs.is_empty() && pass.interrupted.is_empty());
        assert_eq!(store.task(&record.id).unwrap().status, TaskStatus::Running);
        assert!(store.take_warnings().is_empty());
        assert!(live.close().is_empty());
    }

    #[test]
    fn a_running_record_of_a_dead_run_reads_as_interrupted_before_reconciliation() {
        let root = tempfile::tempdir().unwrap();
        let record = running_task(root.path(), &RunId::generate());
        let store = store(root.path());
        // No lease at all: the run closed or died and was half cleaned up.
        let shown = store.task(&record.id).unwrap();
        assert_eq!(shown.status, TaskStatus::Interrupted);
        let on_disk = record::read(&Layout::new(root.path().into()).record(&record.id)).unwrap();
        assert_eq!(
            on_disk.status,
            TaskStatus::Running,
            "reading changes nothing"
        );
    }

    #[test]
    fn a_record_naming_another_run_is_left_alone() {
        let root = tempfile::tempdir().unwrap();
        let other = running_task(root.path(), &RunId::generate());
        let dead = RunId::generate();
        dead_lease(root.path(), &dead);
        let index = Layout::new(root.path().to_path_buf()).task_index(&dead);
        run::append_to_index(&index, &other.id).unwrap();
        let pass = store(root.path()).reconcile();
        assert_eq!(pass.runs, [dead]);
        assert!(pass.interrupted.is_empty());
    }
}
