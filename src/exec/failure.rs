//! Why a run cannot go on: [`Failure`], made only by its named constructors. Its exit code is
//! its `error.code`'s ([`ErrorCode::exit`]), so the `error` event and the exit code can never
//! disagree.

use crate::agent::Stuck;
use crate::exit::ExitCode;
use crate::lifecycle::Stop;
use crate::output::{ErrorCode, EventKind, Output};
use crate::provider::ProviderError;
use crate::structured::{self, Violation};
use crate::usage::Exceeded;

/// A reason the run cannot go on, with everything the `error` event needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The stable `error.code`, which decides the exit code.
    pub(crate) code: ErrorCode,
    /// What went wrong, for a person.
    pub(crate) message: String,
    /// Whether running again unchanged could succeed.
    pub(crate) retryable: bool,
    /// With `schema_unsatisfied`: what was wrong with the last answer.
    pub(crate) schema_errors: Vec<Violation>,
}

impl Failure {
    /// A failure that is not retryable and carries no schema errors: every one but the
    /// provider's and the schema's.
    fn plain(code: ErrorCode, message: String) -> Self {
        Failure {
            code,
            message,
            retryable: false,
            schema_errors: Vec::new(),
        }
    }

    /// Bad flags or input: exit 2.
    pub fn usage(message: String) -> Self {
        Failure::plain(ErrorCode::Usage, message)
    }

    /// Provider configuration is missing or invalid: exit 3.
    pub(crate) fn config(message: String) -> Self {
        Failure::plain(ErrorCode::Config, message)
    }

    /// `--sandbox required` and a rule the system cannot enforce: exit 3.
    pub(crate) fn sandbox(message: String) -> Self {
        Failure::plain(ErrorCode::SandboxUnavailable, message)
    }

    /// The run's deadline passed: exit 4, after everything it started was stopped.
    pub(crate) fn timeout() -> Self {
        Failure::plain(
            ErrorCode::Timeout,
            "the run's deadline (--timeout, or the launching run's) passed before the model \
             gave a final answer; everything it started was stopped"
                .into(),
        )
    }

    /// A response took the run tree past its token or cost budget: exit 4, after everything
    /// it started was stopped.
    pub(crate) fn over_budget(exceeded: Exceeded) -> Self {
        let (code, message) = match exceeded {
            Exceeded::Tokens { limit, spent } => (
                ErrorCode::TokenBudget,
                format!(
                    "the run and its specialists used {spent} tokens, past the budget of \
                     {limit} (--max-tokens); everything it started was stopped"
                ),
            ),
            Exceeded::Cost { limit, spent } => (
                ErrorCode::CostBudget,
                format!(
                    "the run and its specialists cost ${spent:.4}, past the budget of ${limit} \
                     (--max-cost-usd); everything it started was stopped"
                ),
            ),
        };
        Failure::plain(code, message)
    }

    /// The turn budget (`--max-turns`) ran out before a final answer: exit 4.
    pub(crate) fn out_of_turns() -> Self {
        Failure::plain(
            ErrorCode::Incomplete,
            "the turn budget (--max-turns) ran out before the model gave a final answer".into(),
        )
    }

    /// The model went round in circles and gave no answer: exit 4, `looping` for a model
    /// caught in a loop of its own text, else `incomplete`.
    pub(crate) fn stuck(stuck: Stuck) -> Self {
        let (code, message) = match stuck {
            Stuck::Repeating => (
                ErrorCode::Incomplete,
                "the model kept asking for tool results it already had, and gave no answer \
                 when asked for one"
                    .into(),
            ),
            Stuck::WritingCalls(tool) => (
                ErrorCode::Incomplete,
                format!(
                    "the model wrote its tool calls as text (a call of `{tool}`) instead of \
                     making them, again after it was told they are not run; it gave no answer"
                ),
            ),
            Stuck::StopRefused(reason) => (
                ErrorCode::Incomplete,
                format!(
                    "stop hooks refused the model's final answer more than {} times; the last \
                     refusal: {reason}",
                    crate::hooks::MAX_STOP_REFUSALS
                ),
            ),
            Stuck::Looping { cuts, last } => (
                ErrorCode::Looping,
                format!(
                    "the model is caught in a loop: its last {cuts} responses in a row were cut \
                     for repeating the same text over and over (the last one a span of {} \
                     bytes), although it was told after each; the run was stopped rather than \
                     let it spend every turn",
                    last.period
                ),
            ),
        };
        Failure::plain(code, message)
    }

