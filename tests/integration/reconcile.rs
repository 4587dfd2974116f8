//! Reconciliation through the real binary: runs that die without closing (SIGKILL) are
//! cleaned up by the next `zero` process, live runs are never touched, a reused pid is never
//! signalled, and records zero cannot use are reported and kept.

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script, TASK_ID};
use crate::support::procs::{assert_gone_soon, fd_copy_of, let_go_soon, nonce, processes_with};
use crate::support::runs::{Exec, Home, background, stall};
use crate::support::wait::{DEADLINE, wait_for};

/// The run the records written by hand belong to; its lease is never held.
const DEAD_RUN: &str = "run_20260101000000_00dead";

fn list_json(home: &Home) -> Vec<Value> {
    let output = home.tasks(&["list", "--json"]).assert().success();
    serde_json::from_slice(&output.get_output().stdout).unwrap()
}

/// A `zero exec` whose background `sleep <nonce>` is running, the model stalled after it: the
/// nonce, the home, the model server (to keep alive), the run and its id.
fn a_run_with_a_background_task() -> (String, Home, FakeModel, Exec, String) {
    let nonce = nonce();
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .reply(background(&format!("sleep {nonce}")))
            .reply(stall()),
    );
    let exec = Exec::start(&server, &home);
    let record = home.running_record(&nonce);
    let run_id = record["runId"].as_str().unwrap().to_string();
    (nonce, home, server, exec, run_id)
}

#[test]
fn a_sigkilled_run_is_reconciled_by_the_next_zero_process() {
    let (nonce, home, _server, mut exec, run_id) = a_run_with_a_background_task();
    assert!(home.runs_entries().contains(&format!("{run_id}.lock")));
    exec.sigkill();
    // The task's guardian stops it when the lifeline reaches EOF; whether or not it is gone
    // yet, reconciliation has to record how the task ended and remove the run's files.
    let listed = list_json(&home);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["status"], "interrupted", "{}", listed[0]);
    assert!(listed[0]["reason"].as_str().unwrap().contains(&run_id));
    assert_gone_soon(&nonce);
    assert!(home.runs_entries().is_empty(), "{:?}", home.runs_entries());
    let on_disk = &home.records()[0];
    assert_eq!(on_disk["status"], "interrupted");
    assert!(on_disk["endedAt"].is_string());
}

/// A copy of a run's lease that outlives the run — the child zero was starting when it was
/// SIGKILLed holds one until its `exec` closes it — does not make the dead run look alive to
/// the next zero process: the lease names the process that owns it, and once that one is gone
/// the next process waits the copy out and reconciles. Here the test itself takes the copy
/// (`pidfd_getfd`: the same open file, so the same `flock`) and lets go of it a moment after
/// zero is dead, as the child's `exec` would.
#[test]
fn a_copy_of_the_lease_left_in_a_child_does_not_keep_a_dead_run_alive() {
    let (nonce, home, _server, mut exec, run_id) = a_run_with_a_background_task();
    let lease = home.path().join(format!("runs/{run_id}.lock"));
    let copy = fd_copy_of(exec.pid(), &lease);
    exec.sigkill();
    let child_execs = let_go_soon(copy);
    let listed = list_json(&home);
    child_execs.join().unwrap();
    assert_eq!(listed[0]["status"], "interrupted", "{}", listed[0]);
    assert_gone_soon(&nonce);
    assert!(home.runs_entries().is_empty(), "{:?}", home.runs_entries());
    assert_eq!(home.records()[0]["status"], "interrupted");
}

#[test]
fn a_live_runs_tasks_are_untouched_by_another_process() {
    let nonce = nonce();
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .reply(background(&format!("sleep {nonce}")))
            .reply(stall()),
    );
    let mut exec = Exec::start(&server, &home);
    home.running_record(&nonce);
    for _ in 0..2 {
        let listed = list_json(&home);
        assert_eq!(listed[0]["status"], "running", "{}", listed[0]);
    }
    assert_eq!(home.records()[0]["status"], "running");
    assert_eq!(
        processes_with(&nonce).len(),
        2,
        "the task's processes (its guardian and its command) must live on"
    );
    exec.sigkill();
    list_json(&home);
    assert_gone_soon(&nonce);
}

