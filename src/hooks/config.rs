//! What the caller configures: which command runs at which point of the run, for which tools,
//! within what time. Two shapes are read, both into one [`HookSet`]:
//!
//! - zero's, in config.toml (or a `--hooks` / `--rules` file, TOML or JSON):
//!   `[[hooks.pre_tool_use]] command = "...", matcher = "bash", timeout = "30s"`;
//! - Claude Code's settings.json: `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks":
//!   [{"type": "command", "command": "...", "timeout": 30}]}]}}`, so a team's existing hook
//!   scripts run unchanged.
//!
//! Both are read from one JSON value (TOML is turned into one first), so every error names the
//! key as written (`hooks.PreToolUse[0].hooks[1].timeout`) and the same rules hold for both:
//! an unknown key, an event zero does not run, a matcher that is not a valid regular
//! expression, a timeout that is not a duration — each is refused, never skipped, since a hook
//! the caller believes in but zero does not run is a guard that is silently missing.

use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::config_file::{self, Syntax};
use crate::rules;
use crate::tools::ToolId;

/// How long a hook may run when its entry gives no timeout (Claude Code's default too is
/// counted in seconds, but is 60; a hook on every call should be quick).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A point of the run at which hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookPoint {
    /// Before a tool call runs (after the `--auto` level and the rules allowed it): may deny
    /// it or rewrite its arguments.
    PreToolUse,
    /// After a tool call ran: may add a note to the result the model sees.
    PostToolUse,
    /// When the model gives its final answer: may refuse it, a bounded number of times.
    Stop,
    /// Once, when the run starts: may add context to the prompt.
    SessionStart,
}

impl HookPoint {
    /// Every point, in the order of a run.
    pub(crate) const ALL: [HookPoint; 4] = [
        HookPoint::SessionStart,
        HookPoint::PreToolUse,
        HookPoint::PostToolUse,
        HookPoint::Stop,
    ];

    /// zero's name of the point: its key under `[hooks]` and its word in events.
    pub(crate) const fn key(self) -> &'static str {
        match self {
            HookPoint::PreToolUse => "pre_tool_use",
            HookPoint::PostToolUse => "post_tool_use",
            HookPoint::Stop => "stop",
            HookPoint::SessionStart => "session_start",
        }
    }

    /// Claude Code's name of the point: its key in settings.json and `hook_event_name`.
    pub(crate) const fn claude_name(self) -> &'static str {
        match self {
            HookPoint::PreToolUse => "PreToolUse",
            HookPoint::PostToolUse => "PostToolUse",
            HookPoint::Stop => "Stop",
            HookPoint::SessionStart => "SessionStart",
        }
    }

    /// The point a key under `hooks` names, in either shape, with whether it is Claude's.
    fn of_key(key: &str) -> Option<(HookPoint, Shape)> {
        HookPoint::ALL.into_iter().find_map(|point| {
            if key == point.key() {
                Some((point, Shape::Zero))
            } else if key == point.claude_name() {
                Some((point, Shape::Claude))
            } else {
                None
            }
        })
    }
}

/// Which shape a list of hooks is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `[{command, matcher, timeout}]`.
    Zero,
    /// `[{matcher, hooks: [{type: "command", command, timeout}]}]`, timeout in seconds.
    Claude,
}

/// Which tools (or, for `session_start`, which starts) a hook runs for.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    /// Every one: no matcher, an empty one, or `*`.
    All,
    /// Those whose zero or Claude Code name the whole pattern matches (Claude Code's rule: a
    /// plain name matches itself, `Edit|Write` either, `mcp__git__.*` a server's tools).
    Pattern {
        /// The pattern as written.
        text: String,
        /// The pattern, anchored at both ends.
        regex: Regex,
    },
}

