//! Permission rules through the real binary and a real shell: what a rule denies never runs
//! (the disk says so, not zero's account), what it allows runs, a denial names the rule, and
//! a specialist is held to its parent's rules.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, FakeModel, Reply, Route, Script};
use crate::support::zero::{
    Wire, assert_stream_contract, events, tool_outputs, zero, zero_std_with,
};

/// Runs `zero exec -o stream-json` in `workspace` with `flags`, the model asking for each of
/// `calls` in turn and then answering; returns the exit code and the events.
fn run(calls: Vec<Reply>, workspace: &Path, flags: &[&str]) -> (i32, Vec<Value>) {
    let mut script = Script::new();
    for call in calls {
        script = script.reply(call);
    }
    let server = FakeModel::start(script.reply(Reply::text("done")));
    let output = zero_std_with(&server, Wire::OpenAi)
        .args(["exec", "-o", "stream-json", "--cwd"])
        .arg(workspace)
        .args(flags)
        .arg("go")
        .output()
        .unwrap();
    let events = events(&output.stdout);
    (output.status.code().unwrap_or(-1), events)
}

fn bash(command: &str) -> Reply {
    Reply::tool_call("bash", json!({ "command": command }))
}

/// The events of `kind`.
fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn run_end(events: &[Value]) -> &Value {
    events.last().unwrap()
}

/// A git repository with one commit, `first commit`.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "first commit"]);
    dir
}

#[test]
fn a_deny_rule_refuses_its_command_by_name_and_others_run() {
    let repo = repository();
    let (code, events) = run(
        vec![
            bash("git push origin main && touch pushed"),
            bash("git status --short && echo STATUS-RAN"),
            // The same push with options before the subcommand, and as code fed to a shell.
            bash("git -C . push origin main; touch pushed"),
            bash("echo 'git push origin main' | bash; touch pushed"),
        ],
        repo.path(),
        &["--auto", "medium", "--deny", "bash(git push *)"],
    );
    assert_eq!(code, 0);
    assert_stream_contract(&events, 0);
    let outputs = tool_outputs(&events);
    for hidden in &outputs[2..] {
        assert!(hidden.starts_with("Error: permission denied"), "{hidden}");
    }
    assert!(
        outputs[0].starts_with("Error: permission denied: the rule `bash(git push *)`"),
        "{}",
        outputs[0]
    );
    assert!(outputs[1].contains("STATUS-RAN"), "{}", outputs[1]);
    assert!(!repo.path().join("pushed").exists());
    let denied = of_type(&events, "permission_denied");
    assert_eq!(denied.len(), 3);
    assert_eq!(denied[0]["rule"], "bash(git push *)");
    assert_eq!(denied[0]["name"], "bash");
    assert_eq!(
        denied[0]["args"]["command"],
        "git push origin main && touch pushed"
    );
    assert_eq!(run_end(&events)["permissionDenials"], 3);
}

#[test]
fn allow_rules_run_what_they_match_and_deny_the_rest_unrun() {
    let ws = tempfile::tempdir().unwrap();
    let (code, events) = run(
        vec![
            bash("cargo test --help > /dev/null && echo CARGO-TEST-RAN"),
            bash("git diff --stat; echo GIT-DIFF-RAN"),
            bash("ls && touch listed"),
            bash("cargo test && curl x; touch chained"),
            bash("cargo test $(curl x; touch substituted)"),
            bash("cargo test\n touch newline"),
        ],
        ws.path(),
        &[
            "--auto",
            "medium",
            "--allow",
            "bash(cargo test *)",
            "--allow",
            "bash(git diff *)",
            "--allow",
            "bash(echo *)",
        ],
    );
    assert_eq!(code, 0);
    let outputs = tool_outputs(&events);
    assert!(outputs[0].contains("CARGO-TEST-RAN"), "{}", outputs[0]);
    assert!(outputs[1].contains("GIT-DIFF-RAN"), "{}", outputs[1]);
    assert!(
        outputs[2].contains("no allow rule matches the command `ls`")
            && outputs[2].contains("--allow 'bash(ls *)'"),
        "{}",
        outputs[2]
    );
    for (output, what) in outputs[3..]
        .iter()
        .zip(["curl x", "curl x", "touch newline"])
    {
        assert!(output.starts_with("Error: permission denied:"), "{output}");
        assert!(output.contains(what), "{output}");
    }
    for file in ["listed", "chained", "substituted", "newline"] {
        assert!(!ws.path().join(file).exists(), "{file} ran");
    }
    assert_eq!(of_type(&events, "permission_denied").len(), 4);
    assert_eq!(run_end(&events)["permissionDenials"], 4);
}

