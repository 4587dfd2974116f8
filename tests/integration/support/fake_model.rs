//! A fake model server for tests: real HTTP on 127.0.0.1, real SSE framing, scripted replies.
//!
//! It speaks both wires, chosen by the request path: `/v1/chat/completions` or
//! `/chat/completions` is OpenAI Chat Completions, `/v1/messages` or `/messages` is Anthropic
//! Messages. Each reply is streamed as separate chunks (one SSE event per write, with a pause
//! between), so clients see a stream rather than one buffered body.
//!
//! ```ignore
//! let server = FakeModel::start(
//!     Script::new()
//!         .reply(Reply::tool_call("read_file", json!({"path": "a.rs"})))
//!         .reply(Reply::text("The file is empty.")),
//! );
//! // point the client at server.base_url_openai() or server.base_url_anthropic()
//! assert_eq!(server.requests().len(), 2);
//! ```
//!
//! The server runs on its own tokio runtime in a background thread, so synchronous tests (for
//! example `assert_cmd` runs of the binary) and async tests can both use it. Dropping the
//! [`FakeModel`] stops it and aborts any reply still streaming.
//!
//! Requests that find no scripted reply get HTTP 400 with a wire-shaped error saying so (400
//! because clients do not retry it, so a missing reply shows up as one clear failure).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use axum::serve::ListenerExt;
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The pause between two SSE events by default, so each leaves the server as its own write.
const EVENT_GAP: Duration = Duration::from_millis(2);

/// The pause before a cut, so the events before it reach the client.
const CUT_FLUSH_PAUSE: Duration = Duration::from_millis(20);

/// The usage reported when a reply does not set its own.
pub const DEFAULT_USAGE: (u64, u64) = (10, 5);

/// What the model does in response to one request.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: Kind,
    delay: Duration,
    event_gap: Duration,
    headers: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
enum Kind {
    /// An HTTP error status with a wire-shaped error body.
    Error { status: u16, message: String },
    /// A 200 event stream whose second event is not JSON.
    Malformed,
    /// A 200 event stream whose second event is the wire's error event.
    StreamError { message: String },
    /// A 200 event stream.
    Stream(Streamed),
    /// An HTTP error status whose headers promise a body of `content_length` bytes that never
    /// comes: the connection stays open and silent.
    ErrorWithoutBody { status: u16, content_length: u64 },
    /// A response of `status` whose body is one document of `content_type`, not an event
    /// stream.
    Document {
        status: u16,
        content_type: String,
        body: String,
    },
}

/// The content of a streamed reply, in the order it is sent: reasoning, text, tool calls.
#[derive(Debug, Clone, Default)]
struct Streamed {
    reasoning: Option<String>,
    text: Option<String>,
    /// Name and the raw arguments text, exactly as streamed.
    tool_calls: Vec<(String, String)>,
    usage: Option<(u64, u64)>,
    /// Of the prompt tokens, how many the wire reports as read from its cache.
    cached_tokens: u64,
    /// Of the completion tokens, how many OpenAI's wire reports as reasoning.
    reasoning_tokens: u64,
    max_tokens: bool,
    /// Characters per text and reasoning delta; `None` streams one word per delta.
    piece_chars: Option<usize>,
    ending: Ending,
}

/// How a streamed reply ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Ending {
    /// Stop reason, usage, and the wire's end marker (`[DONE]`, `message_stop`).
    #[default]
    Complete,
    /// The connection is closed after the content, without a stop reason or end marker.
    Cut,
    /// After the content, nothing more is ever sent and the connection stays open.
    Stall,
}

impl Reply {
    /// A text answer, streamed one word per delta.
    pub fn text(text: &str) -> Reply {
        Reply::streamed(Streamed {
            text: Some(text.to_owned()),
            ..Streamed::default()
        })
    }

    /// Reasoning (as `reasoning_content` / a `thinking` block), then a text answer.
    pub fn reasoning(reasoning: &str, text: &str) -> Reply {
        Reply::streamed(Streamed {
            reasoning: Some(reasoning.to_owned()),
            text: Some(text.to_owned()),
            ..Streamed::default()
        })
    }

