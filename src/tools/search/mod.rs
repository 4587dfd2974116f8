//! The search tools: `list_directory`, `glob` and `grep`.
//!
//! They walk with the `ignore` crate and so skip what ripgrep skips: entries matched by
//! `.gitignore`, `.ignore` and `.git/info/exclude`, and hidden ones (except where a tool says
//! otherwise). Ignore files are honoured even outside a git repository, since a workspace need
//! not be one. Walks are sequential and visit siblings in name order, which makes every result
//! deterministic and lets a search stop as soon as it has found enough; `grep` reads the files
//! the walk finds on several threads and takes their results in walk order.
//!
//! A search is judged by the permission rules by where it starts; what its walk finds beneath
//! that the rules keep from the model (`Read(secrets/**)` denied, or no `Read` allow rule
//! covering it) is left out of every walk and listing (the policy's
//! [`ReadFilter`](super::policy::ReadFilter)), so `grep` never prints such a file's lines and
//! `glob` and `list_directory` never show its name.
//!
//! Paths in results are written the way the model should pass them back: relative to the
//! workspace root when inside it, absolute otherwise.

mod glob;
mod grep;
mod list;
mod ordered;

use std::fs;
use std::path::Path;
use std::sync::Arc;

use ignore::{DirEntry, WalkBuilder};

pub(crate) use glob::Glob;
pub(crate) use grep::Grep;
pub(crate) use list::ListDirectory;

use super::fsops::io_failure;
use super::policy::ReadFilter;
use super::{Policy, ToolError, ToolId};

/// What one search may show: the run's policy hides what the caller's rules keep from its
/// tool.
#[derive(Debug, Clone)]
struct View {
    reads: Option<Arc<dyn ReadFilter>>,
    tool: ToolId,
}

impl View {
    /// What `tool` may show under `policy`.
    fn of(policy: &Policy, tool: ToolId) -> View {
        View {
            reads: policy.reads().cloned(),
            tool,
        }
    }

    /// Whether the search may show `path`.
    fn shows(&self, path: &Path) -> bool {
        self.reads
            .as_ref()
            .is_none_or(|reads| !reads.hides(self.tool, path))
    }

    /// Whether a walk keeps `entry`: a directory it may enter, anything else it may show.
    /// The root was judged with the call.
    fn keeps(&self, entry: &DirEntry) -> bool {
        let Some(reads) = &self.reads else {
            return true;
        };
        if entry.depth() == 0 {
            return true;
        }
        match entry.file_type() {
            Some(kind) if kind.is_dir() => !reads.prunes(self.tool, entry.path()),
            _ => !reads.hides(self.tool, entry.path()),
        }
    }
}

/// A walker over `root` with ripgrep's default filters, visiting siblings in name order (so the
/// walk is a sorted depth-first traversal, identical on every run), leaving out what `view`
/// may not show.
fn walker(root: &Path, view: &View) -> WalkBuilder {
    walker_keeping(root, view, |_| true)
}

/// [`walker`], also leaving out every entry `keep` refuses.
fn walker_keeping(
    root: &Path,
    view: &View,
    keep: impl Fn(&DirEntry) -> bool + Send + Sync + 'static,
) -> WalkBuilder {
    let view = view.clone();
    let mut builder = WalkBuilder::new(root);
    builder
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| keep(entry) && view.keeps(entry));
    builder
}

/// The first `limit` files beneath `workspace` as the search tools see it (ignore files
/// honoured, hidden entries and what `policy` keeps from `list_directory` skipped, sorted by
/// name), workspace-relative, and whether there are more. The walk stops there: this runs before a run's first request, in any size of tree. A
/// name with control characters is shown escaped, so that no file name can add a line of its
/// own to a prompt.
pub(crate) fn workspace_files(
    workspace: &Path,
    policy: &Policy,
    limit: usize,
) -> (Vec<String>, bool) {
    let view = View::of(policy, ToolId::ListDirectory);
    let mut files: Vec<String> = walker(workspace, &view)
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
    use crate::tools::testing::Workspace;
    use serde_json::json;

    /// Keeps `secrets/` (and everything in it) from every search, as a `Read(secrets/**)`
    /// deny does.
    #[derive(Debug)]
    struct NoSecrets;

    impl ReadFilter for NoSecrets {
        fn hides(&self, _: ToolId, path: &Path) -> bool {
            path.components().any(|c| c.as_os_str() == "secrets")
        }

        fn prunes(&self, tool: ToolId, dir: &Path) -> bool {
            self.hides(tool, dir)
        }
    }

    #[tokio::test]
    async fn what_the_rules_keep_from_the_model_no_search_shows() {
        let mut ws = Workspace::new();
        ws.write("secrets/prod.txt", "token = hunter2\n");
        ws.write("src/lib.rs", "// token = public\n");
        let policy = (*ws.ctx.policy)
            .clone()
            .with_reads(Some(Arc::new(NoSecrets)));
        ws.ctx.policy = Arc::new(policy);
        let grep = ws.call(&Grep, json!({"pattern": "token"})).await.unwrap();
        assert_eq!(grep, "src/lib.rs:1:// token = public");
        let glob = ws.call(&Glob, json!({"pattern": "**/*"})).await.unwrap();
        assert_eq!(glob, "src/lib.rs");
        for args in [json!({}), json!({"recursive": true})] {
            let listed = ws.call(&ListDirectory, args).await.unwrap();
            assert!(!listed.contains("secrets"), "{listed}");
            assert!(listed.contains("src/"), "{listed}");
        }
        let (files, _) = workspace_files(&ws.root, &ws.ctx.policy, 10);
        assert_eq!(files, ["src/lib.rs"]);
    }

    #[test]
    fn display_paths_are_workspace_relative_when_possible() {
        let ws = Path::new("/ws");
        assert_eq!(display_path(ws, Path::new("/ws")), ".");
        assert_eq!(display_path(ws, Path::new("/ws/src/a.rs")), "src/a.rs");
        assert_eq!(display_path(ws, Path::new("/other/b.rs")), "/other/b.rs");
    }
}
