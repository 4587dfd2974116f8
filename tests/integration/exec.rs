//! `zero exec` running real jobs through the real binary against the fake model server: the
//! agent loop, the three output formats, exit codes, error classes and both wires.

use std::time::Duration;

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{
    Wire, assert_stream_contract, events, types, zero_anthropic, zero_openai, zero_std_with,
};

fn workspace() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn run_stream(cmd: &mut assert_cmd::Command, code: i32) -> Vec<Value> {
    let output = cmd.arg("-o").arg("stream-json").assert().code(code);
    let events = events(&output.get_output().stdout);
    assert_stream_contract(&events, code);
    events
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn a_multi_turn_job_edits_a_file_and_runs_a_command() {
    let ws = workspace();
    std::fs::write(ws.path().join("notes.txt"), "status: todo\n").unwrap();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "edit_file",
                json!({"path": "notes.txt", "old_string": "todo", "new_string": "done"}),
            ))
            .reply(Reply::tool_call(
                "bash",
                json!({"command": "cat notes.txt; echo ran >> log.txt"}),
            ))
            .reply(Reply::text("The note now says done.")),
    );
    let events = run_stream(
        zero_openai(&server)
            .args(["exec", "--auto", "medium", "mark the note done"])
            .current_dir(ws.path()),
        0,
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("notes.txt")).unwrap(),
        "status: done\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("log.txt")).unwrap(),
        "ran\n"
    );
    let results = of_type(&events, "tool_result");
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["status"] == "ok"), "{results:?}");
    assert!(
        results[1]["output"]
            .as_str()
            .unwrap()
            .contains("status: done")
    );
    assert_eq!(
        of_type(&events, "final")[0]["text"],
        "The note now says done."
    );
    let end = events.last().unwrap();
    assert_eq!(end["status"], "success");
    assert_eq!(end["turns"], 3);
    assert_eq!(end["usage"]["totalTokens"], 45);

    // What zero sent: the prompt, the tools, and each tool result answering its call.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = &requests[0].body;
    assert_eq!(first["model"], "fake-model");
    assert_eq!(first["stream"], true);
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"bash") && offered.contains(&"edit_file"),
        "{offered:?}"
    );
    let last_messages = requests[2].body["messages"].as_array().unwrap();
    let tool_messages: Vec<&Value> = last_messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_messages.len(), 2);
    assert_eq!(tool_messages[0]["tool_call_id"], "call_fake_0");
    assert!(
        tool_messages[1]["content"]
            .as_str()
            .unwrap()
            .contains("exit code: 0")
    );
}

#[test]
fn text_mode_prints_only_the_answer_and_progress_goes_to_stderr() {
    let ws = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("list_directory", json!({})).with_text("Looking."))
            .reply(Reply::reasoning("thinking hard", "Nothing here.")),
    );
    zero_openai(&server)
        .args(["exec", "what is here?"])
        .current_dir(ws.path())
        .assert()
        .success()
        .stdout("Nothing here.\n")
        .stderr(predicate::str::contains("▸ list_directory"));
}

#[test]
fn json_mode_prints_one_summary_object() {
    let ws = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("glob", json!({"pattern": "*.rs"})))
            .reply(Reply::text("No Rust files.")),
    );
    let output = zero_openai(&server)
        .args(["exec", "-o", "json", "find rust files"])
        .current_dir(ws.path())
        .assert()
        .success();
    let summary: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    assert_eq!(summary["status"], "success");
    assert_eq!(summary["exitCode"], 0);
    assert_eq!(summary["finalText"], "No Rust files.");
    assert_eq!(summary["turns"], 2);
    assert_eq!(summary["toolCalls"][0]["name"], "glob");
    assert_eq!(summary["toolCalls"][0]["status"], "ok");
    assert_eq!(summary["errors"], json!([]));
}

