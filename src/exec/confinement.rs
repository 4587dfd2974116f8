//! What a run's commands are confined by — the kernel sandbox and the environment they get —
//! decided once from `--auto`, `--sandbox`, `--network`, `--env-keep`, `config.toml` and what
//! the kernel offers. The runtime's guardians enforce it (`runtime::sandbox`); the tools see
//! it through the policy (`tools::policy::Commands`).
//!
//! | level | writes | network | capabilities | environment |
//! |---|---|---|---|---|
//! | low | the run's `$TMPDIR` only (`bash` is offered read-only) | Unix sockets only | none | secret-looking names withheld |
//! | medium | workspace, `--add-dir` roots, `$TMPDIR` | Unix sockets only | none | secret-looking names withheld |
//! | high | anywhere | open | zero's | everything but the provider's keys |
//!
//! `--network` adds a network client's sockets at low and medium (IPv4, IPv6, netlink
//! routing; never raw packet sockets); `--env-keep NAME` passes one withheld variable;
//! `--sandbox off` applies no kernel rule and drops no capability (the environment rules
//! stay).

use std::path::PathBuf;

use serde::Deserialize;

use super::failure::Failure;
use super::inputs::Environment;
use crate::cli::ExecArgs;
use crate::command_pattern::DenyRule;
use crate::config_file::ConfigFile;
use crate::environ::names::{KEY_VARIABLES, looks_secret};
use crate::output::SandboxInForce;
use crate::runtime::sandbox::{
    ExecRules, Network, Privileges, Sandbox, SandboxMode, Support, Writes,
};
use crate::tools::policy::{Autonomy, Commands};

/// The `config.toml` keys this module owns.
#[derive(Debug, Default, Deserialize)]
pub(super) struct FileKeys {
    sandbox: Option<SandboxMode>,
    network: Option<bool>,
    env_keep: Option<Vec<String>>,
}

/// The run's confinement, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Confinement {
    /// What the tools and a specialist child see of it.
    pub(crate) commands: Commands,
    /// The names withheld from every command, sorted.
    pub(crate) withheld: Vec<String>,
    /// What `--sandbox auto` could not apply, each said once as a warning.
    pub(crate) warnings: Vec<String>,
    /// Whether the kernel can enforce the exec check ([`Support::execs`]).
    execs_supported: bool,
}

impl Confinement {
    /// What `run_start` says is in force.
    pub(crate) fn in_force(&self) -> SandboxInForce {
        SandboxInForce::of(&self.commands.sandbox)
    }

    /// The exec check of the deny rules `rules` under this confinement: the rules, where the
    /// kernel can enforce it; none with `--sandbox off` (no kernel rule at all), and none with
    /// a warning (`--sandbox auto`) or an error (`--sandbox required`, exit 3) where it
    /// cannot. The line check holds in every case.
    pub(crate) fn exec_rules(&mut self, rules: Vec<DenyRule>) -> Result<ExecRules, Failure> {
        if rules.is_empty() || self.commands.mode == SandboxMode::Off {
            return Ok(ExecRules::default());
        }
        if self.execs_supported {
            return Ok(ExecRules::new(rules));
        }
        let missing = "the exec check of the deny rules on commands (this kernel cannot hand                        execs to zero: seccomp user notification needs Linux 5.0, and reading                        a command's arguments needs process_vm_readv and a Yama ptrace_scope                        below 2)";
        if self.commands.mode == SandboxMode::Required {
            return Err(Failure::sandbox(format!(
                "--sandbox required: this system cannot enforce {missing}; use --sandbox                  auto to run with the line check alone"
            )));
        }
        self.warnings.push(format!(
            "the sandbox is incomplete: this system cannot enforce {missing}, so the deny              rules on commands are checked on the command line only, which a command can              get around (--sandbox required refuses to run without it)"
        ));
        Ok(ExecRules::default())
    }
}

/// Resolves the run's confinement. `roots` are the run's canonical roots, the workspace first;
/// `file` the config file when it could be read (its errors are the provider's to report).
pub(crate) fn resolve(
    args: &ExecArgs,
    file: Option<&ConfigFile>,
    env: &Environment,
    autonomy: Autonomy,
    roots: &[PathBuf],
    support: Support,
) -> Result<Confinement, Failure> {
    let keys: FileKeys = match file {
        Some(file) => file.keys().map_err(|e| Failure::config(e.to_string()))?,
        None => FileKeys::default(),
    };
    let mode = args.sandbox.or(keys.sandbox).unwrap_or_default();
    let network = args.network || keys.network.unwrap_or(false);
    let mut env_keep = keys.env_keep.unwrap_or_default();
    env_keep.extend(args.env_keep.iter().cloned());
    env_keep.sort();
    env_keep.dedup();
    if let Some(key) = env_keep
        .iter()
        .find(|name| KEY_VARIABLES.contains(&name.as_str()))
    {
        return Err(Failure::usage(format!(
            "--env-keep {key}: zero never passes its provider key to commands"
        )));
    }
    let wanted = match autonomy {
        Autonomy::High => Sandbox::open(),
        level => Sandbox {
            writes: Writes::Beneath(match level {
                // The run's temporary directory, which the runtime adds, is all a read-only
                // command may write to.
                Autonomy::Low => Vec::new(),
                _ => roots.to_vec(),
            }),
            network: if network {
                Network::Clients
            } else {
                Network::Blocked
            },
            privileges: Privileges::Dropped,
        },
    };
    let (sandbox, warnings) = match mode {
        SandboxMode::Off => (Sandbox::open(), Vec::new()),
        SandboxMode::Auto | SandboxMode::Required => {
            let (sandbox, missing) = enforceable(wanted, support);
            match (missing.is_empty(), mode) {
                (true, _) => (sandbox, Vec::new()),
                (false, SandboxMode::Required) => {
                    return Err(Failure::sandbox(format!(
                        "--sandbox required: this system cannot enforce {}; use --sandbox auto \
                         to run with what it can enforce",
                        missing.join(" or ")
                    )));
                }
                (false, _) => (
                    sandbox,
                    vec![format!(
                        "the sandbox is incomplete: this system cannot enforce {} (--sandbox \
                         required refuses to run without it)",
                        missing.join(" or ")
                    )],
                ),
            }
        }
    };
    let withheld = withheld_names(env, autonomy, &env_keep);
    Ok(Confinement {
        commands: Commands {
            mode,
            network,
            env_keep,
            sandbox,
        },
        withheld,
        warnings,
        execs_supported: support.execs,
    })
}

