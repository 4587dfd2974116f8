//! `zero tasks` through the real binary: list, show, output (`--tail`, `--follow`), stop from
//! another process, gc — in text and JSON, and the errors for ids that are not there.

use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::procs::{assert_gone_soon, nonce, processes_with};
use crate::support::runs::{Exec, Home, background, one_finished_task, stall, wait_for_task};
use crate::support::wait::{DEADLINE, wait_for};

fn stdout(output: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&output.get_output().stdout).into_owned()
}

#[test]
fn list_and_show_in_text_and_json() {
    let (home, id) = one_finished_task();
    let table = stdout(&home.tasks(&["list"]).assert().success());
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("STATUS"),
        "{table}"
    );
    assert!(
        lines[1].contains(&id)
            && lines[1].contains("completed")
            && lines[1].contains("shell")
            && lines[1].ends_with("echo hello; echo world"),
        "{table}"
    );
    let listed: Vec<Value> =
        serde_json::from_str(&stdout(&home.tasks(&["list", "--json"]).assert().success())).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (&listed[0]["id"], &listed[0]["exitCode"]),
        (&json!(id), &json!(0))
    );
    let run_id = listed[0]["runId"].as_str().unwrap();

    let filtered = |args: &[&str]| {
        let mut all = vec!["list", "--json"];
        all.extend(args);
        serde_json::from_str::<Vec<Value>>(&stdout(&home.tasks(&all).assert().success()))
            .unwrap()
            .len()
    };
    assert_eq!(filtered(&["--status", "completed"]), 1);
    assert_eq!(filtered(&["--status", "killed"]), 0);
    assert_eq!(filtered(&["--run", run_id]), 1);
    assert_eq!(filtered(&["--run", "run_20260101000000_000000"]), 0);
    assert_eq!(
        stdout(
            &home
                .tasks(&["list", "--status", "running"])
                .assert()
                .success()
        )
        .trim(),
        "no tasks"
    );

    let shown = stdout(&home.tasks(&["show", &id]).assert().success());
    for expected in [
        format!("id:          {id}"),
        "status:      completed".to_string(),
        "exit code:   0".to_string(),
        "command:     echo hello; echo world".to_string(),
        format!("run:         {run_id}"),
    ] {
        assert!(shown.contains(&expected), "{expected:?} in:\n{shown}");
    }
    let record: Value = serde_json::from_str(&stdout(
        &home.tasks(&["show", &id, "--json"]).assert().success(),
    ))
    .unwrap();
    assert_eq!(record, home.records()[0]);
}

#[test]
fn unknown_and_malformed_ids_exit_2_with_a_clear_message() {
    let (home, _) = one_finished_task();
    for command in ["show", "output", "stop"] {
        let unknown = home.tasks(&[command, "task_0123456789ab"]).assert().code(2);
        let stderr = String::from_utf8_lossy(&unknown.get_output().stderr).into_owned();
        assert!(
            stderr.contains("no task task_0123456789ab"),
            "{command}: {stderr}"
        );
        let malformed = home.tasks(&[command, "nonsense"]).assert().code(2);
        let stderr = String::from_utf8_lossy(&malformed.get_output().stderr).into_owned();
        assert!(stderr.contains("not a task id"), "{command}: {stderr}");
    }
    // Before any run created the data directory, too.
    Home::new()
        .tasks(&["show", "task_0123456789ab"])
        .assert()
        .code(2);
}

#[test]
fn output_prints_all_or_the_tail() {
    let (home, id) = one_finished_task();
    let all = home.tasks(&["output", &id]).assert().success();
    assert_eq!(stdout(&all), "hello\nworld\n");
    let tail = home
        .tasks(&["output", &id, "--tail", "6"])
        .assert()
        .success();
    assert_eq!(stdout(&tail), "world\n");
    let more = home
        .tasks(&["output", &id, "--tail", "1000"])
        .assert()
        .success();
    assert_eq!(stdout(&more), "hello\nworld\n");
}

