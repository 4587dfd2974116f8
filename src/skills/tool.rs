//! `Skill`: gives the model one skill's instructions and where its other files are, and puts
//! the skill in use: its `allowed-tools` narrow the rest of the run (`rules::Narrowing`),
//! which the result says, naming the tools the run's level refuses anyway.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Finding, Skill};
use crate::rules::Narrowing;
use crate::tools::{SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args};

/// The `Skill` tool over the run's skills.
pub(crate) struct SkillTool {
    skills: Arc<Finding>,
    /// The run's skills in use, which a loaded skill joins.
    narrowing: Arc<Narrowing>,
}

impl SkillTool {
    /// The tool that loads the skills `skills` found (the ones the run offers), each one
    /// loaded joining `narrowing`.
    pub(crate) fn new(skills: Arc<Finding>, narrowing: Arc<Narrowing>) -> Self {
        SkillTool { skills, narrowing }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillArgs {
    name: String,
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &'static str {
        ToolId::Skill.name()
    }

    fn description(&self) -> &'static str {
        "Load a skill: its instructions for a particular kind of task, and the directory of \
         the files it refers to (read them with read_file). The skills are listed in the \
         system prompt with when to use each; load one before you start a task that matches \
         it, then follow it."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, as listed."}
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::Skill.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: SkillArgs = parse_args(args)?;
        let skills = self.skills.skills();
        let Some(skill) = skills.iter().find(|skill| skill.name == args.name) else {
            let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
            return Err(ToolError::Failed(format!(
                "no skill `{}`; the skills are: {}",
                args.name,
                names.join(", ")
            )));
        };
        let unread = self.narrowing.narrow(&skill.name, &skill.allowed_tools);
        Ok(loaded(skill, &unread, &|effect| {
            ctx.policy.permits(effect).is_ok()
        }))
    }
}

/// What the model gets for `skill`: where it is, what its `allowed-tools` leave the run
/// (`unread`: the entries that admit nothing; `permitted`: whether the run's level allows a
/// side effect), then its instructions.
fn loaded(skill: &Skill, unread: &[String], permitted: &dyn Fn(SideEffect) -> bool) -> String {
    let dir = skill.dir.display();
    let mut text = format!(
        "Skill `{}` ({}). Its other files are in {dir}: read them with read_file (for \
         example {dir}/FILE).\n",
        skill.name,
        skill.file().display()
    );
    if !skill.allowed_tools.is_empty() {
        text.push_str(&allowed_tools(&skill.allowed_tools, unread, permitted));
    }
    text.push('\n');
    text.push_str(&skill.body);
    text.push('\n');
    text
}

/// The note on a skill's `allowed-tools`: the tools of this run each entry names, that every
/// other call is refused from now on, the tools the level refuses anyway, and the entries
/// that admit nothing.
fn allowed_tools(
    entries: &[String],
    unread: &[String],
    permitted: &dyn Fn(SideEffect) -> bool,
) -> String {
    let mut named = Vec::new();
    let mut refused = Vec::new();
    for entry in entries {
        let tool = entry.split('(').next().unwrap_or_default().trim();
        let Some(id) = ToolId::from_name(tool).or_else(|| ToolId::from_claude_name(tool)) else {
            if tool.starts_with("mcp__") {
                named.push(entry.clone());
            }
            continue;
        };
        named.push(match id.name() == tool {
            true => entry.clone(),
            false => format!("{entry} ({})", id.name()),
        });
        if !permitted(id.side_effect()) && !refused.contains(&id.name()) {
            refused.push(id.name());
        }
    }
    let mut note = match named.is_empty() {
        true => "It is in use for the rest of this run, and its allowed-tools name no tool \
                 zero has: every call but Skill and update_plan is refused"
            .to_string(),
        false => format!(
            "It is in use for the rest of this run, which may now call only the tools its \
             allowed-tools name: {}. Every other call is refused (Skill and update_plan \
             stay), and these still pass the run's --auto level, tool lists and rules",
            named.join(", ")
        ),
    };
    if !refused.is_empty() {
        note.push_str(&format!(
            " (this run's level refuses {})",
            refused.join(", ")
        ));
    }
    note.push_str(".\n");
    if !unread.is_empty() {
        note.push_str(&format!(
            "Entries that admit nothing: {}.\n",
            unread.join("; ")
        ));
    }
    note
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::skills::Origin;

    fn skill(allowed_tools: &[&str]) -> Skill {
        Skill {
            name: "notes".into(),
            description: "Writes notes.".into(),
            allowed_tools: allowed_tools.iter().map(|t| t.to_string()).collect(),
            body: "# Steps\nDo it.".into(),
            dir: PathBuf::from("/skills/notes"),
            origin: Origin::User,
        }
    }

    fn read_only(effect: SideEffect) -> bool {
        matches!(effect, SideEffect::Read | SideEffect::None)
    }

    #[test]
    fn a_loaded_skill_says_where_it_is_then_gives_its_instructions() {
        let text = loaded(&skill(&[]), &[], &read_only);
        assert_eq!(
            text,
            "Skill `notes` (/skills/notes/SKILL.md). Its other files are in /skills/notes: \
             read them with read_file (for example /skills/notes/FILE).\n\n# Steps\nDo it.\n"
        );
    }

    #[test]
    fn allowed_tools_are_named_with_what_they_leave_the_run() {
        let entries = [
            "Read",
            "Bash(git log:*)",
            "write_file",
            "WebSearch",
            "mcp__gh__x",
        ];
        let unread = ["WebSearch (zero has no tool `WebSearch`)".to_string()];
        let text = loaded(&skill(&entries), &unread, &read_only);
        assert!(
            text.contains(
                "It is in use for the rest of this run, which may now call only the tools its \
                 allowed-tools name: Read (read_file), Bash(git log:*) (bash), write_file, \
                 mcp__gh__x. Every other call is refused (Skill and update_plan stay), and \
                 these still pass the run's --auto level, tool lists and rules (this run's \
                 level refuses bash, write_file).\nEntries that admit nothing: WebSearch \
                 (zero has no tool `WebSearch`).\n"
            ),
            "{text}"
        );
        let allowed = loaded(&skill(&["Read"]), &[], &|_| true);
        assert!(
            allowed.contains("tool lists and rules.\n\n# Steps"),
            "{allowed}"
        );
        let none = loaded(&skill(&["WebSearch"]), &unread, &|_| true);
        assert!(
            none.contains("name no tool zero has: every call but Skill"),
            "{none}"
        );
    }
}
