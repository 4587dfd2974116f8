//! Sessions: a run's conversation kept in the data directory, resumed and forked by later
//! runs, safe when runs overlap or die. Through the real binary, against the fake model.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, RecordedRequest, Reply, Script};
use crate::support::procs::{fd_copy_of, let_go_soon};
use crate::support::runs::Home;
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{Wire, events, stream_of, zero_std_with};

/// A workspace and a data directory that the runs of one test share.
struct Place {
    home: Home,
    workspace: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        Place {
            home: Home::new(),
            workspace: tempfile::tempdir().unwrap(),
        }
    }

    /// `zero exec --auto medium -o stream-json FLAGS PROMPT` in the workspace.
    fn command(&self, server: &FakeModel, flags: &[&str], prompt: &str) -> Command {
        let mut command = zero_std_with(server, Wire::OpenAi);
        command.arg("exec");
        if !flags.contains(&"--auto") {
            command.args(["--auto", "medium"]);
        }
        command
            .args(["-o", "stream-json"])
            .args(flags)
            .arg(prompt)
            .current_dir(self.workspace.path())
            .env("ZERO_HOME", self.home.path())
            .env("ZERO_KILL_GRACE_MS", "300")
            .stdin(Stdio::null());
        command
    }

    /// Runs it to the end: the exit code and the events, checked.
    fn run(&self, server: &FakeModel, flags: &[&str], prompt: &str) -> (i32, Vec<Value>) {
        let output = self.command(server, flags, prompt).output().unwrap();
        let (code, events) = stream_of(&output);
        (code, events)
    }

    fn session_dir(&self, id: &str) -> PathBuf {
        self.home.path().join("sessions").join(id)
    }

    /// Session `id`'s `session.json`, parsed.
    fn meta(&self, id: &str) -> Value {
        let record = std::fs::read(self.session_dir(id).join("session.json")).unwrap();
        serde_json::from_slice(&record).unwrap()
    }
}

/// A model that answers each request with the next of `answers`.
fn answers(answers: &[&str]) -> Script {
    answers.iter().fold(Script::new(), |script, answer| {
        script.reply(Reply::text(answer))
    })
}

fn run_start(events: &[Value]) -> &Value {
    events.iter().find(|e| e["type"] == "run_start").unwrap()
}

fn error_message(events: &[Value]) -> String {
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    error["message"].as_str().unwrap().to_string()
}

/// The conversation of an OpenAI-wire request, without its system prompt, as (role, text).
fn conversation(request: &RecordedRequest) -> Vec<(String, String)> {
    request.body["messages"].as_array().unwrap()[1..]
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(text) => text.clone(),
                _ => m["tool_calls"].to_string(),
            };
            (m["role"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

/// A spawned run killed (SIGKILL) and reaped when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_resumed_run_sends_the_earlier_conversation_then_the_new_prompt() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("glob", json!({"pattern": "*"})).with_usage(100, 10))
            .reply(Reply::text("The workspace is empty.").with_usage(120, 5))
            .reply(Reply::text("Still empty.").with_usage(200, 3)),
    );
    let place = Place::new();
    let (code, first) = place.run(&server, &["--session-id", "ci-42"], "what is here?");
    assert_eq!(code, 0, "{first:?}");
    assert_eq!(run_start(&first)["sessionId"], "ci-42");
    let first_run = first[0]["runId"].clone();
    let (code, second) = place.run(&server, &["--resume", "ci-42"], "look again");
    assert_eq!(code, 0, "{second:?}");
    let start = run_start(&second);
    assert_eq!(start["sessionId"], "ci-42");
    assert_eq!(start["resumedFrom"], first_run);
    assert!(start.get("permissionsChanged").is_none(), "{start}");
    let requests = server.requests();
    let resumed = conversation(&requests[2]);
    let roles: Vec<&str> = resumed.iter().map(|(role, _)| role.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant", "user"],
        "{resumed:?}"
    );
    assert_eq!(resumed[0].1, "what is here?");
    assert_eq!(resumed[3].1, "The workspace is empty.");
    assert_eq!(resumed[4].1, "look again");
    // The session's total spans both runs; the run's own usage is its own.
    let end = second.last().unwrap();
    assert_eq!(end["usage"]["totalTokens"], 203);
    assert_eq!(end["sessionUsage"]["totalTokens"], 438);
    let meta: Value = place.meta("ci-42");
    assert_eq!(meta["runs"], 2);
    assert_eq!(meta["status"], "completed");
    assert_eq!(meta["lastRun"], second[0]["runId"]);
}

