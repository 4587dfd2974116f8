//! End-to-end against a real model server nobody here wrote: llama.cpp's `llama-server` with
//! Qwen2.5-Coder-0.5B (see `scripts/local-model`). Ignored by the default `cargo test`; `.ci/run`
//! starts the server and runs these with `--ignored`, pointing `ZERO_LOCAL_MODEL_URL` at it.
//!
//! A 0.5B model's wording varies, so these assert structure only: which tools were called with
//! which argument types, that there is a final answer, and the exit codes.

use serde_json::Value;

use crate::support::zero::{assert_stream_contract, events, zero};

/// A workspace with one small file whose content the model must read to answer.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "/// Adds two numbers.\npub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    )
    .unwrap();
    dir
}

/// `zero` pointed at the local server, offered only `read_file` (a short prompt keeps the
/// small model's first turn fast and its choices few).
fn local_zero(workspace: &tempfile::TempDir) -> assert_cmd::Command {
    let url = std::env::var("ZERO_LOCAL_MODEL_URL")
        .expect("set ZERO_LOCAL_MODEL_URL to the server's /v1 URL (scripts/local-model serve)");
    let mut cmd = zero();
    cmd.env("OPENAI_BASE_URL", url)
        .env("ZERO_STREAM_IDLE_TIMEOUT_MS", "120000")
        .current_dir(workspace.path())
        .args(["exec", "--enabled-tools", "read_file"]);
    cmd
}

/// A 0.5B model calls a tool reliably only when told which one and with what argument.
const QUESTION: &str = "Call the read_file tool with path src/lib.rs, then tell me what the \
                        function add in that file computes.";

#[test]
#[ignore = "needs a local model server: scripts/local-model serve"]
fn a_real_model_reads_a_file_to_answer() {
    let ws = workspace();
    let output = local_zero(&ws)
        .args(["-o", "stream-json", QUESTION])
        .assert()
        .code(0);
    let events = events(&output.get_output().stdout);
    assert_stream_contract(&events, 0);
    let call = events
        .iter()
        .find(|e| e["type"] == "tool_call" && e["name"] == "read_file")
        .expect("a read_file call");
    assert!(call["args"]["path"].is_string(), "{call}");
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["status"], "ok", "{result}");
    let final_text = events
        .iter()
        .find(|e| e["type"] == "final")
        .and_then(|e| e["text"].as_str())
        .unwrap_or_default();
    assert!(!final_text.trim().is_empty(), "an empty final answer");
}

#[test]
#[ignore = "needs a local model server: scripts/local-model serve"]
fn in_text_mode_stdout_is_only_the_answer() {
    let ws = workspace();
    let output = local_zero(&ws).arg(QUESTION).assert().code(0);
    let stdout = String::from_utf8(output.get_output().stdout.clone()).unwrap();
    assert!(!stdout.trim().is_empty());
    assert!(stdout.ends_with('\n'));
    for line in stdout.lines() {
        assert!(
            serde_json::from_str::<Value>(line).map_or(true, |v| !v.is_object()),
            "stdout carries an event: {line}"
        );
    }
    let stderr = String::from_utf8_lossy(&output.get_output().stderr);
    assert!(
        stderr.contains("read_file"),
        "progress goes to stderr: {stderr}"
    );
}

#[test]
#[ignore = "needs a local model server: scripts/local-model serve"]
fn max_turns_holds_against_a_model_that_calls_tools() {
    let ws = workspace();
    let output = local_zero(&ws)
        .args(["-o", "stream-json", "--max-turns", "1", QUESTION])
        .assert()
        .code(4);
    let events = events(&output.get_output().stdout);
    assert_stream_contract(&events, 4);
    assert_eq!(events.last().unwrap()["status"], "incomplete");
    let calls = events.iter().filter(|e| e["type"] == "tool_call").count();
    assert!(calls >= 1, "the one allowed turn called a tool");
    assert_eq!(
        events.last().unwrap()["turns"],
        2,
        "one tool turn, then the tool-less summary request"
    );
}

/// With `--output-schema`, a real llama.cpp server ends with a verdict in the schema's shape:
/// a prose answer goes back with its errors, and the retry is held to the schema by the
/// server's own grammar (`response_format`), so even a 0.5B model produces it.
#[test]
#[ignore = "needs a local model server: scripts/local-model serve"]
fn a_real_model_answers_in_the_schemas_shape() {
    let ws = workspace();
    let schema = ws.path().join("verdict.schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"verdict": {"enum": ["bug", "no_bug"]}},
            "required": ["verdict"], "additionalProperties": false}"#,
    )
    .unwrap();
    let output = local_zero(&ws)
        .args(["--max-output-tokens", "300", "--output-schema"])
        .arg(&schema)
        .arg("Read src/lib.rs with read_file. Does the function add have a bug?")
        .assert()
        .code(0);
    let stdout = String::from_utf8(output.get_output().stdout.clone()).unwrap();
    let verdict: Value = serde_json::from_str(stdout.trim_end()).expect("stdout is the JSON");
    assert!(
        verdict == serde_json::json!({"verdict": "bug"})
            || verdict == serde_json::json!({"verdict": "no_bug"}),
        "{verdict}"
    );
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
}
