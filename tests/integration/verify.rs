//! The outcome contract through the real binary: `--verify` checks that the work was done
//! before the run may exit 0 (a failed check goes back to the model, a check that never passes
//! is exit 4 `verify_failed`), from the flags, config.toml and a rules file, in a resumed
//! session, in a `--worktree` run and in a specialist through `Task`'s `verify`; checks
//! contained like every command (their timeout kills their tree, the sandbox holds them at
//! `medium`'s writes, SIGTERM stops them); and `--strict`, which fails a run whose work was
//! blocked and changes nothing without it.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, FakeModel, Reply, Route, Script, TASK_ID};
use crate::support::marks::open_dir;
use crate::support::procs::{KillOnDrop, assert_gone_soon, nonce, processes};
use crate::support::runs::{Exec, Home};
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{finished_stream, zero_openai};
use crate::worktrees::{git, record, repository};

/// `zero exec -o stream-json --auto medium` with `flags` in `workspace`, its state in `home`
/// (for runs that leave what a later one reads: a session, a worktree), checked to end with
/// `code`; its events.
fn run_at_home(
    server: &FakeModel,
    home: &Home,
    workspace: &Path,
    flags: &[&str],
    code: i32,
) -> Vec<Value> {
    finished_stream(
        zero_openai(server)
            .env("ZERO_HOME", home.path())
            .args(["exec", "-o", "stream-json", "--auto", "medium"])
            .args(flags)
            .arg("go")
            .current_dir(workspace),
        code,
    )
}

/// `zero exec -o stream-json --auto LEVEL` with `flags` in `workspace`, against `server`,
/// checked to end with `code`; its events.
fn run(server: &FakeModel, workspace: &Path, level: &str, flags: &[&str], code: i32) -> Vec<Value> {
    finished_stream(
        zero_openai(server)
            .args(["exec", "-o", "stream-json", "--auto", level])
            .args(flags)
            .arg("fix the failing test")
            .current_dir(workspace),
        code,
    )
}

/// The events of type `kind`.
fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The `error` event's code and message.
fn error(events: &[Value]) -> (String, String) {
    let error = of_type(events, "error")[0];
    (
        error["code"].as_str().unwrap().to_string(),
        error["message"].as_str().unwrap().to_string(),
    )
}

/// `run_end.verify`.
fn verified(events: &[Value]) -> Value {
    events.last().unwrap()["verify"].clone()
}

/// A model that answers `first`, is told the check failed, writes `path`, and answers `second`.
fn answers_then_writes(first: &str, path: &str, content: &str, second: &str) -> [Reply; 3] {
    [
        Reply::text(first),
        Reply::tool_call("write_file", json!({"path": path, "content": content})),
        Reply::text(second),
    ]
}

/// A model that answers, is told the check failed, writes `fixed`, and answers again.
fn fixes_after_one_answer() -> Script {
    answers_then_writes("Done.", "fixed", "ok\n", "Fixed for real.")
        .into_iter()
        .fold(Script::new(), Script::reply)
}

#[test]
fn a_check_that_fails_once_passes_after_the_models_second_answer() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(fixes_after_one_answer());
    let check = "test -e fixed || { echo 'test parse ... FAILED'; exit 101; }";
    let events = run(&server, workspace.path(), "medium", &["--verify", check], 0);
    let ends = of_type(&events, "verify_end");
    assert_eq!(ends.len(), 2, "{events:?}");
    assert_eq!(
        (&ends[0]["status"], &ends[0]["exitCode"]),
        (&json!("failed"), &json!(101))
    );
    assert_eq!(
        (&ends[1]["status"], &ends[1]["attempt"]),
        (&json!("passed"), &json!(2))
    );
    assert_eq!(of_type(&events, "verify_start").len(), 2);
    let report = verified(&events);
    assert_eq!(report[0]["attempts"], 2, "{report}");
    assert_eq!(report[0]["status"], "passed", "{report}");
    assert!(report[0]["durationMs"].is_u64(), "{report}");
    // The failure went back to the model as the next user turn, with the check's output.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let told = &requests[1].raw_body;
    assert!(told.contains("failed (exit 101)"), "{told}");
    assert!(told.contains("test parse ... FAILED"), "{told}");
    assert_eq!(of_type(&events, "final")[0]["text"], "Fixed for real.");
}