impl Matcher {
    /// The matcher `text` describes; an invalid regular expression is an error.
    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        let regex = Regex::new(&format!("^(?:{text})$"))
            .map_err(|e| format!("`{text}` is not a valid regular expression ({e})"))?;
        Ok(Matcher::Pattern {
            text: text.to_string(),
            regex,
        })
    }

    /// Whether a hook with this matcher runs for `name`, a tool's (or a start's) name: zero's
    /// name or any Claude Code name whose permission rules cover the tool
    /// ([`rules::claude_names_covering`]: `Edit` covers `apply_patch` and `write_file`, `Read`
    /// the searches), so a hook and a rule written with one name guard the same calls.
    pub(crate) fn matches(&self, name: &str) -> bool {
        let Matcher::Pattern { regex, .. } = self else {
            return true;
        };
        regex.is_match(name)
            || ToolId::from_name(name).is_some_and(|id| {
                rules::claude_names_covering(id).any(|claude| regex.is_match(claude))
            })
    }

    /// The pattern as written; empty for [`Matcher::All`].
    fn text(&self) -> &str {
        match self {
            Matcher::All => "",
            Matcher::Pattern { text, .. } => text,
        }
    }
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct Hook {
    /// Where it runs.
    pub(crate) point: HookPoint,
    /// The shell command line, run by `/bin/sh -c` in the workspace (as Claude Code runs it).
    pub(crate) command: String,
    /// Which tools it runs for.
    pub(crate) matcher: Matcher,
    /// How long it may run before it is stopped (and counted as failed).
    pub(crate) timeout: Duration,
}

/// Every hook of a run, in the order they were configured (config.toml first, then each file
/// in the order given); hooks of one point run in that order.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    hooks: Vec<Hook>,
}

/// Why a hook configuration was refused: where (the key as written) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}`: {problem}")]
pub struct HookConfigError {
    /// The key, as a path from the top of the file (`hooks.pre_tool_use[0].timeout`).
    pub key: String,
    /// What is wrong with it.
    pub problem: String,
}

/// The `config.toml` keys the hooks read: the `[hooks]` table, taken as it is and read by
/// [`HookSet::add_hooks_value`].
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FileKeys {
    /// `[hooks]`, in zero's shape.
    pub(crate) hooks: Option<toml::Value>,
}

impl HookSet {
    /// No hooks at all.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Every hook, in order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Hook> {
        self.hooks.iter()
    }

    /// The hooks of `point` that run for `name` (a tool's name, or a start's source), in
    /// order.
    pub(crate) fn matching<'a>(
        &'a self,
        point: HookPoint,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Hook> + 'a {
        self.hooks
            .iter()
            .filter(move |hook| hook.point == point && hook.matcher.matches(name))
    }

    /// Adds the hooks of a whole file's value (a parsed config.toml, `--hooks` file or
    /// settings.json): those under its `hooks` key, if it has one. `timeout` parses a zero
    /// timeout (a duration such as `30s`), as every duration zero takes is parsed.
    pub(crate) fn add_file_value(
        &mut self,
        file: &Value,
        timeout: &dyn Fn(&str) -> Result<Duration, String>,
    ) -> Result<(), HookConfigError> {
        match file.get("hooks") {
            Some(hooks) => self.add_hooks_value(hooks, "hooks", timeout),
            None => Ok(()),
        }
    }

    /// Adds the hooks of the value of a `hooks` key (found at `key`): an object whose keys
    /// are points, in either shape.
    pub(crate) fn add_hooks_value(
        &mut self,
        hooks: &Value,
        key: &str,
        timeout: &dyn Fn(&str) -> Result<Duration, String>,
    ) -> Result<(), HookConfigError> {
        let table = object(hooks, key)?;
        for (name, list) in table {
            let here = format!("{key}.{name}");
            let (point, shape) = HookPoint::of_key(name).ok_or_else(|| {
                error(
                    &here,
                    format!(
                        "zero runs no hooks at `{name}`; the points are {} (or Claude Code's {})",
                        words(HookPoint::ALL.map(HookPoint::key)),
                        words(HookPoint::ALL.map(HookPoint::claude_name)),
                    ),
                )
            })?;
            let Value::Array(entries) = list else {
                return Err(error(&here, "must be a list of hooks".into()));
            };
            for (index, entry) in entries.iter().enumerate() {
                let here = format!("{here}[{index}]");
                match shape {
                    Shape::Zero => self.hooks.push(zero_entry(point, entry, &here, timeout)?),
                    Shape::Claude => self.hooks.extend(claude_group(point, entry, &here)?),
                }
            }
        }
        Ok(())
    }

    /// The whole set in zero's shape, as JSON: what a specialist is handed (see
    /// `tasks::child`), which reads it back into the same hooks.
    pub(crate) fn to_file_text(&self) -> String {
        let mut points = Map::new();
        for hook in &self.hooks {
            let mut entry = json!({
                "command": hook.command,
                "timeout": humantime::format_duration(hook.timeout).to_string(),
            });
            let matcher = hook.matcher.text();
            if !matcher.is_empty() {
                entry["matcher"] = Value::String(matcher.to_string());
            }
            points
                .entry(hook.point.key())
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .expect("every point holds a list")
                .push(entry);
        }
        json!({ "hooks": points }).to_string()
    }
}

