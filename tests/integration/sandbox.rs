//! The kernel sandbox and the environment rules, through the real binary on this kernel: each
//! test has the model run commands and then looks at the disk, a real listener and the tool
//! results, never at zero's own account of what it did.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, FakeModel, Reply, Route, Script};
use crate::support::runs::{Home, background, wait_for_task};
use crate::support::zero::{Wire, assert_stream_contract, events, tool_outputs, zero_std_with};

/// Two directories: a workspace and a place outside it, neither inside the other.
struct Dirs {
    workspace: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Dirs {
        Dirs {
            workspace: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
        }
    }

    fn ws(&self) -> &Path {
        self.workspace.path()
    }

    fn out(&self) -> &Path {
        self.outside.path()
    }
}

/// Runs `zero exec -o stream-json` with `flags` in `workspace`, the model asking for each of
/// `calls` in turn and then answering; returns the process output and its events.
fn run(
    calls: Vec<Reply>,
    workspace: &Path,
    flags: &[&str],
    env: &[(&str, &str)],
) -> (Output, Vec<Value>, FakeModel) {
    let mut script = Script::new();
    for call in calls {
        script = script.reply(call);
    }
    let server = FakeModel::start(script.reply(Reply::text("done")));
    let home = Home::new();
    let mut command = zero_std_with(&server, Wire::OpenAi);
    command
        .env("ZERO_HOME", home.path())
        .env("ZERO_KILL_GRACE_MS", "300")
        .envs(env.iter().copied())
        .args(["exec", "-o", "stream-json", "--cwd"])
        .arg(workspace)
        .args(flags)
        .arg("go");
    let output = command.output().unwrap();
    let parsed = events(&output.stdout);
    (output, parsed, server)
}

fn bash(command: &str) -> Reply {
    Reply::tool_call("bash", json!({ "command": command }))
}

fn run_start(events: &[Value]) -> &Value {
    events.iter().find(|e| e["type"] == "run_start").unwrap()
}

/// A command that writes `name` into `dir` and says whether it could.
fn write_to(dir: &Path, name: &str) -> String {
    format!(
        "(echo x > '{}/{name}') 2>/dev/null && echo WROTE-{name} || echo DENIED-{name}",
        dir.display()
    )
}

