//! The transport both wires share: one reused HTTP client, timeouts, retries, cancellation.
//!
//! A [`Wire`] says how to phrase a request and how to read its event stream; [`HttpProvider`]
//! does everything else, once, for both. Robustness rules live here and nowhere else:
//!
//! - one `reqwest::Client` per provider, so connections are kept alive across turns;
//! - a connect timeout, then one clock per response ([`ResponseClock`]): a first-byte
//!   deadline until the body begins, an idle timeout between its chunks (see [`Tuning`]);
//! - bounded retries with backoff and `Retry-After` for transient failures, but only while
//!   nothing has reached the caller: once text was shown or a tool call began, a retry would
//!   repeat it, so the failure is reported instead;
//! - the caller hears of every retry and of every long silence ([`Notice`]), so a slow
//!   gateway never looks like a hung run;
//! - cancellation wins every race and drops the response, which aborts the HTTP request.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use tokio::time::{Instant, sleep, sleep_until, timeout_at};
use tokio_util::sync::CancellationToken;

use super::assembly::Assembly;
use super::fault::{Document, Fault, parse_retry_after};
use super::probe::Probes;
use super::sse::{SseDecoder, SseEvent};
use super::tuning::Tuning;
use super::{
    Completion, ErrorClass, Notice, Provider, ProviderError, Refused, Request, Retrying,
    StopReason, StreamDelta, WaitPhase, Waiting,
};

/// The most of an error response body read for its message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How long an unused kept-alive connection stays in the pool (between turns the model's tool
/// calls run, which can take a while).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Whether the stream goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading.
    More,
    /// The response is complete (`[DONE]`, `message_stop`); stop reading.
    Done,
}

/// Reads one response's events into an [`Assembly`]. A fresh decoder serves each attempt.
pub(crate) trait Decoder: Send {
    /// Applies one event. Errors are malformed data or an error the server reported mid-stream.
    fn event(
        &mut self,
        event: &SseEvent,
        assembly: &mut Assembly,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<Flow, Fault>;
}

/// One wire protocol: where requests go, how they are phrased, how responses are read.
pub(crate) trait Wire: Send + Sync + 'static {
    /// The decoder of this wire's responses.
    type Decoder: Decoder;
    /// The wire's name (`openai`, `anthropic`).
    fn name(&self) -> &'static str;
    /// The full URL requests are posted to.
    fn url(&self) -> &str;
    /// The headers every request carries, authentication included; the key goes in exactly one
    /// of them and nowhere else.
    fn headers(
        &self,
        api_key: Option<&str>,
    ) -> Result<HeaderMap, reqwest::header::InvalidHeaderValue>;
    /// The JSON body for `request` to `model`, with streaming switched on, as bytes. Built
    /// from borrowed, typed structs (see [`json_body`]), once per request however many
    /// attempts it takes. `asks` says which of the optional parts the body carries.
    fn body(&self, model: &str, request: &Request, asks: Asks) -> Bytes;
    /// Whether this wire would ask the server to constrain `request`'s answer to its schema
    /// (see [`Asks::constrain`]). None does by default.
    fn constrains(&self, _request: &Request) -> bool {
        false
    }
    /// The body field that carries the reasoning effort, when the wire was given one
    /// (`reasoning_effort`, `thinking`): a refusal whose message names it is a refusal of
    /// the field (see [`Asks::reasoning`]). None by default.
    fn reasoning_field(&self) -> Option<&'static str> {
        None
    }
    /// The content type that carries an image on this wire (`image_url`, `image`), for the
    /// warning when a server refuses images (see [`Asks::images`]).
    fn image_field(&self) -> &'static str;
    /// A decoder for one response.
    fn decoder(&self) -> Self::Decoder;
}

/// The optional parts of a request body, each one a server may refuse: once it has, the
/// provider leaves that part out of every later request of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Asks {
    /// Ask the server to hold the answer to the request's
    /// [`AnswerFormat`](super::AnswerFormat) (see [`Wire::constrains`]).
    pub(crate) constrain: bool,
    /// Send the reasoning effort the wire was built with (see [`Wire::reasoning_field`]).
    pub(crate) reasoning: bool,
    /// Send the conversation's images; when the server refused them, a note stands in for
    /// each (see [`Wire::image_field`]).
    pub(crate) images: bool,
}

