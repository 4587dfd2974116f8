//! The Anthropic Messages wire.
//!
//! Differences from Chat Completions that shape this module: the system prompt is a field, not
//! a message; tool results are `tool_result` blocks inside a *user* message (all results of one
//! turn in one message); tool inputs are JSON objects, not strings; and the response streams as
//! content blocks, each started, filled by deltas and stopped, with usage split between
//! `message_start` (input) and `message_delta` (output).

use std::borrow::Cow;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::assembly::{Assembly, Settles};
use super::fault::Fault;
use super::http::{Asks, Decoder, Flow, IMAGE_NOT_SENT, Wire};
use super::replay;
use super::sse::SseEvent;
use super::{Image, Message, ReasoningEffort, Request, StopReason, StreamDelta, ThinkingBlock};

/// The API version this wire speaks.
const API_VERSION: &str = "2023-06-01";

/// The Messages endpoint under one base URL.
#[derive(Debug, Clone)]
pub(crate) struct Anthropic {
    url: String,
    /// The output cap of every response, sent as `max_tokens` (which the API requires).
    max_output_tokens: u32,
    /// The reasoning effort, sent as extended thinking, when the user chose one.
    effort: Option<ReasoningEffort>,
}

/// The body field that carries the reasoning effort.
const REASONING_FIELD: &str = "thinking";

impl Anthropic {
    /// The wire for `base_url` (e.g. `https://api.anthropic.com`); requests go to
    /// `{base_url}/v1/messages`, or `{base_url}/messages` when the base already ends in `/v1`.
    /// Each response is capped at `max_output_tokens`.
    pub(crate) fn new(base_url: &str, max_output_tokens: u32) -> Self {
        let base = base_url.trim_end_matches('/');
        let url = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        Anthropic {
            url,
            max_output_tokens,
            effort: None,
        }
    }

    /// The wire sending `effort` as extended thinking:
    /// `{"type": "enabled", "budget_tokens": N}`, N from the level
    /// ([`ReasoningEffort::thinking_budget`]). The budget must be below `max_tokens`, and
    /// thinking spends from it, so such a request's `max_tokens` is the output cap plus the
    /// budget: the answer keeps all of its cap whatever the thinking takes.
    pub(crate) fn with_reasoning(self, effort: Option<ReasoningEffort>) -> Self {
        Anthropic { effort, ..self }
    }
}

impl Wire for Anthropic {
    type Decoder = AnthropicDecoder;

    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn headers(
        &self,
        api_key: Option<&str>,
    ) -> Result<HeaderMap, reqwest::header::InvalidHeaderValue> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(key)?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        Ok(headers)
    }

    fn reasoning_field(&self) -> Option<&'static str> {
        self.effort.map(|_| REASONING_FIELD)
    }

    fn image_field(&self) -> &'static str {
        "image"
    }

    fn body(&self, model: &str, request: &Request, asks: Asks) -> Bytes {
        let thinking = self
            .effort
            .filter(|_| asks.reasoning && thinking_allowed(&request.messages))
            .map(|effort| Thinking {
                kind: "enabled",
                budget_tokens: effort.thinking_budget(),
            });
        let mut tools: Vec<ToolDefinition<'_>> = request
            .tools
            .iter()
            .map(|tool| ToolDefinition {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.input_schema,
                cache_control: None,
            })
            .collect();
        let mut messages = turns(&request.messages, thinking.is_some(), asks.images);
        // Cache breakpoints (three of the four the API allows): after the tools, after the
        // system prompt, and on the newest content, so each turn reads everything before its
        // own new messages from the prompt cache instead of paying for it again.
        if let Some(last) = tools.last_mut() {
            last.cache_control = Some(EPHEMERAL);
        }
        if let Some(last) = messages.last_mut().and_then(|turn| turn.content.last_mut()) {
            last.cache_control = Some(EPHEMERAL);
        }
        let system = text_block(&request.system)
            .map(|block| Cached {
                block,
                cache_control: Some(EPHEMERAL),
            })
            .into_iter()
            .collect();
        let budget = thinking
            .as_ref()
            .map_or(0, |thinking| thinking.budget_tokens);
        let body = MessagesBody {
            model,
            max_tokens: self.max_output_tokens.saturating_add(budget),
            stream: true,
            thinking,
            system,
            messages,
            tools,
        };
        super::http::json_body(&body)
    }

    fn decoder(&self) -> AnthropicDecoder {
        AnthropicDecoder
    }
}

/// A Messages request, borrowing the conversation: serialised straight to bytes, never built
/// as a `Value` tree (see docs/PERFORMANCE.md).
#[derive(Serialize)]
struct MessagesBody<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Cached<'a>>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDefinition<'a>>,
}

