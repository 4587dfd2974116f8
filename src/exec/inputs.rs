//! What a job reads from the process before anything can fail: the environment and the
//! config file, and from them the secrets every line zero writes is masked with. Read once,
//! and consulted only while [`super::settings::Settings`] is built from them.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

use crate::config_file::{ConfigFile, ConfigFileError};
use crate::provider;
use crate::redact::Secrets;
use crate::runtime::{RunId, RuntimeConfig, RuntimeError};

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
        self.vars.get(OsStr::new(name)).cloned()
    }

    /// The names of every variable set.
    pub(crate) fn names(&self) -> impl Iterator<Item = &OsStr> {
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

    /// The config file, when there is one and it could be read (its errors are reported
    /// where its keys are needed).
    pub(crate) fn config_file(&self) -> Option<&ConfigFile> {
        self.file.as_ref().ok().and_then(Option::as_ref)
    }

    /// The runtime configuration for the run `run_id`: its data directory and limits.
    pub(crate) fn runtime(&self, run_id: &RunId) -> Result<RuntimeConfig, RuntimeError> {
        RuntimeConfig::from_vars(run_id.clone(), |name| self.env.var_os(name))
    }

    /// The secrets known before anything is resolved: the key variables' values and the
    /// config file's key, hidden from everything zero writes whether or not the run uses them.
    pub(crate) fn secrets(&self) -> Secrets {
        let secrets = Secrets::from_vars(|name| self.env.var(name));
        if let Some(key) = self.config_file().and_then(provider::config_file_key) {
            secrets.add(&key);
        }
        secrets
    }
}
