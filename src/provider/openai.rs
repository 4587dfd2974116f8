//! The OpenAI Chat Completions wire, as spoken by OpenAI and the many servers that copy it
//! (llama.cpp, Ollama, vLLM, OpenRouter, LM Studio, ...).
//!
//! The copies differ in small ways this module tolerates: `content: null` or `""` next to tool
//! calls, reasoning as `reasoning_content` or `reasoning`, tool-call ids sent late or never,
//! a missing `index`, extra fields such as llama.cpp's `timings`, an `{"error": ...}` chunk in
//! place of a stream failure, and streams that end without `[DONE]`.

use std::borrow::Cow;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::assembly::{Assembly, Settles};
use super::fault::Fault;
use super::http::{Asks, Decoder, Flow, IMAGE_NOT_SENT, Wire};
use super::replay;
use super::sse::SseEvent;
use super::{Image, Message, ReasoningEffort, Request, StopReason, StreamDelta, ToolSpec};

/// The Chat Completions endpoint under one base URL.
#[derive(Debug, Clone)]
pub(crate) struct OpenAi {
    url: String,
    /// The output cap of every response, in the field this endpoint honours.
    cap: OutputCap,
    /// `prompt_cache_key`, sent to OpenAI's own API only: it routes the requests of one
    /// conversation to the same cache, so each turn reads the last one's prefix from it.
    /// Copies of the API reject fields they do not know, or cache by prefix anyway.
    cache_key: Option<String>,
    /// Whether this is OpenAI's own API, whose models keep to a `response_format` schema and
    /// still call tools; servers that copy the API (llama.cpp, vLLM) decode only the schema's
    /// JSON once given one, so they get it only when the answer is due.
    official: bool,
    /// `reasoning_effort`, when the user chose one.
    effort: Option<ReasoningEffort>,
}

/// The body field that carries the reasoning effort.
const REASONING_FIELD: &str = "reasoning_effort";

/// How a Chat Completions endpoint is told the most tokens one response may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutputCap {
    /// `max_completion_tokens`: OpenAI's own API, where `max_tokens` is deprecated and
    /// refused by its reasoning models.
    MaxCompletionTokens(u32),
    /// `max_tokens`: what llama.cpp, vLLM, Ollama, OpenRouter and other copies of the API
    /// read (several ignore `max_completion_tokens`).
    MaxTokens(u32),
}

/// The host of OpenAI's own API.
const OPENAI_HOST: &str = "api.openai.com";

impl OpenAi {
    /// The wire for `base_url` (e.g. `https://api.openai.com/v1`); requests go to
    /// `{base_url}/chat/completions`. Each response is capped at `max_output_tokens`; the
    /// requests of one conversation share `cache_key`.
    pub(crate) fn new(base_url: &str, max_output_tokens: u32, cache_key: &str) -> Self {
        let official =
            reqwest::Url::parse(base_url).is_ok_and(|url| url.host_str() == Some(OPENAI_HOST));
        let cap = if official {
            OutputCap::MaxCompletionTokens(max_output_tokens)
        } else {
            OutputCap::MaxTokens(max_output_tokens)
        };
        OpenAi {
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            cap,
            cache_key: official.then(|| cache_key.to_string()),
            official,
            effort: None,
        }
    }

    /// The wire sending `effort` as `reasoning_effort`, as Chat Completions documents it
    /// (`minimal` … `xhigh`; OpenAI-compatible servers that reason take it too, and one that
    /// refuses it is asked without it).
    pub(crate) fn with_reasoning(self, effort: Option<ReasoningEffort>) -> Self {
        OpenAi { effort, ..self }
    }
}

impl Wire for OpenAi {
    type Decoder = OpenAiDecoder;

    fn name(&self) -> &'static str {
        "openai"
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn headers(
        &self,
        api_key: Option<&str>,
    ) -> Result<HeaderMap, reqwest::header::InvalidHeaderValue> {
        let mut headers = HeaderMap::new();
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}"))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }

    fn constrains(&self, request: &Request) -> bool {
        request
            .answer_format
            .as_ref()
            .is_some_and(|format| self.official || format.answer_now)
    }

