//! `Task`: launches a specialist as a child `zero exec` process of this binary — a thin adapter
//! over [`Runtime`], which owns the child like any other task. How the child is started and
//! read back is [`super::child`]'s business. The child writes stream-json to the task's output
//! file; its events never reach this run's stdout (the runtime reports only `task_started` and
//! `task_finished`).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use super::child::{
    self, ChildEnv, ChildRun, HOOKS_FILE, HandedHooks, HandedRules, HandedSkills, KEY_FILE,
    MCP_FILE, PROMPT_FILE, SCHEMA_FILE, USAGE_FILE,
};
use super::ending::{self, ChildEnding};
use super::isolation::Prepared;
use super::{
    Isolated, Isolation, Launcher, SearchPaths, Specialist, WAIT_SLICE, describe, discover,
};
use crate::mcp;
use crate::runtime::{RunId, Runtime, TaskId, TaskKind, TaskRecord, TaskSpec, TaskStatus};
use crate::structured::OutputSchema;
use crate::tools::{
    SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args, tool_error,
};
use crate::usage::{Ledger, Limits};
use crate::verify::MAX_CHECKS;

/// The most of a specialist's answer a `Task` result holds; the rest is read with
/// `TaskOutput` (the result says how).
const ANSWER_CAP: usize = 32 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    name: String,
    prompt: String,
    description: Option<String>,
    run_in_background: Option<bool>,
    output_schema: Option<Value>,
    isolation: Option<Isolation>,
    include_uncommitted: Option<bool>,
    verify: Option<Vec<String>>,
}

/// What discovery found, read once per run on first use.
struct Catalog {
    specialists: Vec<Specialist>,
    warnings: Vec<String>,
}

/// Launches a specialist. See the module documentation.
pub(super) struct TaskTool {
    runtime: Arc<Runtime>,
    /// This run's id, handed to each child in `ZERO_PARENT_RUN`.
    parent_run: RunId,
    /// The run's provider, for its children; `None` when the run has none (a listing).
    provider: Option<ChildEnv>,
    /// Where the specialists are found.
    search: SearchPaths,
    /// The run's spending, which each child's is counted in.
    ledger: Arc<Ledger>,
    /// The run's MCP servers, as a child reads them.
    mcp_servers: Vec<(String, mcp::config::Entry)>,
    /// The run's hooks, handed to every child.
    hooks: Option<HandedHooks>,
    /// The run's permission rules, handed to every child.
    rules: HandedRules,
    /// The run's skills, of which a child gets those its manifest lists.
    skills: HandedSkills,
    /// The run's skills in use, which narrow each child launched while they are.
    narrowing: Arc<crate::rules::Narrowing>,
    catalog: OnceCell<Catalog>,
    /// Whether discovery's warnings were already reported (they go into one result only).
    warned: AtomicBool,
    /// Numbers the private files (prompts, keys), which share the run directory.
    files: AtomicU64,
    /// The worktrees of the specialists launched with `isolation: worktree`.
    isolated: Arc<Isolated>,
    /// The run's cassette, which each child shares under the tag of its launch's number.
    cassette: Option<crate::cassette::Link>,
    /// How many children were launched: the next one's cassette tag follows.
    launches: AtomicU64,
}

impl TaskTool {
    /// The tool over the run's runtime, complete: what `launcher` says is all it needs.
    pub(crate) fn new(runtime: Arc<Runtime>, launcher: Launcher, isolated: Arc<Isolated>) -> Self {
        TaskTool {
            runtime,
            parent_run: launcher.parent_run,
            provider: launcher.provider,
            search: launcher.search,
            ledger: launcher.ledger,
            mcp_servers: launcher.mcp_servers,
            hooks: launcher.hooks,
            rules: launcher.rules,
            skills: launcher.skills,
            narrowing: launcher.narrowing,
            catalog: OnceCell::new(),
            warned: AtomicBool::new(false),
            files: AtomicU64::new(0),
            isolated,
            cassette: launcher.cassette,
            launches: AtomicU64::new(0),
        }
    }

    /// The specialists, discovered on a blocking thread on first use.
    async fn catalog(&self) -> Result<&Catalog, ToolError> {
        self.catalog
            .get_or_try_init(|| async {
                let paths = self.search.clone();
                let found = tokio::task::spawn_blocking(move || discover(&paths))
                    .await
                    .map_err(|e| ToolError::Failed(format!("specialist discovery failed: {e}")))?;
                Ok(Catalog {
                    specialists: found.specialists,
                    warnings: found.warnings.iter().map(ToString::to_string).collect(),
                })
            })
            .await
    }

