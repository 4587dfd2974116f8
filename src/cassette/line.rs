//! The cassette's lines, as serde reads and writes them: the format docs/REPLAY.md
//! describes and docs/cassette.schema.json holds. Every line is one JSON object whose `kind`
//! says which of these it is; unknown fields are refused, so a cassette written by a newer
//! format is caught rather than half-read.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provider::{
    Completion, ErrorClass, Notice, ProviderError, Refused, Retrying, StreamDelta, Switched,
    WaitPhase, Waiting,
};

/// One line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Line {
    /// What a process of the run was started with (the first line is the run's own).
    Start(Start),
    /// What the model's server said about itself (`Provider::server_report`).
    Server(Server),
    /// A request zero sent, in canonical form.
    Request(RequestLine),
    /// The response zero received for the request of the same task and number.
    Response(ResponseLine),
}

/// A `start` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Start {
    /// The cassette format's version ([`super::VERSION`]).
    pub(crate) version: u32,
    /// The task tag of the process (see [`super::Link`]).
    pub(crate) task: String,
    /// The zero version that recorded it.
    pub(crate) zero: String,
    /// The wire: `openai` or `anthropic`.
    pub(crate) wire: String,
    /// The model requests went to first.
    pub(crate) model: String,
    /// The flags of `zero exec`, as a child would be given them (never the environment).
    pub(crate) args: Vec<String>,
}

/// A `server` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Server {
    /// The task tag of the process that asked.
    pub(crate) task: String,
    /// The window the server reported.
    pub(crate) window: Option<u32>,
    /// Whether it is llama.cpp.
    pub(crate) llama_cpp: bool,
    /// Whether the model takes images, when the server said.
    pub(crate) vision: Option<bool>,
}

/// A `request` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RequestLine {
    /// The task tag of the process that sent it.
    pub(crate) task: String,
    /// Its number among the task's requests, from 1.
    pub(crate) seq: u64,
    /// `sha256:` and the hex SHA-256 of `request` written compact (see `canonical`).
    pub(crate) hash: String,
    /// The canonical form: wire, model, system prompt, tools, messages, answer format.
    pub(crate) request: Value,
}

/// A `response` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ResponseLine {
    /// The task tag of the process that received it.
    pub(crate) task: String,
    /// The number of the request it answers.
    pub(crate) seq: u64,
    /// What streamed in, in order: text, reasoning and the provider's notices.
    pub(crate) stream: Vec<Piece>,
    /// How the request ended.
    pub(crate) outcome: Outcome,
    /// Milliseconds from the request to its outcome.
    pub(crate) ms: u64,
}

/// How a recorded request ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Outcome {
    /// The assembled response.
    Completion(Completion),
    /// The failure, after the provider's retries.
    Error(ProviderError),
}

/// One thing that streamed in while a request was under way, `ms` after it was sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Piece {
    /// Visible answer text.
    Text {
        /// The text.
        text: String,
        /// When, after the request.
        ms: u64,
    },
    /// Reasoning text.
    Reasoning {
        /// The text.
        text: String,
        /// When, after the request.
        ms: u64,
    },
    /// A failed attempt that was retried.
    Retry {
        /// The attempt that failed, from 1.
        attempt: u32,
        /// Attempts in all.
        max_attempts: u32,
        /// What kind of failure.
        class: ErrorClass,
        /// Why it failed.
        reason: String,
        /// The wait before the next attempt.
        delay_ms: u64,
        /// When, after the request.
        ms: u64,
    },
    /// A long silence.
    Waiting {
        /// The attempt waited on.
        attempt: u32,
        /// Attempts in all.
        max_attempts: u32,
        /// What was awaited.
        phase: WaitPhase,
        /// How long nothing had come.
        waited_ms: u64,
        /// The silence allowed.
        limit_ms: u64,
        /// When, after the request.
        ms: u64,
    },
    /// An optional field the server refused.
    Refused {
        /// The field.
        field: String,
        /// The refusal.
        reason: String,
        /// When, after the request.
        ms: u64,
    },
    /// A move to the next fallback model.
    Switched {
        /// The model that failed.
        from: String,
        /// The model asked next.
        to: String,
        /// What kind of failure.
        class: ErrorClass,
        /// The failure.
        reason: String,
        /// When, after the request.
        ms: u64,
    },
}

impl Piece {
    /// When it came, in milliseconds after the request.
    pub(crate) fn ms(&self) -> u64 {
        match self {
            Piece::Text { ms, .. }
            | Piece::Reasoning { ms, .. }
            | Piece::Retry { ms, .. }
            | Piece::Waiting { ms, .. }
            | Piece::Refused { ms, .. }
            | Piece::Switched { ms, .. } => *ms,
        }
    }
}

impl Line {
    /// The task tag of the process that wrote it.
    pub(crate) fn task(&self) -> &str {
        match self {
            Line::Start(start) => &start.task,
            Line::Server(server) => &server.task,
            Line::Request(request) => &request.task,
            Line::Response(response) => &response.task,
        }
    }
}