#[test]
fn output_follow_streams_until_the_task_ends() {
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .reply(background(
                "for i in 1 2 3 4; do echo line$i; sleep 0.4; done; echo follow-done",
            ))
            .reply(wait_for_task())
            .reply(Reply::text("done")),
    );
    let exec = Exec::start(&server, &home);
    let record = home.running_record("follow-done");
    let id = record["id"].as_str().unwrap();
    let mut follow = home
        .tasks_std(&["output", id, "--follow"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_for("output --follow to end", DEADLINE, || {
        follow.try_wait().unwrap()
    });
    assert!(status.success());
    let mut printed = String::new();
    std::io::Read::read_to_string(follow.stdout.as_mut().unwrap(), &mut printed).unwrap();
    assert_eq!(printed, "line1\nline2\nline3\nline4\nfollow-done\n");
    assert_eq!(exec.finish().0, 0);
}

#[test]
fn stop_from_another_process_kills_a_live_runs_task_and_the_run_reports_killed() {
    let nonce = nonce();
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .reply(background(&format!("sleep {nonce}")))
            .reply(wait_for_task())
            .reply(Reply::text("done")),
    );
    let exec = Exec::start(&server, &home);
    let record = home.running_record(&nonce);
    let id = record["id"].as_str().unwrap();
    // The task's guardian and its command.
    assert_eq!(processes_with(&nonce).len(), 2);

    let stopped = home.tasks(&["stop", id, "--json"]).assert().success();
    let stopped: Value = serde_json::from_str(&stdout(&stopped)).unwrap();
    assert_eq!(stopped["status"], "killed", "{stopped}");
    assert!(
        stopped["reason"]
            .as_str()
            .unwrap()
            .contains("zero tasks stop")
    );
    assert_gone_soon(&nonce);

    let (code, events) = exec.finish();
    assert_eq!(code, 0, "{events:?}");
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "task_finished")
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["status"], "killed", "{}", finished[0]);
    let on_disk = &home.records()[0];
    assert_eq!(on_disk["status"], "killed");
    assert!(
        on_disk["endedAt"].is_string(),
        "the owner recorded the end: {on_disk}"
    );

    // Stopping it again is not an error, in text too.
    let again = home.tasks(&["stop", id]).assert().success();
    assert!(
        stdout(&again).contains("already over: killed"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn gc_dry_run_reports_and_keeps_then_gc_deletes() {
    let (home, id) = one_finished_task();
    let tasks = home.path().join("tasks");
    let record = tasks.join(format!("{id}.json"));
    let output = tasks.join(format!("{id}.log"));
    // A leftover of a run that is gone.
    std::fs::write(home.path().join("runs/run_20260101000000_0000aa.tasks"), "").unwrap();

    let kept = home.tasks(&["gc"]).assert().success();
    assert!(
        stdout(&kept).contains("deleted 0 task(s)"),
        "{}",
        stdout(&kept)
    );

    let dry = home
        .tasks(&["gc", "--older-than", "0s", "--dry-run", "--json"])
        .assert()
        .success();
    let dry: Value = serde_json::from_str(&stdout(&dry)).unwrap();
    assert_eq!(dry["dryRun"], true);
    assert_eq!(dry["tasks"], json!([id]));
    assert_eq!(dry["leftovers"].as_array().unwrap().len(), 1, "{dry}");
    assert!(record.exists() && output.exists());

    let text = home.tasks(&["gc", "--older-than", "0s"]).assert().success();
    assert!(
        stdout(&text).contains(&format!("deleted {id}")),
        "{}",
        stdout(&text)
    );
    assert!(!record.exists() && !output.exists());
    assert!(home.runs_entries().is_empty(), "{:?}", home.runs_entries());
    assert_eq!(
        stdout(&home.tasks(&["list"]).assert().success()).trim(),
        "no tasks"
    );
}

#[test]
fn gc_never_deletes_a_running_task() {
    let nonce = nonce();
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .reply(background(&format!("sleep {nonce}")))
            .reply(stall()),
    );
    let _exec = Exec::start(&server, &home);
    let record = home.running_record(&nonce);
    backdate(&home, record["id"].as_str().unwrap());
    let gc = home
        .tasks(&["gc", "--older-than", "1s", "--json"])
        .assert()
        .success();
    let gc: Value = serde_json::from_str(&stdout(&gc)).unwrap();
    assert_eq!(gc["tasks"], json!([]), "{gc}");
    assert_eq!(home.records()[0]["id"], record["id"]);
}

/// A moment long before any test ran.
const LONG_AGO: &str = "2020-01-01T00:00:00.000Z";

/// Rewrites the record of `id` the way a record of a task started (and, if it has ended,
/// ended) long ago looks on disk: ages it without waiting. Nothing else writes the record
/// meanwhile: its task is a long `sleep`.
fn backdate(home: &Home, id: &str) {
    let path = home.path().join("tasks").join(format!("{id}.json"));
    let mut record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for field in ["startedAt", "endedAt"] {
        if record[field].is_string() {
            record[field] = json!(LONG_AGO);
        }
    }
    let mut bytes = serde_json::to_vec_pretty(&record).unwrap();
    bytes.push(b'\n');
    std::fs::write(&path, bytes).unwrap();
}