    /// Discovery's warnings, told to the model once per run (with the first call), else
    /// nothing.
    fn first_warnings(&self, catalog: &Catalog) -> String {
        if self.warned.swap(true, Ordering::Relaxed) {
            return String::new();
        }
        catalog
            .warnings
            .iter()
            .map(|warning| format!("warning: {warning}\n"))
            .collect()
    }

    /// Writes the files a child of `specialist` is handed: its prompt, the schema of its
    /// answer, its MCP servers' entries, and the run's key.
    async fn hand_off(
        &self,
        specialist: &Specialist,
        prompt: &str,
        output_schema: Option<&OutputSchema>,
        provider: &ChildEnv,
    ) -> Result<Handoff, ToolError> {
        let prompt = self
            .write_private(
                PROMPT_FILE,
                child::envelope(specialist, prompt, output_schema.is_some()),
            )
            .await?;
        let schema = match output_schema {
            Some(schema) => Some(
                self.write_private(SCHEMA_FILE, schema.schema().to_string())
                    .await?,
            ),
            None => None,
        };
        let mcp = match self.mcp_config_of(specialist)? {
            Some(config) => Some(self.write_private(MCP_FILE, config).await?),
            None => None,
        };
        let key = match provider.api_key() {
            Some(key) => Some(self.write_private(KEY_FILE, key.to_string()).await?),
            None => None,
        };
        let hooks = match &self.hooks {
            Some(hooks) => Some(self.write_private(HOOKS_FILE, hooks.text.clone()).await?),
            None => None,
        };
        Ok(Handoff {
            prompt,
            schema,
            mcp,
            key,
            hooks,
        })
    }

    /// A fresh path for a private file holding `what` in the run directory (see
    /// [`child::private_file_name`]).
    async fn private_path(&self, what: &str) -> Result<PathBuf, ToolError> {
        let dir = self.runtime.run_dir().await.map_err(tool_error)?;
        let number = self.files.fetch_add(1, Ordering::Relaxed);
        Ok(dir.join(child::private_file_name(what, number)))
    }

    /// Creates the file a child reports its spending to (see [`Ledger::watch_child`]) and
    /// returns its path.
    async fn watch_usage(&self) -> Result<PathBuf, ToolError> {
        let path = self.private_path(USAGE_FILE).await?;
        let (ledger, created) = (Arc::clone(&self.ledger), path.clone());
        tokio::task::spawn_blocking(move || ledger.watch_child(&created))
            .await
            .map_err(|e| {
                ToolError::Failed(format!("could not create the task's usage report: {e}"))
            })?
            .map_err(|e| {
                ToolError::Failed(format!(
                    "could not create the task's usage report {}: {e}",
                    path.display()
                ))
            })?;
        Ok(path)
    }

    /// Writes `text` for a child into the run directory (0600, a fresh name for `what`, see
    /// [`child::private_file_name`]) and returns its absolute path.
    async fn write_private(&self, what: &str, text: String) -> Result<PathBuf, ToolError> {
        let path = self.private_path(what).await?;
        let written = path.clone();
        tokio::task::spawn_blocking(move || {
            crate::fsutil::write_private_new(&written, text.as_bytes())
        })
        .await
        .map_err(|e| ToolError::Failed(format!("could not write the task's {what}: {e}")))?
        .map_err(|e| {
            ToolError::Failed(format!(
                "could not write the task's {what} to {}: {e}",
                path.display()
            ))
        })?;
        Ok(path)
    }

    /// The `.mcp.json` text a child of `specialist` gets: the entries of the servers its MCP
    /// tools name, or `None` when it names none. A server this run has not configured is the
    /// model's (or the manifest's) to fix.
    fn mcp_config_of(&self, specialist: &Specialist) -> Result<Option<String>, ToolError> {
        let mut servers = std::collections::BTreeMap::new();
        for tool in &specialist.mcp_tools {
            let Some(server) = mcp::server_of(tool) else {
                continue;
            };
            let entry = self
                .mcp_servers
                .iter()
                .find(|(name, _)| name == server)
                .map(|(_, entry)| entry.clone())
                .ok_or_else(|| {
                    ToolError::Failed(format!(
                        "specialist `{}` uses `{tool}`, but this run has no MCP server \
                         `{server}` (give it with --mcp-config or [mcp_servers.{server}] in \
                         config.toml)",
                        specialist.name
                    ))
                })?;
            servers.insert(server.to_string(), entry);
        }
        if servers.is_empty() {
            return Ok(None);
        }
        let file = mcp::config::McpFile { servers };
        Ok(Some(serde_json::to_string(&file).map_err(|e| {
            ToolError::Failed(format!("cannot write the MCP configuration: {e}"))
        })?))
    }

