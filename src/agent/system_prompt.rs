//! The system prompt: who the agent is, where it works, how to use its tools, and the project's
//! own guidance (`AGENTS.md` / `ZERO.md`) from the git root down to the workspace.

use std::path::{Path, PathBuf};

use crate::structured::OutputSchema;
use crate::tools::policy::Autonomy;
use crate::tools::{Policy, ToolId, workspace_files};

/// Project guidance files, read in this order in each directory.
const GUIDANCE_FILES: [&str; 2] = ["AGENTS.md", "ZERO.md"];

/// The most guidance text included, in bytes; the rest is cut with a note.
const GUIDANCE_MAX: usize = 32 * 1024;

/// The facts the system prompt states.
pub(crate) struct PromptFacts<'a> {
    /// The workspace root.
    pub(crate) workspace: &'a Path,
    /// What the run may do: its autonomy level, and what the compact prompt's file listing
    /// leaves out (what the rules keep from the model).
    pub(crate) policy: &'a Policy,
    /// The names of the tools on offer.
    pub(crate) tools: Vec<&'a str>,
    /// The list of the skills the model may load with the `Skill` tool (bounded by its
    /// maker), when there are any.
    pub(crate) skills: Option<&'a str>,
    /// The schema the final answer must satisfy (`--output-schema`), stated last so that it
    /// overrides what the prompt says about answers in general.
    pub(crate) answer_schema: Option<&'a OutputSchema>,
    /// Whether to say only what a small model needs (the local provider's compact style):
    /// every token of the prompt is read again at every turn, slowly, on a CPU.
    pub(crate) compact: bool,
}

/// Builds the whole system prompt.
pub(crate) fn build(facts: &PromptFacts<'_>) -> String {
    let mut prompt = match facts.compact {
        true => compact_intro(facts),
        false => full_intro(facts),
    };
    let bash = facts.tools.contains(&ToolId::Bash.name());
    prompt.push_str(autonomy_note(facts.policy.autonomy(), bash));
    if let Some(skills) = facts.skills {
        prompt.push_str(skills);
    }
    if let Some(guidance) = project_guidance(facts.workspace) {
        prompt.push_str("\nProject guidance (from the repository's own instruction files):\n\n");
        prompt.push_str(&guidance);
    }
    if let Some(schema) = facts.answer_schema {
        prompt.push('\n');
        prompt.push_str(&schema.instructions());
    }
    prompt
}

/// The most file names the compact prompt lists.
const COMPACT_FILES: usize = 40;

/// The short version, for a small model on a CPU: where it is and which files are there (a
/// small model guesses paths it has seen elsewhere rather than look), that it must look before
/// it answers, and what the answer is for.
fn compact_intro(facts: &PromptFacts<'_>) -> String {
    let (files, more) = workspace_files(facts.workspace, facts.policy, COMPACT_FILES);
    let mut listing: String = files.iter().map(|file| format!("  {file}\n")).collect();
    if more {
        listing.push_str("  (and more)\n");
    }
    if files.is_empty() {
        listing.push_str("  (none)\n");
    }
    format!(
        "You are zero, a coding agent. Nobody will answer questions during this run.\n\
         Workspace root: {workspace}\n\
         Files in the workspace:\n{listing}\
         - Before you answer a question about code, read the files it is about with read_file; \
         never guess what a file says or which files there are.\n\
         - Judge code by what its lines do, not by its names or comments.\n\
         - Paths are relative to the workspace root.\n\
         - Once you have read enough, answer in plain text: what you found, naming the file \
         and the line.\n",
        workspace = facts.workspace.display(),
    )
}