/// What stands in for an image when the server refused images (see [`Asks::images`]), so the
/// model knows it was not shown one.
pub(crate) const IMAGE_NOT_SENT: &str =
    "[an image was here, but this server takes no images: it was not sent]";

#[cfg(test)]
impl Asks {
    /// No optional part: the body of the conversation alone.
    pub(crate) const NONE: Asks = Asks {
        constrain: false,
        reasoning: false,
        images: true,
    };
}

/// `body` serialised as a request body. Each request is serialised straight from the
/// conversation it borrows: building a `serde_json::Value` tree first would copy the whole
/// conversation and every tool schema on every turn (see docs/PERFORMANCE.md).
pub(super) fn json_body(body: &impl serde::Serialize) -> Bytes {
    // Strings, numbers, booleans and JSON values only: nothing here can fail to serialise.
    Bytes::from(serde_json::to_vec(body).expect("a request body always serialises"))
}

/// Why a provider could not be built from a valid configuration.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The API key cannot be sent in an HTTP header (control characters, newlines).
    #[error("the API key contains characters that cannot be sent in an HTTP header")]
    KeyNotHeaderSafe,
    /// The HTTP client could not be set up (for example, TLS initialisation failed).
    #[error("could not set up the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// Where a provider's requests go, apart from the wire: the model, the key, and the Unix
/// socket a local server answers on (TCP to the wire's URL when there is none).
pub(crate) struct Endpoint {
    /// The model requests name.
    pub(crate) model: String,
    /// The API key, if any.
    pub(crate) api_key: Option<String>,
    /// The Unix socket every connection goes to, if any.
    pub(crate) socket: Option<std::path::PathBuf>,
    /// Why the model cannot see images, when it cannot (see [`Provider::cannot_see_images`]).
    pub(crate) blind: Option<&'static str>,
}

/// A [`Provider`] speaking wire `W` over HTTP.
pub(crate) struct HttpProvider<W: Wire> {
    wire: W,
    model: String,
    client: reqwest::Client,
    tuning: Tuning,
    /// Kept only to redact it from error messages; it is sent by the client's default headers.
    api_key: Option<String>,
    /// Where the server may say how large the model's context window is.
    probes: Probes,
    /// Why the model cannot see images, when it cannot.
    blind: Option<&'static str>,
    /// Set once the server refused a request that asked it to constrain the answer to a
    /// schema: from then on the schema is checked by the agent loop alone.
    format_refused: AtomicBool,
    /// Set once the server refused the reasoning effort's field: from then on it is left out.
    reasoning_refused: AtomicBool,
    /// Set once the server refused an image: from then on a note stands in for each.
    images_refused: AtomicBool,
}

impl<W: Wire> HttpProvider<W> {
    /// A provider for `endpoint` behind `wire`, with its own client (and connection pool).
    pub(crate) fn new(
        wire: W,
        endpoint: Endpoint,
        tuning: Tuning,
        probes: Probes,
    ) -> Result<Self, BuildError> {
        let Endpoint {
            model,
            api_key,
            socket,
            blind,
        } = endpoint;
        let headers = wire
            .headers(api_key.as_deref())
            .map_err(|_| BuildError::KeyNotHeaderSafe)?;
        let mut builder = crate::http_client::builder()
            .default_headers(headers)
            .connect_timeout(tuning.connect_timeout)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .tcp_keepalive(Duration::from_secs(30));
        if let Some(socket) = socket {
            builder = builder.unix_socket(socket);
        }
        let client = builder.build().map_err(BuildError::Client)?;
        Ok(HttpProvider {
            wire,
            model,
            client,
            tuning,
            api_key,
            probes,
            blind,
            format_refused: AtomicBool::new(false),
            reasoning_refused: AtomicBool::new(false),
            images_refused: AtomicBool::new(false),
        })
    }

    /// The notice that attempt number `attempt` failed with `fault`, and the request goes out
    /// again after `delay`.
    fn retrying(&self, attempt: u32, fault: Fault, delay: Duration) -> Notice {
        Notice::Retrying(Retrying {
            attempt,
            max_attempts: self.tuning.max_attempts,
            class: fault.class,
            reason: self.error(fault).message,
            delay,
        })
    }

