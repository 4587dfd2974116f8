//! The run mode: the agent on the prompt. [`run`] is the list of its steps — what the run
//! needs before anything starts, the async runtime and the stops it watches, the provider and
//! the MCP servers, the session, `run_start`, the loop and the close, the ending — each a
//! function of its own below.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::{AgentRun, Ending, Report, SchemaCheck, first_reads, system_prompt};
use crate::exit::ExitCode;
use crate::hooks::{HookRunner, Hooks, RunFacts};
use crate::lifecycle::{self, CloseOnDrop};
use crate::local_model::{LocalServer, LocalSettings};
use crate::mcp;
use crate::output::{EventKind, Output, PermissionsChanged};
use crate::provider::{self, Image, Message, Provider, ProviderConfig, WindowLookup};
use crate::skills;
use crate::tools::policy::Autonomy;
use crate::tools::{Permissions, StyleChoice, ToolContext, ToolId, Toolset};

use super::driver::{async_runtime, before_stop};
use super::ending::{self, Accounting};
use super::failure::Failure;
use super::pieces::Pieces;
use super::session::{self, RunSession};
use super::settings::Settings;
use super::{flags, listing, local_server, mcp_servers, prompt, strict};

/// Runs the agent as `settings` describe on `pieces`, and reports how it ended; `accounting`
/// holds what `run_end` reports whichever way the run ends.
pub(super) fn run(
    settings: Settings,
    pieces: Pieces,
    output: &Arc<Output>,
    accounting: &mut Accounting,
) -> Result<ExitCode, Failure> {
    let request = Request::read(&settings)?;
    let runtime = async_runtime()?;
    // Tasks, services and commands can only start from here on, so closing the task runtime
    // right after the loop covers every way out of the job — a signal or a closed stdout
    // cancels the loop and lands there too: each task's end is reported before `run_end` and
    // nothing the run started outlives it. An error before the loop (a required MCP server
    // that failed) or a panic skips that close; this guard does it.
    let guard = CloseOnDrop::new(Arc::clone(&pieces.runtime), &runtime);
    let cancel = watch_stops(output);
    let connected = connect(
        &settings,
        &pieces,
        request.provider,
        &runtime,
        output,
        &cancel,
    )?;
    let style = runtime.block_on(before_stop(
        choose_style(request.style, &connected.window, &settings),
        &cancel,
    ))?;
    if !request.images.is_empty() {
        runtime.block_on(before_stop(images_seen(&connected.window), &cancel))??;
    }
    let toolset = pieces.toolset(
        &connected.mcp,
        &settings.workspace.policy,
        style.style,
        output,
    );
    let mut session = open_session(
        &settings,
        &*connected.provider,
        &request.permissions,
        output,
    )?;
    let (history, prompt) = match &mut session {
        Some(session) => session.start(request.prompt),
        None => (Vec::new(), request.prompt),
    };
    let window = connected.window.clone();
    announce(
        &settings,
        &connected,
        Offered {
            style,
            skills: offered_skills(&settings, &toolset),
        },
        session.as_ref(),
        request.permissions,
        output,
    );
    let hooks = hooks(&settings, &pieces, session.as_ref(), &cancel, output);
    let prompt = runtime.block_on(session_start(&hooks, session.as_ref(), prompt))?;
    let conversation = Conversation {
        history,
        prompt,
        images: request.images,
        toolset: &toolset,
        style,
        window: window.clone(),
        session: session.as_ref(),
        hooks: &hooks,
        cancel,
    };
    let (report, mcp_gone) = runtime.block_on(converse_then_close(
        &settings,
        &pieces,
        &connected,
        conversation,
        output,
    ));
    guard.disarm();
    // Blocking work that outlived the close (a process SIGKILL could not end) must not keep
    // the process from exiting.
    runtime.shutdown_background();
    accounting.turns = report.turns;
    // After the close: every specialist has ended and written its last report.
    accounting.spent = pieces.ledger.spent();
    accounting.window = window.now();
    accounting.verify = report.verify;
    let blocked = match settings.outcome.strict {
        true => strict::causes(&strict::Seen {
            obstacles: output.obstacles(),
            mcp: &connected.mcp.states,
            mcp_gone: &mcp_gone,
            cut_calls: &report.cut_calls,
        }),
        false => Vec::new(),
    };
    let ended = Ended {
        ending: report.ending,
        session,
        last_message: request.last_message,
        schema: settings.request.output_schema.is_some(),
        blocked,
    };
    end(ended, accounting, output)
}

