//! `--verify CMD`: the caller's checks, which prove that a run did its work. When the model
//! gives an answer that would end the run, `agent` puts it to them (after the `stop` hooks):
//! each check runs in the workspace, in order, until one does not pass; that one goes back to
//! the model with its exit code and the end of its output, up to `--verify-retries` times, and a
//! run whose checks never all passed on its final answer ends incomplete (`verify_failed`,
//! exit 4).
//!
//! A check is the caller's command, not the model's: it runs through the runtime's one door
//! ([`Runtime::run_check`]) in a guardian started for it alone (never a warm one that served a
//! model's command), sandboxed as the run's commands are but never below `--auto medium`'s
//! write confinement — at `low`, where commands write nothing, a check may still write the
//! workspace and the `--add-dir` roots, as a build or a test run must — contained in its own
//! group (stopped with everything it started at its timeout, with the run, and by the lifeline
//! when zero is SIGKILLed), bounded by its timeout and the run's deadline, its output captured
//! within bounds.
//!
//! This module holds the checks and their bounds, one run of a check, and the words the
//! events and the model get; the loop's bookkeeping (attempts, retries) is `agent`'s.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::runtime::{CommandOutput, Origin, Runtime, ShellCommand, Termination};

/// The most checks one run (or one `Task` call, with its specialist's own) may have: a few
/// commands prove a change; a long list is a script, which is one check.
pub const MAX_CHECKS: usize = 8;

/// The longest command line one check may be, in bytes.
pub const MAX_CHECK_BYTES: usize = 2048;

/// How long one check may run unless `--verify-timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How many failed checks go back to the model unless `--verify-retries` says otherwise.
pub const DEFAULT_RETRIES: u32 = 2;

/// The most of a check's output (its end) that goes back to the model and into the events.
const TAIL_BYTES: usize = 4 * 1024;

/// A run's checks and how they run: the commands in order, each one's timeout, and how many
/// failures go back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checks {
    commands: Vec<String>,
    timeout: Duration,
    retries: u32,
}

impl Checks {
    /// No checks: the run ends as the model's answer says.
    pub fn none() -> Self {
        Checks {
            commands: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            retries: DEFAULT_RETRIES,
        }
    }

    /// `commands`, each run for at most `timeout`, the failures sent back at most `retries`
    /// times; refused when the list is past the bounds (see [`bounded`]).
    pub fn new(commands: Vec<String>, timeout: Duration, retries: u32) -> Result<Self, String> {
        bounded(&commands)?;
        Ok(Checks {
            commands,
            timeout,
            retries,
        })
    }

    /// The commands, in the order they run.
    pub fn commands(&self) -> &[String] {
        &self.commands
    }

    /// Whether there is nothing to check.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// How long one check may run.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How many failed checks go back to the model before the run gives up.
    pub fn retries(&self) -> u32 {
        self.retries
    }
}

/// Refuses a list of checks past the bounds: more than [`MAX_CHECKS`], or one that is blank,
/// longer than [`MAX_CHECK_BYTES`] or holds a NUL (no shell can run it). The error names the
/// check by its place in the list.
pub fn bounded(commands: &[String]) -> Result<(), String> {
    if commands.len() > MAX_CHECKS {
        return Err(format!(
            "{} checks given; a run takes at most {MAX_CHECKS} (put more in one script)",
            commands.len()
        ));
    }
    for (index, command) in commands.iter().enumerate() {
        let number = index + 1;
        if command.trim().is_empty() {
            return Err(format!("check {number} is empty"));
        }
        if command.len() > MAX_CHECK_BYTES {
            return Err(format!(
                "check {number} is {} bytes long; a check is at most {MAX_CHECK_BYTES} (put it \
                 in a script)",
                command.len()
            ));
        }
        if command.contains('\0') {
            return Err(format!("check {number} holds a NUL byte"));
        }
    }
    Ok(())
}

/// How a check ended (`verify_end.status`, `run_end.verify[].status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// It exited 0.
    Passed,
    /// It exited non-zero, or a signal ended it.
    Failed,
    /// It ran past its timeout and was stopped with everything it started.
    TimedOut,
    /// It could not be started.
    NotStarted,
    /// The run was stopped while it ran; it was stopped with everything it started.
    Cancelled,
    /// It never ran on the run's last answer (an earlier check did not pass, or no answer
    /// came to check): in `run_end.verify` only.
    NotRun,
}

/// How one run of a check ended, in more detail than its [`CheckStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckEnd {
    /// It exited with this code.
    Exited(i32),
    /// This signal ended it.
    Signalled(i32),
    /// It ran past this timeout.
    TimedOut(Duration),
    /// It could not start, for this reason.
    NotStarted(String),
    /// The run was stopped while it ran.
    Cancelled,
}

