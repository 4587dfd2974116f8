//! Hooks through the real binary: real hook scripts (sh and python3) configured in config.toml,
//! a `--hooks` file or a Claude Code settings.json given with `--rules`, run by zero around real tool calls against
//! the fake model server. What a hook decides is checked where a user sees it: the tool's
//! result, the file the call would have written, the next request the model gets, the exit
//! code; and nothing a hook started is left running.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::fake_model::{FakeModel, Reply, Route, Script};
use crate::support::procs::{KillOnDrop, assert_gone_soon, nonce, processes};
use crate::support::runs::{Exec, Home};
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{finished_stream, tool_outputs, zero, zero_openai};

mod claude_code;

/// A workspace, and a directory beside it for the hook scripts and files.
struct Setup {
    workspace: TempDir,
    hooks: TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            workspace: tempfile::tempdir().unwrap(),
            hooks: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes an executable script named `name` with `body` and returns its path.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.hooks.path().join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// Writes a hooks file named `name` with `text` and returns its path.
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.hooks.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `zero exec --auto medium -o stream-json` in the workspace with `flags`, ending `code`.
    fn run(&self, server: &FakeModel, flags: &[&str], code: i32) -> Vec<Value> {
        self.run_at("medium", server, flags, code)
    }

    /// [`Setup::run`] at `--auto auto`.
    fn run_at(&self, auto: &str, server: &FakeModel, flags: &[&str], code: i32) -> Vec<Value> {
        let mut cmd = zero_openai(server);
        cmd.args(["exec", "--auto", auto, "-o", "stream-json"])
            .args(flags)
            .arg("go")
            .current_dir(self.workspace.path());
        finished_stream(&mut cmd, code)
    }

    /// A hooks file with one hook at `point` (zero's TOML shape) that runs the script `name`
    /// made of `body`, with the entry's other `keys` (TOML lines); returns the file's path.
    fn hook(&self, point: &str, name: &str, body: &str, keys: &str) -> PathBuf {
        let script = self.script(name, body);
        let text = format!(
            "[[hooks.{point}]]\ncommand = \"{}\"\n{keys}",
            script.display()
        );
        self.file(&format!("{name}.toml"), &text)
    }

    fn in_workspace(&self, name: &str) -> PathBuf {
        self.workspace.path().join(name)
    }
}

/// The other keys of a `pre_tool_use` hook for `bash` (see [`Setup::hook`]).
const FOR_BASH: &str = "matcher = \"bash\"\ntimeout = \"5s\"\n";

/// A `pre_tool_use` hook in zero's TOML shape, running `script` for `bash`.
fn pre_bash(script: &Path) -> String {
    format!(
        "[[hooks.pre_tool_use]]\ncommand = \"{}\"\n{FOR_BASH}",
        script.display()
    )
}

fn bash(command: &str) -> Reply {
    Reply::tool_call("bash", json!({ "command": command }))
}

/// The events of type `kind`.
fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// A bash call that would write `marker`, then an answer.
fn writes_marker() -> FakeModel {
    FakeModel::start(
        Script::new()
            .reply(bash("echo ran > marker"))
            .reply(Reply::text("done")),
    )
}

#[test]
fn a_pre_tool_use_hook_denies_a_call_in_zero_json_and_the_model_is_told_why() {
    let setup = Setup::new();
    let file = setup.hook(
        "pre_tool_use",
        "deny.sh",
        "#!/bin/sh\ncat > /dev/null\necho '{\"decision\": \"deny\", \"reason\": \"no writes today\"}'\n",
        FOR_BASH,
    );
    let server = writes_marker();
    let events = setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
    assert!(!setup.in_workspace("marker").exists(), "the call ran");
    let outputs = tool_outputs(&events);
    assert!(
        outputs[0].contains("no writes today") && outputs[0].contains("deny.sh"),
        "{outputs:?}"
    );
    let decisions = of_type(&events, "permission_decision");
    assert_eq!(decisions.len(), 1, "{events:?}");
    let hooks = of_type(&events, "hook");
    assert_eq!(hooks[0]["event"], "pre_tool_use");
    assert_eq!(hooks[0]["decision"], "deny");
    assert_eq!(hooks[0]["tool"], "bash");
    assert!(hooks[0]["durationMs"].is_u64());
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("no writes today"), "{second}");
}

