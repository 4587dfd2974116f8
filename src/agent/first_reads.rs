//! Files the prompt names, read for the model before its first request. A small model asked
//! "how many functions are in tools.py?" often answers at once, without reading the file, or
//! reaches for the wrong tool (listing `picker.py` as a directory); a person would simply have
//! opened the file. Used by the compact style (`--provider local`), where one turn costs tens
//! of seconds and a guess is the usual failure. The reads are ordinary `read_file` calls run
//! through the toolset: the same policy, limits and events as the model's own.

use std::path::{Component, Path};

use crate::fsutil;
use crate::provider::ToolCall;
use crate::tools::ToolId;

/// The most files read up front: a prompt that names more is about something broader than
/// these files, and the model can read the rest itself.
const MOST: usize = 4;

/// The workspace-relative paths the prompt names of regular files in `workspace`, in the
/// prompt's order, each once, at most [`MOST`]. A word names a file when, stripped of the
/// quotes and punctuation around it, it is a relative path without `..` to a regular file
/// that resolves under `workspace`, every component of it: `outlink/secret.txt`, where
/// `outlink` links to a directory elsewhere, is not the workspace's to read up front, even
/// in a run whose model may read anywhere (`--auto high`).
pub(crate) fn named_files(workspace: &Path, prompt: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in prompt.split_whitespace() {
        if found.len() == MOST {
            break;
        }
        let word = word
            .trim_start_matches(|c: char| "`\"'([{<".contains(c))
            .trim_end_matches(|c: char| "`\"')]}>,;:?!.".contains(c));
        if is_workspace_file(workspace, word) && !found.iter().any(|path| path == word) {
            found.push(word.to_string());
        }
    }
    found
}

/// Whether `word` is a plain relative path to a regular file beneath `workspace`, links and
/// all (`fsutil::open_beneath`).
fn is_workspace_file(workspace: &Path, word: &str) -> bool {
    let path = Path::new(word);
    let plain = !word.is_empty()
        && path
            .components()
            .all(|part| matches!(part, Component::Normal(_) | Component::CurDir));
    plain && fsutil::open_beneath(workspace, path).is_ok()
}

/// The `read_file` calls that read `paths`, with ids of zero's own (the model made none of
/// them).
pub(crate) fn calls(paths: &[String]) -> Vec<ToolCall> {
    paths
        .iter()
        .enumerate()
        .map(|(index, path)| ToolCall {
            id: format!("zero_read_{}", index + 1),
            name: ToolId::ReadFile.name().to_string(),
            arguments: serde_json::json!({ "path": path }).to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> tempfile::TempDir {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("src")).unwrap();
        for file in [
            "src/lib.rs",
            "tools.py",
            "Makefile",
            "a.py",
            "b.py",
            "c.py",
            "d.py",
        ] {
            std::fs::write(ws.path().join(file), "x\n").unwrap();
        }
        ws
    }

    #[test]
    fn named_files_are_found_through_punctuation_in_the_prompts_order() {
        let ws = workspace();
        assert_eq!(
            named_files(
                ws.path(),
                "Is there a bug in `src/lib.rs`? And how many functions does tools.py have \
                 (see \"Makefile\"); tools.py again."
            ),
            ["src/lib.rs", "tools.py", "Makefile"]
        );
    }

    #[test]
    fn only_plain_paths_to_regular_files_in_the_workspace_count() {
        let ws = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s\n").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            ws.path().join("link.txt"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("outlink")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("src/deep")).unwrap();
        let absolute = ws.path().join("tools.py");
        let prompt = format!(
            "src ../{} {} link.txt outlink/secret.txt src/deep/secret.txt missing.py \
             src/../tools.py",
            outside.path().display(),
            absolute.display()
        );
        assert!(named_files(ws.path(), &prompt).is_empty());
        // A link that stays inside is the file it names.
        std::os::unix::fs::symlink("src", ws.path().join("inlink")).unwrap();
        assert_eq!(named_files(ws.path(), "inlink/lib.rs"), ["inlink/lib.rs"]);
    }

    #[test]
    fn at_most_a_few_files_are_read() {
        let ws = workspace();
        let found = named_files(ws.path(), "a.py b.py c.py d.py tools.py");
        assert_eq!(found, ["a.py", "b.py", "c.py", "d.py"]);
        let calls = calls(&found);
        assert_eq!(calls[3].name, "read_file");
        assert_eq!(calls[3].arguments, r#"{"path":"d.py"}"#);
    }
}