#[test]
fn a_check_that_never_passes_ends_the_run_verify_failed_with_the_end_of_its_output() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text("Done."))
            .reply(Reply::text("Done, really.")),
    );
    let check = "echo 'assertion failed: left == right'; exit 101";
    let flags = ["--verify", check, "--verify-retries", "1"];
    let events = run(&server, workspace.path(), "medium", &flags, 4);
    let (code, message) = error(&events);
    assert_eq!(code, "verify_failed");
    assert!(message.contains("failed (exit 101)"), "{message}");
    assert!(
        message.contains("assertion failed: left == right"),
        "{message}"
    );
    assert!(message.contains("after 1 retry"), "{message}");
    let report = verified(&events);
    assert_eq!(report[0]["status"], "failed", "{report}");
    assert_eq!(
        (&report[0]["attempts"], &report[0]["exitCode"]),
        (&json!(2), &json!(101))
    );
    assert!(
        report[0]["output"]
            .as_str()
            .unwrap()
            .contains("assertion failed")
    );
    assert_eq!(server.requests().len(), 2);
    // The model's account of its work is still printed.
    assert_eq!(of_type(&events, "final")[0]["text"], "Done, really.");
}

#[test]
fn a_check_past_its_timeout_is_stopped_with_everything_it_started() {
    let nonce = nonce();
    let _cleanup = KillOnDrop(nonce.clone());
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(Script::new().reply(Reply::text("Done.")));
    let check = format!("sleep {nonce}1 & sleep {nonce}2");
    let flags = [
        "--verify",
        &check,
        "--verify-timeout",
        "1s",
        "--verify-retries",
        "0",
    ];
    let events = run(&server, workspace.path(), "medium", &flags, 4);
    assert_eq!(error(&events).0, "verify_failed");
    let end = of_type(&events, "verify_end")[0];
    assert_eq!(end["status"], "timed_out", "{end}");
    assert!(end["durationMs"].as_u64().unwrap() >= 1000, "{end}");
    assert!(
        error(&events).1.contains("timed out after 1s"),
        "{events:?}"
    );
    assert_gone_soon(&nonce);
}

#[test]
fn a_check_writes_the_workspace_at_every_level_and_nothing_outside_it() {
    let outside = open_dir();
    let marker = outside.path().join("marker");
    for level in ["low", "medium"] {
        let workspace = tempfile::tempdir().unwrap();
        let server = FakeModel::start(Script::new().reply(Reply::text("Done.")));
        // A build writes the workspace: at `low` too, where the model's commands may not.
        let builds = "echo built > target.txt && test -e target.txt";
        let escapes = format!("touch '{}'", marker.display());
        let flags = [
            "--sandbox",
            "required",
            "--verify",
            builds,
            "--verify",
            &escapes,
            "--verify-retries",
            "0",
        ];
        let events = run(&server, workspace.path(), level, &flags, 4);
        let ends = of_type(&events, "verify_end");
        assert_eq!(ends[0]["status"], "passed", "{level}: {events:?}");
        assert!(workspace.path().join("target.txt").exists(), "{level}");
        assert_eq!(ends[1]["status"], "failed", "{level}: {events:?}");
        assert!(
            !marker.exists(),
            "{level}: the check wrote outside the workspace"
        );
    }
}

#[test]
fn a_sigterm_during_a_check_stops_it_and_the_run_exits_143() {
    let nonce = nonce();
    let _cleanup = KillOnDrop(nonce.clone());
    let server = FakeModel::start(Script::new().reply(Reply::text("Done.")));
    let home = Home::new();
    let check = format!("sleep {nonce}1 & sleep {nonce}2");
    let exec = Exec::start_with(&server, &home, &["--verify", &check]);
    wait_for("the check's processes", DEADLINE, || {
        (processes(&nonce).len() >= 2).then_some(())
    });
    let (code, events) = exec.terminate();
    assert_eq!(code, 143, "{events:?}");
    assert_eq!(of_type(&events, "verify_end")[0]["status"], "cancelled");
    assert_eq!(error(&events).0, "terminated");
    assert_gone_soon(&nonce);
}

