//! Deny rules on commands hold at exec, for every process of the command's tree: each
//! spelling that once pushed past `--deny 'bash(git push *)'` is tried against a real local
//! bare remote (a `file://` URL) and the remote's refs say whether the push arrived — with
//! the rule it must not, without it (the control) it must. Whichever check refuses it, the
//! line check before it runs or the exec check as it runs, the tool output says why. As root
//! and as `nobody`, at `--auto medium` and `high`.

use std::path::Path;

use serde_json::{Value, json};

use crate::containment::{as_nobody, running_as_root};
use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::{Wire, assert_stream_contract, events, tool_outputs, zero_std_with};
use crate::worktrees::{git, repository};

/// The rule every spelling must not get past.
const RULE: &str = "bash(git push *)";

/// Each way a model has pushed past a deny rule that only parsed the line. `{r}` is the
/// remote (a bare repository of its own for each spelling, so each is judged alone), `{p}`
/// what is pushed. The spellings that need Python are left out of the runs as `nobody`, whose
/// `python3` may be a shim in root's home.
const SPELLINGS: [(&str, Needs); 22] = [
    ("timeout 60 sh -c 'git push {r} {p}'", Needs::Shell),
    ("env bash -c 'git push {r} {p}'", Needs::Shell),
    ("nice sh -c 'git push {r} {p}'", Needs::Shell),
    (
        "find . -maxdepth 0 -exec sh -c 'git push {r} {p}' \\;",
        Needs::Shell,
    ),
    ("echo push {r} {p} | xargs git", Needs::Shell),
    ("bash /dev/stdin <<< 'git push {r} {p}'", Needs::Shell),
    ("bash -o posix -c 'git push {r} {p}'", Needs::Shell),
    ("echo ${u:-$(git push {r} {p} >&2)}", Needs::Shell),
    (": ${x:=$(git push {r} {p} >&2)}", Needs::Shell),
    ("x='a[$(git push {r} {p} >&2)]'; echo $((x))", Needs::Shell),
    ("printf -v 'a[$(git push {r} {p} >&2)]' x", Needs::Shell),
    ("[ -v 'a[$(git push {r} {p} >&2)]' ]", Needs::Shell),
    ("env -S 'git push {r} {p}'", Needs::Shell),
    ("chrt -o 0 git push {r} {p}", Needs::Shell),
    ("git -c alias.p=push p {r} {p}", Needs::Shell),
    ("\"$(git --exec-path)/git-push\" {r} {p}", Needs::Shell),
    (
        "echo 'import subprocess; subprocess.run([\"git\", \"push\", \"{r}\", \"{p}\"])' | python3",
        Needs::Python,
    ),
    ("awk 'BEGIN{system(\"git push {r} {p}\")}'", Needs::Shell),
    (
        "printf 'git push {r} {p}\\n' > {r}.sh && bash {r}.sh",
        Needs::Shell,
    ),
    (
        "printf 'import os\\nos.system(\"git push {r} {p}\")\\n' > {r}.py && python3 {r}.py",
        Needs::Python,
    ),
    (
        "printf '#!/bin/sh\\ngit push {r} {p}\\n' > {r}.sh && chmod +x {r}.sh && ./{r}.sh",
        Needs::Shell,
    ),
    (
        "printf '#!/bin/sh\\nexec \"$@\"\\n' > {r}-w && chmod +x {r}-w && ./{r}-w git push {r} {p}",
        Needs::Shell,
    ),
];

/// What a spelling needs besides a shell and git.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Shell,
    Python,
}

/// What a spelling pushes: a branch no remote has until a push arrives.
const PUSHED: &str = "HEAD:refs/heads/pushed";

/// Who runs zero, and at which level.
#[derive(Debug, Clone, Copy)]
struct Setting {
    nobody: bool,
    level: &'static str,
}

/// A repository with one bare `file://` remote for each spelling, `r0`, `r1`, ….
fn repository_with_remotes() -> tempfile::TempDir {
    let repo = repository();
    for index in 0..SPELLINGS.len() {
        let name = format!("r{index}");
        git(
            repo.path(),
            &["init", "--quiet", "--bare", &format!("{name}.git")],
        );
        let url = format!("file://{}/{name}.git", repo.path().display());
        git(repo.path(), &["remote", "add", &name, &url]);
    }
    repo
}

/// The spellings `setting` tries, with their indices (their remotes' numbers).
fn spellings(setting: Setting) -> Vec<(usize, String)> {
    SPELLINGS
        .iter()
        .enumerate()
        .filter(|(_, (_, needs))| !setting.nobody || *needs == Needs::Shell)
        .map(|(index, (spelling, _))| {
            let command = spelling
                .replace("{r}", &format!("r{index}"))
                .replace("{p}", PUSHED);
            (index, command)
        })
        .collect()
}

