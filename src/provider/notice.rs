//! What a provider tells its caller while a request is under way but nothing of the answer
//! arrives: a failed attempt about to be retried, or a long silence. Without these a slow
//! gateway looks exactly like a hung run (3.5 minutes of nothing, in one report).
//!
//! The provider may not depend on `output`, so it hands these to a callback the caller
//! passes to [`Provider::complete`](super::Provider::complete); the agent loop turns them
//! into `retry`, `waiting`, `warning` and `model_switch` events.

use std::time::Duration;

use super::ErrorClass;

/// A report on a request in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// An attempt failed before any of its answer arrived, and the request is sent again.
    Retrying(Retrying),
    /// No byte of the response has come for a while.
    Waiting(Waiting),
    /// The server refused an optional field of the request (the reasoning effort), and the
    /// request goes out again without it, as every later one of the run does.
    Refused(Refused),
    /// The model failed the request for good, and the request goes to the next fallback
    /// model, as every later one of the run does.
    Switched(Switched),
}

/// A move from one model to the next of the fallback chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switched {
    /// The model that failed.
    pub from: String,
    /// The model the request goes to now.
    pub to: String,
    /// What kind of failure it was.
    pub class: ErrorClass,
    /// The failure, as the error would say it (endpoint named, secrets redacted).
    pub reason: String,
}

/// A field of the request the server would not take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The field, as the wire names it (`reasoning_effort`, `thinking`).
    pub field: String,
    /// The refusal, as the error would say it (endpoint named, secrets redacted).
    pub reason: String,
}

/// A failed attempt that is followed by another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retrying {
    /// The number of the attempt that failed (1-based).
    pub attempt: u32,
    /// How many attempts a request gets in all (`ZERO_MAX_ATTEMPTS`).
    pub max_attempts: u32,
    /// What kind of failure it was.
    pub class: ErrorClass,
    /// Why it failed, as the error would say it (endpoint named, secrets redacted).
    pub reason: String,
    /// How long zero waits before the next attempt.
    pub delay: Duration,
}

/// A silence in the response to an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The number of the attempt being waited on (1-based).
    pub attempt: u32,
    /// How many attempts a request gets in all.
    pub max_attempts: u32,
    /// What is awaited.
    pub phase: WaitPhase,
    /// How long nothing has come.
    pub waited: Duration,
    /// How much silence the attempt is allowed before it is given up on (the first-byte or
    /// the idle timeout).
    pub limit: Duration,
}

/// What a silent response is waited on for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitPhase {
    /// The first byte of the response: the server is still reading the prompt, or queued.
    FirstByte,
    /// The next chunk of a response that has begun.
    Stream,
}