#[test]
fn resume_last_picks_this_workspaces_newest_session() {
    let server = FakeModel::start(answers(&["one", "two", "three"]));
    let place = Place::new();
    // `older` sorts after `newer` by name: only the time of use can order them right.
    place.run(&server, &["--session-id", "older"], "first");
    place.run(&server, &["--session-id", "newer"], "second");
    let (code, events) = place.run(&server, &["--resume", "last"], "third");
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(run_start(&events)["sessionId"], "newer");
    let elsewhere = Place {
        home: Home::new(),
        workspace: tempfile::tempdir().unwrap(),
    };
    let (code, events) = elsewhere.run(&server, &["--resume", "last"], "x");
    assert_eq!(code, 2);
    assert!(error_message(&events).contains("has no session yet"));
}

#[test]
fn a_fork_starts_from_a_copy_and_leaves_the_original_as_it_was() {
    let server = FakeModel::start(answers(&["original answer", "forked answer"]));
    let place = Place::new();
    place.run(&server, &["--session-id", "base"], "start");
    let original = place.session_dir("base").join("messages.jsonl");
    let before = std::fs::read(&original).unwrap();
    let meta_before = std::fs::read(place.session_dir("base").join("session.json")).unwrap();
    let (code, events) = place.run(&server, &["--fork", "base"], "branch off");
    assert_eq!(code, 0, "{events:?}");
    let forked = run_start(&events)["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(forked, "base");
    assert!(run_start(&events).get("resumedFrom").is_none());
    assert_eq!(std::fs::read(&original).unwrap(), before);
    assert_eq!(
        std::fs::read(place.session_dir("base").join("session.json")).unwrap(),
        meta_before
    );
    let sent = conversation(&server.requests()[1]);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[1].1, "original answer");
    let copy = std::fs::read_to_string(place.session_dir(&forked).join("messages.jsonl")).unwrap();
    assert!(copy.contains("original answer") && copy.contains("forked answer"));
    let meta: Value = place.meta(&forked);
    assert_eq!(meta["forkedFrom"], "base");
}

#[test]
fn a_session_in_use_is_refused_to_a_second_run_at_once() {
    let server = FakeModel::start(answers(&["first"]).reply(Reply::text("thinking").stall()));
    let place = Place::new();
    let (_, started) = place.run(&server, &["--session-id", "shared"], "start");
    let first_run = started[0]["runId"].as_str().unwrap().to_string();
    let holder = Running(
        place
            .command(&server, &["--resume", "shared"], "continue")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the first resume to reach the model", DEADLINE, || {
        (server.requests().len() == 2).then_some(())
    });
    // The holder records itself off its thread; its record is read once it is there.
    let holder_run = wait_for("the holder's record", DEADLINE, || {
        let meta: Value = place.meta("shared");
        let last = meta["lastRun"].as_str().unwrap().to_string();
        (last != first_run).then_some(last)
    });
    let (code, events) = place.run(&server, &["--resume", "shared"], "me too");
    assert_eq!(code, 2, "{events:?}");
    let message = error_message(&events);
    assert!(
        message.contains(&format!("session `shared` is in use by run {holder_run}")),
        "{message}"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "the refused run asked the model nothing"
    );
    drop(holder);
    // The killed holder left a session that loads.
    let server = FakeModel::start(answers(&["after"]));
    let (code, events) = place.run(&server, &["--resume", "shared"], "again");
    assert_eq!(code, 0, "{events:?}");
}