    /// When `fault` is the server's refusal of an optional part `asks` sent, leaves that part
    /// out of this request and every later one, tells `on_notice`, and returns true: the
    /// request goes out again at once. The reasoning field is refused by a 400 that names it
    /// (a `warning`: the run goes on without it); a schema by any refusal of a request held
    /// to one, since a server that copies the API may not take `response_format`, or this
    /// schema in it (a `retry`: the agent loop's check still holds the answer to it); the
    /// images of `request` by a 400 that names images (a `warning`: a note stands in for each,
    /// so the model knows it was not shown them).
    fn leave_out_refused(
        &self,
        request: &Request,
        asks: &mut Asks,
        fault: &Fault,
        attempt: u32,
        on_notice: &mut (dyn FnMut(Notice) + Send),
    ) -> bool {
        if fault.class != ErrorClass::BadRequest {
            return false;
        }
        let refused_field = self
            .wire
            .reasoning_field()
            .filter(|field| asks.reasoning && fault.detail.contains(field));
        if let Some(field) = refused_field {
            self.reasoning_refused.store(true, Ordering::Relaxed);
            asks.reasoning = false;
            on_notice(Notice::Refused(Refused {
                field: field.to_owned(),
                reason: self.error(fault.clone()).message,
            }));
            return true;
        }
        // A server whose model takes no images and said nothing of it before (no `/props`):
        // its 400 names images (llama.cpp: "image input is not supported", vLLM: "not a
        // multimodal model", OpenAI: "image_url is only supported by certain models").
        if asks.images && request.messages.iter().any(|m| !m.images().is_empty()) {
            let detail = fault.detail.to_ascii_lowercase();
            if detail.contains("image") || detail.contains("multimodal") {
                self.images_refused.store(true, Ordering::Relaxed);
                asks.images = false;
                on_notice(Notice::Refused(Refused {
                    field: self.wire.image_field().to_owned(),
                    reason: self.error(fault.clone()).message,
                }));
                return true;
            }
        }
        if asks.constrain {
            self.format_refused.store(true, Ordering::Relaxed);
            asks.constrain = false;
            let detail = format!(
                "the server refused the answer's schema, so it is asked again without it: {}",
                fault.detail
            );
            let fault = Fault {
                detail,
                ..fault.clone()
            };
            on_notice(self.retrying(attempt, fault, Duration::ZERO));
            return true;
        }
        false
    }

    /// Phrases a fault for the user: endpoint named, secrets redacted.
    fn error(&self, fault: Fault) -> ProviderError {
        let secrets: Vec<&str> = self.api_key.as_deref().into_iter().collect();
        fault.into_error(self.wire.url(), &secrets)
    }

    /// Attempt number `number` of a request and its whole response. Fills `assembly`; `Ok`
    /// means the response is complete.
    async fn attempt(
        &self,
        body: &Bytes,
        number: u32,
        assembly: &mut Assembly,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        on_notice: &mut (dyn FnMut(Notice) + Send),
    ) -> Result<(), Fault> {
        let mut clock = ResponseClock::start(&self.tuning, number);
        let response = self.send(body, &mut clock, on_notice).await?;
        self.read_stream(response, &mut clock, assembly, on_delta, on_notice)
            .await
    }

