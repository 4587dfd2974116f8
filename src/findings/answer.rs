//! The reviewer's answer: one fixed JSON shape, a summary and the findings, checked by the
//! `--output-schema` machinery (its instructions to the model, its check, its retries) before
//! it is read here.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How serious a finding is, least serious first (so `>=` compares seriousness).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Note,
    /// Probably wrong, or risky.
    Warning,
    /// Wrong: a bug, a vulnerability, a broken contract.
    Error,
}

impl Severity {
    /// Every severity, least serious first: the schema's list is derived from it.
    pub const ALL: [Severity; 3] = [Severity::Note, Severity::Warning, Severity::Error];

    /// The schema's word for it (`error`, `warning`, `note`).
    pub fn word(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// What kind of problem a finding is: a small fixed set, so the rule a finding is reported
/// under (SARIF's `ruleId`, which code scanning keeps alerts by) is the same however the
/// reviewer words it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// A bug, a wrong result, a broken contract, a crash (the default).
    #[default]
    Correctness,
    /// Something an attacker can use: injection, a leak, a missing check.
    Security,
    /// Needless cost in time or memory.
    Performance,
    /// Code that works but is hard to read, change or test.
    Maintainability,
}

impl Category {
    /// Every category, in the order SARIF lists their rules: the schema's list is derived
    /// from it.
    pub const ALL: [Category; 4] = [
        Category::Correctness,
        Category::Security,
        Category::Performance,
        Category::Maintainability,
    ];

    /// The schema's word for it.
    pub fn word(self) -> &'static str {
        match self {
            Category::Correctness => "correctness",
            Category::Security => "security",
            Category::Performance => "performance",
            Category::Maintainability => "maintainability",
        }
    }

    /// The id of the rule its findings are reported under (SARIF's `ruleId`, Code Quality's
    /// `check_name`): `zero-review/<word>`.
    pub fn rule_id(self) -> String {
        format!("zero-review/{}", self.word())
    }

    /// What it covers, in one sentence (the schema's description and SARIF's rule text).
    pub fn description(self) -> &'static str {
        match self {
            Category::Correctness => "A bug, a wrong result, a broken contract or a crash.",
            Category::Security => {
                "Something an attacker can use: injection, a leaked secret, a missing check."
            }
            Category::Performance => "Needless cost in time or memory.",
            Category::Maintainability => "Code that works but is hard to read, change or test.",
        }
    }
}

/// One finding, as the reviewer states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The file, relative to the repository's root, as the diff names its new side.
    pub path: String,
    /// The first line it is about (1-based, in the new version of the file).
    pub line: u32,
    /// The last line it is about, when it spans several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    /// How serious it is.
    pub severity: Severity,
    /// What kind of problem it is ([`Category::Correctness`] when the reviewer does not say).
    #[serde(default)]
    pub category: Category,
    /// One line: what is wrong.
    pub title: String,
    /// Why it matters and how to fix it (Markdown).
    pub body: String,
    /// Replacement text for the lines `line..=end_line`, when the fix is that simple.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// The reviewer's whole answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// A short verdict on the change as a whole.
    pub summary: String,
    /// What it found, most severe first.
    pub findings: Vec<Finding>,
}

/// The longest title the schema allows: a title is one line in an annotation or a table.
const TITLE_MAX: u32 = 200;

