//! `--provider local` without a model: the cache holds a stand-in for llama-server
//! (`support/fake_llama_server.py`) that records how zero started it and speaks the endpoints
//! zero uses over the Unix socket zero gave it. What is real: the cache lookup, the start as a
//! runtime service (guardian, sandbox, lifeline), the socket, the requests, the stop.

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::procs::stat;
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{events, zero, zero_std};

/// A cache directory holding a fake server that behaves as `mode` says, and a model file.
/// The fake's record goes to the workspace, since the sandbox lets the server write only
/// there (at `--auto medium` and up) and in the run's temporary directory.
struct Cache {
    dir: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

impl Cache {
    /// A cache with nothing built in it.
    fn empty() -> Cache {
        Cache {
            dir: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
        }
    }

    /// A cache whose llama-server is the fake in `mode` (`fail`, `hang`, `serve`), with the
    /// default model's file beside it.
    fn with_fake(mode: &str) -> Cache {
        let cache = Cache::empty();
        let bin = cache.dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let script = include_str!("support/fake_llama_server.py")
            .replace("@MODE@", mode)
            .replace("@RECORD@", cache.record_path().to_str().unwrap());
        let server = bin.join("llama-server");
        std::fs::write(&server, script).unwrap();
        let mut permissions = std::fs::metadata(&server).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&server, permissions).unwrap();
        std::fs::write(
            cache
                .dir
                .path()
                .join("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
            "not a model",
        )
        .unwrap();
        cache
    }

    fn record_path(&self) -> PathBuf {
        self.workspace.path().join("record.json")
    }

    /// What the fake recorded, once it has.
    fn record(&self) -> Value {
        wait_for("the fake server's record", DEADLINE, || {
            let text = std::fs::read_to_string(self.record_path()).ok()?;
            serde_json::from_str(&text).ok()
        })
    }

    /// `zero exec --provider local --auto <auto>` with this cache, in its workspace.
    fn zero(&self, auto: &str) -> assert_cmd::Command {
        let mut cmd = zero();
        cmd.env("ZERO_LOCAL_MODEL_CACHE", self.dir.path())
            .current_dir(self.workspace.path())
            .args(["exec", "--provider", "local", "--auto", auto]);
        cmd
    }
}

/// Kills the recorded fake when the test ends, pass or fail.
struct KillPid(i32);

impl Drop for KillPid {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0), Signal::SIGKILL);
    }
}

