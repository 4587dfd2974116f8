//! `edit_file`: replace an exact piece of a text file.
//!
//! Exact matching is the point: the model quotes what it saw, and if the quote is not in the
//! file (or is in it more than once) nothing is written and the error says which. The one
//! leniency is line endings: a quote written with `\n` also finds its text in a CRLF file.

use std::borrow::Cow;
use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fsutil;
use crate::tools::fsops::{EDIT_LIMIT, io_failure, open_failure, run_blocking};
use crate::tools::{
    Access, SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args,
};

/// Most match positions listed when `old_string` is ambiguous.
const MAX_LISTED_LINES: usize = 10;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EditFileArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// Replaces exact occurrences of a string in a file.
pub(crate) struct EditFile;

#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &'static str {
        ToolId::EditFile.name()
    }

    fn description(&self) -> &'static str {
        "Replace an exact piece of text in an existing file. `old_string` must appear in the \
         file exactly as written, including indentation and line breaks (copy it from \
         read_file output, without the line-number prefix), and must appear exactly once unless \
         `replace_all` is true; include a few surrounding lines to make it unique. If it is not \
         found, or found more than once, nothing is changed and the error says why. The write \
         is atomic and keeps the file's permissions. To create a file use write_file; for many \
         changes across files apply_patch may be easier."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file to edit, relative to the workspace root (or absolute)."
                },
                "old_string": {
                    "type": "string",
                    "description": "The exact text to replace; must not be empty."
                },
                "new_string": {
                    "type": "string",
                    "description": "The text to put in its place; must differ from old_string. May be empty to delete."
                },
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence instead of requiring exactly one. Default false."
                }
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::EditFile.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: EditFileArgs = parse_args(args)?;
        if args.old_string.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`old_string` must not be empty; to create or fill a file use write_file".into(),
            ));
        }
        if args.old_string == args.new_string {
            return Err(ToolError::InvalidArguments(
                "`old_string` and `new_string` are identical, so nothing would change".into(),
            ));
        }
        let path = ctx.resolve(&args.path, Access::Write)?;
        run_blocking(move || edit(&path, &args)).await
    }
}

/// Reads the file, makes the replacement in memory, and writes it back only if it applied.
fn edit(path: &Path, args: &EditFileArgs) -> ToolResult {
    let shown = &args.path;
    let (bytes, _) = fsutil::read_regular(path, EDIT_LIMIT).map_err(|e| open_failure(shown, &e))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolError::Failed(format!(
            "`{shown}` is not UTF-8 text; edit_file only edits text files"
        ))
    })?;
    let (edited, count) = replace(&text, &args.old_string, &args.new_string, args.replace_all)
        .map_err(|e| e.into_tool_error(shown))?;
    fsutil::write_atomic(path, edited.as_bytes()).map_err(|e| io_failure(shown, &e))?;
    let plural = if count == 1 { "" } else { "s" };
    Ok(format!("Edited `{shown}`: {count} replacement{plural}."))
}

/// Why a replacement could not be made.
#[derive(Debug)]
enum EditError {
    /// `old_string` does not occur.
    NotFound,
    /// `old_string` occurs more than once (and `replace_all` is off); its count and the first
    /// lines it starts on.
    Ambiguous { count: usize, lines: Vec<usize> },
}

impl EditError {
    fn into_tool_error(self, shown: &str) -> ToolError {
        ToolError::Failed(match self {
            EditError::NotFound => format!(
                "`old_string` was not found in `{shown}`, so nothing was changed. It must match \
                 the file exactly, including indentation, whitespace and line breaks; read the \
                 file again with read_file and copy the text (without the line-number prefix)."
            ),
            EditError::Ambiguous { count, lines } => {
                let listed: Vec<String> = lines.iter().map(usize::to_string).collect();
                let more = if count > lines.len() { ", ..." } else { "" };
                format!(
                    "`old_string` occurs {count} times in `{shown}` (starting on lines {}{more}), \
                     so nothing was changed; include more surrounding lines to pick one, or set \
                     replace_all to true to replace them all.",
                    listed.join(", ")
                )
            }
        })
    }
}

/// Replaces `old` with `new` in `text`: once when it occurs exactly once, or everywhere when
/// `all` is set. Returns the new text and the number of replacements.
fn replace(text: &str, old: &str, new: &str, all: bool) -> Result<(String, usize), EditError> {
    let (old, new) = match_line_endings(text, old, new);
    let starts: Vec<usize> = text.match_indices(old.as_ref()).map(|(i, _)| i).collect();
    match starts.len() {
        0 => Err(EditError::NotFound),
        1 => Ok((text.replacen(old.as_ref(), &new, 1), 1)),
        count if all => Ok((text.replace(old.as_ref(), &new), count)),
        count => Err(EditError::Ambiguous {
            count,
            lines: line_numbers(text, &starts[..count.min(MAX_LISTED_LINES)]),
        }),
    }
}

/// When `old` (written with `\n`) is not in a file that uses CRLF but its CRLF form may be,
/// returns both strings in CRLF form, so the edit matches and keeps the file's line endings.
fn match_line_endings<'a>(text: &str, old: &'a str, new: &'a str) -> (Cow<'a, str>, Cow<'a, str>) {
    let convert =
        old.contains('\n') && !old.contains('\r') && text.contains("\r\n") && !text.contains(old);
    if convert {
        (
            old.replace('\n', "\r\n").into(),
            new.replace('\n', "\r\n").into(),
        )
    } else {
        (old.into(), new.into())
    }
}

