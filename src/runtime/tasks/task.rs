//! One task: its record, the one function that changes it, how it is stopped, and how its
//! process is followed to the end.
//!
//! Three things order a task's life:
//! - the **record lock**: every change to the record is a compare-and-set made under it and
//!   persisted before the lock is released, so the disk never goes backwards and nobody hears of
//!   a change before it is durable;
//! - the **ended** signal: the process has ended but is not reaped yet (a zombie), so its pid and
//!   group id are still ours and signalling the group is still safe;
//! - the **finished** signal: the task is over — terminal, reaped, recorded, announced. Every
//!   waiter (TaskOutput, TaskStop, close) awaits it; nobody polls.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::{Mutex, watch};

use super::record::{self, RecordLock, now};
use crate::runtime::guardian::report::ReportReader;
use crate::runtime::reap::{self, ProcessEnd};
use crate::runtime::stop::{self, Guarded, GuardianEnd, StopFailure, StopRequest};
use crate::runtime::{
    RuntimeError, TaskEvent, TaskEventSink, TaskId, TaskRecord, TaskStatus, blocking,
};

/// One task of the run.
pub(crate) struct Task {
    /// The task's id.
    pub(crate) id: TaskId,
    /// Where its record is persisted.
    record_path: PathBuf,
    /// The record, behind the one lock every change happens under.
    record: Mutex<TaskRecord>,
    /// Its processes, when it started.
    process: Option<Guarded>,
    /// True once the process has ended (it may not be reaped yet).
    ended: watch::Sender<bool>,
    /// True once the task is over: terminal, reaped, recorded and announced.
    finished: watch::Sender<bool>,
    /// Held by a stop while it signals the group. The reap waits for it, so the group id stays
    /// reserved by the unreaped leader until no stop will signal it any more.
    signalling: Mutex<()>,
}

/// A change to a task's record.
#[derive(Debug)]
pub(crate) enum Change {
    /// The process ended.
    Ended(ProcessEnd),
    /// The process could not start or be recorded, or its end could not be observed.
    Failed(String),
    /// The runtime is stopping it.
    Stopped(StopCause),
}

/// Why the runtime stops a task; recorded as its `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopCause {
    /// TaskStop asked for it.
    Requested,
    /// The run is ending.
    Closing,
}

impl StopCause {
    fn reason(self) -> &'static str {
        match self {
            StopCause::Requested => "stopped by TaskStop",
            StopCause::Closing => "stopped because the run ended",
        }
    }
}

/// The result of [`Task::apply`].
#[derive(Debug)]
pub(crate) struct Applied {
    /// Whether this change moved the task out of `running` (it won the compare-and-set).
    pub(crate) transitioned: bool,
    /// The record after the change.
    pub record: TaskRecord,
    /// Whether the change reached the disk.
    pub(crate) persisted: Result<(), RuntimeError>,
}

/// How a stop went.
#[derive(Debug)]
pub struct Stopped {
    /// The task's final record.
    pub record: TaskRecord,
    /// Whether this stop is what ended the task (false: it had already finished or was being
    /// stopped by someone else).
    pub stopped_here: bool,
    /// Set when the process was stopped but its new state could not be persisted.
    pub unrecorded: Option<RuntimeError>,
}

impl Task {
    /// A task whose record says `running`; `process` is `None` when it never started (the
    /// caller then fails it through [`Task::apply`]).
    pub(crate) fn new(record_path: PathBuf, record: TaskRecord, process: Option<Guarded>) -> Self {
        Task {
            id: record.id.clone(),
            record_path,
            record: Mutex::new(record),
            process,
            ended: watch::Sender::new(false),
            finished: watch::Sender::new(false),
            signalling: Mutex::new(()),
        }
    }