/// The most a hooks file may hold: far beyond any real one, so a wrong file cannot make zero
/// read without bound.
const FILE_LIMIT: u64 = 1024 * 1024;

/// Why a file of hooks (`--hooks`, `--rules`) could not be used.
#[derive(Debug, thiserror::Error)]
pub enum HookFileError {
    /// It could not be read (or is not a regular file).
    #[error("cannot read hooks file {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: crate::fsutil::OpenError,
    },
    /// It is not JSON or TOML, or its hooks are not valid.
    #[error("invalid hooks file {}: {problem}", path.display())]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong, naming the key.
        problem: String,
    },
}

impl HookSet {
    /// Adds the hooks of the file at `path`: JSON (a `.json` file: Claude Code's
    /// settings.json or zero's shape) or TOML (zero's shape, as in config.toml), each under
    /// its `hooks` key; other keys are other parts' (a settings.json's `permissions`).
    pub(crate) fn add_file(
        &mut self,
        path: &std::path::Path,
        timeout: &dyn Fn(&str) -> Result<Duration, String>,
    ) -> Result<(), HookFileError> {
        let invalid = |problem: String| HookFileError::Invalid {
            path: path.to_owned(),
            problem,
        };
        let (bytes, _) = crate::fsutil::read_regular(path, FILE_LIMIT).map_err(|source| {
            HookFileError::Unreadable {
                path: path.to_owned(),
                source,
            }
        })?;
        let text = String::from_utf8(bytes).map_err(|_| invalid("it is not UTF-8 text".into()))?;
        let json =
            path.extension().is_some_and(|ext| ext == "json") || text.trim_start().starts_with('{');
        let value: Value = match json {
            true => config_file::decode(&text, Syntax::Json)
                .map_err(|why| invalid(format!("not JSON: {why}")))?,
            false => {
                let table: toml::Table = config_file::decode(&text, Syntax::Toml)
                    .map_err(|why| invalid(format!("not TOML: {why}")))?;
                serde_json::to_value(table).map_err(|e| invalid(e.to_string()))?
            }
        };
        self.add_file_value(&value, timeout)
            .map_err(|e| invalid(e.to_string()))
    }

    /// Adds config.toml's `[hooks]` (see [`FileKeys`]).
    pub(crate) fn add_config(
        &mut self,
        keys: FileKeys,
        timeout: &dyn Fn(&str) -> Result<Duration, String>,
    ) -> Result<(), HookConfigError> {
        let Some(hooks) = keys.hooks else {
            return Ok(());
        };
        let hooks = serde_json::to_value(hooks).map_err(|e| error("hooks", e.to_string()))?;
        self.add_hooks_value(&hooks, "hooks", timeout)
    }
}

/// One hook in zero's shape: `{command, matcher, timeout}`.
fn zero_entry(
    point: HookPoint,
    entry: &Value,
    key: &str,
    timeout: &dyn Fn(&str) -> Result<Duration, String>,
) -> Result<Hook, HookConfigError> {
    let fields = object(entry, key)?;
    only_keys(fields, key, &["command", "matcher", "timeout"])?;
    let timeout = match fields.get("timeout") {
        None => DEFAULT_TIMEOUT,
        Some(Value::String(text)) => timeout(text).map_err(|e| error(&at(key, "timeout"), e))?,
        Some(seconds) => seconds_timeout(seconds, &at(key, "timeout"))?,
    };
    Ok(Hook {
        point,
        command: command(fields, key)?,
        matcher: matcher(point, fields.get("matcher"), key)?,
        timeout,
    })
}

