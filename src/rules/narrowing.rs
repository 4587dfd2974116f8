//! The skills in use and what their `allowed-tools` leave a run: once the model loads a skill
//! that lists tools, every later call must be one of them as well as pass the caller's rules.
//!
//! Claude Code reads `allowed-tools` as a pre-approval: tools it may use without asking. A
//! headless run has nobody to ask, so a pre-approval would be a widening, which a file the
//! workspace holds must never get. Here the list is a limit instead: the skill's author says
//! what the task needs, and the run holds the model to it. Each entry is a rule in either
//! syntax (`Read`, `Bash(git log:*)`, `write_file(docs/**)`), read as an allow rule of a
//! *closed* set (`RuleSet::closed`): a tool no entry names is refused, and a `bash` line must
//! be known, each of its commands matched and each file it writes admitted, as under the
//! caller's allow rules. Two skills in use narrow twice: a call must be admitted by both.
//! An entry zero cannot read admits nothing (the `Skill` result says so).
//!
//! Two tools stay: `Skill` itself (loading another skill only narrows further) and those that
//! touch nothing outside the run (`update_plan`). The limit lasts for the rest of the run and
//! is handed to every specialist launched after it (`InUse`, the child's `--skill-in-use`). A
//! run resumed from a session starts without it: the skill is loaded again when needed.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::Deserialize;
use serde_json::{Value, json};

use super::rule::{Effect, Origin, Rule};
use super::{Denial, RuleSet, Verdict};
use crate::tools::{SideEffect, ToolId};

/// A skill in use, as a specialist is handed it: its name and its `allowed-tools` as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InUse {
    /// The skill's name.
    pub(crate) skill: String,
    /// Its `allowed-tools`, each entry as written.
    pub(crate) allowed_tools: Vec<String>,
}

impl InUse {
    /// It as the child's `--skill-in-use` takes it: `{"skill": NAME, "allowed_tools": [...]}`.
    pub(crate) fn flag_value(&self) -> String {
        json!({"skill": self.skill, "allowed_tools": self.allowed_tools}).to_string()
    }
}

/// The skills in use in one run that narrow it, each with its entries as a closed rule set.
/// `Default` is a run with no skill in use.
#[derive(Debug, Default)]
pub struct Narrowing {
    /// The workspace the entries' path patterns are relative to.
    workspace: PathBuf,
    /// Each skill in use that lists tools, in the order loaded.
    limits: Mutex<Vec<Limit>>,
}

/// One skill's limit.
#[derive(Debug)]
struct Limit {
    /// The skill and its entries.
    in_use: InUse,
    /// The entries zero reads, as a closed set of allow rules.
    rules: RuleSet,
}

impl Narrowing {
    /// The narrowing of a run in `workspace` that starts with the skills `handed` in use (a
    /// specialist's, launched while its parent's were).
    pub(crate) fn new(workspace: &Path, handed: &[InUse]) -> Narrowing {
        let narrowing = Narrowing {
            workspace: workspace.to_path_buf(),
            limits: Mutex::new(Vec::new()),
        };
        for in_use in handed {
            narrowing.narrow(&in_use.skill, &in_use.allowed_tools);
        }
        narrowing
    }

    /// Puts the skill `skill` in use with its `allowed-tools` `entries` (nothing changes for a
    /// skill without any, or one already in use). Returns each entry that admits nothing,
    /// with why.
    pub(crate) fn narrow(&self, skill: &str, entries: &[String]) -> Vec<String> {
        let mut unread = Vec::new();
        let mut rules = Vec::new();
        for entry in entries {
            let origin = Origin::Skill(skill.to_owned());
            match Rule::parse(entry, Effect::Allow, origin, &self.workspace, None) {
                Ok(rule) => rules.push(rule),
                Err(why) => unread.push(format!("{entry} ({why})")),
            }
        }
        let mut limits = self.limits();
        if entries.is_empty() || limits.iter().any(|limit| limit.in_use.skill == skill) {
            return unread;
        }
        limits.push(Limit {
            in_use: InUse {
                skill: skill.to_owned(),
                allowed_tools: entries.to_vec(),
            },
            rules: RuleSet::closed(rules, &self.workspace),
        });
        unread
    }

    /// The skills in use that narrow the run, for a specialist launched now.
    pub(crate) fn in_use(&self) -> Vec<InUse> {
        self.limits()
            .iter()
            .map(|limit| limit.in_use.clone())
            .collect()
    }

    /// What the skills in use say about a call of `tool` with `args`: refused when one of them
    /// does not admit it.
    pub(crate) fn check(&self, tool: &str, args: &Value) -> Verdict {
        if stays(tool) {
            return Verdict::Allow;
        }
        for limit in self.limits().iter() {
            if let Verdict::Deny(denial) = limit.rules.check(tool, args) {
                return Verdict::Deny(Denial {
                    reason: format!(
                        "the skill `{}` is in use and narrows this run to its allowed-tools \
                         ({}): {}; do this with those tools, or not at all",
                        limit.in_use.skill,
                        limit.in_use.allowed_tools.join(", "),
                        denial.reason
                    ),
                    matched: denial.matched,
                });
            }
        }
        Verdict::Allow
    }

