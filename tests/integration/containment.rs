//! What a command below `--auto high` can reach beyond its sandbox's rules, tried as a root CI
//! container and as an unprivileged user would: socket families, capabilities (and through
//! them other processes' environments and other users' files), descriptors zero's own caller
//! left open, and zero's own initial environment. Every test drives the real binary and
//! looks at what the command could do, never at zero's account of it.
//!
//! The tests run as root here (the usual CI container); the unprivileged half drops to
//! `nobody` with `setpriv`, with ambient capabilities where the point is that a non-root
//! user's capabilities are dropped too.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::runs::{background, stall, wait_for_task};
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{Wire, assert_stream_contract, events, tool_outputs, zero_std_with};

/// Whether the tests run as root, as CI does (root is zero's usual CI user, and only root can
/// drop to `nobody` or own another user's file); otherwise a test says it is skipped.
pub(crate) fn running_as_root() -> bool {
    // SAFETY: geteuid only reads this process's credentials.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: the containment tests run as root (as CI does), and this is not root");
    }
    root
}

/// `nobody`'s uid and gid.
const NOBODY: u32 = 65534;

/// Who runs zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum As {
    /// root, as the tests do.
    Root,
    /// `nobody`, with these capabilities in its ambient set (setpriv's names, `+net_raw`…).
    Nobody(&'static [&'static str]),
}

/// One run of `zero exec -o stream-json` in a fresh workspace.
struct Run {
    workspace: tempfile::TempDir,
    flags: Vec<String>,
    env: Vec<(String, String)>,
    who: As,
    /// A file opened for appending, left open (not close-on-exec) on fd 6 of zero.
    leaked: Option<PathBuf>,
}

impl Run {
    fn new(flags: &[&str]) -> Run {
        Run {
            workspace: tempfile::tempdir().unwrap(),
            flags: flags.iter().map(|f| f.to_string()).collect(),
            env: Vec::new(),
            who: As::Root,
            leaked: None,
        }
    }

    fn env(mut self, name: &str, value: &str) -> Run {
        self.env.push((name.into(), value.into()));
        self
    }

    fn by(mut self, who: As) -> Run {
        self.who = who;
        self
    }

    fn leaking(mut self, file: &Path) -> Run {
        self.leaked = Some(file.to_path_buf());
        self
    }

    /// Runs the model's `calls` in turn, then a final answer; returns the output and events.
    fn go(self, calls: Vec<Reply>) -> (Output, Vec<Value>) {
        let (mut command, _server) = self.command(calls, Reply::text("done"));
        // `self`, and with it the workspace, lives until the run is over.
        let output = command.output().unwrap();
        let parsed = events(&output.stdout);
        assert_stream_contract(&parsed, 0);
        (output, parsed)
    }

    /// The command that runs the model's `calls` in turn, then `last`, and the model server.
    fn command(&self, calls: Vec<Reply>, last: Reply) -> (Command, FakeModel) {
        let mut script = Script::new();
        for call in calls {
            script = script.reply(call);
        }
        let server = FakeModel::start(script.reply(last));
        let mut zero = zero_std_with(&server, Wire::OpenAi);
        zero.env("ZERO_KILL_GRACE_MS", "300")
            .envs(self.env.iter().map(|(n, v)| (n, v)))
            .args(["exec", "-o", "stream-json", "--cwd"])
            .arg(self.workspace.path())
            .args(&self.flags)
            .arg("go");
        let mut command = match self.who {
            As::Root => zero,
            As::Nobody(caps) => as_nobody(&zero, caps, self.workspace.path()),
        };
        if let Some(path) = &self.leaked {
            leak_on_fd_6(&mut command, path);
        }
        (command, server)
    }
}

