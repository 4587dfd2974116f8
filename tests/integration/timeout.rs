//! `--timeout`: one wall-clock deadline for the whole run, children included. Through the real
//! binary, against a model that never finishes.

use std::process::Stdio;
use std::time::Instant;

use serde_json::json;

use crate::support::fake_model::{CHILD, FakeModel, Reply, Route, Script};
use crate::support::procs::{assert_gone_soon, nonce};
use crate::support::runs::{Exec, Home, background, stall};
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{
    Wire, assert_flag_rejected, assert_stream_contract, events, types, zero_std_with,
};

#[test]
fn a_run_past_its_deadline_is_stopped_and_exits_4() {
    let home = Home::new();
    let server = FakeModel::start(Script::new().reply(stall()));
    let started = Instant::now();
    let (code, events) = Exec::start_with(&server, &home, &["--timeout", "1s"]).finish();
    assert_eq!(code, 4, "{events:?}");
    assert_stream_contract(&events, 4);
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(error["code"], "timeout");
    assert_eq!(events.last().unwrap()["status"], "incomplete");
    // Not a timing assertion: only that the deadline, not the stalled stream, ended it.
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
}

#[test]
fn the_deadline_stops_background_tasks_and_specialists_which_receive_it() {
    let nonce = nonce();
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(Reply::tool_call("bash", json!({"command": "env"})))
                    .reply(background(&format!("sleep {nonce}")))
                    .reply(stall()),
            )
            .reply(background(&format!("sleep {nonce}")))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Wait.", "run_in_background": true}),
            ))
            .reply(stall()),
    );
    let (code, events) = Exec::start_with(&server, &home, &["--timeout", "4s"]).finish();
    assert_eq!(code, 4, "{events:?}");
    assert_stream_contract(&events, 4);
    assert_gone_soon(&nonce);
    let finished: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "task_finished")
        .map(|e| e["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(finished, ["killed", "killed"], "{events:?}");
    // The child got the parent's deadline as an absolute time.
    let child: String = server
        .requests()
        .iter()
        .filter(|r| r.raw_body.contains(CHILD))
        .map(|r| r.raw_body.clone())
        .collect();
    assert!(child.contains("ZERO_DEADLINE_UNIX_MS="), "{child}");
}

#[test]
fn a_timeout_that_is_not_a_positive_duration_is_a_usage_error() {
    assert_flag_rejected("--timeout", &["0", "0s", "-1s", "soon", "1 fortnight"]);
}

#[test]
fn the_config_file_can_set_the_timeout_and_a_bad_one_is_refused() {
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir(config.path().join("zero")).unwrap();
    let file = config.path().join("zero/config.toml");
    std::fs::write(&file, "timeout = \"1s\"\n").unwrap();
    let server = FakeModel::start(Script::new().reply(stall()));
    let output = zero_std_with(&server, Wire::OpenAi)
        .env("XDG_CONFIG_HOME", config.path())
        .env("ZERO_STREAM_IDLE_TIMEOUT_MS", "600000")
        .args(["exec", "-o", "json", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["status"], "incomplete");
    assert_eq!(summary["errors"][0]["code"], "timeout");

    std::fs::write(&file, "timeout = \"soon\"\n").unwrap();
    let output = zero_std_with(&server, Wire::OpenAi)
        .env("XDG_CONFIG_HOME", config.path())
        .args(["exec", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`timeout` in config.toml"));
}

#[test]
fn the_deadline_ends_a_run_still_reading_its_prompt() {
    let home = Home::new();
    let server = FakeModel::start(Script::new().reply(Reply::text("never asked")));
    // `-` reads the prompt from stdin, which this test holds open and never writes to.
    let mut child = zero_std_with(&server, Wire::OpenAi)
        .env("ZERO_HOME", home.path())
        .args(["exec", "-o", "stream-json", "--timeout", "1s", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take().unwrap();
    let status = wait_for("zero to exit at its deadline", DEADLINE, || {
        child.try_wait().unwrap()
    });
    assert_eq!(status.code(), Some(4), "{status:?}");
    let mut stdout = Vec::new();
    std::io::Read::read_to_end(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    let events = events(&stdout);
    assert_stream_contract(&events, 4);
    assert_eq!(types(&events), ["error", "run_end"]);
    assert_eq!(events[0]["code"], "timeout");
    assert!(server.requests().is_empty());
}
