//! The provider's key never leaves zero: no command receives it, and it appears in no byte zero
//! writes or sends — stdout, stderr, stream-json, json, `--output-last-message`, task records,
//! every `zero tasks` command, and the tool results sent back to the model. Through the real
//! binary, against the fake model.
//!
//! The keys here are deliberately not key-shaped (no `sk-`), so only zero's knowledge of the
//! configured values can hide them, not the shape patterns.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::fake_model::{
    CHILD, FakeModel, RecordedRequest, Reply, Route, Script, TASK_ID,
};
use crate::support::runs::Home;
use crate::support::zero::{Wire, assert_stream_contract, events, zero_std_with};

const ZERO_KEY: &str = "zk-live-7f3a9c2e4b1d8f6a";
const OPENAI_KEY: &str = "oa-live-31c5d7e9f0a2b4c6";
const ANTHROPIC_KEY: &str = "an-live-9e8d7c6b5a4f3e2d";
const CONFIG_KEY: &str = "cf-live-0a1b2c3d4e5f6a7b";
const ALL_KEYS: [&str; 4] = [ZERO_KEY, OPENAI_KEY, ANTHROPIC_KEY, CONFIG_KEY];
/// The variables no command may see, whatever their values.
const WITHHELD: [&str; 4] = [
    "ZERO_API_KEY=",
    "OPENAI_API_KEY=",
    "ANTHROPIC_API_KEY=",
    "ZERO_HANDED_KEY_FILE=",
];

/// Panics if any key appears in `bytes`, naming `sink`.
fn assert_no_key(sink: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for key in ALL_KEYS {
        assert!(!text.contains(key), "{sink} holds the key {key}:\n{text}");
    }
}

/// Panics if six characters in a row of a key's random part appear in `bytes`: half a key,
/// shown by a slice of output that began or ended inside it.
fn assert_no_key_fragment(sink: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for key in ALL_KEYS {
        let random = &key["zk-live-".len()..];
        for fragment in random.as_bytes().windows(6) {
            let fragment = std::str::from_utf8(fragment).unwrap();
            assert!(
                !text.contains(fragment),
                "{sink} holds {fragment:?} of the key {key}:\n{text}"
            );
        }
    }
}

/// Panics if a withheld variable appears in `text`, naming `sink`.
fn assert_no_key_variable(sink: &str, text: &str) {
    for variable in WITHHELD {
        assert!(!text.contains(variable), "{sink} shows {variable}:\n{text}");
    }
}

/// What zero sent the model as tool results, joined.
fn tool_results_sent(requests: &[RecordedRequest]) -> String {
    requests
        .iter()
        .flat_map(|request| {
            request.body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn joined(events: &[Value], kind: &str) -> String {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

/// Every file under `dir`, read whole (nothing when it does not exist).
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            found.push((path.display().to_string(), bytes));
        }
    }
    found
}

/// A `zero exec` run in `workspace` with its data in `home` and every key variable set.
fn exec(server: &FakeModel, home: &Home, workspace: &Path) -> std::process::Command {
    let mut cmd = zero_std_with(server, Wire::OpenAi);
    cmd.env("ZERO_HOME", home.path())
        .env("ZERO_API_KEY", ZERO_KEY)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("ZERO_KILL_GRACE_MS", "300")
        .current_dir(workspace);
    cmd
}

/// Runs `zero exec --auto medium -o stream-json go` as `cmd` and checks it succeeded with a
/// complete stream; returns its output.
fn succeed(cmd: &mut std::process::Command) -> std::process::Output {
    let output = cmd
        .args(["exec", "--auto", "medium", "-o", "stream-json", "go"])
        .output()
        .unwrap();
    assert_stream_contract(&events(&output.stdout), 0);
    output
}

#[test]
fn commands_never_receive_the_provider_keys() {
    let workspace = tempfile::tempdir().unwrap();
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("bash", json!({"command": "env"})))
            .reply(Reply::tool_call(
                "bash",
                json!({"command": "env", "run_in_background": true}),
            ))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "block": true, "timeout_ms": 20000}),
            ))
            .reply(Reply::text("done")),
    );
    let output = succeed(&mut exec(&server, &home, workspace.path()));

    let sent = tool_results_sent(&server.requests());
    // The commands ran and their environment came back, without a key variable in it.
    assert!(sent.contains("PATH="), "{sent}");
    assert_no_key_variable("the tool results sent to the model", &sent);
    assert_no_key("the tool results sent to the model", sent.as_bytes());
    for (path, bytes) in files_under(&home.path()) {
        assert_no_key_variable(&path, &String::from_utf8_lossy(&bytes));
        assert_no_key(&path, &bytes);
    }
    assert_no_key("stdout", &output.stdout);
    assert_no_key("stderr", &output.stderr);
    // The model itself still got the key it needs, in the header only.
    let first = &server.requests()[0];
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {ZERO_KEY}").as_str())
    );
}

