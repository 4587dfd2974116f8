//! The prompt style: what the system prompt and the tool list look like for the run's model,
//! and why it is the one it is (`--prompt-style`, `prompt_style` in config.toml, or chosen by
//! the server). A small model given the full prompt answers a question with an essay instead
//! of calling a tool; the compact one (a short system prompt, only the tools the catalog keeps
//! for it) is what `--provider local` was measured with (docs/LOCAL_MODEL.md), and it serves
//! any provider whose server runs a small model.

/// A context window reported under this many tokens marks a small model, which gets the
/// compact style when nothing else chose one.
pub const SMALL_WINDOW: u32 = 32_768;

/// What the system prompt and the tool list look like. Its words are clap's and serde's names
/// for the variants (`compact`, `full`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum PromptStyle {
    /// A short system prompt and only the tools a small model uses well (the tool catalog,
    /// `tools::ToolId`, says which it leaves out).
    Compact,
    /// The system prompt and every tool.
    Full,
}

/// Why a run has its prompt style (`run_start.promptStyle.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StyleReason {
    /// `--prompt-style`.
    Flag,
    /// `prompt_style` in config.toml.
    ConfigFile,
    /// `--provider local` (or `ZERO_LOCAL_PROMPT` with it).
    LocalProvider,
    /// The server identified itself as llama.cpp (its `/props`).
    LlamaCpp,
    /// The context window is under [`SMALL_WINDOW`] tokens.
    SmallWindow,
    /// Nothing said otherwise.
    Default,
}

/// The run's prompt style and why (`run_start.promptStyle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct StyleChoice {
    /// The style.
    pub style: PromptStyle,
    /// Why.
    pub reason: StyleReason,
}

impl StyleChoice {
    /// The style a run whose caller chose none gets from what its server said: compact for
    /// llama.cpp (`llama_cpp`, from its `/props`) or a `window` under [`SMALL_WINDOW`], else
    /// full.
    pub fn for_server(llama_cpp: bool, window: Option<u32>) -> StyleChoice {
        let (style, reason) = match (llama_cpp, window) {
            (true, _) => (PromptStyle::Compact, StyleReason::LlamaCpp),
            (false, Some(tokens)) if tokens < SMALL_WINDOW => {
                (PromptStyle::Compact, StyleReason::SmallWindow)
            }
            (false, _) => (PromptStyle::Full, StyleReason::Default),
        };
        StyleChoice { style, reason }
    }

    /// Whether the prompt is the compact one.
    pub fn compact(self) -> bool {
        self.style == PromptStyle::Compact
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_or_a_small_window_chooses_the_compact_style() {
        let compact = |reason| StyleChoice {
            style: PromptStyle::Compact,
            reason,
        };
        assert_eq!(
            StyleChoice::for_server(true, Some(131_072)),
            compact(StyleReason::LlamaCpp)
        );
        assert_eq!(
            StyleChoice::for_server(false, Some(16_384)),
            compact(StyleReason::SmallWindow)
        );
        let full = StyleChoice {
            style: PromptStyle::Full,
            reason: StyleReason::Default,
        };
        assert_eq!(StyleChoice::for_server(false, Some(SMALL_WINDOW)), full);
        assert_eq!(StyleChoice::for_server(false, None), full);
    }

    #[test]
    fn the_choice_is_said_in_the_schemas_words() {
        let choice = StyleChoice::for_server(false, Some(8192));
        assert_eq!(
            serde_json::to_value(choice).unwrap(),
            serde_json::json!({"style": "compact", "reason": "small_window"})
        );
    }
}
