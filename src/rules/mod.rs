//! Permission rules: the caller's allow and deny rules on tool calls, matched against each
//! call's arguments before it runs (`RuleSet::check`, a pure synchronous function).
//!
//! The decision order, of which this module is the middle: the `--auto` level first (a tool it
//! hides stays hidden; rules never widen it), then deny rules (a deny beats every allow), then
//! allow rules (when a tool has allow rules, a call none of them matches is denied). Headless
//! means there is no "ask": what would ask is denied. `pre_tool_use` hooks come after, and can
//! never allow what a rule denied.
//!
//! Rules come from `--allow`/`--deny`, `[permissions]` in the user's config.toml and an
//! explicit `--rules FILE` (`sources`), never from a file the workspace holds by itself: the
//! workspace may be a stranger's pull request. The grammar is in `rule`, a `bash` rule's
//! matching in `command` over the commands `shell` finds in the line, a file tool's in `paths`.
//!
//! A `bash` line's output redirections write files: each target is checked against the
//! `write_file` rules as a `write_file` call to it would be (so `--deny 'write_file(.github/**)'`
//! also refuses `echo x > .github/ci.yml`), and a redirection never makes a denied command
//! allowed.

mod command;
mod paths;
mod rule;
pub(crate) mod shell;
mod sources;

use std::path::Path;

use serde_json::Value;

use self::command::CommandPattern;
use self::paths::Touched;
pub(crate) use self::rule::{Effect, Pattern, Rule};
use self::shell::{SimpleCommand, Word};
pub(crate) use self::sources::{FileKeys, Sources, load};
use crate::tools::{ToolId, patch_paths};

/// Commands that run the rest of their arguments as another command: a deny rule is checked
/// against each tail of their words too (`env FOO=1 curl x`, `timeout 5 curl x`,
/// `xargs curl`, `find . -exec curl x ;`). Deny lists are a best effort; allow lists are the
/// sound way to limit commands.
const WRAPPERS: [&str; 22] = [
    "env", "nohup", "nice", "ionice", "timeout", "time", "xargs", "sudo", "doas", "su", "setsid",
    "stdbuf", "chroot", "unshare", "nsenter", "flock", "watch", "find", "parallel", "strace",
    "taskset", "busybox",
];

/// The rules in force for one run.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// Every rule, in the order given (flags, then config.toml, then the rules file).
    rules: Vec<Rule>,
    /// The workspace path patterns are relative to, and call paths are resolved against.
    workspace: std::path::PathBuf,
}

/// What the rules say about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No rule stands in the call's way.
    Allow,
    /// The call is refused.
    Deny(Denial),
}

/// Why a call was refused, in words for the model and for the `permission_denied` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    /// The deny rule that matched, as written; `None` when no allow rule matched or the
    /// call could not be checked.
    pub(crate) rule: Option<String>,
    /// The whole explanation: what matched (or did not), and what the caller could add.
    pub(crate) reason: String,
}

impl RuleSet {
    /// The rules `rules`, for the workspace `workspace` (canonical).
    pub(crate) fn new(rules: Vec<Rule>, workspace: &Path) -> RuleSet {
        RuleSet {
            rules,
            workspace: workspace.to_path_buf(),
        }
    }

    /// Every rule, in order.
    pub(crate) fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The text of every rule of `effect`, in order: what a specialist is handed as flags.
    pub(crate) fn texts(&self, effect: Effect) -> Vec<String> {
        self.rules
            .iter()
            .filter(|rule| rule.effect == effect)
            .map(|rule| rule.text.clone())
            .collect()
    }

