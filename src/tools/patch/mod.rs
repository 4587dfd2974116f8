//! `apply_patch`: add, delete, update and rename files in one all-or-nothing step, in the
//! `*** Begin Patch` format OpenAI models are trained on (grammar and example:
//! `docs/PATCH.md`).
//!
//! The order of work is the safety argument, each step finishing before the next starts:
//! 1. parse the whole patch — a malformed patch changes nothing;
//! 2. resolve every path through policy — a path outside the allowed roots changes nothing;
//! 3. read every file and compute every new content in memory — a hunk that does not match,
//!    or a file that is missing or already there, changes nothing;
//! 4. write, each file atomically, undoing the earlier writes if the OS fails a later one.

mod apply;
mod commit;
mod parse;

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use self::apply::apply_hunks;
use self::commit::{Change, CommitError, Original, commit};
use self::parse::{FileOp, parse};
use super::fsops::{EDIT_LIMIT, open_failure, run_blocking};
use super::{Access, SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args};
use crate::fsutil::{self, OpenError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplyPatchArgs {
    patch: String,
}

/// Applies a multi-file patch, entirely or not at all.
pub(crate) struct ApplyPatch;

#[async_trait]
impl Tool for ApplyPatch {
    fn name(&self) -> &'static str {
        ToolId::ApplyPatch.name()
    }

    fn description(&self) -> &'static str {
        "Change files with a patch: add, delete, update and rename any number of files in one \
         call. It is all or nothing: the whole patch is checked (format, paths, every hunk \
         against the current files) before anything is written, and on any error no file is \
         changed and the error says which file and hunk failed and why.\n\
         \n\
         Format:\n\
         *** Begin Patch\n\
         *** Add File: docs/new.md\n\
         +every line of the new file, prefixed with +\n\
         *** Delete File: old/unused.py\n\
         *** Update File: src/app.py\n\
         *** Move to: src/main.py\n\
         @@ def greet(name):\n\
         \x20    greeting = \"Hello\"\n\
         -    print(greeting)\n\
         +    print(f\"{greeting}, {name}\")\n\
         *** End Patch\n\
         \n\
         `*** Move to:` is optional and renames the updated file. In an Update File section, \
         each change is a hunk starting with `@@`, optionally followed by the text of a line \
         that comes before the change (such as the enclosing function or class signature) to \
         say where it is. Hunk lines start with ` ` (context: unchanged), `-` (removed) or `+` \
         (added). Give about 3 lines of unchanged context before and after each change, copied \
         exactly from the file; context and `-` lines must match the file in order (trailing \
         whitespace is tolerated). Hunks must be in file order. Add `*** End of File` after a \
         hunk that ends at the last line of the file. Paths are relative to the workspace root. \
         Add File fails if the file exists; Update File and Delete File fail if it does not. \
         Read a file before patching it so the context is exact."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "patch": {
                    "type": "string",
                    "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`."
                }
            },
            "required": ["patch"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::ApplyPatch.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: ApplyPatchArgs = parse_args(args)?;
        let ops = parse(&args.patch).map_err(|e| {
            ToolError::InvalidArguments(format!(
                "the patch is malformed at {e}; nothing was changed"
            ))
        })?;
        let targets = resolve_targets(ops, ctx)?;
        run_blocking(move || {
            let changes = plan(&targets)?;
            commit(&changes).map_err(commit_failure)?;
            Ok(summary(&targets))
        })
        .await
    }
}

/// A file operation with its paths resolved through policy.
struct Target {
    op: FileOp,
    path: PathBuf,
    /// The resolved `*** Move to:` path.
    move_to: Option<PathBuf>,
}

/// Every path a patch touches — each file's, and the `*** Move to:` target of a rename — read
/// by the parser the tool itself uses: what permission rules match an `apply_patch` call
/// against before it runs.
pub(crate) fn patch_paths(patch: &str) -> Result<Vec<String>, String> {
    let ops = parse(patch).map_err(|error| error.to_string())?;
    let mut paths = Vec::new();
    for op in &ops {
        paths.push(op.path().to_owned());
        if let FileOp::Update {
            move_to: Some(to), ..
        } = op
        {
            paths.push(to.clone());
        }
    }
    Ok(paths)
}