#[test]
fn checks_from_config_toml_and_a_rules_file_run_with_the_flags() {
    let workspace = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let file = config.path().join("zero/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        "verify = [\"echo from-config\"]\nverify_retries = 0\n",
    )
    .unwrap();
    let rules = workspace.path().join("rules.toml");
    std::fs::write(&rules, "verify = [\"echo from-rules\"]\n").unwrap();
    let server = FakeModel::start(Script::new().reply(Reply::text("Done.")));
    let events = finished_stream(
        zero_openai(&server)
            .env("XDG_CONFIG_HOME", config.path())
            .args(["exec", "-o", "stream-json", "--rules"])
            .arg(&rules)
            .args(["--verify", "exit 3", "go"])
            .current_dir(workspace.path()),
        4,
    );
    let commands: Vec<&str> = of_type(&events, "verify_start")
        .iter()
        .map(|e| e["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["echo from-config", "echo from-rules", "exit 3"]);
    assert_eq!(error(&events).0, "verify_failed");
}

#[test]
fn a_resumed_session_checks_its_own_answer_again() {
    let workspace = tempfile::tempdir().unwrap();
    let home = Home::new();
    let session = |server: &FakeModel, flags: &[&str], code: i32| {
        let check = ["--verify", "test -e fixed", "--verify-retries", "0"];
        run_at_home(
            server,
            &home,
            workspace.path(),
            &[flags, &check].concat(),
            code,
        )
    };
    let server = FakeModel::start(Script::new().reply(Reply::text("Done.")));
    let first = session(&server, &["--session-id", "fix-1"], 4);
    assert_eq!(error(&first).0, "verify_failed");
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "write_file",
                json!({"path": "fixed", "content": "ok\n"}),
            ))
            .reply(Reply::text("Fixed now.")),
    );
    let resumed = session(&server, &["--resume", "fix-1"], 0);
    let report = verified(&resumed);
    assert_eq!(
        (&report[0]["status"], &report[0]["attempts"]),
        (&json!("passed"), &json!(1))
    );
    // The resumed conversation holds the answer the check did not pass on.
    assert!(server.requests()[0].raw_body.contains("Done."));
}

#[test]
fn a_worktree_run_is_verified_in_its_worktree_before_the_commit_and_kept_when_it_fails() {
    let repo = repository();
    let home = Home::new();
    let server = FakeModel::start(fixes_after_one_answer());
    let flags = ["--worktree=v-1", "--verify", "test -e fixed"];
    let events = run_at_home(&server, &home, repo.path(), &flags, 0);
    assert_eq!(verified(&events)[0]["attempts"], 2);
    let commit = events.last().unwrap()["worktreeCommit"].as_str().unwrap();
    assert_eq!(
        git(repo.path(), &["show", &format!("{commit}:fixed")]),
        "ok"
    );
    assert!(!home.path().join("worktrees/v-1").exists());

    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "write_file",
                json!({"path": "half.txt", "content": "half\n"}),
            ))
            .reply(Reply::text("Done.")),
    );
    let flags = [
        "--worktree=v-2",
        "--verify",
        "exit 1",
        "--verify-retries",
        "0",
    ];
    let events = run_at_home(&server, &home, repo.path(), &flags, 4);
    assert_eq!(error(&events).0, "verify_failed");
    let kept = home.path().join("worktrees/v-2");
    assert!(
        kept.join("half.txt").exists(),
        "the failed run's worktree is kept"
    );
    let warning = of_type(&events, "warning")
        .into_iter()
        .find_map(|w| w["message"].as_str().filter(|m| m.contains("is kept at")))
        .unwrap_or_else(|| panic!("no warning says the worktree is kept: {events:?}"));
    assert!(warning.contains(&kept.display().to_string()), "{warning}");
    assert_eq!(record(&home, "v-2")["directory"], "kept");
    let commit = events.last().unwrap()["worktreeCommit"].as_str().unwrap();
    assert_eq!(
        git(repo.path(), &["show", &format!("{commit}:half.txt")]),
        "half"
    );
}

/// The child's side of a specialist whose check (`test -e child.txt`) fails on its first
/// answer and passes on its second, after it made the file.
fn child_passing_on_its_second_answer() -> Route {
    answers_then_writes("child done", "child.txt", "made\n", "child done for real")
        .into_iter()
        .fold(Route::body_contains(CHILD), Route::reply)
}

/// A script whose child passes `test -e child.txt` on its second answer, and whose first
/// reply launches the `worker` specialist with that check and the `Task` arguments `more`.
fn launching_the_worker(more: Value) -> Script {
    let mut args = json!({"name": "worker", "prompt": "Make child.txt.",
                          "verify": ["test -e child.txt"]});
    args.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    Script::new()
        .route(child_passing_on_its_second_answer())
        .reply(Reply::tool_call("Task", args))
}