#[test]
fn a_key_from_the_config_file_is_masked_in_every_sink() {
    let workspace = tempfile::tempdir().unwrap();
    let home = Home::new();
    let config_home = tempfile::tempdir().unwrap();
    let config = config_home.path().join("zero/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, format!("api_key = \"{CONFIG_KEY}\"\n")).unwrap();
    let last_message = workspace.path().join("answer.md");
    // The model reads the config file (allowed at high) and repeats the key, streamed in
    // pieces of three characters as real models stream.
    let answer = format!("The key is {CONFIG_KEY}, as requested.");
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "bash",
                json!({"command": format!("env; cat '{}'", config.display())}),
            ))
            .reply(Reply::reasoning(&format!("I saw {CONFIG_KEY} there"), &answer).in_pieces(3)),
    );
    let mut cmd = zero_std_with(&server, Wire::OpenAi);
    let output = cmd
        .env("ZERO_HOME", home.path())
        .env("XDG_CONFIG_HOME", config_home.path())
        .current_dir(workspace.path())
        .args(["exec", "--auto", "high", "-o", "stream-json"])
        .arg("--output-last-message")
        .arg(&last_message)
        .arg("go")
        .output()
        .unwrap();
    let events = events(&output.stdout);
    assert_stream_contract(&events, 0);

    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {CONFIG_KEY}").as_str()),
        "the key from the config file is the one used"
    );
    let sent = tool_results_sent(&requests);
    assert!(sent.contains("api_key = \\\"[REDACTED]\\\""), "{sent}");
    assert_no_key_variable("the tool results sent to the model", &sent);
    assert_no_key("the tool results sent to the model", sent.as_bytes());
    // Joined, the streamed pieces still hold no key.
    let text = joined(&events, "text");
    assert_eq!(text, "The key is [REDACTED], as requested.");
    assert_eq!(joined(&events, "reasoning"), "I saw [REDACTED] there");
    assert_no_key("stdout", &output.stdout);
    assert_no_key("stderr", &output.stderr);
    let written = std::fs::read(&last_message).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&written),
        "The key is [REDACTED], as requested."
    );
}

#[test]
fn streamed_pieces_are_masked_on_the_anthropic_wire_and_in_json() {
    let answer = format!("key: {ZERO_KEY} end");
    for format in ["stream-json", "json", "text"] {
        let workspace = tempfile::tempdir().unwrap();
        let home = Home::new();
        let server = FakeModel::start(Script::new().reply(Reply::text(&answer).in_pieces(2)));
        let output = zero_std_with(&server, Wire::Anthropic)
            .env("ZERO_HOME", home.path())
            .env("ZERO_API_KEY", ZERO_KEY)
            .current_dir(workspace.path())
            .args(["exec", "-o", format, "go"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{format}");
        assert_no_key(format, &output.stdout);
        assert_no_key(format, &output.stderr);
        if format == "stream-json" {
            assert_eq!(
                joined(&events(&output.stdout), "text"),
                "key: [REDACTED] end"
            );
        }
    }
}

#[test]
fn a_specialist_gets_its_key_through_a_private_file_not_its_environment() {
    let workspace = tempfile::tempdir().unwrap();
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(Reply::tool_call("bash", json!({"command": "env"})))
                    .reply(Reply::text("the child is done")),
            )
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Show your environment."}),
            ))
            .reply(Reply::text("done")),
    );
    let output = succeed(&mut exec(&server, &home, workspace.path()));

    let children: Vec<RecordedRequest> = server
        .requests()
        .into_iter()
        .filter(|r| r.raw_body.contains(CHILD))
        .collect();
    assert_eq!(children.len(), 2, "the child ran its command and answered");
    for request in &children {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {ZERO_KEY}").as_str()),
            "the child authenticates with the parent's key"
        );
    }
    let sent = tool_results_sent(&children);
    assert!(sent.contains("ZERO_PARENT_RUN="), "{sent}");
    assert_no_key_variable("the child's tool results", &sent);
    assert_no_key("the child's tool results", sent.as_bytes());
    for (path, bytes) in files_under(&home.path()) {
        assert_no_key(&path, &bytes);
    }
    assert_no_key("stdout", &output.stdout);
    assert_no_key("stderr", &output.stderr);
}