    /// The decision on a call of `tool` with `args` (decoded JSON).
    pub(crate) fn check(&self, tool: &str, args: &Value) -> Verdict {
        if self.rules.is_empty() {
            return Verdict::Allow;
        }
        if let Some(rest) = tool.strip_prefix("mcp__") {
            let (server, name) = rest.split_once("__").unwrap_or((rest, ""));
            return self.decide(
                &|rule: &Rule| rule.covers_mcp(server, name),
                tool,
                &|_: &Rule| true,
                &format!("the call of {tool}"),
                None,
            );
        }
        let Some(id) = ToolId::from_name(tool) else {
            return Verdict::Allow;
        };
        let covers = |rule: &Rule| rule.covers(id);
        if !self.rules.iter().any(covers) {
            return Verdict::Allow;
        }
        match id {
            ToolId::Bash => self.check_bash(args),
            ToolId::Task => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
                self.decide(
                    &covers,
                    tool,
                    &|rule: &Rule| match &rule.pattern {
                        Pattern::Name(wanted) => wanted == name,
                        _ => true,
                    },
                    &format!("the specialist `{name}`"),
                    Some(format!("Task({name})")),
                )
            }
            _ => match call_paths(id, args) {
                Some(paths) => self.check_paths(id, &paths),
                None => self.decide(
                    &covers,
                    tool,
                    &|_: &Rule| true,
                    &format!("the call of {tool}"),
                    None,
                ),
            },
        }
    }

    /// The common decision: the first deny rule `covers` that `matches`, else, when allow
    /// rules exist, an allow rule that `matches`. `what` names the call in messages and
    /// `suggestion` is the rule the caller could allow it with.
    fn decide(
        &self,
        covers: &dyn Fn(&Rule) -> bool,
        tool: &str,
        matches: &dyn Fn(&Rule) -> bool,
        what: &str,
        suggestion: Option<String>,
    ) -> Verdict {
        let applicable = || self.rules.iter().filter(|rule| covers(rule));
        if let Some(rule) = applicable()
            .filter(|rule| rule.effect == Effect::Deny)
            .find(|rule| matches(rule))
        {
            return Verdict::Deny(denied_by(rule, what));
        }
        let mut allows = applicable()
            .filter(|rule| rule.effect == Effect::Allow)
            .peekable();
        if allows.peek().is_none() || allows.any(matches) {
            return Verdict::Allow;
        }
        Verdict::Deny(self.not_allowed(tool, covers, what, suggestion))
    }

    /// A denial for a call no allow rule matched, listing the allow rules for the tool.
    fn not_allowed(
        &self,
        tool: &str,
        covers: &dyn Fn(&Rule) -> bool,
        what: &str,
        suggestion: Option<String>,
    ) -> Denial {
        let allowed: Vec<String> = self
            .rules
            .iter()
            .filter(|rule| covers(rule) && rule.effect == Effect::Allow)
            .map(|rule| format!("`{}`", rule.text))
            .collect();
        let remedy = match suggestion {
            Some(rule) => format!("; the caller could add --allow '{rule}'"),
            None => String::new(),
        };
        Denial {
            rule: None,
            reason: format!(
                "no allow rule matches {what} (the rules allow {tool} only \
                 for {}){remedy}",
                allowed.join(", ")
            ),
        }
    }

    /// `bash`: every simple command of the line must pass, and the files it redirects output
    /// to must pass the `write_file` rules.
    fn check_bash(&self, args: &Value) -> Verdict {
        let Some(line) = args.get("command").and_then(Value::as_str) else {
            return Verdict::Allow;
        };
        let commands = match shell::analyse(line) {
            Ok(commands) => commands,
            Err(why) => {
                return Verdict::Deny(Denial {
                    rule: None,
                    reason: format!(
                        "rules apply to bash and this command line cannot be checked against \
                         them: {why}; write it as plain commands (no \
                         substitutions, `eval` or shell functions) or use the file tools"
                    ),
                });
            }
        };
        let covers = |rule: &Rule| rule.covers(ToolId::Bash);
        for command in &commands {
            let what = format!("the command `{}`", command.display());
            let verdict = self.decide(
                &covers,
                ToolId::Bash.name(),
                &|rule: &Rule| command_matches(rule, command),
                &what,
                command::suggestion(command.command()).map(|p| format!("bash({p})")),
            );
            if verdict != Verdict::Allow {
                return verdict;
            }
            if let Some(denial) = self.check_writes(command) {
                return Verdict::Deny(denial);
            }
        }
        Verdict::Allow
    }

    /// The files a command's output redirections write, as `write_file` calls.
    fn check_writes(&self, command: &SimpleCommand) -> Option<Denial> {
        if command.writes.is_empty() || !self.rules.iter().any(|r| r.covers(ToolId::WriteFile)) {
            return None;
        }
        let mut paths = Vec::new();
        for target in &command.writes {
            match target {
                Word::Known(path) => paths.push(path.clone()),
                Word::Unknown => {
                    return Some(Denial {
                        rule: None,
                        reason: format!(
                            "`{}` writes a file whose name is known only as \
                             it runs, and rules apply to write_file",
                            command.display()
                        ),
                    });
                }
            }
        }
        match self.check_paths(ToolId::WriteFile, &paths) {
            Verdict::Allow => None,
            Verdict::Deny(denial) => Some(Denial {
                reason: format!(
                    "{} (written by the output redirection of `{}`)",
                    denial.reason,
                    command.display()
                ),
                ..denial
            }),
        }
    }

    /// A file tool: every path the call touches must pass.
    fn check_paths(&self, id: ToolId, paths: &[String]) -> Verdict {
        let covers = |rule: &Rule| rule.covers(id);
        for path in paths {
            let touched = Touched::new(&self.workspace, path);
            let verdict = self.decide(
                &covers,
                id.name(),
                &|rule: &Rule| path_matches(rule, &touched),
                &format!("the path `{path}`"),
                Some(format!(
                    "{}({})",
                    id.name(),
                    suggested_path(&self.workspace, &touched)
                )),
            );
            if verdict != Verdict::Allow {
                return verdict;
            }
        }
        Verdict::Allow
    }
}

