//! The turn loop as a small state machine. [`Turns`] holds everything the loop keeps from one
//! request to the next; a [`Step`] names what happens next, and each step is one method that
//! does its part and says which step follows:
//!
//! - **read first**: the files the prompt names, read before the first request (once);
//! - **request**: the conversation compacted if it outgrows the window, then streamed to the
//!   model — or, with the turns spent, the closing summary asked for instead;
//! - **respond**: the size estimate learns from the response, the budget is checked, a cut-off
//!   is reported; a response with calls goes on to run them, one without to be judged;
//! - **judge**: the safeguards on an answer, in order — a call written out as text goes back
//!   (`written_calls`), background tasks still running are mentioned once (`still_running`),
//!   and what passes is held to the schema (`schema_retries`) or taken as the answer;
//! - **run calls**: a turn that only repeats known results is refused (`repeats`), the others
//!   run (`calls`, where each call passes its decision), and the plan's updates are taken;
//! - **answer now**: a model that keeps repeating itself is asked for its answer, no tools.
//!
//! A new safeguard is a step, or a check inside the step it guards, with a test of its own.

use crate::output::{CompactionReason, EventKind};
use crate::provider::{
    AnswerFormat, Completion, ErrorClass, Message, Request, StopReason, ToolCall, ToolSpec,
};
use crate::structured;
use crate::tools::{ToolContext, ToolId};
use crate::usage::Exceeded;

use super::compaction::{self, Estimator};
use super::plan::Plan;
use super::repeats::{self, Repeat, Repeats};
use super::schema_retries::{SchemaRetries, Verdict};
use super::still_running::Reminder;
use super::written_calls::{self, Strike, Strikes};
use super::{AgentRun, Answer, Ending, Report, Stuck, calls, first_reads};

#[cfg(test)]
mod tests;

/// What the model is asked when the turn budget is spent: no tools, just a summary.
const OUT_OF_TURNS_REQUEST: &str = "You have used all the turns this run allows, so you cannot \
     call any more tools. Reply now, without tools: summarize what you did, what is left to do, \
     and anything the person running you should check.";

/// The warning of a response that ended at the output token limit (`--max-output-tokens`):
/// its text is incomplete, and so may be its last tool call, which then gets an error result.
const CUT_OFF_WARNING: &str = "the response was cut off at the output token limit \
     (--max-output-tokens)";

/// What the loop does next.
enum Step {
    /// Read the files the prompt names before the first request.
    ReadFirst,
    /// Send the conversation (see [`Turns::request`]).
    Request,
    /// A response arrived (see [`Turns::respond`]).
    Respond(Completion),
    /// The model answered without calling a tool (see [`Turns::judge`]).
    Judge(String),
    /// The model called tools (see [`Turns::run_calls`]).
    RunCalls(Calls),
    /// The model repeats itself again: ask for its answer (see [`Turns::answer_now`]).
    AnswerNow,
    /// The conversation is over.
    End(Ending),
}

/// A response that called tools.
struct Calls {
    /// Its text, beside the calls.
    text: String,
    /// The calls, in the model's order.
    calls: Vec<ToolCall>,
    /// Whether it ended at the output token limit: its last call's arguments may be cut.
    cut_off: bool,
}

/// One run's conversation and everything the loop keeps between its requests.
pub(super) struct Turns<'r, 'a> {
    /// The run: its provider, tools, output, budget and limits.
    agent: &'r AgentRun<'a>,
    /// What every tool call gets: the run's context, with the plan's channel.
    context: ToolContext,
    /// The conversation so far, and what the next request offers.
    request: Request,
    /// Model requests made.
    count: u32,
    /// The estimate of a request's size, learning the model's tokenizer.
    sizes: Estimator,
    /// The plan as the model last set it.
    plan: Plan,
    /// The results the model already has (see `repeats`).
    repeats: Repeats,
    /// Answers in a row that were calls written out as text (see `written_calls`).
    written: Strikes,
    /// The schema and the answers rejected so far (see `schema_retries`).
    schema: SchemaRetries<'a>,
    /// Whether the model was told about tasks still running (see `still_running`).
    still_running: Reminder,
}

