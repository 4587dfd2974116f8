//! The rule set's decisions, hostile command lines among them.

use std::path::Path;

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn rules(allow: &[&str], deny: &[&str]) -> RuleSet {
    rules_in(Path::new("/ws"), allow, deny)
}

fn rules_in(workspace: &Path, allow: &[&str], deny: &[&str]) -> RuleSet {
    let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    RuleSet::from_flags(&owned(allow), &owned(deny), workspace).unwrap()
}

fn bash(set: &RuleSet, command: &str) -> Verdict {
    set.check("bash", &json!({ "command": command }))
}

fn denied(verdict: &Verdict) -> &Denial {
    match verdict {
        Verdict::Deny(denial) => denial,
        Verdict::Allow => panic!("allowed"),
    }
}

#[test]
fn a_deny_rule_names_itself_and_other_commands_run() {
    let set = rules(&[], &["bash(git push *)"]);
    let verdict = bash(&set, "git push origin main");
    let denial = denied(&verdict);
    assert_eq!(denial.rule(), Some("bash(git push *)"));
    assert!(
        denial.reason.contains("`bash(git push *)`"),
        "{}",
        denial.reason
    );
    assert_eq!(bash(&set, "git status"), Verdict::Allow);
    assert!(matches!(
        bash(&set, "git status && git push"),
        Verdict::Deny(_)
    ));
    // Quote removal: `git "push"` is `git push`; the deny also sees through variables set
    // before the command and through wrappers.
    for hidden in [
        "git \"push\"",
        "g'it' pu\\sh",
        "FOO=1 git push",
        "env FOO=1 git push",
        "timeout 5 git push",
        "git $(echo push)",
        "$GIT push",
        "/usr/bin/git push",
        "/usr/bin/env /usr/bin/git push",
    ] {
        assert!(matches!(bash(&set, hidden), Verdict::Deny(_)), "{hidden}");
    }
}

#[test]
fn allow_rules_admit_only_what_they_match_and_suggest_the_rule_that_would() {
    let set = rules(&["bash(cargo test *)", "bash(git diff *)"], &[]);
    assert_eq!(bash(&set, "cargo test"), Verdict::Allow);
    assert_eq!(
        bash(&set, "cargo test -p zero && git diff --stat"),
        Verdict::Allow
    );
    let verdict = bash(&set, "ls -la");
    let denial = denied(&verdict);
    assert_eq!(denial.rule(), None);
    assert!(
        denial
            .reason
            .contains("no allow rule matches the command `ls -la`")
            && denial.reason.contains("--allow 'bash(ls *)'"),
        "{}",
        denial.reason
    );
    for line in [
        "cargo test && curl x",
        "cargo test $(curl x)",
        "cargo test `curl x`",
        "cargo test; curl x",
        "cargo test | curl x",
        "cargo test || curl x",
        "cargo test & curl x",
        "cargo test\n rm -rf /",
        "(cargo test; curl x)",
        "{ cargo test; curl x; }",
        "if cargo test; then curl x; fi",
        "cargo test > >(curl x)",
        "RUSTFLAGS=x cargo test",
        "bash -c 'cargo test; curl x'",
        "git diff; curl evil.example",
        "git diff $(curl evil.example)",
        "git diff；curl evil.example",
        "ｇｉｔ diff",
        "git diff\0; curl x",
        "git diff\u{7}",
        "eval 'cargo test'",
    ] {
        assert!(
            matches!(bash(&set, line), Verdict::Deny(_)),
            "{line:?} was allowed"
        );
    }
    assert!(matches!(
        bash(&set, &format!("cargo test {}", "a ".repeat(10_000))),
        Verdict::Deny(_)
    ));
    assert_eq!(
        bash(&set, "bash -c 'cargo test && git diff'"),
        Verdict::Allow
    );
}

#[test]
fn without_rules_for_bash_nothing_is_parsed_or_denied() {
    let set = rules(&["read_file(src/**)"], &[]);
    assert_eq!(bash(&set, "eval $(curl x)"), Verdict::Allow);
    assert_eq!(
        RuleSet::default().check("bash", &json!({"command": "\0"})),
        Verdict::Allow
    );
}

