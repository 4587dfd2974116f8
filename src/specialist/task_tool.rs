//! `Task`: launches a specialist as a child `zero exec` process of this binary — a thin adapter
//! over [`Runtime`], which owns the child like any other task.
//!
//! The child gets everything through channels that stay private: the provider's endpoint and
//! model through its environment, its API key and its prompt through 0600 files in the run's
//! private directory. The key never travels in the environment, which every command below the
//! child would inherit: the child reads the file and removes it at start (see
//! [`take_handed_key`]), and the spawn door withholds the variable naming it from commands. It writes stream-json to the
//! task's output file; its events never reach this run's stdout (the runtime reports only
//! `task_started` and `task_finished`).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use super::{SearchPaths, Specialist, discover};
use crate::provider::ProviderConfig;
use crate::redact::HANDED_KEY_VARIABLE;
use crate::runtime::{Launch, RunId, Runtime, TaskKind, TaskRecord, TaskSpec, TaskStatus, Window};
use crate::tools::{
    CORE_TOOL_NAMES, SideEffect, Tool, ToolContext, ToolError, ToolResult, parse_args,
};

/// Set in a specialist's environment to the id of the run that launched it. A run that sees
/// it is a child, and offers no `Task` tool: specialists never launch specialists.
pub const PARENT_RUN_VAR: &str = "ZERO_PARENT_RUN";

/// Whether this process is a specialist launched by another run.
pub fn is_child() -> bool {
    std::env::var_os(PARENT_RUN_VAR).is_some_and(|value| !value.is_empty())
}

/// The longest key file a child accepts: far beyond any real key, so a wrong path cannot make
/// it read without bound.
const HANDED_KEY_MAX: u64 = 64 * 1024;

/// In a specialist child, takes the key its parent handed over: reads the file that
/// [`HANDED_KEY_VARIABLE`] names and removes it, so nothing the child starts can find it.
/// `Ok(None)` when this process is not a child or was handed no key.
pub fn take_handed_key() -> Result<Option<String>, String> {
    let Some(path) = std::env::var_os(HANDED_KEY_VARIABLE).filter(|_| is_child()) else {
        return Ok(None);
    };
    let path = PathBuf::from(path);
    // The variable is input like any other, and the file it names is removed: only what a
    // parent run writes is taken.
    if !is_handed_key_path(&path) {
        return Err(format!(
            "{HANDED_KEY_VARIABLE} names {}, which is not a key file a parent run wrote; \
             it was left alone",
            path.display()
        ));
    }
    let unreadable = |e: std::io::Error| {
        format!(
            "cannot read the API key the parent run handed over in {}: {e}",
            path.display()
        )
    };
    let mut key = String::new();
    std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .and_then(|file| file.take(HANDED_KEY_MAX).read_to_string(&mut key))
        .map_err(unreadable)?;
    std::fs::remove_file(&path).map_err(unreadable)?;
    Ok(Some(key))
}

/// Whether `path` is where a parent run hands a key over: an absolute path, in the run
/// directory of the run [`PARENT_RUN_VAR`] names (a directory named by its run id), under a
/// name [`private_file_name`] gives a key file.
fn is_handed_key_path(path: &Path) -> bool {
    let parent_run = std::env::var(PARENT_RUN_VAR)
        .ok()
        .and_then(|run| RunId::parse(&run).ok());
    let dir = path.parent().and_then(Path::file_name);
    let name = path.file_name().and_then(|name| name.to_str());
    path.is_absolute()
        && parent_run.is_some_and(|run| dir == Some(run.as_str().as_ref()))
        && name.is_some_and(|name| is_private_file_name(name, KEY_FILE))
}

/// The private file holding a child's prompt (see [`private_file_name`]).
const PROMPT_FILE: &str = "prompt";
/// The private file holding a child's key (see [`private_file_name`]).
const KEY_FILE: &str = "key";

/// The name of the `number`th private file holding `what` in the run directory.
fn private_file_name(what: &str, number: u64) -> String {
    format!("task-{what}-{number}")
}

/// Whether `name` is exactly what [`private_file_name`] makes for `what`.
fn is_private_file_name(name: &str, what: &str) -> bool {
    name.strip_prefix("task-")
        .and_then(|rest| rest.strip_prefix(what))
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|number| number.parse::<u64>().is_ok_and(|n| n.to_string() == number))
}