/// The conversation, then the close of everything the run started: the MCP servers first
/// (each stdio server's stdin closes before its process is stopped), then the runtime and the
/// specialists' worktrees. Returns the loop's report and the MCP servers that went away
/// before the close.
async fn converse_then_close(
    settings: &Settings,
    pieces: &Pieces,
    connected: &Connected,
    conversation: Conversation<'_>,
    output: &Output,
) -> (Report, Vec<String>) {
    let report = converse(settings, pieces, &*connected.provider, conversation, output).await;
    let gone = connected.mcp.servers.gone();
    connected.mcp.servers.close().await;
    pieces.close(output).await;
    (report, gone)
}

/// How the loop ended, and what the ending still needs.
struct Ended {
    /// What the loop said.
    ending: Ending,
    /// The run's session, to close.
    session: Option<RunSession>,
    /// `--output-last-message`, checked.
    last_message: Option<PathBuf>,
    /// Whether the answer had to satisfy a schema.
    schema: bool,
    /// With `--strict`: what blocked the run's work (empty when nothing did).
    blocked: Vec<String>,
}

/// The run's end, once everything it started is closed: its session closed (answered only
/// when the model answered and no stop came), then a stop's failure, else the answer's
/// ending — and an answered run whose work was blocked fails under `--strict`, its answer
/// printed first.
fn end(ended: Ended, accounting: &mut Accounting, output: &Output) -> Result<ExitCode, Failure> {
    let stopped = lifecycle::received();
    if let Some(session) = ended.session {
        let answered = matches!(ended.ending, Ending::Answered(_)) && stopped.is_none();
        close_session(session, answered, accounting, output);
    }
    // A signal, or the deadline, which stops the run the same way.
    if let Some(stop) = stopped {
        return Err(Failure::stopped(stop));
    }
    let exit = ending::conclude(
        ended.ending,
        output,
        ended.last_message.as_deref(),
        ended.schema,
    )?;
    match ended.blocked.is_empty() {
        true => Ok(exit),
        false => Err(Failure::blocked(&ended.blocked)),
    }
}

/// What the run needs before it starts anything, each checked in the order a user fixes
/// them: `--output-last-message`, the prompt, the provider, the local model's settings and
/// the price a cost budget needs.
struct Request {
    /// `--output-last-message`, checked.
    last_message: Option<PathBuf>,
    /// The prompt.
    prompt: String,
    /// The images attached to it (`--image`).
    images: Vec<Image>,
    /// The provider, and the local model's settings when it is the local one.
    provider: (ProviderConfig, Option<LocalSettings>),
    /// The prompt style the caller chose, if any (else the server decides).
    style: Option<StyleChoice>,
    /// What the run may do, for the session's record and `run_start`.
    permissions: Permissions,
}

impl Request {
    /// Reads and checks it; stdin is read only when the prompt sources ask for it.
    fn read(settings: &Settings) -> Result<Self, Failure> {
        let last_message = settings
            .request
            .last_message
            .as_deref()
            .map(flags::last_message_path)
            .transpose()?;
        let prompt = prompt::assemble(
            &settings.request.prompt,
            &settings.workspace.root,
            &mut std::io::stdin(),
        )?;
        let config = settings
            .model
            .provider
            .as_ref()
            .map_err(|e| Failure::config(e.to_string()))?
            .clone();
        let local = settings.model.local.clone()?;
        let style = settings.model.prompt_style.clone()?;
        settings.budget.check_priced(&config)?;
        let images = prompt::images(&settings.request.prompt, &settings.workspace.root)?;
        if let Some(reason) = config
            .kind
            .cannot_see_images()
            .filter(|_| !images.is_empty())
        {
            return Err(unseen(reason));
        }
        let permissions = Permissions::of(
            settings.workspace.policy.autonomy(),
            &settings.workspace.confinement.commands.sandbox,
        );
        Ok(Request {
            last_message,
            prompt,
            images,
            provider: (config, local),
            style,
            permissions,
        })
    }
}

