//! Warm guardians through the real binary: the guardian of the next command, started while the
//! model answers, confines that command exactly as a guardian started for it would, holds
//! nothing the command inherits, and dies with the run however the run ends — SIGKILL,
//! `--timeout`, or a run that never called a tool.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::procs::{Process, descendants, stat};
use crate::support::runs::Home;
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{Wire, events, tool_outputs, zero_std_with};

/// How long the model holds an answer so that the warm guardian started for it is surely
/// waiting when the answer comes: far longer than starting one takes.
const HOLD: Duration = Duration::from_millis(400);

fn bash(command: &str) -> Reply {
    Reply::tool_call("bash", json!({ "command": command }))
}

/// `zero exec -o stream-json <flags> go` in `workspace` against `server`, started.
fn start(server: &FakeModel, home: &Home, workspace: &Path, flags: &[&str]) -> Child {
    let mut command = zero_std_with(server, Wire::OpenAi);
    command
        .env("ZERO_HOME", home.path())
        .env("ZERO_KILL_GRACE_MS", "300")
        .env("WARM_TEST_TOKEN", "s3cret-warm")
        .args(["exec", "-o", "stream-json", "--cwd"])
        .arg(workspace)
        .args(flags)
        .arg("go")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.spawn().unwrap()
}

/// The warm guardians below `zero`, waiting for their order.
fn warm_guardians(zero: &Child) -> Vec<Process> {
    descendants(zero.id())
        .into_iter()
        .filter(|process| process.argv.iter().any(|arg| arg == "--warm"))
        .collect()
}

/// Waits for the warm guardian below `zero` and returns it.
fn a_warm_guardian(zero: &Child) -> Process {
    wait_for("a warm guardian below zero", DEADLINE, || {
        warm_guardians(zero).into_iter().next()
    })
}

/// Waits until `process` is gone (reaped, or a zombie nobody waits for any more).
fn assert_gone(process: &Process) {
    let start_time = stat(process.pid as i32).map(|stat| stat.start_time);
    wait_for(format!("{process:?} to end"), DEADLINE, || {
        let now = stat(process.pid as i32);
        let gone = now.is_none_or(|now| now.zombie() || Some(now.start_time) != start_time);
        gone.then_some(())
    });
}

/// A run with `flags` that has run one command and waits for a model that holds its next answer
/// for two minutes: a warm guardian waits below it. The server and directories are kept alive
/// with it.
fn waiting_after_one_command(flags: &[&str]) -> (FakeModel, (Home, tempfile::TempDir), Reaped) {
    let server = FakeModel::start(
        Script::new()
            .reply(bash("true"))
            .reply(Reply::text("too late").delay(Duration::from_secs(120))),
    );
    let (home, workspace) = (Home::new(), tempfile::tempdir().unwrap());
    let zero = Reaped(start(&server, &home, workspace.path(), flags));
    (server, (home, workspace), zero)
}

/// Runs a job at `--auto medium` against `server` to its end, checks it exits 0, and returns
/// its tool results.
fn finished_at_medium(server: &FakeModel) -> Vec<String> {
    let (home, workspace) = (Home::new(), tempfile::tempdir().unwrap());
    let zero = start(server, &home, workspace.path(), &["--auto", "medium"]);
    let output = zero.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    tool_outputs(&events(&output.stdout))
}

/// Ends `zero` if a test failed before it did.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a command sees of its confinement, one fact a line: its guardian's command line
/// first, then its descriptors and what its stdin is, its temporary directory, a withheld secret, a write inside
/// and outside the workspace, a TCP connection, and its effective capabilities.
fn probe(workspace: &Path, outside: &Path, port: u16, name: &str) -> String {
    let write = |dir: &Path| {
        format!(
            "(echo x > '{}/{name}') 2>/dev/null && echo wrote || echo denied",
            dir.display()
        )
    };
    [
        "tr '\\0' ' ' < /proc/$PPID/cmdline; echo".to_string(),
        // No pipeline: while one starts, the shell itself holds its pipes' descriptors.
        "ls -m /proc/$$/fd".to_string(),
        "readlink /proc/$$/fd/0".to_string(),
        "echo \"tmpdir: ${TMPDIR:-unset}\"".to_string(),
        "echo \"token: ${WARM_TEST_TOKEN:-withheld}\"".to_string(),
        write(workspace),
        write(outside),
        format!(
            "(exec 5<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo blocked"
        ),
        "grep CapEff /proc/$$/status".to_string(),
    ]
    .join("; ")
}