#[test]
fn zero_tasks_never_prints_a_key_a_command_held() {
    let workspace = tempfile::tempdir().unwrap();
    let home = Home::new();
    // The model types a key into a command, which prints it to its log.
    let command = format!("echo {ZERO_KEY}; echo {CONFIG_KEY}; echo done");
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "bash",
                json!({"command": command, "run_in_background": true}),
            ))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "block": true, "timeout_ms": 20000}),
            ))
            // Windows that begin or end inside a key: the log is the two keys (24 bytes and a
            // newline each), then `done`.
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "offset": 10, "max_bytes": 5}),
            ))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "offset": 30, "max_bytes": 30}),
            ))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "offset": 0, "max_bytes": 40}),
            ))
            .reply(Reply::text("done")),
    );
    let config_home = tempfile::tempdir().unwrap();
    let config = config_home.path().join("zero/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, format!("api_key = \"{CONFIG_KEY}\"\n")).unwrap();
    let mut run = exec(&server, &home, workspace.path());
    let output = succeed(run.env("XDG_CONFIG_HOME", config_home.path()));
    assert_no_key("stdout", &output.stdout);
    let sent = tool_results_sent(&server.requests());
    assert!(sent.contains("done"), "{sent}");
    assert_no_key("the tool results sent to the model", sent.as_bytes());
    assert_no_key_fragment("the tool results sent to the model", sent.as_bytes());

    let records = home.records();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(
        record["command"],
        "echo [REDACTED]; echo [REDACTED]; echo done"
    );
    let id = record["id"].as_str().unwrap();
    // The operator knows the keys from the environment and from the config file.
    for args in [
        vec!["list"],
        vec!["list", "--json"],
        vec!["show", id],
        vec!["show", id, "--json"],
        vec!["output", id],
        vec!["output", id, "--tail", "30"],
        vec!["output", id, "--tail", "40"],
        vec!["output", id, "--tail", "50"],
    ] {
        let shown = home
            .tasks(&args)
            .env("ZERO_API_KEY", ZERO_KEY)
            .env("XDG_CONFIG_HOME", config_home.path())
            .assert()
            .success();
        let shown = shown.get_output();
        assert_no_key(&format!("zero tasks {args:?}"), &shown.stdout);
        assert_no_key(&format!("zero tasks {args:?} (stderr)"), &shown.stderr);
        assert_no_key_fragment(&format!("zero tasks {args:?}"), &shown.stdout);
        if args[0] == "output" {
            assert!(
                String::from_utf8_lossy(&shown.stdout).contains("[REDACTED]\ndone"),
                "{}",
                String::from_utf8_lossy(&shown.stdout)
            );
        }
    }
}

/// A directory anyone may use, for a run as another user.
fn open_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

#[test]
fn a_command_cannot_read_the_key_from_zeros_own_process() {
    use std::os::unix::process::CommandExt;
    let workspace = open_dir();
    let data = open_dir();
    let config = open_dir();
    // zero's pid is the guardian's parent, the guardian is the command's.
    let command = "zero=$(cut -d' ' -f4 /proc/$PPID/stat); \
                   echo \"zero is $zero\"; tr '\\0' '\\n' < /proc/$zero/environ";
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("bash", json!({"command": command})))
            .reply(Reply::text("done")),
    );
    let mut cmd = exec(&server, &Home::new(), workspace.path());
    cmd.env("ZERO_HOME", data.path().join("zero"))
        .env("XDG_CONFIG_HOME", config.path())
        .env("HOME", config.path())
        .args(["exec", "--auto", "high", "-o", "stream-json", "go"]);
    // Root may read any process; the leak this closes is to a command of the same, ordinary
    // user. Run as `nobody` when the tests run as root.
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        cmd.uid(65534).gid(65534);
    }
    let output = cmd.output().unwrap();
    assert_stream_contract(&events(&output.stdout), 0);
    let sent = tool_results_sent(&server.requests());
    assert!(sent.contains("zero is "), "{sent}");
    assert!(sent.contains("Permission denied"), "{sent}");
    assert_no_key("the tool results sent to the model", sent.as_bytes());
}