#[test]
fn at_medium_commands_write_only_inside_the_workspace_added_dirs_and_tmpdir() {
    let dirs = Dirs::new();
    let added = tempfile::tempdir().unwrap();
    let (ws, out) = (dirs.ws(), dirs.out());
    // Each form writes once inside (which must work, so the form itself is sound) and once
    // outside: a direct write, a grandchild, and a child in a new session.
    let forms: [fn(&str) -> String; 3] = [
        |write| write.to_string(),
        |write| format!("sh -c \"sh -c '{}'\"", write.replace('\'', "")),
        |write| format!("setsid -w sh -c '{}'", write.replace('\'', "")),
    ];
    let mut commands = vec![
        write_to(added.path(), "added"),
        "echo x > \"$TMPDIR/scratch\" && echo WROTE-tmp".to_string(),
    ];
    for (form, name) in forms.iter().zip(["direct", "grandchild", "setsid"]) {
        commands.push(form(&write_to(ws, name)));
        commands.push(form(&write_to(out, name)));
    }
    let calls = commands.iter().map(|c| bash(c)).collect();
    let added_flag = added.path().to_str().unwrap();
    let (output, events, _server) = run(
        calls,
        ws,
        &["--auto", "medium", "--add-dir", added_flag],
        &[],
    );
    assert_stream_contract(&events, 0);
    let said = tool_outputs(&events).join("\n");
    assert!(said.contains("WROTE-tmp"), "{said}");
    assert!(added.path().join("added").exists(), "{said}");
    for name in ["direct", "grandchild", "setsid"] {
        assert!(
            ws.join(name).exists(),
            "{name} could not write inside:\n{said}"
        );
        assert!(
            !out.join(name).exists(),
            "{name} was written outside:\n{said}"
        );
    }
    assert_eq!(
        run_start(&events)["sandbox"],
        json!({"filesystem": "landlock", "network": "blocked"}),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_background_task_is_confined_like_a_foreground_command() {
    let dirs = Dirs::new();
    let command = format!(
        "{}; touch '{}/finished'",
        write_to(dirs.out(), "bg"),
        dirs.ws().display()
    );
    let calls = vec![background(&command), wait_for_task()];
    let (_output, events, _server) = run(calls, dirs.ws(), &["--auto", "medium"], &[]);
    assert_stream_contract(&events, 0);
    let said = tool_outputs(&events).join("\n");
    assert!(dirs.ws().join("finished").exists(), "{said}");
    assert!(said.contains("DENIED-bg"), "{said}");
    assert!(!dirs.out().join("bg").exists());
}

#[test]
fn a_refused_write_says_what_the_sandbox_blocked_and_how_to_allow_it() {
    let dirs = Dirs::new();
    let command = format!("echo x > '{}/refused'", dirs.out().display());
    let (_output, events, _server) =
        run(vec![bash(&command)], dirs.ws(), &["--auto", "medium"], &[]);
    let said = tool_outputs(&events).join("\n");
    assert!(said.contains("Permission denied"), "{said}");
    assert!(
        said.contains("zero's sandbox may have refused this"),
        "{said}"
    );
    assert!(said.contains("--add-dir DIR"), "{said}");
}

/// A command that connects to `port` on 127.0.0.1 and says whether it could.
fn connect_to(port: u16) -> String {
    format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo REFUSED")
}

#[test]
fn the_network_is_closed_at_medium_unless_network_is_given() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dirs = Dirs::new();
    let (_o, closed, _s) = run(
        vec![bash(&connect_to(port))],
        dirs.ws(),
        &["--auto", "medium"],
        &[],
    );
    assert!(
        tool_outputs(&closed)[0].contains("REFUSED"),
        "{:?}",
        tool_outputs(&closed)
    );
    // Unix sockets stay open.
    let unix = "python3 -c 'import socket; socket.socket(socket.AF_UNIX); print(\"UNIX-OK\")'";
    let (_o, local, _s) = run(vec![bash(unix)], dirs.ws(), &["--auto", "medium"], &[]);
    assert!(
        tool_outputs(&local)[0].contains("UNIX-OK"),
        "{:?}",
        tool_outputs(&local)
    );
    let (_o, open, _s) = run(
        vec![bash(&connect_to(port))],
        dirs.ws(),
        &["--auto", "medium", "--network"],
        &[],
    );
    assert!(
        tool_outputs(&open)[0].contains("CONNECTED"),
        "{:?}",
        tool_outputs(&open)
    );
    assert_eq!(run_start(&open)["sandbox"]["network"], "open");
}

#[test]
fn at_low_bash_is_offered_read_only() {
    let dirs = Dirs::new();
    std::fs::write(dirs.ws().join("notes.txt"), "readable\n").unwrap();
    let calls = vec![
        bash("cat notes.txt"),
        bash(&write_to(dirs.ws(), "changed")),
        bash("echo x > \"$TMPDIR/scratch\" && echo WROTE-tmp"),
    ];
    let (_output, events, _server) = run(calls, dirs.ws(), &["--auto", "low"], &[]);
    assert_stream_contract(&events, 0);
    let said = tool_outputs(&events);
    assert!(said[0].contains("readable"), "{said:?}");
    assert!(said[1].contains("DENIED-changed"), "{said:?}");
    assert!(said[2].contains("WROTE-tmp"), "{said:?}");
    assert!(!dirs.ws().join("changed").exists());
}

#[test]
fn at_high_commands_may_write_anywhere_and_use_the_network() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dirs = Dirs::new();
    let calls = vec![
        bash(&write_to(dirs.out(), "anywhere")),
        bash(&connect_to(port)),
    ];
    let (_output, events, _server) = run(calls, dirs.ws(), &["--auto", "high"], &[]);
    let said = tool_outputs(&events);
    assert!(dirs.out().join("anywhere").exists(), "{said:?}");
    assert!(said[1].contains("CONNECTED"), "{said:?}");
    assert_eq!(
        run_start(&events)["sandbox"],
        json!({"filesystem": "none", "network": "open"})
    );
}

