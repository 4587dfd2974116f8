//! The provider's vocabularies in the words of the stream-json schema: a failure's class as
//! its `error.code`, and where a context window's size came from.
//!
//! `provider` knows why a request failed and where a window's size came from; `output` knows
//! the schema's words for them. Neither may use the other, so the mappings live here, above
//! both, each an exhaustive `match`: a new class or source does not compile until it has its
//! word. `exec` reports a failed run and the context window with them, the turn loop a
//! retried request.

use crate::output::{ErrorCode, WindowInfo, WindowSource};
use crate::provider::{self, ContextWindow, ErrorClass};

impl From<ErrorClass> for ErrorCode {
    /// The `error.code` of a provider failure of this class.
    fn from(class: ErrorClass) -> Self {
        match class {
            ErrorClass::Auth => ErrorCode::Auth,
            ErrorClass::BadRequest => ErrorCode::BadRequest,
            ErrorClass::ContextLength => ErrorCode::ContextLength,
            ErrorClass::RateLimited => ErrorCode::RateLimited,
            ErrorClass::Unavailable => ErrorCode::Unavailable,
            ErrorClass::Network => ErrorCode::Network,
            ErrorClass::Protocol => ErrorCode::Protocol,
            ErrorClass::Cancelled => ErrorCode::Cancelled,
            ErrorClass::ReplayDrift => ErrorCode::ReplayDrift,
        }
    }
}

impl From<ContextWindow> for WindowInfo {
    /// `run_end.contextWindow`: the window's size and where it came from.
    fn from(window: ContextWindow) -> Self {
        let source = match window.source {
            provider::WindowSource::Flag => WindowSource::Flag,
            provider::WindowSource::ConfigFile => WindowSource::ConfigFile,
            provider::WindowSource::Server => WindowSource::Server,
            provider::WindowSource::KnownModel => WindowSource::KnownModel,
            provider::WindowSource::Default => WindowSource::Default,
        };
        WindowInfo {
            tokens: window.tokens,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_failure_is_a_provider_exit() {
        let classes = [
            (ErrorClass::Auth, "auth"),
            (ErrorClass::BadRequest, "bad_request"),
            (ErrorClass::ContextLength, "context_length"),
            (ErrorClass::RateLimited, "rate_limited"),
            (ErrorClass::Unavailable, "unavailable"),
            (ErrorClass::Network, "network"),
            (ErrorClass::Protocol, "protocol"),
            (ErrorClass::Cancelled, "cancelled"),
            (ErrorClass::ReplayDrift, "replay_drift"),
        ];
        for (class, word) in classes {
            let code = ErrorCode::from(class);
            assert_eq!(code.to_string(), word, "{class:?}");
            assert_eq!(code.exit().code(), 3, "{class:?}");
        }
    }

    #[test]
    fn every_window_source_has_its_documented_word() {
        let sources = [
            (provider::WindowSource::Flag, "flag"),
            (provider::WindowSource::ConfigFile, "config"),
            (provider::WindowSource::Server, "server"),
            (provider::WindowSource::KnownModel, "known_model"),
            (provider::WindowSource::Default, "default"),
        ];
        for (source, word) in sources {
            let info = WindowInfo::from(ContextWindow {
                tokens: 4096,
                source,
            });
            assert_eq!(
                serde_json::to_value(&info).unwrap(),
                serde_json::json!({"tokens": 4096, "source": word}),
                "{source:?}"
            );
        }
    }
}
