//! Answers that are calls. A model with tools on offer can still write a call out as text —
//! a fenced JSON object, a `<tool_call>` block, `<function=…>` markup — when its server's
//! template or grammar did not turn it into a real call. Such text is no answer: taken for
//! one, the run would exit 0 with a call nobody ran as its result. The first such answer goes
//! back to the model with a note; a second in a row ends the run ([`Strikes`]).

use serde_json::Value;

/// How many answers in a row were calls written out as text. A turn with real calls starts the
/// count over: the model has shown it can make them.
#[derive(Debug, Default)]
pub(super) struct Strikes {
    in_a_row: u32,
}

/// What becomes of an answer that is a call written out as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Strike {
    /// The first in a row: it goes back to the model with [`note`].
    First,
    /// Another after the model was told: it has no answer to give.
    Again,
}

impl Strikes {
    /// Counts an answer that was a written call.
    pub(super) fn strike(&mut self) -> Strike {
        self.in_a_row += 1;
        match self.in_a_row {
            1 => Strike::First,
            _ => Strike::Again,
        }
    }

    /// A turn with real calls: the next written call is the first again.
    pub(super) fn reset(&mut self) {
        self.in_a_row = 0;
    }
}

/// What the model is told when its answer is a call of `tool` written out as text: it was not
/// run, and how to make it.
pub(super) fn note(tool: &str) -> String {
    format!(
        "That was not run: it is a call of `{tool}` written as text, and only calls made \
         through the tool-calling interface run. Make the call that way, or, if you have what \
         you need, answer in plain text."
    )
}

/// The warning of an answer that was a call of `tool` written out as text, sent back to the
/// model.
pub(super) fn warning(tool: &str) -> String {
    format!(
        "the model wrote a call of `{tool}` as text instead of making it; it was not run, and \
         the model was told"
    )
}

/// The tool `text` calls, when the whole of `text` is calls of tools on offer written out:
/// JSON (`{"name", "arguments" | "parameters"}`, one or several, an array of them, fenced or in
/// `<tool_call>` tags), or call markup (`<tool_call>`, `<tools>`, `<function…>`, `<invoke…>`)
/// that names one. Prose that mentions a call, and JSON of any other shape, is an answer.
/// `offered` names the tools on offer.
pub(crate) fn called_tool(text: &str, offered: &[&str]) -> Option<String> {
    json_calls(text, offered).or_else(|| markup_call(text, offered))
}

/// The first tool of `text` read as a sequence of JSON calls, each of a tool on offer, once
/// the fences and `<tool_call>` tags around them are taken away.
fn json_calls(text: &str, offered: &[&str]) -> Option<String> {
    let bare = WRAPPERS
        .iter()
        .fold(text.to_string(), |text, wrapper| text.replace(wrapper, " "));
    let mut first = None;
    for value in serde_json::Deserializer::from_str(&bare).into_iter::<Value>() {
        let value = value.ok()?;
        let calls = match value {
            Value::Array(calls) if !calls.is_empty() => calls,
            call => vec![call],
        };
        for call in calls {
            let name = call_name(&call).filter(|name| offered.contains(name))?;
            first.get_or_insert_with(|| name.to_string());
        }
    }
    first
}

/// What goes around a call written as JSON: code fences and the Hermes-style tags.
const WRAPPERS: [&str; 4] = ["```json", "```", "<tool_call>", "</tool_call>"];

/// The tool `call` names, when it has the shape of a call: a name and its arguments.
fn call_name(call: &Value) -> Option<&str> {
    let name = call.get("name")?.as_str()?;
    (call.get("arguments").is_some() || call.get("parameters").is_some()).then_some(name)
}

/// The tool named by call markup, when `text` is markup: it opens with one of the tags
/// templates use for calls and closes a tag at its end. The tool is the first one on offer
/// that the markup names.
fn markup_call(text: &str, offered: &[&str]) -> Option<String> {
    let text = text.trim();
    let tag: String = text
        .strip_prefix('<')?
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if !CALL_TAGS.contains(&tag.as_str()) || !text.ends_with('>') {
        return None;
    }
    offered
        .iter()
        .filter_map(|name| text.find(name).map(|at| (at, name)))
        .min()
        .map(|(_, name)| name.to_string())
}

/// The tags chat templates write calls in.
const CALL_TAGS: [&str; 5] = ["tool_call", "tools", "function", "function_call", "invoke"];

#[cfg(test)]
mod tests {
    use super::*;

    const OFFERED: [&str; 4] = ["bash", "glob", "grep", "read_file"];

    #[test]
    fn calls_written_out_are_no_answer() {
        for (text, tool) in [
            (
                "```json\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"bug\"}}\n```",
                "grep",
            ),
            ("{\"name\": \"read_file\", \"arguments\": {}}", "read_file"),
            (
                "<tool_call>\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}\n\
                 </tool_call>\n<tool_call>{\"name\": \"glob\", \"arguments\": {}}</tool_call>",
                "read_file",
            ),
            (
                "[{\"name\": \"glob\", \"arguments\": {}}, {\"name\": \"read_file\", \
                 \"arguments\": {}}]",
                "glob",
            ),
            (
                "<tools>\n<function name=\"read_file\" path=\"src/lib.rs\"/>\n</tools>",
                "read_file",
            ),
            (
                "<function=bash>\n<parameter=command>ls</parameter>\n</function>",
                "bash",
            ),
        ] {
            assert_eq!(called_tool(text, &OFFERED).as_deref(), Some(tool), "{text}");
        }
    }

    #[test]
    fn the_second_written_call_in_a_row_is_a_strike_again_until_real_calls_reset_it() {
        let mut strikes = Strikes::default();
        assert_eq!(strikes.strike(), Strike::First);
        assert_eq!(strikes.strike(), Strike::Again);
        strikes.reset();
        assert_eq!(strikes.strike(), Strike::First);
    }

    #[test]
    fn answers_about_calls_and_other_json_are_answers() {
        for answer in [
            "add returns a - b: it subtracts",
            "```json\n{\"verdict\": \"bug\"}\n```",
            "Call read_file with {\"name\": 1, \"arguments\": 2} to see.",
            "{\"name\": \"read_file\", \"arguments\": {}} shows the file.",
            "{\"name\": \"no_such_tool\", \"arguments\": {}}",
            "{\"name\": \"read_file\"}",
            "<function> tags wrap calls, as in read_file.",
            "<p>read_file</p>",
            "[]",
        ] {
            assert_eq!(called_tool(answer, &OFFERED), None, "{answer}");
        }
    }
}