#[test]
fn a_claude_code_hook_script_from_a_settings_json_works_unchanged() {
    let setup = Setup::new();
    // Reads Claude Code's input and answers in its words, as such a script does.
    let hook = setup.script(
        "guard.py",
        r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
assert data["hook_event_name"] == "PreToolUse"
command = data["tool_input"]["command"]
if data["tool_name"] == "Bash" and "marker" in command:
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "markers are not allowed: " + command}}))
"#,
    );
    let settings = json!({
        "permissions": {"allow": []},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": hook.display().to_string(), "timeout": 10}
        ]}]}
    });
    let file = setup.file("settings.json", &settings.to_string());
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_calls(vec![
                ("bash", json!({"command": "echo ran > marker"})),
                ("bash", json!({"command": "echo fine > other"})),
            ]))
            .reply(Reply::text("done")),
    );
    // The file that carries a team's permission rules carries its hooks too.
    let events = setup.run(&server, &["--rules", file.to_str().unwrap()], 0);
    let outputs = tool_outputs(&events);
    assert!(
        outputs[0].contains("markers are not allowed: echo ran > marker"),
        "{outputs:?}"
    );
    assert!(!setup.in_workspace("marker").exists());
    assert!(setup.in_workspace("other").exists(), "{outputs:?}");
}

#[test]
fn exit_code_2_denies_with_stderr_as_the_reason() {
    let setup = Setup::new();
    let file = setup.hook(
        "pre_tool_use",
        "exit2.sh",
        "#!/bin/sh\necho 'blocked by policy' >&2\nexit 2\n",
        FOR_BASH,
    );
    let server = writes_marker();
    let events = setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
    assert!(!setup.in_workspace("marker").exists());
    assert!(tool_outputs(&events)[0].contains("blocked by policy"));
}

#[test]
fn a_hook_rewrites_the_arguments_the_call_runs_with() {
    let setup = Setup::new();
    let file = setup.hook(
        "pre_tool_use",
        "rewrite.sh",
        "#!/bin/sh\ncat > /dev/null\necho '{\"arguments\": {\"command\": \"echo rewritten > marker\"}}'\n",
        FOR_BASH,
    );
    let server = writes_marker();
    let events = setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
    let written = std::fs::read_to_string(setup.in_workspace("marker")).unwrap();
    assert_eq!(written, "rewritten\n");
    assert_eq!(of_type(&events, "hook")[0]["decision"], "rewrite");
}

#[test]
fn a_post_tool_use_note_reaches_the_model_with_the_result() {
    let setup = Setup::new();
    let file = setup.hook(
        "post_tool_use",
        "note.sh",
        "#!/bin/sh\ncat > /dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"remember the linter\"}}'\n",
        "matcher = \"Bash\"\n",
    );
    let server = writes_marker();
    setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
    assert!(setup.in_workspace("marker").exists());
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("remember the linter"), "{second}");
}

/// A `post_tool_use` hook that exits 2 cannot refuse a call that has run: its reason is a
/// note to the model, and its `hook` event says `note`, not `deny`.
#[test]
fn a_post_tool_use_exit_2_is_a_note_and_its_event_says_so() {
    let setup = Setup::new();
    let file = setup.hook(
        "post_tool_use",
        "objects.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'run the linter next' >&2\nexit 2\n",
        "matcher = \"Bash\"\n",
    );
    let server = writes_marker();
    let events = setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
    assert!(setup.in_workspace("marker").exists());
    let hook = &of_type(&events, "hook")[0];
    assert_eq!(hook["decision"], "note", "{hook}");
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("run the linter next"), "{second}");
}