#[test]
fn output_last_message_is_written_in_every_format() {
    for format in ["text", "json", "stream-json"] {
        let ws = workspace();
        let server = FakeModel::start(Script::new().reply(Reply::text("the answer")));
        zero_openai(&server)
            .args([
                "exec",
                "-o",
                format,
                "--output-last-message",
                "out/answer.md",
                "q",
            ])
            .current_dir(ws.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains("out"));
        std::fs::create_dir(ws.path().join("out")).unwrap();
        zero_openai(&server)
            .args([
                "exec",
                "-o",
                format,
                "--output-last-message",
                "out/answer.md",
                "q",
            ])
            .current_dir(ws.path())
            .assert()
            .success();
        assert_eq!(
            std::fs::read_to_string(ws.path().join("out/answer.md")).unwrap(),
            "the answer"
        );
    }
}

#[test]
fn max_turns_ends_incomplete_with_a_summary_and_exit_4() {
    let ws = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("list_directory", json!({})))
            .reply(Reply::tool_call("list_directory", json!({})))
            .reply(Reply::text(
                "I listed the directory twice; nothing else done.",
            )),
    );
    let events = run_stream(
        zero_openai(&server)
            .args(["exec", "--max-turns", "2", "keep going"])
            .current_dir(ws.path()),
        4,
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[2].body.get("tools").is_none(),
        "the summary request offers no tools"
    );
    assert_eq!(
        of_type(&events, "final")[0]["text"],
        "I listed the directory twice; nothing else done."
    );
    assert_eq!(of_type(&events, "error")[0]["code"], "incomplete");
    assert_eq!(events.last().unwrap()["status"], "incomplete");
}

#[test]
fn parallel_read_only_calls_report_in_the_models_order() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(ws.path().join("b.txt"), "beta\n").unwrap();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_calls(vec![
                ("read_file", json!({"path": "a.txt"})),
                ("read_file", json!({"path": "b.txt"})),
                ("grep", json!({"pattern": "beta"})),
            ]))
            .reply(Reply::text("done")),
    );
    let events = run_stream(
        zero_openai(&server)
            .args(["exec", "read both"])
            .current_dir(ws.path()),
        0,
    );
    let kinds: Vec<&str> = types(&events)
        .into_iter()
        .filter(|t| t.starts_with("tool_"))
        .collect();
    assert_eq!(
        kinds,
        [
            "tool_call",
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            "tool_result"
        ]
    );
    let results = of_type(&events, "tool_result");
    assert!(results[0]["output"].as_str().unwrap().contains("alpha"));
    assert!(results[1]["output"].as_str().unwrap().contains("beta"));
    let tool_messages: Vec<Value> = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect();
    let ids: Vec<&str> = tool_messages
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_fake_0", "call_fake_1", "call_fake_2"]);
}

#[test]
fn bad_tool_calls_become_error_results_the_model_can_fix() {
    let ws = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call_raw("read_file", "{\"path\": \"a.txt\""))
            .reply(Reply::tool_call("no_such_tool", json!({})))
            .reply(Reply::tool_call("read_file", json!({"path": 42})))
            .reply(Reply::tool_call(
                "write_file",
                json!({"path": "x", "content": "y"}),
            ))
            .reply(Reply::text("gave up")),
    );
    let events = run_stream(
        zero_openai(&server)
            .args(["exec", "try things"])
            .current_dir(ws.path()),
        0,
    );
    let results = of_type(&events, "tool_result");
    assert_eq!(results.len(), 4);
    assert!(
        results.iter().all(|r| r["status"] == "error"),
        "{results:?}"
    );
    let text = |i: usize| results[i]["output"].as_str().unwrap().to_string();
    assert!(text(0).contains("not valid JSON"), "{}", text(0));
    assert!(
        text(1).contains("unknown tool `no_such_tool`"),
        "{}",
        text(1)
    );
    assert!(text(2).contains("invalid type"), "{}", text(2));
    assert!(text(3).contains("--auto medium"), "{}", text(3));
    let calls = of_type(&events, "tool_call");
    assert_eq!(
        calls[0]["args"], "{\"path\": \"a.txt\"",
        "unparseable args are kept raw"
    );
    assert_eq!(calls[1]["sideEffect"], "unknown");
    let denial = of_type(&events, "permission_decision");
    assert_eq!(denial.len(), 1);
    assert_eq!(denial[0]["name"], "write_file");
    assert_eq!(denial[0]["decision"], "deny");
    assert!(!ws.path().join("x").exists());
}

