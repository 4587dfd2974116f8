//! `list_directory`: what a directory contains, one level deep or as a tree.

use std::fs::{self, FileType};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{View, display_path, require_dir, walker};
use crate::tools::fsops::{check_cancelled, io_failure, run_blocking};
use crate::tools::{
    Access, Bounded, SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args,
};

/// Most entries one call lists.
const MAX_ENTRIES: usize = 1000;
/// Levels listed by a recursive call that gives no `max_depth`.
const DEFAULT_DEPTH: usize = 3;
/// Deepest a recursive listing may go.
const MAX_DEPTH: usize = 10;
/// The `max_depth` argument.
const DEPTH: Bounded<usize> = Bounded {
    name: "max_depth",
    min: 1,
    max: Some(MAX_DEPTH),
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDirectoryArgs {
    path: Option<String>,
    recursive: Option<bool>,
    max_depth: Option<usize>,
}

/// Lists a directory's entries.
pub(crate) struct ListDirectory;

#[async_trait]
impl Tool for ListDirectory {
    fn name(&self) -> &'static str {
        ToolId::ListDirectory.name()
    }

    fn description(&self) -> &'static str {
        "List the entries of a directory (default: the workspace root), sorted by name, one per \
         line, as paths you can pass straight to other tools; directories end with `/` and \
         symlinks show their target as `link -> target`. By default it lists one level and \
         shows everything, hidden files included. With `recursive: true` it lists the tree \
         down to `max_depth` levels (default 3, at most 10), skipping hidden files and anything \
         ignored by .gitignore or .ignore (like ripgrep), which keeps build output and \
         dependencies out. At most 1000 entries are listed; to find files by name pattern use \
         glob, to find text inside files use grep."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The directory to list, relative to the workspace root (or absolute). Default: the workspace root."
                },
                "recursive": {
                    "type": "boolean",
                    "description": "List the whole tree (skipping hidden and gitignored entries) instead of one level. Default false, or true when max_depth is given."
                },
                "max_depth": DEPTH.schema(
                    "How many levels a recursive listing descends; 1 is the directory's own entries. Default 3."
                )
            },
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::ListDirectory.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: ListDirectoryArgs = parse_args(args)?;
        let depth = Depth::new(args.recursive, args.max_depth)?;
        let shown = args.path.unwrap_or_else(|| ".".to_string());
        let dir = ctx.resolve(&shown, Access::Read)?;
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let view = View::of(&ctx.policy, ToolId::ListDirectory);
        run_blocking(move || list(&workspace, &dir, &view, &shown, depth, &cancel)).await
    }
}

/// How far below the directory to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// Its own entries, hidden and ignored ones included.
    Flat,
    /// This many levels, filtered like ripgrep.
    Recursive(usize),
}

impl Depth {
    fn new(recursive: Option<bool>, max_depth: Option<usize>) -> Result<Self, ToolError> {
        match (recursive, max_depth) {
            (Some(false), Some(_)) => Err(ToolError::InvalidArguments(
                "`max_depth` applies only to a recursive listing; drop it or set recursive to true"
                    .into(),
            )),
            (_, Some(depth)) => DEPTH.check(depth).map(Depth::Recursive),
            (Some(true), None) => Ok(Depth::Recursive(DEFAULT_DEPTH)),
            (_, None) => Ok(Depth::Flat),
        }
    }
}

/// Lists what `view` may show of `dir` and renders the entries, with a note when the listing
/// was cut.
fn list(
    workspace: &Path,
    dir: &Path,
    view: &View,
    shown: &str,
    depth: Depth,
    cancel: &CancellationToken,
) -> ToolResult {
    require_dir(dir, shown)?;
    let entries = match depth {
        Depth::Flat => flat_entries(dir, view).map_err(|e| io_failure(shown, &e))?,
        Depth::Recursive(levels) => tree_entries(dir, view, levels, cancel)?,
    };
    if entries.is_empty() {
        let filtered = match depth {
            Depth::Flat => "",
            Depth::Recursive(_) => " (hidden and gitignored entries are not listed)",
        };
        return Ok(format!("`{shown}` is empty{filtered}."));
    }
    let mut out: Vec<String> = entries
        .iter()
        .take(MAX_ENTRIES)
        .map(|(path, kind)| label(workspace, path, *kind))
        .collect();
    if entries.len() > MAX_ENTRIES {
        out.push(format!(
            "[listing stopped after {MAX_ENTRIES} entries; list a subdirectory, lower max_depth, \
             or use glob to find specific files]"
        ));
    }
    Ok(out.join("\n"))
}

