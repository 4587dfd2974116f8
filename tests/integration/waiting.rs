//! Waiting on the model is never silent: every retry and every silence past the notice
//! threshold is a `retry` or `waiting` event in stream-json and a line on stderr in every
//! output format, with the attempt number and the reason.

use std::time::Duration;

use serde_json::Value;

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::wait::DEADLINE;
use crate::support::zero::{Wire, assert_stream_contract, events, zero_std_with};

/// `zero exec hi` against `server` with `format` (and `env`); checks it exits 0 and returns its
/// stdout and stderr.
fn run(server: &FakeModel, wire: Wire, format: &str, env: &[(&str, &str)]) -> (String, String) {
    let mut cmd = assert_cmd::Command::from_std(zero_std_with(server, wire));
    for (name, value) in env {
        cmd.env(name, value);
    }
    let output = cmd
        .args(["exec", "-o", format, "hi"])
        .timeout(DEADLINE)
        .assert()
        .code(0);
    let output = output.get_output();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// A server that fails twice (500, then 429) before it answers.
fn flaky() -> FakeModel {
    FakeModel::start(
        Script::new()
            .reply(Reply::error(500, "upstream exploded"))
            .reply(Reply::error(429, "slow down").retry_after(0))
            .reply(Reply::text("at last")),
    )
}

#[test]
fn each_retry_is_an_event_and_a_stderr_line_with_attempt_and_reason() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = flaky();
        let (stdout, stderr) = run(&server, wire, "stream-json", &[]);
        let events = events(stdout.as_bytes());
        assert_stream_contract(&events, 0);
        let retries = of_type(&events, "retry");
        assert_eq!(retries.len(), 2, "{wire:?}: {events:?}");
        let expected = [
            (1, "unavailable", "HTTP 500"),
            (2, "rate_limited", "HTTP 429"),
        ];
        for (retry, (attempt, code, status)) in retries.iter().zip(expected) {
            assert_eq!(retry["attempt"], attempt, "{retry}");
            assert_eq!(retry["maxAttempts"], 4, "{retry}");
            assert_eq!(retry["code"], code, "{retry}");
            assert!(
                retry["reason"].as_str().unwrap().contains(status),
                "{retry}"
            );
            assert!(retry["delayMs"].is_u64(), "{retry}");
        }
        assert_eq!(retries[1]["delayMs"], 0, "Retry-After: 0");
        // Before the answer, so a reader sees them as they happen.
        let position = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
        assert!(position("retry") < position("text"), "{events:?}");
        for (attempt, code) in [(1, "unavailable"), (2, "rate_limited")] {
            let line = format!("attempt {attempt} of 4 failed ({code})");
            assert!(stderr.contains(&line), "{wire:?}: no {line:?} in {stderr}");
        }
        assert!(stderr.contains("upstream exploded"), "{stderr}");
    }
}

#[test]
fn text_mode_says_each_retry_on_stderr_and_only_the_answer_on_stdout() {
    let server = flaky();
    let (stdout, stderr) = run(&server, Wire::OpenAi, "text", &[]);
    assert_eq!(stdout.trim(), "at last");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("trying again"))
        .collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].contains("attempt 1 of 4 failed (unavailable)"),
        "{stderr}"
    );
    assert!(lines[0].contains("HTTP 500"), "{stderr}");
    assert!(
        lines[1].contains("attempt 2 of 4 failed (rate_limited)"),
        "{stderr}"
    );
}

#[test]
fn a_slow_first_byte_is_a_waiting_event_and_a_stderr_line() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        // The headers come after 600 ms; zero is told to speak up after 100 ms of silence.
        let server = FakeModel::start(
            Script::new().reply(Reply::text("patience").delay(Duration::from_millis(600))),
        );
        let env = [
            ("ZERO_WAIT_NOTICE_MS", "100"),
            ("ZERO_FIRST_BYTE_TIMEOUT_MS", "20000"),
        ];
        let (stdout, stderr) = run(&server, wire, "stream-json", &env);
        let events = events(stdout.as_bytes());
        assert_stream_contract(&events, 0);
        let waits = of_type(&events, "waiting");
        let first = waits
            .first()
            .unwrap_or_else(|| panic!("{wire:?}: {events:?}"));
        assert_eq!(first["phase"], "first_byte", "{first}");
        assert_eq!(first["waitedMs"], 100, "{first}");
        assert_eq!(first["timeoutMs"], 20000, "{first}");
        assert_eq!(first["attempt"], 1, "{first}");
        assert_eq!(first["maxAttempts"], 4, "{first}");
        assert!(
            stderr.contains("waiting: no response from the model yet after 0.1s (attempt 1 of 4"),
            "{wire:?}: {stderr}"
        );
        assert!(of_type(&events, "retry").is_empty(), "{events:?}");
    }
}

#[test]
fn a_quick_answer_has_no_waiting_event() {
    let server = FakeModel::start(Script::new().reply(Reply::text("quick")));
    let (stdout, stderr) = run(&server, Wire::OpenAi, "stream-json", &[]);
    let events = events(stdout.as_bytes());
    assert!(of_type(&events, "waiting").is_empty(), "{events:?}");
    assert!(!stderr.contains("waiting"), "{stderr}");
}