#[test]
fn a_hook_that_times_out_crashes_or_prints_garbage_denies_and_leaves_nothing_running() {
    let nonce = nonce();
    let _cleanup = KillOnDrop(nonce.clone());
    let bodies = [
        // Past its timeout, with a child of its own still running.
        format!("#!/bin/sh\nsleep {nonce}1 &\nsleep {nonce}2\n"),
        "#!/bin/sh\necho 'Traceback: boom' >&2\nexit 1\n".to_string(),
        "#!/bin/sh\ncat > /dev/null\necho 'all good, go ahead'\n".to_string(),
    ];
    for (index, body) in bodies.iter().enumerate() {
        let setup = Setup::new();
        let file = setup.hook(
            "pre_tool_use",
            &format!("failing{index}.sh"),
            body,
            "timeout = \"1s\"\n",
        );
        let server = writes_marker();
        let events = setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
        assert!(!setup.in_workspace("marker").exists(), "{body}");
        let output = &tool_outputs(&events)[0];
        assert!(
            output.contains("hook") && output.contains("failed"),
            "{output}"
        );
        assert_eq!(of_type(&events, "hook")[0]["decision"], "failed");
        let why = [
            "ran past its timeout",
            "exited with code 1",
            "not a JSON object",
        ][index];
        assert!(output.contains(why), "{output}");
        assert_gone_soon(&nonce);
    }
}

#[test]
fn hooks_fail_open_lets_the_call_through_a_failing_hook() {
    let setup = Setup::new();
    let file = setup.hook("pre_tool_use", "crash.sh", "#!/bin/sh\nexit 1\n", FOR_BASH);
    let server = writes_marker();
    setup.run(
        &server,
        &["--hooks", file.to_str().unwrap(), "--hooks-fail-open"],
        0,
    );
    assert!(setup.in_workspace("marker").exists());
}

#[test]
fn a_stop_hook_that_always_refuses_ends_the_run_incomplete_after_its_bound() {
    let setup = Setup::new();
    let file = setup.hook(
        "stop",
        "never.sh",
        "#!/bin/sh\ncat > /dev/null\necho '{\"decision\": \"block\", \"reason\": \"tests are not green\"}'\n",
        "",
    );
    let mut script = Script::new();
    for _ in 0..10 {
        script = script.reply(Reply::text("done"));
    }
    let server = FakeModel::start(script);
    let events = setup.run(&server, &["--hooks", file.to_str().unwrap()], 4);
    // Three refusals go back to the model; the fourth ends the run.
    assert_eq!(server.requests().len(), 4);
    assert_eq!(of_type(&events, "hook").len(), 4);
    let error = of_type(&events, "error")[0];
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("tests are not green"),
        "{error}"
    );
    assert!(
        server.requests()[1]
            .raw_body
            .contains("tests are not green")
    );
}

#[test]
fn a_stop_hook_that_refuses_once_sends_the_answer_back_and_the_run_succeeds() {
    let setup = Setup::new();
    // In the workspace: a hook is confined as the run's commands are.
    let flag = setup.in_workspace("refused-once");
    let body = format!(
        "#!/bin/sh\ncat > /dev/null\nif [ ! -e {0} ]; then touch {0}; echo 'run the tests first' >&2; exit 2; fi\n",
        flag.display()
    );
    let file = setup.hook("stop", "once.sh", &body, "");
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text("first"))
            .reply(Reply::text("second")),
    );
    let events = setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
    assert_eq!(of_type(&events, "final")[0]["text"], "second");
    assert!(
        server.requests()[1]
            .raw_body
            .contains("run the tests first")
    );
}

#[test]
fn hooks_in_config_toml_run_and_a_bad_one_is_a_usage_error_naming_its_key() {
    let setup = Setup::new();
    let hook = setup.script("exit2.sh", "#!/bin/sh\necho 'from config' >&2\nexit 2\n");
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("zero")).unwrap();
    let write_config = |text: &str| {
        std::fs::write(config.path().join("zero/config.toml"), text).unwrap();
    };
    write_config(&pre_bash(&hook));
    let server = writes_marker();
    let mut cmd = zero_openai(&server);
    cmd.args(["exec", "--auto", "medium", "-o", "stream-json", "go"])
        .current_dir(setup.workspace.path())
        .env("XDG_CONFIG_HOME", config.path());
    let events = finished_stream(&mut cmd, 0);
    assert!(tool_outputs(&events)[0].contains("from config"));

    write_config("[[hooks.pre_tool_use]]\ncommand = \"true\"\ntimeout = \"soon\"\n");
    let output = zero()
        .args(["exec", "go"])
        .env("XDG_CONFIG_HOME", config.path())
        .timeout(DEADLINE)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    assert!(stderr.contains("hooks.pre_tool_use[0].timeout"), "{stderr}");

    let claude = setup.file(
        "settings.json",
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#,
    );
    let output = zero()
        .args(["exec", "--hooks", claude.to_str().unwrap(), "go"])
        .timeout(DEADLINE)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    assert!(stderr.contains("hooks.UserPromptSubmit"), "{stderr}");
}