/// `zero` (as `command` describes it) started by `setpriv` as `nobody`, with `caps` in its
/// inheritable and ambient sets; the directories it uses given to `nobody`.
pub(crate) fn as_nobody(command: &Command, caps: &[&str], workspace: &Path) -> Command {
    let mut owned: Vec<PathBuf> = vec![workspace.to_path_buf()];
    let mut wrapped = Command::new("setpriv");
    wrapped.args([
        format!("--reuid={NOBODY}"),
        format!("--regid={NOBODY}"),
        "--clear-groups".into(),
    ]);
    if !caps.is_empty() {
        let list = caps.join(",");
        wrapped.arg(format!("--inh-caps={list}"));
        wrapped.arg(format!("--ambient-caps={list}"));
    }
    wrapped
        .arg("--")
        .arg(command.get_program())
        .args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => {
                if ["HOME", "ZERO_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"]
                    .contains(&name.to_str().unwrap())
                {
                    owned.push(PathBuf::from(value));
                }
                wrapped.env(name, value);
            }
            None => {
                wrapped.env_remove(name);
            }
        }
    }
    for dir in owned {
        std::fs::create_dir_all(&dir).unwrap();
        give_to_nobody(&dir);
        // The temporary directories' parents are root's 0700 ones.
        let mut parent = dir.parent();
        while let Some(up) = parent {
            if up.starts_with(std::env::temp_dir()) && up != std::env::temp_dir() {
                give_to_nobody(up);
            }
            parent = up.parent();
        }
    }
    wrapped
}

/// `chown -R nobody:nogroup path`.
pub(crate) fn give_to_nobody(path: &Path) {
    let status = Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Opens `path` for appending and places it on fd 6 of `command`, without close-on-exec: a
/// descriptor the caller of zero leaked.
fn leak_on_fd_6(command: &mut Command, path: &Path) {
    let file = File::options().append(true).open(path).unwrap();
    let fd = file.as_raw_fd();
    // SAFETY: only dup2, which is async-signal-safe, runs between fork and exec; `file`
    // lives in the closure, so its descriptor stays open until then.
    unsafe {
        command.pre_exec(move || {
            let _keep = &file;
            if libc::dup2(fd, 6) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A child SIGKILLed and reaped when dropped.
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bash(command: &str) -> Reply {
    Reply::tool_call("bash", json!({ "command": command }))
}

/// A Python program that tries to create one socket of each kind and prints `kind=OK` or
/// `kind=ERRNO_NAME` for each.
const SOCKET_PROBE: &str = r#"/usr/bin/python3 - <<'EOF'
import errno, socket
kinds = {
    "unix": lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM),
    "unix_pair": lambda: socket.socketpair(socket.AF_UNIX)[0],
    "inet": lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM),
    "inet_raw": lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    "netlink_route": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0),
    "netlink_diag": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4),
    "netlink_uevent": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15),
    "packet": lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)),
    "vsock": lambda: socket.socket(40, socket.SOCK_STREAM),
}
for name, make in kinds.items():
    try:
        make().close()
        print(f"{name}=OK")
    except OSError as e:
        print(f"{name}={errno.errorcode.get(e.errno, e.errno)}")
EOF"#;

/// What [`SOCKET_PROBE`] printed for `kind`.
fn socket_result<'a>(said: &'a str, kind: &str) -> &'a str {
    said.lines()
        .find_map(|line| line.strip_prefix(&format!("{kind}=")))
        .unwrap_or_else(|| panic!("no {kind} in:\n{said}"))
}

