//! Which endpoint, model and key a run uses, resolved from flags, environment and config file.
//!
//! Precedence, highest first:
//!
//! 1. flags: `--provider`, `--model`, `--base-url`, `--max-output-tokens` ([`ProviderFlags`]);
//! 2. zero's own variables: `ZERO_PROVIDER`, `ZERO_MODEL`, `ZERO_BASE_URL`, `ZERO_API_KEY`,
//!    `ZERO_MAX_OUTPUT_TOKENS`;
//! 3. the conventional variables of the chosen wire: `OPENAI_API_KEY`/`OPENAI_BASE_URL` or
//!    `ANTHROPIC_API_KEY`/`ANTHROPIC_BASE_URL`;
//! 4. the config file `$XDG_CONFIG_HOME/zero/config.toml` (else `~/.config/zero/config.toml`),
//!    keys `provider`, `model`, `base_url`, `api_key`, `max_output_tokens`.
//!
//! With `--provider local` (or `provider = "local"`), zero runs a model on this machine: the
//! model is `--model`, `ZERO_MODEL` or the file's `model` when its `provider` is `local` too,
//! else [`LocalModel::DEFAULT`]; no key is sent, and no URL applies (zero starts the server and
//! finds its socket itself; a parent run hands its own down in `ZERO_LOCAL_SOCKET`).
//!
//! The wire is the explicit provider when one is named (flag, `ZERO_PROVIDER`, file); otherwise
//! Anthropic when only Anthropic variables are set, else OpenAI. Empty variables count as unset.
//!
//! The environment is passed in as a lookup function so all of this is testable without
//! touching the process environment.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::ProviderKind;
use super::http::BuildError;
use super::reasoning::ReasoningEffort;
use super::tuning::{InvalidTuning, Tuning};
use crate::config_file::{ConfigFile, ConfigFileError};
use crate::environ::names::{
    self, ANTHROPIC_API_KEY, OPENAI_API_KEY, ZERO_API_KEY, ZERO_BASE_URL, ZERO_LOCAL_SOCKET,
    ZERO_MAX_OUTPUT_TOKENS, ZERO_MODEL, ZERO_PROVIDER,
};
use crate::local_model::LocalModel;

/// The official OpenAI endpoint.
pub(crate) const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The official Anthropic endpoint.
pub(crate) const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The model used on the official OpenAI endpoint when none is configured.
pub(crate) const OPENAI_DEFAULT_MODEL: &str = "gpt-4.1-mini";
/// The model used on the official Anthropic endpoint when none is configured.
pub(crate) const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The model name sent to a loopback server when none is configured. llama.cpp and similar
/// single-model servers accept any name; servers that need a real one (Ollama) say so in a 404.
pub(crate) const LOCAL_MODEL: &str = "local";
/// The most tokens one response may have when nothing else is configured: room for a long
/// answer or a whole file in one `write_file`, and within what every current model accepts
/// (some take no more than 8192). Without a cap a small model can repeat itself for as long as
/// its context lasts.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8192;

/// What the user is told to set when nothing at all is configured.
const NOT_CONFIGURED_HELP: &str = "use --provider local for a model on this machine (after \
     scripts/local-model build), or set OPENAI_API_KEY (OpenAI), ANTHROPIC_API_KEY (Anthropic), or \
     OPENAI_BASE_URL=http://127.0.0.1:8080/v1 for a server of your own; or use \
     --provider/--base-url/--model, ZERO_* variables or ~/.config/zero/config.toml";

/// The base URL of the local provider's requests: its connections go to a Unix socket, so
/// the host is only a name in the request line.
const LOCAL_BASE_URL: &str = "http://localhost/v1";