/// Every byte a failed `zero exec -o FORMAT go` left behind: its stdout, its stderr, and the
/// files in its data directory and next to `--output-last-message`.
fn every_sink(
    output: &std::process::Output,
    home: &Home,
    workspace: &Path,
) -> Vec<(String, Vec<u8>)> {
    let mut sinks = vec![
        ("stdout".to_string(), output.stdout.clone()),
        ("stderr".to_string(), output.stderr.clone()),
    ];
    sinks.extend(files_under(&home.path()));
    sinks.extend(files_under(workspace));
    sinks
}

/// `zero exec -o FORMAT --output-last-message answer.md go` in `workspace` with `home` as its
/// data directory, `adjust`ed first; its output.
fn run_with_last_message(
    server: &FakeModel,
    format: &str,
    home: &Home,
    workspace: &Path,
    adjust: impl FnOnce(&mut std::process::Command),
) -> std::process::Output {
    let mut zero = zero_std_with(server, Wire::OpenAi);
    zero.env("ZERO_HOME", home.path()).current_dir(workspace);
    adjust(&mut zero);
    zero.args([
        "exec",
        "-o",
        format,
        "--output-last-message",
        "answer.md",
        "go",
    ])
    .output()
    .unwrap()
}

#[test]
fn a_broken_config_file_is_never_quoted_so_its_key_is_in_no_sink() {
    let config_home = tempfile::tempdir().unwrap();
    let config = config_home.path().join("zero/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    // The line with the key is the broken one: it is never parsed, so zero does not know the
    // key; and it is not key-shaped enough for every pattern once JSON escapes its quote.
    std::fs::write(
        &config,
        format!("model = \"m\"\napi_key = \"{CONFIG_KEY}\n"),
    )
    .unwrap();
    let server = FakeModel::start(Script::new().reply(Reply::text("never asked")));
    for format in ["text", "json", "stream-json"] {
        let (workspace, home) = (tempfile::tempdir().unwrap(), Home::new());
        let output = run_with_last_message(&server, format, &home, workspace.path(), |zero| {
            zero.env("XDG_CONFIG_HOME", config_home.path());
        });
        assert_eq!(output.status.code(), Some(3), "{format}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!(
                "invalid config file {}: line 2, column",
                config.display()
            )),
            "{format}: the error still says where: {stderr}"
        );
        for (sink, bytes) in every_sink(&output, &home, workspace.path()) {
            assert_no_key(&format!("{format}: {sink}"), &bytes);
            assert_no_key_fragment(&format!("{format}: {sink}"), &bytes);
        }
        if format == "stream-json" {
            assert_stream_contract(&events(&output.stdout), 3);
        }
    }
    assert!(server.requests().is_empty());
}

#[test]
fn a_key_shape_in_the_answer_is_masked_in_json_as_in_text() {
    // Not a known key: only its shape (`api_key = "..."`) can hide it, and JSON escapes the
    // quote the shape needs.
    let echoed = "qz7Wm2Kp9Xv4Ty6Rb8Ns";
    let answer = format!("The file says api_key = \"{echoed}\" on line 2.");
    for format in ["text", "json", "stream-json"] {
        let server = FakeModel::start(Script::new().reply(Reply::text(&answer)));
        let (workspace, home) = (tempfile::tempdir().unwrap(), Home::new());
        let output = run_with_last_message(&server, format, &home, workspace.path(), |_| {});
        assert_eq!(output.status.code(), Some(0), "{format}");
        let written = std::fs::read_to_string(workspace.path().join("answer.md")).unwrap();
        assert_eq!(written, "The file says api_key = \"[REDACTED]\" on line 2.");
        for (sink, bytes) in every_sink(&output, &home, workspace.path()) {
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains(echoed),
                "{format}: {sink} holds {echoed}:\n{text}"
            );
        }
    }
}
