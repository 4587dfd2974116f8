//! One `SKILL.md`, as the Agent Skills format (agentskills.io) and Claude Code write it: YAML
//! front matter, then the instructions.
//!
//! ```markdown
//! ---
//! name: release-notes            # required: its directory's name
//! description: Writes the release notes from the changelog. Use when asked for them.
//! allowed-tools: Read, Grep, Bash(git log:*)   # optional; a YAML list works too
//! ---
//! # Release notes
//! ...
//! ```
//!
//! The format's own rules are checked: `name` is 1 to 64 lowercase letters, digits and `-`,
//! neither starting nor ending with `-` nor holding `--`, and it is the name of the directory
//! the file is in; `description` is not blank and at most 1024 characters. Other keys
//! (`license`, `compatibility`, `metadata`, Claude Code's own) are the skill's business and
//! are not read. A file that breaks a rule is refused with the line the problem is on.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use crate::front_matter::{self, FrontMatterError};

/// The longest description the format allows, in characters.
const DESCRIPTION_MAX: usize = 1024;

/// The longest name the format allows, in characters.
const NAME_MAX: usize = 64;

/// What a valid `SKILL.md` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SkillText {
    /// Its name.
    pub(crate) name: String,
    /// When to use it, for the model deciding whether to load it.
    pub(crate) description: String,
    /// `allowed-tools`, each entry as written (`Read`, `Bash(git log:*)`).
    pub(crate) allowed_tools: Vec<String>,
    /// The instructions: the body, trimmed.
    pub(crate) body: String,
}

/// Why a `SKILL.md` was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SkillError {
    /// The front matter is missing, never ends or is not YAML of the right types.
    #[error(transparent)]
    FrontMatter(#[from] FrontMatterError),
    /// There is no `name`.
    #[error("`name` is missing")]
    MissingName,
    /// The `name` breaks the format's rule.
    #[error(
        "invalid name `{0}`: use 1 to 64 lowercase letters, digits and `-`, not starting or \
         ending with `-` and without `--`"
    )]
    InvalidName(String),
    /// The `name` is not its directory's.
    #[error("the name `{name}` is not the name of its directory `{dir}`; rename one of them")]
    NotItsDirectory {
        /// The name written.
        name: String,
        /// The directory's name.
        dir: String,
    },
    /// There is no `description`, or it is blank.
    #[error(
        "`description` is missing or empty; the model reads it to decide when to use the skill"
    )]
    MissingDescription,
    /// The `description` is longer than the format allows.
    #[error("`description` has {0} characters; the format allows at most 1024")]
    LongDescription(usize),
}

/// A refusal and the line of the file it is about.
#[derive(Debug)]
pub(crate) struct Refused {
    /// The line (1 for what concerns the whole front matter).
    pub(crate) line: usize,
    /// What is wrong.
    pub(crate) error: SkillError,
}

/// Reads the `SKILL.md` text `text` of the skill directory named `dir`.
pub(crate) fn parse(text: &str, dir: &str) -> Result<SkillText, Refused> {
    let at_start = |error: FrontMatterError| Refused {
        line: error.line(),
        error: error.into(),
    };
    let (front, body) = front_matter::split(text).map_err(at_start)?;
    let written: Front = front_matter::parse(front).map_err(at_start)?;
    let refuse = |key: &str, error: SkillError| Refused {
        line: front_matter::key_line(front, key).unwrap_or(1),
        error,
    };
    let name = written
        .name
        .ok_or_else(|| refuse("name", SkillError::MissingName))?;
    if !valid_name(&name) {
        return Err(refuse("name", SkillError::InvalidName(name)));
    }
    if name != dir {
        let dir = dir.to_string();
        return Err(refuse("name", SkillError::NotItsDirectory { name, dir }));
    }
    let description = written.description.as_deref().map(str::trim);
    let description = description
        .filter(|text| !text.is_empty())
        .ok_or_else(|| refuse("description", SkillError::MissingDescription))?;
    let length = description.chars().count();
    if length > DESCRIPTION_MAX {
        return Err(refuse("description", SkillError::LongDescription(length)));
    }
    Ok(SkillText {
        name,
        description: description.to_string(),
        allowed_tools: written
            .allowed_tools
            .map(|tools| tools.0)
            .unwrap_or_default(),
        body: body.trim().to_string(),
    })
}

