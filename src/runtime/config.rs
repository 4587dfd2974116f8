//! What a runtime is configured with: its run id, where its data lives, and its limits.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::guardian::spawn::this_binary;
use super::sandbox::{ExecRules, Sandbox};
use super::timing::DEFAULT_KILL_GRACE;
use super::{RunId, RuntimeError};
use crate::environ::names::{ZERO_KILL_GRACE_MS, ZERO_MAX_BACKGROUND_TASKS};
use crate::redact::Secrets;

/// The most tasks one run may have running at once, unless configured otherwise.
pub const DEFAULT_MAX_RUNNING: usize = 8;

/// Everything a [`super::Runtime`] is configured with.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// The id of the run that owns every task this runtime starts.
    pub(crate) run_id: RunId,
    /// The data directory (`runs/`, `tasks/`); `None` when the environment names none, which
    /// is only an error once a task is started.
    pub(crate) data_dir: Option<PathBuf>,
    /// The most tasks that may run at once; a start beyond it fails.
    pub max_running: usize,
    /// The time between SIGTERM and SIGKILL when a command is stopped — a background task's
    /// or a foreground one's.
    pub kill_grace: Duration,
    /// Masked in what a task's record says about it (a command line may hold a key the
    /// model typed), since records are read back by `zero tasks` and by the model.
    pub(crate) secrets: Secrets,
    /// What every command is confined by (a specialist's `zero exec` confines its own).
    pub sandbox: Sandbox,
    /// Variables no process the runtime starts receives, on top of the provider's key
    /// variables, which none ever does.
    pub withheld_env: Vec<OsString>,
    /// The zero binary every guardian and specialist child runs as: this very executable
    /// (`this_binary`) unless the program embedding the runtime is not zero itself (an
    /// integration test, whose executable is the test harness, names a zero build here).
    pub zero_binary: PathBuf,
    /// The writable roots whose git metadata is kept as the run found it (`--auto medium`:
    /// the workspace and the `--add-dir` roots), restored after each tool call and at close
    /// (see `runtime::git_metadata`); empty when commands may not write them, or may write
    /// anything.
    pub guarded_git: Vec<PathBuf>,
    /// The deny rules on commands every exec of the model's commands is checked against
    /// (`runtime::guardian::execs`); empty when the run has none or cannot check them.
    pub exec_rules: ExecRules,
}

impl RuntimeConfig {
    /// A configuration with an explicit data directory and the default limits (what tests
    /// use: no process-wide environment involved).
    pub fn new(run_id: RunId, data_dir: impl Into<PathBuf>) -> Self {
        RuntimeConfig {
            run_id,
            data_dir: Some(data_dir.into()),
            max_running: DEFAULT_MAX_RUNNING,
            kill_grace: DEFAULT_KILL_GRACE,
            secrets: Secrets::default(),
            sandbox: Sandbox::open(),
            withheld_env: Vec::new(),
            zero_binary: this_binary().to_path_buf(),
            guarded_git: Vec::new(),
            exec_rules: ExecRules::default(),
        }
    }