    fn reasoning_field(&self) -> Option<&'static str> {
        self.effort.map(|_| REASONING_FIELD)
    }

    fn image_field(&self) -> &'static str {
        "image_url"
    }

    fn body(&self, model: &str, request: &Request, asks: Asks) -> Bytes {
        let system = (!request.system.is_empty()).then(|| ChatMessage::System {
            content: &request.system,
        });
        let (max_tokens, max_completion_tokens) = match self.cap {
            OutputCap::MaxTokens(tokens) => (Some(tokens), None),
            OutputCap::MaxCompletionTokens(tokens) => (None, Some(tokens)),
        };
        let body = ChatBody {
            model,
            max_tokens,
            max_completion_tokens,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            prompt_cache_key: self.cache_key.as_deref(),
            reasoning_effort: self
                .effort
                .filter(|_| asks.reasoning)
                .map(ReasoningEffort::word),
            messages: system
                .into_iter()
                .chain(chat_messages(&request.messages, asks.images))
                .collect(),
            tools: request.tools.iter().map(ChatTool::from).collect(),
            response_format: request
                .answer_format
                .as_ref()
                .filter(|_| asks.constrain)
                .map(|format| ResponseFormat {
                    kind: "json_schema",
                    json_schema: JsonSchemaFormat {
                        name: "final_answer",
                        strict: self.official && strict_compatible(&format.schema),
                        schema: &format.schema,
                    },
                }),
        };
        super::http::json_body(&body)
    }

    fn decoder(&self) -> OpenAiDecoder {
        OpenAiDecoder::default()
    }
}

/// A Chat Completions request, borrowing the conversation: serialised straight to bytes,
/// never built as a `Value` tree (see docs/PERFORMANCE.md).
#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
}

/// `response_format` asking for JSON that satisfies a schema.
#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'static str,
    strict: bool,
    schema: &'a Value,
}

