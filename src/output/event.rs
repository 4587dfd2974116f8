//! The events of one run: the stream-json schema, in one place.
//!
//! Every event a run reports is an [`EventKind`]; the three writers decide what each format
//! makes of it. Field names are camelCase on the wire; `docs/STREAM_JSON.md` documents every
//! event and must change with this file.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error_code::ErrorCode;
use crate::exit::ExitCode;
pub(crate) use crate::hooks::HookReport;
use crate::runtime::{Restoration, TaskKind, TaskStatus};
use crate::structured::Violation;
pub(crate) use crate::tools::policy::SandboxInForce;
use crate::tools::{Permissions, PlanStep, SideEffect, StyleChoice};
pub(crate) use crate::verify::{CheckReport, CheckStatus};

/// The version of the stream-json schema; bumped on any incompatible change.
pub(crate) const SCHEMA_VERSION: u32 = 3;

/// One event as written to stream-json: the envelope every event carries, then its body.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Envelope<'a> {
    /// Always [`SCHEMA_VERSION`].
    pub(crate) schema_version: u32,
    /// The id of the run that emitted the event.
    pub(crate) run_id: &'a str,
    /// The event itself; its `type` tag sits beside the envelope fields.
    #[serde(flatten)]
    pub(crate) event: &'a EventKind,
}