/// Extended thinking, switched on with a budget of tokens.
#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct ToolDefinition<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// A prompt-cache breakpoint: the request up to and including the marked part is cached.
#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The only cache type the API has: kept for about five minutes after its last use.
const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// One message of the Messages conversation: a role and its content blocks.
#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Cached<'a>>,
}

/// A content block, with a cache breakpoint when it ends a cached prefix.
#[derive(Serialize)]
struct Cached<'a> {
    #[serde(flatten)]
    block: ContentBlock<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: Cow<'a, str>,
        input: &'a RawValue,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        content: ResultContent<'a>,
        is_error: bool,
    },
    Image {
        source: ImageSource<'a>,
    },
}

/// A tool result's content: its text alone, or blocks (the text and the images) when the
/// tool returned images, which the API takes inside the `tool_result` itself.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<ContentBlock<'a>>),
}

/// An image's `source`: the file base64-encoded, written straight into the body.
#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'static str,
    #[serde(serialize_with = "base64_data")]
    data: &'a Image,
}

fn base64_data<S: serde::Serializer>(image: &&Image, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&image.base64())
}

/// `images` as image blocks, or the note that stands in for each when they are not `sent`.
fn image_blocks(images: &[Image], sent: bool) -> impl Iterator<Item = ContentBlock<'_>> {
    images.iter().map(move |image| match sent {
        true => ContentBlock::Image {
            source: ImageSource {
                kind: "base64",
                media_type: image.format.media_type(),
                data: image,
            },
        },
        false => ContentBlock::Text {
            text: IMAGE_NOT_SENT,
        },
    })
}

/// The conversation as Messages: each message becomes content blocks, and consecutive messages
/// of one role are merged, which puts all tool results of a turn into one user message (the
/// API requires that) and keeps roles alternating. Empty text is dropped: the API rejects
/// empty text blocks. With `thinking` on, an assistant turn's thinking blocks come first in
/// it, as they came (the API requires them before the `tool_use` blocks they led to); with
/// it off they are left out. Images are sent, or noted when the server refused them
/// (`images_sent`).
fn turns(messages: &[Message], thinking: bool, images_sent: bool) -> Vec<Turn<'_>> {
    let mut turns: Vec<Turn<'_>> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            // The images first, then the text (what the API's guide advises).
            Message::User { content, images } => (
                "user",
                image_blocks(images, images_sent)
                    .chain(text_block(content))
                    .collect(),
            ),
            Message::Assistant {
                text,
                tool_calls,
                thinking: blocks_of_thinking,
            } => {
                let kept = blocks_of_thinking.iter().filter(|_| thinking);
                let mut blocks: Vec<ContentBlock<'_>> = kept.map(thinking_block).collect();
                blocks.extend(text_block(text));
                blocks.extend(tool_calls.iter().map(|call| ContentBlock::ToolUse {
                    id: replay::call_id(&call.id),
                    name: replay::tool_name(&call.name),
                    input: replay::arguments(&call.arguments),
                }));
                ("assistant", blocks)
            }
            Message::ToolResult {
                call_id,
                output,
                is_error,
                images,
                ..
            } => (
                "user",
                vec![ContentBlock::ToolResult {
                    tool_use_id: replay::call_id(call_id),
                    content: match images.is_empty() {
                        true => ResultContent::Text(output),
                        false => ResultContent::Blocks(
                            text_block(output)
                                .into_iter()
                                .chain(image_blocks(images, images_sent))
                                .collect(),
                        ),
                    },
                    is_error: *is_error,
                }],
            ),
        };
        let blocks = blocks.into_iter().map(|block| Cached {
            block,
            cache_control: None,
        });
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => {
                let content: Vec<Cached<'_>> = blocks.collect();
                if !content.is_empty() {
                    turns.push(Turn { role, content });
                }
            }
        }
    }
    turns
}

/// Whether extended thinking may be on for a request of `messages`. The API requires the
/// thinking blocks of every assistant turn of the tool loop a request continues (the turns
/// since the last user message); a loop that began without them — calls zero made for the
/// model before its first request, a turn from a run that did not think — goes on without
/// thinking, which comes back with the next user message.
fn thinking_allowed(messages: &[Message]) -> bool {
    messages
        .iter()
        .rev()
        .take_while(|message| !matches!(message, Message::User { .. }))
        .all(|message| match message {
            Message::Assistant {
                tool_calls,
                thinking,
                ..
            } => tool_calls.is_empty() || !thinking.is_empty(),
            Message::User { .. } | Message::ToolResult { .. } => true,
        })
}