#[test]
fn file_rules_match_paths_relative_to_the_workspace() {
    let set = rules(
        &["Read(./src/**)"],
        &["write_file(.github/**)", "edit_file"],
    );
    let read = |path: &str| set.check("read_file", &json!({ "path": path }));
    assert_eq!(read("src/lib.rs"), Verdict::Allow);
    assert_eq!(read("/ws/src/lib.rs"), Verdict::Allow);
    assert!(matches!(read("src/../README.md"), Verdict::Deny(_)));
    let denial = denied(&read("README.md")).clone();
    assert!(
        denial.reason.contains("--allow 'read_file(README.md)'"),
        "{}",
        denial.reason
    );
    assert_eq!(
        set.check("grep", &json!({"pattern": "x", "path": "src"})),
        Verdict::Allow
    );
    assert!(matches!(
        set.check("grep", &json!({"pattern": "x"})),
        Verdict::Deny(_)
    ));
    let write = |path: &str| set.check("write_file", &json!({ "path": path, "content": "" }));
    assert!(matches!(
        write(".github/workflows/ci.yml"),
        Verdict::Deny(_)
    ));
    assert_eq!(write("docs/a.md"), Verdict::Allow);
    assert!(matches!(
        set.check(
            "edit_file",
            &json!({"path": "a", "old_string": "", "new_string": ""})
        ),
        Verdict::Deny(_)
    ));
}

#[test]
fn a_patch_is_judged_by_every_path_it_touches() {
    let set = rules(&[], &["apply_patch(.github/**)"]);
    let patch = |text: &str| set.check("apply_patch", &json!({ "patch": text }));
    let rename = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: .github/a.yml\n@@\n-x\n+y\n*** End Patch";
    assert!(matches!(patch(rename), Verdict::Deny(_)));
    let add = "*** Begin Patch\n*** Add File: docs/a.md\n+x\n*** End Patch";
    assert_eq!(patch(add), Verdict::Allow);
}

#[test]
fn an_output_redirection_is_a_write_the_write_rules_decide() {
    let set = rules(&["bash(echo *)"], &["write_file(.github/**)"]);
    assert_eq!(bash(&set, "echo hi > notes.txt 2>&1"), Verdict::Allow);
    let verdict = bash(&set, "echo hi > .github/ci.yml");
    assert!(
        denied(&verdict)
            .reason
            .contains("a file this command line writes"),
        "{}",
        denied(&verdict).reason
    );
    assert!(matches!(bash(&set, "echo hi > $OUT"), Verdict::Deny(_)));
}

#[test]
fn a_link_does_not_carry_a_call_around_a_rule() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(ws.join(".github")).unwrap();
    std::os::unix::fs::symlink(ws.join(".github"), ws.join("docs")).unwrap();
    let set = rules_in(&ws, &["write_file(docs/**)"], &["write_file(.github/**)"]);
    let verdict = set.check("write_file", &json!({"path": "docs/ci.yml", "content": ""}));
    assert!(matches!(verdict, Verdict::Deny(_)));
}

#[test]
fn task_and_mcp_rules_match_names() {
    let set = rules(
        &["Task(explorer)", "mcp__github__*"],
        &["mcp__github__delete_repo"],
    );
    assert_eq!(
        set.check("Task", &json!({"name": "explorer", "prompt": "x"})),
        Verdict::Allow
    );
    assert!(matches!(
        set.check("Task", &json!({"name": "reviewer", "prompt": "x"})),
        Verdict::Deny(_)
    ));
    assert_eq!(set.check("mcp__github__list", &json!({})), Verdict::Allow);
    assert!(matches!(
        set.check("mcp__github__delete_repo", &json!({})),
        Verdict::Deny(_)
    ));
    assert_eq!(set.check("mcp__other__x", &json!({})), Verdict::Allow);
    assert_eq!(set.check("update_plan", &json!({})), Verdict::Allow);
}

/// A piece of a command line: its text and whether the rules allow it.
fn piece() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        Just(("cargo test".to_string(), true)),
        Just(("cargo test --all".to_string(), true)),
        Just(("git diff --stat".to_string(), true)),
        Just(("git \"diff\"".to_string(), true)),
        Just(("git push origin".to_string(), false)),
        Just(("curl x".to_string(), false)),
        Just(("rm -rf /".to_string(), false)),
        Just(("cargo test $(curl x)".to_string(), false)),
        Just(("ls".to_string(), false)),
        Just(("git diff `rm x`".to_string(), false)),
        Just(("eval ls".to_string(), false)),
        Just(("sh -c 'curl x'".to_string(), false)),
    ]
}

/// An operator that joins two pieces.
fn operator() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(" ; "),
        Just(" && "),
        Just(" || "),
        Just(" | "),
        Just(" & "),
        Just("\n"),
        Just(";"),
        Just("&&"),
    ]
}

proptest! {
    #[test]
    fn a_line_is_allowed_only_when_every_piece_is(
        first in piece(),
        rest in proptest::collection::vec((operator(), piece()), 0..5),
        wrap in 0..3usize,
    ) {
        let set = rules(&["bash(cargo test *)", "bash(git diff *)"], &["bash(git push *)"]);
        let mut line = first.0.clone();
        let mut all_allowed = first.1;
        for (op, (text, allowed)) in &rest {
            line.push_str(op);
            line.push_str(text);
            all_allowed &= *allowed;
        }
        let line = match wrap {
            1 => format!("( {line} )"),
            2 => format!("{{ {line}; }}"),
            _ => line,
        };
        let verdict = bash(&set, &line);
        prop_assert_eq!(verdict == Verdict::Allow, all_allowed, "{:?}", line);
    }
}

