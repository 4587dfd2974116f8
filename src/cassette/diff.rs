//! What changed between a recorded request and the one the run would send, for a person
//! reading a CI log: which part (the model, the system prompt, the tool list, a message) and
//! the lines that differ in it, `-` recorded and `+` now. Both are canonical forms
//! (`canonical`); only the first difference of each part is shown, bounded, since the run
//! stops at it anyway.

use serde_json::Value;

/// The most differing lines shown on each side.
const MAX_LINES: usize = 12;
/// The longest line shown.
const MAX_WIDTH: usize = 200;

/// A readable account of how `now` differs from `recorded` (they are known to differ).
pub(crate) fn describe(recorded: &Value, now: &Value) -> String {
    let mut parts = Vec::new();
    for (key, what) in [
        ("wire", "the wire"),
        ("model", "the model"),
        ("system", "the system prompt"),
        ("answerFormat", "the answer's schema (--output-schema)"),
    ] {
        if recorded[key] != now[key] {
            parts.push(format!(
                "{what} changed:\n{}",
                lines(&recorded[key], &now[key])
            ));
        }
    }
    if recorded["tools"] != now["tools"] {
        parts.push(tools(&recorded["tools"], &now["tools"]));
    }
    if recorded["messages"] != now["messages"] {
        parts.push(messages(&recorded["messages"], &now["messages"]));
    }
    if parts.is_empty() {
        parts.push(format!("the request changed:\n{}", lines(recorded, now)));
    }
    parts.join("\n")
}