#[test]
fn at_low_an_allowed_git_log_runs_and_stays_read_only() {
    let repo = repository();
    let (code, events) = run(
        vec![
            bash("git log --oneline"),
            bash("git log --output=written.txt; echo LOG-TRIED"),
            bash("git status"),
        ],
        repo.path(),
        &["--auto", "low", "--allow", "bash(git log *)"],
    );
    assert_eq!(code, 0);
    let outputs = tool_outputs(&events);
    assert!(outputs[0].contains("first commit"), "{}", outputs[0]);
    assert!(outputs[1].contains("LOG-TRIED"), "{}", outputs[1]);
    assert!(!repo.path().join("written.txt").exists(), "{}", outputs[1]);
    assert!(
        outputs[2].contains("no allow rule matches"),
        "{}",
        outputs[2]
    );
}

#[test]
fn bash_allow_rules_that_cannot_take_effect_are_warned_about() {
    let repo = repository();
    let warnings = |flags: &[&str]| {
        let (code, events) = run(Vec::new(), repo.path(), flags);
        assert_eq!(code, 0);
        of_type(&events, "warning")
            .iter()
            .map(|w| w["message"].as_str().unwrap().to_string())
            .filter(|m| m.contains("bash is not offered"))
            .collect::<Vec<_>>()
    };
    let allow = ["--allow", "bash(git log *)"];
    let unsandboxed = warnings(&[&["--auto", "low", "--sandbox", "off"][..], &allow].concat());
    assert_eq!(unsandboxed.len(), 1, "{unsandboxed:?}");
    assert!(
        unsandboxed[0].contains("`bash(git log *)`"),
        "{unsandboxed:?}"
    );
    assert!(warnings(&[&["--auto", "low"][..], &allow].concat()).is_empty());
    assert!(warnings(&[&["--auto", "medium", "--sandbox", "off"][..], &allow].concat()).is_empty());
}

#[test]
fn a_claude_settings_file_is_read_as_written() {
    let repo = repository();
    std::fs::create_dir(repo.path().join("src")).unwrap();
    std::fs::write(repo.path().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(repo.path().join("secret.txt"), "hunter2\n").unwrap();
    let settings = tempfile::tempdir().unwrap();
    let file = settings.path().join("settings.json");
    std::fs::write(
        &file,
        json!({"permissions": {
            "allow": ["Bash(git log:*)", "Read(./src/**)"],
            "deny": ["Bash(git push:*)"]
        }})
        .to_string(),
    )
    .unwrap();
    let (code, events) = run(
        vec![
            Reply::tool_call("read_file", json!({"path": "src/lib.rs"})),
            Reply::tool_call("read_file", json!({"path": "secret.txt"})),
            bash("git log --format=%s"),
            bash("git push origin main"),
        ],
        repo.path(),
        &["--auto", "medium", "--rules", file.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    let outputs = tool_outputs(&events);
    assert!(outputs[0].contains("pub fn f()"), "{}", outputs[0]);
    assert!(
        outputs[1].contains("no allow rule matches the path `secret.txt`")
            && !outputs[1].contains("hunter2"),
        "{}",
        outputs[1]
    );
    assert!(outputs[2].contains("first commit"), "{}", outputs[2]);
    assert!(outputs[3].contains("`Bash(git push:*)`"), "{}", outputs[3]);
}

#[test]
fn an_output_redirection_is_held_to_the_write_rules() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".github")).unwrap();
    let (_, events) = run(
        vec![
            bash("echo hi > .github/ci.yml"),
            bash("echo hi > notes.txt"),
        ],
        ws.path(),
        &[
            "--auto",
            "medium",
            "--allow",
            "bash(echo *)",
            "--deny",
            "write_file(.github/**)",
        ],
    );
    let outputs = tool_outputs(&events);
    assert!(
        outputs[0].contains("`write_file(.github/**)`"),
        "{}",
        outputs[0]
    );
    assert!(!ws.path().join(".github/ci.yml").exists());
    assert!(ws.path().join("notes.txt").exists(), "{}", outputs[1]);
}

