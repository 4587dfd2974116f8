//! Secret redaction for anything that may reach a user, a log or a model.
//!
//! Error messages quote what servers said, and servers love to echo the key they rejected
//! ("Incorrect API key provided: sk-..."). Everything that leaves the process with foreign text
//! in it passes through [`redact`] first: the provider's errors today, the output writers too.

use std::sync::LazyLock;

use regex::Regex;

/// What a removed secret is replaced with.
pub const MASK: &str = "[REDACTED]";

/// Configured secrets shorter than this are not replaced verbatim: they cannot meaningfully
/// leak, and masking every occurrence of a two-letter string would garble the message.
const MIN_SECRET_LEN: usize = 4;

/// Key-shaped text that is masked whether or not it was configured. Each pattern keeps its
/// label (group 1) so the reader still sees *what* was removed.
const SHAPE_PATTERNS: [&str; 3] = [
    // OpenAI-style keys: sk-, sk-proj-, sk-ant-..., at least 16 key characters.
    r"()\bsk-[A-Za-z0-9_\-]{16,}",
    // `Authorization: Bearer <token>` as quoted in an error or a debug dump.
    r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=\-]{16,}",
    // `api_key=...` in a query string, `api-key: ...` in a header, `"apiKey": "..."`.
    r#"(?i)(\bapi[_\-]?key["']?\s*[:=]\s*["']?)[^\s"'&,;]{12,}"#,
];

/// Text every match of some shape contains (compared ignoring ASCII case). Text holding none
/// of them cannot match, so it skips the shapes — and a run whose output never holds one never
/// compiles them, which costs more than all the rest of `zero exec --list-tools` (measured in
/// docs/PERFORMANCE.md). Keep in step with [`SHAPE_PATTERNS`].
const SHAPE_ANCHORS: [&str; 3] = ["sk-", "bearer", "api"];

static SHAPES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    SHAPE_PATTERNS
        .iter()
        .map(|pattern| Regex::new(pattern).expect("redaction patterns are valid"))
        .collect()
});

/// Whether `text` holds any of the [`SHAPE_ANCHORS`].
fn may_hold_shape(text: &str) -> bool {
    SHAPE_ANCHORS.iter().any(|anchor| {
        text.as_bytes()
            .windows(anchor.len())
            .any(|window| window.eq_ignore_ascii_case(anchor.as_bytes()))
    })
}

/// Returns `text` with every configured secret (verbatim) and every key-shaped string masked.
///
/// `secrets` are the values this process knows to be secret (the configured API key); empty and
/// very short ones are skipped. The shapes cover keys the process was never told about, such as
/// a different key a proxy echoes back.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        if secret.len() >= MIN_SECRET_LEN {
            out = out.replace(secret, MASK);
        }
    }
    if !may_hold_shape(&out) {
        return out;
    }
    for shape in SHAPES.iter() {
        out = shape
            .replace_all(&out, format!("${{1}}{MASK}"))
            .into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_secret_is_removed_verbatim() {
        let text = "HTTP 401: key 'local-key-42' rejected; again: local-key-42";
        let out = redact(text, &["local-key-42"]);
        assert_eq!(
            out,
            "HTTP 401: key '[REDACTED]' rejected; again: [REDACTED]"
        );
    }

    #[test]
    fn short_and_empty_secrets_are_ignored() {
        assert_eq!(redact("a b c", &["", "a"]), "a b c");
    }

    #[test]
    fn sk_shaped_keys_are_masked_even_when_not_configured() {
        let out = redact(
            "Incorrect API key provided: sk-proj-abcdefghijklmnop1234.",
            &[],
        );
        assert_eq!(out, "Incorrect API key provided: [REDACTED].");
        // Too short to be a key: left alone so ordinary words survive.
        assert_eq!(redact("task-sk-short", &[]), "task-sk-short");
    }

    #[test]
    fn bearer_tokens_keep_their_label() {
        let out = redact("sent Authorization: Bearer abcdefghijklmnopqrstuvwxyz", &[]);
        assert_eq!(out, "sent Authorization: Bearer [REDACTED]");
    }

    #[test]
    fn api_key_parameters_and_headers_are_masked() {
        let url = redact("GET https://x.example/v1?api_key=0123456789abcdef&q=1", &[]);
        assert_eq!(url, "GET https://x.example/v1?api_key=[REDACTED]&q=1");
        let header = redact("api-key: 0123456789abcdef", &[]);
        assert_eq!(header, "api-key: [REDACTED]");
        let json = redact(r#"{"apiKey": "0123456789abcdef"}"#, &[]);
        assert_eq!(json, r#"{"apiKey": "[REDACTED]"}"#);
    }

    #[test]
    fn every_shape_needs_one_of_the_anchors() {
        for pattern in SHAPE_PATTERNS {
            let pattern = pattern.to_ascii_lowercase();
            assert!(
                SHAPE_ANCHORS.iter().any(|anchor| pattern.contains(anchor)),
                "{pattern} has no anchor, so text without one would skip it"
            );
        }
        assert!(may_hold_shape("Authorization: BEARER x"));
        assert!(!may_hold_shape("HTTP 400: model not found"));
    }

    #[test]
    fn text_without_secrets_is_unchanged() {
        let text = "HTTP 400 from http://127.0.0.1:8080/v1/chat/completions: model not found";
        assert_eq!(redact(text, &["sk-configured-key-123456"]), text);
    }
}
