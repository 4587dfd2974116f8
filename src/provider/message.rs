//! The provider-neutral conversation: what the agent loop sends and what a wire returns.
//!
//! These types live in `provider` (not `agent`) because both wires translate them; the agent
//! loop builds them and the wires never see anything else.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::image::Image;
pub use crate::usage::Usage;

/// One message of the conversation, in order. Serialised as sessions keep it (one JSON object
/// per message, tagged by `role`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// What the user asked (the prompt, or a note the loop adds on the user's behalf).
    User {
        /// The text.
        content: String,
        /// The images attached to it (`--image`), after the text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// One model turn: its text and the tool calls it made.
    Assistant {
        /// The visible text of the turn (may be empty when the turn only calls tools).
        text: String,
        /// The tool calls, in the model's order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The reasoning the wire must send back with the turn's calls, exactly as it came
        /// (Anthropic's thinking blocks and their signatures); empty for other wires and for
        /// turns without calls, whose reasoning no API asks for again.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thinking: Vec<ThinkingBlock>,
    },
    /// The result of one tool call, answering the call with the same id.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// The tool's name (Anthropic does not need it; some OpenAI-compatible servers do).
        name: String,
        /// What the tool returned, or the error text.
        output: String,
        /// Whether the call failed.
        is_error: bool,
        /// The images the tool returned (`read_file` of an image), for a model that sees them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
}

impl Message {
    /// A user message of `content` alone.
    pub fn user(content: impl Into<String>) -> Message {
        Message::User {
            content: content.into(),
            images: Vec::new(),
        }
    }

    /// The images the message carries.
    pub fn images(&self) -> &[Image] {
        match self {
            Message::User { images, .. } | Message::ToolResult { images, .. } => images,
            Message::Assistant { .. } => &[],
        }
    }
}

/// A block of reasoning a wire hands back unchanged: Anthropic requires the thinking blocks
/// of a turn that called tools to come back with its `tool_use` blocks, first and byte for
/// byte (the signature proves the model wrote them), when extended thinking is on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ThinkingBlock {
    /// Reasoning the model wrote, and the signature of it.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The server's signature of it.
        signature: String,
    },
    /// Reasoning the safety systems encrypted: opaque, sent back as it came.
    RedactedThinking {
        /// The encrypted reasoning.
        data: String,
    },
}

impl ThinkingBlock {
    /// Its size in bytes as sent, for the request's size estimate.
    pub(crate) fn size(&self) -> usize {
        match self {
            ThinkingBlock::Thinking {
                thinking,
                signature,
            } => thinking.len() + signature.len(),
            ThinkingBlock::RedactedThinking { data } => data.len(),
        }
    }
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The provider's id for the call (generated when a server omits it).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the raw JSON text the model produced; the loop parses it, so invalid
    /// JSON becomes an error result the model can correct rather than a crash.
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
}

/// One request: the whole conversation so far and the tools on offer.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The system prompt.
    pub system: String,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call (empty: the model must answer in text).
    pub tools: Vec<ToolSpec>,
    /// The shape the final answer must take (`--output-schema`), for a wire whose server can
    /// be held to it; `None` for a free-text answer.
    pub answer_format: Option<AnswerFormat>,
}

/// The JSON Schema a final answer must satisfy, as a request carries it to the wire. The
/// agent loop checks every answer itself; this only lets a server that can constrain its
/// decoding to a schema do so.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerFormat {
    /// The schema.
    pub schema: Arc<Value>,
    /// Whether this request asks for the answer itself (after an answer that missed the
    /// schema), so the server may be held to the schema even where that rules out tool calls
    /// (llama.cpp and vLLM then decode only the schema's JSON).
    pub answer_now: bool,
}

/// A piece of a streaming response, delivered as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    /// Visible answer text.
    Text(String),
    /// Reasoning or thinking text (not part of the answer).
    Reasoning(String),
}

/// Why the model stopped generating. Serialised in snake_case, as a cassette records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit the output token limit; the text is cut short.
    MaxTokens,
    /// It was caught in a loop, repeating one span of output over and over, and zero cut it
    /// (see `provider::repetition`): the text keeps one copy of the span, and the last tool
    /// call's arguments may be cut short.
    Repeating(super::Loop),
    /// Anything else the provider reported (content filter, ...), verbatim.
    Other(String),
}

/// A whole response, assembled from the stream. Serialised as a cassette records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Completion {
    /// The visible text.
    pub text: String,
    /// The tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The reasoning to send back with the calls (see [`ThinkingBlock`]).
    pub thinking: Vec<ThinkingBlock>,
    /// Token counts, when the provider sent them.
    pub usage: Option<Usage>,
    /// Why generation stopped.
    pub stop: StopReason,
}
