//! Everything a run reports, and the one door to stdout.
//!
//! Code anywhere in a run calls [`Output::emit`] with an [`EventKind`]; the writer for the
//! chosen `--output-format` decides what reaches stdout and stderr. Nothing else in the crate
//! writes to stdout. `Output` guarantees the contract scripts rely on: exactly one `run_end`,
//! always last, and nothing after it.

pub mod event;
mod json;
mod stream_json;
mod text;

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

pub use event::{
    CallStatus, Decision, EventKind, RunStatus, SpecialistInfo, ToolInfo, UsageTotals,
};

use crate::cli::OutputFormat;

/// Turns events into bytes on stdout (and progress on stderr) for one output format.
pub trait Writer: Send {
    /// Handles one event. An error means stdout is gone (e.g. a closed pipe).
    fn write(&mut self, event: &EventKind) -> io::Result<()>;
}

/// The run's output: its id, its writer, and the exactly-one-`run_end` guarantee.
pub struct Output {
    run_id: String,
    redactor: Redactor,
    /// Machine formats keep stdout for JSON; errors and warnings are echoed to stderr so a
    /// person reading a CI log sees them too.
    echo_diagnostics: bool,
    /// Cancelled once stdout is gone, so the run can end instead of working for nobody.
    closed: CancellationToken,
    state: Mutex<State>,
}

struct State {
    writer: Box<dyn Writer>,
    ended: bool,
    /// The first write failure; later events are dropped once stdout is gone.
    broken: Option<io::ErrorKind>,
}

impl Output {
    /// An output writing `format` to the real stdout and stderr, hiding `secrets`.
    pub fn new(format: OutputFormat, secrets: Vec<String>) -> Self {
        let run_id = new_run_id();
        let redactor = Redactor {
            secrets: Arc::new(Mutex::new(secrets)),
        };
        let writer: Box<dyn Writer> = match format {
            OutputFormat::Text => Box::new(text::TextWriter::new(redactor.clone())),
            OutputFormat::Json => Box::new(json::JsonWriter::new(redactor.clone())),
            OutputFormat::StreamJson => Box::new(stream_json::StreamJsonWriter::new(
                run_id.clone(),
                redactor.clone(),
            )),
        };
        Output {
            run_id,
            redactor,
            echo_diagnostics: format != OutputFormat::Text,
            closed: CancellationToken::new(),
            state: Mutex::new(State {
                writer,
                ended: false,
                broken: None,
            }),
        }
    }

    /// Adds a secret (e.g. a key read from the config file) to hide from everything written.
    pub fn add_secret(&self, secret: &str) {
        if !secret.is_empty() {
            self.redactor.lock().push(secret.to_string());
        }
    }

    /// The run id every event carries.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Reports one event. Events after `run_end`, or after stdout broke, are dropped.
    pub fn emit(&self, event: EventKind) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.ended {
            return;
        }
        if matches!(event, EventKind::RunEnd { .. }) {
            state.ended = true;
        }
        if self.echo_diagnostics {
            self.echo(&event);
        }
        if state.broken.is_some() {
            return;
        }
        if let Err(err) = state.writer.write(&event) {
            state.broken = Some(err.kind());
            self.closed.cancel();
        }
    }

    /// Cancelled once stdout is gone (a write failed, or [`Output::stdout_closed`] was called).
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Records that the reader of stdout went away before any write failed (a closed pipe
    /// seen while the run had nothing to write): the run ends as if a write had failed.
    pub fn stdout_closed(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.broken.get_or_insert(io::ErrorKind::BrokenPipe);
        self.closed.cancel();
    }

    fn echo(&self, event: &EventKind) {
        let line = match event {
            EventKind::Error { message, .. } => format!("zero: error: {message}"),
            EventKind::Warning { message } => format!("zero: warning: {message}"),
            _ => return,
        };
        // Best effort: a closed stderr must not end the run.
        let _ = writeln!(io::stderr().lock(), "{}", self.redactor.apply(&line));
    }

    /// Whether `run_end` has been emitted.
    pub fn has_ended(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).ended
    }

    /// The first error writing stdout, if any (the run then ends as an internal error).
    pub fn broken(&self) -> Option<io::ErrorKind> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).broken
    }
}

/// Removes secrets from text before it leaves the process.
/// Shared by the writers and [`Output`], so a secret learned mid-run is hidden everywhere.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Arc<Mutex<Vec<String>>>,
}

impl Redactor {
    /// The text with every known secret and secret-shaped string replaced.
    pub fn apply(&self, text: &str) -> String {
        let secrets = self.lock();
        let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
        crate::redact::redact(text, &secrets)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.secrets.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A run id: `run_<UTC yyyymmddHHMMSS>_<6 hex>`, sortable by start time.
fn new_run_id() -> String {
    format!(
        "run_{}_{:06x}",
        chrono::Utc::now().format("%Y%m%d%H%M%S"),
        fastrand::u32(..0x0100_0000)
    )
}
