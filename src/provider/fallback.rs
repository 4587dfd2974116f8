//! Fallback models (`--fallback-model`, `fallback_models` in config.toml): an ordered chain of
//! providers behind the one [`Provider`] the agent loop talks to.
//!
//! A request goes to the current model. When it fails for a reason another model may not
//! share — the server stayed overloaded, rate-limited or unreachable through every retry the
//! model's own provider made, or it does not know the model — and nothing of the answer came,
//! the same request goes to the next model of the chain, and the caller hears of it
//! ([`Notice::Switched`]). The switch holds for the rest of the run: the model that failed
//! would most likely fail the next request too, after the same retries. A refused request (a
//! 400), a bad key or a conversation too long for the window (compaction's business) is the
//! request's fault, not the model's, and goes back to the caller as it is. When the last model
//! fails too, the error names every model tried.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{
    Completion, ErrorClass, Notice, Provider, ProviderError, Request, StreamDelta, Switched,
};

/// The error code some servers name an unknown model by (OpenAI's `model_not_found`), where
/// the status alone does not say it.
const MODEL_NOT_FOUND: &str = "model_not_found";

/// Providers tried in order; see the module documentation.
pub(crate) struct Fallback {
    chain: Vec<Arc<dyn Provider>>,
    /// The index of the model requests go to now.
    current: AtomicUsize,
}

impl Fallback {
    /// The chain `primary`, then `fallbacks` in order.
    pub(crate) fn new(primary: Arc<dyn Provider>, fallbacks: Vec<Arc<dyn Provider>>) -> Self {
        Fallback {
            chain: std::iter::once(primary).chain(fallbacks).collect(),
            current: AtomicUsize::new(0),
        }
    }

    /// The provider requests go to now.
    fn current(&self) -> &Arc<dyn Provider> {
        &self.chain[self.current.load(Ordering::Relaxed)]
    }
}

/// Why `error` sends the request on to the next model, if it does: a failure of the model's
/// server that its own retries did not get past, or an unknown model — and only while nothing
/// of the answer came (a stream that broke off mid-answer spent something, and its text was
/// shown: asking another model would show a second answer after half of the first).
fn switch_reason(error: &ProviderError) -> Option<ErrorClass> {
    if error.usage.is_some() {
        return None;
    }
    let unknown_model = error.class == ErrorClass::BadRequest
        && (error.status == Some(404) || error.message.contains(MODEL_NOT_FOUND));
    (error.class.is_retryable() || unknown_model).then_some(error.class)
}

#[async_trait]
impl Provider for Fallback {
    fn name(&self) -> &'static str {
        self.current().name()
    }

    fn model(&self) -> &str {
        self.current().model()
    }

    async fn server_report(&self) -> super::ServerReport {
        self.current().server_report().await
    }

    fn cannot_see_images(&self) -> Option<&'static str> {
        self.current().cannot_see_images()
    }

    async fn complete(
        &self,
        request: &Request,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        on_notice: &mut (dyn FnMut(Notice) + Send),
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let mut failed: Vec<String> = Vec::new();
        loop {
            let index = self.current.load(Ordering::Relaxed);
            let provider = &self.chain[index];
            let error = match provider
                .complete(request, on_delta, on_notice, cancel)
                .await
            {
                Ok(completion) => return Ok(completion),
                Err(error) => error,
            };
            let (Some(class), Some(next)) = (switch_reason(&error), self.chain.get(index + 1))
            else {
                return Err(exhausted(error, failed, provider.model()));
            };
            failed.push(format!("{}: {}", provider.model(), error.message));
            on_notice(Notice::Switched(Switched {
                from: provider.model().to_owned(),
                to: next.model().to_owned(),
                class,
                reason: error.message,
            }));
            self.current.store(index + 1, Ordering::Relaxed);
        }
    }
}

