//! `zero exec --worktree[=NAME]`: the whole run in a new git worktree under the data
//! directory, its changes committed on the branch `zero/NAME`, the directory removed and the
//! branch kept; and the refusals (not a repository, a bare one, a taken name), which leave
//! nothing behind. Through the real binary, with real git, against the fake model.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::runs::{Exec, Home, stall};
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{Wire, finished_stream, zero_std, zero_std_with};

/// Runs `git args…` in `dir` and returns its stdout, trimmed; panics when it fails.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// A repository with one commit holding `a.txt`.
pub(crate) fn repository() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "--quiet"]);
    std::fs::write(repo.path().join("a.txt"), "alpha\n").unwrap();
    git(repo.path(), &["add", "a.txt"]);
    git(repo.path(), &["commit", "--quiet", "-m", "first"]);
    repo
}

/// Runs `zero exec --auto medium` with `flag` in `dir` against a model that plays `script`;
/// returns the events, checking the exit code.
fn run(dir: &Path, home: &Home, flag: &str, script: Script, code: i32) -> Vec<Value> {
    run_at("medium", dir, home, flag, script, code)
}

/// [`run`] at the `--auto` level `level`.
fn run_at(
    level: &str,
    dir: &Path,
    home: &Home,
    flag: &str,
    script: Script,
    code: i32,
) -> Vec<Value> {
    let server = FakeModel::start(script);
    finished_stream(
        assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi))
            .env("ZERO_HOME", home.path())
            .args(["exec", "--auto", level, flag, "-o", "stream-json", "go"])
            .current_dir(dir),
        code,
    )
}

/// The `error` event's message.
fn error_message(events: &[Value]) -> String {
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    error["message"].as_str().unwrap().to_string()
}

