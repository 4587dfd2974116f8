//! What a hook said: its exit code, stderr and stdout read as one [`Reply`], in zero's words
//! or Claude Code's.
//!
//! - exit 0 with nothing on stdout: no opinion;
//! - exit 0 with a JSON object on stdout: zero's `{"decision": "allow"|"deny", "reason": ...,
//!   "arguments": {...}, "context": ...}`, Claude Code's `{"hookSpecificOutput":
//!   {"permissionDecision": "allow"|"deny"|"ask", "permissionDecisionReason": ...,
//!   "updatedInput": {...}, "additionalContext": ...}}`, its older `{"decision":
//!   "approve"|"block", "reason": ...}` and `{"continue": false, "stopReason": ...}`. "ask"
//!   is a denial: nobody is there to answer;
//! - exit 2: a denial, with stderr as the reason;
//! - anything else (another exit code, a signal, the timeout, stdout that is not a JSON object,
//!   a word zero does not know): the hook failed, which the caller treats as a denial unless
//!   `--hooks-fail-open`.

use serde_json::{Map, Value};

use super::claude;

/// A hook's answer, before the point it ran at decides what it means.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Reply {
    /// Whether it objects (deny, block, ask, exit 2, `continue: false`).
    pub(crate) objects: bool,
    /// Whether it explicitly allowed (which only means "no objection": rules and the level
    /// decided before it).
    pub(crate) allows: bool,
    /// Why, when it said.
    pub(crate) reason: Option<String>,
    /// New arguments for the call, in zero's names.
    pub(crate) arguments: Option<Value>,
    /// Text for the model: a note on a result, context at the start.
    pub(crate) context: Option<String>,
    /// Whether it asked the run to stop (`continue: false`): at `stop`, the answer stands.
    pub(crate) halt: bool,
}

/// How the hook's process ended, as the reply is read from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past its timeout and was stopped.
    TimedOut,
    /// The run was cancelled meanwhile.
    Cancelled,
}

/// Reads a hook's reply for a call of `tool` (Claude Code's `updatedInput` is mapped back to
/// zero's argument names); `plain_text_context` says whether plain text on stdout is context
/// (Claude Code's rule at `SessionStart`) rather than a malformed reply. An error says why the
/// hook counts as failed.
pub(crate) fn read(
    exit: Exit,
    stdout: &str,
    stderr: &str,
    tool: Option<&str>,
    plain_text_context: bool,
) -> Result<Reply, String> {
    match exit {
        Exit::Code(0) => {}
        Exit::Code(2) => {
            let reason = stderr.trim();
            return Ok(Reply {
                objects: true,
                reason: Some(match reason.is_empty() {
                    true => "the hook exited with code 2 and gave no reason".into(),
                    false => reason.to_string(),
                }),
                ..Reply::default()
            });
        }
        Exit::Code(code) => return Err(with_stderr(format!("it exited with code {code}"), stderr)),
        Exit::Signal(signal) => {
            return Err(with_stderr(format!("signal {signal} ended it"), stderr));
        }
        Exit::TimedOut => {
            return Err(
                "it ran past its timeout and was stopped with everything it started".into(),
            );
        }
        Exit::Cancelled => return Err("the run is stopping".into()),
    }
    let text = stdout.trim();
    if text.is_empty() {
        return Ok(Reply::default());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => json_reply(&fields, tool),
        _ if plain_text_context => Ok(Reply {
            context: Some(text.to_string()),
            ..Reply::default()
        }),
        _ => Err(format!(
            "its output is not a JSON object: {}",
            crate::tools::text::prefix_at_boundary(text, 200)
        )),
    }
}

