//! `glob`: find files by path pattern.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{View, display_path, require_dir, walker_keeping};
use crate::tools::fsops::{check_cancelled, run_blocking};
use crate::tools::{
    Access, Bounded, SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args,
};

/// Paths returned when the call gives no `limit`.
const DEFAULT_LIMIT: usize = 100;
/// Most paths one call may ask for.
const MAX_LIMIT: usize = 1000;
/// The `limit` argument.
const LIMIT: Bounded<usize> = Bounded {
    name: "limit",
    min: 1,
    max: Some(MAX_LIMIT),
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    pattern: String,
    path: Option<String>,
    limit: Option<usize>,
}

/// Finds files whose path matches a glob pattern.
pub(crate) struct Glob;

#[async_trait]
impl Tool for Glob {
    fn name(&self) -> &'static str {
        ToolId::Glob.name()
    }

    fn description(&self) -> &'static str {
        "Find files by path pattern. The pattern is matched against each file's path relative \
         to `path` (default: the workspace root): `*` and `?` do not cross `/`, `**` matches \
         any number of directories, `{a,b}` and `[abc]` work as in a shell. So `*.rs` finds \
         Rust files directly in `path`, `**/*.rs` finds them at any depth, and \
         `src/**/test_*.{ts,tsx}` narrows to a subtree. Files ignored by .gitignore or .ignore \
         are skipped; hidden files such as .github/ are included, .git/ never is. Returns matching file paths (not \
         directories), sorted, up to `limit` (default 100, at most 1000), with a note when more \
         matched. To search file contents use grep."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Glob matched against paths relative to `path`, e.g. `**/*.py` or `src/**/mod.rs`."
                },
                "path": {
                    "type": "string",
                    "description": "The directory to search, relative to the workspace root (or absolute). Default: the workspace root."
                },
                "limit": LIMIT.schema("Most paths to return. Default 100.")
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::Glob.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: GlobArgs = parse_args(args)?;
        let limit = LIMIT.or(args.limit, DEFAULT_LIMIT)?;
        let matcher = compile(&args.pattern)?;
        let shown = args.path.unwrap_or_else(|| ".".to_string());
        let root = ctx.resolve(&shown, Access::Read)?;
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let view = View::of(&ctx.policy, ToolId::Glob);
        run_blocking(move || {
            require_dir(&root, &shown)?;
            let found = find(&root, &view, &matcher, &cancel)?;
            Ok(render(&workspace, &found, limit, &args.pattern, &shown))
        })
        .await
    }
}

/// Compiles the pattern with shell semantics (`*` stops at `/`). A leading `./` is dropped,
/// since the paths it is matched against never have one.
fn compile(pattern: &str) -> Result<GlobMatcher, ToolError> {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    if pattern.starts_with('/') {
        return Err(ToolError::InvalidArguments(
            "`pattern` is matched against paths relative to `path`; give the directory as \
             `path` and a relative pattern"
                .into(),
        ));
    }
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| ToolError::InvalidArguments(format!("invalid glob pattern: {e}")))
}

/// Every non-directory under `root` that `view` may show whose relative path matches, sorted
/// by path. Hidden files are searched (a pattern like `.github/**` names them on purpose);
/// `.git` never is.
fn find(
    root: &Path,
    view: &View,
    matcher: &GlobMatcher,
    cancel: &CancellationToken,
) -> Result<Vec<PathBuf>, ToolError> {
    let mut found = Vec::new();
    let walk = walker_keeping(root, view, |entry| entry.file_name() != ".git")
        .hidden(false)
        .build();
    for entry in walk {
        check_cancelled(cancel)?;
        let Ok(entry) = entry else { continue };
        let is_dir = entry.file_type().is_none_or(|t| t.is_dir());
        let matches = entry
            .path()
            .strip_prefix(root)
            .is_ok_and(|rel| matcher.is_match(rel));
        if !is_dir && matches {
            found.push(entry.into_path());
        }
    }
    found.sort();
    Ok(found)
}