/// A record of a dead run, written by hand: `pid` with `start_time`, on this boot.
fn dead_run_with(home: &Home, run_id: &str, id: &str, pid: u32, start_time: u64) {
    let root = home.path();
    std::fs::create_dir_all(root.join("tasks")).unwrap();
    std::fs::create_dir_all(root.join("runs").join(run_id)).unwrap();
    std::fs::write(root.join(format!("runs/{run_id}.lock")), "").unwrap();
    std::fs::write(root.join(format!("runs/{run_id}.tasks")), format!("{id}\n")).unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let output = root.join(format!("tasks/{id}.log"));
    std::fs::write(&output, "").unwrap();
    let record = json!({
        "schemaVersion": 1, "id": id, "kind": "shell", "command": "sleep", "runId": run_id,
        "pid": pid, "startTime": start_time, "bootId": boot.trim(),
        "startedAt": "2026-01-01T00:00:00.000Z", "endedAt": null, "status": "running",
        "exitCode": null, "outputPath": output,
    });
    std::fs::write(
        root.join(format!("tasks/{id}.json")),
        serde_json::to_vec_pretty(&record).unwrap(),
    )
    .unwrap();
}

/// A process of our own in its own process group, killed with its group when dropped (also
/// when a test fails).
struct Leftover(std::process::Child);

impl Leftover {
    /// `sleep <nonce>`.
    fn sleep(nonce: &str) -> Leftover {
        Leftover::spawn(Command::new("sleep").arg(nonce))
    }

    /// A shell that creates `marker` once it is ready, and again (if it was removed) for each
    /// SIGUSR1 it gets, and carries on; every other signal has its default effect (the stop
    /// signals end it).
    fn answering(marker: &std::path::Path, nonce: &str) -> Leftover {
        let marker = marker.display();
        let script = format!(
            "trap 'echo answered >> {marker}' USR1; echo ready >> {marker}; \
             while :; do sleep 0.05; done # {nonce}"
        );
        Leftover::spawn(Command::new("sh").args(["-c", &script]))
    }

    /// A shell that notes each SIGTERM in `marker` and carries on.
    fn stubborn(marker: &std::path::Path, nonce: &str) -> Leftover {
        let script = format!(
            "trap 'touch {}' TERM; while :; do sleep 0.05; done # {nonce}",
            marker.display()
        );
        Leftover::spawn(Command::new("sh").args(["-c", &script]))
    }

    fn spawn(command: &mut Command) -> Leftover {
        std::os::unix::process::CommandExt::process_group(command, 0);
        Leftover(command.stdin(Stdio::null()).spawn().unwrap())
    }
}

impl Drop for Leftover {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.0.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.0.wait();
    }
}

fn start_time(pid: u32) -> u64 {
    crate::support::procs::stat(pid as i32).unwrap().start_time
}

#[test]
fn a_reused_pid_is_never_signalled() {
    let nonce = nonce();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let answers = scratch.path().join("answers");
    // An unrelated live process in its own group, whose pid the record names with another
    // start time: the pid was reused.
    let mut unrelated = Leftover::answering(&answers, &nonce);
    let pid = unrelated.0.id();
    wait_for("the unrelated process to be ready", DEADLINE, || {
        answers.exists().then_some(())
    });
    dead_run_with(
        &home,
        DEAD_RUN,
        "task_00000000000a",
        pid,
        start_time(pid) + 1,
    );

    let listed = list_json(&home);
    assert_eq!(listed[0]["status"], "interrupted");
    // Any signal reconciliation sent was sent before `zero tasks list` exited. One that ends
    // the process takes effect when it is next scheduled, and then it can answer nothing; so
    // an answer to a SIGUSR1 sent after that proves it has been scheduled since, and whatever
    // it was sent has had its effect.
    std::fs::remove_file(&answers).unwrap();
    wait_for("the unrelated process to answer or end", DEADLINE, || {
        if unrelated.0.try_wait().unwrap().is_some() {
            return Some(());
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGUSR1,
        );
        answers.exists().then_some(())
    });
    assert!(
        unrelated.0.try_wait().unwrap().is_none(),
        "a process with a reused pid was signalled"
    );
    assert!(home.runs_entries().is_empty(), "{:?}", home.runs_entries());
}