/// A reply written as a JSON object.
fn json_reply(fields: &Map<String, Value>, tool: Option<&str>) -> Result<Reply, String> {
    let mut reply = Reply::default();
    let specific = match fields.get("hookSpecificOutput") {
        None => &Map::new(),
        Some(Value::Object(specific)) => specific,
        Some(_) => return Err("its `hookSpecificOutput` is not an object".into()),
    };
    for (key, decision) in [
        ("decision", fields.get("decision")),
        ("permissionDecision", specific.get("permissionDecision")),
    ] {
        match decision {
            None | Some(Value::Null) => {}
            Some(Value::String(word)) => match word.as_str() {
                "allow" | "approve" => reply.allows = true,
                "deny" | "block" | "ask" => reply.objects = true,
                other => {
                    return Err(format!(
                        "its `{key}` is \"{other}\"; zero knows allow, deny, ask, approve, block"
                    ));
                }
            },
            Some(_) => return Err(format!("its `{key}` is not a string")),
        }
    }
    if fields.get("continue") == Some(&Value::Bool(false)) {
        reply.halt = true;
        reply.objects = true;
    }
    reply.reason = ["reason", "stopReason"]
        .iter()
        .filter_map(|key| fields.get(*key))
        .chain(specific.get("permissionDecisionReason"))
        .find_map(Value::as_str)
        .map(str::to_string);
    reply.context = fields
        .get("context")
        .or_else(|| specific.get("additionalContext"))
        .and_then(Value::as_str)
        .map(str::to_string);
    reply.arguments = match (fields.get("arguments"), specific.get("updatedInput")) {
        (Some(arguments), _) => Some(object(arguments, "arguments")?.clone()),
        (None, Some(input)) => {
            let input = object(input, "updatedInput")?;
            Some(claude::from_claude(tool.unwrap_or_default(), input))
        }
        (None, None) => None,
    };
    Ok(reply)
}

/// `value`, which must be an object: new arguments replace the call's whole.
fn object<'a>(value: &'a Value, key: &str) -> Result<&'a Value, String> {
    match value {
        Value::Object(_) => Ok(value),
        _ => Err(format!("its `{key}` is not an object of arguments")),
    }
}

/// `what`, with the end of the hook's stderr when it wrote any.
fn with_stderr(what: String, stderr: &str) -> String {
    let stderr = stderr.trim();
    match stderr.is_empty() {
        true => what,
        false => format!(
            "{what}: {}",
            crate::tools::text::suffix_at_boundary(stderr, 500)
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn zero_exit(stdout: &str) -> Result<Reply, String> {
        read(Exit::Code(0), stdout, "", Some("bash"), false)
    }

    #[test]
    fn silence_is_no_opinion_and_exit_2_denies_with_stderr() {
        assert_eq!(zero_exit("  \n").unwrap(), Reply::default());
        let denied = read(Exit::Code(2), "", "no pushes\n", None, false).unwrap();
        assert!(denied.objects);
        assert_eq!(denied.reason.as_deref(), Some("no pushes"));
    }

    #[test]
    fn zero_and_claude_decisions_read_alike() {
        for text in [
            r#"{"decision": "deny", "reason": "no"}"#,
            r#"{"decision": "block", "reason": "no"}"#,
            r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}}"#,
            r#"{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "no"}}"#,
            r#"{"continue": false, "stopReason": "no"}"#,
        ] {
            let reply = zero_exit(text).unwrap();
            assert!(reply.objects, "{text}");
            assert_eq!(reply.reason.as_deref(), Some("no"), "{text}");
        }
        assert!(zero_exit(r#"{"decision": "approve"}"#).unwrap().allows);
    }

    #[test]
    fn rewritten_arguments_come_back_in_zero_names() {
        let zero = zero_exit(r#"{"arguments": {"command": "ls -a"}}"#).unwrap();
        assert_eq!(zero.arguments, Some(json!({"command": "ls -a"})));
        let claude = read(
            Exit::Code(0),
            r#"{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"file_path": "b"}}}"#,
            "",
            Some("read_file"),
            false,
        )
        .unwrap();
        assert_eq!(claude.arguments, Some(json!({"path": "b"})));
        assert!(claude.allows && !claude.objects);
        assert!(zero_exit(r#"{"arguments": "ls"}"#).is_err());
    }

    #[test]
    fn garbage_crashes_and_timeouts_are_failures_that_say_why() {
        assert!(
            zero_exit("all good!")
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(
            zero_exit(r#"{"decision": "maybe"}"#)
                .unwrap_err()
                .contains("maybe")
        );
        let crash = read(Exit::Code(1), "", "Traceback: boom", None, false).unwrap_err();
        assert!(
            crash.contains("code 1") && crash.contains("boom"),
            "{crash}"
        );
        assert!(
            read(Exit::TimedOut, "", "", None, false)
                .unwrap_err()
                .contains("timeout")
        );
        assert!(read(Exit::Signal(9), "", "", None, false).is_err());
        // At the start, plain text is context (Claude Code's rule for SessionStart).
        let context = read(Exit::Code(0), "Remember X", "", None, true).unwrap();
        assert_eq!(context.context.as_deref(), Some("Remember X"));
    }
}
