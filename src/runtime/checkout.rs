//! A worktree on disk as zero makes and ends it, for a `--worktree` run and an isolated
//! specialist alike: made on a new branch from the repository's `HEAD` (with the uncommitted
//! changes of the workspace carried over first, when asked), locked while in use, its changes
//! committed as "zero" when its work ends, then removed. Each step moves the durable record
//! ([`WorktreeRecords`]). A check that fails before the record is claimed leaves nothing
//! behind; a step that fails after it undoes what it made and forgets the claim, so a failure
//! to make a worktree leaves no directory, branch, lock or record. Only a crash leaves a
//! `preparing` record, which reconciliation turns into `failed` with the reason.
//!
//! Blocking throughout (`git` runs to completion): callers on async threads use
//! `spawn_blocking`.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::git::{GitError, git, git_with};
use super::worktree::{
    Directory, Transition, WorktreeError, WorktreeLease, WorktreeRecord, WorktreeRecords,
};
use super::{RunId, WorktreeName};

/// The author and committer of every commit zero makes in a worktree.
const AUTHOR: [&str; 4] = ["-c", "user.name=zero", "-c", "user.email=zero@localhost"];

/// What a new worktree is made of.
#[derive(Debug)]
pub struct NewCheckout<'a> {
    /// Its name (and its branch's: `zero/<name>`).
    pub name: WorktreeName,
    /// A directory of the repository it is a worktree of (the run's workspace).
    pub workspace: &'a Path,
    /// The run that holds it.
    pub run_id: &'a RunId,
    /// When the workspace's uncommitted changes (tracked and untracked, minus ignored files)
    /// are carried over: a private directory for the temporary index that collects them.
    pub carry_uncommitted: Option<&'a Path>,
}

/// Why a worktree could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    /// The workspace is in no repository.
    #[error("a worktree needs a git repository, and {} is not in one", .0.display())]
    NotARepository(PathBuf),
    /// The workspace is a bare repository.
    #[error(
        "a worktree needs a repository with a working tree, and {} is a bare repository",
        .0.display()
    )]
    Bare(PathBuf),
    /// The repository has no commit to start from.
    #[error("the repository {} has no commit yet to start a worktree from", .0.display())]
    NoCommit(PathBuf),
    /// The worktree's branch exists already.
    #[error("the branch {0} exists already")]
    BranchExists(String),
    /// `git` is missing or failed where no worktree was claimed yet.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The record could not be claimed (the name is taken) or written.
    #[error(transparent)]
    Record(#[from] WorktreeError),
    /// A step after the claim failed; what it made is gone again.
    #[error("cannot make the worktree {name}: {reason}")]
    Make {
        /// The worktree.
        name: WorktreeName,
        /// What failed, as git said it.
        reason: String,
    },
}

/// A worktree zero made and holds (see the module documentation).
#[derive(Debug)]
pub struct Checkout {
    records: WorktreeRecords,
    /// The record as of `active`.
    record: WorktreeRecord,
    /// Backs the record's claim for as long as the worktree is held.
    _lease: Arc<WorktreeLease>,
}

impl Checkout {
    /// Makes the worktree `new` describes under `records`, held by `lease` (the run's, taken
    /// before: it backs the claim from the moment the record exists): checks the repository,
    /// claims the record (`preparing`), carries the uncommitted changes over when asked, adds
    /// the worktree on its new branch, locks it, and marks the record `active`.
    pub fn make(
        records: WorktreeRecords,
        lease: Arc<WorktreeLease>,
        new: NewCheckout<'_>,
    ) -> Result<Checkout, CheckoutError> {
        let repository = repository_of(new.workspace)?;
        let head = git(
            &repository,
            &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
        )
        .map_err(|_| CheckoutError::NoCommit(repository.clone()))?;
        let branch = new.name.branch();
        if git(
            &repository,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
        )
        .is_ok()
        {
            return Err(CheckoutError::BranchExists(branch));
        }
        let record = records.create(new.name, new.run_id.clone(), repository)?;
        let mut checkout = Checkout {
            records,
            record,
            _lease: lease,
        };
        match checkout.add(&head, new.carry_uncommitted, new.run_id) {
            Ok(record) => {
                checkout.record = record;
                Ok(checkout)
            }
            Err(reason) => Err(checkout.undo(reason)),
        }
    }

