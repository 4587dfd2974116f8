//! One `zero exec` job: resolve the flags, assemble the prompt, connect the provider, run the
//! agent loop, and turn how it ended into events and an exit code.
//!
//! Every path out of [`run`] emits exactly one `run_end`, preceded by an `error` when the run
//! failed, so a script reading stream-json always sees how the run ended.

mod confinement;
mod failure;
mod job;
mod local_server;
mod mcp_servers;
mod prompt;
mod session;
pub(crate) mod settings;

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::{AgentRun, Answer, Ending, SchemaCheck, first_reads, system_prompt};
use crate::cli::ExecArgs;
use crate::exit::ExitCode;
use crate::lifecycle::{self, CloseOnDrop, Stop};
use crate::local_model::PromptStyle;
use crate::mcp;
use crate::output::{
    EventKind, McpServerInfo, Output, OutputFormat, PermissionsChanged, RunStatus, SpecialistInfo,
    ToolInfo, WindowInfo, stderr_line_if_writable,
};
use crate::provider::{
    self, ContextWindow, ErrorClass, ProviderConfig, ProviderError, WindowLookup,
};
use crate::redact::Secrets;
use crate::runtime::{Runtime, RuntimeConfig, RuntimeError, TaskEvent, TaskEventSink};
use crate::tasks::{self, ChildEnv, Launcher, SearchPaths};
use crate::tools::{Permissions, Registry, ToolContext, ToolId, Toolset};
use crate::usage::{Ledger, Spent};
use settings::{Inputs, Settings};

pub use failure::Failure;

/// A parsed `zero exec` command line.
pub struct Invocation {
    /// The flags.
    pub args: ExecArgs,
    /// Positional prompt words and `-p` values, in the order they appeared in argv.
    pub prompt_parts: Vec<String>,
}

/// Turns and what the run tree spent, for `run_end`.
#[derive(Debug, Default, Clone, Copy)]
struct Accounting {
    turns: u32,
    spent: Spent,
    /// The model's context window, when it was known by the end.
    window: Option<ContextWindow>,
    /// What every run of the session spent, this one included.
    session_usage: Option<crate::output::UsageTotals>,
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
    let early = Arc::clone(&output);
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
        run_job(&invocation, inputs, runtime, &output, &mut accounting)
    }));
    let exit = match job {
        Ok(Ok(exit)) => exit,
        Ok(Err(failure)) => {
            failure.emit(&output);
            failure.exit()
        }
        Err(_panic) => {
            // The panic message is already on stderr (the default hook printed it).
            let failure = Failure::internal("zero crashed (a bug); see stderr".into());
            failure.emit(&output);
            failure.exit()
        }
    };
    finish(&output, exit, accounting)
}

