//! MCP servers as tools, end to end: the real binary, the fake model, and a real MCP server
//! process (`tests/mcp-server`, built on `rmcp`'s server side, which `cargo test` builds as the
//! example `mcp-test-server`). Each test has its own workspace, data directory and record
//! file, in which the server notes its pid, every call and every cancellation notice.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, FakeModel, RecordedRequest, Reply, Route, Script};
use crate::support::procs::{KillOnDrop, stat};
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{Wire, events, zero_std_with};

/// The test server, next to the integration test binary's directory.
pub(crate) fn test_server() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let server = deps
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples/mcp-test-server");
    assert!(
        server.exists(),
        "{} is missing: `cargo test` builds it; alone, run `cargo build --example \
         mcp-test-server` first",
        server.display()
    );
    server
}

/// One test's directories: the workspace, the MCP config file and the server's record.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    /// The test MCP server over HTTP with `args`, and its URL once it listens; the caller
    /// kills it.
    fn http_server(&self, args: &[&str]) -> (Child, String) {
        let port_file = self.dir.path().join("url");
        let http = std::process::Command::new(test_server())
            .args(args)
            .arg("--http")
            .arg(&port_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let url = wait_for("the HTTP server's URL", DEADLINE, || {
            std::fs::read_to_string(&port_file).ok()
        });
        (http, url)
    }

    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("workspace")).unwrap();
        Fixture { dir }
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    /// In the workspace, where a stdio server at `--auto medium` may write.
    fn record_path(&self) -> PathBuf {
        self.workspace().join("record")
    }

    /// What the servers recorded, line by line.
    fn record(&self) -> Vec<String> {
        std::fs::read_to_string(self.record_path())
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The pid the (one) stdio server recorded at its start.
    fn server_pid(&self) -> i32 {
        wait_for("the MCP server to record its pid", DEADLINE, || {
            self.record()
                .iter()
                .find_map(|line| line.strip_prefix("pid ")?.parse().ok())
        })
    }

    /// A stdio entry for the test server, with `args` after the record flag.
    fn stdio(&self, args: &[&str]) -> Value {
        let mut all = vec![
            "--record".to_string(),
            self.record_path().display().to_string(),
        ];
        all.extend(args.iter().map(|arg| arg.to_string()));
        json!({"command": test_server(), "args": all})
    }

    /// Writes `{"mcpServers": servers}` and returns its path.
    fn config(&self, servers: Value) -> PathBuf {
        let path = self.dir.path().join("mcp.json");
        std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
        path
    }

    /// `zero exec -o stream-json` in the workspace, with `args`.
    fn zero(&self, server: &FakeModel, args: &[&str]) -> std::process::Command {
        let mut cmd = zero_std_with(server, Wire::OpenAi);
        cmd.args(["exec", "-o", "stream-json"])
            .args(args)
            .current_dir(self.workspace())
            .env("ZERO_KILL_GRACE_MS", "300")
            .stdin(Stdio::null());
        cmd
    }

    /// `zero exec --auto medium --mcp-config CONFIG go`: a run that may call every tool of
    /// the servers in `config`, whose stdio servers may write their record.
    fn medium(&self, server: &FakeModel, config: &Path) -> std::process::Command {
        let config = config.to_str().unwrap();
        self.zero(server, &["--auto", "medium", "--mcp-config", config, "go"])
    }

    /// [`Fixture::medium`] run to its end; its exit code and events.
    fn run_medium(&self, server: &FakeModel, config: &Path) -> (i32, Vec<Value>) {
        let output = self.medium(server, config).output().unwrap();
        (output.status.code().unwrap_or(-1), events(&output.stdout))
    }

    /// Starts `command` (its output discarded) and waits until the server has the call to
    /// its `slow` tool in hand; the guard kills what is left of the run when the test ends.
    fn spawn_mid_slow_call(&self, mut command: std::process::Command) -> (Child, KillOnDrop) {
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let cleanup = KillOnDrop(self.record_path().display().to_string());
        wait_for("the call to reach the server", DEADLINE, || {
            self.record()
                .contains(&"call slow".to_string())
                .then_some(())
        });
        (child, cleanup)
    }

    /// Runs zero to its end; its exit code and events.
    fn run(&self, server: &FakeModel, args: &[&str]) -> (i32, Vec<Value>) {
        let output = self.zero(server, args).output().unwrap();
        (output.status.code().unwrap_or(-1), events(&output.stdout))
    }
}

/// The events of `kind`.
fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The tool result the model was sent in `request` (the last message).
fn last_tool_result(request: &RecordedRequest) -> String {
    let messages = request.body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool", "{last}");
    last["content"].as_str().unwrap().to_string()
}

