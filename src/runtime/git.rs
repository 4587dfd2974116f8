//! The one place zero starts `git` for its own bookkeeping (making, committing and removing
//! the worktrees of `--worktree` runs and isolated specialists). It is zero's work, not the model's command, so it runs
//! unconfined and blocking (callers on async threads use `spawn_blocking`); like every child,
//! it never gets the provider's key variables.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::environ::names::KEY_VARIABLES;

/// Why a `git` command did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git` is not installed (not on `PATH`).
    #[error("git is not installed (not found on PATH)")]
    Missing,
    /// `git` could not be started for another reason.
    #[error("cannot start git: {0}")]
    Start(io::Error),
    /// `git` ran and failed.
    #[error("`git {command}` failed: {stderr}")]
    Failed {
        /// The arguments, as shown.
        command: String,
        /// What git said on stderr (trimmed).
        stderr: String,
    },
}

/// Runs `git args…` in `cwd` and returns its stdout, trimmed.
pub fn git<S: AsRef<OsStr>>(cwd: &Path, args: &[S]) -> Result<String, GitError> {
    git_with(cwd, args, &[])
}

/// [`git`] with `env` set on top of what it inherits (a temporary index, say).
pub fn git_with<S: AsRef<OsStr>>(
    cwd: &Path,
    args: &[S],
    env: &[(&str, &OsStr)],
) -> Result<String, GitError> {
    let mut command = Command::new("git");
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .envs(env.iter().copied());
    for name in KEY_VARIABLES {
        command.env_remove(name);
    }
    let output = command.output().map_err(|error| match error.kind() {
        io::ErrorKind::NotFound => GitError::Missing,
        _ => GitError::Start(error),
    })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(GitError::Failed {
            command: args
                .iter()
                .map(|arg| arg.as_ref().to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_a_failing_command_with_what_git_said() {
        let dir = tempfile::tempdir().unwrap();
        match git(dir.path(), &["rev-parse", "--show-toplevel"]) {
            Err(GitError::Failed { command, stderr }) => {
                assert_eq!(command, "rev-parse --show-toplevel");
                assert!(stderr.contains("not a git repository"), "{stderr}");
            }
            Err(GitError::Missing) => {}
            other => panic!("{other:?}"),
        }
    }
}
