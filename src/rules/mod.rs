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
//! matching in `command_pattern` over the commands `shell` finds in the line, a file tool's in `paths`.
//!
//! A `bash` line is allowed only when `shell` proves every command it runs is allowed: a line
//! it cannot follow is *unknown*, which no allow rule allows and every deny rule may match.
//! The files its output redirections (and `tee`) write are checked against the `write_file`
//! rules as a `write_file` call to each would be, whether or not any rule names `bash` (so
//! `--deny 'write_file(.github/**)'` also refuses `echo x > .github/ci.yml` and
//! `cd .github && echo x > ci.yml`); a file the analysis cannot place is refused when write
//! rules apply.

mod bash;
mod domain;
mod narrowing;
mod paths;
mod reads;
mod rule;
pub(crate) mod shell;
mod sources;
mod web_fetch;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

pub(crate) use self::narrowing::InUse;
pub use self::narrowing::Narrowing;
use self::paths::Touched;
use self::reads::Reads;
pub(crate) use self::rule::{Effect, Pattern, Rule, claude_names_covering};
use self::rule::{Ruling, rule_on};
use self::shell::Write;
pub(crate) use self::sources::{FileKeys, Sources, load};
use crate::command_pattern::DenyRule;
use crate::tools::policy::ReadFilter;
use crate::tools::{ToolId, patch_paths};

/// The rules in force for one run.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// Every rule, in the order given (flags, then config.toml, then the rules file).
    rules: Vec<Rule>,
    /// The workspace path patterns are relative to, and call paths are resolved against.
    workspace: std::path::PathBuf,
    /// Whether every call must be admitted by an allow rule, a tool no rule covers refused
    /// too: a skill's `allowed-tools` (`narrowing`). The caller's rules are open: a tool
    /// they do not name is theirs to leave alone.
    closed: bool,
}

/// What the rules say about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No rule stands in the call's way.
    Allow,
    /// The call is refused.
    Deny(Denial),
}

/// Why a call was refused, in words for the model and for the `permission_denied` event, with
/// every rule that matched on the way (codex's execpolicy `Evaluation` lists its matches the
/// same way): a refusal says what decided it, not just that something did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    /// The whole explanation: what matched (or did not), and what the caller could add.
    pub(crate) reason: String,
    /// Every rule that matched a part of the call checked before the refusal, in the order
    /// checked: allow rules that admitted earlier commands of a line, and the deny rule that
    /// refused it when one did.
    pub(crate) matched: Vec<Matched>,
}

impl Denial {
    /// The deny rule that refused the call, as written; `None` when no allow rule matched or
    /// the call could not be checked. (A deny rule that matches refuses at once, so the only
    /// deny rule among the matches is the one that decided.)
    pub(crate) fn rule(&self) -> Option<&str> {
        self.matched
            .iter()
            .find(|matched| matched.effect == Effect::Deny)
            .map(|matched| matched.rule.as_str())
    }
}

/// A rule that matched a call, as a refusal reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Matched {
    /// The rule as written.
    pub(crate) rule: String,
    /// Allow or deny.
    pub(crate) effect: Effect,
}

impl Matched {
    fn of(rule: &Rule) -> Matched {
        Matched {
            rule: rule.text.clone(),
            effect: rule.effect,
        }
    }
}

impl RuleSet {
    /// The rules `rules`, for the workspace `workspace` (canonical).
    pub(crate) fn new(rules: Vec<Rule>, workspace: &Path) -> RuleSet {
        RuleSet {
            rules,
            workspace: workspace.to_path_buf(),
            closed: false,
        }
    }

    /// The allow rules `rules` as a closed set for `workspace`: a call none of them admits
    /// is refused, whether or not any of them covers its tool.
    pub(crate) fn closed(rules: Vec<Rule>, workspace: &Path) -> RuleSet {
        RuleSet {
            closed: true,
            ..RuleSet::new(rules, workspace)
        }
    }

    /// Every rule, in order.
    pub(crate) fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// What the rules keep from the searches' walks and listings, for the tools' policy;
    /// `None` when no rule covers a search.
    pub(crate) fn read_filter(&self) -> Option<Arc<dyn ReadFilter>> {
        Reads::of(&self.rules).map(|reads| Arc::new(reads) as Arc<dyn ReadFilter>)
    }

    /// The text of every rule of `effect`, in order: what a specialist is handed as flags.
    pub(crate) fn texts(&self, effect: Effect) -> Vec<String> {
        self.rules
            .iter()
            .filter(|rule| rule.effect == effect)
            .map(|rule| rule.text.clone())
            .collect()
    }

