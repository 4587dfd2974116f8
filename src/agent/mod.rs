//! The turn loop: send the conversation, stream the answer, run the tools it asks for, send the
//! results, and repeat until the model answers without calling a tool or a budget runs out.
//!
//! The loop is provider-neutral (it speaks [`crate::provider::Message`]) and reports everything
//! through [`Output`]; it never decides exit codes — it says how the conversation ended and
//! `exec` maps that to a code.

mod calls;
mod compaction;
mod error_code;
pub(crate) mod first_reads;
mod repeats;
pub(crate) mod system_prompt;
mod written_calls;

use serde_json::Value;

use crate::output::{EventKind, Output, UsageTotals};
use crate::provider::{
    AnswerFormat, ContextWindow, ErrorClass, Message, Notice, Provider, ProviderError, Request,
    StopReason, StreamDelta, ToolSpec, Usage, WaitPhase, WindowLookup,
};
use crate::runtime::{Runtime, TaskRecord};
use crate::session::Transcript;
use crate::structured::{self, OutputSchema, Violation};
use crate::tools::{PlanStep, ToolContext, Toolset};
use crate::usage::{Exceeded, Ledger};
use compaction::Estimator;

/// What the model is asked when the turn budget is spent: no tools, just a summary.
const OUT_OF_TURNS_REQUEST: &str = "You have used all the turns this run allows, so you cannot \
     call any more tools. Reply now, without tools: summarize what you did, what is left to do, \
     and anything the person running you should check.";

/// The result of each call of a turn that asks only for results the model already has, with
/// nothing changed since (see [`repeats`]).
const REPEATED_CALL: &str = "not run again: you made exactly this call before, and nothing has \
     changed since, so its result (above) would be the same. Use it: answer the question now \
     in plain text, or do something different.";

/// What the model is asked when it repeats itself a second time after [`REPEATED_CALL`]: its
/// answer, with no tools on offer for that request.
const ANSWER_NOW_REQUEST: &str = "You keep asking for tool results you already have. No more \
     tools: answer the original question now, in plain text, from the tool results above.";

/// What the model is told when its answer is a call written out as text (see
/// [`written_calls`]): the call of `tool` was not run, and how to make it.
fn written_call_note(tool: &str) -> String {
    format!(
        "That was not run: it is a call of `{tool}` written as text, and only calls made \
         through the tool-calling interface run. Make the call that way, or, if you have what \
         you need, answer in plain text."
    )
}

/// The warning of an answer that was a call written out as text, sent back to the model.
fn written_call_warning(tool: &str) -> String {
    format!(
        "the model wrote a call of `{tool}` as text instead of making it; it was not run, and \
         the model was told"
    )
}

/// The warning of a response that ended at the output token limit (`--max-output-tokens`):
/// its text is incomplete, and so may be its last tool call, which then gets an error result.
const CUT_OFF_WARNING: &str = "the response was cut off at the output token limit \
     (--max-output-tokens)";

/// Everything one agent run needs.
pub struct AgentRun<'a> {
    /// Where requests go.
    pub provider: &'a dyn Provider,
    /// The tools on offer and the dispatch point for calls.
    pub toolset: &'a Toolset,
    /// The context every tool call gets (workspace, policy, cancellation).
    pub context: ToolContext,
    /// Where events go.
    pub output: &'a Output,
    /// The most model requests that may call tools; one more summary request follows.
    pub max_turns: u32,
    /// The run's background tasks, checked when the model answers.
    pub tasks: &'a Runtime,
    /// What the run tree has spent, checked against its budget after every response.
    pub ledger: &'a Ledger,
    /// The model's context window: the conversation is compacted before it outgrows it, and
    /// tool results are sized to it.
    pub window: WindowLookup,
    /// The schema the final answer must satisfy (`--output-schema`), if any.
    pub schema: Option<SchemaCheck<'a>>,
    /// Where the conversation is kept as it grows (the run's session), if anywhere.
    pub transcript: Option<&'a Transcript>,
    /// Files read for the model before its first request (see `agent::first_reads`): the ones the
    /// prompt names, in the compact style; none otherwise.
    pub first_reads: Vec<String>,
}

