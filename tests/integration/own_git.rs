//! zero's own git (making, committing and removing worktrees) runs no program the repository
//! names and follows no metadata a command can write: tried as a hostile model would, with
//! a worktree `.git` file pointed at a git directory of the model's making (fsmonitor, hooks,
//! filters), at the user's own git directory, a hostile repository config planted before an
//! isolated specialist starts, and an isolated worktree's `HEAD` pointed at `main`. Each test
//! proves the effect: a marker outside the writable roots that must not appear, refs and an
//! index that must not move. As root and as `nobody`.

use std::path::Path;
use std::process::Output;

use serde_json::json;

use crate::containment::{as_nobody, running_as_root};
use crate::support::fake_model::{CHILD, FakeModel, Reply, Route, Script};
use crate::support::marks::{make_executable, marking_script, open_dir};
use crate::support::runs::Home;
use crate::support::zero::{Wire, zero_std_with};
use crate::worktrees::{git, repository};

/// `zero exec <flags> go` in `repo` against `server`, as root or `nobody`; the flags name
/// the `--auto` level.
fn run(repo: &Path, home: &Home, server: &FakeModel, flags: &[&str], nobody: bool) -> Output {
    let mut zero = zero_std_with(server, Wire::OpenAi);
    zero.env("ZERO_HOME", home.path())
        .env("ZERO_KILL_GRACE_MS", "300")
        .args(["exec", "-o", "stream-json"])
        .args(flags)
        .arg("go")
        .current_dir(repo);
    let mut command = match nobody {
        true => as_nobody(&zero, &[], repo),
        false => zero,
    };
    command.current_dir(repo).output().unwrap()
}

/// The commands a hostile model runs in its worktree: a git directory of its own whose config
/// names `script` as fsmonitor, hooks path, and clean filter for every file, a change, and the
/// worktree's `.git` pointed at that directory.
fn repoint_to_own_git_dir(script: &str) -> String {
    format!(
        "printf '%s' '{script}' > run.sh && chmod +x run.sh && git init -q evil && \
         git -C evil config core.fsmonitor \"$PWD/run.sh\" && \
         git -C evil config core.hooksPath \"$PWD/hooks\" && mkdir hooks && \
         for h in pre-commit post-commit reference-transaction post-checkout; do \
           cp run.sh hooks/$h; done && \
         git -C evil config filter.x.clean \"$PWD/run.sh\" && \
         git -C evil config filter.x.smudge \"$PWD/run.sh\" && \
         echo '* filter=x' > .gitattributes && echo changed > a.txt && \
         printf 'gitdir: %s\\n' \"$PWD/evil/.git\" > .git && echo repointed"
    )
}

/// At `high` nothing puts the worktree's `.git` back before zero's own git sees it: zero's git
/// must refuse it. (At `medium` the runtime puts it back after the call: see
/// `a_repointed_worktree_is_put_back_at_medium`.)
fn a_repointed_worktree_runs_nothing_and_moves_nothing(nobody: bool) {
    let repo = repository();
    let marks = open_dir();
    let marker = marks.path().join("ran");
    let home = Home::new();
    let main = git(
        repo.path(),
        &["-c", "safe.directory=*", "rev-parse", "HEAD"],
    );
    let command = repoint_to_own_git_dir(&marking_script(&marker));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("bash", json!({ "command": command })))
            .reply(Reply::text("done")),
    );
    let flags = ["--auto", "high", "--worktree=hostile"];
    let output = run(repo.path(), &home, &server, &flags, nobody);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !marker.exists(),
        "zero's git ran the model's program: {stderr}"
    );
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no longer points at"), "{stderr}");
    assert_eq!(
        git(
            repo.path(),
            &["-c", "safe.directory=*", "rev-parse", "zero/hostile"]
        ),
        main
    );
    assert_eq!(
        git(
            repo.path(),
            &["-c", "safe.directory=*", "rev-parse", "HEAD"]
        ),
        main
    );
}

#[test]
fn a_worktree_git_file_pointed_at_the_models_git_dir_runs_nothing_as_root() {
    if running_as_root() {
        a_repointed_worktree_runs_nothing_and_moves_nothing(false);
    }
}