/// One run of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    /// How it ended.
    pub end: CheckEnd,
    /// How long it took.
    pub duration: Duration,
    /// The end of its output (stdout, then stderr, each labelled), at most a few KiB.
    pub output: String,
}

impl CheckRun {
    /// Its status, as the events say it.
    pub fn status(&self) -> CheckStatus {
        match self.end {
            CheckEnd::Exited(0) => CheckStatus::Passed,
            CheckEnd::Exited(_) | CheckEnd::Signalled(_) => CheckStatus::Failed,
            CheckEnd::TimedOut(_) => CheckStatus::TimedOut,
            CheckEnd::NotStarted(_) => CheckStatus::NotStarted,
            CheckEnd::Cancelled => CheckStatus::Cancelled,
        }
    }

    /// Its exit code, when it exited.
    pub fn exit_code(&self) -> Option<i32> {
        match self.end {
            CheckEnd::Exited(code) => Some(code),
            _ => None,
        }
    }

    /// Its duration in milliseconds, as the events say it.
    pub fn duration_ms(&self) -> u64 {
        millis(self.duration)
    }

    /// How it ended, in words that follow "the check `CMD`": `failed (exit 101)`, `timed out
    /// after 10m and was stopped`, ….
    fn ended(&self) -> String {
        match &self.end {
            CheckEnd::Exited(0) => "passed".into(),
            CheckEnd::Exited(code) => format!("failed (exit {code})"),
            CheckEnd::Signalled(signal) => format!("failed (killed by signal {signal})"),
            CheckEnd::TimedOut(limit) => format!(
                "timed out after {} and was stopped with everything it started",
                humantime::format_duration(*limit)
            ),
            CheckEnd::NotStarted(why) => format!("could not start: {why}"),
            CheckEnd::Cancelled => "was stopped: the run is stopping".into(),
        }
    }

    /// How it ended, then its output's end (or that it printed nothing).
    fn told(&self, command: &str) -> String {
        let output = match self.output.is_empty() {
            true => " (it printed nothing)".to_string(),
            false => format!("; its output ended with:\n{}", self.output),
        };
        format!("the check `{command}` {}{output}", self.ended())
    }
}

/// Where a run's checks run and what bounds them besides their own timeout.
pub struct CheckPlace<'a> {
    /// The runtime every command of the run goes through.
    pub runtime: &'a Runtime,
    /// The workspace: each check's working directory.
    pub workspace: &'a Path,
    /// What a check may write whatever the run's level: the workspace and the `--add-dir`
    /// roots (`--auto medium`'s write confinement).
    pub writable: Vec<PathBuf>,
    /// When the run must end: no check runs past it.
    pub deadline: Option<SystemTime>,
    /// The run's stop token: a check is stopped with the run.
    pub cancel: &'a CancellationToken,
}

/// Runs `command` as a check at `place`, for at most `timeout` (and never past the run's
/// deadline), and says how it went. A check that cannot start is a run that did not pass.
pub async fn run(place: &CheckPlace<'_>, command: &str, timeout: Duration) -> CheckRun {
    let started = Instant::now();
    let limit = match place.deadline {
        Some(deadline) => timeout.min(
            deadline
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO),
        ),
        None => timeout,
    };
    let ran = place
        .runtime
        .run_check(
            ShellCommand {
                command,
                cwd: place.workspace,
                timeout: limit,
                origin: Origin::Caller,
            },
            &place.writable,
            place.cancel,
        )
        .await;
    let (end, output) = match ran {
        Ok(output) => (end_of(output.termination, limit), tail(&output)),
        Err(error) => (CheckEnd::NotStarted(error.to_string()), String::new()),
    };
    CheckRun {
        end,
        duration: started.elapsed(),
        output,
    }
}

/// The end of a check the runtime reports as `termination`, run for at most `limit`.
fn end_of(termination: Termination, limit: Duration) -> CheckEnd {
    match termination {
        Termination::Exited(code) => CheckEnd::Exited(code),
        Termination::Signalled(signal) => CheckEnd::Signalled(signal),
        Termination::TimedOut => CheckEnd::TimedOut(limit),
        Termination::Cancelled => CheckEnd::Cancelled,
    }
}

