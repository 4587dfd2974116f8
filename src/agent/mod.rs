//! The turn loop: send the conversation, stream the answer, run the tools it asks for, send the
//! results, and repeat until the model answers without calling a tool or a budget runs out.
//!
//! The loop is provider-neutral (it speaks [`crate::provider::Message`]) and reports everything
//! through [`Output`]; it never decides exit codes — it says how the conversation ended and
//! `exec` maps that to a code. Its steps and its state are in `turns`; each safeguard on the
//! model's turns has a module of its own.

mod calls;
mod compaction;
mod cut_calls;
mod error_code;
pub(crate) mod first_reads;
mod loops;
pub(crate) mod permission;
mod plan;
mod repeats;
mod schema_retries;
mod still_running;
mod stream;
pub(crate) mod system_prompt;
#[cfg(test)]
mod testing;
mod turns;
mod verification;
mod written_calls;

use serde_json::Value;

use crate::hooks::Hooks;
use crate::output::{EventKind, Output, UsageTotals};
use crate::provider::{ContextWindow, Loop, Message, Provider, ProviderError, Usage, WindowLookup};
use crate::rules::{Narrowing, RuleSet};
use crate::runtime::Runtime;
use crate::session::Transcript;
use crate::structured::{OutputSchema, Violation};
use crate::tools::{ToolContext, Toolset};
use crate::usage::{Exceeded, Ledger};
use crate::verify::{CheckReport, Checks};
use turns::Turns;

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
    /// The run's runtime: every command, service and specialist it starts belongs to it; its
    /// background tasks are checked when the model answers.
    pub runtime: &'a Runtime,
    /// What the run tree has spent, checked against its budget after every response.
    pub ledger: &'a Ledger,
    /// The model's context window: the conversation is compacted before it outgrows it, and
    /// tool results are sized to it.
    pub window: WindowLookup,
    /// The schema the final answer must satisfy (`--output-schema`), if any.
    pub schema: Option<SchemaCheck<'a>>,
    /// Where the conversation is kept as it grows (the run's session), if anywhere.
    pub transcript: Option<&'a Transcript>,
    /// The caller's hooks: around each tool call and on the final answer.
    pub hooks: &'a Hooks,
    /// The caller's permission rules, checked on each tool call before it runs.
    pub rules: &'a RuleSet,
    /// The skills in use, whose `allowed-tools` narrow what the rules allow (a loaded skill
    /// joins them).
    pub narrowing: &'a Narrowing,
    /// The caller's checks (`--verify`), which an answer that would end the run must pass;
    /// [`Checks::none`] for none.
    pub checks: &'a Checks,
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
    /// A `--verify` check did not pass on the model's answer, the last after every retry.
    VerifyFailed {
        /// The answer the checks did not pass on.
        answer: Answer,
        /// Which check, how it ended and the end of its output, for a person.
        message: String,
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
    /// `stop` hooks refused its answers more often than `hooks::MAX_STOP_REFUSALS` allows;
    /// the last refusal's reason.
    StopRefused(String),
    /// Its responses were cut for looping (`provider::repetition`) `cuts` times in a row, the
    /// note after each unheeded; `last` is the loop of the last one.
    Looping {
        /// How many responses in a row were cut.
        cuts: u32,
        /// The loop the last one was cut in.
        last: Loop,
    },
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
    /// Each `--verify` check over the run (`run_end.verify`); empty without checks.
    pub(crate) verify: Vec<CheckReport>,
    /// The tools of the calls cut at the output token limit that the model never made again
    /// (what `--strict` fails a run for).
    pub(crate) cut_calls: Vec<String>,
}

impl AgentRun<'_> {
    /// Runs the conversation to its end: `history` (a resumed session's messages), then
    /// `prompt` (the user's message: the prompt and its images).
    pub async fn run(&self, system: String, history: Vec<Message>, prompt: Message) -> Report {
        Turns::new(self, system, history, prompt).run().await
    }

    /// Hands the conversation's new messages to the run's transcript, if it keeps one.
    fn record(&self, messages: &[Message]) {
        if let Some(transcript) = self.transcript {
            transcript.record(messages);
        }
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

    /// Reports a `warning` event.
    fn warn(&self, message: String) {
        self.output.emit(EventKind::Warning { message });
    }
}