/// The names of the tools a request offered.
fn offered(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// Whether the process `pid` is gone (or a zombie nobody has reaped yet).
fn gone(pid: i32) -> bool {
    stat(pid).is_none_or(|stat| stat.zombie())
}

fn assert_gone_within_3s(pid: i32) {
    wait_for("the MCP server to be gone", Duration::from_secs(3), || {
        gone(pid).then_some(())
    });
}

#[test]
fn a_server_tool_is_listed_and_called_end_to_end() {
    let fixture = Fixture::new();
    let config = fixture.config(json!({"t": fixture.stdio(&[])}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "mcp__t__echo",
                json!({"text": "hello from mcp"}),
            ))
            .reply(Reply::text("done")),
    );
    let (code, events) = fixture.run_medium(&server, &config);
    assert_eq!(code, 0, "{events:?}");
    let start = &of_type(&events, "run_start")[0];
    assert_eq!(
        start["mcpServers"],
        json!([{"name": "t", "transport": "stdio", "state": "ready", "tools": 7}])
    );
    let requests = server.requests();
    let tools = offered(&requests[0]);
    assert!(tools.contains(&"mcp__t__echo".to_string()), "{tools:?}");
    let echo = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "mcp__t__echo")
        .unwrap();
    assert_eq!(
        echo["function"]["parameters"]["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(last_tool_result(&requests[1]), "hello from mcp");
    assert!(fixture.record().contains(&"call echo".to_string()));
    // The server died with the run.
    assert_gone_within_3s(fixture.server_pid());
}

#[test]
fn a_read_only_tool_is_offered_at_low_and_the_others_from_medium() {
    let fixture = Fixture::new();
    let config = fixture.config(json!({"t": fixture.stdio(&[])}));
    let server = FakeModel::start(Script::new());
    let listed = |auto: &str| -> Vec<(String, String)> {
        let (code, events) = fixture.run(
            &server,
            &[
                "--list-tools",
                "--auto",
                auto,
                "--mcp-config",
                config.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{events:?}");
        of_type(&events, "tools")[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|tool| tool["name"].as_str().unwrap().starts_with("mcp__"))
            .map(|tool| {
                let effect = tool["sideEffect"].as_str().unwrap().to_string();
                (tool["name"].as_str().unwrap().to_string(), effect)
            })
            .collect()
    };
    assert_eq!(listed("low"), [("mcp__t__echo".into(), "read".into())]);
    let medium = listed("medium");
    assert_eq!(medium.len(), 7, "{medium:?}");
    assert!(medium.contains(&("mcp__t__env".into(), "external".into())));
}

#[test]
fn the_tool_filters_take_server_patterns_and_an_unknown_server_is_a_usage_error() {
    let fixture = Fixture::new();
    let config = fixture.config(json!({"t": fixture.stdio(&[])}));
    let server = FakeModel::start(Script::new());
    let config = config.to_str().unwrap();
    let (code, events) = fixture.run(
        &server,
        &[
            "--list-tools",
            "--auto",
            "medium",
            "--mcp-config",
            config,
            "--enabled-tools",
            "mcp__t__*,read_file",
            "--disabled-tools",
            "mcp__t__slow",
        ],
    );
    assert_eq!(code, 0, "{events:?}");
    let names: Vec<&str> = of_type(&events, "tools")[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "mcp__t__big",
            "mcp__t__connect",
            "mcp__t__crash",
            "mcp__t__echo",
            "mcp__t__env",
            "mcp__t__picture",
            "read_file"
        ]
    );
    let (code, events) = fixture.run(
        &server,
        &[
            "--list-tools",
            "--mcp-config",
            config,
            "--enabled-tools",
            "mcp__other__*",
        ],
    );
    assert_eq!(code, 2);
    let error = &of_type(&events, "error")[0]["message"];
    assert!(
        error.as_str().unwrap().contains("MCP server `other`"),
        "{error}"
    );
}

#[test]
fn a_server_that_never_initializes_is_a_warning_and_when_required_exit_3() {
    let fixture = Fixture::new();
    let mut entry = fixture.stdio(&["--hang-initialize"]);
    entry["startup_timeout_ms"] = json!(500);
    let config = fixture.config(json!({"slow": entry.clone()}));
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let (code, events) = fixture.run_medium(&server, &config);
    assert_eq!(code, 0, "{events:?}");
    let start = &of_type(&events, "run_start")[0];
    assert_eq!(start["mcpServers"][0]["state"], "failed");
    assert_eq!(start["mcpServers"][0]["tools"], 0);
    let warning = of_type(&events, "warning")[0]["message"].as_str().unwrap();
    assert!(
        warning.contains("`slow`") && warning.contains("within 500ms"),
        "{warning}"
    );
    assert!(
        !offered(&server.requests()[0])
            .iter()
            .any(|t| t.starts_with("mcp__"))
    );
    assert_gone_within_3s(fixture.server_pid());

    std::fs::remove_file(fixture.record_path()).unwrap();
    entry["required"] = json!(true);
    let config = fixture.config(json!({"slow": entry}));
    let (code, events) = fixture.run_medium(&server, &config);
    assert_eq!(code, 3, "{events:?}");
    let error = &of_type(&events, "error")[0];
    assert_eq!(error["code"], "mcp_server_failed");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("`slow`") && message.contains("required"),
        "{message}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "no model request for the required failure"
    );
    assert_gone_within_3s(fixture.server_pid());
}

#[test]
fn a_server_that_crashes_mid_call_turns_its_calls_into_error_results() {
    let fixture = Fixture::new();
    let config = fixture.config(json!({"t": fixture.stdio(&[])}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("mcp__t__crash", json!({})))
            .reply(Reply::tool_call("mcp__t__echo", json!({"text": "again"})))
            .reply(Reply::text("carried on")),
    );
    let (code, events) = fixture.run_medium(&server, &config);
    assert_eq!(code, 0, "{events:?}");
    let requests = server.requests();
    let crashed = last_tool_result(&requests[1]);
    assert!(crashed.contains("MCP server `t`"), "{crashed}");
    let after = last_tool_result(&requests[2]);
    assert!(after.contains("is gone"), "{after}");
    assert!(after.contains("exited with status 3"), "{after}");
    assert!(
        after.contains("mcp-test-server: started"),
        "the log's end: {after}"
    );
    assert_eq!(of_type(&events, "final")[0]["text"], "carried on");
}

#[test]
fn strict_fails_a_run_whose_server_went_away_and_names_it() {
    let fixture = Fixture::new();
    let config = fixture.config(json!({"t": fixture.stdio(&[])}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("mcp__t__crash", json!({})))
            .reply(Reply::text("carried on")),
    );
    let output = strict_run(&fixture, &server, &config);
    assert_eq!(output.status.code(), Some(4));
    carried_on_then_blocked_by_gone(&events(&output.stdout), "t");
}

/// A run at medium with `--strict` against `server`, with the MCP servers of `config`.
fn strict_run(fixture: &Fixture, server: &FakeModel, config: &Path) -> std::process::Output {
    fixture
        .medium(server, config)
        .arg("--strict")
        .output()
        .unwrap()
}

/// The run answered "carried on" and `--strict` failed it as `blocked`, naming the MCP server
/// `server` that went away.
fn carried_on_then_blocked_by_gone(events: &[Value], server: &str) {
    assert_eq!(of_type(events, "final")[0]["text"], "carried on");
    let error = of_type(events, "error")[0];
    assert_eq!(error["code"], "blocked", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "the MCP server `{server}` went away during the run"
        )),
        "{message}"
    );
}

