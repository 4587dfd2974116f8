//! The provider through its public API, with the real HTTP client, against the fake model
//! server: both wires, streaming, tool calls, usage, retries, timeouts, cancellation, secrets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use zero::provider::ProviderKind;
use zero::provider::{
    Completion, ConfigError, DEFAULT_MAX_OUTPUT_TOKENS, ErrorClass, Message, Notice, Provider,
    ProviderConfig, ProviderError, Request, Retrying, StopReason, StreamDelta, ToolSpec, Tuning,
    Usage, WaitPhase, Waiting, build,
};

use crate::support::fake_model::{FakeModel, Reply, Route, Script};
use crate::support::zero::{Wire, finished_stream, zero_std_with};

const KEY: &str = "sk-test-0123456789abcdefghijklmnop";
const BOTH: [ProviderKind; 2] = [ProviderKind::Openai, ProviderKind::Anthropic];

/// Fast failures, so the tests take milliseconds: tiny backoff, short timeouts.
fn fast() -> Tuning {
    Tuning {
        connect_timeout: Duration::from_secs(2),
        first_byte_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        max_attempts: 4,
        retry_base: Duration::from_millis(10),
        retry_max_wait: Duration::from_secs(3),
        wait_notice: Duration::from_secs(10),
    }
}

fn base_url(kind: ProviderKind, server: &FakeModel) -> String {
    match kind {
        ProviderKind::Openai | ProviderKind::Local => server.base_url_openai(),
        ProviderKind::Anthropic => server.base_url_anthropic(),
    }
}

fn provider_with(kind: ProviderKind, server: &FakeModel, tuning: Tuning) -> Arc<dyn Provider> {
    let config = ProviderConfig {
        kind,
        base_url: base_url(kind, server),
        api_key: Some(KEY.to_owned()),
        model: "fake-model".to_owned(),
        max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        reasoning_effort: None,
        fallbacks: Vec::new(),
        tuning,
        socket: None,
    };
    build(&config, "run_provider_test").expect("a provider")
}

fn provider(kind: ProviderKind, server: &FakeModel) -> Arc<dyn Provider> {
    provider_with(kind, server, fast())
}

fn ask(prompt: &str) -> Request {
    Request {
        system: "You are a test.".into(),
        messages: vec![Message::user(prompt)],
        tools: vec![],
        answer_format: None,
    }
}

/// Runs one completion; returns its result and every delta delivered on the way.
async fn complete(
    provider: &dyn Provider,
    request: &Request,
) -> (Result<Completion, ProviderError>, Vec<StreamDelta>) {
    let (result, deltas, _) = complete_noting(provider, request).await;
    (result, deltas)
}

/// [`complete`], with every notice the provider gave on the way.
async fn complete_noting(
    provider: &dyn Provider,
    request: &Request,
) -> (
    Result<Completion, ProviderError>,
    Vec<StreamDelta>,
    Vec<Notice>,
) {
    let mut deltas = Vec::new();
    let mut notices = Vec::new();
    let result = provider
        .complete(
            request,
            &mut |delta| deltas.push(delta),
            &mut |notice| notices.push(notice),
            &CancellationToken::new(),
        )
        .await;
    (result, deltas, notices)
}

