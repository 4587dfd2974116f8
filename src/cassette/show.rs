//! `zero replay show FILE` and `zero replay check FILE`: a cassette read by a person, and
//! checked by a script.
//!
//! `show` renders each task's exchanges as the events the run emitted — its tool calls, the
//! results the next request carried back, its retries, its answer or its failure — through
//! the `text` writer, so it reads as `-o text` printed the run (progress on stderr, the
//! answer on stdout); each specialist follows under a heading. `check` reads the whole
//! cassette (`tape`: every line's schema, the version, every hash, the pairing) and exits 2
//! naming the first line that is wrong, a cut last line included.

use std::path::Path;

use serde_json::Value;

use super::ROOT_TASK;
use super::line::{Outcome, Piece};
use super::tape::{Exchange, Tape};
use crate::exit::ExitCode;
use crate::output::{
    CallEffect, CallStatus, ErrorCode, EventKind, Output, OutputFormat, neutralise,
};
use crate::redact::Secrets;

/// `zero replay show`: see the module documentation. Exit 2 for a cassette that cannot be
/// read; a cut one is shown up to where it ends.
pub fn show(path: &Path, secrets: Secrets) -> ExitCode {
    let tape = match Tape::read(path) {
        Ok(tape) => tape,
        Err(error) => return refuse(&error),
    };
    for task in tape.tasks() {
        if task != ROOT_TASK {
            let model = tape.start_of(task).map_or("", |start| start.model.as_str());
            eprintln!(
                "{}",
                neutralise(&format!("── specialist task {task} ({model}) ──"))
            );
        }
        let output = Output::new(OutputFormat::Text, secrets.clone());
        for event in events(tape.exchanges_of(task)) {
            output.emit(event);
        }
        output.drain();
    }
    eprintln!("{}", tape.end());
    ExitCode::Success
}

/// `zero replay check`: see the module documentation.
pub fn check(path: &Path) -> ExitCode {
    match Tape::read(path).and_then(|tape| tape.complete().map(|()| tape)) {
        Ok(tape) => {
            let requests: usize = tape
                .tasks()
                .iter()
                .map(|task| tape.exchanges_of(task).len())
                .sum();
            println!(
                "{}: a valid cassette: {} task(s), {requests} request(s); {}",
                neutralise(&path.display().to_string()),
                tape.tasks().len(),
                tape.end()
            );
            ExitCode::Success
        }
        Err(error) => refuse(&error),
    }
}

/// Exit 2 for a cassette that is wrong, saying where.
fn refuse(error: &super::tape::TapeError) -> ExitCode {
    eprintln!("{}", neutralise(&format!("zero: error: {error}")));
    ExitCode::Usage
}

/// The events a task's exchanges stand for, in order.
fn events(exchanges: &[Exchange]) -> Vec<EventKind> {
    let mut events = Vec::new();
    for (index, exchange) in exchanges.iter().enumerate() {
        if index > 0 {
            events.extend(results(&exchange.request.request));
        }
        let Some((_, response)) = &exchange.response else {
            events.push(EventKind::Warning {
                message: format!(
                    "request {} (line {}) has no recorded response",
                    exchange.request.seq, exchange.line
                ),
            });
            continue;
        };
        events.extend(response.stream.iter().filter_map(retry));
        events.extend(outcome(&response.outcome));
    }
    events
}

/// The retry event of a recorded retry.
fn retry(piece: &Piece) -> Option<EventKind> {
    match piece {
        Piece::Retry {
            attempt,
            max_attempts,
            class,
            reason,
            delay_ms,
            ..
        } => Some(EventKind::Retry {
            attempt: *attempt,
            max_attempts: *max_attempts,
            code: ErrorCode::from(*class),
            reason: reason.clone(),
            delay_ms: *delay_ms,
        }),
        _ => None,
    }
}

/// The events of a response's outcome: its calls, else its answer; or its failure.
fn outcome(outcome: &Outcome) -> Vec<EventKind> {
    match outcome {
        Outcome::Completion(completion) if completion.tool_calls.is_empty() => {
            vec![EventKind::Final {
                text: completion.text.clone(),
                structured: None,
            }]
        }
        Outcome::Completion(completion) => completion
            .tool_calls
            .iter()
            .map(|call| EventKind::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                args: serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone())),
                side_effect: CallEffect::Unknown,
            })
            .collect(),
        Outcome::Error(error) => vec![EventKind::Error {
            code: ErrorCode::from(error.class),
            message: error.message.clone(),
            retryable: error.retryable,
            schema_errors: Vec::new(),
        }],
    }
}

/// The results a request carried back for the previous turn's calls: its tool results
/// after the last assistant turn.
fn results(form: &Value) -> Vec<EventKind> {
    let empty = Vec::new();
    let messages = form["messages"].as_array().unwrap_or(&empty);
    let after = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .map_or(0, |at| at + 1);
    messages[after..]
        .iter()
        .filter(|m| m["role"] == "tool_result")
        .map(|m| EventKind::ToolResult {
            id: m["call_id"].as_str().unwrap_or_default().to_string(),
            name: m["name"].as_str().unwrap_or_default().to_string(),
            status: match m["is_error"].as_bool() {
                Some(true) => CallStatus::Error,
                _ => CallStatus::Ok,
            },
            output: m["output"].as_str().unwrap_or_default().to_string(),
            truncated: false,
        })
        .collect()
}