/// An HTTP server has no process of zero's to watch: it went away when a call could not reach
/// it — the call it died in fails as such (its broken response stream resumed a few times,
/// not until the tool timeout) — and `--strict` names it as it names a stdio server's end.
#[test]
fn strict_fails_a_run_whose_http_server_went_away_and_names_it() {
    let fixture = Fixture::new();
    let (mut http, url) = fixture.http_server(&[]);
    let config = fixture.config(json!({"web": {"type": "http", "url": url}}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("mcp__web__crash", json!({})))
            .reply(Reply::tool_call("mcp__web__echo", json!({"text": "again"})))
            .reply(Reply::text("carried on")),
    );
    let output = strict_run(&fixture, &server, &config);
    let _ = http.kill();
    let _ = http.wait();
    let events = events(&output.stdout);
    assert_eq!(output.status.code(), Some(4), "{events:?}");
    // The call the server died in fails as unreachable, not after the tool timeout.
    let crashed = last_tool_result(&server.requests()[1]);
    assert!(
        crashed.contains("MCP server `web` cannot be reached"),
        "{crashed}"
    );
    carried_on_then_blocked_by_gone(&events, "web");
}

#[test]
fn content_that_is_not_text_is_described_by_type_and_size() {
    let fixture = Fixture::new();
    let config = fixture.config(json!({"t": fixture.stdio(&[])}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("mcp__t__picture", json!({})))
            .reply(Reply::text("done")),
    );
    let (code, events) = fixture.run_medium(&server, &config);
    assert_eq!(code, 0, "{events:?}");
    let result = last_tool_result(&server.requests()[1]);
    assert_eq!(
        result,
        "[image content: image/png, 8 bytes, not shown]\na picture"
    );
}

#[test]
fn a_call_past_its_timeout_is_cancelled_with_the_protocols_notice() {
    let fixture = Fixture::new();
    let mut entry = fixture.stdio(&[]);
    entry["tool_timeout_ms"] = json!(300);
    let config = fixture.config(json!({"t": entry}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("mcp__t__slow", json!({})))
            .reply(Reply::text("done")),
    );
    let (code, events) = fixture.run_medium(&server, &config);
    assert_eq!(code, 0, "{events:?}");
    let result = last_tool_result(&server.requests()[1]);
    assert!(result.contains("did not answer within 300ms"), "{result}");
    let record = fixture.record();
    assert!(
        record.contains(&"cancelled the call took too long".to_string()),
        "{record:?}"
    );
}

/// A run stopped by `signal` while a call is in flight: the server is gone within 3 s, and a
/// SIGINT or SIGTERM sent the cancellation notice first.
fn stopped_mid_call(signal: Signal) {
    let fixture = Fixture::new();
    let config = fixture.config(json!({"t": fixture.stdio(&[])}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("mcp__t__slow", json!({})))
            .reply(Reply::text("too late")),
    );
    let (mut child, _cleanup) = fixture.spawn_mid_slow_call(fixture.medium(&server, &config));
    let pid = fixture.server_pid();
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let status = wait_for("zero to exit", Duration::from_secs(5), || {
        child.try_wait().unwrap()
    });
    assert_gone_within_3s(pid);
    if signal != Signal::SIGKILL {
        assert_eq!(status.code(), Some(128 + signal as i32));
        let record = fixture.record();
        assert!(
            record.contains(&"cancelled the run is stopping".to_string()),
            "{record:?}"
        );
    }
}

#[test]
fn sigint_mid_call_cancels_the_call_and_the_server_is_gone() {
    stopped_mid_call(Signal::SIGINT);
}

#[test]
fn sigterm_mid_call_cancels_the_call_and_the_server_is_gone() {
    stopped_mid_call(Signal::SIGTERM);
}

#[test]
fn sigkill_of_zero_mid_call_leaves_no_server_behind() {
    stopped_mid_call(Signal::SIGKILL);
}

#[test]
fn an_http_server_on_localhost_with_expanded_headers() {
    let fixture = Fixture::new();
    let record = fixture.record_path();
    let (mut http, url) = fixture.http_server(&["--record", record.to_str().unwrap()]);
    let config = fixture.config(json!({"web": {
        "type": "http", "url": url, "headers": {"X-Test": "${ZERO_TEST_HEADER}"}
    }}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "mcp__web__echo",
                json!({"text": "over http"}),
            ))
            .reply(Reply::text("done")),
    );
    let output = fixture
        .zero(
            &server,
            &[
                "--auto",
                "low",
                "--mcp-config",
                config.to_str().unwrap(),
                "go",
            ],
        )
        .env("ZERO_TEST_HEADER", "yes")
        .output()
        .unwrap();
    let _ = http.kill();
    let _ = http.wait();
    let events = events(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{events:?}");
    assert_eq!(
        of_type(&events, "run_start")[0]["mcpServers"][0]["transport"],
        "http"
    );
    assert_eq!(last_tool_result(&server.requests()[1]), "over http");
}

