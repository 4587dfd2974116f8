//! `zero review`: a real git repository with a real change, the fake model answering with
//! findings, and every way of naming the change (`--base`, the default base, `--commit`,
//! `--uncommitted`, a diff on stdin), every format (byte-checked against snapshots; SARIF
//! validated against the published SARIF 2.1.0 schema; annotations parsed as GitHub's
//! workflow-command grammar; Code Quality's required fields), findings off the diff dropped
//! with a warning, `--fail-on` and exit 5, stable fingerprints, hostile findings, and a diff
//! over the bound. Through the real binary.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::{Wire, zero_std_with};
use crate::worktrees::git;

/// The reviewed file on the base branch: twenty numbered functions.
fn base_file() -> String {
    (1..=20).map(|n| format!("fn f{n}() {{}}\n")).collect()
}

/// The file after the change: line 5 and line 18 replaced.
fn changed_file() -> String {
    base_file()
        .replace(
            "fn f5() {}",
            "fn f5() { let v: Vec<u8> = Vec::new(); v[0]; }",
        )
        .replace(
            "fn f18() {}",
            "fn f18() { unsafe { std::ptr::null::<u8>().read() }; }",
        )
}

/// A repository whose `main` holds `src/lib.rs` and `REVIEW.md`, on the branch `work` with
/// the change committed.
fn repository() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "--quiet", "--initial-branch=main"]);
    std::fs::create_dir(repo.path().join("src")).unwrap();
    std::fs::write(repo.path().join("src/lib.rs"), base_file()).unwrap();
    std::fs::write(repo.path().join("REVIEW.md"), "Panics are errors here.\n").unwrap();
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "--quiet", "-m", "base"]);
    git(repo.path(), &["checkout", "--quiet", "-b", "work"]);
    std::fs::write(repo.path().join("src/lib.rs"), changed_file()).unwrap();
    git(repo.path(), &["commit", "--quiet", "-am", "change"]);
    repo
}

/// Two findings on the change and one on a line the diff does not show.
fn answer() -> Value {
    json!({
        "summary": "Two problems; needs changes.",
        "findings": [
            {"path": "src/lib.rs", "line": 5, "severity": "error", "title": "Index out of bounds",
             "body": "`v` is empty, so `v[0]` panics.",
             "suggestion": "fn f5() { let v: Vec<u8> = vec![0]; v[0]; }"},
            {"path": "src/lib.rs", "line": 18, "end_line": 18, "severity": "warning",
             "title": "Null read", "body": "Reading a null pointer is undefined behaviour."},
            {"path": "src/lib.rs", "line": 12, "severity": "note", "title": "Outside",
             "body": "Not a line of the diff."}
        ]
    })
}

/// `zero review args…` in `dir` against a model that answers `answer`, with `stdin`.
fn review(dir: &Path, answer: &Value, args: &[&str], stdin: &[u8]) -> (Output, FakeModel) {
    let server = FakeModel::start(Script::new().reply(Reply::text(&answer.to_string())));
    let output = assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi))
        .arg("review")
        .args(args)
        .current_dir(dir)
        .write_stdin(stdin)
        .output()
        .unwrap();
    (output, server)
}

/// The text of the user's prompt in the model's first request.
fn prompt_sent(server: &FakeModel) -> String {
    let requests = server.requests();
    let messages = requests[0].body["messages"].as_array().unwrap();
    let user = messages.iter().find(|m| m["role"] == "user").unwrap();
    user["content"]
        .as_str()
        .map_or_else(|| user["content"].to_string(), str::to_string)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Each format to a file of its own under `dir`, and text on stdout.
fn every_format(dir: &Path) -> Vec<String> {
    let mut args = vec!["--format".to_string(), "text".to_string()];
    for (format, file) in [
        ("json", "review.json"),
        ("sarif", "review.sarif"),
        ("github", "review.github"),
        ("gitlab", "gl-code-quality-report.json"),
        ("markdown", "review.md"),
    ] {
        args.push("--format".into());
        args.push(format!("{format}={}", dir.join(file).display()));
    }
    args
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

/// The published SARIF 2.1.0 schema (tests/integration/fixtures), its one faulty pattern
/// fixed (see the fixture's note).
fn sarif_validator() -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/integration/fixtures/sarif-schema-2.1.0.json");
    let text = std::fs::read_to_string(path).unwrap().replace(
        r"^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$",
        r"^[a-zA-Z]{2}(-[a-zA-Z]{2})?$",
    );
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

/// Parses one GitHub workflow command (`::NAME key=value,…::message`) as the runner does,
/// unescaping properties and message.
fn workflow_command(line: &str) -> (String, Vec<(String, String)>, String) {
    let unescape = |s: &str| {
        s.replace("%3A", ":")
            .replace("%2C", ",")
            .replace("%0D", "\r")
            .replace("%0A", "\n")
            .replace("%25", "%")
    };
    let rest = line.strip_prefix("::").expect("a command starts with ::");
    let (head, message) = rest.split_once("::").expect("a command has a second ::");
    let (name, properties) = head.split_once(' ').unwrap_or((head, ""));
    let properties = properties
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (key, value) = p.split_once('=').expect("key=value");
            (key.to_string(), unescape(value))
        })
        .collect();
    (name.to_string(), properties, unescape(message))
}