    /// One tool call; its arguments are serialized and streamed in many small fragments.
    /// Calls get the ids `call_fake_<n>` (OpenAI) or `toolu_fake_<n>` (Anthropic).
    pub fn tool_call(name: &str, arguments: Value) -> Reply {
        Reply::tool_calls(vec![(name, arguments)])
    }

    /// Several parallel tool calls in one response. On the OpenAI wire their argument
    /// fragments are interleaved, so only assembly by index gets them right.
    pub fn tool_calls(calls: Vec<(&str, Value)>) -> Reply {
        let tool_calls = calls
            .into_iter()
            // Pretty-printed, as llama.cpp's server sends them: clients must parse, not compare.
            .map(|(name, arguments)| {
                let text = serde_json::to_string_pretty(&arguments).expect("JSON arguments");
                (name.to_owned(), text)
            })
            .collect();
        Reply::streamed(Streamed {
            tool_calls,
            ..Streamed::default()
        })
    }

    /// One tool call whose arguments text is sent verbatim (e.g. invalid JSON).
    pub fn tool_call_raw(name: &str, arguments: &str) -> Reply {
        Reply::streamed(Streamed {
            tool_calls: vec![(name.to_owned(), arguments.to_owned())],
            ..Streamed::default()
        })
    }

    /// A response that sends its first events and then closes the connection before any text
    /// or tool call.
    pub fn cut_before_content() -> Reply {
        Reply::streamed(Streamed {
            ending: Ending::Cut,
            ..Streamed::default()
        })
    }

    /// An HTTP error: `status` with the wire's error body carrying `message`
    /// (`{"error":{"message":...}}` for OpenAI, `{"type":"error","error":{...}}` for Anthropic).
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::of(Kind::Error {
            status,
            message: message.to_owned(),
        })
    }

    /// An HTTP error `status` whose headers say `Content-Length: <content_length>` (and
    /// `Content-Type: application/json`), after which nothing is ever sent: a server that
    /// stalls before its error body.
    pub fn error_without_body(status: u16, content_length: u64) -> Reply {
        Reply::of(Kind::ErrorWithoutBody {
            status,
            content_length,
        })
    }

    /// A 200 whose body is `body` as one document of `content_type` (an HTML page from a proxy
    /// or a wrong base URL, a JSON error from a gateway) instead of an event stream.
    pub fn document(content_type: &str, body: &str) -> Reply {
        Reply::of(Kind::Document {
            status: 200,
            content_type: content_type.to_owned(),
            body: body.to_owned(),
        })
    }

    /// An HTTP error `status` whose JSON body is `body` verbatim, in no wire's shape (LM
    /// Studio's `{"error": "..."}`, a gateway's own).
    pub fn error_body(status: u16, body: &str) -> Reply {
        Reply::of(Kind::Document {
            status,
            content_type: "application/json".to_owned(),
            body: body.to_owned(),
        })
    }

    /// A 200 event stream with one data line that is not JSON.
    pub fn malformed() -> Reply {
        Reply::of(Kind::Malformed)
    }

    /// A 200 event stream that reports an error in-band before any content: an `error` event
    /// of type `overloaded_error` (Anthropic), an `{"error": ...}` chunk of type `server_error`
    /// (OpenAI-compatible servers).
    pub fn stream_error(message: &str) -> Reply {
        Reply::of(Kind::StreamError {
            message: message.to_owned(),
        })
    }

    /// Adds text before the tool calls of a tool-call reply (or replaces a reply's text).
    pub fn with_text(self, text: &str) -> Reply {
        self.map_stream(|streamed| streamed.text = Some(text.to_owned()))
    }

    /// Adds reasoning before the text and tool calls of a reply (a `thinking` block with the
    /// signature `fake-signature` on the Anthropic wire).
    pub fn with_reasoning(self, reasoning: &str) -> Reply {
        self.map_stream(|streamed| streamed.reasoning = Some(reasoning.to_owned()))
    }

    /// Reports `tokens` of the completion tokens as reasoning (OpenAI
    /// `completion_tokens_details.reasoning_tokens`).
    pub fn with_reasoning_tokens(self, tokens: u64) -> Reply {
        self.map_stream(|streamed| streamed.reasoning_tokens = tokens)
    }

    /// Reports these token counts instead of [`DEFAULT_USAGE`].
    pub fn with_usage(self, prompt_tokens: u64, completion_tokens: u64) -> Reply {
        self.map_stream(|streamed| streamed.usage = Some((prompt_tokens, completion_tokens)))
    }

    /// Reports `cached` of the prompt tokens as read from the prompt cache, each wire its way
    /// (OpenAI `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`).
    pub fn with_cached_tokens(self, cached: u64) -> Reply {
        self.map_stream(|streamed| streamed.cached_tokens = cached)
    }

    /// Streams text and reasoning `chars` characters per delta, as real models do (2 to 6),
    /// instead of one word per delta: a word may then arrive split across deltas.
    pub fn in_pieces(self, chars: usize) -> Reply {
        self.map_stream(|streamed| streamed.piece_chars = Some(chars.max(1)))
    }

    /// Ends with the wire's "output token limit reached" reason (`length` / `max_tokens`).
    pub fn max_tokens(self) -> Reply {
        self.map_stream(|streamed| streamed.max_tokens = true)
    }

    /// Sends the content, then closes the connection without a stop reason or end marker.
    pub fn cut(self) -> Reply {
        self.map_stream(|streamed| streamed.ending = Ending::Cut)
    }

    /// Sends the content, then nothing more, ever (until the client gives up).
    pub fn stall(self) -> Reply {
        self.map_stream(|streamed| streamed.ending = Ending::Stall)
    }

    /// Waits this long before sending the response headers.
    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// Pauses this long between two SSE events instead of [`EVENT_GAP`]; `Duration::ZERO` sends
    /// them back to back (what a benchmark wants: a model that answers instantly).
    pub fn event_gap(mut self, gap: Duration) -> Reply {
        self.event_gap = gap;
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds `Retry-After: <seconds>`.
    pub fn retry_after(self, seconds: u64) -> Reply {
        self.header("retry-after", &seconds.to_string())
    }

    fn streamed(streamed: Streamed) -> Reply {
        Reply::of(Kind::Stream(streamed))
    }

    fn of(kind: Kind) -> Reply {
        Reply {
            kind,
            delay: Duration::ZERO,
            event_gap: EVENT_GAP,
            headers: Vec::new(),
        }
    }

    fn map_stream(mut self, change: impl FnOnce(&mut Streamed)) -> Reply {
        match &mut self.kind {
            Kind::Stream(streamed) => change(streamed),
            other => panic!("this modifier applies to streamed replies, not {other:?}"),
        }
        self
    }
}

