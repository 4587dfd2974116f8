//! One `zero exec` job: the settings, then the mode they ask for — the agent on the prompt
//! (`run`) or a listing (`listing`) — and how it ended as events and an exit code (`ending`).
//!
//! Every path out of [`run`] emits exactly one `run_end`, preceded by an `error` when the run
//! failed, so a script reading stream-json always sees how the run ended.

mod confinement;
mod ending;
mod failure;
mod flags;
mod inputs;
mod listing;
mod local_server;
mod mcp_servers;
mod pieces;
mod prompt;
mod run;
mod session;
mod settings;
mod worktree;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::cli::ExecArgs;
use crate::exit::ExitCode;
use crate::lifecycle::{self, Stop};
use crate::output::event::WorktreeInfo;
use crate::output::{self, Output, OutputFormat, stderr_line_if_writable};
use crate::provider::ProviderConfig;
use crate::redact::Secrets;
use crate::rules::Effect;
use crate::runtime::{RuntimeConfig, RuntimeError};
use crate::structured::OutputSchema;
use crate::tools::{SideEffect, ToolId};
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
/// `prepare` (the reconciliation of dead runs) runs first: before the job touches the data
/// directory, and once a stop signal would already be reported — it may wait out a grace
/// period on a dead run's leftovers. It gets the run's runtime configuration (when the
/// environment's is valid; the job reports it otherwise) and the secrets to mask in what it
/// prints.
pub fn run(invocation: Invocation, prepare: impl FnOnce(&RuntimeConfig, &Secrets)) -> ExitCode {
    hide_process_memory();
    let inputs = Inputs::read();
    let output = Arc::new(Output::new(invocation.args.output_format, inputs.secrets()));
    run_with(invocation, None, inputs, &output, prepare)
}

/// Runs one job whose final answer must satisfy `schema` and goes back to the caller instead
/// of stdout (`zero review`): progress and diagnostics on stderr as `-o text` writes them,
/// `run_end` there too, and nothing on stdout. Returns the exit code and the checked answer
/// (when the run gave one). The flags' own `--output-schema` and `-o` are the caller's to
/// refuse.
pub fn run_for_answer(
    invocation: Invocation,
    schema: OutputSchema,
    prepare: impl FnOnce(&RuntimeConfig, &Secrets),
) -> (ExitCode, Option<serde_json::Value>) {
    hide_process_memory();
    let inputs = Inputs::read();
    let output = Arc::new(Output::keeping_answer(inputs.secrets()));
    let exit = run_with(invocation, Some(schema), inputs, &output, prepare);
    (exit, output.kept_answer())
}

/// [`run`] on `output`, with `schema` in place of `--output-schema` when given.
fn run_with(
    invocation: Invocation,
    schema: Option<OutputSchema>,
    inputs: Inputs,
    output: &Arc<Output>,
    prepare: impl FnOnce(&RuntimeConfig, &Secrets),
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
        prepare(config, output.secrets());
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
    // A listing runs no job, so it makes no worktree.
    let listing = invocation.args.list_tools || invocation.args.list_specialists;
    let Some(name) = invocation.args.worktree.take().filter(|_| !listing) else {
        let job = Job { invocation, schema };
        return run_job(job, inputs, runtime, output, accounting, None);
    };
    let data_dir = match &runtime {
        Ok(config) => config.data_dir.clone().ok_or_else(|| {
            Failure::usage("--worktree needs a data directory (set ZERO_HOME)".into())
        })?,
        Err(error) => return Err(Failure::usage(error.to_string())),
    };
    let workspace = flags::workspace(invocation.args.cwd.as_deref())?;
    let worktree = RunWorktree::prepare(name.as_deref(), &workspace, &data_dir, output.run_id())?;
    invocation.args.cwd = Some(worktree.workspace_for(&workspace));
    let info = worktree.info();
    let job = Job { invocation, schema };
    let job = run_job(job, inputs, runtime, output, accounting, Some(info));
    accounting.worktree_commit = worktree.finish(output.run_id())?;
    job
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
    }
    take_effect(&settings, output)?;
    if let Some(warning) = unoffered_bash_rules(&settings) {
        output.warn_at_start(warning);
    }
    match settings.mode {
        Mode::ListSpecialists => Ok(listing::specialists(&settings, output)),
        Mode::ListTools => listing::tools(&settings, &Pieces::new(&settings, output)?, output),
        Mode::Run => {
            let pieces = Pieces::new(&settings, output)?;
            run::run(settings, pieces, output, accounting)
        }
    }
}