    /// Applies `change` under the record lock and persists the result before releasing it.
    /// This is the only code that changes a record after it was first written.
    ///
    /// Another process may have ended the task on disk (`zero tasks stop` writes `killed`
    /// before it signals). So the change is made against the disk: under the cross-process
    /// [`RecordLock`], a terminal record on disk replaces a `running` one in memory before the
    /// change is applied — terminal states are final across processes too, and the exit this
    /// process then observes only fills in how the process ended.
    pub(crate) async fn apply(&self, change: Change) -> Applied {
        let mut record = self.record.lock().await;
        let path = self.record_path.clone();
        let current = record.clone();
        match blocking(move || commit(&path, current, change)).await {
            Ok((next, transitioned, persisted)) => {
                *record = next;
                Applied {
                    transitioned,
                    record: record.clone(),
                    persisted,
                }
            }
            Err(error) => Applied {
                transitioned: false,
                record: record.clone(),
                persisted: Err(error),
            },
        }
    }

    /// Writes the record as it is (its first write, right after the process started).
    pub(crate) async fn persist(&self) -> Result<(), RuntimeError> {
        let record = self.record.lock().await;
        persist(self.record_path.clone(), record.clone()).await
    }

    /// The record as it is now.
    pub(crate) async fn snapshot(&self) -> TaskRecord {
        self.record.lock().await.clone()
    }

    /// Whether the task is over.
    pub(crate) fn is_finished(&self) -> bool {
        *self.finished.borrow()
    }

    /// Marks the task over. Only for a task whose process never started; a started task is
    /// finished by [`Task::follow`] alone.
    pub(crate) fn finish_unstarted(&self) {
        debug_assert!(self.process.is_none());
        self.finished.send_replace(true);
    }

    /// Waits until the task is over or `limit` has passed; says whether it is over.
    pub(crate) async fn wait_finished(&self, limit: Duration) -> bool {
        until(&self.finished, limit).await
    }

    /// Stops the task: marks it `killed` (persisted) before the first signal, asks its guardian
    /// to stop the command's subtree (TERM, `grace`, KILL), and waits for the task to be over.
    /// A task that already ended is left alone and its final record returned.
    ///
    /// Returns an error only when the process may still be running; a record that could not be
    /// written is reported in [`Stopped::unrecorded`] instead, after the process is gone.
    pub(crate) async fn stop(
        &self,
        cause: StopCause,
        grace: Duration,
    ) -> Result<Stopped, RuntimeError> {
        let signalling = self.signalling.lock().await;
        let applied = self.apply(Change::Stopped(cause)).await;
        // Also when an earlier stop marked it but could not make it end: try again.
        let must_signal = applied.record.status == TaskStatus::Killed && !*self.ended.borrow();
        if let (true, Some(process)) = (must_signal, self.process) {
            self.terminate(process, grace).await?;
        }
        drop(signalling);
        // The process has ended; the follower reaps it and finishes the task promptly.
        let mut finished = self.finished.subscribe();
        let _ = finished.wait_for(|done| *done).await;
        Ok(Stopped {
            record: self.snapshot().await,
            stopped_here: applied.transitioned,
            unrecorded: applied.persisted.err(),
        })
    }

    /// Stops the task's guardian and command with the runtime's one ladder
    /// (`stop::stop_guarded`): the stop request, the grace plus a margin, SIGKILL if the
    /// guardian overran, and [`crate::runtime::hurry`] skipping the grace. The end it waits for is the
    /// one the follower observes.
    async fn terminate(&self, process: Guarded, grace: Duration) -> Result<(), RuntimeError> {
        let mut end = Ended(&self.ended);
        stop::stop_guarded(process, grace, &StopRequest::default(), &mut end)
            .await
            .map_err(|failure| match failure {
                StopFailure::Signal(source) => RuntimeError::SignalFailed {
                    id: self.id.clone(),
                    source,
                },
                StopFailure::Unkillable => RuntimeError::Unkillable {
                    id: self.id.clone(),
                    pid: process.command.pid,
                },
            })
    }