#[test]
fn a_dead_runs_process_with_a_matching_identity_is_stopped() {
    let nonce = nonce();
    let home = Home::new();
    let mut orphan = Leftover::sleep(&nonce);
    let pid = orphan.0.id();
    dead_run_with(&home, DEAD_RUN, "task_00000000000b", pid, start_time(pid));

    home.tasks(&["list"]).assert().success();
    // Our child, so it is a zombie until we reap it: its end is what we wait for.
    let status = wait_for("the orphan to be stopped", DEADLINE, || {
        orphan.0.try_wait().unwrap()
    });
    assert!(!status.success());
    let record = &home.records()[0];
    assert_eq!(record["status"], "interrupted");
    assert!(record["reason"].as_str().unwrap().contains("stopped"));
}

#[test]
fn eight_concurrent_runs_survive_one_of_them_being_killed() {
    let home = Home::new();
    let victim_nonce = nonce();
    let victim_server = FakeModel::start(
        Script::new()
            .reply(background(&format!("sleep {victim_nonce}")))
            .reply(stall()),
    );
    let servers: Vec<FakeModel> = (0..7)
        .map(|i| {
            FakeModel::start(
                Script::new()
                    .reply(background(&format!(
                        "echo start-{i}; sleep 1.{i}; echo end-{i}"
                    )))
                    .reply(Reply::tool_call(
                        "TaskOutput",
                        json!({"task_id": TASK_ID, "block": true, "timeout_ms": 60000}),
                    ))
                    .reply(Reply::text("done")),
            )
        })
        .collect();
    let mut victim = Exec::start(&victim_server, &home);
    let others: Vec<Exec> = servers.iter().map(|s| Exec::start(s, &home)).collect();
    home.running_record(&victim_nonce);
    victim.sigkill();
    // Reconcile while the others are mid-run.
    home.tasks(&["list"]).assert().success();
    assert_gone_soon(&victim_nonce);

    for exec in others {
        let (code, events) = exec.finish();
        assert_eq!(code, 0, "{events:?}");
    }
    let records = home.records();
    assert_eq!(records.len(), 8);
    for record in &records {
        let command = record["command"].as_str().unwrap();
        if command.contains(&victim_nonce) {
            assert_eq!(record["status"], "interrupted", "{record}");
            continue;
        }
        assert_eq!(record["status"], "completed", "{record}");
        assert_eq!(record["exitCode"], 0);
        let i = &command.strip_prefix("echo start-").unwrap()[..1];
        let output = std::fs::read_to_string(record["outputPath"].as_str().unwrap()).unwrap();
        assert_eq!(output, format!("start-{i}\nend-{i}\n"), "{record}");
    }
    assert!(home.runs_entries().is_empty(), "{:?}", home.runs_entries());
}

