//! Everything a `zero exec` job is configured with — argv, environment and config file — read
//! once, into one [`Settings`] value that the rest of the job is built from (ripgrep's flags →
//! `HiArgs` is the model): [`Settings::resolve`] consumes the parsed command line, and the
//! settings hand out what they describe (the ledger, the runtime's configuration, the
//! specialists' launcher, the tool filter). Nothing reads the arguments after it, and nothing
//! below `exec` reads the process environment or the config file for itself.
//!
//! Resolution is staged where the order of errors matters: what the run's output needs first
//! (the secrets to mask) comes from [`Inputs`], read before anything can fail; [`Settings`]
//! resolves the rest, reporting usage errors in the order the flags are used, and keeps the
//! provider's resolution as a result to report after the prompt, so a run with no prompt says
//! so before it complains about the provider.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::cli::{ExecArgs, parse_timeout};
use crate::config_file::{self, ConfigFile, ConfigFileError};
use crate::environ::names::{ZERO_API_KEY, ZERO_LOCAL_PROMPT};
use crate::hooks::{self, HookSet};
use crate::local_model::{self, LocalSettings};
use crate::mcp::config::{self as mcp_config, Entry};
use crate::mcp::{ServerConfig, UnknownKey};
use crate::output::event::WorktreeInfo;
use crate::provider::{
    self, ConfigError, ContextWindow, MIN_CONTEXT_WINDOW, ProviderConfig, ProviderFlags,
    ProviderKind, WindowSource,
};
use crate::redact::Secrets;
use crate::rules::{self, Effect, RuleSet};
use crate::runtime::sandbox::Support;
use crate::runtime::{RunId, RuntimeConfig, RuntimeError};
use crate::structured::OutputSchema;
use crate::tasks::{
    ChildEnv, HandedHooks, HandedRules, Launcher, ModelChoices, Parent, SearchPaths,
};
use crate::tools::{Policy, PromptStyle, Registry, StyleChoice, StyleReason, ToolFilter};
use crate::usage::{Ledger, Limits, Price, Prices, Usd};

use super::Invocation;
use super::confinement::{self, Confinement};
use super::failure::Failure;
use super::inputs::{Environment, Inputs};
use super::job::{self, ToolLists};
use super::prompt::PromptSources;
use super::session::SessionWanted;

/// The default `--max-turns`.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 80;

/// The default `--schema-retries`: enough for a model to fix a slip, few enough that a model
/// that cannot produce the shape fails fast.
pub(crate) const DEFAULT_SCHEMA_RETRIES: u32 = 2;

/// What the job does: run the agent, or list what a run would have and exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Run the agent on the prompt.
    Run,
    /// `--list-tools`: the tools the model would see under these flags.
    ListTools,
    /// `--list-specialists`: the specialists the `Task` tool can launch.
    ListSpecialists,
}

impl Mode {
    /// The mode the flags ask for (clap refuses both listings at once).
    fn of(args: &ExecArgs) -> Self {
        match (args.list_specialists, args.list_tools) {
            (true, _) => Mode::ListSpecialists,
            (false, true) => Mode::ListTools,
            (false, false) => Mode::Run,
        }
    }
}

/// One warning for each key of the config file that no part of zero reads, naming the
/// closest known key. None in a specialist: its parent read the same file and said so.
pub(crate) fn config_warnings(inputs: &Inputs) -> Vec<String> {
    let Some(file) = inputs.config_file() else {
        return Vec::new();
    };
    if Parent::from_env(|name| inputs.env.var_os(name)).is_some() {
        return Vec::new();
    }
    file.unknown_keys(&known_config_keys())
        .into_iter()
        .map(|unknown| {
            let hint = match unknown.closest {
                Some(known) => format!(" (the closest known key is `{known}`)"),
                None => String::new(),
            };
            format!(
                "unknown key `{}` in {} ignored{hint}",
                unknown.key,
                file.location().display()
            )
        })
        .collect()
}

/// Every top-level key of config.toml, from the serde structs of the parts that read them:
/// a part that reads a new key knows it here without a second list to keep in step.
fn known_config_keys() -> Vec<&'static str> {
    [
        config_file::fields::<FileKeys>(),
        config_file::fields::<confinement::FileKeys>(),
        config_file::fields::<provider::config::FileConfig>(),
        config_file::fields::<mcp_config::FileKeys>(),
        config_file::fields::<rules::FileKeys>(),
        config_file::fields::<hooks::config::FileKeys>(),
    ]
    .concat()
}

