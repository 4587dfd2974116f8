//! The shared runtime against real processes, signals and files. Every test has its own data
//! directory (passed explicitly, never through the process environment) and closes its runtime;
//! waits are on conditions with deadlines, never on fixed sleeps (the one sleep here aims a
//! stop at a command's natural end, on purpose).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use zero::runtime::{
    CommandStartFailure, Launch, Origin, RunId, Runtime, RuntimeConfig, RuntimeError, StartError,
    TaskEvent, TaskKind, TaskRecord, TaskSpec, TaskStatus, Window,
};

use crate::support::procs::stat;
use crate::support::wait::{DEADLINE, wait_for};

/// The run every harness runtime belongs to, and another one.
const RUN_A: &str = "run_20260101000000_00000a";
const RUN_B: &str = "run_20260101000000_00000b";

fn run_id(text: &str) -> RunId {
    RunId::parse(text).unwrap()
}

/// A runtime configuration for the run `run_id` in `home` whose commands run under guardians
/// that are the zero binary, not this test harness.
fn zero_config(run_id: RunId, home: impl Into<std::path::PathBuf>) -> RuntimeConfig {
    let mut config = RuntimeConfig::new(run_id, home);
    config.zero_binary = env!("CARGO_BIN_EXE_zero").into();
    config
}

/// A runtime in a fresh data directory, with a workspace for its commands and a log of events.
struct Harness {
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
    runtime: Runtime,
    events: Arc<Mutex<Vec<TaskEvent>>>,
}

impl Harness {
    fn new() -> Self {
        Harness::with(|_| {})
    }

    fn with(adjust: impl FnOnce(&mut RuntimeConfig)) -> Self {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let mut config = zero_config(run_id(RUN_A), home.path());
        config.kill_grace = Duration::from_millis(300);
        adjust(&mut config);
        let events: Arc<Mutex<Vec<TaskEvent>>> = Arc::default();
        let sink = Arc::clone(&events);
        let runtime = Runtime::new(config, Arc::new(move |e| sink.lock().unwrap().push(e)));
        Harness {
            home,
            workspace,
            runtime,
            events,
        }
    }

    fn another_run(&self, id: &str) -> Runtime {
        let config = zero_config(run_id(id), self.home.path());
        Runtime::new(config, Arc::new(|_| {}))
    }

    async fn shell(&self, command: &str) -> TaskRecord {
        self.runtime
            .start(TaskSpec::shell(command, self.workspace.path()))
            .await
            .unwrap()
    }

    async fn finished(&self, record: &TaskRecord) -> TaskRecord {
        let done = self
            .runtime
            .wait(record.id.as_str(), DEADLINE)
            .await
            .unwrap();
        assert!(done.status.is_terminal(), "still running: {done:?}");
        done
    }

    async fn output(&self, record: &TaskRecord) -> String {
        let window = self
            .runtime
            .read_output(record.id.as_str(), Window::Tail { max_bytes: 1 << 20 })
            .await
            .unwrap();
        String::from_utf8(window.bytes).unwrap()
    }

    /// Waits until the task's output file contains `text`.
    fn output_contains(&self, record: &TaskRecord, text: &str) {
        wait_for(format!("{text:?} in the output"), DEADLINE, || {
            let output = std::fs::read(&record.output_path).unwrap_or_default();
            String::from_utf8_lossy(&output)
                .contains(text)
                .then_some(())
        });
    }

    fn lease(&self) -> PathBuf {
        self.home.path().join(format!("runs/{RUN_A}.lock"))
    }

    fn run_dir(&self) -> PathBuf {
        self.home.path().join(format!("runs/{RUN_A}"))
    }

    fn finished_events(&self) -> Vec<TaskRecord> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter_map(|e| match e {
                TaskEvent::Finished(record) => Some(record.clone()),
                _ => None,
            })
            .collect()
    }
}

