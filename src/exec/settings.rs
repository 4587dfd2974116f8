//! Everything a `zero exec` job is configured with — argv, environment and config file — read
//! once, into one [`Settings`] value that the rest of the job is built from (ripgrep's flags →
//! `HiArgs` is the model). Nothing below `exec` reads the process environment or the config
//! file for itself.
//!
//! Resolution is staged where the order of errors matters: what the run's output needs first
//! (the secrets to mask) comes from [`Inputs`], read before anything can fail; [`Settings`]
//! resolves the rest, reporting usage errors in the order the flags are used, and keeps the
//! provider's resolution as a result to report after the prompt, so a run with no prompt says
//! so before it complains about the provider.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::cli::{ExecArgs, parse_timeout};
use crate::config_file::{self, ConfigFile, ConfigFileError};
use crate::mcp::{ServerConfig, UnknownKey, config as mcp_config};
use crate::provider::{
    self, ConfigError, ContextWindow, MIN_CONTEXT_WINDOW, ProviderConfig, ProviderFlags,
    WindowSource,
};
use crate::redact::Secrets;
use crate::runtime::sandbox::Support;
use crate::runtime::{RunId, RuntimeConfig, RuntimeError};
use crate::structured::OutputSchema;
use crate::tasks::{Parent, SearchPaths};
use crate::tools::Policy;
use crate::usage::{Limits, Price, Prices, Usd};

use super::confinement::{self, Confinement};
use super::{Failure, job};

/// The default `--max-turns`.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 80;

/// The default `--schema-retries`: enough for a model to fix a slip, few enough that a model
/// that cannot produce the shape fails fast.
pub(crate) const DEFAULT_SCHEMA_RETRIES: u32 = 2;

/// The process environment, read once. Values that are not UTF-8 are kept for the readers of
/// paths and left out of the readers of text.
#[derive(Debug, Clone, Default)]
pub(crate) struct Environment {
    vars: BTreeMap<OsString, OsString>,
}

impl Environment {
    /// This process's environment, as it is now.
    pub(crate) fn of_process() -> Self {
        Environment {
            vars: std::env::vars_os().collect(),
        }
    }

    /// A variable as it was set.
    pub(crate) fn var_os(&self, name: &str) -> Option<OsString> {
        self.vars.get(std::ffi::OsStr::new(name)).cloned()
    }

    /// The names of every variable set.
    pub(crate) fn names(&self) -> impl Iterator<Item = &std::ffi::OsStr> {
        self.vars.keys().map(OsString::as_os_str)
    }

    /// A variable that is set and UTF-8.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        self.var_os(name)?.into_string().ok()
    }
}

/// What is read before anything can fail: the environment and the config file, and from them
/// the secrets every line zero writes is masked with.
pub(crate) struct Inputs {
    /// The process environment.
    pub(crate) env: Environment,
    /// The config file, or why it could not be read (reported where its keys are needed).
    pub(crate) file: Result<Option<ConfigFile>, ConfigFileError>,
}

impl Inputs {
    /// Reads the environment and the config file it points to.
    pub(crate) fn read() -> Self {
        let env = Environment::of_process();
        let file = ConfigFile::load(&|name| env.var(name));
        Inputs { env, file }
    }

    /// The runtime configuration for the run `run_id`: its data directory and limits.
    pub(crate) fn runtime(&self, run_id: &RunId) -> Result<RuntimeConfig, RuntimeError> {
        RuntimeConfig::from_vars(run_id.clone(), |name| self.env.var_os(name))
    }

    /// The secrets known before anything is resolved: the key variables' values and the
    /// config file's key, hidden from everything zero writes whether or not the run uses them.
    pub(crate) fn secrets(&self) -> Secrets {
        let secrets = Secrets::from_vars(|name| self.env.var(name));
        if let Some(key) = self
            .file
            .as_ref()
            .ok()
            .and_then(Option::as_ref)
            .and_then(provider::config_file_key)
        {
            secrets.add(&key);
        }
        secrets
    }