/// The token the run's work stops on: cancelled by a stop signal, by lifeline EOF, or when
/// stdout goes away.
fn watch_stops(output: &Arc<Output>) -> CancellationToken {
    let cancel = output.stop_token();
    lifecycle::watch(cancel.clone());
    let reader_gone = Arc::clone(output);
    lifecycle::watch_stdout(move || reader_gone.stdout_closed());
    cancel
}

/// What the run talks to: the provider (and the local server it may need) and the MCP
/// servers.
struct Connected {
    /// The local model's server, held until the run is over; the runtime's close stops it.
    _local_server: Option<LocalServer>,
    /// The model's provider.
    provider: Arc<dyn Provider>,
    /// The model's context window, and what its server says about itself: asked as soon as
    /// the provider is built, while the MCP servers start and the first request is prepared.
    window: WindowLookup,
    /// The MCP servers started, their tools and states.
    mcp: mcp::Started,
}

/// Starts the local model's server when the provider needs one, builds the provider, and
/// starts the MCP servers.
fn connect(
    settings: &Settings,
    pieces: &Pieces,
    (mut config, local): (ProviderConfig, Option<LocalSettings>),
    runtime: &tokio::runtime::Runtime,
    output: &Output,
    cancel: &CancellationToken,
) -> Result<Connected, Failure> {
    let local_server = runtime.block_on(local_server::start(
        settings,
        local,
        &mut config,
        &pieces.runtime,
        cancel,
    ))?;
    let provider = settings.cassette.provider(
        || {
            provider::build(&config, output.run_id().as_str())
                .map_err(|e| Failure::config(e.to_string()))
        },
        output.secrets(),
        &settings.workspace.root,
    )?;
    let window = {
        let _entered = runtime.enter();
        WindowLookup::start(settings.model.context_window, Arc::clone(&provider))
    };
    let mcp = runtime.block_on(mcp_servers::start(
        settings,
        &pieces.runtime,
        output,
        cancel,
    ))?;
    Ok(Connected {
        _local_server: local_server,
        provider,
        window,
        mcp,
    })
}

/// The run's session, as the flags ask for it (see [`session::for_run`]).
fn open_session(
    settings: &Settings,
    provider: &dyn Provider,
    permissions: &Permissions,
    output: &Output,
) -> Result<Option<RunSession>, Failure> {
    session::for_run(
        &settings.request.session,
        settings.workspace.runtime.data_dir.as_deref(),
        session::RunFacts {
            workspace: &settings.workspace.root,
            run_id: output.run_id(),
            provider: provider.name(),
            model: provider.model(),
            permissions: permissions.clone(),
            secrets: output.secrets().clone(),
        },
        output,
    )
}

/// What the run offers the model besides its tools' list: the prompt's style and the skills
/// (by name), for `run_start`.
struct Offered {
    /// The system prompt's style.
    style: StyleChoice,
    /// The names of the skills the prompt lists.
    skills: Vec<String>,
}

/// The skills the model is offered: the run's, when the `Skill` tool that loads them is
/// among the tools (`--disabled-tools Skill` offers none).
fn offered_skills(settings: &Settings, toolset: &Toolset) -> Vec<String> {
    match toolset.offers(ToolId::Skill) {
        true => settings
            .skills
            .offered()
            .iter()
            .map(|s| s.name.clone())
            .collect(),
        false => Vec::new(),
    }
}

