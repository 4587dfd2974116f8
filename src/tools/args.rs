//! Turning the model's arguments object into a typed struct, with errors the model can act on.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::ToolError;

/// Deserializes a tool's arguments. Missing fields, wrong types and unknown fields become
/// [`ToolError::InvalidArguments`] carrying serde's precise message (which names the field).
pub(crate) fn parse_args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    if !args.is_object() {
        return Err(ToolError::InvalidArguments(format!(
            "expected a JSON object of arguments, got {}",
            json_kind(&args)
        )));
    }
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// A whole-number argument with a range: the schema the model is shown and the check its
/// value is held to, from one description, so the two cannot drift apart.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounded<T> {
    /// The argument's name, as the schema and the messages spell it.
    pub(crate) name: &'static str,
    /// The smallest value allowed.
    pub(crate) min: T,
    /// The largest value allowed, if there is one.
    pub(crate) max: Option<T>,
}

impl<T: Copy + PartialOrd + fmt::Display + Serialize> Bounded<T> {
    /// The argument's JSON Schema: an integer within the range, described for the model.
    pub(crate) fn schema(&self, description: &str) -> Value {
        let mut schema = json!({ "type": "integer", "minimum": self.min });
        if let Some(max) = self.max {
            schema["maximum"] = json!(max);
        }
        schema["description"] = json!(description);
        schema
    }

    /// `value` if it is within the range; else an error that names the argument and the
    /// bound it broke.
    pub(crate) fn check(&self, value: T) -> Result<T, ToolError> {
        let name = self.name;
        if value < self.min {
            return Err(ToolError::InvalidArguments(format!(
                "`{name}` must be at least {}",
                self.min
            )));
        }
        match self.max {
            Some(max) if value > max => Err(ToolError::InvalidArguments(format!(
                "`{name}` is {value}; the maximum is {max}"
            ))),
            _ => Ok(value),
        }
    }

    /// The value the call gave, or `default` when it gave none, checked.
    pub(crate) fn or(&self, value: Option<T>, default: T) -> Result<T, ToolError> {
        self.check(value.unwrap_or(default))
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        path: String,
        limit: Option<u64>,
    }

    #[test]
    fn errors_name_the_field() {
        let missing = parse_args::<Args>(json!({})).unwrap_err().to_string();
        assert!(missing.contains("missing field `path`"), "{missing}");
        let typed = parse_args::<Args>(json!({"path": "a", "limit": "x"}))
            .unwrap_err()
            .to_string();
        assert!(typed.contains("invalid type"), "{typed}");
        let unknown = parse_args::<Args>(json!({"path": "a", "file": 1}))
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("unknown field `file`"), "{unknown}");
        let not_object = parse_args::<Args>(json!([1])).unwrap_err().to_string();
        assert!(not_object.contains("an array"), "{not_object}");
    }

    const LIMIT: Bounded<u64> = Bounded {
        name: "limit",
        min: 1,
        max: Some(10),
    };

    #[test]
    fn a_bounded_argument_takes_its_default_and_values_in_range_only() {
        assert_eq!(LIMIT.or(None, 7), Ok(7));
        assert_eq!(LIMIT.or(Some(1), 7), Ok(1));
        assert_eq!(LIMIT.or(Some(10), 7), Ok(10));
        assert_eq!(
            LIMIT.check(0).unwrap_err().to_string(),
            "invalid arguments: `limit` must be at least 1"
        );
        assert_eq!(
            LIMIT.check(11).unwrap_err().to_string(),
            "invalid arguments: `limit` is 11; the maximum is 10"
        );
        let unbounded = Bounded { max: None, ..LIMIT };
        assert_eq!(unbounded.check(u64::MAX), Ok(u64::MAX));
    }

    #[test]
    fn a_bounded_argument_describes_its_range_in_the_schema() {
        assert_eq!(
            LIMIT.schema("How many."),
            json!({"type": "integer", "minimum": 1, "maximum": 10, "description": "How many."})
        );
        let unbounded = Bounded { max: None, ..LIMIT };
        assert_eq!(
            unbounded.schema("Any."),
            json!({"type": "integer", "minimum": 1, "description": "Any."})
        );
    }
}
