//! Start-up with 100 skills in the workspace, against none: launch → the first request, which
//! lists them in its system prompt (each `SKILL.md` found, read beneath the workspace and
//! checked before the run starts). Target: no more than 1 ms over none.

use std::fs;
use std::path::Path;

use anyhow::Result;

use super::Bench;
use crate::table::Row;

/// How many skills the workspace holds.
const SKILLS: usize = 100;

impl Bench<'_> {
    /// The skills rows (see the module documentation).
    pub(super) fn skills(&self, rows: &mut Vec<Row>) -> Result<()> {
        let none = self.temp_dir()?;
        let hundred = self.temp_dir()?;
        write_skills(hundred.path())?;
        let (bare, _, _) = self.first_request(
            "exec, no skills",
            &["exec", "go"],
            none.path(),
            "done",
            |request| !request.raw_body.contains("Skills:"),
        )?;
        let last = format!("skill-{:03}", SKILLS - 1);
        let (mut skilled, _, _) = self.first_request(
            "exec, 100 skills in the workspace",
            &["exec", "go"],
            hundred.path(),
            "done",
            |request| request.raw_body.contains(&last),
        )?;
        skilled.note("target: ≤ 1 ms over no skills");
        rows.extend([bare, skilled]);
        Ok(())
    }
}

/// [`SKILLS`] skills in `workspace/.agents/skills`, each a `SKILL.md` of a few lines.
fn write_skills(workspace: &Path) -> Result<()> {
    for n in 0..SKILLS {
        let dir = workspace.join(format!(".agents/skills/skill-{n:03}"));
        fs::create_dir_all(&dir)?;
        let text = format!(
            "---\nname: skill-{n:03}\ndescription: Does task number {n} of the project's \
             release work. Use when asked for step {n}.\nallowed-tools: Read, Grep\n---\n\
             # Steps\n\n1. Read the changelog.\n2. Do step {n}.\n"
        );
        fs::write(dir.join("SKILL.md"), text)?;
    }
    Ok(())
}
