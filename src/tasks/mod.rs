//! The task tools — `Task`, `TaskOutput`, `TaskStop` — and what they need: specialist
//! manifests and their discovery, and the child `zero exec` a specialist runs as.
//!
//! A specialist is a named sub-agent: a system prompt plus the tools it may use, defined by a
//! manifest — a markdown file with YAML front matter (see `manifest` for the format and
//! `docs/SPECIALISTS.md` for the user's view). Three are built in; users and projects add
//! their own or replace the built-in ones by name, and Claude Code agent files are read too,
//! so agents written for Claude Code work here unchanged.
//!
//! Discovery (`discover`) reads the file system and so runs only when something asks for the
//! specialists (`--list-specialists`, a `Task` call); a plain run never pays for it.
//!
//! The tools are thin adapters over the run's [`Runtime`], which owns every task; [`register`]
//! adds them to a registry, built complete from what `exec` hands over.

mod child;
mod discovery;
mod ending;
mod isolation;
pub(crate) mod manifest;
mod output;
mod stop;
mod task;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::mcp;

use crate::runtime::{RunId, Runtime, TaskKind, TaskRecord};
use crate::tools::Registry;
use crate::usage::Ledger;

pub(crate) use child::{ChildEnv, HandedHooks, HandedRules, HandedSkills, ModelChoices, Parent};
pub(crate) use discovery::{SearchPaths, discover};
pub use isolation::Isolated;
pub(crate) use isolation::Isolation;

/// How long one wait for a specialist's end lasts before waiting again (a foreground `Task`
/// call, an isolated specialist's worktree): there is no overall limit (the child has its own
/// turn budget), but each wait stays cancellable.
const WAIT_SLICE: Duration = Duration::from_secs(3600);

/// What a run needs to launch specialists.
pub struct Launcher {
    /// The launching run's id, handed to each child so it knows it is one.
    pub(crate) parent_run: RunId,
    /// The run's provider, which children use too; `None` when the run has none (a listing
    /// of the tools needs no provider, and then no specialist can be launched).
    pub(crate) provider: Option<ChildEnv>,
    /// Where the specialists' manifests are found.
    pub(crate) search: SearchPaths,
    /// The run's spending: each child gets what is left of the budget and reports back to it.
    pub(crate) ledger: Arc<Ledger>,
    /// The run's MCP servers, as a child reads them (`${VAR}` already expanded, since a
    /// child's environment may lack the variables): a specialist whose tools name a server
    /// gets its entry, and starts its own copy.
    pub(crate) mcp_servers: Vec<(String, mcp::config::Entry)>,
    /// The run's hooks, which every specialist runs too; `None` when it has none.
    pub(crate) hooks: Option<HandedHooks>,
    /// The run's permission rules, which every specialist has too.
    pub(crate) rules: HandedRules,
    /// The run's skills, of which a specialist gets those its manifest lists.
    pub(crate) skills: HandedSkills,
    /// The run's skills in use: a specialist is launched narrowed as its launching run is.
    pub(crate) narrowing: Arc<crate::rules::Narrowing>,
    /// The cassette the run records to or replays from, which every specialist shares under
    /// its own task tag; `None` without `--record` or `--replay`.
    pub(crate) cassette: Option<crate::cassette::Link>,
}

/// Adds the task tools over `runtime` to `registry`: `TaskOutput` and `TaskStop` always, and
/// `Task` when the run may launch specialists (`launcher`; a specialist never launches
/// specialists of its own). Returns the run's isolated worktrees when it may launch
/// specialists: the run ends them (`Isolated::close`) after its runtime's close.
pub fn register(
    registry: &mut Registry,
    runtime: &Arc<Runtime>,
    launcher: Option<Launcher>,
) -> Option<Arc<Isolated>> {
    let isolated = launcher.as_ref().map(|launcher| {
        Arc::new(Isolated::new(
            Arc::clone(runtime),
            launcher.parent_run.clone(),
        ))
    });
    registry.register(Arc::new(output::TaskOutput::new(
        Arc::clone(runtime),
        isolated.clone(),
    )));
    registry.register(Arc::new(stop::TaskStop::new(Arc::clone(runtime))));
    if let (Some(launcher), Some(isolated)) = (launcher, &isolated) {
        registry.register(Arc::new(task::TaskTool::new(
            Arc::clone(runtime),
            launcher,
            Arc::clone(isolated),
        )));
    }
    isolated
}

