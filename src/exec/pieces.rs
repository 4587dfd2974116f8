//! What a run and a listing of its tools are both built on: the ledger of the run tree's
//! spending, the runtime every command, service and specialist belongs to (lazy: it costs
//! nothing until something is started), the registry of tools with the specialists' tools in
//! it (`web_fetch` when the run offers it, `Skill` added with the MCP servers' tools), and the
//! filter the flags put on them.

use std::sync::Arc;

use crate::agent::permission;
use crate::mcp;
use crate::output::{EventKind, Output};
use crate::rules::Narrowing;
use crate::runtime::{Runtime, TaskEvent, TaskEventSink, TaskKind};
use crate::skills::{Finding, SkillTool};
use crate::tasks;
use crate::tools::{Policy, PromptStyle, Registry, ToolFilter, ToolId, Toolset};
use crate::usage::Ledger;
use crate::web::WebFetch;

use super::failure::Failure;
use super::settings::{Settings, web_gate};

/// The run's ledger, runtime, registry and tool filter.
pub(super) struct Pieces {
    /// What the run tree spent, against its budget.
    pub(super) ledger: Arc<Ledger>,
    /// The runtime every command the run starts belongs to.
    pub(super) runtime: Arc<Runtime>,
    /// The worktrees of the specialists launched with `isolation: worktree` (`None` when the
    /// run launches none: it is a specialist itself).
    isolated: Option<Arc<tasks::Isolated>>,
    /// The tools, before the MCP servers', `Skill` and the filter.
    registry: Registry,
    /// The run's skills, being found: `Skill` joins the tools once they are (and there are
    /// some), when the toolset is made, so their discovery runs beside the run's start.
    skills: Arc<Finding>,
    /// The run's skills in use, whose `allowed-tools` narrow its calls: `Skill` adds to them,
    /// the permission step asks them, and each specialist is handed them.
    pub(super) narrowing: Arc<Narrowing>,
    /// The flags' tool filter, checked against the registry.
    filter: ToolFilter,
}

impl Pieces {
    /// Builds them from `settings`; the runtime's task events go to `output`. A tool filter
    /// naming an unknown tool is a usage error.
    pub(super) fn new(settings: &Settings, output: &Arc<Output>) -> Result<Self, Failure> {
        let ledger = Arc::new(settings.budget.ledger());
        let runtime = Arc::new(Runtime::new(
            settings.workspace.runtime_config(output.secrets()),
            task_events(output),
        ));
        let mut registry = Registry::with_runtime(Arc::clone(&runtime));
        let narrowing = settings.skills.narrowing(&settings.workspace.root);
        let launcher = settings.launcher(output.run_id(), &ledger, &narrowing);
        let isolated = tasks::register(&mut registry, &runtime, launcher);
        add_offered(&mut registry, settings);
        let filter = settings.tool_filter(&registry)?;
        Ok(Pieces {
            ledger,
            runtime,
            isolated,
            registry,
            skills: settings.skills.finding(),
            narrowing,
            filter,
        })
    }

    /// The registry with the MCP servers' tools and `Skill` (when the run has skills), as the
    /// run's flags, `policy` and prompt `style` select it (the compact style leaves out what
    /// the catalog says it does).
    pub(super) fn toolset(
        &self,
        started: &mcp::Started,
        policy: &Policy,
        style: PromptStyle,
        output: &Output,
    ) -> Toolset {
        let mut registry = self.registry.clone();
        for tool in &started.tools {
            registry.register(Arc::clone(tool));
        }
        if !self.skills.skills().is_empty() {
            registry.register(Arc::new(SkillTool::new(
                Arc::clone(&self.skills),
                Arc::clone(&self.narrowing),
            )));
        }
        let mut filter = self.filter.clone();
        if style == PromptStyle::Compact {
            filter.leave_out(ToolId::compact_leaves_out());
        }
        registry
            .select(&filter, policy)
            .redacting(output.secrets().clone())
    }
}

impl Pieces {
    /// Stops whatever tasks are still running, then ends the isolated specialists' worktrees
    /// (their work committed, the kept ones' directories removed, branches kept), and reports
    /// what could not be cleaned up; the stopped tasks themselves are reported by their
    /// `task_finished` events.
    pub(super) async fn close(&self, output: &Output) {
        let closed = self.runtime.close().await;
        for error in closed.errors {
            output.emit(EventKind::Warning {
                message: format!("while stopping the run's background tasks: {error}"),
            });
        }
        if let Some(event) = EventKind::git_restored(None, &closed.git) {
            output.emit(event);
        }
        let Some(isolated) = &self.isolated else {
            return;
        };
        for error in isolated.close().await {
            output.emit(EventKind::Warning {
                message: format!("while ending the specialists' worktrees: {error}"),
            });
        }
    }
}

/// Adds `web_fetch` when the caller asked for it, its fetches gated by the run's rules.
fn add_offered(registry: &mut Registry, settings: &Settings) {
    if settings.controls.web_fetch {
        let gate = web_gate(&settings.controls.rules);
        registry.register(Arc::new(WebFetch::new(gate)));
    }
}

/// Forwards the task runtime's events to the output.
fn task_events(output: &Arc<Output>) -> TaskEventSink {
    let output = Arc::clone(output);
    Arc::new(move |event| match event {
        TaskEvent::Started(record) => output.emit(EventKind::TaskStarted {
            task_id: record.id.to_string(),
            kind: record.kind,
            description: record.description,
        }),
        TaskEvent::Refused(record, refused) => {
            if let TaskKind::Shell { command } = &record.kind {
                permission::emit_task_exec_refusals(record.id.as_str(), command, refused, &output);
            }
        }
        TaskEvent::Finished(record) => output.emit(EventKind::TaskFinished {
            task_id: record.id.to_string(),
            kind: record.kind,
            status: record.status,
            exit_code: record.exit_code,
        }),
        TaskEvent::Unrecorded(error) => output.emit(EventKind::Warning {
            message: format!("a background task's state could not be saved: {error}"),
        }),
    })
}