/// `--output-schema` and `--schema-retries`: the schema, and how many answers that miss it
/// go back to the model with what is wrong before the run gives up.
#[derive(Debug, Clone, Copy)]
pub struct SchemaCheck<'a> {
    /// The schema.
    pub schema: &'a OutputSchema,
    /// How many rejected answers are sent back for another try.
    pub retries: u32,
}

/// A final answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The model's text.
    pub text: String,
    /// The JSON value the text is, when the run has a schema and the text satisfies it.
    pub structured: Option<Value>,
}

/// How the conversation ended.
#[derive(Debug)]
pub enum Ending {
    /// The model answered without calling a tool (and, with a schema, satisfied it).
    Answered(Answer),
    /// Every answer missed the schema, the last after `retries` tries with the errors fed
    /// back; these are the last answer's violations.
    SchemaUnsatisfied {
        /// What was wrong with the last answer.
        violations: Vec<Violation>,
        /// How many times the errors went back to the model.
        retries: u32,
    },
    /// The turn budget ran out; the text is the model's summary (possibly empty).
    OutOfTurns(String),
    /// The model gave no answer, and asking it again would not bring one.
    Stuck(Stuck),
    /// A response took the run tree past its token or cost budget. Its tool calls were not
    /// run; the answer is the one it gave when it called none.
    OverBudget(Exceeded, Option<Answer>),
    /// The provider failed (after its own retries).
    Failed(ProviderError),
    /// The run was cancelled.
    Cancelled,
}

/// Why a model is stuck (see [`Ending::Stuck`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stuck {
    /// It kept asking for results it already had and, asked for its answer, wrote out
    /// another call instead.
    Repeating,
    /// It wrote a call (of this tool) out as text again after it was told such calls are
    /// not run.
    WritingCalls(String),
}

/// Token counts as the events report them.
pub(crate) fn totals(usage: &Usage) -> UsageTotals {
    UsageTotals {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        total_tokens: usage.total(),
        cached_input_tokens: usage.cached_input_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        reasoning_tokens: usage.reasoning_tokens,
        estimated: usage.estimated,
    }
}

/// The ending plus the run's accounting (its tokens are in the ledger).
#[derive(Debug)]
pub struct Report {
    /// How it ended.
    pub ending: Ending,
    /// Model requests made.
    pub(crate) turns: u32,
}