#[test]
fn a_specialist_cannot_run_what_its_parent_denies() {
    let ws = tempfile::tempdir().unwrap();
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(bash("touch child-was-here"))
                    .reply(Reply::text("the child is done")),
            )
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Touch a file."}),
            ))
            .reply(Reply::text("done")),
    );
    let output = zero_std_with(&server, Wire::OpenAi)
        .args(["exec", "-o", "stream-json", "--auto", "medium"])
        .args(["--deny", "bash(touch *)", "--cwd"])
        .arg(ws.path())
        .arg("go")
        .output()
        .unwrap();
    assert_stream_contract(&events(&output.stdout), 0);
    assert!(!ws.path().join("child-was-here").exists());
    let child_saw: String = server
        .requests()
        .iter()
        .filter(|r| r.raw_body.contains(CHILD))
        .map(|r| r.raw_body.clone())
        .collect();
    assert!(child_saw.contains("bash(touch *)"), "{child_saw}");
}

#[test]
fn list_tools_shows_the_rules_in_force() {
    let ws = tempfile::tempdir().unwrap();
    let listing = zero()
        .args(["exec", "--list-tools", "--auto", "medium"])
        .args([
            "--allow",
            "bash(cargo test *)",
            "--deny",
            "Bash(git push:*)",
            "--cwd",
        ])
        .arg(ws.path())
        .assert()
        .success();
    let text = String::from_utf8_lossy(&listing.get_output().stdout).to_string();
    assert!(
        text.contains("rules:\n  allow  bash(cargo test *)  (the command line)\n  deny   Bash(git push:*)  (the command line)\n"),
        "{text}"
    );
    let json = zero()
        .args([
            "exec",
            "--list-tools",
            "-o",
            "json",
            "--deny",
            "bash(curl *)",
            "--cwd",
        ])
        .arg(ws.path())
        .assert()
        .success();
    let listed: Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(
        listed["rules"],
        json!([{"effect": "deny", "rule": "bash(curl *)", "source": "the command line"}])
    );
}

#[test]
fn a_malformed_rule_is_a_usage_error_naming_it() {
    let ws = tempfile::tempdir().unwrap();
    for (flags, says) in [
        (
            vec!["--deny", "WebSearch(example.com)"],
            "invalid rule `WebSearch(example.com)` (--deny, from the command line): zero has no tool `WebSearch`",
        ),
        (
            vec!["--allow", "bash(git log"],
            "invalid rule `bash(git log` (--allow, from the command line): a pattern must end the rule with `)`",
        ),
        (
            vec!["--rules", "/nonexistent/settings.json"],
            "cannot read the rules in /nonexistent/settings.json",
        ),
    ] {
        let assert = zero()
            .args(["exec", "--cwd"])
            .arg(ws.path())
            .args(&flags)
            .arg("go")
            .assert()
            .code(2);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
    }
    // config.toml's `[permissions]` too.
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir(config.path().join("zero")).unwrap();
    std::fs::write(
        config.path().join("zero/config.toml"),
        "[permissions]\ndeny = [\"update_plan(x)\"]\n",
    )
    .unwrap();
    let assert = zero()
        .env("XDG_CONFIG_HOME", config.path())
        .args(["exec", "--cwd"])
        .arg(ws.path())
        .arg("go")
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains("invalid rule `update_plan(x)` (--deny, from config.toml): `update_plan` takes no pattern"),
        "{stderr}"
    );
}