/// One job's resolved settings. See the module documentation.
pub(crate) struct Settings {
    /// What the job does.
    pub(crate) mode: Mode,
    /// Where the prompt comes from (argv, `--file`, stdin) and in which format.
    pub(crate) prompt: PromptSources,
    /// `--output-last-message`, as given: checked only when the run needs it.
    pub(crate) last_message: Option<PathBuf>,
    /// The session the flags ask for.
    pub(crate) session: SessionWanted,
    /// The canonical workspace root (`--cwd`, or the current directory).
    pub(crate) workspace: PathBuf,
    /// What the run may do (`--auto`, `--skip-permissions-unsafe`, the roots).
    pub(crate) policy: Policy,
    /// The run's runtime: its data directory and limits.
    pub(crate) runtime: RuntimeConfig,
    /// The provider, or why there is none (reported once the prompt is known).
    pub(crate) provider: Result<ProviderConfig, ConfigError>,
    /// The local provider's settings when the run uses it, or why they are invalid (reported
    /// with the provider's own errors, once the prompt is known).
    pub(crate) local: Result<Option<LocalSettings>, Failure>,
    /// The prompt style the caller chose (see [`prompt_style`]), or why it is invalid
    /// (reported with the provider's errors); `Ok(None)`: the server decides.
    pub(crate) prompt_style: Result<Option<StyleChoice>, Failure>,
    /// The run that launched this one, when this run is a specialist.
    pub(crate) parent: Option<Parent>,
    /// Where specialists' manifests are found.
    pub(crate) specialists: SearchPaths,
    /// `--enabled-tools` and `--disabled-tools`.
    tools: ToolLists,
    /// `--max-turns`, or its default.
    pub(crate) max_turns: u32,
    /// What the run's commands are confined by (also in `policy` and `runtime`).
    pub(crate) confinement: Confinement,
    /// When the run must end: `--timeout` (or `timeout` in config.toml) from now, or the
    /// launching run's deadline if that is sooner. Also in `policy`.
    pub(crate) deadline: Option<SystemTime>,
    /// The token and cost budget (`--max-tokens`, `--max-cost-usd`, or config.toml's).
    pub(crate) limits: Limits,
    /// The `[prices]` table of config.toml.
    prices: Prices,
    /// Where this run reports its spending, when it is a specialist.
    usage_report: Option<PathBuf>,
    /// The context window as the flag or config.toml gave it; else the provider finds it.
    pub(crate) context_window: Option<ContextWindow>,
    /// The schema the final answer must satisfy (`--output-schema`), read and checked.
    pub(crate) output_schema: Option<OutputSchema>,
    /// How many answers that miss the schema go back to the model (`--schema-retries`).
    pub(crate) schema_retries: u32,
    /// The MCP servers the run starts, and what to warn about their configuration.
    pub(crate) mcp: McpSettings,
    /// With `--worktree`: the worktree `workspace` lies in (set once it is made).
    pub(crate) worktree: Option<WorktreeInfo>,
    /// The run's hooks: config.toml's `[hooks]` and the `--hooks` files (a specialist's: only
    /// the file its parent handed it).
    pub(crate) hooks: HookSet,
    /// `--hooks-fail-open`.
    pub(crate) hooks_fail_open: bool,
    /// The permission rules: `--allow`, `--deny`, `--rules` and config.toml's
    /// `[permissions]` (a specialist's: only the flags its parent wrote).
    pub(crate) rules: RuleSet,
    /// The process environment, for [`Settings::var`].
    env: Environment,
}

/// The run's MCP configuration: config.toml, `--mcp-project`, `--mcp-config`.
pub(crate) struct McpSettings {
    /// The servers the run starts.
    pub(crate) servers: Vec<ServerConfig>,
    /// The keys of the MCP configuration zero does not know, for a warning each.
    pub(crate) unknown_keys: Vec<UnknownKey>,
    /// Whether the workspace has a `.mcp.json` this run does not read (no `--mcp-project`).
    pub(crate) project_unread: bool,
    /// Each server's entry as a specialist gets it, `${VAR}` expanded (a child's environment
    /// may lack the variables).
    handed: Vec<(String, Entry)>,
}