impl AgentRun<'_> {
    /// Runs the conversation to its end: `history` (a resumed session's messages), then
    /// `prompt`.
    pub async fn run(&self, system: String, history: Vec<Message>, prompt: String) -> Report {
        let mut messages = history;
        messages.push(Message::User { content: prompt });
        let mut request = Request {
            system,
            messages,
            tools: self
                .toolset
                .visible()
                .iter()
                .map(|tool| ToolSpec {
                    name: tool.name().to_string(),
                    description: tool.description().to_string(),
                    input_schema: tool.input_schema(),
                })
                .collect(),
            answer_format: self.schema.map(|check| AnswerFormat {
                schema: std::sync::Arc::clone(check.schema.schema()),
                answer_now: false,
            }),
        };
        let (plan_sender, mut plan_updates) = tokio::sync::mpsc::unbounded_channel();
        let context = ToolContext {
            plan_updates: Some(plan_sender),
            ..self.context.clone()
        };
        let mut turns = 0;
        // The model is told once about tasks still running when it answers; a second answer
        // ends the run and `exec` stops them.
        let mut told_about_tasks = false;
        // Answers that missed the schema and went back to the model.
        let mut rejected = 0;
        // Answers in a row that were calls written out as text.
        let mut written = 0;
        let mut sizes = Estimator::new(&request.tools);
        let mut plan: Vec<PlanStep> = Vec::new();
        let mut repeats = repeats::Repeats::default();
        self.read_first(&mut request, &context, &mut repeats).await;
        let ending = loop {
            self.record(&request.messages);
            if turns == self.max_turns {
                break self.final_summary(&mut request, &mut turns).await;
            }
            // Until the window is known there is nothing to compact: only the first request
            // is sent before it is.
            let threshold = self
                .window
                .now()
                .map(|window| (f64::from(window.tokens) * compaction::THRESHOLD) as u64);
            if threshold.is_some_and(|threshold| sizes.tokens(&request) > threshold)
                && let Err(ending) = self
                    .compact(&mut request, &sizes, &plan, Trigger::Threshold)
                    .await
            {
                break ending;
            }
            turns += 1;
            let completion = match self.request(&request, true).await {
                Ok(completion) => completion,
                // Too long after all (the estimate is an estimate): compact once, try again.
                Err(Ending::Failed(error)) if error.class == ErrorClass::ContextLength => {
                    match self
                        .compact(&mut request, &sizes, &plan, Trigger::ContextLength)
                        .await
                    {
                        Ok(true) => match self.request(&request, true).await {
                            Ok(completion) => completion,
                            Err(ending) => break ending,
                        },
                        Ok(false) => break Ending::Failed(error),
                        Err(ending) => break ending,
                    }
                }
                Err(ending) => break ending,
            };
            // An estimate teaches nothing about the model's tokenizer.
            if let Some(usage) = completion.usage.filter(|usage| !usage.estimated) {
                sizes.observe(&request, usage.prompt_tokens);
            }
            if let Some(exceeded) = self.ledger.exceeded() {
                let answer = completion.tool_calls.is_empty().then(|| {
                    let structured = self.check(&completion.text).and_then(Result::ok);
                    Answer {
                        text: completion.text,
                        structured,
                    }
                });
                break Ending::OverBudget(exceeded, answer);
            }
            let cut_off = completion.stop == StopReason::MaxTokens;
            if cut_off {
                self.output.emit(EventKind::Warning {
                    message: CUT_OFF_WARNING.into(),
                });
            }
            if completion.tool_calls.is_empty() {
                if let Some(tool) = self.written_call(&completion.text, &request) {
                    written += 1;
                    if written > 1 {
                        break Ending::Stuck(Stuck::WritingCalls(tool));
                    }
                    self.output.emit(EventKind::Warning {
                        message: written_call_warning(&tool),
                    });
                    send_back(&mut request, completion.text, written_call_note(&tool));
                    continue;
                }
                if !told_about_tasks {
                    let running = self.tasks.running().await;
                    if !running.is_empty() {
                        told_about_tasks = true;
                        send_back(
                            &mut request,
                            completion.text,
                            still_running_notice(&running),
                        );
                        continue;
                    }
                }
                match self.judge(completion.text, &mut rejected, &mut request) {
                    Some(ending) => break ending,
                    None => continue,
                }
            }
            written = 0;
            // Tools are wanted after all: the answer is not due yet.
            if let Some(format) = &mut request.answer_format {
                format.answer_now = false;
            }
            let repeated = repeats.check(&completion.tool_calls, self.toolset);
            // Kept before its calls run: a run killed meanwhile leaves calls a resume can
            // give "interrupted" results.
            request.messages.push(Message::Assistant {
                text: completion.text,
                tool_calls: completion.tool_calls.clone(),
            });
            self.record(&request.messages);
            if let Some(strikes) = repeated {
                let refused = calls::refuse_all(
                    &completion.tool_calls,
                    REPEATED_CALL,
                    self.toolset,
                    self.output,
                );
                request.messages.extend(refused);
                if strikes == 1 {
                    continue;
                }
                match self.answer_now(&mut request, &mut turns).await {
                    // Still a call, written out as text: the model has no answer to give.
                    Ok(text) if self.written_call(&text, &request).is_some() => {
                        break Ending::Stuck(Stuck::Repeating);
                    }
                    Ok(text) => match self.judge(text, &mut rejected, &mut request) {
                        Some(ending) => break ending,
                        None => continue,
                    },
                    Err(ending) => break ending,
                }
            }
            let results = calls::run_all(
                &completion.tool_calls,
                cut_off,
                calls::result_cap(self.window().await.tokens, completion.tool_calls.len()),
                self.toolset,
                &context,
                self.output,
            )
            .await;
            repeats.ran(&results);
            while let Ok(steps) = plan_updates.try_recv() {
                plan.clone_from(&steps);
                self.output.emit(EventKind::Plan { steps });
            }
            request.messages.extend(results);
            if self.context.cancel.is_cancelled() {
                break Ending::Cancelled;
            }
        };
        // The answer ends the conversation a resume continues.
        let answer = match &ending {
            Ending::Answered(answer) | Ending::OverBudget(_, Some(answer)) => Some(&answer.text),
            Ending::OutOfTurns(text) => Some(text),
            _ => None,
        };
        if let Some(text) = answer {
            request.messages.push(Message::Assistant {
                text: text.clone(),
                tool_calls: Vec::new(),
            });
        }
        self.record(&request.messages);
        Report { ending, turns }
    }

    /// Reads [`AgentRun::first_reads`] into the conversation as a turn of `read_file` calls,
    /// as if the model had made them; the repeat guard knows them from then on.
    async fn read_first(
        &self,
        request: &mut Request,
        context: &ToolContext,
        repeats: &mut repeats::Repeats,
    ) {
        if self.first_reads.is_empty() || self.toolset.lookup("read_file").is_err() {
            return;
        }
        let calls = first_reads::calls(&self.first_reads);
        repeats.check(&calls, self.toolset);
        request.messages.push(Message::Assistant {
            text: String::new(),
            tool_calls: calls.clone(),
        });
        let cap = calls::result_cap(self.window().await.tokens, calls.len());
        let results = calls::run_all(&calls, false, cap, self.toolset, context, self.output).await;
        repeats.ran(&results);
        request.messages.extend(results);
    }

    /// Hands the conversation's new messages to the run's transcript, if it keeps one.
    fn record(&self, messages: &[Message]) {
        if let Some(transcript) = self.transcript {
            transcript.record(messages);
        }
    }

    /// Decides on an answer the model gave without calling a tool: the run's ending, or `None`
    /// when it missed the schema and went back to the model with its violations (while
    /// retries are left; `rejected` counts them).
    fn judge(&self, text: String, rejected: &mut u32, request: &mut Request) -> Option<Ending> {
        let structured = match self.check(&text) {
            None => None,
            Some(Ok(value)) => Some(value),
            Some(Err(violations)) => {
                let retries = self.schema.map_or(0, |check| check.retries);
                if *rejected == retries {
                    // Kept in the conversation: a resumed session shows what was refused.
                    request.messages.push(Message::Assistant {
                        text,
                        tool_calls: Vec::new(),
                    });
                    return Some(Ending::SchemaUnsatisfied {
                        violations,
                        retries,
                    });
                }
                *rejected += 1;
                self.output.emit(EventKind::Warning {
                    message: format!(
                        "the final answer does not satisfy --output-schema; the errors went \
                         back to the model (retry {rejected} of {retries}):\n{}",
                        structured::list(&violations)
                    ),
                });
                send_back(request, text, structured::feedback(&violations));
                // The answer is due: a server that can hold it to the schema is asked to.
                if let Some(format) = &mut request.answer_format {
                    format.answer_now = true;
                }
                return None;
            }
        };
        Some(Ending::Answered(Answer { text, structured }))
    }

    /// The answer `text` checked against the run's schema; `None` when it has none.
    fn check(&self, text: &str) -> Option<Result<Value, Vec<Violation>>> {
        self.schema.map(|check| check.schema.check(text))
    }

    /// The tool `text` calls, when it is a call of a tool `request` offers written out as
    /// text — unless `--output-schema` accepts it: then it is the answer asked for, whatever
    /// it looks like.
    fn written_call(&self, text: &str, request: &Request) -> Option<String> {
        let offered: Vec<&str> = request
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect();
        written_calls::called_tool(text, &offered)
            .filter(|_| !matches!(self.check(text), Some(Ok(_))))
    }

    /// The model's context window, waited for (the server is still being asked only right
    /// after the first response) unless the run is cancelled meanwhile: then the default,
    /// since the run is ending anyway.
    async fn window(&self) -> ContextWindow {
        tokio::select! {
            window = self.window.get() => window,
            () = self.context.cancel.cancelled() => ContextWindow::DEFAULT,
        }
    }

    /// Replaces the older turns of `request` by the model's summary of them (see
    /// [`compaction`]) and reports it; `Ok(false)` when there is nothing older to summarise.
    async fn compact(
        &self,
        request: &mut Request,
        sizes: &Estimator,
        plan: &[PlanStep],
        trigger: Trigger,
    ) -> Result<bool, Ending> {
        let before = sizes.tokens(request);
        // A request the provider refused proves the estimate wrong: keep only the newest turn.
        let (reason, keep) = match trigger {
            Trigger::Threshold => ("threshold", compaction::KEEP_TURNS),
            Trigger::ContextLength => ("context_length", 1),
        };
        let window = self.window().await.tokens;
        let Some(split) = compaction::split(&request.messages, keep, sizes, u64::from(window))
        else {
            return Ok(false);
        };
        let task = match request.messages.first() {
            Some(Message::User { content }) => content.clone(),
            _ => String::new(),
        };
        let summary = compaction::summary_request(
            &request.system,
            &task,
            &request.messages[1..split],
            sizes,
            window,
        );
        let completion = self.request(&summary, false).await?;
        if completion.text.trim().is_empty() {
            self.output.emit(EventKind::Warning {
                message: "the model's summary of the conversation was empty; it was not \
                          compacted"
                    .into(),
            });
            return Ok(false);
        }
        request.messages = compaction::rebuild(&request.messages, split, &completion.text, plan);
        if let Some(transcript) = self.transcript {
            transcript.rewrite(&request.messages);
        }
        self.output.emit(EventKind::Compaction {
            reason: reason.to_string(),
            tokens_before: before,
            tokens_after: sizes.tokens(request),
            messages_summarized: split - 1,
        });
        Ok(true)
    }

    /// One model request, streaming its reasoning and (when `visible`: not for a summary the
    /// loop asks for itself) its text into events.
    async fn request(
        &self,
        request: &Request,
        visible: bool,
    ) -> Result<crate::provider::Completion, Ending> {
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
        self.ledger.record(counts);
        self.output.emit(EventKind::Usage(totals(&counts)));
        if let Err(error) = self.ledger.publish() {
            self.output.emit(EventKind::Warning {
                message: format!(
                    "cannot report this run's token usage to the run that launched it: {error}"
                ),
            });
        }
    }

    /// The model repeats itself: ask for its answer with no tools on offer for this one
    /// request (they are back for any turn after it, should the answer miss the schema).
    async fn answer_now(&self, request: &mut Request, turns: &mut u32) -> Result<String, Ending> {
        request.messages.push(Message::User {
            content: ANSWER_NOW_REQUEST.into(),
        });
        let tools = std::mem::take(&mut request.tools);
        *turns += 1;
        let answered = self.request(request, true).await;
        request.tools = tools;
        answered.map(|completion| completion.text)
    }

    /// The budget is spent: ask once more, without tools, for a summary.
    async fn final_summary(&self, request: &mut Request, turns: &mut u32) -> Ending {
        request.tools.clear();
        // A summary of what is left, not the answer: prose, whatever the schema.
        request.answer_format = None;
        request.messages.push(Message::User {
            content: OUT_OF_TURNS_REQUEST.into(),
        });
        *turns += 1;
        match self.request(request, true).await {
            Ok(completion) => Ending::OutOfTurns(completion.text),
            Err(Ending::Failed(error)) => {
                // The run is incomplete either way; the summary was a courtesy.
                self.output.emit(EventKind::Warning {
                    message: format!("could not get a summary after the last turn: {error}"),
                });
                Ending::OutOfTurns(String::new())
            }
            Err(other) => other,
        }
    }
}

