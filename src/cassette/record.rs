//! `--record`: the provider the run talks to, wrapped so that every request and what came
//! back — the streamed text and reasoning, the retries and other notices, the assembled
//! response or the error, the usage — are appended to the cassette as they happen. The
//! request line is written before the request is sent, the response line when it is
//! complete, so a run killed mid-request leaves a cassette that ends after its request.
//! A request cancelled by the run's stop gets no response line: nothing answered it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::VERSION;
use super::canonical::{self, Masks};
use super::line::{Line, Outcome, Piece, RequestLine, ResponseLine, Server, Start};
use super::writer::Writer;
use crate::provider::{
    Completion, ErrorClass, Notice, Provider, ProviderError, Request, ServerReport, StreamDelta,
};

/// A provider whose traffic is recorded (see the module documentation).
pub(crate) struct Recording {
    inner: Arc<dyn Provider>,
    writer: Arc<Writer>,
    task: String,
    masks: Masks,
    /// The number of the last request sent.
    sent: AtomicU64,
}

impl Recording {
    /// Starts recording `inner`'s traffic under `task` into `writer`, with the `start` line
    /// that says the run was started with `args` (redacted as every line is).
    pub(crate) fn start(
        inner: Arc<dyn Provider>,
        writer: Arc<Writer>,
        task: &str,
        args: Vec<String>,
        masks: Masks,
    ) -> std::io::Result<Recording> {
        writer.write(&Line::Start(Start {
            version: VERSION,
            task: task.to_string(),
            zero: env!("CARGO_PKG_VERSION").to_string(),
            wire: inner.name().to_string(),
            model: inner.model().to_string(),
            args,
        }))?;
        Ok(Recording {
            inner,
            writer,
            task: task.to_string(),
            masks,
            sent: AtomicU64::new(0),
        })
    }

    /// Appends `line`, or fails the request it belongs to: a cassette with a hole in it is
    /// worse than a run that stops.
    fn write(&self, line: &Line) -> Result<(), ProviderError> {
        self.writer.write(line).map_err(|e| ProviderError {
            class: ErrorClass::Protocol,
            status: None,
            message: format!(
                "cannot write the cassette {}: {e}",
                self.writer.path().display()
            ),
            retryable: false,
            usage: None,
        })
    }
}

/// Milliseconds since `start`, saturated.
fn since(start: Instant) -> u64 {
    start.elapsed().as_millis().try_into().unwrap_or(u64::MAX)
}

#[async_trait]
impl Provider for Recording {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    async fn server_report(&self) -> ServerReport {
        let report = self.inner.server_report().await;
        // The request lines carry any write failure; this one only saves a question.
        let _ = self.writer.write(&Line::Server(Server {
            task: self.task.clone(),
            window: report.window,
            llama_cpp: report.llama_cpp,
            vision: report.vision,
        }));
        report
    }

    fn cannot_see_images(&self) -> Option<&'static str> {
        self.inner.cannot_see_images()
    }

    async fn complete(
        &self,
        request: &Request,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        on_notice: &mut (dyn FnMut(Notice) + Send),
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let seq = self.sent.fetch_add(1, Ordering::Relaxed) + 1;
        let canonical = canonical::of(request, self.name(), self.model(), &self.masks);
        self.write(&Line::Request(RequestLine {
            task: self.task.clone(),
            seq,
            hash: canonical.hash,
            request: canonical.form,
        }))?;
        let started = Instant::now();
        let stream = std::sync::Mutex::new(Vec::new());
        let mut deltas = |delta: StreamDelta| {
            crate::sync::lock(&stream).push(Piece::of_delta(&delta, since(started)));
            on_delta(delta);
        };
        let mut notices = |notice: Notice| {
            crate::sync::lock(&stream).push(Piece::of_notice(&notice, since(started)));
            on_notice(notice);
        };
        let result = self
            .inner
            .complete(request, &mut deltas, &mut notices, cancel)
            .await;
        let outcome = match &result {
            Err(error) if error.class == ErrorClass::Cancelled => return result,
            Ok(completion) => Outcome::Completion(completion.clone()),
            Err(error) => Outcome::Error(error.clone()),
        };
        self.write(&Line::Response(ResponseLine {
            task: self.task.clone(),
            seq,
            stream: stream
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            outcome,
            ms: since(started),
        }))?;
        result
    }
}
