//! `Task` with `isolation: "worktree"`: each specialist in a git worktree of its own on the
//! branch `zero/<task-id>`, its changes committed there when it ends, a worktree without
//! changes removed at once, the others' directories removed when the run ends (branches
//! kept); the parent's uncommitted changes carried over on request; the sandbox of an
//! isolated specialist; and a run killed while a worktree was being made or used. Through
//! the real binary, with real git and real child `zero exec` processes, against the fake
//! model.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, FIRST_TASK_ID, FakeModel, Reply, Route, Script, TASK_ID};
use crate::support::runs::{Exec, Home, stall};
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{Wire, finished_stream, zero_std_with};
use crate::worktrees::{git, listed_states, record, repository, worktrees, worktrees_left};

/// A route answering the specialist whose task is `task` with `replies`, in order.
fn child(task: &str, replies: Vec<Reply>) -> Route {
    // The task follows the envelope's heading; in the raw JSON body the newlines are escaped.
    let route = Route::body_contains(&format!("{CHILD}\\n\\n{task}"));
    replies.into_iter().fold(route, Route::reply)
}

/// A `Task` call of `specialist` with `isolation: worktree` and `more` arguments.
fn isolated(specialist: &str, task: &str, more: Value) -> Reply {
    let mut args = json!({"name": specialist, "prompt": task, "isolation": "worktree"});
    args.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    Reply::tool_call("Task", args)
}

/// Runs `zero exec --auto medium -o stream-json` in `dir` with `home` against `server`, to
/// exit code 0; returns what each tool call told the model, in order.
fn delegate(dir: &Path, home: &Home, server: &FakeModel) -> Vec<String> {
    let events = finished_stream(
        assert_cmd::Command::from_std(zero_std_with(server, Wire::OpenAi))
            .env("ZERO_HOME", home.path())
            .env("ZERO_KILL_GRACE_MS", "300")
            .args(["exec", "--auto", "medium", "-o", "stream-json", "delegate"])
            .current_dir(dir),
        0,
    );
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| !r.raw_body.contains(CHILD))
        .unwrap();
    assert!(events.iter().any(|e| e["type"] == "run_end"), "{events:?}");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

