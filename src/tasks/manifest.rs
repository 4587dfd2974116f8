//! One specialist manifest: a markdown file whose YAML front matter says who the specialist is
//! and which tools it gets, and whose body is its system prompt.
//!
//! ```markdown
//! ---
//! name: test-fixer
//! description: Runs the test suite and fixes failing tests.
//! tools: edit, execute      # or a YAML list: [edit, execute]
//! model: gpt-4.1-mini       # optional; default: the model of the launching run
//! reasoning_effort: high    # optional; default: the launching run's (--reasoning-effort)
//! isolation: worktree       # optional; default: none (works in the parent's workspace)
//! skills: release-notes     # optional; the skills it may load (of those its parent offers)
//! verify: [cargo test]      # optional: checks its work must pass (its `--verify`)
//! ---
//! You fix failing tests. ...
//! ```
//!
//! `tools` names [categories](Category) and/or single tools, as a comma-separated string or a
//! YAML list; omitted, it means `read-only`. Two dialects share the format:
//!
//! - [`Dialect::Zero`] (zero's own manifests) is strict: an unknown tool is an error, because a
//!   typo must not quietly leave a specialist without a tool its instructions rely on.
//! - [`Dialect::ClaudeCode`] (`.claude/agents/*.md`) also accepts Claude Code's tool names
//!   (`Read, Grep, Bash`), mapping the ones zero has and leaving out the rest with an
//!   [`Ignored`] notice, so agent definitions written for Claude Code load unchanged.
//!
//! In both, `Task`, `TaskOutput` and `TaskStop` are refused: a specialist never launches tasks
//! of its own, which keeps the process tree one level deep and bounded.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use super::{Isolation, Source, Specialist};
use crate::front_matter::{self, FrontMatterError};
use crate::mcp;
use crate::provider::ReasoningEffort;
use crate::tools::{ForSpecialists, SideEffect, ToolId};

/// Claude Code front-matter keys that only change how Claude Code displays an agent: accepted
/// silently in its files, so listing existing agent definitions is not a wall of warnings.
const CLAUDE_CODE_DISPLAY_KEYS: [&str; 1] = ["color"];

/// A named group of tools a manifest grants with one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Category {
    /// `read-only`: the tools that read (read_file, list_directory, glob, grep).
    ReadOnly,
    /// `edit`: read-only plus the tools that change files (write_file, edit_file,
    /// apply_patch).
    Edit,
    /// `execute`: read-only plus the tool that runs commands (bash).
    Execute,
    /// `plan`: the tool that touches nothing outside the run (update_plan).
    Plan,
}

impl Category {
    /// Every category, in the order the docs list them.
    pub(crate) const ALL: [Category; 4] = [
        Category::ReadOnly,
        Category::Edit,
        Category::Execute,
        Category::Plan,
    ];

    /// The word a manifest uses for it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Category::ReadOnly => "read-only",
            Category::Edit => "edit",
            Category::Execute => "execute",
            Category::Plan => "plan",
        }
    }

    /// The tools it grants: those a manifest may grant whose side effect it covers, sorted
    /// by name.
    pub(crate) fn tools(self) -> Vec<&'static str> {
        ToolId::for_specialists(ForSpecialists::Manifest)
            .filter(|id| self.covers(id.side_effect()))
            .map(ToolId::name)
            .collect()
    }

    /// Whether it grants the tools of this side effect.
    fn covers(self, effect: SideEffect) -> bool {
        match self {
            Category::ReadOnly => effect == SideEffect::Read,
            Category::Edit => matches!(effect, SideEffect::Read | SideEffect::Write),
            Category::Execute => matches!(effect, SideEffect::Read | SideEffect::Shell),
            Category::Plan => effect == SideEffect::None,
        }
    }

    fn from_name(word: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.name() == word)
    }
}

