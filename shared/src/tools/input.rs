//! Turning the model's JSON input into typed arguments.
//!
//! Each tool declares its arguments as a small serde struct and parses the
//! model's raw input with [`parse_input`]. When the input does not fit, the
//! model gets an error it can act on: which tool, which field, what was
//! wrong.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::hooks::ToolOutput;

/// Parses `input` as `T`. On failure the error output names the tool and
/// says which field was missing or mistyped, so the model can fix its call:
///
/// ```text
/// Invalid input for read_file: missing field `path`
/// Invalid input for read_file: field `path`: invalid type: integer `3`, expected a string
/// ```
pub fn parse_input<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, ToolOutput> {
    serde_json::from_value(input.clone()).map_err(|error| {
        let problem = match input {
            Value::Object(fields) => bad_fields::<T>(fields).unwrap_or_else(|| error.to_string()),
            other => format!("expected a JSON object of named fields, got {other}"),
        };
        ToolOutput::error(format!("Invalid input for {tool}: {problem}"))
    })
}

/// Finds the fields whose values `T` rejects, described one by one.
///
/// serde's message for a mistyped value ("invalid type: integer `3`,
/// expected a string") does not say which field held it. So each field is
/// tried on its own: with only that field present, any complaint other
/// than "missing field" can only be about that field's value.
fn bad_fields<T: DeserializeOwned>(fields: &Map<String, Value>) -> Option<String> {
    let problems: Vec<String> = fields
        .iter()
        .filter_map(|(name, value)| {
            let alone = Value::Object(Map::from_iter([(name.clone(), value.clone())]));
            match serde_json::from_value::<T>(alone) {
                Err(error) if !error.to_string().starts_with("missing field") => {
                    Some(format!("field `{name}`: {error}"))
                }
                _ => None,
            }
        })
        .collect();
    if problems.is_empty() {
        None
    } else {
        Some(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Args {
        path: String,
        limit: Option<usize>,
    }

    fn error_text(input: Value) -> String {
        match parse_input::<Args>("demo", &input) {
            Ok(args) => panic!("accepted {input} as {args:?}"),
            Err(output) => {
                assert!(output.is_error);
                output.text
            }
        }
    }

    #[test]
    fn names_missing_and_mistyped_fields() {
        assert_eq!(
            error_text(json!({})),
            "Invalid input for demo: missing field `path`"
        );
        assert_eq!(
            error_text(json!({"path": 3})),
            "Invalid input for demo: field `path`: invalid type: integer `3`, expected a string"
        );
        let both = error_text(json!({"path": true, "limit": -1}));
        assert!(both.contains("field `path`"), "{both}");
        assert!(both.contains("field `limit`"), "{both}");
        assert!(error_text(json!("read it")).contains("expected a JSON object"));
    }

    #[test]
    fn extra_fields_are_ignored() {
        let args: Args = parse_input("demo", &json!({"path": "a", "why": "because"})).unwrap();
        assert_eq!(args.path, "a");
    }
}
