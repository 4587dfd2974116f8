//! Everything a run reports, and the one door to stdout.
//!
//! Code anywhere in a run calls `Output::emit` with an `EventKind`; the writer for the
//! chosen `--output-format` decides what reaches stdout and stderr. Nothing else in the crate
//! writes to stdout. `Output` guarantees the contract scripts rely on: exactly one `run_end`,
//! always last, and nothing after it.
//!
//! Writing never happens on the thread that emits. Events go through a bounded queue to one
//! writer thread, so a reader that stops reading holds up the run only until it is asked to
//! stop: then `Output::emit` no longer waits for room, and `Output::drain` gives the
//! writer a grace period before what it could not write is dropped — the run still closes, and
//! exits with the signal's code. Streamed text passes through a `StreamRedactor` on the way
//! in, so a secret split across deltas is still masked.

mod error_code;
pub(crate) mod event;
mod json;
mod neutral;
mod queue;
mod stream_json;
mod text;
#[cfg(test)]
mod wire_fixtures;

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub(crate) use error_code::ErrorCode;
pub(crate) use event::{
    CallEffect, CallStatus, CompactionReason, Decision, EventKind, ExecDenied, Family,
    McpServerInfo, McpState, McpTransport, PermissionsChanged, RuleInfo, RunStatus, SCHEMA_VERSION,
    SandboxInForce, SkillInfo, SpecialistInfo, ToolInfo, UsageTotals, WaitPhase, WindowInfo,
    WindowSource,
};

use crate::redact::{Secrets, StreamRedactor};
use crate::runtime::{RunId, TaskKind, TaskStatus};
pub(crate) use neutral::{NeutralWriter, neutralise};
use queue::Queue;
pub(crate) use queue::stderr_line_if_writable;

/// The stdout format of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Only the final answer on stdout; progress on stderr.
    Text,
    /// One JSON summary object at the end.
    Json,
    /// One JSON event per line (schema in docs/STREAM_JSON.md).
    StreamJson,
}

/// The format of the prompt input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum InputFormat {
    /// The prompt is plain text.
    Text,
    /// The prompt is JSON lines of `prompt`/`message` events.
    StreamJson,
}

/// The schema's word for a value of a closed vocabulary (an enum of unit variants), for text
/// that names it: taken from serde, so text and stream-json cannot say different words. Such
/// an enum serialises to a string; anything else gives an empty word.
pub(crate) fn word(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(word)) => word,
        _ => String::new(),
    }
}

/// How long the writer may take, once the run is stopping, to write what is still queued.
/// Past it the rest is dropped, so a stalled reader cannot hold the exit back.
const STOPPING_DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Turns events into bytes on stdout (and progress on stderr) for one output format.
pub(crate) trait Writer: Send {
    /// Handles one event. An error means stdout is gone (e.g. a closed pipe).
    fn write(&mut self, event: &EventKind) -> io::Result<()>;
}

/// The run's output: its id, its writer, and the exactly-one-`run_end` guarantee.
pub struct Output {
    run_id: RunId,
    secrets: Secrets,
    /// Cancelled once stdout is gone, so the run can end instead of working for nobody.
    closed: CancellationToken,
    /// Cancelled when the run is asked to stop (a signal, or stdout gone): from then on an
    /// event never waits for room in the queue.
    stopping: CancellationToken,
    queue: Arc<Queue>,
    state: Mutex<State>,
    /// With [`Output::keeping_answer`]: the final answer's JSON value, kept instead of written.
    kept: Option<Mutex<Option<serde_json::Value>>>,
}

struct State {
    ended: bool,
    /// Whether an event other than streamed text has been queued: from then on a warning
    /// about the run's start is written at once.
    opened: bool,
    /// Warnings about the run's start found before its first event ([`Output::warn_at_start`]).
    early_warnings: Vec<String>,
    /// Streamed text not yet written: it may be the start of a secret.
    held: Option<HeldStream>,
    /// What stood in the run's way, by the events so far.
    obstacles: Obstacles,
}

