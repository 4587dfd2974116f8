//! One rule: its grammar, `Tool` or `Tool(pattern)`, in zero's tool names and in Claude Code's.
//!
//! | rule | covers | pattern |
//! |---|---|---|
//! | `bash(cargo test *)`, Claude's `Bash(git log:*)` | `bash` | a command (see `command_pattern`) |
//! | `read_file(src/**)`, `write_file(…)`, `edit_file(…)`, `apply_patch(…)`, `grep(…)`, `glob(…)`, `list_directory(…)` | that tool | a path glob (see `paths`) |
//! | Claude's `Read(…)` | `read_file`, `list_directory`, `glob`, `grep` | a path glob |
//! | Claude's `Edit(…)`, `MultiEdit(…)` | `write_file`, `edit_file`, `apply_patch` | a path glob |
//! | Claude's `Write(…)`, `Grep(…)`, `Glob(…)`, `LS(…)` | the one tool | a path glob |
//! | `Task(reviewer)` | `Task` | a specialist's name |
//! | `Skill(release-notes)`, Claude's `Skill(…)` | `Skill` | a skill's name |
//! | `web_fetch(domain:docs.rs)`, Claude's `WebFetch(domain:…)` | `web_fetch` | a host (see `domain`) |
//! | `mcp__github__create_issue`, `mcp__github__*`, `mcp__github` | an MCP server's tools | none |
//! | any tool's name alone (`update_plan`, `TodoWrite`, `bash`) | every call of it | none |
//!
//! Tool names map through the catalog (`tools::ToolId`, its Claude Code names); a name zero
//! has no tool for (`WebSearch`, `NotebookEdit`) is refused, as is a pattern on a
//! tool that takes none.

use std::fmt;
use std::path::Path;

use super::domain::DomainPattern;
use super::paths::PathPattern;
use crate::command_pattern::CommandPattern;
use crate::tools::{SideEffect, ToolId};

/// Whether a rule allows or denies what it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Effect {
    /// `--allow`, `permissions.allow`.
    Allow,
    /// `--deny`, `permissions.deny`.
    Deny,
}

impl Effect {
    /// The flag that gives a rule of this effect.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Effect::Allow => "--allow",
            Effect::Deny => "--deny",
        }
    }
}

/// Where a rule came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `--allow` or `--deny`.
    Flag,
    /// `[permissions]` in config.toml.
    ConfigFile,
    /// The file `--rules` names.
    RulesFile(String),
    /// The `allowed-tools` of the skill of this name, in use (`rules::Narrowing`).
    Skill(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag => f.write_str("the command line"),
            Origin::ConfigFile => f.write_str("config.toml"),
            Origin::RulesFile(path) => write!(f, "{path}"),
            Origin::Skill(name) => write!(f, "the skill `{name}`"),
        }
    }
}

/// The tools a rule covers.
#[derive(Debug, Clone)]
pub(crate) enum Scope {
    /// Some of zero's own tools.
    Tools(Vec<ToolId>),
    /// An MCP server's tools: one of them, or all (`None`).
    Mcp {
        /// The server's name.
        server: String,
        /// The tool's name on that server, or `None` for every one.
        tool: Option<String>,
    },
}

/// What a rule's pattern says about a call of a tool it covers.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    /// No pattern: every call.
    Every,
    /// `bash`: the commands of the line.
    Command(CommandPattern),
    /// A file tool: the paths the call touches.
    Path(PathPattern),
    /// `Task`: the specialist's name; `Skill`: the skill's.
    Name(String),
    /// `web_fetch`: the URL's host.
    Domain(DomainPattern),
}

/// One rule, parsed.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// Allow or deny.
    pub(crate) effect: Effect,
    /// The rule as written.
    pub(crate) text: String,
    /// Where it came from.
    pub(crate) origin: Origin,
    /// The tools it covers.
    pub(crate) scope: Scope,
    /// What it says about their calls.
    pub(crate) pattern: Pattern,
}