    /// The provider failed: exit 3, coded by its class.
    pub(crate) fn provider(error: &ProviderError) -> Self {
        Failure {
            code: error.class.into(),
            message: error.message.clone(),
            retryable: error.retryable,
            schema_errors: Vec::new(),
        }
    }

    /// The conversation was cancelled while a model request was in flight: exit 3, as the
    /// provider reports a cancelled request.
    pub(crate) fn cancelled() -> Self {
        Failure::plain(ErrorCode::Cancelled, "the run was cancelled".into())
    }

    /// Something inside zero failed: exit 1.
    pub(crate) fn internal(message: String) -> Self {
        Failure::plain(ErrorCode::Internal, message)
    }

    /// A signal (or the parent's death, which counts as SIGHUP) stopped the run: exit
    /// 129/130/143, after the runtime was closed. Its deadline: [`Failure::timeout`].
    pub(crate) fn stopped(stop: Stop) -> Self {
        let code = match stop {
            Stop::Hangup => ErrorCode::Hangup,
            Stop::Interrupt => ErrorCode::Interrupted,
            Stop::Terminate => ErrorCode::Terminated,
            Stop::Deadline => return Failure::timeout(),
        };
        let message = format!(
            "the run was stopped by {}; everything it started was stopped",
            stop.name()
        );
        Failure::plain(code, message)
    }

    /// An MCP server the run cannot go without (`"required": true`) did not start: exit 3.
    pub(crate) fn mcp_required(error: &str) -> Self {
        Failure::plain(
            ErrorCode::McpServerFailed,
            format!("{error} (the server is marked required)"),
        )
    }

    /// No answer satisfied `--output-schema`, the last after `retries` tries: exit 4.
    pub(crate) fn schema_unsatisfied(violations: Vec<Violation>, retries: u32) -> Self {
        let tries = match retries {
            0 => "its answer".to_string(),
            1 => "its answer, after 1 retry,".to_string(),
            n => format!("its answer, after {n} retries,"),
        };
        Failure {
            code: ErrorCode::SchemaUnsatisfied,
            message: format!(
                "the model's final answer does not satisfy --output-schema; {tries} still has \
                 these errors:\n{}",
                structured::list(&violations)
            ),
            retryable: false,
            schema_errors: violations,
        }
    }

    /// A `--verify` check did not pass on the model's final answer after every retry
    /// (`message` says which, how it ended and the end of its output): exit 4.
    pub(crate) fn verify_failed(message: String) -> Self {
        Failure::plain(ErrorCode::VerifyFailed, message)
    }

    /// `--strict`, and the run's work was blocked by each of `causes`: exit 4, after the
    /// model's answer was printed.
    pub(crate) fn blocked(causes: &[String]) -> Self {
        Failure::plain(
            ErrorCode::Blocked,
            format!(
                "--strict: the run's work was blocked: {}",
                causes.join("; ")
            ),
        )
    }

    /// The exit code a run that fails this way ends with.
    pub(crate) fn exit(&self) -> ExitCode {
        self.code.exit()
    }

    /// Emits the `error` event that reports it.
    pub(crate) fn emit(&self, output: &Output) {
        output.emit(EventKind::Error {
            code: self.code,
            message: self.message.clone(),
            retryable: self.retryable,
            schema_errors: self.schema_errors.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stop_exits_with_the_code_its_failure_reports() {
        // `lifecycle` exits with `exit_status` when a stop comes before the run has a token;
        // `exec` reports the failure: the two must agree.
        for stop in [
            Stop::Hangup,
            Stop::Interrupt,
            Stop::Terminate,
            Stop::Deadline,
        ] {
            assert_eq!(
                stop.exit_status(),
                Failure::stopped(stop).exit().code(),
                "{stop:?}"
            );
        }
        assert_eq!(Failure::stopped(Stop::Deadline), Failure::timeout());
    }

    #[test]
    fn a_loop_that_ended_without_an_answer_is_incomplete() {
        for failure in [
            Failure::out_of_turns(),
            Failure::stuck(Stuck::Repeating),
            Failure::stuck(Stuck::WritingCalls("bash".into())),
        ] {
            assert_eq!(
                (failure.exit(), failure.code),
                (ExitCode::Incomplete, ErrorCode::Incomplete)
            );
        }
        let looping = Failure::stuck(Stuck::Looping {
            cuts: 3,
            last: crate::provider::Loop { period: 64 },
        });
        assert_eq!(
            (looping.exit(), looping.code),
            (ExitCode::Incomplete, ErrorCode::Looping)
        );
    }
}