#[test]
fn the_anthropic_wire_runs_a_job_with_tools() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("read_file", json!({"path": "a.txt"})))
            .reply(Reply::text("It says alpha.")),
    );
    let events = run_stream(
        zero_anthropic(&server)
            .env("ANTHROPIC_API_KEY", "sk-ant-test-key-0123456789abcdef")
            .args(["exec", "what does a.txt say?"])
            .current_dir(ws.path()),
        0,
    );
    assert_eq!(events[0]["provider"], "anthropic");
    assert_eq!(of_type(&events, "final")[0]["text"], "It says alpha.");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(
        requests[0].header("x-api-key"),
        Some("sk-ant-test-key-0123456789abcdef")
    );
    let second = &requests[1].body["messages"];
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
}

#[test]
fn an_api_key_goes_only_in_its_header_and_never_into_output() {
    let ws = workspace();
    let key = "sk-test-secret-0123456789abcdefghij";
    let server =
        FakeModel::start(Script::new().reply(Reply::error(401, &format!("bad key {key}"))));
    let output = zero_openai(&server)
        .env("OPENAI_API_KEY", key)
        .args(["exec", "-o", "stream-json", "hi"])
        .current_dir(ws.path())
        .assert()
        .code(3);
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).to_string();
    assert!(
        !stdout.contains(key) && !stderr.contains(key),
        "{stdout}\n{stderr}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "401 is not retried");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    assert!(!requests[0].raw_body.contains(key));
    let events = events(output.get_output().stdout.as_slice());
    assert_eq!(of_type(&events, "error")[0]["code"], "auth");
}

#[test]
fn each_provider_failure_has_its_code_and_exit_3() {
    let cases = [
        (
            Reply::error(400, "model `nope` does not exist"),
            "bad_request",
            "does not exist",
        ),
        (
            Reply::error(400, "This model's maximum context length is 8192 tokens"),
            "context_length",
            "context",
        ),
        (Reply::error(503, "overloaded"), "unavailable", "503"),
        (Reply::error(429, "slow down"), "rate_limited", "429"),
        (Reply::malformed(), "protocol", ""),
    ];
    for (reply, code, needle) in cases {
        let ws = workspace();
        let mut script = Script::new();
        for _ in 0..4 {
            script = script.reply(reply.clone());
        }
        let server = FakeModel::start(script);
        let events = run_stream(
            zero_openai(&server)
                .args(["exec", "hi"])
                .current_dir(ws.path()),
            3,
        );
        let error = of_type(&events, "error")[0];
        assert_eq!(error["code"], code, "{error}");
        assert!(
            error["message"].as_str().unwrap().contains(needle),
            "{error}"
        );
        assert_eq!(events.last().unwrap()["status"], "error");
    }
}

#[test]
fn transient_failures_are_retried_then_succeed() {
    let ws = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::error(500, "boom"))
            .reply(Reply::error(429, "wait").retry_after(1))
            .reply(Reply::cut_before_content())
            .reply(Reply::text("finally")),
    );
    zero_openai(&server)
        .args(["exec", "hi"])
        .current_dir(ws.path())
        .assert()
        .success()
        .stdout("finally\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests[2].at.duration_since(requests[1].at) >= Duration::from_secs(1),
        "Retry-After honoured"
    );
}