#[test]
fn twenty_rules_cost_a_call_far_less_than_a_millisecond() {
    // Ten allow and ten deny rules, the call's command and its redirection matched by both.
    let mut allow: Vec<String> = (0..8).map(|n| format!("bash(tool{n} sub *)")).collect();
    allow.extend(["bash(echo *)".into(), "write_file(**)".into()]);
    let mut deny: Vec<String> = (0..8).map(|n| format!("bash(bad{n} *)")).collect();
    deny.extend(["write_file(.github/**)".into(), "read_file(.env)".into()]);
    let allow: Vec<&str> = allow.iter().map(String::as_str).collect();
    let deny: Vec<&str> = deny.iter().map(String::as_str).collect();
    let set = rules(&allow, &deny);
    assert_eq!(set.rules().len(), 20);
    let args = json!({"command": "echo 7 >> log.txt"});
    assert_eq!(set.check("bash", &args), Verdict::Allow);
    let rounds = 2000;
    let started = std::time::Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(set.check("bash", std::hint::black_box(&args)));
    }
    let each = started.elapsed() / rounds;
    eprintln!("20 rules, one bash call: {each:?} a check");
    // Unoptimised and on a shared machine: the release build is some ten times faster.
    assert!(each < std::time::Duration::from_millis(1), "{each:?}");
}

#[test]
fn a_script_fed_to_a_shell_or_an_interpreter_is_not_waved_through_a_deny_list() {
    let set = rules(&[], &["bash(git push *)"]);
    // A script file is not looked into (documented); a program run with its arguments is not
    // code given inline.
    for allowed in [
        "bash script.sh",
        "python3 tool.py -c x",
        "git status",
        "node build.js",
    ] {
        assert_eq!(bash(&set, allowed), Verdict::Allow, "{allowed}");
    }
    for hidden in [
        "echo 'git push' | bash",
        "bash <<< 'git push'",
        "bash -s <<< 'git push'",
        "sh < script.sh",
        "printf 'git push' | sh -",
        "python3 -c 'import os; os.system(\"git push\")'",
        "node -e 'require(\"child_process\").execSync(\"git push\")'",
        "env perl -e 'system q(git push)'",
        "xargs -0 bash -s",
        "git -C . push",
        "command git push",
        "exec git push",
        "nohup git push",
        "time git push",
        "! git push",
        "git push&",
        "(git push)",
        "{ git push; }",
        "if true; then git push; fi",
        "for x in 1; do git push; done",
        "git push 2>/dev/null",
        "GIT_DIR=.git git push",
        "\\git push",
    ] {
        assert!(
            matches!(bash(&set, hidden), Verdict::Deny(_)),
            "allowed: {hidden}"
        );
    }
}

#[test]
fn a_line_the_analysis_cannot_follow_is_allowed_by_no_rule_and_refused_by_any_deny_rule() {
    let allow = rules(&["bash(cargo test *)", "bash(echo *)", "bash(: *)"], &[]);
    for line in [
        "cargo test ${u:-$(touch x)}",
        ": ${x:=$(touch x)}",
        "echo $((x))",
        "echo 'git push' | bash",
    ] {
        let verdict = bash(&allow, line);
        let reason = &denied(&verdict).reason;
        assert!(reason.contains("cannot follow"), "{line}: {reason}");
    }
    let deny = rules(&[], &["bash(git push *)"]);
    let verdict = bash(&deny, "echo ${u:-$(touch x)}");
    let reason = &denied(&verdict).reason;
    assert!(
        reason.contains("substitution inside the operand"),
        "{reason}"
    );
    assert_eq!(denied(&verdict).rule(), None);
    assert_eq!(bash(&deny, "echo ${u:-fine}"), Verdict::Allow);
}

#[test]
fn a_substitution_a_line_runs_is_a_command_the_rules_check() {
    let set = rules(&["bash(git diff *)"], &[]);
    let verdict = bash(&set, "git diff $(git rev-parse HEAD)");
    assert!(
        denied(&verdict).reason.contains("`git rev-parse HEAD`"),
        "{}",
        denied(&verdict).reason
    );
    let both = rules(&["bash(git diff *)", "bash(git rev-parse *)"], &[]);
    assert_eq!(
        bash(&both, "git diff $(git rev-parse HEAD)"),
        Verdict::Allow
    );
}