fn texts(deltas: &[StreamDelta]) -> Vec<&str> {
    deltas
        .iter()
        .filter_map(|delta| match delta {
            StreamDelta::Text(text) => Some(text.as_str()),
            StreamDelta::Reasoning(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn text_streams_in_deltas_with_usage_on_both_wires() {
    for kind in BOTH {
        let server = FakeModel::start(
            Script::new().reply(Reply::text("Hello from the fake model").with_usage(42, 7)),
        );
        let (result, deltas) = complete(&*provider(kind, &server), &ask("hi")).await;
        let done = result.unwrap_or_else(|err| panic!("{kind:?}: {err}"));
        assert_eq!(done.text, "Hello from the fake model", "{kind:?}");
        assert_eq!(done.stop, StopReason::EndTurn);
        assert_eq!(
            done.usage,
            Some(Usage {
                prompt_tokens: 42,
                completion_tokens: 7,
                ..Usage::default()
            })
        );
        assert!(done.tool_calls.is_empty());
        assert_eq!(
            texts(&deltas),
            ["Hello ", "from ", "the ", "fake ", "model"],
            "{kind:?}"
        );

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].method, "POST");
        assert_eq!(requests[0].body["model"], "fake-model");
        assert_eq!(requests[0].body["stream"], true);
    }
}

#[tokio::test]
async fn each_wire_posts_to_its_path_with_its_request_shape() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text("a"))
            .reply(Reply::text("b")),
    );
    complete(&*provider(ProviderKind::Openai, &server), &ask("q"))
        .await
        .0
        .unwrap();
    complete(&*provider(ProviderKind::Anthropic, &server), &ask("q"))
        .await
        .0
        .unwrap();
    let requests = server.requests();

    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].body["stream_options"],
        json!({"include_usage": true})
    );
    assert_eq!(
        requests[0].body["messages"][0],
        json!({"role": "system", "content": "You are a test."})
    );

    assert_eq!(requests[1].path, "/v1/messages");
    assert_eq!(requests[1].header("anthropic-version"), Some("2023-06-01"));
    // The system prompt is a cached block (a prompt-cache breakpoint), and so is the newest
    // message's last block.
    assert_eq!(
        requests[1].body["system"],
        json!([{"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}])
    );
    let messages = requests[1].body["messages"].as_array().unwrap();
    let newest = messages.last().unwrap()["content"].as_array().unwrap();
    assert_eq!(
        newest.last().unwrap()["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(requests[1].body["max_tokens"], 8192);
}

#[tokio::test]
async fn reasoning_is_delivered_apart_from_the_answer() {
    for kind in BOTH {
        let server = FakeModel::start(Script::new().reply(Reply::reasoning("Let me think", "42")));
        let (result, deltas) = complete(&*provider(kind, &server), &ask("q")).await;
        assert_eq!(result.unwrap().text, "42", "{kind:?}");
        assert_eq!(
            deltas,
            vec![
                StreamDelta::Reasoning("Let ".into()),
                StreamDelta::Reasoning("me ".into()),
                StreamDelta::Reasoning("think".into()),
                StreamDelta::Text("42".into()),
            ],
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn parallel_tool_calls_with_split_arguments_are_assembled() {
    for kind in BOTH {
        let reply = Reply::tool_calls(vec![
            ("read_file", json!({"path": "src/main.rs", "limit": 200})),
            ("grep", json!({"pattern": "fn main", "glob": "*.rs"})),
        ])
        .with_text("Looking.");
        let server = FakeModel::start(Script::new().reply(reply));
        let request = Request {
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "Read a file".into(),
                input_schema: json!({"type": "object"}),
            }],
            ..ask("look")
        };
        let done = complete(&*provider(kind, &server), &request)
            .await
            .0
            .unwrap();
        assert_eq!(done.text, "Looking.");
        assert_eq!(done.stop, StopReason::ToolUse, "{kind:?}");
        let prefix = if kind == ProviderKind::Openai {
            "call_fake"
        } else {
            "toolu_fake"
        };
        // Arguments arrive pretty-printed (as llama.cpp sends them): compare them parsed.
        let calls: Vec<(String, String, serde_json::Value)> = done
            .tool_calls
            .iter()
            .map(|call| {
                let args = serde_json::from_str(&call.arguments).expect("assembled JSON");
                (call.id.clone(), call.name.clone(), args)
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                (
                    format!("{prefix}_0"),
                    "read_file".to_string(),
                    json!({"path": "src/main.rs", "limit": 200})
                ),
                (
                    format!("{prefix}_1"),
                    "grep".to_string(),
                    json!({"pattern": "fn main", "glob": "*.rs"})
                ),
            ],
            "{kind:?}"
        );
        assert!(server.requests()[0].body["tools"].is_array(), "{kind:?}");
    }
}

#[tokio::test]
async fn the_key_travels_only_in_its_header() {
    for (kind, header, value) in [
        (
            ProviderKind::Openai,
            "authorization",
            format!("Bearer {KEY}"),
        ),
        (ProviderKind::Anthropic, "x-api-key", KEY.to_owned()),
    ] {
        let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
        complete(&*provider(kind, &server), &ask("q"))
            .await
            .0
            .unwrap();
        let request = &server.requests()[0];
        assert_eq!(request.header(header), Some(value.as_str()), "{kind:?}");
        let elsewhere: Vec<&str> = request
            .headers
            .iter()
            .filter(|(name, value)| name != header && value.contains(KEY))
            .map(|(name, _)| name.as_str())
            .collect();
        assert!(
            elsewhere.is_empty(),
            "{kind:?}: key also in headers {elsewhere:?}"
        );
        assert!(!request.raw_body.contains(KEY), "{kind:?}: key in the body");
        assert!(
            !request.path.contains(KEY) && request.query.is_none(),
            "{kind:?}: key in the URL"
        );
    }
}

#[tokio::test]
async fn without_a_key_no_auth_header_is_sent() {
    let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
    let config = ProviderConfig {
        kind: ProviderKind::Openai,
        base_url: server.base_url_openai(),
        api_key: None,
        model: "local".into(),
        max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        reasoning_effort: None,
        fallbacks: Vec::new(),
        tuning: fast(),
        socket: None,
    };
    complete(&*build(&config, "run_provider_test").unwrap(), &ask("q"))
        .await
        .0
        .unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn consecutive_requests_reuse_the_connection() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text("one"))
            .reply(Reply::text("two")),
    );
    let provider = provider(ProviderKind::Openai, &server);
    complete(&*provider, &ask("1")).await.0.unwrap();
    complete(&*provider, &ask("2")).await.0.unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].peer, requests[1].peer,
        "a new connection was opened for the second request"
    );
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_the_key_is_redacted() {
    for kind in BOTH {
        let server = FakeModel::start(Script::new().reply(Reply::error(
            401,
            &format!("Incorrect API key provided: {KEY}"),
        )));
        let err = complete(&*provider(kind, &server), &ask("q"))
            .await
            .0
            .unwrap_err();
        assert_eq!(err.class, ErrorClass::Auth, "{kind:?}");
        assert_eq!(err.status, Some(401));
        assert!(!err.retryable);
        assert_eq!(
            server.requests().len(),
            1,
            "{kind:?}: a 401 must not be retried"
        );
        let url = if kind == ProviderKind::Openai {
            format!("{}/chat/completions", server.base_url_openai())
        } else {
            format!("{}/v1/messages", server.base_url_anthropic())
        };
        assert_eq!(
            err.message,
            format!("HTTP 401 from {url}: Incorrect API key provided: [REDACTED]")
        );
        assert!(!err.message.contains(KEY));
    }
}

#[tokio::test]
async fn bad_request_shows_the_provider_message() {
    for kind in BOTH {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::error(
                    400,
                    "tools.0.name: String should match pattern",
                ))
                .reply(Reply::error(
                    400,
                    "prompt is too long: 250000 tokens > 200000 maximum",
                )),
        );
        let provider = provider(kind, &server);
        let err = complete(&*provider, &ask("q")).await.0.unwrap_err();
        assert_eq!(err.class, ErrorClass::BadRequest, "{kind:?}");
        assert!(
            err.message.contains("HTTP 400")
                && err
                    .message
                    .ends_with("tools.0.name: String should match pattern"),
            "{}",
            err.message
        );

        let err = complete(&*provider, &ask("q")).await.0.unwrap_err();
        assert_eq!(err.class, ErrorClass::ContextLength, "{kind:?}");
        assert_eq!(
            server.requests().len(),
            2,
            "{kind:?}: client errors are not retried"
        );
    }
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after_then_succeeds() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::error(429, "slow down").retry_after(1))
            .reply(Reply::text("ok")),
    );
    let done = complete(&*provider(ProviderKind::Openai, &server), &ask("q"))
        .await
        .0
        .unwrap();
    assert_eq!(done.text, "ok");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_secs(1),
        "retried after {waited:?}, before Retry-After"
    );
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    for kind in BOTH {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::error(500, "boom"))
                .reply(Reply::error(529, "Overloaded"))
                .reply(Reply::text("ok")),
        );
        let done = complete(&*provider(kind, &server), &ask("q"))
            .await
            .0
            .unwrap();
        assert_eq!(done.text, "ok", "{kind:?}");
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn retries_are_bounded() {
    let script = (0..5).fold(Script::new(), |script, _| {
        script.reply(Reply::error(503, "down"))
    });
    let server = FakeModel::start(script);
    let err = complete(&*provider(ProviderKind::Anthropic, &server), &ask("q"))
        .await
        .0
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Unavailable);
    assert!(err.retryable);
    assert!(
        err.message.ends_with("down (gave up after 4 attempts)"),
        "{}",
        err.message
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn stream_cut_before_content_is_retried() {
    for kind in BOTH {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::cut_before_content())
                .reply(Reply::text("whole")),
        );
        let (result, deltas) = complete(&*provider(kind, &server), &ask("q")).await;
        assert_eq!(result.unwrap().text, "whole", "{kind:?}");
        assert_eq!(
            texts(&deltas),
            ["whole"],
            "{kind:?}: nothing from the cut attempt reached the caller"
        );
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn stream_cut_after_content_is_reported_not_retried() {
    for kind in BOTH {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::text("half an answer").cut())
                .reply(Reply::text("again")),
        );
        let (result, deltas) = complete(&*provider(kind, &server), &ask("q")).await;
        let err = result.unwrap_err();
        assert_eq!(err.class, ErrorClass::Network, "{kind:?}: {}", err.message);
        assert_eq!(texts(&deltas), ["half ", "an ", "answer"]);
        assert_eq!(
            server.requests().len(),
            1,
            "{kind:?}: a retry would repeat the delivered text"
        );
    }
}

