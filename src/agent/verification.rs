//! `--verify`: an answer that would end the run is put to the caller's checks (after the `stop`
//! hooks). They run in order until one does not pass; that one goes back to the model with its
//! exit code and the end of its output while retries are left, and ends the run
//! `verify_failed` once none are. Each check's tally over the run is `run_end.verify`; a
//! `verify_start` and a `verify_end` event frame every run of a check.

use crate::output::{EventKind, Output};
use crate::runtime::Runtime;
use crate::verify::{self, CheckPlace, CheckReport, CheckRun, CheckStatus, Checks};

/// What came of putting an answer to the checks.
pub(super) enum Verdict {
    /// Every check passed (or there are none).
    Passed,
    /// A check did not pass: this goes back to the model, and the run goes on.
    Retry(String),
    /// A check did not pass and no retry is left: why the run fails.
    GiveUp(String),
    /// The run was stopped while a check ran.
    Cancelled,
}

/// The checks' tally over the run: the answers put to them and each check's report.
pub(super) struct Verification {
    /// The answers put to the checks so far.
    attempt: u32,
    /// The failures sent back to the model so far.
    retried: u32,
    /// One report per check, in order.
    reports: Vec<CheckReport>,
}

impl Verification {
    /// The tally of `checks` before any answer.
    pub(super) fn new(checks: &Checks) -> Self {
        Verification {
            attempt: 0,
            retried: 0,
            reports: checks
                .commands()
                .iter()
                .map(|command| CheckReport::new(command))
                .collect(),
        }
    }

    /// Puts an answer to `checks`, run at `place`, each run reported on `output`; the git
    /// metadata a check changed is put back after it, as after a tool call.
    pub(super) async fn judge(
        &mut self,
        checks: &Checks,
        place: &CheckPlace<'_>,
        output: &Output,
    ) -> Verdict {
        if checks.is_empty() {
            return Verdict::Passed;
        }
        self.attempt += 1;
        self.reports.iter_mut().for_each(CheckReport::await_again);
        for (index, command) in checks.commands().iter().enumerate() {
            let run = self.run_one(index, command, checks, place, output).await;
            restore_git(place.runtime, output).await;
            if place.cancel.is_cancelled() || run.status() == CheckStatus::Cancelled {
                return Verdict::Cancelled;
            }
            if run.status() != CheckStatus::Passed {
                return self.not_passed(command, &run, checks.retries());
            }
        }
        Verdict::Passed
    }

    /// Runs the check `command` (the `index`th), framed by its events, and counts it in.
    async fn run_one(
        &mut self,
        index: usize,
        command: &str,
        checks: &Checks,
        place: &CheckPlace<'_>,
        output: &Output,
    ) -> CheckRun {
        let attempt = self.attempt;
        output.emit(EventKind::VerifyStart {
            command: command.to_string(),
            attempt,
        });
        let run = verify::run(place, command, checks.timeout()).await;
        self.reports[index].record(&run);
        output.emit(EventKind::VerifyEnd {
            command: command.to_string(),
            attempt,
            status: run.status(),
            exit_code: run.exit_code(),
            duration_ms: run.duration_ms(),
            output: self.reports[index].output.clone(),
        });
        run
    }

    /// The check `command` did not pass (`run`): it goes back to the model while fewer than
    /// `retries` have, else the run gives up.
    fn not_passed(&mut self, command: &str, run: &CheckRun, retries: u32) -> Verdict {
        if self.retried < retries {
            self.retried += 1;
            return Verdict::Retry(verify::feedback(command, run, self.retried, retries));
        }
        Verdict::GiveUp(verify::failure(command, run, retries))
    }

    /// Each check's report, in order.
    pub(super) fn reports(self) -> Vec<CheckReport> {
        self.reports
    }
}

/// Puts back the git metadata a check changed, reported as a `git_metadata_restored` event
/// found at no call.
async fn restore_git(runtime: &Runtime, output: &Output) {
    let restoration = runtime.restore_git().await;
    if let Some(event) = EventKind::git_restored(None, &restoration) {
        output.emit(event);
    }
}