/// The outputs of `calls` run at `--auto medium` in `workspace` with `flags`.
fn outputs_of(calls: Vec<Reply>, workspace: &Path, flags: &[&str]) -> Vec<String> {
    let flags = [&["--auto", "medium"][..], flags].concat();
    let (code, events) = run(calls, workspace, &flags);
    assert_eq!(code, 0, "{events:?}");
    tool_outputs(&events)
}

#[test]
fn a_line_the_rules_cannot_follow_runs_nothing_under_an_allow_or_a_deny_list() {
    let lines = [
        "echo ${u:-$(touch substituted)}",
        ": ${x:=$(touch assigned)}",
        "x='a[$(touch subscripted)]'; echo $((x))",
        "echo 'touch piped' | bash",
    ];
    let markers = ["substituted", "assigned", "subscripted", "piped"];
    for flags in [
        &["--allow", "bash(echo *)", "--allow", "bash(: *)"][..],
        &["--deny", "bash(git push *)"][..],
    ] {
        let ws = tempfile::tempdir().unwrap();
        let outputs = outputs_of(lines.iter().map(|l| bash(l)).collect(), ws.path(), flags);
        for output in &outputs {
            assert!(
                output.starts_with("Error: permission denied:") && output.contains("cannot follow"),
                "{flags:?}: {output}"
            );
        }
        for marker in markers {
            assert!(!ws.path().join(marker).exists(), "{flags:?}: {marker} ran");
        }
    }
    // The control: without rules each line runs what it hides.
    let ws = tempfile::tempdir().unwrap();
    outputs_of(lines.iter().map(|l| bash(l)).collect(), ws.path(), &[]);
    for marker in markers {
        assert!(ws.path().join(marker).exists(), "{marker} did not run");
    }
}

#[test]
fn a_write_rule_holds_a_redirection_without_any_rule_on_bash() {
    let lines = [
        "echo x > .github/ci.yml",
        "cd .github/workflows && echo x > ci.yml",
        "(cd .github && echo x > extra.yml)",
        "echo x | tee .github/teed.yml",
    ];
    let landed = [
        ".github/ci.yml",
        ".github/workflows/ci.yml",
        ".github/extra.yml",
        ".github/teed.yml",
    ];
    let workspace = || {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".github/workflows")).unwrap();
        ws
    };
    let ws = workspace();
    let mut calls: Vec<Reply> = lines.iter().map(|l| bash(l)).collect();
    calls.push(bash("echo x > notes.txt"));
    let outputs = outputs_of(calls, ws.path(), &["--deny", "write_file(.github/**)"]);
    for output in &outputs[..lines.len()] {
        assert!(output.contains("`write_file(.github/**)`"), "{output}");
    }
    for file in landed {
        assert!(!ws.path().join(file).exists(), "{file} landed");
    }
    assert!(
        ws.path().join("notes.txt").exists(),
        "{}",
        outputs[lines.len()]
    );
    // The control: without the rule every line writes its file.
    let ws = workspace();
    outputs_of(lines.iter().map(|l| bash(l)).collect(), ws.path(), &[]);
    for file in landed {
        assert!(ws.path().join(file).exists(), "{file} did not land");
    }
}

/// A workspace with `l -> .github/workflows` committed, as a pull request may hold it.
fn linked_repository() -> tempfile::TempDir {
    let repo = repository();
    std::fs::create_dir_all(repo.path().join(".github/workflows")).unwrap();
    std::fs::create_dir_all(repo.path().join("src")).unwrap();
    std::fs::write(repo.path().join(".github/workflows/ci.yml"), "on: push\n").unwrap();
    std::os::unix::fs::symlink(".github/workflows", repo.path().join("l")).unwrap();
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["add", "-A"])
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(status.success());
    repo
}

