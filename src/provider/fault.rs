//! Classifying failures: an HTTP status and body, a transport error, a timeout or a bad stream
//! become a [`Fault`], which becomes the user-facing [`ProviderError`] in exactly one place
//! ([`Fault::into_error`]), where the endpoint is named and secrets are redacted.

use std::time::Duration;

use serde_json::Value;

use super::sse::SseError;
use super::{ErrorClass, ProviderError};
use crate::redact::redact;

/// Phrases servers use when a request no longer fits the context window, in the folded form
/// [`fold`] gives a text (lowercase letters and digits only), so `context_length_exceeded`,
/// "Context length exceeded" and `ContextWindowExceededError` read alike. This is the one
/// place where zero reads an error's text: providers report context overflow as a plain 400
/// (llama.cpp once as a 500) whose only distinguishing mark is the message. The wordings, as
/// servers send them:
///
/// - OpenAI, vLLM, OpenRouter: "This model's (this endpoint's) maximum context length is 8192
///   tokens. However, you requested 8977 tokens", code `context_length_exceeded`;
/// - Anthropic: "prompt is too long: 210000 tokens > 200000 maximum";
/// - llama.cpp: "request (42888 tokens) exceeds the available context size (16384 tokens)",
///   type `exceed_context_size_error`; llama-cpp-python: "Requested tokens (516) exceed
///   context window of 512";
/// - LiteLLM, around any of these: `litellm.ContextWindowExceededError: ...`, or "Input tokens
///   exceed the configured limit of 272000 tokens";
/// - Ollama: "prompt too long; exceeded max context length by 10 tokens", "input length
///   exceeds maximum context length";
/// - vLLM (newer): "... is longer than the maximum model length of 4096"; Gemini: "The input
///   token count (1200000) exceeds the maximum number of tokens allowed (1048576)".
const CONTEXT_LENGTH_MARKERS: &[&str] = &[
    "contextlengthexceeded",
    "contextwindowexceeded",
    "exceedcontextsize",
    "maximumcontextlength",
    "maxcontextlength",
    "promptistoolong",
    "prompttoolong",
    "contextwindow",
    "contextlength",
    "contextsize",
    "maximummodellength",
    "inputtokensexceed",
    "exceedsthemaximumnumberoftokens",
];

/// The words just before the number a refusal gives as the window, in the lowercased,
/// whitespace-collapsed text (see [`window_named`]), each with the wording it comes from.
const WINDOW_ANCHORS: &[&str] = &[
    // llama.cpp: "exceeds the available context size (16384 tokens)".
    "context size (",
    // OpenAI, vLLM, OpenRouter: "maximum context length is 8192 tokens".
    "maximum context length is ",
    // llama-cpp-python: "exceed context window of 512".
    "context window of ",
    // LiteLLM: "exceed the configured limit of 272000 tokens".
    "configured limit of ",
    // vLLM: "longer than the maximum model length of 4096".
    "maximum model length of ",
    // Gemini: "the maximum number of tokens allowed (1048576)".
    "tokens allowed (",
    // Anthropic: "210000 tokens > 200000 maximum".
    "tokens > ",
    // Mistral: "too large for model with 32768 maximum context length".
    "model with ",
    // LM Studio: "the model is loaded with context length of only 4096 tokens".
    "context length of only ",
];

/// The most of a non-JSON error body quoted in a message.
const BODY_SNIPPET_CHARS: usize = 300;

/// A failure of one attempt, before it is phrased for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    /// What kind of failure.
    pub(crate) class: ErrorClass,
    /// The HTTP status, when the server answered with an error status.
    pub(crate) status: Option<u16>,
    /// What went wrong, in the server's words where it gave any.
    pub(crate) detail: String,
    /// How long the server asked us to wait before trying again (`Retry-After`).
    pub(crate) retry_after: Option<Duration>,
}

impl Fault {
    /// A failure without an HTTP status.
    pub(crate) fn new(class: ErrorClass, detail: impl Into<String>) -> Self {
        Fault {
            class,
            status: None,
            detail: detail.into(),
            retry_after: None,
        }
    }

