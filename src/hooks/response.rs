//! Claude Code's `tool_response`: what a successful call did, in the shape Claude Code 2.1.332
//! hands its `PostToolUse` hooks for the tool of the same name (measured: the fixtures in
//! `tests/integration/fixtures/claude-code-hooks`), so a script that reads
//! `tool_response.filePath` or `.stdout` reads it from zero too:
//!
//! | zero tool | `tool_response` |
//! |---|---|
//! | `bash` | `{stdout, stderr, interrupted, isImage, noOutputExpected}`, stderr in `stdout` |
//! | `read_file` | `{type: "text", file: {filePath, content, numLines, startLine, totalLines}}` |
//! | `write_file` | `{type: "create" \| "update", filePath, content, structuredPatch, originalFile, userModified}` |
//! | `edit_file` | `{filePath, oldString, newString, originalFile, structuredPatch, userModified, replaceAll}` |
//! | every other | the result's text, a string (Claude Code's shape for an MCP tool's text) |
//!
//! A file tool's response needs the file as it was before the call ([`Before`], read only
//! when a `post_tool_use` hook will run for the call) and as it is after; both are read
//! through the tools' own path resolution, bounded.

use std::path::PathBuf;

use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

use crate::tools::{Access, ToolContext, ToolId, shell_streams};

/// The most of a file read for a response: what `edit_file` edits at most.
const FILE_LIMIT: u64 = 32 * 1024 * 1024;

/// Lines of context around each change of a `structuredPatch` (as `diff -u`).
const CONTEXT_LINES: usize = 3;

/// The file a call of `write_file` or `edit_file` will change, as it was before the call:
/// `None` when it did not exist (or could not be read as text, or the tool changes no file).
#[derive(Debug)]
pub(crate) struct Before(Option<String>);

impl Before {
    /// What the file of a call of `tool` with `arguments` (zero's names) holds now.
    pub(crate) async fn take(tool: &str, arguments: &Value, ctx: &ToolContext) -> Before {
        match ToolId::from_name(tool) {
            Some(ToolId::WriteFile | ToolId::EditFile) => match file_of(arguments, ctx) {
                Some(path) => Before(contents(path).await),
                None => Before(None),
            },
            _ => Before(None),
        }
    }
}

/// Claude Code's `tool_response` for a call of `tool` with `arguments` (zero's names) that
/// succeeded with `output`; `before` is what [`Before::take`] found.
pub(crate) async fn claude(
    tool: &str,
    arguments: &Value,
    output: &str,
    before: &Before,
    ctx: &ToolContext,
) -> Value {
    let text = Value::String(output.to_string());
    let Some(id) = ToolId::from_name(tool) else {
        return text;
    };
    let file = file_of(arguments, ctx);
    let shown = |path: &PathBuf| path.to_string_lossy().into_owned();
    match (id, file) {
        (ToolId::Bash, _) => bash(output).unwrap_or(text),
        (ToolId::ReadFile, Some(path)) => match contents(path.clone()).await {
            Some(all) => read(shown(&path), &all, arguments),
            None => text,
        },
        (ToolId::WriteFile, Some(path)) => write(shown(&path), arguments, before),
        (ToolId::EditFile, Some(path)) => {
            let after = contents(path.clone()).await;
            edit(shown(&path), arguments, before, after.as_deref())
        }
        _ => text,
    }
}