/// Which vocabulary a manifest speaks; decided by the directory it was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// zero's own manifests (`.zero/specialists/`, `~/.config/zero/specialists/`, built-ins).
    Zero,
    /// Claude Code agent files (`.claude/agents/`): Claude tool names and model aliases too.
    ClaudeCode,
}

/// Why a manifest could not be loaded. The manifest is skipped; others still load.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManifestError {
    /// The file could not be read: missing, unreadable, not a regular file, too large, or
    /// (in the workspace) resolving outside it.
    #[error("cannot read the manifest: {0}")]
    Read(#[from] crate::fsutil::BeneathError),
    /// The file is not UTF-8 text.
    #[error("the manifest is not UTF-8 text: {0}")]
    NotUtf8(#[from] std::string::FromUtf8Error),
    /// The front matter is missing, never ends, is not valid YAML, or a key has the wrong
    /// type.
    #[error(transparent)]
    FrontMatter(#[from] FrontMatterError),
    /// There is no `name`.
    #[error("`name` is missing")]
    MissingName,
    /// The `name` is not `^[a-z][a-z0-9-]{0,63}$`.
    #[error(
        "invalid name `{0}`: use lowercase letters, digits and `-`, starting with a letter, at \
         most 64 characters"
    )]
    InvalidName(String),
    /// There is no `description`, or it is blank.
    #[error(
        "`description` is missing or empty; the model reads it to decide when to use the \
         specialist"
    )]
    MissingDescription,
    /// `tools` names something that is neither a category nor a tool.
    #[error(
        "unknown tool or category `{0}` in `tools`; use a category ({categories}), a tool \
         ({tools}), or an MCP server's tools (mcp__SERVER__TOOL, mcp__SERVER__*)",
        categories = category_names(),
        tools = tool_names()
    )]
    UnknownTool(String),
    /// `tools` names a tool no manifest may grant: a task tool, `Skill` or `web_fetch`.
    #[error(
        "`{0}` cannot be given to a specialist in `tools`: specialists do not launch tasks of \
         their own, get `Skill` with a `skills:` list and are not given web_fetch"
    )]
    ForbiddenTool(String),
    /// `skills` names something that cannot be a skill's name.
    #[error(
        "invalid skill name `{0}` in `skills`: a skill's name is lowercase letters, digits and \
         `-`"
    )]
    InvalidSkill(String),
    /// The body, which is the system prompt, is empty.
    #[error("the body is empty; it is the specialist's system prompt, so write its instructions")]
    EmptyPrompt,
    /// `verify` is past the checks' bounds.
    #[error("`verify`: {0}")]
    Verify(String),
}

impl ManifestError {
    /// The line of the manifest file the problem is on, when the front matter's reader
    /// knows it.
    pub(crate) fn line(&self) -> Option<usize> {
        match self {
            ManifestError::FrontMatter(error) => Some(error.line()),
            _ => None,
        }
    }
}

fn category_names() -> String {
    Category::ALL.map(Category::name).join(", ")
}

fn tool_names() -> String {
    let tools: BTreeSet<&str> = Category::ALL
        .into_iter()
        .flat_map(Category::tools)
        .collect();
    tools.into_iter().collect::<Vec<_>>().join(", ")
}

/// A part of a manifest that was left out without failing it; reported as a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ignored {
    /// A front-matter key zero does not use (Claude Code's `color`, a typo, ...).
    UnknownKey(String),
    /// A Claude Code tool zero has no equivalent for (`WebSearch`, an MCP tool, ...).
    ClaudeTool(String),
    /// A Claude Code tool zero has but gives no specialist (`WebFetch`, `Skill`: a specialist
    /// gets `Skill` with a `skills:` list).
    NotForSpecialists(String),
    /// A Claude Code model alias (`sonnet`, `opus`, `haiku`) no zero provider knows.
    ClaudeModel(String),
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ignored::UnknownKey(key) => write!(f, "unknown front-matter key `{key}` ignored"),
            Ignored::ClaudeTool(tool) => {
                write!(
                    f,
                    "Claude Code tool `{tool}` has no zero equivalent; left out"
                )
            }
            Ignored::NotForSpecialists(tool) => write!(
                f,
                "Claude Code tool `{tool}` is not given to specialists in `tools`; left out"
            ),
            Ignored::ClaudeModel(alias) => write!(
                f,
                "Claude Code model alias `{alias}` ignored; the specialist uses the launching \
                 run's model"
            ),
        }
    }
}