/// Everything a run can report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum EventKind {
    /// The run has started: the workspace, the provider and the model.
    #[serde(rename_all = "camelCase")]
    RunStart {
        /// The workspace root.
        cwd: String,
        /// The wire in use (`openai`, `anthropic`), absent for the listings.
        #[serde(skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
        /// The model, absent for the listings (`--list-tools`, `--list-specialists`).
        #[serde(skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// What every command is confined by; absent for the listings, which run none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<SandboxInForce>,
        /// The names of the variables no command receives (never their values), sorted.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        withheld_env: Vec<String>,
        /// The session the run's conversation is kept in; absent with `--no-session` and for
        /// the listings.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        /// With `--resume`: the run that used the session last.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resumed_from: Option<String>,
        /// With `--resume`, when this run's permissions differ from the earlier run's: both
        /// (this run's come from its own command line, never from the session).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        permissions_changed: Option<PermissionsChanged>,
        /// The MCP servers the run configured, each with how its start went.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        mcp_servers: Vec<McpServerInfo>,
        /// With `--worktree`: the worktree the run works in (`cwd` is inside it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree: Option<WorktreeInfo>,
        /// The system prompt's style and why it is the one (`--prompt-style`, config.toml, the
        /// local provider, a llama.cpp server, a small window); absent for the listings.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt_style: Option<StyleChoice>,
        /// The names of the skills the model is offered (listed in its prompt, loaded with
        /// the `Skill` tool), sorted; absent when there are none and for the listings.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skills: Vec<String>,
    },
    /// The tools the model sees (for `--list-tools`).
    Tools {
        /// One entry per tool, sorted by name.
        tools: Vec<ToolInfo>,
        /// The permission rules in force, in the order given; absent when there are none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rules: Vec<RuleInfo>,
    },
    /// The specialists the `Task` tool can launch (for `--list-specialists`).
    Specialists {
        /// One entry per specialist, sorted by name.
        specialists: Vec<SpecialistInfo>,
    },
    /// The skills the model would be offered (for `--list-skills`).
    Skills {
        /// One entry per skill, sorted by name.
        skills: Vec<SkillInfo>,
    },
    /// A piece of the model's visible text.
    Text {
        /// The new text.
        delta: String,
    },
    /// A piece of the model's reasoning (never part of the answer).
    Reasoning {
        /// The new text.
        delta: String,
    },
    /// The model called a tool.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The call id; the matching `tool_result` has the same id.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments: parsed JSON, or the raw text when it was not valid JSON.
        args: Value,
        /// The tool's side effect, `unknown` for a tool that does not exist.
        side_effect: CallEffect,
    },
    /// Policy refused a call (emitted between its `tool_call` and `tool_result`).
    PermissionDecision {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// `deny` (allowed calls are not reported).
        decision: Decision,
        /// Why, naming the flag that would allow it.
        reason: String,
    },
    /// A hook ran (see `hooks`): at which point, for which call, what came of it and how long
    /// it took. A hook's denial is also reported as a `permission_decision`.
    #[serde(rename_all = "camelCase")]
    Hook(HookReport),
    /// A permission rule refused a call (emitted between its `tool_call` and `tool_result`):
    /// the arguments it was judged on, the rule and why.
    PermissionDenied {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments, every secret in them masked; `null` when they were not JSON.
        args: Value,
        /// The deny rule that matched, as written; absent when no allow rule matched the call
        /// or it could not be checked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<String>,
        /// Why, and what the caller could add to allow it.
        reason: String,
        /// When the call ran and the exec check refused a program of its command's tree:
        /// which (the call's other programs ran).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exec: Option<ExecDenied>,
    },
    /// A tool call finished.
    ToolResult {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// `ok` or `error`.
        status: CallStatus,
        /// What the model was told, cut to 10 KiB in stream-json.
        output: String,
        /// Whether `output` was cut for the event.
        truncated: bool,
    },
    /// The model replaced its plan.
    Plan {
        /// The whole plan.
        steps: Vec<PlanStep>,
    },
    /// A background task started (a `bash` command with `run_in_background`, or a specialist).
    #[serde(rename_all = "camelCase")]
    TaskStarted {
        /// The task's id, as TaskOutput and TaskStop take it.
        task_id: String,
        /// `kind` (`shell` | `specialist`) with `command` or `name`.
        #[serde(flatten)]
        kind: TaskKind,
        /// The description it was started with.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// A background task ended: on its own, by TaskStop, or stopped because the run ended
    /// (always before `run_end`, so no task ends unreported).
    #[serde(rename_all = "camelCase")]
    TaskFinished {
        /// The task's id.
        task_id: String,
        /// `kind` with `command` or `name`.
        #[serde(flatten)]
        kind: TaskKind,
        /// `completed`, `failed`, `killed` or `interrupted`.
        status: TaskStatus,
        /// The exit code, when its process exited (rather than being ended by a signal).
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
    /// Token counts of one model response.
    #[serde(rename_all = "camelCase")]
    Usage(UsageTotals),
    /// The conversation was compacted to fit the model's context window: the older turns
    /// were replaced by the model's summary of them.
    #[serde(rename_all = "camelCase")]
    Compaction {
        /// Why.
        reason: CompactionReason,
        /// The estimated tokens of the conversation before.
        tokens_before: u64,
        /// The estimated tokens after.
        tokens_after: u64,
        /// How many messages the summary replaced.
        messages_summarized: usize,
    },
    /// A model request failed before any of its answer came, and is sent again after a pause
    /// (the provider's own retry).
    #[serde(rename_all = "camelCase")]
    Retry {
        /// The number of the attempt that failed (1-based).
        attempt: u32,
        /// How many attempts a request gets in all.
        max_attempts: u32,
        /// What kind of failure: a provider `error.code` (`unavailable`, `rate_limited`, ...).
        code: ErrorCode,
        /// Why the attempt failed, as the error would say it.
        reason: String,
        /// How long zero waits before the next attempt, in milliseconds.
        delay_ms: u64,
    },
    /// The model failed a request for good (after its retries: overloaded, rate-limited,
    /// unreachable, or unknown), and it and every later request go to the next fallback model.
    #[serde(rename_all = "camelCase")]
    ModelSwitch {
        /// The model that failed.
        from: String,
        /// The model requests go to now.
        to: String,
        /// What kind of failure: a provider `error.code` (`unavailable`, `rate_limited`, ...).
        code: ErrorCode,
        /// The failure, as the error would say it.
        reason: String,
    },
    /// Nothing of the model's response has come for a while: zero is still waiting on it.
    /// Reported after the first silence of a few seconds and again each time it doubles.
    #[serde(rename_all = "camelCase")]
    Waiting {
        /// The attempt being waited on (1-based).
        attempt: u32,
        /// How many attempts a request gets in all.
        max_attempts: u32,
        /// What is awaited: the response's first byte, or the next chunk of a stream.
        phase: WaitPhase,
        /// How long nothing has come, in milliseconds.
        waited_ms: u64,
        /// How much silence the attempt is allowed before it is given up on, in milliseconds.
        timeout_ms: u64,
    },
    /// Something the caller should know that did not stop the run.
    Warning {
        /// What happened.
        message: String,
    },
    /// At `--auto medium`: git metadata a command changed, which would start a program in
    /// the user's own git later (a hook, `.git/config`, `info/attributes`, the `.git` itself),
    /// found after a tool call or at the run's close and put back as the run found it.
    #[serde(rename_all = "camelCase")]
    GitMetadataRestored {
        /// The call after which it was found; absent when found at the run's close.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// The paths put back (or removed, having not been there), absolute.
        restored: Vec<String>,
        /// The paths that differ and could not be put back, with why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        failed: Vec<NotRestored>,
    },
    /// A `--verify` check started on the model's answer.
    VerifyStart {
        /// Its command line.
        command: String,
        /// Which answer it checks: 1 for the first the run put to its checks.
        attempt: u32,
    },
    /// A `--verify` check ended (after its `verify_start`, always).
    #[serde(rename_all = "camelCase")]
    VerifyEnd {
        /// Its command line.
        command: String,
        /// Which answer it checked.
        attempt: u32,
        /// How it ended.
        status: CheckStatus,
        /// Its exit code, when it exited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// How long it ran, in milliseconds.
        duration_ms: u64,
        /// The end of its output, when it did not pass and printed something.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    /// The final answer.
    Final {
        /// Its text.
        text: String,
        /// With `--output-schema`: the JSON value the answer is, checked against the schema.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<Value>,
    },
    /// Why the run did not succeed.
    #[serde(rename_all = "camelCase")]
    Error {
        /// A stable code (`usage_error`, `auth`, `incomplete`, ...).
        code: ErrorCode,
        /// What went wrong, for a person.
        message: String,
        /// Whether running again unchanged could succeed.
        retryable: bool,
        /// With `schema_unsatisfied`: what was wrong with the last answer.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        schema_errors: Vec<Violation>,
    },
    /// The last event of every run.
    #[serde(rename_all = "camelCase")]
    RunEnd {
        /// How the run ended.
        status: RunStatus,
        /// The process's exit code.
        exit_code: i32,
        /// Model requests made.
        turns: u32,
        /// Token totals over the run and its specialists.
        usage: UsageTotals,
        /// The specialists' part of `usage`.
        child_usage: UsageTotals,
        /// What `usage` cost in US dollars, when config.toml prices every model that spent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// The model's context window and where its size came from, when it was known (it is
        /// found out while the first request runs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<WindowInfo>,
        /// What every run of the session spent together, this one included.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_usage: Option<UsageTotals>,
        /// With `--worktree`: the commit the run's changes were recorded in on its branch;
        /// absent when it changed nothing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree_commit: Option<String>,
        /// The calls refused before they ran (by the `--auto` level, a rule or a hook);
        /// absent when there were none.
        #[serde(default, skip_serializing_if = "is_zero")]
        permission_denials: u32,
        /// The model that gave the run's last response (with fallback models, not always the
        /// one `run_start` names); absent when no response came.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// With `--verify`: each check over the run, in order; absent without checks.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        verify: Vec<CheckReport>,
    },
}

/// Whether a count is zero (a count field is left out then).
fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// Why the conversation was compacted (`compaction.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CompactionReason {
    /// The next request would have filled most of the window.
    Threshold,
    /// The provider refused a request as longer than the window.
    ContextLength,
}

/// What a `waiting` event waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WaitPhase {
    /// The first byte of the response (the server is queued, or still reading the prompt).
    FirstByte,
    /// The next chunk of a response that has begun.
    Stream,
}

