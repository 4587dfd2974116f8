//! Structured answers (`--output-schema`): the JSON Schema a run's final answer must satisfy,
//! how the model is told it, and the check that decides whether an answer does.
//!
//! Validation is the `jsonschema` crate's (drafts 2020-12, 2019-09, 7, 6 and 4, picked by the
//! schema's `$schema`, 2020-12 without one). A schema may refer only to itself: no `$ref` is
//! fetched from a file or the network, so a schema cannot make a run read or reach anything.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use jsonschema::{Draft, Validator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest schema file read: far beyond any real schema (it is sent with every request).
const SCHEMA_FILE_LIMIT: u64 = 1024 * 1024;

/// The most violations one rejection lists; the rest are counted.
const MAX_VIOLATIONS: usize = 20;

/// A checked JSON Schema for the final answer, ready to validate with.
#[derive(Clone)]
pub struct OutputSchema {
    schema: Arc<Value>,
    validator: Arc<Validator>,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OutputSchema").field(&self.schema).finish()
    }
}

/// One way an answer fails its schema: where in the answer, and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// A JSON Pointer into the answer (`""` for the answer as a whole).
    pub path: String,
    /// What is wrong, for the model and for a person.
    pub message: String,
}

impl OutputSchema {
    /// Reads and checks the schema file at `path` (as given on the command line: a pipe from
    /// process substitution is fine). The error names the file and the line and column, or
    /// the schema location, at fault.
    pub fn load(path: &Path) -> Result<OutputSchema, String> {
        let shown = path.display();
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(SCHEMA_FILE_LIMIT + 1).read_to_end(&mut bytes))
            .map_err(|e| format!("--output-schema {shown}: cannot read it: {e}"))?;
        if bytes.len() as u64 > SCHEMA_FILE_LIMIT {
            return Err(format!(
                "--output-schema {shown}: larger than {SCHEMA_FILE_LIMIT} bytes; the schema goes \
                 to the model with every request, so keep it small"
            ));
        }
        let schema: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("--output-schema {shown}: not JSON: {e}"))?;
        OutputSchema::new(schema)
            .map_err(|e| format!("--output-schema {shown}: not a valid JSON Schema: {e}"))
    }

    /// Checks `schema` against its draft's meta-schema and compiles it (building the validator
    /// does both). The error says where in the schema the fault is
    /// (`at /properties/n/type: ...`).
    pub fn new(schema: Value) -> Result<OutputSchema, String> {
        if let Some(uri) = schema.get("$schema").and_then(Value::as_str)
            && Draft::from_schema_uri(uri) == Draft::Unknown
        {
            return Err(format!(
                "at /$schema: `{uri}` is not a JSON Schema draft zero knows (2020-12, 2019-09, \
                 draft-07, draft-06, draft-04)"
            ));
        }
        // The crate's own, non-generic entry point: building through its generic options
        // would compile its whole validator a second time into this crate (+1.2 MB of code
        // that every run maps at start-up, docs/PERFORMANCE.md). Its defaults are the
        // drafts': `format` is an annotation from 2019-09 on, an assertion before.
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            if matches!(
                e.kind(),
                jsonschema::error::ValidationErrorKind::Referencing(_)
            ) {
                format!(
                    "{e}. zero fetches no schema from a file or the network: put every schema \
                     it refers to in this one (under $defs)"
                )
            } else {
                at(&e.instance_path().to_string(), &e)
            }
        })?;
        Ok(OutputSchema {
            schema: Arc::new(schema),
            validator: Arc::new(validator),
        })
    }

    /// The schema itself, as the provider may ask the server to constrain decoding to it.
    pub fn schema(&self) -> &Arc<Value> {
        &self.schema
    }

    /// The final answer `text` as the JSON value it must be, or what is wrong with it. One
    /// surrounding Markdown fence (```` ```json ````) is accepted and stripped; any other text
    /// around the value is not.
    pub fn check(&self, text: &str) -> Result<Value, Vec<Violation>> {
        let whole = |message: String| {
            vec![Violation {
                path: String::new(),
                message,
            }]
        };
        let body = unfenced(text);
        if body.is_empty() {
            return Err(whole("the answer is empty, not a JSON value".into()));
        }
        let value: Value = serde_json::from_str(body).map_err(|e| {
            whole(format!(
                "the answer is not one JSON value ({e}); it must be the JSON value alone, with \
                 no text around it"
            ))
        })?;
        let mut violations: Vec<Violation> = Vec::new();
        let mut more = 0usize;
        for error in self.validator.iter_errors(&value) {
            if violations.len() == MAX_VIOLATIONS {
                more += 1;
                continue;
            }
            violations.push(Violation {
                path: error.instance_path().to_string(),
                message: error.to_string(),
            });
        }
        if more > 0 {
            violations.push(Violation {
                path: String::new(),
                message: format!("and {more} more violations"),
            });
        }
        if violations.is_empty() {
            Ok(value)
        } else {
            Err(violations)
        }
    }

    /// What the system prompt tells the model about its final answer.
    pub fn instructions(&self) -> String {
        format!(
            "## Final answer format\n\nYour final answer (the reply in which you call no tool) \
             must be exactly one JSON value that satisfies the JSON Schema below, and nothing \
             else: no prose before or after it, no Markdown. Use tools as usual until you are \
             ready; only the final answer has this shape.\n\n```json\n{}\n```\n",
            self.schema
        )
    }
}

/// What the model is told when its final answer does not satisfy the schema.
pub fn feedback(violations: &[Violation]) -> String {
    format!(
        "Your final answer does not satisfy the output schema:\n{}\nReply with the corrected \
         final answer: only the JSON value, nothing else.",
        list(violations)
    )
}

