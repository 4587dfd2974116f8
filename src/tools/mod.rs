//! The tools the model works through, the registry that offers them, and the policy that
//! decides which calls may run.
//!
//! A tool is a small object behind the [`Tool`] trait: a name, a description written for a
//! model, a JSON input schema, the kind of effect it has on the world, and an async `call`.
//! The [`Registry`] holds every tool this build knows; [`Registry::select`] turns it into the
//! [`Toolset`] one run offers, after `--enabled-tools`/`--disabled-tools` and `--auto` have had
//! their say. Dispatch always goes through the toolset, so a call to a hidden tool is refused
//! with a message that says which flag would allow it.

mod args;
mod catalog;
mod files;
mod fsops;
mod patch;
mod plan;
pub mod policy;
mod prompt_style;
mod search;
pub(crate) use search::workspace_files;
mod shell;
pub(crate) use shell::streams as shell_streams;
#[cfg(test)]
mod testing;
pub(crate) mod text;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::image::Image;
use crate::redact::Secrets;
use crate::runtime::{Runtime, RuntimeError};

pub(crate) use args::{Bounded, parse_args};
pub(crate) use catalog::{ForSpecialists, ToolId};
pub(crate) use patch::patch_paths;
pub(crate) use plan::{PlanStep, StepStatus};
pub use policy::{Access, Permissions, Policy};
pub use prompt_style::{PromptStyle, SMALL_WINDOW, StyleChoice, StyleReason};

/// What a tool can do to the world; decides which `--auto` level may call it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SideEffect {
    /// Reads files or metadata; never changes anything.
    Read,
    /// Creates, changes or deletes files.
    Write,
    /// Runs arbitrary commands.
    Shell,
    /// Acts through a program zero does not know (an MCP server's tool not marked
    /// read-only): whatever that program can do.
    External,
    /// Touches nothing outside the run (e.g. the plan).
    None,
}

/// Why a tool call did not produce a result. The kind decides how the loop reports it (a
/// policy denial also becomes a `permission_decision` event); the text goes to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments were missing, mistyped, or not valid JSON.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// Policy refused the call; the message names the flag or level that would allow it.
    #[error("permission denied: {0}")]
    Denied(String),
    /// The tool ran and failed (file not found, no match, command could not start, ...).
    #[error("{0}")]
    Failed(String),
    /// The run was cancelled while the tool was working.
    #[error("cancelled: the run is stopping")]
    Cancelled,
}

impl ToolError {
    /// The same error with every secret in its message masked.
    fn redacted(self, secrets: &Secrets) -> ToolError {
        match self {
            ToolError::InvalidArguments(message) => {
                ToolError::InvalidArguments(secrets.apply(&message))
            }
            ToolError::Denied(message) => ToolError::Denied(secrets.apply(&message)),
            ToolError::Failed(message) => ToolError::Failed(secrets.apply(&message)),
            ToolError::Cancelled => ToolError::Cancelled,
        }
    }
}

/// What a tool returns to the model on success.
pub(crate) type ToolResult = Result<String, ToolError>;

/// What a call returns when it may be more than text: `read_file` of an image gives the image
/// too, for the model to see (or, when it cannot, to be told it cannot).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model gets.
    pub text: String,
    /// The images, after the text.
    pub images: Vec<Image>,
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput {
            text,
            images: Vec::new(),
        }
    }
}

/// Everything a tool call may consult besides its arguments.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace root, canonicalized; relative paths are resolved against it.
    pub workspace: PathBuf,
    /// What this run is allowed to do.
    pub policy: Arc<Policy>,
    /// Cancelled when the run stops; long-running tools must return promptly.
    pub cancel: CancellationToken,
    /// Receives plan updates from `update_plan`.
    pub plan_updates: Option<tokio::sync::mpsc::UnboundedSender<Vec<PlanStep>>>,
}

impl ToolContext {
    /// Resolves a path argument for `access`, refusing it when policy confines the run and the
    /// path (after `..` and symlinks) leaves every allowed root.
    pub fn resolve(&self, path: &str, access: Access) -> Result<PathBuf, ToolError> {
        self.policy.resolve(&self.workspace, path, access)
    }
}

/// One tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// What it does and how to use it well, written for the model.
    fn description(&self) -> &str;
    /// The JSON Schema of its arguments object.
    fn input_schema(&self) -> Value;
    /// Its effect on the world.
    fn side_effect(&self) -> SideEffect;
    /// Runs one call. `args` is the parsed arguments object as the model sent it.
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult;
    /// Runs one call whose result may carry images. Only a tool that can return one
    /// (`read_file`) overrides this; for every other tool it is [`Tool::call`]'s text.
    async fn call_with_images(
        &self,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.call(args, ctx).await.map(ToolOutput::from)
    }
}