impl<'r, 'a> Turns<'r, 'a> {
    /// The loop's state at the start of `agent`'s run: `history` (a resumed session's
    /// messages), then `prompt`, with `system` and the run's tools.
    pub(super) fn new(
        agent: &'r AgentRun<'a>,
        system: String,
        history: Vec<Message>,
        prompt: String,
    ) -> Self {
        let mut messages = history;
        messages.push(Message::User { content: prompt });
        let request = Request {
            system,
            messages,
            tools: agent
                .toolset
                .visible()
                .iter()
                .map(|tool| ToolSpec {
                    name: tool.name().to_string(),
                    description: tool.description().to_string(),
                    input_schema: tool.input_schema(),
                })
                .collect(),
            answer_format: agent.schema.map(|check| AnswerFormat {
                schema: std::sync::Arc::clone(check.schema.schema()),
                answer_now: false,
            }),
        };
        let (plan, plan_updates) = Plan::new();
        Turns {
            agent,
            context: ToolContext {
                plan_updates: Some(plan_updates),
                ..agent.context.clone()
            },
            sizes: Estimator::new(&request.tools),
            request,
            count: 0,
            plan,
            repeats: Repeats::default(),
            written: Strikes::default(),
            schema: SchemaRetries::new(agent.schema),
            still_running: Reminder::default(),
        }
    }

    /// Runs the conversation to its end, one step after another.
    pub(super) async fn run(mut self) -> Report {
        let mut step = Step::ReadFirst;
        let ending = loop {
            step = match step {
                Step::ReadFirst => self.read_first().await,
                Step::Request => self.request().await,
                Step::Respond(completion) => self.respond(completion),
                Step::Judge(text) => self.judge(text).await,
                Step::RunCalls(calls) => self.run_calls(calls).await,
                Step::AnswerNow => self.answer_now().await,
                Step::End(ending) => break ending,
            };
        };
        self.finish(ending)
    }

    /// Reads [`AgentRun::first_reads`] into the conversation as a turn of `read_file` calls,
    /// as if the model had made them; the repeat guard knows them from then on.
    async fn read_first(&mut self) -> Step {
        let agent = self.agent;
        if agent.first_reads.is_empty() || !agent.toolset.offers(ToolId::ReadFile) {
            return Step::Request;
        }
        let calls = first_reads::calls(&agent.first_reads);
        self.repeats.check(&calls, agent.toolset);
        self.request.messages.push(Message::Assistant {
            text: String::new(),
            tool_calls: calls.clone(),
        });
        let results = self.execute(&calls, false).await;
        self.request.messages.extend(results);
        Step::Request
    }

    /// Sends the conversation to the model, or, once the turns are spent, asks for the closing
    /// summary.
    async fn request(&mut self) -> Step {
        self.agent.record(&self.request.messages);
        if self.count == self.agent.max_turns {
            return Step::End(self.final_summary().await);
        }
        match self.send().await {
            Ok(completion) => Step::Respond(completion),
            Err(ending) => Step::End(ending),
        }
    }

    /// One turn's request: compacted first when it outgrows the window, and compacted and sent
    /// once more when the provider refuses it as too long after all (the estimate is an
    /// estimate).
    async fn send(&mut self) -> Result<Completion, Ending> {
        self.compact_if_outgrown().await?;
        self.count += 1;
        match self.agent.stream(&self.request, true).await {
            Err(Ending::Failed(error)) if error.class == ErrorClass::ContextLength => {
                match self.compact(CompactionReason::ContextLength).await? {
                    true => self.agent.stream(&self.request, true).await,
                    false => Err(Ending::Failed(error)),
                }
            }
            sent => sent,
        }
    }

    /// A response arrived: the size estimate learns from it, the budget is checked, a cut-off
    /// is reported, and it goes on as calls to run or as an answer to judge.
    fn respond(&mut self, completion: Completion) -> Step {
        // An estimate teaches nothing about the model's tokenizer.
        if let Some(usage) = completion.usage.filter(|usage| !usage.estimated) {
            self.sizes.observe(&self.request, usage.prompt_tokens);
        }
        if let Some(exceeded) = self.agent.ledger.exceeded() {
            return Step::End(self.over_budget(exceeded, completion));
        }
        let cut_off = completion.stop == StopReason::MaxTokens;
        if cut_off {
            self.agent.warn(CUT_OFF_WARNING.into());
        }
        match completion.tool_calls.is_empty() {
            true => Step::Judge(completion.text),
            false => Step::RunCalls(Calls {
                text: completion.text,
                calls: completion.tool_calls,
                cut_off,
            }),
        }
    }