#[test]
fn a_later_command_runs_under_a_warm_guardian_confined_as_the_first_was() {
    let (workspace, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (ws, out) = (workspace.path(), outside.path());
    // The first command opens the run (a sandbox that confines writes needs its temporary
    // directory), so the request after it starts the warm guardian the second one finds.
    let server = FakeModel::start(
        Script::new()
            .reply(bash(&probe(ws, out, port, "first")))
            .reply(bash(&probe(ws, out, port, "second")).delay(HOLD))
            .reply(Reply::text("done")),
    );
    let home = Home::new();
    let zero = start(&server, &home, ws, &["--auto", "medium"]);
    let output = zero.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let outputs = tool_outputs(&events(&output.stdout));
    // The command's stdout, one fact a line, after the result's own header.
    let lines = |output: &str| {
        output
            .lines()
            .skip_while(|line| *line != "stdout:")
            .skip(1)
            .map(|line| line.trim_end().to_string())
            .collect::<Vec<_>>()
    };
    let (cold, warm) = (lines(&outputs[0]), lines(&outputs[1]));
    assert!(!cold[0].contains("--warm"), "{cold:?}");
    assert!(cold[0].contains("__guard"), "{cold:?}");
    assert!(
        warm[0].contains("__guard") && warm[0].contains("--warm"),
        "{warm:?}"
    );
    // The same sandbox flags on both guardians' command lines.
    let flags = |line: &str| {
        line.split(' ')
            .filter(|word| word.starts_with("--") && *word != "--warm" && *word != "--")
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(flags(&cold[0]), flags(&warm[0]));
    // Everything the command sees is the same, fact for fact: stdin, stdout, stderr and the
    // lifeline and no other descriptor, the run's TMPDIR, no secret, writes only inside,
    // no network, no capability.
    assert_eq!(cold[1..], warm[1..]);
    assert_eq!(warm[1], "0, 1, 2, 3", "{warm:?}");
    assert_eq!(warm[2], "/dev/null", "{warm:?}");
    assert!(
        warm[3].contains(&home.path().display().to_string()),
        "{warm:?}"
    );
    assert_eq!(
        warm[4..9],
        [
            "token: withheld",
            "wrote",
            "denied",
            "blocked",
            "CapEff:\t0000000000000000"
        ]
    );
    assert!(!out.join("second").exists());
}

#[test]
fn a_warm_guardian_dies_with_zero_when_zero_is_sigkilled() {
    let (_server, _dirs, mut zero) = waiting_after_one_command(&["--auto", "medium"]);
    let guardian = a_warm_guardian(&zero.0);
    kill(Pid::from_raw(zero.0.id() as i32), Signal::SIGKILL).unwrap();
    let _ = zero.0.wait();
    // The lifeline's end is all it has to go by.
    assert_gone(&guardian);
}

#[test]
fn a_warm_guardian_is_gone_when_the_run_times_out() {
    let flags = ["--auto", "medium", "--timeout", "3s"];
    let (_server, _dirs, mut zero) = waiting_after_one_command(&flags);
    let guardian = a_warm_guardian(&zero.0);
    let status = zero.0.wait().unwrap();
    assert_eq!(status.code(), Some(4));
    assert_gone(&guardian);
}

#[test]
fn a_run_that_never_calls_a_tool_leaves_no_warm_guardian() {
    // At high, commands write anywhere, so no run directory is needed for a guardian and one
    // is kept warm from the first request on.
    let server =
        FakeModel::start(Script::new().reply(Reply::text("nothing to run").delay(HOLD * 3)));
    let (home, workspace) = (Home::new(), tempfile::tempdir().unwrap());
    let mut zero = Reaped(start(&server, &home, workspace.path(), &["--auto", "high"]));
    let guardian = a_warm_guardian(&zero.0);
    let status = zero.0.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_gone(&guardian);
    let entries: Vec<Value> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|entry| json!(entry.unwrap().file_name().to_string_lossy()))
        .collect();
    assert_eq!(entries, [json!("sessions")], "nothing but the session");
}

#[test]
fn a_command_whose_warm_guardian_was_killed_starts_one_of_its_own() {
    let server = FakeModel::start(
        Script::new()
            .reply(bash("true"))
            .reply(bash("echo ran; tr '\\0' ' ' < /proc/$PPID/cmdline").delay(HOLD * 4))
            .reply(Reply::text("done")),
    );
    let (home, workspace) = (Home::new(), tempfile::tempdir().unwrap());
    let zero = start(&server, &home, workspace.path(), &["--auto", "medium"]);
    let guardian = a_warm_guardian(&zero);
    kill(Pid::from_raw(guardian.pid as i32), Signal::SIGKILL).unwrap();
    let output = zero.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let outputs = tool_outputs(&events(&output.stdout));
    assert!(outputs[1].contains("ran"), "{outputs:?}");
    assert!(!outputs[1].contains("--warm"), "{outputs:?}");
}

/// The pid of the guardian a command ran under, from a result whose stdout starts with
/// `parent: <pid>`.
fn parent_of(result: &str) -> &str {
    result
        .lines()
        .find_map(|line| line.strip_prefix("parent: "))
        .unwrap_or_else(|| panic!("no parent in {result}"))
}

#[test]
fn a_warm_guardian_runs_command_after_command_each_on_a_clean_slate() {
    let nonce = crate::support::procs::nonce();
    let _cleanup = crate::support::procs::KillOnDrop(nonce.clone());
    let leftover = format!("echo parent: $PPID; sleep {nonce} & echo left one");
    let look = format!(
        "echo parent: $PPID; pgrep -x -f 'sleep {nonce}' || echo no leftover; ls /proc/$$/fd | tr '\\n' ' '"
    );
    let server = FakeModel::start(
        Script::new()
            .reply(bash("true"))
            .reply(bash(&leftover).delay(HOLD))
            .reply(bash(&look))
            .reply(bash("echo parent: $PPID; exit 3"))
            .reply(Reply::text("done")),
    );
    let outputs = finished_at_medium(&server);
    // One guardian for the three commands after the first.
    let guardian = parent_of(&outputs[1]);
    assert_eq!(parent_of(&outputs[2]), guardian, "{outputs:?}");
    assert_eq!(parent_of(&outputs[3]), guardian, "{outputs:?}");
    // What the first left running was stopped before the next began; each command gets its
    // own output and exit code.
    assert!(
        outputs[1].contains("stopped 1 leftover process"),
        "{outputs:?}"
    );
    assert!(outputs[2].contains("no leftover"), "{outputs:?}");
    assert!(outputs[2].contains("0 1 2 3 "), "{outputs:?}");
    assert!(!outputs[2].contains("left one"), "{outputs:?}");
    assert!(outputs[3].contains("exit code: 3"), "{outputs:?}");
}

#[test]
fn a_stopped_command_is_its_guardians_last() {
    let server = FakeModel::start(
        Script::new()
            .reply(bash("true"))
            .reply(
                Reply::tool_call(
                    "bash",
                    json!({"command": "echo parent: $PPID; sleep 30", "timeout_ms": 500}),
                )
                .delay(HOLD),
            )
            .reply(bash("echo parent: $PPID").delay(HOLD))
            .reply(Reply::text("done")),
    );
    let outputs = finished_at_medium(&server);
    assert!(outputs[1].contains("timed out"), "{outputs:?}");
    assert_ne!(
        parent_of(&outputs[1]),
        parent_of(&outputs[2]),
        "{outputs:?}"
    );
}