/// One matcher group in Claude Code's shape: `{matcher, hooks: [{type, command, timeout}]}`.
fn claude_group(point: HookPoint, group: &Value, key: &str) -> Result<Vec<Hook>, HookConfigError> {
    let fields = object(group, key)?;
    only_keys(fields, key, &["matcher", "hooks"])?;
    let matcher = matcher(point, fields.get("matcher"), key)?;
    let hooks_key = at(key, "hooks");
    let Some(Value::Array(entries)) = fields.get("hooks") else {
        return Err(error(&hooks_key, "must be a list of hooks".into()));
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let key = format!("{hooks_key}[{index}]");
            let fields = object(entry, &key)?;
            only_keys(fields, &key, &["type", "command", "timeout"])?;
            match fields.get("type").and_then(Value::as_str) {
                Some("command") => {}
                other => {
                    return Err(error(
                        &at(&key, "type"),
                        format!(
                            "zero runs only hooks of type \"command\", not {}",
                            other.map_or("a missing type".into(), |t| format!("\"{t}\""))
                        ),
                    ));
                }
            }
            let timeout = match fields.get("timeout") {
                None => DEFAULT_TIMEOUT,
                Some(seconds) => seconds_timeout(seconds, &at(&key, "timeout"))?,
            };
            Ok(Hook {
                point,
                command: command(fields, &key)?,
                matcher: matcher.clone(),
                timeout,
            })
        })
        .collect()
}

/// The `command` of an entry: a non-empty string.
fn command(fields: &Map<String, Value>, key: &str) -> Result<String, HookConfigError> {
    match fields.get("command") {
        Some(Value::String(command)) if !command.trim().is_empty() => Ok(command.clone()),
        Some(_) => Err(error(
            &at(key, "command"),
            "must be a non-empty command line".into(),
        )),
        None => Err(error(key, "has no `command`".into())),
    }
}

/// The matcher of an entry; `stop` runs for every answer, so it takes none but `*`.
fn matcher(point: HookPoint, text: Option<&Value>, key: &str) -> Result<Matcher, HookConfigError> {
    let key = at(key, "matcher");
    let text = match text {
        None => return Ok(Matcher::All),
        Some(Value::String(text)) => text,
        Some(_) => return Err(error(&key, "must be a string".into())),
    };
    let matcher = Matcher::parse(text).map_err(|e| error(&key, e))?;
    if point == HookPoint::Stop && matches!(matcher, Matcher::Pattern { .. }) {
        return Err(error(
            &key,
            "a `stop` hook runs on every final answer and takes no matcher".into(),
        ));
    }
    Ok(matcher)
}

/// A timeout given as a number of seconds (Claude Code's way): above zero, at most an hour
/// (a hook runs on a call the model waits for).
fn seconds_timeout(value: &Value, key: &str) -> Result<Duration, HookConfigError> {
    const MAX_SECONDS: f64 = 3600.0;
    match value.as_f64() {
        Some(seconds) if seconds > 0.0 && seconds <= MAX_SECONDS => {
            Ok(Duration::from_secs_f64(seconds))
        }
        _ => Err(error(
            key,
            format!(
                "must be a duration (`30s`) or a number of seconds above 0 and at most \
                 {MAX_SECONDS}"
            ),
        )),
    }
}

/// `value` as an object, or an error naming `key`.
fn object<'a>(value: &'a Value, key: &str) -> Result<&'a Map<String, Value>, HookConfigError> {
    value
        .as_object()
        .ok_or_else(|| error(key, "must be a table (an object)".into()))
}

