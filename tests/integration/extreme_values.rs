//! Every duration and size a user, a parent run or the model gives zero, at the edges of its
//! type: a deadline past what a clock can hold is a usage error, a size at the top of its
//! range runs, and nothing panics. Table tests through the real binary.

use serde_json::json;

use crate::support::fake_model::{FakeModel, Reply, Script, TASK_ID};
use crate::support::runs::Home;
use crate::support::zero::{Wire, assert_stream_contract, events, zero, zero_std_with};

/// The extreme durations: `u64::MAX` and `i64::MAX` seconds, and more years than a
/// `SystemTime` holds; then the first values past zero's bound of 100 years.
const EXTREME: [&str; 5] = [
    "18446744073709551615s",
    "9223372036854775807s",
    "300000000000y",
    "101y",
    "5300w",
];

/// Panics if `stderr` shows a panic.
fn assert_no_panic(what: &str, stderr: &[u8]) {
    let stderr = String::from_utf8_lossy(stderr);
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
}

#[test]
fn a_duration_past_a_hundred_years_is_a_usage_error_naming_the_flag() {
    let commands: [&[&str]; 3] = [
        &["exec", "--timeout"],
        &["tasks", "gc", "--older-than"],
        &["sessions", "gc", "--older-than"],
    ];
    for command in commands {
        for value in EXTREME {
            let mut args = command.to_vec();
            args.push(value);
            if command[0] == "exec" {
                args.push("hi");
            }
            let output = zero().args(&args).output().unwrap();
            let what = args.join(" ");
            assert_eq!(output.status.code(), Some(2), "{what}");
            assert_no_panic(&what, &output.stderr);
            let stderr = String::from_utf8_lossy(&output.stderr);
            let flag = command.last().unwrap();
            assert!(
                stderr.contains(flag) && stderr.contains("longer than 100 years"),
                "{what}: {stderr}"
            );
        }
    }
}

#[test]
fn a_config_timeout_past_a_hundred_years_is_a_config_error() {
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir(config.path().join("zero")).unwrap();
    let server = FakeModel::start(Script::new());
    for value in EXTREME {
        std::fs::write(
            config.path().join("zero/config.toml"),
            format!("timeout = \"{value}\"\n"),
        )
        .unwrap();
        let output = zero_std_with(&server, Wire::OpenAi)
            .env("XDG_CONFIG_HOME", config.path())
            .args(["exec", "-o", "stream-json", "go"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(3), "{value}");
        assert_no_panic(value, &output.stderr);
        assert_stream_contract(&events(&output.stdout), 3);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("`timeout` in config.toml") && stderr.contains("100 years"),
            "{value}: {stderr}"
        );
    }
    assert!(server.requests().is_empty());
}

/// One run of the table: what it shows, its flags and its environment.
type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);

#[test]
fn sizes_and_timings_at_the_top_of_their_range_run_without_a_panic() {
    const U64_MAX: &str = "18446744073709551615";
    const U32_MAX: &str = "4294967295";
    let cases: [Case; 6] = [
        ("the longest --timeout", &["--timeout", "100y"], &[]),
        ("the largest --max-tokens", &["--max-tokens", U64_MAX], &[]),
        (
            "the largest --max-output-tokens",
            &["--max-output-tokens", U32_MAX],
            &[],
        ),
        (
            "the largest --context-window",
            &["--context-window", U32_MAX],
            &[],
        ),
        (
            "a launching run's deadline at the end of u64 milliseconds",
            &["--timeout", "100y"],
            &[
                ("ZERO_PARENT_RUN", "run_20260102030405_0a1b2c"),
                ("ZERO_DEADLINE_UNIX_MS", U64_MAX),
            ],
        ),
        (
            "every timing variable at u64::MAX milliseconds",
            &[],
            &[
                ("ZERO_KILL_GRACE_MS", U64_MAX),
                ("ZERO_CONNECT_TIMEOUT_MS", U64_MAX),
                ("ZERO_FIRST_BYTE_TIMEOUT_MS", U64_MAX),
                ("ZERO_STREAM_IDLE_TIMEOUT_MS", U64_MAX),
                ("ZERO_RETRY_BASE_MS", U64_MAX),
                ("ZERO_RETRY_MAX_WAIT_MS", U64_MAX),
                ("ZERO_WAIT_NOTICE_MS", U64_MAX),
            ],
        ),
    ];
    for (what, flags, env) in cases {
        let workspace = tempfile::tempdir().unwrap();
        let home = Home::new();
        // The model asks for the longest waits it can write, too: refused or capped, not a
        // panic.
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::tool_call(
                    "bash",
                    json!({"command": "echo ran", "timeout_ms": u64::MAX}),
                ))
                .reply(Reply::tool_call("bash", json!({"command": "echo ran"})))
                .reply(Reply::tool_call(
                    "TaskOutput",
                    json!({"task_id": TASK_ID, "block": true, "timeout_ms": u64::MAX}),
                ))
                .reply(Reply::text("done")),
        );
        let mut cmd = zero_std_with(&server, Wire::OpenAi);
        cmd.env("ZERO_HOME", home.path())
            .current_dir(workspace.path())
            .envs(env.iter().copied())
            .args(["exec", "--auto", "medium", "-o", "stream-json"])
            .args(flags)
            .arg("go");
        let output = cmd.output().unwrap();
        assert_no_panic(what, &output.stderr);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{what}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_stream_contract(&events(&output.stdout), 0);
    }
}
