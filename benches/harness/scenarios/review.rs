//! `zero review` of a 2,000-line diff (a 1,000-line file rewritten line by line): what the
//! review sends the model in its first request (the instructions, the diff and the numbered
//! new file), and how long it takes from launch to that request (git, reading the diff and the
//! file, building the prompt, on top of a run's start-up).

use std::fs;
use std::path::Path;

use anyhow::Result;

use super::Bench;
use super::worktrees::git;
use crate::table::Row;

/// The lines of the rewritten file: the diff removes and adds each one.
const LINES: usize = 1_000;

impl Bench<'_> {
    /// The review rows (see the module documentation).
    pub(super) fn review(&self, rows: &mut Vec<Row>) -> Result<()> {
        let repo = self.temp_dir()?;
        make_repository(repo.path())?;
        let answer = r#"{"summary": "Looks fine.", "findings": []}"#;
        let (first, mut sent, sent_bytes) = self.first_request(
            &format!("zero review, {}-line diff", 2 * LINES),
            &["review", "--base", "main", "--format", "json"],
            repo.path(),
            answer,
            |_| true,
        )?;
        sent.note(format!(
            "{sent_bytes} bytes (the prompt, the diff and the numbered file)"
        ));
        rows.extend([first, sent]);
        Ok(())
    }
}

/// A repository at `dir` whose `main` holds a [`LINES`]-line file, on a branch that rewrote
/// every line of it.
fn make_repository(dir: &Path) -> Result<()> {
    let file = |suffix: &str| -> String {
        (0..LINES)
            .map(|n| format!("let value_{n} = compute({n}){suffix};\n"))
            .collect()
    };
    fs::write(dir.join("big.rs"), file(""))?;
    git(dir, &["init", "--quiet", "--initial-branch=main"])?;
    git(dir, &["add", "--all"])?;
    git(dir, &["commit", "--quiet", "-m", "big"])?;
    git(dir, &["checkout", "--quiet", "-b", "work"])?;
    fs::write(dir.join("big.rs"), file(" + 1"))?;
    git(dir, &["commit", "--quiet", "-am", "rewrite"])?;
    Ok(())
}
