//! Where a run's rules come from: `--allow` and `--deny`, `[permissions]` in the user's
//! config.toml, and the file `--rules` names — zero's TOML (`[permissions]` with `allow` and
//! `deny`) or a Claude Code settings.json (`{"permissions": {"allow": [...], "deny": [...]}}`),
//! whose `ask` rules are deny rules here (a headless run has nobody to ask) and whose other
//! keys (`hooks`, `env`, `defaultMode`, …) are not rules and are left to their readers or
//! ignored: a rule can only narrow what `--auto` grants.
//!
//! Nothing in the workspace is read unless `--rules` names it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::RuleSet;
use super::rule::{Effect, FORMS, Origin, Rule};
use crate::config_file::{self, ConfigFile, Syntax};
use crate::fsutil;

/// The most a rules file may hold.
const RULES_FILE_LIMIT: u64 = 1024 * 1024;

/// The `config.toml` keys the rules read: `[permissions]`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FileKeys {
    permissions: Option<Lists>,
}

/// A `permissions` table or object.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Lists {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    /// Claude Code's rules that would ask: denied, since nobody can answer.
    #[serde(default)]
    ask: Vec<String>,
    /// Claude Code's keys that are not rules (a mode or directories that would widen what
    /// the run may do, which rules never do): accepted and ignored.
    #[serde(default, rename = "defaultMode")]
    _default_mode: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "additionalDirectories")]
    _additional_directories: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "disableBypassPermissionsMode")]
    _disable_bypass: Option<serde::de::IgnoredAny>,
}

/// Where to read the rules from.
pub(crate) struct Sources<'a> {
    /// `--allow`, in order.
    pub(crate) allow: &'a [String],
    /// `--deny`, in order.
    pub(crate) deny: &'a [String],
    /// `--rules`.
    pub(crate) file: Option<&'a Path>,
    /// The user's config.toml, unless the run is a specialist (its parent hands it every
    /// rule as a flag).
    pub(crate) config: Option<&'a ConfigFile>,
    /// The canonical workspace path patterns are relative to.
    pub(crate) workspace: &'a Path,
    /// The home directory `~/` names.
    pub(crate) home: Option<&'a Path>,
}

/// Why the rules could not be read: every one is the caller's to fix (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RuleError {
    /// A rule that does not parse.
    #[error("invalid rule `{text}` ({flag}, from {origin}): {why}; {FORMS}")]
    Invalid {
        /// The rule as written.
        text: String,
        /// `--allow` or `--deny`, for the kind of rule it was.
        flag: &'static str,
        /// Where it was written.
        origin: String,
        /// What is wrong with it.
        why: String,
    },
    /// A file that could not be read or is not of the expected shape.
    #[error("cannot read the rules in {}: {why}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
}

/// Reads every rule `sources` name, in order: flags, config.toml, the rules file.
pub(crate) fn load(sources: &Sources<'_>) -> Result<RuleSet, RuleError> {
    let mut rules = Vec::new();
    let mut add = |texts: &[String], effect: Effect, origin: &Origin| {
        for text in texts {
            let rule = Rule::parse(
                text,
                effect,
                origin.clone(),
                sources.workspace,
                sources.home,
            )
            .map_err(|why| RuleError::Invalid {
                text: text.clone(),
                flag: effect.flag(),
                origin: origin.to_string(),
                why,
            })?;
            rules.push(rule);
        }
        Ok::<(), RuleError>(())
    };
    add(sources.allow, Effect::Allow, &Origin::Flag)?;
    add(sources.deny, Effect::Deny, &Origin::Flag)?;
    if let Some(config) = sources.config {
        let keys: FileKeys = config.keys().map_err(|error| RuleError::File {
            path: config.location().to_path_buf(),
            why: error.to_string(),
        })?;
        let lists = keys.permissions.unwrap_or_default();
        add_lists(&mut add, &lists, &Origin::ConfigFile)?;
    }
    if let Some(path) = sources.file {
        let lists = read_file(path)?;
        add_lists(
            &mut add,
            &lists,
            &Origin::RulesFile(path.display().to_string()),
        )?;
    }
    Ok(RuleSet::new(rules, sources.workspace))
}

/// Adds one `permissions` table's rules (`ask` ones as deny rules).
fn add_lists(
    add: &mut impl FnMut(&[String], Effect, &Origin) -> Result<(), RuleError>,
    lists: &Lists,
    origin: &Origin,
) -> Result<(), RuleError> {
    add(&lists.allow, Effect::Allow, origin)?;
    add(&lists.deny, Effect::Deny, origin)?;
    add(&lists.ask, Effect::Deny, origin)
}