/// Every tool this build knows, by name.
#[derive(Clone)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl Registry {
    /// The core tools (files, search, patch, shell and plan), with `bash` running every
    /// command, foreground or background, through the run's shared `runtime`. The task tools
    /// that follow its background commands are added by `tasks::register`.
    pub fn with_runtime(runtime: Arc<Runtime>) -> Self {
        let mut registry = Registry {
            tools: BTreeMap::new(),
        };
        for id in ToolId::ALL {
            if let Some(tool) = core_tool(*id, &runtime) {
                registry.register(tool);
            }
        }
        registry
    }

    /// Adds a tool (a later registration of the same name replaces the earlier one).
    pub(crate) fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_string(), tool);
    }

    /// All known tool names, sorted.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// Whether a tool of this name exists.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The tools one run offers under `filter` and `policy`.
    pub fn select(&self, filter: &ToolFilter, policy: &Policy) -> Toolset {
        let mut visible = Vec::new();
        let mut hidden = BTreeMap::new();
        for (name, tool) in &self.tools {
            match filter.hides(name) {
                Some(reason) => {
                    hidden.insert(name.clone(), (Arc::clone(tool), reason));
                }
                None => match policy.permits(tool.side_effect()) {
                    Ok(()) => visible.push(Arc::clone(tool)),
                    Err(reason) => {
                        hidden.insert(name.clone(), (Arc::clone(tool), Hidden::Policy(reason)));
                    }
                },
            }
        }
        Toolset {
            visible,
            hidden,
            secrets: Secrets::default(),
        }
    }
}

/// zero's own tool `id` as `tools` implements it, or `None` for the task tools, which
/// `tasks::register` adds, and `Skill` and `web_fetch`, which `skills` and `web` implement and
/// `exec` adds when the run offers them. A match over every tool, so a new one cannot be forgotten here.
fn core_tool(id: ToolId, runtime: &Arc<Runtime>) -> Option<Arc<dyn Tool>> {
    Some(match id {
        ToolId::ReadFile => Arc::new(files::ReadFile),
        ToolId::ListDirectory => Arc::new(search::ListDirectory),
        ToolId::Glob => Arc::new(search::Glob),
        ToolId::Grep => Arc::new(search::Grep),
        ToolId::WriteFile => Arc::new(files::WriteFile),
        ToolId::EditFile => Arc::new(files::EditFile),
        ToolId::ApplyPatch => Arc::new(patch::ApplyPatch),
        ToolId::Bash => Arc::new(shell::Bash::new(Arc::clone(runtime))),
        ToolId::UpdatePlan => Arc::new(plan::UpdatePlan),
        ToolId::Task | ToolId::TaskOutput | ToolId::TaskStop | ToolId::Skill | ToolId::WebFetch => {
            return None;
        }
    })
}

/// The `--enabled-tools` / `--disabled-tools` lists, already validated against the registry.
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    /// When non-empty, only these tools are offered.
    pub(crate) enabled: Vec<String>,
    /// These tools are never offered.
    pub(crate) disabled: Vec<String>,
}

impl ToolFilter {
    /// Also hides `tools`, but for those the filter enables by name.
    pub(crate) fn leave_out(&mut self, tools: impl IntoIterator<Item = ToolId>) {
        for name in tools.into_iter().map(ToolId::name) {
            if !self.enabled.iter().any(|enabled| enabled == name) {
                self.disabled.push(name.to_string());
            }
        }
    }

    fn hides(&self, name: &str) -> Option<Hidden> {
        if self.disabled.iter().any(|d| names(d, name)) {
            Some(Hidden::Disabled)
        } else if !self.enabled.is_empty() && !self.enabled.iter().any(|e| names(e, name)) {
            Some(Hidden::NotEnabled)
        } else {
            None
        }
    }
}

/// Whether a filter entry names `tool`: the same name, or a pattern `PREFIX__*` (an MCP
/// server's `mcp__SERVER__*`) that `tool` starts with.
fn names(entry: &str, tool: &str) -> bool {
    match entry.strip_suffix('*') {
        Some(prefix) if prefix.ends_with("__") => tool.starts_with(prefix),
        _ => entry == tool,
    }
}

