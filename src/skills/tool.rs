//! `Skill`: gives the model one skill's instructions, where its other files are, and what its
//! `allowed-tools` mean in this run (nothing beyond what the run already allows).

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Finding, Skill};
use crate::tools::{SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args};

/// The `Skill` tool over the run's skills.
pub(crate) struct SkillTool {
    skills: Arc<Finding>,
}

impl SkillTool {
    /// The tool that loads the skills `skills` found (the ones the run offers).
    pub(crate) fn new(skills: Arc<Finding>) -> Self {
        SkillTool { skills }
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
        Ok(loaded(skill, &|effect| ctx.policy.permits(effect).is_ok()))
    }
}

/// What the model gets for `skill`: where it is, what its tools mean here (`permitted` says
/// whether the run's level allows a side effect), then its instructions.
fn loaded(skill: &Skill, permitted: &dyn Fn(SideEffect) -> bool) -> String {
    let dir = skill.dir.display();
    let mut text = format!(
        "Skill `{}` ({}). Its other files are in {dir}: read them with read_file (for \
         example {dir}/FILE).\n",
        skill.name,
        skill.file().display()
    );
    if !skill.allowed_tools.is_empty() {
        text.push_str(&allowed_tools(&skill.allowed_tools, permitted));
    }
    text.push('\n');
    text.push_str(&skill.body);
    text.push('\n');
    text
}

/// The note on a skill's `allowed-tools`: each entry with the tool of this run it names, and
/// that a skill allows nothing the run does not (naming the tools the level refuses).
fn allowed_tools(entries: &[String], permitted: &dyn Fn(SideEffect) -> bool) -> String {
    let mut named = Vec::new();
    let mut refused = Vec::new();
    for entry in entries {
        let tool = entry.split('(').next().unwrap_or_default().trim();
        let id = ToolId::from_name(tool).or_else(|| ToolId::from_claude_name(tool));
        named.push(match id {
            Some(id) if id.name() == entry => entry.clone(),
            Some(id) => format!("{entry} ({})", id.name()),
            None if tool.starts_with("mcp__") => entry.clone(),
            None => format!("{entry} (zero has no such tool)"),
        });
        let refuses = id.filter(|id| !permitted(id.side_effect()));
        if let Some(name) = refuses.map(ToolId::name).filter(|n| !refused.contains(n)) {
            refused.push(name);
        }
    }
    let mut note = format!(
        "Its allowed-tools name: {}. A skill does not widen what this run allows: every call \
         still passes the run's --auto level, tool lists and rules",
        named.join(", ")
    );
    note.push_str(&match refused.is_empty() {
        true => ".\n".to_string(),
        false => format!(" (this run's level refuses {}).\n", refused.join(", ")),
    });
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
        let text = loaded(&skill(&[]), &read_only);
        assert_eq!(
            text,
            "Skill `notes` (/skills/notes/SKILL.md). Its other files are in /skills/notes: \
             read them with read_file (for example /skills/notes/FILE).\n\n# Steps\nDo it.\n"
        );
    }

    #[test]
    fn allowed_tools_are_named_and_never_widen_the_level() {
        let text = loaded(
            &skill(&[
                "Read",
                "Bash(git log:*)",
                "write_file",
                "WebSearch",
                "mcp__gh__x",
            ]),
            &read_only,
        );
        assert!(
            text.contains(
                "Its allowed-tools name: Read (read_file), Bash(git log:*) (bash), write_file, \
                 WebSearch (zero has no such tool), mcp__gh__x. A skill does not widen what \
                 this run allows: every call still passes the run's --auto level, tool lists \
                 and rules (this run's level refuses bash, write_file).\n"
            ),
            "{text}"
        );
        let allowed = loaded(&skill(&["Read"]), &|_| true);
        assert!(allowed.contains("tool lists and rules.\n"), "{allowed}");
    }
}
