//! What decides the run's outcome besides the model's answer: the caller's checks (`--verify`,
//! `verify` in config.toml and in the `--rules` file, with `--verify-timeout` and
//! `--verify-retries`) and `--strict`. A specialist reads neither config.toml's nor a rules
//! file's: its parent writes its checks as flags (the `Task` call's and the manifest's), so a
//! specialist never runs the parent's own checks on its part of the work.

use std::path::Path;

use serde::Deserialize;

use crate::cli::{ExecArgs, parse_timeout};
use crate::config_file::{self, ConfigFile};
use crate::exec::failure::Failure;
use crate::verify::{Checks, DEFAULT_RETRIES, DEFAULT_TIMEOUT};

/// The most a `--rules` file read for its `verify` may hold (as the rules' reader bounds it).
const RULES_FILE_LIMIT: u64 = 1024 * 1024;

/// The `config.toml` keys this group reads.
#[derive(Debug, Default, Deserialize)]
pub(super) struct FileKeys {
    verify: Option<Vec<String>>,
    verify_timeout: Option<String>,
    verify_retries: Option<u32>,
    strict: Option<bool>,
}

/// What this group reads of a `--rules` file: its `verify` list (its rules and hooks are
/// their readers' business).
#[derive(Debug, Default, Deserialize)]
struct RulesFile {
    #[serde(default)]
    verify: Vec<String>,
}

/// The run's checks and whether it is strict.
pub(crate) struct OutcomeSettings {
    /// The checks an answer that would end the run must pass.
    pub(crate) checks: Checks,
    /// `--strict` (or `strict = true`): a run whose work was blocked fails.
    pub(crate) strict: bool,
}

impl OutcomeSettings {
    /// The checks and the strictness the flags and `file` (config.toml; none of it in a
    /// `specialist`) give. The checks come in the order config.toml, the `--rules` file, the
    /// flags, each once; past the bounds (`verify::bounded`) is a usage error.
    pub(super) fn resolve(
        args: &ExecArgs,
        file: Option<&ConfigFile>,
        specialist: bool,
    ) -> Result<Self, Failure> {
        let keys: FileKeys = match file.filter(|_| !specialist) {
            Some(file) => file.keys().map_err(|e| Failure::config(e.to_string()))?,
            None => FileKeys::default(),
        };
        let mut commands = keys.verify.unwrap_or_default();
        if let Some(path) = args.rules.as_deref().filter(|_| !specialist) {
            commands.extend(rules_file_checks(path)?);
        }
        commands.extend(args.verify.iter().cloned());
        let mut seen = std::collections::BTreeSet::new();
        commands.retain(|command| seen.insert(command.clone()));
        let timeout = match (args.verify_timeout, keys.verify_timeout) {
            (Some(timeout), _) => timeout,
            (None, Some(text)) => parse_timeout(&text)
                .map_err(|e| Failure::config(format!("`verify_timeout` in config.toml: {e}")))?,
            (None, None) => DEFAULT_TIMEOUT,
        };
        let retries = args
            .verify_retries
            .or(keys.verify_retries)
            .unwrap_or(DEFAULT_RETRIES);
        let checks = Checks::new(commands, timeout, retries).map_err(|e| {
            Failure::usage(format!(
                "the checks (--verify, `verify` in config.toml or the --rules file): {e}"
            ))
        })?;
        Ok(OutcomeSettings {
            checks,
            strict: args.strict || keys.strict.unwrap_or(false),
        })
    }
}

/// The `verify` list of the `--rules` file at `path`.
fn rules_file_checks(path: &Path) -> Result<Vec<String>, Failure> {
    config_file::read_document::<RulesFile>(path, RULES_FILE_LIMIT)
        .map(|file| file.verify)
        .map_err(|why| {
            Failure::usage(format!(
                "cannot read the checks in {}: {why}",
                path.display()
            ))
        })
}