/// Why a known tool is not offered in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Hidden {
    Disabled,
    NotEnabled,
    Policy(String),
}

/// The tools one run offers, and the dispatch point for every call the model makes.
#[derive(Clone)]
pub struct Toolset {
    visible: Vec<Arc<dyn Tool>>,
    hidden: BTreeMap<String, (Arc<dyn Tool>, Hidden)>,
    /// Masked in every result and error before the model sees it.
    secrets: Secrets,
}

impl Toolset {
    /// The toolset with `secrets` masked in every result: a command's output or a file may
    /// hold a key, and what the model reads it can repeat anywhere.
    pub(crate) fn redacting(mut self, secrets: Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    /// The tools the model sees, sorted by name.
    pub(crate) fn visible(&self) -> &[Arc<dyn Tool>] {
        &self.visible
    }

    /// Whether this run offers zero's own tool `id`.
    pub(crate) fn offers(&self, id: ToolId) -> bool {
        self.visible.iter().any(|tool| tool.name() == id.name())
    }

    /// The side effect of a tool the registry knows, offered in this run or not.
    pub(crate) fn side_effect_of(&self, name: &str) -> Option<SideEffect> {
        self.visible
            .iter()
            .find(|t| t.name() == name)
            .or_else(|| self.hidden.get(name).map(|(tool, _)| tool))
            .map(|t| t.side_effect())
    }

    /// Looks up a tool for a call, or says precisely why it cannot be called.
    pub fn lookup(&self, name: &str) -> Result<&Arc<dyn Tool>, ToolError> {
        if let Some(tool) = self.visible.iter().find(|t| t.name() == name) {
            return Ok(tool);
        }
        Err(match self.hidden.get(name) {
            Some((_, Hidden::Disabled)) => ToolError::Failed(format!(
                "tool `{name}` is not enabled for this run (it is listed in --disabled-tools)"
            )),
            Some((_, Hidden::NotEnabled)) => ToolError::Failed(format!(
                "tool `{name}` is not enabled for this run (it is not listed in --enabled-tools)"
            )),
            Some((_, Hidden::Policy(reason))) => ToolError::Denied(reason.clone()),
            None => ToolError::Failed(format!(
                "unknown tool `{name}`; the tools available are: {}",
                self.visible
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        })
    }

    /// Runs one call: looks the tool up, then calls it. Arguments are validated by the tool.
    /// What comes back has every known secret masked.
    pub async fn call(&self, name: &str, args: Value, ctx: &ToolContext) -> ToolResult {
        self.call_with_images(name, args, ctx)
            .await
            .map(|output| output.text)
    }

    /// [`Toolset::call`], with the images the tool returned (see [`Tool::call_with_images`]).
    pub async fn call_with_images(
        &self,
        name: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let tool = self.lookup(name)?;
        match tool.call_with_images(args, ctx).await {
            Ok(output) => Ok(ToolOutput {
                text: self.secrets.apply(&output.text),
                images: output.images,
            }),
            Err(error) => Err(error.redacted(&self.secrets)),
        }
    }
}

/// A runtime error as the model should see it, with what to do about it where there is
/// something to do. Decided by the error's kind.
pub(crate) fn tool_error(error: RuntimeError) -> ToolError {
    match error {
        RuntimeError::MalformedId(_) => ToolError::InvalidArguments(error.to_string()),
        RuntimeError::TooManyTasks { .. } => ToolError::Failed(format!(
            "{error}; stop one with TaskStop or wait for one to end (TaskOutput with \
             block=true), then start this again"
        )),
        RuntimeError::UnknownTask(_) => ToolError::Failed(format!(
            "{error}; a task's id is in the result of the call that started it"
        )),
        _ => ToolError::Failed(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{RunId, RuntimeConfig};

    #[test]
    fn the_core_tools_are_the_ones_a_manifest_may_grant_as_the_catalog_describes_them() {
        let runtime = Runtime::new(
            RuntimeConfig::new(RunId::generate(), std::env::temp_dir().join("unused")),
            Arc::new(|_| {}),
        );
        let registry = Registry::with_runtime(Arc::new(runtime));
        let grantable: Vec<&str> = ToolId::for_specialists(ForSpecialists::Manifest)
            .map(ToolId::name)
            .collect();
        assert_eq!(registry.names(), grantable);
        for tool in registry.tools.values() {
            let id = ToolId::from_name(tool.name()).expect("a catalog tool");
            assert_eq!(tool.side_effect(), id.side_effect(), "{}", tool.name());
        }
    }
}
