//! The final answer against `--output-schema`: an answer that misses the schema goes back to
//! the model with what is wrong, up to `--schema-retries` times, and the run gives up on the
//! next one.

use serde_json::Value;

use crate::structured::Violation;

use super::SchemaCheck;

/// The run's schema, if any, and how many rejected answers went back to the model so far.
pub(super) struct SchemaRetries<'a> {
    check: Option<SchemaCheck<'a>>,
    rejected: u32,
}

/// What becomes of an answer given without a tool call.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    /// The answer stands: the JSON value it is, with a schema; `None` without one.
    Accepted(Option<Value>),
    /// It missed the schema and goes back with its violations: retry `retry` of `retries`.
    Retry {
        /// What is wrong with it.
        violations: Vec<Violation>,
        /// Which retry this is, from 1.
        retry: u32,
        /// How many retries the run allows.
        retries: u32,
    },
    /// It missed the schema and no retry is left: the run ends unsatisfied.
    GiveUp {
        /// What is wrong with it.
        violations: Vec<Violation>,
        /// How many retries went back before it.
        retries: u32,
    },
}

impl<'a> SchemaRetries<'a> {
    /// No answer rejected yet, against `check` (none: every answer stands).
    pub(super) fn new(check: Option<SchemaCheck<'a>>) -> Self {
        SchemaRetries { check, rejected: 0 }
    }

    /// The answer `text` checked against the run's schema; `None` when it has none.
    pub(super) fn check(&self, text: &str) -> Option<Result<Value, Vec<Violation>>> {
        self.check.map(|check| check.schema.check(text))
    }

    /// Whether the run has a schema and `text` satisfies it: then it is the answer asked for,
    /// whatever else it looks like.
    pub(super) fn accepts(&self, text: &str) -> bool {
        matches!(self.check(text), Some(Ok(_)))
    }

    /// Decides on the answer `text`, counting a rejection that goes back for another try.
    pub(super) fn judge(&mut self, text: &str) -> Verdict {
        let violations = match self.check(text) {
            None => return Verdict::Accepted(None),
            Some(Ok(value)) => return Verdict::Accepted(Some(value)),
            Some(Err(violations)) => violations,
        };
        let retries = self.check.map_or(0, |check| check.retries);
        if self.rejected == retries {
            return Verdict::GiveUp {
                violations,
                retries,
            };
        }
        self.rejected += 1;
        Verdict::Retry {
            violations,
            retry: self.rejected,
            retries,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::structured::OutputSchema;

    fn schema() -> OutputSchema {
        OutputSchema::new(json!({
            "type": "object",
            "properties": {"verdict": {"type": "string"}},
            "required": ["verdict"]
        }))
        .unwrap()
    }

    /// `schema` held with `retries` retries.
    fn retrying(schema: &OutputSchema, retries: u32) -> SchemaRetries<'_> {
        SchemaRetries::new(Some(SchemaCheck { schema, retries }))
    }

    #[test]
    fn without_a_schema_every_answer_stands_as_text() {
        let mut retries = SchemaRetries::new(None);
        assert_eq!(retries.judge("anything"), Verdict::Accepted(None));
        assert!(!retries.accepts("{\"verdict\": \"ok\"}"));
    }

    #[test]
    fn an_answer_that_satisfies_the_schema_stands_with_its_value() {
        let schema = schema();
        let mut retries = retrying(&schema, 1);
        assert!(retries.accepts("{\"verdict\": \"ok\"}"));
        assert_eq!(
            retries.judge("```json\n{\"verdict\": \"ok\"}\n```"),
            Verdict::Accepted(Some(json!({"verdict": "ok"})))
        );
    }

    #[test]
    fn misses_go_back_until_the_retries_are_spent_then_the_run_gives_up() {
        let schema = schema();
        let mut retries = retrying(&schema, 2);
        for expected in [1, 2] {
            match retries.judge("{}") {
                Verdict::Retry {
                    violations,
                    retry,
                    retries,
                } => {
                    assert_eq!((retry, retries), (expected, 2));
                    assert!(violations[0].message.contains("verdict"), "{violations:?}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(
            retries.judge("not json"),
            Verdict::GiveUp { retries: 2, .. }
        ));
    }

    #[test]
    fn with_no_retries_the_first_miss_gives_up() {
        let schema = schema();
        let mut retries = retrying(&schema, 0);
        assert!(matches!(
            retries.judge("{}"),
            Verdict::GiveUp { retries: 0, .. }
        ));
    }
}
