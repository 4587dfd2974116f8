//! The steps on an answer the model gives without calling a tool: the safeguards that may send
//! it back (a call written out as text, background tasks still running), the schema it is held
//! to, the caller's `stop` hooks and checks (`--verify`) it is put to, and the answer asked for
//! from a model that keeps repeating itself.

use crate::hooks::StopVerdict;
use crate::provider::Message;
use crate::structured;
use crate::verify::CheckPlace;

use super::{Step, Turns};
use crate::agent::schema_retries::Verdict;
use crate::agent::verification;
use crate::agent::written_calls::{self, Strike};
use crate::agent::{Answer, Ending, Stuck, repeats};

impl Turns<'_, '_> {
    /// The model answered without calling a tool. A call written out as text goes back, and
    /// so, once, does an answer given while background tasks still run; what is left is held
    /// to the schema, and an answer that satisfies it is put to the caller's judges.
    pub(super) async fn judge(&mut self, text: String) -> Step {
        if let Some(tool) = self.written_call(&text) {
            return self.refuse_written_call(text, tool);
        }
        if let Some(notice) = self.still_running.due(self.agent.runtime).await {
            return self.send_back(text, notice);
        }
        let step = self.check_schema(text);
        self.put_to_callers_judges(step).await
    }

    /// An answer that would end the run, put to the caller's `stop` hooks, then (when they
    /// take it) to the caller's checks: the cheap judge first. Any other step passes as it is.
    pub(super) async fn put_to_callers_judges(&mut self, step: Step) -> Step {
        let step = self.put_to_stop_hooks(step).await;
        self.put_to_checks(step).await
    }

    /// An answer that would end the run, put to the caller's checks (`--verify`): one that a
    /// check does not pass goes back with the check's exit code and the end of its output, and
    /// the run goes on; once no retry is left the run ends `verify_failed`. Any other step
    /// passes as it is.
    async fn put_to_checks(&mut self, step: Step) -> Step {
        let Step::End(Ending::Answered(answer)) = step else {
            return step;
        };
        let agent = self.agent;
        let policy = &self.context.policy;
        let place = CheckPlace {
            runtime: agent.runtime,
            workspace: &self.context.workspace,
            writable: std::iter::once(self.context.workspace.clone())
                .chain(policy.extra_roots().iter().cloned())
                .collect(),
            deadline: policy.deadline(),
            cancel: &self.context.cancel,
        };
        let verdict = self
            .verification
            .judge(agent.checks, &place, agent.output)
            .await;
        match verdict {
            verification::Verdict::Passed => Step::End(Ending::Answered(answer)),
            verification::Verdict::Retry(note) => self.send_back(answer.text, note),
            verification::Verdict::GiveUp(message) => {
                Step::End(Ending::VerifyFailed { answer, message })
            }
            verification::Verdict::Cancelled => Step::End(Ending::Cancelled),
        }
    }

    /// An answer that would end the run, put to the caller's `stop` hooks: one they refuse goes
    /// back with their reason, and the run goes on; past `hooks::MAX_STOP_REFUSALS` refusals
    /// it ends incomplete instead. Any other step passes as it is.
    async fn put_to_stop_hooks(&mut self, step: Step) -> Step {
        let Step::End(Ending::Answered(answer)) = step else {
            return step;
        };
        match self.agent.hooks.stop(&answer.text).await {
            StopVerdict::Accept => Step::End(Ending::Answered(answer)),
            StopVerdict::Refuse(reason) => self.send_back(
                answer.text,
                format!(
                    "Your final answer was not accepted: {reason}\nContinue the task, then \
                     give your final answer again."
                ),
            ),
            StopVerdict::Exhausted(reason) => {
                // Kept in the conversation: a resumed session shows what was refused.
                self.request.messages.push(Message::Assistant {
                    text: answer.text,
                    tool_calls: Vec::new(),
                    thinking: Vec::new(),
                });
                Step::End(Ending::Stuck(Stuck::StopRefused(reason)))
            }
        }
    }

    /// The tool `text` calls, when it is a call of a tool on offer written out as text —
    /// unless `--output-schema` accepts it: then it is the answer asked for, whatever it looks
    /// like.
    pub(super) fn written_call(&self, text: &str) -> Option<String> {
        let offered: Vec<&str> = self
            .request
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect();
        written_calls::called_tool(text, &offered).filter(|_| !self.schema.accepts(text))
    }

    /// An answer that is a call of `tool` written out as text goes back with a note the first
    /// time; the second time in a row the model is stuck.
    pub(super) fn refuse_written_call(&mut self, text: String, tool: String) -> Step {
        match self.written.strike() {
            Strike::First => {
                self.agent.warn(written_calls::warning(&tool));
                self.send_back(text, written_calls::note(&tool))
            }
            Strike::Again => Step::End(Ending::Stuck(Stuck::WritingCalls(tool))),
        }
    }

    /// The answer against the run's schema: it ends the run, goes back with its violations
    /// while retries are left, or ends the run unsatisfied.
    pub(super) fn check_schema(&mut self, text: String) -> Step {
        match self.schema.judge(&text) {
            Verdict::Accepted(structured) => {
                Step::End(Ending::Answered(Answer { text, structured }))
            }
            Verdict::Retry {
                violations,
                retry,
                retries,
            } => {
                self.agent.warn(format!(
                    "the final answer does not satisfy --output-schema; the errors went back to \
                     the model (retry {retry} of {retries}):\n{}",
                    structured::list(&violations)
                ));
                // The answer is due: a server that can hold it to the schema is asked to.
                self.answer_due(true);
                self.send_back(text, structured::feedback(&violations))
            }
            Verdict::GiveUp {
                violations,
                retries,
            } => {
                // Kept in the conversation: a resumed session shows what was refused.
                self.request.messages.push(Message::Assistant {
                    text,
                    tool_calls: Vec::new(),
                    thinking: Vec::new(),
                });
                Step::End(Ending::SchemaUnsatisfied {
                    violations,
                    retries,
                })
            }
        }
    }

    /// The model repeats itself: ask for its answer with no tools on offer for this one
    /// request (they are back for any turn after it, should the answer miss the schema).
    pub(super) async fn answer_now(&mut self) -> Step {
        self.request
            .messages
            .push(Message::user(repeats::ANSWER_NOW_REQUEST));
        let tools = std::mem::take(&mut self.request.tools);
        self.count += 1;
        let answered = self.agent.stream(&self.request, true).await;
        self.request.tools = tools;
        match answered {
            Err(ending) => Step::End(ending),
            // Still a call, written out as text: the model has no answer to give.
            Ok(completion) if self.written_call(&completion.text).is_some() => {
                Step::End(Ending::Stuck(Stuck::Repeating))
            }
            Ok(completion) => {
                let step = self.check_schema(completion.text);
                self.put_to_callers_judges(step).await
            }
        }
    }

    /// An answer that is not taken goes back to the model, kept in the conversation with the
    /// `note` that says why.
    pub(super) fn send_back(&mut self, answer: String, note: String) -> Step {
        self.request.messages.push(Message::Assistant {
            text: answer,
            tool_calls: Vec::new(),
            thinking: Vec::new(),
        });
        self.request.messages.push(Message::user(note));
        Step::Request
    }
}
