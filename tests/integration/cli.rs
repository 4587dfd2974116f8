//! The command line as a user meets it: flags, usage errors and their exit codes, and
//! `--list-tools` — all through the real binary.

use predicates::prelude::*;
use serde_json::Value;

use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{events as stream_events, zero};

#[test]
fn version_and_help_exit_zero() {
    zero()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("zero "));
    zero()
        .args(["exec", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--output-format"));
}

#[test]
fn no_prompt_is_exit_2_with_a_hint() {
    zero().arg("exec").assert().code(2).stdout("").stderr(
        predicate::str::contains("no prompt given").and(predicate::str::contains("-p TEXT")),
    );
}

#[test]
fn an_open_stdin_is_never_read_without_dash() {
    // assert_cmd gives the child a stdin pipe that we never close; a run that read it would
    // hang, so reaching the provider check proves it did not.
    let dir = tempfile::tempdir().unwrap();
    let mut child = crate::support::zero::zero_std()
        .args(["exec", "hello"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin_held_open = child.stdin.take();
    // Should it block, the held stdin closes as the failed test unwinds, and zero goes on.
    let status = wait_for(
        "zero exec to end, not block on an open stdin",
        DEADLINE,
        || child.try_wait().unwrap(),
    );
    assert_eq!(status.code(), Some(3), "no provider is configured");
}

#[test]
fn dash_reads_the_prompt_from_stdin() {
    // With the prompt on stdin the run gets past prompt checks to the provider check.
    zero()
        .args(["exec", "-"])
        .write_stdin("what is here?")
        .assert()
        .code(3)
        .stderr(predicate::str::contains("provider"));
    zero()
        .args(["exec", "-"])
        .write_stdin("  \n")
        .assert()
        .code(2);
}

#[test]
fn prompt_file_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    zero()
        .args(["exec", "-f", "missing.md"])
        .current_dir(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.md"));
    std::fs::write(dir.path().join("empty.md"), " \n").unwrap();
    zero()
        .args(["exec", "-f", "empty.md"])
        .current_dir(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("empty.md").and(predicate::str::contains("empty")));
}

#[test]
fn bad_cwd_and_add_dir_are_usage_errors() {
    zero()
        .args(["exec", "-C", "/nonexistent/zero-test", "hi"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--cwd /nonexistent/zero-test"));
    zero()
        .args(["exec", "--add-dir", "/nonexistent/zero-test", "hi"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--add-dir"));
}

#[test]
fn invalid_flag_values_are_exit_2_with_clap_messages() {
    for args in [
        vec!["exec", "--auto", "max", "hi"],
        vec!["exec", "-o", "yaml", "hi"],
        vec!["exec", "-i", "xml", "hi"],
        vec!["exec", "--provider", "gemini", "hi"],
        vec!["exec", "--max-turns", "0", "hi"],
        vec!["exec", "--max-turns", "many", "hi"],
        vec!["exec", "--no-such-flag", "hi"],
        vec!["exec", "--fallback-model", "", "hi"],
        vec!["exec", "--reasoning-effort", "extreme", "hi"],
        vec!["exec", "--prompt-style", "tiny", "hi"],
        vec!["review", "--fail-on", "bogus"],
    ] {
        zero()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("error:"));
    }
}

#[test]
fn usage_errors_in_stream_json_end_with_error_then_run_end() {
    let assert = zero()
        .args(["exec", "-o", "stream-json", "--max-turns", "0", "hi"])
        .assert()
        .code(2);
    let events = stream_events(&assert.get_output().stdout);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["type"], "error");
    assert_eq!(events[0]["code"], "usage_error");
    assert_eq!(events[1]["type"], "run_end");
    assert_eq!(events[1]["exitCode"], 2);
    assert_eq!(events[0]["runId"], events[1]["runId"]);

    let assert = zero().args(["exec", "-o", "stream-json"]).assert().code(2);
    let events = stream_events(&assert.get_output().stdout);
    assert_eq!(events.last().unwrap()["type"], "run_end");
    assert_eq!(events.last().unwrap()["status"], "error");
}

#[test]
fn unknown_tool_names_list_the_valid_ones() {
    zero()
        .args(["exec", "--list-tools", "--enabled-tools", "read_file,cat"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("unknown tool `cat`")
                .and(predicate::str::contains("read_file")),
        );
    zero()
        .args([
            "exec",
            "--list-tools",
            "--enabled-tools",
            "grep",
            "--disabled-tools",
            "grep glob",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("both"));
}

fn listed_tools(args: &[&str]) -> Vec<String> {
    let assert = zero()
        .args(["exec", "--list-tools", "-o", "json"])
        .args(args)
        .assert()
        .success();
    let value: Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    value["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn autonomy_decides_which_tools_are_offered() {
    // Without the sandbox, low runs no commands.
    let low = listed_tools(&["--sandbox", "off"]);
    assert_eq!(
        low,
        [
            "TaskOutput",
            "glob",
            "grep",
            "list_directory",
            "read_file",
            "update_plan"
        ]
    );
    // With it (this kernel has Landlock), commands run read-only, so the tools that run
    // them are offered too; the file tools still only read.
    assert_eq!(
        listed_tools(&[]),
        [
            "Task",
            "TaskOutput",
            "TaskStop",
            "bash",
            "glob",
            "grep",
            "list_directory",
            "read_file",
            "update_plan"
        ]
    );
    let medium = listed_tools(&["--auto", "medium"]);
    assert_eq!(
        medium,
        [
            "Task",
            "TaskOutput",
            "TaskStop",
            "apply_patch",
            "bash",
            "edit_file",
            "glob",
            "grep",
            "list_directory",
            "read_file",
            "update_plan",
            "write_file"
        ]
    );
    assert_eq!(listed_tools(&["--auto", "high"]), medium);
    assert_eq!(listed_tools(&["--skip-permissions-unsafe"]), medium);
}

#[test]
fn filters_decide_which_tools_the_model_sees() {
    assert_eq!(
        listed_tools(&["--auto", "medium", "--enabled-tools", "bash, read_file"]),
        ["bash", "read_file"]
    );
    assert_eq!(
        listed_tools(&[
            "--sandbox",
            "off",
            "--disabled-tools",
            "grep",
            "--disabled-tools",
            "glob"
        ]),
        ["TaskOutput", "list_directory", "read_file", "update_plan"]
    );
    // Enabling a tool does not lift policy: without the sandbox bash still needs --auto
    // medium.
    assert_eq!(
        listed_tools(&["--sandbox", "off", "--enabled-tools", "bash,grep"]),
        ["grep"]
    );
}

#[test]
fn list_tools_needs_no_provider_and_no_prompt() {
    let assert = zero()
        .args(["exec", "--list-tools", "--auto", "medium"])
        .assert()
        .success();
    let text = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    insta::assert_snapshot!("list_tools_text", text);

    let assert = zero()
        .args(["exec", "--list-tools", "-o", "json", "--auto", "medium"])
        .assert()
        .success();
    let json: Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    insta::assert_json_snapshot!("list_tools_json", json);
}

#[test]
fn list_tools_in_stream_json_is_run_start_tools_run_end() {
    let assert = zero()
        .args(["exec", "--list-tools", "-o", "stream-json"])
        .assert()
        .success();
    let events = stream_events(&assert.get_output().stdout);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["run_start", "tools", "run_end"]);
    for event in &events {
        assert_eq!(event["schemaVersion"], 3);
        assert_eq!(event["runId"], events[0]["runId"]);
    }
    assert_eq!(events[2]["exitCode"], 0);
    let tool = &events[1]["tools"][0];
    assert!(tool["inputSchema"].is_object() && tool["sideEffect"].is_string());
}

#[test]
fn the_hidden_guardian_mode_run_by_hand_refuses_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    // Without the report pipe zero gives it on stdin (here stdin is /dev/null, read-only), a
    // guardian has no one to report to: it says so and never starts the command.
    let output = crate::support::zero::zero_std()
        .args(["__guard", "--grace-ms", "100", "--", "touch"])
        .arg(&marker)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125));
    assert_eq!(output.stdout, b"");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("started by zero itself"), "{stderr}");
    assert!(!marker.exists());
}