    /// Classifies an error status from its code and body.
    pub(crate) fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> Self {
        let detail = error_detail(body).unwrap_or_else(|| {
            reqwest::StatusCode::from_u16(status)
                .ok()
                .and_then(|code| code.canonical_reason())
                .unwrap_or("no details")
                .to_owned()
        });
        let class = match status {
            401 | 403 => ErrorClass::Auth,
            429 => ErrorClass::RateLimited,
            408 => ErrorClass::Network,
            // Before the 5xx arm: llama.cpp once sent its context-size refusal as a 500.
            _ if mentions_context_length(body) => ErrorClass::ContextLength,
            500.. => ErrorClass::Unavailable,
            _ => ErrorClass::BadRequest,
        };
        let detail = match class {
            ErrorClass::ContextLength => with_window(detail, body),
            _ => detail,
        };
        Fault {
            class,
            status: Some(status),
            detail,
            retry_after,
        }
    }

    /// Classifies an error the server reported inside a successful stream (an Anthropic `error`
    /// event, an OpenAI-compatible `{"error": ...}` chunk), by its type where it has one.
    pub(crate) fn from_stream_error(error_type: Option<&str>, message: &str) -> Self {
        let class = match error_type {
            _ if mentions_context_length(message) => ErrorClass::ContextLength,
            Some("authentication_error" | "permission_error") => ErrorClass::Auth,
            Some("rate_limit_error") => ErrorClass::RateLimited,
            Some("invalid_request_error" | "not_found_error") => ErrorClass::BadRequest,
            // overloaded_error, api_error, and anything unknown: the server failed mid-way.
            _ => ErrorClass::Unavailable,
        };
        Fault::new(
            class,
            format!("the server reported an error mid-stream: {message}"),
        )
    }

    /// Classifies a transport failure from `reqwest` (connect, reset, body read).
    pub(crate) fn from_transport(err: &reqwest::Error) -> Self {
        // The top-level message is terse ("error sending request"); the cause chain has the
        // part a user can act on ("Connection refused").
        let mut detail = err.to_string();
        let mut source = std::error::Error::source(err);
        while let Some(cause) = source {
            detail.push_str(": ");
            detail.push_str(&cause.to_string());
            source = cause.source();
        }
        let class = if err.is_builder() {
            ErrorClass::BadRequest
        } else {
            ErrorClass::Network
        };
        Fault::new(class, detail)
    }

    /// A stream that could not be decoded.
    pub(crate) fn from_sse(err: &SseError) -> Self {
        Fault::new(ErrorClass::Protocol, format!("malformed stream: {err}"))
    }

    /// Phrases the failure for the user, naming the endpoint, and redacts `secrets` and
    /// key-shaped strings from the whole message.
    pub(crate) fn into_error(self, url: &str, secrets: &[&str]) -> ProviderError {
        let message = match self.status {
            Some(status) => format!("HTTP {status} from {url}: {}", self.detail),
            None => format!("request to {url} failed: {}", self.detail),
        };
        ProviderError {
            retryable: self.class.is_retryable(),
            class: self.class,
            status: self.status,
            message: redact(&message, secrets),
            usage: None,
        }
    }
}

/// A document a successful response brought instead of an event stream, by its
/// `Content-Type`. Such an answer comes from a server (or something in front of it) that
/// answered another question; it is explained rather than retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Document {
    /// A web page (`text/html`, `application/xhtml+xml`): a proxy, a login page, or a base
    /// URL that points at a website rather than the API.
    Html,
    /// A JSON document (`application/json`, `*+json`): a gateway's error sent with 200, or a
    /// server that ignored `stream: true`.
    Json,
    /// Any other type, as sent (its essence: lowercased, without parameters).
    Other(String),
}

impl Document {
    /// What a `Content-Type` header value says the body is: `None` for an event stream, and
    /// for no type at all (tolerated: such a body is decoded as a stream).
    pub(crate) fn of(content_type: Option<&str>) -> Option<Document> {
        let essence = content_type?
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "text/event-stream" => None,
            "text/html" | "application/xhtml+xml" => Some(Document::Html),
            "application/json" => Some(Document::Json),
            json if json.ends_with("+json") => Some(Document::Json),
            _ => Some(Document::Other(essence)),
        }
    }
}

