//! A provider's failure class as the `error.code` it is reported with.
//!
//! `provider` knows why a request failed and `output` knows the schema's words; neither may
//! use the other, so the one mapping between them lives here, above both. `exec` reports a
//! failed run with it and the turn loop a retried request.

use crate::output::ErrorCode;
use crate::provider::ErrorClass;

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
        ];
        for (class, word) in classes {
            let code = ErrorCode::from(class);
            assert_eq!(code.to_string(), word, "{class:?}");
            assert_eq!(code.exit().code(), 3, "{class:?}");
        }
    }
}