#[test]
fn variables_are_expanded_into_a_servers_environment_and_withheld_ones_stay_out() {
    let fixture = Fixture::new();
    let mut entry = fixture.stdio(&[]);
    entry["env"] = json!({"GREETING": "${ZERO_TEST_GREETING}", "FALLBACK": "${NOT_SET:-plan b}"});
    let config = fixture.config(json!({"t": entry}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("mcp__t__env", json!({"name": "GREETING"})))
            .reply(Reply::tool_call("mcp__t__env", json!({"name": "FALLBACK"})))
            .reply(Reply::tool_call(
                "mcp__t__env",
                json!({"name": "SERVICE_TOKEN"}),
            ))
            .reply(Reply::text("done")),
    );
    let output = fixture
        .medium(&server, &config)
        .env("ZERO_TEST_GREETING", "hello there")
        .env("SERVICE_TOKEN", "tok-123")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let requests = server.requests();
    assert_eq!(last_tool_result(&requests[1]), "hello there");
    assert_eq!(last_tool_result(&requests[2]), "plan b");
    assert_eq!(
        last_tool_result(&requests[3]),
        "<unset>",
        "a secret-looking variable is withheld below --auto high"
    );

    // An unset variable without a default fails that server, naming the variable.
    let mut entry = fixture.stdio(&[]);
    entry["env"] = json!({"X": "${ZERO_TEST_NEVER_SET}"});
    let config = fixture.config(json!({"t": entry}));
    let (code, events) = fixture.run(
        &server,
        &["--list-tools", "--mcp-config", config.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    let warning = of_type(&events, "warning")[0]["message"].as_str().unwrap();
    assert!(
        warning.contains("ZERO_TEST_NEVER_SET is not set"),
        "{warning}"
    );
}

#[test]
fn a_projects_mcp_json_is_read_only_with_mcp_project() {
    let fixture = Fixture::new();
    std::fs::write(
        fixture.workspace().join(".mcp.json"),
        json!({"mcpServers": {"proj": fixture.stdio(&[])}}).to_string(),
    )
    .unwrap();
    let server = FakeModel::start(Script::new());
    let (code, events) = fixture.run(&server, &["--list-tools"]);
    assert_eq!(code, 0, "{events:?}");
    let tools = of_type(&events, "tools")[0]["tools"].to_string();
    assert!(!tools.contains("mcp__proj"), "{tools}");
    let warning = of_type(&events, "warning")[0]["message"].as_str().unwrap();
    assert!(warning.contains("--mcp-project"), "{warning}");
    assert!(fixture.record().is_empty(), "the server was never started");

    let (code, events) = fixture.run(&server, &["--list-tools", "--mcp-project"]);
    assert_eq!(code, 0, "{events:?}");
    let tools = of_type(&events, "tools")[0]["tools"].to_string();
    assert!(tools.contains("mcp__proj__echo"), "{tools}");
}

#[test]
fn a_projects_mcp_json_linking_out_of_the_workspace_is_refused_and_one_linking_inside_is_read() {
    let fixture = Fixture::new();
    let servers = json!({"mcpServers": {"proj": fixture.stdio(&[])}}).to_string();
    let outside = fixture.dir.path().join("elsewhere.json");
    std::fs::write(&outside, &servers).unwrap();
    let link = fixture
        .workspace()
        .canonicalize()
        .unwrap()
        .join(".mcp.json");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let server = FakeModel::start(Script::new());
    // At medium, where the server could write its record had it started.
    let listing = ["--list-tools", "--auto", "medium", "--mcp-project"];
    let (code, events) = fixture.run(&server, &listing);
    assert_eq!(code, 2, "{events:?}");
    let error = &messages(&events, "error")[0];
    assert!(
        error.contains(&format!("cannot read MCP config {}", link.display()))
            && error.contains("resolves outside"),
        "{error}"
    );
    assert!(fixture.record().is_empty(), "the server was never started");
    // Without --mcp-project, nothing suggests it: the flag would not read a file that links out.
    let (code, events) = fixture.run(&server, &["--list-tools"]);
    assert_eq!(code, 0, "{events:?}");
    assert!(messages(&events, "warning").is_empty(), "{events:?}");

    // The same file in the workspace, reached through a link that stays inside, is read.
    let inside = fixture.workspace().join("config");
    std::fs::create_dir(&inside).unwrap();
    std::fs::write(inside.join("mcp.json"), &servers).unwrap();
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink("config/mcp.json", &link).unwrap();
    let (code, events) = fixture.run(&server, &listing);
    assert_eq!(code, 0, "{events:?}");
    let tools = of_type(&events, "tools")[0]["tools"].to_string();
    assert!(tools.contains("mcp__proj__echo"), "{tools}");
    assert!(server.requests().is_empty());
}

/// 100 years in milliseconds: the longest time limit zero takes.
const HUNDRED_YEARS_MS: u64 = 100 * 31_557_600 * 1000;

#[test]
fn time_limits_past_a_hundred_years_are_a_usage_error_and_a_hundred_years_runs() {
    let fixture = Fixture::new();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("mcp__t__echo", json!({"text": "in time"})))
            .reply(Reply::text("done")),
    );
    for (key, named) in [
        ("startup_timeout_ms", "startup_timeout_ms"),
        ("tool_timeout_ms", "tool_timeout_ms"),
        ("toolTimeoutMs", "tool_timeout_ms"),
    ] {
        for past in [u64::MAX, HUNDRED_YEARS_MS + 1] {
            let mut entry = fixture.stdio(&[]);
            entry[key] = json!(past);
            let config = fixture.config(json!({"t": entry}));
            let output = fixture.medium(&server, &config).output().unwrap();
            let what = format!("{key} = {past}");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(!stderr.contains("panicked"), "{what}: {stderr}");
            assert_eq!(output.status.code(), Some(2), "{what}: {stderr}");
            let error = &messages(&events(&output.stdout), "error")[0];
            assert!(
                error.contains("MCP server `t`")
                    && error.contains(&format!("`{named}` is {past} ms"))
                    && error.contains("longer than 100 years"),
                "{what}: {error}"
            );
        }
    }
    assert!(fixture.record().is_empty(), "no server ever started");
    assert!(server.requests().is_empty());

    // The longest limits there are: the server starts and its tool answers.
    let mut entry = fixture.stdio(&[]);
    entry["startup_timeout_ms"] = json!(HUNDRED_YEARS_MS);
    entry["tool_timeout_ms"] = json!(HUNDRED_YEARS_MS);
    let config = fixture.config(json!({"t": entry}));
    let (code, events) = fixture.run_medium(&server, &config);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(last_tool_result(&server.requests()[1]), "in time");
}