impl Fault {
    /// A success status whose body is `document` instead of an event stream, explained from
    /// `body`. Never retried: asking again gets the same page or document.
    pub(crate) fn not_a_stream(document: &Document, body: &str) -> Self {
        let detail = match document {
            Document::Html => {
                let mut detail = "the endpoint answered with an HTML page, not an event stream: \
                                  the base URL is probably wrong (it should be the API's root, \
                                  such as https://api.openai.com/v1 or http://127.0.0.1:8080/v1)"
                    .to_owned();
                if let Some(title) = html_title(body) {
                    detail.push_str(&format!("; the page's title is {title:?}"));
                }
                detail
            }
            Document::Json => match json_message(body) {
                Some(message) => format!(
                    "the server answered with a JSON error instead of an event stream: {message}"
                ),
                None => "the server answered with one JSON document instead of an event stream \
                         (does it support streaming?)"
                    .to_owned(),
            },
            Document::Other(kind) => {
                let mut detail = format!(
                    "the endpoint answered with {kind}, not an event stream (text/event-stream)"
                );
                if let Some(snippet) = snippet(body) {
                    detail.push_str(&format!(": {snippet}"));
                }
                detail
            }
        };
        Fault::new(ErrorClass::Protocol, detail)
    }
}

/// Parses a `Retry-After` header: seconds, or an HTTP date (the wait until then; a date in
/// the past means "now"). Anything else is `None`, and the caller falls back to its backoff.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The provider's own words from an error body (see [`json_message`]); else a bounded snippet
/// of the body.
fn error_detail(body: &str) -> Option<String> {
    json_message(body).or_else(|| snippet(body))
}