/// The first `limit` paths, then a note if more matched.
fn render(workspace: &Path, found: &[PathBuf], limit: usize, pattern: &str, shown: &str) -> String {
    if found.is_empty() {
        return format!(
            "No files under `{shown}` match `{pattern}` (gitignored files are skipped; use \
             `**/` to match at any depth)."
        );
    }
    let mut lines: Vec<String> = found
        .iter()
        .take(limit)
        .map(|path| display_path(workspace, path))
        .collect();
    if found.len() > limit {
        lines.push(format!(
            "[{} files matched; showing the first {limit} by path. Narrow the pattern or path, \
             or raise limit (at most {MAX_LIMIT}).]",
            found.len()
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::Workspace;
    use std::os::unix::fs::symlink;

    fn sample() -> Workspace {
        let ws = Workspace::new();
        ws.write(".gitignore", "target/\ngenerated.rs\n");
        ws.write("build.rs", "");
        ws.write("src/lib.rs", "");
        ws.write("src/generated.rs", "");
        ws.write("src/tools/mod.rs", "");
        ws.write("src/tools/grep.txt", "");
        ws.write("target/debug/build/out.rs", "");
        ws.write(".github/workflows/ci.yml", "");
        ws.write(".git/config", "");
        ws
    }

    async fn glob(ws: &Workspace, args: Value) -> ToolResult {
        ws.call(&Glob, args).await
    }

    #[tokio::test]
    async fn star_stays_in_one_directory_and_double_star_descends() {
        let ws = sample();
        let top = glob(&ws, json!({"pattern": "*.rs"})).await.unwrap();
        assert_eq!(top, "build.rs");
        let all = glob(&ws, json!({"pattern": "**/*.rs"})).await.unwrap();
        assert_eq!(all, "build.rs\nsrc/lib.rs\nsrc/tools/mod.rs");
        let under = glob(&ws, json!({"pattern": "*.rs", "path": "src"}))
            .await
            .unwrap();
        assert_eq!(under, "src/lib.rs");
    }

    #[tokio::test]
    async fn gitignored_files_and_dot_git_are_skipped_but_hidden_files_are_found() {
        let ws = sample();
        let out = glob(&ws, json!({"pattern": "**/*"})).await.unwrap();
        assert!(
            !out.contains("target") && !out.contains("generated") && !out.contains(".git/"),
            "{out}"
        );
        assert!(
            out.contains(".github/workflows/ci.yml") && out.contains(".gitignore"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn results_are_sorted_and_limited_with_a_note() {
        let ws = Workspace::new();
        for name in ["c.txt", "a.txt", "b/z.txt", "b.txt"] {
            ws.write(name, "");
        }
        let out = glob(&ws, json!({"pattern": "**/*.txt", "limit": 2}))
            .await
            .unwrap();
        assert_eq!(
            out.lines().take(2).collect::<Vec<_>>(),
            ["a.txt", "b/z.txt"]
        );
        assert!(
            out.contains("4 files matched; showing the first 2"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn no_match_says_so() {
        let ws = sample();
        let out = glob(&ws, json!({"pattern": "**/*.py"})).await.unwrap();
        assert!(
            out.starts_with("No files under `.` match `**/*.py`"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn invalid_pattern_and_bad_arguments_are_invalid() {
        let ws = sample();
        let err = glob(&ws, json!({"pattern": "src/[a-"})).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidArguments(m) if m.contains("unclosed character class")),
            "{err}"
        );
        for args in [
            json!({}),
            json!({"pattern": "*", "limit": 0}),
            json!({"pattern": "*", "limit": 1001}),
            json!({"pattern": "/etc/*"}),
            json!({"pattern": "*", "recursive": true}),
        ] {
            let err = glob(&ws, args.clone()).await.unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments(_)),
                "{args}: {err}"
            );
        }
    }

    #[tokio::test]
    async fn searching_outside_the_workspace_is_denied() {
        let outside = tempfile::tempdir().unwrap();
        let ws = sample();
        symlink(outside.path(), ws.path("escape")).unwrap();
        let err = glob(&ws, json!({"pattern": "*", "path": "escape"}))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err}");
        let file = glob(&ws, json!({"pattern": "*", "path": "build.rs"}))
            .await
            .unwrap_err();
        assert!(matches!(file, ToolError::Failed(_)), "{file}");
    }
}