/// Which requests a [`Route`] serves.
#[derive(Debug, Clone)]
enum Matcher {
    BodyContains(String),
    Header(String, String),
}

/// A queue of replies for the requests that match a condition (for example those of one
/// sub-agent, recognised by its system prompt).
#[derive(Debug, Clone)]
pub struct Route {
    matcher: Matcher,
    replies: VecDeque<Reply>,
}

impl Route {
    /// Serves requests whose raw body contains `needle`.
    pub fn body_contains(needle: &str) -> Route {
        Route {
            matcher: Matcher::BodyContains(needle.to_owned()),
            replies: VecDeque::new(),
        }
    }

    /// Serves requests that carry header `name` with exactly `value`.
    pub fn header(name: &str, value: &str) -> Route {
        Route {
            matcher: Matcher::Header(name.to_ascii_lowercase(), value.to_owned()),
            replies: VecDeque::new(),
        }
    }

    /// Queues a reply on this route.
    pub fn reply(mut self, reply: Reply) -> Route {
        self.replies.push_back(reply);
        self
    }

    fn matches(&self, request: &RecordedRequest) -> bool {
        match &self.matcher {
            Matcher::BodyContains(needle) => request.raw_body.contains(needle.as_str()),
            Matcher::Header(name, value) => request.header(name) == Some(value.as_str()),
        }
    }
}

/// What the server answers, in order. A request goes to the first route that matches it, else
/// to the default queue; each reply is used once.
#[derive(Debug, Clone, Default)]
pub struct Script {
    default: VecDeque<Reply>,
    routes: Vec<Route>,
    /// What `GET /props` answers (llama.cpp's server settings); 404 when unset.
    props: Option<Value>,
    /// What `GET /v1/models` answers; 404 when unset.
    models: Option<Value>,
    /// What `GET /model/info` answers (a LiteLLM gateway's model info); 404 when unset.
    model_info: Option<Value>,
    /// Whether a request replaying a tool call the real servers refuse gets their refusal.
    strict_replay: bool,
}

