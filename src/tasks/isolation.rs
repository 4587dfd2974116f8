//! `isolation: worktree`: a specialist that works in a git worktree of its own, on a new
//! branch `zero/<task-id>` from the parent's `HEAD` (with the parent's uncommitted changes
//! carried over first, when asked), so parallel specialists never see each other's
//! half-written files. When it ends — whichever way — what it changed is committed on its
//! branch; a worktree with no changes is removed at once (branch and all), one with changes is
//! kept until the run ends, for the parent to merge, and then its directory is removed and its
//! branch kept. How a worktree is made, committed and removed is `runtime::Checkout`'s; this
//! module holds the run's isolated worktrees, settles each when its task ends, tells the
//! model what came of it, and ends the kept ones when the run closes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::WAIT_SLICE;
use crate::runtime::{
    Checkout, Directory, NewCheckout, RunId, Runtime, TaskId, TaskStatus, WorktreeName,
    WorktreeRecords,
};
use crate::sync::lock;

/// The most worktrees one run holds at once (like background tasks): an isolated specialist
/// beyond it is refused until one ends without changes, or the run ends.
pub(crate) const MAX_WORKTREES: usize = 8;

/// Where a specialist works: in its parent's workspace, or in a worktree of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Isolation {
    /// In the parent's workspace, seeing (and making) every change as it happens.
    #[default]
    None,
    /// In a fresh git worktree of the parent's repository, on a branch of its own.
    Worktree,
}

/// The worktree an isolated specialist is about to start in.
pub(crate) struct Prepared {
    /// The specialist's workspace: the parent's, at the same place in the worktree.
    pub(crate) workspace: PathBuf,
    /// What its commands may write beyond its workspace: the git directory entries its
    /// commits need (see `Checkout::writable_git_paths`).
    pub(crate) git_paths: Vec<PathBuf>,
    checkout: Checkout,
}

/// What came of an isolated specialist's worktree once it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Settled {
    /// It changed something: committed on its branch, the directory kept until the run ends.
    Changed {
        branch: String,
        base: String,
        commit: String,
        stat: String,
        path: PathBuf,
    },
    /// It changed nothing: worktree and branch are gone.
    Unchanged { branch: String },
    /// Its changes could not be committed; the directory stays (the reason names it).
    Failed { reason: String },
}

/// One isolated specialist's worktree, from its start to the run's end.
struct Held {
    task: TaskId,
    /// Where it is, for the model while the specialist works.
    branch: String,
    path: PathBuf,
    /// Set once the specialist ended and its work was settled.
    settled: watch::Receiver<Option<Settled>>,
    /// Settles it when the specialist ends; yields the worktree when it is kept for the run.
    watcher: Option<JoinHandle<Option<(Checkout, String)>>>,
}

/// The run's isolated worktrees (see the module documentation).
pub struct Isolated {
    runtime: Arc<Runtime>,
    run_id: RunId,
    held: Mutex<Vec<Held>>,
}

impl Isolated {
    /// The isolated worktrees of the run `run_id`, over its runtime. Makes nothing yet.
    pub(crate) fn new(runtime: Arc<Runtime>, run_id: RunId) -> Self {
        Isolated {
            runtime,
            run_id,
            held: Mutex::new(Vec::new()),
        }
    }

    /// Makes the worktree the specialist `task` will work in, from the repository holding
    /// `workspace` (its uncommitted changes carried over when `carry` says so). Refused
    /// beyond [`MAX_WORKTREES`] held at once. The error says what is wrong, for the model.
    pub(crate) async fn prepare(
        &self,
        task: &TaskId,
        workspace: &Path,
        carry: bool,
    ) -> Result<Prepared, String> {
        self.check_room()?;
        let data_dir = self
            .runtime
            .data_dir()
            .ok_or("isolation: worktree needs a data directory (set ZERO_HOME)")?
            .to_path_buf();
        let name = WorktreeName::parse(task.as_str()).map_err(|e| e.to_string())?;
        let (run_id, workspace) = (self.run_id.clone(), workspace.to_path_buf());
        tokio::task::spawn_blocking(move || {
            let records = WorktreeRecords::new(&data_dir);
            let lease = records.hold(&run_id).map_err(|e| e.to_string())?;
            let new = NewCheckout {
                name,
                workspace: &workspace,
                run_id: &run_id,
                carry_uncommitted: carry,
            };
            let checkout = Checkout::make(records, lease, new).map_err(|e| e.to_string())?;
            let git_paths = match checkout.writable_git_paths() {
                Ok(paths) => paths,
                Err(error) => {
                    let _ = checkout.discard();
                    return Err(error.to_string());
                }
            };
            Ok(Prepared {
                workspace: checkout.workspace_for(&workspace),
                git_paths,
                checkout,
            })
        })
        .await
        .map_err(|e| format!("the worktree could not be made: {e}"))?
        .map_err(|e| format!("isolation: worktree: {e}"))
    }

    /// The specialist could not be started in `prepared`: the worktree goes, branch and all.
    pub(crate) async fn abandon(&self, prepared: Prepared) {
        let _ = tokio::task::spawn_blocking(move || prepared.checkout.discard()).await;
    }

