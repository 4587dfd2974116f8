//! `-o json`: one JSON summary object on stdout when the run ends.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Value, json};

use super::event::CheckReport;
use super::{
    CallStatus, EventKind, Family, RuleInfo, RunStatus, ToolInfo, UsageTotals, WindowInfo, Writer,
};
use crate::redact::Secrets;
use crate::runtime::{TaskKind, TaskStatus};

/// Collects what a script needs from the run and prints it once, at `run_end`.
pub(crate) struct JsonWriter {
    secrets: Secrets,
    final_text: Option<String>,
    structured_output: Option<Value>,
    session_id: Option<String>,
    tool_calls: Vec<CallSummary>,
    tasks: Vec<TaskSummary>,
    errors: Vec<Value>,
    warnings: Vec<String>,
    /// `--list-tools` and `--list-specialists` print their listing instead of a run summary.
    listed: bool,
}

#[derive(Debug, Serialize)]
struct CallSummary {
    id: String,
    name: String,
    status: Option<CallStatus>,
}

/// A background task and how it ended (`running` only if the run never saw it end).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskSummary {
    task_id: String,
    #[serde(flatten)]
    kind: TaskKind,
    status: TaskStatus,
    exit_code: Option<i32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary<'a> {
    status: RunStatus,
    exit_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: &'a Option<String>,
    final_text: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_output: &'a Option<Value>,
    turns: u32,
    usage: &'a UsageTotals,
    child_usage: &'a UsageTotals,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_window: &'a Option<WindowInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_usage: &'a Option<UsageTotals>,
    tool_calls: &'a [CallSummary],
    tasks: &'a [TaskSummary],
    #[serde(skip_serializing_if = "<[CheckReport]>::is_empty")]
    verify: &'a [CheckReport],
    errors: &'a [Value],
    warnings: &'a [String],
}

/// `--list-specialists -o json` and `--list-skills -o json`: the listing under its key, and
/// the warnings about what was skipped or partly ignored.
#[derive(Serialize)]
struct Listing<'a, T: Serialize> {
    #[serde(flatten)]
    items: BTreeMap<&'static str, &'a [T]>,
    warnings: &'a [String],
}

impl<'a, T: Serialize> Listing<'a, T> {
    /// `items` under `key`, with `warnings`.
    fn of(key: &'static str, items: &'a [T], warnings: &'a [String]) -> Self {
        Listing {
            items: BTreeMap::from([(key, items)]),
            warnings,
        }
    }
}

impl JsonWriter {
    /// An empty summary.
    pub(crate) fn new(secrets: Secrets) -> Self {
        JsonWriter {
            secrets,
            final_text: None,
            structured_output: None,
            session_id: None,
            tool_calls: Vec::new(),
            tasks: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            listed: false,
        }
    }

    /// The summary entry of a task, added (as `running`) when first heard of.
    fn task_entry(&mut self, task_id: &str, kind: &TaskKind) -> &mut TaskSummary {
        let index = match self.tasks.iter().position(|t| t.task_id == task_id) {
            Some(index) => index,
            None => {
                self.tasks.push(TaskSummary {
                    task_id: task_id.to_string(),
                    kind: kind.clone(),
                    status: TaskStatus::Running,
                    exit_code: None,
                });
                self.tasks.len() - 1
            }
        };
        &mut self.tasks[index]
    }

    fn print(&self, value: &impl Serialize) -> io::Result<()> {
        let text = serde_json::to_string(value).map_err(io::Error::other)?;
        let mut text = self.secrets.apply(&text);
        text.push('\n');
        let mut stdout = io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }
}

impl Writer for JsonWriter {
    fn write(&mut self, event: &EventKind) -> io::Result<()> {
        match event.family() {
            Family::Run => return self.run(event),
            Family::Listing => return self.listing(event),
            Family::Model => self.model(event),
            Family::Call => self.call(event),
            Family::Task => self.task(event),
        }
        Ok(())
    }
}

