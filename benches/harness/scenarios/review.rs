//! `zero review` of a 2,000-line diff (a 1,000-line file rewritten line by line): what the
//! review sends the model in its first request (the instructions, the diff and the numbered
//! new file), and how long it takes from launch to that request (git, reading the diff and the
//! file, building the prompt, on top of a run's start-up).

use std::fs;
use std::path::Path;

use anyhow::{Result, ensure};

use super::worktrees::git;
use super::{Bench, tail};
use crate::process;
use crate::support::fake_model::{FakeModel, Reply};
use crate::table::{Row, Unit};

/// The lines of the rewritten file: the diff removes and adds each one.
const LINES: usize = 1_000;

impl Bench<'_> {
    /// The review rows (see the module documentation).
    pub(super) fn review(&self, rows: &mut Vec<Row>) -> Result<()> {
        let repo = self.temp_dir()?;
        make_repository(repo.path())?;
        let name = format!("zero review, {}-line diff", 2 * LINES);
        let mut first = Row::new(format!("{name}: launch → first request"), Unit::Ms, "");
        let mut sent = Row::new(format!("{name}: first request's body"), Unit::MiB, "");
        let mut sent_bytes = 0;
        for _ in 0..self.options.runs {
            let answer = r#"{"summary": "Looks fine.", "findings": []}"#;
            let server = FakeModel::start(self.script(vec![Reply::text(answer)]));
            let scratch = self.temp_dir()?;
            let mut command = self.zero(scratch.path())?;
            command
                .args(["review", "--base", "main", "--format", "json"])
                .current_dir(repo.path())
                .env("ZERO_PROVIDER", "openai")
                .env("ZERO_BASE_URL", server.base_url_openai())
                .env("ZERO_MODEL", "fake-model");
            let running = process::start(&mut command)?;
            let launched = running.launched;
            let finished = running.wait()?;
            let requests = server.requests();
            ensure!(
                finished.code == 0 && requests.len() == 1,
                "the review exited {} after {} requests; stderr:\n{}",
                finished.code,
                requests.len(),
                tail(&scratch.path().join("stderr")),
            );
            first.time(requests[0].at - launched);
            let bytes = requests[0].raw_body.len();
            sent.kib(bytes as u64 / 1024);
            sent_bytes = bytes;
        }
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