/// The branches `zero/*` of the repository at `repo`.
fn zero_branches(repo: &Path) -> Vec<String> {
    git(
        repo,
        &["branch", "--list", "--format=%(refname:short)", "zero/*"],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// How many worktrees the repository at `repo` has (its own checkout included).
fn worktree_count(repo: &Path) -> usize {
    git(repo, &["worktree", "list", "--porcelain"])
        .matches("worktree ")
        .count()
}

#[test]
fn two_isolated_background_workers_write_the_same_file_without_colliding() {
    let repo = repository();
    let home = Home::new();
    let write = |content: &str| {
        vec![
            Reply::tool_call(
                "write_file",
                json!({"path": "a.txt", "content": format!("{content}\n")}),
            ),
            Reply::text("written"),
        ]
    };
    let wait = |id: &str| {
        Reply::tool_call(
            "TaskOutput",
            json!({"task_id": id, "block": true, "timeout_ms": 60000}),
        )
    };
    let server = FakeModel::start(
        Script::new()
            .route(child("Write one.", write("one")))
            .route(child("Write two.", write("two")))
            .reply(isolated(
                "worker",
                "Write one.",
                json!({"run_in_background": true}),
            ))
            .reply(isolated(
                "worker",
                "Write two.",
                json!({"run_in_background": true}),
            ))
            // The second task is the one mentioned last, then the first one.
            .reply(wait(TASK_ID))
            .reply(wait(FIRST_TASK_ID))
            .reply(Reply::text("both done")),
    );
    let told = delegate(repo.path(), &home, &server);
    for started in &told[..2] {
        assert!(started.contains("worktree: works in"), "{started}");
    }
    for waited in &told[2..] {
        assert!(waited.contains("status: completed"), "{waited}");
        assert!(
            waited.contains("the changes are committed on branch zero/task_"),
            "{waited}"
        );
        assert!(waited.contains("1 file changed"), "{waited}");
    }
    assert_eq!(
        std::fs::read_to_string(repo.path().join("a.txt")).unwrap(),
        "alpha\n"
    );
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
    let branches = zero_branches(repo.path());
    assert_eq!(branches.len(), 2, "{branches:?}");
    let mut contents: Vec<String> = branches
        .iter()
        .map(|branch| git(repo.path(), &["show", &format!("{branch}:a.txt")]))
        .collect();
    contents.sort();
    assert_eq!(contents, ["one", "two"]);
    for branch in &branches {
        let name = branch.strip_prefix("zero/").unwrap();
        let record = record(&home, name);
        assert_eq!(record["state"], "finished", "{record}");
        assert_eq!(record["directory"], "removed", "{record}");
        assert_eq!(
            record["commit"].as_str().unwrap(),
            git(repo.path(), &["rev-parse", branch])
        );
        assert!(!home.path().join("worktrees").join(name).exists());
        let message = git(repo.path(), &["log", "-1", "--format=%an: %s", branch]);
        assert!(
            message.starts_with("zero: zero: worker specialist"),
            "{message}"
        );
    }
    assert_eq!(worktree_count(repo.path()), 1);
}

#[test]
fn an_isolated_specialist_that_changes_nothing_leaves_no_worktree_and_no_branch() {
    let repo = repository();
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .route(child("Look around.", vec![Reply::text("nothing to do")]))
            .reply(isolated("explorer", "Look around.", json!({})))
            .reply(Reply::text("fine")),
    );
    let told = delegate(repo.path(), &home, &server);
    assert!(told[0].contains("nothing to do"), "{}", told[0]);
    assert!(
        told[0].contains("nothing was changed, so the worktree and its branch zero/task_"),
        "{}",
        told[0]
    );
    assert_eq!(zero_branches(repo.path()), Vec::<String>::new());
    assert_eq!(worktree_count(repo.path()), 1);
    let left: Vec<String> = worktrees_left(&home)
        .into_iter()
        .filter(|name| !name.ends_with(".json"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn include_uncommitted_carries_the_parents_changes_over_and_leaves_them_alone() {
    let repo = repository();
    let home = Home::new();
    let top = repo.path();
    std::fs::write(top.join(".gitignore"), "*.log\n").unwrap();
    git(top, &["add", ".gitignore"]);
    git(top, &["commit", "--quiet", "-m", "ignore logs"]);
    std::fs::write(top.join("a.txt"), "alpha, edited\n").unwrap();
    std::fs::write(top.join("new.txt"), "untracked\n").unwrap();
    std::fs::write(top.join("debug.log"), "ignored\n").unwrap();
    let server = FakeModel::start(
        Script::new()
            .route(child(
                "Record what you see.",
                vec![
                    Reply::tool_call(
                        "bash",
                        json!({"command": "cat a.txt new.txt > seen.txt; ls debug.log >> seen.txt 2>&1; true"}),
                    ),
                    Reply::text("recorded"),
                ],
            ))
            .reply(isolated(
                "worker",
                "Record what you see.",
                json!({"include_uncommitted": true}),
            ))
            .reply(Reply::text("fine")),
    );
    let told = delegate(top, &home, &server);
    assert!(
        told[0].contains("committed on branch zero/task_"),
        "{}",
        told[0]
    );
    let branch = &zero_branches(top)[0];
    let seen = git(top, &["show", &format!("{branch}:seen.txt")]);
    assert!(seen.starts_with("alpha, edited\nuntracked\n"), "{seen}");
    assert!(seen.contains("No such file"), "{seen}");
    // The carried-over changes are a commit of their own on top of HEAD, so the
    // specialist's work is exactly base..branch.
    let head = git(top, &["rev-parse", "HEAD"]);
    assert_eq!(git(top, &["rev-parse", &format!("{branch}~2")]), head);
    let work = git(
        top,
        &["diff", "--name-only", &format!("{branch}~1"), branch],
    );
    assert_eq!(work, "seen.txt");
    assert!(told[0].contains(&format!("{branch}~1")) || told[0].contains("cherry-pick"));
    // The parent's tree and index are as they were.
    assert_eq!(
        git(top, &["status", "--porcelain", "--ignored"]),
        "M a.txt\n?? new.txt\n!! debug.log"
    );
    assert_eq!(git(top, &["diff", "--cached", "--name-only"]), "");
}

#[test]
fn an_isolated_specialist_commits_in_its_worktree_but_cannot_write_the_parents_workspace() {
    let repo = repository();
    let home = Home::new();
    let top = std::fs::canonicalize(repo.path()).unwrap();
    let escape = top.join("escape.txt");
    let command = format!(
        "echo inside > inside.txt && git add inside.txt && \
         git -c user.name=w -c user.email=w@localhost commit -qm mine && echo committed; \
         echo out > {} && echo escaped; true",
        escape.display()
    );
    let server = FakeModel::start(
        Script::new()
            .route(child(
                "Try both.",
                vec![
                    Reply::tool_call("bash", json!({"command": command})),
                    Reply::text("tried"),
                ],
            ))
            .reply(isolated("worker", "Try both.", json!({})))
            .reply(Reply::text("fine")),
    );
    delegate(&top, &home, &server);
    assert!(
        !escape.exists(),
        "the specialist wrote the parent's workspace"
    );
    let branch = &zero_branches(&top)[0];
    assert_eq!(git(&top, &["log", "-1", "--format=%s", branch]), "mine");
    assert_eq!(
        git(&top, &["show", &format!("{branch}:inside.txt")]),
        "inside"
    );
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| r.raw_body.contains(CHILD))
        .unwrap();
    let result = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("stdout:\ncommitted\n"), "{result}");
    assert!(!result.contains("escaped\n"), "{result}");
    assert!(result.contains("escape.txt: Permission denied"), "{result}");
}

/// The worktree records in `home` in the state `state`, by name.
fn records_in(home: &Home, state: &str) -> Vec<String> {
    worktrees_left(home)
        .into_iter()
        .filter_map(|file| file.strip_suffix(".json").map(str::to_string))
        .filter(|name| record(home, name)["state"] == state)
        .collect()
}

/// A plain run with `home`, whose start reconciles.
fn reconcile(home: &Home) {
    let server = FakeModel::start(Script::new().reply(Reply::text("hi")));
    let (code, events) = Exec::start(&server, home).finish();
    assert_eq!(code, 0, "{events:?}");
}

#[test]
fn a_run_killed_while_a_worktree_is_being_made_leaves_nothing_of_it_but_the_record() {
    let repo = repository();
    let home = Home::new();
    let top = std::fs::canonicalize(repo.path()).unwrap();
    // Carrying a large untracked file over takes git a while: the run is killed meanwhile.
    let mut big = vec![0u8; 192 << 20];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for chunk in big.chunks_mut(8) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        chunk.copy_from_slice(&seed.to_le_bytes()[..chunk.len()]);
    }
    std::fs::write(top.join("big.bin"), &big).unwrap();
    drop(big);
    let server = FakeModel::start(
        Script::new()
            .reply(isolated(
                "worker",
                "Never starts.",
                json!({"include_uncommitted": true}),
            ))
            .reply(stall()),
    );
    let mut exec = Exec::start_with(&server, &home, &["-C", top.to_str().unwrap()]);
    let name = wait_for("a worktree being made", DEADLINE, || {
        records_in(&home, "preparing").pop()
    });
    exec.sigkill_group();
    reconcile(&home);
    let record = record(&home, &name);
    assert_eq!(record["state"], "failed", "{record}");
    assert!(
        record["reason"]
            .as_str()
            .unwrap()
            .contains("died while making it"),
        "{record}"
    );
    assert!(!home.path().join("worktrees").join(&name).exists());
    assert_eq!(zero_branches(&top), Vec::<String>::new());
    assert_eq!(worktree_count(&top), 1);
}

/// Starts a run in `top` whose isolated worker writes `wip.txt` and then works forever;
/// returns the run, the worktree's directory once the file is there, and the model (which
/// must outlive the run).
fn working_isolated(top: &Path, home: &Home) -> (Exec, PathBuf, FakeModel) {
    let server = FakeModel::start(
        Script::new()
            .route(child(
                "Work forever.",
                vec![
                    Reply::tool_call("write_file", json!({"path": "wip.txt", "content": "wip\n"})),
                    stall(),
                ],
            ))
            .reply(isolated("worker", "Work forever.", json!({})))
            .reply(stall()),
    );
    let exec = Exec::start_with(&server, home, &["-C", top.to_str().unwrap()]);
    let dir = wait_for("the specialist's file", DEADLINE, || {
        let name = records_in(home, "active").pop()?;
        let dir = home.path().join("worktrees").join(name);
        dir.join("wip.txt").exists().then_some(dir)
    });
    (exec, dir, server)
}

#[test]
fn a_run_killed_while_its_specialist_works_leaves_the_worktree_interrupted_and_kept() {
    let repo = repository();
    let home = Home::new();
    let top = std::fs::canonicalize(repo.path()).unwrap();
    let (mut exec, dir, _server) = working_isolated(&top, &home);
    exec.sigkill();
    reconcile(&home);
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(record(&home, &name)["state"], "interrupted");
    assert_eq!(
        std::fs::read_to_string(dir.join("wip.txt")).unwrap(),
        "wip\n"
    );
    assert!(listed_states(&home).contains(&(name.clone(), "interrupted".into())));
    let (code, _, stderr) = worktrees(&home, &["rm", &name]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!dir.exists());
    assert_eq!(zero_branches(&top), Vec::<String>::new());
}

#[test]
fn runs_reconciling_at_once_never_take_a_worktree_a_live_run_holds() {
    let repo = repository();
    let home = Home::new();
    let top = std::fs::canonicalize(repo.path()).unwrap();
    let (exec, dir, _server) = working_isolated(&top, &home);
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();
    let others: Vec<_> = (0..3)
        .map(|_| {
            let server = FakeModel::start(Script::new().reply(Reply::text("hi")));
            (Exec::start(&server, &home), server)
        })
        .collect();
    for (other, _server) in others {
        let (code, events) = other.finish();
        assert_eq!(code, 0, "{events:?}");
    }
    assert_eq!(record(&home, &name)["state"], "active");
    assert!(dir.join("wip.txt").exists());
    // Stopped cleanly, the run commits the specialist's work and removes the directory.
    let (code, _) = exec.terminate();
    assert_eq!(code, 143);
    let record = record(&home, &name);
    assert_eq!(record["state"], "finished", "{record}");
    assert!(!dir.exists());
    let branch = format!("zero/{name}");
    assert_eq!(git(&top, &["show", &format!("{branch}:wip.txt")]), "wip");
}

#[test]
fn an_isolated_specialist_that_cannot_start_from_its_workspace_is_an_error_that_leaves_nothing() {
    let plain = tempfile::tempdir().unwrap();
    let repo = repository();
    // An embedded repository without a commit: git cannot add it, so the changes cannot be
    // carried over, and git's message names it.
    git(repo.path(), &["init", "--quiet", "broken"]);
    let cases: [(&Path, Value, &str); 3] = [
        (plain.path(), json!({}), "is not in one"),
        (
            repo.path(),
            json!({"include_uncommitted": true}),
            "cannot carry the uncommitted changes over",
        ),
        (
            repo.path(),
            json!({"include_uncommitted": true}),
            "'broken/'",
        ),
    ];
    for (dir, more, expected) in cases {
        let home = Home::new();
        let server = FakeModel::start(
            Script::new()
                .reply(isolated("worker", "Never starts.", more))
                .reply(Reply::text("gave up")),
        );
        let told = delegate(dir, &home, &server);
        assert!(told[0].contains("isolation: worktree: "), "{}", told[0]);
        assert!(told[0].contains(expected), "{}", told[0]);
        assert!(
            !server.requests().iter().any(|r| r.raw_body.contains(CHILD)),
            "a specialist started"
        );
        assert_eq!(worktrees_left(&home), Vec::<String>::new());
    }
    assert_eq!(zero_branches(repo.path()), Vec::<String>::new());
    assert_eq!(worktree_count(repo.path()), 1);
}

#[test]
fn a_run_holds_at_most_eight_isolated_worktrees_at_once() {
    let repo = repository();
    let home = Home::new();
    let waiting = (0..8).fold(Route::body_contains(CHILD), |route, _| route.reply(stall()));
    let mut script = Script::new().route(waiting);
    for n in 0..9 {
        script = script.reply(isolated(
            "explorer",
            &format!("Wait {n}."),
            json!({"run_in_background": true}),
        ));
    }
    // The first answer is sent back once (8 tasks still run); the second ends the run.
    let server = FakeModel::start(
        script
            .reply(Reply::text("enough"))
            .reply(Reply::text("enough, stop them")),
    );
    let told = delegate(repo.path(), &home, &server);
    for started in &told[..8] {
        assert!(started.contains("worktree: works in"), "{started}");
    }
    assert!(
        told[8].contains("this run holds 8 worktrees already"),
        "{}",
        told[8]
    );
    // Stopped at the run's end without changes: every worktree and branch is gone.
    assert_eq!(zero_branches(repo.path()), Vec::<String>::new());
    assert_eq!(worktree_count(repo.path()), 1);
}