    /// Hands the child its files and starts it as the task `id`, in `prepared`'s worktree
    /// when it is isolated (else in the parent's workspace): its running record and the files
    /// handed to it.
    async fn launch(
        &self,
        launching: Launching<'_>,
        ctx: &ToolContext,
    ) -> Result<(TaskRecord, Handoff), ToolError> {
        let Launching {
            specialist,
            args,
            output_schema,
            provider,
            allowance,
            id,
            prepared,
            verify,
        } = launching;
        // The child writes it; the parent only reads it, from now on.
        let usage_report = self.watch_usage().await?;
        let handoff = self
            .hand_off(specialist, &args.prompt, output_schema, provider)
            .await?;
        let program = self.runtime.zero_binary().to_path_buf();
        let cassette = self.cassette.as_ref().map(|link| {
            let number = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
            link.for_child(number)
        });
        let launch = ChildRun {
            specialist,
            prompt_file: &handoff.prompt,
            output_schema: handoff.schema.as_deref(),
            mcp_config: handoff.mcp.as_deref(),
            key_file: handoff.key.as_deref(),
            hooks: handoff
                .hooks
                .as_deref()
                .zip(self.hooks.as_ref().map(|h| h.fail_open)),
            rules: &self.rules,
            skills: &self.skills,
            in_use: self.narrowing.in_use(),
            ctx,
            workspace: prepared.map_or(&ctx.workspace, |prepared| &prepared.workspace),
            git_paths: prepared.map_or(&[], |prepared| &prepared.git_paths[..]),
            provider,
            parent_run: &self.parent_run,
            allowance,
            usage_report: &usage_report,
            verify,
            cassette: cassette.as_ref(),
        }
        .launch(program);
        let record = self
            .runtime
            .start(TaskSpec {
                kind: TaskKind::Specialist {
                    name: specialist.name.clone(),
                },
                description: args.description.clone(),
                id: Some(id.clone()),
                launch,
            })
            .await;
        match record {
            Ok(record) => Ok((record, handoff)),
            Err(error) => {
                handoff.unread_key().await;
                Err(tool_error(error))
            }
        }
    }

    /// Waits for a foreground child and reports how it ended. Stops the child if this call is
    /// cancelled or dropped.
    async fn follow(&self, record: TaskRecord, ctx: &ToolContext) -> ToolResult {
        let id = record.id.to_string();
        let record = self.wait_until_ended(&id, ctx).await?;
        let ending = ending::find(&self.runtime, &id).await.map_err(tool_error)?;
        report_ending(&record, &ending)
    }

    /// The record of the task `id` once it has ended; stops it if the call is cancelled (or
    /// this future dropped) first.
    async fn wait_until_ended(&self, id: &str, ctx: &ToolContext) -> Result<TaskRecord, ToolError> {
        let guard = StopOnDrop {
            runtime: Arc::clone(&self.runtime),
            id: Some(id.to_string()),
        };
        loop {
            let record = tokio::select! {
                record = self.runtime.wait(id, WAIT_SLICE) => record.map_err(tool_error)?,
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            };
            if record.status != TaskStatus::Running {
                guard.disarm();
                return Ok(record);
            }
        }
    }
}