/// A tool as listed by `--list-tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolInfo {
    /// The tool's name.
    pub(crate) name: String,
    /// Its description for the model.
    pub(crate) description: String,
    /// Its side effect.
    pub(crate) side_effect: SideEffect,
    /// The JSON Schema of its arguments.
    pub(crate) input_schema: Value,
}

/// A program the exec check refused, as `permission_denied.exec` names it: the process that
/// called exec and what it tried to run (both cut to a bound).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ExecDenied {
    /// The process that called exec.
    pub(crate) pid: u32,
    /// The path it gave exec.
    pub(crate) path: String,
    /// The argv it gave; a last `…` when it was cut.
    pub(crate) argv: Vec<String>,
    /// The background task whose command ran it (the event comes when the task ends, and its
    /// `id` is the task's); absent for a foreground call's.
    #[serde(rename = "taskId", default, skip_serializing_if = "Option::is_none")]
    pub(crate) task_id: Option<String>,
}

/// A permission rule as `--list-tools` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RuleInfo {
    /// `allow` or `deny`.
    pub(crate) effect: Decision,
    /// The rule as written.
    pub(crate) rule: String,
    /// Where it came from: `the command line`, `config.toml` or the `--rules` file's path.
    pub(crate) source: String,
}

/// A `--worktree` run's worktree, as `run_start.worktree` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorktreeInfo {
    /// The worktree's name.
    pub(crate) name: String,
    /// The branch its changes are committed to (`zero/NAME`), kept after the run.
    pub(crate) branch: String,
}