/// The 1-based line number of each byte offset in `starts` (ascending).
fn line_numbers(text: &str, starts: &[usize]) -> Vec<usize> {
    let mut line = 1;
    let mut scanned = 0;
    starts
        .iter()
        .map(|&start| {
            line += text[scanned..start].matches('\n').count();
            scanned = start;
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::Workspace;
    use std::fs;
    use std::fs::Permissions;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn edit_args(path: &str, old: &str, new: &str) -> Value {
        json!({"path": path, "old_string": old, "new_string": new})
    }

    #[tokio::test]
    async fn replaces_the_single_occurrence_and_keeps_the_mode() {
        let ws = Workspace::new();
        ws.write("main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
        fs::set_permissions(ws.path("main.rs"), Permissions::from_mode(0o755)).unwrap();

        let out = ws
            .call(&EditFile, edit_args("main.rs", "\"hi\"", "\"hello\""))
            .await
            .unwrap();

        assert_eq!(out, "Edited `main.rs`: 1 replacement.");
        assert_eq!(
            ws.read("main.rs"),
            b"fn main() {\n    println!(\"hello\");\n}\n"
        );
        let mode = fs::metadata(ws.path("main.rs"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755);
    }

    #[tokio::test]
    async fn a_file_over_the_edit_limit_is_refused_unread() {
        let ws = Workspace::new();
        // Sparse: the size is all that matters, and no disk space is used.
        let big = fs::File::create(ws.path("big.log")).unwrap();
        big.set_len(EDIT_LIMIT + 1).unwrap();
        let err = ws
            .call(&EditFile, edit_args("big.log", "a", "b"))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`big.log` is larger than 32 MiB, the most a file tool edits; change it with a \
             command instead"
        );
    }

    #[tokio::test]
    async fn zero_matches_fail_and_leave_the_file_alone() {
        let ws = Workspace::new();
        ws.write("a.txt", "    indented\n");
        let err = ws
            .call(&EditFile, edit_args("a.txt", "  indented\n\n", "x"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::Failed(m) if m.contains("not found") && m.contains("read_file")),
            "{err}"
        );
        assert_eq!(ws.read("a.txt"), b"    indented\n");
    }

    #[tokio::test]
    async fn two_matches_fail_with_their_lines_unless_replace_all() {
        let ws = Workspace::new();
        ws.write("a.txt", "x = 1\ny = 2\nx = 1\n");

        let err = ws
            .call(&EditFile, edit_args("a.txt", "x = 1", "x = 3"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::Failed(m) if m.contains("occurs 2 times") && m.contains("lines 1, 3")),
            "{err}"
        );
        assert_eq!(ws.read("a.txt"), b"x = 1\ny = 2\nx = 1\n");

        let mut args = edit_args("a.txt", "x = 1", "x = 3");
        args["replace_all"] = json!(true);
        let out = ws.call(&EditFile, args).await.unwrap();
        assert_eq!(out, "Edited `a.txt`: 2 replacements.");
        assert_eq!(ws.read("a.txt"), b"x = 3\ny = 2\nx = 3\n");
    }

    #[tokio::test]
    async fn a_newline_quote_matches_a_crlf_file_and_keeps_crlf() {
        let ws = Workspace::new();
        ws.write("win.txt", "one\r\ntwo\r\nthree\r\n");
        ws.call(&EditFile, edit_args("win.txt", "one\ntwo\n", "1\n2\n"))
            .await
            .unwrap();
        assert_eq!(ws.read("win.txt"), b"1\r\n2\r\nthree\r\n");
    }

    #[tokio::test]
    async fn empty_or_unchanged_strings_are_invalid() {
        let ws = Workspace::new();
        ws.write("a.txt", "abc");
        for args in [
            edit_args("a.txt", "", "x"),
            edit_args("a.txt", "b", "b"),
            json!({"path": "a.txt", "old_string": "a"}),
            json!({"path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": "yes"}),
        ] {
            let err = ws.call(&EditFile, args.clone()).await.unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments(_)),
                "{args}: {err}"
            );
        }
        assert_eq!(ws.read("a.txt"), b"abc");
    }

    #[tokio::test]
    async fn missing_binary_and_outside_files_fail() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("f"), "abc").unwrap();
        let ws = Workspace::new();
        ws.write("bin", b"\xff\xfe");
        symlink(outside.path().join("f"), ws.path("link")).unwrap();

        let missing = ws
            .call(&EditFile, edit_args("nope", "a", "b"))
            .await
            .unwrap_err();
        assert!(
            matches!(&missing, ToolError::Failed(m) if m.contains("No such file")),
            "{missing}"
        );
        let binary = ws
            .call(&EditFile, edit_args("bin", "a", "b"))
            .await
            .unwrap_err();
        assert!(
            matches!(&binary, ToolError::Failed(m) if m.contains("not UTF-8")),
            "{binary}"
        );
        let outside_err = ws
            .call(&EditFile, edit_args("link", "a", "b"))
            .await
            .unwrap_err();
        assert!(matches!(outside_err, ToolError::Denied(_)), "{outside_err}");
        assert_eq!(fs::read(outside.path().join("f")).unwrap(), b"abc");
    }

    #[test]
    fn line_numbers_count_from_one() {
        let text = "a\nb\nab\n\na";
        let starts: Vec<usize> = text.match_indices('a').map(|(i, _)| i).collect();
        assert_eq!(line_numbers(text, &starts), vec![1, 3, 5]);
    }
}
