//! `TaskOutput`: reading a background task's state and output (a shell's log, or a
//! specialist's stream-json rendered as text). A thin adapter over [`Runtime`]: it validates
//! the arguments, calls it, and writes what happened for the model.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::ending::{self, ChildEnding, Excerpt};
use super::{Isolated, describe};
use crate::output::EventKind;
use crate::runtime::{OutputWindow, Runtime, TaskKind, TaskRecord, TaskStatus, Window};
use crate::tools::{
    Bounded, SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args, tool_error,
};

/// The output returned when the model gives no `max_bytes`.
const DEFAULT_MAX_BYTES: u64 = 16 * 1024;
/// The `max_bytes` argument: at most 256 KiB.
const MAX_BYTES: Bounded<u64> = Bounded {
    name: "max_bytes",
    min: 1,
    max: Some(256 * 1024),
};
/// How long `block` waits when the model gives no `timeout_ms`.
const DEFAULT_BLOCK_MS: u64 = 30_000;
/// The `timeout_ms` argument: the longest `block` wait, at most 10 minutes.
const BLOCK_MS: Bounded<u64> = Bounded {
    name: "timeout_ms",
    min: 1,
    max: Some(600_000),
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputArgs {
    task_id: String,
    block: Option<bool>,
    timeout_ms: Option<u64>,
    offset: Option<u64>,
    max_bytes: Option<u64>,
    answer: Option<bool>,
}

/// Reads a background task's state and output.
pub(crate) struct TaskOutput {
    runtime: Arc<Runtime>,
    /// The run's isolated worktrees, whose state a report includes; `None` in a run that
    /// launches no specialists.
    isolated: Option<Arc<Isolated>>,
}

impl TaskOutput {
    /// The tool over the run's runtime (and its isolated worktrees).
    pub(crate) fn new(runtime: Arc<Runtime>, isolated: Option<Arc<Isolated>>) -> Self {
        TaskOutput { runtime, isolated }
    }
}

#[async_trait]
impl Tool for TaskOutput {
    fn name(&self) -> &'static str {
        ToolId::TaskOutput.name()
    }

    fn description(&self) -> &'static str {
        "Check a background task started earlier in this run (a bash command or a Task \
         specialist run with run_in_background): its status, exit code and output. By default it \
         returns at once with the last max_bytes (default 16384) of the output; set block to \
         true to wait until the task ends or timeout_ms (default 30000, max 600000) passes. To \
         read output in order, pass offset (0 first, then the next_offset of the previous \
         result). Output is never read whole, so this is cheap however much the task wrote. \
         A specialist that has ended shows its final answer instead (up to max_bytes); set \
         answer to true, with offset, to read a long answer in pieces."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {
                    "type": "string",
                    "description": "The task's id, e.g. task_0123456789ab."
                },
                "block": {
                    "type": "boolean",
                    "description": "Wait for the task to end (up to timeout_ms) before answering."
                },
                "timeout_ms": BLOCK_MS.schema("With block: the longest to wait (default 30000)."),
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Read output from this byte offset instead of the end."
                },
                "max_bytes": MAX_BYTES.schema("The most output bytes to return (default 16384)."),
                "answer": {
                    "type": "boolean",
                    "description": "Read a specialist's final answer instead of its output: \
                                    offset and max_bytes then count bytes of the answer."
                }
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::TaskOutput.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: OutputArgs = parse_args(args)?;
        let max_bytes = MAX_BYTES.or(args.max_bytes, DEFAULT_MAX_BYTES)? as usize;
        let timeout_ms = BLOCK_MS.or(args.timeout_ms, DEFAULT_BLOCK_MS)?;
        let id = args.task_id.as_str();
        let wait = args.block.unwrap_or(false).then_some(timeout_ms);
        let record = self.record(id, wait, ctx).await?;
        let specialist = matches!(record.kind, TaskKind::Specialist { .. });
        let ended = record.status != TaskStatus::Running;
        let mut report = describe(&record);
        if let Some(isolated) = &self.isolated
            && let Some(worktree) = isolated.report(&record.id, ended).await
        {
            report.push_str(&worktree);
        }
        if wait.is_some() && !ended {
            report.push_str(&format!(
                "note: still running after waiting {timeout_ms} ms; call TaskOutput with \
                 block=true again to keep waiting, or TaskStop to stop it\n"
            ));
        }
        if args.answer.unwrap_or(false) {
            if !specialist {
                return Err(ToolError::InvalidArguments(format!(
                    "task {id} is a shell command, which has no final answer; read its output \
                     without `answer`"
                )));
            }
            self.append_answer(&mut report, id, ended, args.offset, max_bytes)
                .await?;
            return Ok(report);
        }
        // An ended specialist's answer is shown instead of its output when it has one.
        let answered = specialist
            && ended
            && args.offset.is_none()
            && self.append_ending(&mut report, id, max_bytes).await?;
        if !answered {
            self.append_output(&mut report, id, specialist, args.offset, max_bytes)
                .await?;
        }
        Ok(report)
    }
}