/// An MCP server as `run_start` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct McpServerInfo {
    /// The server's name (its tools are `mcp__NAME__TOOL`).
    pub(crate) name: String,
    /// How it is reached.
    pub(crate) transport: McpTransport,
    /// Whether it started (when it did not, `error` says why, and the run has none of its
    /// tools).
    pub(crate) state: McpState,
    /// How many tools it offers.
    pub(crate) tools: usize,
    /// Why it failed to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// The model's context window, as `run_end` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WindowInfo {
    /// Its size in tokens.
    pub(crate) tokens: u32,
    /// Where that came from.
    pub(crate) source: WindowSource,
}

/// Where a context window's size came from, as `run_end.contextWindow.source` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WindowSource {
    /// `--context-window`.
    Flag,
    /// `context_window` in config.toml (`config`).
    #[serde(rename = "config")]
    ConfigFile,
    /// The server said.
    Server,
    /// zero's table of known models.
    KnownModel,
    /// Nothing said: the default size.
    Default,
}

/// How an MCP server is reached, as `run_start.mcpServers[].transport` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum McpTransport {
    /// A process zero started, spoken to on its stdin and stdout.
    Stdio,
    /// A streamable HTTP endpoint.
    Http,
}

/// How an MCP server's start went, as `run_start.mcpServers[].state` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum McpState {
    /// It started and listed its tools.
    Ready,
    /// It did not start; the run has none of its tools.
    Failed,
}

/// The side effect a `tool_call` reports: the called tool's, or `unknown` when the model
/// called a tool that does not exist (the call then fails). Written as the tool's own
/// [`SideEffect`] word, so the two vocabularies cannot drift apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallEffect {
    /// The tool exists and has this side effect.
    Known(SideEffect),
    /// No tool has the name the model called.
    Unknown,
}

/// The word [`CallEffect::Unknown`] is written as.
const UNKNOWN_EFFECT: &str = "unknown";

impl From<Option<SideEffect>> for CallEffect {
    /// The effect of a tool that may not exist.
    fn from(effect: Option<SideEffect>) -> Self {
        effect.map_or(CallEffect::Unknown, CallEffect::Known)
    }
}

impl Serialize for CallEffect {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CallEffect::Known(effect) => effect.serialize(serializer),
            CallEffect::Unknown => serializer.serialize_str(UNKNOWN_EFFECT),
        }
    }
}

impl<'de> Deserialize<'de> for CallEffect {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::IntoDeserializer;
        let word = String::deserialize(deserializer)?;
        if word == UNKNOWN_EFFECT {
            return Ok(CallEffect::Unknown);
        }
        SideEffect::deserialize(word.into_deserializer()).map(CallEffect::Known)
    }
}

/// A resumed run's permissions against the earlier run's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PermissionsChanged {
    /// The earlier run's.
    pub(crate) before: Permissions,
    /// This run's.
    pub(crate) now: Permissions,
}

/// A specialist as listed by `--list-specialists`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpecialistInfo {
    /// Its name, as the `Task` tool takes it.
    pub(crate) name: String,
    /// When to use it.
    pub(crate) description: String,
    /// `builtin`, or the path of the manifest that defined it.
    pub(crate) source: String,
    /// The tools it may use, sorted.
    pub(crate) tools: Vec<String>,
    /// Its own model, absent when it runs on the launching run's model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
    /// The skills it may load (its manifest's `skills:`), absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) skills: Vec<String>,
}

/// A skill as listed by `--list-skills`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SkillInfo {
    /// Its name, as the `Skill` tool takes it.
    pub(crate) name: String,
    /// When to use it.
    pub(crate) description: String,
    /// The path of its `SKILL.md`.
    pub(crate) source: String,
    /// Its `allowed-tools`, as written; absent when it names none. Once the skill is loaded
    /// they narrow the run (`rules::Narrowing`), never widen it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) allowed_tools: Vec<String>,
}

/// A policy decision on a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Decision {
    /// The call may run.
    Allow,
    /// The call was refused.
    Deny,
}

/// Whether a tool call succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CallStatus {
    /// It returned a result.
    Ok,
    /// It failed or was refused.
    Error,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RunStatus {
    /// The model gave its final answer.
    Success,
    /// Something failed (usage, provider, internal).
    Error,
    /// A budget ran out before a final answer.
    Incomplete,
    /// A signal ended the run.
    Interrupted,
}