#[test]
fn a_worktree_git_file_pointed_at_the_models_git_dir_runs_nothing_as_nobody() {
    if running_as_root() {
        a_repointed_worktree_runs_nothing_and_moves_nothing(true);
    }
}

/// At `medium` the worktree's `.git` a command repointed is put back after the call, so the
/// run's end works on the worktree zero made, through zero's own git, and nothing of the
/// model's git directory runs.
fn a_repointed_worktree_is_put_back_at_medium(nobody: bool) {
    let repo = repository();
    let marks = open_dir();
    let marker = marks.path().join("ran");
    let home = Home::new();
    let user_git = |args: &[&str]| {
        let mut all = vec!["-c", "safe.directory=*"];
        all.extend_from_slice(args);
        git(repo.path(), &all)
    };
    let main = user_git(&["rev-parse", "HEAD"]);
    let command = repoint_to_own_git_dir(&marking_script(&marker));
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("bash", json!({ "command": command })))
            .reply(Reply::text("done")),
    );
    let flags = ["--auto", "medium", "--worktree=hostile"];
    let output = run(repo.path(), &home, &server, &flags, nobody);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!marker.exists(), "a program of the model's ran: {stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("git_metadata_restored"), "{stdout}");
    // The `.git` is zero's again, so its own git reads the worktree: the empty repository the
    // model made inside (`evil/`, no commit) is what git itself refuses to add; the work is
    // kept, nothing moved.
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("'evil/' does not have a commit"),
        "{stderr}"
    );
    assert!(!stderr.contains("no longer points at"), "{stderr}");
    assert_eq!(user_git(&["rev-parse", "HEAD"]), main);
    assert_eq!(user_git(&["rev-parse", "zero/hostile"]), main);
}

#[test]
fn a_repointed_worktree_is_put_back_at_medium_as_root() {
    if running_as_root() {
        a_repointed_worktree_is_put_back_at_medium(false);
    }
}

#[test]
fn a_repointed_worktree_is_put_back_at_medium_as_nobody() {
    if running_as_root() {
        a_repointed_worktree_is_put_back_at_medium(true);
    }
}

#[test]
fn a_worktree_pointed_at_the_users_git_dir_leaves_their_branch_and_index_alone() {
    let repo = repository();
    let home = Home::new();
    let main = git(repo.path(), &["rev-parse", "HEAD"]);
    let branch = git(repo.path(), &["symbolic-ref", "HEAD"]);
    let index = std::fs::read(repo.path().join(".git/index")).unwrap();
    let git_dir = std::fs::canonicalize(repo.path().join(".git")).unwrap();
    let command = format!(
        "echo changed > a.txt && echo new > new.txt && printf 'gitdir: %s\\n' '{}' > .git",
        git_dir.display()
    );
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("bash", json!({ "command": command })))
            .reply(Reply::text("done")),
    );
    let flags = ["--auto", "high", "--worktree=onto-main"];
    let output = run(repo.path(), &home, &server, &flags, false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no longer points at"), "{stderr}");
    assert_eq!(git(repo.path(), &["rev-parse", &branch]), main);
    assert_eq!(git(repo.path(), &["rev-parse", "zero/onto-main"]), main);
    assert_eq!(
        std::fs::read(repo.path().join(".git/index")).unwrap(),
        index
    );
    assert!(!stderr.contains("worktreeCommit"));
}

/// A route answering the specialist whose task is `task` with `replies`.
fn child(task: &str, replies: Vec<Reply>) -> Route {
    let route = Route::body_contains(&format!("{CHILD}\\n\\n{task}"));
    replies.into_iter().fold(route, Route::reply)
}