    /// Its record, as of `active`.
    pub fn record(&self) -> &WorktreeRecord {
        &self.record
    }

    /// Where in the worktree `workspace` (a directory of the repository) lies: the same place
    /// it has in the repository.
    pub fn workspace_for(&self, workspace: &Path) -> PathBuf {
        match workspace.strip_prefix(&self.record.repository) {
            Ok(beneath) => self.record.path.join(beneath),
            Err(_) => self.record.path.clone(),
        }
    }

    /// The entries of the repository's git directory a commit in the worktree writes, beyond
    /// the worktree itself: the object store, the worktree's own administrative directory
    /// (its `HEAD`, index and logs), and the directories of zero's branches' refs and their
    /// logs (a ref is updated through a lock file beside it, so its directory must be
    /// writable, not just the file). Only the ones that exist: a sandbox rule needs a path.
    pub fn writable_git_paths(&self) -> Result<Vec<PathBuf>, GitError> {
        let dir = &self.record.path;
        let common = PathBuf::from(git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?);
        let own = PathBuf::from(git(dir, &["rev-parse", "--absolute-git-dir"])?);
        Ok([
            common.join("objects"),
            own,
            common.join("refs/heads/zero"),
            common.join("logs/refs/heads/zero"),
        ]
        .into_iter()
        .filter(|path| path.is_dir())
        .collect())
    }

    /// Commits whatever changed in the worktree (tracked and untracked, minus ignored files)
    /// on its branch, as "zero" with `message`, and returns the branch's commit when the
    /// branch moved past where it started (the work may also have committed itself); `None`
    /// when nothing changed.
    pub fn commit(&self, message: &str) -> Result<Option<String>, String> {
        let dir = &self.record.path;
        git_step(dir, &["add", "--all"])?;
        if !git_step(dir, &["status", "--porcelain"])?.is_empty() {
            let mut args = AUTHOR.to_vec();
            args.extend([
                "commit",
                "--quiet",
                "--no-verify",
                "--no-gpg-sign",
                "-m",
                message,
            ]);
            git_step(dir, &args)?;
        }
        let tip = git_step(dir, &["rev-parse", "HEAD"])?;
        Ok((Some(&tip) != self.record.base.as_ref()).then_some(tip))
    }

    /// `git diff --stat` from where the worktree started to `commit`, for a report; empty
    /// when git cannot tell.
    pub fn diff_stat(&self, commit: &str) -> String {
        let base = self.record.base.as_deref().unwrap_or("HEAD");
        git(&self.record.path, &["diff", "--stat", base, commit]).unwrap_or_default()
    }

    /// Ends it with its work in `commit` (if any): removes the directory, keeps the branch,
    /// and records `finished`.
    pub fn finish(self, commit: Option<String>) -> Result<WorktreeRecord, WorktreeError> {
        self.record.remove_directory();
        self.records.transition(
            &self.record.name,
            Transition::Finish {
                commit,
                directory: Directory::Removed,
            },
        )
    }

    /// Ends a worktree whose work changed nothing: directory and branch go, and the record
    /// says `finished` with no commit.
    pub fn discard(self) -> Result<WorktreeRecord, WorktreeError> {
        // The directory first: git refuses to delete a branch a worktree has checked out.
        self.record.remove_directory();
        self.record.delete_branch();
        self.records.transition(
            &self.record.name,
            Transition::Finish {
                commit: None,
                directory: Directory::Removed,
            },
        )
    }

    /// Ends a worktree whose work could not be committed (`reason`): its directory stays, with
    /// what the work left in it, and the record says `failed`, with the directory `kept`.
    /// Returns the reason as the record has it (naming the directory).
    pub fn keep(self, reason: &str) -> String {
        let record = &self.record;
        let reason = format!(
            "cannot commit the changes ({reason}); they are left in {}",
            record.path.display()
        );
        let _ = self.records.transition(
            &record.name,
            Transition::Fail {
                reason: reason.clone(),
                directory: Some(Directory::Kept),
            },
        );
        reason
    }

