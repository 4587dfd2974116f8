//! The compaction step: before a request that would fill most of the window, or after the
//! provider refused one as too long, the older turns are replaced by the model's summary of
//! them (the pieces are in [`compaction`]).

use crate::output::{CompactionReason, EventKind};
use crate::provider::Message;

use super::Turns;
use crate::agent::{Ending, compaction};

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
    /// reports it; `Ok(false)` when there is nothing older to summarise.
    pub(super) async fn compact(&mut self, reason: CompactionReason) -> Result<bool, Ending> {
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
}