#[test]
fn a_review_against_a_base_writes_every_format_and_fails_on_an_error() {
    let repo = repository();
    let out = tempfile::tempdir().unwrap();
    let args = every_format(out.path());
    let mut argv: Vec<&str> = vec!["--base", "main"];
    argv.extend(args.iter().map(String::as_str));
    let (output, server) = review(repo.path(), &answer(), &argv, b"");
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));

    // The model got the diff, the numbered new version and the project's guidance.
    let prompt = prompt_sent(&server);
    assert!(
        prompt.contains("+fn f5() { let v: Vec<u8> = Vec::new(); v[0]; }"),
        "{prompt}"
    );
    assert!(prompt.contains("    18\tfn f18() { unsafe"), "{prompt}");
    assert!(
        prompt.contains("(REVIEW.md)\n\nPanics are errors here."),
        "{prompt}"
    );

    // The finding off the diff is dropped with a warning, the others reported.
    assert!(
        stderr(&output).contains(
            "zero: warning: a finding was dropped (\"Outside\" at \"src/lib.rs\" line 12): \
             its line is not one the diff shows for that file"
        ),
        "{}",
        stderr(&output)
    );
    insta::assert_snapshot!("review_text", stdout(&output));
    insta::assert_snapshot!("review_json", read(out.path(), "review.json"));
    insta::assert_snapshot!("review_sarif", read(out.path(), "review.sarif"));
    insta::assert_snapshot!("review_github", read(out.path(), "review.github"));
    insta::assert_snapshot!(
        "review_gitlab",
        read(out.path(), "gl-code-quality-report.json")
    );
    insta::assert_snapshot!("review_markdown", read(out.path(), "review.md"));

    let sarif: Value = serde_json::from_str(&read(out.path(), "review.sarif")).unwrap();
    let errors: Vec<String> = sarif_validator()
        .iter_errors(&sarif)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");

    let annotations: Vec<_> = read(out.path(), "review.github")
        .lines()
        .map(workflow_command)
        .collect();
    assert_eq!(annotations.len(), 2);
    let (name, properties, message) = &annotations[0];
    assert_eq!(name, "error");
    assert_eq!(
        properties,
        &[
            ("file".to_string(), "src/lib.rs".to_string()),
            ("line".into(), "5".into()),
            ("endLine".into(), "5".into()),
            ("title".into(), "Index out of bounds".into()),
        ]
    );
    assert!(message.starts_with("`v` is empty"));

    let issues: Value =
        serde_json::from_str(&read(out.path(), "gl-code-quality-report.json")).unwrap();
    for issue in issues.as_array().unwrap() {
        for field in ["description", "check_name", "fingerprint", "severity"] {
            assert!(issue[field].is_string(), "{field} in {issue}");
        }
        assert!(issue["location"]["path"].is_string());
        assert!(issue["location"]["lines"]["begin"].is_u64());
    }
}