#[test]
fn a_wrapper_carries_its_command_which_needs_allowing_itself() {
    let set = rules(
        &["bash(cargo test *)", "bash(timeout *)"],
        &["bash(git push *)"],
    );
    assert_eq!(bash(&set, "timeout 60 cargo test"), Verdict::Allow);
    assert_eq!(bash(&set, "nice -n 5 cargo test --all"), Verdict::Allow);
    for line in [
        "timeout 60 git status",
        "timeout 60 sh -c 'git status'",
        "env bash -c 'git status'",
        "find . -exec sh -c 'git status' \\;",
    ] {
        assert!(matches!(bash(&set, line), Verdict::Deny(_)), "{line}");
    }
    for pushed in [
        "timeout 60 git push",
        "chrt -o 0 git push",
        "nice sh -c 'git push'",
        "/usr/lib/git-core/git-push origin",
        "git-push",
    ] {
        let verdict = bash(&set, pushed);
        assert_eq!(
            denied(&verdict).rule(),
            Some("bash(git push *)"),
            "{pushed}"
        );
    }
}

#[test]
fn redirections_obey_the_write_rules_without_any_rule_on_bash() {
    let set = rules(&[], &["write_file(.github/**)"]);
    for line in [
        "echo x > .github/ci.yml",
        "cd .github/workflows && echo x > ci.yml",
        "(cd .github && echo x > extra.yml)",
        "echo x | tee .github/x.yml",
        "cd .github; echo x > a",
    ] {
        let verdict = bash(&set, line);
        assert_eq!(
            denied(&verdict).rule(),
            Some("write_file(.github/**)"),
            "{line}"
        );
    }
    for unplaced in [
        "cd \"$X\" && echo x > ci.yml",
        "echo x > \"$F\"",
        "eval 'echo x > y'",
    ] {
        let verdict = bash(&set, unplaced);
        assert!(
            denied(&verdict).reason.contains("cannot place"),
            "{unplaced}: {}",
            denied(&verdict).reason
        );
    }
    for fine in [
        "echo x > notes.txt",
        "(cd .github); echo x > notes.txt",
        "python3 -c 'print(1)' > out.txt",
        "cargo test 2>&1 | tee log.txt",
    ] {
        assert_eq!(bash(&set, fine), Verdict::Allow, "{fine}");
    }
}

/// The workspace of item 4: `l -> .github/workflows` committed, as a pull request may.
fn linked_workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join(".github/workflows")).unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join(".github/workflows/ci.yml"), "on: push\n").unwrap();
    std::os::unix::fs::symlink(".github/workflows", ws.join("l")).unwrap();
    std::os::unix::fs::symlink("../.github/workflows", ws.join("src/l")).unwrap();
    (dir, ws)
}

/// A call of `tool` on `path` as its arguments name it.
fn call_on(set: &RuleSet, tool: &str, path: &str) -> Verdict {
    let args = match tool {
        "apply_patch" => json!({
            "patch": format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch")
        }),
        "grep" => json!({"pattern": "x", "path": path}),
        "glob" => json!({"pattern": "*", "path": path}),
        _ => json!({"path": path, "content": "", "old_string": "a", "new_string": "b"}),
    };
    set.check(tool, &args)
}

#[test]
fn a_path_through_a_link_and_dotdot_is_judged_where_the_tool_lands() {
    let (_dir, ws) = linked_workspace();
    let deny = rules_in(&ws, &[], &["Edit(.github/**)", "Read(.github/**)"]);
    let allow = rules_in(&ws, &["Edit(src/**)", "Read(src/**)"], &[]);
    for tool in ["write_file", "edit_file", "apply_patch"] {
        for set in [&deny, &allow] {
            // `l/..` is `.github`, not the workspace; `src/l/..` is `.github` too.
            for path in ["l/../workflows/evil.yml", "src/l/../workflows/evil.yml"] {
                assert!(
                    matches!(call_on(set, tool, path), Verdict::Deny(_)),
                    "{tool} {path}"
                );
            }
        }
        assert_eq!(call_on(&allow, tool, "src/ok.rs"), Verdict::Allow, "{tool}");
        assert_eq!(call_on(&deny, tool, "src/ok.rs"), Verdict::Allow, "{tool}");
    }
    for tool in ["read_file", "grep", "glob", "list_directory"] {
        for set in [&deny, &allow] {
            let path = if tool == "read_file" {
                "l/../workflows/ci.yml"
            } else {
                "l/../workflows"
            };
            assert!(
                matches!(call_on(set, tool, path), Verdict::Deny(_)),
                "{tool}"
            );
        }
    }
    // A redirection through the same link, with or without a rule on bash.
    let writes = rules_in(&ws, &[], &["write_file(.github/**)"]);
    let verdict = bash(&writes, "echo x > l/../workflows/evil.yml");
    assert!(matches!(verdict, Verdict::Deny(_)));
    let verdict = bash(&writes, "cd l && echo x > ../evil.yml");
    assert!(matches!(verdict, Verdict::Deny(_)));
}