impl Script {
    /// An empty script.
    pub fn new() -> Script {
        Script::default()
    }

    /// Queues a reply for requests no route matches.
    pub fn reply(mut self, reply: Reply) -> Script {
        self.default.push_back(reply);
        self
    }

    /// Adds a route, checked in the order added.
    pub fn route(mut self, route: Route) -> Script {
        self.routes.push(route);
        self
    }

    /// Answers `GET /props` with `props`, as llama.cpp's server does.
    pub fn props(mut self, props: Value) -> Script {
        self.props = Some(props);
        self
    }

    /// Answers `GET /v1/models` with `models`, as vLLM's server does.
    pub fn models(mut self, models: Value) -> Script {
        self.models = Some(models);
        self
    }

    /// Answers `GET /model/info` with `info`, as a LiteLLM gateway does.
    pub fn model_info(mut self, info: Value) -> Script {
        self.model_info = Some(info);
        self
    }

    /// Checks every replayed tool call as the real servers do, and refuses a request with one
    /// they refuse, without using a scripted reply: on the OpenAI wire arguments that are not
    /// a JSON object, or an empty name or id, get HTTP 500 (llama.cpp's "Failed to parse tool
    /// call arguments as JSON"); on the Anthropic wire an input that is not an object, or a
    /// name or id off the API's pattern, gets HTTP 400.
    pub fn strict_replay(mut self) -> Script {
        self.strict_replay = true;
        self
    }

    /// The answer to a question about the server itself (not a model request), if `request`
    /// is one: `None` for model requests.
    fn server_info(&self, request: &RecordedRequest) -> Option<Option<Value>> {
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/props") => Some(self.props.clone()),
            ("GET", "/v1/models" | "/models") => Some(self.models.clone()),
            ("GET", "/model/info") => Some(self.model_info.clone()),
            _ => None,
        }
    }

    fn next_reply(&mut self, request: &RecordedRequest) -> Option<Reply> {
        match self.routes.iter_mut().find(|route| route.matches(request)) {
            Some(route) => route.replies.pop_front(),
            None => self.default.pop_front(),
        }
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `POST`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// The headers, names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub raw_body: String,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
    /// The client's address; the same port on two requests means the connection was reused.
    pub peer: SocketAddr,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// The two wires, told apart by path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    OpenAi,
    Anthropic,
}

struct Shared {
    script: Mutex<Script>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// The `GET /props`, `GET /v1/models` and `GET /model/info` requests, apart from the model
    /// requests.
    probes: Mutex<Vec<RecordedRequest>>,
}

