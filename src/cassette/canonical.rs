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

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::provider::Request;
use crate::redact::Secrets;

/// The canonical form of `request`, sent on `wire` to `model`, with `secrets` masked.
pub(crate) fn of(request: &Request, wire: &str, model: &str, secrets: &Secrets) -> Value {
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
    let text = secrets.apply(&form.to_string());
    // Redaction never breaks the JSON it is given (a mask never takes half an escape); were
    // it to, the masked text stands as a string, which no request equals.
    serde_json::from_str(&text).unwrap_or(Value::String(text))
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
        let secrets = Secrets::default();
        let key = "sk-abcdefghijklmnopqrstuvwxyz0123";
        let form = of(&request(&format!("key={key}")), "openai", "m", &secrets);
        assert!(!form.to_string().contains(key), "{form}");
        let again = of(&request(&format!("key={key}")), "openai", "m", &secrets);
        assert_eq!(hash(&form), hash(&again));
        let other = of(&request("nothing"), "openai", "m", &secrets);
        assert_ne!(hash(&form), hash(&other));
        // What check recomputes: the hash of the form as read back from its line.
        let read_back: Value = serde_json::from_str(&form.to_string()).unwrap();
        assert_eq!(hash(&read_back), hash(&form));
        assert!(hash(&form).starts_with("sha256:"));
    }
}