/// A sub-agent that can be launched by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Specialist {
    /// Its unique name: `^[a-z][a-z0-9-]{0,63}$`.
    pub(crate) name: String,
    /// When to use it, written for the model that decides whether to launch it.
    pub(crate) description: String,
    /// The zero tools it may use, sorted and without duplicates.
    pub(crate) tools: Vec<&'static str>,
    /// The MCP tools it may use (`mcp__SERVER__TOOL`, `mcp__SERVER__*`), sorted and without
    /// duplicates: the launching run hands it those servers' configuration.
    pub(crate) mcp_tools: Vec<String>,
    /// The model it runs on; `None` means the model of the run that launches it.
    pub(crate) model: Option<String>,
    /// How hard its model reasons; `None` means as the launching run's does.
    pub(crate) reasoning_effort: Option<crate::provider::ReasoningEffort>,
    /// Where it works: in the launching run's workspace, or in a worktree of its own (the
    /// `Task` call may ask for one too).
    pub(crate) isolation: Isolation,
    /// The checks its work must pass (the manifest's `verify`): its child's `--verify`, with
    /// the `Task` call's own.
    pub(crate) verify: Vec<String>,
    /// The skills it may load (`skills:`), sorted and without duplicates: of those the
    /// launching run offers, never others.
    pub(crate) skills: Vec<String>,
    /// Its system prompt: the manifest's body, trimmed.
    pub(crate) prompt: String,
    /// Where it was defined, so a user can tell which of several same-named manifests won.
    pub(crate) source: Source,
}

/// Where a specialist's manifest came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Compiled into zero.
    Builtin,
    /// A manifest file on disk.
    File(PathBuf),
}

impl fmt::Display for Source {
    /// `builtin`, or the manifest's path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("builtin"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The record as `key: value` lines.
fn describe(record: &TaskRecord) -> String {
    let mut lines = vec![
        format!("task_id: {}", record.id),
        format!("kind: {}", record.kind.as_str()),
        match &record.kind {
            TaskKind::Specialist { name } => format!("name: {name}"),
            TaskKind::Shell { command } => format!("command: {command}"),
        },
    ];
    if let Some(description) = &record.description {
        lines.push(format!("description: {description}"));
    }
    lines.push(format!("status: {}", record.status.as_str()));
    if let Some(code) = record.exit_code {
        lines.push(format!("exit_code: {code}"));
    }
    if let Some(signal) = record.signal {
        lines.push(format!("signal: {}", signal_name(signal)));
    }
    if let Some(reason) = &record.reason {
        lines.push(format!("reason: {reason}"));
    }
    lines.push(format!("started_at: {}", record.started_at));
    if let Some(ended) = &record.ended_at {
        lines.push(format!("ended_at: {ended}"));
    }
    lines.join("\n") + "\n"
}

/// A signal's number with its name (`9 (SIGKILL)`), or the number alone when the platform
/// does not know it.
fn signal_name(signal: i32) -> String {
    match nix::sys::signal::Signal::try_from(signal) {
        Ok(known) => format!("{signal} ({})", known.as_str()),
        Err(_) => signal.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::runtime::RuntimeConfig;
    use crate::tools::policy::Autonomy;
    use crate::tools::{Policy, SideEffect, ToolFilter, ToolId};
    use crate::usage::{Ledger, Limits};

    #[test]
    fn every_catalog_tool_is_registered_under_its_name_with_its_side_effect() {
        let runtime = Arc::new(Runtime::new(
            RuntimeConfig::new(RunId::generate(), std::env::temp_dir().join("unused")),
            Arc::new(|_| {}),
        ));
        let mut registry = Registry::with_runtime(Arc::clone(&runtime));
        let launcher = Launcher {
            parent_run: RunId::generate(),
            provider: None,
            search: SearchPaths::new(Path::new("/nonexistent"), |_| None),
            ledger: Arc::new(Ledger::new(Limits::default(), Default::default(), None)),
            mcp_servers: Vec::new(),
            hooks: None,
            rules: HandedRules::default(),
            skills: HandedSkills::default(),
            narrowing: Default::default(),
            cassette: None,
        };
        register(&mut registry, &runtime, Some(launcher));
        let everything = Policy::new(Autonomy::High, false, Vec::new());
        let toolset = registry.select(&ToolFilter::default(), &everything);
        let registered: Vec<(&str, SideEffect)> = toolset
            .visible()
            .iter()
            .map(|tool| (tool.name(), tool.side_effect()))
            .collect();
        // `Skill` and `web_fetch` are registered by `exec`, when the run offers them.
        let mut catalog: Vec<(&str, SideEffect)> = ToolId::ALL
            .iter()
            .filter(|id| !matches!(id, ToolId::Skill | ToolId::WebFetch))
            .map(|id| (id.name(), id.side_effect()))
            .collect();
        catalog.sort_unstable_by_key(|(name, _)| *name);
        assert_eq!(registered, catalog);
    }
}