/// Emits `run_end`. A stdout that broke along the way makes the run an internal error.
fn finish(output: &Output, exit: ExitCode, accounting: Accounting) -> ExitCode {
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
        context_window: accounting.window.map(|window| WindowInfo {
            tokens: window.tokens,
            source: window.source.as_str().to_string(),
        }),
        session_usage: accounting.session_usage,
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

fn run_job(
    invocation: &Invocation,
    inputs: Inputs,
    runtime: Result<RuntimeConfig, RuntimeError>,
    output: &Arc<Output>,
    accounting: &mut Accounting,
) -> Result<ExitCode, Failure> {
    let args = &invocation.args;
    for warning in inputs.config_warnings() {
        output.warn_at_start(warning);
    }
    let settings = Settings::resolve(args, inputs, runtime)?;
    // From here on the deadline stops the run as a signal does, wherever the run is held up.
    if let Some(deadline) = settings.deadline {
        lifecycle::arm_deadline(deadline).map_err(|e| Failure::internal(e.to_string()))?;
    }
    if let Ok(ProviderConfig {
        api_key: Some(key), ..
    }) = &settings.provider
    {
        output.secrets().add(key);
    }
    let workspace = &settings.workspace;
    if args.list_specialists {
        list_specialists(output, workspace, &settings.specialists);
        return Ok(ExitCode::Success);
    }
    let price = settings
        .provider
        .as_ref()
        .ok()
        .and_then(|config| settings.prices.of(&config.model));
    let ledger = Arc::new(Ledger::new(
        settings.limits,
        price,
        settings.usage_report.clone(),
    ));
    // Lazy: costs nothing until the model starts a background task.
    let mut runtime_config = settings.runtime.clone();
    runtime_config.secrets = output.secrets().clone();
    let tasks = Arc::new(Runtime::new(runtime_config, task_events(output)));
    let mut registry = Registry::with_runtime(Arc::clone(&tasks));
    // A specialist never launches specialists of its own.
    let launcher = settings.parent.is_none().then(|| Launcher {
        parent_run: output.run_id().clone(),
        provider: settings
            .provider
            .as_ref()
            .ok()
            .map(|config| ChildEnv::new(config.child_variables(), config.api_key.clone())),
        search: settings.specialists.clone(),
        ledger: Arc::clone(&ledger),
        mcp_servers: settings
            .mcp_servers
            .iter()
            .map(|server| {
                let entry = server.handed_entry(&|name| settings.env.var(name));
                (server.name.clone(), entry)
            })
            .collect(),
    });
    tasks::register(&mut registry, &tasks, launcher);
    // Reported with the provider's own errors, once the prompt is known.
    let local = local_server::settings(&settings);
    let compact = matches!(&local, Ok(Some(local)) if local.prompt == PromptStyle::Compact);
    let mut filter = job::tool_filter(args, &registry, &settings.mcp_servers)?;
    if compact {
        filter.leave_out(ToolId::compact_leaves_out());
    }
    // The registry with the MCP servers' tools, as the run's flags and policy select it.
    let toolset_with = |started: &mcp::Started| {
        let mut registry = registry.clone();
        for tool in &started.tools {
            registry.register(Arc::clone(tool));
        }
        registry
            .select(&filter, &settings.policy)
            .redacting(output.secrets().clone())
    };
    if args.list_tools {
        // An async runtime only when there are servers to start: a plain listing stays as
        // cheap as it was before MCP.
        let runtime = match settings.mcp_servers.is_empty() {
            true => None,
            false => Some(async_runtime()?),
        };
        // Closes the runtime (and with it every server started) on every way out.
        let _guard = runtime
            .as_ref()
            .map(|runtime| CloseOnDrop::new(Arc::clone(&tasks), runtime));
        let started = match &runtime {
            Some(runtime) => {
                let cancel = output.stop_token();
                lifecycle::watch(cancel.clone());
                runtime.block_on(mcp_servers::start(&settings, &tasks, output, &cancel))?
            }
            None => mcp::Started::default(),
        };
        start_listing(output, workspace, mcp_servers::infos(&started.states));
        mcp_servers::warn(
            &started.states,
            &settings.mcp_unknown_keys,
            settings.project_mcp_unread,
            output,
        );
        list_tools(output, &toolset_with(&started));
        if let Some(runtime) = &runtime {
            runtime.block_on(async {
                started.servers.close().await;
                close_tasks(&tasks, output).await;
            });
        }
        return Ok(ExitCode::Success);
    }
    let last_message = args
        .output_last_message
        .as_deref()
        .map(job::last_message_path)
        .transpose()?;
    let prompt = prompt::assemble(
        &prompt::PromptSources {
            parts: &invocation.prompt_parts,
            file: args.file.as_deref(),
            format: args.input_format,
        },
        workspace,
        &mut std::io::stdin(),
    )?;
    let config = settings
        .provider
        .as_ref()
        .map_err(|e| Failure::config(e.to_string()))?
        .clone();
    let local = local?;
    if let Some(limit) = settings.limits.cost
        && price.is_none()
    {
        return Err(Failure::usage(format!(
            "--max-cost-usd {limit} needs the price of model `{model}`: add a [prices.\"{model}\"] \
             table with `input` and `output` (US dollars per million tokens) to config.toml",
            model = config.model
        )));
    }
    let permissions = Permissions::of(
        settings.policy.autonomy(),
        &settings.confinement.commands.sandbox,
    );
    let runtime = async_runtime()?;
    // Tasks, services and commands can only start from here on, so closing the task runtime
    // right after the loop below covers every way out of the job — a signal or a closed
    // stdout cancels the loop and lands there too: each task's end is reported before
    // `run_end` and nothing the run started outlives it. An error before the loop (a
    // required MCP server that failed) or a panic skips that close; this guard does it.
    let guard = CloseOnDrop::new(Arc::clone(&tasks), &runtime);
    // Cancelled by a stop signal, by lifeline EOF, or when stdout goes away.
    let cancel = output.stop_token();
    lifecycle::watch(cancel.clone());
    let reader_gone = Arc::clone(output);
    lifecycle::watch_stdout(move || reader_gone.stdout_closed());
    let mut config = config;
    // Held until the run is over; the runtime's close below stops it.
    let _local_server = runtime.block_on(local_server::start(
        &settings,
        local,
        &mut config,
        &tasks,
        &cancel,
    ))?;
    let provider = provider::build(&config, output.run_id().as_str())
        .map_err(|e| Failure::config(e.to_string()))?;
    let mcp = runtime.block_on(mcp_servers::start(&settings, &tasks, output, &cancel))?;
    let toolset = toolset_with(&mcp);
    let mut session = session::for_run(
        args,
        settings.runtime.data_dir.as_deref(),
        session::RunFacts {
            workspace: &settings.workspace,
            run_id: output.run_id(),
            provider: provider.name(),
            model: provider.model(),
            permissions: permissions.clone(),
            secrets: output.secrets().clone(),
        },
        output,
    )?;
    let (history, prompt) = match &mut session {
        Some(session) => session.start(prompt),
        None => (Vec::new(), prompt),
    };
    // Found out alongside the first request, which needs no window.
    let window = {
        let _entered = runtime.enter();
        WindowLookup::start(settings.context_window, Arc::clone(&provider))
    };
    let policy = settings.policy;
    let workspace = settings.workspace;
    output.emit(EventKind::RunStart {
        cwd: workspace.display().to_string(),
        provider: Some(provider.name().to_string()),
        model: Some(provider.model().to_string()),
        sandbox: Some(settings.confinement.in_force()),
        withheld_env: settings.confinement.withheld.clone(),
        session_id: session.as_ref().map(|session| session.id().to_string()),
        resumed_from: session.as_ref().and_then(|s| s.resumed_from.clone()),
        permissions_changed: session
            .as_ref()
            .and_then(|s| s.permissions_before.clone())
            .map(|before| PermissionsChanged {
                before,
                now: permissions.clone(),
            }),
        mcp_servers: mcp_servers::infos(&mcp.states),
    });
    mcp_servers::warn(
        &mcp.states,
        &settings.mcp_unknown_keys,
        settings.project_mcp_unread,
        output,
    );
    for note in session.iter().flat_map(|session| &session.notes) {
        output.emit(EventKind::Warning {
            message: format!("resuming the session: {note}"),
        });
    }
    if let Some(warning) = policy.unrestricted_warning() {
        output.emit(EventKind::Warning { message: warning });
    }
    if let Some(warning) = settings.confinement.warning.clone() {
        output.emit(EventKind::Warning { message: warning });
    }
    let system = system_prompt::build(&system_prompt::PromptFacts {
        workspace: &workspace,
        autonomy: policy.autonomy(),
        tools: toolset.visible().iter().map(|t| t.name()).collect(),
        answer_schema: settings.output_schema.as_ref(),
        compact,
    });
    let context = ToolContext {
        workspace: workspace.clone(),
        policy: Arc::new(policy),
        cancel,
        plan_updates: None,
    };
    let agent = AgentRun {
        provider: provider.as_ref(),
        toolset: &toolset,
        context,
        output,
        max_turns: settings.max_turns,
        tasks: &tasks,
        ledger: &ledger,
        window: window.clone(),
        schema: settings.output_schema.as_ref().map(|schema| SchemaCheck {
            schema,
            retries: settings.schema_retries,
        }),
        transcript: session.as_ref().map(|session| &session.transcript),
        first_reads: match compact {
            true => first_reads::named_files(&workspace, &prompt),
            false => Vec::new(),
        },
    };
    let report = runtime.block_on(async {
        let report = agent.run(system, history, prompt).await;
        // The servers first: each stdio server's stdin closes before its process is stopped.
        mcp.servers.close().await;
        close_tasks(&tasks, output).await;
        report
    });
    guard.disarm();
    // Blocking work that outlived the close (a process SIGKILL could not end) must not keep
    // the process from exiting.
    runtime.shutdown_background();
    accounting.turns = report.turns;
    // After the close: every specialist has ended and written its last report.
    accounting.spent = ledger.spent();
    accounting.window = window.now();
    let stopped = lifecycle::received();
    if let Some(session) = session {
        let answered = matches!(report.ending, Ending::Answered(_)) && stopped.is_none();
        let (total, problems) = session.end(answered, accounting.spent.total());
        accounting.session_usage = Some(total);
        for message in problems {
            output.emit(EventKind::Warning { message });
        }
    }
    // A signal, or the deadline, which stops the run the same way.
    if let Some(stop) = stopped {
        return Err(Failure::stopped(stop));
    }
    conclude(
        report.ending,
        output,
        last_message.as_deref(),
        settings.output_schema.is_some(),
    )
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

/// Stops whatever tasks are still running and reports what could not be cleaned up; the
/// stopped tasks themselves are reported by their `task_finished` events.
async fn close_tasks(tasks: &Runtime, output: &Output) {
    for error in tasks.close().await.errors {
        output.emit(EventKind::Warning {
            message: format!("while stopping the run's background tasks: {error}"),
        });
    }
}

/// Forwards the task runtime's events to the output.
fn task_events(output: &Arc<Output>) -> TaskEventSink {
    let output = Arc::clone(output);
    Arc::new(move |event| {
        output.emit(match event {
            TaskEvent::Started(record) => EventKind::TaskStarted {
                task_id: record.id.to_string(),
                kind: record.kind,
                description: record.description,
            },
            TaskEvent::Finished(record) => EventKind::TaskFinished {
                task_id: record.id.to_string(),
                kind: record.kind,
                status: record.status,
                exit_code: record.exit_code,
            },
            TaskEvent::Unrecorded(error) => EventKind::Warning {
                message: format!("a background task's state could not be saved: {error}"),
            },
        })
    })
}

/// Reports how the conversation ended and picks the exit code.
fn conclude(
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
        Ending::Cancelled => Err(Failure::provider(&ProviderError {
            class: ErrorClass::Cancelled,
            status: None,
            message: "the run was cancelled".into(),
            retryable: false,
            usage: None,
        })),
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

/// The `run_start` of a listing: the workspace and the MCP servers started for it, and no
/// provider or model.
fn start_listing(output: &Output, workspace: &Path, mcp_servers: Vec<McpServerInfo>) {
    output.emit(EventKind::RunStart {
        cwd: workspace.display().to_string(),
        provider: None,
        model: None,
        sandbox: None,
        withheld_env: Vec::new(),
        session_id: None,
        resumed_from: None,
        permissions_changed: None,
        mcp_servers,
    });
}

/// Lists the tools the model would see.
fn list_tools(output: &Output, toolset: &Toolset) {
    output.emit(EventKind::Tools {
        tools: toolset
            .visible()
            .iter()
            .map(|tool| ToolInfo {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                side_effect: tool.side_effect(),
                input_schema: tool.input_schema(),
            })
            .collect(),
    });
}

/// Discovers the specialists under this workspace and lists them. Broken manifests are
/// warnings, emitted before the listing so `-o json` can carry them in it.
fn list_specialists(output: &Output, workspace: &Path, search: &SearchPaths) {
    start_listing(output, workspace, Vec::new());
    let found = tasks::discover(search);
    for warning in &found.warnings {
        output.emit(EventKind::Warning {
            message: warning.to_string(),
        });
    }
    output.emit(EventKind::Specialists {
        specialists: found
            .specialists
            .into_iter()
            .map(|s| SpecialistInfo {
                name: s.name,
                description: s.description,
                source: s.source.to_string(),
                tools: s
                    .tools
                    .into_iter()
                    .map(str::to_string)
                    .chain(s.mcp_tools)
                    .collect(),
                model: s.model,
            })
            .collect(),
    });
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