/// What the events reported so far say stood in the run's way: what `run_end.permissionDenials`
/// counts, and what `--strict` fails a run for (with what `exec` knows of the MCP servers and
/// the agent of its calls).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Obstacles {
    /// The tool of each call refused before it ran (by the `--auto` level, a rule or a
    /// hook), in order.
    pub(crate) denied: Vec<String>,
    /// Each specialist that failed, as `NAME (TASK_ID)`, in order.
    pub(crate) failed_specialists: Vec<String>,
}

impl Obstacles {
    /// Takes in what `event` says stood in the way, if anything.
    fn observe(&mut self, event: &EventKind) {
        if let Some(tool) = event.denied_tool() {
            self.denied.push(tool.to_string());
        }
        if let EventKind::TaskFinished {
            task_id,
            kind: TaskKind::Specialist { name },
            status: TaskStatus::Failed,
            ..
        } = event
        {
            self.failed_specialists.push(format!("{name} ({task_id})"));
        }
    }
}

/// Which delta stream a [`StreamRedactor`] is holding text of.
struct HeldStream {
    reasoning: bool,
    redactor: StreamRedactor,
}

impl Output {
    /// An output writing `format` to the real stdout and stderr, hiding `secrets`.
    pub fn new(format: OutputFormat, secrets: Secrets) -> Self {
        let run_id = RunId::generate();
        let writer: Box<dyn Writer> = match format {
            OutputFormat::Text => Box::new(text::TextWriter::new(secrets.clone())),
            OutputFormat::Json => Box::new(json::JsonWriter::new(secrets.clone())),
            OutputFormat::StreamJson => Box::new(stream_json::StreamJsonWriter::new(
                run_id.to_string(),
                secrets.clone(),
            )),
        };
        let closed = CancellationToken::new();
        let stopping = closed.child_token();
        // Machine formats keep stdout for JSON; errors and warnings are echoed to stderr so a
        // person reading a CI log sees them too.
        let echo_diagnostics = format != OutputFormat::Text;
        let queue = Queue::start(writer, secrets.clone(), echo_diagnostics, closed.clone());
        Output {
            run_id,
            secrets,
            closed,
            stopping,
            queue,
            state: Mutex::new(State {
                ended: false,
                opened: false,
                early_warnings: Vec::new(),
                held: None,
                obstacles: Obstacles::default(),
            }),
            kept: None,
        }
    }

    /// An output for a caller that takes the final answer itself (`zero review`, which writes
    /// findings on stdout): everything as `-o text` writes it, on stderr, except the checked
    /// final answer, which is kept for [`Output::kept_answer`] instead of written.
    pub(crate) fn keeping_answer(secrets: Secrets) -> Self {
        let mut output = Output::new(OutputFormat::Text, secrets);
        output.kept = Some(Mutex::new(None));
        output
    }

    /// The final answer's JSON value an [`Output::keeping_answer`] kept, once the run gave one.
    pub(crate) fn kept_answer(&self) -> Option<serde_json::Value> {
        let kept = self.kept.as_ref()?;
        crate::sync::lock(kept).clone()
    }

    /// The secrets hidden from everything written; adding to them hides a secret learned
    /// mid-run (e.g. a key read from the config file) from then on.
    pub(crate) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// How many calls were refused before they ran, by the events reported so far.
    pub(crate) fn permission_denials(&self) -> u32 {
        let denied = crate::sync::lock(&self.state).obstacles.denied.len();
        u32::try_from(denied).unwrap_or(u32::MAX)
    }

    /// What stood in the run's way, by the events reported so far.
    pub(crate) fn obstacles(&self) -> Obstacles {
        crate::sync::lock(&self.state).obstacles.clone()
    }