    /// Sends the request and returns the response once its headers say it is an event stream.
    /// An error status, or a success that brings a document instead of a stream, becomes the
    /// fault it explains (its body read under the same `clock`).
    async fn send(
        &self,
        body: &Bytes,
        clock: &mut ResponseClock,
        on_notice: &mut (dyn FnMut(Notice) + Send),
    ) -> Result<reqwest::Response, Fault> {
        let request = self
            .client
            .post(self.wire.url())
            .header(CONTENT_TYPE, "application/json")
            .body(body.clone())
            .send();
        let response = clock
            .before_body(request, on_notice)
            .await?
            .map_err(|err| Fault::from_transport(&err))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(parse_retry_after);
            let text = read_document(response, clock, on_notice).await;
            return Err(Fault::from_status(status.as_u16(), &text, retry_after));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok());
        let Some(document) = Document::of(content_type) else {
            return Ok(response);
        };
        let text = read_document(response, clock, on_notice).await;
        Err(Fault::not_a_stream(&document, &text))
    }

    /// Reads the event stream into `assembly` until the wire's end marker, the end of the body,
    /// a failure, or a timeout of `clock`.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        clock: &mut ResponseClock,
        assembly: &mut Assembly,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        on_notice: &mut (dyn FnMut(Notice) + Send),
    ) -> Result<(), Fault> {
        let mut decoder = self.wire.decoder();
        let mut sse = SseDecoder::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = clock.next_chunk(&mut chunks, on_notice).await? {
            for event in sse.push(&chunk).map_err(|err| Fault::from_sse(&err))? {
                if decoder.event(&event, assembly, on_delta)? == Flow::Done {
                    return Ok(());
                }
                // A loop: the response is complete as far as it will ever be useful.
                if let Some(found) = assembly.looping() {
                    assembly.stop(StopReason::Repeating(found));
                    return Ok(());
                }
            }
        }
        // Some servers close without the final marker; a stop reason means nothing is missing.
        if assembly.is_stopped() {
            Ok(())
        } else {
            Err(Fault::new(
                ErrorClass::Network,
                "the stream ended before the response was complete",
            ))
        }
    }
}

/// The time limits of one response, phase by phase. This is the one place that says what
/// bounds what, for every body zero reads (an event stream, an error body, a document that
/// came instead of a stream):
///
/// - **until the body begins** — sending the request, waiting for the status and headers,
///   and waiting for the first byte of the body — one deadline,
///   [`first_byte_timeout`](Tuning::first_byte_timeout) after the request went out. A local
///   model may read a long prompt for minutes before its first token, and a server that sends
///   an error status but stalls before its body is still in this phase.
/// - **once the body has begun** — each next chunk within
///   [`idle_timeout`](Tuning::idle_timeout) of the one before: a stream that goes silent
///   mid-answer is given up on.
///
/// In either phase, a silence of [`wait_notice`](Tuning::wait_notice) and every doubling of
/// it after is reported as a [`Notice::Waiting`] while the wait goes on.
struct ResponseClock {
    tuning: Tuning,
    /// The attempt this clock times (1-based), for the notices.
    attempt: u32,
    /// When the current wait runs out.
    deadline: Instant,
    /// When the current silence began: the request went out, or the last chunk came.
    silent_since: Instant,
    /// Whether a byte of the body has arrived (the phase).
    begun: bool,
}

impl ResponseClock {
    /// The clock of attempt number `attempt`, sent now.
    fn start(tuning: &Tuning, attempt: u32) -> Self {
        let now = Instant::now();
        ResponseClock {
            tuning: *tuning,
            attempt,
            deadline: now + tuning.first_byte_timeout,
            silent_since: now,
            begun: false,
        }
    }

    /// Waits for `step` (sending, the headers) within the first-byte deadline.
    async fn before_body<T>(
        &self,
        step: impl Future<Output = T>,
        on_notice: &mut (dyn FnMut(Notice) + Send),
    ) -> Result<T, Fault> {
        self.within(step, on_notice).await
    }

    /// The next chunk of `body` within the current phase's limit; `None` at its end.
    async fn next_chunk(
        &mut self,
        body: &mut (impl Stream<Item = reqwest::Result<Bytes>> + Unpin),
        on_notice: &mut (dyn FnMut(Notice) + Send),
    ) -> Result<Option<Bytes>, Fault> {
        match self.within(body.next(), on_notice).await? {
            None => Ok(None),
            Some(Err(err)) => {
                let fault = Fault::from_transport(&err);
                let detail = format!("the stream broke off: {}", fault.detail);
                Err(Fault { detail, ..fault })
            }
            Some(Ok(chunk)) => {
                let now = Instant::now();
                self.begun = true;
                self.silent_since = now;
                self.deadline = now + self.tuning.idle_timeout;
                Ok(Some(chunk))
            }
        }
    }

