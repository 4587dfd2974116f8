//! Running the real `zero` binary in tests: a clean environment, private directories, and a
//! provider pointed at a fake model server.

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

use super::fake_model::FakeModel;

/// Provider variables that must not leak in from the machine running the tests (or the
/// benchmark harness, which shares this list).
pub const PROVIDER_VARIABLES: [&str; 9] = [
    "ZERO_PROVIDER",
    "ZERO_MODEL",
    "ZERO_BASE_URL",
    "ZERO_API_KEY",
    "ZERO_MAX_OUTPUT_TOKENS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
];

/// `zero` with no provider configured, and its config, data and home directories private to
/// this command (kept for the test's life; the OS temp cleaner removes them).
pub fn zero() -> Command {
    Command::from_std(zero_std())
}

/// [`zero`] as a plain `std::process::Command`, for tests that manage the process themselves.
pub fn zero_std() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("zero"));
    for var in PROVIDER_VARIABLES {
        cmd.env_remove(var);
    }
    let home = private_dir();
    cmd.env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("ZERO_HOME", home.join("zero"))
        .env_remove("NO_COLOR");
    cmd
}

/// The wire a test talks to the fake model server with.
#[derive(Debug, Clone, Copy)]
pub enum Wire {
    /// OpenAI Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// [`zero_std`] talking `wire` to `server`, with fast retries.
pub fn zero_std_with(server: &FakeModel, wire: Wire) -> std::process::Command {
    let mut cmd = zero_std();
    let (provider, base_url, model) = match wire {
        Wire::OpenAi => ("openai", server.base_url_openai(), "fake-model"),
        Wire::Anthropic => ("anthropic", server.base_url_anthropic(), "fake-claude"),
    };
    cmd.env("ZERO_PROVIDER", provider)
        .env("ZERO_BASE_URL", base_url)
        .env("ZERO_MODEL", model)
        .env("ZERO_RETRY_BASE_MS", "10")
        .env("ZERO_RETRY_MAX_WAIT_MS", "2000")
        .env("ZERO_STREAM_IDLE_TIMEOUT_MS", "3000")
        .env("ZERO_FIRST_BYTE_TIMEOUT_MS", "5000");
    cmd
}

/// `zero` talking OpenAI Chat Completions to `server`.
pub fn zero_openai(server: &FakeModel) -> Command {
    Command::from_std(zero_std_with(server, Wire::OpenAi))
}

/// `zero` talking Anthropic Messages to `server`.
pub fn zero_anthropic(server: &FakeModel) -> Command {
    Command::from_std(zero_std_with(server, Wire::Anthropic))
}

fn private_dir() -> PathBuf {
    tempfile::tempdir().unwrap().keep()
}

/// The exit code and the events of a finished `-o stream-json` run, the stream's contract
/// checked against that code: for a run whose code is what the test asserts on.
pub fn stream_of(output: &std::process::Output) -> (i32, Vec<Value>) {
    let code = output
        .status
        .code()
        .expect("zero exited, not killed by a signal");
    let events = events(&output.stdout);
    assert_stream_contract(&events, code);
    (code, events)
}

/// Runs `cmd` (already asked for `-o stream-json`) and checks that it ends with `code` within
/// [`super::wait::DEADLINE`] and keeps the stream's contract; returns its events.
pub fn finished_stream(cmd: &mut Command, code: i32) -> Vec<Value> {
    let output = cmd.timeout(super::wait::DEADLINE).assert().code(code);
    let events = events(&output.get_output().stdout);
    assert_stream_contract(&events, code);
    events
}

/// The stream-json lines of `stdout`, parsed; panics on a line that is not JSON.
pub fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The output of every `tool_result` event, in order.
pub fn tool_outputs(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["output"].as_str().unwrap().to_string())
        .collect()
}

/// The `type` of each event.
pub fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// Checks the invariants every stream-json transcript keeps, and returns it for more checks:
/// one schema version and run id throughout, `run_start` at most once and first, exactly one
/// `run_end` and it is last with the given exit code, and every `tool_call` answered by one
/// `tool_result` with its id.
pub fn assert_stream_contract(events: &[Value], exit_code: i32) {
    assert!(!events.is_empty(), "no events");
    let run_id = &events[0]["runId"];
    for event in events {
        assert_eq!(event["schemaVersion"], 3, "{event}");
        assert_eq!(&event["runId"], run_id, "{event}");
    }
    let kinds = types(events);
    assert_eq!(
        kinds.iter().filter(|t| **t == "run_end").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(*kinds.last().unwrap(), "run_end", "{kinds:?}");
    assert_eq!(events.last().unwrap()["exitCode"], exit_code);
    let starts: Vec<usize> = (0..kinds.len())
        .filter(|i| kinds[*i] == "run_start")
        .collect();
    assert!(
        starts.len() <= 1 && starts.iter().all(|i| *i == 0),
        "{kinds:?}"
    );
    for (index, event) in events.iter().enumerate() {
        if event["type"] == "tool_call" {
            // Ids are unique within a turn; a later turn may reuse one.
            let answers = events[index + 1..]
                .iter()
                .take_while(|e| !(e["type"] == "tool_call" && e["id"] == event["id"]))
                .filter(|e| e["type"] == "tool_result" && e["id"] == event["id"])
                .count();
            assert_eq!(
                answers, 1,
                "tool_call {} answered {answers} times",
                event["id"]
            );
        }
    }
}

/// Checks that `zero exec --FLAG=VALUE hi` is a usage error (exit 2) naming the flag, for each
/// of `values`.
pub fn assert_flag_rejected(flag: &str, values: &[&str]) {
    for bad in values {
        let output = zero()
            .args(["exec", &format!("{flag}={bad}"), "hi"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{flag}={bad}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(flag), "{flag}={bad}: {stderr}");
    }
}
