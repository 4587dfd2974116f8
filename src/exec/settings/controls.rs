//! The caller's controls on what the model may call: the tool lists, the permission rules and
//! the hooks. What the registry's filter, the permission step and the hook runner are built
//! with, and what a specialist is handed so it can never have wider rules or fewer hooks.

use std::path::{Path, PathBuf};

use crate::cli::{ExecArgs, parse_timeout};
use crate::config_file::ConfigFile;
use crate::hooks::HookSet;
use crate::mcp::ServerConfig;
use crate::rules::{self, Effect, RuleSet};
use crate::tasks::{HandedHooks, HandedRules};
use crate::tools::{Registry, ToolFilter};

use crate::exec::failure::Failure;
use crate::exec::flags::{self, ToolLists};
use crate::exec::inputs::Environment;

/// The tool lists, rules and hooks the caller gave.
pub(crate) struct Controls {
    /// `--enabled-tools` and `--disabled-tools`.
    tools: ToolLists,
    /// The permission rules: `--allow`, `--deny`, `--rules` and config.toml's
    /// `[permissions]` (a specialist's: only the flags its parent wrote).
    pub(crate) rules: RuleSet,
    /// The run's hooks: config.toml's `[hooks]` and the `--hooks` files (a specialist's: only
    /// the file its parent handed it).
    pub(crate) hooks: HookSet,
    /// `--hooks-fail-open`.
    pub(crate) hooks_fail_open: bool,
    /// Whether the run offers `web_fetch` (see `web`).
    pub(crate) web_fetch: bool,
}

impl Controls {
    /// The controls of the flags and `file` (none of the file's in a `specialist`, whose
    /// parent hands it every rule and hook it had). A rule or a hook that is not valid is a
    /// usage error naming it; the rules' errors come first.
    pub(super) fn resolve(
        args: &ExecArgs,
        file: Option<&ConfigFile>,
        env: &Environment,
        workspace: &Path,
        specialist: bool,
    ) -> Result<Self, Failure> {
        let rules = rule_set(args, file, env, workspace, specialist)?;
        let hooks = hook_set(args, file, specialist)?;
        let web_fetch = super::web::offered(args, file, &rules, specialist)?;
        Ok(Controls {
            tools: ToolLists {
                enabled: args.enabled_tools.clone(),
                disabled: args.disabled_tools.clone(),
            },
            rules,
            hooks,
            hooks_fail_open: args.hooks_fail_open,
            web_fetch,
        })
    }

    /// The tool filter of the flags, each name checked against `registry` and the configured
    /// `mcp_servers`.
    pub(super) fn tool_filter(
        &self,
        registry: &Registry,
        mcp_servers: &[ServerConfig],
    ) -> Result<ToolFilter, Failure> {
        flags::tool_filter(&self.tools, registry, mcp_servers)
    }

    /// The rules and hooks a specialist is handed: every rule as a flag, the hooks (when there
    /// are some) as a private file.
    pub(super) fn handed(&self) -> (HandedRules, Option<HandedHooks>) {
        let rules = HandedRules {
            allow: self.rules.texts(Effect::Allow),
            deny: self.rules.texts(Effect::Deny),
        };
        let hooks = (!self.hooks.is_empty()).then(|| HandedHooks {
            text: self.hooks.to_file_text(),
            fail_open: self.hooks_fail_open,
        });
        (rules, hooks)
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