#[test]
fn fail_on_decides_between_0_and_5() {
    let repo = repository();
    let warning_only = json!({"summary": "One risk.", "findings": [answer()["findings"][1]]});
    for (fail_on, code) in [("error", 0), ("warning", 5), ("note", 5), ("never", 0)] {
        let (output, _server) = review(
            repo.path(),
            &warning_only,
            &["--base", "main", "--fail-on", fail_on, "--format", "json"],
            b"",
        );
        assert_eq!(
            output.status.code(),
            Some(code),
            "--fail-on {fail_on}: {}",
            stderr(&output)
        );
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["findings"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn the_default_base_is_the_upstream_and_without_one_the_review_says_what_to_give() {
    let origin = repository();
    git(origin.path(), &["checkout", "--quiet", "main"]);
    let clones = tempfile::tempdir().unwrap();
    git(
        clones.path(),
        &[
            "clone",
            "--quiet",
            &origin.path().display().to_string(),
            "clone",
        ],
    );
    let clone = clones.path().join("clone");
    git(&clone, &["checkout", "--quiet", "-b", "topic"]);
    std::fs::write(clone.join("src/lib.rs"), changed_file()).unwrap();
    let (output, server) = review(&clone, &answer(), &["--format", "json"], b"");
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(prompt_sent(&server).contains("the merge base of origin/main and HEAD"));

    let lonely = repository();
    let (output, server) = review(lonely.path(), &answer(), &[], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("Give --base REF (e.g. --base origin/main), --commit SHA"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_commit_uncommitted_changes_and_a_diff_on_stdin_are_reviewed_as_named() {
    let repo = repository();
    let only_error = json!({"summary": "s", "findings": [answer()["findings"][0]]});

    let (output, server) = review(repo.path(), &only_error, &["--commit", "HEAD"], b"");
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(prompt_sent(&server).contains("+fn f5() { let v"));

    // Uncommitted: only what differs from HEAD, so line 5 is not in it (a finding there is
    // dropped) and the new line 12 is.
    let edited = changed_file().replace("fn f12() {}", "fn f12() { loop {} }");
    std::fs::write(repo.path().join("src/lib.rs"), edited).unwrap();
    let (output, server) = review(repo.path(), &only_error, &["--uncommitted"], b"");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(prompt_sent(&server).contains("+fn f12() { loop {} }"));
    assert!(stderr(&output).contains("a finding was dropped (\"Index out of bounds\""));

    // A diff on stdin, with extra instructions.
    let diff = git(repo.path(), &["diff", "main", "HEAD"]) + "\n";
    let (output, server) = review(
        repo.path(),
        &only_error,
        &["-", "look", "at", "panics", "--format", "github"],
        diff.as_bytes(),
    );
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    let prompt = prompt_sent(&server);
    assert!(prompt.contains("the diff given on stdin"));
    assert!(prompt.contains("## Extra instructions from the command line\n\nlook at panics"));
    assert!(stdout(&output).starts_with("::error file=src/lib.rs,line=5,"));
}

#[test]
fn fingerprints_stay_when_the_code_above_moves() {
    let repo = repository();
    let (first, _server) = review(
        repo.path(),
        &answer(),
        &["--base", "main", "--format", "json"],
        b"",
    );
    // Two lines added at the top: the same findings are now two lines further down.
    let moved = format!("// a\n// b\n{}", changed_file());
    std::fs::write(repo.path().join("src/lib.rs"), moved).unwrap();
    let mut shifted = answer();
    shifted["findings"][0]["line"] = json!(7);
    shifted["findings"][1]["line"] = json!(20);
    shifted["findings"][1]["end_line"] = json!(20);
    let (second, _server) = review(
        repo.path(),
        &shifted,
        &["--base", "main", "--format", "json"],
        b"",
    );
    let fingerprints = |output: &Output| -> Vec<String> {
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["fingerprint"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(fingerprints(&first).len(), 2, "{}", stderr(&first));
    assert_eq!(
        fingerprints(&first),
        fingerprints(&second),
        "{}",
        stderr(&second)
    );
}

#[test]
fn hostile_findings_cannot_forge_workflow_commands_or_paths() {
    let repo = repository();
    let hostile = json!({
        "summary": "::add-mask::x",
        "findings": [
            {"path": "src/lib.rs", "line": 5, "severity": "error",
             "title": "x::set-output name=a::b, %0A", "body": "one\n::add-mask::secret\r\n::error::forged"},
            {"path": "src/lib.rs\n::error file=a::b", "line": 5, "severity": "error", "title": "t", "body": "b"},
            {"path": "../../etc/passwd", "line": 1, "severity": "error", "title": "t", "body": "b"}
        ]
    });
    let (output, _server) = review(
        repo.path(),
        &hostile,
        &["--base", "main", "--format", "github", "--format", "text"],
        b"",
    );
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    let written = stdout(&output);
    let commands: Vec<&str> = written
        .lines()
        .filter(|l| l.trim_start().starts_with("::"))
        .collect();
    assert_eq!(commands.len(), 1, "{written}");
    let (name, properties, message) = workflow_command(commands[0]);
    assert_eq!(name, "error");
    assert_eq!(properties[3].1, "x::set-output name=a::b, %0A");
    assert_eq!(message, "one\n::add-mask::secret\r\n::error::forged");
    let warnings = stderr(&output);
    assert!(
        warnings.contains("its path is refused: it contains a newline"),
        "{warnings}"
    );
    assert!(
        warnings.contains("its path is refused: it has a `..` component"),
        "{warnings}"
    );
    for line in warnings.lines() {
        assert!(!line.trim_start().starts_with("::"), "{line}");
    }
}

#[test]
fn a_diff_over_the_bound_is_refused_before_the_model_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("+{}\n", "x".repeat(99));
    let huge = format!(
        "--- a/a\n+++ b/a\n@@ -0,0 +1,500000 @@\n{}",
        line.repeat(500_000)
    );
    assert!(huge.len() > 50_000_000);
    let (output, server) = review(dir.path(), &answer(), &["-"], huge.as_bytes());
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("the diff is larger than 10 MiB"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty());
    assert!(output.stdout.is_empty());
}

/// A real-shaped installation token (GitHub's documented example, not a live one), as
/// `actions/checkout` with its default `persist-credentials: true` leaves it in `.git/config`.
const CHECKOUT_TOKEN: &str = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";

#[test]
fn a_checkout_token_the_reviewer_reads_and_quotes_reaches_no_output_and_not_the_model() {
    use base64::Engine;
    let repo = repository();
    let encoded = base64::engine::general_purpose::STANDARD
        .encode(format!("x-access-token:{CHECKOUT_TOKEN}"));
    let header = format!("AUTHORIZATION: basic {encoded}");
    git(
        repo.path(),
        &["config", "http.https://github.com/.extraheader", &header],
    );
    // The reviewer reads the file, then quotes the credential every way it appears there.
    let quoted = format!("{header} ({CHECKOUT_TOKEN}, {encoded})");
    let answer = json!({
        "summary": format!("Found {quoted}"),
        "findings": [{"path": "src/lib.rs", "line": 5, "severity": "error",
                      "title": format!("Leaks {header}"),
                      "body": format!("<!-- {quoted}\n{CHECKOUT_TOKEN}"),
                      "suggestion": format!("let token = \"{CHECKOUT_TOKEN}\";")}]
    });
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "read_file",
                json!({"path": ".git/config"}),
            ))
            .reply(Reply::text(&answer.to_string())),
    );
    let out = tempfile::tempdir().unwrap();
    let file = |name: &str| format!("{name}={}", out.path().join(name).display());
    let output = assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi))
        .args([
            "review", "--base", "main", "--format", "text", "--format", "github",
        ])
        .args(["--format", &file("sarif"), "--format", &file("markdown")])
        .args(["--format", &file("json"), "--format", &file("gitlab")])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the file was read and the answer given");
    let tool_result = &requests[1].raw_body;
    assert!(tool_result.contains("extraheader"), "{tool_result}");
    let mut written = vec![
        ("stdout".to_string(), stdout(&output)),
        ("stderr".to_string(), stderr(&output)),
        (
            "the tool result sent to the model".to_string(),
            tool_result.clone(),
        ),
    ];
    for name in ["sarif", "markdown", "json", "gitlab"] {
        written.push((name.to_string(), read(out.path(), name)));
    }
    for (name, text) in &written {
        for secret in [CHECKOUT_TOKEN, &encoded, &encoded[20..40]] {
            assert!(!text.contains(secret), "{name} holds {secret}:\n{text}");
        }
        // The finding is there, its secret masked: the output was written, not left out.
        assert!(
            name == "stderr" || text.contains("[REDACTED]"),
            "{name}:\n{text}"
        );
    }
}

#[test]
fn text_that_is_not_a_diff_is_exit_2_and_an_empty_diff_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[u8], &str); 2] = [
        (
            b"not a diff\n",
            "zero: error: the diff is malformed at line 1: `not a diff` is not a unified diff",
        ),
        (
            b"@@ -1 +1 @@\n-x\n+y\n",
            "zero: error: the diff is malformed at line 1: the hunk `@@ -1 +1 @@` has no file \
             header before it",
        ),
    ];
    for (input, said) in cases {
        let (output, server) = review(dir.path(), &answer(), &["-"], input);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(said), "{}", stderr(&output));
        assert!(server.requests().is_empty());
        assert!(output.stdout.is_empty());
    }
    let (output, server) = review(dir.path(), &answer(), &["-"], b"");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("zero: warning: nothing to review: the diff given on stdin is empty"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn no_answer_in_the_findings_shape_is_exit_4_and_writes_no_findings() {
    let repo = repository();
    let out = tempfile::tempdir().unwrap();
    let sarif = out.path().join("review.sarif");
    let script = (0..3).fold(Script::new(), |script, _| {
        script.reply(Reply::text("Looks fine to me."))
    });
    let server = FakeModel::start(script);
    let output = assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi))
        .args(["review", "--base", "main", "--format"])
        .arg(format!("sarif={}", sarif.display()))
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("zero: error:"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        server.requests().len(),
        3,
        "the answer went back twice with its errors"
    );
    assert!(output.stdout.is_empty());
    assert!(!sarif.exists());
}