    /// Carries the changes over (when asked), adds the worktree at the result on its branch,
    /// locks it, and marks the record `active`. Returns the record.
    fn add(
        &self,
        head: &str,
        carry: Option<&Path>,
        run_id: &RunId,
    ) -> Result<WorktreeRecord, String> {
        let record = &self.record;
        let base = match carry {
            Some(scratch) => carry_over(&record.repository, head, scratch, &record.name)?,
            None => head.to_string(),
        };
        let path = record.path.as_os_str().to_string_lossy();
        // zero's own bookkeeping runs none of the repository's hooks (a `post-checkout` hook
        // would run unconfined, and could make the preparation hang).
        git_step(
            &record.repository,
            &[
                "-c",
                "core.hooksPath=/dev/null",
                "worktree",
                "add",
                "--quiet",
                "-b",
                &record.branch,
                &path,
                &base,
            ],
        )?;
        let reason = format!("zero run {run_id}");
        git_step(
            &record.repository,
            &["worktree", "lock", "--reason", &reason, &path],
        )?;
        self.records
            .transition(&record.name, Transition::Activate { base })
            .map_err(|e| e.to_string())
    }

    /// Undoes what was made (worktree, lock, branch) and forgets the claim: the error to
    /// report.
    fn undo(self, reason: String) -> CheckoutError {
        let record = &self.record;
        record.remove_directory();
        record.delete_branch();
        if let Err(error) = self.records.discard(&record.name, &record.run_id) {
            // The claim stays `preparing`; the next start's reconciliation fails it.
            return CheckoutError::Make {
                name: record.name.clone(),
                reason: format!("{reason} (and {error})"),
            };
        }
        CheckoutError::Make {
            name: record.name.clone(),
            reason,
        }
    }
}

/// The uncommitted changes of the repository at `repository` (tracked and untracked, minus
/// ignored files) as a commit on top of `head`, made through a temporary index in `scratch`
/// so the user's own index is never touched; `head` itself when nothing is uncommitted. git's
/// message names a file that cannot be read.
fn carry_over(
    repository: &Path,
    head: &str,
    scratch: &Path,
    name: &WorktreeName,
) -> Result<String, String> {
    let index = scratch.join(format!("carry-{name}.index"));
    let env: [(&str, &OsStr); 1] = [("GIT_INDEX_FILE", index.as_os_str())];
    let carried = (|| {
        git_with(repository, &["read-tree", head], &env)?;
        git_with(repository, &["add", "--all"], &env)?;
        let tree = git_with(repository, &["write-tree"], &env)?;
        if tree == git(repository, &["rev-parse", &format!("{head}^{{tree}}")])? {
            return Ok(head.to_string());
        }
        let mut args = AUTHOR.to_vec();
        args.extend([
            "commit-tree",
            "--no-gpg-sign",
            &tree,
            "-p",
            head,
            "-m",
            "zero: the uncommitted changes the worktree started from",
        ]);
        git(repository, &args)
    })();
    let _ = fs::remove_file(&index);
    carried.map_err(|error: GitError| format!("cannot carry the uncommitted changes over: {error}"))
}

/// The top-level directory of the repository holding `workspace`: refused when it is not in
/// one, when it is bare, or when `git` is missing.
fn repository_of(workspace: &Path) -> Result<PathBuf, CheckoutError> {
    let bare =
        git(workspace, &["rev-parse", "--is-bare-repository"]).map_err(|error| match error {
            GitError::Failed { .. } => CheckoutError::NotARepository(workspace.to_path_buf()),
            other => CheckoutError::Git(other),
        })?;
    if bare == "true" {
        return Err(CheckoutError::Bare(workspace.to_path_buf()));
    }
    Ok(PathBuf::from(git(
        workspace,
        &["rev-parse", "--show-toplevel"],
    )?))
}

/// A `git` step of making or ending a worktree, its error as text for the record.
fn git_step(cwd: &Path, args: &[&str]) -> Result<String, String> {
    git(cwd, args).map_err(|e| e.to_string())
}