/// A manifest that loaded, and what of it was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    /// The specialist it defines.
    pub(crate) specialist: Specialist,
    /// Parts that were ignored, in the order found; each deserves a warning.
    pub(crate) ignored: Vec<Ignored>,
}

/// The largest manifest read: far above any real one (instructions of a few pages), so that a
/// huge or endless file in a specialist directory cannot be read without bound.
pub(crate) const MANIFEST_LIMIT: u64 = 1024 * 1024;

/// Parses the manifest `bytes` read from `path`, its source. Discovery reads them (at most
/// [`MANIFEST_LIMIT`]), because where a manifest lives decides how its path may resolve.
pub(crate) fn parse_file(
    bytes: Vec<u8>,
    path: &Path,
    dialect: Dialect,
) -> Result<Parsed, ManifestError> {
    let text = String::from_utf8(bytes)?;
    parse(&text, dialect, Source::File(path.to_path_buf()))
}

/// Parses a manifest's text.
pub(crate) fn parse(text: &str, dialect: Dialect, source: Source) -> Result<Parsed, ManifestError> {
    let (front, body) = front_matter::split(text)?;
    let front: FrontMatter = front_matter::parse(front)?;
    let mut ignored: Vec<Ignored> = front
        .unknown
        .keys()
        .filter(|key| {
            !(dialect == Dialect::ClaudeCode
                && key
                    .as_str()
                    .is_some_and(|k| CLAUDE_CODE_DISPLAY_KEYS.contains(&k)))
        })
        .map(|key| {
            Ignored::UnknownKey(
                key.as_str()
                    .map_or_else(|| format!("{key:?}"), str::to_string),
            )
        })
        .collect();

    let name = front.name.ok_or(ManifestError::MissingName)?;
    if !valid_name(&name) {
        return Err(ManifestError::InvalidName(name));
    }
    let description = front
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .ok_or(ManifestError::MissingDescription)?
        .to_string();
    // An omitted `tools` is the safe default: a specialist that can look but not touch.
    let words = front
        .tools
        .map_or_else(|| vec![Category::ReadOnly.name().to_string()], |t| t.0);
    let (tools, mcp_tools) = resolve_tools(&words, dialect, &mut ignored)?;
    let model = resolve_model(front.model, dialect, &mut ignored);
    let skills = resolve_skills(front.skills)?;
    let prompt = body.trim();
    if prompt.is_empty() {
        return Err(ManifestError::EmptyPrompt);
    }
    let verify = front.verify.unwrap_or_default();
    crate::verify::bounded(&verify).map_err(ManifestError::Verify)?;
    Ok(Parsed {
        specialist: Specialist {
            name,
            description,
            tools,
            mcp_tools,
            model,
            reasoning_effort: front.reasoning_effort,
            isolation: front.isolation.unwrap_or_default(),
            skills,
            verify,
            prompt: prompt.to_string(),
            source,
        },
        ignored,
    })
}