    fn limits(&self) -> std::sync::MutexGuard<'_, Vec<Limit>> {
        self.limits.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `tool` stays whatever a skill lists: `Skill` (another skill only narrows further)
/// and the tools that touch nothing outside the run.
fn stays(tool: &str) -> bool {
    ToolId::from_name(tool)
        .is_some_and(|id| id == ToolId::Skill || id.side_effect() == SideEffect::None)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn narrowed(entries: &[&str]) -> Narrowing {
        let narrowing = Narrowing::new(Path::new("/ws"), &[]);
        let entries: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
        assert!(narrowing.narrow("notes", &entries).is_empty());
        narrowing
    }

    fn allows(narrowing: &Narrowing, tool: &str, args: Value) -> bool {
        narrowing.check(tool, &args) == Verdict::Allow
    }

    #[test]
    fn nothing_in_use_narrows_nothing() {
        let narrowing = Narrowing::new(Path::new("/ws"), &[]);
        assert!(allows(&narrowing, "bash", json!({"command": "rm -rf /"})));
        assert!(narrowing.narrow("plain", &[]).is_empty());
        assert!(allows(&narrowing, "write_file", json!({"path": "a"})));
        assert!(narrowing.in_use().is_empty());
    }

    #[test]
    fn a_tool_the_skill_does_not_list_is_refused() {
        let narrowing = narrowed(&["Read", "Bash(git log:*)"]);
        assert!(allows(&narrowing, "read_file", json!({"path": "src/a.rs"})));
        assert!(allows(&narrowing, "grep", json!({"pattern": "x"})));
        assert!(allows(&narrowing, "bash", json!({"command": "git log -3"})));
        for (tool, args) in [
            ("write_file", json!({"path": "a", "content": ""})),
            ("edit_file", json!({"path": "a"})),
            ("bash", json!({"command": "git push origin main"})),
            ("bash", json!({"command": "git log && rm -rf x"})),
            ("bash", json!({"command": "eval \"$X\""})),
            ("TaskStop", json!({"task_id": "t1"})),
            ("mcp__github__create_issue", json!({})),
            ("web_fetch", json!({"url": "https://docs.rs/"})),
        ] {
            let Verdict::Deny(denial) = narrowing.check(tool, &args) else {
                panic!("{tool} {args} passed");
            };
            assert!(
                denial.reason.starts_with(
                    "the skill `notes` is in use and narrows this run to its allowed-tools \
                     (Read, Bash(git log:*)): "
                ),
                "{}",
                denial.reason
            );
            assert!(!denial.reason.contains("--allow"), "{}", denial.reason);
        }
    }

    #[test]
    fn a_line_may_not_write_a_file_the_skill_does_not_admit() {
        let narrowing = narrowed(&["Bash(git log:*)"]);
        assert!(allows(
            &narrowing,
            "bash",
            json!({"command": "git log 2>/dev/null"})
        ));
        let Verdict::Deny(denial) =
            narrowing.check("bash", &json!({"command": "git log > notes.txt"}))
        else {
            panic!("the write passed");
        };
        assert!(
            denial.reason.contains("write_file is not among them"),
            "{}",
            denial.reason
        );
        let writes = narrowed(&["Bash(git log:*)", "Write(notes/**)"]);
        assert!(allows(
            &writes,
            "bash",
            json!({"command": "git log > notes/log"})
        ));
        assert!(!allows(
            &writes,
            "bash",
            json!({"command": "git log > src/log"})
        ));
    }

    #[test]
    fn skill_and_the_plan_stay() {
        let narrowing = narrowed(&["Read"]);
        assert!(allows(&narrowing, "Skill", json!({"name": "other"})));
        assert!(allows(&narrowing, "update_plan", json!({"plan": []})));
    }

    #[test]
    fn two_skills_in_use_narrow_twice_and_an_unread_entry_admits_nothing() {
        let narrowing = narrowed(&["Read", "Bash"]);
        let unread = narrowing.narrow("second", &["Read".to_string(), "NotebookEdit".to_string()]);
        assert_eq!(unread, ["NotebookEdit (zero has no tool `NotebookEdit`)"]);
        assert!(allows(&narrowing, "read_file", json!({"path": "a"})));
        assert!(!allows(&narrowing, "bash", json!({"command": "ls"})));
        let names: Vec<String> = narrowing.in_use().into_iter().map(|u| u.skill).collect();
        assert_eq!(names, ["notes", "second"]);
        // Loading a skill again changes nothing.
        assert!(narrowing.narrow("notes", &["Write".to_string()]).is_empty());
        assert_eq!(narrowing.in_use().len(), 2);
    }

    #[test]
    fn a_specialist_starts_with_what_its_parent_had_in_use() {
        let parent = narrowed(&["Read"]);
        let child = Narrowing::new(Path::new("/ws"), &parent.in_use());
        assert!(allows(&child, "read_file", json!({"path": "a"})));
        assert!(!allows(&child, "bash", json!({"command": "ls"})));
    }
}