/// Runs the socket probe under `flags` as `who`.
fn probe_sockets(flags: &[&str], who: As) -> String {
    let (output, events) = Run::new(flags).by(who).go(vec![bash(SOCKET_PROBE)]);
    let said = tool_outputs(&events).join("\n");
    assert!(
        said.contains("unix="),
        "{said}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    said
}

#[test]
fn without_network_a_command_below_high_may_open_unix_sockets_only() {
    if !running_as_root() {
        return;
    }
    for who in [As::Root, As::Nobody(&["+net_raw", "+net_admin"])] {
        for level in ["low", "medium"] {
            let said = probe_sockets(&["--auto", level], who);
            assert_eq!(
                socket_result(&said, "unix"),
                "OK",
                "{who:?} {level}\n{said}"
            );
            assert_eq!(socket_result(&said, "unix_pair"), "OK", "{said}");
            for refused in [
                "inet",
                "inet_raw",
                "netlink_route",
                "netlink_diag",
                "netlink_uevent",
                "packet",
                "vsock",
            ] {
                assert_eq!(
                    socket_result(&said, refused),
                    "EACCES",
                    "{who:?} at {level}: {refused}\n{said}"
                );
            }
        }
    }
}

#[test]
fn with_network_a_command_below_high_gets_a_clients_sockets_and_no_raw_ones() {
    if !running_as_root() {
        return;
    }
    for who in [As::Root, As::Nobody(&["+net_raw", "+net_admin"])] {
        let said = probe_sockets(&["--auto", "medium", "--network"], who);
        for allowed in ["unix", "inet", "netlink_route"] {
            assert_eq!(socket_result(&said, allowed), "OK", "{who:?}\n{said}");
        }
        for refused in ["netlink_diag", "netlink_uevent", "packet", "vsock"] {
            assert_eq!(
                socket_result(&said, refused),
                "EACCES",
                "{who:?}: {refused}\n{said}"
            );
        }
        // The family is a client's; the kind needs CAP_NET_RAW, which is gone.
        assert_eq!(socket_result(&said, "inet_raw"), "EPERM", "{who:?}\n{said}");
    }
}

#[test]
fn at_high_the_same_probe_opens_a_packet_socket_so_the_refusals_above_are_the_sandboxs() {
    if !running_as_root() {
        return;
    }
    let said = probe_sockets(&["--auto", "high"], As::Root);
    assert_eq!(socket_result(&said, "packet"), "OK", "{said}");
    let said = probe_sockets(&["--auto", "high"], As::Nobody(&["+net_raw"]));
    assert_eq!(socket_result(&said, "packet"), "OK", "{said}");
}

/// Prints the command's capability sets and `no_new_privs`, as `/proc/self/status` has them.
const STATUS: &str = "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status";

/// The value of `field` in [`STATUS`]'s output.
fn status_field<'a>(said: &'a str, field: &str) -> &'a str {
    said.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in:\n{said}"))
        .trim()
}

#[test]
fn below_high_a_command_has_no_capability_in_any_set_and_cannot_regain_one() {
    if !running_as_root() {
        return;
    }
    for who in [As::Root, As::Nobody(&["+sys_ptrace", "+net_raw"])] {
        for level in ["low", "medium"] {
            let (_o, events) = Run::new(&["--auto", level]).by(who).go(vec![bash(STATUS)]);
            let outputs = tool_outputs(&events);
            let said = &outputs[0];
            for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
                assert_eq!(
                    status_field(said, set),
                    "0000000000000000",
                    "{who:?} {level}\n{said}"
                );
            }
            if who == As::Root {
                assert_eq!(status_field(said, "CapBnd"), "0000000000000000", "{said}");
            }
            // No exec (setuid, file capabilities, root's own rule) gives any back.
            assert_eq!(status_field(said, "NoNewPrivs"), "1", "{said}");
        }
    }
    // At high, the capabilities zero has are the command's.
    let (_o, events) = Run::new(&["--auto", "high"]).go(vec![bash(STATUS)]);
    let said = &tool_outputs(&events)[0];
    assert_ne!(status_field(said, "CapEff"), "0000000000000000", "{said}");
}

/// A `sleep` run as `nobody` with a secret in its environment: another user's process, whose
/// environment only `CAP_SYS_PTRACE` can read.
struct OtherUsersProcess {
    child: std::process::Child,
}

impl OtherUsersProcess {
    const SECRET: &'static str = "other-users-secret-4f1d";