/// What kind of pattern a tool's rules take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Command,
    Path,
    Name,
    Domain,
    Nothing,
}

/// The pattern kind of each of zero's tools.
fn takes(id: ToolId) -> Takes {
    match id {
        ToolId::Bash => Takes::Command,
        ToolId::ReadFile
        | ToolId::WriteFile
        | ToolId::EditFile
        | ToolId::ApplyPatch
        | ToolId::Grep
        | ToolId::Glob
        | ToolId::ListDirectory => Takes::Path,
        ToolId::Task | ToolId::Skill => Takes::Name,
        ToolId::WebFetch => Takes::Domain,
        ToolId::UpdatePlan | ToolId::TaskOutput | ToolId::TaskStop => Takes::Nothing,
    }
}

/// What a rule may look like, for the message that refuses one.
pub(crate) const FORMS: &str = "a rule is TOOL or TOOL(PATTERN): bash(cargo test *), \
     read_file(src/**), write_file/edit_file/apply_patch/grep/glob/list_directory(GLOB), \
     Task(SPECIALIST), Skill(NAME), web_fetch(domain:HOST), mcp__SERVER__TOOL, mcp__SERVER__*, a \
     tool's name alone, or Claude Code's Bash(git log:*), Read(./src/**), Edit(…), Write(…), \
     Grep(…), Glob(…), LS(…), WebFetch(domain:…)";

impl Rule {
    /// Parses `text`, a rule of `effect` from `origin`; path patterns are relative to
    /// `workspace`. The error says what is wrong (the caller names the rule).
    pub(crate) fn parse(
        text: &str,
        effect: Effect,
        origin: Origin,
        workspace: &Path,
        home: Option<&Path>,
    ) -> Result<Rule, String> {
        let trimmed = text.trim();
        let (name, argument) = split(trimmed)?;
        let (scope, kind) = scope(name)?;
        let pattern = match (argument, kind) {
            (None, _) => Pattern::Every,
            (Some(_), Takes::Nothing) => {
                return Err(format!("`{name}` takes no pattern; write `{name}` alone"));
            }
            (Some(argument), Takes::Command) => CommandPattern::parse(argument)
                .map(Pattern::Command)
                .ok_or("the command pattern is empty (write `bash` alone for every command)")?,
            (Some(argument), Takes::Path) => {
                Pattern::Path(PathPattern::parse(argument, workspace, home)?)
            }
            (Some(argument), Takes::Name) => match argument.trim() {
                "" => return Err("the name is empty".into()),
                name => Pattern::Name(name.to_owned()),
            },
            (Some(argument), Takes::Domain) => Pattern::Domain(DomainPattern::parse(argument)?),
        };
        Ok(Rule {
            effect,
            text: trimmed.to_owned(),
            origin,
            scope,
            pattern,
        })
    }

    /// Whether this rule covers zero's tool `id`.
    pub(crate) fn covers(&self, id: ToolId) -> bool {
        matches!(&self.scope, Scope::Tools(ids) if ids.contains(&id))
    }

    /// Whether this file tool's rule matches a path given in `forms` (as resolved, as
    /// spelled): a deny rule matches when any form does, an allow rule only when all do. A
    /// rule without a path pattern matches every path.
    pub(crate) fn matches_path(&self, forms: &[&Path]) -> bool {
        let Pattern::Path(pattern) = &self.pattern else {
            return true;
        };
        let mut forms = forms.iter();
        match self.effect {
            Effect::Deny => forms.any(|form| pattern.matches(form)),
            Effect::Allow => forms.all(|form| pattern.matches(form)),
        }
    }

    /// Whether this rule covers the MCP tool `tool` of `server`.
    pub(crate) fn covers_mcp(&self, server: &str, tool: &str) -> bool {
        matches!(&self.scope, Scope::Mcp { server: s, tool: t }
            if s == server && t.as_deref().is_none_or(|t| t == tool))
    }
}