/// Whether a `bash` rule matches a command: an allow rule all of its words, a deny rule its
/// words with or without the leading assignments, with the command named by its path or by
/// its file name (`/bin/rm` is `rm`), or any tail of a wrapper's words.
fn command_matches(rule: &Rule, command: &SimpleCommand) -> bool {
    let Pattern::Command(pattern) = &rule.pattern else {
        return true;
    };
    if rule.effect == Effect::Allow {
        return command.carrier || pattern.allows(&command.words);
    }
    let words = command.command();
    if pattern.may_match(&command.words) || may_match_named(pattern, words) {
        return true;
    }
    if runs_inline_code(words) {
        return true;
    }
    matches!(words.first(), Some(Word::Known(name)) if WRAPPERS.contains(&file_name(name)))
        && (1..words.len()).any(|start| may_match_named(pattern, &words[start..]))
}

/// Interpreters and the flags that hand them code to run on the command line.
const INLINE_CODE: [(&str, &[&str]); 9] = [
    ("python", &["-c"]),
    ("python3", &["-c"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("deno", &["eval"]),
    ("bun", &["-e", "--eval"]),
];

/// Whether the command (or the command a wrapper runs) hands code the line does not show as
/// a command to something that runs it: a shell reading its script from stdin (`… | bash`,
/// `bash <<< …`, `sh -s`, `sh -`), or an interpreter given code inline (`python3 -c`,
/// `node -e`, `perl -e`, …). What that code runs is unknown, so every deny rule on `bash` may
/// match it. (A script *file* is not looked into, by a shell or anything else: a deny list
/// is a best effort, an allow list is the sound way to limit commands.)
fn runs_inline_code(words: &[Word]) -> bool {
    let name_at = |at: usize| match words.get(at) {
        Some(Word::Known(name)) => Some(file_name(name)),
        _ => None,
    };
    let start = match name_at(0) {
        Some(name) if WRAPPERS.contains(&name) => (1..words.len())
            .find(|&at| name_at(at).is_some_and(runs_code))
            .unwrap_or(0),
        _ => 0,
    };
    let Some(name) = name_at(start) else {
        return false;
    };
    let args = &words[start + 1..];
    let known = |flag: &str| {
        args.iter()
            .any(|word| matches!(word, Word::Known(t) if t == flag))
    };
    if shell::SHELLS.contains(&name) {
        // Without a script operand (every argument an option), or told to read stdin.
        let operand = args
            .iter()
            .any(|word| !matches!(word, Word::Known(t) if t.starts_with('-')));
        return known("-s") || known("-") || !operand;
    }
    let Some((_, flags)) = INLINE_CODE
        .iter()
        .find(|(interpreter, _)| *interpreter == name)
    else {
        return false;
    };
    // The options before the first operand (`python3 tool.py -c x` runs a file: its `-c` is
    // the script's); an operand may itself be the subcommand that takes code (`deno eval`).
    for word in args {
        match word {
            Word::Known(text) if flags.contains(&text.as_str()) => return true,
            Word::Known(text) if text.starts_with('-') => continue,
            Word::Known(_) => return false,
            // Unknown until the line runs: it may be the flag that takes code.
            Word::Unknown => return true,
        }
    }
    false
}

/// Whether `name` is a shell or an interpreter that may run code given inline.
fn runs_code(name: &str) -> bool {
    shell::SHELLS.contains(&name)
        || INLINE_CODE
            .iter()
            .any(|(interpreter, _)| *interpreter == name)
}

/// Whether `pattern` may match `words`, their command named as written or by its file name.
fn may_match_named(pattern: &CommandPattern, words: &[Word]) -> bool {
    if pattern.may_match(words) {
        return true;
    }
    match words.first() {
        Some(Word::Known(name)) if file_name(name) != name => {
            let mut by_name = words.to_vec();
            by_name[0] = Word::Known(file_name(name).to_owned());
            pattern.may_match(&by_name)
        }
        _ => false,
    }
}

/// A command's file name: `rm` for `/bin/rm`.
fn file_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Whether a file tool's rule matches a path: a deny rule either of its forms, an allow rule
/// both.
fn path_matches(rule: &Rule, touched: &Touched) -> bool {
    let Pattern::Path(pattern) = &rule.pattern else {
        return true;
    };
    let mut forms = touched.forms().into_iter();
    match rule.effect {
        Effect::Deny => forms.any(|form| pattern.matches(form)),
        Effect::Allow => forms.all(|form| pattern.matches(form)),
    }
}

/// The path to suggest allowing: relative to the workspace when it is inside it.
fn suggested_path(workspace: &Path, touched: &Touched) -> String {
    match touched.spelled.strip_prefix(workspace) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".into(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => format!("/{}", touched.spelled.display()),
    }
}

/// The denial by the deny rule `rule` of `what`.
fn denied_by(rule: &Rule, what: &str) -> Denial {
    Denial {
        rule: Some(rule.text.clone()),
        reason: format!(
            "the rule `{}` (deny, from {}) matches {what}; a deny rule cannot be overridden, so \
             do this another way",
            rule.text, rule.origin
        ),
    }
}

/// The paths a call of the file tool `id` touches; `None` when its arguments do not say (the
/// tool then refuses them itself).
fn call_paths(id: ToolId, args: &Value) -> Option<Vec<String>> {
    let field = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_owned);
    match id {
        ToolId::ReadFile | ToolId::WriteFile | ToolId::EditFile => field("path").map(|p| vec![p]),
        // A search is judged by where it starts: the workspace when no path is given.
        ToolId::Grep | ToolId::Glob | ToolId::ListDirectory => {
            Some(vec![field("path").unwrap_or_else(|| ".".into())])
        }
        ToolId::ApplyPatch => field("patch").and_then(|patch| patch_paths(&patch).ok()),
        ToolId::Bash
        | ToolId::Task
        | ToolId::UpdatePlan
        | ToolId::TaskOutput
        | ToolId::TaskStop => None,
    }
}

#[cfg(test)]
mod tests;
