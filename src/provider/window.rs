//! How many tokens the model's context window holds, so the agent loop can compact the
//! conversation before it outgrows it and size tool results to it.
//!
//! In order: `--context-window`, `context_window` in config.toml, what the server says (asked
//! by `provider::probe`, once per run, only for an endpoint that is not an official API), a
//! window a refusal as too long named (learned during the run), a table of known models, and
//! [`DEFAULT_CONTEXT_WINDOW`]. The first two are resolved by `exec`; the rest here.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

use super::probe::{PROBE_TIMEOUT, ServerReport};
use super::{MIN_CONTEXT_WINDOW, Provider};

/// The window assumed when nothing says otherwise: what most current hosted models offer at
/// least, and documented as the default.
pub const DEFAULT_CONTEXT_WINDOW: u32 = 128_000;

/// The context window of the run's model, and where that number came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextWindow {
    /// Tokens the model can attend to: prompt and response together.
    pub tokens: u32,
    /// Where `tokens` came from.
    pub source: WindowSource,
}

/// Where a context window's size came from (`run_end.contextWindow.source`, in the words
/// `output::WindowSource` gives it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// `--context-window`.
    Flag,
    /// `context_window` in config.toml.
    ConfigFile,
    /// The server said (llama.cpp's `/props`, vLLM's `/v1/models`).
    Server,
    /// zero's table of known models.
    KnownModel,
    /// Nothing said: [`DEFAULT_CONTEXT_WINDOW`].
    Default,
}

/// A context window being found out: the server is asked while the run's first request is
/// already on its way, so knowing the window costs the run no time. The first request needs no
/// window (there is nothing to compact yet); everything after it waits for the answer, which
/// by then has long arrived. A server that refuses a request as too long, naming its window,
/// has the last word ([`WindowLookup::learn`]): every clone of the lookup knows it from then on.
#[derive(Clone)]
pub struct WindowLookup {
    found: Shared<BoxFuture<'static, (ContextWindow, ServerReport)>>,
    /// The window a refusal named, in tokens; 0 while none has.
    learned: Arc<AtomicU32>,
}

impl WindowLookup {
    /// A window already known.
    pub fn known(window: ContextWindow) -> WindowLookup {
        WindowLookup::of(futures_util::future::ready((window, ServerReport::default())).boxed())
    }

    /// A lookup that waits for `found`, having learned nothing yet.
    fn of(found: BoxFuture<'static, (ContextWindow, ServerReport)>) -> WindowLookup {
        WindowLookup {
            found: found.shared(),
            learned: Arc::default(),
        }
    }

    /// Takes `tokens` as the window from now on: the server named it in refusing a request as
    /// too long, which beats whatever the flag, the probe or the table said (the server is
    /// what runs out of room).
    pub fn learn(&self, tokens: u32) {
        self.learned
            .store(tokens.max(MIN_CONTEXT_WINDOW), Ordering::Relaxed);
    }

    /// The window a refusal named, if one has.
    fn learned(&self) -> Option<ContextWindow> {
        let tokens = self.learned.load(Ordering::Relaxed);
        (tokens > 0).then_some(ContextWindow {
            tokens,
            source: WindowSource::Server,
        })
    }

    /// Starts finding the window of `provider`'s model on the current tokio runtime: `given`
    /// (from the flag or config.toml) if set, else what its server reports, else the table's,
    /// else [`DEFAULT_CONTEXT_WINDOW`].
    pub fn start(given: Option<ContextWindow>, provider: Arc<dyn Provider>) -> WindowLookup {
        if let Some(given) = given {
            return WindowLookup::known(given);
        }
        let model = provider.model().to_string();
        let asking = tokio::spawn(async move { provider.server_report().await });
        let found = async move {
            let report = asking.await.unwrap_or_default();
            (ContextWindow::from_report(report.window, &model), report)
        };
        WindowLookup::of(found.boxed())
    }

    /// What the server said about itself, waited for at most the probe's timeout (nothing, when
    /// the window was given and the server not asked, or it did not answer by then).
    pub async fn server(&self) -> ServerReport {
        tokio::time::timeout(PROBE_TIMEOUT, self.found.clone())
            .await
            .map(|(_, report)| report)
            .unwrap_or_default()
    }

    /// The window, once known.
    pub async fn get(&self) -> ContextWindow {
        match self.learned() {
            Some(learned) => learned,
            None => self.found.clone().await.0,
        }
    }

    /// What the server said about itself, if it has answered by now.
    pub fn server_now(&self) -> Option<ServerReport> {
        self.found.clone().now_or_never().map(|(_, report)| report)
    }

    /// The window if it is known by now.
    pub fn now(&self) -> Option<ContextWindow> {
        self.learned()
            .or_else(|| self.found.clone().now_or_never().map(|(window, _)| window))
    }
}

impl ContextWindow {
    /// The window assumed when nothing says otherwise.
    pub const DEFAULT: ContextWindow = ContextWindow {
        tokens: DEFAULT_CONTEXT_WINDOW,
        source: WindowSource::Default,
    };

    /// The window the server `reported`, else the table's for `model`, else the default.
    fn from_report(reported: Option<u32>, model: &str) -> ContextWindow {
        if let Some(tokens) = reported {
            return ContextWindow {
                tokens,
                source: WindowSource::Server,
            };
        }
        match known_window(model) {
            Some(tokens) => ContextWindow {
                tokens,
                source: WindowSource::KnownModel,
            },
            None => ContextWindow::DEFAULT,
        }
    }
}

/// Context windows of model families, by name prefix; the longest matching prefix wins. Only
/// families whose every current model has the window listed: a wrong entry here would make
/// zero compact too late.
const KNOWN_MODELS: &[(&str, u32)] = &[
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("qwen2.5-coder", 32_768),
    ("qwen3", 32_768),
    ("llama-3.1", 131_072),
    ("llama-3.3", 131_072),
    ("deepseek-chat", 128_000),
    ("gemini-2.5", 1_048_576),
];

/// The window the table gives `model` (case-insensitive; a `vendor/` prefix, as gateways
/// name models, is ignored).
fn known_window(model: &str) -> Option<u32> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    KNOWN_MODELS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, tokens)| tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_knows_model_families_by_their_longest_prefix() {
        assert_eq!(known_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(
            known_window("Qwen/Qwen2.5-Coder-1.5B-Instruct"),
            Some(32_768)
        );
        assert_eq!(known_window("my-own-model"), None);
    }

    #[test]
    fn a_window_a_refusal_named_is_the_window_of_every_clone_from_then_on() {
        let lookup = WindowLookup::known(ContextWindow::DEFAULT);
        let clone = lookup.clone();
        assert_eq!(clone.now(), Some(ContextWindow::DEFAULT));
        lookup.learn(16_384);
        let learned = ContextWindow {
            tokens: 16_384,
            source: WindowSource::Server,
        };
        assert_eq!(clone.now(), Some(learned));
        assert_eq!(
            futures_util::FutureExt::now_or_never(clone.get()),
            Some(learned)
        );
    }
}