#[test]
fn a_broken_config_is_a_usage_error_naming_the_file_and_the_server() {
    let fixture = Fixture::new();
    let server = FakeModel::start(Script::new());
    let bad = fixture.dir.path().join("bad.json");
    std::fs::write(&bad, "{\"mcpServers\": {\"a\": {\"command\": 1}}}").unwrap();
    let (code, events) = fixture.run(&server, &["--mcp-config", bad.to_str().unwrap(), "go"]);
    assert_eq!(code, 2);
    let message = of_type(&events, "error")[0]["message"].as_str().unwrap();
    assert!(
        message.contains("bad.json") && message.contains("line 1"),
        "{message}"
    );
    let config = fixture.config(json!({"bad name": {"command": "x"}}));
    let (code, events) = fixture.run(&server, &["--mcp-config", config.to_str().unwrap(), "go"]);
    assert_eq!(code, 2);
    let message = of_type(&events, "error")[0]["message"].as_str().unwrap();
    assert!(message.contains("`bad name`"), "{message}");
    let missing = fixture.dir.path().join("none.json");
    let (code, _) = fixture.run(&server, &["--mcp-config", missing.to_str().unwrap(), "go"]);
    assert_eq!(code, 2);
    assert!(server.requests().is_empty());
}

#[test]
fn a_specialist_starts_the_servers_its_tools_name_and_no_others() {
    let fixture = Fixture::new();
    let agents = fixture.workspace().join(".zero/specialists");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("echoer.md"),
        "---\nname: echoer\ndescription: Echoes.\ntools: mcp__t__echo\n---\nEcho what you are told.\n",
    )
    .unwrap();
    let config = fixture.config(json!({"t": fixture.stdio(&[])}));
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(Reply::tool_call(
                        "mcp__t__echo",
                        json!({"text": "from the child"}),
                    ))
                    .reply(Reply::text("the child echoed"))
                    .reply(Reply::text("nothing to see")),
            )
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "echoer", "prompt": "Echo something."}),
            ))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "explorer", "prompt": "Look around."}),
            ))
            .reply(Reply::text("all done")),
    );
    let (code, events) = fixture.run_medium(&server, &config);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(of_type(&events, "final")[0]["text"], "all done");
    let requests = server.requests();
    let child: Vec<&RecordedRequest> = requests
        .iter()
        .filter(|request| request.raw_body.contains(CHILD))
        .collect();
    // The echoer's own requests offer exactly its MCP tool; the explorer's offer none.
    let echoer = child
        .iter()
        .find(|request| request.raw_body.contains("Echo what you are told"))
        .unwrap();
    assert_eq!(offered(echoer), ["mcp__t__echo"]);
    let explorer = child
        .iter()
        .find(|request| request.raw_body.contains("Look around"))
        .unwrap();
    assert!(
        !offered(explorer)
            .iter()
            .any(|tool| tool.starts_with("mcp__"))
    );
    assert!(
        child
            .iter()
            .any(|request| request.raw_body.contains("from the child")),
        "the child's call reached its own copy of the server"
    );
    let pids = fixture
        .record()
        .iter()
        .filter(|line| line.starts_with("pid "))
        .count();
    assert_eq!(
        pids, 2,
        "the parent's server and the echoer's copy, none for the explorer"
    );
}

#[test]
fn config_toml_servers_start_unless_strict_mcp_config_says_only_the_files() {
    let fixture = Fixture::new();
    let config_home = fixture.dir.path().join("config");
    std::fs::create_dir_all(config_home.join("zero")).unwrap();
    let entry = fixture.stdio(&[]);
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| format!("{arg}"))
        .collect();
    std::fs::write(
        config_home.join("zero/config.toml"),
        format!(
            "[mcp_servers.fromtoml]\ncommand = {}\nargs = [{}]\n",
            entry["command"],
            args.join(", ")
        ),
    )
    .unwrap();
    let server = FakeModel::start(Script::new());
    let list = |extra: &[&str]| {
        let output = fixture
            .zero(&server, &[&["--list-tools"], extra].concat())
            .env("XDG_CONFIG_HOME", &config_home)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0));
        of_type(&events(&output.stdout), "tools")[0]["tools"].to_string()
    };
    assert!(list(&[]).contains("mcp__fromtoml__echo"));
    assert!(!list(&["--strict-mcp-config"]).contains("mcp__fromtoml"));
}