#[test]
fn a_sigkill_of_zero_mid_hook_leaves_nothing_the_hook_started() {
    let nonce = nonce();
    let _cleanup = KillOnDrop(nonce.clone());
    let setup = Setup::new();
    let file = setup.hook(
        "pre_tool_use",
        "slow.sh",
        &format!("#!/bin/sh\nsleep {nonce}1 &\nsleep {nonce}2\n"),
        "timeout = \"10m\"\n",
    );
    let server = writes_marker();
    let home = Home::new();
    let mut exec = Exec::start_with(&server, &home, &["--hooks", file.to_str().unwrap()]);
    wait_for("the hook's processes", DEADLINE, || {
        (processes(&nonce).len() >= 2).then_some(())
    });
    exec.sigkill();
    assert_gone_soon(&nonce);
}

#[test]
fn a_specialist_runs_its_parents_hooks() {
    let setup = Setup::new();
    let file = setup.hook(
        "pre_tool_use",
        "deny.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'not in a specialist either' >&2\nexit 2\n",
        FOR_BASH,
    );
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains("## Assigned task")
                    .reply(bash("echo ran > child-marker"))
                    .reply(Reply::text("child done")),
            )
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Write the marker."}),
            ))
            .reply(Reply::text("done")),
    );
    setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
    assert!(!setup.in_workspace("child-marker").exists());
    let child_requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.raw_body.contains("## Assigned task"))
        .collect();
    assert_eq!(child_requests.len(), 2);
    assert!(
        child_requests[1]
            .raw_body
            .contains("not in a specialist either")
    );
}

#[test]
fn a_rewrite_into_what_a_rule_denies_is_denied() {
    let setup = Setup::new();
    let file = setup.hook(
        "pre_tool_use",
        "widen.sh",
        "#!/bin/sh\ncat > /dev/null\necho '{\"decision\": \"allow\", \"arguments\": {\"command\": \"touch pushed\"}}'\n",
        FOR_BASH,
    );
    let server = writes_marker();
    let events = setup.run(
        &server,
        &["--hooks", file.to_str().unwrap(), "--deny", "bash(touch *)"],
        0,
    );
    assert!(!setup.in_workspace("pushed").exists());
    assert!(!setup.in_workspace("marker").exists());
    let output = &tool_outputs(&events)[0];
    assert!(
        output.contains("rewrote") && output.contains("touch"),
        "{output}"
    );
}

#[test]
fn session_start_context_reaches_the_first_request() {
    let setup = Setup::new();
    let file = setup.hook(
        "session_start",
        "context.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'The staging database is read-only.'\n",
        "matcher = \"startup\"\n",
    );
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let events = setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
    let first = &server.requests()[0].raw_body;
    assert!(
        first.contains("The staging database is read-only."),
        "{first}"
    );
    assert_eq!(of_type(&events, "hook")[0]["event"], "session_start");
}

#[test]
fn a_session_start_hook_that_fails_ends_the_run_with_a_usage_error_unless_fail_open() {
    let setup = Setup::new();
    let file = setup.hook(
        "session_start",
        "broken.sh",
        "#!/bin/sh\necho 'no context today' >&2\nexit 1\n",
        "",
    );
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let events = setup.run(&server, &["--hooks", file.to_str().unwrap()], 2);
    let error = of_type(&events, "error")[0];
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("session_start") && message.contains("no context today"),
        "{message}"
    );
    assert!(server.requests().is_empty(), "the model was asked");
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    setup.run(
        &server,
        &["--hooks", file.to_str().unwrap(), "--hooks-fail-open"],
        0,
    );
}