/// The whole introduction: who the agent is, where it works and how to use its tools.
fn full_intro(facts: &PromptFacts<'_>) -> String {
    format!(
        "You are zero, a coding agent running headless: nobody will answer questions or approve \
         anything during this run, so make reasonable assumptions, do the work, and finish with \
         a final answer that stands on its own.\n\n\
         Workspace root: {workspace}\n\
         Operating system: {os}\n\
         Date: {date}\n\
         Tools available: {tools}\n\n\
         How to work:\n\
         - Look before you act: find the relevant files with grep/glob/list_directory and read \
         them before changing anything.\n\
         - Paths are relative to the workspace root unless absolute.\n\
         - Make the smallest change that fully does the job, keep the project's style, and \
         check your work (e.g. run the tests) when you can.\n\
         - Call several read-only tools in one turn when you need several things; they run in \
         parallel.\n\
         - If a tool returns an error, read it: it says what went wrong and usually how to fix \
         the call.\n\
         - Your final answer is what the person running you reads: say what you did, what you \
         found, and anything left to do. Do not ask questions; there is no one to answer.\n",
        workspace = facts.workspace.display(),
        os = std::env::consts::OS,
        date = chrono::Local::now().format("%Y-%m-%d"),
        tools = if facts.tools.is_empty() {
            "none".to_string()
        } else {
            facts.tools.join(", ")
        },
    )
}

fn autonomy_note(level: Autonomy, commands: bool) -> &'static str {
    match level {
        // The sandbox makes commands read-only, so `bash` is offered at low.
        Autonomy::Low if commands => {
            "- This run is read-only (--auto low): you cannot change files, and the commands \
             you run are read-only too (they may write only to $TMPDIR). If the task needs \
             changes, describe them precisely (file, location, new text) in your answer.\n"
        }
        Autonomy::Low => {
            "- This run is read-only (--auto low): you cannot change files or run commands. If \
             the task needs changes, describe them precisely (file, location, new text) in \
             your answer.\n"
        }
        Autonomy::Medium => {
            "- You may change files inside the workspace and run commands (--auto medium); \
             writes outside the workspace are refused.\n"
        }
        Autonomy::High => "- You may change any file and run any command (--auto high).\n",
    }
}

/// Guidance files from the git root (or the workspace, outside git) down to the workspace,
/// outermost first, capped at [`GUIDANCE_MAX`] bytes.
fn project_guidance(workspace: &Path) -> Option<String> {
    let mut text = String::new();
    let dirs = dirs_from_root(workspace);
    let root = dirs.first()?;
    for dir in &dirs {
        for name in GUIDANCE_FILES {
            let path = dir.join(name);
            let Some(content) = read_guidance(root, &path) else {
                continue;
            };
            if content.trim().is_empty() {
                continue;
            }
            text.push_str(&format!(
                "--- {} ---\n{}\n\n",
                path.display(),
                content.trim()
            ));
        }
    }
    if text.is_empty() {
        return None;
    }
    if text.len() > GUIDANCE_MAX {
        let cut = crate::tools::text::prefix_at_boundary(&text, GUIDANCE_MAX).to_string();
        return Some(format!("{cut}\n[guidance cut at {GUIDANCE_MAX} bytes]\n"));
    }
    Some(text)
}