/// A run of session `id` in `place` that is in the middle of a slow `bash` call (it has
/// started), with its model server.
fn mid_call(place: &Place, id: &str) -> (Running, FakeModel) {
    let marker = place.workspace.path().join("started");
    let server = FakeModel::start(Script::new().reply(Reply::tool_call(
        "bash",
        json!({"command": format!("touch {} && sleep 30", marker.display())}),
    )));
    let running = Running(
        place
            .command(&server, &["--session-id", id], "run the slow thing")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the call to start", DEADLINE, || {
        marker.exists().then_some(())
    });
    (running, server)
}

#[test]
fn a_run_killed_mid_call_leaves_a_session_whose_call_is_interrupted() {
    let place = Place::new();
    let (killed, _server) = mid_call(&place, "crash");
    drop(killed);
    let server = FakeModel::start(answers(&["recovered"]));
    let (code, events) = place.run(&server, &["--resume", "crash"], "what happened?");
    assert_eq!(code, 0, "{events:?}");
    let sent = conversation(&server.requests()[0]);
    let roles: Vec<&str> = sent.iter().map(|(role, _)| role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"], "{sent:?}");
    assert!(sent[2].1.starts_with("interrupted:"), "{sent:?}");
    let warned = events
        .iter()
        .any(|e| e["type"] == "warning" && e["message"].as_str().unwrap().contains("interrupted"));
    assert!(warned, "{events:?}");
}

/// The session's lease is a `flock`, which a child the killed run was starting shares until
/// its `exec`: such a copy left behind (here taken by the test with `pidfd_getfd` and let go a
/// moment after the kill) does not refuse the resume as "in use" — the lease names the run's
/// process, and once that is gone the copy is waited out.
#[test]
fn a_copy_of_a_killed_runs_session_lease_does_not_refuse_the_resume() {
    let place = Place::new();
    let (killed, _server) = mid_call(&place, "copied");
    let lease = place.home.path().join("sessions/copied/lease");
    let copy = fd_copy_of(killed.0.id(), &lease);
    drop(killed);
    let child_execs = let_go_soon(copy);
    let server = FakeModel::start(answers(&["recovered"]));
    let (code, events) = place.run(&server, &["--resume", "copied"], "what happened?");
    child_execs.join().unwrap();
    assert_eq!(code, 0, "{events:?}");
}

#[test]
fn no_session_leaves_nothing_behind() {
    let server = FakeModel::start(answers(&["done"]));
    let place = Place::new();
    let (code, events) = place.run(&server, &["--no-session"], "hi");
    assert_eq!(code, 0);
    assert!(run_start(&events).get("sessionId").is_none());
    assert!(!place.home.path().join("sessions").exists());
}

#[test]
fn ids_that_are_not_session_ids_never_become_paths() {
    let server = FakeModel::start(Script::new());
    let place = Place::new();
    for flag in ["--resume", "--fork", "--session-id"] {
        for bad in ["../x", "..", "a/b", ".hidden", ""] {
            let output = place.command(&server, &[flag, bad], "hi").output().unwrap();
            assert_eq!(output.status.code(), Some(2), "{flag} {bad:?}");
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(all.contains("is not a session id"), "{flag} {bad:?}: {all}");
        }
    }
    assert!(!place.home.path().join("x").exists());
    assert!(server.requests().is_empty());
}

#[test]
fn an_unknown_session_and_a_taken_id_are_usage_errors_naming_them() {
    let server = FakeModel::start(answers(&["one"]));
    let place = Place::new();
    let (code, events) = place.run(&server, &["--resume", "nosuch"], "hi");
    assert_eq!(code, 2);
    assert!(error_message(&events).contains("there is no session `nosuch`"));
    let (code, events) = place.run(&server, &["--fork", "nosuch"], "hi");
    assert_eq!(code, 2);
    assert!(
        error_message(&events).contains("there is no session `nosuch`"),
        "{events:?}"
    );
    place.run(&server, &["--session-id", "taken"], "hi");
    let (code, events) = place.run(&server, &["--session-id", "taken"], "hi");
    assert_eq!(code, 2);
    assert!(error_message(&events).contains("--resume taken"));
}

#[test]
fn another_workspaces_session_needs_its_workspace_or_the_flag() {
    let server = FakeModel::start(answers(&["one", "two", "three"]));
    let place = Place::new();
    place.run(&server, &["--session-id", "mine"], "hi");
    let other = tempfile::tempdir().unwrap();
    let other_dir = other.path().to_str().unwrap();
    let (code, events) = place.run(&server, &["-C", other_dir, "--resume", "mine"], "hi");
    assert_eq!(code, 2);
    let message = error_message(&events);
    let home = place.workspace.path().canonicalize().unwrap();
    assert!(
        message.contains(&format!("-C {}", home.display())),
        "{message}"
    );
    let workspace = place.workspace.path().to_str().unwrap().to_string();
    let (code, _) = place.run(&server, &["-C", &workspace, "--resume", "mine"], "hi");
    assert_eq!(code, 0);
    // Continued elsewhere, the session belongs to where it was continued.
    let (code, _) = place.run(
        &server,
        &["-C", other_dir, "--resume", "mine", "--any-workspace"],
        "hi",
    );
    assert_eq!(code, 0);
    let meta: Value = place.meta("mine");
    let moved = Path::new(meta["workspace"].as_str().unwrap());
    assert_eq!(moved, other.path().canonicalize().unwrap());
}

#[test]
fn a_resumed_run_has_its_own_permissions_and_says_when_they_differ() {
    let server = FakeModel::start(answers(&["a", "b"]));
    let place = Place::new();
    place.run(&server, &["--session-id", "perm", "--auto", "low"], "hi");
    let (code, events) = place.run(&server, &["--resume", "perm"], "hi");
    assert_eq!(code, 0);
    let changed = &run_start(&events)["permissionsChanged"];
    assert_eq!(changed["before"]["auto"], "low", "{changed}");
    assert_eq!(changed["now"]["auto"], "medium", "{changed}");
}

#[test]
fn a_session_file_corrupted_by_hand_is_reported_with_its_line_and_left_alone() {
    let server = FakeModel::start(answers(&["fine"]));
    let place = Place::new();
    place.run(&server, &["--session-id", "broken"], "hi");
    let file = place.session_dir("broken").join("messages.jsonl");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"type\": \"message\", \"oops\": 1}\n");
    std::fs::write(&file, &text).unwrap();
    let (code, events) = place.run(&server, &["--resume", "broken"], "hi");
    assert_eq!(code, 2);
    let message = error_message(&events);
    assert!(message.contains("messages.jsonl:3:"), "{message}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn session_files_are_private_and_hold_no_secret() {
    let key = "sk-session-secret-0123456789abcdef";
    let server = FakeModel::start(Script::new().reply(Reply::text(&format!("the key is {key}"))));
    let place = Place::new();
    let output = place
        .command(
            &server,
            &["--session-id", "private"],
            &format!("remember {key}"),
        )
        .env("ZERO_API_KEY", key)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let dir = place.session_dir("private");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(key), "{}: {text}", path.display());
    }
}