impl TaskOutput {
    /// The task's record: at once, or once it has ended or `wait` (ms) has passed.
    async fn record(
        &self,
        id: &str,
        wait: Option<u64>,
        ctx: &ToolContext,
    ) -> Result<TaskRecord, ToolError> {
        match wait {
            Some(ms) => tokio::select! {
                record = self.runtime.wait(id, Duration::from_millis(ms)) => record,
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            },
            None => self.runtime.status(id).await,
        }
        .map_err(tool_error)
    }

    /// Appends an ended specialist's final answer (its first `max_bytes`), which is what the
    /// model is after and may be longer than any window of its output (it is one line of
    /// stream-json), so it is found and shown itself. `false` when it gave none: its output
    /// then says what happened.
    async fn append_ending(
        &self,
        report: &mut String,
        id: &str,
        max_bytes: usize,
    ) -> Result<bool, ToolError> {
        let ending = ending::find(&self.runtime, id).await.map_err(tool_error)?;
        let Some(answer) = &ending.answer else {
            return Ok(false);
        };
        append_errors(report, &ending);
        let excerpt = Excerpt::new(id, answer, 0, max_bytes);
        report.push_str(&format!(
            "{}\n{excerpt}\n(its whole output, as stream-json: TaskOutput {{\"task_id\": \
             \"{id}\", \"offset\": 0}})\n",
            excerpt.header()
        ));
        Ok(true)
    }

    /// Appends the answer section: which bytes of a specialist's final answer are shown and
    /// where to continue, then those bytes (from `offset`, at most `max_bytes`).
    async fn append_answer(
        &self,
        report: &mut String,
        id: &str,
        ended: bool,
        offset: Option<u64>,
        max_bytes: usize,
    ) -> Result<(), ToolError> {
        if !ended {
            report.push_str(
                "answer: none yet (the specialist is still running; add \"block\": true to \
                 wait for it)\n",
            );
            return Ok(());
        }
        let ending = ending::find(&self.runtime, id).await.map_err(tool_error)?;
        append_errors(report, &ending);
        let Some(answer) = &ending.answer else {
            report.push_str(&format!("answer: {}\n", ending.shown(id, max_bytes)));
            return Ok(());
        };
        let offset = offset.unwrap_or(0);
        if offset > answer.len() as u64 {
            return Err(ToolError::InvalidArguments(format!(
                "offset {offset} is past the end of the answer ({} bytes)",
                answer.len()
            )));
        }
        let excerpt = Excerpt::new(id, answer, offset as usize, max_bytes);
        report.push_str(&format!("{}\n{excerpt}\n", excerpt.header()));
        Ok(())
    }

    /// Appends the output section: a window of the task's output file (a specialist's
    /// stream-json rendered as text, in whole lines).
    async fn append_output(
        &self,
        report: &mut String,
        id: &str,
        lines: bool,
        offset: Option<u64>,
        max_bytes: usize,
    ) -> Result<(), ToolError> {
        let window = match offset {
            Some(offset) => Window::From { offset, max_bytes },
            // One byte more for stream-json: it tells whether the first line starts in the
            // window or before it (see `whole_lines`).
            None => Window::Tail {
                max_bytes: max_bytes + usize::from(lines),
            },
        };
        let read = self
            .runtime
            .read_output(id, window)
            .await
            .map_err(tool_error)?;
        if let Some(offset) = offset.filter(|offset| *offset > read.size) {
            return Err(ToolError::InvalidArguments(format!(
                "offset {offset} is past the end of the output ({} bytes so far)",
                read.size
            )));
        }
        let (text, next_offset) = if lines {
            let (bytes, next) = whole_lines(&read, offset.is_none());
            (render_stream_json(bytes), next)
        } else {
            (
                String::from_utf8_lossy(&read.bytes).into_owned(),
                read.next_offset,
            )
        };
        append_window(report, &read, &text, next_offset);
        Ok(())
    }
}

/// Appends what a specialist's checks came to (a line each, as a foreground `Task` result
/// says it), then its error messages, one `error:` line each.
fn append_errors(report: &mut String, ending: &ChildEnding) {
    report.push_str(&ending.checked());
    for error in &ending.errors {
        report.push_str(&format!("error: {error}\n"));
    }
}