impl McpSettings {
    /// Loads the servers the flags and the config file name; `env` expands their entries
    /// for specialists.
    fn resolve(
        args: &ExecArgs,
        file: Option<&ConfigFile>,
        env: &Environment,
        workspace: &Path,
    ) -> Result<Self, Failure> {
        let mcp = mcp_config::load(mcp_config::Sources {
            config_file: file,
            files: &args.mcp_config,
            project: args.mcp_project.then_some(workspace),
            strict: args.strict_mcp_config,
        })
        .map_err(|error| Failure::usage(error.to_string()))?;
        let handed = mcp
            .servers
            .iter()
            .map(|server| {
                let entry = server.handed_entry(&|name| env.var(name));
                (server.name.clone(), entry)
            })
            .collect();
        Ok(McpSettings {
            handed,
            servers: mcp.servers,
            unknown_keys: mcp.unknown_keys,
            project_unread: !args.mcp_project
                && !args.strict_mcp_config
                && project_mcp_json_there(workspace),
        })
    }
}

/// Whether the workspace holds a `.mcp.json` that `--mcp-project` would read: a regular file
/// beneath it (one that links out would be refused, so it is not "skipped" either).
fn project_mcp_json_there(workspace: &Path) -> bool {
    crate::fsutil::open_beneath(workspace, Path::new(".mcp.json"))
        .is_ok_and(|(_, metadata)| metadata.is_file())
}

/// The `config.toml` keys the settings read themselves.
#[derive(Debug, Default, serde::Deserialize)]
struct FileKeys {
    timeout: Option<String>,
    max_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
    context_window: Option<u32>,
    prompt_style: Option<PromptStyle>,
    #[serde(default)]
    prices: BTreeMap<String, Price>,
}

impl FileKeys {
    /// The keys of `file`, or none without one.
    fn read(file: Option<&ConfigFile>) -> Result<Self, Failure> {
        match file {
            Some(file) => file.keys().map_err(|e| Failure::config(e.to_string())),
            None => Ok(FileKeys::default()),
        }
    }
}

impl Settings {
    /// Resolves the command line `invocation` with `inputs` and the runtime configuration
    /// they gave ([`Inputs::runtime`], already used to reconcile). The first error a user can
    /// fix is the one reported.
    pub(crate) fn resolve(
        invocation: Invocation,
        inputs: Inputs,
        runtime: Result<RuntimeConfig, RuntimeError>,
    ) -> Result<Self, Failure> {
        let Invocation { args, prompt_parts } = invocation;
        let parent = Parent::from_env(|name| inputs.env.var_os(name));
        // First, so the key file is gone before anything this run starts could look for it.
        let handed_key = match &parent {
            Some(parent) => parent.take_handed_key().map_err(Failure::config)?,
            None => None,
        };
        let workspace = job::workspace(args.cwd.as_deref())?;
        let policy = job::policy(&args, &workspace)?;
        let runtime = runtime.map_err(|e| Failure::usage(e.to_string()))?;
        let file = inputs.config_file();
        let confinement = confinement::resolve(
            &args,
            file,
            &inputs.env,
            policy.autonomy(),
            &roots(&workspace, &policy),
            Support::probe(),
        )?;
        let keys = FileKeys::read(file)?;
        let mcp = McpSettings::resolve(&args, file, &inputs.env, &workspace)?;
        let rules = rule_set(&args, file, &inputs.env, &workspace, parent.is_some())?;
        let hooks = hook_set(&args, file, parent.is_some())?;
        let deadline = deadline(&args, keys.timeout.as_deref(), &parent)?;
        let limits = limits(&args, &keys)?;
        let context_window = context_window(&args, &keys)?;
        let output_schema = args
            .output_schema
            .as_deref()
            .map(OutputSchema::load)
            .transpose()
            .map_err(Failure::usage)?;
        let prices = Prices::new(keys.prices)
            .map_err(|e| Failure::config(format!("in config.toml: {e}")))?;
        let usage_report = match &parent {
            Some(parent) => parent.usage_report().map_err(Failure::config)?,
            None => None,
        };
        let policy = policy
            .with_commands(confinement.commands.clone())
            .with_deadline(deadline);
        let runtime = confined(runtime, &confinement);
        let Inputs { env, file } = inputs;
        let provider = resolve_provider(&args, &env, file, handed_key, parent.is_some());
        let local = local_settings(&provider, &env);
        let local_provider = matches!(&provider, Ok(config) if config.kind == ProviderKind::Local);
        let prompt_style = prompt_style(
            args.prompt_style,
            keys.prompt_style,
            local_provider,
            &|name| env.var(name),
        );
        let specialists = SearchPaths::new(&workspace, |name| env.var_os(name));
        Ok(Settings {
            mode: Mode::of(&args),
            prompt: PromptSources {
                parts: prompt_parts,
                file: args.file,
                images: args.image,
                format: args.input_format,
            },
            last_message: args.output_last_message,
            session: SessionWanted::of(
                args.resume,
                args.fork,
                args.session_id,
                args.no_session,
                args.any_workspace,
            ),
            workspace,
            policy,
            runtime,
            provider,
            local,
            prompt_style,
            parent,
            specialists,
            tools: ToolLists {
                enabled: args.enabled_tools,
                disabled: args.disabled_tools,
            },
            max_turns: args.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            confinement,
            deadline,
            limits,
            prices,
            usage_report,
            context_window,
            output_schema,
            schema_retries: args.schema_retries.unwrap_or(DEFAULT_SCHEMA_RETRIES),
            mcp,
            worktree: None,
            rules,
            hooks,
            hooks_fail_open: args.hooks_fail_open,
            env,
        })
    }

