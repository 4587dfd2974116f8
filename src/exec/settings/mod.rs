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
//!
//! The settings come in groups, each with its own resolve, by what consumes them: the request
//! (`request`: the prompt, the session, the answer's schema), the workspace and its
//! confinement (`workspace`), the model (`model`), the budget (`budget`), the caller's
//! controls (`controls`: tool lists, rules, hooks, and `web_fetch`, which `web` decides), the
//! MCP servers (`mcp`) and the skills (`skills`).

mod budget;
mod cassette;
mod controls;
mod mcp;
mod model;
mod outcome;
mod request;
mod skills;
mod web;
mod workspace;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cli::ExecArgs;
use crate::config_file::{self, ConfigFile};
use crate::hooks;
use crate::mcp::config as mcp_config;
use crate::output;
use crate::provider;
use crate::rules::{self, Effect};
use crate::runtime::{RunId, RuntimeConfig, RuntimeError};
use crate::tasks::{Launcher, Parent};
use crate::tools::{PromptStyle, Registry, SideEffect, ToolFilter, ToolId};
use crate::usage::Price;

use super::Invocation;
use super::confinement;
use super::failure::Failure;
use super::inputs::{Environment, Inputs};
pub(crate) use budget::BudgetSettings;
pub(crate) use cassette::CassetteSettings;
pub(crate) use controls::Controls;
pub(crate) use mcp::McpSettings;
pub(crate) use model::ModelSettings;
use model::ModelSources;
pub(crate) use outcome::OutcomeSettings;
pub(crate) use request::RequestSettings;
pub(crate) use skills::SkillSettings;
pub(crate) use web::gate as web_gate;
pub(crate) use workspace::WorkspaceSettings;

/// What the job does: run the agent, or list what a run would have and exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Run the agent on the prompt.
    Run,
    /// `--list-tools`: the tools the model would see under these flags.
    ListTools,
    /// `--list-specialists`: the specialists the `Task` tool can launch.
    ListSpecialists,
    /// `--list-skills`: the skills the model would be offered.
    ListSkills,
}

impl Mode {
    /// The mode the flags ask for (clap refuses two listings at once).
    fn of(args: &ExecArgs) -> Self {
        match (args.list_specialists, args.list_tools, args.list_skills) {
            (true, _, _) => Mode::ListSpecialists,
            (_, true, _) => Mode::ListTools,
            (_, _, true) => Mode::ListSkills,
            _ => Mode::Run,
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
        config_file::fields::<web::FileKeys>(),
        config_file::fields::<outcome::FileKeys>(),
    ]
    .concat()
}

/// One job's resolved settings, in groups. See the module documentation.
pub(crate) struct Settings {
    /// What the job does.
    pub(crate) mode: Mode,
    /// The run that launched this one, when this run is a specialist.
    pub(crate) parent: Option<Parent>,
    /// What the job is asked.
    pub(crate) request: RequestSettings,
    /// Where it works and how its commands are confined.
    pub(crate) workspace: WorkspaceSettings,
    /// The model it talks to.
    pub(crate) model: ModelSettings,
    /// What it may spend.
    pub(crate) budget: BudgetSettings,
    /// The caller's tool lists, rules and hooks.
    pub(crate) controls: Controls,
    /// The caller's checks and `--strict`.
    pub(crate) outcome: OutcomeSettings,
    /// The MCP servers the run starts, and what to warn about their configuration.
    pub(crate) mcp: McpSettings,
    /// The skills the run offers.
    pub(crate) skills: SkillSettings,
    /// The cassette the run records to or replays from.
    pub(crate) cassette: CassetteSettings,
    /// The process environment, for [`Settings::var`].
    env: Environment,
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
    /// they gave ([`Inputs::runtime`]), group by group. The first error a user can fix is the
    /// one reported.
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
        let specialist = parent.is_some();
        let file = inputs.config_file();
        let mut workspace = WorkspaceSettings::resolve(&args, file, &inputs.env, runtime)?;
        let mut keys = FileKeys::read(file)?;
        let mcp = McpSettings::resolve(&args, file, &inputs.env, &workspace.root)?;
        let controls = Controls::resolve(&args, file, &inputs.env, &workspace.root, specialist)?;
        workspace.check_execs(controls.rules.exec_denials())?;
        workspace.hide(controls.rules.read_filter());
        let outcome = OutcomeSettings::resolve(&args, file, specialist)?;
        if !outcome.checks.is_empty() {
            workspace.guard_git_for_checks();
        }
        let mode = Mode::of(&args);
        let skills = SkillSettings::resolve(&args, &inputs.env, &workspace.root, mode)?;
        let budget = BudgetSettings::resolve(&args, &mut keys, parent.as_ref())?;
        workspace.until(budget.deadline);
        let cassette = CassetteSettings::resolve(&args, parent.as_ref())?;
        let Inputs { env, file } = inputs;
        let mut model = ModelSettings::resolve(
            &args,
            ModelSources {
                keys: &keys,
                env: &env,
                file,
                handed_key,
                specialist,
            },
        )?;
        if let Some(replayed) = cassette.replayed_provider(args.max_output_tokens) {
            model.provider = Ok(replayed?);
        }
        Ok(Settings {
            mode,
            request: RequestSettings::resolve(&args, prompt_parts)?,
            parent,
            workspace,
            model,
            budget,
            controls,
            outcome,
            mcp,
            skills,
            cassette,
            env,
        })
    }