/// Resolves every path for writing before anything is read or written, and refuses a patch
/// that names one file twice (its sections would silently depend on each other).
fn resolve_targets(ops: Vec<FileOp>, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    let mut seen = HashSet::new();
    let mut claim = |shown: &str| -> Result<PathBuf, ToolError> {
        let path = ctx.resolve(shown, Access::Write)?;
        if !seen.insert(path.clone()) {
            return Err(ToolError::InvalidArguments(format!(
                "`{shown}` appears more than once in the patch; put all changes to one file in \
                 one section. Nothing was changed."
            )));
        }
        Ok(path)
    };
    ops.into_iter()
        .map(|op| {
            let path = claim(op.path())?;
            let move_to = match &op {
                FileOp::Update {
                    move_to: Some(dest),
                    ..
                } => Some(claim(dest)?),
                _ => None,
            };
            Ok(Target { op, path, move_to })
        })
        .collect()
}

/// Reads what is on disk and computes every change, failing before any write if one cannot be
/// made.
fn plan(targets: &[Target]) -> Result<Vec<Change>, ToolError> {
    let mut changes = Vec::new();
    for target in targets {
        let planned = plan_one(target)
            .map_err(|why| ToolError::Failed(format!("{why}. Nothing was changed.")))?;
        changes.extend(planned);
    }
    Ok(changes)
}

/// The changes one file operation makes (two for a move: remove the source, create the
/// destination).
fn plan_one(target: &Target) -> Result<Vec<Change>, String> {
    let change = |path: &Path, shown: &str, before, after, mode| Change {
        path: path.to_path_buf(),
        shown: shown.to_string(),
        before,
        after,
        mode,
    };
    match &target.op {
        FileOp::Add { path, contents } => {
            ensure_absent(&target.path, path)?;
            let after = Some(contents.clone().into_bytes());
            Ok(vec![change(&target.path, path, None, after, None)])
        }
        FileOp::Delete { path } => {
            let original = read_original(&target.path, path)?;
            Ok(vec![change(&target.path, path, Some(original), None, None)])
        }
        FileOp::Update {
            path,
            move_to,
            hunks,
        } => {
            let original = read_original(&target.path, path)?;
            let text = std::str::from_utf8(&original.bytes)
                .map_err(|_| format!("`{path}` is not UTF-8 text, so it cannot be updated"))?;
            let updated = apply_hunks(text, hunks)
                .map_err(|e| format!("`{path}` {e}"))?
                .into_bytes();
            match move_to.as_deref().zip(target.move_to.as_deref()) {
                Some((dest_shown, dest)) => {
                    ensure_absent(dest, dest_shown)?;
                    let mode = Some(original.permissions.clone());
                    Ok(vec![
                        change(&target.path, path, Some(original), None, None),
                        change(dest, dest_shown, None, Some(updated), mode),
                    ])
                }
                None => Ok(vec![change(
                    &target.path,
                    path,
                    Some(original),
                    Some(updated),
                    None,
                )]),
            }
        }
    }
}