/// The entries directly in `dir` that `view` may show, sorted by name.
fn flat_entries(dir: &Path, view: &View) -> std::io::Result<Vec<(PathBuf, FileType)>> {
    let mut entries = fs::read_dir(dir)?
        .map(|entry| entry.and_then(|e| Ok((e.path(), e.file_type()?))))
        .filter(|entry| {
            entry.as_ref().is_err() || entry.as_ref().is_ok_and(|(path, _)| view.shows(path))
        })
        .collect::<Result<Vec<_>, _>>()?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// The entries below `dir` down to `levels` that `view` may show, in walk order; stops one
/// past [`MAX_ENTRIES`] so the caller knows the listing was cut.
fn tree_entries(
    dir: &Path,
    view: &View,
    levels: usize,
    cancel: &CancellationToken,
) -> Result<Vec<(PathBuf, FileType)>, ToolError> {
    let mut entries = Vec::new();
    for entry in walker(dir, view).max_depth(Some(levels)).build() {
        check_cancelled(cancel)?;
        // An unreadable subdirectory is left out rather than failing the whole listing; a
        // directory the walk may enter is listed only when it may be shown.
        let Ok(entry) = entry else { continue };
        let Some(kind) = entry.file_type().filter(|_| entry.depth() > 0) else {
            continue;
        };
        if !view.shows(entry.path()) {
            continue;
        }
        entries.push((entry.into_path(), kind));
        if entries.len() > MAX_ENTRIES {
            break;
        }
    }
    Ok(entries)
}

/// One line of the listing: the path, then `/` for a directory or ` -> target` for a symlink.
fn label(workspace: &Path, path: &Path, kind: FileType) -> String {
    let shown = display_path(workspace, path);
    if kind.is_dir() {
        format!("{shown}/")
    } else if kind.is_symlink() {
        let target = fs::read_link(path).map(|t| t.to_string_lossy().into_owned());
        format!("{shown} -> {}", target.unwrap_or_else(|_| "?".to_string()))
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::Workspace;
    use std::os::unix::fs::symlink;

    fn sample() -> Workspace {
        let ws = Workspace::new();
        ws.write(".gitignore", "target/\n*.log\n");
        ws.write(".env", "SECRET=1");
        ws.write("README.md", "");
        ws.write("debug.log", "");
        ws.write("src/main.rs", "");
        ws.write("src/tools/mod.rs", "");
        ws.write("src/tools/deep/deeper/x.rs", "");
        ws.write("target/debug/zero", "");
        symlink("README.md", ws.path("readme")).unwrap();
        ws
    }

    #[tokio::test]
    async fn flat_listing_shows_every_entry_with_kinds() {
        let ws = sample();
        let out = ws.call(&ListDirectory, json!({})).await.unwrap();
        assert_eq!(
            out,
            ".env\n.gitignore\nREADME.md\ndebug.log\nreadme -> README.md\nsrc/\ntarget/"
        );
        let sub = ws
            .call(&ListDirectory, json!({"path": "src"}))
            .await
            .unwrap();
        assert_eq!(sub, "src/main.rs\nsrc/tools/");
    }

    #[tokio::test]
    async fn recursive_listing_skips_hidden_and_ignored_entries_and_honours_depth() {
        let ws = sample();
        let out = ws
            .call(&ListDirectory, json!({"recursive": true}))
            .await
            .unwrap();
        assert_eq!(
            out,
            "README.md\nreadme -> README.md\nsrc/\nsrc/main.rs\nsrc/tools/\nsrc/tools/deep/\nsrc/tools/mod.rs"
        );
        let shallow = ws
            .call(&ListDirectory, json!({"path": "src", "max_depth": 1}))
            .await
            .unwrap();
        assert_eq!(shallow, "src/main.rs\nsrc/tools/");
    }

    #[tokio::test]
    async fn long_listings_are_cut_with_a_note() {
        let ws = Workspace::new();
        for i in 0..1005 {
            ws.write(&format!("many/f{i:04}"), "");
        }
        let out = ws
            .call(&ListDirectory, json!({"path": "many"}))
            .await
            .unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), MAX_ENTRIES + 1);
        assert_eq!(lines[MAX_ENTRIES - 1], "many/f0999");
        assert!(lines[MAX_ENTRIES].contains("stopped after 1000 entries"));
    }

    #[tokio::test]
    async fn files_missing_paths_and_outside_paths_fail() {
        let outside = tempfile::tempdir().unwrap();
        let ws = sample();
        symlink(outside.path(), ws.path("escape")).unwrap();

        let file = ws
            .call(&ListDirectory, json!({"path": "README.md"}))
            .await
            .unwrap_err();
        assert!(
            matches!(&file, ToolError::Failed(m) if m.contains("read_file")),
            "{file}"
        );
        let missing = ws
            .call(&ListDirectory, json!({"path": "nope"}))
            .await
            .unwrap_err();
        assert!(matches!(missing, ToolError::Failed(_)));
        let escape = ws
            .call(&ListDirectory, json!({"path": "escape"}))
            .await
            .unwrap_err();
        assert!(matches!(escape, ToolError::Denied(_)), "{escape}");
    }

    #[tokio::test]
    async fn empty_directory_and_bad_arguments() {
        let ws = Workspace::new();
        std::fs::create_dir(ws.path("empty")).unwrap();
        let out = ws
            .call(&ListDirectory, json!({"path": "empty"}))
            .await
            .unwrap();
        assert_eq!(out, "`empty` is empty.");
        for args in [
            json!({"max_depth": 0}),
            json!({"max_depth": 11}),
            json!({"recursive": false, "max_depth": 2}),
            json!({"recursive": "yes"}),
            json!({"depth": 2}),
        ] {
            let err = ws.call(&ListDirectory, args.clone()).await.unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments(_)),
                "{args}: {err}"
            );
        }
    }
}