/// A warning when `bash` allow rules cannot take effect: at `--auto low` `bash` is offered
/// (read-only) only where the sandbox can make commands read-only, and this run has no such
/// sandbox, so the commands those rules name will not run. Saying so beats a silent no.
fn unoffered_bash_rules(settings: &Settings) -> Option<String> {
    let rules: Vec<&str> = settings
        .controls
        .rules
        .rules()
        .iter()
        .filter(|rule| rule.effect == Effect::Allow && rule.covers(ToolId::Bash))
        .map(|rule| rule.text.as_str())
        .collect();
    if rules.is_empty() || settings.workspace.policy.permits(SideEffect::Shell).is_ok() {
        return None;
    }
    Some(format!(
        "bash is not offered at --auto {} without the sandbox, so {} cannot run anything; \
         use --auto medium, or run where the sandbox is available",
        output::word(&settings.workspace.policy.autonomy()),
        rules
            .iter()
            .map(|rule| format!("`{rule}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// What the settings change for the whole process: from here on the deadline stops the run
/// as a signal does, wherever the run is held up, and the provider's key is masked in
/// everything zero writes.
fn take_effect(settings: &Settings, output: &Output) -> Result<(), Failure> {
    if let Some(deadline) = settings.budget.deadline {
        lifecycle::arm_deadline(deadline).map_err(|e| Failure::internal(e.to_string()))?;
    }
    if let Ok(ProviderConfig {
        api_key: Some(key), ..
    }) = &settings.model.provider
    {
        output.secrets().add(key);
    }
    Ok(())
}

/// `work`, unless the run is stopped first (a signal, the lifeline, its deadline, a closed
/// stdout): then that ending's failure, and `work` is dropped half-way (whatever it started
/// belongs to the runtime, whose close stops it).
pub(crate) async fn before_stop<T>(
    work: impl Future<Output = T>,
    cancel: &CancellationToken,
) -> Result<T, Failure> {
    tokio::select! {
        done = work => Ok(done),
        () = cancel.cancelled() => {
            Err(Failure::stopped(lifecycle::received().unwrap_or(Stop::Interrupt)))
        }
    }
}

/// The async runtime a job runs on. One thread drives the run, and blocking work (files,
/// fsync, handshakes) goes to the blocking pool, as it must anyway. A multi-thread runtime
/// hands each step of a turn from one worker to another, and waking an idle vCPU costs up to
/// a millisecond on a VM (docs/PERFORMANCE.md).
fn async_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::internal(format!("cannot start the async runtime: {e}")))
}

/// Makes this process's memory and initial environment unreadable to other processes of the
/// same user: `/proc/<pid>/environ` holds the key variables zero was started with, and a
/// command run by zero (same uid) could otherwise read them there, past the environment the
/// spawn door cleaned. The ssh-agent way (`PR_SET_DUMPABLE`); it also turns off core dumps,
/// which would hold the key too. Commands are unaffected: exec makes them dumpable again.
fn hide_process_memory() {
    #[cfg(target_os = "linux")]
    if let Err(error) = nix::sys::prctl::set_dumpable(false) {
        stderr_line_if_writable(&format!(
            "zero: warning: cannot hide this process's memory from other processes: {error}"
        ));
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
