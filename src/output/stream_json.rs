//! `-o stream-json`: one JSON object per line on stdout, flushed as it happens.

use std::io::{self, Write};

use super::event::Envelope;
use super::{EventKind, Writer};
use crate::redact::Secrets;

/// Writes each event as one redacted JSON line.
pub(crate) struct StreamJsonWriter {
    run_id: String,
    secrets: Secrets,
}

impl StreamJsonWriter {
    /// A writer whose events carry `run_id`.
    pub(crate) fn new(run_id: String, secrets: Secrets) -> Self {
        StreamJsonWriter { run_id, secrets }
    }
}

impl Writer for StreamJsonWriter {
    fn write(&mut self, event: &EventKind) -> io::Result<()> {
        let envelope = Envelope {
            schema_version: super::event::SCHEMA_VERSION,
            run_id: &self.run_id,
            event,
        };
        let line = serde_json::to_string(&envelope).map_err(io::Error::other)?;
        let mut line = self.secrets.apply(&line);
        line.push('\n');
        let mut stdout = io::stdout().lock();
        stdout.write_all(line.as_bytes())?;
        stdout.flush()
    }
}
