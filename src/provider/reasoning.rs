//! How hard a reasoning model thinks before it answers (`--reasoning-effort`, `reasoning_effort`
//! in config.toml), and what each wire sends for it.
//!
//! OpenAI's Chat Completions take the level itself as `reasoning_effort` (`minimal` and `xhigh`
//! exist for some models only; a model that does not know a level answers 400, and the run
//! asks again without the field). Anthropic's Messages take extended thinking with a budget of
//! tokens instead, so each level stands for a budget ([`ReasoningEffort::thinking_budget`]):
//! the API's minimum of 1024 for `minimal`, doubling and quadrupling from there.

use serde::{Deserialize, Serialize};

/// The least thinking budget the Anthropic API accepts.
pub(crate) const MIN_THINKING_BUDGET: u32 = 1024;

/// How hard a reasoning model thinks: a closed vocabulary, the same words on the command line,
/// in config.toml and on OpenAI's wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// As little reasoning as the model allows (Anthropic: the minimum budget, 1024 tokens).
    Minimal,
    /// Light reasoning (Anthropic: 2048 tokens).
    Low,
    /// The usual default of reasoning models (Anthropic: 8192 tokens).
    Medium,
    /// Thorough reasoning (Anthropic: 16384 tokens).
    High,
    /// The most the model offers (Anthropic: 32768 tokens).
    Xhigh,
}

impl ReasoningEffort {
    /// The level's word, as OpenAI's `reasoning_effort` takes it (clap's and serde's too).
    pub(crate) fn word(self) -> &'static str {
        match self {
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
        }
    }

    /// The Anthropic `thinking.budget_tokens` the level stands for: at least the API's minimum
    /// ([`MIN_THINKING_BUDGET`]).
    pub(crate) fn thinking_budget(self) -> u32 {
        match self {
            ReasoningEffort::Minimal => MIN_THINKING_BUDGET,
            ReasoningEffort::Low => 2048,
            ReasoningEffort::Medium => 8192,
            ReasoningEffort::High => 16384,
            ReasoningEffort::Xhigh => 32768,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn the_words_are_the_same_on_the_command_line_in_the_file_and_on_the_wire() {
        for effort in ReasoningEffort::value_variants() {
            let clap_word = effort.to_possible_value().unwrap().get_name().to_owned();
            let serde_word = serde_json::to_value(effort).unwrap();
            assert_eq!(clap_word, effort.word());
            assert_eq!(serde_word, effort.word());
        }
    }

    #[test]
    fn budgets_grow_with_the_level_from_the_api_minimum() {
        let budgets: Vec<u32> = ReasoningEffort::value_variants()
            .iter()
            .map(|effort| effort.thinking_budget())
            .collect();
        assert_eq!(budgets, [1024, 2048, 8192, 16384, 32768]);
        assert!(budgets.iter().all(|budget| *budget >= MIN_THINKING_BUDGET));
    }
}
