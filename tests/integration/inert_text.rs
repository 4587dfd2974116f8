//! Text from the model or the workspace reaches a terminal or a CI log as text, never as a
//! command: in `-o text` and in `zero review --format text`, control characters (CR, ESC) and
//! GitHub's workflow-command openers (`::` opening a line, `##[` anywhere) come out inert on
//! stdout and stderr, while `zero review --format github` stays exact. Through the real binary
//! against the fake model.

use std::process::Output;

use serde_json::json;

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::runs::Home;
use crate::support::zero::{Wire, zero_openai, zero_std_with};
use crate::worktrees::git;

/// What a hostile model or workspace writes: a CR that rewrites the line into a command, a
/// command of its own, a legacy command anywhere in a line, and an escape that clears a screen.
const HOSTILE: [&str; 4] = [
    "\r::add-mask::x",
    "::stop-commands::t",
    "##[error]x",
    "\u{1b}[2J",
];

/// Fails unless every line of `text` is inert: no control character but tab, no line opening
/// with `::` after its white space, no `##[`.
fn assert_inert(text: &str, stream: &str) {
    for line in text.split('\n') {
        assert!(
            !line.chars().any(|c| c.is_control() && c != '\t'),
            "a control character on {stream}: {line:?}"
        );
        assert!(
            !line.trim_start().starts_with("::"),
            "a workflow command on {stream}: {line:?}"
        );
        assert!(
            !line.contains("##["),
            "a legacy command on {stream}: {line:?}"
        );
    }
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8(output.stdout.clone()).unwrap(),
        String::from_utf8(output.stderr.clone()).unwrap(),
    )
}

