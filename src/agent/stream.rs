//! One model request, streamed: its text and reasoning become events as they arrive, the
//! provider's notices (a retry, a long silence, a refused field, a fallback model) become
//! `retry`, `waiting`, `warning` and `model_switch` events, what it
//! spent goes to the run's ledger whether it succeeded or not, and a failure becomes the
//! [`Ending`] it means for the run.

use crate::output::{self, EventKind};
use crate::provider::{Completion, ErrorClass, Notice, Request, StreamDelta, Usage, WaitPhase};

use super::{AgentRun, Ending, totals};

impl AgentRun<'_> {
    /// Sends `request` and streams its reasoning and (when `visible`: not for a summary the
    /// loop asks for itself) its text into events.
    pub(super) async fn stream(
        &self,
        request: &Request,
        visible: bool,
    ) -> Result<Completion, Ending> {
        let output = self.output;
        let mut on_delta = |delta: StreamDelta| match delta {
            StreamDelta::Text(delta) if visible => output.emit(EventKind::Text { delta }),
            StreamDelta::Text(_) => {}
            StreamDelta::Reasoning(delta) => output.emit(EventKind::Reasoning { delta }),
        };
        let mut on_notice = |notice: Notice| output.emit(notice_event(notice));
        let result = self
            .provider
            .complete(request, &mut on_delta, &mut on_notice, &self.context.cancel)
            .await;
        // A failed request spent what it streamed before it failed, too.
        let spent = match &result {
            Ok(completion) => completion.usage,
            Err(error) => error.usage,
        };
        if let Some(counts) = spent {
            self.spend(counts);
        }
        match result {
            Ok(completion) => Ok(completion),
            Err(error) if error.class == ErrorClass::Cancelled => Err(Ending::Cancelled),
            // A response cut off after it took the run past its budget: the budget is what
            // ends the run (exit 4, `token_budget`), whatever broke the stream.
            Err(error) => match self.ledger.exceeded() {
                Some(exceeded) => Err(Ending::OverBudget(exceeded, None)),
                None => Err(Ending::Failed(error)),
            },
        }
    }

    /// Records what a request spent in the run's ledger, reports it (a `usage` event), and
    /// publishes the run's total to the run that launched it, if any.
    fn spend(&self, counts: Usage) {
        self.ledger.record(self.provider.model(), counts);
        self.output.emit(EventKind::Usage(totals(&counts)));
        if let Err(error) = self.ledger.publish() {
            self.output.emit(EventKind::Warning {
                message: format!(
                    "cannot report this run's token usage to the run that launched it: {error}"
                ),
            });
        }
    }
}

/// The event of a provider's notice on a request in progress.
fn notice_event(notice: Notice) -> EventKind {
    let millis =
        |duration: std::time::Duration| duration.as_millis().try_into().unwrap_or(u64::MAX);
    match notice {
        Notice::Retrying(retrying) => EventKind::Retry {
            attempt: retrying.attempt,
            max_attempts: retrying.max_attempts,
            code: retrying.class.into(),
            reason: retrying.reason,
            delay_ms: millis(retrying.delay),
        },
        Notice::Refused(refused) => EventKind::Warning {
            message: format!(
                "the server refused `{}`, so this run asks without it from now on: {}",
                refused.field, refused.reason
            ),
        },
        Notice::Switched(switched) => EventKind::ModelSwitch {
            from: switched.from,
            to: switched.to,
            code: switched.class.into(),
            reason: switched.reason,
        },
        Notice::Waiting(waiting) => EventKind::Waiting {
            attempt: waiting.attempt,
            max_attempts: waiting.max_attempts,
            phase: match waiting.phase {
                WaitPhase::FirstByte => output::WaitPhase::FirstByte,
                WaitPhase::Stream => output::WaitPhase::Stream,
            },
            waited_ms: millis(waiting.waited),
            timeout_ms: millis(waiting.limit),
        },
    }
}
