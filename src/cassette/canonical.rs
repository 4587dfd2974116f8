//! The canonical form of a request: what replay compares, and what its hash is of.
//!
//! It holds everything of a request that decides what the model is asked — the wire, the
//! model, the system prompt, the tools (name, description, schema), every message and the
//! answer's schema — in zero's own provider-neutral shape, not a wire's body: what a wire
//! adds itself (`max_tokens`, cache markers, the stream flag) follows from zero's version
//! and flags, which the `start` line holds. It is redacted exactly as the cassette is (the
//! same [`Secrets`]), so the form replay computes from a live request compares equal with
//! the recorded one. Its hash is the SHA-256 of its compact JSON with the keys sorted
//! (`serde_json`'s `Value` keeps them sorted), so `zero replay check` can recompute it.
//!
//! What zero makes up anew on every run is not the request's content and would make every
//! replay drift: the ids it gives runs, sessions and tasks, and the times it stamps (a
//! `Task` result says when its specialist started and ended). The canonical form holds
//! each as a placeholder (`task_…`, `<time>`), on both sides alike. So is the workspace's
//! root (`<workspace>`), which the system prompt names: a cassette recorded in one checkout
//! replays in another (a laptop's, a CI runner's).

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::provider::Request;
use crate::redact::Secrets;

/// What the canonical form masks besides the ids and times zero makes up: the run's
/// secrets, as every output masks them, and the workspace's root.
#[derive(Clone)]
pub(crate) struct Masks {
    /// The run's secrets.
    pub(crate) secrets: Secrets,
    /// The workspace's root as the system prompt writes it; empty for `/`, which is in
    /// every path and would mask them all.
    workspace: String,
}

impl Masks {
    /// Masks `secrets` and the workspace root `workspace`.
    pub(crate) fn new(secrets: Secrets, workspace: &Path) -> Masks {
        let root = workspace.display().to_string();
        Masks {
            secrets,
            workspace: match root.trim_end_matches('/').is_empty() {
                true => String::new(),
                false => root,
            },
        }
    }

    /// `text` with the workspace's root as `<workspace>`.
    fn workspace(&self, text: String) -> String {
        match self.workspace.is_empty() {
            true => text,
            false => text.replace(&self.workspace, "<workspace>"),
        }
    }
}

/// The canonical form of `request`, sent on `wire` to `model`, with `masks` applied.
pub(crate) fn of(request: &Request, wire: &str, model: &str, masks: &Masks) -> Value {
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "inputSchema": tool.input_schema,
            })
        })
        .collect();
    let answer_format = request.answer_format.as_ref().map(|format| {
        json!({
            "schema": *format.schema,
            "answerNow": format.answer_now,
        })
    });
    let form = json!({
        "wire": wire,
        "model": model,
        "system": request.system,
        "tools": tools,
        "messages": request.messages,
        "answerFormat": answer_format,
    });
    let text = volatile(&masks.workspace(masks.secrets.apply(&form.to_string())));
    // Redaction never breaks the JSON it is given (a mask never takes half an escape); were
    // it to, the masked text stands as a string, which no request equals.
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// The ids and times zero makes up, each with its placeholder (see the module
/// documentation): the formats `runtime::ids` and `session` write, and RFC 3339 times.
static VOLATILE: LazyLock<[(Regex, &str); 4]> = LazyLock::new(|| {
    let pattern = |text: &str| Regex::new(text).expect("a valid pattern");
    [
        (pattern(r"\btask_[0-9a-f]{12}\b"), "task_…"),
        (pattern(r"\brun_[0-9]{14}_[0-9a-f]{6}\b"), "run_…"),
        (pattern(r"\bses_[0-9]{14}_[0-9a-f]{6}\b"), "ses_…"),
        (
            pattern(r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z"),
            "<time>",
        ),
    ]
});

/// `text` with each id and time zero made up replaced by its placeholder.
fn volatile(text: &str) -> String {
    VOLATILE
        .iter()
        .fold(text.to_string(), |text, (pattern, placeholder)| {
            pattern.replace_all(&text, *placeholder).into_owned()
        })
}

/// The hash a `request` line carries for the canonical form `form`.
pub(crate) fn hash(form: &Value) -> String {
    let digest = Sha256::digest(form.to_string().as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{Message, ToolSpec};

    fn request(output: &str) -> Request {
        Request {
            system: "be brief".into(),
            messages: vec![
                Message::user("go"),
                Message::ToolResult {
                    call_id: "c1".into(),
                    name: "bash".into(),
                    output: output.into(),
                    is_error: false,
                    images: Vec::new(),
                },
            ],
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "run".into(),
                input_schema: json!({"type": "object"}),
            }],
            answer_format: None,
        }
    }

    #[test]
    fn the_form_is_redacted_and_its_hash_follows_its_contents() {
        let masks = masks();
        let key = "sk-abcdefghijklmnopqrstuvwxyz0123";
        let form = of(&request(&format!("key={key}")), "openai", "m", &masks);
        assert!(!form.to_string().contains(key), "{form}");
        let again = of(&request(&format!("key={key}")), "openai", "m", &masks);
        assert_eq!(hash(&form), hash(&again));
        let other = of(&request("nothing"), "openai", "m", &masks);
        assert_ne!(hash(&form), hash(&other));
        // What check recomputes: the hash of the form as read back from its line.
        let read_back: Value = serde_json::from_str(&form.to_string()).unwrap();
        assert_eq!(hash(&read_back), hash(&form));
        assert!(hash(&form).starts_with("sha256:"));
    }

    fn masks() -> Masks {
        Masks::new(Secrets::default(), Path::new("/home/dev/project"))
    }

    #[test]
    fn ids_times_and_the_workspace_are_placeholders() {
        let said = "task_id: task_6ec33d7bb1fd\nstarted_at: 2026-12-07T13:01:46.938Z\n\
                    /home/dev/project/src/lib.rs";
        let form = of(&request(said), "openai", "m", &masks());
        let text = form.to_string();
        assert!(text.contains("task_id: task_…"), "{text}");
        assert!(text.contains("started_at: <time>"), "{text}");
        assert!(text.contains("<workspace>/src/lib.rs"), "{text}");
        let other = "task_id: task_0123456789ab\nstarted_at: 2026-12-08T01:00:00Z\n\
                     /ci/checkout/src/lib.rs";
        let elsewhere = Masks::new(Secrets::default(), Path::new("/ci/checkout"));
        assert_eq!(of(&request(other), "openai", "m", &elsewhere), form);
        // The root `/` is in every path: it is not masked.
        let root = Masks::new(Secrets::default(), Path::new("/"));
        assert!(of(&request(said), "openai", "m", &root).to_string().contains("/home/dev"));
    }
}
