//! Scaffolding for the agent's unit tests: a provider that plays a script of responses and
//! keeps every request it was sent, and a [`Harness`] that runs an [`AgentRun`] against it with
//! the core tools in a temporary workspace.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{AgentRun, Report, SchemaCheck};
use crate::hooks::Hooks;
use crate::output::{Output, OutputFormat};
use crate::provider::{
    Completion, ContextWindow, Notice, Provider, ProviderError, Request, StopReason, StreamDelta,
    ToolCall, Usage, WindowLookup, WindowSource,
};
use crate::runtime::{RunId, Runtime, RuntimeConfig};
use crate::structured::OutputSchema;
use crate::tools::policy::Autonomy;
use crate::tools::{Policy, Registry, ToolContext, ToolFilter, Toolset};
use crate::usage::{Ledger, Limits};

/// A provider that answers each request with the next response of its script.
#[derive(Default)]
pub(super) struct Scripted {
    responses: Mutex<VecDeque<Result<Completion, ProviderError>>>,
    requests: Mutex<Vec<Request>>,
}

impl Scripted {
    /// The requests sent so far, in order.
    pub(super) fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl Provider for Scripted {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &Request,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        _: &mut (dyn FnMut(Notice) + Send),
        _: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        self.requests.lock().unwrap().push(request.clone());
        let response = self.responses.lock().unwrap().pop_front();
        let response = response.unwrap_or_else(|| panic!("the script ran out at {request:?}"));
        if let Ok(completion) = &response {
            on_delta(StreamDelta::Text(completion.text.clone()));
        }
        response
    }

    async fn server_report(&self) -> crate::provider::ServerReport {
        crate::provider::ServerReport::default()
    }
}

/// A response that answers with `text`, calling no tool.
pub(super) fn answer(text: &str) -> Completion {
    Completion {
        text: text.into(),
        tool_calls: Vec::new(),
        thinking: Vec::new(),
        usage: None,
        stop: StopReason::EndTurn,
    }
}

/// A response that makes `calls`, each a tool's name and its arguments as JSON text.
pub(super) fn calling(calls: &[(&str, &str)]) -> Completion {
    Completion {
        text: String::new(),
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(index, (name, arguments))| ToolCall {
                id: format!("call_{index}"),
                name: (*name).into(),
                arguments: (*arguments).into(),
            })
            .collect(),
        thinking: Vec::new(),
        usage: None,
        stop: StopReason::ToolUse,
    }
}

/// `completion`, having spent `tokens` prompt tokens as the provider counted them.
pub(super) fn spending(completion: Completion, tokens: u64) -> Completion {
    Completion {
        usage: Some(Usage {
            prompt_tokens: tokens,
            ..Usage::default()
        }),
        ..completion
    }
}

/// A runtime that starts nothing on disk until a background task needs it (none here).
pub(super) fn runtime() -> Arc<Runtime> {
    Arc::new(Runtime::new(
        RuntimeConfig::new(RunId::generate(), std::env::temp_dir().join("unused")),
        Arc::new(|_| {}),
    ))
}

/// The core tools, at `--auto medium`, in a temporary workspace.
pub(super) struct Harness {
    /// The workspace, removed with the harness.
    pub(super) workspace: tempfile::TempDir,
    runtime: Arc<Runtime>,
    toolset: Toolset,
    output: Output,
    /// The provider, and the script it plays.
    pub(super) provider: Scripted,
    /// The run's budget.
    pub(super) limits: Limits,
    /// The run's `--max-turns`.
    pub(super) max_turns: u32,
    /// The model's context window.
    pub(super) window: u32,
    /// The run's `--output-schema`, with its retries.
    pub(super) schema: Option<(OutputSchema, u32)>,
    /// The files read before the first request.
    pub(super) first_reads: Vec<String>,
    /// The run's cancellation.
    pub(super) cancel: CancellationToken,
}

impl Harness {
    /// A harness whose provider plays `script`, with a file `notes.txt` in its workspace.
    pub(super) fn new(script: Vec<Result<Completion, ProviderError>>) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("notes.txt"), "the notes\n").unwrap();
        let runtime = runtime();
        let toolset = core_tools(&runtime, workspace.path());
        Harness {
            workspace,
            runtime,
            toolset,
            output: Output::new(OutputFormat::Json, Default::default()),
            provider: Scripted {
                responses: Mutex::new(script.into()),
                requests: Mutex::default(),
            },
            limits: Limits::default(),
            max_turns: 10,
            window: 128_000,
            schema: None,
            first_reads: Vec::new(),
            cancel: CancellationToken::new(),
        }
    }

    /// Runs `prompt` to its end.
    pub(super) async fn run(&self, prompt: &str) -> Report {
        let ledger = Ledger::new(self.limits, Default::default(), None);
        let root = self.workspace.path().canonicalize().unwrap();
        let agent = AgentRun {
            provider: &self.provider,
            toolset: &self.toolset,
            context: ToolContext {
                policy: Arc::new(policy(&root)),
                workspace: root,
                cancel: self.cancel.clone(),
                plan_updates: None,
            },
            output: &self.output,
            max_turns: self.max_turns,
            runtime: &self.runtime,
            ledger: &ledger,
            window: WindowLookup::known(ContextWindow {
                tokens: self.window,
                source: WindowSource::Flag,
            }),
            schema: self.schema.as_ref().map(|(schema, retries)| SchemaCheck {
                schema,
                retries: *retries,
            }),
            transcript: None,
            hooks: &Hooks::none(),
            rules: &crate::rules::RuleSet::default(),
            narrowing: &crate::rules::Narrowing::default(),
            first_reads: self.first_reads.clone(),
            checks: &crate::verify::Checks::none(),
        };
        agent
            .run(
                "system".into(),
                Vec::new(),
                crate::provider::Message::user(prompt),
            )
            .await
    }
}

/// The core tools as a run at `--auto medium` in `root` offers them.
pub(super) fn core_tools(runtime: &Arc<Runtime>, root: &Path) -> Toolset {
    Registry::with_runtime(Arc::clone(runtime)).select(&ToolFilter::default(), &policy(root))
}

/// `--auto medium` confined to `root`.
fn policy(root: &Path) -> Policy {
    Policy::new(Autonomy::Medium, false, vec![root.to_path_buf()])
}