/// How much of a finished child's stream-json is read to find its answer (the tail only).
const ANSWER_WINDOW: usize = 256 * 1024;
/// How long one wait for a foreground child lasts before waiting again; the call has no
/// overall limit (the child has its own turn budget) but stays cancellable throughout.
const WAIT_SLICE: Duration = Duration::from_secs(3600);

/// The parent's provider configuration as a child resolves it: the variables for its endpoint
/// (zero's own beat every other source, so the child talks to exactly the parent's endpoint),
/// and the key, which is handed over in a file instead.
#[derive(Clone)]
pub struct ChildEnv {
    vars: Vec<(&'static str, String)>,
    api_key: Option<String>,
}

impl From<&ProviderConfig> for ChildEnv {
    fn from(config: &ProviderConfig) -> Self {
        let vars = vec![
            ("ZERO_PROVIDER", config.kind.as_str().to_string()),
            ("ZERO_BASE_URL", config.base_url.clone()),
            ("ZERO_MODEL", config.model.clone()),
            (
                "ZERO_MAX_OUTPUT_TOKENS",
                config.max_output_tokens.to_string(),
            ),
        ];
        ChildEnv {
            vars,
            api_key: config.api_key.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    name: String,
    prompt: String,
    description: Option<String>,
    run_in_background: Option<bool>,
}

/// What discovery found, read once per run on first use.
struct Catalog {
    specialists: Vec<Specialist>,
    warnings: Vec<String>,
}

/// Launches a specialist. See the module documentation.
pub struct TaskTool {
    runtime: Arc<Runtime>,
    parent_run: String,
    /// Set by `exec` once the provider is resolved (a listing of the tools needs none).
    provider: OnceLock<ChildEnv>,
    catalog: OnceCell<Catalog>,
    /// Whether discovery's warnings were already reported (they go into one result only).
    warned: AtomicBool,
    /// Numbers the private files (prompts, keys), which share the run directory.
    files: AtomicU64,
}

impl TaskTool {
    /// The tool over the run's runtime; `parent_run` is the launching run's id, handed to each
    /// child in [`PARENT_RUN_VAR`].
    pub fn new(runtime: Arc<Runtime>, parent_run: impl Into<String>) -> Self {
        TaskTool {
            runtime,
            parent_run: parent_run.into(),
            provider: OnceLock::new(),
            catalog: OnceCell::new(),
            warned: AtomicBool::new(false),
            files: AtomicU64::new(0),
        }
    }

    /// Hands over the run's provider configuration; children launched afterwards use it.
    pub fn set_provider(&self, env: ChildEnv) {
        // Set once per run, right after the provider is resolved; a second call changes nothing.
        let _ = self.provider.set(env);
    }

    /// The specialists, discovered on a blocking thread on first use.
    async fn catalog(&self, workspace: &Path) -> Result<&Catalog, ToolError> {
        self.catalog
            .get_or_try_init(|| async {
                let paths = SearchPaths::from_env(workspace);
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

    /// Writes `text` for a child into the run directory (0600, a fresh name for `what`, see
    /// [`private_file_name`]) and returns its absolute path.
    async fn write_private(&self, what: &str, text: String) -> Result<PathBuf, ToolError> {
        let dir = self
            .runtime
            .run_dir()
            .await
            .map_err(crate::tools::tool_error)?;
        let number = self.files.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(private_file_name(what, number));
        let written = path.clone();
        tokio::task::spawn_blocking(move || {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&written)?
                .write_all(text.as_bytes())
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

    /// The `zero exec` command line and environment that run `specialist` on `prompt_file`,
    /// with the key (if any) in `key_file`.
    fn launch(
        &self,
        specialist: &Specialist,
        prompt_file: &Path,
        key_file: Option<&Path>,
        ctx: &ToolContext,
        provider: &ChildEnv,
    ) -> Result<Launch, ToolError> {
        let program = crate::runtime::this_binary().to_path_buf();
        let mut args: Vec<OsString> = vec![
            "exec".into(),
            "-o".into(),
            "stream-json".into(),
            "--auto".into(),
            // The launching run's effective level: a child never gets more.
            ctx.policy.autonomy().as_str().into(),
            "-C".into(),
            ctx.workspace.clone().into(),
        ];
        for root in ctx.policy.extra_roots() {
            args.extend(["--add-dir".into(), root.into()]);
        }
        args.extend(
            tool_flags(&specialist.tools)
                .into_iter()
                .map(OsString::from),
        );
        if let Some(model) = &specialist.model {
            args.extend(["--model".into(), model.into()]);
        }
        args.extend(["-f".into(), prompt_file.into()]);
        let mut env: Vec<(OsString, OsString)> = provider
            .vars
            .iter()
            .map(|(name, value)| (name.into(), value.into()))
            .collect();
        env.push((PARENT_RUN_VAR.into(), self.parent_run.clone().into()));
        if let Some(key_file) = key_file {
            env.push((HANDED_KEY_VARIABLE.into(), key_file.into()));
        }
        Ok(Launch {
            program,
            args,
            cwd: ctx.workspace.clone(),
            env,
        })
    }

    /// Waits for a foreground child and reports how it ended. Stops the child if this call is
    /// cancelled or dropped.
    async fn follow(&self, record: TaskRecord, ctx: &ToolContext) -> ToolResult {
        let id = record.id.to_string();
        let guard = StopOnDrop {
            runtime: Arc::clone(&self.runtime),
            id: Some(id.clone()),
        };
        let record = loop {
            let record = tokio::select! {
                record = self.runtime.wait(&id, WAIT_SLICE) => {
                    record.map_err(crate::tools::tool_error)?
                }
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            };
            if record.status != TaskStatus::Running {
                break record;
            }
        };
        guard.disarm();
        let tail = self
            .runtime
            .read_output(
                &id,
                Window::Tail {
                    max_bytes: ANSWER_WINDOW,
                },
            )
            .await
            .map_err(crate::tools::tool_error)?;
        let ending = Ending::read(&tail.bytes);
        let mut report = format!(
            "task_id: {id}\nstatus: {}\nexit_code: {}\n",
            record.status.as_str(),
            record
                .exit_code
                .map_or_else(|| "none".to_string(), |code| code.to_string())
        );
        if record.status == TaskStatus::Completed {
            report.push('\n');
            report.push_str(ending.answer.as_deref().unwrap_or("(no final answer)"));
            return Ok(report);
        }
        for error in &ending.errors {
            report.push_str(&format!("error: {error}\n"));
        }
        if let Some(reason) = &record.reason {
            report.push_str(&format!("reason: {reason}\n"));
        }
        if let Some(answer) = &ending.answer {
            report.push_str(&format!("\nlast answer:\n{answer}\n"));
        }
        Err(ToolError::Failed(format!(
            "the specialist failed\n{report}Its full output: TaskOutput {{\"task_id\": \"{id}\"}}"
        )))
    }
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &'static str {
        "Task"
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
                }
            },
            "required": ["name", "prompt"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Shell
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: TaskArgs = parse_args(args)?;
        if args.prompt.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "`prompt` must not be empty".into(),
            ));
        }
        let catalog = self.catalog(&ctx.workspace).await?;
        let warnings = if self.warned.swap(true, Ordering::Relaxed) {
            String::new()
        } else {
            catalog
                .warnings
                .iter()
                .map(|warning| format!("warning: {warning}\n"))
                .collect()
        };
        let Some(specialist) = catalog.specialists.iter().find(|s| s.name == args.name) else {
            return Err(ToolError::Failed(format!(
                "{warnings}unknown specialist `{}`; the specialists available are: {}",
                args.name,
                catalog
                    .specialists
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let provider = self.provider.get().ok_or_else(|| {
            ToolError::Failed("specialists cannot be launched in this run: no provider".into())
        })?;
        let prompt_file = self
            .write_private(PROMPT_FILE, envelope(specialist, &args.prompt))
            .await?;
        let key_file = match &provider.api_key {
            Some(key) => Some(self.write_private(KEY_FILE, key.clone()).await?),
            None => None,
        };
        let launch = self.launch(specialist, &prompt_file, key_file.as_deref(), ctx, provider)?;
        let record = self
            .runtime
            .start(TaskSpec {
                kind: TaskKind::Specialist {
                    name: specialist.name.clone(),
                },
                description: args.description,
                launch,
            })
            .await;
        if let (Err(_), Some(key_file)) = (&record, &key_file) {
            // No child will read it (best effort: close removes the run directory anyway).
            let _ = tokio::fs::remove_file(key_file).await;
        }
        let record = record.map_err(crate::tools::tool_error)?;
        let result = if args.run_in_background.unwrap_or(false) {
            let id = &record.id;
            Ok(format!(
                "started specialist `{name}` as background task {id}\n\
                 Read its progress and final answer with TaskOutput {{\"task_id\": \"{id}\"}} \
                 (add \"block\": true to wait for it to finish). Stop it with TaskStop \
                 {{\"task_id\": \"{id}\"}}. It is stopped when the run ends.\n",
                name = specialist.name,
            ))
        } else {
            let followed = self.follow(record, ctx).await;
            // The child has ended and read its prompt long ago; the run directory need not
            // keep it until close (best effort: close removes the directory anyway).
            let _ = tokio::fs::remove_file(&prompt_file).await;
            followed
        };
        match result {
            Ok(text) => Ok(warnings + &text),
            Err(ToolError::Failed(text)) => Err(ToolError::Failed(warnings + &text)),
            Err(other) => Err(other),
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

/// The child's prompt: the specialist's instructions, the task, and how to report.
fn envelope(specialist: &Specialist, task: &str) -> String {
    format!(
        "{instructions}\n\n## Assigned task\n\n{task}\n\n## Reporting\n\nYou run headless: \
         nobody answers questions, so state your assumptions and carry on. End with a final \
         answer that summarises what you did and what you found; it is all the agent that \
         launched you will see.\n",
        instructions = specialist.prompt.trim(),
        task = task.trim(),
    )
}

/// The tool flags for a child: its tools (plus `TaskOutput` and `TaskStop` when it has `bash`,
/// so it can manage its own background shells). With no tools at all every tool is disabled,
/// since an empty `--enabled-tools` would mean "no filter".
fn tool_flags(tools: &[&'static str]) -> Vec<String> {
    if tools.is_empty() {
        let all = CORE_TOOL_NAMES
            .into_iter()
            .chain(["TaskOutput", "TaskStop"])
            .collect::<Vec<_>>();
        return vec!["--disabled-tools".into(), all.join(",")];
    }
    let mut enabled = tools.to_vec();
    if tools.contains(&"bash") {
        enabled.extend(["TaskOutput", "TaskStop"]);
    }
    vec!["--enabled-tools".into(), enabled.join(",")]
}

/// What a finished child's stream-json says about its end.
#[derive(Debug, Default, PartialEq, Eq)]
struct Ending {
    /// The text of its last `final` event.
    answer: Option<String>,
    /// The messages of its `error` events.
    errors: Vec<String>,
}

impl Ending {
    /// Reads the events of a (tail of a) stream-json output; lines that are not events (a
    /// first line cut by the window, stray stderr) are skipped.
    fn read(bytes: &[u8]) -> Ending {
        let mut ending = Ending::default();
        for line in String::from_utf8_lossy(bytes).lines() {
            let Ok(event) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let text = |name: &str| event.get(name).and_then(Value::as_str).map(str::to_string);
            match event.get("type").and_then(Value::as_str) {
                Some("final") => ending.answer = text("text"),
                Some("error") => ending.errors.extend(text("message")),
                _ => {}
            }
        }
        ending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_zero_gives_its_private_files_are_taken_for_them() {
        for number in [0, 7, 1234] {
            assert!(is_private_file_name(
                &private_file_name(KEY_FILE, number),
                KEY_FILE
            ));
        }
        for stray in [
            "task-key-",
            "task-key-+1",
            "task-key-01",
            "task-key-1x",
            "task-prompt-1",
            "thesis",
            "..",
        ] {
            assert!(!is_private_file_name(stray, KEY_FILE), "{stray}");
        }
    }

    #[test]
    fn the_answer_is_the_last_final_and_errors_are_collected() {
        let stream = concat!(
            "ut a cut line\n",
            r#"{"type":"final","text":"first"}"#,
            "\n",
            r#"{"type":"error","code":"x","message":"went wrong"}"#,
            "\n",
            r#"{"type":"final","text":"second"}"#,
            "\n"
        );
        assert_eq!(
            Ending::read(stream.as_bytes()),
            Ending {
                answer: Some("second".into()),
                errors: vec!["went wrong".into()],
            }
        );
    }

    #[test]
    fn a_child_gets_its_tools_and_task_tools_only_with_bash() {
        assert_eq!(
            tool_flags(&["glob", "read_file"]),
            ["--enabled-tools", "glob,read_file"]
        );
        assert_eq!(
            tool_flags(&["bash", "read_file"]),
            ["--enabled-tools", "bash,read_file,TaskOutput,TaskStop"]
        );
        let none = tool_flags(&[]);
        assert_eq!(none[0], "--disabled-tools");
        assert!(none[1].contains("read_file") && none[1].contains("TaskStop"));
    }
}