/// The `permissions` of a rules file: JSON (a Claude Code settings.json) when it starts with
/// `{`, TOML otherwise. A file with `hooks` or `verify` and no `permissions` has no rules
/// (their readers read it too); one with none of them is refused, since a misspelt table
/// would otherwise give none.
fn read_file(path: &Path) -> Result<Lists, RuleError> {
    let fail = |why: String| RuleError::File {
        path: path.to_path_buf(),
        why,
    };
    let (bytes, _) =
        fsutil::read_regular(path, RULES_FILE_LIMIT).map_err(|error| fail(error.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| fail("it is not UTF-8 text".into()))?;
    #[derive(Deserialize)]
    struct Document {
        #[serde(default)]
        permissions: Option<Lists>,
        #[serde(default)]
        hooks: Option<serde::de::IgnoredAny>,
        /// The checks (`--verify`), which `exec` reads.
        #[serde(default)]
        verify: Option<serde::de::IgnoredAny>,
    }
    let document: Document = if text.trim_start().starts_with('{') {
        config_file::decode(&text, Syntax::Json)
            .map_err(|why| fail(format!("invalid JSON: {why}")))?
    } else {
        config_file::decode(&text, Syntax::Toml)
            .map_err(|why| fail(format!("invalid TOML: {why}")))?
    };
    match document {
        Document {
            permissions: Some(lists),
            ..
        } => Ok(lists),
        Document { hooks: Some(_), .. }
        | Document {
            verify: Some(_), ..
        } => Ok(Lists::default()),
        _ => Err(fail(
            "it has neither `permissions` (with `allow` or `deny` rules), `hooks` nor `verify`"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources<'a>(allow: &'a [String], deny: &'a [String], file: Option<&'a Path>) -> Sources<'a> {
        Sources {
            allow,
            deny,
            file,
            config: None,
            workspace: Path::new("/ws"),
            home: None,
        }
    }

    #[test]
    fn a_claude_settings_file_and_a_toml_file_give_the_same_rules() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("settings.json");
        std::fs::write(
            &json,
            r#"{"permissions": {"allow": ["Bash(git log:*)", "Read(./src/**)"],
                "deny": ["Bash(git push:*)"], "ask": ["Bash(rm:*)"], "defaultMode": "acceptEdits"},
                "hooks": {"PreToolUse": []}, "env": {"A": "1"}}"#,
        )
        .unwrap();
        let toml = dir.path().join("rules.toml");
        std::fs::write(
            &toml,
            "[permissions]\nallow = [\"Bash(git log:*)\", \"Read(./src/**)\"]\n\
             deny = [\"Bash(git push:*)\"]\nask = [\"Bash(rm:*)\"]\n",
        )
        .unwrap();
        for file in [&json, &toml] {
            let set = load(&sources(&[], &[], Some(file))).unwrap();
            let effects: Vec<(Effect, &str)> = set
                .rules()
                .iter()
                .map(|r| (r.effect, r.text.as_str()))
                .collect();
            assert_eq!(
                effects,
                [
                    (Effect::Allow, "Bash(git log:*)"),
                    (Effect::Allow, "Read(./src/**)"),
                    (Effect::Deny, "Bash(git push:*)"),
                    (Effect::Deny, "Bash(rm:*)"),
                ]
            );
        }
    }

    #[test]
    fn a_bad_rule_or_file_is_named_with_what_is_wrong() {
        let error = load(&sources(&[], &["WebSearch".into()], None)).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with(
                "invalid rule `WebSearch` (--deny, from the command line): zero \
                                 has no tool `WebSearch`; a rule is TOOL"
            ),
            "{message}"
        );
        let dir = tempfile::tempdir().unwrap();
        let typo = dir.path().join("rules.toml");
        std::fs::write(&typo, "[permissions]\nalow = [\"bash\"]\n").unwrap();
        let message = load(&sources(&[], &[], Some(&typo)))
            .unwrap_err()
            .to_string();
        assert!(message.contains("unknown field `alow`"), "{message}");
        let missing = dir.path().join("absent.json");
        assert!(load(&sources(&[], &[], Some(&missing))).is_err());
        let empty = dir.path().join("empty.json");
        std::fs::write(&empty, "{}").unwrap();
        let message = load(&sources(&[], &[], Some(&empty)))
            .unwrap_err()
            .to_string();
        assert!(message.contains("neither `permissions`"), "{message}");
        let hooks_only = dir.path().join("hooks.toml");
        std::fs::write(&hooks_only, "[[hooks.pre_tool_use]]\ncommand = \"true\"\n").unwrap();
        assert!(
            load(&sources(&[], &[], Some(&hooks_only)))
                .unwrap()
                .rules()
                .is_empty()
        );
    }
}