/// Runs each of `commands` as a `bash` call in `repo` at `setting`, with `flags`; returns the
/// events.
fn run(repo: &Path, setting: Setting, commands: &[String], flags: &[&str]) -> Vec<Value> {
    let mut script = Script::new();
    for command in commands {
        script = script.reply(Reply::tool_call("bash", json!({ "command": command })));
    }
    run_script(repo, setting, script, flags)
}

/// At `--auto medium` as the caller: the setting most tests need.
const MEDIUM: Setting = Setting {
    nobody: false,
    level: "medium",
};

/// Runs the model's `script` (then its answer "done") in `repo` at `setting`, with `flags`;
/// checks the run ended well and returns the events.
fn run_script(repo: &Path, setting: Setting, script: Script, flags: &[&str]) -> Vec<Value> {
    let server = FakeModel::start(script.reply(Reply::text("done")));
    let mut zero = zero_std_with(&server, Wire::OpenAi);
    zero.env("ZERO_KILL_GRACE_MS", "300")
        .args([
            "exec",
            "-o",
            "stream-json",
            "--auto",
            setting.level,
            "--cwd",
        ])
        .arg(repo)
        .args(flags)
        .arg("go");
    let mut command = match setting.nobody {
        true => as_nobody(&zero, &[], repo),
        false => zero,
    };
    let output = command.output().unwrap();
    let parsed = events(&output.stdout);
    assert_stream_contract(&parsed, 0);
    parsed
}

/// Whether the remote `r<index>` received the push (a push writes the branch's ref as a file
/// of its own; read so, whoever owns the repository).
fn pushed(repo: &Path, index: usize) -> bool {
    repo.join(format!("r{index}.git/refs/heads/pushed"))
        .exists()
}

/// Every spelling `setting` tries: with the rule none reaches its remote and each says why;
/// without it (the control) each does.
fn no_spelling_pushes_past_the_rule(setting: Setting) {
    let tried = spellings(setting);
    let commands: Vec<String> = tried.iter().map(|(_, command)| command.clone()).collect();
    let denied = repository_with_remotes();
    let events = run(denied.path(), setting, &commands, &["--deny", RULE]);
    let outputs = tool_outputs(&events);
    assert_eq!(outputs.len(), tried.len(), "{events:?}");
    for ((index, command), output) in tried.iter().zip(&outputs) {
        assert!(
            !pushed(denied.path(), *index),
            "{setting:?} pushed: {command}\n{output}"
        );
        let refused_at_exec = format!("zero: refused by the deny rule `{RULE}`");
        assert!(
            output.starts_with("Error: permission denied") || output.contains(&refused_at_exec),
            "{setting:?}: no reason for {command}:\n{output}"
        );
    }
    let control = repository_with_remotes();
    let outputs = tool_outputs(&run(control.path(), setting, &commands, &[]));
    for ((index, command), output) in tried.iter().zip(&outputs) {
        assert!(
            pushed(control.path(), *index),
            "{setting:?}: the control did not push: {command}\n{output}"
        );
    }
}

#[test]
fn no_spelling_pushes_past_a_deny_rule_as_root_at_medium() {
    no_spelling_pushes_past_the_rule(MEDIUM);
}

#[test]
fn no_spelling_pushes_past_a_deny_rule_as_root_at_high() {
    no_spelling_pushes_past_the_rule(Setting {
        nobody: false,
        level: "high",
    });
}

#[test]
fn no_spelling_pushes_past_a_deny_rule_as_nobody() {
    if !running_as_root() {
        return;
    }
    for level in ["medium", "high"] {
        no_spelling_pushes_past_the_rule(Setting {
            nobody: true,
            level,
        });
    }
}

/// A script the model writes and runs passes the line check (a file is not looked into): the
/// exec check refuses its push, says so in the call's output, and reports it as a
/// `permission_denied` event naming the rule, the argv and the process; the call's other
/// programs ran.
#[test]
fn a_refused_exec_says_why_in_the_output_and_in_an_event() {
    let repo = repository_with_remotes();
    let command = "printf 'git push r0 HEAD:refs/heads/pushed\\n' > p.sh && bash p.sh; \
                   echo AFTER-$?";
    let events = run(
        repo.path(),
        MEDIUM,
        &[command.to_owned()],
        &["--deny", RULE],
    );
    assert!(!pushed(repo.path(), 0));
    let output = &tool_outputs(&events)[0];
    assert!(
        output.contains(
            "zero: refused by the deny rule `bash(git push *)`: git push r0 HEAD:refs/heads/pushed"
        ),
        "{output}"
    );
    assert!(output.contains("AFTER-126"), "{output}");
    let denied: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "permission_denied")
        .collect();
    assert_eq!(denied.len(), 1, "{events:?}");
    let event = denied[0];
    assert_eq!(event["rule"], RULE);
    assert_eq!(event["name"], "bash");
    assert_eq!(event["args"]["command"], command);
    assert_eq!(
        event["exec"]["argv"],
        json!(["git", "push", "r0", "HEAD:refs/heads/pushed"])
    );
    assert!(
        event["exec"]["pid"].as_u64().is_some_and(|pid| pid > 1),
        "{event}"
    );
    assert!(
        event["exec"]["path"].as_str().unwrap().ends_with("/git"),
        "{event}"
    );
    let tool_call = events
        .iter()
        .position(|e| e["type"] == "tool_call")
        .unwrap();
    let tool_result = events
        .iter()
        .position(|e| e["type"] == "tool_result")
        .unwrap();
    let at = events
        .iter()
        .position(|e| e["type"] == "permission_denied")
        .unwrap();
    assert!(tool_call < at && at < tool_result, "{events:?}");
    assert_eq!(events.last().unwrap()["permissionDenials"], 1);
}