#[tokio::test]
async fn a_tool_call_cut_mid_arguments_is_not_retried() {
    let server = FakeModel::start(
        Script::new().reply(Reply::tool_call("bash", json!({"command": "ls -la"})).cut()),
    );
    let err = complete(&*provider(ProviderKind::Openai, &server), &ask("q"))
        .await
        .0
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Network);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn malformed_data_line_is_a_protocol_error() {
    for kind in BOTH {
        let server = FakeModel::start(Script::new().reply(Reply::malformed()));
        let err = complete(&*provider(kind, &server), &ask("q"))
            .await
            .0
            .unwrap_err();
        assert_eq!(err.class, ErrorClass::Protocol, "{kind:?}: {}", err.message);
        assert!(err.message.contains("this is not json"), "{}", err.message);
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn slow_first_byte_times_out_then_is_retried() {
    let tuning = Tuning {
        first_byte_timeout: Duration::from_millis(200),
        max_attempts: 1,
        ..fast()
    };
    let server =
        FakeModel::start(Script::new().reply(Reply::text("late").delay(Duration::from_secs(3))));
    let err = complete(
        &*provider_with(ProviderKind::Openai, &server, tuning),
        &ask("q"),
    )
    .await
    .0
    .unwrap_err();
    assert_eq!(err.class, ErrorClass::Network);
    assert!(err.retryable);
    assert!(
        err.message.contains("first-byte timeout"),
        "{}",
        err.message
    );

    let tuning = Tuning {
        max_attempts: 2,
        ..tuning
    };
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text("late").delay(Duration::from_secs(3)))
            .reply(Reply::text("prompt")),
    );
    let done = complete(
        &*provider_with(ProviderKind::Anthropic, &server, tuning),
        &ask("q"),
    )
    .await
    .0
    .unwrap();
    assert_eq!(done.text, "prompt");
}