    /// The configuration the environment `var` looks up asks for (`ZERO_HOME`, else
    /// `XDG_DATA_HOME`, else `HOME`; `ZERO_MAX_BACKGROUND_TASKS`, `ZERO_KILL_GRACE_MS`) for the
    /// run `run_id`: read once, for the run's background tasks and foreground commands alike.
    /// Nothing is created here.
    pub(crate) fn from_vars(
        run_id: RunId,
        var: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, RuntimeError> {
        let environment = Environment::from_vars(var)?;
        Ok(RuntimeConfig {
            run_id,
            data_dir: environment.data_dir,
            max_running: environment.max_running,
            kill_grace: environment.kill_grace,
            secrets: Secrets::default(),
            sandbox: Sandbox::open(),
            withheld_env: Vec::new(),
            zero_binary: this_binary().to_path_buf(),
            guarded_git: Vec::new(),
            exec_rules: ExecRules::default(),
        })
    }
}

/// What the environment says, for a run and for a process that opens none (`zero tasks`):
/// the data directory from `ZERO_HOME`, else `$XDG_DATA_HOME/zero`, else
/// `~/.local/share/zero`; the limits from `ZERO_MAX_BACKGROUND_TASKS` and `ZERO_KILL_GRACE_MS`.
#[derive(Debug)]
pub(super) struct Environment {
    /// See [`RuntimeConfig::data_dir`].
    pub(crate) data_dir: Option<PathBuf>,
    /// See [`RuntimeConfig::max_running`].
    pub max_running: usize,
    /// See [`RuntimeConfig::kill_grace`].
    pub kill_grace: Duration,
}

impl Environment {
    /// Reads the process environment. Creates nothing.
    pub(crate) fn from_env() -> Result<Self, RuntimeError> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Result<Self, RuntimeError> {
        let max_running = match setting(
            &var,
            ZERO_MAX_BACKGROUND_TASKS,
            "a whole number of at least 1",
        )? {
            Some(0) => {
                return Err(RuntimeError::InvalidSetting {
                    name: ZERO_MAX_BACKGROUND_TASKS,
                    value: "0".into(),
                    expected: "a whole number of at least 1",
                });
            }
            Some(max) => max as usize,
            None => DEFAULT_MAX_RUNNING,
        };
        let kill_grace = setting(&var, ZERO_KILL_GRACE_MS, "a whole number of milliseconds")?
            .map_or(DEFAULT_KILL_GRACE, Duration::from_millis);
        Ok(Environment {
            data_dir: crate::environ::data_dir(&var),
            max_running,
            kill_grace,
        })
    }
}

fn setting(
    var: &impl Fn(&str) -> Option<OsString>,
    name: &'static str,
    expected: &'static str,
) -> Result<Option<u64>, RuntimeError> {
    let Some(value) = var(name).filter(|value| !value.is_empty()) else {
        return Ok(None);
    };
    let value = value.to_string_lossy();
    value
        .trim()
        .parse()
        .map(Some)
        .map_err(|_| RuntimeError::InvalidSetting {
            name,
            value: value.into_owned(),
            expected,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Environment, RuntimeError> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Environment::from_vars(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn the_data_directory_follows_zero_home_then_xdg_then_home() {
        let dir = |vars: &[(&str, &str)]| config(vars).unwrap().data_dir;
        let all = [("ZERO_HOME", "/z"), ("XDG_DATA_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(dir(&all), Some("/z".into()));
        assert_eq!(dir(&all[1..]), Some("/x/zero".into()));
        assert_eq!(dir(&all[2..]), Some("/h/.local/share/zero".into()));
        assert_eq!(
            dir(&[("XDG_DATA_HOME", "relative"), ("HOME", "/h")]),
            Some("/h/.local/share/zero".into())
        );
        assert_eq!(
            dir(&[("ZERO_HOME", ""), ("HOME", "/h")]),
            Some("/h/.local/share/zero".into())
        );
        assert_eq!(dir(&[]), None);
    }

    #[test]
    fn limits_come_from_the_environment_or_the_defaults() {
        let defaults = config(&[]).unwrap();
        assert_eq!(defaults.max_running, DEFAULT_MAX_RUNNING);
        assert_eq!(defaults.kill_grace, DEFAULT_KILL_GRACE);
        let set = config(&[(ZERO_MAX_BACKGROUND_TASKS, "3"), (ZERO_KILL_GRACE_MS, "50")]).unwrap();
        assert_eq!(set.max_running, 3);
        assert_eq!(set.kill_grace, Duration::from_millis(50));
        for bad in [
            (ZERO_MAX_BACKGROUND_TASKS, "0"),
            (ZERO_MAX_BACKGROUND_TASKS, "x"),
            (ZERO_KILL_GRACE_MS, "-1"),
        ] {
            assert!(matches!(
                config(&[bad]),
                Err(RuntimeError::InvalidSetting { .. })
            ));
        }
    }
}
