//! Runs that share one data directory: starting `zero exec` in the background against a fake
//! model, waiting (with deadlines) for what it records, killing it, and looking at processes.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use super::fake_model::{FakeModel, Reply, Script, TASK_ID};
use super::wait::{DEADLINE, wait_for};
use super::zero::{Wire, zero_std, zero_std_with};

/// A private data directory, shared by every `zero` a test starts with it.
pub struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    /// A fresh, empty (not yet created) data directory.
    pub fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The `ZERO_HOME` path.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("zero")
    }

    /// `zero tasks <args>` with this data directory.
    pub fn tasks(&self, args: &[&str]) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.tasks_std(args))
    }

    /// [`Home::tasks`] as a plain `std::process::Command`, for a test that manages the process.
    pub fn tasks_std(&self, args: &[&str]) -> Command {
        let mut cmd = zero_std();
        cmd.env("ZERO_HOME", self.path())
            .env("ZERO_KILL_GRACE_MS", "300")
            .arg("tasks")
            .args(args);
        cmd
    }

    /// Every task record in the data directory, parsed.
    pub fn records(&self) -> Vec<Value> {
        std::fs::read_dir(self.path().join("tasks"))
            .map(|dir| {
                dir.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until a record says `running` for a command containing `needle`, and returns it.
    pub fn running_record(&self, needle: &str) -> Value {
        wait_for(format!("a running task with {needle}"), DEADLINE, || {
            self.records().into_iter().find(|r| {
                r["status"] == "running"
                    && r["command"].as_str().is_some_and(|c| c.contains(needle))
            })
        })
    }

    /// What is left in `runs/`.
    pub fn runs_entries(&self) -> Vec<String> {
        std::fs::read_dir(self.path().join("runs"))
            .map(|dir| {
                dir.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A `zero exec` running in the background with a [`Home`]. Dropping it SIGKILLs it (if still
/// running) and reconciles, so nothing a failed test started keeps running.
pub struct Exec {
    child: Child,
    home: PathBuf,
}

impl Exec {
    /// Starts `zero exec -o stream-json --auto medium go` against `server` with `home`. The
    /// model's stream never times out, so a stalled reply keeps the run alive until killed.
    pub fn start(server: &FakeModel, home: &Home) -> Exec {
        Exec::start_with(server, home, &[])
    }

    /// [`Exec::start`] with `flags` added to `zero exec`'s.
    pub fn start_with(server: &FakeModel, home: &Home, flags: &[&str]) -> Exec {
        let workspace = tempfile::tempdir().unwrap().keep();
        let mut cmd: Command = zero_std_with(server, Wire::OpenAi);
        cmd.args(["exec", "--auto", "medium", "-o", "stream-json"])
            .args(flags)
            .arg("go")
            .current_dir(workspace)
            .env("ZERO_HOME", home.path())
            .env("ZERO_KILL_GRACE_MS", "300")
            .env("ZERO_STREAM_IDLE_TIMEOUT_MS", "600000")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own, so a test can kill it together with the `git` it runs.
            .process_group(0);
        Exec {
            child: cmd.spawn().unwrap(),
            home: home.path(),
        }
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILLs it and reaps it.
    pub fn sigkill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGKILLs its process group — zero and what it runs in its own group (its bookkeeping
    /// `git`), as a CI runner ending a job does — and reaps it.
    pub fn sigkill_group(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }

    /// Sends it SIGTERM, then waits for it as [`Exec::finish`] does.
    pub fn terminate(self) -> (i32, Vec<Value>) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        self.finish()
    }

    /// Waits for it to exit on its own; returns the exit code and its stream-json events.
    pub fn finish(mut self) -> (i32, Vec<Value>) {
        let status = wait_for("zero exec to finish", DEADLINE, || {
            self.child.try_wait().unwrap()
        });
        let mut stdout = Vec::new();
        std::io::Read::read_to_end(self.child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        (status.code().unwrap_or(-1), super::zero::events(&stdout))
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.sigkill();
            let _ = zero_std()
                .env("ZERO_HOME", &self.home)
                .env("ZERO_KILL_GRACE_MS", "100")
                .args(["tasks", "list"])
                .output();
        }
    }
}

/// A background `bash` call.
pub fn background(command: &str) -> Reply {
    Reply::tool_call(
        "bash",
        json!({"command": command, "run_in_background": true}),
    )
}

/// A reply that sends some text and then nothing, ever: the run stays alive, waiting on it.
pub fn stall() -> Reply {
    Reply::text("thinking").stall()
}

/// A reply that waits (up to a minute) for the task the model started last to end.
pub fn wait_for_task() -> Reply {
    Reply::tool_call(
        "TaskOutput",
        json!({"task_id": TASK_ID, "block": true, "timeout_ms": 60000}),
    )
}

/// A data directory holding one finished shell task that printed `hello` and `world`, and
/// the task's id.
pub fn one_finished_task() -> (Home, String) {
    let home = Home::new();
    let server = FakeModel::start(
        Script::new()
            .reply(background("echo hello; echo world"))
            .reply(wait_for_task())
            .reply(Reply::text("done")),
    );
    let (code, events) = Exec::start(&server, &home).finish();
    assert_eq!(code, 0, "{events:?}");
    let id = home.records()[0]["id"].as_str().unwrap().to_string();
    (home, id)
}
