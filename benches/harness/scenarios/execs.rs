//! What the exec check costs a command that executes many programs: one `bash` call of a
//! `cargo build`-like tree of 2,000 execs (`for i in $(seq 2000); do /bin/true; done`), its
//! tool turn with no deny rule against with `--deny 'bash(git push *)'`, where each of the
//! 2,000 execs stops until the guardian has read its argv and matched it. The cases are
//! interleaved run by run, so both see the same machine.

use anyhow::{Result, ensure};
use serde_json::json;

use super::Bench;
use crate::support::fake_model::Reply;
use crate::table::{Row, Unit};

/// How many programs the command executes.
const EXECS: usize = 2000;

/// What the command prints once every program has run.
const DONE: &str = "execs-done";

/// The model's answer after the command.
const ANSWER: &str = "Ran them.";

impl Bench<'_> {
    /// The exec-check rows (see the module documentation).
    pub(super) fn exec_check(&self, rows: &mut Vec<Row>) -> Result<()> {
        let cases: [(&str, &[&str]); 2] = [
            ("no deny rule", &[]),
            ("a deny rule on commands", &["--deny=bash(git push *)"]),
        ];
        let mut turns: Vec<Row> = cases
            .iter()
            .map(|(label, _)| {
                Row::new(
                    format!("{EXECS} execs in one bash call, {label}: the tool turn"),
                    Unit::Ms,
                    "≤ 0.1 ms an exec more",
                )
            })
            .collect();
        let command = format!("for i in $(seq {EXECS}); do /bin/true; done; echo {DONE}");
        for _ in 0..self.options.runs {
            for ((_, flags), row) in cases.iter().zip(turns.iter_mut()) {
                let replies = vec![
                    Reply::tool_call("bash", json!({ "command": command })),
                    Reply::text(ANSWER),
                ];
                let workspace = self.temp_dir()?;
                let job = self.job_with(replies, workspace.path(), flags)?;
                ensure!(
                    job.body(1).contains(DONE) && job.body(1).contains("exit code: 0"),
                    "the {EXECS} execs did not all run under {flags:?}"
                );
                row.time(job.turn(0));
            }
        }
        rows.extend(turns);
        Ok(())
    }
}