/// `^[a-z][a-z0-9-]{0,63}$`: safe in a file name, a command line and a tool argument.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Turns the words of `tools` into zero tool names and MCP tool names (`mcp__SERVER__TOOL`,
/// `mcp__SERVER__*`, as Claude Code writes them too), each sorted and de-duplicated.
fn resolve_tools(
    words: &[String],
    dialect: Dialect,
    ignored: &mut Vec<Ignored>,
) -> Result<(Vec<&'static str>, Vec<String>), ManifestError> {
    let mut tools = BTreeSet::new();
    let mut mcp_tools = BTreeSet::new();
    for word in words {
        let zero_tool = ToolId::from_name(word);
        if zero_tool.is_some_and(|id| id.specialists() != ForSpecialists::Manifest) {
            return Err(ManifestError::ForbiddenTool(word.clone()));
        }
        if mcp::server_of(word).is_some() {
            mcp_tools.insert(word.clone());
        } else if let Some(category) = Category::from_name(word) {
            tools.extend(category.tools());
        } else if let Some(id) = zero_tool {
            tools.insert(id.name());
        } else if dialect == Dialect::ClaudeCode {
            match ToolId::from_claude_name(word) {
                Some(id) if id.specialists() == ForSpecialists::Manifest => {
                    tools.insert(id.name());
                }
                Some(_) => ignored.push(Ignored::NotForSpecialists(word.clone())),
                None => ignored.push(Ignored::ClaudeTool(word.clone())),
            }
        } else {
            return Err(ManifestError::UnknownTool(word.clone()));
        }
    }
    Ok((tools.into_iter().collect(), mcp_tools.into_iter().collect()))
}

/// The skills `skills` names, sorted and de-duplicated; each must be a skill's name.
fn resolve_skills(skills: Option<Words>) -> Result<Vec<String>, ManifestError> {
    let names: BTreeSet<String> = skills
        .map(|words| words.0)
        .unwrap_or_default()
        .into_iter()
        .collect();
    match names.iter().find(|name| !crate::skills::valid_name(name)) {
        Some(bad) => Err(ManifestError::InvalidSkill(bad.clone())),
        None => Ok(names.into_iter().collect()),
    }
}

/// The specialist's own model, if it names one a zero provider could know.
fn resolve_model(
    model: Option<String>,
    dialect: Dialect,
    ignored: &mut Vec<Ignored>,
) -> Option<String> {
    let model = model
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())?;
    if dialect == Dialect::ClaudeCode {
        match model.as_str() {
            // Claude Code's spelling of "the launching run's model", which is zero's default.
            "inherit" => return None,
            "sonnet" | "opus" | "haiku" => {
                ignored.push(Ignored::ClaudeModel(model));
                return None;
            }
            _ => {}
        }
    }
    Some(model)
}

/// The front matter as written. Keys zero does not use are collected, not rejected: Claude
/// Code agent files carry keys such as `color`.
#[derive(Debug, Default, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    tools: Option<Words>,
    skills: Option<Words>,
    model: Option<String>,
    reasoning_effort: Option<ReasoningEffort>,
    isolation: Option<Isolation>,
    verify: Option<Vec<String>>,
    #[serde(flatten)]
    unknown: yaml_serde::Mapping,
}

/// The words of `tools` or `skills`, from either `a, b` or a YAML list (whose items may hold
/// commas too).
///
/// Deserialized by hand rather than as an untagged enum so that a wrong type is reported at
/// the value's own line, not at the start of the front matter.
#[derive(Debug)]
struct Words(Vec<String>);

impl<'de> Deserialize<'de> for Words {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WordsVisitor)
    }
}

struct WordsVisitor;

