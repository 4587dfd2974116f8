//! The 5-turn job replayed from a cassette (`zero exec --replay`, docs/REPLAY.md), beside the
//! same job against the fake server and the same job recording the cassette: launch → exit.
//! The replay sends nothing: its model is the cassette, its tools run for real. Target: no
//! slower than against the fake server.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, ensure};

use super::{ANSWER_TURNS, Bench, FREE_TEXT_ANSWER, tail, tool_turns};
use crate::process;
use crate::support::fake_model::Reply;
use crate::table::{Row, Unit};

impl Bench<'_> {
    /// The replay rows (see the module documentation).
    pub(super) fn replay(&self, rows: &mut Vec<Row>) -> Result<()> {
        let name = |what: &str| format!("{ANSWER_TURNS}-turn job, {what}: launch → exit");
        let mut served = Row::new(name("against the fake server"), Unit::Ms, "");
        let mut recorded = Row::new(name("recorded to a cassette"), Unit::Ms, "");
        let mut replayed = Row::new(
            name("replayed from a cassette"),
            Unit::Ms,
            "≤ against the fake server",
        );
        let replies = || {
            let mut replies = tool_turns();
            replies.push(Reply::text(FREE_TEXT_ANSWER));
            replies
        };
        for _ in 0..self.options.runs {
            let workspace = self.temp_dir()?;
            served.time(self.job(replies(), workspace.path())?.finished.wall);
            let scratch = self.temp_dir()?;
            let cassette = scratch.path().join("job.cassette");
            let cassette_flag = cassette.display().to_string();
            let workspace = self.temp_dir()?;
            let job = self.job_with(replies(), workspace.path(), &["--record", &cassette_flag])?;
            recorded.time(job.finished.wall);
            fs::remove_file(workspace.path().join("log.txt"))?;
            replayed.time(self.replayed(&cassette, workspace.path())?);
        }
        rows.extend([served, recorded, replayed]);
        Ok(())
    }

    /// Replays `cassette` in `workspace` with no provider configured, checks it did the job's
    /// work, and returns its wall time.
    fn replayed(&self, cassette: &Path, workspace: &Path) -> Result<std::time::Duration> {
        let scratch = self.temp_dir()?;
        let max_turns = (ANSWER_TURNS + 1).to_string();
        let finished = process::start(
            self.zero(scratch.path())?
                .args(["exec", "--auto", "medium", "-o", "stream-json", "--replay"])
                .arg(cassette)
                .args(["--max-turns", &max_turns, "go"])
                .current_dir(workspace),
        )?
        .wait()?;
        ensure!(
            finished.code == 0,
            "the replay exited {}; stderr:\n{}",
            finished.code,
            tail(&scratch.path().join("stderr")),
        );
        let lines = fs::read_to_string(workspace.join("log.txt"))
            .context("the replay wrote no log.txt")?
            .lines()
            .count();
        ensure!(
            lines == ANSWER_TURNS,
            "log.txt holds {lines} lines, not {ANSWER_TURNS}"
        );
        Ok(finished.wall)
    }
}
