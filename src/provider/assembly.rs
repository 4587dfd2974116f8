//! Building one [`Completion`] from a stream, shared by both wires.
//!
//! The wires differ in framing, but what they deliver is the same: text and reasoning to pass
//! on at once, tool calls assembled from fragments keyed by an index (OpenAI's `tool_calls[].index`,
//! Anthropic's content-block index), usage, and a stop reason. The assembly also remembers whether
//! anything reached the caller, because that decides whether a failed attempt may be retried,
//! and how much the model streamed, because a response cut off before the wire reported its
//! usage still spent that (see [`Assembly::spent`]).

use std::collections::BTreeMap;

use super::repetition::{self, Loop, Repetition};
use super::{Completion, StopReason, StreamDelta, ThinkingBlock, ToolCall, Usage};

/// A tool call whose fragments are still arriving.
#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// How many bytes of text make a token, for estimates: the usual rule of thumb for English
/// and code under the common tokenizers. An estimate is only made when the wire reported no
/// count of its own, and is marked as one ([`Usage::estimated`]).
const BYTES_PER_TOKEN: u64 = 4;

/// Which of a response's counts a usage report from the wire settles. Anthropic reports the
/// input at the start and the output at the end; a stream cut in between settled only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settles {
    /// The prompt's counts.
    Input,
    /// The generated tokens.
    Output,
    /// All of them (OpenAI's one usage chunk).
    Both,
    /// None: the counts are provisional (Anthropic's output count at the start).
    Neither,
}

/// The response received so far in one attempt.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    /// The reasoning blocks to send back, by the wire's block index.
    thinking: BTreeMap<usize, ThinkingBlock>,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    delivered: bool,
    /// The size of the request body this answers, for an estimate of its prompt tokens.
    request_bytes: usize,
    /// Everything the model generated so far: text, reasoning, tool names and arguments.
    streamed_bytes: usize,
    input_settled: bool,
    output_settled: bool,
    /// Watches everything generated for a loop (see [`Assembly::looping`]).
    repetition: Repetition,
}

impl Assembly {
    /// An empty response to a request body of `request_bytes`.
    pub(crate) fn new(request_bytes: usize) -> Self {
        Assembly {
            request_bytes,
            ..Self::default()
        }
    }

    /// Appends visible text and passes it on.
    pub(crate) fn text(&mut self, fragment: &str, on_delta: &mut (dyn FnMut(StreamDelta) + Send)) {
        if !fragment.is_empty() {
            self.text.push_str(fragment);
            self.streamed_bytes += fragment.len();
            self.delivered = true;
            on_delta(StreamDelta::Text(fragment.to_owned()));
            if let Some(found) = self.repetition.push(fragment) {
                // The conversation keeps one copy of the span, not the loop.
                let start = repetition::loop_start(&self.text, found.period);
                let end = (start + found.period).min(self.text.len());
                let end = (end..=self.text.len())
                    .find(|&end| self.text.is_char_boundary(end))
                    .unwrap_or(self.text.len());
                self.text.truncate(end);
            }
        }
    }

    /// Passes reasoning text on (it is not part of the answer, so it is not kept).
    pub(crate) fn reasoning(
        &mut self,
        fragment: &str,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) {
        if !fragment.is_empty() {
            self.streamed_bytes += fragment.len();
            self.delivered = true;
            on_delta(StreamDelta::Reasoning(fragment.to_owned()));
            self.repetition.push(fragment);
        }
    }

    /// Begins the reasoning block at `index` (Anthropic's `thinking`, `redacted_thinking`),
    /// kept to be sent back with the turn; the text it brings is passed on as reasoning.
    pub(crate) fn thinking_block(
        &mut self,
        index: usize,
        block: ThinkingBlock,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) {
        if let ThinkingBlock::Thinking { thinking, .. } = &block {
            self.reasoning(thinking, on_delta);
        }
        self.thinking.insert(index, block);
    }

    /// Appends reasoning text to the block at `index` and passes it on.
    pub(crate) fn thinking_text(
        &mut self,
        index: usize,
        fragment: &str,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) {
        if let Some(ThinkingBlock::Thinking { thinking, .. }) = self.thinking.get_mut(&index) {
            thinking.push_str(fragment);
        }
        self.reasoning(fragment, on_delta);
    }

    /// Appends to the signature of the reasoning block at `index`.
    pub(crate) fn thinking_signature(&mut self, index: usize, fragment: &str) {
        if let Some(ThinkingBlock::Thinking { signature, .. }) = self.thinking.get_mut(&index) {
            signature.push_str(fragment);
        }
    }

