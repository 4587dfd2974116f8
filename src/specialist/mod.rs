//! Specialists: named sub-agents the `Task` tool can launch, each a system prompt plus the
//! tools it may use.
//!
//! A specialist is defined by a manifest — a markdown file with YAML front matter (see
//! [`manifest`] for the format and `docs/SPECIALISTS.md` for the user's view). Three are built
//! in; users and projects add their own or replace the built-in ones by name, and Claude Code
//! agent files are read too, so agents written for Claude Code work here unchanged.
//!
//! Discovery ([`discover`]) reads the file system and so runs only when something asks for the
//! specialists (`--list-specialists`, a `Task` call); a plain run never pays for it.

mod discovery;
pub mod manifest;
mod task_tool;

use std::fmt;
use std::path::PathBuf;

pub use discovery::{Discovery, SearchPaths, Warning, discover};
pub use task_tool::{ChildEnv, PARENT_RUN_VAR, TaskTool, is_child, take_handed_key};

/// A sub-agent that can be launched by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specialist {
    /// Its unique name: `^[a-z][a-z0-9-]{0,63}$`.
    pub name: String,
    /// When to use it, written for the model that decides whether to launch it.
    pub description: String,
    /// The zero tools it may use, sorted and without duplicates.
    pub tools: Vec<&'static str>,
    /// The model it runs on; `None` means the model of the run that launches it.
    pub model: Option<String>,
    /// Its system prompt: the manifest's body, trimmed.
    pub prompt: String,
    /// Where it was defined, so a user can tell which of several same-named manifests won.
    pub source: Source,
}

/// Where a specialist's manifest came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Compiled into zero.
    Builtin,
    /// A manifest file on disk.
    File(PathBuf),
}

impl fmt::Display for Source {
    /// `builtin`, or the manifest's path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("builtin"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}