#[test]
fn secret_looking_variables_are_withheld_unless_kept() {
    let dirs = Dirs::new();
    let env = [
        ("GITHUB_TOKEN", "ghp-not-for-commands"),
        ("db_password", "hunter2-not-for-commands"),
        ("PLAIN_SETTING", "visible"),
    ];
    let (_o, events, _s) = run(vec![bash("env")], dirs.ws(), &["--auto", "medium"], &env);
    let said = tool_outputs(&events).join("\n");
    assert!(said.contains("PLAIN_SETTING=visible"), "{said}");
    assert!(
        !said.contains("GITHUB_TOKEN") && !said.contains("db_password"),
        "{said}"
    );
    let withheld = run_start(&events)["withheldEnv"]
        .as_array()
        .unwrap()
        .clone();
    for name in ["GITHUB_TOKEN", "db_password"] {
        assert!(withheld.contains(&json!(name)), "{withheld:?}");
    }
    assert!(!events.iter().any(|e| e.to_string().contains("hunter2")));

    let (_o, kept, _s) = run(
        vec![bash("env")],
        dirs.ws(),
        &["--auto", "medium", "--env-keep", "GITHUB_TOKEN"],
        &env,
    );
    let said = tool_outputs(&kept).join("\n");
    // Kept: the command has it; what zero writes masks a CI token variable's value by name.
    assert!(said.contains("GITHUB_TOKEN=[REDACTED]"), "{said}");
    assert!(!said.contains("ghp-not-for-commands"), "{said}");
    assert!(!said.contains("db_password"), "{said}");

    // At high every variable but the provider's keys passes.
    let (_o, high, _s) = run(vec![bash("env")], dirs.ws(), &["--auto", "high"], &env);
    let said = tool_outputs(&high).join("\n");
    assert!(
        said.contains("db_password=hunter2-not-for-commands"),
        "{said}"
    );
}

#[test]
fn a_specialist_child_is_confined_like_its_parent() {
    let dirs = Dirs::new();
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(bash(&write_to(dirs.out(), "child")))
                    .reply(Reply::text("the child is done")),
            )
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Write outside."}),
            ))
            .reply(Reply::text("done")),
    );
    let home = Home::new();
    let output = zero_std_with(&server, Wire::OpenAi)
        .env("ZERO_HOME", home.path())
        .args(["exec", "-o", "stream-json", "--auto", "medium", "--cwd"])
        .arg(dirs.ws())
        .arg("go")
        .output()
        .unwrap();
    assert_stream_contract(&events(&output.stdout), 0);
    let child_results: String = server
        .requests()
        .iter()
        .filter(|r| r.raw_body.contains(CHILD))
        .map(|r| r.raw_body.clone())
        .collect();
    assert!(child_results.contains("DENIED-child"), "{child_results}");
    assert!(!dirs.out().join("child").exists());
}

/// `zero` under a seccomp filter that makes `landlock_create_ruleset` fail with `ENOSYS`, as
/// on a kernel built without Landlock.
fn without_landlock(command: &mut std::process::Command) {
    use seccompiler::{SeccompAction, SeccompFilter, TargetArch};
    let filter = SeccompFilter::new(
        [(libc::SYS_landlock_create_ruleset, Vec::new())]
            .into_iter()
            .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        TargetArch::try_from(std::env::consts::ARCH).unwrap(),
    )
    .unwrap();
    let program: seccompiler::BpfProgram = filter.try_into().unwrap();
    // SAFETY: between fork and exec only prctl and seccomp run, on a program built before
    // the fork; nothing allocates.
    unsafe {
        command
            .pre_exec(move || seccompiler::apply_filter(&program).map_err(std::io::Error::other));
    }
}

#[test]
fn sandbox_required_refuses_to_run_where_the_kernel_cannot_enforce_it() {
    let dirs = Dirs::new();
    let server = FakeModel::start(Script::new().reply(bash("true")).reply(Reply::text("done")));
    let home = Home::new();
    let mut command = zero_std_with(&server, Wire::OpenAi);
    command
        .env("ZERO_HOME", home.path())
        .args([
            "exec",
            "-o",
            "stream-json",
            "--auto",
            "medium",
            "--sandbox",
            "required",
            "--cwd",
        ])
        .arg(dirs.ws())
        .arg("go");
    without_landlock(&mut command);
    let output = command.output().unwrap();
    let refused = events(&output.stdout);
    assert_stream_contract(&refused, 3);
    let error = refused.iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(error["code"], "sandbox_unavailable");
    assert!(
        error["message"].as_str().unwrap().contains("Landlock"),
        "{error}"
    );
    assert!(server.requests().is_empty(), "nothing ran");

    // With auto, the run goes on, says what is missing, and reports what is in force.
    let mut command = zero_std_with(&server, Wire::OpenAi);
    command
        .env("ZERO_HOME", home.path())
        .args(["exec", "-o", "stream-json", "--auto", "medium", "--cwd"])
        .arg(dirs.ws())
        .arg("go");
    without_landlock(&mut command);
    let output = command.output().unwrap();
    let events = events(&output.stdout);
    assert_stream_contract(&events, 0);
    let warning = events.iter().find(|e| e["type"] == "warning").unwrap();
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("the write rule"),
        "{warning}"
    );
    assert_eq!(
        run_start(&events)["sandbox"],
        json!({"filesystem": "none", "network": "blocked"})
    );
}

