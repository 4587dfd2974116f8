//! `--replay`: a provider that serves the model's side from a cassette. Each request the run
//! would send is put in canonical form and compared with the recorded one of the same task
//! and number — exactly (`Matching::Exact`: the hash, then `diff` for what changed), or on
//! the conversation's shape (`Matching::Shape`, `--replay-lenient`). The first difference
//! stops the run with `replay_drift` and the difference; a match is answered with the
//! recorded stream and outcome, as fast as possible, or at the recorded pace with
//! `--replay-timing`. Nothing is sent anywhere and no key is needed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::canonical::{self, Masks};
use super::diff;
use super::line::{Outcome, Replayed, ResponseLine};
use super::tape::{Exchange, Tape};
use crate::provider::{
    Completion, ErrorClass, Notice, Provider, ProviderError, Request, ServerReport, StreamDelta,
};

/// How a request is held to the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Matching {
    /// Its whole canonical form must be the recorded one.
    Exact,
    /// Only the conversation's shape: the same messages by role, the same tool calls in
    /// order, results answering the same calls (`--replay-lenient`).
    Shape,
}

/// A provider served from a cassette (see the module documentation).
pub(crate) struct Replaying {
    tape: Arc<Tape>,
    task: String,
    matching: Matching,
    timing: bool,
    wire: &'static str,
    model: String,
    masks: Masks,
    /// The number of requests served.
    served: AtomicUsize,
}

impl Replaying {
    /// Serves `task`'s exchanges of `tape`, whose `start` line names the wire and the model
    /// (the settings made sure there is one), holding requests to `matching`.
    pub(crate) fn new(
        tape: Arc<Tape>,
        task: &str,
        matching: Matching,
        timing: bool,
        masks: Masks,
    ) -> Replaying {
        let (wire, model) = match tape.start_of(task) {
            Some(start) if start.wire == "anthropic" => ("anthropic", start.model.clone()),
            Some(start) => ("openai", start.model.clone()),
            None => ("openai", String::new()),
        };
        Replaying {
            tape,
            task: task.to_string(),
            matching,
            timing,
            wire,
            model,
            masks,
            served: AtomicUsize::new(0),
        }
    }

    /// The recorded exchange request `index` (0-based) must match, or the drift of there
    /// being none.
    fn exchange(&self, index: usize) -> Result<&Exchange, ProviderError> {
        self.tape
            .exchanges_of(&self.task)
            .get(index)
            .ok_or_else(|| {
                drift(format!(
                    "the run sent request {} of task `{}`, and the cassette holds no more of that \
                 task's requests: {}",
                    index + 1,
                    self.task,
                    self.tape.end()
                ))
            })
    }

    /// Why `request` does not match `exchange`'s, if it does not.
    fn compare(&self, exchange: &Exchange, request: &Request) -> Result<(), ProviderError> {
        let now = canonical::of(request, self.wire, &self.model, &self.masks);
        let recorded = &exchange.request.request;
        let difference = match self.matching {
            Matching::Exact if now.hash == exchange.request.hash => None,
            Matching::Exact => Some(diff::describe(recorded, &now.form)),
            Matching::Shape => diff::shape(recorded, &now.form),
        };
        match difference {
            None => Ok(()),
            Some(difference) => Err(drift(format!(
                "request {} of task `{}` differs from the one recorded at line {} of {}:\n{difference}",
                exchange.request.seq,
                self.task,
                exchange.line,
                self.tape.path().display()
            ))),
        }
    }

    /// Hands back `response`: its stream piece by piece (at the recorded pace with
    /// `--replay-timing`), then its outcome.
    async fn serve(
        &self,
        response: &ResponseLine,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        on_notice: &mut (dyn FnMut(Notice) + Send),
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let started = tokio::time::Instant::now();
        for piece in &response.stream {
            self.pace(started, piece.ms(), cancel).await?;
            match piece.replayed() {
                Replayed::Delta(delta) => on_delta(delta),
                Replayed::Notice(notice) => on_notice(notice),
            }
        }
        self.pace(started, response.ms, cancel).await?;
        match &response.outcome {
            Outcome::Completion(completion) => Ok(completion.clone()),
            Outcome::Error(error) => Err(error.clone()),
        }
    }

    /// With `--replay-timing`, waits until `ms` after `started`; a stop cancels the wait.
    async fn pace(
        &self,
        started: tokio::time::Instant,
        ms: u64,
        cancel: &CancellationToken,
    ) -> Result<(), ProviderError> {
        if !self.timing {
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep_until(started + Duration::from_millis(ms)) => Ok(()),
            () = cancel.cancelled() => Err(ProviderError {
                class: ErrorClass::Cancelled,
                status: None,
                message: "cancelled".into(),
                retryable: false,
                usage: None,
            }),
        }
    }
}

/// The `replay_drift` failure saying `message`.
fn drift(message: String) -> ProviderError {
    ProviderError {
        class: ErrorClass::ReplayDrift,
        status: None,
        message,
        retryable: false,
        usage: None,
    }
}

#[async_trait]
impl Provider for Replaying {
    fn name(&self) -> &'static str {
        self.wire
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn server_report(&self) -> ServerReport {
        self.tape
            .server_of(&self.task)
            .map(|server| ServerReport {
                window: server.window,
                llama_cpp: server.llama_cpp,
                vision: server.vision,
            })
            .unwrap_or_default()
    }

    async fn complete(
        &self,
        request: &Request,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        on_notice: &mut (dyn FnMut(Notice) + Send),
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let index = self.served.fetch_add(1, Ordering::Relaxed);
        let exchange = self.exchange(index)?;
        self.compare(exchange, request)?;
        let Some((_, response)) = &exchange.response else {
            return Err(drift(format!(
                "request {} of task `{}` (line {}) matches, but its response was never \
                 recorded: {}",
                exchange.request.seq,
                self.task,
                exchange.line,
                self.tape.end()
            )));
        };
        self.serve(response, on_delta, on_notice, cancel).await
    }
}