/// How the tool lists differ: tools added or removed, else the first tool that changed.
fn tools(recorded: &Value, now: &Value) -> String {
    let names = |tools: &Value| -> Vec<String> {
        tools
            .as_array()
            .map(|tools| tools.iter().map(|t| t["name"].to_string()).collect())
            .unwrap_or_default()
    };
    let (before, after) = (names(recorded), names(now));
    let removed: Vec<&String> = before.iter().filter(|n| !after.contains(n)).collect();
    let added: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
    if !removed.is_empty() || !added.is_empty() {
        let list = |names: &[&String]| {
            names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return format!(
            "the tool list changed: removed [{}], added [{}]",
            list(&removed),
            list(&added)
        );
    }
    let index = first_difference(recorded, now);
    format!(
        "the tool {} changed:\n{}",
        now[index]["name"],
        lines(&recorded[index], &now[index])
    )
}

/// How the conversations differ: the first message that does, by what it is.
fn messages(recorded: &Value, now: &Value) -> String {
    let index = first_difference(recorded, now);
    let (before, after) = (&recorded[index], &now[index]);
    let number = index + 1;
    match (before.is_null(), after.is_null()) {
        (false, true) => return format!("message {number} is missing now: {}", brief(before)),
        (true, false) => return format!("message {number} is new: {}", brief(after)),
        _ => {}
    }
    let what = match after["role"].as_str() {
        Some("tool_result") => format!(
            "the result of tool call {} ({})",
            after["call_id"], after["name"]
        ),
        Some("user") => "the user's message".to_string(),
        Some("assistant") => "the model's turn".to_string(),
        _ => "a message".to_string(),
    };
    let (old, new) = match (before["output"].as_str(), after["output"].as_str()) {
        (Some(_), Some(_)) => (&before["output"], &after["output"]),
        _ => match (before["content"].as_str(), after["content"].as_str()) {
            (Some(_), Some(_)) => (&before["content"], &after["content"]),
            _ => (before, after),
        },
    };
    format!("message {number}, {what}, changed:\n{}", lines(old, new))
}

/// The first index at which two arrays differ (the shorter one's length when one is a
/// prefix of the other).
fn first_difference(recorded: &Value, now: &Value) -> usize {
    let empty = Vec::new();
    let (a, b) = (
        recorded.as_array().unwrap_or(&empty),
        now.as_array().unwrap_or(&empty),
    );
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

/// A message in one line: its role and the start of what it says.
fn brief(message: &Value) -> String {
    let role = message["role"].as_str().unwrap_or("message");
    let text = message["content"]
        .as_str()
        .or(message["output"].as_str())
        .or(message["text"].as_str())
        .unwrap_or_default();
    format!("{role} {}", clip(text.lines().next().unwrap_or_default()))
}

/// The lines that differ between two values (strings as their text, anything else as
/// pretty JSON): what both share at the start and at the end is left out.
fn lines(recorded: &Value, now: &Value) -> String {
    let text = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let (before, after) = (text(recorded), text(now));
    let (old, new): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = Vec::new();
    if head > 0 {
        out.push(format!("  @ line {}", head + 1));
    }
    side(&mut out, '-', &old[head..old.len() - tail]);
    side(&mut out, '+', &new[head..new.len() - tail]);
    out.join("\n")
}

/// One side of a difference, bounded.
fn side(out: &mut Vec<String>, mark: char, lines: &[&str]) {
    for line in lines.iter().take(MAX_LINES) {
        out.push(format!("  {mark} {}", clip(line)));
    }
    if lines.len() > MAX_LINES {
        out.push(format!("  {mark} … {} more lines", lines.len() - MAX_LINES));
    }
    if lines.is_empty() {
        out.push(format!("  {mark} (nothing)"));
    }
}

/// `text` cut to [`MAX_WIDTH`] characters.
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_WIDTH) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The conversation's shape: each message's role, an assistant turn's calls (name and
/// arguments) and the call a result answers.
fn shape_of(form: &Value) -> Vec<String> {
    let empty = Vec::new();
    form["messages"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|message| match message["role"].as_str() {
            Some("assistant") => {
                let calls: Vec<String> = message["tool_calls"]
                    .as_array()
                    .unwrap_or(&empty)
                    .iter()
                    .map(|call| format!("{}({})", call["name"], call["arguments"]))
                    .collect();
                format!("assistant calls [{}]", calls.join(", "))
            }
            Some("tool_result") => format!("the result of call {}", message["call_id"]),
            role => role.unwrap_or("message").to_string(),
        })
        .collect()
}

/// How `now`'s conversation shape differs from `recorded`'s, if it does.
pub(crate) fn shape(recorded: &Value, now: &Value) -> Option<String> {
    let (before, after) = (shape_of(recorded), shape_of(now));
    if before == after {
        return None;
    }
    let index = before
        .iter()
        .zip(&after)
        .position(|(a, b)| a != b)
        .unwrap_or(before.len().min(after.len()));
    let show = |shape: &[String]| {
        shape
            .get(index)
            .map_or_else(|| "(nothing)".to_string(), |step| clip(step))
    };
    Some(format!(
        "the conversation's shape changed at message {}:\n  - {}\n  + {}",
        index + 1,
        show(&before),
        show(&after)
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(output: &str, tools: &[&str]) -> Value {
        json!({
            "wire": "openai", "model": "m", "system": "sys", "answerFormat": null,
            "tools": tools.iter().map(|t| json!({"name": t})).collect::<Vec<_>>(),
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "text": "", "tool_calls": [
                    {"id": "c1", "name": "bash", "arguments": "{\"command\":\"ls\"}"}]},
                {"role": "tool_result", "call_id": "c1", "name": "bash",
                 "output": output, "is_error": false},
            ],
        })
    }

    #[test]
    fn a_changed_tool_result_is_named_with_its_lines() {
        let said = describe(&form("a\nb\nc", &["bash"]), &form("a\nB\nc", &["bash"]));
        assert!(
            said.contains("message 3, the result of tool call \"c1\""),
            "{said}"
        );
        assert!(said.contains("- b") && said.contains("+ B"), "{said}");
        assert!(!said.contains("- a"), "{said}");
    }

    #[test]
    fn a_changed_tool_list_names_what_went_and_came() {
        let said = describe(&form("x", &["bash", "grep"]), &form("x", &["bash", "glob"]));
        assert!(
            said.contains("removed [\"grep\"], added [\"glob\"]"),
            "{said}"
        );
    }

    #[test]
    fn the_shape_ignores_outputs_and_sees_calls() {
        assert_eq!(shape(&form("x", &["bash"]), &form("y", &["grep"])), None);
        let mut other = form("x", &["bash"]);
        other["messages"][1]["tool_calls"][0]["name"] = json!("grep");
        let said = shape(&form("x", &["bash"]), &other).unwrap();
        assert!(said.contains("message 2"), "{said}");
    }
}
