//! Where the run works and how its commands are confined: the workspace, the policy
//! (`--auto`, the roots, the sandbox, the deadline), the runtime's configuration with the
//! confinement in it, where specialists are found, and the `--worktree` the workspace lies in.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::cli::ExecArgs;
use crate::command_pattern::DenyRule;
use crate::config_file::ConfigFile;
use crate::output::event::WorktreeInfo;
use crate::redact::Secrets;
use crate::runtime::sandbox::Support;
use crate::runtime::{RuntimeConfig, RuntimeError};
use crate::tasks::SearchPaths;
use crate::tools::Policy;
use crate::tools::policy::{Autonomy, ReadFilter};

use crate::exec::confinement::{self, Confinement};
use crate::exec::failure::Failure;
use crate::exec::flags;
use crate::exec::inputs::Environment;

/// The workspace's settings.
pub(crate) struct WorkspaceSettings {
    /// The canonical workspace root (`--cwd`, or the current directory).
    pub(crate) root: PathBuf,
    /// What the run may do (`--auto`, `--skip-permissions-unsafe`, the roots, the sandbox,
    /// the deadline).
    pub(crate) policy: Policy,
    /// The run's runtime: its data directory and limits, and the confinement of its commands.
    pub(crate) runtime: RuntimeConfig,
    /// What the run's commands are confined by (also in `policy` and `runtime`).
    pub(crate) confinement: Confinement,
    /// Where specialists' manifests are found.
    pub(crate) specialists: SearchPaths,
    /// With `--worktree`: the worktree `root` lies in (set once it is made).
    pub(crate) worktree: Option<WorktreeInfo>,
}

impl WorkspaceSettings {
    /// The workspace the flags name, confined as the flags, `file` and `env` say, with the
    /// `runtime` configuration the environment gave. Usage errors come in the order the flags
    /// are used: the workspace, the roots, the runtime, the confinement.
    pub(super) fn resolve(
        args: &ExecArgs,
        file: Option<&ConfigFile>,
        env: &Environment,
        runtime: Result<RuntimeConfig, RuntimeError>,
    ) -> Result<Self, Failure> {
        let root = flags::workspace(args.cwd.as_deref())?;
        let policy = flags::policy(args, &root)?;
        let mut runtime = runtime.map_err(|e| Failure::usage(e.to_string()))?;
        let roots = roots(&root, &policy);
        let confinement =
            confinement::resolve(args, file, env, policy.autonomy(), &roots, Support::probe())?;
        // At `medium` commands write the roots, and with them the git directories inside:
        // what would start a program in the user's own git is put back after each call.
        if policy.autonomy() == Autonomy::Medium {
            runtime.guarded_git = roots;
        }
        let specialists = SearchPaths::new(&root, |name| env.var_os(name));
        Ok(WorkspaceSettings {
            policy: policy.with_commands(confinement.commands.clone()),
            runtime: confined(runtime, &confinement),
            root,
            confinement,
            specialists,
            worktree: None,
        })
    }

    /// The model's commands have every exec of their trees checked against `rules`, the run's
    /// deny rules on commands, where the confinement can (see
    /// [`Confinement::exec_rules`]).
    pub(super) fn check_execs(&mut self, rules: Vec<DenyRule>) -> Result<(), Failure> {
        self.runtime.exec_rules = self.confinement.exec_rules(rules)?;
        Ok(())
    }

    /// The run has checks, which write the roots at `--auto low` too (a check is never
    /// confined below `medium`'s writes): their git metadata is kept as at `medium`.
    pub(super) fn guard_git_for_checks(&mut self) {
        if self.policy.autonomy() == Autonomy::Low {
            self.runtime.guarded_git = roots(&self.root, &self.policy);
        }
    }

    /// The policy ends the run's commands at `deadline` (the budget's).
    pub(super) fn until(&mut self, deadline: Option<SystemTime>) {
        self.policy = self.policy.clone().with_deadline(deadline);
    }

    /// The policy's searches leave out what `reads` keeps from them (the rules').
    pub(super) fn hide(&mut self, reads: Option<Arc<dyn ReadFilter>>) {
        self.policy = self.policy.clone().with_reads(reads);
    }

    /// The runtime's configuration, masking `secrets` in what its records say.
    pub(crate) fn runtime_config(&self, secrets: &Secrets) -> RuntimeConfig {
        RuntimeConfig {
            secrets: secrets.clone(),
            ..self.runtime.clone()
        }
    }
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