    /// The run id every event carries.
    pub(crate) fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// Reports one event. Events after `run_end`, or after stdout broke, are dropped.
    ///
    /// Waits while the writer is a full queue behind (a slow reader slows the run), but never
    /// once the run is stopping.
    pub(crate) fn emit(&self, event: EventKind) {
        let mut state = crate::sync::lock(&self.state);
        if state.ended {
            return;
        }
        if let (Some(kept), EventKind::Final { structured, .. }) = (&self.kept, &event) {
            *crate::sync::lock(kept) = structured.clone();
            return;
        }
        let (delta, reasoning) = match event {
            EventKind::Text { delta } => (delta, false),
            EventKind::Reasoning { delta } => (delta, true),
            other => {
                self.release_held(&mut state);
                state.ended = matches!(other, EventKind::RunEnd { .. });
                state.obstacles.observe(&other);
                let opening = !state.opened && matches!(other, EventKind::RunStart { .. });
                if !opening {
                    self.release_early_warnings(&mut state);
                }
                self.queue.push(other, &self.stopping);
                self.release_early_warnings(&mut state);
                return;
            }
        };
        if state
            .held
            .as_ref()
            .is_some_and(|h| h.reasoning != reasoning)
        {
            self.release_held(&mut state);
        }
        let held = state.held.get_or_insert_with(|| HeldStream {
            reasoning,
            redactor: self.secrets.stream(),
        });
        let ready = held.redactor.push_str(&delta);
        if !ready.is_empty() {
            self.queue
                .push(delta_event(reasoning, ready), &self.stopping);
        }
    }

    /// Reports a warning about how the run was set up (a config key nobody reads), found
    /// before anything was emitted: it is written right after `run_start`, or, when the run
    /// ends before it has one, before whatever comes first (the `error` it may well explain).
    /// Once the run has emitted something, it is emitted at once.
    pub(crate) fn warn_at_start(&self, message: String) {
        let mut state = crate::sync::lock(&self.state);
        match state.opened {
            true => {
                drop(state);
                self.emit(EventKind::Warning { message });
            }
            false => state.early_warnings.push(message),
        }
    }

    /// Marks the output opened and queues the warnings held for its start.
    fn release_early_warnings(&self, state: &mut State) {
        state.opened = true;
        for message in std::mem::take(&mut state.early_warnings) {
            self.queue
                .push(EventKind::Warning { message }, &self.stopping);
        }
    }

    /// Writes out the streamed text still held back: its stream has ended.
    fn release_held(&self, state: &mut State) {
        if let Some(mut held) = state.held.take() {
            let rest = held.redactor.finish_str();
            if !rest.is_empty() {
                self.queue
                    .push(delta_event(held.reasoning, rest), &self.stopping);
            }
        }
    }

    /// The token that stops the run: cancelled when stdout is gone, and by whoever cancels it
    /// for a stop signal. Cancelling it also tells the output that the run is stopping.
    pub(crate) fn stop_token(&self) -> CancellationToken {
        self.stopping.clone()
    }

    /// Records that the reader of stdout went away before any write failed (a closed pipe
    /// seen while the run had nothing to write): the run ends as if a write had failed.
    pub(crate) fn stdout_closed(&self) {
        self.queue.mark_broken(io::ErrorKind::BrokenPipe);
        self.closed.cancel();
    }

    /// Waits until the writer has written everything emitted so far: without limit while the
    /// run goes on normally (a slow reader gets all of it), for at most a grace period once it
    /// is stopping. Returns how many events had to be dropped (0 when everything was written
    /// or stdout was gone anyway).
    pub(crate) fn drain(&self) -> usize {
        self.queue.drain(&self.stopping, STOPPING_DRAIN_GRACE)
    }

    /// The first error writing stdout, if any (the run then ends as an internal error).
    pub(crate) fn broken(&self) -> Option<io::ErrorKind> {
        self.queue.broken()
    }
}

fn delta_event(reasoning: bool, delta: String) -> EventKind {
    if reasoning {
        EventKind::Reasoning { delta }
    } else {
        EventKind::Text { delta }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.queue.finish();
    }
}
