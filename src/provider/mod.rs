//! Model providers: the [`Provider`] trait and its two wires (OpenAI Chat Completions and
//! Anthropic Messages), streaming over SSE, with retries and classified errors. The local
//! provider is the OpenAI wire over a Unix socket to the server `local_model` starts.

mod anthropic;
mod assembly;
pub(crate) mod config;
mod fallback;
mod fault;
mod http;
pub(crate) mod message;
mod notice;
mod openai;
mod probe;
mod reasoning;
mod repetition;
mod replay;
mod sse;
mod tuning;
mod window;

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use config::{
    ConfigError, DEFAULT_MAX_OUTPUT_TOKENS, ProviderConfig, ProviderFlags, config_file_key, resolve,
};
pub use message::{
    AnswerFormat, Completion, Image, Message, Request, StopReason, StreamDelta, ThinkingBlock,
    ToolCall, ToolSpec, Usage,
};
pub use notice::{Notice, Refused, Retrying, Switched, WaitPhase, Waiting};
pub use probe::ServerReport;
pub use reasoning::ReasoningEffort;
pub use repetition::{Loop, WINDOW as LOOP_WINDOW};
pub use tuning::{InvalidTuning, Tuning};
pub use window::{ContextWindow, DEFAULT_CONTEXT_WINDOW, WindowLookup, WindowSource};

/// The smallest context window zero works in: its own system prompt and tools take about this
/// much. A smaller number a server reports or a refusal names is taken for a mistake.
pub const MIN_CONTEXT_WINDOW: u32 = 1024;

/// The wire protocol of the model endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions (also Ollama, llama.cpp, vLLM, OpenRouter, ...).
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// A model on this machine: zero starts llama.cpp's server itself (built by
    /// `scripts/local-model build`) and speaks the OpenAI wire to it over a Unix socket.
    Local,
}

impl ProviderKind {
    /// The word `--provider` and `ZERO_PROVIDER` take for this wire: clap's name for it, so the
    /// flag, the variable and a child's environment cannot say different words.
    pub(crate) fn word(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|value| value.get_name().to_owned())
            .unwrap_or_default()
    }

    /// Why this provider's models cannot see images, when they cannot: the local models are
    /// text-only (llama-server is started without a vision projector).
    pub(crate) fn cannot_see_images(self) -> Option<&'static str> {
        match self {
            ProviderKind::Local => {
                Some("the local provider's models are text-only (`--provider local` has no vision)")
            }
            ProviderKind::Openai | ProviderKind::Anthropic => None,
        }
    }

    /// The wire `word` names, in any case (`ZERO_PROVIDER`).
    pub(crate) fn from_word(word: &str) -> Option<ProviderKind> {
        clap::ValueEnum::from_str(word, true).ok()
    }
}

/// Builds the provider `config` describes: the wire of its kind over one HTTP client (kept for
/// the provider's whole life, so turns reuse connections), with its tuning. Checks the base URL
/// again, since a config may be built by hand rather than by [`resolve`]. The requests share
/// `cache_key` (the run's id) where the endpoint routes its prompt cache by one. With fallback
/// models, the provider is the chain of them all (`provider::fallback`).
pub fn build(config: &ProviderConfig, cache_key: &str) -> Result<Arc<dyn Provider>, ConfigError> {
    let primary = build_one(config, cache_key)?;
    if config.fallbacks.is_empty() {
        return Ok(primary);
    }
    let fallbacks = config
        .fallbacks
        .iter()
        .map(|fallback| build_one(fallback, cache_key))
        .collect::<Result<_, _>>()?;
    Ok(Arc::new(fallback::Fallback::new(primary, fallbacks)))
}

/// The provider of `config`'s own model (see [`build`]).
fn build_one(config: &ProviderConfig, cache_key: &str) -> Result<Arc<dyn Provider>, ConfigError> {
    config::parse_base_url(&config.base_url)?;
    let official = config.is_official();
    match config.kind {
        ProviderKind::Openai | ProviderKind::Local => {
            let wire = openai::OpenAi::new(&config.base_url, config.max_output_tokens, cache_key)
                .with_reasoning(config.reasoning_effort);
            over_http(wire, config, probe::Probes::new(&config.base_url, official))
        }
        ProviderKind::Anthropic => {
            let wire = anthropic::Anthropic::new(&config.base_url, config.max_output_tokens)
                .with_reasoning(config.reasoning_effort);
            // llama.cpp serves the Anthropic wire too; its OpenAI-style API is under /v1.
            let api_root = format!("{}/v1", config.base_url.trim_end_matches('/'));
            over_http(wire, config, probe::Probes::new(&api_root, official))
        }
    }
}