    /// A variable of the environment the settings were resolved with: what `${VAR}` in an
    /// MCP server's entry and the local model's cache are read from when `mcp` and
    /// `local_model` start what the run needs (their APIs take a lookup, not the values).
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        self.env.var(name)
    }

    /// What the `Task` tool launches specialists with, for the run `parent_run` counting in
    /// `ledger`; `None` in a specialist, which never launches specialists of its own.
    pub(crate) fn launcher(
        &self,
        parent_run: &RunId,
        ledger: &Arc<crate::usage::Ledger>,
        narrowing: &Arc<crate::rules::Narrowing>,
    ) -> Option<Launcher> {
        let (rules, hooks) = self.controls.handed();
        self.parent.is_none().then(|| Launcher {
            parent_run: parent_run.clone(),
            provider: self.model.child_env(),
            search: self.workspace.specialists.clone(),
            ledger: Arc::clone(ledger),
            mcp_servers: self.mcp.handed.clone(),
            rules,
            hooks,
            skills: self.skills.handed(),
            narrowing: Arc::clone(narrowing),
            cassette: self.cassette.link(),
        })
    }

    /// A warning when `bash` allow rules cannot take effect: at `--auto low` `bash` is offered
    /// (read-only) only where the sandbox can make commands read-only, and this run has no
    /// such sandbox, so the commands those rules name will not run. Saying so beats a silent
    /// no.
    pub(crate) fn unoffered_bash_rules(&self) -> Option<String> {
        let policy = &self.workspace.policy;
        let rules: Vec<&str> = self
            .controls
            .rules
            .rules()
            .iter()
            .filter(|rule| rule.effect == Effect::Allow && rule.covers(ToolId::Bash))
            .map(|rule| rule.text.as_str())
            .collect();
        if rules.is_empty() || policy.permits(SideEffect::Shell).is_ok() {
            return None;
        }
        Some(format!(
            "bash is not offered at --auto {} without the sandbox, so {} cannot run anything; \
             use --auto medium, or run where the sandbox is available",
            output::word(&policy.autonomy()),
            rules
                .iter()
                .map(|rule| format!("`{rule}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// The tool filter of the flags, each name checked against `registry` and the configured
    /// MCP servers (what the compact prompt leaves out is left out once the style is known:
    /// `Pieces::toolset`).
    pub(crate) fn tool_filter(&self, registry: &Registry) -> Result<ToolFilter, Failure> {
        self.controls.tool_filter(registry, &self.mcp.servers)
    }
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
    fn each_listing_flag_picks_its_mode_and_none_runs_the_agent() {
        assert_eq!(mode_of(&["fix it"]), Mode::Run);
        assert_eq!(mode_of(&["--list-tools"]), Mode::ListTools);
        assert_eq!(mode_of(&["--list-specialists"]), Mode::ListSpecialists);
        assert_eq!(mode_of(&["--list-skills"]), Mode::ListSkills);
    }
}