    /// A variable of the environment the settings were resolved with: what `${VAR}` in an
    /// MCP server's entry and the local model's cache are read from when `mcp` and
    /// `local_model` start what the run needs (their APIs take a lookup, not the values).
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        self.env.var(name)
    }

    /// The ledger the run tree's spending is counted in, against the budget, each model's
    /// tokens at its own price.
    pub(crate) fn ledger(&self) -> Ledger {
        Ledger::new(self.limits, self.prices.clone(), self.usage_report.clone())
    }

    /// The runtime's configuration, masking `secrets` in what its records say.
    pub(crate) fn runtime_config(&self, secrets: &Secrets) -> RuntimeConfig {
        RuntimeConfig {
            secrets: secrets.clone(),
            ..self.runtime.clone()
        }
    }

    /// What the `Task` tool launches specialists with, for the run `parent_run` counting in
    /// `ledger`; `None` in a specialist, which never launches specialists of its own.
    pub(crate) fn launcher(&self, parent_run: &RunId, ledger: &Arc<Ledger>) -> Option<Launcher> {
        self.parent.is_none().then(|| Launcher {
            parent_run: parent_run.clone(),
            provider: self.provider.as_ref().ok().map(|config| {
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
                ChildEnv::new(config.child_variables(), config.api_key.clone(), choices)
            }),
            search: self.specialists.clone(),
            ledger: Arc::clone(ledger),
            mcp_servers: self.mcp.handed.clone(),
            rules: HandedRules {
                allow: self.rules.texts(Effect::Allow),
                deny: self.rules.texts(Effect::Deny),
            },
            hooks: (!self.hooks.is_empty()).then(|| HandedHooks {
                text: self.hooks.to_file_text(),
                fail_open: self.hooks_fail_open,
            }),
        })
    }

    /// The tool filter of the flags, each name checked against `registry` and the configured
    /// MCP servers (what the compact prompt leaves out is left out once the style is known:
    /// `Pieces::toolset`).
    pub(crate) fn tool_filter(&self, registry: &Registry) -> Result<ToolFilter, Failure> {
        job::tool_filter(&self.tools, registry, &self.mcp.servers)
    }

    /// `--max-cost-usd` needs the model's price; checked once the provider is known to be
    /// configured, so a run without one says that first.
    pub(crate) fn check_priced(&self, config: &ProviderConfig) -> Result<(), Failure> {
        // Every model of the chain may answer, so every one needs its price.
        let unpriced = std::iter::once(config)
            .chain(&config.fallbacks)
            .find(|config| self.prices.of(&config.model).is_none());
        match (self.limits.cost, unpriced) {
            (Some(limit), Some(config)) => Err(Failure::usage(format!(
                "--max-cost-usd {limit} needs the price of model `{model}`: add a \
                 [prices.\"{model}\"] table with `input` and `output` (US dollars per million \
                 tokens) to config.toml",
                model = config.model
            ))),
            _ => Ok(()),
        }
    }
}