impl<'de> Visitor<'de> for WordsVisitor {
    type Value = Words;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a comma-separated string or a list of names")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Words, E> {
        Ok(Words(comma_words(text).collect()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Words, A::Error> {
        let mut words = Vec::new();
        while let Some(item) = items.next_element::<String>()? {
            words.extend(comma_words(&item));
        }
        Ok(Words(words))
    }
}

fn comma_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(',')
        .map(str::trim)
        .filter(|word| !word.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zero(text: &str) -> Result<Parsed, ManifestError> {
        parse(text, Dialect::Zero, Source::Builtin)
    }

    fn claude(text: &str) -> Result<Parsed, ManifestError> {
        parse(text, Dialect::ClaudeCode, Source::Builtin)
    }

    fn manifest(front: &str) -> String {
        format!("---\n{front}\n---\nDo the thing well.\n")
    }

    fn tools_of(front: &str) -> Vec<&'static str> {
        zero(&manifest(&format!("name: t\ndescription: d\n{front}")))
            .unwrap()
            .specialist
            .tools
    }

    #[test]
    fn a_full_manifest_parses_into_a_specialist() {
        let parsed = zero(
            "---\nname: test-fixer\ndescription: >\n  Fixes failing tests.\ntools: [edit, \
             execute]\nmodel: gpt-4.1-mini\nreasoning_effort: high\n---\n\nYou fix failing \
             tests.\n\nRun them first.\n",
        )
        .unwrap();
        assert_eq!(
            parsed.specialist,
            Specialist {
                name: "test-fixer".into(),
                description: "Fixes failing tests.".into(),
                tools: vec![
                    "apply_patch",
                    "bash",
                    "edit_file",
                    "glob",
                    "grep",
                    "list_directory",
                    "read_file",
                    "write_file"
                ],
                mcp_tools: Vec::new(),
                model: Some("gpt-4.1-mini".into()),
                reasoning_effort: Some(ReasoningEffort::High),
                isolation: Isolation::None,
                skills: Vec::new(),
                verify: Vec::new(),
                prompt: "You fix failing tests.\n\nRun them first.".into(),
                source: Source::Builtin,
            }
        );
        assert!(parsed.ignored.is_empty());
    }

    #[test]
    fn mcp_tool_names_are_kept_apart_from_the_core_tools() {
        let parsed = zero(&manifest(
            "name: t\ndescription: d\ntools: grep, mcp__gh__*, mcp__db__query, mcp__gh__*",
        ))
        .unwrap();
        assert_eq!(parsed.specialist.tools, ["grep"]);
        assert_eq!(
            parsed.specialist.mcp_tools,
            ["mcp__db__query", "mcp__gh__*"]
        );
        assert!(zero(&manifest("name: t\ndescription: d\ntools: mcp__")).is_err());
    }

    #[test]
    fn each_category_grants_its_tools() {
        assert_eq!(
            tools_of("tools: read-only"),
            ["glob", "grep", "list_directory", "read_file"]
        );
        assert_eq!(
            tools_of("tools: edit"),
            [
                "apply_patch",
                "edit_file",
                "glob",
                "grep",
                "list_directory",
                "read_file",
                "write_file"
            ]
        );
        assert_eq!(
            tools_of("tools: execute"),
            ["bash", "glob", "grep", "list_directory", "read_file"]
        );
        assert_eq!(tools_of("tools: plan"), ["update_plan"]);
    }

    #[test]
    fn omitted_tools_mean_read_only() {
        assert_eq!(tools_of(""), tools_of("tools: read-only"));
        assert_eq!(tools_of("tools: ~"), tools_of("tools: read-only"));
    }

    #[test]
    fn tools_mix_categories_and_names_deduplicated_and_sorted() {
        assert_eq!(
            tools_of("tools: plan, grep, read-only, grep"),
            ["glob", "grep", "list_directory", "read_file", "update_plan"]
        );
        assert_eq!(
            tools_of("tools:\n  - bash\n  - read_file, grep\n"),
            ["bash", "grep", "read_file"]
        );
        assert_eq!(tools_of("tools: []"), Vec::<&str>::new());
    }

    #[test]
    fn an_unknown_tool_is_an_error_that_lists_the_vocabulary() {
        let error = zero(&manifest("name: t\ndescription: d\ntools: read-only, cat")).unwrap_err();
        assert!(matches!(&error, ManifestError::UnknownTool(word) if word == "cat"));
        let message = error.to_string();
        assert!(
            message.contains("read-only, edit, execute, plan"),
            "{message}"
        );
        assert!(message.contains("apply_patch"), "{message}");
        // zero's own manifests do not speak Claude Code's tool names.
        assert!(matches!(
            zero(&manifest("name: t\ndescription: d\ntools: Read")),
            Err(ManifestError::UnknownTool(_))
        ));
    }

    #[test]
    fn task_tools_are_forbidden_in_both_dialects() {
        let task_tools = ToolId::ALL
            .iter()
            .filter(|id| id.specialists() != ForSpecialists::Manifest)
            .map(|id| id.name());
        for tool in task_tools {
            let text = manifest(&format!(
                "name: t\ndescription: d\ntools: read-only, {tool}"
            ));
            assert!(
                matches!(zero(&text), Err(ManifestError::ForbiddenTool(t)) if t == tool),
                "{tool}"
            );
            assert!(
                matches!(claude(&text), Err(ManifestError::ForbiddenTool(t)) if t == tool),
                "{tool}"
            );
        }
    }

    #[test]
    fn claude_tool_names_map_to_zero_tools_and_unknown_ones_are_left_out() {
        let parsed = claude(
            "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep, Glob, LS, Bash, \
             Edit, MultiEdit, Write, TodoWrite, WebFetch\nmodel: sonnet\ncolor: blue\n---\nReview.\n",
        )
        .unwrap();
        assert_eq!(
            parsed.specialist.tools,
            [
                "bash",
                "edit_file",
                "glob",
                "grep",
                "list_directory",
                "read_file",
                "update_plan",
                "write_file"
            ]
        );
        assert_eq!(parsed.specialist.model, None);
        assert_eq!(
            parsed.ignored,
            [
                Ignored::NotForSpecialists("WebFetch".into()),
                Ignored::ClaudeModel("sonnet".into()),
            ]
        );
    }

    #[test]
    fn claude_files_also_take_zero_words_and_inherit_means_no_model() {
        let parsed = claude(&manifest(
            "name: t\ndescription: d\ntools: plan, grep\nmodel: inherit",
        ))
        .unwrap();
        assert_eq!(parsed.specialist.tools, ["grep", "update_plan"]);
        assert_eq!(parsed.specialist.model, None);
        assert!(parsed.ignored.is_empty());
    }

    #[test]
    fn names_must_be_lowercase_words_of_at_most_64_characters() {
        for good in ["a", "code-review", "x86-helper", &"a".repeat(64)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "",
            "Explorer",
            "1st",
            "-x",
            "snake_case",
            "with space",
            "naïve",
            &"a".repeat(65),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert!(matches!(
            zero(&manifest("name: Bad_Name\ndescription: d")),
            Err(ManifestError::InvalidName(name)) if name == "Bad_Name"
        ));
        assert!(matches!(
            zero(&manifest("description: d")),
            Err(ManifestError::MissingName)
        ));
    }

    #[test]
    fn a_missing_or_blank_description_is_an_error() {
        for front in ["name: t", "name: t\ndescription: \"  \""] {
            assert!(
                matches!(
                    zero(&manifest(front)),
                    Err(ManifestError::MissingDescription)
                ),
                "{front}"
            );
        }
    }

    #[test]
    fn an_empty_body_is_an_error() {
        assert!(matches!(
            zero("---\nname: t\ndescription: d\n---\n  \n\n"),
            Err(ManifestError::EmptyPrompt)
        ));
        assert!(matches!(
            zero("---\nname: t\ndescription: d\n---"),
            Err(ManifestError::EmptyPrompt)
        ));
    }

    #[test]
    fn bad_yaml_reports_the_line_in_the_file() {
        let error = zero("---\nname: t\ndescription: d\n  nested: oops\n---\nBody.\n").unwrap_err();
        assert!(
            matches!(error, ManifestError::FrontMatter(FrontMatterError::Yaml(_))),
            "{error}"
        );
        assert_eq!(error.line(), Some(4));

        let error = zero("---\nname: t\ndescription: d\ntools: 3\n---\nBody.\n").unwrap_err();
        assert_eq!(error.line(), Some(4), "{error}");
        assert!(error.to_string().contains("tools"), "{error}");
    }

    #[test]
    fn front_matter_must_open_and_close() {
        assert!(matches!(
            zero("# Title\nname: t\n"),
            Err(ManifestError::FrontMatter(FrontMatterError::Missing))
        ));
        assert!(matches!(
            zero(""),
            Err(ManifestError::FrontMatter(FrontMatterError::Missing))
        ));
        assert!(matches!(
            zero("---\nname: t\ndescription: d\nBody.\n"),
            Err(ManifestError::FrontMatter(FrontMatterError::Unclosed))
        ));
        assert!(matches!(
            zero("---\n---\nBody.\n"),
            Err(ManifestError::MissingName)
        ));
        assert!(matches!(
            zero("---\n- a\n---\nBody.\n"),
            Err(ManifestError::FrontMatter(FrontMatterError::Yaml(_)))
        ));
    }

    #[test]
    fn crlf_and_a_byte_order_mark_are_accepted() {
        let parsed = zero("\u{feff}---\r\nname: t\r\ndescription: d\r\n---\r\nBody.\r\n").unwrap();
        assert_eq!(parsed.specialist.name, "t");
        assert_eq!(parsed.specialist.prompt, "Body.");
    }

    #[test]
    fn isolation_is_none_unless_the_manifest_asks_for_a_worktree() {
        let isolation = |front: &str| {
            zero(&manifest(&format!("name: t\ndescription: d\n{front}")))
                .map(|parsed| parsed.specialist.isolation)
        };
        assert_eq!(isolation("").unwrap(), Isolation::None);
        assert_eq!(isolation("isolation: none").unwrap(), Isolation::None);
        assert_eq!(
            isolation("isolation: worktree").unwrap(),
            Isolation::Worktree
        );
        let error = isolation("isolation: sideways").unwrap_err();
        assert!(error.to_string().contains("worktree"), "{error}");
        let claude = claude(&manifest("name: t\ndescription: d\nisolation: worktree")).unwrap();
        assert_eq!(claude.specialist.isolation, Isolation::Worktree);
    }

    #[test]
    fn verify_names_the_checks_its_work_must_pass_within_the_bounds() {
        let verify = |front: &str| {
            zero(&manifest(&format!("name: t\ndescription: d\n{front}")))
                .map(|parsed| parsed.specialist.verify)
        };
        assert!(verify("").unwrap().is_empty());
        assert_eq!(
            verify("verify: [cargo test, make lint]").unwrap(),
            ["cargo test", "make lint"]
        );
        let error = verify("verify: ['  ']").unwrap_err();
        assert_eq!(error.to_string(), "`verify`: check 1 is empty");
    }

    #[test]
    fn unknown_keys_are_ignored_with_a_notice() {
        let parsed = zero(&manifest("name: t\ndescription: d\ncolor: red\nmodle: x")).unwrap();
        assert_eq!(
            parsed.ignored,
            [
                Ignored::UnknownKey("color".into()),
                Ignored::UnknownKey("modle".into())
            ]
        );
        assert_eq!(parsed.specialist.model, None);
    }

    #[test]
    fn skills_are_names_sorted_and_checked() {
        let skills = |front: &str| {
            zero(&manifest(&format!("name: t\ndescription: d\n{front}")))
                .map(|parsed| parsed.specialist.skills)
        };
        assert_eq!(skills("").unwrap(), Vec::<String>::new());
        assert_eq!(
            skills("skills: notes, api-docs, notes").unwrap(),
            ["api-docs", "notes"]
        );
        assert_eq!(skills("skills: [b, a]").unwrap(), ["a", "b"]);
        assert!(matches!(
            skills("skills: Bad_Name"),
            Err(ManifestError::InvalidSkill(name)) if name == "Bad_Name"
        ));
    }

    #[test]
    fn the_categories_cover_exactly_the_core_tools() {
        assert_eq!(
            tool_names(),
            "apply_patch, bash, edit_file, glob, grep, list_directory, read_file, update_plan, \
             write_file"
        );
    }
}