/// `wanted` without the rules `support` says cannot be enforced, and a description of each
/// rule dropped.
fn enforceable(wanted: Sandbox, support: Support) -> (Sandbox, Vec<&'static str>) {
    let mut missing = Vec::new();
    let writes = match wanted.writes {
        Writes::Beneath(_) if !support.filesystem => {
            missing
                .push("the write rule (Landlock is not available), so commands may write anywhere");
            Writes::Anywhere
        }
        writes => writes,
    };
    let network = match wanted.network {
        Network::Blocked | Network::Clients if !support.network => {
            missing.push(
                "the network rule (seccomp is not available), so commands may open any socket",
            );
            Network::Open
        }
        network => network,
    };
    let privileges = match wanted.privileges {
        Privileges::Dropped if !support.privileges => {
            missing.push(
                "the privilege rule (capabilities cannot be dropped here), so commands keep \
                 zero's privileges",
            );
            Privileges::Kept
        }
        privileges => privileges,
    };
    (
        Sandbox {
            writes,
            network,
            privileges,
        },
        missing,
    )
}

/// The names of the variables in `env` no command receives: the provider's keys always, and
/// below `--auto high` every name that looks like a secret's, except those in `keep`.
fn withheld_names(env: &Environment, autonomy: Autonomy, keep: &[String]) -> Vec<String> {
    let mut names: Vec<String> = env
        .names()
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| {
            KEY_VARIABLES.contains(&name.as_str())
                || (autonomy < Autonomy::High && looks_secret(name) && !keep.contains(name))
        })
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A confinement in `mode`, on a kernel that can (or cannot) check execs.
    fn confinement(mode: SandboxMode, execs_supported: bool) -> Confinement {
        Confinement {
            commands: Commands {
                mode,
                network: false,
                env_keep: Vec::new(),
                sandbox: Sandbox::open(),
            },
            withheld: Vec::new(),
            warnings: Vec::new(),
            execs_supported,
        }
    }

    #[test]
    fn the_exec_check_holds_where_the_kernel_can_and_fails_closed_where_it_cannot() {
        let rules = || {
            vec![DenyRule {
                rule: "bash(git push *)".into(),
                pattern: crate::command_pattern::CommandPattern::parse("git push *").unwrap(),
            }]
        };
        for mode in [SandboxMode::Auto, SandboxMode::Required] {
            let mut able = confinement(mode, true);
            assert_eq!(able.exec_rules(rules()).unwrap(), ExecRules::new(rules()));
            assert!(able.warnings.is_empty());
            assert!(able.exec_rules(Vec::new()).unwrap().is_empty());
        }
        let mut auto = confinement(SandboxMode::Auto, false);
        assert!(auto.exec_rules(rules()).unwrap().is_empty());
        assert!(auto.warnings[0].contains("checked on the command line only"));
        let mut required = confinement(SandboxMode::Required, false);
        let refused = required.exec_rules(rules()).unwrap_err();
        assert_eq!(refused.code, crate::output::ErrorCode::SandboxUnavailable);
        assert!(refused.message.starts_with("--sandbox required"));
        let mut off = confinement(SandboxMode::Off, true);
        assert!(off.exec_rules(rules()).unwrap().is_empty());
        assert!(off.warnings.is_empty());
    }

    #[test]
    fn what_the_kernel_cannot_enforce_is_dropped_and_named() {
        let wanted = Sandbox {
            writes: Writes::Beneath(vec!["/w".into()]),
            network: Network::Blocked,
            privileges: Privileges::Dropped,
        };
        let all = Support {
            filesystem: true,
            network: true,
            privileges: true,
            execs: true,
        };
        assert_eq!(
            enforceable(wanted.clone(), all),
            (wanted.clone(), Vec::new())
        );
        let none = Support {
            filesystem: false,
            network: false,
            privileges: false,
            execs: false,
        };
        let (sandbox, missing) = enforceable(wanted, none);
        assert_eq!(sandbox, Sandbox::open());
        assert_eq!(missing.len(), 3);
    }
}