/// A foreground specialist's result: its record as `TaskOutput` shows it (the signal that
/// ended it included), then its answer, capped at [`ANSWER_CAP`] with a note on how to read
/// on; an error result when it did not complete.
fn report_ending(record: &TaskRecord, ending: &ChildEnding) -> ToolResult {
    let id = record.id.as_str();
    let mut report = describe(record);
    report.push_str(&ending.checked());
    if record.status == TaskStatus::Completed {
        report.push('\n');
        report.push_str(&ending.shown(id, ANSWER_CAP));
        return Ok(report);
    }
    for error in &ending.errors {
        report.push_str(&format!("error: {error}\n"));
    }
    if ending.answer.is_some() {
        report.push_str(&format!(
            "\nlast answer:\n{}\n",
            ending.shown(id, ANSWER_CAP)
        ));
    }
    Err(ToolError::Failed(format!(
        "the specialist failed\n{report}Its full output: TaskOutput {{\"task_id\": \"{id}\"}}"
    )))
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &'static str {
        ToolId::Task.name()
    }

    fn description(&self) -> &'static str {
        "Hand a focused piece of work to a specialist: a sub-agent with its own instructions and \
         tools that runs on its own and reports back. Built in: explorer (finds and explains \
         code, read-only), code-review (reviews a change, read-only) and worker (does one piece \
         of work: edits and commands); projects may define more. The specialist knows nothing \
         of this conversation, so the prompt must say everything it needs: the goal, the \
         relevant files, and what to report. By default the call waits and returns the \
         specialist's final answer. With run_in_background it returns a task id at once: read \
         progress and the answer with TaskOutput (block: true waits), stop it with TaskStop; \
         it is stopped when the run ends."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "The specialist to launch, e.g. explorer, code-review, worker."
                },
                "prompt": {
                    "type": "string",
                    "description": "The task, complete and self-contained."
                },
                "description": {
                    "type": "string",
                    "description": "A few words saying what the task is, for logs and events."
                },
                "run_in_background": {
                    "type": "boolean",
                    "description": "Return at once with a task id instead of waiting."
                },
                "output_schema": {
                    "type": "object",
                    "description": "A JSON Schema the specialist's final answer must satisfy: \
                                    its answer then comes back as that JSON value."
                },
                "isolation": {
                    "type": "string",
                    "enum": ["none", "worktree"],
                    "description": "worktree: the specialist works in a git worktree of its \
                                    own, on branch zero/<task id> from HEAD, so it cannot \
                                    collide with other specialists or with you; its changes \
                                    come back as a commit on that branch to merge or \
                                    cherry-pick. Default: the specialist's own setting, else \
                                    none (it works in your workspace)."
                },
                "include_uncommitted": {
                    "type": "boolean",
                    "description": "With isolation worktree: start from your uncommitted \
                                    changes too (tracked and untracked files, minus ignored \
                                    ones), not just HEAD."
                },
                "verify": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": MAX_CHECKS,
                    "description": "Shell commands the specialist's work must pass (e.g. \
                                    \"cargo test\"), run in its workspace when it answers: \
                                    one that fails goes back to it to fix. The result says \
                                    whether each passed; the task fails when one never did."
                }
            },
            "required": ["name", "prompt"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::Task.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let (args, output_schema) = checked_args(args)?;
        let catalog = self.catalog().await?;
        let warnings = self.first_warnings(catalog);
        let specialist = find_specialist(catalog, &args.name, &warnings)?;
        let verify = checks_of(specialist, &args)?;
        let provider = self.provider.as_ref().ok_or_else(|| {
            ToolError::Failed("specialists cannot be launched in this run: no provider".into())
        })?;
        let allowance = self.ledger.allowance().map_err(|spent| {
            ToolError::Failed(format!("{warnings}no specialist can be launched: {spent}"))
        })?;
        let isolation = args.isolation.unwrap_or(specialist.isolation);
        if args.include_uncommitted == Some(true) && isolation != Isolation::Worktree {
            return Err(ToolError::InvalidArguments(
                "`include_uncommitted` needs `isolation: \"worktree\"`".into(),
            ));
        }
        // Made up front: the worktree and its branch are named after the task.
        let id = TaskId::generate();
        let prepared = match isolation {
            Isolation::Worktree => Some(
                self.isolated
                    .prepare(&id, &ctx.workspace, args.include_uncommitted == Some(true))
                    .await
                    .map_err(|e| ToolError::Failed(format!("{warnings}{e}")))?,
            ),
            Isolation::None => None,
        };
        let launching = Launching {
            specialist,
            args: &args,
            output_schema: output_schema.as_ref(),
            provider,
            allowance,
            id: &id,
            prepared: prepared.as_ref(),
            verify: &verify,
        };
        let launched = self.launch(launching, ctx).await;
        let (record, handoff) = match launched {
            Ok(launched) => launched,
            Err(error) => {
                if let Some(prepared) = prepared {
                    self.isolated.abandon(prepared).await;
                }
                return Err(error);
            }
        };
        let about = match &args.description {
            Some(description) => format!("{} specialist: {description}", specialist.name),
            None => format!("{} specialist", specialist.name),
        };
        if let Some(prepared) = prepared {
            self.isolated.watch(&record.id, prepared, about);
        }
        let id = record.id.clone();
        let background = args.run_in_background.unwrap_or(false);
        let result = if background {
            Ok(started_in_background(&specialist.name, &id))
        } else {
            let followed = self.follow(record, ctx).await;
            handoff.read().await;
            followed
        };
        let worktree = self
            .isolated
            .report(&id, !background)
            .await
            .unwrap_or_default();
        let after = |text: String| join_note(text, &worktree);
        let result = match result {
            Ok(text) => Ok(after(text)),
            Err(ToolError::Failed(text)) => Err(ToolError::Failed(after(text))),
            Err(other) => Err(other),
        };
        match result {
            Ok(text) => Ok(warnings + &text),
            Err(ToolError::Failed(text)) => Err(ToolError::Failed(warnings + &text)),
            Err(other) => Err(other),
        }
    }
}