    /// One warning for each key of the config file that no part of zero reads, naming the
    /// closest known key. None in a specialist: its parent read the same file and said so.
    pub(crate) fn config_warnings(&self) -> Vec<String> {
        let Ok(Some(file)) = &self.file else {
            return Vec::new();
        };
        if Parent::from_env(|name| self.env.var_os(name)).is_some() {
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
}

/// Every top-level key of config.toml, from the serde structs of the parts that read them:
/// a part that reads a new key knows it here without a second list to keep in step.
fn known_config_keys() -> Vec<&'static str> {
    [
        config_file::fields::<FileKeys>(),
        config_file::fields::<confinement::FileKeys>(),
        config_file::fields::<provider::config::FileConfig>(),
        config_file::fields::<mcp_config::FileKeys>(),
    ]
    .concat()
}

/// One job's resolved settings. See the module documentation.
pub(crate) struct Settings {
    /// The canonical workspace root (`--cwd`, or the current directory).
    pub(crate) workspace: PathBuf,
    /// What the run may do (`--auto`, `--skip-permissions-unsafe`, the roots).
    pub(crate) policy: Policy,
    /// The run's runtime: its data directory and limits.
    pub(crate) runtime: RuntimeConfig,
    /// The provider, or why there is none (reported once the prompt is known).
    pub(crate) provider: Result<ProviderConfig, ConfigError>,
    /// The run that launched this one, when this run is a specialist.
    pub(crate) parent: Option<Parent>,
    /// Where specialists' manifests are found.
    pub(crate) specialists: SearchPaths,
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
    pub(crate) prices: Prices,
    /// Where this run reports its spending, when it is a specialist.
    pub(crate) usage_report: Option<PathBuf>,
    /// The context window as the flag or config.toml gave it; else the provider finds it.
    pub(crate) context_window: Option<ContextWindow>,
    /// The schema the final answer must satisfy (`--output-schema`), read and checked.
    pub(crate) output_schema: Option<OutputSchema>,
    /// How many answers that miss the schema go back to the model (`--schema-retries`).
    pub(crate) schema_retries: u32,
    /// The MCP servers the run starts (config.toml, `--mcp-project`, `--mcp-config`).
    pub(crate) mcp_servers: Vec<ServerConfig>,
    /// The keys of the MCP configuration zero does not know, for a warning each.
    pub(crate) mcp_unknown_keys: Vec<UnknownKey>,
    /// Whether the workspace has a `.mcp.json` this run does not read (no `--mcp-project`).
    pub(crate) project_mcp_unread: bool,
    /// The process environment, which `${VAR}` in an MCP server's entry is expanded from.
    pub(crate) env: Environment,
}

/// The `config.toml` keys the settings read themselves.
#[derive(Debug, Default, serde::Deserialize)]
struct FileKeys {
    timeout: Option<String>,
    max_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
    context_window: Option<u32>,
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
    /// Resolves `args` with `inputs` and the runtime configuration they gave
    /// ([`Inputs::runtime`], already used to reconcile). The first error a user can fix is the
    /// one reported.
    pub fn resolve(
        args: &ExecArgs,
        inputs: Inputs,
        runtime: Result<RuntimeConfig, RuntimeError>,
    ) -> Result<Self, Failure> {
        let Inputs { env, file } = inputs;
        let parent = Parent::from_env(|name| env.var_os(name));
        // First, so the key file is gone before anything this run starts could look for it.
        let handed_key = match &parent {
            Some(parent) => parent.take_handed_key().map_err(Failure::config)?,
            None => None,
        };
        let workspace = job::workspace(args)?;
        let policy = job::policy(args, &workspace)?;
        let mut runtime = runtime.map_err(|e| Failure::usage(e.to_string()))?;
        let roots: Vec<PathBuf> = std::iter::once(workspace.clone())
            .chain(policy.extra_roots().iter().cloned())
            .collect();
        let confinement = confinement::resolve(
            args,
            file.as_ref().ok().and_then(Option::as_ref),
            &env,
            policy.autonomy(),
            &roots,
            Support::probe(),
        )?;
        let keys = FileKeys::read(file.as_ref().ok().and_then(Option::as_ref))?;
        let project_mcp = workspace.join(".mcp.json");
        let mcp = mcp_config::load(mcp_config::Sources {
            config_file: file.as_ref().ok().and_then(Option::as_ref),
            files: &args.mcp_config,
            project: args.mcp_project.then_some(workspace.as_path()),
            strict: args.strict_mcp_config,
        })
        .map_err(|error| Failure::usage(error.to_string()))?;
        let project_mcp_unread =
            !args.mcp_project && !args.strict_mcp_config && project_mcp.is_file();
        let deadline = deadline(args, keys.timeout.as_deref(), &parent)?;
        let limits = limits(args, &keys)?;
        let context_window = context_window(args, &keys)?;
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
        runtime.sandbox = confinement.commands.sandbox.clone();
        runtime.withheld_env = confinement.withheld.iter().map(OsString::from).collect();
        // A key handed over by a parent run counts as `ZERO_API_KEY`.
        let provider_env = |name: &str| match (name, &handed_key) {
            ("ZERO_API_KEY", Some(key)) => Some(key.clone()),
            _ => env.var(name),
        };
        let flags = provider_flags(args);
        let provider = match file {
            Ok(ref file) => provider::resolve(&flags, &provider_env, Ok(file.as_ref())),
            Err(error) => provider::resolve(&flags, &provider_env, Err(error)),
        };
        let specialists = SearchPaths::new(&workspace, |name| env.var_os(name));
        Ok(Settings {
            workspace,
            policy,
            runtime,
            provider,
            parent,
            specialists,
            max_turns: args.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            confinement,
            deadline,
            limits,
            prices,
            usage_report,
            context_window,
            output_schema,
            schema_retries: args.schema_retries.unwrap_or(DEFAULT_SCHEMA_RETRIES),
            mcp_servers: mcp.servers,
            mcp_unknown_keys: mcp.unknown_keys,
            project_mcp_unread,
            env,
        })
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

/// The provider flags of `zero exec`, apart from the rest of its arguments.
fn provider_flags(args: &ExecArgs) -> ProviderFlags {
    ProviderFlags {
        provider: args.provider,
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        max_output_tokens: args.max_output_tokens,
    }
}