/// A thinking block as it came.
fn thinking_block(block: &ThinkingBlock) -> ContentBlock<'_> {
    match block {
        ThinkingBlock::Thinking {
            thinking,
            signature,
        } => ContentBlock::Thinking {
            thinking,
            signature,
        },
        ThinkingBlock::RedactedThinking { data } => ContentBlock::RedactedThinking { data },
    }
}

fn text_block(text: &str) -> Option<ContentBlock<'_>> {
    (!text.is_empty()).then_some(ContentBlock::Text { text })
}

/// One streamed event, by its `type`. Unknown types are ignored, as the API asks.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartedMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        usage: Option<EventUsage>,
    },
    MessageStop,
    Error {
        error: ApiError,
    },
    /// `ping`, `content_block_stop` and future event types carry nothing zero needs.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct StartedMessage {
    usage: Option<EventUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    SignatureDelta {
        signature: String,
    },
    /// Future delta types.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

/// Token counts as the API reports them. Input is split into fresh and cached tokens; zero
/// counts all of them as prompt tokens, since all of them filled the context, and reports the
/// cached ones apart too.
#[derive(Debug, Deserialize)]
struct EventUsage {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct ApiError {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<String>,
}

/// Reads Messages events. Stateless: every event names its block index, which is also the
/// tool call's position.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder;

impl AnthropicDecoder {
    /// Applies reported counts; later reports (cumulative) replace earlier ones. The input
    /// count settles the prompt's; the output count settles the output's only `at_end`
    /// (`message_delta`): at the start it is a placeholder.
    fn usage(assembly: &mut Assembly, usage: EventUsage, at_end: bool) {
        let output_final = at_end && usage.output_tokens.is_some();
        let settles = match (usage.input_tokens.is_some(), output_final) {
            (true, true) => Settles::Both,
            (true, false) => Settles::Input,
            (false, true) => Settles::Output,
            (false, false) => Settles::Neither,
        };
        let total = assembly.usage_mut(settles);
        if let Some(input) = usage.input_tokens {
            let written = usage.cache_creation_input_tokens.unwrap_or(0);
            let read = usage.cache_read_input_tokens.unwrap_or(0);
            total.prompt_tokens = input + written + read;
            total.cache_write_tokens = written;
            total.cached_input_tokens = read;
        }
        if let Some(output) = usage.output_tokens {
            total.completion_tokens = output;
        }
    }
}

impl Decoder for AnthropicDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        assembly: &mut Assembly,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<Flow, Fault> {
        match event.json::<Event>().map_err(|err| Fault::from_sse(&err))? {
            Event::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    Self::usage(assembly, usage, false);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                Block::Text { text } => assembly.text(&text, on_delta),
                Block::Thinking {
                    thinking,
                    signature,
                } => assembly.thinking_block(
                    index,
                    ThinkingBlock::Thinking {
                        thinking,
                        signature,
                    },
                    on_delta,
                ),
                Block::RedactedThinking { data } => assembly.thinking_block(
                    index,
                    ThinkingBlock::RedactedThinking { data },
                    on_delta,
                ),
                Block::ToolUse { id, name } => {
                    assembly.tool_call(index, Some(&id), Some(&name), "")
                }
                Block::Other => {}
            },
            Event::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => assembly.text(&text, on_delta),
                BlockDelta::ThinkingDelta { thinking } => {
                    assembly.thinking_text(index, &thinking, on_delta)
                }
                BlockDelta::SignatureDelta { signature } => {
                    assembly.thinking_signature(index, &signature)
                }
                BlockDelta::InputJsonDelta { partial_json } => {
                    assembly.tool_call(index, None, None, &partial_json)
                }
                BlockDelta::Other => {}
            },
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    assembly.stop(stop_reason(reason));
                }
                if let Some(usage) = usage {
                    Self::usage(assembly, usage, true);
                }
            }
            Event::MessageStop => return Ok(Flow::Done),
            Event::Error { error } => {
                return Err(Fault::from_stream_error(
                    error.kind.as_deref(),
                    error.message.as_deref().unwrap_or("no details"),
                ));
            }
            Event::Other => {}
        }
        Ok(Flow::More)
    }
}

