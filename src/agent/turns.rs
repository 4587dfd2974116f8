//! The turn loop as a small state machine. [`Turns`] holds everything the loop keeps from one
//! request to the next; a [`Step`] names what happens next, and each step is one method that
//! does its part and says which step follows:
//!
//! - **read first**: the files the prompt names, read before the first request (once);
//! - **request**: the conversation compacted if it outgrows the window (`compact`), then
//!   streamed to the model (the guardian of the command it may ask for starting meanwhile,
//!   `Runtime::prepare_foreground`) — or, with the turns spent, the closing summary asked for
//!   instead;
//! - **respond**: the size estimate learns from the response, the budget is checked, a cut-off
//!   is reported; a response with calls goes on to run them, one without to be judged;
//! - **judge** (`judge`): the safeguards on an answer, in order — a call written out as text
//!   goes back (`written_calls`), background tasks still running are mentioned once
//!   (`still_running`), what passes is held to the schema (`schema_retries`), then put to the
//!   caller's `stop` hooks and checks (`verification`), or taken as the answer;
//! - **run calls**: a turn that only repeats known results is refused (`repeats`), the others
//!   run (`calls`, where each call passes its decision), and the plan's updates are taken;
//! - **answer now** (`judge`): a model that keeps repeating itself is asked for its answer,
//!   with no tools on offer.
//!
//! A new safeguard is a step, or a check inside the step it guards, with a test of its own; a
//! rule or hook on a single tool call belongs in the permission step (`permission::decide`),
//! which every call passes just before it runs.

use crate::output::{CompactionReason, EventKind};
use crate::provider::{
    AnswerFormat, Completion, ErrorClass, Message, ProviderError, Request, StopReason,
    ThinkingBlock, ToolCall, ToolSpec,
};
use crate::tools::{ToolContext, ToolId};
use crate::usage::Exceeded;

use super::calls::Cut;
use super::compaction::Estimator;
use super::cut_calls::CutCalls;
use super::loops::{self, LoopCuts};
use super::plan::Plan;
use super::repeats::{self, Repeat, Repeats};
use super::schema_retries::SchemaRetries;
use super::still_running::Reminder;
use super::verification::Verification;
use super::written_calls::Strikes;
use super::{AgentRun, Answer, Ending, Report, Stuck, calls, first_reads};
use compact::Compacted;

mod compact;
mod judge;
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
    /// A response caught in a loop was cut, with no call in it (see [`Turns::looped`]).
    Looped(String),
    /// The conversation is over.
    End(Ending),
}

/// A response that called tools.
struct Calls {
    /// Its text, beside the calls.
    text: String,
    /// The calls, in the model's order.
    calls: Vec<ToolCall>,
    /// The reasoning the wire sends back with them.
    thinking: Vec<ThinkingBlock>,
    /// Why it ended before the model finished it, when it did: its last call's arguments may
    /// be cut.
    cut: Option<Cut>,
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
    /// Responses in a row cut for looping (see `loops`).
    loops: LoopCuts,
    /// The checks' tally (see `verification`).
    verification: Verification,
    /// The calls cut at the output limit and not made again yet (see `cut_calls`).
    cut_calls: CutCalls,
}