    /// The deny rules on `bash` that name a command, as the exec check holds them: what every
    /// program a command's tree executes is checked against (`runtime::guardian::execs`). A
    /// `bash` deny rule without a pattern refuses every line before it runs, so it needs none.
    pub(crate) fn exec_denials(&self) -> Vec<DenyRule> {
        self.rules
            .iter()
            .filter(|rule| rule.effect == Effect::Deny && rule.covers(ToolId::Bash))
            .filter_map(|rule| match &rule.pattern {
                Pattern::Command(pattern) => Some(DenyRule {
                    rule: rule.text.clone(),
                    pattern: pattern.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The rules `--allow` and `--deny` give, for the canonical `workspace`, and nothing
    /// else (no config.toml, no rules file): what a test or a program embedding zero's rules
    /// needs to ask them, as a flag's error would say it when one does not parse.
    pub fn from_flags(
        allow: &[String],
        deny: &[String],
        workspace: &Path,
    ) -> Result<RuleSet, String> {
        load(&Sources {
            allow,
            deny,
            file: None,
            config: None,
            workspace,
            home: None,
        })
        .map_err(|error| error.to_string())
    }

    /// Whether no rule stands in the way of a call of `tool` with `args`: `RuleSet::check`
    /// without the refusal's explanation.
    pub fn allows(&self, tool: &str, args: &Value) -> bool {
        self.check(tool, args) == Verdict::Allow
    }

    /// The decision on a call of `tool` with `args` (decoded JSON).
    pub(crate) fn check(&self, tool: &str, args: &Value) -> Verdict {
        if self.rules.is_empty() && !self.closed {
            return Verdict::Allow;
        }
        let mut judgement = Judgement {
            set: self,
            matched: Vec::new(),
        };
        match judgement.call(tool, args) {
            Ok(()) => Verdict::Allow,
            Err(reason) => Verdict::Deny(Denial {
                reason,
                matched: judgement.matched,
            }),
        }
    }
}

/// One call being judged: the rules, and every rule that matched it so far. Each step is
/// `Ok` when the rules let that part of the call pass, else the reason it is refused.
struct Judgement<'a> {
    set: &'a RuleSet,
    matched: Vec<Matched>,
}

impl Judgement<'_> {
    /// A call of `tool` with `args`, by what its tool's rules look at.
    fn call(&mut self, tool: &str, args: &Value) -> Result<(), String> {
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
            return Ok(());
        };
        let covers = |rule: &Rule| rule.covers(id);
        let covered = self.set.rules.iter().any(covers);
        if self.set.closed && !covered {
            return Err(format!("{tool} is not among them"));
        }
        // A line's redirections answer to the write rules whether or not any rule names bash.
        if id == ToolId::Bash {
            return self.bash(args);
        }
        if !covered {
            return Ok(());
        }
        match id {
            ToolId::Task | ToolId::Skill => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
                let what = match id {
                    ToolId::Task => "specialist",
                    _ => "skill",
                };
                self.decide(
                    &covers,
                    tool,
                    &|rule: &Rule| match &rule.pattern {
                        Pattern::Name(wanted) => wanted == name,
                        _ => true,
                    },
                    &format!("the {what} `{name}`"),
                    Some(format!("{tool}({name})")),
                )
            }
            ToolId::WebFetch => self.web_fetch(args),
            _ => match call_paths(id, args) {
                Some(paths) => self.paths(id, &paths),
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
    /// `suggestion` is the rule the caller could allow it with. Every rule that matches is
    /// kept, so the refusal can list them.
    fn decide(
        &mut self,
        covers: &dyn Fn(&Rule) -> bool,
        tool: &str,
        matches: &dyn Fn(&Rule) -> bool,
        what: &str,
        suggestion: Option<String>,
    ) -> Result<(), String> {
        let applicable: Vec<&Rule> = self.set.rules.iter().filter(|r| covers(r)).collect();
        if self.set.closed && applicable.is_empty() {
            return Err(format!("{tool} is not among them, so {what} is refused"));
        }
        let hits: Vec<&Rule> = applicable.iter().copied().filter(|r| matches(r)).collect();
        self.matched
            .extend(hits.iter().map(|rule| Matched::of(rule)));
        match rule_on(&applicable, &hits) {
            Ruling::Pass => Ok(()),
            Ruling::Denied(rule) => Err(denied_by(rule, what)),
            Ruling::Unallowed => {
                let allowed: Vec<String> = applicable
                    .iter()
                    .filter(|rule| rule.effect == Effect::Allow)
                    .map(|rule| format!("`{}`", rule.text))
                    .collect();
                let remedy = match suggestion.filter(|_| !self.set.closed) {
                    Some(rule) => format!("; the caller could add --allow '{rule}'"),
                    None => String::new(),
                };
                let (rule, rules) = match self.set.closed {
                    true => ("entry", "its entries admit"),
                    false => ("allow rule", "the rules allow"),
                };
                Err(format!(
                    "no {rule} matches {what} ({rules} {tool} only for {}){remedy}",
                    allowed.join(", ")
                ))
            }
        }
    }

    /// `bash`: with rules on `bash`, the line must be known and every simple command of it
    /// must pass; with rules on `write_file`, every file it writes must pass them.
    fn bash(&mut self, args: &Value) -> Result<(), String> {
        let ruled =
            |id: ToolId| self.set.closed || self.set.rules.iter().any(|rule| rule.covers(id));
        let (commands, writes) = (ruled(ToolId::Bash), ruled(ToolId::WriteFile));
        let Some(line) = args.get("command").and_then(Value::as_str) else {
            return Ok(());
        };
        if !commands && !writes {
            return Ok(());
        }
        let analysis = shell::analyse(line).map_err(|why| {
            format!(
                "rules apply to bash and this command line cannot be checked against them: \
                 {why}; write it as plain commands or use the file tools"
            )
        })?;
        if commands {
            if let Some(why) = &analysis.unknown {
                return Err(format!(
                    "rules apply to bash and this command line runs what they cannot follow: \
                     {why}; a line is allowed only when every command it runs is known, so \
                     write it as plain commands (no substitutions inside expansions, `eval`, \
                     computed command names or code handed to a shell or an interpreter) or \
                     use the file tools"
                ));
            }
            let covers = |rule: &Rule| rule.covers(ToolId::Bash);
            for command in &analysis.commands {
                let what = format!("the command `{}`", command.display());
                self.decide(
                    &covers,
                    ToolId::Bash.name(),
                    &|rule: &Rule| bash::command_matches(rule, command),
                    &what,
                    crate::command_pattern::suggestion(command.command())
                        .map(|p| format!("bash({p})")),
                )?;
            }
        }
        if writes {
            self.writes(&analysis.writes)?;
        }
        Ok(())
    }

    /// The files a line writes, as `write_file` calls.
    fn writes(&mut self, writes: &[Write]) -> Result<(), String> {
        for write in writes {
            let path = match write {
                Write::At(path) => path,
                Write::Unplaced(why) => {
                    return Err(format!(
                        "rules apply to write_file and this command line writes a file they \
                         cannot place: {why}"
                    ));
                }
            };
            let path = self.set.workspace.join(path).to_string_lossy().into_owned();
            self.paths(ToolId::WriteFile, std::slice::from_ref(&path))
                .map_err(|reason| format!("{reason} (a file this command line writes)"))?;
        }
        Ok(())
    }

    /// A file tool: every path the call touches must pass.
    fn paths(&mut self, id: ToolId, paths: &[String]) -> Result<(), String> {
        let covers = |rule: &Rule| rule.covers(id);
        let workspace = &self.set.workspace;
        for path in paths {
            let touched = Touched::new(workspace, path);
            self.decide(
                &covers,
                id.name(),
                &|rule: &Rule| rule.matches_path(&touched.forms()),
                &format!("the path `{path}`"),
                Some(format!(
                    "{}({})",
                    id.name(),
                    suggested_path(workspace, &touched)
                )),
            )?;
        }
        Ok(())
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

/// The reason the deny rule `rule` refuses `what`.
fn denied_by(rule: &Rule, what: &str) -> String {
    format!(
        "the rule `{}` (deny, from {}) matches {what}; a deny rule cannot be overridden, so do \
         this another way",
        rule.text, rule.origin
    )
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
        | ToolId::TaskStop
        | ToolId::Skill
        | ToolId::WebFetch => None,
    }
}

#[cfg(test)]
mod tests;

/// The programs the bash line `line` starts as the rules see it: the file name of each command
/// the analysis found (wrappers' and scripts' commands included), or why it cannot follow the
/// line, when any rule on `bash` refuses it. Public for the differential test
/// (`tests/integration/rules_differential.rs`), which holds it against what bash itself starts.
pub fn line_programs(line: &str) -> Result<Vec<String>, String> {
    let analysis = shell::analyse(line).map_err(|error| error.to_string())?;
    if let Some(unknown) = analysis.unknown {
        return Err(unknown);
    }
    Ok(analysis
        .commands
        .iter()
        .filter_map(|command| match command.command().first() {
            Some(shell::Word::Known(name)) => Some(shell::file_name(name).to_owned()),
            _ => None,
        })
        .collect())
}