/// Refuses a key of `fields` that is not one of `known`, with the closest known one.
fn only_keys(
    fields: &Map<String, Value>,
    key: &str,
    known: &[&'static str],
) -> Result<(), HookConfigError> {
    match fields.keys().find(|name| !known.contains(&name.as_str())) {
        Some(unknown) => Err(error(
            &at(key, unknown),
            format!(
                "is not a key of a hook; the keys are {}",
                words(known.iter().copied())
            ),
        )),
        None => Ok(()),
    }
}

/// `key.name`.
fn at(key: &str, name: &str) -> String {
    format!("{key}.{name}")
}

fn error(key: &str, problem: String) -> HookConfigError {
    HookConfigError {
        key: key.to_string(),
        problem,
    }
}

/// Names as a list in prose: `a`, `b`, `c`.
fn words(names: impl IntoIterator<Item = &'static str>) -> String {
    names
        .into_iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn humantime(text: &str) -> Result<Duration, String> {
        humantime::parse_duration(text).map_err(|e| e.to_string())
    }

    fn set(file: Value) -> Result<HookSet, HookConfigError> {
        let mut set = HookSet::default();
        set.add_file_value(&file, &humantime)?;
        Ok(set)
    }

    #[test]
    fn zero_and_claude_shapes_read_into_the_same_hooks() {
        let zero = set(json!({"hooks": {"pre_tool_use": [
            {"command": "check", "matcher": "bash", "timeout": "5s"}
        ]}}))
        .unwrap();
        let claude = set(json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "check", "timeout": 5}]}
        ]}}))
        .unwrap();
        for set in [&zero, &claude] {
            let hooks: Vec<_> = set.matching(HookPoint::PreToolUse, "bash").collect();
            assert_eq!(hooks.len(), 1);
            assert_eq!(hooks[0].command, "check");
            assert_eq!(hooks[0].timeout, Duration::from_secs(5));
            assert_eq!(set.matching(HookPoint::PreToolUse, "read_file").count(), 0);
            assert_eq!(set.matching(HookPoint::PostToolUse, "bash").count(), 0);
        }
    }

    #[test]
    fn a_matcher_is_a_whole_name_or_regex_over_zero_and_claude_names() {
        let all = Matcher::parse("").unwrap();
        assert!(all.matches("anything"));
        assert!(Matcher::parse("*").unwrap().matches("bash"));
        let edit_or_write = Matcher::parse("Edit|MultiEdit|Write").unwrap();
        assert!(edit_or_write.matches("edit_file"));
        assert!(edit_or_write.matches("write_file"));
        assert!(edit_or_write.matches("apply_patch"));
        assert!(!edit_or_write.matches("read_file"));
        assert!(!edit_or_write.matches("bash"));
        let read = Matcher::parse("Read").unwrap();
        for tool in ["read_file", "grep", "glob", "list_directory"] {
            assert!(read.matches(tool), "{tool}");
        }
        assert!(!read.matches("write_file"));
        // Anchored: `Bash` is not a prefix match of anything else.
        assert!(!Matcher::parse("Ba").unwrap().matches("bash"));
        assert!(
            Matcher::parse("mcp__git__.*")
                .unwrap()
                .matches("mcp__git__log")
        );
        assert!(Matcher::parse("(").is_err());
    }

    #[test]
    fn every_mistake_is_refused_naming_its_key() {
        let cases = [
            (json!({"hooks": {"pre_tool": []}}), "hooks.pre_tool"),
            (json!({"hooks": {"stop": {}}}), "hooks.stop"),
            (
                json!({"hooks": {"pre_tool_use": [{"command": "x", "timeot": "1s"}]}}),
                "hooks.pre_tool_use[0].timeot",
            ),
            (
                json!({"hooks": {"pre_tool_use": [{"command": "x", "timeout": "soon"}]}}),
                "hooks.pre_tool_use[0].timeout",
            ),
            (
                json!({"hooks": {"pre_tool_use": [{"matcher": "bash"}]}}),
                "hooks.pre_tool_use[0]",
            ),
            (
                json!({"hooks": {"pre_tool_use": [{"command": "x", "matcher": "("}]}}),
                "hooks.pre_tool_use[0].matcher",
            ),
            (
                json!({"hooks": {"stop": [{"command": "x", "matcher": "bash"}]}}),
                "hooks.stop[0].matcher",
            ),
            (
                json!({"hooks": {"PostToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}),
                "hooks.PostToolUse[0].hooks[0].type",
            ),
            (
                json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}),
                "hooks.Stop[0].hooks[0].timeout",
            ),
            (
                json!({"hooks": {"UserPromptSubmit": [{"hooks": []}]}}),
                "hooks.UserPromptSubmit",
            ),
            // Claude Code's hooks after a failed call: zero runs none there.
            (
                json!({"hooks": {"PostToolUseFailure": [{"hooks": []}]}}),
                "hooks.PostToolUseFailure",
            ),
        ];
        for (file, key) in cases {
            let error = set(file.clone()).unwrap_err();
            assert_eq!(error.key, key, "{file}: {error}");
        }
    }

    #[test]
    fn the_handed_text_reads_back_into_the_same_hooks() {
        let original = set(json!({"hooks": {
            "PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "a"}]}],
            "stop": [{"command": "b", "timeout": "1m 30s"}]
        }}))
        .unwrap();
        let text = original.to_file_text();
        let back = set(serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back.hooks.len(), 2);
        for (a, b) in original.hooks.iter().zip(&back.hooks) {
            assert_eq!(
                (a.point, &a.command, a.matcher.text(), a.timeout),
                (b.point, &b.command, b.matcher.text(), b.timeout)
            );
        }
        assert_eq!(back.matching(HookPoint::Stop, "").count(), 1);
    }
}
