//! The catalog of zero's own tools: one entry per tool, and every list of tool names derived
//! from it.
//!
//! A tool's name, its side effect, the Claude Code names a manifest may call it by, whether the
//! compact prompt leaves it out and whether a specialist may have it are written once, in
//! [`ToolId::spec`]. The registry, the specialists' categories and tool flags, the compact
//! prompt's tool list and every lookup of a particular tool go through [`ToolId`], so adding a
//! tool is one entry here, and the compiler points at every `match` that must say what the new
//! tool is (the registry's among them).
//!
//! The catalog names the task tools (`Task`, `TaskOutput`, `TaskStop`) too, though `tasks`
//! implements them: naming a tool needs nothing of its implementation, and `tasks` uses
//! `tools`, never the reverse. MCP tools are not here: their names come from their servers.

use super::SideEffect;

/// Declares [`ToolId`] and [`ToolId::ALL`] from one list, so no tool can be missing from
/// `ALL`.
macro_rules! tool_ids {
    ($($(#[doc = $doc:literal])* $id:ident,)*) => {
        /// One of zero's own tools, by identity: what code names a particular tool by, instead
        /// of a string literal that nothing checks.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum ToolId {
            $($(#[doc = $doc])* $id,)*
        }

        impl ToolId {
            /// Every tool zero has: its own, sorted by name, then the task tools, then `Skill`.
            pub(crate) const ALL: &'static [ToolId] = &[$(ToolId::$id,)*];
        }
    };
}

tool_ids! {
    /// `apply_patch`: a multi-file patch.
    ApplyPatch,
    /// `bash`: a command, in the foreground or as a background task.
    Bash,
    /// `edit_file`: one exact replacement in a file.
    EditFile,
    /// `glob`: files by path pattern.
    Glob,
    /// `grep`: file contents by regular expression.
    Grep,
    /// `list_directory`: a directory's entries.
    ListDirectory,
    /// `read_file`: numbered lines of a text file.
    ReadFile,
    /// `update_plan`: the run's plan.
    UpdatePlan,
    /// `web_fetch`: one web page, as text (offered only when the caller asks for it).
    WebFetch,
    /// `write_file`: a whole file, created or replaced.
    WriteFile,
    /// `Task`: launches a specialist.
    Task,
    /// `TaskOutput`: a background task's state and output.
    TaskOutput,
    /// `TaskStop`: stops a background task.
    TaskStop,
    /// `Skill`: loads a skill's instructions (offered when the run has skills).
    Skill,
}

/// Whether a specialist may have a tool, and how it gets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ForSpecialists {
    /// A manifest grants it, by its name or through a category.
    Manifest,
    /// No manifest may name it; a specialist that runs commands gets it to follow and stop
    /// the background commands it starts.
    WithShell,
    /// No manifest may name it; a specialist whose manifest lists skills (`skills:`) gets it
    /// to load them.
    WithSkills,
    /// Never: a specialist launches no specialists of its own, which keeps the process tree
    /// one level deep and bounded.
    Never,
}

/// What the catalog says about one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ToolSpec {
    /// The name the model calls it by, and the flags and manifests name it by.
    pub(crate) name: &'static str,
    /// Its effect on the world, which decides the `--auto` level it needs.
    pub(crate) side_effect: SideEffect,
    /// The Claude Code tool names a `.claude/agents` file grants it by.
    pub(crate) claude_names: &'static [&'static str],
    /// Whether the compact prompt (`--provider local`) leaves it out: a tool for work a small
    /// model does not do well costs its schema, read again at every turn.
    pub(crate) compact_leaves_out: bool,
    /// Whether a specialist may have it.
    pub(crate) specialists: ForSpecialists,
}