/// A running fake model server. Dropping it stops the server.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeModel {
    /// Starts a server on a free port of 127.0.0.1 that answers with `script`.
    pub fn start(script: Script) -> FakeModel {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind the fake model server");
        listener
            .set_nonblocking(true)
            .expect("make the listener non-blocking");
        let addr = listener
            .local_addr()
            .expect("the fake model server's address");
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            requests: Mutex::new(Vec::new()),
            probes: Mutex::new(Vec::new()),
        });
        let (shutdown, stop) = oneshot::channel();
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                // Each event leaves at once, as from a real server. With Nagle on, a small write
                // after another waits for the client's delayed ACK (~40 ms) whenever events go
                // back to back (Reply::event_gap(ZERO)), which the benchmark measured as zero's.
                let listener = tokio::net::TcpListener::from_std(listener)
                    .expect("a tokio listener")
                    .tap_io(|stream| {
                        let _ = stream.set_nodelay(true);
                    });
                tokio::select! {
                    result = axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()) => {
                        result.expect("the fake model server");
                    }
                    _ = stop => {}
                }
            });
            // Aborts replies still streaming (a stalled one never ends by itself).
            runtime.shutdown_background();
        });
        FakeModel {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// The base URL for the OpenAI wire (`http://127.0.0.1:<port>/v1`).
    pub fn base_url_openai(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The base URL for the Anthropic wire (`http://127.0.0.1:<port>`).
    pub fn base_url_anthropic(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every model request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Every question about the server (`GET /props`, `GET /v1/models`, `GET /model/info`)
    /// received so far.
    pub fn probes(&self) -> Vec<RecordedRequest> {
        self.shared.probes.lock().unwrap().clone()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let at = Instant::now();
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let raw_body = String::from_utf8_lossy(&bytes).into_owned();
    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
        raw_body,
        at,
        peer,
    };
    let wire = match recorded.path.as_str() {
        "/v1/chat/completions" | "/chat/completions" => Some(Wire::OpenAi),
        "/v1/messages" | "/messages" => Some(Wire::Anthropic),
        _ => None,
    };
    // Questions about the server are answered apart, and never use a scripted reply.
    let info = shared.script.lock().unwrap().server_info(&recorded);
    if let Some(info) = info {
        shared.probes.lock().unwrap().push(recorded);
        return match info {
            Some(value) => Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Body::from(value.to_string()))
                .expect("a response"),
            None => plain(StatusCode::NOT_FOUND, "fake model: not scripted"),
        };
    }
    let refusal = match wire {
        Some(wire) if shared.script.lock().unwrap().strict_replay => {
            refused_replay(wire, &recorded.body)
        }
        _ => None,
    };
    if let Some((wire, status, message)) = refusal {
        shared.requests.lock().unwrap().push(recorded);
        return error_response(wire, status, &message);
    }
    let reply = shared.script.lock().unwrap().next_reply(&recorded);
    // Only the conversation: tool descriptions may show example ids.
    let conversation = recorded.body["messages"].to_string();
    shared.requests.lock().unwrap().push(recorded);
    let Some(wire) = wire else {
        return plain(StatusCode::NOT_FOUND, "fake model: unknown path");
    };
    let Some(reply) = reply else {
        return error_response(wire, 400, "fake model: no reply scripted for this request");
    };
    // Even a zero-length sleep waits for the timer's next tick (about 1 ms), which the
    // benchmark would count as zero's.
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let gap = reply.event_gap;
    let mut response = match reply.kind {
        Kind::Error { status, message } => error_response(wire, status, &message),
        Kind::ErrorWithoutBody {
            status,
            content_length,
        } => Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .header("content-length", content_length)
            .body(Body::from_stream(stream::pending::<
                Result<Bytes, std::io::Error>,
            >()))
            .expect("a response"),
        Kind::Document {
            status,
            content_type,
            body,
        } => Response::builder()
            .status(status)
            .header("content-type", content_type)
            .body(Body::from(body))
            .expect("a response"),
        Kind::Malformed => event_stream(malformed_events(wire), Ending::Complete, gap),
        Kind::StreamError { message } => {
            event_stream(stream_error_events(wire, &message), Ending::Complete, gap)
        }
        Kind::Stream(mut streamed) => {
            fill_task_ids(&mut streamed, &conversation);
            let events = match wire {
                Wire::OpenAi => openai_events(&streamed),
                Wire::Anthropic => anthropic_events(&streamed),
            };
            event_stream(events, streamed.ending, gap)
        }
    };
    for (name, value) in reply.headers {
        let name =
            axum::http::HeaderName::from_bytes(name.as_bytes()).expect("a valid header name");
        response.headers_mut().insert(
            name,
            HeaderValue::from_str(&value).expect("a valid header value"),
        );
    }
    response
}

/// The refusal of a real server to a request whose `body` replays a tool call it does not
/// take (see [`Script::strict_replay`]): the wire, status and message, or `None`.
fn refused_replay(wire: Wire, body: &Value) -> Option<(Wire, u16, String)> {
    let messages = body["messages"].as_array()?;
    let word = |text: &Value| {
        text.as_str().is_some_and(|text| {
            !text.is_empty()
                && text
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
    };
    for message in messages {
        match wire {
            Wire::OpenAi => {
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    let arguments = call["function"]["arguments"].as_str().unwrap_or("");
                    let object = serde_json::from_str::<Value>(arguments)
                        .is_ok_and(|value| value.is_object());
                    if !object || !word(&call["function"]["name"]) || !word(&call["id"]) {
                        let message =
                            format!("Failed to parse tool call arguments as JSON: {arguments:?}");
                        return Some((wire, 500, message));
                    }
                }
            }
            Wire::Anthropic => {
                let blocks = message["content"].as_array().into_iter().flatten();
                for block in blocks.filter(|block| block["type"] == "tool_use") {
                    if !block["input"].is_object() || !word(&block["name"]) || !word(&block["id"]) {
                        let message = format!("tool_use is not valid: {block}");
                        return Some((wire, 400, message));
                    }
                }
            }
        }
    }
    None
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    Response::builder()
        .status(status)
        .body(Body::from(text))
        .expect("a response")
}

fn error_response(wire: Wire, status: u16, message: &str) -> Response {
    let kind = match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500.. => "api_error",
        _ => "invalid_request_error",
    };
    let body = match wire {
        Wire::OpenAi => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
        Wire::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
    };
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("a response")
}

/// A 200 `text/event-stream` response that sends `events` one write at a time, `gap` apart,
/// then ends as `ending` says.
fn event_stream(events: Vec<String>, ending: Ending, gap: Duration) -> Response {
    let events = stream::iter(events).then(move |event| async move {
        // Even a zero-length sleep waits for the timer's next tick (about 1 ms).
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        Ok::<Bytes, std::io::Error>(Bytes::from(event))
    });
    let tail: BoxStream<'static, Result<Bytes, std::io::Error>> = match ending {
        Ending::Complete => stream::empty().boxed(),
        // An error from the body makes the server drop the connection mid-response. The pause
        // first lets the content already written leave the server's buffer.
        Ending::Cut => stream::once(async {
            tokio::time::sleep(CUT_FLUSH_PAUSE).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "fake model cut the stream",
            ))
        })
        .boxed(),
        Ending::Stall => stream::pending().boxed(),
    };
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(events.chain(tail)))
        .expect("a response")
}

