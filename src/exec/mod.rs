//! One `zero exec` job: the settings, then the mode they ask for — the agent on the prompt
//! (`run`) or a listing (`listing`) — and how it ended as events and an exit code (`ending`).
//! This file is the dispatch; each step lives in a module of its own (`process`: what the
//! job changes for the whole process; `driver`: the async runtime and its stops; `worktree`:
//! `--worktree`).
//!
//! Every path out of [`run`] emits exactly one `run_end`, preceded by an `error` when the run
//! failed, so a script reading stream-json always sees how the run ended.

mod confinement;
mod driver;
mod ending;
mod failure;
mod flags;
mod inputs;
mod listing;
mod local_server;
mod mcp_servers;
mod pieces;
mod process;
mod prompt;
mod run;
mod session;
mod settings;
mod strict;
mod worktree;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use crate::cli::ExecArgs;
use crate::exit::ExitCode;
use crate::lifecycle;
use crate::output::event::WorktreeInfo;
use crate::output::{ErrorCode, EventKind, Output, OutputFormat, stderr_line_if_writable};
use crate::redact::Secrets;
use crate::runtime::{RuntimeConfig, RuntimeError};
use crate::structured::OutputSchema;
use crate::verify::Checks;
use ending::{Accounting, finish};
use inputs::Inputs;
use pieces::Pieces;
use settings::{Mode, Settings};
use worktree::RunWorktree;

pub use failure::Failure;

/// A parsed `zero exec` command line.
pub struct Invocation {
    /// The flags.
    pub args: ExecArgs,
    /// Positional prompt words and `-p` values, in the order they appeared in argv.
    pub prompt_parts: Vec<String>,
}

/// Runs one job and returns its exit code; stdout holds exactly one `run_end` by then. A panic
/// in the job is reported as an internal error, after the runtime was closed on the way out.
///
/// The reconciliation of dead runs runs first (`runtime::reconcile_at_start`, its warnings
/// printed here): before the job touches the data directory, and once a stop signal would
/// already be reported — it may wait out a grace period on a dead run's leftovers.
pub fn run(invocation: Invocation) -> ExitCode {
    process::hide_memory();
    let inputs = Inputs::read();
    let output = Arc::new(Output::new(invocation.args.output_format, inputs.secrets()));
    run_with(invocation, None, inputs, &output)
}

/// Runs one job whose final answer must satisfy `schema` and goes back to the caller instead
/// of stdout (`zero review`): progress and diagnostics on stderr as `-o text` writes them,
/// `run_end` there too, and nothing on stdout. Returns the exit code and the checked answer
/// (when the run gave one). The flags' own `--output-schema` and `-o` are the caller's to
/// refuse.
pub fn run_for_answer(
    invocation: Invocation,
    schema: OutputSchema,
) -> (ExitCode, Option<serde_json::Value>) {
    process::hide_memory();
    let inputs = Inputs::read();
    let output = Arc::new(Output::keeping_answer(inputs.secrets()));
    let exit = run_with(invocation, Some(schema), inputs, &output);
    (exit, output.kept_answer())
}

/// [`run`] on `output`, with `schema` in place of `--output-schema` when given.
fn run_with(
    invocation: Invocation,
    schema: Option<OutputSchema>,
    inputs: Inputs,
    output: &Arc<Output>,
) -> ExitCode {
    let early = Arc::clone(output);
    lifecycle::report_early_stops(Box::new(move |stop| {
        early.stop_token().cancel();
        let failure = Failure::stopped(stop);
        failure.emit(&early);
        finish(&early, failure.exit(), Accounting::default());
    }));
    let runtime = inputs.runtime(output.run_id());
    if let Ok(config) = &runtime {
        for warning in crate::runtime::reconcile_at_start(config) {
            let warning = output.secrets().apply(&warning);
            stderr_line_if_writable(&format!("zero: warning: {warning}"));
        }
    }
    let mut accounting = Accounting::default();
    let job = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let job = Job { invocation, schema };
        in_worktree(job, inputs, runtime, output, &mut accounting)
    }));
    let exit = match job {
        Ok(Ok(exit)) => exit,
        Ok(Err(failure)) => {
            failure.emit(output);
            failure.exit()
        }
        Err(_panic) => {
            // The panic message is already on stderr (the default hook printed it).
            let failure = Failure::internal("zero crashed (a bug); see stderr".into());
            failure.emit(output);
            failure.exit()
        }
    };
    finish(output, exit, accounting)
}

