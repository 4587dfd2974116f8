//! At `--auto medium` a command may write the workspace and with it `.git`; what it writes
//! there that would start a program in the user's own git later — a hook, `core.fsmonitor`,
//! a textconv driver in `info/attributes`, a `.git` swapped for one of its own — is put back
//! after the call and at the run's close. Each test proves the effect with the user's real,
//! unsandboxed git run afterwards, as a CI job's next step would: a marker outside the
//! writable roots that must not appear. As root and as `nobody`.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::containment::{as_nobody, running_as_root};
use crate::support::fake_model::{FakeModel, Reply, Script, TASK_ID};
use crate::support::marks::{marking_script, open_dir};
use crate::support::runs::Home;
use crate::support::zero::{Wire, events, tool_outputs, zero_std_with};
use crate::worktrees::{git, repository};

/// The user's own git in `repo`, unsandboxed, as root (the repository may be `nobody`'s).
fn user_git(repo: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "safe.directory=*"];
    all.extend_from_slice(args);
    git(repo, &all)
}

/// What a CI job's next step does with the repository: each of these starts the programs the
/// model tried to plant (fsmonitor on status, hooks on commit, textconv on diff).
fn next_step(repo: &Path) {
    std::fs::write(repo.join("a.txt"), "changed by the next step\n").unwrap();
    user_git(repo, &["status", "--short"]);
    user_git(repo, &["diff"]);
    user_git(repo, &["commit", "-qam", "next step"]);
}

/// `zero exec --auto medium -o stream-json go` in `repo` against a model playing `script`, as
/// root or as `nobody`.
fn run(repo: &Path, script: Script, nobody: bool) -> Output {
    let server = FakeModel::start(script);
    let home = Home::new();
    let mut zero = zero_std_with(&server, Wire::OpenAi);
    zero.env("ZERO_HOME", home.path())
        .env("ZERO_KILL_GRACE_MS", "300")
        .args(["exec", "--auto", "medium", "-o", "stream-json", "go"])
        .current_dir(repo);
    let mut command = match nobody {
        true => as_nobody(&zero, &[], repo),
        false => zero,
    };
    command.current_dir(repo).output().unwrap()
}

/// The `git_metadata_restored` events of a run.
fn restorations(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|event| event["type"] == "git_metadata_restored")
        .collect()
}

/// Every path a run's `git_metadata_restored` events name as put back.
fn restored_paths(events: &[Value]) -> Vec<String> {
    restorations(events)
        .iter()
        .flat_map(|event| event["restored"].as_array().unwrap().iter())
        .map(|path| path.as_str().unwrap().to_string())
        .collect()
}

fn planted_hooks_config_and_attributes_are_put_back(nobody: bool) {
    let repo = repository();
    let marks = open_dir();
    let marker = marks.path().join("ran");
    let config = std::fs::read(repo.path().join(".git/config")).unwrap();
    let plant = format!(
        "printf '%s' '{}' > run.sh && chmod +x run.sh && \
         for h in pre-commit post-commit post-index-change; do cp run.sh .git/hooks/$h; done && \
         git config core.fsmonitor \"$PWD/run.sh\" && \
         git config diff.x.textconv \"$PWD/run.sh\" && \
         echo '* diff=x' > .git/info/attributes && echo planted",
        marking_script(&marker)
    );
    let commit = "echo beta > b.txt && git add b.txt && \
                  git -c user.name=m -c user.email=m@localhost commit -qm model && \
                  git rev-list --count HEAD";
    let script = Script::new()
        .reply(Reply::tool_call("bash", json!({ "command": plant })))
        .reply(Reply::tool_call("bash", json!({ "command": commit })))
        .reply(Reply::text("done"));
    let output = run(repo.path(), script, nobody);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let events = events(&output.stdout);
    let outputs = tool_outputs(&events);
    assert!(outputs[0].contains("planted"), "{outputs:?}");
    assert!(outputs[0].contains("puts it back"), "{outputs:?}");
    // The model's own commit works at medium, after the restoration.
    assert!(outputs[1].contains("stdout:\n2\n"), "{outputs:?}");
    let restored = restored_paths(&events);
    for part in [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/hooks/post-commit",
        ".git/info/attributes",
    ] {
        assert!(
            restored.iter().any(|path| path.ends_with(part)),
            "{part} not in {restored:?}"
        );
    }
    assert!(restorations(&events)[0]["callId"].is_string());
    assert_eq!(
        std::fs::read(repo.path().join(".git/config")).unwrap(),
        config
    );
    assert!(!repo.path().join(".git/info/attributes").exists());
    next_step(repo.path());
    assert!(!marker.exists(), "the user's git ran the model's program");
    assert_eq!(user_git(repo.path(), &["rev-list", "--count", "HEAD"]), "3");
}