impl From<ExitCode> for RunStatus {
    /// The `run_end.status` that goes with an exit code.
    fn from(exit: ExitCode) -> Self {
        match exit {
            // A review that found something still ran to its answer.
            ExitCode::Success | ExitCode::Findings => RunStatus::Success,
            ExitCode::Internal | ExitCode::Usage | ExitCode::Provider => RunStatus::Error,
            ExitCode::Incomplete => RunStatus::Incomplete,
            ExitCode::Hangup | ExitCode::Interrupted | ExitCode::Terminated => {
                RunStatus::Interrupted
            }
        }
    }
}

/// Token totals over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageTotals {
    /// Input tokens, cached ones included.
    pub(crate) prompt_tokens: u64,
    /// Output tokens, reasoning included.
    pub(crate) completion_tokens: u64,
    /// Their sum.
    pub(crate) total_tokens: u64,
    /// Of the input, tokens read from the provider's prompt cache.
    #[serde(default)]
    pub(crate) cached_input_tokens: u64,
    /// Of the input, tokens written to the prompt cache.
    #[serde(default)]
    pub(crate) cache_write_tokens: u64,
    /// Of the output, tokens spent reasoning.
    #[serde(default)]
    pub(crate) reasoning_tokens: u64,
    /// Whether some of the counts are zero's estimate (a response cut off before the provider
    /// reported its usage); present only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) estimated: bool,
}

/// Milliseconds as seconds for a person: `0.5s`, `12.0s`.
fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// The most of a tool's output one `tool_result` event carries; the model saw all of it.
pub(crate) const TOOL_RESULT_EVENT_MAX: usize = 10 * 1024;

/// Which part of a run an event tells of: what the writers of `-o text` and `-o json` take the
/// events apart by, one method per family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// How the run starts and ends, and what goes wrong on the way: `run_start`, `run_end`,
    /// `warning`, `error`.
    Run,
    /// `--list-tools` and `--list-specialists`.
    Listing,
    /// The model's side: its text, reasoning and answer, its spending, waits on it, and the
    /// conversation compacted for it.
    Model,
    /// Tool calls and what decides and follows them: `tool_call`, the permission events,
    /// `hook`, `tool_result`, `plan`; and the checks an answer is put to (`verify_start`,
    /// `verify_end`).
    Call,
    /// Background tasks starting and ending.
    Task,
}

/// What a `git_metadata_restored` event says, as one line of text (the `text` writer's
/// warning, a `-o json` summary's).
pub(crate) fn git_restored_message(event: &EventKind) -> String {
    let EventKind::GitMetadataRestored {
        restored, failed, ..
    } = event
    else {
        return String::new();
    };
    let mut parts = Vec::new();
    if !restored.is_empty() {
        parts.push(format!(
            "a command changed git metadata that would start a program in your own git; put \
             back as the run found it: {}",
            restored.join(", ")
        ));
    }
    for NotRestored { path, error } in failed {
        parts.push(format!(
            "git metadata a command changed could not be put back: {path}: {error}"
        ));
    }
    parts.join("; ")
}

/// A path of git metadata that differs from what the run found and could not be put back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotRestored {
    /// The path, absolute.
    pub path: String,
    /// Why it could not be put back.
    pub error: String,
}

impl EventKind {
    /// The family the event belongs to. Exhaustive, so a new kind must be placed in one
    /// before any writer sees it.
    pub(crate) fn family(&self) -> Family {
        match self {
            EventKind::RunStart { .. }
            | EventKind::RunEnd { .. }
            | EventKind::Warning { .. }
            | EventKind::GitMetadataRestored { .. }
            | EventKind::Error { .. } => Family::Run,
            EventKind::Tools { .. } | EventKind::Specialists { .. } | EventKind::Skills { .. } => {
                Family::Listing
            }
            EventKind::Text { .. }
            | EventKind::Reasoning { .. }
            | EventKind::Final { .. }
            | EventKind::Usage(_)
            | EventKind::Retry { .. }
            | EventKind::Waiting { .. }
            | EventKind::ModelSwitch { .. }
            | EventKind::Compaction { .. } => Family::Model,
            EventKind::ToolCall { .. }
            | EventKind::PermissionDecision { .. }
            | EventKind::PermissionDenied { .. }
            | EventKind::Hook(_)
            | EventKind::ToolResult { .. }
            | EventKind::Plan { .. }
            | EventKind::VerifyStart { .. }
            | EventKind::VerifyEnd { .. } => Family::Call,
            EventKind::TaskStarted { .. } | EventKind::TaskFinished { .. } => Family::Task,
        }
    }