/// The error of the last model tried, naming every model that failed before it in this
/// request (`failed`, each with its error) when there were any.
fn exhausted(mut error: ProviderError, failed: Vec<String>, last: &str) -> ProviderError {
    if !failed.is_empty() {
        let earlier = failed.join("; ");
        error.message = format!(
            "every model failed: {earlier}; {last}: {message}",
            message = error.message
        );
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    use crate::provider::{StopReason, Usage};

    /// A provider that answers each request with the next of its outcomes.
    struct Scripted {
        model: &'static str,
        outcomes: Mutex<Vec<Result<Completion, ProviderError>>>,
    }

    fn scripted(
        model: &'static str,
        outcomes: Vec<Result<Completion, ProviderError>>,
    ) -> Arc<dyn Provider> {
        Arc::new(Scripted {
            model,
            outcomes: Mutex::new(outcomes),
        })
    }

    #[async_trait]
    impl Provider for Scripted {
        fn name(&self) -> &'static str {
            "openai"
        }
        fn model(&self) -> &str {
            self.model
        }
        async fn server_report(&self) -> crate::provider::ServerReport {
            crate::provider::ServerReport::default()
        }
        async fn complete(
            &self,
            _request: &Request,
            _on_delta: &mut (dyn FnMut(StreamDelta) + Send),
            _on_notice: &mut (dyn FnMut(Notice) + Send),
            _cancel: &CancellationToken,
        ) -> Result<Completion, ProviderError> {
            self.outcomes.lock().unwrap().remove(0)
        }
    }

    fn failure(class: ErrorClass, status: Option<u16>, message: &str) -> ProviderError {
        ProviderError {
            class,
            status,
            message: message.into(),
            retryable: class.is_retryable(),
            usage: None,
        }
    }

    fn answer(text: &str) -> Completion {
        Completion {
            text: text.into(),
            tool_calls: Vec::new(),
            thinking: Vec::new(),
            usage: None,
            stop: StopReason::EndTurn,
        }
    }

    fn request() -> Request {
        Request {
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            answer_format: None,
        }
    }

    /// Sends one request through `chain`; its outcome and the notices.
    fn send(chain: &Fallback) -> (Result<Completion, ProviderError>, Vec<Notice>) {
        let mut notices = Vec::new();
        let outcome = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(chain.complete(
                &request(),
                &mut |_| {},
                &mut |notice| notices.push(notice),
                &CancellationToken::new(),
            ));
        (outcome, notices)
    }

    #[test]
    fn an_overloaded_model_hands_the_request_on_and_the_switch_holds() {
        let overloaded = failure(ErrorClass::Unavailable, Some(529), "HTTP 529: overloaded");
        let chain = Fallback::new(
            scripted("big", vec![Err(overloaded)]),
            vec![scripted(
                "small",
                vec![Ok(answer("one")), Ok(answer("two"))],
            )],
        );
        let (outcome, notices) = send(&chain);
        assert_eq!(outcome.unwrap().text, "one");
        assert_eq!(
            notices,
            [Notice::Switched(Switched {
                from: "big".into(),
                to: "small".into(),
                class: ErrorClass::Unavailable,
                reason: "HTTP 529: overloaded".into(),
            })]
        );
        assert_eq!(chain.model(), "small");
        let (outcome, notices) = send(&chain);
        assert_eq!(outcome.unwrap().text, "two");
        assert!(notices.is_empty());
    }

    #[test]
    fn an_unknown_model_is_a_reason_and_a_refused_request_or_a_long_one_is_not() {
        let unknown = failure(ErrorClass::BadRequest, Some(404), "no such model");
        let coded = failure(ErrorClass::BadRequest, Some(400), "code model_not_found");
        assert_eq!(switch_reason(&unknown), Some(ErrorClass::BadRequest));
        assert_eq!(switch_reason(&coded), Some(ErrorClass::BadRequest));
        for kept in [
            failure(ErrorClass::BadRequest, Some(400), "bad field"),
            failure(ErrorClass::ContextLength, Some(400), "prompt is too long"),
            failure(ErrorClass::Auth, Some(401), "bad key"),
            failure(ErrorClass::Cancelled, None, "cancelled"),
        ] {
            assert_eq!(switch_reason(&kept), None, "{kept:?}");
        }
        let mut begun = failure(ErrorClass::Network, None, "the stream broke off");
        begun.usage = Some(Usage::default());
        assert_eq!(switch_reason(&begun), None);
    }

    #[test]
    fn the_last_models_error_names_every_model_tried() {
        let chain = Fallback::new(
            scripted(
                "a",
                vec![Err(failure(
                    ErrorClass::RateLimited,
                    Some(429),
                    "slow down",
                ))],
            ),
            vec![scripted(
                "b",
                vec![Err(failure(ErrorClass::Unavailable, Some(503), "down"))],
            )],
        );
        let (outcome, notices) = send(&chain);
        let error = outcome.unwrap_err();
        assert_eq!(error.class, ErrorClass::Unavailable);
        assert_eq!(error.message, "every model failed: a: slow down; b: down");
        assert_eq!(notices.len(), 1);
    }
}