    /// The response took the run tree past its budget: its calls are not run, and its text is
    /// the answer when it called none.
    fn over_budget(&self, exceeded: Exceeded, completion: Completion) -> Ending {
        let answer = completion.tool_calls.is_empty().then(|| {
            let structured = self.schema.check(&completion.text).and_then(Result::ok);
            Answer {
                text: completion.text,
                structured,
            }
        });
        Ending::OverBudget(exceeded, answer)
    }

    /// The model answered without calling a tool. A call written out as text goes back, and
    /// so, once, does an answer given while background tasks still run; what is left is held
    /// to the schema.
    async fn judge(&mut self, text: String) -> Step {
        if let Some(tool) = self.written_call(&text) {
            return self.refuse_written_call(text, tool);
        }
        if let Some(notice) = self.still_running.due(self.agent.tasks).await {
            return self.send_back(text, notice);
        }
        self.check_schema(text)
    }

    /// The tool `text` calls, when it is a call of a tool on offer written out as text —
    /// unless `--output-schema` accepts it: then it is the answer asked for, whatever it looks
    /// like.
    fn written_call(&self, text: &str) -> Option<String> {
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
    fn refuse_written_call(&mut self, text: String, tool: String) -> Step {
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
    fn check_schema(&mut self, text: String) -> Step {
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
                });
                Step::End(Ending::SchemaUnsatisfied {
                    violations,
                    retries,
                })
            }
        }
    }

    /// The model called tools: they run, unless the turn only repeats results the model
    /// already has; then the plan's updates are taken.
    async fn run_calls(&mut self, turn: Calls) -> Step {
        self.written.reset();
        // Tools are wanted after all: the answer is not due yet.
        self.answer_due(false);
        let repeat = self.repeats.check(&turn.calls, self.agent.toolset);
        // Kept before its calls run: a run killed meanwhile leaves calls a resume can give
        // "interrupted" results.
        self.request.messages.push(Message::Assistant {
            text: turn.text,
            tool_calls: turn.calls.clone(),
        });
        self.agent.record(&self.request.messages);
        if let Some(repeat) = repeat {
            return self.refuse_repeats(&turn.calls, repeat);
        }
        let results = self.execute(&turn.calls, turn.cut_off).await;
        self.take_plan_updates();
        self.request.messages.extend(results);
        match self.context.cancel.is_cancelled() {
            true => Step::End(Ending::Cancelled),
            false => Step::Request,
        }
    }

    /// Runs `calls` (of a response the output limit `cut_off`), each result sized to the
    /// window, and tells the repeat guard what they returned.
    async fn execute(&mut self, calls: &[ToolCall], cut_off: bool) -> Vec<Message> {
        let agent = self.agent;
        let cap = calls::result_cap(agent.window().await.tokens, calls.len());
        let results = calls::run_all(
            calls,
            cut_off,
            cap,
            agent.toolset,
            &self.context,
            agent.output,
        )
        .await;
        self.repeats.ran(&results);
        results
    }

    /// A turn that asks only for results the model already has is answered with a note, not
    /// run; the second such turn asks for the answer instead.
    fn refuse_repeats(&mut self, calls: &[ToolCall], repeat: Repeat) -> Step {
        let agent = self.agent;
        let refused = calls::refuse_all(calls, repeats::REPEATED_CALL, agent.toolset, agent.output);
        self.request.messages.extend(refused);
        match repeat {
            Repeat::First => Step::Request,
            Repeat::Again => Step::AnswerNow,
        }
    }

    /// Reports each plan `update_plan` set during the turn's calls; the newest is kept for
    /// compaction.
    fn take_plan_updates(&mut self) {
        for steps in self.plan.take_updates() {
            self.agent.output.emit(EventKind::Plan { steps });
        }
    }

    /// The model repeats itself: ask for its answer with no tools on offer for this one
    /// request (they are back for any turn after it, should the answer miss the schema).
    async fn answer_now(&mut self) -> Step {
        self.request.messages.push(Message::User {
            content: repeats::ANSWER_NOW_REQUEST.into(),
        });
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
            Ok(completion) => self.check_schema(completion.text),
        }
    }

    /// The turns are spent: ask once more, without tools, for a summary.
    async fn final_summary(&mut self) -> Ending {
        self.request.tools.clear();
        // A summary of what is left, not the answer: prose, whatever the schema.
        self.request.answer_format = None;
        self.request.messages.push(Message::User {
            content: OUT_OF_TURNS_REQUEST.into(),
        });
        self.count += 1;
        match self.agent.stream(&self.request, true).await {
            Ok(completion) => Ending::OutOfTurns(completion.text),
            Err(Ending::Failed(error)) => {
                // The run is incomplete either way; the summary was a courtesy.
                self.agent.warn(format!(
                    "could not get a summary after the last turn: {error}"
                ));
                Ending::OutOfTurns(String::new())
            }
            Err(other) => other,
        }
    }

    /// Compacts the conversation before a request that would fill most of the window. Until
    /// the window is known there is nothing to compact: only the first request is sent before
    /// it is.
    async fn compact_if_outgrown(&mut self) -> Result<(), Ending> {
        let threshold = self
            .agent
            .window
            .now()
            .map(|window| (f64::from(window.tokens) * compaction::THRESHOLD) as u64);
        if threshold.is_some_and(|threshold| self.sizes.tokens(&self.request) > threshold) {
            self.compact(CompactionReason::Threshold).await?;
        }
        Ok(())
    }

    /// Replaces the older turns by the model's summary of them (see [`compaction`]) and
    /// reports it; `Ok(false)` when there is nothing older to summarise.
    async fn compact(&mut self, reason: CompactionReason) -> Result<bool, Ending> {
        let agent = self.agent;
        let before = self.sizes.tokens(&self.request);
        // A request the provider refused proves the estimate wrong: keep only the newest turn.
        let keep = match reason {
            CompactionReason::Threshold => compaction::KEEP_TURNS,
            CompactionReason::ContextLength => 1,
        };
        let window = agent.window().await.tokens;
        let messages = &self.request.messages;
        let Some(split) = compaction::split(messages, keep, &self.sizes, u64::from(window)) else {
            return Ok(false);
        };
        let task = match messages.first() {
            Some(Message::User { content }) => content.clone(),
            _ => String::new(),
        };
        let summary = compaction::summary_request(
            &self.request.system,
            &task,
            &messages[1..split],
            &self.sizes,
            window,
        );
        let completion = agent.stream(&summary, false).await?;
        if completion.text.trim().is_empty() {
            agent.warn(
                "the model's summary of the conversation was empty; it was not compacted".into(),
            );
            return Ok(false);
        }
        self.request.messages =
            compaction::rebuild(messages, split, &completion.text, self.plan.current());
        if let Some(transcript) = agent.transcript {
            transcript.rewrite(&self.request.messages);
        }
        agent.output.emit(EventKind::Compaction {
            reason,
            tokens_before: before,
            tokens_after: self.sizes.tokens(&self.request),
            messages_summarized: split - 1,
        });
        Ok(true)
    }

    /// An answer that is not taken goes back to the model, kept in the conversation with the
    /// `note` that says why.
    fn send_back(&mut self, answer: String, note: String) -> Step {
        self.request.messages.push(Message::Assistant {
            text: answer,
            tool_calls: Vec::new(),
        });
        self.request.messages.push(Message::User { content: note });
        Step::Request
    }

    /// Says whether the answer is due now, for a server that can hold an answer to the schema.
    fn answer_due(&mut self, due: bool) {
        if let Some(format) = &mut self.request.answer_format {
            format.answer_now = due;
        }
    }

    /// Ends the conversation: the answer, if any, is its last message (a resume continues
    /// from it), and the transcript is brought up to date.
    fn finish(mut self, ending: Ending) -> Report {
        let answer = match &ending {
            Ending::Answered(answer) | Ending::OverBudget(_, Some(answer)) => Some(&answer.text),
            Ending::OutOfTurns(text) => Some(text),
            _ => None,
        };
        if let Some(text) = answer {
            self.request.messages.push(Message::Assistant {
                text: text.clone(),
                tool_calls: Vec::new(),
            });
        }
        self.agent.record(&self.request.messages);
        Report {
            ending,
            turns: self.count,
        }
    }
}
