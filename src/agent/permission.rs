//! The permission step: the one decision every tool call passes just before it runs.
//!
//! In order: the `--auto` level (a tool it hides is refused, with the flag that would allow
//! it), the caller's rules on the call's arguments (`rules::RuleSet::check`: deny rules, then
//! allow rules), the `allowed-tools` of the skills in use (`rules::Narrowing`: a skill only
//! narrows), the `pre_tool_use` hooks (which may only narrow: deny the call, or rewrite its
//! arguments), and the rewritten arguments put to the level, the rules and the skills again,
//! so a hook cannot turn a call into one they refuse. Headless means there is no "ask": what would ask
//! is refused.
//!
//! The step returns the arguments the call runs with, or a [`Refusal`] that says who refused
//! and carries what decided it (the rules' [`Denial`], with every rule that matched, as codex's
//! execpolicy `Evaluation` does). The refusal's event is made in one place,
//! [`Refusal::emit`]: a rule's refusal is a `permission_denied` (the rule and the arguments),
//! every other a `permission_decision`.

use serde_json::Value;

use crate::hooks::{Hooks, PreVerdict};
use crate::output::{Decision, EventKind, ExecDenied, Output};
use crate::provider::ToolCall;
use crate::rules::{Denial, Narrowing, RuleSet, Verdict};
use crate::runtime::ExecRefusal;
use crate::tools::{ToolError, Toolset};

/// What the permission step asks about a call: the tools on offer (which know the level), the
/// caller's rules, the skills in use and the caller's hooks.
#[derive(Clone, Copy)]
pub(crate) struct Judges<'a> {
    /// The tools on offer: a tool the `--auto` level hides is refused by them.
    pub(crate) toolset: &'a Toolset,
    /// The caller's permission rules.
    pub(crate) rules: &'a RuleSet,
    /// The skills in use, whose `allowed-tools` narrow what the rules allow.
    pub(crate) narrowing: &'a Narrowing,
    /// The caller's hooks, of which the step runs the `pre_tool_use` ones.
    pub(crate) hooks: &'a Hooks,
}

/// A call the permission step refused, by who refused it.
#[derive(Debug, Clone)]
pub(crate) enum Refusal {
    /// The `--auto` level hides the tool: why, naming the flag that would allow it.
    Level(String),
    /// A permission rule refused the call, or no allow rule admitted it, or a skill in use
    /// does not list it: the rules' denial, and the arguments they judged.
    Rule {
        /// What the rules said, with every rule that matched.
        denial: Denial,
        /// The arguments the rules judged (the call's own: the rules come before the hooks).
        args: Value,
    },
    /// A `pre_tool_use` hook denied the call or failed: why, naming the hook.
    Hook(String),
    /// A `pre_tool_use` hook rewrote the arguments into a call the level or the rules refuse:
    /// that refusal.
    Rewritten(Box<Refusal>),
}

/// The permission step on `call` with its decoded `args`: the arguments it runs with (a hook
/// may have rewritten them), or who refused it and why.
pub(crate) async fn decide(
    call: &ToolCall,
    args: Value,
    judges: Judges<'_>,
) -> Result<Value, Refusal> {
    let args = check(&call.name, args, judges)?;
    match judges.hooks.pre_tool_use(&call.id, &call.name, args).await {
        PreVerdict::Proceed {
            arguments,
            rewritten: false,
        } => Ok(arguments),
        PreVerdict::Proceed {
            arguments,
            rewritten: true,
        } => check(&call.name, arguments, judges)
            .map_err(|refusal| Refusal::Rewritten(Box::new(refusal))),
        PreVerdict::Deny(reason) => Err(Refusal::Hook(reason)),
    }
}

/// The level, then the rules, then the skills in use, on a call of `tool` with `args`; the
/// arguments back when all three let it pass.
fn check(tool: &str, args: Value, judges: Judges<'_>) -> Result<Value, Refusal> {
    if let Err(ToolError::Denied(reason)) = judges.toolset.lookup(tool) {
        return Err(Refusal::Level(reason));
    }
    let verdict = match judges.rules.check(tool, &args) {
        Verdict::Allow => judges.narrowing.check(tool, &args),
        denied => denied,
    };
    match verdict {
        Verdict::Allow => Ok(args),
        Verdict::Deny(denial) => Err(Refusal::Rule { denial, args }),
    }
}