#[test]
fn planted_hooks_config_and_attributes_are_put_back_as_root() {
    if running_as_root() {
        planted_hooks_config_and_attributes_are_put_back(false);
    }
}

#[test]
fn planted_hooks_config_and_attributes_are_put_back_as_nobody() {
    if running_as_root() {
        planted_hooks_config_and_attributes_are_put_back(true);
    }
}

fn a_git_dir_swapped_for_the_models_own_is_moved_back(nobody: bool) {
    let repo = repository();
    let marks = open_dir();
    let marker = marks.path().join("ran");
    let head = user_git(repo.path(), &["rev-parse", "HEAD"]);
    let swap = format!(
        "printf '%s' '{}' > run.sh && chmod +x run.sh && mv .git .git-old && git init -q && \
         git config core.fsmonitor \"$PWD/run.sh\" && echo swapped",
        marking_script(&marker)
    );
    let script = Script::new()
        .reply(Reply::tool_call("bash", json!({ "command": swap })))
        .reply(Reply::text("done"));
    let output = run(repo.path(), script, nobody);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let events = events(&output.stdout);
    assert!(tool_outputs(&events)[0].contains("swapped"));
    assert!(
        restored_paths(&events)
            .iter()
            .any(|path| path.ends_with("/.git")),
        "{events:?}"
    );
    assert!(!repo.path().join(".git-old").exists());
    assert_eq!(user_git(repo.path(), &["rev-parse", "HEAD"]), head);
    next_step(repo.path());
    assert!(!marker.exists(), "the user's git ran the model's program");
}

#[test]
fn a_git_dir_swapped_for_the_models_own_is_moved_back_as_root() {
    if running_as_root() {
        a_git_dir_swapped_for_the_models_own_is_moved_back(false);
    }
}

#[test]
fn a_git_dir_swapped_for_the_models_own_is_moved_back_as_nobody() {
    if running_as_root() {
        a_git_dir_swapped_for_the_models_own_is_moved_back(true);
    }
}

/// A `.git/hooks` replaced by a link to a directory outside the writable roots: zero puts the
/// directory back without writing or removing anything through the link.
#[test]
fn a_planted_link_never_makes_zero_write_or_remove_outside() {
    if !running_as_root() {
        return;
    }
    let repo = repository();
    let outside = open_dir();
    std::fs::write(outside.path().join("victim"), "keep me\n").unwrap();
    let hooks_before = listing(&repo.path().join(".git/hooks"));
    let link = format!(
        "rm -rf .git/hooks && ln -s '{}' .git/hooks && echo linked",
        outside.path().display()
    );
    let script = Script::new()
        .reply(Reply::tool_call("bash", json!({ "command": link })))
        .reply(Reply::text("done"));
    let output = run(repo.path(), script, false);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(listing(outside.path()), vec!["victim".to_string()]);
    let hooks = repo.path().join(".git/hooks");
    assert!(hooks.symlink_metadata().unwrap().is_dir());
    assert_eq!(listing(&hooks), hooks_before);
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A background command that plants a hook after the call that started it has returned is
/// undone at the run's close, once every process has ended.
#[test]
fn a_hook_a_background_command_plants_is_put_back_at_the_close() {
    if !running_as_root() {
        return;
    }
    let repo = repository();
    let marks = open_dir();
    let marker = marks.path().join("ran");
    let plant = format!(
        "printf '%s' '{}' > run.sh && chmod +x run.sh && sleep 1 && \
         cp run.sh .git/hooks/pre-commit && echo planted late",
        marking_script(&marker)
    );
    let script = Script::new()
        .reply(Reply::tool_call(
            "bash",
            json!({ "command": plant, "run_in_background": true }),
        ))
        .reply(Reply::tool_call(
            "TaskOutput",
            json!({ "task_id": TASK_ID, "block": true, "timeout_ms": 30000 }),
        ))
        .reply(Reply::text("done"));
    let output = run(repo.path(), script, false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let events = events(&output.stdout);
    assert!(
        tool_outputs(&events)[1].contains("planted late"),
        "{events:?}"
    );
    let at_close: Vec<&Value> = restorations(&events)
        .into_iter()
        .filter(|event| event.get("callId").is_none())
        .collect();
    assert_eq!(at_close.len(), 1, "{events:?}");
    assert!(!repo.path().join(".git/hooks/pre-commit").exists());
    next_step(repo.path());
    assert!(!marker.exists(), "the user's git ran the model's program");
}