/// The format's rule for a name (see the module documentation).
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=NAME_MAX).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The front matter as written; the keys zero does not read are left alone.
#[derive(Debug, Default, Deserialize)]
struct Front {
    name: Option<String>,
    description: Option<String>,
    #[serde(rename = "allowed-tools")]
    allowed_tools: Option<ToolEntries>,
}

/// `allowed-tools`: a YAML list, or one string of entries separated by commas or spaces
/// (Claude Code writes the one, the Agent Skills format the other). A space inside an entry's
/// parentheses (`Bash(git log:*)`) does not separate.
#[derive(Debug)]
struct ToolEntries(Vec<String>);

impl<'de> Deserialize<'de> for ToolEntries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EntriesVisitor)
    }
}

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = ToolEntries;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of tools, or a string of tools separated by commas or spaces")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<ToolEntries, E> {
        Ok(ToolEntries(entries(text)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<ToolEntries, A::Error> {
        let mut all = Vec::new();
        while let Some(item) = items.next_element::<String>()? {
            all.extend(entries(&item));
        }
        Ok(ToolEntries(all))
    }
}

/// The entries of one `allowed-tools` string: split at commas and white space outside
/// parentheses.
fn entries(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            found.extend((!current.is_empty()).then(|| std::mem::take(&mut current)));
        } else {
            current.push(c);
        }
    }
    found.extend((!current.is_empty()).then_some(current));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(front: &str) -> Result<SkillText, Refused> {
        parse(&format!("---\n{front}\n---\n\n# Steps\nDo it.\n"), "notes")
    }

    #[test]
    fn a_valid_skill_has_its_name_description_tools_and_body() {
        let text = skill(
            "name: notes\ndescription: >\n  Writes notes.\nallowed-tools: Read, Grep \
             Bash(git log:*)\nlicense: MIT\nmetadata:\n  version: \"1\"",
        )
        .unwrap();
        assert_eq!(
            text,
            SkillText {
                name: "notes".into(),
                description: "Writes notes.".into(),
                allowed_tools: vec!["Read".into(), "Grep".into(), "Bash(git log:*)".into()],
                body: "# Steps\nDo it.".into(),
            }
        );
        let listed = skill("name: notes\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(ls)");
        assert_eq!(listed.unwrap().allowed_tools, ["Read", "Bash(ls)"]);
    }

    #[test]
    fn names_follow_the_format() {
        for good in ["a", "pdf", "x86-64", "1password", &"a".repeat(64)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a--b",
            "Pdf",
            "a_b",
            "a b",
            "ü",
            &"a".repeat(65),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn each_refusal_names_its_line() {
        let cases: [(&str, usize, &str); 6] = [
            ("description: d", 1, "`name` is missing"),
            ("description: d\nname: Notes", 3, "invalid name `Notes`"),
            (
                "name: other\ndescription: d",
                2,
                "not the name of its directory `notes`",
            ),
            ("name: notes", 1, "`description` is missing"),
            (
                "name: notes\n\ndescription: \"  \"",
                4,
                "`description` is missing",
            ),
            (
                "name: notes\ndescription: d\n  bad: indent",
                4,
                "invalid front matter",
            ),
        ];
        for (front, line, says) in cases {
            let refused = skill(front).unwrap_err();
            assert_eq!(refused.line, line, "{front}");
            assert!(
                refused.error.to_string().contains(says),
                "{}",
                refused.error
            );
        }
        let long = skill(&format!("name: notes\ndescription: {}", "d".repeat(1025)));
        assert!(matches!(
            long.unwrap_err().error,
            SkillError::LongDescription(1025)
        ));
        let unopened = parse("# Notes\n", "notes").unwrap_err();
        assert_eq!(unopened.line, 1);
        assert!(unopened.error.to_string().starts_with("no front matter"));
    }
}