impl Refusal {
    /// The whole explanation, as the model gets it in the call's error result.
    pub(crate) fn reason(&self) -> String {
        match self {
            Refusal::Level(reason) | Refusal::Hook(reason) => reason.clone(),
            Refusal::Rule { denial, .. } => denial.reason.clone(),
            Refusal::Rewritten(refusal) => format!(
                "the arguments a pre_tool_use hook rewrote are denied: {}",
                refusal.reason()
            ),
        }
    }

    /// The call's error result.
    pub(crate) fn into_error(self) -> ToolError {
        ToolError::Denied(self.reason())
    }

    /// Emits this refusal of `call` on `output`: a rule's as a `permission_denied` (the rule
    /// and the arguments, their secrets masked), every other as a `permission_decision`.
    pub(crate) fn emit(&self, call: &ToolCall, output: &Output) {
        output.emit(match self {
            Refusal::Rule { denial, args } => EventKind::PermissionDenied {
                id: call.id.clone(),
                name: call.name.clone(),
                args: masked(args, &|text| output.secrets().apply(text)),
                rule: denial.rule().map(str::to_owned),
                reason: denial.reason.clone(),
                exec: None,
            },
            Refusal::Level(_) | Refusal::Hook(_) | Refusal::Rewritten(_) => {
                EventKind::PermissionDecision {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    decision: Decision::Deny,
                    reason: self.reason(),
                }
            }
        });
    }
}

/// Emits a `permission_denied` event for each program of `call`'s command (run with `args`)
/// that the exec check refused: the call ran, the program did not.
pub(crate) fn emit_exec_refusals(
    call: &ToolCall,
    args: &Value,
    refused: Vec<ExecRefusal>,
    output: &Output,
) {
    for refusal in refused {
        output.emit(exec_refused(
            &call.id, &call.name, args, refusal, None, output,
        ));
    }
}

/// Emits a `permission_denied` event for each program the exec check refused in the command
/// of the background task `task` (its command line `command`), when the task has ended: the
/// call that started it was answered long before, so the event carries the task's id.
pub(crate) fn emit_task_exec_refusals(
    task: &str,
    command: &str,
    refused: Vec<ExecRefusal>,
    output: &Output,
) {
    let args = serde_json::json!({ "command": command, "run_in_background": true });
    for refusal in refused {
        let event = exec_refused(task, "bash", &args, refusal, Some(task), output);
        output.emit(event);
    }
}

/// The `permission_denied` event of `refusal`, a program of the command of the call `id` of
/// `tool` (run with `args`) refused at exec; `task` names the background task it ran in.
fn exec_refused(
    id: &str,
    tool: &str,
    args: &Value,
    refusal: ExecRefusal,
    task: Option<&str>,
    output: &Output,
) -> EventKind {
    let mask = |text: &str| output.secrets().apply(text);
    let program = mask(&refusal.argv.join(" "));
    let whose = match task {
        Some(task) => format!("the background task {task}'s command"),
        None => "the command".to_string(),
    };
    let reason = match &refusal.rule {
        Some(rule) => format!(
            "the rule `{rule}` (deny) refused the program `{program}` (process {}) that {whose} \
             ran; the rest of the command ran, so check what it did; a deny rule cannot be \
             overridden, so do this another way",
            refusal.pid
        ),
        None => format!(
            "the program `{}` (process {}) that {whose} ran was refused: its arguments could \
             not be read to check them against the deny rules on commands",
            mask(&refusal.path),
            refusal.pid
        ),
    };
    EventKind::PermissionDenied {
        id: id.to_owned(),
        name: tool.to_owned(),
        args: masked(args, &mask),
        rule: refusal.rule,
        reason,
        exec: Some(ExecDenied {
            pid: refusal.pid,
            path: mask(&refusal.path),
            argv: refusal.argv.iter().map(|word| mask(word)).collect(),
            task_id: task.map(str::to_owned),
        }),
    }
}

/// `value` with `mask` applied to every string in it.
fn masked(value: &Value, mask: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(text) => Value::String(mask(text)),
        Value::Array(items) => Value::Array(items.iter().map(|item| masked(item, mask)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, field)| (key.clone(), masked(field, mask)))
                .collect(),
        ),
        other => other.clone(),
    }
}