#[test]
fn sigint_while_servers_start_ends_the_run_and_the_servers() {
    let fixture = Fixture::new();
    let mut entry = fixture.stdio(&["--hang-initialize"]);
    entry["startup_timeout_ms"] = json!(600_000);
    let config = fixture.config(json!({"slow": entry}));
    let server = FakeModel::start(Script::new().reply(Reply::text("never asked")));
    let mut child = fixture
        .medium(&server, &config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _cleanup = KillOnDrop(fixture.record_path().display().to_string());
    let pid = fixture.server_pid();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = wait_for("zero to exit", Duration::from_secs(5), || {
        child.try_wait().unwrap()
    });
    assert_eq!(status.code(), Some(130));
    assert_gone_within_3s(pid);
    let mut stdout = Vec::new();
    std::io::Read::read_to_end(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    let events = events(&stdout);
    assert_eq!(of_type(&events, "error")[0]["code"], "interrupted");
    assert_eq!(events.last().unwrap()["type"], "run_end");
    assert!(server.requests().is_empty());
}

/// The README's MCP example, as written, against the reference filesystem server
/// (`@modelcontextprotocol/server-filesystem`, a Node program: `.ci/run` installs it). Ignored
/// in `cargo test`, which needs nothing from the network.
#[test]
#[ignore = "needs mcp-server-filesystem from npm; .ci/run installs it and runs this"]
fn the_readme_example_runs_the_reference_filesystem_server() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let block = |marker: &str, fence: &str| -> String {
        readme
            .split(&format!("{marker}\n```{fence}\n"))
            .nth(1)
            .and_then(|rest| rest.split("\n```").next())
            .unwrap_or_else(|| panic!("README.md's {marker} block"))
            .to_string()
    };
    let fixture = Fixture::new();
    let workspace = fixture.workspace();
    std::fs::write(
        workspace.join("mcp.json"),
        block("<!-- file: mcp.json -->", "json"),
    )
    .unwrap();
    std::fs::create_dir(workspace.join("src")).unwrap();
    std::fs::write(
        workspace.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    )
    .unwrap();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "mcp__files__read_text_file",
                json!({"path": workspace.join("src/lib.rs")}),
            ))
            .reply(Reply::text("Yes: add subtracts.")),
    );
    let zero = assert_cmd::cargo::cargo_bin("zero");
    let path = format!(
        "{}:{}",
        zero.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let mut command = std::process::Command::new("bash");
    for (name, value) in zero_std_with(&server, Wire::OpenAi).get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let output = command
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
        .arg(block("<!-- commands: mcp -->", "sh"))
        .env("PATH", path)
        .current_dir(&workspace)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("add subtracts"));
    let result = last_tool_result(&server.requests()[1]);
    assert!(
        result.contains("a - b"),
        "the server read the file: {result}"
    );
}

#[test]
fn the_runs_deadline_bounds_the_servers_start_too() {
    let fixture = Fixture::new();
    let mut entry = fixture.stdio(&["--hang-initialize"]);
    entry["startup_timeout_ms"] = json!(600_000);
    let config = fixture.config(json!({"slow": entry}));
    let server = FakeModel::start(Script::new().reply(Reply::text("never asked")));
    let (code, events) = fixture.run(
        &server,
        &[
            "--auto",
            "medium",
            "--timeout",
            "1s",
            "--mcp-config",
            config.to_str().unwrap(),
            "go",
        ],
    );
    assert_eq!(code, 4, "{events:?}");
    assert_eq!(of_type(&events, "error")[0]["code"], "timeout");
    assert_gone_within_3s(fixture.server_pid());
    assert!(server.requests().is_empty());
}

