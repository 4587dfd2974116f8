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

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::git::{
    self as zero_git, GitError, View, WorktreeDirs, commit_tree, git, in_repository, populate,
    tree_of, update_ref,
};
use super::record::{
    Directory, Transition, WorktreeError, WorktreeLease, WorktreeRecord, WorktreeRecords,
};
use crate::runtime::{RunId, WorktreeName};

/// What a new worktree is made of.
#[derive(Debug)]
pub struct NewCheckout<'a> {
    /// Its name (and its branch's: `zero/<name>`).
    pub name: WorktreeName,
    /// A directory of the repository it is a worktree of (the run's workspace).
    pub workspace: &'a Path,
    /// The run that holds it.
    pub run_id: &'a RunId,
    /// Whether the workspace's uncommitted changes (tracked and untracked, minus ignored
    /// files) are carried over.
    pub carry_uncommitted: bool,
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
        let common = PathBuf::from(git(
            &repository,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?);
        let head = git(
            &repository,
            &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
        )
        .map_err(|_| CheckoutError::NoCommit(repository.clone()))?;
        let branch = new.name.branch();
        if zero_git::resolve(&common, &format!("refs/heads/{branch}")).is_some() {
            return Err(CheckoutError::BranchExists(branch));
        }
        let scratch = records.scratch_dir().map_err(CheckoutError::Record)?;
        let record = records.create(new.name, new.run_id.clone(), repository)?;
        let mut checkout = Checkout {
            records,
            record,
            _lease: lease,
        };
        let mut made = Made::default();
        let add = Add {
            common: &common,
            scratch: &scratch,
            head: &head,
            carry: new.carry_uncommitted,
            run_id: new.run_id,
        };
        match checkout.add(add, &mut made) {
            Ok(record) => {
                checkout.record = record;
                Ok(checkout)
            }
            Err(reason) => Err(checkout.undo(reason, made)),
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
        let dirs = self.dirs().map_err(GitError::Tampered)?;
        let common = &dirs.common;
        Ok([
            common.join("objects"),
            dirs.admin.clone(),
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
    /// when nothing changed. Works on the directories the worktree was made with, through a
    /// `View` (no hook, filter or fsmonitor of the repository runs), and moves only its own
    /// branch, by compare-and-set from the tip it found. A worktree whose `.git` file or
    /// `HEAD` no longer say what zero made is refused, naming what was found: nothing moves.
    /// What it returns is read back from the branch.
    pub fn commit(&self, message: &str) -> Result<Option<String>, String> {
        let dirs = self.dirs()?;
        self.check_metadata(&dirs)?;
        let reference = self.record.reference();
        let tip = zero_git::resolve(&dirs.common, &reference)
            .ok_or_else(|| format!("its branch {} is gone", self.record.branch))?;
        let scratch = self.records.scratch_dir().map_err(|e| e.to_string())?;
        let view = View::new(&dirs.common, &scratch).map_err(|e| e.to_string())?;
        let dir = &self.record.path;
        let tree = tree_of(&view, dir, &tip).map_err(|e| e.to_string())?;
        let tip_tree = in_repository(&dirs.common, &["rev-parse", &format!("{tip}^{{tree}}")])
            .map_err(|e| e.to_string())?;
        if tree != tip_tree {
            let commit =
                commit_tree(&view, dir, &tree, &tip, message).map_err(|e| e.to_string())?;
            update_ref(&dirs.common, &reference, Some(&commit), Some(&tip))
                .map_err(|e| e.to_string())?;
        }
        let now = zero_git::resolve(&dirs.common, &reference)
            .ok_or_else(|| format!("its branch {} is gone", self.record.branch))?;
        Ok((Some(&now) != self.record.base.as_ref()).then_some(now))
    }

    /// `git diff --stat` from where the worktree started to `commit`, for a report; empty
    /// when git cannot tell.
    pub fn diff_stat(&self, commit: &str) -> String {
        let base = self.record.base.as_deref().unwrap_or("HEAD");
        let Ok(dirs) = self.dirs() else {
            return String::new();
        };
        in_repository(
            &dirs.common,
            &[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--stat",
                base,
                commit,
            ],
        )
        .unwrap_or_default()
    }

    /// Ends it with its work in `commit` (if any): keeps the branch, removes the directory
    /// unless `directory` says it is kept (a run that failed leaves its worktree to be looked
    /// at), and records `finished`.
    pub fn finish(
        self,
        commit: Option<String>,
        directory: Directory,
    ) -> Result<WorktreeRecord, WorktreeError> {
        if directory == Directory::Removed {
            self.record.remove_directory();
        }
        self.records
            .transition(&self.record.name, Transition::Finish { commit, directory })
    }

    /// Ends a worktree whose work changed nothing: directory and branch go, and the record
    /// says `finished` with no commit.
    pub fn discard(self) -> Result<WorktreeRecord, WorktreeError> {
        self.record.remove_directory();
        if let Some(base) = &self.record.base {
            self.record.delete_branch_at(base);
        }
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

    /// The git directories it was made with (see [`WorktreeDirs`]).
    fn dirs(&self) -> Result<WorktreeDirs, String> {
        self.record
            .git
            .clone()
            .ok_or_else(|| "its git directories were not recorded".to_string())
    }

    /// Checks that the worktree's `.git` file still points at the admin directory it was made
    /// with, and that directory's `HEAD` at the worktree's own branch: a command can rewrite
    /// both, and zero commits only where it made the worktree. What else is found is named.
    fn check_metadata(&self, dirs: &WorktreeDirs) -> Result<(), String> {
        let dot_git = self.record.path.join(".git");
        let expected = format!("gitdir: {}", dirs.admin.display());
        let found = read_small(&dot_git);
        if found.as_deref().map(str::trim) != Some(expected.as_str()) {
            return Err(format!(
                "the worktree's .git no longer points at {} (found {}): nothing was committed",
                dirs.admin.display(),
                describe(found.as_deref()),
            ));
        }
        let head = read_small(&dirs.admin.join("HEAD"));
        let own = format!("ref: {}", self.record.reference());
        if head.as_deref().map(str::trim) != Some(own.as_str()) {
            return Err(format!(
                "the worktree's HEAD is no longer {own} (found {}): nothing was committed",
                describe(head.as_deref()),
            ));
        }
        Ok(())
    }

    /// Carries the changes over (when asked), makes the worktree's branch at the result (by
    /// compare-and-set: only if it does not exist), adds the worktree on it without a
    /// checkout, fills it through a `View` (no smudge filter or hook of the repository
    /// runs), locks it, and marks the record `active` with the directories it was made with.
    /// What it made is noted in `made`, for the undo.
    fn add(&self, add: Add<'_>, made: &mut Made) -> Result<WorktreeRecord, String> {
        let record = &self.record;
        let step = |e: GitError| e.to_string();
        let view = View::new(add.common, add.scratch).map_err(step)?;
        let base = match add.carry {
            true => carry_over(&view, &record.repository, add.common, add.head)?,
            false => add.head.to_string(),
        };
        let reference = record.reference();
        update_ref(add.common, &reference, Some(&base), None).map_err(step)?;
        made.branch = Some(base.clone());
        let path = record.path.as_os_str().to_string_lossy();
        in_repository(
            add.common,
            // The branch's short name: a full ref name would be checked out detached.
            &[
                "worktree",
                "add",
                "--quiet",
                "--no-checkout",
                &path,
                &record.branch,
            ],
        )
        .map_err(step)?;
        let admin =
            PathBuf::from(git(&record.path, &["rev-parse", "--absolute-git-dir"]).map_err(step)?);
        let dirs = WorktreeDirs {
            common: add.common.to_path_buf(),
            admin,
        };
        made.dirs = Some(dirs.clone());
        populate(&view, &dirs, &record.path, &base).map_err(step)?;
        let reason = format!("zero run {}", add.run_id);
        in_repository(
            add.common,
            &["worktree", "lock", "--reason", &reason, &path],
        )
        .map_err(step)?;
        self.records
            .transition(
                &record.name,
                Transition::Activate {
                    base,
                    git: Some(dirs),
                },
            )
            .map_err(|e| e.to_string())
    }

    /// Undoes what was made (`made`: worktree, lock, and the branch only when this call made
    /// it, and only where it made it) and forgets the claim: the error to report.
    fn undo(self, reason: String, made: Made) -> CheckoutError {
        let record = &self.record;
        zero_git::remove_worktree(&record.path, made.dirs.as_ref(), &record.repository);
        if let Some(base) = &made.branch {
            record.delete_branch_at(base);
        }
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

/// What [`Checkout::add`] works from.
struct Add<'a> {
    common: &'a Path,
    scratch: &'a Path,
    head: &'a str,
    carry: bool,
    run_id: &'a RunId,
}

/// What [`Checkout::add`] made so far, so that the undo removes that and nothing else.
#[derive(Default)]
struct Made {
    /// The branch, made at this commit.
    branch: Option<String>,
    /// The worktree's git directories, once added.
    dirs: Option<WorktreeDirs>,
}

/// At most the first 4 KiB of a small metadata file, as text; `None` when it cannot be read.
fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(4096).read_to_string(&mut text).ok()?;
    Some(text)
}

/// What was found in a metadata file, for an error: its first line, or that it is missing.
fn describe(found: Option<&str>) -> String {
    match found {
        Some(text) => format!("`{}`", text.lines().next().unwrap_or("").trim()),
        None => "nothing readable".into(),
    }
}

/// The uncommitted changes of the repository at `repository` (tracked and untracked, minus
/// ignored files) as a commit on top of `head`, made through `view` with an index of its own,
/// so the user's own index is never touched and no filter of the repository runs; `head`
/// itself when nothing is uncommitted. git's message names a file that cannot be read.
fn carry_over(view: &View, repository: &Path, common: &Path, head: &str) -> Result<String, String> {
    let carried = (|| {
        let tree = tree_of(view, repository, head)?;
        if tree == in_repository(common, &["rev-parse", &format!("{head}^{{tree}}")])? {
            return Ok(head.to_string());
        }
        commit_tree(
            view,
            repository,
            &tree,
            head,
            "zero: the uncommitted changes the worktree started from",
        )
    })();
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