/// `Bash`'s: the streams of zero's report, stderr in `stdout` after the command's stdout, as
/// Claude Code reports them (measured: `echo out; echo err >&2` gives `stdout` `"out\nerr"`
/// and an empty `stderr`; zero captures them apart, so they follow each other, not
/// interleaved).
fn bash(output: &str) -> Option<Value> {
    let (stdout, stderr) = shell_streams(output)?;
    let merged = [stdout, stderr]
        .into_iter()
        .filter(|stream| !stream.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    Some(json!({
        "stdout": merged,
        "stderr": "",
        "interrupted": false,
        "isImage": false,
        "noOutputExpected": false,
    }))
}

/// `Read`'s: the lines shown, counted as Claude Code counts them (a final newline ends a
/// last, empty line).
fn read(path: String, all: &str, arguments: &Value) -> Value {
    let lines: Vec<&str> = all.split('\n').collect();
    let start = number(arguments, "offset").unwrap_or(1).max(1);
    let limit = number(arguments, "limit").unwrap_or(lines.len());
    let shown: Vec<&str> = lines.iter().skip(start - 1).take(limit).copied().collect();
    json!({
        "type": "text",
        "file": {
            "filePath": path,
            "content": shown.join("\n"),
            "numLines": shown.len(),
            "startLine": start,
            "totalLines": lines.len(),
        }
    })
}

/// `Write`'s: created or updated, with the change.
fn write(path: String, arguments: &Value, before: &Before) -> Value {
    let content = string(arguments, "content");
    json!({
        "type": if before.0.is_some() { "update" } else { "create" },
        "filePath": path,
        "content": content,
        "structuredPatch": before.0.as_deref().map_or_else(Vec::new, |old| patch(old, content)),
        "originalFile": before.0,
        "userModified": false,
    })
}

/// `Edit`'s: the replacement, with the change.
fn edit(path: String, arguments: &Value, before: &Before, after: Option<&str>) -> Value {
    let patch = match (before.0.as_deref(), after) {
        (Some(old), Some(new)) => patch(old, new),
        _ => Vec::new(),
    };
    json!({
        "filePath": path,
        "oldString": string(arguments, "old_string"),
        "newString": string(arguments, "new_string"),
        "originalFile": before.0,
        "structuredPatch": patch,
        "userModified": false,
        "replaceAll": arguments.get("replace_all").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// The hunks from `old` to `new` as Claude Code's `structuredPatch` lists them: 1-based
/// starts, line counts, and each line marked ` `, `-` or `+`, without its newline.
fn patch(old: &str, new: &str) -> Vec<Value> {
    let diff = TextDiff::from_lines(old, new);
    diff.grouped_ops(CONTEXT_LINES)
        .iter()
        .filter_map(|group| {
            let (first, last) = (group.first()?, group.last()?);
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let lines: Vec<String> = group
                .iter()
                .flat_map(|op| diff.iter_changes(op))
                .map(|change| {
                    let mark = match change.tag() {
                        ChangeTag::Equal => ' ',
                        ChangeTag::Delete => '-',
                        ChangeTag::Insert => '+',
                    };
                    format!("{mark}{}", change.value().trim_end_matches('\n'))
                })
                .collect();
            Some(json!({
                "oldStart": old_range.start + 1,
                "oldLines": old_range.len(),
                "newStart": new_range.start + 1,
                "newLines": new_range.len(),
                "lines": lines,
            }))
        })
        .collect()
}

/// The file a file tool's call names, resolved as the tool resolved it.
fn file_of(arguments: &Value, ctx: &ToolContext) -> Option<PathBuf> {
    let path = arguments.get("path")?.as_str()?;
    ctx.resolve(path, Access::Read).ok()
}

/// A file's text, bounded; `None` when it is absent, not a regular file or not UTF-8.
async fn contents(path: PathBuf) -> Option<String> {
    let read = tokio::task::spawn_blocking(move || crate::fsutil::read_regular(&path, FILE_LIMIT));
    let (bytes, _) = read.await.ok()?.ok()?;
    String::from_utf8(bytes).ok()
}

fn string<'a>(arguments: &'a Value, key: &str) -> &'a str {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn number(arguments: &Value, key: &str) -> Option<usize> {
    arguments.get(key)?.as_u64()?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_claude_codes_structured_patch() {
        // Measured: Claude Code 2.1.332's Edit of `two` in a three-line file.
        assert_eq!(
            patch("one\ntwo\nthree\n", "one\nTWO\nthree\n"),
            vec![
                json!({"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3,
                "lines": [" one", "-two", "+TWO", " three"]})
            ]
        );
        assert!(patch("same\n", "same\n").is_empty());
    }

    #[test]
    fn a_read_counts_lines_as_claude_code_does() {
        let response = read("/ws/a.txt".into(), "one\nTWO\nfour\n", &json!({}));
        assert_eq!(
            response,
            json!({"type": "text", "file": {"filePath": "/ws/a.txt",
                "content": "one\nTWO\nfour\n", "numLines": 4, "startLine": 1, "totalLines": 4}})
        );
        let part = read(
            "/ws/a.txt".into(),
            "a\nb\nc\n",
            &json!({"offset": 2, "limit": 1}),
        );
        assert_eq!(part["file"]["content"], "b");
        assert_eq!(part["file"]["startLine"], 2);
    }
}