/// How the rules that apply to one part of a call decide it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ruling<'r> {
    /// No rule stands in its way.
    Pass,
    /// This deny rule matches it.
    Denied(&'r Rule),
    /// Allow rules apply and none matches it.
    Unallowed,
}

/// The ruling of the rules `applicable` to a part of a call, of which `hits` match it: a
/// matching deny rule refuses it; else, when allow rules apply, one of them must match.
pub(crate) fn rule_on<'r>(applicable: &[&'r Rule], hits: &[&'r Rule]) -> Ruling<'r> {
    if let Some(rule) = hits.iter().find(|rule| rule.effect == Effect::Deny) {
        return Ruling::Denied(rule);
    }
    let allows = |rules: &[&Rule]| rules.iter().any(|rule| rule.effect == Effect::Allow);
    if !allows(applicable) || allows(hits) {
        Ruling::Pass
    } else {
        Ruling::Unallowed
    }
}

/// `Tool(pattern)` into its name and pattern.
fn split(text: &str) -> Result<(&str, Option<&str>), String> {
    let Some(open) = text.find('(') else {
        if text.contains(')') {
            return Err("it has a `)` without a `(`".into());
        }
        return Ok((text, None));
    };
    let inner = text[open + 1..]
        .strip_suffix(')')
        .ok_or("a pattern must end the rule with `)`")?;
    Ok((text[..open].trim_end(), Some(inner)))
}

/// The tools a rule's name covers, and the kind of pattern they take.
fn scope(name: &str) -> Result<(Scope, Takes), String> {
    if name.is_empty() {
        return Err("it names no tool".into());
    }
    if let Some(rest) = name.strip_prefix("mcp__") {
        let (server, tool) = match rest.split_once("__") {
            Some((server, "*")) => (server, None),
            Some((server, tool)) => (server, Some(tool.to_owned())),
            None => (rest, None),
        };
        if server.is_empty() || tool.as_deref() == Some("") {
            return Err("an MCP rule is mcp__SERVER, mcp__SERVER__TOOL or mcp__SERVER__*".into());
        }
        let scope = Scope::Mcp {
            server: server.to_owned(),
            tool,
        };
        return Ok((scope, Takes::Nothing));
    }
    if let Some(id) = ToolId::from_name(name) {
        return Ok((Scope::Tools(vec![id]), takes(id)));
    }
    let Some(id) = ToolId::from_claude_name(name) else {
        return Err(format!("zero has no tool `{name}`"));
    };
    Ok((Scope::Tools(claude_scope(id)), takes(id)))
}

/// The zero tools a Claude Code name of `id` covers: Claude Code applies its `Read` rules to
/// every tool that reads files, and its `Edit` (and `MultiEdit`) rules to every tool that
/// edits them; every other name covers its own tool. The one mapping of Claude Code's names
/// onto zero's tools, which the hooks' matchers use too ([`claude_names_covering`]).
fn claude_scope(id: ToolId) -> Vec<ToolId> {
    if matches!(id, ToolId::ReadFile | ToolId::EditFile) {
        family(id.side_effect())
    } else {
        vec![id]
    }
}

/// Every Claude Code tool name whose rules cover `tool` (see `claude_scope`): `Edit` and
/// `MultiEdit` for `apply_patch`, `Edit`, `MultiEdit` and `Write` for `write_file`, `Grep` and
/// `Read` for `grep`. A hook's matcher is matched against these, so a Claude Code hook on
/// `Edit|MultiEdit|Write` runs for every tool that changes files, as a rule on them applies.
pub(crate) fn claude_names_covering(tool: ToolId) -> impl Iterator<Item = &'static str> {
    ToolId::ALL.iter().flat_map(move |id| {
        let covers = claude_scope(*id).contains(&tool);
        id.spec()
            .claude_names
            .iter()
            .copied()
            .filter(move |_| covers)
    })
}