impl<'r, 'a> Turns<'r, 'a> {
    /// The loop's state at the start of `agent`'s run: `history` (a resumed session's
    /// messages), then `prompt`, with `system` and the run's tools.
    pub(super) fn new(
        agent: &'r AgentRun<'a>,
        system: String,
        history: Vec<Message>,
        prompt: Message,
    ) -> Self {
        let mut messages = history;
        messages.push(prompt);
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
            loops: LoopCuts::default(),
            verification: Verification::new(agent.checks),
            cut_calls: CutCalls::default(),
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
                Step::Looped(text) => self.looped(text),
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
            thinking: Vec::new(),
        });
        let results = self.execute(&calls, None).await;
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
    /// estimate, and the window may have been wrong: the refusal's is learned first). A second
    /// refusal ends the run, naming the window.
    async fn send(&mut self) -> Result<Completion, Ending> {
        self.compact_if_outgrown().await?;
        self.count += 1;
        // While the model answers, the guardian of the command it may ask for starts.
        if self.agent.toolset.offers(ToolId::Bash) {
            self.agent.runtime.prepare_foreground();
        }
        let error = match self.agent.stream(&self.request, true).await {
            Err(Ending::Failed(error)) if error.class == ErrorClass::ContextLength => error,
            sent => return sent,
        };
        self.learn_window(&error);
        let compacted = self.compact(CompactionReason::ContextLength).await?;
        if compacted != Compacted::Yes {
            return Err(self.too_long(error, compacted).await);
        }
        match self.agent.stream(&self.request, true).await {
            Err(Ending::Failed(error)) if error.class == ErrorClass::ContextLength => {
                self.learn_window(&error);
                Err(self.too_long(error, compacted).await)
            }
            sent => sent,
        }
    }

    /// Takes the window a refusal as too long names as the model's from now on.
    fn learn_window(&self, error: &ProviderError) {
        if let Some(tokens) = error.window_named() {
            self.agent.window.learn(tokens);
        }
    }

    /// The ending of a conversation the provider refused as too long, after what came of
    /// compacting it: its error, naming the window the run worked in and why compacting did
    /// not help.
    async fn too_long(&self, mut error: ProviderError, compacted: Compacted) -> Ending {
        let window = self.agent.window().await.tokens;
        let why = match compacted {
            Compacted::Yes => format!(
                "the conversation does not fit the model's context window of {window} tokens, \
                 even compacted"
            ),
            Compacted::OnlyTheTask => format!(
                "the prompt alone does not fit the model's context window of {window} tokens, \
                 and there is nothing older to compact: compaction keeps the prompt as it is; \
                 shorten it (or what it attaches), or use a model with a larger window"
            ),
            Compacted::EmptySummary => format!(
                "the conversation does not fit the model's context window of {window} tokens, \
                 and it could not be compacted: the model's summary of it was empty"
            ),
        };
        error.message.push_str(&format!(" ({why})"));
        Ending::Failed(error)
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
        let cut = match completion.stop {
            StopReason::MaxTokens => Some(Cut::OutputLimit),
            StopReason::Repeating(found) => Some(Cut::Loop(found)),
            _ => None,
        };
        match cut {
            Some(Cut::Loop(found)) => {
                self.agent.warn(loops::warning(found));
                if self.loops.cut() {
                    return Step::End(Ending::Stuck(Stuck::Looping {
                        cuts: loops::MAX_IN_A_ROW,
                        last: found,
                    }));
                }
            }
            Some(Cut::OutputLimit) => {
                self.agent.warn(CUT_OFF_WARNING.to_owned());
                self.loops.reset();
            }
            None => self.loops.reset(),
        }
        let looped = matches!(cut, Some(Cut::Loop(_)));
        match completion.tool_calls.is_empty() {
            true if looped => Step::Looped(completion.text),
            true => Step::Judge(completion.text),
            false => Step::RunCalls(Calls {
                text: completion.text,
                calls: completion.tool_calls,
                thinking: completion.thinking,
                cut,
            }),
        }
    }

    /// A response cut for repeating itself is no answer: it stays in the conversation (one
    /// copy of what it repeated), the model is told, and the turn goes on.
    fn looped(&mut self, text: String) -> Step {
        // A loop in the reasoning leaves no text, and a wire may refuse an empty turn.
        let text = match text.trim().is_empty() {
            true => loops::PLACEHOLDER.to_owned(),
            false => text,
        };
        self.request.messages.push(Message::Assistant {
            text,
            tool_calls: Vec::new(),
            thinking: Vec::new(),
        });
        self.request.messages.push(Message::user(loops::NOTE));
        Step::Request
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
            thinking: turn.thinking,
        });
        self.agent.record(&self.request.messages);
        if let Some(repeat) = repeat {
            return self.refuse_repeats(&turn.calls, repeat);
        }
        self.cut_calls.turn(&turn.calls, turn.cut);
        let results = self.execute(&turn.calls, turn.cut).await;
        self.take_plan_updates();
        self.request.messages.extend(results);
        match self.context.cancel.is_cancelled() {
            true => Step::End(Ending::Cancelled),
            false => Step::Request,
        }
    }

    /// Runs `calls` (of a response that was `cut`, when it was), each result sized to the
    /// window, and tells the repeat guard what they returned.
    async fn execute(&mut self, calls: &[ToolCall], cut: Option<Cut>) -> Vec<Message> {
        let agent = self.agent;
        let cap = calls::result_cap(agent.window().await.tokens, calls.len());
        let results = calls::run_all(
            calls,
            cut,
            cap,
            calls::Doors {
                toolset: agent.toolset,
                rules: agent.rules,
                narrowing: agent.narrowing,
                context: &self.context,
                hooks: agent.hooks,
                output: agent.output,
                runtime: agent.runtime,
                blind: agent.provider.cannot_see_images().or_else(|| {
                    let report = agent.window.server_now()?;
                    report.cannot_see_images()
                }),
            },
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

    /// The turns are spent: ask once more, without tools, for a summary.
    async fn final_summary(&mut self) -> Ending {
        self.request.tools.clear();
        // A summary of what is left, not the answer: prose, whatever the schema.
        self.request.answer_format = None;
        self.request
            .messages
            .push(Message::user(OUT_OF_TURNS_REQUEST));
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
            Ending::Answered(answer)
            | Ending::OverBudget(_, Some(answer))
            | Ending::VerifyFailed { answer, .. } => Some(&answer.text),
            Ending::OutOfTurns(text) => Some(text),
            _ => None,
        };
        if let Some(text) = answer {
            self.request.messages.push(Message::Assistant {
                text: text.clone(),
                tool_calls: Vec::new(),
                thinking: Vec::new(),
            });
        }
        self.agent.record(&self.request.messages);
        Report {
            ending,
            turns: self.count,
            verify: self.verification.reports(),
            cut_calls: self.cut_calls.never_made_again(),
        }
    }
}
