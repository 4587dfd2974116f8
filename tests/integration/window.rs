//! Knowing the context window: from the flag, config.toml, the server (llama.cpp's `/props`,
//! vLLM's `/v1/models`), the table of known models, or the default — and tool results sized
//! to it. Through the real binary.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::{Wire, assert_flag_rejected, events, zero_std_with};

/// `zero exec -o stream-json` against `server` in `workspace` with `flags` (and `env`); the
/// exit code and the events.
fn run(
    server: &FakeModel,
    workspace: &Path,
    flags: &[&str],
    env: &[(&str, &str)],
) -> (i32, Vec<Value>) {
    let output = zero_std_with(server, Wire::OpenAi)
        .envs(env.iter().copied())
        .args(["exec", "-o", "stream-json", "-C"])
        .arg(workspace)
        .args(flags)
        .arg("go")
        .output()
        .unwrap();
    (output.status.code().unwrap(), events(&output.stdout))
}

/// A turn with a tool call, then an answer: the run waits for its window after the first
/// response (a one-turn run may end before the server answered, and then reports none).
fn two_turns(script: Script) -> Script {
    script
        .reply(Reply::tool_call("glob", json!({"pattern": "*"})))
        .reply(Reply::text("hi"))
}

/// The `contextWindow` of `run_end`.
fn window_of(events: &[Value]) -> Value {
    events
        .iter()
        .find(|e| e["type"] == "run_end")
        .unwrap_or_else(|| panic!("no run_end: {events:?}"))["contextWindow"]
        .clone()
}

#[test]
fn the_window_comes_from_llama_cpp_props_else_from_vllm_model_list() {
    let workspace = tempfile::tempdir().unwrap();
    let llama = FakeModel::start(two_turns(
        Script::new()
            .props(json!({"default_generation_settings": {"n_ctx": 4096}}))
            .models(json!({"data": [{"id": "fake-model", "max_model_len": 9999}]})),
    ));
    let (code, events) = run(&llama, workspace.path(), &[], &[]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(
        window_of(&events),
        json!({"tokens": 4096, "source": "server"})
    );

    let vllm = FakeModel::start(two_turns(Script::new().models(
        json!({"object": "list", "data": [
            {"id": "other", "max_model_len": 1_000_000},
            {"id": "fake-model", "max_model_len": 8192},
        ]}),
    )));
    let (code, events) = run(&vllm, workspace.path(), &[], &[]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(
        window_of(&events),
        json!({"tokens": 8192, "source": "server"})
    );
    assert_eq!(vllm.probes().len(), 2, "/props and /v1/models, once each");
}

#[test]
fn the_flag_and_the_config_file_win_and_the_server_is_not_asked() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(two_turns(two_turns(
        Script::new().props(json!({"default_generation_settings": {"n_ctx": 4096}})),
    )));
    let (_, events) = run(
        &server,
        workspace.path(),
        &["--context-window", "2048"],
        &[],
    );
    assert_eq!(
        window_of(&events),
        json!({"tokens": 2048, "source": "flag"})
    );

    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("zero")).unwrap();
    std::fs::write(
        config.path().join("zero/config.toml"),
        "context_window = 65536\n",
    )
    .unwrap();
    let config_home = config.path().to_str().unwrap();
    let (_, events) = run(
        &server,
        workspace.path(),
        &[],
        &[("XDG_CONFIG_HOME", config_home)],
    );
    assert_eq!(
        window_of(&events),
        json!({"tokens": 65536, "source": "config"})
    );
    assert!(server.probes().is_empty(), "{:?}", server.probes());
}

#[test]
fn without_a_server_answer_the_table_then_the_default_decide() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(two_turns(two_turns(Script::new())));
    let (_, events) = run(&server, workspace.path(), &[], &[]);
    assert_eq!(
        window_of(&events),
        json!({"tokens": 128_000, "source": "default"})
    );
    let (_, events) = run(
        &server,
        workspace.path(),
        &[],
        &[("ZERO_MODEL", "claude-sonnet-4-5")],
    );
    assert_eq!(
        window_of(&events),
        json!({"tokens": 200_000, "source": "known_model"})
    );
}

#[test]
fn a_small_window_gets_small_tool_results() {
    let workspace = tempfile::tempdir().unwrap();
    let line = "0123456789abcdef".repeat(4);
    let big: String = (0..1000).map(|n| format!("{n:04} {line}\n")).collect();
    std::fs::write(workspace.path().join("big.txt"), &big).unwrap();
    let server = FakeModel::start(
        Script::new()
            .props(json!({"default_generation_settings": {"n_ctx": 2048}}))
            .reply(Reply::tool_call("read_file", json!({"path": "big.txt"})))
            .reply(Reply::text("read it")),
    );
    let (code, events) = run(&server, workspace.path(), &[], &[]);
    assert_eq!(code, 0, "{events:?}");
    let requests = server.requests();
    let messages = requests[1].body["messages"].as_array().unwrap();
    let result = messages.last().unwrap()["content"].as_str().unwrap();
    // A third of a 2048-token window, some 2.7 KB, not the 69 KB file.
    assert!(result.len() < 3200, "{} bytes", result.len());
    assert!(
        result.contains("to fit the model's context window"),
        "{result}"
    );
    assert!(
        result.contains("0000 0123") && result.contains("0999 0123"),
        "{result}"
    );
}

#[test]
fn a_window_below_1024_tokens_is_a_usage_error() {
    assert_flag_rejected("--context-window", &["1023", "0", "-5", "big"]);
}