/// The text of one guidance file, at most [`GUIDANCE_MAX`] bytes of it (the rest would be cut
/// anyway); `None` when it is missing or unreadable, or is not a regular file — a FIFO named
/// `AGENTS.md` must not hold the run up before its first request — or when it resolves
/// outside `root`, the project the guidance is collected from: an `AGENTS.md` that links to
/// `~/.ssh/id_rsa` is not the project's guidance, and would go to the model.
fn read_guidance(root: &Path, path: &Path) -> Option<String> {
    use std::io::Read;
    let (file, _) = crate::fsutil::open_beneath(root, path.strip_prefix(root).ok()?).ok()?;
    let mut bytes = Vec::new();
    file.take(GUIDANCE_MAX as u64)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The directories from the enclosing git root down to `workspace`, outermost first.
fn dirs_from_root(workspace: &Path) -> Vec<PathBuf> {
    let chain: Vec<PathBuf> = workspace.ancestors().map(Path::to_path_buf).collect();
    let root_index = chain
        .iter()
        .position(|dir| dir.join(".git").exists())
        .unwrap_or(0);
    chain[..=root_index].iter().rev().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guidance_is_collected_from_git_root_down() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        let sub = root.path().join("crate");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(root.path().join("AGENTS.md"), "outer rule").unwrap();
        std::fs::write(sub.join("ZERO.md"), "inner rule").unwrap();
        let prompt = build(&PromptFacts {
            workspace: &sub,
            policy: &Policy::new(Autonomy::Medium, false, Vec::new()),
            tools: vec!["read_file"],
            skills: None,
            answer_schema: None,
            compact: false,
        });
        let outer = prompt.find("outer rule").expect("outer guidance");
        let inner = prompt.find("inner rule").expect("inner guidance");
        assert!(outer < inner);
        assert!(prompt.contains("headless"));
    }

    #[test]
    fn guidance_that_links_out_of_the_project_is_not_read() {
        let top = tempfile::tempdir().unwrap();
        let (project, outside) = (top.path().join("project"), top.path().join("outside"));
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(project.join("docs")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::write(project.join("docs/rules.md"), "house rule").unwrap();
        let sub = project.join("crate");
        std::fs::create_dir(&sub).unwrap();
        std::os::unix::fs::symlink(outside.join("id_rsa"), project.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink("../docs/rules.md", sub.join("AGENTS.md")).unwrap();
        let prompt = build(&PromptFacts {
            workspace: &sub,
            policy: &Policy::new(Autonomy::High, false, Vec::new()),
            tools: vec!["read_file"],
            skills: None,
            answer_schema: None,
            compact: false,
        });
        assert!(!prompt.contains("PRIVATE KEY"), "{prompt}");
        assert!(
            prompt.contains("house rule"),
            "a link within the project is read"
        );
    }

    #[test]
    fn outside_git_only_the_workspace_is_read() {
        let root = tempfile::tempdir().unwrap();
        let sub = root.path().join("w");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(root.path().join("AGENTS.md"), "parent rule").unwrap();
        let prompt = build(&PromptFacts {
            workspace: &sub,
            policy: &Policy::new(Autonomy::Low, false, Vec::new()),
            tools: vec![],
            skills: None,
            answer_schema: None,
            compact: false,
        });
        assert!(!prompt.contains("parent rule"));
        assert!(prompt.contains("read-only"));
    }

    #[test]
    fn at_low_the_prompt_says_commands_are_read_only_only_when_bash_is_offered() {
        let dir = tempfile::tempdir().unwrap();
        let with_bash = build(&PromptFacts {
            workspace: dir.path(),
            policy: &Policy::new(Autonomy::Low, false, Vec::new()),
            tools: vec!["bash", "read_file"],
            skills: None,
            answer_schema: None,
            compact: false,
        });
        assert!(with_bash.contains("commands you run are read-only"));
        let without = build(&PromptFacts {
            workspace: dir.path(),
            policy: &Policy::new(Autonomy::Low, false, Vec::new()),
            tools: vec!["read_file"],
            skills: None,
            answer_schema: None,
            compact: false,
        });
        assert!(without.contains("cannot change files or run commands"));
    }

    #[test]
    fn the_compact_prompt_is_short_but_keeps_the_rules_and_the_guidance() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "house rule").unwrap();
        std::fs::write(dir.path().join("odd\nname.py"), "").unwrap();
        let policy = Policy::new(Autonomy::Low, false, Vec::new());
        let facts = |compact| PromptFacts {
            workspace: dir.path(),
            policy: &policy,
            tools: vec!["read_file"],
            skills: None,
            answer_schema: None,
            compact,
        };
        let (full, compact) = (build(&facts(false)), build(&facts(true)));
        assert!(compact.len() * 3 < full.len() * 2, "{compact}");
        for needle in [
            "house rule",
            "read-only",
            "read_file",
            &dir.path().display().to_string(),
            "  AGENTS.md\n",
            "  odd\\nname.py\n",
        ] {
            assert!(compact.contains(needle), "{needle}: {compact}");
        }
        assert!(!full.contains("odd"), "only the compact prompt lists files");
    }
}
