//! Background shell tasks through the real binary: `bash` with `run_in_background`,
//! `TaskOutput`, `TaskStop`, the concurrency cap, and the end of a run that leaves a task
//! running (reported as killed, process gone, run directory gone).

use std::path::Path;

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script, TASK_ID};
use crate::support::procs::{assert_gone_soon, nonce};
use crate::support::runs::background;
use crate::support::zero::{assert_stream_contract, events, tool_outputs, zero_openai};

struct Run {
    events: Vec<Value>,
    stderr: String,
    zero_home: tempfile::TempDir,
}

fn run(server: &FakeModel, format: &str, code: i32, extra_env: &[(&str, &str)]) -> Run {
    let workspace = tempfile::tempdir().unwrap();
    let zero_home = tempfile::tempdir().unwrap();
    let mut cmd = zero_openai(server);
    cmd.args(["exec", "--auto", "medium", "-o", format, "go"])
        .current_dir(workspace.path())
        .env("ZERO_HOME", zero_home.path())
        .env("ZERO_KILL_GRACE_MS", "300");
    for (name, value) in extra_env {
        cmd.env(name, value);
    }
    let output = cmd.assert().code(code);
    let stdout = &output.get_output().stdout;
    let events = if format == "stream-json" {
        let events = events(stdout);
        assert_stream_contract(&events, code);
        events
    } else {
        vec![serde_json::from_slice(stdout).unwrap_or(Value::Null)]
    };
    Run {
        events,
        stderr: String::from_utf8_lossy(&output.get_output().stderr).into_owned(),
        zero_home,
    }
}

/// The run left no lease and no run directory behind, only task records and outputs.
fn assert_no_run_leftovers(zero_home: &Path) {
    let runs = zero_home.join("runs");
    let leftovers: Vec<_> = std::fs::read_dir(&runs)
        .map(|dir| dir.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        leftovers.is_empty(),
        "left in {}: {leftovers:?}",
        runs.display()
    );
}

fn records(zero_home: &Path) -> Vec<Value> {
    std::fs::read_dir(zero_home.join("tasks"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .collect()
}

#[test]
fn task_output_blocks_until_the_task_ends_and_reads_from_an_offset() {
    let server = FakeModel::start(
        Script::new()
            .reply(background("echo one; sleep 0.3; echo two"))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "block": true, "timeout_ms": 20000}),
            ))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "offset": 4}),
            ))
            .reply(Reply::text("both lines seen")),
    );
    let run = run(&server, "stream-json", 0, &[]);
    let outputs = tool_outputs(&run.events);
    assert!(outputs[0].contains("task_"), "{}", outputs[0]);
    assert!(outputs[1].contains("status: completed"), "{}", outputs[1]);
    assert!(
        outputs[1].contains("one") && outputs[1].contains("two"),
        "{}",
        outputs[1]
    );
    let from_offset = outputs[2].split_once("\noutput:").unwrap().1;
    let shown = from_offset.split_once('\n').unwrap().1;
    assert_eq!(shown.trim(), "two", "{}", outputs[2]);
    let kinds: Vec<&str> = run
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"task_started") && kinds.contains(&"task_finished"),
        "{kinds:?}"
    );
    let records = records(run.zero_home.path());
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "completed");
    assert_eq!(records[0]["exitCode"], 0);
    assert_no_run_leftovers(run.zero_home.path());
}

#[test]
fn task_stop_kills_a_running_task_and_reports_killed() {
    let nonce = nonce();
    let server = FakeModel::start(
        Script::new()
            .reply(background(&format!("sleep {nonce}")))
            .reply(Reply::tool_call("TaskStop", json!({"task_id": TASK_ID})))
            .reply(Reply::tool_call("TaskStop", json!({"task_id": TASK_ID})))
            .reply(Reply::text("stopped")),
    );
    let run = run(&server, "stream-json", 0, &[]);
    let outputs = tool_outputs(&run.events);
    assert!(outputs[1].contains("killed"), "{}", outputs[1]);
    assert!(
        outputs[2].contains("killed"),
        "stopping twice is not an error: {}",
        outputs[2]
    );
    assert_gone_soon(&nonce);
    assert_eq!(records(run.zero_home.path())[0]["status"], "killed");
}

#[test]
fn a_task_still_running_at_the_end_is_reported_killed_and_gone() {
    let nonce = nonce();
    let server = FakeModel::start(
        Script::new()
            .reply(background(&format!("sleep {nonce}")))
            .reply(Reply::text("started it"))
            .reply(Reply::text("finishing anyway")),
    );
    let run = run(&server, "stream-json", 0, &[]);
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        3,
        "the model is told once about the running task"
    );
    assert!(requests[2].raw_body.contains("still running"));
    let finished: Vec<&Value> = run
        .events
        .iter()
        .filter(|e| e["type"] == "task_finished")
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["status"], "killed");
    assert_eq!(run.events.last().unwrap()["status"], "success");
    assert_gone_soon(&nonce);
    assert_no_run_leftovers(run.zero_home.path());
    assert_eq!(records(run.zero_home.path())[0]["status"], "killed");
}

#[test]
fn killed_tasks_are_reported_in_text_and_json_too() {
    for format in ["text", "json"] {
        let nonce = nonce();
        let server = FakeModel::start(
            Script::new()
                .reply(background(&format!("sleep {nonce}")))
                .reply(Reply::text("a"))
                .reply(Reply::text("b")),
        );
        let run = run(&server, format, 0, &[]);
        if format == "json" {
            let tasks = &run.events[0]["tasks"];
            assert_eq!(tasks[0]["status"], "killed", "{}", run.events[0]);
        } else {
            assert!(run.stderr.contains("killed"), "{}", run.stderr);
        }
        assert_gone_soon(&nonce);
    }
}

#[test]
fn the_concurrency_cap_refuses_a_task_beyond_it() {
    let nonce = nonce();
    let server = FakeModel::start(
        Script::new()
            .reply(background(&format!("sleep {nonce}")))
            .reply(background(&format!("sleep {nonce}")))
            .reply(Reply::text("a"))
            .reply(Reply::text("b")),
    );
    let run = run(
        &server,
        "stream-json",
        0,
        &[("ZERO_MAX_BACKGROUND_TASKS", "1")],
    );
    let errors: Vec<&Value> = run
        .events
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["status"] == "error")
        .collect();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]["output"].as_str().unwrap().contains("1"),
        "{}",
        errors[0]
    );
    assert_eq!(records(run.zero_home.path()).len(), 1);
    assert_gone_soon(&nonce);
}

#[test]
fn a_run_that_starts_no_task_creates_nothing_but_its_session() {
    let server = FakeModel::start(Script::new().reply(Reply::text("hi")));
    let run = run(&server, "stream-json", 0, &[]);
    let entries: Vec<String> = std::fs::read_dir(run.zero_home.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(entries, ["sessions"]);
    let sessions = std::fs::read_dir(run.zero_home.path().join("sessions")).unwrap();
    assert_eq!(sessions.count(), 1);
}