#[test]
fn sandbox_off_applies_no_kernel_rule() {
    let dirs = Dirs::new();
    let (_o, events, _s) = run(
        vec![bash(&write_to(dirs.out(), "off"))],
        dirs.ws(),
        &["--auto", "medium", "--sandbox", "off"],
        &[],
    );
    assert!(
        dirs.out().join("off").exists(),
        "{:?}",
        tool_outputs(&events)
    );
    assert_eq!(
        run_start(&events)["sandbox"],
        json!({"filesystem": "none", "network": "open"})
    );
}

#[test]
fn commands_may_still_write_to_their_own_output_and_the_usual_devices() {
    let dirs = Dirs::new();
    let command = "echo out > /dev/stdout && echo err > /dev/stderr && echo null > /dev/null \
                   && head -c 4 /dev/urandom > /dev/null && echo DEVICES-OK";
    let calls = vec![bash(command), background(command), wait_for_task()];
    let (_output, events, _server) = run(calls, dirs.ws(), &["--auto", "medium"], &[]);
    assert_stream_contract(&events, 0);
    let said = tool_outputs(&events);
    assert!(
        said[0].contains("DEVICES-OK") && said[0].contains("err"),
        "{said:?}"
    );
    assert!(
        said[2].contains("DEVICES-OK") && said[2].contains("out"),
        "{said:?}"
    );
}

#[test]
fn the_text_banner_says_what_is_in_force_in_one_line() {
    let dirs = Dirs::new();
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let home = Home::new();
    let output = zero_std_with(&server, Wire::OpenAi)
        .env("ZERO_HOME", home.path())
        .env("SOME_API_TOKEN", "not-for-commands")
        .args(["exec", "--auto", "medium", "--cwd"])
        .arg(dirs.ws())
        .arg("go")
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let banner: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("zero: sandbox:"))
        .collect();
    assert_eq!(banner.len(), 1, "{stderr}");
    assert!(
        banner[0]
            .starts_with("zero: sandbox: commands' writes confined (landlock), network blocked"),
        "{stderr}"
    );
    assert!(banner[0].contains("SOME_API_TOKEN") && !stderr.contains("not-for-commands"));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
}

#[test]
fn the_config_file_sets_what_the_flags_set_and_a_bad_value_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dirs = Dirs::new();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir(config.path().join("zero")).unwrap();
    let file = config.path().join("zero/config.toml");
    std::fs::write(&file, "network = true\nenv_keep = [\"GITHUB_TOKEN\"]\n").unwrap();
    let env = [
        ("XDG_CONFIG_HOME", config.path().to_str().unwrap()),
        ("GITHUB_TOKEN", "ghp-kept-by-config"),
    ];
    let calls = vec![bash(&connect_to(port)), bash("env")];
    let (_o, events, _s) = run(calls, dirs.ws(), &["--auto", "medium"], &env);
    let said = tool_outputs(&events);
    assert!(said[0].contains("CONNECTED"), "{said:?}");
    assert!(
        said[1].contains("GITHUB_TOKEN=[REDACTED]") && !said[1].contains("ghp-kept-by-config"),
        "{said:?}"
    );

    std::fs::write(&file, "sandbox = \"maybe\"\n").unwrap();
    let (output, events, server) = run(vec![], dirs.ws(), &["--auto", "medium"], &env);
    assert_eq!(output.status.code(), Some(3));
    assert_stream_contract(&events, 3);
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("config.toml"),
        "{error}"
    );
    assert!(server.requests().is_empty());
}