/// A background specialist's checks are in its `TaskOutput`, as in a foreground `Task` result.
#[test]
fn a_background_specialist_s_checks_are_in_its_task_output() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(
        launching_the_worker(json!({"run_in_background": true}))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "block": true, "timeout_ms": 30_000}),
            ))
            .reply(Reply::text("all done")),
    );
    let events = run(&server, workspace.path(), "medium", &[], 0);
    let output = of_type(&events, "tool_result")[1]["output"]
        .as_str()
        .unwrap();
    assert!(
        output.contains("check `test -e child.txt`: passed, 2 attempts"),
        "{output}"
    );
}

#[test]
fn a_specialist_must_pass_the_check_its_task_hands_it() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(launching_the_worker(json!({})).reply(Reply::text("all done")));
    let events = run(&server, workspace.path(), "medium", &[], 0);
    assert!(workspace.path().join("child.txt").exists());
    let result = of_type(&events, "tool_result")[0];
    assert_eq!(result["status"], "ok", "{result}");
    let output = result["output"].as_str().unwrap();
    assert!(
        output.contains("check `test -e child.txt`: passed, 2 attempts"),
        "{output}"
    );
    // The check was the child's own: the parent ran none.
    assert!(of_type(&events, "verify_start").is_empty());
    let nine: Vec<String> = (0..9).map(|n| format!("test {n} -ge 0")).collect();
    let too_many = json!({"name": "worker", "prompt": "p", "verify": nine});
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("Task", too_many))
            .reply(Reply::text("gave up")),
    );
    let events = run(&server, workspace.path(), "medium", &[], 0);
    let output = of_type(&events, "tool_result")[0]["output"]
        .as_str()
        .unwrap();
    assert!(output.contains("`verify`: 9 checks given"), "{output}");
}

/// A run that meets one cause of `--strict`, with the flags it needs and the words its
/// message must hold.
struct Blocked {
    level: &'static str,
    flags: Vec<String>,
    script: Script,
    says: &'static str,
}

/// One run per cause `--strict` fails a run for.
fn blocked_runs(mcp_config: &Path) -> Vec<Blocked> {
    let answered = |reply: Reply| Script::new().reply(reply).reply(Reply::text("Done."));
    let cut = r#"{"path": "notes.txt", "content": "the first half of a long"#;
    vec![
        Blocked {
            level: "low",
            flags: Vec::new(),
            script: answered(Reply::tool_call(
                "write_file",
                json!({"path": "x.txt", "content": "x"}),
            )),
            says: "1 call was refused before it ran (by the --auto level, a rule or a hook): \
                   write_file ×1",
        },
        Blocked {
            level: "medium",
            flags: vec!["--mcp-config".into(), mcp_config.display().to_string()],
            script: Script::new().reply(Reply::text("Done.")),
            says: "the MCP server `ghost` did not start",
        },
        Blocked {
            level: "medium",
            flags: Vec::new(),
            script: answered(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Do it."}),
            ))
            .route(Route::body_contains(CHILD).reply(Reply::error(400, "no such model"))),
            says: "the specialist worker (task_",
        },
        Blocked {
            level: "medium",
            flags: Vec::new(),
            script: answered(Reply::tool_call_raw("write_file", cut).max_tokens()),
            says: "a `write_file` call was cut at the output token limit",
        },
    ]
}

#[test]
fn strict_fails_a_run_for_each_cause_after_its_answer_and_nothing_changes_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let mcp_config = dir.path().join("mcp.json");
    let ghost = json!({"mcpServers": {"ghost": {"command": "zero-no-such-mcp-server"}}});
    std::fs::write(&mcp_config, ghost.to_string()).unwrap();
    for strict in [false, true] {
        for cause in blocked_runs(&mcp_config) {
            let workspace = tempfile::tempdir().unwrap();
            let server = FakeModel::start(cause.script);
            let mut flags: Vec<&str> = cause.flags.iter().map(String::as_str).collect();
            if strict {
                flags.push("--strict");
            }
            let code = if strict { 4 } else { 0 };
            let events = run(&server, workspace.path(), cause.level, &flags, code);
            assert_eq!(
                of_type(&events, "final")[0]["text"],
                "Done.",
                "{}",
                cause.says
            );
            if strict {
                let (code, message) = error(&events);
                assert_eq!(code, "blocked", "{message}");
                assert!(message.contains(cause.says), "{message}");
            }
        }
    }
}
