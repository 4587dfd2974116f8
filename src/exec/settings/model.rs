//! The model the run talks to: the provider (kept as a result, reported once the prompt is
//! known), the local provider's settings, the prompt style the caller chose and the context
//! window the caller gave. What `run` connects with and a specialist's model choices.

use crate::cli::ExecArgs;
use crate::config_file::{ConfigFile, ConfigFileError};
use crate::environ::names::{ZERO_API_KEY, ZERO_LOCAL_PROMPT};
use crate::local_model::{self, LocalSettings};
use crate::provider::{
    self, ConfigError, ContextWindow, MIN_CONTEXT_WINDOW, ProviderConfig, ProviderFlags,
    ProviderKind, WindowSource,
};
use crate::tasks::{ChildEnv, ModelChoices};
use crate::tools::{PromptStyle, StyleChoice, StyleReason};

use super::FileKeys;
use crate::exec::failure::Failure;
use crate::exec::inputs::Environment;

/// The model's settings.
pub(crate) struct ModelSettings {
    /// The provider, or why there is none (reported once the prompt is known).
    pub(crate) provider: Result<ProviderConfig, ConfigError>,
    /// The local provider's settings when the run uses it, or why they are invalid (reported
    /// with the provider's own errors, once the prompt is known).
    pub(crate) local: Result<Option<LocalSettings>, Failure>,
    /// The prompt style the caller chose (see [`prompt_style`]), or why it is invalid
    /// (reported with the provider's errors); `Ok(None)`: the server decides.
    pub(crate) prompt_style: Result<Option<StyleChoice>, Failure>,
    /// The context window as the flag or config.toml gave it; else the provider finds it.
    pub(crate) context_window: Option<ContextWindow>,
}

/// What the model's settings are read from besides the flags.
pub(super) struct ModelSources<'a> {
    /// config.toml's keys the settings read themselves.
    pub(super) keys: &'a FileKeys,
    /// The process environment.
    pub(super) env: &'a Environment,
    /// The config file, or why it could not be read (the provider's error to report).
    pub(super) file: Result<Option<ConfigFile>, ConfigFileError>,
    /// The key a parent run handed over, in a specialist.
    pub(super) handed_key: Option<String>,
    /// Whether this run is a specialist.
    pub(super) specialist: bool,
}

impl ModelSettings {
    /// The model the flags and `sources` describe. Only the context window can fail here
    /// (config.toml's); the provider's problems are kept for later.
    pub(super) fn resolve(args: &ExecArgs, sources: ModelSources<'_>) -> Result<Self, Failure> {
        let ModelSources {
            keys,
            env,
            file,
            handed_key,
            specialist,
        } = sources;
        let context_window = context_window(args, keys)?;
        let provider = resolve_provider(args, env, file, handed_key, specialist);
        let local = local_settings(&provider, env);
        let local_provider = matches!(&provider, Ok(config) if config.kind == ProviderKind::Local);
        let prompt_style = prompt_style(
            args.prompt_style,
            keys.prompt_style,
            local_provider,
            &|name| env.var(name),
        );
        Ok(ModelSettings {
            provider,
            local,
            prompt_style,
            context_window,
        })
    }

    /// What a specialist's child process gets of the model: the provider's variables and key,
    /// the reasoning effort, the fallback chain, and the prompt style the caller chose (not
    /// the local provider's default, which the child finds itself). `None` without a provider.
    pub(super) fn child_env(&self) -> Option<ChildEnv> {
        let config = self.provider.as_ref().ok()?;
        let choices = ModelChoices {
            reasoning_effort: config.reasoning_effort,
            fallback_models: config.child_fallbacks(),
            prompt_style: self
                .prompt_style
                .as_ref()
                .ok()
                .and_then(|choice| *choice)
                .filter(|choice| choice.reason != StyleReason::LocalProvider)
                .map(|choice| choice.style),
        };
        Some(ChildEnv::new(
            config.child_variables(),
            config.api_key.clone(),
            choices,
        ))
    }
}

