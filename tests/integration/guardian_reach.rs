//! A command cannot reach the process that judges the next one: below `--auto high` nothing of
//! a command's tree can attach to its guardian (cold or warm) or to zero, read or write their
//! memory, or take their descriptors — while it can still trace its own children — and a
//! caller's hook never runs in a guardian that has served a model command. Tried for real,
//! with `ptrace`, `/proc/<pid>/mem`, `process_vm_readv` and `pidfd_getfd`, as root and as
//! `nobody`.

use std::path::Path;

use serde_json::json;

use crate::containment::{as_nobody, give_to_nobody, running_as_root};
use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::marks::make_executable;
use crate::support::zero::{Wire, events, tool_outputs, zero_std_with};

/// What a command tries against its guardian (the nearest `zero __guard` above it), zero (the
/// guardian's parent) and a
/// child of its own, one line each, ending with whether its guardian was a warm one.
const PROBE: &str = r#"python3 - <<'EOF'
import ctypes, errno, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.syscall.restype = ctypes.c_long
def err():
    return errno.errorcode.get(ctypes.get_errno(), "?")
def attach(pid):
    if libc.ptrace(16, pid, None, None) == 0:
        libc.ptrace(17, pid, None, None)
        return "attached"
    return err()
def mem(pid):
    try:
        with open("/proc/%d/mem" % pid, "rb"):
            return "opened"
    except OSError as e:
        return errno.errorcode.get(e.errno, "?")
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def vm(pid):
    buf = ctypes.create_string_buffer(8)
    local, remote = Iov(ctypes.cast(buf, ctypes.c_void_p), 8), Iov(4096, 8)
    libc.process_vm_readv.restype = ctypes.c_ssize_t
    if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) >= 0:
        return "read"
    e = err()
    return "reached" if e == "EFAULT" else e
def getfd(pid):
    pidfd = libc.syscall(434, pid, 0)
    if pidfd < 0:
        return "pidfd-" + err()
    return "took" if libc.syscall(438, pidfd, 0, 0) >= 0 else err()
def parent(pid):
    return int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
guardian = os.getppid()
while open("/proc/%d/cmdline" % guardian, "rb").read().split(b"\0")[1:2] != [b"__guard"]:
    guardian = parent(guardian)
zero = parent(guardian)
for name, pid in (("guardian", guardian), ("zero", zero)):
    print(name, attach(pid), mem(pid), vm(pid), getfd(pid))
kid = os.fork()
if kid == 0:
    time.sleep(30)
    os._exit(0)
print("child", attach(kid))
os.kill(kid, 9)
os.waitpid(kid, 0)
print("warm" if b"--warm" in open("/proc/%d/cmdline" % guardian, "rb").read().split(b"\0") else "cold")
EOF"#;

/// The model runs [`PROBE`] twice (the second under the warm guardian the first left), then
/// answers; returns what each probe printed.
fn probed(level: &str, nobody: bool) -> Vec<String> {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let probe = || Reply::tool_call("bash", json!({ "command": PROBE }));
    let server = FakeModel::start(
        Script::new()
            .reply(probe())
            .reply(probe())
            .reply(Reply::text("done")),
    );
    let mut zero = zero_std_with(&server, Wire::OpenAi);
    zero.env("ZERO_HOME", home.path())
        .args(["exec", "-o", "stream-json", "--auto", level, "--cwd"])
        .arg(workspace.path())
        .arg("go");
    let mut command = match nobody {
        true => {
            give_to_nobody(home.path());
            as_nobody(&zero, &[], workspace.path())
        }
        false => zero,
    };
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    tool_outputs(&events(&output.stdout))
}