    /// The tool of the call the event reports refused before it ran (what `run_end` counts),
    /// `None` for any other event.
    pub(crate) fn denied_tool(&self) -> Option<&str> {
        match self {
            EventKind::PermissionDenied { name, .. }
            | EventKind::PermissionDecision {
                name,
                decision: Decision::Deny,
                ..
            } => Some(name),
            _ => None,
        }
    }

    /// The stderr line of an event about waiting on the model (`retry`, `waiting`,
    /// `model_switch`), which
    /// every output format writes so that a person watching a slow run sees why; `None` for
    /// any other event.
    pub(crate) fn waiting_line(&self) -> Option<String> {
        match self {
            EventKind::Retry {
                attempt,
                max_attempts,
                code,
                reason,
                delay_ms,
            } => Some(format!(
                "zero: model request attempt {attempt} of {max_attempts} failed ({code}); \
                 trying again in {}: {reason}",
                seconds(*delay_ms)
            )),
            EventKind::Waiting {
                attempt,
                max_attempts,
                phase,
                waited_ms,
                timeout_ms,
            } => {
                let what = match phase {
                    WaitPhase::FirstByte => "no response from the model yet",
                    WaitPhase::Stream => "the model's response has stalled",
                };
                Some(format!(
                    "zero: waiting: {what} after {} (attempt {attempt} of {max_attempts}; \
                     given up on at {})",
                    seconds(*waited_ms),
                    seconds(*timeout_ms)
                ))
            }
            EventKind::ModelSwitch {
                from,
                to,
                code,
                reason,
            } => Some(format!(
                "zero: model {from} failed ({code}); switching to the fallback model {to}: \
                 {reason}"
            )),
            _ => None,
        }
    }

    /// The `git_metadata_restored` event for `restoration`, after the call `call_id` or at
    /// the run's close; `None` when nothing differed.
    pub(crate) fn git_restored(call_id: Option<&str>, restoration: &Restoration) -> Option<Self> {
        if restoration.is_empty() {
            return None;
        }
        Some(EventKind::GitMetadataRestored {
            call_id: call_id.map(str::to_string),
            restored: restoration
                .restored
                .iter()
                .map(|path| path.display().to_string())
                .collect(),
            failed: restoration
                .failed
                .iter()
                .map(|(path, error)| NotRestored {
                    path: path.display().to_string(),
                    error: error.clone(),
                })
                .collect(),
        })
    }

    /// A `tool_result` event, its output cut to [`TOOL_RESULT_EVENT_MAX`] on a char boundary.
    pub(crate) fn tool_result(id: &str, name: &str, status: CallStatus, output: &str) -> Self {
        let cut = crate::tools::text::prefix_at_boundary(output, TOOL_RESULT_EVENT_MAX);
        let truncated = cut.len() < output.len();
        let output = if truncated {
            format!("{cut}\n[truncated]")
        } else {
            output.to_string()
        };
        EventKind::ToolResult {
            id: id.to_string(),
            name: name.to_string(),
            status,
            output,
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn task_events_carry_the_kind_and_its_label() {
        let started = EventKind::TaskStarted {
            task_id: "task_0123456789ab".into(),
            kind: TaskKind::Shell {
                command: "sleep 100".into(),
            },
            description: None,
        };
        let finished = EventKind::TaskFinished {
            task_id: "task_0123456789ab".into(),
            kind: TaskKind::Specialist {
                name: "explorer".into(),
            },
            status: TaskStatus::Killed,
            exit_code: None,
        };
        let wire = |event: &EventKind| {
            serde_json::to_value(Envelope {
                schema_version: SCHEMA_VERSION,
                run_id: "run_1",
                event,
            })
            .unwrap()
        };
        assert_eq!(
            wire(&started),
            json!({"schemaVersion": 3, "runId": "run_1", "type": "task_started",
                   "taskId": "task_0123456789ab", "kind": "shell", "command": "sleep 100"})
        );
        assert_eq!(
            wire(&finished),
            json!({"schemaVersion": 3, "runId": "run_1", "type": "task_finished",
                   "taskId": "task_0123456789ab", "kind": "specialist", "name": "explorer",
                   "status": "killed"})
        );
    }
}