/// The tools that take paths and have `effect`: what Claude's `Read` and `Edit` rules cover.
fn family(effect: SideEffect) -> Vec<ToolId> {
    ToolId::ALL
        .iter()
        .copied()
        .filter(|id| takes(*id) == Takes::Path && id.side_effect() == effect)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Rule, String> {
        Rule::parse(text, Effect::Deny, Origin::Flag, Path::new("/ws"), None)
    }

    fn tools(text: &str) -> Vec<&'static str> {
        match parse(text).unwrap().scope {
            Scope::Tools(ids) => ids.into_iter().map(ToolId::name).collect(),
            Scope::Mcp { .. } => panic!("an MCP rule"),
        }
    }

    #[test]
    fn the_claude_names_covering_a_tool_are_those_whose_rules_apply_to_it() {
        let names = |id| claude_names_covering(id).collect::<Vec<_>>();
        assert_eq!(names(ToolId::ApplyPatch), ["Edit", "MultiEdit"]);
        assert_eq!(names(ToolId::WriteFile), ["Edit", "MultiEdit", "Write"]);
        assert_eq!(names(ToolId::EditFile), ["Edit", "MultiEdit"]);
        assert_eq!(names(ToolId::Grep), ["Grep", "Read"]);
        assert_eq!(names(ToolId::ReadFile), ["Read"]);
        assert_eq!(names(ToolId::Bash), ["Bash"]);
        assert!(names(ToolId::TaskOutput).is_empty());
    }

    #[test]
    fn zero_and_claude_names_map_through_the_catalog() {
        assert_eq!(tools("bash(cargo test *)"), ["bash"]);
        assert_eq!(tools("Bash(git log:*)"), ["bash"]);
        assert_eq!(tools("read_file(src/**)"), ["read_file"]);
        assert_eq!(
            tools("Read(./src/**)"),
            ["glob", "grep", "list_directory", "read_file"]
        );
        assert_eq!(
            tools("Edit(docs/**)"),
            ["apply_patch", "edit_file", "write_file"]
        );
        assert_eq!(
            tools("MultiEdit"),
            ["apply_patch", "edit_file", "write_file"]
        );
        assert_eq!(tools("Write(a.txt)"), ["write_file"]);
        assert_eq!(tools("TodoWrite"), ["update_plan"]);
        assert_eq!(tools("Task(reviewer)"), ["Task"]);
        assert_eq!(tools("Skill(notes)"), ["Skill"]);
        assert_eq!(tools("WebFetch(domain:docs.rs)"), ["web_fetch"]);
        assert_eq!(tools("web_fetch"), ["web_fetch"]);
        assert!(
            matches!(parse("Task(reviewer)").unwrap().pattern, Pattern::Name(n) if n == "reviewer")
        );
    }

    #[test]
    fn mcp_rules_name_a_server_or_one_of_its_tools() {
        let all = parse("mcp__github__*").unwrap();
        assert!(all.covers_mcp("github", "create_issue") && !all.covers_mcp("gitlab", "x"));
        let server = parse("mcp__github").unwrap();
        assert!(server.covers_mcp("github", "anything"));
        let one = parse("mcp__github__create_issue").unwrap();
        assert!(one.covers_mcp("github", "create_issue") && !one.covers_mcp("github", "list"));
    }

    #[test]
    fn malformed_rules_say_what_is_wrong() {
        for (text, wrong) in [
            ("WebSearch(example.com)", "zero has no tool `WebSearch`"),
            (
                "WebFetch(example.com)",
                "a web_fetch pattern is domain:HOST",
            ),
            ("NotebookEdit", "zero has no tool"),
            ("bash(git push *", "must end the rule with `)`"),
            ("bash()", "empty"),
            ("update_plan(x)", "takes no pattern"),
            ("mcp__github__x(y)", "takes no pattern"),
            ("mcp____x", "an MCP rule is"),
            ("read_file([)", "not a valid glob"),
            ("", "names no tool"),
            ("Task()", "name is empty"),
            ("Skill()", "name is empty"),
            ("bash)", "without a `(`"),
        ] {
            let error = parse(text).map(|_| ()).unwrap_err();
            assert!(error.contains(wrong), "{text}: {error}");
        }
    }
}