/// Calls that write `.github/workflows/evil.yml` through `l/..`, one per writing tool.
fn writes_through_the_link() -> Vec<Reply> {
    vec![
        Reply::tool_call(
            "write_file",
            json!({"path": "l/../workflows/evil.yml", "content": "evil\n"}),
        ),
        Reply::tool_call(
            "edit_file",
            json!({"path": "l/../workflows/ci.yml", "old_string": "on: push", "new_string": "on: evil"}),
        ),
        Reply::tool_call(
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: l/../workflows/patched.yml\n+evil\n*** End Patch"}),
        ),
    ]
}

#[test]
fn a_link_and_dotdot_cannot_carry_a_file_tool_past_a_rule() {
    let evil = |repo: &tempfile::TempDir| {
        let workflows = repo.path().join(".github/workflows");
        let ci = std::fs::read_to_string(workflows.join("ci.yml")).unwrap();
        [
            workflows.join("evil.yml").exists(),
            ci.contains("evil"),
            workflows.join("patched.yml").exists(),
        ]
    };
    for flags in [
        &[
            "--deny",
            "write_file(.github/**)",
            "--deny",
            "Edit(.github/**)",
        ][..],
        &["--allow", "Edit(src/**)"][..],
    ] {
        let repo = linked_repository();
        let outputs = outputs_of(writes_through_the_link(), repo.path(), flags);
        for output in &outputs {
            assert!(
                output.starts_with("Error: permission denied:"),
                "{flags:?}: {output}"
            );
        }
        assert_eq!(evil(&repo), [false; 3], "{flags:?}: {outputs:?}");
    }
    // The control: without rules each call lands in `.github/workflows`.
    let repo = linked_repository();
    outputs_of(writes_through_the_link(), repo.path(), &[]);
    assert_eq!(evil(&repo), [true; 3]);
    // The read tools, by the same path.
    let read = || {
        vec![
            Reply::tool_call("read_file", json!({"path": "l/../workflows/ci.yml"})),
            Reply::tool_call("grep", json!({"pattern": "push", "path": "l/../workflows"})),
        ]
    };
    for flags in [
        &["--deny", "Read(.github/**)"][..],
        &["--allow", "Read(src/**)"][..],
    ] {
        let repo = linked_repository();
        for output in outputs_of(read(), repo.path(), flags) {
            assert!(
                output.starts_with("Error: permission denied:") && !output.contains("on: push"),
                "{flags:?}: {output}"
            );
        }
    }
    let repo = linked_repository();
    for output in outputs_of(read(), repo.path(), &[]) {
        assert!(output.contains("on: push"), "{output}");
    }
}

#[test]
fn a_read_deny_keeps_a_file_out_of_every_search() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("secrets")).unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("secrets/prod.txt"), "token = hunter2\n").unwrap();
    std::fs::write(ws.path().join("src/lib.rs"), "// token = public\n").unwrap();
    let searches = || {
        vec![
            Reply::tool_call("grep", json!({"pattern": "token"})),
            Reply::tool_call("glob", json!({"pattern": "**/*"})),
            Reply::tool_call("list_directory", json!({})),
            Reply::tool_call("list_directory", json!({"recursive": true})),
        ]
    };
    let outputs = outputs_of(searches(), ws.path(), &["--deny", "Read(secrets/**)"]);
    for output in &outputs {
        assert!(
            !output.contains("hunter2") && !output.contains("secrets") && output.contains("src"),
            "{output}"
        );
    }
    assert!(outputs[0].contains("token = public"), "{}", outputs[0]);
    // The control: without the rule grep prints the secret line and the listings name it.
    let outputs = outputs_of(searches(), ws.path(), &[]);
    assert!(
        outputs[0].contains("secrets/prod.txt:1:token = hunter2"),
        "{}",
        outputs[0]
    );
    for output in &outputs[1..] {
        assert!(output.contains("secrets"), "{output}");
    }
}