/// `zero sessions ARGS` with the place's data directory.
fn sessions(place: &Place, args: &[&str]) -> std::process::Output {
    crate::support::zero::zero_std()
        .env("ZERO_HOME", place.home.path())
        .arg("sessions")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn every_sessions_subcommand_in_turn() {
    let server = FakeModel::start(
        answers(&["first answer", "second answer"]).reply(Reply::text("thinking").stall()),
    );
    let place = Place::new();
    place.run(&server, &["--session-id", "one"], "first question");
    place.run(&server, &["--session-id", "two"], "second question");

    let listed = sessions(&place, &["list"]);
    assert_eq!(listed.status.code(), Some(0));
    let table = stdout(&listed);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("ID"), "{table}");
    assert!(
        lines[1].starts_with("two ") && lines[2].starts_with("one "),
        "{table}"
    );
    assert!(lines[1].contains("completed"), "{table}");
    let json: Value =
        serde_json::from_slice(&sessions(&place, &["list", "--json"]).stdout).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
    assert_eq!(json[0]["id"], "two");
    assert_eq!(json[0]["state"], "completed");

    let shown = stdout(&sessions(&place, &["show", "one"]));
    assert!(shown.contains("user:\nfirst question"), "{shown}");
    assert!(shown.contains("assistant:\nfirst answer"), "{shown}");
    let json: Value =
        serde_json::from_slice(&sessions(&place, &["show", "one", "--json"]).stdout).unwrap();
    assert_eq!(json["session"]["id"], "one");
    assert_eq!(
        json["messages"][0],
        json!({"role": "user", "content": "first question"})
    );
    assert_eq!(sessions(&place, &["show", "nosuch"]).status.code(), Some(2));

    // In use: shown running, and not removed.
    let holder = Running(
        place
            .command(&server, &["--resume", "two"], "more")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the resume to reach the model", DEADLINE, || {
        (server.requests().len() == 3).then_some(())
    });
    let json: Value =
        serde_json::from_slice(&sessions(&place, &["list", "--json"]).stdout).unwrap();
    assert_eq!(json[0]["state"], "running", "{json}");
    let refused = sessions(&place, &["rm", "two"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("in use by run"));
    drop(holder);
    let json: Value =
        serde_json::from_slice(&sessions(&place, &["list", "--json"]).stdout).unwrap();
    assert_eq!(json[0]["state"], "interrupted", "{json}");

    // gc takes what was last used before the cutoff.
    let record = place.session_dir("one").join("session.json");
    let mut meta: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    meta["updated"] = json!("2020-01-01T00:00:00.000Z");
    std::fs::write(&record, serde_json::to_vec(&meta).unwrap()).unwrap();
    let dry = stdout(&sessions(
        &place,
        &["gc", "--older-than", "7d", "--dry-run"],
    ));
    assert!(dry.contains("would remove session one"), "{dry}");
    assert!(place.session_dir("one").exists());
    let done = stdout(&sessions(&place, &["gc", "--older-than", "7d"]));
    assert!(done.contains("removed 1 session(s)"), "{done}");
    assert!(!place.session_dir("one").exists());
    assert!(place.session_dir("two").exists());

    assert_eq!(sessions(&place, &["rm", "two"]).status.code(), Some(0));
    assert_eq!(stdout(&sessions(&place, &["list"])), "no sessions\n");
}