#[test]
fn a_server_whose_command_does_not_exist_is_named_in_the_warning() {
    let fixture = Fixture::new();
    let config = fixture.config(json!({"ghost": {"command": "zero-no-such-mcp-server"}}));
    let server = FakeModel::start(Script::new());
    let (code, events) = fixture.run(
        &server,
        &["--list-tools", "--mcp-config", config.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{events:?}");
    let warning = of_type(&events, "warning")[0]["message"].as_str().unwrap();
    assert!(
        warning.contains("`ghost`") && warning.contains("zero-no-such-mcp-server"),
        "{warning}"
    );
}

#[test]
fn a_stdio_server_reaches_the_network_only_when_its_entry_says_so() {
    let fixture = Fixture::new();
    let server = FakeModel::start(Script::new());
    // The fake model's own port: something on 127.0.0.1 that accepts.
    let addr = server
        .base_url_openai()
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let connect = || Reply::tool_call("mcp__t__connect", json!({ "addr": addr }));
    for (network, expected) in [(false, "refused"), (true, "connected")] {
        let mut entry = fixture.stdio(&[]);
        entry["network"] = json!(network);
        let config = fixture.config(json!({ "t": entry }));
        let model = FakeModel::start(Script::new().reply(connect()).reply(Reply::text("done")));
        let (code, events) = fixture.run_medium(&model, &config);
        assert_eq!(code, 0, "{events:?}");
        let result = last_tool_result(&model.requests()[1]);
        assert!(result.starts_with(expected), "network {network}: {result}");
    }
}

/// What `zero --list-tools` with `args` (and the environment `env`) gives: exit code and
/// events.
fn list_with_env(
    fixture: &Fixture,
    server: &FakeModel,
    args: &[&str],
    env: &[(&str, &str)],
) -> (i32, Vec<Value>) {
    let mut command = fixture.zero(server, &[&["--list-tools"], args].concat());
    command.envs(env.iter().copied());
    let output = command.output().unwrap();
    (output.status.code().unwrap_or(-1), events(&output.stdout))
}

/// The messages of the events of `kind`.
fn messages(events: &[Value], kind: &str) -> Vec<String> {
    of_type(events, kind)
        .iter()
        .map(|event| event["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_provider_key_variable_is_never_expanded_into_a_server_from_any_source() {
    let fixture = Fixture::new();
    let server = FakeModel::start(Script::new());
    let key = "sk-provider-key-that-must-stay-home";
    let config_home = fixture.dir.path().join("config");
    std::fs::create_dir_all(config_home.join("zero")).unwrap();
    let config_home = config_home.to_str().unwrap().to_string();
    let env = [
        ("OPENAI_API_KEY", key),
        ("XDG_CONFIG_HOME", config_home.as_str()),
    ];
    let stdio = |extra: Value| {
        let mut entry = fixture.stdio(&[]);
        for (name, value) in extra.as_object().unwrap() {
            entry[name] = value.clone();
        }
        entry
    };
    // The workspace's .mcp.json, in args and in env.
    for (entry, field) in [
        (
            stdio(json!({"args": ["--key", "${OPENAI_API_KEY}"]})),
            "`args`",
        ),
        (
            stdio(json!({"env": {"KEY": "${OPENAI_API_KEY:-none}"}})),
            "`env.KEY`",
        ),
    ] {
        std::fs::write(
            fixture.workspace().join(".mcp.json"),
            json!({"mcpServers": {"proj": entry}}).to_string(),
        )
        .unwrap();
        let (code, events) = list_with_env(&fixture, &server, &["--mcp-project"], &env);
        assert_eq!(code, 2, "{events:?}");
        let error = &messages(&events, "error")[0];
        assert!(
            error.contains("MCP server `proj`")
                && error.contains("${OPENAI_API_KEY}")
                && error.contains(field)
                && error.contains("never given to an MCP server"),
            "{error}"
        );
    }
    // A --mcp-config file, in an HTTP server's header.
    let config = fixture.config(json!({"web": {
        "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${ZERO_API_KEY}"}
    }}));
    let (code, events) = list_with_env(
        &fixture,
        &server,
        &["--mcp-config", config.to_str().unwrap()],
        &env,
    );
    assert_eq!(code, 2, "{events:?}");
    assert!(messages(&events, "error")[0].contains("`headers.Authorization`"));
    // config.toml, in the command.
    std::fs::write(
        Path::new(&config_home).join("zero/config.toml"),
        "[mcp_servers.tomled]\ncommand = \"${ANTHROPIC_API_KEY:-x}\"\n",
    )
    .unwrap();
    let (code, events) = list_with_env(&fixture, &server, &[], &env);
    assert_eq!(code, 2, "{events:?}");
    assert!(messages(&events, "error")[0].contains("MCP server `tomled`"));
    assert!(fixture.record().is_empty(), "no server ever started");
    assert!(server.requests().is_empty());
}

#[test]
fn a_secret_is_refused_in_args_and_given_in_env_it_reaches_the_server_but_no_command_line() {
    let fixture = Fixture::new();
    let secret = format!("tok-{}", crate::support::procs::nonce());
    // In args it would be in `ps`: refused, naming the server and the way to pass it.
    let mut entry = fixture.stdio(&["--name", "${SERVICE_TOKEN}"]);
    let config = fixture.config(json!({"t": entry.clone()}));
    let server = FakeModel::start(Script::new());
    let (code, events) = list_with_env(
        &fixture,
        &server,
        &["--mcp-config", config.to_str().unwrap()],
        &[("SERVICE_TOKEN", &secret)],
    );
    assert_eq!(code, 2, "{events:?}");
    let error = &messages(&events, "error")[0];
    assert!(
        error.contains("MCP server `t`") && error.contains("pass it in `env`"),
        "{error}"
    );
    assert!(fixture.record().is_empty());

    // In env it reaches the server (though withheld from commands at medium), and while the
    // server runs, no process's command line holds it, for root or for anyone else, and its
    // environment is its own user's to read.
    entry = fixture.stdio(&[]);
    entry["env"] = json!({"SERVICE_TOKEN": "${SERVICE_TOKEN}"});
    let config = fixture.config(json!({"t": entry}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "mcp__t__env",
                json!({"name": "SERVICE_TOKEN"}),
            ))
            .reply(Reply::tool_call("mcp__t__slow", json!({})))
            .reply(Reply::text("too late")),
    );
    let mut command = fixture.medium(&server, &config);
    command.env("SERVICE_TOKEN", &secret);
    let (mut child, _cleanup) = fixture.spawn_mid_slow_call(command);
    assert_eq!(
        last_tool_result(&server.requests()[1]),
        "[REDACTED]",
        "the server has it, and what it says of it is masked"
    );
    let pid = fixture.server_pid();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    assert!(
        String::from_utf8_lossy(&environ).contains(&secret),
        "the server has it"
    );
    let as_root: Vec<_> = crate::support::procs::processes(&secret);
    assert!(as_root.is_empty(), "in a command line: {as_root:?}");
    let nobody = |args: &[&str]| {
        std::process::Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
            .args(args)
            .output()
            .unwrap()
    };
    let ps = nobody(&["ps", "-eo", "pid,args"]);
    assert!(ps.status.success(), "{ps:?}");
    let listing = String::from_utf8_lossy(&ps.stdout);
    assert!(
        listing.contains("mcp-test-server"),
        "the listing shows the server: {listing}"
    );
    assert!(!listing.contains(&secret), "{listing}");
    let environ = nobody(&["cat", &format!("/proc/{pid}/environ")]);
    assert!(
        !environ.status.success(),
        "another user read its environment"
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    wait_for("zero to exit", Duration::from_secs(5), || {
        child.try_wait().unwrap()
    });
    assert_gone_within_3s(pid);
}

#[test]
fn a_result_over_16_mib_fails_at_once_naming_its_size_and_the_server_goes_on() {
    let fixture = Fixture::new();
    let mut entry = fixture.stdio(&[]);
    entry["tool_timeout_ms"] = json!(120_000);
    let config = fixture.config(json!({"t": entry}));
    let size = 20 * 1024 * 1024;
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("mcp__t__big", json!({ "bytes": size })))
            .reply(Reply::tool_call(
                "mcp__t__echo",
                json!({"text": "still here"}),
            ))
            .reply(Reply::text("done")),
    );
    let started = std::time::Instant::now();
    let (code, events) = fixture.run_medium(&server, &config);
    assert_eq!(code, 0, "{events:?}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "answered at once, not at the tool timeout: {:?}",
        started.elapsed()
    );
    let requests = server.requests();
    let result = last_tool_result(&requests[1]);
    assert!(
        result.contains("`mcp__t__big`")
            && result.contains("20.0 MiB")
            && result.contains("over the 16.0 MiB (16777216 bytes)")
            && result.contains("server stays connected"),
        "{result}"
    );
    assert_eq!(last_tool_result(&requests[2]), "still here");
    let record = fixture.record();
    assert!(
        record.contains(&"call echo".to_string()),
        "the same server answered the next call: {record:?}"
    );
    assert_eq!(
        record
            .iter()
            .filter(|line| line.starts_with("pid "))
            .count(),
        1
    );
}

#[test]
fn tools_whose_names_clash_are_renamed_stably_with_a_warning_and_filters_take_the_new_name() {
    let fixture = Fixture::new();
    let server = FakeModel::start(Script::new());
    let listing = |order: [&str; 2], extra: &[&str]| {
        let entry = fixture.stdio(&["--tool", order[0], "--tool", order[1]]);
        let config = fixture.config(json!({"t": entry}));
        let config = config.to_str().unwrap();
        let args = [&["--auto", "medium", "--mcp-config", config], extra].concat();
        let (code, events) = list_with_env(&fixture, &server, &args, &[]);
        assert_eq!(code, 0, "{events:?}");
        let names: Vec<String> = of_type(&events, "tools")[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_string())
            .filter(|name| name.starts_with("mcp__t__a"))
            .collect();
        (names, messages(&events, "warning"))
    };
    let (names, warnings) = listing(["a.b", "a_b"], &[]);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"mcp__t__a_b".to_string()));
    let renamed = names.iter().find(|name| *name != "mcp__t__a_b").unwrap();
    assert!(renamed.starts_with("mcp__t__a_b_"), "{renamed}");
    let warning = warnings
        .iter()
        .find(|warning| warning.contains("would both be called"))
        .unwrap();
    assert!(
        warning.contains("`a.b`") && warning.contains("`a_b`") && warning.contains(renamed),
        "{warning}"
    );
    assert_eq!(
        listing(["a_b", "a.b"], &[]).0,
        names,
        "the same names whatever order the server lists its tools in"
    );
    let (only, _) = listing(["a.b", "a_b"], &["--enabled-tools", renamed]);
    assert_eq!(only, std::slice::from_ref(renamed));

    // Two servers whose tools' names would meet: the name that makes them meet is refused.
    let config = fixture.config(json!({"x": fixture.stdio(&[]), "x_": fixture.stdio(&[])}));
    let (code, events) = list_with_env(
        &fixture,
        &server,
        &["--mcp-config", config.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 2, "{events:?}");
    let error = &messages(&events, "error")[0];
    assert!(
        error.contains("MCP server `x_`") && error.contains("not ending in `_`"),
        "{error}"
    );
}