    /// Records what a fragment says about the call at `index`: the id and name the first time
    /// they appear (servers send them with the first fragment, before it, or rarely later),
    /// and the next piece of the arguments.
    pub(crate) fn tool_call(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) {
        let call = self.calls.entry(index).or_default();
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            call.id.get_or_insert_with(|| id.to_owned());
        }
        if let Some(name) = name.filter(|name| !name.is_empty())
            && call.name.is_empty()
        {
            call.name = name.to_owned();
            self.streamed_bytes += name.len();
        }
        // A payload, not prose: it may repeat itself as it likes (see `provider::repetition`).
        call.arguments.push_str(arguments);
        self.streamed_bytes += arguments.len();
    }

    /// The loop the output ended in, once it did: the response is cut there (text and
    /// reasoning are watched as one stream, tool calls' arguments not; see
    /// `provider::repetition`).
    pub(crate) fn looping(&self) -> Option<Loop> {
        self.repetition.found()
    }

    /// The index of the call with this id, when one has it.
    pub(crate) fn call_index(&self, id: &str) -> Option<usize> {
        self.calls
            .iter()
            .find(|(_, call)| call.id.as_deref() == Some(id))
            .map(|(index, _)| *index)
    }

    /// The index after the highest one seen, for a call that arrives without one.
    pub(crate) fn next_call_index(&self) -> usize {
        self.calls.keys().next_back().map_or(0, |last| last + 1)
    }

    /// The usage so far, created on first use, for a report from the wire that `settles`
    /// the counts it names (Anthropic reports input and output separately).
    pub(crate) fn usage_mut(&mut self, settles: Settles) -> &mut Usage {
        let (input, output) = match settles {
            Settles::Input => (true, false),
            Settles::Output => (false, true),
            Settles::Both => (true, true),
            Settles::Neither => (false, false),
        };
        self.input_settled |= input;
        self.output_settled |= output;
        self.usage.get_or_insert_with(Usage::default)
    }

    /// What this attempt spent, when it is known to have spent anything: the wire's counts,
    /// with an estimate ([`BYTES_PER_TOKEN`]) of those it never settled — the prompt's from the
    /// request's size, the output's from what streamed — marked [`Usage::estimated`]. `None`
    /// for an attempt that brought neither counts nor content (refused, or cut before it
    /// began), about which nothing is known.
    pub(crate) fn spent(&self) -> Option<Usage> {
        if self.usage.is_none() && self.streamed_bytes == 0 {
            return None;
        }
        Some(self.counted())
    }

    /// The wire's counts completed with estimates (see [`Assembly::spent`]).
    fn counted(&self) -> Usage {
        let estimate = |bytes: usize| (bytes as u64).div_ceil(BYTES_PER_TOKEN);
        let mut usage = self.usage.unwrap_or_default();
        if !self.input_settled {
            usage.prompt_tokens = usage.prompt_tokens.max(estimate(self.request_bytes));
            usage.estimated = true;
        }
        if !self.output_settled {
            usage.completion_tokens = usage.completion_tokens.max(estimate(self.streamed_bytes));
            usage.estimated = true;
        }
        usage
    }

    /// Records why the model stopped.
    pub(crate) fn stop(&mut self, reason: StopReason) {
        self.stop = Some(reason);
    }

    /// Whether the model said why it stopped, i.e. the response is complete even if the stream
    /// ends without its final marker.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stop.is_some()
    }

    /// Whether anything reached the caller or a tool call began. After that, a failure is
    /// reported rather than retried: a retry would show the user the same text twice.
    pub(crate) fn has_started(&self) -> bool {
        self.delivered || !self.calls.is_empty()
    }

    /// The finished response. Its usage is the wire's, estimated where the wire did not say
    /// (some servers ignore `stream_options.include_usage`; see [`Assembly::spent`]). Calls
    /// are ordered by index; a call without an id gets `call_<n>`;
    /// empty arguments become `{}` (a call to a tool that takes none). Some servers report
    /// `stop` next to tool calls, so calls mean [`StopReason::ToolUse`] — unless the output
    /// limit ended the response, which may have cut the last call's arguments: that stays
    /// [`StopReason::MaxTokens`].
    pub(crate) fn finish(self) -> Completion {
        let usage = Some(self.counted());
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .enumerate()
            .map(|(n, call)| ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{n}")),
                name: call.name,
                arguments: if call.arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    call.arguments
                },
            })
            .collect();
        let stop = match self.stop {
            Some(StopReason::MaxTokens) => StopReason::MaxTokens,
            Some(StopReason::Repeating(found)) => StopReason::Repeating(found),
            _ if !tool_calls.is_empty() => StopReason::ToolUse,
            Some(stop) => stop,
            None => StopReason::EndTurn,
        };
        Completion {
            text: self.text,
            tool_calls,
            thinking: self.thinking.into_values().collect(),
            usage,
            stop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_calls_assemble_by_index_whatever_the_interleaving() {
        let mut assembly = Assembly::new(0);
        assembly.tool_call(1, Some("b"), Some("grep"), "{\"pat");
        assembly.tool_call(0, Some("a"), Some("read_file"), "");
        assembly.tool_call(0, None, None, "{\"path\":");
        assembly.tool_call(1, None, None, "tern\":\"x\"}");
        assembly.tool_call(0, None, None, "\"a.rs\"}");
        let done = assembly.finish();
        assert_eq!(
            done.tool_calls,
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.rs"}"#.into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "grep".into(),
                    arguments: r#"{"pattern":"x"}"#.into()
                },
            ]
        );
        assert_eq!(done.stop, StopReason::ToolUse);
    }

    #[test]
    fn late_id_is_kept_and_missing_id_is_generated() {
        let mut assembly = Assembly::new(0);
        assembly.tool_call(0, None, Some("plan"), "{}");
        assembly.tool_call(1, None, Some("ls"), "");
        assembly.tool_call(1, Some("late"), None, "");
        let calls = assembly.finish().tool_calls;
        assert_eq!(calls[0].id, "call_0");
        assert_eq!(calls[1].id, "late");
        assert_eq!(calls[1].arguments, "{}");
    }

    #[test]
    fn text_is_delivered_and_kept_and_empty_fragments_do_not_count() {
        let mut seen = Vec::new();
        let mut on_delta = |delta| seen.push(delta);
        let mut assembly = Assembly::new(0);
        assembly.text("", &mut on_delta);
        assert!(!assembly.has_started());
        assembly.reasoning("hmm", &mut on_delta);
        assembly.text("Hel", &mut on_delta);
        assembly.text("lo", &mut on_delta);
        assert!(assembly.has_started());
        let done = assembly.finish();
        assert_eq!(done.text, "Hello");
        assert_eq!(done.stop, StopReason::EndTurn);
        assert_eq!(
            seen,
            vec![
                StreamDelta::Reasoning("hmm".into()),
                StreamDelta::Text("Hel".into()),
                StreamDelta::Text("lo".into())
            ]
        );
    }

    #[test]
    fn a_cut_response_spent_an_estimate_of_what_streamed_and_of_its_prompt() {
        let mut assembly = Assembly::new(4000);
        assert_eq!(
            assembly.spent(),
            None,
            "nothing known of an attempt that brought nothing"
        );
        assembly.reasoning(&"r".repeat(100), &mut |_| {});
        assembly.text(&"t".repeat(301), &mut |_| {});
        assembly.tool_call(0, Some("id"), Some("bash"), "{\"command\":");
        let spent = assembly.spent().unwrap();
        assert_eq!(spent.prompt_tokens, 1000);
        // 100 + 301 + 4 ("bash") + 11 bytes, a quarter of it rounded up.
        assert_eq!(spent.completion_tokens, 104);
        assert!(spent.estimated);
    }

    #[test]
    fn counts_the_wire_settled_are_kept_and_only_the_rest_estimated() {
        let mut assembly = Assembly::new(4000);
        let usage = assembly.usage_mut(Settles::Input);
        usage.prompt_tokens = 77;
        usage.completion_tokens = 1;
        assembly.text(&"t".repeat(40), &mut |_| {});
        let spent = assembly.spent().unwrap();
        assert_eq!((spent.prompt_tokens, spent.completion_tokens), (77, 10));
        assert!(spent.estimated);

        assembly.usage_mut(Settles::Output).completion_tokens = 12;
        let finished = assembly.finish().usage.unwrap();
        assert_eq!(
            (finished.prompt_tokens, finished.completion_tokens),
            (77, 12)
        );
        assert!(!finished.estimated);
    }

    #[test]
    fn a_complete_response_without_usage_is_estimated() {
        let mut assembly = Assembly::new(400);
        assembly.text("four", &mut |_| {});
        assembly.stop(StopReason::EndTurn);
        let usage = assembly.finish().usage.unwrap();
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (100, 1));
        assert!(usage.estimated);
    }

    #[test]
    fn a_calls_arguments_may_repeat_themselves_and_prose_may_not() {
        let mut assembly = Assembly::new(0);
        let zeros = "0".repeat(4 * repetition::WINDOW);
        for piece in zeros.as_bytes().chunks(7) {
            let piece = std::str::from_utf8(piece).unwrap();
            assembly.tool_call(0, Some("id"), Some("write_file"), piece);
        }
        assert_eq!(assembly.looping(), None);
        assembly.text(&"All zeros. ".repeat(2 * repetition::WINDOW), &mut |_| {});
        assert!(assembly.looping().is_some());
    }

    #[test]
    fn a_started_call_counts_as_started() {
        let mut assembly = Assembly::new(0);
        assembly.tool_call(0, Some("id"), Some("bash"), "");
        assert!(assembly.has_started());
    }
}