/// An SSE event with only data.
fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// An SSE event with a name, as Anthropic sends them (the name repeats the data's `type`).
fn named(value: Value) -> String {
    format!(
        "event: {}\ndata: {value}\n\n",
        value["type"].as_str().unwrap_or("message")
    )
}

/// The placeholder a scripted tool call's arguments may contain; it is replaced by the task id
/// most recently mentioned in the request's messages (a tool result that started a task names it), so a
/// script can call `TaskOutput`/`TaskStop` on a task whose id it cannot know in advance.
pub const TASK_ID: &str = "$TASK_ID";

/// Marks a specialist child's requests: the heading of the assigned task in the envelope
/// every specialist prompt is wrapped in (`tasks::child::envelope`), so a [`Route`] can answer
/// the child and the parent differently.
pub const CHILD: &str = "## Assigned task";

/// Like [`TASK_ID`], but replaced by the task id mentioned first in the request's messages:
/// with two tasks started, a script reaches the first one with it.
pub const FIRST_TASK_ID: &str = "$FIRST_TASK_ID";

fn fill_task_ids(reply: &mut Streamed, request_body: &str) {
    let ids: Vec<String> = task_ids(request_body).collect();
    let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
        return;
    };
    for (_, arguments) in &mut reply.tool_calls {
        *arguments = arguments
            .replace(FIRST_TASK_ID, first)
            .replace(TASK_ID, last);
    }
}

/// Each `task_` followed by 12 lowercase hex digits in `text`, in order.
fn task_ids(text: &str) -> impl Iterator<Item = String> + '_ {
    text.match_indices("task_")
        .filter_map(|(at, _)| text.get(at..at + 17))
        .filter(|id| {
            id[5..]
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        })
        .map(str::to_owned)
}

/// Text split into the deltas `reply` streams: one word each (with its trailing space), or
/// pieces of [`Streamed::piece_chars`] characters.
fn words(reply: &Streamed, text: &str) -> Vec<String> {
    match reply.piece_chars {
        None => text.split_inclusive(' ').map(str::to_owned).collect(),
        Some(chars) => {
            let text: Vec<char> = text.chars().collect();
            text.chunks(chars)
                .map(|piece| piece.iter().collect())
                .collect()
        }
    }
}

/// Serialized arguments split into fragments of a few characters.
fn fragments(arguments: &str) -> Vec<String> {
    let text: Vec<char> = arguments.chars().collect();
    text.chunks(5).map(|chunk| chunk.iter().collect()).collect()
}

