//! `zero exec --worktree [NAME]`: the whole run in a new git worktree of the workspace's
//! repository. [`RunWorktree::prepare`] makes it before the settings fix the workspace (which
//! then is the worktree), and [`RunWorktree::finish`] commits what the run changed on its
//! branch, removes the directory and keeps the branch. How a worktree is made, committed and
//! removed, and what a failure leaves (nothing), is `runtime::Checkout`'s.

use std::path::{Path, PathBuf};

use crate::cli::ExecArgs;
use crate::output::event::WorktreeInfo;
use crate::runtime::{
    Checkout, Directory, NewCheckout, RunId, RuntimeConfig, RuntimeError, WorktreeName,
    WorktreeRecords,
};

use super::failure::Failure;
use super::flags;

/// A run's worktree while the run works in it.
pub(crate) struct RunWorktree {
    checkout: Checkout,
}

impl RunWorktree {
    /// The worktree `args` ask for (`--worktree`), made for `run_id` under `runtime`'s data
    /// directory, with `args.cwd` moved into it; `None` when they ask for none, or list
    /// something (a listing runs no job, so it makes no worktree).
    pub(crate) fn asked(
        args: &mut ExecArgs,
        runtime: &Result<RuntimeConfig, RuntimeError>,
        run_id: &RunId,
    ) -> Result<Option<Self>, Failure> {
        let listing = args.list_tools || args.list_specialists || args.list_skills;
        let Some(name) = args.worktree.take().filter(|_| !listing) else {
            return Ok(None);
        };
        let data_dir = match runtime {
            Ok(config) => config.data_dir.clone().ok_or_else(|| {
                Failure::usage("--worktree needs a data directory (set ZERO_HOME)".into())
            })?,
            Err(error) => return Err(Failure::usage(error.to_string())),
        };
        let workspace = flags::workspace(args.cwd.as_deref())?;
        let worktree = RunWorktree::prepare(name.as_deref(), &workspace, &data_dir, run_id)?;
        args.cwd = Some(worktree.workspace_for(&workspace));
        // What a commit in the worktree writes of the repository's git directory, so the
        // model's own `git commit` works where the sandbox confines writes.
        match worktree.checkout.writable_git_paths() {
            Ok(paths) => args.add_dir.extend(paths),
            Err(error) => {
                let _ = worktree.checkout.discard();
                return Err(Failure::internal(format!("--worktree: {error}")));
            }
        }
        Ok(Some(worktree))
    }

    /// Makes the worktree `name` (a fresh one when `None`) of the repository holding
    /// `workspace`, under `data_dir`, for `run_id`. Every failure is a usage error (exit 2)
    /// that leaves nothing behind.
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
        let records = WorktreeRecords::new(data_dir);
        let lease = records
            .hold(run_id)
            .map_err(|e| Failure::internal(e.to_string()))?;
        let new = NewCheckout {
            name,
            workspace,
            run_id,
            carry_uncommitted: false,
        };
        Checkout::make(records, lease, new)
            .map(|checkout| RunWorktree { checkout })
            .map_err(|e| Failure::usage(format!("--worktree: {e}")))
    }

    /// Where in the worktree the run works: the same place `workspace` has in the
    /// repository (its top level, or a directory beneath it).
    pub(crate) fn workspace_for(&self, workspace: &Path) -> PathBuf {
        self.checkout.workspace_for(workspace)
    }

    /// What `run_start` says of it.
    pub(crate) fn info(&self) -> WorktreeInfo {
        let record = self.checkout.record();
        WorktreeInfo {
            name: record.name.to_string(),
            branch: record.branch.clone(),
        }
    }

    /// Ends the run's worktree: commits what changed (if anything) on its branch, removes
    /// the directory — unless `keep` says why it stays: a run whose work did not pass its
    /// checks or was blocked leaves it to be looked at — and records `finished`. Returns the
    /// commit made. When the changes cannot be committed, the directory is kept (with the
    /// work) and the record says `failed`: an internal error, exit 1.
    pub(crate) fn finish(
        self,
        run_id: &RunId,
        keep: Option<&str>,
    ) -> Result<Option<String>, Failure> {
        let name = self.checkout.record().name.clone();
        let message = format!("zero run {run_id} (worktree {name})");
        let directory = match keep {
            Some(_) => Directory::Kept,
            None => Directory::Removed,
        };
        match self.checkout.commit(&message) {
            Ok(commit) => self
                .checkout
                .finish(commit.clone(), directory)
                .map(|_| commit)
                .map_err(|e| Failure::internal(e.to_string())),
            Err(reason) => Err(Failure::internal(format!(
                "worktree {name}: {}",
                self.checkout.keep(&reason)
            ))),
        }
    }

    /// What the run is told when its worktree is kept because `why`.
    pub(crate) fn kept_warning(&self, why: &str) -> String {
        let record = self.checkout.record();
        format!(
            "the worktree {} is kept at {} ({why}); what changed is committed on {} too;              remove it with `zero worktrees rm {}`",
            record.name,
            record.path.display(),
            record.branch,
            record.name
        )
    }
}