/// One method per [`Family`]: each is given only its family's events. The summary carries the
/// final answer, not how the run got there, so most events only add to it.
impl JsonWriter {
    /// The session from `run_start`, the warnings and errors, and at `run_end` the summary
    /// (none after a listing).
    fn run(&mut self, event: &EventKind) -> io::Result<()> {
        match event {
            EventKind::RunStart { session_id, .. } => self.session_id.clone_from(session_id),
            EventKind::Warning { message } => self.warnings.push(message.clone()),
            EventKind::GitMetadataRestored { .. } => {
                self.warnings
                    .push(super::event::git_restored_message(event));
            }
            EventKind::Error {
                code,
                message,
                retryable,
                schema_errors,
            } => {
                let mut error = json!({
                    "code": code,
                    "message": message,
                    "retryable": retryable,
                });
                if !schema_errors.is_empty() {
                    error["schemaErrors"] = json!(schema_errors);
                }
                self.errors.push(error);
            }
            EventKind::RunEnd {
                status,
                exit_code,
                turns,
                usage,
                child_usage,
                cost_usd,
                context_window,
                session_usage,
                verify,
                // The worktree's commit, the denials (each is in `toolCalls` as an error
                // result too) and the model that answered are in stream-json's `run_end`.
                ..
            } if !self.listed => {
                return self.print(&Summary {
                    status: *status,
                    exit_code: *exit_code,
                    session_id: &self.session_id,
                    final_text: &self.final_text,
                    structured_output: &self.structured_output,
                    turns: *turns,
                    usage,
                    child_usage,
                    cost_usd: *cost_usd,
                    context_window,
                    session_usage,
                    tool_calls: &self.tool_calls,
                    tasks: &self.tasks,
                    verify,
                    errors: &self.errors,
                    warnings: &self.warnings,
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// A listing, printed at once in place of a run summary.
    fn listing(&mut self, event: &EventKind) -> io::Result<()> {
        self.listed = true;
        match event {
            EventKind::Tools { tools, rules } => self.print(&tool_listing(tools, rules)),
            // Manifest and skill warnings come before the listing; carry them in it, since no
            // run summary follows a listing.
            EventKind::Specialists { specialists } => {
                self.print(&Listing::of("specialists", specialists, &self.warnings))
            }
            EventKind::Skills { skills } => {
                self.print(&Listing::of("skills", skills, &self.warnings))
            }
            _ => Ok(()),
        }
    }

    /// The final answer (the model's text, reasoning and spending are in `run_end`'s counts).
    fn model(&mut self, event: &EventKind) {
        if let EventKind::Final { text, structured } = event {
            self.final_text = Some(text.clone());
            self.structured_output.clone_from(structured);
        }
    }

    /// Each call and how it ended.
    fn call(&mut self, event: &EventKind) {
        match event {
            EventKind::ToolCall { id, name, .. } => self.tool_calls.push(CallSummary {
                id: id.clone(),
                name: name.clone(),
                status: None,
            }),
            EventKind::ToolResult { id, status, .. } => {
                if let Some(call) = self.tool_calls.iter_mut().rev().find(|c| &c.id == id) {
                    call.status = Some(*status);
                }
            }
            _ => {}
        }
    }

    /// Each background task and how it ended.
    fn task(&mut self, event: &EventKind) {
        match event {
            EventKind::TaskStarted { task_id, kind, .. } => {
                self.task_entry(task_id, kind);
            }
            EventKind::TaskFinished {
                task_id,
                kind,
                status,
                exit_code,
            } => {
                let task = self.task_entry(task_id, kind);
                task.status = *status;
                task.exit_code = *exit_code;
            }
            _ => {}
        }
    }
}

/// `--list-tools -o json`: `{"tools": [...]}`, with `"rules"` when rules are in force.
fn tool_listing(tools: &[ToolInfo], rules: &[RuleInfo]) -> Value {
    match rules.is_empty() {
        true => json!({ "tools": tools }),
        false => json!({ "tools": tools, "rules": rules }),
    }
}