/// `wire` over its own HTTP client, for `config`'s model and key.
fn over_http<W: http::Wire>(
    wire: W,
    config: &ProviderConfig,
    probes: probe::Probes,
) -> Result<Arc<dyn Provider>, ConfigError> {
    let provider = http::HttpProvider::new(
        wire,
        http::Endpoint {
            model: config.model.clone(),
            api_key: config.api_key.clone(),
            socket: config.socket.clone(),
            blind: config.kind.cannot_see_images(),
        },
        config.tuning,
        probes,
    )?;
    Ok(Arc::new(provider))
}

/// How a provider call failed; decides retries, the `error.code` (`agent` maps each class to
/// one) and the exit code. Serialised in snake_case, as a cassette records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// 401/403: the key is missing, wrong or lacks access.
    Auth,
    /// 400/404/422: the request was refused as malformed or the model does not exist.
    BadRequest,
    /// The conversation no longer fits the model's context window.
    ContextLength,
    /// 429: too many requests or quota exhausted.
    RateLimited,
    /// 5xx or an overloaded server.
    Unavailable,
    /// Could not connect, the connection dropped, or a timeout fired.
    Network,
    /// The server answered with something that is not the wire protocol.
    Protocol,
    /// The run was cancelled while the request was in flight.
    Cancelled,
    /// `--replay`: the request differs from the one the cassette recorded, or the cassette
    /// has no answer for it (`cassette::replay`).
    ReplayDrift,
}

impl ErrorClass {
    /// Whether waiting and trying again could succeed: rate limits, server trouble and network
    /// failures pass; a refused request, a bad key or a cancelled run do not.
    pub(crate) fn is_retryable(self) -> bool {
        match self {
            ErrorClass::RateLimited | ErrorClass::Unavailable | ErrorClass::Network => true,
            ErrorClass::Auth
            | ErrorClass::BadRequest
            | ErrorClass::ContextLength
            | ErrorClass::Protocol
            | ErrorClass::Cancelled
            | ErrorClass::ReplayDrift => false,
        }
    }
}

/// A failed provider call, classified, with secrets already redacted from the message.
/// Serialised as a cassette records it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[error("{message}")]
pub struct ProviderError {
    /// What kind of failure this is.
    pub class: ErrorClass,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// What went wrong, including the provider's own message.
    pub message: String,
    /// Whether trying again later could succeed (after retries were exhausted).
    pub retryable: bool,
    /// What the failed request spent, when it got far enough to spend anything (a stream cut
    /// off mid-answer): the provider's own counts where it sent them, else an estimate
    /// ([`Usage::estimated`]). The run's budget counts it like any response's.
    pub usage: Option<Usage>,
}

impl ProviderError {
    /// The context window, in tokens, that a refusal as too long names ("exceeds the available
    /// context size (16384 tokens)", "maximum context length is 8192 tokens"), so the run can
    /// learn the model's real window from it; `None` for any other failure.
    pub fn window_named(&self) -> Option<u32> {
        match self.class {
            ErrorClass::ContextLength => fault::window_named(&self.message),
            _ => None,
        }
    }
}

/// A model endpoint that streams one response per request.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The wire's name for `run_start` (`openai` or `anthropic`).
    fn name(&self) -> &'static str;
    /// The model requests are sent to.
    fn model(&self) -> &str;
    /// Sends `request`, calls `on_delta` with text and reasoning as they stream in, and returns
    /// the assembled response. Retries transient failures that happen before any content
    /// arrived, and tells `on_notice` of every retry and of every long silence (see
    /// [`Notice`]). Returns promptly with [`ErrorClass::Cancelled`] when `cancel` fires.
    async fn complete(
        &self,
        request: &Request,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        on_notice: &mut (dyn FnMut(Notice) + Send),
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError>;
    /// What the server says about itself: the model's context window, when it reports one
    /// (llama.cpp, vLLM), and whether it is llama.cpp; asked once, beside the first request.
    async fn server_report(&self) -> ServerReport;
    /// Why the model cannot see images, or `None` when it can (or may: a server that turns an
    /// image down answers the request with an error the run reports). A tool's image is then
    /// replaced by this reason and `--image` refused with it.
    fn cannot_see_images(&self) -> Option<&'static str> {
        None
    }
}