/// An answer that is not taken goes back to the model, kept in the conversation with the
/// `note` that says why.
fn send_back(request: &mut Request, answer: String, note: String) {
    request.messages.push(Message::Assistant {
        text: answer,
        tool_calls: Vec::new(),
    });
    request.messages.push(Message::User { content: note });
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
        Notice::Waiting(waiting) => EventKind::Waiting {
            attempt: waiting.attempt,
            max_attempts: waiting.max_attempts,
            phase: match waiting.phase {
                WaitPhase::FirstByte => crate::output::WaitPhase::FirstByte,
                WaitPhase::Stream => crate::output::WaitPhase::Stream,
            },
            waited_ms: millis(waiting.waited),
            timeout_ms: millis(waiting.limit),
        },
    }
}

/// Why the conversation is compacted.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    /// The next request would fill most of the window.
    Threshold,
    /// The provider refused a request as longer than the window.
    ContextLength,
}

/// What the model is told when it answers while background tasks still run.
fn still_running_notice(running: &[TaskRecord]) -> String {
    let ids: Vec<&str> = running.iter().map(|task| task.id.as_str()).collect();
    let (count, verb) = match running.len() {
        1 => ("1 background task is".to_string(), "it"),
        n => (format!("{n} background tasks are"), "them"),
    };
    format!(
        "{count} still running: {}. Wait for {verb} with TaskOutput (block=true), stop {verb} \
         with TaskStop, or answer again to finish (they will be stopped).",
        ids.join(", ")
    )
}