#[test]
fn the_readmes_two_step_example_shares_one_conversation() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let script: String = readme
        .split("<!-- commands: two-steps -->\n```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("README.md's two-step example")
        .to_string();
    let server = FakeModel::start(answers(&[
        "test_parse fails: off by one",
        "Fixed the off-by-one; the tests pass.",
    ]));
    let place = Place::new();
    let zero = assert_cmd::cargo::cargo_bin("zero");
    let path = format!(
        "{}:{}",
        zero.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    // The environment the tests give zero (private directories, the fake model), for bash.
    let mut command = Command::new("bash");
    for (name, value) in zero_std_with(&server, Wire::OpenAi).get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let output = command
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .env("PATH", path)
        .env("CI_PIPELINE_ID", "1234")
        .env("ZERO_HOME", place.home.path())
        .current_dir(place.workspace.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Fixed the off-by-one"), "{stdout}");
    let second = conversation(&server.requests()[1]);
    assert_eq!(second[1].1, "test_parse fails: off by one", "{second:?}");
    assert!(place.session_dir("fix-1234").is_dir());
}

#[test]
fn the_earlier_runs_background_tasks_are_not_resumed_but_reported() {
    let server = FakeModel::start(
        Script::new()
            .reply(crate::support::runs::background("sleep 30"))
            .reply(Reply::text("started it"))
            // Told the task still runs, the model answers again, and the close stops it.
            .reply(Reply::text("leaving it running"))
            .reply(Reply::text("it is gone")),
    );
    let place = Place::new();
    let (code, first) = place.run(&server, &["--session-id", "bg"], "start a server");
    assert_eq!(code, 0, "{first:?}");
    let task = first
        .iter()
        .find(|e| e["type"] == "task_finished")
        .expect("the task was stopped at close");
    let task_id = task["taskId"].as_str().unwrap();
    let (code, events) = place.run(&server, &["--resume", "bg"], "is it running?");
    assert_eq!(code, 0, "{events:?}");
    let sent = conversation(&server.requests()[3]);
    let prompt = &sent.last().unwrap().1;
    assert!(
        prompt.starts_with("[zero: the earlier run's background tasks"),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!("{task_id} (sleep 30): killed")),
        "{prompt}"
    );
    assert!(prompt.ends_with("is it running?"), "{prompt}");
}

#[test]
fn a_session_that_cannot_be_kept_is_a_warning_unless_it_was_asked_for() {
    let server = FakeModel::start(answers(&["done"]));
    let place = Place::new();
    // A file where the data directory should be: nothing can be created in it.
    let blocked = place.workspace.path().join("not-a-dir");
    std::fs::write(&blocked, "").unwrap();
    let output = place
        .command(&server, &[], "hi")
        .env("ZERO_HOME", &blocked)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let events = events(&output.stdout);
    assert!(run_start(&events).get("sessionId").is_none());
    let warning = events.iter().find(|e| e["type"] == "warning").unwrap();
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("keeps no session"),
        "{warning}"
    );
    let output = place
        .command(&server, &["--session-id", "wanted"], "hi")
        .env("ZERO_HOME", &blocked)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(
        server.requests().len(),
        1,
        "the failed run asked the model nothing"
    );
}