/// Whether the data directory holds anything under `worktrees/`.
pub(crate) fn worktrees_left(home: &Home) -> Vec<String> {
    match std::fs::read_dir(home.path().join("worktrees")) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn a_worktree_run_commits_its_changes_on_its_branch_and_leaves_the_checkout_alone() {
    let repo = repository();
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    git(repo.path(), &["checkout", "--quiet", "--detach"]);
    let home = Home::new();
    let script = Script::new()
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "b.txt", "content": "beta\n"}),
        ))
        .reply(Reply::text("Done."));
    let events = run(repo.path(), &home, "--worktree=ci-1", script, 0);
    let start = &events[0];
    assert_eq!(start["type"], "run_start");
    assert_eq!(
        start["worktree"],
        json!({"name": "ci-1", "branch": "zero/ci-1"})
    );
    let cwd = start["cwd"].as_str().unwrap();
    assert!(cwd.ends_with("/worktrees/ci-1"), "{start}");
    let end = events.last().unwrap();
    let commit = end["worktreeCommit"].as_str().unwrap();
    assert_eq!(git(repo.path(), &["rev-parse", "zero/ci-1"]), commit);
    assert_eq!(git(repo.path(), &["rev-parse", "zero/ci-1^"]), head);
    assert_eq!(git(repo.path(), &["show", "zero/ci-1:b.txt"]), "beta");
    assert_eq!(
        git(
            repo.path(),
            &["log", "-1", "--format=%an <%ae>", "zero/ci-1"]
        ),
        "zero <zero@localhost>"
    );
    // The user's checkout: still detached at the same commit, with no new file.
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), head);
    assert!(!repo.path().join("b.txt").exists());
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
    // The directory is gone; only the main worktree is listed; the record says finished.
    assert!(!home.path().join("worktrees/ci-1").exists());
    assert_eq!(
        git(repo.path(), &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    let record: Value =
        serde_json::from_slice(&std::fs::read(home.path().join("worktrees/ci-1.json")).unwrap())
            .unwrap();
    assert_eq!(record["state"], "finished", "{record}");
    assert_eq!(record["commit"], commit, "{record}");
}

#[test]
fn a_worktree_is_refused_outside_a_repository_in_a_bare_one_and_under_a_taken_name() {
    let plain = tempfile::tempdir().unwrap();
    let bare = tempfile::tempdir().unwrap();
    git(bare.path(), &["init", "--quiet", "--bare"]);
    let taken = repository();
    git(taken.path(), &["branch", "zero/ci-1"]);
    let cases: [(&Path, &str); 3] = [
        (plain.path(), "is not in one"),
        (bare.path(), "is a bare repository"),
        (taken.path(), "the branch zero/ci-1 exists already"),
    ];
    for (dir, expected) in cases {
        let home = Home::new();
        let events = run(dir, &home, "--worktree=ci-1", Script::new(), 2);
        let message = error_message(&events);
        assert!(message.contains(expected), "{message}");
        assert_eq!(worktrees_left(&home), Vec::<String>::new());
    }
    assert_eq!(
        git(taken.path(), &["branch", "--list", "zero/*"]),
        "zero/ci-1"
    );
    assert_eq!(
        git(taken.path(), &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

/// The worktree record `name` in `home`.
pub(crate) fn record(home: &Home, name: &str) -> Value {
    let path = home.path().join(format!("worktrees/{name}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Runs one plain `zero exec` with `home` (whose start reconciles), to its end; returns the
/// record `name` afterwards, checked to be `state` because its run died.
fn reconciled(home: &Home, name: &str, state: &str) -> Value {
    let server = FakeModel::start(Script::new().reply(Reply::text("hi")));
    let (code, events) = Exec::start(&server, home).finish();
    assert_eq!(code, 0, "{events:?}");
    let record = record(home, name);
    assert_eq!(record["state"], state, "{record}");
    assert!(
        record["reason"].as_str().unwrap().contains("died"),
        "{record}"
    );
    record
}

#[test]
fn a_worktree_whose_run_was_killed_while_working_is_kept_and_interrupted() {
    let repo = repository();
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "write_file",
                json!({"path": "b.txt", "content": "beta\n"}),
            ))
            .reply(stall()),
    );
    let top = repo.path().to_str().unwrap();
    let mut exec = Exec::start_with(&server, &home, &["--worktree=wip", "-C", top]);
    let written = home.path().join("worktrees/wip/b.txt");
    wait_for("the model's file", DEADLINE, || {
        written.exists().then_some(())
    });
    assert_eq!(record(&home, "wip")["state"], "active");
    exec.sigkill();
    let record = reconciled(&home, "wip", "interrupted");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "beta\n");
    assert_eq!(
        git(
            repo.path(),
            &["branch", "--list", "--format=%(refname:short)", "zero/wip"]
        ),
        "zero/wip"
    );
    let run_id = record["runId"].as_str().unwrap();
    assert!(
        !home
            .path()
            .join(format!("worktrees/{run_id}.lock"))
            .exists()
    );
}

#[test]
fn a_worktree_left_preparing_by_a_dead_run_is_removed_and_failed() {
    let repo = repository();
    let top = std::fs::canonicalize(repo.path()).unwrap();
    let home = Home::new();
    let dir = home.path().join("worktrees/half");
    std::fs::create_dir_all(home.path().join("worktrees")).unwrap();
    let path = dir.to_str().unwrap();
    git(
        &top,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "zero/half",
            path,
            "HEAD",
        ],
    );
    git(&top, &["worktree", "lock", "--reason", "zero run", path]);
    let claim = json!({
        "schemaVersion": 1, "name": "half", "runId": "run_20260102030405_0a1b2c",
        "repository": top, "branch": "zero/half", "path": dir,
        "createdAt": "2026-01-02T03:04:05Z", "state": "preparing"
    });
    std::fs::write(
        home.path().join("worktrees/half.json"),
        serde_json::to_vec(&claim).unwrap(),
    )
    .unwrap();
    reconciled(&home, "half", "failed");
    assert!(!dir.exists());
    assert_eq!(git(&top, &["branch", "--list", "zero/half"]), "");
    assert_eq!(
        git(&top, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

/// Runs `zero worktrees args…` with `home`; returns the exit code, stdout and stderr.
pub(crate) fn worktrees(home: &Home, args: &[&str]) -> (i32, String, String) {
    let output = zero_std()
        .env("ZERO_HOME", home.path())
        .arg("worktrees")
        .args(args)
        .output()
        .unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (
        output.status.code().unwrap_or(-1),
        text(output.stdout),
        text(output.stderr),
    )
}

/// The states `zero worktrees list --json` shows, by name.
pub(crate) fn listed_states(home: &Home) -> Vec<(String, String)> {
    let (code, stdout, stderr) = worktrees(home, &["list", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let listed: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    listed
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().into(),
                r["state"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn zero_worktrees_lists_shows_and_removes_refusing_one_in_use() {
    let repo = repository();
    let home = Home::new();
    let server = FakeModel::start(Script::new().reply(stall()));
    let top = repo.path().to_str().unwrap();
    let mut exec = Exec::start_with(&server, &home, &["--worktree=wip", "-C", top]);
    let dir = home.path().join("worktrees/wip");
    wait_for("the worktree", DEADLINE, || {
        let listed = listed_states(&home);
        (listed == [("wip".to_string(), "active".to_string())]).then_some(())
    });
    let (code, stdout, _) = worktrees(&home, &["show", "wip"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("branch:     zero/wip"), "{stdout}");
    let run_id = record(&home, "wip")["runId"].as_str().unwrap().to_string();
    let (code, _, stderr) = worktrees(&home, &["rm", "wip"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(&run_id), "{stderr}");
    assert!(dir.exists());
    exec.sigkill();
    assert_eq!(listed_states(&home), [("wip".into(), "interrupted".into())]);
    let (code, _, stderr) = worktrees(&home, &["rm", "wip"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!dir.exists());
    assert!(!home.path().join("worktrees/wip.json").exists());
    assert_eq!(git(repo.path(), &["branch", "--list", "zero/*"]), "");
    let (code, _, stderr) = worktrees(&home, &["show", "wip"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn zero_worktrees_gc_removes_ended_records_and_interrupted_ones_only_when_asked() {
    let repo = repository();
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("worktrees")).unwrap();
    for (name, state) in [("done", "finished"), ("cut", "interrupted")] {
        let ended = json!({
            "schemaVersion": 1, "name": name, "runId": "run_20200102030405_0a1b2c",
            "repository": repo.path(), "branch": format!("zero/{name}"),
            "path": home.path().join(format!("worktrees/{name}")),
            "createdAt": "2020-01-02T03:04:05Z", "endedAt": "2020-01-02T03:05:05Z",
            "state": state
        });
        let path = home.path().join(format!("worktrees/{name}.json"));
        std::fs::write(path, serde_json::to_vec(&ended).unwrap()).unwrap();
    }
    let both = || {
        vec![
            ("cut".to_string(), "interrupted".to_string()),
            ("done".to_string(), "finished".to_string()),
        ]
    };
    let (code, stdout, _) = worktrees(&home, &["gc", "--dry-run"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("would remove worktree done"), "{stdout}");
    assert!(!stdout.contains("cut"), "{stdout}");
    assert_eq!(listed_states(&home), both());
    let (code, _, stderr) = worktrees(&home, &["gc"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(listed_states(&home), [("cut".into(), "interrupted".into())]);
    let (code, _, stderr) = worktrees(&home, &["gc", "--include-interrupted"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(listed_states(&home), Vec::<(String, String)>::new());
}

#[test]
fn a_listing_with_worktree_makes_no_worktree() {
    let repo = repository();
    for listing in ["--list-tools", "--list-specialists"] {
        let home = Home::new();
        let output = zero_std()
            .env("ZERO_HOME", home.path())
            .args(["exec", "--worktree=ci", listing])
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "{listing}: {output:?}");
        assert_eq!(worktrees_left(&home), Vec::<String>::new(), "{listing}");
    }
    assert_eq!(git(repo.path(), &["branch", "--list", "zero/*"]), "");
}

#[test]
fn a_worktree_whose_changes_cannot_be_committed_is_kept_and_failed() {
    let repo = repository();
    let home = Home::new();
    let script = Script::new()
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "b.txt", "content": "beta\n"}),
        ))
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": ".git", "content": "gitdir: /nonexistent\n"}),
        ))
        .reply(Reply::text("Done."));
    // At `high`: at `medium` the runtime puts the `.git` back after the call.
    let events = run_at("high", repo.path(), &home, "--worktree=kept", script, 1);
    assert!(error_message(&events).contains("left in"), "{events:?}");
    let record = record(&home, "kept");
    assert_eq!(record["state"], "failed", "{record}");
    assert!(
        record["reason"].as_str().unwrap().contains("left in"),
        "{record}"
    );
    let kept = home.path().join("worktrees/kept/b.txt");
    assert_eq!(std::fs::read_to_string(kept).unwrap(), "beta\n");
}