#[test]
fn unusable_records_are_warned_about_once_and_kept() {
    let home = Home::new();
    let root = home.path();
    let ids = [
        "task_00000000000c",
        "task_00000000000d",
        "task_00000000000e",
        "task_00000000000f",
    ];
    dead_run_with(&home, DEAD_RUN, ids[0], 1, 1);
    let index: String = ids.iter().map(|id| format!("{id}\n")).collect();
    std::fs::write(root.join(format!("runs/{DEAD_RUN}.tasks")), index).unwrap();
    let future = json!({
        "schemaVersion": 99, "id": ids[3], "kind": "shell", "command": "x", "runId": DEAD_RUN,
        "pid": null, "startTime": null, "bootId": null, "startedAt": "2026-01-01T00:00:00Z",
        "endedAt": null, "status": "running", "exitCode": null, "outputPath": "/x",
        "somethingNew": {"a": 1},
    });
    let bad: [(&str, Vec<u8>); 4] = [
        (ids[0], b"not json at all".to_vec()),
        (
            ids[1],
            br#"{"schemaVersion": 1, "id": "task_00000000000d", "kind": "sh"#.to_vec(),
        ),
        (
            ids[2],
            br#"{"id": "task_00000000000e", "status": "running"}"#.to_vec(),
        ),
        (ids[3], serde_json::to_vec(&future).unwrap()),
    ];
    for (id, bytes) in &bad {
        std::fs::write(root.join(format!("tasks/{id}.json")), bytes).unwrap();
    }

    let output = home.tasks(&["list", "--json"]).assert().success();
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    let listed: Vec<Value> = serde_json::from_slice(&output.get_output().stdout).unwrap();
    assert!(listed.is_empty(), "{listed:?}");
    for (id, bytes) in &bad {
        let warnings = stderr
            .lines()
            .filter(|line| line.starts_with("zero: warning:") && line.contains(id))
            .count();
        assert_eq!(warnings, 1, "{id}:\n{stderr}");
        let kept = std::fs::read(root.join(format!("tasks/{id}.json"))).unwrap();
        assert_eq!(&kept, bytes, "{id} was changed");
    }
    assert!(stderr.contains("newer"), "{stderr}");
    // The dead run itself is cleaned up; the records stay.
    assert!(home.runs_entries().is_empty(), "{:?}", home.runs_entries());
    home.tasks(&["gc", "--older-than", "0s"]).assert().success();
    for (id, _) in &bad {
        assert!(root.join(format!("tasks/{id}.json")).exists());
    }
}

#[test]
fn zero_exec_reconciles_before_it_starts() {
    let home = Home::new();
    dead_run_with(&home, DEAD_RUN, "task_000000000011", 1, 1);
    let server = FakeModel::start(Script::new().reply(Reply::text("hi")));
    let (code, _) = Exec::start(&server, &home).finish();
    assert_eq!(code, 0);
    assert_eq!(home.records()[0]["status"], "interrupted");
    assert!(home.runs_entries().is_empty(), "{:?}", home.runs_entries());
}

#[test]
fn version_and_help_touch_nothing() {
    let home = Home::new();
    dead_run_with(&home, DEAD_RUN, "task_000000000010", 1, 1);
    for args in [["--version"], ["--help"]] {
        let mut cmd = crate::support::zero::zero();
        cmd.env("ZERO_HOME", home.path())
            .args(args)
            .assert()
            .success();
    }
    assert!(home.runs_entries().contains(&format!("{DEAD_RUN}.lock")));
    assert_eq!(home.records()[0]["status"], "running");
}

#[test]
fn a_signal_while_dead_runs_are_reconciled_still_ends_the_stream() {
    use crate::support::zero::{Wire, events, zero_std_with};
    let nonce = nonce();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("asked-to-stop");
    // Reconciling its dead run means waiting out the grace period: a long one keeps zero there.
    let leftover = Leftover::stubborn(&marker, &nonce);
    let pid = leftover.0.id();
    dead_run_with(&home, DEAD_RUN, "task_000000000012", pid, start_time(pid));
    let server = FakeModel::start(Script::new().reply(Reply::text("hi")));
    let zero = zero_std_with(&server, Wire::OpenAi)
        .args(["exec", "-o", "stream-json", "go"])
        .env("ZERO_HOME", home.path())
        .env("ZERO_KILL_GRACE_MS", "20000")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(
        "reconciliation to ask the leftover to stop",
        DEADLINE,
        || marker.exists().then_some(()),
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(zero.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let output = zero.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(143));
    let events = events(&output.stdout);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds.last(), Some(&"run_end"), "{kinds:?}");
    assert!(kinds.contains(&"error"), "{kinds:?}");
    assert_eq!(events.last().unwrap()["exitCode"], 143);
    assert!(server.requests().is_empty(), "the run never started");
    drop(leftover);
}
