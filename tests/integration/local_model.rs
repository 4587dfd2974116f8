//! End-to-end against a real model server nobody here wrote: `--provider local`, which starts
//! llama.cpp's `llama-server` with the default Qwen2.5-Coder model from the cache
//! `scripts/local-model build` fills. Ignored by the default `cargo test`; `.ci/run` builds
//! the cache and runs these with `--ignored`.
//!
//! A small model's wording varies, so most of these assert structure: which tools were called
//! with which argument types, that there is a final answer, the exit codes, and that the server
//! is gone after the run. One asserts the answer itself: the README's first job.

use serde_json::Value;

use crate::support::procs::assert_gone_soon;
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

/// [`zero`] with this machine's model cache: `zero` gives each command a private `HOME`, so
/// the cache beneath the real one is named (`ZERO_LOCAL_MODEL_CACHE`, when set, passes through).
fn local_provider_zero() -> assert_cmd::Command {
    let mut cmd = zero();
    let cache_home = std::env::var_os("XDG_CACHE_HOME").map_or_else(
        || std::path::Path::new(&std::env::var_os("HOME").unwrap()).join(".cache"),
        std::path::PathBuf::from,
    );
    cmd.env("XDG_CACHE_HOME", cache_home);
    cmd
}

/// `zero exec --provider local` in `workspace`, with its own data directory `home` (so the
/// test can look for its server's processes by that path), offered only `read_file` (a short
/// prompt keeps the first turn fast and the small model's choices few).
fn local_zero(workspace: &tempfile::TempDir, home: &tempfile::TempDir) -> assert_cmd::Command {
    let mut cmd = local_provider_zero();
    cmd.env("ZERO_HOME", home.path())
        .env("ZERO_STREAM_IDLE_TIMEOUT_MS", "300000")
        .current_dir(workspace.path())
        .args([
            "exec",
            "--provider",
            "local",
            "--enabled-tools",
            "read_file",
        ]);
    cmd
}

/// A small model calls a tool reliably only when told which one. The file is not named by its
/// path, so zero does not read it up front (see `agent::first_reads`): the call is the model's
/// own, found in the prompt's file listing.
const QUESTION: &str = "Call the read_file tool on the one Rust file in the src directory, then \
                        tell me what the function add in that file computes.";

/// The README's first command: the default local model on `examples/hello`, whose answer names
/// the subtraction where an addition was meant; and the server is gone once the run is.
#[test]
#[ignore = "needs the local model: scripts/local-model build"]
fn the_readme_job_on_the_hello_example_names_the_subtraction() {
    let home = tempfile::tempdir().unwrap();
    let hello = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hello");
    let output = local_provider_zero()
        .env("ZERO_HOME", home.path())
        .env("ZERO_STREAM_IDLE_TIMEOUT_MS", "300000")
        .args(["exec", "--provider", "local", "-C"])
        .arg(&hello)
        .arg("Is there a bug in src/lib.rs?")
        .assert()
        .code(0);
    let answer = String::from_utf8_lossy(&output.get_output().stdout).to_lowercase();
    assert!(
        ["subtract", "a - b", "difference", "minus"]
            .iter()
            .any(|word| answer.contains(word)),
        "the answer does not name the subtraction: {answer}"
    );
    assert_gone_soon(home.path().to_str().unwrap());
}

#[test]
#[ignore = "needs the local model: scripts/local-model build"]
fn a_real_model_reads_a_file_to_answer() {
    let (ws, home) = (workspace(), tempfile::tempdir().unwrap());
    let output = local_zero(&ws, &home)
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
    assert!(
        !call["id"].as_str().unwrap().starts_with("zero_read_"),
        "the model's own call, not a read zero made for it: {call}"
    );
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["status"], "ok", "{result}");
    let final_text = events
        .iter()
        .find(|e| e["type"] == "final")
        .and_then(|e| e["text"].as_str())
        .unwrap_or_default();
    assert!(!final_text.trim().is_empty(), "an empty final answer");
    assert_gone_soon(home.path().to_str().unwrap());
}

#[test]
#[ignore = "needs the local model: scripts/local-model build"]
fn in_text_mode_stdout_is_only_the_answer() {
    let (ws, home) = (workspace(), tempfile::tempdir().unwrap());
    let output = local_zero(&ws, &home).arg(QUESTION).assert().code(0);
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
#[ignore = "needs the local model: scripts/local-model build"]
fn max_turns_holds_against_a_model_that_calls_tools() {
    let (ws, home) = (workspace(), tempfile::tempdir().unwrap());
    let output = local_zero(&ws, &home)
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
/// server's own grammar (`response_format`), so even a small model produces it.
#[test]
#[ignore = "needs the local model: scripts/local-model build"]
fn a_real_model_answers_in_the_schemas_shape() {
    let (ws, home) = (workspace(), tempfile::tempdir().unwrap());
    let schema = ws.path().join("verdict.schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"verdict": {"enum": ["bug", "no_bug"]}},
            "required": ["verdict"], "additionalProperties": false}"#,
    )
    .unwrap();
    let output = local_zero(&ws, &home)
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