#[test]
fn an_isolated_specialist_started_on_a_hostile_repository_config_runs_none_of_it() {
    let repo = repository();
    let marks = open_dir();
    let marker = marks.path().join("ran");
    let script = repo.path().join("run.sh");
    std::fs::write(&script, marking_script(&marker)).unwrap();
    make_executable(&script);
    let hooks = repo.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    for hook in [
        "pre-commit",
        "post-commit",
        "reference-transaction",
        "post-checkout",
    ] {
        std::fs::copy(&script, hooks.join(hook)).unwrap();
    }
    std::fs::write(repo.path().join(".gitattributes"), "* filter=x diff=x\n").unwrap();
    std::fs::write(repo.path().join("a.txt"), "uncommitted\n").unwrap();
    // What a model (or a pull request's earlier step) left in the repository's config.
    let script = script.to_str().unwrap();
    let hooks = hooks.to_str().unwrap();
    for (key, value) in [
        ("core.fsmonitor", script),
        ("core.hooksPath", hooks),
        ("filter.x.clean", script),
        ("filter.x.smudge", script),
        ("filter.x.process", script),
        ("diff.x.textconv", script),
        ("diff.external", script),
        ("core.pager", script),
    ] {
        git(repo.path(), &["config", key, value]);
    }
    let main = git(repo.path(), &["rev-parse", "HEAD"]);
    let home = Home::new();
    let task = "Change b.";
    let server = FakeModel::start(
        Script::new()
            .route(child(
                task,
                vec![
                    Reply::tool_call("write_file", json!({"path": "b.txt", "content": "b\n"})),
                    Reply::text("changed"),
                ],
            ))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": task, "isolation": "worktree",
                       "include_uncommitted": true}),
            ))
            .reply(Reply::text("fine")),
    );
    let output = run(repo.path(), &home, &server, &["--auto", "medium"], false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!marker.exists(), "zero's git ran the repository's program");
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), main);
    let branches = git(
        repo.path(),
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/zero/",
        ],
    );
    let branch = branches.lines().next().expect("the specialist's branch");
    assert_eq!(git(repo.path(), &["show", &format!("{branch}:b.txt")]), "b");
    assert_eq!(
        git(repo.path(), &["show", &format!("{branch}:a.txt")]),
        "uncommitted"
    );
}

#[test]
fn an_isolated_worktree_whose_head_names_main_commits_nothing_onto_main() {
    let repo = repository();
    let main = git(repo.path(), &["rev-parse", "HEAD"]);
    let home = Home::new();
    let branch = git(repo.path(), &["symbolic-ref", "HEAD"]);
    let task = "Point HEAD at main.";
    let command = format!(
        "echo changed > a.txt && printf 'ref: {branch}\\n' > \"$(git rev-parse --git-dir)/HEAD\" \
         && echo pointed"
    );
    let server = FakeModel::start(
        Script::new()
            .route(child(
                task,
                vec![
                    Reply::tool_call("bash", json!({ "command": command })),
                    Reply::text("pointed"),
                ],
            ))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": task, "isolation": "worktree"}),
            ))
            .reply(Reply::text("fine")),
    );
    let output = run(repo.path(), &home, &server, &["--auto", "medium"], false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        git(repo.path(), &["rev-parse", &branch]),
        main,
        "{branch} moved"
    );
    let told = server
        .requests()
        .into_iter()
        .rfind(|r| !r.raw_body.contains(CHILD))
        .unwrap()
        .raw_body;
    assert!(told.contains("HEAD is no longer"), "{told}");
    assert!(!told.contains("the changes are committed"), "{told}");
}

#[test]
fn the_models_own_commit_in_a_worktree_run_at_medium_works_and_is_reported() {
    let repo = repository();
    let home = Home::new();
    let command = "echo c > c.txt && git add c.txt && \
                   git -c user.name=m -c user.email=m@localhost commit -qm mine && echo committed";
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("bash", json!({ "command": command })))
            .reply(Reply::text("done")),
    );
    let flags = ["--auto", "medium", "--worktree=own"];
    let output = run(repo.path(), &home, &server, &flags, false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("stdout:\\ncommitted"), "{stdout}");
    let tip = git(repo.path(), &["rev-parse", "zero/own"]);
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%s", "zero/own"]),
        "mine"
    );
    assert!(
        stdout.contains(&format!("\"worktreeCommit\":\"{tip}\"")),
        "{stdout}"
    );
}