/// The message of a JSON error body: `error.message` (OpenAI, Anthropic), `error` as a string
/// (Ollama), or a top-level `message`.
fn json_message(body: &str) -> Option<String> {
    let json = serde_json::from_str::<Value>(body.trim()).ok()?;
    json.pointer("/error/message")
        .or_else(|| json.get("error").filter(|e| e.is_string()))
        .or_else(|| json.get("message"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// `text` with its whitespace runs collapsed, cut at [`BODY_SNIPPET_CHARS`]; `None` when blank.
fn snippet(text: &str) -> Option<String> {
    let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return None;
    }
    let mut chars = collapsed.chars();
    let mut bounded: String = chars.by_ref().take(BODY_SNIPPET_CHARS).collect();
    if chars.next().is_some() {
        bounded.push('…');
    }
    Some(bounded)
}

/// The `<title>` of an HTML page, as a bounded snippet, when it has one.
fn html_title(page: &str) -> Option<String> {
    let lower = page.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    snippet(&page[start..end])
}

/// Whether `text` says a request did not fit the context window (see
/// [`CONTEXT_LENGTH_MARKERS`]).
fn mentions_context_length(text: &str) -> bool {
    let text = fold(text);
    CONTEXT_LENGTH_MARKERS
        .iter()
        .any(|marker| text.contains(marker))
}

/// `text` lowercased, with everything but letters and digits left out, so that a phrase
/// matches whatever case, spaces, underscores or camel case a server writes it in.
fn fold(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The context window a refusal as too long names, in tokens: the number after one of
/// [`WINDOW_ANCHORS`] (thousands separators allowed), the first anchor found winning. `None`
/// when the text names none, or a number too small to be a window.
pub(crate) fn window_named(text: &str) -> Option<u32> {
    let text = text
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    WINDOW_ANCHORS
        .iter()
        .filter_map(|anchor| {
            let at = text.find(anchor)? + anchor.len();
            let digits: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == ',')
                .filter(char::is_ascii_digit)
                .collect();
            Some((at, digits.parse::<u32>().ok()?))
        })
        .min_by_key(|&(at, _)| at)
        .map(|(_, tokens)| tokens)
        .filter(|&tokens| tokens >= super::MIN_CONTEXT_WINDOW)
}

/// `detail` of a refusal as too long, with the window the body's JSON gives (llama.cpp's
/// `error.n_ctx`) when the words name none: the message then says it, and the loop learns it.
fn with_window(detail: String, body: &str) -> String {
    if window_named(&detail).is_some() {
        return detail;
    }
    let n_ctx = serde_json::from_str::<Value>(body.trim())
        .ok()
        .and_then(|json| json.pointer("/error/n_ctx").and_then(Value::as_u64));
    match n_ctx {
        Some(tokens) => format!("{detail}: the server's context size ({tokens} tokens)"),
        None => detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1:1234/v1/chat/completions";

    #[test]
    fn statuses_map_to_classes() {
        let cases = [
            (401, "", ErrorClass::Auth),
            (403, "", ErrorClass::Auth),
            (
                400,
                r#"{"error":{"message":"bad tool schema"}}"#,
                ErrorClass::BadRequest,
            ),
            (404, "model not found", ErrorClass::BadRequest),
            (422, "", ErrorClass::BadRequest),
            (429, "", ErrorClass::RateLimited),
            (500, "", ErrorClass::Unavailable),
            (503, "", ErrorClass::Unavailable),
            (
                529,
                r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
                ErrorClass::Unavailable,
            ),
            (408, "", ErrorClass::Network),
        ];
        for (status, body, class) in cases {
            assert_eq!(
                Fault::from_status(status, body, None).class,
                class,
                "HTTP {status}"
            );
        }
    }

    #[test]
    fn context_overflow_is_recognised_in_client_errors() {
        let bodies = [
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            "the request exceeds the available context window",
        ];
        for body in bodies {
            assert_eq!(
                Fault::from_status(400, body, None).class,
                ErrorClass::ContextLength,
                "{body}"
            );
        }
    }

    /// Refusals as too long as servers word them, each with the window it names.
    const REFUSALS: &[(u16, &str, Option<u32>)] = &[
        (
            400,
            r#"{"error":{"code":400,"message":"request (42888 tokens) exceeds the available context size (16384 tokens), try increasing it","type":"exceed_context_size_error"}}"#,
            Some(16384),
        ),
        (
            400,
            r#"{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: OpenAIException - request (42888 tokens) exceeds the available context size (16384 tokens), try increasing it","type":null,"param":null,"code":"400"}}"#,
            Some(16384),
        ),
        (
            400,
            r#"{"error":{"message":"litellm.ContextWindowExceededError: OpenAIException - Input tokens exceed the configured limit of 272,000 tokens."}}"#,
            Some(272_000),
        ),
        (
            400,
            r#"{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","code":400}"#,
            Some(8192),
        ),
        (
            400,
            r#"{"error":{"message":"this endpoint's maximum context length is 131072 tokens. however, you requested about 138956 tokens","code":400}}"#,
            Some(131_072),
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            Some(200_000),
        ),
        (
            500,
            r#"{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":4096}}"#,
            Some(4096),
        ),
        (
            400,
            r#"{"error":"prompt too long; exceeded max context length by 12 tokens"}"#,
            None,
        ),
        (
            400,
            r#"{"error":{"message":"Requested tokens (2065) exceed context window of 1800"}}"#,
            Some(1800),
        ),
        (
            400,
            r#"{"error":{"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}}"#,
            Some(1_048_576),
        ),
        (
            400,
            r#"{"error":"Trying to keep the first 5211 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough."}"#,
            Some(4096),
        ),
        (400, "PROMPT IS TOO LONG", None),
    ];

    #[test]
    fn every_servers_refusal_as_too_long_is_a_context_length_fault_naming_its_window() {
        for &(status, body, window) in REFUSALS {
            let fault = Fault::from_status(status, body, None);
            assert_eq!(fault.class, ErrorClass::ContextLength, "{body}");
            let error = fault.into_error(URL, &[]);
            assert_eq!(error.window_named(), window, "{}", error.message);
        }
    }

    #[test]
    fn a_window_is_read_only_after_its_words_and_only_from_a_refusal_as_too_long() {
        assert_eq!(window_named("context size (16,384 tokens)"), Some(16384));
        // The port of the URL in front of the message is no window.
        assert_eq!(
            window_named("HTTP 400 from http://127.0.0.1:8080/v1: too long"),
            None
        );
        assert_eq!(window_named("maximum context length is 12 tokens"), None);
        let other = Fault::from_status(400, "maximum context length is 8192 tokens", None);
        let mut error = other.into_error(URL, &[]);
        error.class = ErrorClass::BadRequest;
        assert_eq!(error.window_named(), None);
    }

    #[test]
    fn a_client_error_that_only_mentions_tokens_is_not_a_context_length_fault() {
        let bodies = [
            r#"{"error":{"message":"max_tokens must be at least 1"}}"#,
            r#"{"error":{"message":"Invalid 'messages[2].content': string too long"}}"#,
        ];
        for body in bodies {
            assert_eq!(
                Fault::from_status(400, body, None).class,
                ErrorClass::BadRequest
            );
        }
    }

    #[test]
    fn message_names_status_endpoint_and_provider_message() {
        let fault = Fault::from_status(401, r#"{"error":{"message":"invalid api key"}}"#, None);
        let err = fault.into_error(URL, &[]);
        assert_eq!(err.message, format!("HTTP 401 from {URL}: invalid api key"));
        assert_eq!(err.status, Some(401));
        assert!(!err.retryable);
    }

    #[test]
    fn detail_falls_back_to_string_error_snippet_or_reason() {
        assert_eq!(
            Fault::from_status(404, r#"{"error":"model 'x' not found"}"#, None).detail,
            "model 'x' not found"
        );
        assert_eq!(
            Fault::from_status(502, "<html>\n  Bad   gateway</html>", None).detail,
            "<html> Bad gateway</html>"
        );
        assert_eq!(
            Fault::from_status(500, "", None).detail,
            "Internal Server Error"
        );
        let long = "x".repeat(1000);
        assert_eq!(
            Fault::from_status(500, &long, None).detail.chars().count(),
            BODY_SNIPPET_CHARS + 1
        );
    }

    #[test]
    fn the_key_never_survives_into_a_message() {
        let key = "sk-test-0123456789abcdefghij";
        let body = format!(r#"{{"error":{{"message":"Incorrect API key provided: {key}"}}}}"#);
        let err = Fault::from_status(401, &body, None).into_error(URL, &[key]);
        assert!(!err.message.contains(key), "{}", err.message);
        let odd_key = "plain-local-key";
        let err =
            Fault::new(ErrorClass::Network, format!("echo {odd_key}")).into_error(URL, &[odd_key]);
        assert!(!err.message.contains(odd_key), "{}", err.message);
    }

    #[test]
    fn retryable_classes() {
        for class in [
            ErrorClass::RateLimited,
            ErrorClass::Unavailable,
            ErrorClass::Network,
        ] {
            assert!(class.is_retryable());
        }
        let permanent = [
            ErrorClass::Auth,
            ErrorClass::BadRequest,
            ErrorClass::ContextLength,
            ErrorClass::Protocol,
            ErrorClass::Cancelled,
            ErrorClass::ReplayDrift,
        ];
        for class in permanent {
            assert!(!class.is_retryable());
        }
    }

    #[test]
    fn stream_errors_are_classified_by_type() {
        assert_eq!(
            Fault::from_stream_error(Some("overloaded_error"), "Overloaded").class,
            ErrorClass::Unavailable
        );
        assert_eq!(
            Fault::from_stream_error(Some("rate_limit_error"), "slow down").class,
            ErrorClass::RateLimited
        );
        assert_eq!(
            Fault::from_stream_error(Some("invalid_request_error"), "prompt is too long").class,
            ErrorClass::ContextLength
        );
        assert_eq!(
            Fault::from_stream_error(None, "boom").class,
            ErrorClass::Unavailable
        );
    }

    #[test]
    fn content_types_other_than_an_event_stream_are_documents() {
        assert_eq!(Document::of(Some("text/event-stream")), None);
        assert_eq!(Document::of(Some("Text/Event-Stream; charset=utf-8")), None);
        assert_eq!(Document::of(None), None);
        assert_eq!(
            Document::of(Some("text/html; charset=UTF-8")),
            Some(Document::Html)
        );
        assert_eq!(
            Document::of(Some("application/problem+json")),
            Some(Document::Json)
        );
        assert_eq!(
            Document::of(Some("Text/Plain")),
            Some(Document::Other("text/plain".into()))
        );
    }

    #[test]
    fn a_document_instead_of_a_stream_is_a_protocol_fault_saying_what_came() {
        let page = "<HTML><Head><TITLE>\n  Welcome   to nginx!\n</TITLE></Head></HTML>";
        let fault = Fault::not_a_stream(&Document::Html, page);
        assert_eq!(fault.class, ErrorClass::Protocol);
        assert!(
            fault.detail.contains("base URL is probably wrong"),
            "{}",
            fault.detail
        );
        assert!(
            fault.detail.ends_with("\"Welcome to nginx!\""),
            "{}",
            fault.detail
        );
        let untitled = Fault::not_a_stream(&Document::Html, "<p>hi</p>");
        assert!(!untitled.detail.contains("title"), "{}", untitled.detail);
        let json = Fault::not_a_stream(&Document::Json, r#"{"error":"no such model"}"#);
        assert!(json.detail.ends_with(": no such model"), "{}", json.detail);
    }

    #[test]
    fn retry_after_seconds_and_date_forms() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("soon"), None);
        // A date in the past: retry now.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        let in_a_minute =
            httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(60));
        let wait = parse_retry_after(&in_a_minute).unwrap();
        assert!(
            wait > Duration::from_secs(55) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
    }
}