    /// Follows the task's guardian to the end: observes its end (leaving it unreaped), reads
    /// how the command ended from its final report (falling back to the guardian's own status,
    /// which mirrors the command's), records that, makes sure nothing of the command's group
    /// is left (the guardian has swept it; this covers a guardian that was SIGKILLed), reaps
    /// the guardian, announces the final record, and only then marks the task finished — so
    /// whoever waits for the task hears of it after the announcement. The only code that reaps
    /// a task's process.
    pub(crate) async fn follow(&self, mut report: ReportReader, events: &TaskEventSink) {
        let Some(process) = self.process else {
            return;
        };
        let pid = process.guardian.pid;
        let guardian_end = blocking(move || reap::wait_for_end(pid)).await;
        let reported = blocking(move || report.ended()).await.ok().flatten();
        let refused = reported
            .as_ref()
            .map(|ending| ending.refused.clone())
            .unwrap_or_default();
        let change = match (reported, guardian_end) {
            (Some(ending), _) => Change::Ended(ending.end),
            (None, Ok(Ok(end))) => Change::Ended(end),
            (None, Ok(Err(errno))) => Change::Failed(format!("lost track of the process: {errno}")),
            (None, Err(error)) => Change::Failed(error.to_string()),
        };
        self.ended.send_replace(true);
        let applied = self.apply(change).await;
        {
            let _signalling = self.signalling.lock().await;
            // Best effort on both: the group is normally empty already, and a reap that fails
            // leaves nothing to act on (the child was not ours to wait for any more).
            let _ = process.command.signal_group(Signal::SIGKILL);
            let _ = blocking(move || reap::reap(pid)).await;
        }
        if !refused.is_empty() {
            events(TaskEvent::Refused(applied.record.clone(), refused));
        }
        events(TaskEvent::Finished(applied.record));
        if let Err(error) = applied.persisted {
            events(TaskEvent::Unrecorded(error));
        }
        self.finished.send_replace(true);
    }
}

/// The state machine. Moves a `running` record to its terminal state, or fills in how a killed
/// task's process ended; says whether the status changed. Terminal states are final: nothing
/// else changes a terminal record, so a late exit can never overwrite `killed`.
fn transition(record: &mut TaskRecord, change: Change) -> bool {
    match (record.status, change) {
        (TaskStatus::Running, Change::Ended(end)) => {
            record.status = match end {
                ProcessEnd::Exited(0) => TaskStatus::Completed,
                _ => TaskStatus::Failed,
            };
            record_end(record, end);
            true
        }
        (TaskStatus::Running, Change::Failed(reason)) => {
            record.status = TaskStatus::Failed;
            record.reason = Some(reason);
            record.ended_at = Some(now());
            true
        }
        (TaskStatus::Running, Change::Stopped(cause)) => {
            record.status = TaskStatus::Killed;
            record.reason = Some(cause.reason().to_string());
            true
        }
        (TaskStatus::Killed, Change::Ended(end)) if record.ended_at.is_none() => {
            record_end(record, end);
            false
        }
        _ => false,
    }
}

fn record_end(record: &mut TaskRecord, end: ProcessEnd) {
    record.ended_at = Some(now());
    match end {
        ProcessEnd::Exited(code) => record.exit_code = Some(code),
        ProcessEnd::Signalled(signal) => record.signal = Some(signal),
    }
}

/// A task's guardian's end, as its follower announces it (the `ended` signal).
struct Ended<'a>(&'a watch::Sender<bool>);

impl GuardianEnd for Ended<'_> {
    fn within(&mut self, limit: Duration) -> impl Future<Output = bool> + Send {
        until(self.0, limit)
    }
}

/// Waits until `flag` is true or `limit` has passed; says whether it is true.
async fn until(flag: &watch::Sender<bool>, limit: Duration) -> bool {
    let mut receiver = flag.subscribe();
    let result = tokio::time::timeout(limit, receiver.wait_for(|set| *set)).await;
    result.is_ok()
}

/// Writes `record` to `path` atomically, on a blocking thread.
async fn persist(path: PathBuf, record: TaskRecord) -> Result<(), RuntimeError> {
    blocking(move || record::write(&path, &record).map_err(RuntimeError::io("write", path))).await?
}