#[test]
fn model_text_tool_arguments_and_workspace_text_come_out_inert_in_text_format() {
    let ws = tempfile::tempdir().unwrap();
    // The first line of what `read_file` returns is the call's outcome line on stderr.
    std::fs::write(
        ws.path().join("notes.txt"),
        format!("{}\n", HOSTILE.concat()),
    )
    .unwrap();
    let server = FakeModel::start(
        Script::new()
            // Tool arguments: the calls' summary lines.
            .reply(Reply::tool_call(
                "bash",
                json!({"command": format!("true # {}", HOSTILE[0])}),
            ))
            .reply(Reply::tool_call(
                "read_file",
                json!({"path": format!("{}{}", HOSTILE[2], HOSTILE[3])}),
            ))
            .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
            .reply(Reply::text(&format!("Done.\n{}", HOSTILE.join("\n")))),
    );
    let output = zero_openai(&server)
        .args(["exec", "--auto", "medium", "-o", "text", "go"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_inert(&stdout, "stdout");
    assert_inert(&stderr, "stderr");
    // Inert, not lost: each is still there to read.
    assert_eq!(
        stdout,
        "Done.\n\\r::add-mask::x\n: :stop-commands::t\n# #[error]x\n\\u{1b}[2J\n"
    );
    assert!(
        stderr.contains("▸ bash  true # \\r::add-mask::x\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("▸ read_file  # #[error]x\\u{1b}[2J\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  ✓ 1\t\\r::add-mask::x::stop-commands::t# #[error]x\\u{1b}[2J\n"),
        "{stderr}"
    );
}

#[test]
fn ordinary_text_is_written_as_it_is() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha: a::b ## [x]\n").unwrap();
    let answer = "It says alpha.\n\ta::b, # heading, Grüße ✓";
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("read_file", json!({"path": "a.txt"})))
            .reply(Reply::text(answer)),
    );
    let output = zero_openai(&server)
        .args(["exec", "-o", "text", "what does a.txt say?"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, format!("{answer}\n"));
    assert!(stderr.contains("▸ read_file  a.txt\n"), "{stderr}");
}

#[test]
fn review_text_is_inert_and_review_github_stays_exact() {
    let repo = tempfile::tempdir().unwrap();
    let path = repo.path();
    git(path, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(path.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    git(path, &["add", "."]);
    git(path, &["commit", "--quiet", "-m", "base"]);
    git(path, &["checkout", "--quiet", "-b", "work"]);
    std::fs::write(path.join("a.txt"), "one\n2\nthree\n").unwrap();
    git(path, &["commit", "--quiet", "-am", "change"]);
    let answer = json!({
        "summary": HOSTILE.join("\n"),
        "findings": [
            {"path": "a.txt", "line": 2, "severity": "error",
             "title": format!("{} {}", HOSTILE[2], HOSTILE[3]), "body": HOSTILE.join("\n")},
            // Off the diff: dropped, and its title in the warning on stderr.
            {"path": "a.txt", "line": 9, "severity": "note",
             "title": format!("{} {}", HOSTILE[1], HOSTILE[2]), "body": "b"}
        ]
    });
    let server = FakeModel::start(Script::new().reply(Reply::text(&answer.to_string())));
    let github = path.join("review.github");
    let output = assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi))
        .args(["review", "--base", "main", "--format", "text", "--format"])
        .arg(format!("github={}", github.display()))
        .current_dir(path)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert_inert(&stdout, "stdout");
    assert_inert(&stderr, "stderr");
    assert!(
        stdout.starts_with("error: a.txt:2: # #[error]x \\u{1b}[2J\n"),
        "{stdout}"
    );
    assert!(stderr.contains("a finding was dropped"), "{stderr}");
    // The annotations are zero's own commands, their data escaped as the runner unescapes it:
    // exactly what the model wrote, byte for byte.
    let annotations = std::fs::read_to_string(github).unwrap();
    assert!(
        annotations.starts_with("::error file=a.txt,line=2,endLine=2,title=##[error]x \u{1b}[2J::"),
        "{annotations:?}"
    );
}

/// `zero tasks` and `zero sessions` show what the model wrote (a task's command, the
/// conversation): their text is inert, their JSON exact.
#[test]
fn the_operator_commands_text_is_inert_and_their_json_exact() {
    let home = Home::new();
    let hostile = HOSTILE.join(" ");
    let command = format!("echo '{hostile}'; sleep 30");
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "bash",
                json!({"command": command, "run_in_background": true}),
            ))
            .reply(Reply::text(&hostile))
            // Asked again, the task being still running.
            .reply(Reply::text(&hostile)),
    );
    let workspace = tempfile::tempdir().unwrap();
    let output = zero_std_with(&server, Wire::OpenAi)
        .env("ZERO_HOME", home.path())
        .env("ZERO_KILL_GRACE_MS", "300")
        .args(["exec", "--auto", "medium", "go"])
        .current_dir(workspace.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let records = home.records();
    assert_eq!(records.len(), 1, "{output:?}");
    let id = records[0]["id"].as_str().unwrap().to_string();
    for args in [vec!["list"], vec!["show", &id]] {
        let shown = home.tasks(&args).assert().success();
        let stdout = String::from_utf8(shown.get_output().stdout.clone()).unwrap();
        assert!(stdout.contains("add-mask"), "{stdout}");
        assert_inert(&stdout, "zero tasks stdout");
    }
    let json = home.tasks(&["show", &id, "--json"]).assert().success();
    let json: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(json["command"], command.as_str());
    let sessions = |args: &[&str]| {
        let mut command = crate::support::zero::zero_std();
        command
            .env("ZERO_HOME", home.path())
            .arg("sessions")
            .args(args);
        command.output().unwrap()
    };
    let listed = String::from_utf8(sessions(&["list", "--json"]).stdout).unwrap();
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let session = listed[0]["id"].as_str().unwrap().to_string();
    let shown = String::from_utf8(sessions(&["show", &session]).stdout).unwrap();
    assert!(shown.contains("stop-commands"), "{shown}");
    assert_inert(&shown, "zero sessions stdout");
}