/// With the exec check in force, a tree of many execs the rules allow runs as it would
/// without: a build's loop of programs, pipelines, subshells, a script and git itself.
#[test]
fn an_allowed_tree_of_many_execs_still_works() {
    let repo = repository_with_remotes();
    let command = "for i in $(seq 300); do /bin/true; done; echo loops-done; \
                   printf '#!/bin/sh\\necho script-ran\\n' > s.sh && chmod +x s.sh && ./s.sh; \
                   seq 50 | xargs -n 1 echo | wc -l; (cd . && git status --short | wc -l); \
                   git log --oneline | wc -l";
    for nobody in [false, true] {
        if nobody && !running_as_root() {
            continue;
        }
        let setting = Setting {
            nobody,
            level: "medium",
        };
        let events = run(
            repo.path(),
            setting,
            &[command.to_owned()],
            &["--deny", RULE],
        );
        let output = &tool_outputs(&events)[0];
        assert!(output.starts_with("exit code: 0"), "{output}");
        for expected in ["script-ran", "loops-done", "50"] {
            assert!(output.contains(expected), "{expected}: {output}");
        }
        assert!(!output.contains("zero: refused"), "{output}");
        assert!(
            !events.iter().any(|e| e["type"] == "permission_denied"),
            "{events:?}"
        );
    }
}

/// A background command's tree is checked too: its push is refused while the run goes on, and
/// the refusal is a `permission_denied` event naming the task, before its `task_finished`.
#[test]
fn a_background_command_is_checked_at_exec_too() {
    let repo = repository_with_remotes();
    let script = Script::new()
        .reply(Reply::tool_call(
            "bash",
            json!({
                "command": "printf 'git push r0 HEAD:refs/heads/pushed\\n' > p.sh && bash p.sh; \
                            touch background-done",
                "run_in_background": true
            }),
        ))
        .reply(Reply::tool_call(
            "bash",
            json!({
                "command": "for i in $(seq 100); do [ -e background-done ] && break; sleep 0.1; \
                            done; ls background-done"
            }),
        ));
    let events = run_script(repo.path(), MEDIUM, script, &["--deny", RULE]);
    assert!(repo.path().join("background-done").exists(), "{events:?}");
    assert!(!pushed(repo.path(), 0));
    let at = |kind: &str| events.iter().position(|e| e["type"] == kind);
    let denied = at("permission_denied").expect("a permission_denied event");
    let event = &events[denied];
    let task = events[at("task_started").unwrap()]["taskId"].clone();
    assert_eq!(event["exec"]["taskId"], task, "{event}");
    assert_eq!(event["id"], task, "{event}");
    assert_eq!(event["rule"], RULE);
    assert_eq!(
        event["exec"]["argv"],
        json!(["git", "push", "r0", "HEAD:refs/heads/pushed"])
    );
    assert!(
        event["reason"]
            .as_str()
            .unwrap()
            .contains("the background task"),
        "{event}"
    );
    assert!(denied < at("task_finished").unwrap(), "{events:?}");
    assert_eq!(events.last().unwrap()["permissionDenials"], 1);
}

/// A command lent a warm guardian (started before the command was known, while the model
/// answered) is checked as one started for it: the warm guardian carries the rules and has
/// the filter in force.
#[test]
fn a_command_in_a_warm_guardian_is_checked_at_exec_too() {
    let repo = repository_with_remotes();
    let push = "printf 'git push r0 HEAD:refs/heads/pushed\\n' > p.sh && bash p.sh";
    let probe = format!("tr '\\0' ' ' < /proc/$PPID/cmdline; echo; {push}");
    let hold = std::time::Duration::from_millis(400);
    let script = Script::new()
        .reply(Reply::tool_call("bash", json!({ "command": "echo first" })))
        .reply(Reply::tool_call("bash", json!({ "command": probe })).delay(hold));
    let events = run_script(repo.path(), MEDIUM, script, &["--deny", RULE]);
    let probed = &tool_outputs(&events)[1];
    assert!(
        probed.contains("__guard") && probed.contains("--warm"),
        "{probed}"
    );
    assert!(probed.contains("--deny-exec="), "{probed}");
    assert!(
        probed.contains("zero: refused by the deny rule"),
        "{probed}"
    );
    assert!(!pushed(repo.path(), 0));
}