#[test]
fn an_unreachable_endpoint_fails_with_network_and_exit_3() {
    let ws = workspace();
    // A port nothing listens on: bind, note the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = FakeModel::start(Script::new());
    let output = zero_openai(&server)
        .env("ZERO_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("ZERO_MAX_ATTEMPTS", "2")
        .args(["exec", "-o", "json", "hi"])
        .current_dir(ws.path())
        .assert()
        .code(3);
    let summary: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    assert_eq!(summary["errors"][0]["code"], "network");
    assert_eq!(summary["errors"][0]["retryable"], true);
}

#[test]
fn no_provider_lists_what_to_set() {
    crate::support::zero::zero()
        .args(["exec", "hi"])
        .assert()
        .code(3)
        .stderr(
            predicate::str::contains("OPENAI_API_KEY")
                .and(predicate::str::contains("ANTHROPIC_API_KEY")),
        );
}

#[test]
fn an_inherited_stdin_that_never_closes_does_not_block_a_job() {
    let ws = workspace();
    let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
    let mut command = zero_std_with(&server, Wire::OpenAi);
    let mut child = command
        .args(["exec", "hi"])
        .current_dir(ws.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _held_open = child.stdin.take();
    let status = wait_for("zero exec to end, not block on stdin", DEADLINE, || {
        child.try_wait().unwrap()
    });
    assert!(status.success());
}

#[test]
fn stream_json_input_is_the_prompt() {
    let ws = workspace();
    let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
    zero_openai(&server)
        .args(["exec", "-i", "stream-json"])
        .write_stdin("{\"type\":\"prompt\",\"content\":\"first\"}\n{\"type\":\"message\",\"role\":\"user\",\"content\":\"second\"}\n")
        .current_dir(ws.path())
        .assert()
        .success();
    let body = &server.requests()[0].body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(user["content"], "first\n\nsecond");
}

#[test]
fn stream_json_input_with_another_role_names_the_accepted_one() {
    let ws = workspace();
    let server = FakeModel::start(Script::new());
    let output = zero_openai(&server)
        .args(["exec", "-i", "stream-json"])
        .write_stdin("{\"type\":\"message\",\"role\":\"system\",\"content\":\"x\"}\n")
        .current_dir(ws.path())
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&output.get_output().stderr);
    assert!(
        stderr.contains("line 1: role \"system\" is not accepted")
            && stderr.contains("must be \"user\""),
        "{stderr}"
    );
    assert!(!stderr.contains("Some("), "{stderr}");
    assert!(server.requests().is_empty());
}

#[test]
fn a_broken_stdout_is_an_internal_error_not_a_panic() {
    let ws = workspace();
    let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
    let mut command = zero_std_with(&server, Wire::OpenAi);
    let mut child = command
        .args(["exec", "-o", "stream-json", "hi"])
        .current_dir(ws.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("cannot write to stdout"), "{stderr}");
}

/// The body of the first request `zero exec PROMPT` sends from `ws` to a model that answers
/// at once.
fn first_request_of_a_plain_answer(ws: &tempfile::TempDir, prompt: &str) -> Value {
    let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
    zero_openai(&server)
        .args(["exec", prompt])
        .current_dir(ws.path())
        .assert()
        .success();
    server.requests()[0].body.clone()
}

#[test]
fn the_system_prompt_carries_the_workspace_and_project_guidance() {
    let ws = workspace();
    std::fs::write(ws.path().join("AGENTS.md"), "Always run cargo fmt.").unwrap();
    let body = &first_request_of_a_plain_answer(&ws, "hi");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(system.contains("Always run cargo fmt."));
    assert!(system.contains(&ws.path().canonicalize().unwrap().display().to_string()));
}

#[test]
fn guidance_that_links_out_of_the_project_is_never_sent() {
    let ws = workspace();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("id_rsa"), "PRIVATE KEY 42").unwrap();
    std::fs::create_dir(ws.path().join("docs")).unwrap();
    std::fs::write(ws.path().join("docs/zero.md"), "Always run cargo fmt.").unwrap();
    std::os::unix::fs::symlink(outside.path().join("id_rsa"), ws.path().join("AGENTS.md")).unwrap();
    std::os::unix::fs::symlink("docs/zero.md", ws.path().join("ZERO.md")).unwrap();
    let body = &first_request_of_a_plain_answer(&ws, "hi");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("PRIVATE KEY"), "{system}");
    assert!(
        system.contains("Always run cargo fmt."),
        "a link inside is read: {system}"
    );
}

