//! Running one turn's tool calls: consecutive read-only calls together (bounded), everything
//! else one at a time, results always in the model's order, and every failure — unknown tool,
//! invalid JSON, policy refusal — turned into an error result the model can act on.

use futures_util::StreamExt;
use serde_json::Value;

use crate::output::{CallStatus, Decision, EventKind, Output};
use crate::provider::{Message, ToolCall};
use crate::tools::{SideEffect, ToolContext, ToolError, Toolset};

/// How many read-only calls of one turn run at the same time.
const PARALLEL_READS: usize = 8;

/// A call with its arguments decoded (or the reason they could not be).
struct Prepared<'a> {
    call: &'a ToolCall,
    args: Result<Value, String>,
    /// Safe to run beside its neighbours: a visible read-only tool with valid arguments.
    parallel: bool,
}

/// Runs every call of a turn and returns the tool-result messages, in the model's order.
pub async fn run_all(
    calls: &[ToolCall],
    toolset: &Toolset,
    context: &ToolContext,
    output: &Output,
) -> Vec<Message> {
    let prepared: Vec<Prepared<'_>> = calls.iter().map(|call| prepare(call, toolset)).collect();
    let mut results = Vec::with_capacity(calls.len());
    let mut rest = prepared.as_slice();
    while let Some(first) = rest.first() {
        let batch_len = if first.parallel {
            rest.iter().take_while(|p| p.parallel).count()
        } else {
            1
        };
        let (batch, remaining) = rest.split_at(batch_len);
        rest = remaining;
        for item in batch {
            announce(item, toolset, output);
        }
        let outcomes: Vec<Result<String, ToolError>> = futures_util::stream::iter(batch)
            .map(|item| execute(item, toolset, context))
            .buffered(PARALLEL_READS)
            .collect()
            .await;
        for (item, outcome) in batch.iter().zip(outcomes) {
            results.push(report(item.call, outcome, output));
        }
        if context.cancel.is_cancelled() {
            // Calls the model asked for but that never ran still need an answer each.
            for item in rest {
                announce(item, toolset, output);
                results.push(report(item.call, Err(ToolError::Cancelled), output));
            }
            break;
        }
    }
    results
}

fn prepare<'a>(call: &'a ToolCall, toolset: &Toolset) -> Prepared<'a> {
    let args = parse_arguments(&call.arguments);
    let parallel = args.is_ok()
        && toolset
            .lookup(&call.name)
            .is_ok_and(|tool| tool.side_effect() == SideEffect::Read);
    Prepared {
        call,
        args,
        parallel,
    }
}

/// The arguments as JSON; an empty string means "no arguments".
fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(raw).map_err(|e| format!("the arguments are not valid JSON ({e})"))
}

/// Emits the `tool_call` event (and a `permission_decision` when policy refuses the call).
fn announce(item: &Prepared<'_>, toolset: &Toolset, output: &Output) {
    let call = item.call;
    output.emit(EventKind::ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        args: item
            .args
            .clone()
            .unwrap_or_else(|_| Value::String(call.arguments.clone())),
        side_effect: toolset
            .side_effect_of(&call.name)
            .map_or("unknown", SideEffect::as_str)
            .to_string(),
    });
    if let Err(ToolError::Denied(reason)) = toolset.lookup(&call.name) {
        output.emit(EventKind::PermissionDecision {
            id: call.id.clone(),
            name: call.name.clone(),
            decision: Decision::Deny,
            reason,
        });
    }
}

async fn execute(
    item: &Prepared<'_>,
    toolset: &Toolset,
    context: &ToolContext,
) -> Result<String, ToolError> {
    let args = item.args.clone().map_err(ToolError::InvalidArguments)?;
    tokio::select! {
        result = toolset.call(&item.call.name, args, context) => result,
        () = context.cancel.cancelled() => Err(ToolError::Cancelled),
    }
}

/// Emits the `tool_result` event and builds the message the model gets.
fn report(call: &ToolCall, outcome: Result<String, ToolError>, output: &Output) -> Message {
    let (status, text) = match outcome {
        Ok(text) => (CallStatus::Ok, text),
        Err(error) => (CallStatus::Error, format!("Error: {error}")),
    };
    output.emit(EventKind::tool_result(&call.id, &call.name, status, &text));
    Message::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        output: text,
        is_error: status == CallStatus::Error,
    }
}
