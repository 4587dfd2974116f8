//! The compaction step: before a request that would fill most of the window, or after the
//! provider refused one as too long, the older turns are replaced by the model's summary of
//! them (the pieces are in [`compaction`]).

use crate::output::{CompactionReason, EventKind};
use crate::provider::Message;

use super::Turns;
use crate::agent::{Ending, compaction};

/// What came of an attempt to compact the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compacted {
    /// The older turns were replaced by the model's summary.
    Yes,
    /// The conversation is only its first message, the task, which compaction keeps verbatim:
    /// there is nothing older to summarise.
    OnlyTheTask,
    /// The model's summary was empty, so the conversation was left as it was.
    EmptySummary,
}

impl Turns<'_, '_> {
    /// Compacts the conversation before a request that would fill most of the window. Until
    /// the window is known there is nothing to compact: only the first request is sent before
    /// it is.
    pub(super) async fn compact_if_outgrown(&mut self) -> Result<(), Ending> {
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
    /// reports it; says why not when it could not.
    pub(super) async fn compact(&mut self, reason: CompactionReason) -> Result<Compacted, Ending> {
        let agent = self.agent;
        let before = self.sizes.tokens(&self.request);
        // A request the provider refused proves the estimate wrong: keep only the newest turn,
        // and when that is the only one after the task, it is what does not fit: keep none.
        let keeps: &[usize] = match reason {
            CompactionReason::Threshold => &[compaction::KEEP_TURNS],
            CompactionReason::ContextLength => &[1, 0],
        };
        let window = agent.window().await.tokens;
        let messages = &self.request.messages;
        let split = keeps
            .iter()
            .find_map(|&keep| compaction::split(messages, keep, &self.sizes, u64::from(window)));
        let Some(split) = split else {
            return Ok(Compacted::OnlyTheTask);
        };
        let task = match messages.first() {
            Some(Message::User { content, .. }) => content.clone(),
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
            return Ok(Compacted::EmptySummary);
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
        Ok(Compacted::Yes)
    }
}