/// Emits `run_start`, then the warnings the run starts with: the MCP configuration and
/// servers, the session's notes, an unrestricted policy, an incomplete sandbox.
fn announce(
    settings: &Settings,
    connected: &Connected,
    offered: Offered,
    session: Option<&RunSession>,
    permissions: Permissions,
    output: &Output,
) {
    output.emit(EventKind::RunStart {
        cwd: settings.workspace.root.display().to_string(),
        provider: Some(connected.provider.name().to_string()),
        model: Some(connected.provider.model().to_string()),
        sandbox: Some(settings.workspace.confinement.in_force()),
        withheld_env: settings.workspace.confinement.withheld.clone(),
        session_id: session.map(|session| session.id().to_string()),
        resumed_from: session.and_then(|s| s.resumed_from.clone()),
        permissions_changed: session
            .and_then(|s| s.permissions_before.clone())
            .map(|before| PermissionsChanged {
                before,
                now: permissions,
            }),
        mcp_servers: mcp_servers::infos(&connected.mcp.states),
        worktree: settings.workspace.worktree.clone(),
        prompt_style: Some(offered.style),
        skills: offered.skills,
    });
    mcp_servers::warn(&connected.mcp.states, &settings.mcp, output);
    listing::warn_skills(settings, output);
    for note in session.iter().flat_map(|session| &session.notes) {
        output.emit(EventKind::Warning {
            message: format!("resuming the session: {note}"),
        });
    }
    if let Some(warning) = settings.workspace.policy.unrestricted_warning() {
        output.emit(EventKind::Warning { message: warning });
    }
    for message in writable_hooks(settings) {
        output.emit(EventKind::Warning { message });
    }
    for warning in &settings.workspace.confinement.warnings {
        output.emit(EventKind::Warning {
            message: warning.clone(),
        });
    }
}

/// The warnings for hooks the model may rewrite: from `--auto medium` on, it writes the
/// workspace and the `--add-dir` roots, and a hook whose files are there guards nothing.
fn writable_hooks(settings: &Settings) -> Vec<String> {
    let policy = &settings.workspace.policy;
    let writable: Vec<PathBuf> = match policy.autonomy() {
        Autonomy::Low => Vec::new(),
        Autonomy::Medium | Autonomy::High => std::iter::once(&settings.workspace.root)
            .chain(policy.extra_roots())
            .cloned()
            .collect(),
    };
    settings
        .controls
        .hooks
        .writable_warnings(&settings.workspace.root, &writable)
}

/// What the conversation starts from and runs with.
struct Conversation<'a> {
    /// The session's conversation so far.
    history: Vec<Message>,
    /// The prompt, with the session's notes in front.
    prompt: String,
    /// The images attached to the prompt.
    images: Vec<Image>,
    /// The tools on offer.
    toolset: &'a Toolset,
    /// The system prompt's style.
    style: StyleChoice,
    /// The model's context window, found out alongside the first request.
    window: WindowLookup,
    /// Where the conversation is kept, when the run has a session.
    session: Option<&'a RunSession>,
    /// The caller's hooks.
    hooks: &'a Hooks,
    /// The run's stop token.
    cancel: CancellationToken,
}

/// The agent loop, from the system prompt to the ending.
async fn converse(
    settings: &Settings,
    pieces: &Pieces,
    provider: &dyn Provider,
    conversation: Conversation<'_>,
    output: &Output,
) -> Report {
    let compact = conversation.style.compact();
    let workspace = &settings.workspace.root;
    let skills = match conversation.toolset.offers(ToolId::Skill) {
        true => skills::section(settings.skills.offered(), compact),
        false => None,
    };
    let system = system_prompt::build(&system_prompt::PromptFacts {
        workspace,
        policy: &settings.workspace.policy,
        tools: conversation
            .toolset
            .visible()
            .iter()
            .map(|t| t.name())
            .collect(),
        skills: skills.as_deref(),
        answer_schema: settings.request.output_schema.as_ref(),
        compact,
    });
    let agent = AgentRun {
        provider,
        toolset: conversation.toolset,
        context: ToolContext {
            workspace: workspace.clone(),
            // The skills' directories outside the workspace are readable, never writable.
            policy: Arc::new(
                settings
                    .workspace
                    .policy
                    .clone()
                    .with_read_roots(settings.skills.read_roots()),
            ),
            cancel: conversation.cancel,
            plan_updates: None,
        },
        output,
        max_turns: settings.budget.max_turns,
        runtime: &pieces.runtime,
        ledger: &pieces.ledger,
        window: conversation.window,
        schema: settings
            .request
            .output_schema
            .as_ref()
            .map(|schema| SchemaCheck {
                schema,
                retries: settings.request.schema_retries,
            }),
        transcript: conversation.session.map(|session| &session.transcript),
        hooks: conversation.hooks,
        rules: &settings.controls.rules,
        narrowing: &pieces.narrowing,
        checks: &settings.outcome.checks,
        first_reads: match compact {
            true => first_reads::named_files(workspace, &conversation.prompt),
            false => Vec::new(),
        },
    };
    agent
        .run(
            system,
            conversation.history,
            Message::User {
                content: conversation.prompt,
                images: conversation.images,
            },
        )
        .await
}