/// Waits until process `pid` is gone (reaped or a zombie nobody waits for).
fn assert_gone(pid: i32) {
    wait_for(
        format!("the fake server {pid} to be gone"),
        Duration::from_secs(5),
        || stat(pid).is_none_or(|stat| stat.zombie()).then_some(()),
    );
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_missing_build_is_exit_3_naming_the_command_that_builds_it() {
    let cache = Cache::empty();
    for (model, command) in [
        (None, "`scripts/local-model build`"),
        (Some("local:0.5b"), "`scripts/local-model build 0.5b`"),
    ] {
        let mut cmd = cache.zero("medium");
        if let Some(model) = model {
            cmd.args(["--model", model]);
        }
        let output = cmd.args(["-o", "stream-json", "hi"]).assert().code(3);
        let output = output.get_output();
        let stderr = stderr_of(output);
        assert!(stderr.contains(command), "{stderr}");
        assert!(stderr.contains("is not built"), "{stderr}");
        let error = events(&output.stdout)
            .into_iter()
            .find(|e| e["type"] == "error")
            .unwrap();
        assert_eq!(error["code"], "config_error", "{error}");
    }
}

#[test]
fn the_local_provider_refuses_what_does_not_apply_to_it() {
    let cache = Cache::empty();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--model", "gpt-4.1"],
            "model \"gpt-4.1\" is not a local model: use local:0.5b or local:1.5b",
        ),
        (
            &["--base-url", "http://127.0.0.1:1/v1"],
            "--base-url does not apply to --provider local",
        ),
        (&[], "ZERO_LOCAL_TEMPLATE=\"fancy\" is not valid"),
    ];
    for (args, message) in cases {
        let output = cache
            .zero("medium")
            .env("ZERO_LOCAL_TEMPLATE", "fancy")
            .args(args)
            .arg("hi")
            .assert()
            .code(3);
        let stderr = stderr_of(output.get_output());
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[test]
fn the_local_provider_refuses_an_image_the_model_cannot_see() {
    let cache = Cache::with_fake("serve");
    let png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x02\x00\x00\x00\x02\x08\x06\0\0\0\0\0\0\0";
    std::fs::write(cache.workspace.path().join("shot.png"), png).unwrap();
    let output = cache
        .zero("medium")
        .args(["--image", "shot.png", "what is this?"])
        .assert()
        .code(2);
    let stderr = stderr_of(output.get_output());
    assert!(
        stderr.contains("--image: the model cannot see images")
            && stderr.contains("--provider local"),
        "{stderr}"
    );
    assert!(
        !cache.record_path().exists(),
        "the server is not started for a run refused first"
    );
}

#[test]
fn a_missing_prompt_is_reported_before_a_bad_local_setting() {
    let cache = Cache::empty();
    let output = cache
        .zero("medium")
        .env("ZERO_LOCAL_TEMPLATE", "fancy")
        .assert()
        .code(2);
    let stderr = stderr_of(output.get_output());
    assert!(stderr.contains("no prompt given"), "{stderr}");
}

#[test]
fn a_server_that_fails_to_start_is_exit_3_with_the_end_of_its_stderr() {
    let cache = Cache::with_fake("fail");
    let output = cache.zero("medium").arg("hi").assert().code(3);
    let stderr = stderr_of(output.get_output());
    assert!(
        stderr.contains("the local model could not start: llama-server ended while loading"),
        "{stderr}"
    );
    assert!(stderr.contains("exited with status 1"), "{stderr}");
    assert!(
        stderr.contains("error: failed to load model (a test's fake)"),
        "{stderr}"
    );
}

/// The run's own server, over its socket: the answer comes back, no key is sent, the server
/// could not open an IPv4 socket (where the kernel can block it) even at `--auto high`, and
/// it is gone when the run is.
#[test]
fn a_run_talks_to_its_own_server_over_a_socket_and_leaves_none_behind() {
    let mut network = Vec::new();
    for auto in ["medium", "high"] {
        let cache = Cache::with_fake("serve");
        let output = cache
            .zero(auto)
            .env("ZERO_API_KEY", "sk-never-sent")
            .args(["-o", "stream-json", "hello"])
            .assert()
            .code(0);
        let record = cache.record();
        let _kill = KillPid(record["pid"].as_i64().unwrap() as i32);
        let events = events(&output.get_output().stdout);
        let final_text = events.iter().find(|e| e["type"] == "final").unwrap()["text"].clone();
        assert_eq!(final_text, "the answer from the local server");
        let run_start = events.iter().find(|e| e["type"] == "run_start").unwrap();
        assert_eq!(run_start["model"], "local:1.5b");
        network.push((
            run_start["sandbox"]["network"].clone(),
            record["inet"].clone(),
        ));

        let args: Vec<&str> = record["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let value_of = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
        assert!(
            value_of("--model").ends_with("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
            "{args:?}"
        );
        assert!(value_of("--host").ends_with("/tmp/llama.sock"), "{args:?}");
        assert!(args.contains(&"--offline"), "{args:?}");
        assert!(args.contains(&"--chat-template"), "{args:?}");

        let request = &record["requests"][0];
        assert_eq!(request["path"], "/v1/chat/completions");
        assert_eq!(request["body"]["model"], "local:1.5b");
        let headers = request["headers"].as_object().unwrap();
        assert!(
            !headers
                .keys()
                .any(|h| h.eq_ignore_ascii_case("authorization")),
            "a key reached the local server: {headers:?}"
        );
        assert_gone(record["pid"].as_i64().unwrap() as i32);
    }
    // At --auto medium the run's commands have no network where the kernel can block it, so
    // the server has none either; at --auto high the commands have it, the server still not.
    let (low_commands, low_server) = &network[0];
    let (high_commands, high_server) = &network[1];
    assert_eq!(
        low_server,
        if low_commands == "blocked" {
            "blocked"
        } else {
            "open"
        }
    );
    assert_eq!(high_commands, "open");
    assert_eq!(high_server, low_server, "{network:?}");
}

/// Stopped while its server loads, by a signal or SIGKILL: the server goes too.
fn stopped_while_loading(signal: Signal) {
    let cache = Cache::with_fake("hang");
    let mut child = zero_std()
        .env("ZERO_LOCAL_MODEL_CACHE", cache.dir.path())
        .current_dir(cache.workspace.path())
        .args(["exec", "--provider", "local", "--auto", "medium", "hi"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = cache.record()["pid"].as_i64().unwrap() as i32;
    let _kill = KillPid(pid);
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let status = wait_for("zero to exit", DEADLINE, || child.try_wait().unwrap());
    if signal != Signal::SIGKILL {
        assert_eq!(status.code(), Some(128 + signal as i32));
    }
    assert_gone(pid);
}

#[test]
fn sigterm_while_the_server_loads_stops_it() {
    stopped_while_loading(Signal::SIGTERM);
}

#[test]
fn sigkill_of_zero_while_the_server_loads_leaves_no_server_behind() {
    stopped_while_loading(Signal::SIGKILL);
}

/// The first chat request the fake server recorded.
fn first_chat_request(record: &Value) -> Value {
    record["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "/v1/chat/completions")
        .unwrap()
        .clone()
}

/// The roles and tool calls of a recorded request's messages, as `role:tool(args)` strings.
fn message_outline(request: &Value) -> Vec<String> {
    request["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let calls: Vec<String> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    format!(
                        "{}({})",
                        c["function"]["name"].as_str().unwrap(),
                        c["function"]["arguments"].as_str().unwrap()
                    )
                })
                .collect();
            format!("{}:{}", m["role"].as_str().unwrap(), calls.join(","))
        })
        .collect()
}

#[test]
fn files_the_prompt_names_are_read_before_the_first_request() {
    let cache = Cache::with_fake("serve");
    let ws = cache.workspace.path();
    std::fs::write(ws.join("tools.py"), "def one():\n    return 1\n").unwrap();
    std::fs::write(ws.join("other.py"), "x = 2\n").unwrap();
    let output = cache
        .zero("medium")
        .args([
            "-o",
            "stream-json",
            "How many functions are in `tools.py`? Not ../tools.py or missing.py.",
        ])
        .assert()
        .code(0);
    let record = cache.record();
    let _kill = KillPid(record["pid"].as_i64().unwrap() as i32);
    let first = &first_chat_request(&record);
    assert_eq!(
        message_outline(first),
        [
            "system:",
            "user:",
            r#"assistant:read_file({"path":"tools.py"})"#,
            "tool:"
        ]
    );
    let content = first["body"]["messages"][3]["content"].as_str().unwrap();
    assert!(content.contains("def one():"), "{content}");
    // The read is an ordinary call: the caller sees it in the event stream.
    let events = events(&output.get_output().stdout);
    let call = events.iter().find(|e| e["type"] == "tool_call").unwrap();
    assert_eq!(call["name"], "read_file");
    assert_eq!(call["args"]["path"], "tools.py");
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["status"], "ok");
    assert_gone(record["pid"].as_i64().unwrap() as i32);
}

#[test]
fn a_prompt_that_names_no_file_starts_with_no_read() {
    let cache = Cache::with_fake("serve");
    std::fs::write(cache.workspace.path().join("tools.py"), "x = 1\n").unwrap();
    cache
        .zero("medium")
        .args(["-o", "stream-json", "What is this project about?"])
        .assert()
        .code(0);
    let record = cache.record();
    let _kill = KillPid(record["pid"].as_i64().unwrap() as i32);
    let first = first_chat_request(&record);
    assert_eq!(message_outline(&first), ["system:", "user:"]);
    assert_gone(record["pid"].as_i64().unwrap() as i32);
}

#[test]
fn only_files_that_resolve_inside_the_workspace_are_read_first_even_at_high() {
    let cache = Cache::with_fake("serve");
    let ws = cache.workspace.path();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOP SECRET 42\n").unwrap();
    std::fs::write(outside.path().join("rules.md"), "OUTSIDE GUIDANCE\n").unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(ws.join("notes.md"), "inside notes\n").unwrap();
    // A directory link out of the workspace, one in the middle of a path, and guidance that
    // is a link to a file outside.
    std::os::unix::fs::symlink(outside.path(), ws.join("outlink")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("src/deep")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("rules.md"), ws.join("AGENTS.md")).unwrap();
    let escape = format!(
        "../{}/secret.txt",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    cache
        .zero("high")
        .args([
            "-o",
            "stream-json",
            &format!("Compare outlink/secret.txt, src/deep/secret.txt, {escape} and notes.md."),
        ])
        .assert()
        .code(0);
    let record = cache.record();
    let _kill = KillPid(record["pid"].as_i64().unwrap() as i32);
    let first = &first_chat_request(&record);
    assert_eq!(
        message_outline(first),
        [
            "system:",
            "user:",
            r#"assistant:read_file({"path":"notes.md"})"#,
            "tool:"
        ]
    );
    let sent = record["requests"].to_string();
    assert!(!sent.contains("TOP SECRET"), "{sent}");
    assert!(!sent.contains("OUTSIDE GUIDANCE"), "{sent}");
    assert_gone(record["pid"].as_i64().unwrap() as i32);
}