#[test]
fn a_hosted_model_reads_the_files_a_prompt_names_itself() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let messages = first_request_of_a_plain_answer(&ws, "what does a.txt say?")["messages"].clone();
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user"],
        "only a small local model gets reads made for it"
    );
}

#[test]
fn a_command_that_times_out_is_killed_with_everything_it_started() {
    let ws = workspace();
    let nonce = crate::support::procs::nonce();
    let _cleanup = crate::support::procs::KillOnDrop(nonce.clone());
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "bash",
                json!({"command": format!("sleep {nonce} & sleep {nonce}; wait"), "timeout_ms": 500}),
            ))
            .reply(Reply::text("it timed out")),
    );
    let events = run_stream(
        zero_openai(&server)
            .env("ZERO_KILL_GRACE_MS", "300")
            .args(["exec", "--auto", "medium", "wait a while"])
            .current_dir(ws.path()),
        0,
    );
    let result = of_type(&events, "tool_result")[0];
    assert_eq!(result["status"], "error");
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("timed out after 500 ms"),
        "{result}"
    );
    crate::support::procs::assert_gone_soon(&nonce);
}

#[test]
fn commands_run_when_zero_starts_with_stdin_and_stderr_closed() {
    use std::os::unix::process::CommandExt;
    // Closed standard fds are the first numbers new fds get (zero's own pipes and sockets land
    // there): the guardian's report pipe must still arrive open on the guardian's stdin.
    let ws = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "bash",
                json!({"command": "echo from-the-command"}),
            ))
            .reply(Reply::text("done")),
    );
    let mut command = zero_std_with(&server, Wire::OpenAi);
    command
        .args(["exec", "--auto", "high", "run it"])
        .current_dir(ws.path());
    // SAFETY: only close, which is async-signal-safe, runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::close(0);
            libc::close(2);
            Ok(())
        });
    }
    let output = command.output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let requests = server.requests();
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result")["content"]
        .to_string();
    assert!(result.contains("from-the-command"), "{result}");
}

#[test]
fn usage_reports_cached_input_apart_on_both_wires_and_run_end_sums_it() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeModel::start(
            Script::new()
                .reply(
                    Reply::tool_call("update_plan", json!({"plan": []}))
                        .with_usage(100, 5)
                        .with_cached_tokens(60),
                )
                .reply(
                    Reply::text("done")
                        .with_usage(120, 3)
                        .with_cached_tokens(100),
                ),
        );
        let output = zero_std_with(&server, wire)
            .args(["exec", "-o", "stream-json", "go"])
            .output()
            .unwrap();
        let events = events(&output.stdout);
        assert_stream_contract(&events, 0);
        let usage: Vec<&Value> = events.iter().filter(|e| e["type"] == "usage").collect();
        assert_eq!(usage[0]["promptTokens"], 100, "{wire:?}: {usage:?}");
        assert_eq!(usage[0]["cachedInputTokens"], 60, "{wire:?}: {usage:?}");
        let total = &events.last().unwrap()["usage"];
        assert_eq!(total["promptTokens"], 220, "{wire:?}: {total}");
        assert_eq!(total["cachedInputTokens"], 160, "{wire:?}: {total}");
        assert_eq!(total["reasoningTokens"], 0, "{wire:?}: {total}");
    }
}
