//! Starting external commands. Every process zero runs is spawned here, so the rules live in
//! one place: its own process group and stdin from `/dev/null`, always. A foreground command
//! gets bounded output capture and its whole group killed when it ends, times out, or the run
//! is cancelled; a background task's output goes to a file and its end is the runtime's
//! business (see [`super::Runtime`]).

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::capture::BoundedCapture;

/// Bytes kept from the start and from the end of each output stream.
const CAPTURE_HEAD: usize = 32 * 1024;
const CAPTURE_TAIL: usize = 32 * 1024;

/// How long output pipes may stay open after the command ended (a process that escaped the
/// group with `setsid` can hold them); after this the run stops reading instead of hanging.
const PIPE_DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A shell command to run in the foreground.
#[derive(Debug, Clone, Copy)]
pub struct ShellCommand<'a> {
    /// The command line, run by the shell.
    pub command: &'a str,
    /// The working directory.
    pub cwd: &'a Path,
    /// How long the command may run before its group is killed.
    pub timeout: Duration,
}

/// How a foreground command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// It ran past its timeout and its process group was killed.
    TimedOut,
    /// The run was cancelled and its process group was killed.
    Cancelled,
}

/// The outcome of a foreground command.
#[derive(Debug)]
pub struct CommandOutput {
    /// How it ended.
    pub termination: Termination,
    /// What it wrote to stdout (bounded).
    pub stdout: BoundedCapture,
    /// What it wrote to stderr (bounded).
    pub stderr: BoundedCapture,
}

/// The shell that runs commands: bash when the machine has it (models write bash), else `sh`.
pub fn shell() -> &'static str {
    ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .unwrap_or("/bin/sh")
}

/// A program to start as a background task.
#[derive(Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program to run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Variables set for it on top of the inherited environment. They may carry secrets (a
    /// specialist gets the run's API key this way, never on argv), so `Debug` shows only names.
    pub env: Vec<(OsString, OsString)>,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field(
                "env",
                &self.env.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Launch {
    /// `command` run by the platform [`shell`] in `cwd`.
    pub fn shell(command: &str, cwd: &Path) -> Self {
        Launch {
            program: shell().into(),
            args: vec!["-c".into(), command.into()],
            cwd: cwd.to_path_buf(),
            env: Vec::new(),
        }
    }
}

/// Starts `launch` in its own process group with stdin from `/dev/null` and stdout and stderr
/// appended to `output`, and returns its pid. The child is deliberately not reaped or killed
/// when the handle is dropped: the runtime observes its end and reaps it itself, after it has
/// finished signalling the group, so the pid cannot be recycled under it.
pub(super) fn spawn_background(launch: &Launch, output: &File) -> io::Result<u32> {
    use std::os::unix::process::CommandExt;
    let child = std::process::Command::new(&launch.program)
        .args(&launch.args)
        .current_dir(&launch.cwd)
        .envs(launch.env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output.try_clone()?)
        .process_group(0)
        .spawn()?;
    Ok(child.id())
}

/// Runs `spec` to completion, timeout or cancellation. Whatever the command left running in
/// its process group (`cmd &`) is killed when it ends: a foreground command's leftovers die
/// with it.
pub async fn run_foreground(
    spec: ShellCommand<'_>,
    cancel: &CancellationToken,
) -> io::Result<CommandOutput> {
    let mut child = tokio::process::Command::new(shell())
        .arg("-c")
        .arg(spec.command)
        .current_dir(spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    let pgid = child
        .id()
        .map(|id| Pid::from_raw(id as i32))
        .ok_or_else(|| io::Error::other("the command exited before its pid was known"))?;
    // Kills the group if this future is dropped mid-run (the caller gave up on the call).
    let mut group = GroupGuard { pgid, armed: true };

    let mut stdout = BoundedCapture::new(CAPTURE_HEAD, CAPTURE_TAIL);
    let mut stderr = BoundedCapture::new(CAPTURE_HEAD, CAPTURE_TAIL);
    let stdout_pipe = child.stdout.take();
    let stderr_pipe = child.stderr.take();
    let ended = {
        let reading = async {
            tokio::join!(
                drain(stdout_pipe, &mut stdout),
                drain(stderr_pipe, &mut stderr)
            )
        };
        tokio::pin!(reading);
        let mut reading_done = false;
        let deadline = tokio::time::sleep(spec.timeout);
        tokio::pin!(deadline);
        let ended: Result<ExitStatus, Termination> = loop {
            tokio::select! {
                _ = &mut reading, if !reading_done => reading_done = true,
                status = child.wait() => break Ok(status?),
                () = &mut deadline => break Err(Termination::TimedOut),
                () = cancel.cancelled() => break Err(Termination::Cancelled),
            }
        };
        group.kill();
        if !reading_done {
            let _ = tokio::time::timeout(PIPE_DRAIN_GRACE, &mut reading).await;
        }
        ended
    };
    let termination = match ended {
        Ok(status) => exit_termination(status),
        Err(killed) => {
            child.wait().await?;
            killed
        }
    };
    group.armed = false;
    Ok(CommandOutput {
        termination,
        stdout,
        stderr,
    })
}

fn exit_termination(status: ExitStatus) -> Termination {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Termination::Exited(code),
        (None, Some(signal)) => Termination::Signalled(signal),
        (None, None) => Termination::Exited(-1),
    }
}

async fn drain(pipe: Option<impl AsyncRead + Unpin>, capture: &mut BoundedCapture) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut buffer = vec![0u8; 16 * 1024];
    while let Ok(read) = pipe.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        capture.push(&buffer[..read]);
    }
}

/// The process group of one command; killed on request and on drop while armed.
struct GroupGuard {
    pgid: Pid,
    armed: bool,
}

impl GroupGuard {
    /// SIGKILLs every process left in the group. The group leader has been or is about to be
    /// reaped by us, and a group id stays reserved while any member lives, so the signal
    /// reaches only this command's processes (ESRCH when none are left is fine).
    fn kill(&self) {
        if self.pgid == nix::unistd::getpgrp() {
            return; // never our own group
        }
        let _ = killpg(self.pgid, Signal::SIGKILL);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(command: &'a str, cwd: &'a Path, timeout_ms: u64) -> ShellCommand<'a> {
        ShellCommand {
            command,
            cwd,
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[tokio::test]
    async fn captures_both_streams_and_the_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let out = run_foreground(
            spec("echo out; echo err >&2; exit 3", dir.path(), 10_000),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(out.termination, Termination::Exited(3));
        assert_eq!(out.stdout.render(), "out\n");
        assert_eq!(out.stderr.render(), "err\n");
    }

    #[tokio::test]
    async fn a_background_leftover_does_not_hang_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let out = run_foreground(
            spec("sleep 30 & echo started", dir.path(), 10_000),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(out.termination, Termination::Exited(0));
        assert_eq!(out.stdout.render(), "started\n");
    }

    #[tokio::test]
    async fn cancellation_ends_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.cancel();
        });
        let out = run_foreground(spec("sleep 30", dir.path(), 60_000), &cancel)
            .await
            .unwrap();
        assert_eq!(out.termination, Termination::Cancelled);
    }
}