#[tokio::test]
async fn every_retry_is_a_notice_with_its_attempt_reason_and_delay() {
    for kind in BOTH {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::error(500, "upstream exploded"))
                .reply(Reply::error(429, "slow down").retry_after(0))
                .reply(Reply::text("at last")),
        );
        let (result, _, notices) = complete_noting(&*provider(kind, &server), &ask("q")).await;
        assert_eq!(result.unwrap().text, "at last", "{kind:?}");
        let retries: Vec<&Retrying> = notices
            .iter()
            .map(|notice| match notice {
                Notice::Retrying(retrying) => retrying,
                other => panic!("{kind:?}: {other:?}"),
            })
            .collect();
        assert_eq!(retries.len(), 2, "{kind:?}: {notices:?}");
        let expected = [
            (1, ErrorClass::Unavailable, "HTTP 500", "upstream exploded"),
            (2, ErrorClass::RateLimited, "HTTP 429", "slow down"),
        ];
        for (retry, (attempt, class, status, words)) in retries.iter().zip(expected) {
            assert_eq!(retry.attempt, attempt, "{kind:?}");
            assert_eq!(retry.max_attempts, 4, "{kind:?}");
            assert_eq!(retry.class, class, "{kind:?}");
            assert!(retry.reason.contains(status), "{}", retry.reason);
            assert!(retry.reason.contains(words), "{}", retry.reason);
            assert!(!retry.reason.contains(KEY), "{}", retry.reason);
        }
        assert_eq!(
            retries[1].delay,
            Duration::ZERO,
            "Retry-After: 0 is honoured"
        );
    }
}