impl ToolId {
    /// The catalog's entry for this tool.
    // One entry per tool, five lines each: the catalog reads as one table, and split it would
    // no longer be the one place a tool is described.
    #[allow(clippy::too_many_lines)]
    pub(crate) const fn spec(self) -> ToolSpec {
        use ForSpecialists::{Manifest, Never, WithShell, WithSkills};
        match self {
            ToolId::ReadFile => ToolSpec {
                name: "read_file",
                side_effect: SideEffect::Read,
                claude_names: &["Read"],
                compact_leaves_out: false,
                specialists: Manifest,
            },
            ToolId::ListDirectory => ToolSpec {
                name: "list_directory",
                side_effect: SideEffect::Read,
                claude_names: &["LS"],
                compact_leaves_out: false,
                specialists: Manifest,
            },
            ToolId::Glob => ToolSpec {
                name: "glob",
                side_effect: SideEffect::Read,
                claude_names: &["Glob"],
                compact_leaves_out: false,
                specialists: Manifest,
            },
            // A 1.5B model reaches for grep instead of reading ("is there a bug?" becomes a
            // search for the word "bug").
            ToolId::Grep => ToolSpec {
                name: "grep",
                side_effect: SideEffect::Read,
                claude_names: &["Grep"],
                compact_leaves_out: true,
                specialists: Manifest,
            },
            ToolId::WriteFile => ToolSpec {
                name: "write_file",
                side_effect: SideEffect::Write,
                claude_names: &["Write"],
                compact_leaves_out: false,
                specialists: Manifest,
            },
            ToolId::EditFile => ToolSpec {
                name: "edit_file",
                side_effect: SideEffect::Write,
                claude_names: &["Edit", "MultiEdit"],
                compact_leaves_out: false,
                specialists: Manifest,
            },
            // Multi-file patches, plans, specialists and background tasks are work a small
            // model does not do well: about 1,500 tokens of schema for nothing.
            ToolId::ApplyPatch => ToolSpec {
                name: "apply_patch",
                side_effect: SideEffect::Write,
                claude_names: &[],
                compact_leaves_out: true,
                specialists: Manifest,
            },
            ToolId::Bash => ToolSpec {
                name: "bash",
                side_effect: SideEffect::Shell,
                claude_names: &["Bash"],
                compact_leaves_out: false,
                specialists: Manifest,
            },
            ToolId::UpdatePlan => ToolSpec {
                name: "update_plan",
                side_effect: SideEffect::None,
                claude_names: &["TodoWrite"],
                compact_leaves_out: true,
                specialists: Manifest,
            },
            // Fetching the web is the caller's choice for the run, not a manifest's.
            ToolId::WebFetch => ToolSpec {
                name: "web_fetch",
                side_effect: SideEffect::Read,
                claude_names: &["WebFetch"],
                compact_leaves_out: false,
                specialists: Never,
            },
            // The compact prompt lists the skills too, so it keeps the tool that loads them.
            ToolId::Skill => ToolSpec {
                name: "Skill",
                side_effect: SideEffect::Read,
                claude_names: &["Skill"],
                compact_leaves_out: false,
                specialists: WithSkills,
            },
            ToolId::Task => ToolSpec {
                name: "Task",
                side_effect: SideEffect::Shell,
                claude_names: &[],
                compact_leaves_out: true,
                specialists: Never,
            },
            ToolId::TaskOutput => ToolSpec {
                name: "TaskOutput",
                side_effect: SideEffect::Read,
                claude_names: &[],
                compact_leaves_out: true,
                specialists: WithShell,
            },
            ToolId::TaskStop => ToolSpec {
                name: "TaskStop",
                side_effect: SideEffect::Shell,
                claude_names: &[],
                compact_leaves_out: true,
                specialists: WithShell,
            },
        }
    }

    /// The name the model calls it by.
    pub(crate) const fn name(self) -> &'static str {
        self.spec().name
    }

    /// Its effect on the world.
    pub(crate) const fn side_effect(self) -> SideEffect {
        self.spec().side_effect
    }

    /// Whether a specialist may have it, and how.
    pub(crate) const fn specialists(self) -> ForSpecialists {
        self.spec().specialists
    }

    /// The tool called `name`, if zero has one of that name.
    pub(crate) fn from_name(name: &str) -> Option<ToolId> {
        ToolId::ALL.iter().copied().find(|id| id.name() == name)
    }

    /// The tool a Claude Code tool name stands for, if zero has one.
    pub(crate) fn from_claude_name(name: &str) -> Option<ToolId> {
        ToolId::ALL
            .iter()
            .copied()
            .find(|id| id.spec().claude_names.contains(&name))
    }

    /// The tools whose [`ForSpecialists`] is `which`, in the catalog's order.
    pub(crate) fn for_specialists(which: ForSpecialists) -> impl Iterator<Item = ToolId> {
        ToolId::ALL
            .iter()
            .copied()
            .filter(move |id| id.specialists() == which)
    }

    /// The tools the compact prompt leaves out.
    pub(crate) fn compact_leaves_out() -> impl Iterator<Item = ToolId> {
        ToolId::ALL
            .iter()
            .copied()
            .filter(|id| id.spec().compact_leaves_out)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_tool_has_a_name_of_its_own_that_finds_it() {
        let names: HashSet<&str> = ToolId::ALL.iter().map(|id| id.name()).collect();
        assert_eq!(names.len(), ToolId::ALL.len());
        for id in ToolId::ALL {
            assert_eq!(ToolId::from_name(id.name()), Some(*id));
        }
        assert_eq!(ToolId::from_name("mcp__git__log"), None);
        assert_eq!(ToolId::from_name("Read"), None);
    }

    #[test]
    fn the_claude_names_round_trip() {
        let mut seen = HashSet::new();
        for id in ToolId::ALL {
            for claude in id.spec().claude_names {
                assert!(seen.insert(*claude), "{claude} maps to two tools");
                assert_eq!(ToolId::from_claude_name(claude), Some(*id));
            }
        }
        assert_eq!(ToolId::from_claude_name("WebFetch"), Some(ToolId::WebFetch));
        assert_eq!(ToolId::from_claude_name("WebSearch"), None);
        assert_eq!(ToolId::from_claude_name("read_file"), None);
    }

    #[test]
    fn the_compact_prompt_leaves_out_the_task_tools_patches_plans_and_grep() {
        let names: Vec<&str> = ToolId::compact_leaves_out().map(ToolId::name).collect();
        assert_eq!(
            names,
            [
                "apply_patch",
                "grep",
                "update_plan",
                "Task",
                "TaskOutput",
                "TaskStop"
            ]
        );
    }

    #[test]
    fn only_the_task_tools_skill_and_web_fetch_are_kept_from_manifests() {
        let names = |which| {
            ToolId::for_specialists(which)
                .map(ToolId::name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(ForSpecialists::Never), ["web_fetch", "Task"]);
        assert_eq!(names(ForSpecialists::WithShell), ["TaskOutput", "TaskStop"]);
        assert_eq!(names(ForSpecialists::WithSkills), ["Skill"]);
        assert_eq!(names(ForSpecialists::Manifest).len(), ToolId::ALL.len() - 5);
    }
}