#[test]
fn of_two_resumes_started_together_exactly_one_runs() {
    let server = FakeModel::start(
        answers(&["first"])
            // Long enough that the second resume starts while the first holds the session.
            .reply(Reply::text("resumed").delay(std::time::Duration::from_secs(3))),
    );
    let place = Place::new();
    place.run(&server, &["--session-id", "race"], "start");
    let spawn = |prompt: &str| {
        place
            .command(&server, &["--resume", "race"], prompt)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("a"), spawn("b"));
    let mut codes: Vec<i32> = [a, b]
        .into_iter()
        .map(|child| child.wait_with_output().unwrap().status.code().unwrap())
        .collect();
    codes.sort();
    assert_eq!(codes, [0, 2]);
    assert_eq!(
        server.requests().len(),
        2,
        "only one of them reached the model"
    );
    let loaded: Vec<Value> =
        std::fs::read_to_string(place.session_dir("race").join("messages.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    assert_eq!(
        loaded.len(),
        4,
        "start, first, one prompt, resumed: {loaded:?}"
    );
}

#[test]
fn an_answer_refused_by_the_schema_stays_in_the_session() {
    let server = FakeModel::start(answers(&["not json"]));
    let place = Place::new();
    let schema = place.workspace.path().join("schema.json");
    std::fs::write(&schema, r#"{"type": "object"}"#).unwrap();
    let (code, _) = place.run(
        &server,
        &[
            "--session-id",
            "refused",
            "--schema-retries",
            "0",
            "--output-schema",
            schema.to_str().unwrap(),
        ],
        "answer in JSON",
    );
    assert_eq!(code, 4);
    let kept =
        std::fs::read_to_string(place.session_dir("refused").join("messages.jsonl")).unwrap();
    assert!(kept.contains(r#""text":"not json""#), "{kept}");
}
