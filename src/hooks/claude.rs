//! Claude Code's words for zero's tools, both ways, so a hook script written for Claude Code
//! reads the input it expects and may answer in its own terms.
//!
//! Tool names come from the catalog (`ToolId`'s Claude Code names; the first is the one a
//! hook is told, `Edit` for `edit_file`); a tool without one (`apply_patch`, MCP tools, whose
//! `mcp__server__tool` is Claude Code's form too) keeps zero's name. Arguments keep zero's
//! names except where Claude Code's tool calls the same thing otherwise:
//!
//! | zero tool | zero argument | Claude Code argument |
//! |---|---|---|
//! | `bash` (`Bash`) | `timeout_ms` | `timeout` (also milliseconds) |
//! | `read_file` (`Read`) | `path` | `file_path` |
//! | `write_file` (`Write`) | `path` | `file_path` |
//! | `edit_file` (`Edit`) | `path` | `file_path` |
//! | `grep` (`Grep`) | `case_insensitive`, `context` | `-i`, `-C` |
//!
//! The rest (`command`, `content`, `old_string`, `new_string`, `replace_all`, `offset`,
//! `limit`, `pattern`, `path` of `glob`/`grep`/`list_directory`) are the same in both.

use serde_json::{Map, Value};

use crate::tools::ToolId;

/// The name a Claude Code hook knows the tool `name` by.
pub(crate) fn tool_name(name: &str) -> &str {
    ToolId::from_name(name)
        .and_then(|id| id.spec().claude_names.first().copied())
        .unwrap_or(name)
}

/// The arguments of a call of `tool` in Claude Code's names, with the defaults Claude Code
/// spells out (an `Edit`'s `replace_all: false`, measured).
pub(crate) fn to_claude(tool: &str, arguments: &Value) -> Value {
    let mut input = rename(
        arguments,
        renames(tool).iter().map(|(zero, claude)| (*zero, *claude)),
    );
    if let (Some(ToolId::EditFile), Value::Object(fields)) = (ToolId::from_name(tool), &mut input) {
        fields.entry("replace_all").or_insert(Value::Bool(false));
    }
    input
}

/// Arguments a Claude Code hook wrote for `tool` (`updatedInput`) in zero's names.
pub(crate) fn from_claude(tool: &str, input: &Value) -> Value {
    rename(
        input,
        renames(tool).iter().map(|(zero, claude)| (*claude, *zero)),
    )
}

/// The arguments zero and Claude Code name differently for `tool`: (zero's, Claude's). A
/// `match` on every tool, so a new tool must say whether it has any.
fn renames(tool: &str) -> &'static [(&'static str, &'static str)] {
    let Some(id) = ToolId::from_name(tool) else {
        return &[];
    };
    match id {
        ToolId::Bash => &[("timeout_ms", "timeout")],
        ToolId::ReadFile | ToolId::WriteFile | ToolId::EditFile => &[("path", "file_path")],
        ToolId::Grep => &[("case_insensitive", "-i"), ("context", "-C")],
        ToolId::ApplyPatch
        | ToolId::Glob
        | ToolId::ListDirectory
        | ToolId::UpdatePlan
        | ToolId::Task
        | ToolId::TaskOutput
        | ToolId::TaskStop
        | ToolId::WebFetch => &[],
        ToolId::Skill => &[("name", "skill")],
    }
}

/// `value` with each key `from` renamed `to`; anything but an object is left as it is.
fn rename<'a>(value: &Value, pairs: impl Iterator<Item = (&'a str, &'a str)> + Clone) -> Value {
    let Value::Object(fields) = value else {
        return value.clone();
    };
    let renamed: Map<String, Value> = fields
        .iter()
        .map(|(key, value)| {
            let key = pairs
                .clone()
                .find(|(from, _)| from == key)
                .map_or(key.as_str(), |(_, to)| to);
            (key.to_string(), value.clone())
        })
        .collect();
    Value::Object(renamed)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tools_are_named_as_claude_code_names_them_and_others_keep_their_names() {
        assert_eq!(tool_name("bash"), "Bash");
        assert_eq!(tool_name("edit_file"), "Edit");
        assert_eq!(tool_name("read_file"), "Read");
        assert_eq!(tool_name("apply_patch"), "apply_patch");
        assert_eq!(tool_name("mcp__git__log"), "mcp__git__log");
    }

    #[test]
    fn arguments_map_both_ways_and_round_trip() {
        let zero = json!({"path": "a.rs", "old_string": "x", "new_string": "y"});
        let claude = to_claude("edit_file", &zero);
        assert_eq!(
            claude,
            json!({"file_path": "a.rs", "old_string": "x", "new_string": "y", "replace_all": false})
        );
        let all =
            json!({"path": "a.rs", "old_string": "x", "new_string": "y", "replace_all": true});
        assert_eq!(from_claude("edit_file", &to_claude("edit_file", &all)), all);
        assert_eq!(
            to_claude("bash", &json!({"command": "ls", "timeout_ms": 5})),
            json!({"command": "ls", "timeout": 5})
        );
        // `glob`'s `path` is `path` in both.
        assert_eq!(
            to_claude("glob", &json!({"path": "src"})),
            json!({"path": "src"})
        );
        assert_eq!(to_claude("bash", &json!("raw")), json!("raw"));
    }
}