impl Answer {
    /// The JSON Schema the reviewer's final answer must satisfy (draft 2020-12). The field
    /// descriptions are what the model is told each field means.
    pub fn schema() -> Value {
        let severities: Vec<&str> = Severity::ALL.iter().map(|s| s.word()).collect();
        let categories: Vec<&str> = Category::ALL.iter().map(|c| c.word()).collect();
        let category_help: Vec<String> = Category::ALL
            .iter()
            .map(|c| format!("{}: {}", c.word(), c.description()))
            .collect();
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "required": ["summary", "findings"],
            "properties": {
                "summary": {
                    "type": "string",
                    "description": "A one- or two-sentence verdict on the change as a whole."
                },
                "findings": {
                    "type": "array",
                    "description": "The problems found, most severe first; empty when there are none.",
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["path", "line", "severity", "title", "body"],
                        "properties": {
                            "path": {
                                "type": "string",
                                "minLength": 1,
                                "description": "The changed file, relative to the repository root, exactly as the diff's `+++ b/` line names it."
                            },
                            "line": {
                                "type": "integer",
                                "minimum": 1,
                                "description": "The first line of the problem, numbered in the new version of the file; it must be one of the lines the diff shows for that file."
                            },
                            "end_line": {
                                "type": "integer",
                                "minimum": 1,
                                "description": "The last line of the problem, when it spans several lines."
                            },
                            "severity": {
                                "enum": severities,
                                "description": "error: a bug, vulnerability or broken contract; warning: probably wrong or risky; note: worth knowing."
                            },
                            "category": {
                                "enum": categories,
                                "description": format!(
                                    "What kind of problem it is (correctness when left out). {}",
                                    category_help.join(" ")
                                )
                            },
                            "title": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": TITLE_MAX,
                                "description": "One line: what is wrong."
                            },
                            "body": {
                                "type": "string",
                                "description": "Why it matters and how to fix it (Markdown)."
                            },
                            "suggestion": {
                                "type": "string",
                                "description": "Optional: the exact replacement text for lines line..end_line."
                            }
                        }
                    }
                }
            }
        })
    }

    /// Reads an answer the schema accepted. The error is a bug's (the schema and this type
    /// disagree), not the model's.
    pub fn from_checked(value: Value) -> Result<Answer, String> {
        serde_json::from_value(value)
            .map_err(|e| format!("the reviewer's answer passed its schema but not its reader: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structured::OutputSchema;

    #[test]
    fn the_schema_is_valid_and_agrees_with_the_reader() {
        let schema = OutputSchema::new(Answer::schema()).unwrap();
        let text = r#"{"summary":"ok","findings":[{"path":"src/a.rs","line":3,"end_line":4,
            "severity":"warning","title":"t","body":"b","suggestion":"x"}]}"#;
        let answer = Answer::from_checked(schema.check(text).unwrap()).unwrap();
        assert_eq!(answer.findings[0].severity, Severity::Warning);
        assert_eq!(answer.findings[0].end_line, Some(4));
        assert_eq!(answer.findings[0].category, Category::Correctness);
        let text = r#"{"summary":"ok","findings":[{"path":"a","line":1,"severity":"note",
            "category":"security","title":"t","body":"b"}]}"#;
        let answer = Answer::from_checked(schema.check(text).unwrap()).unwrap();
        assert_eq!(answer.findings[0].category, Category::Security);
    }

    #[test]
    fn the_schema_refuses_what_the_reader_cannot_place() {
        let schema = OutputSchema::new(Answer::schema()).unwrap();
        for bad in [
            r#"{"summary":"ok","findings":[{"path":"a","line":0,"severity":"error","title":"t","body":"b"}]}"#,
            r#"{"summary":"ok","findings":[{"path":"a","line":1,"severity":"fatal","title":"t","body":"b"}]}"#,
            r#"{"summary":"ok","findings":[{"path":"","line":1,"severity":"note","title":"t","body":"b"}]}"#,
            r#"{"summary":"ok","findings":[{"path":"a","line":1,"severity":"note","title":"t","body":"b","rule":"x"}]}"#,
            r#"{"summary":"ok","findings":[{"path":"a","line":1,"severity":"note","category":"style","title":"t","body":"b"}]}"#,
            r#"{"findings":[]}"#,
        ] {
            assert!(schema.check(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn severity_and_category_words_are_the_serde_names() {
        for severity in Severity::ALL {
            assert_eq!(serde_json::to_value(severity).unwrap(), severity.word());
        }
        for category in Category::ALL {
            assert_eq!(serde_json::to_value(category).unwrap(), category.word());
        }
    }
}