/// The read-modify-write behind [`Task::apply`], on a blocking thread: adopts a terminal record
/// another process wrote, applies `change`, and writes the result if it differs from what the
/// disk has. Returns the new record, whether the change won the compare-and-set, and whether
/// the write succeeded.
fn commit(
    path: &Path,
    mut record: TaskRecord,
    change: Change,
) -> (TaskRecord, bool, Result<(), RuntimeError>) {
    // A lock that cannot be taken does not stop the owner from recording: changes within this
    // process are serialized by the task's record mutex; only the exclusion of other processes
    // is lost, and that is the rarer risk than a record that falls behind.
    let _lock = RecordLock::acquire(&record.output_path).ok();
    if record.status == TaskStatus::Running {
        // Unreadable or foreign-looking disk state is ignored: this process owns the task and
        // its in-memory record is the best there is.
        if let Ok(on_disk) = record::read(path)
            && on_disk.id == record.id
            && on_disk.status.is_terminal()
        {
            record = on_disk;
        }
    }
    let before = record.clone();
    let transitioned = transition(&mut record, change);
    let persisted = if record == before {
        Ok(())
    } else {
        record::write(path, &record).map_err(RuntimeError::io("write", path))
    };
    (record, transitioned, persisted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running() -> TaskRecord {
        record::running_for_test(&crate::runtime::RunId::generate(), "/nowhere".into())
    }

    #[test]
    fn a_terminal_state_another_process_wrote_is_kept_and_the_end_filled_in() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("t.log");
        std::fs::write(&output, "").unwrap();
        let path = dir.path().join("t.json");
        let in_memory = record::running_for_test(&crate::runtime::RunId::generate(), output);
        let mut stopped_elsewhere = in_memory.clone();
        stopped_elsewhere.status = TaskStatus::Killed;
        stopped_elsewhere.reason = Some("stopped by `zero tasks stop`".into());
        record::write(&path, &stopped_elsewhere).unwrap();

        let (record, transitioned, persisted) =
            commit(&path, in_memory, Change::Ended(ProcessEnd::Signalled(15)));
        persisted.unwrap();
        assert!(!transitioned, "the exit must not win over killed");
        assert_eq!(record.status, TaskStatus::Killed);
        assert_eq!(record.reason, stopped_elsewhere.reason);
        assert_eq!(record.signal, Some(15));
        assert_eq!(record::read(&path).unwrap(), record);
    }

    #[test]
    fn exits_decide_completed_or_failed() {
        let mut record = running();
        assert!(transition(
            &mut record,
            Change::Ended(ProcessEnd::Exited(0))
        ));
        assert_eq!(
            (record.status, record.exit_code),
            (TaskStatus::Completed, Some(0))
        );
        let mut record = running();
        assert!(transition(
            &mut record,
            Change::Ended(ProcessEnd::Exited(3))
        ));
        assert_eq!(
            (record.status, record.exit_code),
            (TaskStatus::Failed, Some(3))
        );
        let mut record = running();
        assert!(transition(
            &mut record,
            Change::Ended(ProcessEnd::Signalled(9))
        ));
        assert_eq!(
            (record.status, record.signal),
            (TaskStatus::Failed, Some(9))
        );
    }

    #[test]
    fn stop_then_late_exit_keeps_killed_and_records_how_it_ended() {
        let mut record = running();
        assert!(transition(
            &mut record,
            Change::Stopped(StopCause::Requested)
        ));
        assert_eq!(record.status, TaskStatus::Killed);
        assert!(!transition(
            &mut record,
            Change::Ended(ProcessEnd::Exited(7))
        ));
        assert_eq!(
            (record.status, record.exit_code),
            (TaskStatus::Killed, Some(7))
        );
        // The end is recorded once; nothing moves a terminal record after that.
        let settled = record.clone();
        assert!(!transition(
            &mut record,
            Change::Ended(ProcessEnd::Exited(0))
        ));
        assert!(!transition(&mut record, Change::Failed("late".into())));
        assert!(!transition(
            &mut record,
            Change::Stopped(StopCause::Closing)
        ));
        assert_eq!(record, settled);
    }

    #[test]
    fn terminal_states_are_final() {
        for first in [
            Change::Ended(ProcessEnd::Exited(0)),
            Change::Ended(ProcessEnd::Exited(1)),
            Change::Failed("could not start".into()),
        ] {
            let mut record = running();
            assert!(transition(&mut record, first));
            let settled = record.clone();
            assert!(!transition(
                &mut record,
                Change::Stopped(StopCause::Requested)
            ));
            assert!(!transition(
                &mut record,
                Change::Ended(ProcessEnd::Exited(2))
            ));
            assert_eq!(record, settled);
        }
    }
}
