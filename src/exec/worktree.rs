//! `zero exec --worktree [NAME]`: the whole run in a new git worktree of the workspace's
//! repository. [`RunWorktree::prepare`] makes it before the settings fix the workspace (which
//! then is the worktree), and [`RunWorktree::finish`] commits what the run changed on its
//! branch, removes the directory and keeps the branch. Each step moves the durable record
//! (`runtime::WorktreeRecords`); a check that fails before the record is claimed leaves
//! nothing behind, and a `git` step that fails after it undoes what it made and leaves the
//! record `failed` with the reason.

use std::path::{Path, PathBuf};

use crate::output::event::WorktreeInfo;
use crate::runtime::git::{GitError, git};
use crate::runtime::{
    Directory, RunId, Transition, WorktreeLease, WorktreeName, WorktreeRecord, WorktreeRecords,
};

use super::failure::Failure;

/// The author of the commit a `--worktree` run ends with.
const AUTHOR: [&str; 4] = ["-c", "user.name=zero", "-c", "user.email=zero@localhost"];

/// A run's worktree while the run works in it.
pub(crate) struct RunWorktree {
    records: WorktreeRecords,
    record: WorktreeRecord,
    /// Backs the record's claim from before it is `preparing` until this value is dropped,
    /// after the run's end is recorded.
    _lease: WorktreeLease,
}

impl RunWorktree {
    /// Makes the worktree `name` (a fresh one when `None`) of the repository holding
    /// `workspace`, under `data_dir`, for `run_id`: checks, claims the record, adds the
    /// worktree on a new branch at `HEAD`, locks it, and marks the record `active`.
    pub(crate) fn prepare(
        name: Option<&str>,
        workspace: &Path,
        data_dir: &Path,
        run_id: &RunId,
    ) -> Result<Self, Failure> {
        let name = match name {
            Some(text) => WorktreeName::parse(text).map_err(|e| Failure::usage(e.to_string()))?,
            None => WorktreeName::generate(),
        };
        let repository = repository_of(workspace)?;
        let branch = name.branch();
        let reference = format!("refs/heads/{branch}");
        if git(
            &repository,
            &["rev-parse", "--verify", "--quiet", &reference],
        )
        .is_ok()
        {
            return Err(Failure::usage(format!(
                "the branch {branch} exists already"
            )));
        }
        let records = WorktreeRecords::new(data_dir);
        let lease = records
            .hold(run_id)
            .map_err(|e| Failure::internal(e.to_string()))?;
        let record = records
            .create(name, run_id.clone(), repository)
            .map_err(|e| Failure::usage(e.to_string()))?;
        let worktree = RunWorktree {
            records,
            record,
            _lease: lease,
        };
        match worktree.add(run_id) {
            Ok(()) => Ok(worktree),
            Err(error) => Err(worktree.fail(&error)),
        }
    }

    /// Where in the worktree the run works: the same place `workspace` has in the
    /// repository (its top level, or a directory beneath it).
    pub(crate) fn workspace_for(&self, workspace: &Path) -> PathBuf {
        match workspace.strip_prefix(&self.record.repository) {
            Ok(beneath) => self.record.path.join(beneath),
            Err(_) => self.record.path.clone(),
        }
    }

    /// What `run_start` says of it.
    pub(crate) fn info(&self) -> WorktreeInfo {
        WorktreeInfo {
            name: self.record.name.to_string(),
            branch: self.record.branch.clone(),
        }
    }

    /// Adds and locks the worktree, then marks it `active`.
    fn add(&self, run_id: &RunId) -> Result<(), String> {
        let repository = &self.record.repository;
        let path = self.record.path.as_os_str().to_string_lossy();
        git_step(
            repository,
            &[
                "worktree",
                "add",
                "--quiet",
                "-b",
                &self.record.branch,
                &path,
                "HEAD",
            ],
        )?;
        let reason = format!("zero run {run_id}");
        git_step(
            repository,
            &["worktree", "lock", "--reason", &reason, &path],
        )?;
        self.records
            .transition(&self.record.name, Transition::Activate)
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Undoes what was made (worktree, lock, branch) and records `failed`: the failure to
    /// report, exit 2.
    fn fail(&self, reason: &str) -> Failure {
        self.record.remove_directory();
        self.record.delete_branch();
        let _ = self.records.transition(
            &self.record.name,
            Transition::Fail {
                reason: reason.to_string(),
            },
        );
        Failure::usage(format!(
            "cannot make the worktree {}: {reason}",
            self.record.name
        ))
    }

    /// Ends the run's worktree: commits what changed (if anything) on its branch, removes
    /// the directory and records `finished`. Returns the commit made.
    pub(crate) fn finish(self, run_id: &RunId) -> Result<Option<String>, Failure> {
        let commit = match self.commit(run_id) {
            Ok(commit) => commit,
            Err(reason) => return Err(self.keep(&reason)),
        };
        self.record.remove_directory();
        self.records
            .transition(
                &self.record.name,
                Transition::Finish {
                    commit: commit.clone(),
                    directory: Directory::Removed,
                },
            )
            .map_err(|e| Failure::internal(e.to_string()))?;
        Ok(commit)
    }

    /// Records `failed` when the run's changes could not be committed, keeping the directory
    /// (and what the run left in it) for someone to look at: the failure to report, exit 1.
    fn keep(&self, reason: &str) -> Failure {
        let record = &self.record;
        let reason = format!(
            "cannot commit the run's changes ({reason}); they are left in {}",
            record.path.display()
        );
        let _ = self.records.transition(
            &record.name,
            Transition::Fail {
                reason: reason.clone(),
            },
        );
        Failure::internal(format!("worktree {}: {reason}", record.name))
    }

    /// Commits every change in the worktree (tracked and untracked, minus ignored files) as
    /// "zero"; `None` when nothing changed.
    fn commit(&self, run_id: &RunId) -> Result<Option<String>, String> {
        let dir = &self.record.path;
        git_step(dir, &["add", "--all"])?;
        if git_step(dir, &["status", "--porcelain"])?.is_empty() {
            return Ok(None);
        }
        let message = format!("zero run {run_id} (worktree {})", self.record.name);
        let mut args = AUTHOR.to_vec();
        args.extend([
            "commit",
            "--quiet",
            "--no-verify",
            "--no-gpg-sign",
            "-m",
            &message,
        ]);
        git_step(dir, &args)?;
        git_step(dir, &["rev-parse", "HEAD"]).map(Some)
    }
}

/// The top-level directory of the repository holding `workspace`: refused when it is not in
/// one, when it is bare, or when `git` is missing.
fn repository_of(workspace: &Path) -> Result<PathBuf, Failure> {
    let inside =
        git(workspace, &["rev-parse", "--is-bare-repository"]).map_err(|error| match error {
            GitError::Failed { .. } => Failure::usage(format!(
                "--worktree needs a git repository, and {} is not in one",
                workspace.display()
            )),
            other => Failure::usage(format!("--worktree: {other}")),
        })?;
    if inside == "true" {
        return Err(Failure::usage(format!(
            "--worktree needs a repository with a working tree, and {} is a bare repository",
            workspace.display()
        )));
    }
    git(workspace, &["rev-parse", "--show-toplevel"])
        .map(PathBuf::from)
        .map_err(|e| Failure::usage(format!("--worktree: {e}")))
}

/// A `git` step of making or ending the worktree, its error as text for the record.
fn git_step(cwd: &Path, args: &[&str]) -> Result<String, String> {
    git(cwd, args).map_err(|e| e.to_string())
}