/// The run's hooks: config.toml's `[hooks]`, the `--rules` file's, then each `--hooks` file
/// in order. A specialist reads only the `--hooks` file its parent handed it (its parent's
/// hooks, config.toml's among them), so no hook runs twice and none is lost. A hook that is
/// not valid is a usage error naming the file and the key.
fn hook_set(
    args: &ExecArgs,
    file: Option<&ConfigFile>,
    specialist: bool,
) -> Result<HookSet, Failure> {
    let timeout = |text: &str| parse_timeout(text).map_err(|e| e.to_string());
    let mut set = HookSet::default();
    if let Some(file) = file.filter(|_| !specialist) {
        let keys = file.keys().map_err(|e| Failure::usage(e.to_string()))?;
        set.add_config(keys, &timeout).map_err(|e| {
            Failure::usage(format!(
                "invalid hooks in {}: {e}",
                file.location().display()
            ))
        })?;
    }
    // The `--rules` file may hold hooks beside its rules (a Claude Code settings.json does).
    let rules_file = args.rules.as_deref().filter(|_| !specialist);
    for path in rules_file
        .into_iter()
        .chain(args.hooks.iter().map(PathBuf::as_path))
    {
        set.add_file(path, &timeout)
            .map_err(|e| Failure::usage(e.to_string()))?;
    }
    Ok(set)
}

/// The run's permission rules: the flags, config.toml's `[permissions]` and the `--rules`
/// file. A specialist reads only its flags, which its parent wrote from every rule it had. A
/// rule that does not parse is a usage error naming it.
fn rule_set(
    args: &ExecArgs,
    file: Option<&ConfigFile>,
    env: &Environment,
    workspace: &Path,
    specialist: bool,
) -> Result<RuleSet, Failure> {
    let home = crate::environ::home(&|name| env.var_os(name));
    rules::load(&rules::Sources {
        allow: &args.allow,
        deny: &args.deny,
        file: args.rules.as_deref(),
        config: file.filter(|_| !specialist),
        workspace,
        home: home.as_deref(),
    })
    .map_err(|error| Failure::usage(error.to_string()))
}

/// The run's canonical roots, the workspace first.
fn roots(workspace: &Path, policy: &Policy) -> Vec<PathBuf> {
    std::iter::once(workspace.to_path_buf())
        .chain(policy.extra_roots().iter().cloned())
        .collect()
}

/// `runtime` with the run's confinement: what every command gets.
fn confined(mut runtime: RuntimeConfig, confinement: &Confinement) -> RuntimeConfig {
    runtime.sandbox = confinement.commands.sandbox.clone();
    runtime.withheld_env = confinement.withheld.iter().map(OsString::from).collect();
    runtime
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

/// The run's budget: each flag, else its key in the config file.
fn limits(args: &ExecArgs, keys: &FileKeys) -> Result<Limits, Failure> {
    let tokens = match (args.max_tokens, keys.max_tokens) {
        (Some(tokens), _) => Some(tokens),
        (None, Some(0)) => {
            return Err(Failure::config(
                "`max_tokens` in config.toml must be at least 1".into(),
            ));
        }
        (None, tokens) => tokens,
    };
    let cost = match (args.max_cost_usd, keys.max_cost_usd) {
        (Some(cost), _) => Some(cost),
        (None, Some(dollars)) => Some(
            Usd::parse(&dollars.to_string())
                .map_err(|e| Failure::config(format!("`max_cost_usd` in config.toml: {e}")))?,
        ),
        (None, None) => None,
    };
    Ok(Limits { tokens, cost })
}

/// The run's deadline: its own timeout from now (the flag, else the config file's `timeout`),
/// and never later than the launching run's.
fn deadline(
    args: &ExecArgs,
    file_timeout: Option<&str>,
    parent: &Option<Parent>,
) -> Result<Option<SystemTime>, Failure> {
    let timeout = match args.timeout {
        Some(timeout) => Some(timeout),
        None => file_timeout
            .map(|text| {
                parse_timeout(text)
                    .map_err(|e| Failure::config(format!("`timeout` in config.toml: {e}")))
            })
            .transpose()?,
    };
    let own = timeout.map(|timeout| SystemTime::now() + timeout);
    let inherited = parent.as_ref().and_then(Parent::deadline);
    Ok(match (own, inherited) {
        (Some(own), Some(inherited)) => Some(own.min(inherited)),
        (own, inherited) => own.or(inherited),
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn mode_of(flags: &[&str]) -> Mode {
        let argv = ["zero", "exec"].iter().chain(flags);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Exec(args) => Mode::of(&args),
            _ => unreachable!("parsed as exec"),
        }
    }

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

    #[test]
    fn each_listing_flag_picks_its_mode_and_none_runs_the_agent() {
        assert_eq!(mode_of(&["fix it"]), Mode::Run);
        assert_eq!(mode_of(&["--list-tools"]), Mode::ListTools);
        assert_eq!(mode_of(&["--list-specialists"]), Mode::ListSpecialists);
    }
}
