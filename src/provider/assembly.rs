//! Building one [`Completion`] from a stream, shared by both wires.
//!
//! The wires differ in framing, but what they deliver is the same: text and reasoning to pass
//! on at once, tool calls assembled from fragments keyed by an index (OpenAI's `tool_calls[].index`,
//! Anthropic's content-block index), usage, and a stop reason. The assembly also remembers whether
//! anything reached the caller, because that decides whether a failed attempt may be retried.

use std::collections::BTreeMap;

use super::{Completion, StopReason, StreamDelta, ToolCall, Usage};

/// A tool call whose fragments are still arriving.
#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// The response received so far in one attempt.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    delivered: bool,
}

impl Assembly {
    /// An empty response.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Appends visible text and passes it on.
    pub(crate) fn text(&mut self, fragment: &str, on_delta: &mut (dyn FnMut(StreamDelta) + Send)) {
        if !fragment.is_empty() {
            self.text.push_str(fragment);
            self.delivered = true;
            on_delta(StreamDelta::Text(fragment.to_owned()));
        }
    }

    /// Passes reasoning text on (it is not part of the answer, so it is not kept).
    pub(crate) fn reasoning(
        &mut self,
        fragment: &str,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) {
        if !fragment.is_empty() {
            self.delivered = true;
            on_delta(StreamDelta::Reasoning(fragment.to_owned()));
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
        }
        call.arguments.push_str(arguments);
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

    /// The usage so far, created on first use (Anthropic reports input and output separately).
    pub(crate) fn usage_mut(&mut self) -> &mut Usage {
        self.usage.get_or_insert_with(Usage::default)
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

    /// The finished response. Calls are ordered by index; a call without an id gets `call_<n>`;
    /// empty arguments become `{}` (a call to a tool that takes none). Some servers report
    /// `stop` next to tool calls, so calls mean [`StopReason::ToolUse`] — unless the output
    /// limit ended the response, which may have cut the last call's arguments: that stays
    /// [`StopReason::MaxTokens`].
    pub(crate) fn finish(self) -> Completion {
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
            _ if !tool_calls.is_empty() => StopReason::ToolUse,
            Some(stop) => stop,
            None => StopReason::EndTurn,
        };
        Completion {
            text: self.text,
            tool_calls,
            usage: self.usage,
            stop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_calls_assemble_by_index_whatever_the_interleaving() {
        let mut assembly = Assembly::new();
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
        let mut assembly = Assembly::new();
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
        let mut assembly = Assembly::new();
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
    fn a_started_call_counts_as_started() {
        let mut assembly = Assembly::new();
        assembly.tool_call(0, Some("id"), Some("bash"), "");
        assert!(assembly.has_started());
    }
}