#[tokio::test]
async fn a_long_silence_is_a_notice_in_each_phase_and_a_short_one_none() {
    for kind in BOTH {
        let tuning = Tuning {
            wait_notice: Duration::from_millis(100),
            ..fast()
        };
        // Each event waits 300 ms: before the first byte, then between chunks.
        let server = FakeModel::start(
            Script::new().reply(Reply::text("slow").event_gap(Duration::from_millis(300))),
        );
        let (result, _, notices) =
            complete_noting(&*provider_with(kind, &server, tuning), &ask("q")).await;
        assert_eq!(result.unwrap().text, "slow", "{kind:?}");
        let waits: Vec<&Waiting> = notices
            .iter()
            .map(|notice| match notice {
                Notice::Waiting(waiting) => waiting,
                other => panic!("{kind:?}: {other:?}"),
            })
            .collect();
        let first = waits
            .iter()
            .find(|w| w.phase == WaitPhase::FirstByte)
            .unwrap_or_else(|| panic!("{kind:?}: {waits:?}"));
        assert_eq!(first.waited, Duration::from_millis(100), "{kind:?}");
        assert_eq!(first.limit, fast().first_byte_timeout, "{kind:?}");
        assert_eq!((first.attempt, first.max_attempts), (1, 4), "{kind:?}");
        let stream = waits
            .iter()
            .find(|w| w.phase == WaitPhase::Stream)
            .unwrap_or_else(|| panic!("{kind:?}: {waits:?}"));
        assert_eq!(stream.limit, fast().idle_timeout, "{kind:?}");
        // The silence is told of at 100 ms and again as it doubles, never more often.
        for wait in &waits {
            let steps = [100, 200, 400].map(Duration::from_millis);
            assert!(steps.contains(&wait.waited), "{kind:?}: {wait:?}");
        }

        let quick = FakeModel::start(Script::new().reply(Reply::text("quick")));
        let patient = Tuning {
            wait_notice: Duration::from_secs(2),
            ..fast()
        };
        let (_, _, notices) =
            complete_noting(&*provider_with(kind, &quick, patient), &ask("q")).await;
        assert!(notices.is_empty(), "{kind:?}: {notices:?}");
    }
}

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout() {
    for kind in BOTH {
        let tuning = Tuning {
            idle_timeout: Duration::from_millis(300),
            ..fast()
        };
        let server = FakeModel::start(Script::new().reply(Reply::text("started").stall()));
        let (result, deltas) = complete(&*provider_with(kind, &server, tuning), &ask("q")).await;
        let err = result.unwrap_err();
        assert_eq!(err.class, ErrorClass::Network, "{kind:?}");
        assert!(err.message.contains("idle timeout"), "{}", err.message);
        assert_eq!(texts(&deltas), ["started"]);
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn cancellation_returns_promptly_mid_stream() {
    for kind in BOTH {
        // Only cancellation can end this call early: the stream stalls and the idle timeout is long.
        let tuning = Tuning {
            idle_timeout: Duration::from_secs(60),
            ..fast()
        };
        let server = FakeModel::start(Script::new().reply(Reply::text("thinking aloud").stall()));
        let provider = provider_with(kind, &server, tuning);
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let started = Instant::now();
        let result = provider
            .complete(&ask("q"), &mut |_| trigger.cancel(), &mut |_| {}, &cancel)
            .await;
        let err = result.unwrap_err();
        assert_eq!(err.class, ErrorClass::Cancelled, "{kind:?}");
        assert!(!err.retryable);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "cancellation took {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_cancelled_run_sends_nothing() {
    let server = FakeModel::start(Script::new().reply(Reply::text("unused")));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = provider(ProviderKind::Openai, &server)
        .complete(&ask("q"), &mut |_| {}, &mut |_| {}, &cancel)
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Cancelled);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn connection_refused_is_a_retryable_network_error() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let config = ProviderConfig {
        kind: ProviderKind::Openai,
        base_url: format!("http://{addr}/v1"),
        api_key: Some(KEY.into()),
        model: "m".into(),
        max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        reasoning_effort: None,
        fallbacks: Vec::new(),
        tuning: Tuning {
            max_attempts: 2,
            ..fast()
        },
        socket: None,
    };
    let err = complete(&*build(&config, "run_provider_test").unwrap(), &ask("q"))
        .await
        .0
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Network);
    assert!(err.retryable);
    assert!(
        err.message.contains("gave up after 2 attempts"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn routes_serve_different_clients_from_one_server() {
    let server = FakeModel::start(Script::new().reply(Reply::text("for the parent")).route(
        Route::body_contains("You are the reviewer").reply(Reply::text("for the reviewer")),
    ));
    let provider = provider(ProviderKind::Openai, &server);
    let reviewer = Request {
        system: "You are the reviewer.".into(),
        ..ask("review")
    };
    assert_eq!(
        complete(&*provider, &reviewer).await.0.unwrap().text,
        "for the reviewer"
    );
    assert_eq!(
        complete(&*provider, &ask("q")).await.0.unwrap().text,
        "for the parent"
    );
    // An exhausted queue answers with a clear, non-retried error.
    let err = complete(&*provider, &ask("q")).await.0.unwrap_err();
    assert!(err.message.contains("no reply scripted"), "{}", err.message);
}

#[tokio::test]
async fn routes_can_match_a_header() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text("default"))
            .route(Route::header("x-api-key", "child-key").reply(Reply::text("for the child"))),
    );
    let child = ProviderConfig {
        kind: ProviderKind::Anthropic,
        base_url: server.base_url_anthropic(),
        api_key: Some("child-key".into()),
        model: "m".into(),
        max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        reasoning_effort: None,
        fallbacks: Vec::new(),
        tuning: fast(),
        socket: None,
    };
    assert_eq!(
        complete(&*build(&child, "run_provider_test").unwrap(), &ask("q"))
            .await
            .0
            .unwrap()
            .text,
        "for the child"
    );
    assert_eq!(
        complete(&*provider(ProviderKind::Anthropic, &server), &ask("q"))
            .await
            .0
            .unwrap()
            .text,
        "default"
    );
}

#[test]
fn building_with_an_invalid_base_url_is_a_config_error() {
    let config = ProviderConfig {
        kind: ProviderKind::Openai,
        base_url: "localhost:8080/v1".into(),
        api_key: None,
        model: "m".into(),
        max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        reasoning_effort: None,
        fallbacks: Vec::new(),
        tuning: Tuning::default(),
        socket: None,
    };
    assert!(matches!(
        build(&config, "run_provider_test"),
        Err(ConfigError::InvalidBaseUrl { .. })
    ));
}

#[tokio::test]
async fn an_in_band_error_before_content_is_retried() {
    for kind in BOTH {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::stream_error("Overloaded"))
                .reply(Reply::text("recovered")),
        );
        let done = complete(&*provider(kind, &server), &ask("q")).await.0;
        assert_eq!(done.unwrap().text, "recovered", "{kind:?}");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn hitting_the_output_limit_is_reported_as_max_tokens() {
    for kind in BOTH {
        let server = FakeModel::start(Script::new().reply(Reply::text("cut short").max_tokens()));
        let done = complete(&*provider(kind, &server), &ask("q"))
            .await
            .0
            .unwrap();
        assert_eq!(done.stop, StopReason::MaxTokens, "{kind:?}");
    }
}

// Through the binary: what a user of `zero exec` sees.

/// Runs `cmd` with `-o stream-json` and checks it ends with `code` within [`DEADLINE`] (far
/// below the long timeout a test sets to show it is not the one that ended the run); returns
/// its events.
fn run_stream(cmd: &mut assert_cmd::Command, code: i32) -> Vec<serde_json::Value> {
    finished_stream(cmd.args(["-o", "stream-json"]), code)
}

/// The one `error` event of a failed run.
fn error_event(events: &[serde_json::Value]) -> &serde_json::Value {
    let errors: Vec<_> = events.iter().filter(|e| e["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    errors[0]
}

#[test]
fn an_error_status_whose_body_never_comes_is_bounded_by_the_first_byte_timeout() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::error_without_body(503, 500))
                .reply(Reply::error_without_body(503, 500)),
        );
        let mut cmd = assert_cmd::Command::from_std(zero_std_with(&server, wire));
        cmd.env("ZERO_STREAM_IDLE_TIMEOUT_MS", "60000")
            .env("ZERO_FIRST_BYTE_TIMEOUT_MS", "500")
            .env("ZERO_MAX_ATTEMPTS", "2")
            .args(["exec", "hi"]);
        let events = run_stream(&mut cmd, 3);
        let error = error_event(&events);
        assert_eq!(error["code"], "unavailable", "{wire:?}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("HTTP 503"), "{wire:?}: {message}");
        assert!(
            message.contains("gave up after 2 attempts"),
            "{wire:?}: {message}"
        );
        assert_eq!(server.requests().len(), 2, "{wire:?}");
    }
}