/// `text` (a specialist's answer, say) with `note` after it on a line of its own: a note never
/// runs on from the answer's last line.
fn join_note(mut text: String, note: &str) -> String {
    if !note.is_empty() && !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text + note
}

/// The call's arguments, checked before anything starts: a prompt, and a schema that is a
/// schema (the caller's to fix otherwise).
fn checked_args(args: Value) -> Result<(TaskArgs, Option<OutputSchema>), ToolError> {
    let args: TaskArgs = parse_args(args)?;
    if args.prompt.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "`prompt` must not be empty".into(),
        ));
    }
    let output_schema = args
        .output_schema
        .clone()
        .map(OutputSchema::new)
        .transpose()
        .map_err(|e| {
            ToolError::InvalidArguments(format!("`output_schema` is not a valid JSON Schema: {e}"))
        })?;
    Ok((args, output_schema))
}

/// The checks a child's work must pass: its specialist's (the manifest's `verify`), then the
/// call's, each once and within the bounds a run's checks keep (`verify::bounded`).
fn checks_of(specialist: &Specialist, args: &TaskArgs) -> Result<Vec<String>, ToolError> {
    let mut checks = specialist.verify.clone();
    for check in args.verify.iter().flatten() {
        if !checks.contains(check) {
            checks.push(check.clone());
        }
    }
    crate::verify::bounded(&checks)
        .map_err(|e| ToolError::InvalidArguments(format!("`verify`: {e}")))?;
    Ok(checks)
}

/// The specialist named `name`, or an error listing the ones there are (after `warnings`).
fn find_specialist<'a>(
    catalog: &'a Catalog,
    name: &str,
    warnings: &str,
) -> Result<&'a Specialist, ToolError> {
    catalog
        .specialists
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            ToolError::Failed(format!(
                "{warnings}unknown specialist `{name}`; the specialists available are: {}",
                catalog
                    .specialists
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// What the model is told when a specialist starts in the background.
fn started_in_background(name: &str, id: &TaskId) -> String {
    format!(
        "started specialist `{name}` as background task {id}\n\
         Read its progress and final answer with TaskOutput {{\"task_id\": \"{id}\"}} \
         (add \"block\": true to wait for it to finish). Stop it with TaskStop \
         {{\"task_id\": \"{id}\"}}. It is stopped when the run ends.\n"
    )
}

/// What a specialist is launched with, checked before anything was made for it.
struct Launching<'a> {
    specialist: &'a Specialist,
    args: &'a TaskArgs,
    output_schema: Option<&'a OutputSchema>,
    provider: &'a ChildEnv,
    /// What is left of the run's budget: the child's own.
    allowance: Limits,
    /// The id it starts under.
    id: &'a TaskId,
    /// Its worktree, when it is isolated.
    prepared: Option<&'a Prepared>,
    /// The checks its work must pass.
    verify: &'a [String],
}

/// The private files a child is handed (in the run directory, 0600): its prompt, its answer's
/// schema, its MCP servers' entries and the run's key.
struct Handoff {
    prompt: PathBuf,
    schema: Option<PathBuf>,
    mcp: Option<PathBuf>,
    key: Option<PathBuf>,
    hooks: Option<PathBuf>,
}

impl Handoff {
    /// The child has ended and read its prompt, schema and MCP entries long ago; the run
    /// directory need not keep them until close (best effort: close removes it anyway).
    async fn read(&self) {
        for file in std::iter::once(&self.prompt)
            .chain(&self.schema)
            .chain(&self.mcp)
            .chain(&self.hooks)
        {
            let _ = tokio::fs::remove_file(file).await;
        }
    }

    /// No child will read the key (best effort: close removes the run directory anyway).
    async fn unread_key(&self) {
        if let Some(key) = &self.key {
            let _ = tokio::fs::remove_file(key).await;
        }
    }
}

/// Stops a foreground child whose caller went away (the tool call was cancelled or dropped)
/// instead of leaving it running unattended until the run closes.
struct StopOnDrop {
    runtime: Arc<Runtime>,
    id: Option<String>,
}

impl StopOnDrop {
    /// The child ended on its own: nothing to stop.
    fn disarm(mut self) {
        self.id = None;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let runtime = Arc::clone(&self.runtime);
        // The runtime completes a stop once it has begun; close waits for it either way.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = runtime.stop(&id).await;
            });
        }
    }
}