/// What a recorded piece is handed back as when it is replayed.
pub(crate) enum Replayed {
    /// A piece of the stream, for `on_delta`.
    Delta(StreamDelta),
    /// A notice, for `on_notice`.
    Notice(Notice),
}

/// Milliseconds of `duration`, saturated.
fn millis(duration: Duration) -> u64 {
    duration.as_millis().try_into().unwrap_or(u64::MAX)
}

impl Piece {
    /// The piece a streamed delta is, `ms` after the request.
    pub(crate) fn of_delta(delta: &StreamDelta, ms: u64) -> Piece {
        match delta {
            StreamDelta::Text(text) => Piece::Text {
                text: text.clone(),
                ms,
            },
            StreamDelta::Reasoning(text) => Piece::Reasoning {
                text: text.clone(),
                ms,
            },
        }
    }

    /// The piece a provider's notice is, `ms` after the request.
    pub(crate) fn of_notice(notice: &Notice, ms: u64) -> Piece {
        match notice {
            Notice::Retrying(retrying) => Piece::Retry {
                attempt: retrying.attempt,
                max_attempts: retrying.max_attempts,
                class: retrying.class,
                reason: retrying.reason.clone(),
                delay_ms: millis(retrying.delay),
                ms,
            },
            Notice::Waiting(waiting) => Piece::Waiting {
                attempt: waiting.attempt,
                max_attempts: waiting.max_attempts,
                phase: waiting.phase,
                waited_ms: millis(waiting.waited),
                limit_ms: millis(waiting.limit),
                ms,
            },
            Notice::Refused(refused) => Piece::Refused {
                field: refused.field.clone(),
                reason: refused.reason.clone(),
                ms,
            },
            Notice::Switched(switched) => Piece::Switched {
                from: switched.from.clone(),
                to: switched.to.clone(),
                class: switched.class,
                reason: switched.reason.clone(),
                ms,
            },
        }
    }

    /// The delta or notice this piece was recorded from.
    pub(crate) fn replayed(&self) -> Replayed {
        match self.clone() {
            Piece::Text { text, .. } => Replayed::Delta(StreamDelta::Text(text)),
            Piece::Reasoning { text, .. } => Replayed::Delta(StreamDelta::Reasoning(text)),
            Piece::Retry {
                attempt,
                max_attempts,
                class,
                reason,
                delay_ms,
                ..
            } => Replayed::Notice(Notice::Retrying(Retrying {
                attempt,
                max_attempts,
                class,
                reason,
                delay: Duration::from_millis(delay_ms),
            })),
            Piece::Waiting {
                attempt,
                max_attempts,
                phase,
                waited_ms,
                limit_ms,
                ..
            } => Replayed::Notice(Notice::Waiting(Waiting {
                attempt,
                max_attempts,
                phase,
                waited: Duration::from_millis(waited_ms),
                limit: Duration::from_millis(limit_ms),
            })),
            Piece::Refused { field, reason, .. } => {
                Replayed::Notice(Notice::Refused(Refused { field, reason }))
            }
            Piece::Switched {
                from,
                to,
                class,
                reason,
                ..
            } => Replayed::Notice(Notice::Switched(Switched {
                from,
                to,
                class,
                reason,
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::StopReason;

    #[test]
    fn every_kind_of_line_reads_back_as_written_and_unknown_fields_are_refused() {
        let lines = [
            Line::Start(Start {
                version: 1,
                task: "main".into(),
                zero: "0.1.0".into(),
                wire: "openai".into(),
                model: "m".into(),
                args: vec!["--auto=medium".into()],
            }),
            Line::Server(Server {
                task: "1".into(),
                window: Some(4096),
                llama_cpp: true,
                vision: None,
            }),
            Line::Response(ResponseLine {
                task: "main".into(),
                seq: 1,
                stream: vec![
                    Piece::of_delta(&StreamDelta::Text("hi".into()), 3),
                    Piece::Retry {
                        attempt: 1,
                        max_attempts: 3,
                        class: ErrorClass::Unavailable,
                        reason: "503".into(),
                        delay_ms: 10,
                        ms: 1,
                    },
                ],
                outcome: Outcome::Completion(Completion {
                    text: "hi".into(),
                    tool_calls: Vec::new(),
                    thinking: Vec::new(),
                    usage: None,
                    stop: StopReason::EndTurn,
                }),
                ms: 4,
            }),
        ];
        for line in lines {
            let text = serde_json::to_string(&line).unwrap();
            assert_eq!(serde_json::from_str::<Line>(&text).unwrap(), line, "{text}");
        }
        let extra =
            r#"{"kind":"server","task":"1","window":null,"llamaCpp":false,"vision":null,"x":1}"#;
        assert!(serde_json::from_str::<Line>(extra).is_err());
    }
}