/// Checks one probe's report: the guardian and zero out of reach in every way, the command's
/// own child traceable, and the guardian cold or warm as `warm` says.
fn assert_out_of_reach(report: &str, warm: bool) {
    for target in ["guardian", "zero"] {
        let line = report
            .lines()
            .find(|line| line.starts_with(target))
            .unwrap_or_else(|| panic!("no {target} line in {report}"));
        for reached in ["attached", "opened", "read", "reached", "took"] {
            assert!(
                !line.split_whitespace().any(|word| word == reached),
                "a command reached its {target}: {line}\n{report}"
            );
        }
    }
    assert!(report.contains("child attached"), "{report}");
    let kind = if warm { "warm" } else { "cold" };
    assert!(
        report.contains(kind),
        "expected a {kind} guardian: {report}"
    );
}

fn check(level: &str, nobody: bool) {
    let reports = probed(level, nobody);
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert_out_of_reach(&reports[0], false);
    assert_out_of_reach(&reports[1], true);
}

#[test]
fn a_command_cannot_reach_its_cold_or_warm_guardian_or_zero_at_medium_as_root() {
    if running_as_root() {
        check("medium", false);
    }
}

#[test]
fn a_command_cannot_reach_its_cold_or_warm_guardian_or_zero_at_low_as_root() {
    if running_as_root() {
        check("low", false);
    }
}

#[test]
fn a_command_cannot_reach_its_cold_or_warm_guardian_or_zero_as_an_unprivileged_user() {
    if running_as_root() {
        check("medium", true);
        check("low", true);
    }
}

/// A `pre_tool_use` hook for `bash` that appends its guardian's pid and command line to
/// `log` (outside the workspace: hooks are the caller's, and `--add-dir` lets them write it).
fn logging_hook(dir: &Path, log: &Path) -> std::path::PathBuf {
    let script = dir.join("hook.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s %s\\n' \"$PPID\" \"$(tr '\\0\\n' '  ' < /proc/$PPID/cmdline)\" \
             >> '{}'\nexit 0\n",
            log.display()
        ),
    )
    .unwrap();
    make_executable(&script);
    let hooks = dir.join("hooks.toml");
    std::fs::write(
        &hooks,
        format!(
            "[[hooks.pre_tool_use]]\ncommand = \"{}\"\nmatcher = \"bash\"\n",
            script.display()
        ),
    )
    .unwrap();
    hooks
}

#[test]
fn a_hook_never_runs_in_a_guardian_that_served_a_model_command() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("hooks.log");
    let hooks = logging_hook(outside.path(), &log);
    let own_guardian = || {
        Reply::tool_call(
            "bash",
            json!({"command": "printf '%s %s\\n' \"$PPID\" \"$(tr '\\0\\n' '  ' < /proc/$PPID/cmdline)\""}),
        )
    };
    let server = FakeModel::start(
        Script::new()
            .reply(own_guardian())
            .reply(own_guardian())
            .reply(own_guardian())
            .reply(Reply::text("done")),
    );
    let output = zero_std_with(&server, Wire::OpenAi)
        .env("ZERO_HOME", home.path())
        .args(["exec", "-o", "stream-json", "--auto", "medium", "--hooks"])
        .arg(&hooks)
        .arg("--add-dir")
        .arg(outside.path())
        .arg("--cwd")
        .arg(workspace.path())
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let model: Vec<String> = tool_outputs(&events(&output.stdout))
        .iter()
        .map(|out| {
            let printed = out.split("stdout:\n").nth(1).unwrap_or_default();
            printed
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(model.len(), 3, "{model:?}");
    // The control: model commands do share a warm guardian.
    assert!(
        model[1] == model[2],
        "the model's later commands ran under one warm guardian: {model:?}"
    );
    let hooks = std::fs::read_to_string(&log).unwrap();
    assert_eq!(hooks.lines().count(), 3, "{hooks}");
    for line in hooks.lines() {
        let pid = line.split_whitespace().next().unwrap();
        assert!(
            !model.iter().any(|served| served == pid),
            "a hook ran in a guardian that served the model: {line} (model: {model:?})"
        );
        assert!(
            !line.contains("--warm"),
            "a hook ran in a warm guardian: {line}"
        );
    }
}
