//! How a job ends: the conversation's ending turned into the `final` answer (and
//! `--output-last-message`) and an exit code, and the one `run_end` every job emits with what
//! the run tree spent.

use std::path::Path;

use crate::agent::{Answer, Ending};
use crate::exit::ExitCode;
use crate::output::{
    EventKind, Output, RunStatus, UsageTotals, WindowInfo, stderr_line_if_writable,
};
use crate::provider::ContextWindow;
use crate::redact::Secrets;
use crate::usage::Spent;
use crate::verify::CheckReport;

use super::failure::Failure;

/// Turns and what the run tree spent, for `run_end`.
#[derive(Debug, Default, Clone)]
pub(super) struct Accounting {
    /// The model requests the run made.
    pub(super) turns: u32,
    /// What the run and its specialists spent.
    pub(super) spent: Spent,
    /// The model's context window, when it was known by the end.
    pub(super) window: Option<ContextWindow>,
    /// What every run of the session spent, this one included.
    pub(super) session_usage: Option<UsageTotals>,
    /// With `--worktree`: the commit the run's changes were recorded in.
    pub(super) worktree_commit: Option<String>,
    /// With `--verify`: each check over the run.
    pub(super) verify: Vec<CheckReport>,
}

/// Emits `run_end`. A stdout that broke along the way makes the run an internal error.
pub(super) fn finish(output: &Output, exit: ExitCode, accounting: Accounting) -> ExitCode {
    let exit = if output.broken().is_some() {
        ExitCode::Internal
    } else {
        exit
    };
    output.emit(EventKind::RunEnd {
        status: RunStatus::from(exit),
        exit_code: exit.code(),
        turns: accounting.turns,
        usage: crate::agent::totals(&accounting.spent.total()),
        child_usage: crate::agent::totals(&accounting.spent.children),
        cost_usd: accounting.spent.cost,
        context_window: accounting.window.map(WindowInfo::from),
        session_usage: accounting.session_usage,
        worktree_commit: accounting.worktree_commit,
        permission_denials: output.permission_denials(),
        model: accounting.spent.model,
        verify: accounting.verify,
    });
    let dropped = output.drain();
    if dropped > 0 {
        stderr_line_if_writable(&format!(
            "zero: warning: stdout is not being read; the last {dropped} events were dropped so \
             the run could end"
        ));
    }
    match output.broken() {
        Some(kind) => {
            stderr_line_if_writable(&format!("zero: error: cannot write to stdout: {kind}"));
            ExitCode::Internal
        }
        None => exit,
    }
}

/// Reports how the conversation ended and picks the exit code.
pub(super) fn conclude(
    ending: Ending,
    output: &Output,
    last_message: Option<&Path>,
    schema: bool,
) -> Result<ExitCode, Failure> {
    match ending {
        Ending::Answered(answer) => {
            deliver(answer, output, last_message, schema)?;
            Ok(ExitCode::Success)
        }
        Ending::OutOfTurns(text) => {
            // A summary of what is left, never an answer in the schema's shape.
            if !schema {
                deliver(
                    Answer {
                        text,
                        structured: None,
                    },
                    output,
                    last_message,
                    schema,
                )?;
            }
            Err(Failure::out_of_turns())
        }
        // The answer the checks did not pass on is still the model's account of its work.
        Ending::VerifyFailed { answer, message } => {
            deliver(answer, output, last_message, schema)?;
            Err(Failure::verify_failed(message))
        }
        Ending::Stuck(stuck) => Err(Failure::stuck(stuck)),
        Ending::OverBudget(exceeded, answer) => {
            if let Some(answer) = answer {
                deliver(answer, output, last_message, schema)?;
            }
            Err(Failure::over_budget(exceeded))
        }
        Ending::SchemaUnsatisfied {
            violations,
            retries,
        } => Err(Failure::schema_unsatisfied(violations, retries)),
        Ending::Failed(error) => Err(Failure::provider(&error)),
        Ending::Cancelled => Err(Failure::cancelled()),
    }
}

/// Emits the `final` event of `answer` and writes it to `--output-last-message`: its JSON
/// value (compact, one line) when the run has a schema, else its text. With a schema, an
/// answer that does not satisfy it is not delivered at all: nothing downstream may mistake
/// it for the object.
fn deliver(
    answer: Answer,
    output: &Output,
    last_message: Option<&Path>,
    schema: bool,
) -> Result<(), Failure> {
    match (&answer.structured, schema) {
        (Some(value), _) => {
            write_last_message(last_message, &format!("{value}\n"), output.secrets())?
        }
        (None, false) => write_last_message(last_message, &answer.text, output.secrets())?,
        (None, true) => return Ok(()),
    }
    output.emit(EventKind::Final {
        text: answer.text,
        structured: answer.structured,
    });
    Ok(())
}

/// Writes the answer to `--output-last-message`, redacted like everything else zero writes.
fn write_last_message(path: Option<&Path>, text: &str, secrets: &Secrets) -> Result<(), Failure> {
    let Some(path) = path else {
        return Ok(());
    };
    crate::fsutil::write_atomic(path, secrets.apply(text).as_bytes()).map_err(|e| {
        Failure::internal(format!(
            "cannot write --output-last-message {}: {e}",
            path.display()
        ))
    })
}