    /// Waits for `step` until the current deadline, telling `on_notice` of the silence each
    /// time it reaches the next notice's length.
    async fn within<T>(
        &self,
        step: impl Future<Output = T>,
        on_notice: &mut (dyn FnMut(Notice) + Send),
    ) -> Result<T, Fault> {
        let mut step = pin!(step);
        let mut told = None;
        loop {
            let notice = self
                .tuning
                .next_wait_notice(told)
                .filter(|silence| self.silent_since + *silence < self.deadline);
            let notice_at = self.silent_since + notice.unwrap_or_default();
            tokio::select! {
                biased;
                outcome = timeout_at(self.deadline, &mut step) => {
                    return outcome.map_err(|_| self.expired());
                }
                () = sleep_until(notice_at), if notice.is_some() => {
                    on_notice(Notice::Waiting(self.waiting(notice_at - self.silent_since)));
                    told = notice;
                }
            }
        }
    }

    /// The notice of a silence of `waited` in the current phase.
    fn waiting(&self, waited: Duration) -> Waiting {
        let (phase, limit) = if self.begun {
            (WaitPhase::Stream, self.tuning.idle_timeout)
        } else {
            (WaitPhase::FirstByte, self.tuning.first_byte_timeout)
        };
        Waiting {
            attempt: self.attempt,
            max_attempts: self.tuning.max_attempts,
            phase,
            waited,
            limit,
        }
    }

    /// The fault of the limit that ran out.
    fn expired(&self) -> Fault {
        let detail = if self.begun {
            let idle = self.tuning.idle_timeout;
            format!("the stream stalled: no data for {idle:?} (idle timeout)")
        } else {
            let limit = self.tuning.first_byte_timeout;
            format!("no response within {limit:?} (first-byte timeout)")
        };
        Fault::new(ErrorClass::Network, detail)
    }
}

/// Reads up to [`ERROR_BODY_LIMIT`] of a body that explains a failure (an error status, a
/// document instead of a stream), within `clock`'s limits; whatever arrived before the end, a
/// timeout or a broken connection is enough to explain it.
async fn read_document(
    response: reqwest::Response,
    clock: &mut ResponseClock,
    on_notice: &mut (dyn FnMut(Notice) + Send),
) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while body.len() < ERROR_BODY_LIMIT {
        match clock.next_chunk(&mut chunks, on_notice).await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(ERROR_BODY_LIMIT);
    String::from_utf8_lossy(&body).into_owned()
}

#[async_trait]
impl<W: Wire> Provider for HttpProvider<W> {
    fn name(&self) -> &'static str {
        self.wire.name()
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn server_report(&self) -> super::ServerReport {
        self.probes.ask(&self.client, &self.model).await
    }

    fn cannot_see_images(&self) -> Option<&'static str> {
        self.blind
    }

    async fn complete(
        &self,
        request: &Request,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        on_notice: &mut (dyn FnMut(Notice) + Send),
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let mut asks = Asks {
            constrain: !self.format_refused.load(Ordering::Relaxed)
                && self.wire.constrains(request),
            reasoning: !self.reasoning_refused.load(Ordering::Relaxed)
                && self.wire.reasoning_field().is_some(),
            images: !self.images_refused.load(Ordering::Relaxed),
        };
        let mut body = self.wire.body(&self.model, request, asks);
        let cancelled = || Fault::new(ErrorClass::Cancelled, "cancelled");
        let mut attempt = 1;
        loop {
            let mut assembly = Assembly::new(body.len());
            let sent = self.attempt(&body, attempt, &mut assembly, on_delta, on_notice);
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(cancelled()),
                outcome = sent => outcome,
            };
            let mut fault = match outcome {
                Ok(()) => return Ok(assembly.finish()),
                Err(fault) => fault,
            };
            if !assembly.has_started()
                && self.leave_out_refused(request, &mut asks, &fault, attempt, on_notice)
            {
                body = self.wire.body(&self.model, request, asks);
                continue;
            }
            let retry = fault.class.is_retryable()
                && !assembly.has_started()
                && attempt < self.tuning.max_attempts;
            if !retry {
                if attempt > 1 {
                    fault
                        .detail
                        .push_str(&format!(" (gave up after {attempt} attempts)"));
                }
                // What streamed before the failure was generated, and counts.
                let mut error = self.error(fault);
                error.usage = assembly.spent();
                return Err(error);
            }
            let wait = self.tuning.retry_wait(attempt, fault.retry_after);
            on_notice(self.retrying(attempt, fault, wait));
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(self.error(cancelled())),
                _ = sleep(wait) => {}
            }
            attempt += 1;
        }
    }
}