/// The provider the flags, the environment and the config file describe. A key handed over
/// by a parent run counts as `ZERO_API_KEY`.
fn resolve_provider(
    args: &ExecArgs,
    env: &Environment,
    file: Result<Option<ConfigFile>, ConfigFileError>,
    handed_key: Option<String>,
    specialist: bool,
) -> Result<ProviderConfig, ConfigError> {
    let provider_env = |name: &str| match &handed_key {
        Some(key) if name == ZERO_API_KEY => Some(key.clone()),
        _ => env.var(name),
    };
    let flags = ProviderFlags {
        provider: args.provider,
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        max_output_tokens: args.max_output_tokens,
        reasoning_effort: args.reasoning_effort,
        // A specialist's chain is exactly the one its parent wrote, none of the file's.
        fallback_models: (specialist || !args.fallback_model.is_empty())
            .then(|| args.fallback_model.clone()),
    };
    match file {
        Ok(ref file) => provider::resolve(&flags, &provider_env, Ok(file.as_ref())),
        Err(error) => provider::resolve(&flags, &provider_env, Err(error)),
    }
}

/// The local provider's settings when `provider` is the local one (an invalid one is exit 3).
fn local_settings(
    provider: &Result<ProviderConfig, ConfigError>,
    env: &Environment,
) -> Result<Option<LocalSettings>, Failure> {
    match provider {
        Ok(config) if config.kind == ProviderKind::Local => {
            LocalSettings::from_env(&|name| env.var(name))
                .map(Some)
                .map_err(|e| Failure::config(e.to_string()))
        }
        _ => Ok(None),
    }
}

/// The prompt style the caller chose: `--prompt-style` (`flag`), else `prompt_style` in
/// config.toml (`file`), else, for the local provider (`local`), `ZERO_LOCAL_PROMPT` in `env`
/// or compact (its measured default). `None` when none chose: the run asks the server (see
/// `exec::run`). An invalid `ZERO_LOCAL_PROMPT` is exit 3, as the local provider's other
/// settings are.
fn prompt_style(
    flag: Option<PromptStyle>,
    file: Option<PromptStyle>,
    local: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<StyleChoice>, Failure> {
    let chosen = |style, reason| Ok(Some(StyleChoice { style, reason }));
    match (flag, file) {
        (Some(style), _) => chosen(style, StyleReason::Flag),
        (None, Some(style)) => chosen(style, StyleReason::ConfigFile),
        (None, None) if local => {
            let style = local_model::choice(env, ZERO_LOCAL_PROMPT, PromptStyle::Compact)
                .map_err(|e| Failure::config(e.to_string()))?;
            chosen(style, StyleReason::LocalProvider)
        }
        (None, None) => Ok(None),
    }
}

/// The context window the user gave: the flag, else config.toml's `context_window`.
fn context_window(args: &ExecArgs, keys: &FileKeys) -> Result<Option<ContextWindow>, Failure> {
    let window = |tokens, source| Some(ContextWindow { tokens, source });
    match (args.context_window, keys.context_window) {
        (Some(tokens), _) => Ok(window(tokens, WindowSource::Flag)),
        (None, Some(tokens)) if tokens < MIN_CONTEXT_WINDOW => Err(Failure::config(format!(
            "`context_window` in config.toml is {tokens}; zero needs at least \
             {MIN_CONTEXT_WINDOW} tokens"
        ))),
        (None, Some(tokens)) => Ok(window(tokens, WindowSource::ConfigFile)),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_style_is_the_flags_then_the_files_then_the_local_providers_else_the_servers() {
        let style = |flag, file, local, env: &[(&str, &str)]| {
            let env: Vec<(String, String)> = env
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect();
            let lookup =
                move |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
            prompt_style(flag, file, local, &lookup)
                .map(|choice| choice.map(|choice| (choice.style, choice.reason)))
                .map_err(|failure| (failure.code, failure.message))
        };
        use PromptStyle::{Compact, Full};
        let local_full = [("ZERO_LOCAL_PROMPT", "full")];
        assert_eq!(
            style(Some(Full), Some(Compact), true, &[]),
            Ok(Some((Full, StyleReason::Flag)))
        );
        assert_eq!(
            style(None, Some(Full), true, &[]),
            Ok(Some((Full, StyleReason::ConfigFile)))
        );
        assert_eq!(
            style(None, None, true, &[]),
            Ok(Some((Compact, StyleReason::LocalProvider)))
        );
        assert_eq!(
            style(None, None, true, &local_full),
            Ok(Some((Full, StyleReason::LocalProvider)))
        );
        assert_eq!(style(None, None, false, &local_full), Ok(None));
        let (code, message) =
            style(None, None, true, &[("ZERO_LOCAL_PROMPT", "tiny")]).unwrap_err();
        assert_eq!(code, crate::output::ErrorCode::Config);
        assert_eq!(
            message,
            r#"ZERO_LOCAL_PROMPT="tiny" is not valid: use compact, full"#
        );
    }
}