/// The end of a check's output: each stream that printed something, labelled, sharing
/// [`TAIL_BYTES`].
fn tail(output: &CommandOutput) -> String {
    let streams: Vec<(&str, String)> = [
        ("stdout", output.stdout.render()),
        ("stderr", output.stderr.render()),
    ]
    .into_iter()
    .filter(|(_, text)| !text.trim().is_empty())
    .collect();
    let budget = TAIL_BYTES / streams.len().max(1);
    streams
        .iter()
        .map(|(name, text)| format!("{name}:\n{}", last_bytes(text.trim_end(), budget)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// At most the last `max` bytes of `text`, on a character boundary, with a note of what was
/// left out before them.
fn last_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[… {start} bytes before]\n{}", &text[start..])
}

/// What the model is told when `command` did not pass on its answer (`run`), with `retry` of
/// `retries` left to fix it.
pub fn feedback(command: &str, run: &CheckRun, retry: u32, retries: u32) -> String {
    format!(
        "Your final answer was not accepted: {}\nFix it, then give your final answer again \
         (check retry {retry} of {retries}).",
        run.told(command)
    )
}

/// Why a run whose check `command` did not pass on its last answer (`run`) failed, after
/// `retries` retries.
pub fn failure(command: &str, run: &CheckRun, retries: u32) -> String {
    let tries = match retries {
        0 => String::new(),
        1 => ", after 1 retry".to_string(),
        n => format!(", after {n} retries"),
    };
    format!(
        "--verify: {} on the model's final answer{tries}",
        run.told(command)
    )
}

/// One check over the whole run, as `run_end.verify` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    /// The command.
    pub command: String,
    /// How its last run ended (`not_run` when it never ran on the last answer).
    pub status: CheckStatus,
    /// How many times it ran.
    pub attempts: u32,
    /// How long its runs took together, in milliseconds.
    pub duration_ms: u64,
    /// Its last run's exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The end of its last run's output, when that run did not pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl CheckReport {
    /// The report of `command` before it ran.
    pub fn new(command: &str) -> Self {
        CheckReport {
            command: command.to_string(),
            status: CheckStatus::NotRun,
            attempts: 0,
            duration_ms: 0,
            exit_code: None,
            output: None,
        }
    }

    /// Counts `run` in: one more attempt, its time, and it is the last run now.
    pub fn record(&mut self, run: &CheckRun) {
        self.attempts += 1;
        self.duration_ms += run.duration_ms();
        self.status = run.status();
        self.exit_code = run.exit_code();
        self.output = (run.status() != CheckStatus::Passed && !run.output.is_empty())
            .then(|| run.output.clone());
    }

    /// A new answer came: the check has not run on it yet.
    pub fn await_again(&mut self) {
        self.status = CheckStatus::NotRun;
        self.exit_code = None;
        self.output = None;
    }
}

/// `duration` in whole milliseconds.
fn millis(duration: Duration) -> u64 {
    duration.as_millis().try_into().unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_refuse_too_many_blank_long_and_nul_checks() {
        assert!(bounded(&["cargo test".into()]).is_ok());
        let many = vec!["true".to_string(); MAX_CHECKS + 1];
        assert!(bounded(&many).unwrap_err().contains("at most 8"));
        assert_eq!(
            bounded(&["true".into(), "  ".into()]).unwrap_err(),
            "check 2 is empty"
        );
        let long = "x".repeat(MAX_CHECK_BYTES + 1);
        assert!(bounded(&[long]).unwrap_err().contains("at most 2048"));
        assert!(bounded(&["a\0b".into()]).unwrap_err().contains("NUL"));
    }

    #[test]
    fn a_long_output_keeps_its_end_on_a_character_boundary() {
        let text = format!("{}é{}", "a".repeat(10), "z".repeat(20));
        let cut = last_bytes(&text, 21);
        assert!(cut.ends_with(&"z".repeat(20)), "{cut}");
        assert!(cut.starts_with("[… 12 bytes before]"), "{cut}");
        assert_eq!(last_bytes("short", 10), "short");
    }

    #[test]
    fn a_report_counts_every_run_and_keeps_the_last_failure() {
        let failed = CheckRun {
            end: CheckEnd::Exited(101),
            duration: Duration::from_millis(30),
            output: "stdout:\n1 failed".into(),
        };
        let passed = CheckRun {
            end: CheckEnd::Exited(0),
            duration: Duration::from_millis(20),
            output: String::new(),
        };
        let mut report = CheckReport::new("cargo test");
        report.record(&failed);
        assert_eq!(report.status, CheckStatus::Failed);
        assert_eq!(report.output.as_deref(), Some("stdout:\n1 failed"));
        report.await_again();
        assert_eq!(report.status, CheckStatus::NotRun);
        report.record(&passed);
        assert_eq!(
            (report.status, report.attempts, report.duration_ms),
            (CheckStatus::Passed, 2, 50)
        );
        assert_eq!((report.exit_code, report.output), (Some(0), None));
        let said = feedback("cargo test", &failed, 1, 2);
        assert!(
            said.contains("the check `cargo test` failed (exit 101)"),
            "{said}"
        );
        assert!(
            said.contains("1 failed") && said.contains("retry 1 of 2"),
            "{said}"
        );
    }
}