/// Fails unless nothing exists at `path`, where an Add File or a Move to would create a file.
fn ensure_absent(path: &Path, shown: &str) -> Result<(), String> {
    match fs::symlink_metadata(path) {
        Ok(_) => Err(format!(
            "`{shown}` already exists, so it cannot be added or moved to; use *** Update File to \
             change an existing file"
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("`{shown}`: {e}")),
    }
}

/// The contents and mode of the existing file that an Update File or Delete File names. Only a
/// regular file qualifies: a FIFO, a socket or a device is refused, never read or deleted.
fn read_original(path: &Path, shown: &str) -> Result<Original, String> {
    let (bytes, meta) = fsutil::read_regular(path, EDIT_LIMIT).map_err(|e| match e {
        OpenError::Io(e) if e.kind() == io::ErrorKind::NotFound => {
            format!("`{shown}` does not exist; use *** Add File to create a file")
        }
        e => open_failure(shown, &e).to_string(),
    })?;
    Ok(Original {
        bytes,
        permissions: meta.permissions(),
    })
}

/// Says which write failed and whether the rollback restored everything.
fn commit_failure(e: CommitError) -> ToolError {
    let outcome = if e.not_restored.is_empty() {
        "the files already written were restored, so nothing was changed".to_string()
    } else {
        let paths: Vec<String> = e
            .not_restored
            .iter()
            .map(|(path, error)| format!("`{path}` ({error})"))
            .collect();
        format!(
            "restoring the files already written failed for {}, so those may still be patched; \
             check them before retrying",
            paths.join(", ")
        )
    };
    ToolError::Failed(format!(
        "writing `{}` failed: {}; {outcome}",
        e.shown, e.error
    ))
}

/// One line per file operation: `A` added, `D` deleted, `M` modified, `R` moved.
fn summary(targets: &[Target]) -> String {
    let plural = if targets.len() == 1 { "" } else { "s" };
    let mut lines = vec![format!(
        "Applied the patch to {} file{plural}:",
        targets.len()
    )];
    lines.extend(targets.iter().map(|target| match &target.op {
        FileOp::Add { path, .. } => format!("A {path}"),
        FileOp::Delete { path } => format!("D {path}"),
        FileOp::Update {
            path,
            move_to: Some(dest),
            ..
        } => format!("R {path} -> {dest}"),
        FileOp::Update { path, .. } => format!("M {path}"),
    }));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::Workspace;
    use std::fs::Permissions;
    use std::os::unix::fs::{PermissionsExt, symlink};

    async fn apply_patch(ws: &Workspace, patch: &str) -> ToolResult {
        ws.call(&ApplyPatch, json!({"patch": patch})).await
    }

    fn mode(ws: &Workspace, rel: &str) -> u32 {
        fs::metadata(ws.path(rel)).unwrap().permissions().mode() & 0o7777
    }

    #[tokio::test]
    async fn adds_updates_deletes_and_moves_in_one_patch() {
        let ws = Workspace::new();
        ws.write(
            "src/app.py",
            "def greet(name):\n    greeting = \"Hello\"\n    print(greeting)\n",
        );
        fs::set_permissions(ws.path("src/app.py"), Permissions::from_mode(0o755)).unwrap();
        ws.write("lib.py", "x = 1\ny = 2\n");
        ws.write("old.txt", "bye\n");

        let out = apply_patch(
            &ws,
            "*** Begin Patch
*** Add File: docs/new.md
+# New
*** Delete File: old.txt
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet(name):
     greeting = \"Hello\"
-    print(greeting)
+    print(f\"{greeting}, {name}\")
*** Update File: lib.py
@@
 x = 1
-y = 2
+y = 3
*** End Patch",
        )
        .await
        .unwrap();

        assert_eq!(
            out,
            "Applied the patch to 4 files:\nA docs/new.md\nD old.txt\nR src/app.py -> src/main.py\nM lib.py"
        );
        assert_eq!(ws.read("docs/new.md"), b"# New\n");
        assert!(!ws.exists("old.txt") && !ws.exists("src/app.py"));
        assert_eq!(
            ws.read("src/main.py"),
            "def greet(name):\n    greeting = \"Hello\"\n    print(f\"{greeting}, {name}\")\n"
                .as_bytes()
        );
        assert_eq!(
            mode(&ws, "src/main.py"),
            0o755,
            "a moved file keeps its mode"
        );
        assert_eq!(ws.read("lib.py"), b"x = 1\ny = 3\n");
    }

    #[tokio::test]
    async fn a_hunk_failing_in_the_second_file_changes_nothing() {
        let ws = Workspace::new();
        ws.write("a.txt", "one\ntwo\nthree\n");
        ws.write("b.txt", "alpha\nbeta\n");
        ws.write("gone.txt", "still here\n");
        let before = [ws.read("a.txt"), ws.read("b.txt"), ws.read("gone.txt")];

        let err = apply_patch(
            &ws,
            "*** Begin Patch
*** Update File: a.txt
@@
 one
-two
+TWO
*** Delete File: gone.txt
*** Add File: added.txt
+new
*** Update File: b.txt
@@
 alpha
-gamma
+delta
*** End Patch",
        )
        .await
        .unwrap_err();

        let ToolError::Failed(message) = &err else {
            panic!("{err:?}")
        };
        assert!(message.starts_with("`b.txt` hunk 1 failed"), "{message}");
        assert!(
            message.contains("-gamma") && message.contains("Nothing was changed"),
            "{message}"
        );
        assert_eq!(
            [ws.read("a.txt"), ws.read("b.txt"), ws.read("gone.txt")],
            before
        );
        assert!(!ws.exists("added.txt"));
    }

    #[tokio::test]
    async fn existence_rules_for_add_update_delete_and_move() {
        let ws = Workspace::new();
        ws.write("here.txt", "x\n");
        ws.write("there.txt", "y\n");
        let cases = [
            ("*** Add File: here.txt\n+x", "`here.txt` already exists"),
            (
                "*** Update File: missing.txt\n@@\n-x\n+y",
                "`missing.txt` does not exist",
            ),
            (
                "*** Delete File: missing.txt",
                "`missing.txt` does not exist",
            ),
            (
                "*** Update File: here.txt\n*** Move to: there.txt\n@@\n-x\n+z",
                "`there.txt` already exists",
            ),
        ];
        for (body, expected) in cases {
            let err = apply_patch(&ws, &format!("*** Begin Patch\n{body}\n*** End Patch"))
                .await
                .unwrap_err();
            assert!(
                matches!(&err, ToolError::Failed(m) if m.contains(expected)),
                "{body}: {err}"
            );
        }
        assert_eq!(ws.read("here.txt"), b"x\n");
        assert_eq!(ws.read("there.txt"), b"y\n");
    }

    #[tokio::test]
    async fn any_path_outside_the_workspace_denies_the_whole_patch() {
        let outside = tempfile::tempdir().unwrap();
        let ws = Workspace::new();
        ws.write("a.txt", "a\n");
        symlink(outside.path(), ws.path("escape")).unwrap();

        for target in ["../evil.txt", "escape/evil.txt"] {
            let patch = format!(
                "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: {target}\n+x\n*** End Patch"
            );
            let err = apply_patch(&ws, &patch).await.unwrap_err();
            assert!(matches!(err, ToolError::Denied(_)), "{target}: {err}");
        }
        let moved =
            "*** Begin Patch\n*** Update File: a.txt\n*** Move to: escape/a.txt\n*** End Patch";
        assert!(matches!(
            apply_patch(&ws, moved).await.unwrap_err(),
            ToolError::Denied(_)
        ));
        assert_eq!(ws.read("a.txt"), b"a\n");
        assert!(fs::read_dir(outside.path()).unwrap().next().is_none());
    }

    #[tokio::test]
    async fn malformed_patches_duplicates_and_bad_arguments_are_invalid() {
        let ws = Workspace::new();
        ws.write("a.txt", "a\n");
        let malformed = apply_patch(
            &ws,
            "*** Begin Patch\n*** Update File: a.txt\nbogus\n*** End Patch",
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&malformed, ToolError::InvalidArguments(m) if m.contains("line 3")),
            "{malformed}"
        );
        let twice = apply_patch(
            &ws,
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Delete File: ./a.txt\n*** End Patch",
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&twice, ToolError::InvalidArguments(m) if m.contains("more than once")),
            "{twice}"
        );
        for args in [
            json!({}),
            json!({"patch": 1}),
            json!({"patch": "", "dry_run": true}),
        ] {
            let err = ws.call(&ApplyPatch, args.clone()).await.unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments(_)),
                "{args}: {err}"
            );
        }
        assert_eq!(ws.read("a.txt"), b"a\n");
    }

    #[tokio::test]
    async fn the_example_in_the_docs_applies() {
        let doc = include_str!("../../../docs/PATCH.md");
        let example = doc
            .split("```text\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("docs/PATCH.md has a ```text example");
        let ws = Workspace::new();
        ws.write("scripts/old_greet.sh", "echo hi\n");
        ws.write(
            "src/app.py",
            "def greet(name):\n    greeting = \"Hello\"\n    print(greeting)\n\n\
             if __name__ == \"__main__\":\n    greet()\n",
        );

        let out = apply_patch(&ws, example).await.unwrap();

        assert_eq!(
            out,
            "Applied the patch to 3 files:\nA docs/CHANGES.md\nD scripts/old_greet.sh\n\
             R src/app.py -> src/greet.py"
        );
        assert_eq!(
            ws.read("docs/CHANGES.md"),
            b"# Changes\n\n- Greet people by name.\n"
        );
        assert_eq!(
            ws.read("src/greet.py"),
            "def greet(name):\n    greeting = \"Hello\"\n    print(f\"{greeting}, {name}\")\n\n\
             if __name__ == \"__main__\":\n    greet(\"world\")\n"
                .as_bytes()
        );
    }
}