fn openai_events(reply: &Streamed) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        data(&json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }))
    };
    // llama.cpp opens with `content: null`; OpenAI with `""`. Both must work.
    let opening = if reply.tool_calls.is_empty() {
        json!("")
    } else {
        Value::Null
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": opening}),
        Value::Null,
    )];
    for piece in reply.reasoning.iter().flat_map(|text| words(reply, text)) {
        events.push(chunk(json!({"reasoning_content": piece}), Value::Null));
    }
    for piece in reply.text.iter().flat_map(|text| words(reply, text)) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    let fragments: Vec<Vec<String>> = reply
        .tool_calls
        .iter()
        .map(|(_, arguments)| fragments(arguments))
        .collect();
    for (index, (name, _)) in reply.tool_calls.iter().enumerate() {
        let call = json!({"index": index, "id": format!("call_fake_{index}"), "type": "function",
                          "function": {"name": name, "arguments": ""}});
        events.push(chunk(
            json!({"content": null, "tool_calls": [call]}),
            Value::Null,
        ));
    }
    // Interleave the calls' fragments round-robin, as a server generating them in parallel may.
    let rounds = fragments.iter().map(Vec::len).max().unwrap_or(0);
    for round in 0..rounds {
        for (index, pieces) in fragments.iter().enumerate() {
            if let Some(piece) = pieces.get(round) {
                let call = json!({"index": index, "function": {"arguments": piece}});
                events.push(chunk(json!({"tool_calls": [call]}), Value::Null));
            }
        }
    }
    if reply.ending != Ending::Complete {
        return events;
    }
    let finish = match () {
        _ if reply.max_tokens => "length",
        _ if !reply.tool_calls.is_empty() => "tool_calls",
        _ => "stop",
    };
    events.push(chunk(json!({}), json!(finish)));
    let (prompt, completion) = reply.usage.unwrap_or(DEFAULT_USAGE);
    events.push(data(&json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
                  "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens}},
        "timings": {"prompt_ms": 1.0, "predicted_ms": 1.0},
    })));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

fn anthropic_events(reply: &Streamed) -> Vec<String> {
    let (prompt, completion) = reply.usage.unwrap_or(DEFAULT_USAGE);
    let mut events = vec![
        named(json!({"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": "fake",
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": prompt - reply.cached_tokens, "cache_read_input_tokens": reply.cached_tokens, "output_tokens": 1},
        }})),
        named(json!({"type": "ping"})),
    ];
    let mut index = 0;
    let mut block = |events: &mut Vec<String>, start: Value, deltas: Vec<Value>| {
        events.push(named(
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            events.push(named(
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push(named(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    };
    if let Some(reasoning) = &reply.reasoning {
        let mut deltas: Vec<Value> = words(reply, reasoning)
            .into_iter()
            .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": "fake-signature"}));
        block(
            &mut events,
            json!({"type": "thinking", "thinking": ""}),
            deltas,
        );
    }
    if let Some(text) = &reply.text {
        let deltas = words(reply, text)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect();
        block(&mut events, json!({"type": "text", "text": ""}), deltas);
    }
    for (n, (name, arguments)) in reply.tool_calls.iter().enumerate() {
        let deltas = fragments(arguments)
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
            .collect();
        let start =
            json!({"type": "tool_use", "id": format!("toolu_fake_{n}"), "name": name, "input": {}});
        block(&mut events, start, deltas);
    }
    if reply.ending != Ending::Complete {
        return events;
    }
    let stop = match () {
        _ if reply.max_tokens => "max_tokens",
        _ if !reply.tool_calls.is_empty() => "tool_use",
        _ => "end_turn",
    };
    events.push(named(
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                             "usage": {"output_tokens": completion}}),
    ));
    events.push(named(json!({"type": "message_stop"})));
    events
}

fn malformed_events(wire: Wire) -> Vec<String> {
    match wire {
        Wire::OpenAi => vec![
            data(
                &json!({"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]}),
            ),
            "data: {\"choices\": [this is not json\n\n".to_owned(),
        ],
        Wire::Anthropic => vec![
            named(json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}})),
            "event: content_block_delta\ndata: {this is not json\n\n".to_owned(),
        ],
    }
}

fn stream_error_events(wire: Wire, message: &str) -> Vec<String> {
    match wire {
        Wire::OpenAi => vec![
            data(
                &json!({"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]}),
            ),
            data(&json!({"error": {"message": message, "type": "server_error"}})),
        ],
        Wire::Anthropic => vec![
            named(json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}})),
            named(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
            ),
        ],
    }
}
