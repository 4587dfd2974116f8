//! Isolated work in a repository of [`FILES`] files: what making a worktree costs a
//! `--worktree` run (launch → first request, against a plain run in the same checkout) and an
//! isolated specialist (`Task` call → the child's first request), and what carrying the
//! uncommitted changes over (`include_uncommitted`) adds to that.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{Result, ensure};
use serde_json::json;

use super::{Bench, CHILD_MARK};
use crate::support::fake_model::{Reply, Route};
use crate::table::{Row, Unit};

/// The repository's size in files (in 100 directories).
const FILES: usize = 10_000;
/// The uncommitted changes `include_uncommitted` carries: edited tracked files, and one
/// untracked file of this size.
const EDITED: usize = 100;
const UNTRACKED_BYTES: usize = 1 << 20;

impl Bench<'_> {
    /// The worktree rows (see the module documentation).
    pub(super) fn worktrees(&self, rows: &mut Vec<Row>) -> Result<()> {
        let repo = self.temp_dir()?;
        make_repository(repo.path())?;
        let name = |what: &str| format!("{FILES}-file repo: {what}");
        let mut plain = Row::new(name("plain run, launch → first request"), Unit::Ms, "");
        let mut whole = Row::new(name("--worktree run, launch → first request"), Unit::Ms, "");
        let mut isolated = Row::new(
            name("isolated specialist, Task call → child's first request"),
            Unit::Ms,
            "",
        );
        let mut carried = Row::new(name("… with include_uncommitted"), Unit::Ms, "");
        carried.note(format!(
            "{EDITED} edited files and {} KiB untracked carried over",
            UNTRACKED_BYTES >> 10
        ));
        for _ in 0..self.options.runs {
            let answer = || vec![Reply::text("nothing to do")];
            let job = self.job(answer(), repo.path())?;
            plain.time(job.requests[0].at - job.launched);
            let job = self.job_with(answer(), repo.path(), &["--worktree"])?;
            whole.time(job.requests[0].at - job.launched);
            isolated.time(self.isolated_start(repo.path(), false)?);
            carried.time(self.isolated_start(repo.path(), true)?);
        }
        rows.extend([plain, whole, isolated, carried]);
        Ok(())
    }

    /// One job in `repo` whose model launches an isolated specialist (its uncommitted changes
    /// carried over when `carry` says so): the time from the request that got the `Task` call
    /// to the child's first request.
    fn isolated_start(&self, repo: &Path, carry: bool) -> Result<std::time::Duration> {
        let task = json!({"name": "explorer", "prompt": "Say done.", "isolation": "worktree",
                          "include_uncommitted": carry});
        let script = self
            .script(vec![
                Reply::tool_call("Task", task),
                Reply::text("the explorer finished"),
            ])
            .route(Route::body_contains(CHILD_MARK).reply(self.reply(Reply::text("done"))));
        let job = self.specialist_job(script, repo)?;
        let told = &job.requests.last().expect("requests").raw_body;
        ensure!(
            told.contains("nothing was changed"),
            "the specialist's worktree was not settled: {}",
            &told[told.len().saturating_sub(400)..]
        );
        Ok(job.child_start)
    }
}

/// A repository at `dir` with [`FILES`] small committed files, then [`EDITED`] of them edited
/// and one untracked file of [`UNTRACKED_BYTES`] left uncommitted.
fn make_repository(dir: &Path) -> Result<()> {
    for n in 0..FILES {
        let sub = dir.join(format!("d{:02}", n % 100));
        fs::create_dir_all(&sub)?;
        fs::write(sub.join(format!("f{n:05}.txt")), format!("file {n}\n"))?;
    }
    git(dir, &["init", "--quiet"])?;
    git(dir, &["add", "--all"])?;
    git(dir, &["commit", "--quiet", "-m", "files"])?;
    for n in 0..EDITED {
        let path = dir.join(format!("d{:02}/f{n:05}.txt", n % 100));
        fs::write(path, format!("file {n}, edited\n"))?;
    }
    fs::write(dir.join("untracked.bin"), vec![b'x'; UNTRACKED_BYTES])?;
    Ok(())
}

/// Runs `git args…` in `dir` as a committer named bench.
pub(super) fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new("git")
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .current_dir(dir)
        .status()?;
    ensure!(status.success(), "git {args:?} failed in {}", dir.display());
    Ok(())
}