impl Drop for Harness {
    /// A failing test must not leave processes behind: kill every group it started.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for event in self.events.lock().unwrap().iter() {
            if let TaskEvent::Started(record) = event {
                let _ = killpg(pid(record), Signal::SIGKILL);
            }
        }
    }
}

fn pid(record: &TaskRecord) -> Pid {
    Pid::from_raw(record.pid.expect("a started task has a pid") as i32)
}

fn on_disk(record: &TaskRecord, home: &Path) -> TaskRecord {
    let path = home.join("tasks").join(format!("{}.json", record.id));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Waits until the task's process is reaped and nothing of its group is alive. The runtime has
/// delivered SIGKILL to the group by the time a task is finished, but a killed grandchild's
/// death completes asynchronously, and it then stays a zombie in the group until init reaps it,
/// so zombies count as gone.
fn group_is_gone(record: &TaskRecord) {
    let pgid = record.pid.unwrap() as i32;
    let alive_in_group = || {
        std::fs::read_dir("/proc").unwrap().any(|entry| {
            let pid = entry
                .unwrap()
                .file_name()
                .to_str()
                .and_then(|n| n.parse().ok());
            pid.and_then(stat)
                .is_some_and(|stat| stat.pgid == pgid && !stat.zombie())
        })
    };
    assert_eq!(
        kill(pid(record), None),
        Err(Errno::ESRCH),
        "{record:?} is not reaped"
    );
    wait_for(format!("process group {pgid} to be gone"), DEADLINE, || {
        (!alive_in_group()).then_some(())
    });
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_runtime_that_starts_nothing_leaves_nothing() {
    let h = Harness::new();
    let home = h.home.path().join("zero");
    let runtime = Runtime::new(
        RuntimeConfig::new(RunId::generate(), &home),
        Arc::new(|_| {}),
    );
    assert!(runtime.running().await.is_empty());
    assert!(matches!(
        runtime.status("task_0123456789ab").await,
        Err(RuntimeError::UnknownTask(_))
    ));
    let report = runtime.close().await;
    assert!(report.stopped.is_empty() && report.errors.is_empty());
    assert!(
        !home.exists(),
        "the idle runtime created {}",
        home.display()
    );
}

#[tokio::test]
async fn a_background_shell_runs_to_completion_and_is_recorded() {
    let h = Harness::new();
    let started = h.shell("echo hello; echo oops >&2").await;
    assert_eq!(started.status, TaskStatus::Running);
    assert_eq!(
        started.kind,
        TaskKind::Shell {
            command: "echo hello; echo oops >&2".into()
        }
    );
    assert_eq!(started.run_id.as_str(), RUN_A);
    assert!(started.start_time.is_some() && started.boot_id.is_some());
    assert!(
        started
            .output_path
            .ends_with(format!("tasks/{}.log", started.id))
    );

    let done = h.finished(&started).await;
    assert_eq!(
        (done.status, done.exit_code),
        (TaskStatus::Completed, Some(0))
    );
    assert!(done.ended_at.is_some());
    assert_eq!(on_disk(&done, h.home.path()), done);
    assert_eq!(h.output(&done).await, "hello\noops\n");
    group_is_gone(&done);
    // Started and finished were announced, the finish with the final record.
    assert!(matches!(&h.events.lock().unwrap()[0], TaskEvent::Started(r) if r.id == done.id));
    assert_eq!(h.finished_events(), [done]);
    h.runtime.close().await;
}

#[tokio::test]
async fn what_a_finished_command_left_running_in_its_group_dies_with_it() {
    let h = Harness::new();
    let task = h.shell("sleep 100 & echo $! > leftover").await;
    let done = h.finished(&task).await;
    assert_eq!(done.status, TaskStatus::Completed);
    let leftover = std::fs::read_to_string(h.workspace.path().join("leftover")).unwrap();
    assert!(!leftover.trim().is_empty());
    group_is_gone(&done);
    h.runtime.close().await;
}

#[tokio::test]
async fn a_non_zero_exit_is_failed_with_its_code() {
    let h = Harness::new();
    let task = h.shell("exit 3").await;
    let done = h.finished(&task).await;
    assert_eq!((done.status, done.exit_code), (TaskStatus::Failed, Some(3)));
    assert_eq!(on_disk(&done, h.home.path()), done);
    h.runtime.close().await;
}

#[tokio::test]
async fn output_is_read_incrementally_from_offsets() {
    let h = Harness::new();
    let task = h
        .shell("echo one; while [ ! -e go ]; do sleep 0.02; done; echo two")
        .await;
    h.output_contains(&task, "one\n");
    let id = task.id.as_str();
    let first = h
        .runtime
        .read_output(
            id,
            Window::From {
                offset: 0,
                max_bytes: 1024,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (first.bytes.as_slice(), first.next_offset),
        (&b"one\n"[..], 4)
    );

    std::fs::write(h.workspace.path().join("go"), "").unwrap();
    h.finished(&task).await;
    let offset = first.next_offset;
    let second = h
        .runtime
        .read_output(
            id,
            Window::From {
                offset,
                max_bytes: 1024,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (second.bytes.as_slice(), second.start, second.next_offset),
        (&b"two\n"[..], 4, 8)
    );
    h.runtime.close().await;
}

#[tokio::test]
async fn a_100_mb_output_is_read_by_its_window_only() {
    const SIZE: u64 = 100 * 1024 * 1024;
    let h = Harness::new();
    let task = h
        .shell(&format!(
            "yes 0123456789 | head -c {}; printf END",
            SIZE - 3
        ))
        .await;
    h.finished(&task).await;
    let id = task.id.as_str();
    let tail = h
        .runtime
        .read_output(
            id,
            Window::Tail {
                max_bytes: 16 * 1024,
            },
        )
        .await
        .unwrap();
    assert_eq!(tail.size, SIZE);
    assert_eq!(tail.bytes.len(), 16 * 1024);
    assert!(
        tail.bytes.capacity() <= 16 * 1024,
        "only the window is held in memory"
    );
    // The stream is `yes`'s "0123456789\n" over and over, cut short, then END.
    let expected = |at: u64| match at {
        at if at >= SIZE - 3 => b"END"[(at - (SIZE - 3)) as usize],
        at => b"0123456789\n"[(at % 11) as usize],
    };
    let expected_tail: Vec<u8> = (tail.start..SIZE).map(expected).collect();
    assert_eq!(tail.bytes, expected_tail);
    let offset = SIZE - 5;
    let from = h
        .runtime
        .read_output(
            id,
            Window::From {
                offset,
                max_bytes: 4,
            },
        )
        .await
        .unwrap();
    let expected_from: Vec<u8> = (offset..offset + 4).map(expected).collect();
    assert_eq!((from.bytes, from.next_offset), (expected_from, SIZE - 1));
    h.runtime.close().await;
}

#[tokio::test]
async fn waiting_returns_a_snapshot_on_timeout_and_the_end_when_it_comes() {
    let h = Harness::new();
    let task = h.shell("while [ ! -e go ]; do sleep 0.02; done").await;
    let id = task.id.as_str();
    let snapshot = h
        .runtime
        .wait(id, Duration::from_millis(100))
        .await
        .unwrap();
    assert_eq!(snapshot.status, TaskStatus::Running);

    let waiter = h.runtime.wait(id, DEADLINE);
    let release = async {
        std::fs::write(h.workspace.path().join("go"), "").unwrap();
    };
    let (done, ()) = tokio::join!(waiter, release);
    assert_eq!(done.unwrap().status, TaskStatus::Completed);
    h.runtime.close().await;
}

#[tokio::test]
async fn a_child_that_exits_non_zero_on_sigterm_stays_killed() {
    let h = Harness::new();
    let task = h
        .shell("trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done")
        .await;
    h.output_contains(&task, "ready");
    let stopped = h.runtime.stop(task.id.as_str()).await.unwrap();
    assert!(stopped.stopped_here);
    assert!(stopped.unrecorded.is_none());
    let record = stopped.record;
    assert_eq!(
        (record.status, record.exit_code),
        (TaskStatus::Killed, Some(7))
    );
    assert_eq!(record.reason.as_deref(), Some("stopped by TaskStop"));
    assert_eq!(on_disk(&record, h.home.path()), record);
    group_is_gone(&record);
    assert_eq!(h.finished_events(), [record]);
    h.runtime.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_racing_the_natural_exit_settles_once() {
    let h = Harness::new();
    for round in 0..6 {
        let task = h.shell("sleep 0.2").await;
        // Aim the stop at about the moment the command ends on its own: this sleep is the
        // test's point (a stop and a natural end racing), not a wait for something to happen.
        tokio::time::sleep(Duration::from_millis(150 + 15 * round)).await;
        let stopped = h.runtime.stop(task.id.as_str()).await.unwrap();
        let record = stopped.record;
        assert!(
            matches!(record.status, TaskStatus::Killed | TaskStatus::Completed),
            "{record:?}"
        );
        assert_eq!(stopped.stopped_here, record.status == TaskStatus::Killed);
        assert_eq!(
            on_disk(&record, h.home.path()),
            record,
            "persisted equals reported"
        );
        // Nothing changes it afterwards.
        assert_eq!(h.runtime.status(task.id.as_str()).await.unwrap(), record);
        assert_eq!(
            h.runtime.stop(task.id.as_str()).await.unwrap().record,
            record
        );
        assert_eq!(on_disk(&record, h.home.path()), record);
    }
    h.runtime.close().await;
}

#[tokio::test]
async fn a_child_that_ignores_sigterm_is_killed_after_the_grace() {
    let h = Harness::new();
    let task = h
        .shell("trap '' TERM; echo ready; while :; do sleep 0.05; done")
        .await;
    h.output_contains(&task, "ready");
    let record = h.runtime.stop(task.id.as_str()).await.unwrap().record;
    assert_eq!(
        (record.status, record.signal),
        (TaskStatus::Killed, Some(9))
    );
    group_is_gone(&record);
    h.runtime.close().await;
}

/// The guardian answers the handshake with a typed error when it cannot start the command;
/// the task is recorded `failed` and holds no slot.
#[tokio::test]
async fn a_command_the_guardian_cannot_start_is_a_typed_failed_start() {
    let h = Harness::with(|config| config.max_running = 1);
    let mut missing = TaskSpec::shell("true", h.workspace.path());
    let program = h.workspace.path().join("no-such-program");
    missing.launch = Launch::program(program, Vec::new(), h.workspace.path().into(), Vec::new());
    let failed = h.runtime.start(missing).await;
    let Err(RuntimeError::StartFailed { id, source }) = failed else {
        panic!("expected a failed start, got {failed:?}");
    };
    assert!(
        matches!(
            source,
            StartError::Command {
                kind: CommandStartFailure::NotFound,
                ..
            }
        ),
        "{source:?}"
    );
    let record = h.runtime.status(id.as_str()).await.unwrap();
    assert_eq!((record.status, record.pid), (TaskStatus::Failed, None));
    // Its slot is free: the one task this runtime may run can start.
    h.shell("sleep 100").await;
    h.runtime.close().await;
}

#[tokio::test]
async fn the_ninth_start_is_refused_and_a_failed_start_frees_its_slot() {
    let h = Harness::new();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        tasks.push(h.shell("sleep 100").await);
    }
    let refused = h
        .runtime
        .start(TaskSpec::shell("sleep 100", h.workspace.path()))
        .await;
    assert!(
        matches!(refused, Err(RuntimeError::TooManyTasks { limit: 8 })),
        "{refused:?}"
    );

    h.runtime.stop(tasks[0].id.as_str()).await.unwrap();
    let doomed = TaskSpec::shell("true", &h.workspace.path().join("does-not-exist"));
    let failed = h.runtime.start(doomed).await;
    let Err(RuntimeError::StartFailed { id, .. }) = failed else {
        panic!("expected a failed start, got {failed:?}");
    };
    let record = h.runtime.status(id.as_str()).await.unwrap();
    assert_eq!((record.status, record.pid), (TaskStatus::Failed, None));
    assert!(
        record
            .reason
            .as_deref()
            .unwrap()
            .starts_with("could not start")
    );
    assert_eq!(on_disk(&record, h.home.path()), record);
    // The failed start holds no slot: the eighth task can still start.
    h.shell("sleep 100").await;
    assert_eq!(h.runtime.running().await.len(), 8);
    let report = h.runtime.close().await;
    assert_eq!(report.stopped.len(), 8);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

#[tokio::test]
async fn stopping_a_finished_task_returns_its_final_state() {
    let h = Harness::new();
    let task = h.shell("exit 4").await;
    let done = h.finished(&task).await;
    let stopped = h.runtime.stop(task.id.as_str()).await.unwrap();
    assert!(!stopped.stopped_here);
    assert_eq!(stopped.record, done);
    assert_eq!(stopped.record.status, TaskStatus::Failed);
    h.runtime.close().await;
}

#[tokio::test]
async fn close_stops_everything_and_removes_the_run() {
    let h = Harness::new();
    // A leader with a grandchild in its group, and a plain one.
    let family = h.shell("sleep 100 & sleep 100").await;
    let single = h.shell("sleep 100").await;
    let finished = h.shell("true").await;
    h.finished(&finished).await;
    assert!(h.lease().exists() && h.run_dir().is_dir());
    let run_dir = h.runtime.run_dir().await.unwrap();
    assert_eq!(run_dir, h.run_dir());
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&run_dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    std::fs::write(run_dir.join("prompt.md"), "scratch").unwrap();

    let report = h.runtime.close().await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let mut stopped: Vec<_> = report.stopped.iter().map(|r| r.id.clone()).collect();
    stopped.sort();
    let mut expected = vec![family.id.clone(), single.id.clone()];
    expected.sort();
    assert_eq!(stopped, expected);
    for record in &report.stopped {
        assert_eq!(record.status, TaskStatus::Killed);
        assert_eq!(
            record.reason.as_deref(),
            Some("stopped because the run ended")
        );
        assert_eq!(on_disk(record, h.home.path()), *record);
        group_is_gone(record);
    }
    assert!(!h.lease().exists() && !h.run_dir().exists());
    assert_eq!(entries(&h.home.path().join("runs")), Vec::<String>::new());
    // Close announced every task it killed before it returned.
    assert_eq!(h.finished_events().len(), 3);

    let again = h.runtime.close().await;
    assert!(again.stopped.is_empty() && again.errors.is_empty());
    let late = h
        .runtime
        .start(TaskSpec::shell("true", h.workspace.path()))
        .await;
    assert!(matches!(late, Err(RuntimeError::Closed)), "{late:?}");
    // The final states stay readable.
    assert_eq!(
        h.runtime.status(single.id.as_str()).await.unwrap().status,
        TaskStatus::Killed
    );
}

#[tokio::test]
async fn the_lease_is_held_while_the_run_is_open() {
    use nix::fcntl::{Flock, FlockArg};
    let h = Harness::new();
    h.shell("true").await;
    let file = std::fs::File::open(h.lease()).unwrap();
    let (file, errno) = Flock::lock(file, FlockArg::LockExclusiveNonblock).unwrap_err();
    assert_eq!(errno, Errno::EWOULDBLOCK);
    drop(file);
    h.runtime.close().await;
    assert!(!h.lease().exists());
}

#[tokio::test]
async fn ids_are_checked_and_other_runs_tasks_are_refused() {
    let h = Harness::new();
    let other = h.another_run(RUN_B);
    let theirs = other
        .start(TaskSpec::shell("true", h.workspace.path()))
        .await
        .unwrap();

    for malformed in ["", "task_x", "../../etc/passwd", "task_0123456789AB"] {
        let error = h.runtime.status(malformed).await.unwrap_err();
        assert!(
            matches!(error, RuntimeError::MalformedId(_)),
            "{malformed}: {error:?}"
        );
    }
    let unknown = h.runtime.stop("task_0123456789ab").await.unwrap_err();
    assert!(
        matches!(unknown, RuntimeError::UnknownTask(_)),
        "{unknown:?}"
    );
    let foreign = h.runtime.status(theirs.id.as_str()).await.unwrap_err();
    assert!(
        matches!(&foreign, RuntimeError::OtherRun { run_id, .. } if run_id.as_str() == RUN_B),
        "{foreign:?}"
    );
    assert_eq!(
        foreign.to_string(),
        format!("task {} belongs to another run ({RUN_B})", theirs.id)
    );
    assert!(h.runtime.stop(theirs.id.as_str()).await.is_err());
    other.close().await;
    h.runtime.close().await;
}

mod foreground {
    use super::*;
    use tokio_util::sync::CancellationToken;
    use zero::runtime::{CommandOutput, ShellCommand, Termination};

    async fn run(command: &str, timeout_ms: u64, cancel: &CancellationToken) -> CommandOutput {
        let dir = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(
            zero_config(RunId::generate(), dir.path().join("home")),
            Arc::new(|_| {}),
        );
        runtime
            .run_foreground(
                ShellCommand {
                    command,
                    cwd: dir.path(),
                    timeout: Duration::from_millis(timeout_ms),
                    origin: Origin::Model,
                },
                cancel,
            )
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn captures_both_streams_and_the_exit_code() {
        let out = run(
            "echo out; echo err >&2; exit 3",
            10_000,
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(out.termination, Termination::Exited(3));
        assert_eq!(out.stdout.render(), "out\n");
        assert_eq!(out.stderr.render(), "err\n");
        assert_eq!(out.leftovers, 0);
    }

    #[tokio::test]
    async fn leftovers_are_stopped_and_counted_without_hanging_the_call() {
        let out = run(
            "sleep 30 & sleep 31 & setsid sleep 32 & echo started",
            10_000,
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(out.termination, Termination::Exited(0));
        assert_eq!(out.stdout.render(), "started\n");
        assert_eq!(out.leftovers, 3);
    }

    #[tokio::test]
    async fn a_signal_death_is_passed_through() {
        let out = run("kill -USR1 $$", 10_000, &CancellationToken::new()).await;
        assert_eq!(out.termination, Termination::Signalled(libc_sigusr1()));
    }

    fn libc_sigusr1() -> i32 {
        Signal::SIGUSR1 as i32
    }

    #[tokio::test]
    async fn cancellation_ends_the_command() {
        let scratch = tempfile::tempdir().unwrap();
        let started = scratch.path().join("started");
        let cancel = CancellationToken::new();
        // Cancels once the command runs (off the runtime's thread, which the call needs).
        let canceller = {
            let (cancel, started) = (cancel.clone(), started.clone());
            tokio::task::spawn_blocking(move || {
                wait_for("the command to start", DEADLINE, || {
                    started.exists().then_some(())
                });
                cancel.cancel();
            })
        };
        let command = format!("touch {}; sleep 30", started.display());
        let out = run(&command, 60_000, &cancel).await;
        canceller.await.unwrap();
        assert_eq!(out.termination, Termination::Cancelled);
    }

    #[tokio::test]
    async fn a_timeout_stops_the_command() {
        let out = run("sleep 30", 200, &CancellationToken::new()).await;
        assert_eq!(out.termination, Termination::TimedOut);
    }

    /// `command` in the harness's workspace, as a `bash` call would run it.
    fn shell<'a>(h: &'a Harness, command: &'a str) -> ShellCommand<'a> {
        ShellCommand {
            command,
            cwd: h.workspace.path(),
            timeout: Duration::from_secs(60),
            origin: Origin::Model,
        }
    }

    /// The pid a command wrote to `pid` in the workspace, once it has.
    async fn pid_written(h: &Harness) -> Pid {
        let path = h.workspace.path().join("pid");
        // Polled off the test's thread, which drives the command being waited on.
        let pid = tokio::task::spawn_blocking(move || {
            wait_for("the command to write its pid", DEADLINE, || {
                std::fs::read_to_string(&path)
                    .ok()
                    .filter(|text| text.ends_with('\n'))
            })
        });
        Pid::from_raw(pid.await.unwrap().trim().parse().unwrap())
    }

    #[tokio::test]
    async fn foreground_commands_alone_leave_nothing_on_disk() {
        let h = Harness::new();
        let out = h
            .runtime
            .run_foreground(shell(&h, "echo hi"), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        let report = h.runtime.close().await;
        assert!(report.stopped.is_empty() && report.errors.is_empty());
        assert_eq!(entries(h.home.path()), Vec::<String>::new());
    }

    #[tokio::test]
    async fn close_waits_until_an_abandoned_command_is_stopped_grace_and_all() {
        let h = Harness::new();
        let cancel = CancellationToken::new();
        let command = "trap '' TERM; echo $$ > pid; sleep 30";
        {
            let call = h.runtime.run_foreground(shell(&h, command), &cancel);
            tokio::pin!(call);
            tokio::select! {
                _ = &mut call => panic!("the command ended on its own"),
                _ = pid_written(&h) => {}
            }
            // The caller gives up: the call is dropped, as the agent loop drops a cancelled
            // tool call.
        }
        let shell_pid = pid_written(&h).await;
        let closing = std::time::Instant::now();
        let report = h.runtime.close().await;
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        // The shell ignores SIGTERM, so only the guardian's SIGKILL after the grace ends it.
        assert!(
            closing.elapsed() >= Duration::from_millis(250),
            "{closing:?}"
        );
        assert_eq!(kill(shell_pid, None), Err(Errno::ESRCH));
    }

    #[tokio::test]
    async fn close_stops_a_running_command_and_refuses_new_ones() {
        let h = Harness::new();
        let runtime = &h.runtime;
        let cancel = CancellationToken::new();
        let running = runtime.run_foreground(shell(&h, "echo $$ > pid; sleep 30"), &cancel);
        let closed = async {
            pid_written(&h).await;
            runtime.close().await
        };
        let (out, report) = tokio::join!(running, closed);
        assert_eq!(out.unwrap().termination, Termination::Cancelled);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let late = runtime
            .run_foreground(shell(&h, "true"), &CancellationToken::new())
            .await;
        assert!(matches!(late, Err(StartError::Closed)), "{late:?}");
    }
}

/// A panic that unwinds past the scope owning the run closes the runtime on its way out.
#[test]
fn a_panic_closes_the_runtime_through_the_guard() {
    use zero::lifecycle::CloseOnDrop;
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut config = zero_config(RunId::generate(), home.path());
    config.kill_grace = Duration::from_millis(300);
    let runtime = Arc::new(Runtime::new(config, Arc::new(|_| {})));
    // The flavour `zero exec` runs on: once a panic has left `block_on`, nothing drives its
    // timers and I/O but the guard itself.
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let record = tokio
        .block_on(runtime.start(TaskSpec::shell("sleep 30", workspace.path())))
        .unwrap();
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _guard = CloseOnDrop::new(Arc::clone(&runtime), &tokio);
        tokio.block_on(async { panic!("a bug") });
    }));
    assert!(unwound.is_err());
    let after = tokio.block_on(runtime.status(record.id.as_str())).unwrap();
    assert_eq!(after.status, TaskStatus::Killed);
    group_is_gone(&record);
    assert!(entries(&home.path().join("runs")).is_empty());
}
