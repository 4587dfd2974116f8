//! `error.code`: every reason a run can fail, as the stream-json schema names it, each paired
//! with the exit code it leads to.
//!
//! One enum instead of string literals at each failure, so the table in `docs/STREAM_JSON.md`
//! and the code cannot drift apart: a new code is a new variant, and [`ErrorCode::exit`] does
//! not compile until it has its exit code.

use serde::{Deserialize, Serialize};

use crate::exit::ExitCode;

/// A stable `error.code` (and the `code` of a `retry`, which is one of the provider's).
/// Serialised as the schema's snake_case word; the schema's version stays the same as long as
/// every word stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorCode {
    /// Bad flags or input (`usage_error`).
    #[serde(rename = "usage_error")]
    Usage,
    /// No provider configured, or an invalid configuration (`config_error`).
    #[serde(rename = "config_error")]
    Config,
    /// `auth`, exit 3: the credentials were refused.
    Auth,
    /// `bad_request`, exit 3: the request was refused, e.g. for an unknown model.
    BadRequest,
    /// `context_length`, exit 3: even compacted, the conversation does not fit the window (or
    /// the prompt alone does not, and there is nothing to compact).
    ContextLength,
    /// `rate_limited`, exit 3, retryable: still rate limited after every retry.
    RateLimited,
    /// `unavailable`, exit 3, retryable: the server was still failing after every retry.
    Unavailable,
    /// `network`, exit 3, retryable: no connection, a lost one, or a timeout.
    Network,
    /// `protocol`, exit 3: the reply was not the wire protocol (a page, malformed SSE).
    Protocol,
    /// `cancelled`, exit 3: cancelled mid-request with no signal or deadline to name.
    Cancelled,
    /// `--max-turns` ran out, or the model got stuck, before a final answer.
    Incomplete,
    /// The run tree went past `--max-tokens`.
    TokenBudget,
    /// The run tree went past `--max-cost-usd`.
    CostBudget,
    /// No final answer satisfied `--output-schema`.
    SchemaUnsatisfied,
    /// The model's responses were cut for looping too many times in a row.
    Looping,
    /// The run's deadline passed.
    Timeout,
    /// A `--verify` check did not pass on the model's final answer, after every retry.
    VerifyFailed,
    /// `--strict`, and the run's work was blocked (a denial, an MCP server that failed or went
    /// away, a specialist that failed, a call cut and never made again).
    Blocked,
    /// `--sandbox required`, and the system cannot enforce a rule the run needs.
    SandboxUnavailable,
    /// An MCP server marked `required` did not start.
    McpServerFailed,
    /// `--replay`: a request differed from the cassette's, or the cassette ended first.
    ReplayDrift,
    /// A bug, or zero could not write its output (`internal_error`).
    #[serde(rename = "internal_error")]
    Internal,
    /// SIGHUP (or the launching run's death) stopped the run.
    Hangup,
    /// SIGINT stopped the run.
    Interrupted,
    /// SIGTERM stopped the run.
    Terminated,
}

impl ErrorCode {
    /// The exit code a run that fails this way ends with (the table in `docs/STREAM_JSON.md`).
    pub(crate) fn exit(self) -> ExitCode {
        match self {
            ErrorCode::Usage => ExitCode::Usage,
            ErrorCode::Config
            | ErrorCode::Auth
            | ErrorCode::BadRequest
            | ErrorCode::ContextLength
            | ErrorCode::RateLimited
            | ErrorCode::Unavailable
            | ErrorCode::Network
            | ErrorCode::Protocol
            | ErrorCode::Cancelled
            | ErrorCode::SandboxUnavailable
            | ErrorCode::McpServerFailed
            | ErrorCode::ReplayDrift => ExitCode::Provider,
            ErrorCode::Incomplete
            | ErrorCode::TokenBudget
            | ErrorCode::CostBudget
            | ErrorCode::SchemaUnsatisfied
            | ErrorCode::Looping
            | ErrorCode::Timeout
            | ErrorCode::VerifyFailed
            | ErrorCode::Blocked => ExitCode::Incomplete,
            ErrorCode::Internal => ExitCode::Internal,
            ErrorCode::Hangup => ExitCode::Hangup,
            ErrorCode::Interrupted => ExitCode::Interrupted,
            ErrorCode::Terminated => ExitCode::Terminated,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    /// The wire word, for text that names the code (a `retry`'s stderr line). Taken from
    /// serde, so it cannot differ from what stream-json writes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&super::word(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `error.code` table of `docs/STREAM_JSON.md`: every word with its exit code.
    const DOCUMENTED: [(ErrorCode, &str, i32); 25] = [
        (ErrorCode::Usage, "usage_error", 2),
        (ErrorCode::Config, "config_error", 3),
        (ErrorCode::Auth, "auth", 3),
        (ErrorCode::BadRequest, "bad_request", 3),
        (ErrorCode::ContextLength, "context_length", 3),
        (ErrorCode::RateLimited, "rate_limited", 3),
        (ErrorCode::Unavailable, "unavailable", 3),
        (ErrorCode::Network, "network", 3),
        (ErrorCode::Protocol, "protocol", 3),
        (ErrorCode::Cancelled, "cancelled", 3),
        (ErrorCode::Incomplete, "incomplete", 4),
        (ErrorCode::TokenBudget, "token_budget", 4),
        (ErrorCode::CostBudget, "cost_budget", 4),
        (ErrorCode::SchemaUnsatisfied, "schema_unsatisfied", 4),
        (ErrorCode::Looping, "looping", 4),
        (ErrorCode::Timeout, "timeout", 4),
        (ErrorCode::VerifyFailed, "verify_failed", 4),
        (ErrorCode::Blocked, "blocked", 4),
        (ErrorCode::SandboxUnavailable, "sandbox_unavailable", 3),
        (ErrorCode::McpServerFailed, "mcp_server_failed", 3),
        (ErrorCode::ReplayDrift, "replay_drift", 3),
        (ErrorCode::Internal, "internal_error", 1),
        (ErrorCode::Hangup, "hangup", 129),
        (ErrorCode::Interrupted, "interrupted", 130),
        (ErrorCode::Terminated, "terminated", 143),
    ];

    #[test]
    fn every_code_has_its_documented_word_and_exit_code() {
        for (code, word, exit) in DOCUMENTED {
            assert_eq!(serde_json::to_value(code).unwrap(), word, "{code:?}");
            assert_eq!(code.to_string(), word, "{code:?}");
            let back: ErrorCode = serde_json::from_value(word.into()).unwrap();
            assert_eq!(back, code);
            assert_eq!(code.exit().code(), exit, "{code:?}");
        }
    }

    #[test]
    fn a_word_the_schema_does_not_have_is_refused() {
        assert!(serde_json::from_value::<ErrorCode>("usage".into()).is_err());
    }
}