    fn start() -> OtherUsersProcess {
        let child = Command::new("sleep")
            .arg("120")
            .env("OTHER_SECRET", Self::SECRET)
            .uid(NOBODY)
            .gid(NOBODY)
            .spawn()
            .unwrap();
        OtherUsersProcess { child }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for OtherUsersProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command that counts the lines of `pid`'s environment holding `needle`, or says it could
/// not read it. (The count, not the line: zero redacts what it knows from tool results.)
fn count_in_environ(pid: &str, needle: &str) -> String {
    format!(
        "tr '\\0' '\\n' < /proc/{pid}/environ > \"$TMPDIR/env\" 2>/dev/null && echo \
         COUNT=$(grep -c '{needle}' \"$TMPDIR/env\") || echo UNREADABLE"
    )
}

/// The pid of the zero process running the command (the command's guardian's parent).
const ZERO_PID: &str = "$(awk '{print $4}' /proc/$PPID/stat)";

#[test]
fn as_root_below_high_a_command_cannot_read_other_processes_environments() {
    if !running_as_root() {
        return;
    }
    let other = OtherUsersProcess::start();
    let key = "sk-provider-key-7c2e9a";
    let token = "ghp_withheld-token-51b0";
    let calls = || {
        vec![
            bash(&count_in_environ(
                &other.pid().to_string(),
                OtherUsersProcess::SECRET,
            )),
            bash(&count_in_environ(ZERO_PID, key)),
            bash(&count_in_environ(ZERO_PID, token)),
        ]
    };
    for level in ["low", "medium"] {
        let (_o, events) = Run::new(&["--auto", level])
            .env("OPENAI_API_KEY", key)
            .env("GITHUB_TOKEN", token)
            .go(calls());
        for said in tool_outputs(&events) {
            assert!(said.contains("UNREADABLE"), "{level}: {said}");
        }
    }
    // The control: root's powers at high read the other user's environment; zero's own
    // initial environment shows no secret value even then.
    let (_o, events) = Run::new(&["--auto", "high"])
        .env("OPENAI_API_KEY", key)
        .env("GITHUB_TOKEN", token)
        .go(calls());
    let said = tool_outputs(&events);
    assert!(said[0].contains("COUNT=1"), "{said:?}");
    assert!(said[1].contains("COUNT=0"), "{said:?}");
    assert!(said[2].contains("COUNT=0"), "{said:?}");
}

#[test]
fn zeros_initial_environment_shows_no_secret_value_and_the_values_still_work() {
    if !running_as_root() {
        return;
    }
    let key = "sk-provider-key-a81f03";
    let token = "ghp_passed-token-93c1";
    // As root at high, which reads a non-dumpable process's environment.
    let (_o, events) = Run::new(&["--auto", "high"])
        .env("OPENAI_API_KEY", key)
        .env("GITHUB_TOKEN", token)
        .go(vec![
            bash(&count_in_environ(ZERO_PID, key)),
            bash(&count_in_environ(ZERO_PID, "OPENAI_API_KEY=\\*\\*\\*\\*")),
            bash(&format!(
                "[ \"$GITHUB_TOKEN\" = '{token}' ] && echo SAME || echo DIFFERENT"
            )),
        ]);
    let said = tool_outputs(&events);
    assert!(said[0].contains("COUNT=0"), "{said:?}");
    assert!(said[1].contains("COUNT=1"), "{said:?}");
    assert!(said[2].contains("SAME"), "{said:?}");
    // Unprivileged and without the capability, the environment stays closed at every level.
    for level in ["medium", "high"] {
        let (_o, events) = Run::new(&["--auto", level])
            .by(As::Nobody(&[]))
            .env("OPENAI_API_KEY", key)
            .go(vec![bash(&count_in_environ(ZERO_PID, key))]);
        assert!(
            tool_outputs(&events)[0].contains("UNREADABLE"),
            "{level}: {:?}",
            tool_outputs(&events)
        );
    }
}

#[test]
fn the_provider_key_still_reaches_the_model_after_the_environment_is_hidden() {
    let key = "sk-provider-key-0d4c11";
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let output = zero_std_with(&server, Wire::OpenAi)
        .env("OPENAI_API_KEY", key)
        .env_remove("ZERO_API_KEY")
        .args(["exec", "-o", "stream-json", "go"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let request = &server.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
}

/// A command that writes through fd 6 and says whether it could (the words are built by the
/// shell, so the command's own text, which a background call's result repeats, has neither).
const WRITE_FD_6: &str = "(echo leaked >&6) 2>/dev/null && echo WROTE-$((2*3)) || echo \
                          CLOSED-$((2*3))";

#[test]
fn a_descriptor_zeros_caller_left_open_never_reaches_a_command() {
    if !running_as_root() {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("leak.txt");
    for who in [As::Root, As::Nobody(&[])] {
        for level in ["medium", "high"] {
            File::create(&file).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
            let (_o, events) = Run::new(&["--auto", level]).by(who).leaking(&file).go(vec![
                bash(WRITE_FD_6),
                background(WRITE_FD_6),
                wait_for_task(),
            ]);
            let said = tool_outputs(&events).join("\n");
            assert_eq!(
                said.matches("CLOSED-6").count(),
                2,
                "{who:?} {level}: {said}"
            );
            assert!(!said.contains("WROTE-6"), "{said}");
            assert_eq!(std::fs::read(&file).unwrap(), b"", "{who:?} {level}");
        }
    }
}

#[test]
fn an_mcp_server_gets_neither_a_leaked_descriptor_nor_a_capability() {
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("leak.txt");
    File::create(&file).unwrap();
    let record = outside.path().join("record");
    let config = outside.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"probe": {
            "command": crate::mcp::test_server(),
            "args": ["--record", record],
        }}})
        .to_string(),
    )
    .unwrap();
    // Looked at from here, while the run waits on the model: a command could not look (the
    // server is in a Landlock domain of its own, which a command may not ptrace-read).
    // The record is written beside the config, which --add-dir makes writable.
    let run = Run::new(&[
        "--auto",
        "medium",
        "--add-dir",
        outside.path().to_str().unwrap(),
        "--mcp-config",
        config.to_str().unwrap(),
    ])
    .leaking(&file);
    let (mut command, _server) = run.command(Vec::new(), stall());
    let _zero = Stopped(
        command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid: u32 = wait_for("the MCP server to record its pid", DEADLINE, || {
        std::fs::read_to_string(&record)
            .ok()?
            .lines()
            .find_map(|line| line.strip_prefix("pid ")?.parse().ok())
    });
    let targets: Vec<PathBuf> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .collect();
    assert!(!targets.is_empty());
    assert!(!targets.contains(&file), "{targets:?}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(status.contains("CapEff:\t0000000000000000"), "{status}");
}

#[test]
fn as_root_below_high_another_users_file_outside_the_roots_keeps_its_metadata() {
    if !running_as_root() {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = outside.path().join("theirs.txt");
    std::fs::write(&file, "x").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    give_to_nobody(&file);
    let path = file.display().to_string();
    let attempts = [
        format!("chmod 777 '{path}'"),
        format!("chown root:root '{path}'"),
        format!("touch -d 2000-01-01 '{path}'"),
        format!("/usr/bin/python3 -c \"import os; os.setxattr('{path}', 'user.zero', b'1')\""),
        format!("/usr/bin/python3 -c \"import os; os.setxattr('{path}', 'trusted.zero', b'1')\""),
    ];
    let calls: Vec<Reply> = attempts
        .iter()
        .map(|attempt| {
            bash(&format!(
                "{attempt} 2>/dev/null && echo CHANGED || echo KEPT"
            ))
        })
        .collect();
    let before = std::fs::metadata(&file).unwrap();
    let (_o, events) = Run::new(&["--auto", "medium"]).go(calls.clone());
    let said = tool_outputs(&events);
    for (attempt, result) in attempts.iter().zip(&said) {
        assert!(result.contains("KEPT"), "{attempt}: {result}");
    }
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(
        (after.mode(), after.uid(), after.mtime()),
        (before.mode(), before.uid(), before.mtime())
    );
    // The control: root's powers at high change it.
    let (_o, events) = Run::new(&["--auto", "high"]).go(calls[..1].to_vec());
    assert!(tool_outputs(&events)[0].contains("CHANGED"));
}
