//! Agent Skills: directories of instructions (`SKILL.md`) and the files they refer to, which
//! the model loads when a task calls for one (the Agent Skills format, as Claude Code reads
//! it).
//!
//! Progressive disclosure, in three steps: the system prompt lists each skill's name and
//! description (`prompt`, bounded); the `Skill` tool gives the model a skill's instructions
//! when it asks for them (`tool`); and the skill's other files are read with `read_file`, the
//! skill's directory readable although it may lie outside the workspace (`exec` adds it to the
//! policy's read-only roots).
//!
//! A skill never widens what a run may do. Its `allowed-tools` (Claude Code's pre-approval)
//! grants nothing here: a headless run has nobody to ask, so every call still passes the run's
//! `--auto` level, tool lists and rules, and once the skill is loaded the list narrows the rest
//! of the run (`rules::Narrowing`); the `Skill` result says what it leaves and which of those
//! tools the level refuses.
//!
//! Where skills come from, and which one wins a name, is `discovery`'s; what a `SKILL.md` must
//! say is `skill_md`'s; `finding` runs discovery beside the run's other start-up work.

mod discovery;
mod finding;
mod prompt;
mod skill_md;
mod tool;

use std::path::PathBuf;

pub(crate) use discovery::SearchPaths;
pub(crate) use finding::Finding;
pub(crate) use prompt::section;
pub(crate) use skill_md::valid_name;
pub(crate) use tool::SkillTool;

/// One skill that loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skill {
    /// Its name (its directory's).
    pub(crate) name: String,
    /// When to use it, for the model deciding whether to load it.
    pub(crate) description: String,
    /// `allowed-tools`, each entry as written.
    pub(crate) allowed_tools: Vec<String>,
    /// The instructions the `Skill` tool gives the model.
    pub(crate) body: String,
    /// Its directory, as found.
    pub(crate) dir: PathBuf,
    /// Which kind of directory it was found in.
    pub(crate) origin: Origin,
}

impl Skill {
    /// Its `SKILL.md`.
    pub(crate) fn file(&self) -> PathBuf {
        self.dir.join(SKILL_FILE)
    }
}

/// The name of the file that makes a directory a skill.
const SKILL_FILE: &str = "SKILL.md";

/// Where a skill was found, which decides its precedence and whether its directory needs to
/// be made readable (the workspace's already is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Origin {
    /// A directory the caller named (`--skills-dir`).
    Given,
    /// The workspace's `.zero/skills`, `.agents/skills` or `.claude/skills`.
    Workspace,
    /// The user's `$XDG_CONFIG_HOME/zero/skills`.
    User,
}

/// The directories of `skills` that a confined run's tools could not read without being
/// told: those outside the workspace, canonical (so a link to them resolves inside), for the
/// policy's read-only roots.
pub(crate) fn read_roots(skills: &[Skill]) -> Vec<PathBuf> {
    skills
        .iter()
        .filter(|skill| skill.origin != Origin::Workspace)
        .filter_map(|skill| skill.dir.canonicalize().ok())
        .collect()
}
