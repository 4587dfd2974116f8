//! What a hook reads on stdin: one JSON object describing the moment it runs at, with every
//! fact under zero's name and, where Claude Code has one, under Claude Code's too, so a script
//! written for either reads what it expects:
//!
//! | zero | Claude Code | what |
//! |---|---|---|
//! | `run_id` | — | the run |
//! | `session_id` | `session_id` | the session (absent with `--no-session`) |
//! | `workspace` | `cwd` | the workspace root (also the hook's working directory) |
//! | `event` | `hook_event_name` | `pre_tool_use` / `PreToolUse`, … |
//! | `tool` | `tool_name` | `bash` / `Bash` (see `hooks::claude`) |
//! | `call_id` | `tool_use_id` | the call's id |
//! | `arguments` | `tool_input` | the call's arguments, each in its own names |
//! | `result` | `tool_response` | after the call: `{"output", "is_error"}`; Claude Code's per-tool shape (`response`) |
//! | `duration_ms` | `duration_ms` | after the call: how long it ran |
//! | `auto` | `permission_mode` | `--auto`: `low` / `plan`, `medium` / `acceptEdits`, `high` / `bypassPermissions` |
//! | `answer` | `last_assistant_message` | at `stop`: the final answer |
//! | `refusals` | `stop_hook_active` | at `stop`: the answers refused so far (true when any) |
//! | `source` | `source` | at `session_start`: `startup` or `resume` |

use std::path::Path;

use serde_json::{Value, json};

use super::HookPoint;
use super::claude;
use crate::tools::policy::Autonomy;

/// The run's facts every hook input carries.
#[derive(Debug, Clone)]
pub struct RunFacts {
    /// The run's id.
    pub run_id: String,
    /// The run's session, when it keeps one.
    pub session_id: Option<String>,
    /// The workspace root.
    pub workspace: std::path::PathBuf,
    /// The run's `--auto` level.
    pub autonomy: Autonomy,
}

/// The moment a hook runs at, with what it is told about it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Moment<'a> {
    /// A call is about to run.
    PreToolUse(Call<'a>),
    /// A call ran and succeeded, with this result.
    PostToolUse {
        /// The call.
        call: Call<'a>,
        /// What the model is told.
        output: &'a str,
        /// The result in Claude Code's shape for the tool (`hooks::response`).
        response: &'a Value,
        /// How long the call ran, in milliseconds.
        duration_ms: u64,
    },
    /// The model gave this final answer, after this many refusals.
    Stop {
        /// The answer.
        answer: &'a str,
        /// How many answers hooks refused before.
        refusals: u32,
    },
    /// The run starts: `startup`, or `resume` for a resumed session.
    SessionStart {
        /// How it starts.
        source: &'a str,
    },
}

/// A tool call as a hook is told about it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    /// Its id.
    pub(crate) id: &'a str,
    /// The tool's (zero) name.
    pub(crate) tool: &'a str,
    /// Its arguments, in zero's names.
    pub(crate) arguments: &'a Value,
}

impl Moment<'_> {
    /// Where it is.
    pub(crate) fn point(&self) -> HookPoint {
        match self {
            Moment::PreToolUse(_) => HookPoint::PreToolUse,
            Moment::PostToolUse { .. } => HookPoint::PostToolUse,
            Moment::Stop { .. } => HookPoint::Stop,
            Moment::SessionStart { .. } => HookPoint::SessionStart,
        }
    }

    /// The call it is about, if any.
    pub(crate) fn call(&self) -> Option<Call<'_>> {
        match self {
            Moment::PreToolUse(call) | Moment::PostToolUse { call, .. } => Some(*call),
            Moment::Stop { .. } | Moment::SessionStart { .. } => None,
        }
    }

    /// The JSON object a hook reads on stdin.
    pub(crate) fn input(&self, facts: &RunFacts) -> Value {
        let point = self.point();
        let mut input = json!({
            "run_id": facts.run_id,
            "workspace": path(&facts.workspace),
            "cwd": path(&facts.workspace),
            "event": point.key(),
            "hook_event_name": point.claude_name(),
            "auto": facts.autonomy,
            "permission_mode": permission_mode(facts.autonomy),
        });
        if let Some(session) = &facts.session_id {
            input["session_id"] = json!(session);
        }
        if let Some(call) = self.call() {
            input["tool"] = json!(call.tool);
            input["tool_name"] = json!(claude::tool_name(call.tool));
            input["call_id"] = json!(call.id);
            input["tool_use_id"] = json!(call.id);
            input["arguments"] = call.arguments.clone();
            input["tool_input"] = claude::to_claude(call.tool, call.arguments);
        }
        match self {
            Moment::PostToolUse {
                output,
                response,
                duration_ms,
                ..
            } => {
                // Only a call that succeeded has hooks after it (as Claude Code's PostToolUse).
                input["result"] = json!({"output": output, "is_error": false});
                input["tool_response"] = (*response).clone();
                input["duration_ms"] = json!(duration_ms);
            }
            Moment::Stop { answer, refusals } => {
                input["answer"] = json!(answer);
                input["last_assistant_message"] = json!(answer);
                input["refusals"] = json!(refusals);
                input["stop_hook_active"] = json!(*refusals > 0);
            }
            Moment::SessionStart { source } => input["source"] = json!(source),
            Moment::PreToolUse(_) => {}
        }
        input
    }
}

/// Claude Code's permission mode nearest to the `--auto` level: `plan` is read-only,
/// `acceptEdits` edits without asking (commands too, at `medium`, inside the sandbox), and
/// `bypassPermissions` asks nothing.
fn permission_mode(autonomy: Autonomy) -> &'static str {
    match autonomy {
        Autonomy::Low => "plan",
        Autonomy::Medium => "acceptEdits",
        Autonomy::High => "bypassPermissions",
    }
}

/// A path as a string (lossy: hooks read JSON, which holds text).
fn path(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_described_in_zero_and_claude_code_words() {
        let facts = RunFacts {
            run_id: "run_1".into(),
            session_id: Some("ses".into()),
            workspace: "/ws".into(),
            autonomy: Autonomy::Medium,
        };
        let arguments = json!({"path": "a.rs", "content": "x"});
        let call = Call {
            id: "c1",
            tool: "write_file",
            arguments: &arguments,
        };
        let input = Moment::PreToolUse(call).input(&facts);
        assert_eq!(input["event"], "pre_tool_use");
        assert_eq!(input["hook_event_name"], "PreToolUse");
        assert_eq!(input["tool"], "write_file");
        assert_eq!(input["tool_name"], "Write");
        assert_eq!(input["tool_input"]["file_path"], "a.rs");
        assert_eq!(input["arguments"]["path"], "a.rs");
        assert_eq!(input["cwd"], "/ws");
        assert_eq!(input["session_id"], "ses");
        assert_eq!(input["permission_mode"], "acceptEdits");
        assert_eq!(input["auto"], "medium");
        let response = json!({"type": "create"});
        let post = Moment::PostToolUse {
            call,
            output: "done",
            response: &response,
            duration_ms: 7,
        }
        .input(&facts);
        assert_eq!(post["tool_response"], response);
        assert_eq!(post["result"]["output"], "done");
        assert_eq!(post["duration_ms"], 7);
        let stop = Moment::Stop {
            answer: "42",
            refusals: 1,
        }
        .input(&facts);
        assert_eq!(stop["stop_hook_active"], true);
        assert_eq!(stop["last_assistant_message"], "42");
        assert!(stop.get("tool").is_none());
    }
}