    /// The specialist `task` started in `prepared`, for the task `about` (a few words naming
    /// it in the commit's message): settles the worktree when the task ends.
    pub(crate) fn watch(&self, task: &TaskId, prepared: Prepared, about: String) {
        let record = prepared.checkout.record();
        let (settled, receiver) = watch::channel(None);
        let held = Held {
            task: task.clone(),
            branch: record.branch.clone(),
            path: record.path.clone(),
            settled: receiver,
            watcher: None,
        };
        let (runtime, id) = (Arc::clone(&self.runtime), task.to_string());
        let watcher = tokio::spawn(async move {
            loop {
                match runtime.wait(&id, WAIT_SLICE).await {
                    Ok(record) if record.status == TaskStatus::Running => continue,
                    _ => break,
                }
            }
            let message = format!("zero: {about} (task {id})");
            let (outcome, kept) =
                tokio::task::spawn_blocking(move || settle(prepared.checkout, &message))
                    .await
                    .unwrap_or_else(|e| {
                        let reason = format!("the worktree could not be settled: {e}");
                        (Settled::Failed { reason }, None)
                    });
            settled.send_replace(Some(outcome));
            kept
        });
        lock(&self.held).push(Held {
            watcher: Some(watcher),
            ..held
        });
    }

    /// What the model is told of the task's worktree: where it works while it runs, what
    /// came of it once it ended (waiting for that to be settled, which follows the end at
    /// once). `None` for a task that works in the parent's workspace.
    pub(crate) async fn report(&self, task: &TaskId, ended: bool) -> Option<String> {
        let (branch, path, mut settled) = {
            let held = lock(&self.held);
            let held = held.iter().find(|held| &held.task == task)?;
            (held.branch.clone(), held.path.clone(), held.settled.clone())
        };
        if !ended {
            return Some(format!(
                "worktree: works in {} on branch {branch}\n",
                path.display()
            ));
        }
        Some(match settled.wait_for(Option::is_some).await {
            Ok(settled) => describe(settled.as_ref()?),
            Err(_) => format!(
                "worktree: what came of it is unknown; see `zero worktrees show {}`\n",
                task
            ),
        })
    }

    /// Ends the run's isolated worktrees, after the runtime's close stopped every specialist:
    /// waits until each is settled, then removes the directories of the kept ones (their
    /// branches stay) and records them `finished`. Returns what went wrong, as warnings.
    pub(crate) async fn close(&self) -> Vec<String> {
        let watchers: Vec<_> = lock(&self.held)
            .iter_mut()
            .filter_map(|held| held.watcher.take())
            .collect();
        let mut kept = Vec::new();
        for watcher in watchers {
            if let Ok(Some(worktree)) = watcher.await {
                kept.push(worktree);
            }
        }
        tokio::task::spawn_blocking(move || {
            kept.into_iter()
                .filter_map(|(checkout, commit)| {
                    checkout.finish(Some(commit), Directory::Removed).err()
                })
                .map(|error| error.to_string())
                .collect()
        })
        .await
        .unwrap_or_else(|e| vec![format!("the worktrees could not be ended: {e}")])
    }

    /// Refuses a new worktree when the run holds [`MAX_WORKTREES`] already (a settled one
    /// without changes holds none).
    fn check_room(&self) -> Result<(), String> {
        let held = lock(&self.held)
            .iter()
            .filter(|held| !matches!(*held.settled.borrow(), Some(Settled::Unchanged { .. })))
            .count();
        if held >= MAX_WORKTREES {
            return Err(format!(
                "isolation: worktree: this run holds {MAX_WORKTREES} worktrees already, the \
                 most it may; their directories are removed when the run ends. Run this \
                 specialist without isolation, or after merging the others' work"
            ));
        }
        Ok(())
    }
}

/// Settles an ended specialist's worktree: commits what it changed as `message`, then removes
/// a worktree that changed nothing, keeps one that did (returned with its commit, for the
/// run's close), and keeps one whose changes could not be committed, recorded `failed`.
fn settle(checkout: Checkout, message: &str) -> (Settled, Option<(Checkout, String)>) {
    match checkout.commit(message) {
        Ok(Some(commit)) => {
            let record = checkout.record();
            let settled = Settled::Changed {
                branch: record.branch.clone(),
                base: record.base.clone().unwrap_or_default(),
                stat: checkout.diff_stat(&commit),
                path: record.path.clone(),
                commit: commit.clone(),
            };
            (settled, Some((checkout, commit)))
        }
        Ok(None) => {
            let branch = checkout.record().branch.clone();
            let _ = checkout.discard();
            (Settled::Unchanged { branch }, None)
        }
        Err(reason) => (
            Settled::Failed {
                reason: checkout.keep(&reason),
            },
            None,
        ),
    }
}

/// What the model is told of a settled worktree.
fn describe(settled: &Settled) -> String {
    match settled {
        Settled::Changed {
            branch,
            base,
            commit,
            stat,
            path,
        } => format!(
            "worktree: the changes are committed on branch {branch} as {commit} (from {base})\n\
             {stat}\n\
             Take them with `git cherry-pick {base}..{branch}` (or `git merge {branch}` when \
             nothing uncommitted was carried over); `git diff {base} {branch}` shows them. The \
             worktree {} stays until this run ends; then its directory is removed and the \
             branch kept.\n",
            path.display()
        ),
        Settled::Unchanged { branch } => format!(
            "worktree: nothing was changed, so the worktree and its branch {branch} are \
             removed\n"
        ),
        Settled::Failed { reason } => format!("worktree: {reason}\n"),
    }
}
