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

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;

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

/// A request's canonical form and its hash.
pub(crate) struct Canonical {
    /// The form.
    pub(crate) form: Value,
    /// Its [`hash`].
    pub(crate) hash: String,
}

/// The canonical form of `request`, sent on `wire` to `model`, with `masks` applied, and
/// its hash.
pub(crate) fn of(request: &Request, wire: &str, model: &str, masks: &Masks) -> Canonical {
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
    // The masks put plain text where text was, so the masked text is still the compact,
    // key-sorted writing of the value it parses to: its hash is that value's.
    match serde_json::from_str(&text) {
        Ok(form) => Canonical {
            hash: hash_of_text(&text),
            form,
        },
        // Redaction never breaks the JSON it is given (a mask never takes half an escape);
        // were it to, the masked text stands as a string, which no request equals.
        Err(_) => {
            let form = Value::String(text);
            Canonical {
                hash: hash(&form),
                form,
            }
        }
    }
}

/// The ids zero makes up, each as its shape and its placeholder (see the module
/// documentation): the formats `runtime::ids` and `session` write. In a shape `h` is a
/// lowercase hex digit, `d` a decimal digit, any other byte itself.
const IDS: [(&str, &str); 3] = [
    ("task_hhhhhhhhhhhh", "task_…"),
    ("run_dddddddddddddd_hhhhhh", "run_…"),
    ("ses_dddddddddddddd_hhhhhh", "ses_…"),
];

/// An RFC 3339 time as zero writes them, up to its seconds (a fraction and `Z` follow).
const TIME: &str = "dddd-dd-ddTdd:dd:dd";

/// `text` with each id and time zero made up replaced by its placeholder. A byte scan, not a
/// regex: it runs on every request, and a regex's compilation would cost more than the scan.
fn volatile(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut at, mut copied) = (0, 0);
    while at < bytes.len() {
        match volatile_at(bytes, at) {
            Some((len, placeholder)) => {
                out.push_str(&text[copied..at]);
                out.push_str(placeholder);
                at += len;
                copied = at;
            }
            None => at += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The length and placeholder of the id or time that starts at `at`, on a word boundary.
fn volatile_at(bytes: &[u8], at: usize) -> Option<(usize, &'static str)> {
    let word = |index: usize| {
        bytes
            .get(index)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    if at > 0 && word(at - 1) {
        return None;
    }
    let rest = &bytes[at..];
    if let Some((shape, placeholder)) = IDS.iter().find(|(shape, _)| fits(shape, rest)) {
        return (!word(at + shape.len())).then_some((shape.len(), *placeholder));
    }
    if !fits(TIME, rest) {
        return None;
    }
    let mut end = TIME.len();
    if rest.get(end) == Some(&b'.') {
        let digits = rest[end + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        end += usize::from(digits > 0) * (1 + digits);
    }
    (rest.get(end) == Some(&b'Z')).then_some((end + 1, "<time>"))
}

/// Whether `bytes` starts with text of `shape`'s form.
fn fits(shape: &str, bytes: &[u8]) -> bool {
    bytes.len() >= shape.len()
        && shape.bytes().zip(bytes).all(|(want, got)| match want {
            b'h' => got.is_ascii_digit() || (b'a'..=b'f').contains(got),
            b'd' => got.is_ascii_digit(),
            literal => literal == *got,
        })
}

/// The hash a `request` line carries for the canonical form `form`.
pub(crate) fn hash(form: &Value) -> String {
    hash_of_text(&form.to_string())
}

/// [`hash`] of the form whose compact writing is `text`.
fn hash_of_text(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
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
        let made = of(&request(&format!("key={key}")), "openai", "m", &masks);
        assert!(!made.form.to_string().contains(key), "{}", made.form);
        let again = of(&request(&format!("key={key}")), "openai", "m", &masks);
        assert_eq!(made.hash, again.hash);
        let other = of(&request("nothing"), "openai", "m", &masks);
        assert_ne!(made.hash, other.hash);
        // What check recomputes: the hash of the form as read back from its line.
        let read_back: Value = serde_json::from_str(&made.form.to_string()).unwrap();
        assert_eq!(hash(&read_back), made.hash);
        assert!(made.hash.starts_with("sha256:"));
    }

    fn masks() -> Masks {
        Masks::new(Secrets::default(), Path::new("/home/dev/project"))
    }

    #[test]
    fn ids_times_and_the_workspace_are_placeholders() {
        let said = "task_id: task_6ec33d7bb1fd\nstarted_at: 2026-12-07T13:01:46.938Z\n\
                    /home/dev/project/src/lib.rs";
        let made = of(&request(said), "openai", "m", &masks());
        assert_eq!(
            hash(&made.form),
            made.hash,
            "placeholders keep the hash the value's"
        );
        let text = made.form.to_string();
        assert!(text.contains("task_id: task_…"), "{text}");
        assert!(text.contains("started_at: <time>"), "{text}");
        assert!(text.contains("<workspace>/src/lib.rs"), "{text}");
        let other = "task_id: task_0123456789ab\nstarted_at: 2026-12-08T01:00:00Z\n\
                     /ci/checkout/src/lib.rs";
        let elsewhere = Masks::new(Secrets::default(), Path::new("/ci/checkout"));
        assert_eq!(
            of(&request(other), "openai", "m", &elsewhere).form,
            made.form
        );
        // The root `/` is in every path: it is not masked.
        let root = Masks::new(Secrets::default(), Path::new("/"));
        let unmasked = of(&request(said), "openai", "m", &root).form.to_string();
        assert!(unmasked.contains("/home/dev"), "{unmasked}");
    }
}