/// What the job is asked: the command line, and the schema a caller fixed in place of
/// `--output-schema` ([`run_for_answer`]).
struct Job {
    invocation: Invocation,
    schema: Option<OutputSchema>,
}

/// The job, in a worktree of its own when `--worktree` asks for one: made before the settings
/// fix the workspace (which becomes the worktree), and ended (what changed committed on its
/// branch, `run_end` naming the commit) however the job ended.
fn in_worktree(
    Job {
        mut invocation,
        schema,
    }: Job,
    inputs: Inputs,
    runtime: Result<RuntimeConfig, RuntimeError>,
    output: &Arc<Output>,
    accounting: &mut Accounting,
) -> Result<ExitCode, Failure> {
    let worktree = RunWorktree::asked(&mut invocation.args, &runtime, output.run_id())?;
    let info = worktree.as_ref().map(RunWorktree::info);
    let job = Job { invocation, schema };
    let exit = run_job(job, inputs, runtime, output, accounting, info);
    if let Some(worktree) = worktree {
        let keep = kept_for(&exit);
        if let Some(why) = keep {
            output.emit(EventKind::Warning {
                message: worktree.kept_warning(why),
            });
        }
        accounting.worktree_commit = worktree.finish(output.run_id(), keep)?;
    }
    exit
}

/// Why a `--worktree` run's worktree is kept when the job ended `exit`: its work did not pass
/// its checks, or was blocked (`--strict`); `None` for any other ending, whose worktree is
/// removed.
fn kept_for(exit: &Result<ExitCode, Failure>) -> Option<&'static str> {
    match exit {
        Err(failure) if failure.code == ErrorCode::VerifyFailed => {
            Some("the run's checks did not pass")
        }
        Err(failure) if failure.code == ErrorCode::Blocked => Some("the run's work was blocked"),
        _ => None,
    }
}

/// The job, step by step: the settings (after the config file's unknown keys are warned
/// about), what they change for the whole process, then the mode they ask for.
fn run_job(
    Job { invocation, schema }: Job,
    inputs: Inputs,
    runtime: Result<RuntimeConfig, RuntimeError>,
    output: &Arc<Output>,
    accounting: &mut Accounting,
    worktree: Option<WorktreeInfo>,
) -> Result<ExitCode, Failure> {
    for warning in settings::config_warnings(&inputs) {
        output.warn_at_start(warning);
    }
    let mut settings = Settings::resolve(invocation, inputs, runtime)?;
    settings.workspace.worktree = worktree;
    if let Some(schema) = schema {
        settings.request.output_schema = Some(schema);
        // A caller that fixes the answer (`zero review`) changes nothing: config.toml's
        // checks are not for it.
        settings.outcome.checks = Checks::none();
    }
    process::take_effect(&settings, output)?;
    if let Some(warning) = settings.unoffered_bash_rules() {
        output.warn_at_start(warning);
    }
    match settings.mode {
        Mode::ListSpecialists => Ok(listing::specialists(&settings, output)),
        Mode::ListSkills => Ok(listing::skills(&settings, output)),
        Mode::ListTools => listing::tools(&settings, &Pieces::new(&settings, output)?, output),
        Mode::Run => {
            let pieces = Pieces::new(&settings, output)?;
            run::run(settings, pieces, output, accounting)
        }
    }
}

/// The secrets this process knows before resolving anything: the key variables' values and
/// the config file's key, hidden from everything zero writes whether or not the run uses them.
pub fn known_secrets() -> Secrets {
    Inputs::read().secrets()
}

/// Reports a failure found before the job could start (e.g. a flag clap rejected) in a
/// machine-readable format: `error` then `run_end`.
pub fn report_early_failure(format: OutputFormat, failure: Failure) -> ExitCode {
    let output = Output::new(format, known_secrets());
    failure.emit(&output);
    finish(&output, failure.exit(), Accounting::default())
}