/// Whether OpenAI's strict mode takes `schema` as it is: an object at the top, and every
/// object closed (`additionalProperties: false`) with every property required. A schema
/// that is not gets the non-strict mode, which guides rather than guarantees; the agent
/// loop's check decides either way, and a schema the API refuses is sent again without.
fn strict_compatible(schema: &Value) -> bool {
    fn closed(schema: &Value) -> bool {
        let Some(object) = schema.as_object() else {
            return true;
        };
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            let required: Vec<&str> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if object.get("additionalProperties") != Some(&Value::Bool(false))
                || properties
                    .keys()
                    .any(|name| !required.contains(&name.as_str()))
                || !properties.values().all(closed)
            {
                return false;
            }
        }
        let items = object.get("items").into_iter();
        let alternatives = object.get("anyOf").and_then(Value::as_array).into_iter();
        let definitions = ["$defs", "definitions"]
            .into_iter()
            .filter_map(|key| object.get(key)?.as_object());
        items
            .chain(alternatives.flatten())
            .chain(definitions.flat_map(|map| map.values()))
            .all(closed)
    }
    schema.get("type") == Some(&Value::String("object".into())) && closed(schema)
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` rather than "" when the turn is only tool calls: the reference API's shape.
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: Cow<'a, str>,
        content: &'a str,
    },
}

/// A user message's content: its text alone, or content parts when it carries images.
#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<ContentPart<'a>>),
}

/// A part of a user message's content.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl<'a> },
}

/// An image as a `data:` URL, base64 written straight into the body.
#[derive(Serialize)]
struct ImageUrl<'a> {
    #[serde(serialize_with = "data_url")]
    url: &'a Image,
}

fn data_url<S: serde::Serializer>(image: &&Image, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!(
        "data:{};base64,{}",
        image.format.media_type(),
        image.base64()
    ))
}

/// `images` as content parts, or the note that stands in for each when they are not `sent`.
fn image_parts(images: &[Image], sent: bool) -> impl Iterator<Item = ContentPart<'_>> {
    images.iter().map(move |image| match sent {
        true => ContentPart::ImageUrl {
            image_url: ImageUrl { url: image },
        },
        false => ContentPart::Text {
            text: Cow::Borrowed(IMAGE_NOT_SENT),
        },
    })
}

/// The conversation as chat messages. A `tool` message's content is text only on this wire,
/// so the images tool results carry follow them in one user message, after the last of a
/// turn's results (a user message between them would part a call from its result, which the
/// API refuses), each image after a line naming the call it came from.
fn chat_messages(messages: &[Message], images_sent: bool) -> Vec<ChatMessage<'_>> {
    let mut chat = Vec::with_capacity(messages.len());
    let mut pending: Vec<ContentPart<'_>> = Vec::new();
    for message in messages {
        if !matches!(message, Message::ToolResult { .. }) && !pending.is_empty() {
            chat.push(ChatMessage::User {
                content: UserContent::Parts(std::mem::take(&mut pending)),
            });
        }
        chat.push(ChatMessage::of(message, images_sent));
        if let Message::ToolResult {
            call_id,
            name,
            images,
            ..
        } = message
            && !images.is_empty()
        {
            pending.push(ContentPart::Text {
                text: Cow::Owned(format!("The image {name} returned (call {call_id}):")),
            });
            pending.extend(image_parts(images, images_sent));
        }
    }
    if !pending.is_empty() {
        chat.push(ChatMessage::User {
            content: UserContent::Parts(pending),
        });
    }
    chat
}

impl<'a> ChatMessage<'a> {
    /// `message` on this wire, its images sent or noted (`images_sent`).
    fn of(message: &'a Message, images_sent: bool) -> Self {
        match message {
            Message::User { content, images } if images.is_empty() => ChatMessage::User {
                content: UserContent::Text(content),
            },
            // The images first, then the text (what both APIs' guides advise).
            Message::User { content, images } => ChatMessage::User {
                content: UserContent::Parts(
                    image_parts(images, images_sent)
                        .chain((!content.is_empty()).then_some(ContentPart::Text {
                            text: Cow::Borrowed(content),
                        }))
                        .collect(),
                ),
            },
            // Only Anthropic's wire sends its reasoning back.
            Message::Assistant {
                text, tool_calls, ..
            } => ChatMessage::Assistant {
                content: (!text.is_empty() || tool_calls.is_empty()).then_some(text.as_str()),
                tool_calls: tool_calls
                    .iter()
                    .map(|call| ChatToolCall {
                        id: replay::call_id(&call.id),
                        kind: "function",
                        function: ChatFunctionCall {
                            name: replay::tool_name(&call.name),
                            arguments: replay::arguments(&call.arguments).get(),
                        },
                    })
                    .collect(),
            },
            Message::ToolResult {
                call_id, output, ..
            } => ChatMessage::Tool {
                tool_call_id: replay::call_id(call_id),
                content: output,
            },
        }
    }
}

#[derive(Serialize)]
struct ChatToolCall<'a> {
    id: Cow<'a, str>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunctionCall<'a>,
}

#[derive(Serialize)]
struct ChatFunctionCall<'a> {
    name: Cow<'a, str>,
    /// The model's own JSON text, sent back as it came when it is a JSON object, else `{}`
    /// (see [`replay::arguments`]): llama.cpp answers HTTP 500 to anything else.
    arguments: &'a str,
}

#[derive(Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

impl<'a> From<&'a ToolSpec> for ChatTool<'a> {
    fn from(tool: &'a ToolSpec) -> Self {
        ChatTool {
            kind: "function",
            function: ChatFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.input_schema,
            },
        }
    }
}

#[derive(Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// Reads an absent or `null` field as its default: the copies of the API send `null` where the
/// reference omits a field (`"tool_calls": null`, `"choices": null`).
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// One streamed chunk; every field optional because the copies of the API disagree.
#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default, deserialize_with = "null_as_default")]
    choices: Vec<Choice>,
    usage: Option<ChunkUsage>,
    error: Option<ChunkError>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default, deserialize_with = "null_as_default")]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    index: Option<usize>,
    id: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    function: FunctionDelta,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChunkUsage {
    #[serde(default, deserialize_with = "null_as_default")]
    prompt_tokens: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    completion_tokens: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    prompt_tokens_details: PromptDetails,
    #[serde(default, deserialize_with = "null_as_default")]
    completion_tokens_details: CompletionDetails,
}

/// The breakdown of `prompt_tokens` (absent from most compatible servers).
#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default, deserialize_with = "null_as_default")]
    cached_tokens: u64,
}

/// The breakdown of `completion_tokens` (reasoning models only).
#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    #[serde(default, deserialize_with = "null_as_default")]
    reasoning_tokens: u64,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ChunkError {
    Object {
        message: Option<String>,
        #[serde(rename = "type")]
        kind: Option<String>,
    },
    Text(String),
}

/// Reads Chat Completions chunks.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    /// The index of the last tool call a fragment went to, for fragments without an index.
    last_call: Option<usize>,
}

impl OpenAiDecoder {
    /// Where an index-less fragment belongs: with the call that has its id, to a new call when
    /// it brings an unknown id, else to the call being received.
    fn call_index(&self, delta: &ToolCallDelta, assembly: &Assembly) -> usize {
        if let Some(index) = delta.index {
            return index;
        }
        match delta.id.as_deref().filter(|id| !id.is_empty()) {
            Some(id) => assembly
                .call_index(id)
                .unwrap_or_else(|| assembly.next_call_index()),
            None => self.last_call.unwrap_or(0),
        }
    }
}

impl Decoder for OpenAiDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        assembly: &mut Assembly,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<Flow, Fault> {
        if event.data.trim() == "[DONE]" {
            return Ok(Flow::Done);
        }
        let chunk: Chunk = event.json().map_err(|err| Fault::from_sse(&err))?;
        if let Some(error) = chunk.error {
            return Err(match error {
                ChunkError::Object { message, kind } => Fault::from_stream_error(
                    kind.as_deref(),
                    message.as_deref().unwrap_or("no details"),
                ),
                ChunkError::Text(message) => Fault::from_stream_error(None, &message),
            });
        }
        // Only the first choice matters: zero never asks for more than one (`n` is unset).
        if let Some(choice) = chunk.choices.into_iter().next() {
            let delta = choice.delta;
            if let Some(reasoning) = delta
                .reasoning_content
                .as_deref()
                .or(delta.reasoning.as_deref())
            {
                assembly.reasoning(reasoning, on_delta);
            }
            if let Some(text) = &delta.content {
                assembly.text(text, on_delta);
            }
            for call in &delta.tool_calls {
                let index = self.call_index(call, assembly);
                self.last_call = Some(index);
                let arguments = call.function.arguments.as_deref().unwrap_or("");
                assembly.tool_call(
                    index,
                    call.id.as_deref(),
                    call.function.name.as_deref(),
                    arguments,
                );
            }
            if let Some(reason) = choice.finish_reason {
                assembly.stop(stop_reason(reason));
            }
        }
        if let Some(usage) = chunk.usage {
            let total = assembly.usage_mut(Settles::Both);
            total.prompt_tokens = usage.prompt_tokens;
            total.completion_tokens = usage.completion_tokens;
            total.cached_input_tokens = usage.prompt_tokens_details.cached_tokens;
            total.reasoning_tokens = usage.completion_tokens_details.reasoning_tokens;
        }
        Ok(Flow::More)
    }
}

fn stop_reason(reason: String) -> StopReason {
    match reason.as_str() {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        _ => StopReason::Other(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ErrorClass, ToolCall, Usage};
    use serde_json::json;

    /// Feeds `lines` (one JSON chunk each, or `[DONE]`) to a decoder; returns the completion,
    /// the deltas, and the flow after the last line.
    fn decode(lines: &[&str]) -> Result<(crate::provider::Completion, Vec<StreamDelta>), Fault> {
        let mut decoder = OpenAiDecoder::default();
        let mut assembly = Assembly::new(0);
        let mut deltas = Vec::new();
        for line in lines {
            let event = SseEvent {
                event: String::new(),
                data: (*line).to_owned(),
            };
            decoder.event(&event, &mut assembly, &mut |delta| deltas.push(delta))?;
        }
        Ok((assembly.finish(), deltas))
    }

    #[test]
    fn text_reasoning_finish_and_usage() {
        let (done, deltas) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think","tool_calls":null}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning":" more"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}],"timings":{"predicted_ms":1.5}}"#,
            r#"{"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":2}}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(done.text, "Hi there");
        assert_eq!(done.stop, StopReason::EndTurn);
        assert_eq!(
            done.usage,
            Some(Usage {
                prompt_tokens: 12,
                completion_tokens: 3,
                cached_input_tokens: 8,
                reasoning_tokens: 2,
                ..Usage::default()
            })
        );
        assert_eq!(
            deltas,
            vec![
                StreamDelta::Reasoning("think".into()),
                StreamDelta::Reasoning(" more".into()),
                StreamDelta::Text("Hi".into()),
                StreamDelta::Text(" there".into()),
            ]
        );
    }

    #[test]
    fn parallel_tool_calls_assemble_by_index_with_split_arguments() {
        let (done, deltas) = decode(&[
            r#"{"choices":[{"delta":{"content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"content":"","tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"grep","arguments":"{\"pat"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"fn\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.rs\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ])
        .unwrap();
        assert!(deltas.is_empty());
        assert_eq!(done.stop, StopReason::ToolUse);
        assert_eq!(
            done.tool_calls,
            vec![
                ToolCall {
                    id: "call_a".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.rs"}"#.into()
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "grep".into(),
                    arguments: r#"{"pattern":"fn"}"#.into()
                },
            ]
        );
    }

    #[test]
    fn id_arriving_late_or_never() {
        let (done, _) = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"ls","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"pwd"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"late_id","function":{"arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        ])
        .unwrap();
        let ids: Vec<&str> = done
            .tool_calls
            .iter()
            .map(|call| call.id.as_str())
            .collect();
        assert_eq!(ids, ["call_0", "late_id"]);
        // "stop" next to tool calls still means the model wants them run.
        assert_eq!(done.stop, StopReason::ToolUse);
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let (done, _) = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"a","arguments":"{\"n\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"y","function":{"name":"b","arguments":"{}"}}]}}]}"#,
        ])
        .unwrap();
        let calls: Vec<(&str, &str)> = done
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(calls, [("x", r#"{"n":1}"#), ("y", "{}")]);
    }

    #[test]
    fn length_and_unknown_finish_reasons() {
        assert_eq!(stop_reason("length".into()), StopReason::MaxTokens);
        assert_eq!(
            stop_reason("content_filter".into()),
            StopReason::Other("content_filter".into())
        );
    }

    #[test]
    fn malformed_chunk_is_a_protocol_fault() {
        let fault = decode(&["{\"choices\": [oops"]).unwrap_err();
        assert_eq!(fault.class, ErrorClass::Protocol);
    }

    #[test]
    fn error_chunk_is_classified() {
        let fault = decode(&[r#"{"error":{"message":"server overloaded","type":"server_error"}}"#])
            .unwrap_err();
        assert_eq!(fault.class, ErrorClass::Unavailable);
        assert!(fault.detail.contains("server overloaded"));
    }

    #[test]
    fn request_body_shape() {
        let request = Request {
            system: "be brief".into(),
            messages: vec![
                Message::User {
                    content: "list files".into(),
                    images: Vec::new(),
                },
                Message::Assistant {
                    thinking: Vec::new(),
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "ls".into(),
                        arguments: "{}".into(),
                    }],
                },
                Message::ToolResult {
                    call_id: "c1".into(),
                    name: "ls".into(),
                    output: "a.rs".into(),
                    is_error: false,
                    images: Vec::new(),
                },
                Message::Assistant {
                    thinking: Vec::new(),
                    text: "a.rs".into(),
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
        let body: Value = serde_json::from_slice(&OpenAi::new("http://h/v1/", 500, "run_1").body(
            "m",
            &request,
            Asks::NONE,
        ))
        .unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m",
                "max_tokens": 500,
                "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "list files"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "c1", "content": "a.rs"},
                    {"role": "assistant", "content": "a.rs"},
                ],
                "tools": [{"type": "function", "function": {"name": "ls", "description": "list", "parameters": {"type": "object"}}}],
            })
        );
        let no_tools: Value =
            serde_json::from_slice(&OpenAi::new("http://h/v1", 500, "run_1").body(
                "m",
                &Request {
                    tools: vec![],
                    ..request
                },
                Asks::NONE,
            ))
            .unwrap();
        assert!(no_tools.get("tools").is_none());
    }

    #[test]
    fn replayed_calls_are_valid_whatever_the_model_produced() {
        let call = |id: &str, name: &str, arguments: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        };
        let request = Request {
            system: String::new(),
            messages: vec![
                Message::Assistant {
                    thinking: Vec::new(),
                    text: String::new(),
                    tool_calls: vec![
                        call(
                            "c1",
                            "write_file",
                            "{\"path\": \"poem.md\", \"content\": \"Ro",
                        ),
                        call("c2", "ls", "[1, 2]"),
                        call("c:3", "", "{ \"a\" : 1 }"),
                    ],
                },
                Message::ToolResult {
                    call_id: "c:3".into(),
                    name: String::new(),
                    output: "Error: unknown tool".into(),
                    is_error: true,
                    images: Vec::new(),
                },
            ],
            tools: vec![],
            answer_format: None,
        };
        let body: Value = serde_json::from_slice(&OpenAi::new("http://h/v1", 5, "run_1").body(
            "m",
            &request,
            Asks::NONE,
        ))
        .unwrap();
        let calls = body["messages"][0]["tool_calls"].as_array().unwrap();
        let arguments: Vec<&str> = calls
            .iter()
            .map(|call| call["function"]["arguments"].as_str().unwrap())
            .collect();
        assert_eq!(arguments, ["{}", "{}", "{ \"a\" : 1 }"]);
        assert_eq!(calls[2]["function"]["name"], "unnamed_tool");
        let id = calls[2]["id"].as_str().unwrap();
        assert!(id.starts_with("c_3_"), "{id}");
        assert_eq!(body["messages"][1]["tool_call_id"], id);
    }

    #[test]
    fn a_turns_images_follow_all_its_tool_results_in_one_user_message() {
        let image = crate::image::Image::new(crate::image::test_png(2, 2)).unwrap();
        let result = |id: &str, images: Vec<crate::image::Image>| Message::ToolResult {
            call_id: id.into(),
            name: "read_file".into(),
            output: format!("read {id}"),
            is_error: false,
            images,
        };
        let request = Request {
            system: String::new(),
            messages: vec![
                Message::Assistant {
                    text: String::new(),
                    tool_calls: ["a", "b"]
                        .map(|id| ToolCall {
                            id: id.into(),
                            name: "read_file".into(),
                            arguments: "{}".into(),
                        })
                        .to_vec(),
                    thinking: Vec::new(),
                },
                result("a", vec![image.clone()]),
                result("b", Vec::new()),
            ],
            tools: vec![],
            answer_format: None,
        };
        let body: Value = serde_json::from_slice(&OpenAi::new("http://h/v1", 5, "run_1").body(
            "m",
            &request,
            Asks::NONE,
        ))
        .unwrap();
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| message["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["assistant", "tool", "tool", "user"]);
        let parts = &body["messages"][3]["content"];
        assert_eq!(parts[0]["text"], "The image read_file returned (call a):");
        let url = parts[1]["image_url"]["url"].as_str().unwrap();
        assert_eq!(url, format!("data:image/png;base64,{}", image.base64()));
    }

    #[test]
    fn openai_itself_gets_max_completion_tokens_and_a_cache_key_and_its_copies_neither() {
        let request = Request {
            system: String::new(),
            messages: vec![],
            tools: vec![],
            answer_format: None,
        };
        let body = |base_url: &str| -> Value {
            serde_json::from_slice(&OpenAi::new(base_url, 77, "run_1").body(
                "m",
                &request,
                Asks::NONE,
            ))
            .unwrap()
        };
        let official = body("https://api.openai.com/v1");
        assert_eq!(official["max_completion_tokens"], 77);
        assert!(official.get("max_tokens").is_none(), "{official}");
        assert_eq!(official["prompt_cache_key"], "run_1");
        for copy in [
            "http://127.0.0.1:8080/v1",
            "https://openrouter.ai/api/v1",
            "https://api.openai.com.example/v1",
        ] {
            let body = body(copy);
            assert_eq!(body["max_tokens"], 77, "{copy}");
            assert!(
                body.get("max_completion_tokens").is_none(),
                "{copy}: {body}"
            );
            assert!(body.get("prompt_cache_key").is_none(), "{copy}: {body}");
        }
    }

    #[test]
    fn openai_itself_is_held_to_the_schema_on_every_request_and_its_copies_when_it_is_due() {
        let schema = json!({
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
            "additionalProperties": false
        });
        let request = |answer_now| Request {
            system: String::new(),
            messages: vec![],
            tools: vec![],
            answer_format: Some(crate::provider::AnswerFormat {
                schema: std::sync::Arc::new(schema.clone()),
                answer_now,
            }),
        };
        let official = OpenAi::new("https://api.openai.com/v1", 77, "run_1");
        let copy = OpenAi::new("http://127.0.0.1:8080/v1", 77, "run_1");
        assert!(official.constrains(&request(false)));
        assert!(!copy.constrains(&request(false)));
        assert!(copy.constrains(&request(true)));
        let body = |wire: &OpenAi, constrain| -> Value {
            let asks = Asks {
                constrain,
                reasoning: false,
                ..Asks::NONE
            };
            serde_json::from_slice(&wire.body("m", &request(true), asks)).unwrap()
        };
        let format = &body(&official, true)["response_format"];
        assert_eq!(format["type"], "json_schema");
        assert_eq!(format["json_schema"]["name"], "final_answer");
        assert_eq!(format["json_schema"]["schema"], schema);
        // Strict mode where OpenAI takes the schema as it is; a copy of the API has no such mode.
        assert_eq!(format["json_schema"]["strict"], true);
        assert_eq!(
            body(&copy, true)["response_format"]["json_schema"]["strict"],
            false
        );
        assert!(body(&official, false).get("response_format").is_none());
    }

    #[test]
    fn strict_mode_is_only_for_closed_objects_with_every_property_required() {
        let closed = json!({
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"],
                    "additionalProperties": false
                }}
            },
            "required": ["items"],
            "additionalProperties": false
        });
        assert!(strict_compatible(&closed));
        let mut open_inner = closed.clone();
        open_inner["properties"]["items"]["items"]["additionalProperties"] = json!(true);
        assert!(!strict_compatible(&open_inner));
        let mut optional = closed.clone();
        optional["required"] = json!([]);
        assert!(!strict_compatible(&optional));
        let mut loose_definition = closed.clone();
        loose_definition["$defs"] = json!({"d": {"type": "object", "properties": {"x": {}}}});
        assert!(!strict_compatible(&loose_definition));
        assert!(!strict_compatible(&json!({"type": "array"})));
    }

    #[test]
    fn url_and_auth_header() {
        let wire = OpenAi::new("http://h:1/v1/", 1, "run_1");
        assert_eq!(wire.url(), "http://h:1/v1/chat/completions");
        assert_eq!(wire.headers(Some("k")).unwrap()[AUTHORIZATION], "Bearer k");
        assert!(wire.headers(None).unwrap().is_empty());
    }

    #[test]
    fn the_effort_goes_out_as_reasoning_effort_unless_it_was_refused() {
        let request = Request {
            system: String::new(),
            messages: vec![],
            tools: vec![],
            answer_format: None,
        };
        let wire =
            OpenAi::new("http://h/v1", 5, "run_1").with_reasoning(Some(ReasoningEffort::Low));
        assert_eq!(wire.reasoning_field(), Some("reasoning_effort"));
        let body = |reasoning| -> Value {
            let asks = Asks {
                constrain: false,
                reasoning,
                ..Asks::NONE
            };
            serde_json::from_slice(&wire.body("m", &request, asks)).unwrap()
        };
        assert_eq!(body(true)["reasoning_effort"], "low");
        assert!(body(false).get("reasoning_effort").is_none());
        assert_eq!(
            OpenAi::new("http://h/v1", 5, "run_1").reasoning_field(),
            None
        );
    }
}