/// The provider flags of `zero exec`, apart from the rest of its arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFlags {
    /// `--provider`.
    pub(crate) provider: Option<ProviderKind>,
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--max-output-tokens`.
    pub max_output_tokens: Option<u32>,
    /// `--reasoning-effort`.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// `--fallback-model`, in order: `MODEL` or `PROVIDER:MODEL`; `None` when the flag was
    /// not given, and the config file's `fallback_models` apply (a specialist's are always
    /// its parent's, so it reads none of the file's).
    pub fallback_models: Option<Vec<String>>,
}

/// Everything needed to talk to one model endpoint. Its `Debug` output hides the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The wire protocol.
    pub kind: ProviderKind,
    /// The endpoint's base URL, without a trailing `/`.
    pub base_url: String,
    /// The API key, if any (local servers and some gateways need none).
    pub api_key: Option<String>,
    /// The model name.
    pub model: String,
    /// The most tokens the model may produce in one response (sent with every request).
    pub max_output_tokens: u32,
    /// How hard the model reasons, when the user said (`--reasoning-effort`,
    /// `reasoning_effort` in config.toml); else the wire sends nothing for it.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The models a request goes to, in order, when this one keeps failing
    /// (`--fallback-model`, `fallback_models` in config.toml), each resolved as a whole.
    pub fallbacks: Vec<ProviderConfig>,
    /// Timeouts and retries (from the `ZERO_*` tuning variables; see [`Tuning`]).
    pub tuning: Tuning,
    /// The Unix socket every request goes to instead of the URL's host: the local server's,
    /// once it runs (a run with the local provider starts it and fills this in).
    pub socket: Option<PathBuf>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field(
                "api_key",
                &self.api_key.as_ref().map(|_| crate::redact::MASK),
            )
            .field("model", &self.model)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("fallbacks", &self.fallbacks)
            .field("tuning", &self.tuning)
            .field("socket", &self.socket)
            .finish()
    }
}

impl ProviderConfig {
    /// The variables that make a child `zero exec` resolve exactly this configuration, key
    /// aside (a parent hands that over privately): zero's own variables beat every other
    /// source, so the child talks to exactly the parent's endpoint.
    /// A local provider's child also gets the socket of the server already running.
    pub(crate) fn child_variables(&self) -> Vec<(&'static str, String)> {
        let mut variables = vec![
            (ZERO_PROVIDER, self.kind.word()),
            (ZERO_BASE_URL, self.base_url.clone()),
            (ZERO_MODEL, self.model.clone()),
            (ZERO_MAX_OUTPUT_TOKENS, self.max_output_tokens.to_string()),
        ];
        if let Some(socket) = &self.socket {
            variables.push((ZERO_LOCAL_SOCKET, socket.display().to_string()));
        }
        variables
    }
}

/// Why no usable provider configuration could be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Nothing at all is configured.
    #[error("no model provider configured: {NOT_CONFIGURED_HELP}")]
    NotConfigured,
    /// `ZERO_PROVIDER` names no known wire.
    #[error("{variable}={value:?} is not a provider: use openai, anthropic or local")]
    UnknownProvider {
        /// Where the value came from.
        variable: &'static str,
        /// The value.
        value: String,
    },
    /// The base URL is not an absolute http(s) URL.
    #[error("invalid base URL {url:?}: {reason}")]
    InvalidBaseUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A custom, non-loopback endpoint was given without a model name.
    #[error("no model configured for {base_url}: set --model or ZERO_MODEL")]
    MissingModel {
        /// The endpoint.
        base_url: String,
    },
    /// An official endpoint was chosen without a key.
    #[error("no API key for {base_url}: set {variable} (or ZERO_API_KEY)")]
    MissingApiKey {
        /// The endpoint.
        base_url: String,
        /// The conventional variable for this wire.
        variable: &'static str,
    },
    /// The local provider was given a model that is not one of its own.
    #[error("model {model:?} is not a local model: use {}", LocalModel::names())]
    NotALocalModel {
        /// The model as given.
        model: String,
    },
    /// A fallback model that cannot be one.
    #[error("fallback model {word:?}: {reason}")]
    InvalidFallback {
        /// The model as given.
        word: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// `--base-url` was given with the local provider, whose server zero starts itself.
    #[error("--base-url does not apply to --provider local: zero starts the local server itself")]
    LocalBaseUrl,
    /// The config file could not be read, or its provider keys are not of the right shape.
    #[error(transparent)]
    ConfigFile(#[from] ConfigFileError),
    /// `ZERO_MAX_OUTPUT_TOKENS` or the config file's `max_output_tokens` is not a count of
    /// at least 1 (the flag is checked by the argument parser).
    #[error("{origin} = {value:?} is not valid: expected a whole number of tokens, at least 1")]
    InvalidMaxOutputTokens {
        /// Where the value came from.
        origin: &'static str,
        /// The value as given.
        value: String,
    },
    /// A `ZERO_*` tuning variable is not a usable number.
    #[error(transparent)]
    Tuning(#[from] InvalidTuning),
    /// The provider could not be built from an otherwise valid configuration.
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// The keys of `config.toml` this module reads; other keys belong to other parts of zero.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FileConfig {
    provider: Option<ProviderKind>,
    model: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    max_output_tokens: Option<i64>,
    reasoning_effort: Option<ReasoningEffort>,
    fallback_models: Option<Vec<String>>,
}

/// Resolves the provider configuration from `flags`, the environment `env` (a lookup such as
/// `|name| std::env::var(name).ok()`) and the config file (read once by the caller; its
/// reading error, if any, is reported here, where the file's keys are needed).
///
/// Defaults fill what is left: the official base URL of the wire; the model
/// `OPENAI_DEFAULT_MODEL` or `ANTHROPIC_DEFAULT_MODEL` on the official endpoints and
/// `LOCAL_MODEL` on a loopback URL. A custom, non-loopback URL without a model is an error
/// (a gateway's model names cannot be guessed), and so is an official endpoint without a key;
/// a custom URL may go without a key (some gateways and every local server need none).
///
/// The fallback models (`--fallback-model`, else the file's `fallback_models`; each `MODEL`
/// or `PROVIDER:MODEL`) are resolved too, each into a configuration of its own.
pub fn resolve(
    flags: &ProviderFlags,
    env: &dyn Fn(&str) -> Option<String>,
    file: Result<Option<&ConfigFile>, ConfigFileError>,
) -> Result<ProviderConfig, ConfigError> {
    let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let mut file: FileConfig = match file? {
        Some(file) => file.keys()?,
        None => FileConfig::default(),
    };
    let from_file = file.fallback_models.take();
    let words = flags
        .fallback_models
        .clone()
        .or(from_file)
        .unwrap_or_default();
    let file_wire = FileWire {
        provider: file.provider,
        base_url: file.base_url.clone(),
        api_key: file.api_key.clone(),
    };
    let mut primary = resolve_primary(flags, env, file)?;
    primary.fallbacks = words
        .iter()
        .map(|word| fallback(&primary, word, &var, &file_wire))
        .collect::<Result<_, _>>()?;
    Ok(primary)
}

/// What the config file says of its provider's endpoint, for a fallback model of that wire.
struct FileWire {
    provider: Option<ProviderKind>,
    base_url: Option<String>,
    api_key: Option<String>,
}

/// One fallback model, `MODEL` or `PROVIDER:MODEL`, resolved against the run's own
/// `primary` configuration. A model of the same wire (no prefix, or the primary's own) goes
/// to the same endpoint with the same key. A model of the other wire (`openai:`,
/// `anthropic:`; any other prefix is part of a model's name, as in Ollama's `qwen2.5:7b`)
/// goes to that wire's endpoint as its own variables name it (`ANTHROPIC_API_KEY`,
/// `ANTHROPIC_BASE_URL`, …), or the config file's when the file's `provider` is that wire,
/// else its official API. Either way it keeps the primary's output cap, reasoning effort and
/// tuning.
fn fallback(
    primary: &ProviderConfig,
    word: &str,
    var: &dyn Fn(&str) -> Option<String>,
    file: &FileWire,
) -> Result<ProviderConfig, ConfigError> {
    let word = word.trim();
    let (kind, model) = match word.split_once(':') {
        Some((prefix, model)) => match ProviderKind::from_word(prefix) {
            Some(kind @ (ProviderKind::Openai | ProviderKind::Anthropic)) => (kind, model),
            _ => (primary.kind, word),
        },
        None => (primary.kind, word),
    };
    if model.is_empty() {
        return Err(ConfigError::InvalidFallback {
            word: word.to_owned(),
            reason: "it names no model".to_owned(),
        });
    }
    let inherited = ProviderConfig {
        model: model.to_owned(),
        fallbacks: Vec::new(),
        ..primary.clone()
    };
    if kind == primary.kind {
        if kind == ProviderKind::Local {
            return Err(ConfigError::InvalidFallback {
                word: word.to_owned(),
                reason: "the local provider runs one model; name another provider's \
                         (openai:MODEL, anthropic:MODEL)"
                    .to_owned(),
            });
        }
        return Ok(inherited);
    }
    let wire = WireDefaults::of(kind);
    let from_file = |value: &Option<String>| value.clone().filter(|_| file.provider == Some(kind));
    let api_key = var(wire.key_var).or_else(|| from_file(&file.api_key));
    let given_url = var(wire.url_var).or_else(|| from_file(&file.base_url));
    let base_url = parse_base_url(given_url.as_deref().unwrap_or(wire.url))?;
    let base_url_text = base_url.as_str().trim_end_matches('/').to_owned();
    if base_url.host_str() == Some(wire.host) && api_key.is_none() {
        return Err(ConfigError::MissingApiKey {
            base_url: base_url_text,
            variable: wire.key_var,
        });
    }
    Ok(ProviderConfig {
        kind,
        base_url: base_url_text,
        api_key,
        socket: None,
        ..inherited
    })
}

/// The run's own provider (see [`resolve`]), without its fallbacks.
fn resolve_primary(
    flags: &ProviderFlags,
    env: &dyn Fn(&str) -> Option<String>,
    file: FileConfig,
) -> Result<ProviderConfig, ConfigError> {
    let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());

    let explicit_kind = match (flags.provider, var(ZERO_PROVIDER)) {
        (Some(kind), _) => Some(kind),
        (None, Some(value)) => Some(parse_kind(&value)?),
        (None, None) => file.provider,
    };
    let kind = explicit_kind.unwrap_or_else(|| infer_kind(&var));
    if kind == ProviderKind::Local {
        return resolve_local(flags, &var, file, env);
    }
    let wire = WireDefaults::of(kind);

    let api_key = var(ZERO_API_KEY)
        .or_else(|| var(wire.key_var))
        .or(file.api_key)
        .filter(|key| !key.trim().is_empty());
    let given_url = flags
        .base_url
        .clone()
        .or_else(|| var(ZERO_BASE_URL))
        .or_else(|| var(wire.url_var))
        .or(file.base_url);
    if explicit_kind.is_none() && api_key.is_none() && given_url.is_none() {
        return Err(ConfigError::NotConfigured);
    }
    let base_url = parse_base_url(given_url.as_deref().unwrap_or(wire.url))?;
    let official = base_url.host_str() == Some(wire.host);
    let model = flags
        .model
        .clone()
        .or_else(|| var(ZERO_MODEL))
        .or(file.model);
    let base_url_text = base_url.as_str().trim_end_matches('/').to_owned();
    let model = match model {
        Some(model) => model,
        None if official => wire.model.to_owned(),
        None if is_loopback(&base_url) => LOCAL_MODEL.to_owned(),
        None => {
            return Err(ConfigError::MissingModel {
                base_url: base_url_text,
            });
        }
    };
    if official && api_key.is_none() {
        return Err(ConfigError::MissingApiKey {
            base_url: base_url_text,
            variable: wire.key_var,
        });
    }
    let max_output_tokens = max_output_tokens(flags, &var, file.max_output_tokens)?;
    Ok(ProviderConfig {
        kind,
        base_url: base_url_text,
        api_key,
        model,
        max_output_tokens,
        reasoning_effort: flags.reasoning_effort.or(file.reasoning_effort),
        fallbacks: Vec::new(),
        tuning: Tuning::from_env(env)?,
        socket: None,
    })
}

/// The local provider's configuration (see the module documentation).
fn resolve_local(
    flags: &ProviderFlags,
    var: &dyn Fn(&str) -> Option<String>,
    file: FileConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ProviderConfig, ConfigError> {
    if flags.base_url.is_some() {
        return Err(ConfigError::LocalBaseUrl);
    }
    let file_model = file
        .model
        .filter(|_| file.provider == Some(ProviderKind::Local));
    let model = match flags
        .model
        .clone()
        .or_else(|| var(ZERO_MODEL))
        .or(file_model)
    {
        Some(name) => {
            LocalModel::parse(&name).ok_or(ConfigError::NotALocalModel { model: name })?
        }
        None => LocalModel::DEFAULT,
    };
    Ok(ProviderConfig {
        kind: ProviderKind::Local,
        base_url: LOCAL_BASE_URL.to_owned(),
        api_key: None,
        model: model.name(),
        max_output_tokens: max_output_tokens(flags, var, file.max_output_tokens)?,
        reasoning_effort: flags.reasoning_effort.or(file.reasoning_effort),
        fallbacks: Vec::new(),
        tuning: Tuning::from_env(env)?,
        socket: var(ZERO_LOCAL_SOCKET).map(PathBuf::from),
    })
}

/// The output cap: the flag, else `ZERO_MAX_OUTPUT_TOKENS`, else the config file's
/// `max_output_tokens`, else [`DEFAULT_MAX_OUTPUT_TOKENS`]. A value that is not a count of at
/// least 1 is an error, never silently replaced by the default.
fn max_output_tokens(
    flags: &ProviderFlags,
    var: &dyn Fn(&str) -> Option<String>,
    file: Option<i64>,
) -> Result<u32, ConfigError> {
    if let Some(tokens) = flags.max_output_tokens {
        return Ok(tokens);
    }
    let (source, value) = match (var(ZERO_MAX_OUTPUT_TOKENS), file) {
        (Some(value), _) => (ZERO_MAX_OUTPUT_TOKENS, value),
        (None, Some(value)) => ("max_output_tokens in config.toml", value.to_string()),
        (None, None) => return Ok(DEFAULT_MAX_OUTPUT_TOKENS),
    };
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|tokens| *tokens >= 1)
        .ok_or(ConfigError::InvalidMaxOutputTokens {
            origin: source,
            value,
        })
}

impl ProviderConfig {
    /// The fallback models a specialist of this run gets, as `--fallback-model` takes them:
    /// those of this run's own wire and endpoint, which the key it is handed serves (a
    /// specialist gets no other provider's key).
    pub(crate) fn child_fallbacks(&self) -> Vec<String> {
        self.fallbacks
            .iter()
            .filter(|fallback| fallback.kind == self.kind && fallback.base_url == self.base_url)
            .map(|fallback| fallback.model.clone())
            .collect()
    }

    /// Whether requests go to the wire's official API (not a server or gateway copying it).
    pub(crate) fn is_official(&self) -> bool {
        self.kind != ProviderKind::Local
            && reqwest::Url::parse(&self.base_url)
                .is_ok_and(|url| url.host_str() == Some(WireDefaults::of(self.kind).host))
    }
}

/// What each wire brings: its conventional variables and its official endpoint. The local
/// provider's requests are the OpenAI wire's.
struct WireDefaults {
    key_var: &'static str,
    url_var: &'static str,
    url: &'static str,
    host: &'static str,
    model: &'static str,
}

impl WireDefaults {
    fn of(kind: ProviderKind) -> WireDefaults {
        match kind {
            ProviderKind::Openai | ProviderKind::Local => WireDefaults {
                key_var: OPENAI_API_KEY,
                url_var: names::OPENAI_BASE_URL,
                url: OPENAI_BASE_URL,
                host: "api.openai.com",
                model: OPENAI_DEFAULT_MODEL,
            },
            ProviderKind::Anthropic => WireDefaults {
                key_var: ANTHROPIC_API_KEY,
                url_var: names::ANTHROPIC_BASE_URL,
                url: ANTHROPIC_BASE_URL,
                host: "api.anthropic.com",
                model: ANTHROPIC_DEFAULT_MODEL,
            },
        }
    }
}

/// The wire when none is named: Anthropic when only Anthropic variables are set, else OpenAI
/// (the wire most servers speak).
fn infer_kind(var: &dyn Fn(&str) -> Option<String>) -> ProviderKind {
    let set = |key: &str, url: &str| var(key).is_some() || var(url).is_some();
    if set(ANTHROPIC_API_KEY, names::ANTHROPIC_BASE_URL)
        && !set(OPENAI_API_KEY, names::OPENAI_BASE_URL)
    {
        ProviderKind::Anthropic
    } else {
        ProviderKind::Openai
    }
}

fn parse_kind(value: &str) -> Result<ProviderKind, ConfigError> {
    ProviderKind::from_word(value.trim()).ok_or_else(|| ConfigError::UnknownProvider {
        variable: ZERO_PROVIDER,
        value: value.to_owned(),
    })
}

/// The `api_key` of the config file, if it has one: a secret to hide whether or not this run
/// uses it. Best effort: an invalid file has none (resolving the configuration reports it).
pub fn config_file_key(file: &ConfigFile) -> Option<String> {
    file.keys::<FileConfig>().ok()?.api_key
}

/// Parses and checks a base URL: absolute, http or https, with a host.
pub(crate) fn parse_base_url(url: &str) -> Result<reqwest::Url, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidBaseUrl {
        url: url.to_owned(),
        reason,
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|err| invalid(err.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "scheme {:?} is not http or https",
            parsed.scheme()
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(invalid("no host".to_owned()));
    }
    Ok(parsed)
}

/// Whether the URL points at this machine (a local model server).
fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']'); // IPv6 literals come bracketed
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake environment; `HOME` points nowhere so no real config file is read.
    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let mut pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        pairs.push(("HOME".into(), "/nonexistent/zero-test-home".into()));
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        }
    }

    /// Resolves as `exec` does: the config file the environment points to, read first.
    fn resolve_in(
        flags: &ProviderFlags,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ProviderConfig, ConfigError> {
        match ConfigFile::load(env) {
            Ok(file) => resolve(flags, env, Ok(file.as_ref())),
            Err(error) => resolve(flags, env, Err(error)),
        }
    }

    /// kind, base URL, key, model — the parts precedence decides.
    type Summary<'a> = (ProviderKind, &'a str, Option<&'a str>, &'a str);

    /// One table row: its name, the flags, the environment, and what to expect.
    type Case<T> = (
        &'static str,
        ProviderFlags,
        Vec<(&'static str, &'static str)>,
        T,
    );

    /// Recognises the error a row expects.
    type IsExpected = fn(&ConfigError) -> bool;

    fn summary(config: &ProviderConfig) -> Summary<'_> {
        (
            config.kind,
            &config.base_url,
            config.api_key.as_deref(),
            &config.model,
        )
    }

    use ProviderKind::{Anthropic, Openai};

    #[test]
    // One table of cases, a row per precedence rule: split, the rules would read apart.
    #[allow(clippy::too_many_lines)]
    fn precedence_and_inference() {
        let flags = |provider, model: Option<&str>, base_url: Option<&str>| ProviderFlags {
            provider,
            model: model.map(str::to_owned),
            base_url: base_url.map(str::to_owned),
            ..ProviderFlags::default()
        };
        let none = ProviderFlags::default();
        let cases: Vec<Case<Summary>> = vec![
            (
                "openai key alone: official endpoint and default model",
                none.clone(),
                vec![("OPENAI_API_KEY", "sk-o")],
                (Openai, OPENAI_BASE_URL, Some("sk-o"), OPENAI_DEFAULT_MODEL),
            ),
            (
                "anthropic key alone infers anthropic",
                none.clone(),
                vec![("ANTHROPIC_API_KEY", "sk-a")],
                (
                    Anthropic,
                    ANTHROPIC_BASE_URL,
                    Some("sk-a"),
                    ANTHROPIC_DEFAULT_MODEL,
                ),
            ),
            (
                "both keys: openai wins the inference",
                none.clone(),
                vec![("ANTHROPIC_API_KEY", "sk-a"), ("OPENAI_API_KEY", "sk-o")],
                (Openai, OPENAI_BASE_URL, Some("sk-o"), OPENAI_DEFAULT_MODEL),
            ),
            (
                "ZERO_PROVIDER beats inference and picks that wire's key",
                none.clone(),
                vec![
                    ("ZERO_PROVIDER", "Anthropic"),
                    ("ANTHROPIC_API_KEY", "sk-a"),
                    ("OPENAI_API_KEY", "sk-o"),
                ],
                (
                    Anthropic,
                    ANTHROPIC_BASE_URL,
                    Some("sk-a"),
                    ANTHROPIC_DEFAULT_MODEL,
                ),
            ),
            (
                "flags beat ZERO_* which beat conventional variables",
                flags(
                    Some(Openai),
                    Some("flag-model"),
                    Some("http://flag.example/v1/"),
                ),
                vec![
                    ("ZERO_PROVIDER", "anthropic"),
                    ("ZERO_MODEL", "env-model"),
                    ("ZERO_BASE_URL", "http://zero.example/v1"),
                    ("ZERO_API_KEY", "zero-key"),
                    ("OPENAI_API_KEY", "sk-o"),
                    ("OPENAI_BASE_URL", "http://openai.example/v1"),
                ],
                (
                    Openai,
                    "http://flag.example/v1",
                    Some("zero-key"),
                    "flag-model",
                ),
            ),
            (
                "ZERO_* beat conventional variables",
                none.clone(),
                vec![
                    ("ZERO_MODEL", "env-model"),
                    ("ZERO_BASE_URL", "http://zero.example/v1"),
                    ("OPENAI_BASE_URL", "http://openai.example/v1"),
                ],
                (Openai, "http://zero.example/v1", None, "env-model"),
            ),
            (
                "local base URL alone: no key, model 'local'",
                none.clone(),
                vec![("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")],
                (Openai, "http://127.0.0.1:8080/v1", None, LOCAL_MODEL),
            ),
            (
                "anthropic base URL alone infers anthropic; localhost is loopback",
                none.clone(),
                vec![("ANTHROPIC_BASE_URL", "http://localhost:9000")],
                (Anthropic, "http://localhost:9000", None, LOCAL_MODEL),
            ),
            (
                "empty variables count as unset",
                flags(None, None, Some("http://[::1]:1/v1")),
                vec![("OPENAI_API_KEY", ""), ("ZERO_MODEL", " ")],
                (Openai, "http://[::1]:1/v1", None, LOCAL_MODEL),
            ),
        ];
        for (name, flags, env, expected) in cases {
            let config =
                resolve_in(&flags, &env_of(&env)).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert_eq!(summary(&config), expected, "{name}");
        }
    }

    #[test]
    fn configuration_errors() {
        let cases: Vec<Case<IsExpected>> = vec![
            ("nothing set", ProviderFlags::default(), vec![], |e| {
                matches!(e, ConfigError::NotConfigured)
            }),
            (
                "official endpoint without a key",
                ProviderFlags {
                    provider: Some(Anthropic),
                    ..ProviderFlags::default()
                },
                vec![],
                |e| {
                    matches!(
                        e,
                        ConfigError::MissingApiKey {
                            variable: "ANTHROPIC_API_KEY",
                            ..
                        }
                    )
                },
            ),
            (
                "custom remote endpoint without a model",
                ProviderFlags::default(),
                vec![("ZERO_BASE_URL", "https://gateway.example/v1")],
                |e| matches!(e, ConfigError::MissingModel { .. }),
            ),
            (
                "bad base URL",
                ProviderFlags {
                    base_url: Some("127.0.0.1:8080".into()),
                    ..ProviderFlags::default()
                },
                vec![],
                |e| matches!(e, ConfigError::InvalidBaseUrl { .. }),
            ),
            (
                "non-http scheme",
                ProviderFlags {
                    base_url: Some("ftp://h/v1".into()),
                    ..ProviderFlags::default()
                },
                vec![],
                |e| matches!(e, ConfigError::InvalidBaseUrl { .. }),
            ),
            (
                "unknown provider",
                ProviderFlags::default(),
                vec![("ZERO_PROVIDER", "gemini")],
                |e| matches!(e, ConfigError::UnknownProvider { .. }),
            ),
            (
                "bad tuning",
                ProviderFlags::default(),
                vec![("OPENAI_API_KEY", "k"), ("ZERO_MAX_ATTEMPTS", "x")],
                |e| matches!(e, ConfigError::Tuning(_)),
            ),
        ];
        for (name, flags, env, is_expected) in cases {
            let err = resolve_in(&flags, &env_of(&env)).expect_err(name);
            assert!(is_expected(&err), "{name}: got {err:?}");
        }
    }

    #[test]
    fn not_configured_message_says_what_to_set() {
        let message = ConfigError::NotConfigured.to_string();
        for needle in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENAI_BASE_URL=http://127.0.0.1:8080/v1",
            "--provider",
            "config.toml",
        ] {
            assert!(message.contains(needle), "{message}");
        }
    }

    #[test]
    fn the_local_provider_needs_no_key_and_takes_only_local_models() {
        let local = ProviderFlags {
            provider: Some(ProviderKind::Local),
            ..ProviderFlags::default()
        };
        // A key set for another wire is never sent to the local server.
        let config = resolve_in(&local, &env_of(&[("ZERO_API_KEY", "sk-z")])).unwrap();
        assert_eq!(
            summary(&config),
            (ProviderKind::Local, LOCAL_BASE_URL, None, "local:1.5b")
        );
        assert_eq!(config.socket, None);
        assert!(!config.is_official());

        let env = env_of(&[
            ("ZERO_PROVIDER", "local"),
            ("ZERO_MODEL", "LOCAL:0.5B"),
            (ZERO_LOCAL_SOCKET, "/run/x/llama.sock"),
        ]);
        let child = resolve_in(&ProviderFlags::default(), &env).unwrap();
        assert_eq!(child.model, "local:0.5b");
        assert_eq!(child.socket, Some(PathBuf::from("/run/x/llama.sock")));
        let handed = child.child_variables();
        assert!(handed.contains(&("ZERO_PROVIDER", "local".to_string())));
        assert!(handed.contains(&(ZERO_LOCAL_SOCKET, "/run/x/llama.sock".to_string())));

        let not_local = ProviderFlags {
            model: Some("gpt-4.1".into()),
            ..local.clone()
        };
        let error = resolve_in(&not_local, &env_of(&[])).unwrap_err();
        assert!(
            matches!(error, ConfigError::NotALocalModel { .. }),
            "{error}"
        );
        let with_url = ProviderFlags {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            ..local
        };
        let error = resolve_in(&with_url, &env_of(&[])).unwrap_err();
        assert!(matches!(error, ConfigError::LocalBaseUrl), "{error}");
    }

    #[test]
    fn a_config_files_model_applies_to_the_local_provider_only_when_it_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let xdg = dir.path().to_str().unwrap();
        std::fs::create_dir_all(dir.path().join("zero")).unwrap();
        let file = dir.path().join("zero/config.toml");
        let local = ProviderFlags {
            provider: Some(ProviderKind::Local),
            ..ProviderFlags::default()
        };
        std::fs::write(&file, "provider = \"openai\"\nmodel = \"gpt-4.1\"\n").unwrap();
        let config = resolve_in(&local, &env_of(&[("XDG_CONFIG_HOME", xdg)])).unwrap();
        assert_eq!(config.model, "local:1.5b");
        std::fs::write(&file, "provider = \"local\"\nmodel = \"local:0.5b\"\n").unwrap();
        let config = resolve_in(
            &ProviderFlags::default(),
            &env_of(&[("XDG_CONFIG_HOME", xdg)]),
        )
        .unwrap();
        assert_eq!(
            (config.kind, config.model.as_str()),
            (ProviderKind::Local, "local:0.5b")
        );
    }

    #[test]
    fn config_file_is_the_lowest_layer() {
        let dir = tempfile::tempdir().unwrap();
        let xdg = dir.path().to_str().unwrap();
        std::fs::create_dir_all(dir.path().join("zero")).unwrap();
        std::fs::write(
            dir.path().join("zero/config.toml"),
            "provider = \"anthropic\"\nmodel = \"file-model\"\nbase_url = \"http://127.0.0.1:7/\"\napi_key = \"file-key\"\n[other]\nx = 1\n",
        )
        .unwrap();
        let from_file = resolve_in(
            &ProviderFlags::default(),
            &env_of(&[("XDG_CONFIG_HOME", xdg)]),
        )
        .unwrap();
        assert_eq!(
            summary(&from_file),
            (
                Anthropic,
                "http://127.0.0.1:7",
                Some("file-key"),
                "file-model"
            )
        );

        let env = env_of(&[
            ("XDG_CONFIG_HOME", xdg),
            ("ANTHROPIC_API_KEY", "env-key"),
            ("ZERO_MODEL", "env-model"),
        ]);
        let overridden = resolve_in(&ProviderFlags::default(), &env).unwrap();
        assert_eq!(
            summary(&overridden),
            (
                Anthropic,
                "http://127.0.0.1:7",
                Some("env-key"),
                "env-model"
            )
        );
    }

    #[test]
    fn the_output_cap_comes_from_flag_variable_file_or_default() {
        let dir = tempfile::tempdir().unwrap();
        let xdg = dir.path().to_str().unwrap();
        std::fs::create_dir_all(dir.path().join("zero")).unwrap();
        let file = dir.path().join("zero/config.toml");
        std::fs::write(&file, "api_key = \"k\"\nmax_output_tokens = 300\n").unwrap();
        let flag = ProviderFlags {
            max_output_tokens: Some(100),
            ..ProviderFlags::default()
        };
        let cap = |flags: &ProviderFlags, env: &[(&str, &str)]| {
            resolve_in(flags, &env_of(env)).map(|config| config.max_output_tokens)
        };
        let with_file = [("XDG_CONFIG_HOME", xdg)];
        let with_var = [("XDG_CONFIG_HOME", xdg), ("ZERO_MAX_OUTPUT_TOKENS", "200")];
        assert_eq!(cap(&flag, &with_var).unwrap(), 100);
        assert_eq!(cap(&ProviderFlags::default(), &with_var).unwrap(), 200);
        assert_eq!(cap(&ProviderFlags::default(), &with_file).unwrap(), 300);
        let only_key = [("OPENAI_API_KEY", "k")];
        assert_eq!(
            cap(&ProviderFlags::default(), &only_key).unwrap(),
            DEFAULT_MAX_OUTPUT_TOKENS
        );
        for bad in ["0", "-5", "many", "99999999999"] {
            let env = [("OPENAI_API_KEY", "k"), ("ZERO_MAX_OUTPUT_TOKENS", bad)];
            let err = cap(&ProviderFlags::default(), &env).unwrap_err();
            assert!(
                err.to_string().starts_with("ZERO_MAX_OUTPUT_TOKENS = "),
                "{err}"
            );
        }
        std::fs::write(&file, "api_key = \"k\"\nmax_output_tokens = 0\n").unwrap();
        let err = cap(&ProviderFlags::default(), &with_file).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("max_output_tokens in config.toml = \"0\""),
            "{err}"
        );
    }

    #[test]
    fn malformed_config_file_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("zero")).unwrap();
        let path = dir.path().join("zero/config.toml");
        std::fs::write(&path, "model = \n").unwrap();
        let err = resolve_in(
            &ProviderFlags::default(),
            &env_of(&[("XDG_CONFIG_HOME", dir.path().to_str().unwrap())]),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::ConfigFile(ConfigFileError::Invalid { .. })
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains(path.to_str().unwrap()), "{err}");
    }

    #[test]
    fn debug_output_hides_the_key() {
        let config = resolve_in(
            &ProviderFlags::default(),
            &env_of(&[("OPENAI_API_KEY", "sk-secret-value")]),
        )
        .unwrap();
        assert!(!format!("{config:?}").contains("sk-secret-value"));
    }

    #[test]
    fn fallback_models_are_resolved_on_the_same_endpoint_or_through_the_other_wires_variables() {
        let flags = |words: &[&str]| ProviderFlags {
            fallback_models: Some(words.iter().map(|word| (*word).to_owned()).collect()),
            reasoning_effort: Some(ReasoningEffort::High),
            ..ProviderFlags::default()
        };
        let env = env_of(&[
            ("OPENAI_API_KEY", "sk-o"),
            ("ANTHROPIC_API_KEY", "sk-a"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
        ]);
        let config = resolve_in(
            &flags(&[
                "gpt-4.1-nano",
                "qwen2.5:7b",
                "anthropic:claude-haiku-4-5",
                "openai:o4",
            ]),
            &env,
        )
        .unwrap();
        let chain: Vec<Summary> = config.fallbacks.iter().map(summary).collect();
        assert_eq!(
            chain,
            [
                (Openai, OPENAI_BASE_URL, Some("sk-o"), "gpt-4.1-nano"),
                // Not a provider's name: the prefix is part of the model's.
                (Openai, OPENAI_BASE_URL, Some("sk-o"), "qwen2.5:7b"),
                (
                    Anthropic,
                    "http://127.0.0.1:9",
                    Some("sk-a"),
                    "claude-haiku-4-5"
                ),
                (Openai, OPENAI_BASE_URL, Some("sk-o"), "o4"),
            ]
        );
        assert!(config.fallbacks.iter().all(|fallback| {
            fallback.reasoning_effort == Some(ReasoningEffort::High)
                && fallback.fallbacks.is_empty()
        }));
        // A specialist gets the ones its handed key serves.
        assert_eq!(
            config.child_fallbacks(),
            ["gpt-4.1-nano", "qwen2.5:7b", "o4"]
        );

        let no_key = resolve_in(
            &flags(&["anthropic:claude"]),
            &env_of(&[("OPENAI_API_KEY", "k")]),
        );
        assert!(
            matches!(no_key, Err(ConfigError::MissingApiKey { .. })),
            "{no_key:?}"
        );
        for bad in ["", "anthropic:"] {
            let refused = resolve_in(&flags(&[bad]), &env);
            assert!(
                matches!(refused, Err(ConfigError::InvalidFallback { .. })),
                "{bad:?}"
            );
        }
        let local = ProviderFlags {
            provider: Some(ProviderKind::Local),
            ..flags(&["other"])
        };
        assert!(matches!(
            resolve_in(&local, &env_of(&[])),
            Err(ConfigError::InvalidFallback { .. })
        ));
    }
}
