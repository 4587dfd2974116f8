//! The search tools: `list_directory`, `glob` and `grep`.
//!
//! They walk with the `ignore` crate and so skip what ripgrep skips: entries matched by
//! `.gitignore`, `.ignore` and `.git/info/exclude`, and hidden ones (except where a tool says
//! otherwise). Ignore files are honoured even outside a git repository, since a workspace need
//! not be one. Walks are sequential and visit siblings in name order, which makes every result
//! deterministic and lets a search stop as soon as it has found enough; `grep` reads the files
//! the walk finds on several threads and takes their results in walk order.
//!
//! Paths in results are written the way the model should pass them back: relative to the
//! workspace root when inside it, absolute otherwise.

mod glob;
mod grep;
mod list;
mod ordered;

use std::fs;
use std::path::Path;

use ignore::WalkBuilder;

pub(crate) use glob::Glob;
pub(crate) use grep::Grep;
pub(crate) use list::ListDirectory;

use super::ToolError;
use super::fsops::io_failure;

/// A walker over `root` with ripgrep's default filters, visiting siblings in name order (so the
/// walk is a sorted depth-first traversal, identical on every run).
fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// The first `limit` files beneath `workspace` as the search tools see it (ignore files
/// honoured, hidden entries skipped, sorted by name), workspace-relative, and whether there are
/// more. The walk stops there: this runs before a run's first request, in any size of tree. A
/// name with control characters is shown escaped, so that no file name can add a line of its
/// own to a prompt.
pub(crate) fn workspace_files(workspace: &Path, limit: usize) -> (Vec<String>, bool) {
    let mut files: Vec<String> = walker(workspace)
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .take(limit + 1)
        .map(|entry| {
            let path = display_path(workspace, entry.path());
            match path.chars().any(char::is_control) {
                true => path.escape_debug().to_string(),
                false => path,
            }
        })
        .collect();
    let more = files.len() > limit;
    files.truncate(limit);
    (files, more)
}

/// `path` as the model should write it: relative to `workspace` when inside it (`.` for the
/// root itself), absolute otherwise.
fn display_path(workspace: &Path, path: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// Fails unless `path` is a directory, pointing a file at read_file.
fn require_dir(path: &Path, shown: &str) -> Result<(), ToolError> {
    let meta = fs::metadata(path).map_err(|e| io_failure(shown, &e))?;
    if meta.is_dir() {
        Ok(())
    } else {
        Err(ToolError::Failed(format!(
            "`{shown}` is a file, not a directory; use read_file to read it"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_paths_are_workspace_relative_when_possible() {
        let ws = Path::new("/ws");
        assert_eq!(display_path(ws, Path::new("/ws")), ".");
        assert_eq!(display_path(ws, Path::new("/ws/src/a.rs")), "src/a.rs");
        assert_eq!(display_path(ws, Path::new("/other/b.rs")), "/other/b.rs");
    }
}