#[test]
fn a_200_that_is_not_an_event_stream_is_explained_and_not_retried() {
    let page = "<!doctype html><html><head><title>Sign in – Example Proxy</title></head>\
                <body>Please sign in</body></html>";
    let cases = [
        (
            Reply::document("text/html; charset=utf-8", page),
            vec![
                "HTML page",
                "base URL is probably wrong",
                "Sign in – Example Proxy",
            ],
        ),
        (
            Reply::document(
                "application/json",
                r#"{"error":{"message":"upstream model is offline"}}"#,
            ),
            vec!["JSON error", "upstream model is offline"],
        ),
        (
            Reply::document("application/json", r#"{"choices":[]}"#),
            vec!["one JSON document", "does it support streaming?"],
        ),
        (
            Reply::document("text/plain", "service moved"),
            vec!["text/plain", "not an event stream", "service moved"],
        ),
    ];
    for (reply, needles) in cases {
        for wire in [Wire::OpenAi, Wire::Anthropic] {
            let server = FakeModel::start(Script::new().reply(reply.clone()));
            let mut cmd = assert_cmd::Command::from_std(zero_std_with(&server, wire));
            let events = run_stream(cmd.args(["exec", "hi"]), 3);
            let error = error_event(&events);
            assert_eq!(error["code"], "protocol", "{wire:?}: {error}");
            assert_eq!(error["retryable"], false, "{wire:?}: {error}");
            let message = error["message"].as_str().unwrap();
            for needle in &needles {
                assert!(message.contains(needle), "{wire:?}: {message}");
            }
            assert_eq!(server.requests().len(), 1, "{wire:?}: retried");
        }
    }
}