fn stop_reason(reason: String) -> StopReason {
    match reason.as_str() {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        _ => StopReason::Other(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{Completion, ErrorClass, ToolCall, ToolSpec, Usage};
    use serde_json::json;

    fn decode(events: &[&str]) -> Result<(Completion, Vec<StreamDelta>, Flow), Fault> {
        let mut decoder = AnthropicDecoder;
        let mut assembly = Assembly::new(0);
        let mut deltas = Vec::new();
        let mut flow = Flow::More;
        for data in events {
            let event = SseEvent {
                event: String::new(),
                data: (*data).to_owned(),
            };
            flow = decoder.event(&event, &mut assembly, &mut |delta| deltas.push(delta))?;
        }
        Ok((assembly.finish(), deltas, flow))
    }

    #[test]
    fn text_thinking_and_usage_blocks() {
        let (done, deltas, flow) = decode(&[
            r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"!"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        assert_eq!(flow, Flow::Done);
        assert_eq!(done.text, "Hi!");
        assert_eq!(done.stop, StopReason::EndTurn);
        assert_eq!(
            done.usage,
            Some(Usage {
                prompt_tokens: 15,
                completion_tokens: 7,
                cached_input_tokens: 5,
                ..Usage::default()
            })
        );
        assert_eq!(
            deltas,
            vec![
                StreamDelta::Reasoning("hmm".into()),
                StreamDelta::Text("Hi".into()),
                StreamDelta::Text("!".into())
            ]
        );
    }

    #[test]
    fn tool_use_blocks_assemble_partial_json() {
        let (done, _, _) = decode(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Looking."}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":".rs\"}"}}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"plan","input":{}}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
        ])
        .unwrap();
        assert_eq!(done.text, "Looking.");
        assert_eq!(done.stop, StopReason::ToolUse);
        assert_eq!(
            done.tool_calls,
            vec![
                ToolCall {
                    id: "toolu_1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path": "a.rs"}"#.into()
                },
                ToolCall {
                    id: "toolu_2".into(),
                    name: "plan".into(),
                    arguments: "{}".into()
                },
            ]
        );
    }

    #[test]
    fn error_event_is_classified_and_unknown_events_ignored() {
        let fault = decode(&[
            r#"{"type":"some_future_event","x":1}"#,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ])
        .unwrap_err();
        assert_eq!(fault.class, ErrorClass::Unavailable);
        assert!(fault.detail.contains("Overloaded"));
    }

    #[test]
    fn malformed_event_is_a_protocol_fault() {
        assert_eq!(
            decode(&["{\"type\":"]).unwrap_err().class,
            ErrorClass::Protocol
        );
    }

    #[test]
    fn url_does_not_double_v1() {
        assert_eq!(
            Anthropic::new("https://api.anthropic.com", 1).url(),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            Anthropic::new("http://127.0.0.1:9/v1/", 1).url(),
            "http://127.0.0.1:9/v1/messages"
        );
    }

    #[test]
    fn headers_carry_version_and_key() {
        let headers = Anthropic::new("http://h", 1)
            .headers(Some("k-123"))
            .unwrap();
        assert_eq!(headers["x-api-key"], "k-123");
        assert_eq!(headers["anthropic-version"], API_VERSION);
        assert!(headers.get("authorization").is_none());
    }

    #[test]
    fn request_body_merges_tool_results_and_repairs_bad_arguments() {
        let request = Request {
            system: "sys".into(),
            messages: vec![
                Message::User {
                    content: "go".into(),
                    images: Vec::new(),
                },
                Message::Assistant {
                    thinking: Vec::new(),
                    text: String::new(),
                    tool_calls: vec![
                        ToolCall {
                            id: "t1".into(),
                            name: "ls".into(),
                            arguments: r#"{"dir":"."}"#.into(),
                        },
                        ToolCall {
                            id: "t2".into(),
                            name: "cat".into(),
                            arguments: "{broken".into(),
                        },
                    ],
                },
                Message::ToolResult {
                    call_id: "t1".into(),
                    name: "ls".into(),
                    output: "a".into(),
                    is_error: false,
                    images: Vec::new(),
                },
                Message::ToolResult {
                    call_id: "t2".into(),
                    name: "cat".into(),
                    output: "bad args".into(),
                    is_error: true,
                    images: Vec::new(),
                },
                Message::Assistant {
                    thinking: Vec::new(),
                    text: "done".into(),
                    tool_calls: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "list".into(),
                input_schema: json!({"type": "object"}),
            }],
            answer_format: None,
        };
        let body: Value = serde_json::from_slice(&Anthropic::new("http://h", 321).body(
            "claude",
            &request,
            Asks::NONE,
        ))
        .unwrap();
        assert_eq!(
            body,
            json!({
                "model": "claude",
                "max_tokens": 321,
                "stream": true,
                "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "go"}]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "t1", "name": "ls", "input": {"dir": "."}},
                        {"type": "tool_use", "id": "t2", "name": "cat", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "a", "is_error": false},
                        {"type": "tool_result", "tool_use_id": "t2", "content": "bad args", "is_error": true},
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "done", "cache_control": {"type": "ephemeral"}},
                    ]},
                ],
                "tools": [{
                    "name": "ls", "description": "list", "input_schema": {"type": "object"},
                    "cache_control": {"type": "ephemeral"},
                }],
            })
        );
    }

    #[test]
    fn thinking_blocks_are_kept_whole_with_their_signatures_and_redacted_ones_as_they_came() {
        let (done, deltas, _) = decode(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"look "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"first"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"opaque"}}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"ls"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
        ])
        .unwrap();
        assert_eq!(
            done.thinking,
            vec![
                ThinkingBlock::Thinking {
                    thinking: "look first".into(),
                    signature: "sig==".into()
                },
                ThinkingBlock::RedactedThinking {
                    data: "opaque".into()
                },
            ]
        );
        assert_eq!(
            deltas,
            vec![
                StreamDelta::Reasoning("look ".into()),
                StreamDelta::Reasoning("first".into())
            ]
        );
        assert_eq!(done.tool_calls.len(), 1);
    }

    #[test]
    fn thinking_goes_out_with_its_budget_and_the_blocks_before_the_calls_only_while_it_is_on() {
        let request = Request {
            system: String::new(),
            messages: vec![
                Message::User {
                    content: "go".into(),
                    images: Vec::new(),
                },
                Message::Assistant {
                    text: "Looking.".into(),
                    tool_calls: vec![ToolCall {
                        id: "t1".into(),
                        name: "ls".into(),
                        arguments: "{}".into(),
                    }],
                    thinking: vec![
                        ThinkingBlock::Thinking {
                            thinking: "hmm".into(),
                            signature: "sig".into(),
                        },
                        ThinkingBlock::RedactedThinking { data: "x".into() },
                    ],
                },
                Message::ToolResult {
                    call_id: "t1".into(),
                    name: "ls".into(),
                    output: "a".into(),
                    is_error: false,
                    images: Vec::new(),
                },
            ],
            tools: vec![],
            answer_format: None,
        };
        let wire = Anthropic::new("http://h", 1000).with_reasoning(Some(ReasoningEffort::Minimal));
        assert_eq!(wire.reasoning_field(), Some("thinking"));
        let body = |reasoning| -> Value {
            let asks = Asks {
                constrain: false,
                reasoning,
                ..Asks::NONE
            };
            serde_json::from_slice(&wire.body("claude", &request, asks)).unwrap()
        };
        let on = body(true);
        assert_eq!(
            on["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        assert_eq!(on["max_tokens"], 1000 + 1024);
        assert_eq!(
            on["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "x"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
            ])
        );
        let off = body(false);
        assert!(off.get("thinking").is_none(), "{off}");
        assert_eq!(off["max_tokens"], 1000);
        assert_eq!(off["messages"][1]["content"][0]["type"], "text");
        assert_eq!(Anthropic::new("http://h", 1).reasoning_field(), None);
    }

    #[test]
    fn a_tool_loop_that_began_without_thinking_goes_on_without_it() {
        let call = ToolCall {
            id: "t1".into(),
            name: "ls".into(),
            arguments: "{}".into(),
        };
        let user = Message::User {
            content: "go".into(),
            images: Vec::new(),
        };
        let result = Message::ToolResult {
            call_id: "t1".into(),
            name: "ls".into(),
            output: "a".into(),
            is_error: false,
            images: Vec::new(),
        };
        let turn = |thinking: Vec<ThinkingBlock>| Message::Assistant {
            text: String::new(),
            tool_calls: vec![call.clone()],
            thinking,
        };
        let thought = vec![ThinkingBlock::RedactedThinking { data: "x".into() }];
        let wire = Anthropic::new("http://h", 10).with_reasoning(Some(ReasoningEffort::Low));
        let thinks = |messages: Vec<Message>| -> bool {
            let request = Request {
                system: String::new(),
                messages,
                tools: vec![],
                answer_format: None,
            };
            let asks = Asks {
                constrain: false,
                reasoning: true,
                ..Asks::NONE
            };
            let body: Value = serde_json::from_slice(&wire.body("claude", &request, asks)).unwrap();
            body.get("thinking").is_some()
        };
        assert!(thinks(vec![user.clone()]));
        assert!(thinks(vec![
            user.clone(),
            turn(thought.clone()),
            result.clone()
        ]));
        assert!(!thinks(vec![user.clone(), turn(vec![]), result.clone()]));
        // A new user message begins a new loop, with thinking.
        assert!(thinks(vec![user.clone(), turn(vec![]), result, user]));
    }
}
