//! `write_file`: create a file or replace its whole contents, atomically.

use std::io;
use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fsutil;
use crate::tools::fsops::{io_failure, open_failure, run_blocking};
use crate::tools::{Access, SideEffect, Tool, ToolContext, ToolId, ToolResult, parse_args};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteFileArgs {
    path: String,
    content: String,
}

/// Writes a whole file, creating it and its directories if needed.
pub(crate) struct WriteFile;

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        ToolId::WriteFile.name()
    }

    fn description(&self) -> &'static str {
        "Create a file, or replace the entire contents of an existing one, with `content`. \
         Missing parent directories are created. The write is atomic (the file is never left \
         half-written) and an existing file keeps its permissions. Use it for new files and for \
         rewriting most of a file; to change part of an existing file prefer edit_file or \
         apply_patch, which cannot drop the parts you did not mean to touch. Read an existing \
         file before overwriting it."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file to write, relative to the workspace root (or absolute)."
                },
                "content": {
                    "type": "string",
                    "description": "The complete new contents of the file."
                }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::WriteFile.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: WriteFileArgs = parse_args(args)?;
        let path = ctx.resolve(&args.path, Access::Write)?;
        run_blocking(move || write(&path, &args.path, &args.content)).await
    }
}

/// Writes `content` to `path` and says whether the file was created or overwritten.
fn write(path: &Path, shown: &str, content: &str) -> ToolResult {
    let fail = |e: io::Error| io_failure(shown, &e);
    let existed = fsutil::regular_or_absent(path)
        .map_err(|e| open_failure(shown, &e))?
        .is_some();
    fsutil::create_parent_dirs(path).map_err(fail)?;
    fsutil::write_atomic(path, content.as_bytes()).map_err(fail)?;
    let verb = if existed { "Overwrote" } else { "Created" };
    Ok(format!("{verb} `{shown}` ({} bytes).", content.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolError;
    use crate::tools::testing::Workspace;
    use std::fs;
    use std::fs::Permissions;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[tokio::test]
    async fn creates_a_file_and_its_directories() {
        let ws = Workspace::new();
        let out = ws
            .call(
                &WriteFile,
                json!({"path": "a/b/new.txt", "content": "héllo\n"}),
            )
            .await
            .unwrap();
        assert_eq!(out, "Created `a/b/new.txt` (7 bytes).");
        assert_eq!(ws.read("a/b/new.txt"), "héllo\n".as_bytes());
    }

    #[tokio::test]
    async fn overwriting_keeps_the_file_mode() {
        let ws = Workspace::new();
        ws.write("run.sh", "old");
        fs::set_permissions(ws.path("run.sh"), Permissions::from_mode(0o755)).unwrap();

        let out = ws
            .call(
                &WriteFile,
                json!({"path": "run.sh", "content": "#!/bin/sh\n"}),
            )
            .await
            .unwrap();

        assert_eq!(out, "Overwrote `run.sh` (10 bytes).");
        assert_eq!(ws.read("run.sh"), b"#!/bin/sh\n");
        let mode = fs::metadata(ws.path("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755);
    }

    #[tokio::test]
    async fn a_directory_is_not_overwritten() {
        let ws = Workspace::new();
        ws.write("src/lib.rs", "");
        let err = ws
            .call(&WriteFile, json!({"path": "src", "content": "x"}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::Failed(m) if m.contains("is a directory")),
            "{err}"
        );
        assert!(ws.path("src/lib.rs").is_file());
    }

    #[tokio::test]
    async fn writing_outside_the_workspace_is_denied_even_through_a_symlink() {
        let outside = tempfile::tempdir().unwrap();
        let ws = Workspace::new();
        symlink(outside.path(), ws.path("out")).unwrap();

        for path in ["out/x.txt", "../x.txt", "/tmp/zero-write-test.txt"] {
            let err = ws
                .call(&WriteFile, json!({"path": path, "content": "x"}))
                .await
                .unwrap_err();
            assert!(matches!(err, ToolError::Denied(_)), "{path}: {err}");
        }
        assert!(fs::read_dir(outside.path()).unwrap().next().is_none());
    }

    #[tokio::test]
    async fn bad_arguments_are_invalid() {
        let ws = Workspace::new();
        for args in [
            json!({"path": "a"}),
            json!({"content": "a"}),
            json!({"path": "a", "content": 1}),
            json!({"path": "a", "content": "", "mode": "x"}),
        ] {
            let err = ws.call(&WriteFile, args.clone()).await.unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments(_)),
                "{args}: {err}"
            );
        }
        assert!(!ws.exists("a"));
    }
}
