//! Turning the model's arguments object into a typed struct, with errors the model can act on.

use serde::de::DeserializeOwned;
use serde_json::Value;

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
}