/// Appends the output window: which bytes are shown, where to continue, then the text.
fn append_window(report: &mut String, read: &OutputWindow, text: &str, next_offset: u64) {
    if read.size == 0 {
        report.push_str("output: (none yet)\n");
        return;
    }
    report.push_str(&format!(
        "output: {} bytes in all; showing bytes {}..{next_offset}; next_offset: {next_offset}",
        read.size, read.start
    ));
    if read.start > 0 {
        report.push_str(" (earlier output omitted; pass offset to read it)");
    }
    report.push('\n');
    report.push_str(text);
    if !text.ends_with('\n') {
        report.push('\n');
    }
}

/// Cuts a stream-json window to whole lines and returns them with the offset just past them.
/// When `read_early` (a tail read one byte before its window) and the window does not start
/// the file, everything up to the first line break belongs to a line that began earlier and
/// is dropped. A line still being written at the end is left for the next read, unless the
/// window holds no line break at all (a line longer than the window is shown as it is).
fn whole_lines(read: &OutputWindow, read_early: bool) -> (&[u8], u64) {
    let mut bytes = read.bytes.as_slice();
    let mut start = read.start;
    if read_early
        && read.start > 0
        && let Some(newline) = bytes.iter().position(|b| *b == b'\n')
    {
        bytes = &bytes[newline + 1..];
        start += newline as u64 + 1;
    }
    let end = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(bytes.len(), |last| last + 1);
    (&bytes[..end], start + end as u64)
}

/// A specialist's stream-json as text for the model: the assistant's text deltas joined,
/// `▸ tool_call name args` for each call, `final: text` for the answer, and every other line
/// as it is.
fn render_stream_json(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut in_text = false;
    for line in String::from_utf8_lossy(bytes).lines() {
        if line.trim().is_empty() {
            continue;
        }
        let rendered = match serde_json::from_str::<EventKind>(line) {
            Ok(EventKind::Text { delta }) => {
                out.push_str(&delta);
                in_text = true;
                continue;
            }
            Ok(EventKind::ToolCall { name, args, .. }) => format!("▸ tool_call {name} {args}"),
            Ok(EventKind::Final {
                structured: Some(value),
                ..
            }) => format!("final (JSON): {value}"),
            Ok(EventKind::Final { text, .. }) => format!("final: {text}"),
            _ => line.to_string(),
        };
        if std::mem::take(&mut in_text) && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&rendered);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(start: u64, bytes: &[u8]) -> OutputWindow {
        OutputWindow {
            start,
            next_offset: start + bytes.len() as u64,
            size: start + bytes.len() as u64 + 5,
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn stream_json_reads_as_text() {
        let stream = concat!(
            r#"{"type":"run_start","cwd":"/w"}"#,
            "\n",
            r#"{"type":"text","delta":"Looking "}"#,
            "\n",
            r#"{"type":"text","delta":"around."}"#,
            "\n",
            r#"{"type":"tool_call","id":"c1","name":"grep","args":{"pattern":"fn main"},"sideEffect":"read"}"#,
            "\n",
            "a stray stderr line\n",
            r#"{"type":"final","text":"Found it."}"#,
            "\n"
        );
        assert_eq!(
            render_stream_json(stream.as_bytes()),
            concat!(
                r#"{"type":"run_start","cwd":"/w"}"#,
                "\nLooking around.\n",
                r#"▸ tool_call grep {"pattern":"fn main"}"#,
                "\na stray stderr line\nfinal: Found it.\n"
            )
        );
    }

    #[test]
    fn stream_json_windows_keep_whole_lines() {
        // A tail read one byte early that starts inside a line drops that line's end...
        let read = window(10, b"ial\"}\n{\"a\":1}\n{\"b\"");
        let (lines, next) = whole_lines(&read, true);
        assert_eq!(lines, b"{\"a\":1}\n");
        assert_eq!(next, 10 + 14);
        // ...but keeps the first line when the early byte was the previous line's end.
        let read = window(10, b"\n{\"a\":1}\n");
        assert_eq!(whole_lines(&read, true).0, b"{\"a\":1}\n");
        // An offset read keeps its start, and a window without a line break is shown whole.
        assert_eq!(
            whole_lines(&window(3, b"{\"a\"}\n{"), false),
            (&b"{\"a\"}\n"[..], 9)
        );
        assert_eq!(whole_lines(&window(3, b"abc"), false), (&b"abc"[..], 6));
    }
}