/// `--image` refused before anything is sent when the model's server says it takes no images
/// (asked within the probe's bound, beside the style; an official API is never asked).
async fn images_seen(window: &WindowLookup) -> Result<(), Failure> {
    match window.server().await.cannot_see_images() {
        Some(reason) => Err(unseen(reason)),
        None => Ok(()),
    }
}

/// The usage error of `--image` for a model that cannot see images, for `reason`.
fn unseen(reason: &str) -> Failure {
    Failure::usage(format!("--image: the model cannot see images: {reason}"))
}

/// The run's prompt style: the one its caller chose, else the one its server's answer calls
/// for (llama.cpp, or a window under [`SMALL_WINDOW`](crate::tools::SMALL_WINDOW): compact),
/// waited for within the probe's own bound. An official API is never asked, so a run against
/// one waits for nothing; a window given by the flag or config.toml counts as reported.
async fn choose_style(
    chosen: Option<StyleChoice>,
    window: &WindowLookup,
    settings: &Settings,
) -> StyleChoice {
    if let Some(chosen) = chosen {
        return chosen;
    }
    let server = window.server().await;
    let given = settings.model.context_window.map(|window| window.tokens);
    StyleChoice::for_server(server.llama_cpp, server.window.or(given))
}

/// The run's hooks, run by its runtime within its deadline and stopped with it (`cancel`),
/// each run reported as a `hook` event.
fn hooks(
    settings: &Settings,
    pieces: &Pieces,
    session: Option<&RunSession>,
    cancel: &CancellationToken,
    output: &Arc<Output>,
) -> Hooks {
    if settings.controls.hooks.is_empty() {
        return Hooks::none();
    }
    let reports = Arc::clone(output);
    let runner = HookRunner {
        runtime: Arc::clone(&pieces.runtime),
        facts: RunFacts {
            run_id: output.run_id().to_string(),
            session_id: session.map(|session| session.id().to_string()),
            workspace: settings.workspace.root.clone(),
            autonomy: settings.workspace.policy.autonomy(),
        },
        deadline: settings.budget.deadline,
        cancel: cancel.clone(),
        sink: Arc::new(move |report| reports.emit(EventKind::Hook(report))),
    };
    Hooks::new(
        settings.controls.hooks.clone(),
        settings.controls.hooks_fail_open,
        Some(runner),
    )
}

/// Runs the `session_start` hooks (`resume` for a resumed session, else `startup`): the
/// context they give follows the prompt. A hook that fails ends the run (exit 2), unless
/// `--hooks-fail-open`.
async fn session_start(
    hooks: &Hooks,
    session: Option<&RunSession>,
    prompt: String,
) -> Result<String, Failure> {
    let source = match session.is_some_and(|session| session.resumed_from.is_some()) {
        true => "resume",
        false => "startup",
    };
    let context = hooks.session_start(source).await.map_err(Failure::usage)?;
    Ok(match context.is_empty() {
        true => prompt,
        false => format!(
            "{prompt}\n\nContext from the caller's session_start hooks:\n\n{}",
            context.join("\n\n")
        ),
    })
}

/// Records how the run ended in its session and what it spent, with a warning for what could
/// not be recorded; the session's running total goes to `run_end`.
fn close_session(
    session: RunSession,
    answered: bool,
    accounting: &mut Accounting,
    output: &Output,
) {
    let (total, problems) = session.end(answered, accounting.spent.total());
    accounting.session_usage = Some(total);
    for message in problems {
        output.emit(EventKind::Warning { message });
    }
}