/// The violations as lines, `- at /path: message` (the answer as a whole has no path).
pub fn list(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| match v.path.as_str() {
            "" => format!("- {}", v.message),
            path => format!("- at {path}: {}", v.message),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` without one surrounding Markdown code fence (with no info string or `json`), trimmed.
fn unfenced(text: &str) -> &str {
    let text = text.trim();
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some((info, body)) = rest.split_once('\n') else {
        return text;
    };
    let info = info.trim();
    if !(info.is_empty() || info.eq_ignore_ascii_case("json")) {
        return text;
    }
    match body.trim_end().strip_suffix("```") {
        Some(body) => body.trim(),
        None => text,
    }
}

/// A schema error with its location in the schema (`at /type: ...`).
fn at(location: &str, error: &impl std::fmt::Display) -> String {
    match location {
        "" => error.to_string(),
        location => format!("at {location}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verdict() -> OutputSchema {
        OutputSchema::new(json!({
            "type": "object",
            "properties": {
                "verdict": {"enum": ["pass", "fail"]},
                "findings": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["verdict", "findings"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn a_valid_answer_is_its_value_fenced_or_not() {
        let expected = json!({"verdict": "pass", "findings": []});
        for text in [
            r#"{"verdict":"pass","findings":[]}"#,
            "  \n{\"verdict\": \"pass\", \"findings\": []}\n",
            "```json\n{\"verdict\": \"pass\", \"findings\": []}\n```",
            "```JSON \n{\"verdict\": \"pass\", \"findings\": []}\n```\n",
            "```\n{\"verdict\": \"pass\", \"findings\": []}\n```",
        ] {
            assert_eq!(verdict().check(text), Ok(expected.clone()), "{text:?}");
        }
    }

    #[test]
    fn text_around_the_value_is_not_an_answer() {
        for text in [
            "Here it is: {\"verdict\": \"pass\", \"findings\": []}",
            "{\"verdict\": \"pass\", \"findings\": []} Done.",
            "```python\n{\"verdict\": \"pass\", \"findings\": []}\n```",
            "```json\n{\"verdict\": \"pass\", \"findings\": []}",
            "",
            "   ",
        ] {
            let violations = verdict().check(text).unwrap_err();
            assert_eq!(violations.len(), 1, "{text:?}");
            assert_eq!(violations[0].path, "");
        }
    }

    #[test]
    fn each_violation_has_its_pointer() {
        let violations = verdict()
            .check(r#"{"verdict": "maybe", "findings": [1], "extra": true}"#)
            .unwrap_err();
        let paths: Vec<&str> = violations.iter().map(|v| v.path.as_str()).collect();
        assert!(paths.contains(&"/verdict"), "{violations:?}");
        assert!(paths.contains(&"/findings/0"), "{violations:?}");
        assert!(paths.contains(&""), "{violations:?}");
        let listed = list(&violations);
        assert!(
            listed.contains("- at /verdict: \"maybe\" is not one of"),
            "{listed}"
        );
        assert!(feedback(&violations).contains(&listed));
    }

    #[test]
    fn many_violations_are_counted_not_listed() {
        let schema =
            OutputSchema::new(json!({"type": "array", "items": {"type": "string"}})).unwrap();
        let many: Vec<u32> = (0..50).collect();
        let violations = schema
            .check(&serde_json::to_string(&many).unwrap())
            .unwrap_err();
        assert_eq!(violations.len(), MAX_VIOLATIONS + 1);
        assert_eq!(violations[MAX_VIOLATIONS].message, "and 30 more violations");
    }

    #[test]
    fn draft_7_and_2020_12_are_both_read() {
        let draft7 = OutputSchema::new(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"n": {"type": "integer"}},
            "items": [{"$ref": "#/definitions/n"}]
        }))
        .unwrap();
        assert!(draft7.check("[1]").is_ok());
        assert!(draft7.check("[\"x\"]").is_err());
        let draft2020 = OutputSchema::new(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"n": {"type": "integer"}},
            "prefixItems": [{"$ref": "#/$defs/n"}]
        }))
        .unwrap();
        assert!(draft2020.check("[1]").is_ok());
        assert!(draft2020.check("[\"x\"]").is_err());
    }

    #[test]
    fn a_bad_schema_says_where() {
        let cases = [
            (json!({"type": "objekt"}), "at /type"),
            (json!({"required": "verdict"}), "at /required"),
            (json!({"pattern": "(["}), "at /pattern"),
            (json!(42), "42"),
            (
                json!({"$schema": "https://example.com/mine"}),
                "at /$schema",
            ),
            (
                json!({"$ref": "https://example.com/s.json"}),
                "fetches no schema",
            ),
            (json!({"$ref": "file:///etc/passwd"}), "fetches no schema"),
            (json!({"$ref": "#/$defs/missing"}), "missing"),
        ];
        for (schema, expected) in cases {
            let error = OutputSchema::new(schema.clone()).unwrap_err();
            assert!(error.contains(expected), "{schema}: {error}");
        }
    }

    #[test]
    fn formats_are_checked_as_the_draft_says() {
        let draft7 = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "string",
            "format": "date"
        });
        let schema = OutputSchema::new(draft7).unwrap();
        assert!(schema.check("\"2026-12-04\"").is_ok());
        assert!(schema.check("\"yesterday\"").is_err());
        // From 2019-09 on, `format` annotates; `pattern` asserts.
        let annotated = OutputSchema::new(json!({"type": "string", "format": "date"})).unwrap();
        assert!(annotated.check("\"yesterday\"").is_ok());
    }

    #[test]
    fn the_instructions_carry_the_schema() {
        let text = verdict().instructions();
        assert!(text.contains(r#""enum":["pass","fail"]"#), "{text}");
    }
}