#[test]
fn unknown_keys_in_every_mcp_configuration_are_warned_with_the_closest_known_key() {
    let fixture = Fixture::new();
    let server = FakeModel::start(Script::new());
    let config_home = fixture.dir.path().join("config");
    std::fs::create_dir_all(config_home.join("zero")).unwrap();
    std::fs::write(
        config_home.join("zero/config.toml"),
        "[mcp_servers.fromtoml]\ncommand = \"true\"\ndisabled = true\nrequierd = true\n",
    )
    .unwrap();
    let mut entry = fixture.stdio(&[]);
    entry["tool_timout_ms"] = json!(5);
    entry["oauth"] = json!({"clientId": "claude-code-key, passed in silence"});
    let config = fixture.dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"t": entry}, "mcpServer": {}}).to_string(),
    )
    .unwrap();
    let (code, events) = list_with_env(
        &fixture,
        &server,
        &["--mcp-config", config.to_str().unwrap()],
        &[("XDG_CONFIG_HOME", config_home.to_str().unwrap())],
    );
    assert_eq!(code, 0, "{events:?}");
    let warnings = messages(&events, "warning");
    let about = |key: &str| {
        warnings
            .iter()
            .filter(|warning| warning.contains(&format!("unknown key `{key}`")))
            .cloned()
            .collect::<Vec<_>>()
    };
    let requierd = about("requierd");
    assert!(
        requierd.len() == 1
            && requierd[0].contains("MCP server `fromtoml`")
            && requierd[0].contains("config.toml")
            && requierd[0].contains("the closest known key is `required`"),
        "{warnings:?}"
    );
    let timeout = about("tool_timout_ms");
    assert!(
        timeout.len() == 1 && timeout[0].contains("`tool_timeout_ms`"),
        "{warnings:?}"
    );
    let file_key = about("mcpServer");
    assert!(
        file_key.len() == 1 && file_key[0].contains("`mcpServers`"),
        "{warnings:?}"
    );
    assert!(about("oauth").is_empty(), "{warnings:?}");
}

/// Over HTTP, rmcp's client refuses an event over 16 MiB itself and ends that request at
/// once (as "Transport closed": it says no more), and the server stays connected.
#[test]
fn a_result_over_16_mib_over_http_fails_at_once_and_the_server_goes_on() {
    let fixture = Fixture::new();
    let (mut http, url) = fixture.http_server(&[]);
    let config = fixture.config(json!({"web": {"url": url, "tool_timeout_ms": 120_000}}));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "mcp__web__big",
                json!({"bytes": 20 * 1024 * 1024}),
            ))
            .reply(Reply::tool_call(
                "mcp__web__echo",
                json!({"text": "over http"}),
            ))
            .reply(Reply::text("done")),
    );
    let started = std::time::Instant::now();
    let (code, events) = fixture.run_medium(&server, &config);
    let _ = http.kill();
    let _ = http.wait();
    assert_eq!(code, 0, "{events:?}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "answered at once, not at the tool timeout: {:?}",
        started.elapsed()
    );
    let requests = server.requests();
    let failed = last_tool_result(&requests[1]);
    assert!(failed.contains("MCP server `web`"), "{failed}");
    assert_eq!(last_tool_result(&requests[2]), "over http");
}
