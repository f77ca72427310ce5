//! Structured output: an agent asked for JSON that matches a schema, and
//! the check of what it sent back.
//!
//! A workflow's next step reads fields, not prose, so an agent given a
//! schema is asked for one JSON object and nothing else. Its answer cannot
//! be trusted any more than a tool call's input can (lesson 2): it is
//! parsed — a Markdown ```json fence around it is tolerated, models add
//! one out of habit — and validated with the `jsonschema` crate, which
//! implements the whole of JSON Schema rather than the handful of keywords
//! a hand-written checker would. An answer that fails gets one repair
//! request that quotes the exact error (see [`super::agent`]); a second
//! failure fails the call.

use serde_json::Value;

// ANCHOR: prompt
/// The agent's prompt when its answer must match `schema`.
pub fn structured_prompt(prompt: &str, schema: &Value) -> String {
    let schema = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
    format!(
        "{prompt}\n\nWhen you are done, reply with one JSON object and nothing else (no prose, \
         no Markdown) that matches this JSON Schema:\n{schema}"
    )
}

/// The follow-up sent once when the answer did not parse or match.
pub fn repair_prompt(error: &SchemaError) -> String {
    format!(
        "Your answer could not be used: {error}\nReply again with only the corrected JSON \
         object, matching the schema you were given."
    )
}
// ANCHOR_END: prompt

// ANCHOR: check
/// Parses `text` as JSON (inside a ```json fence or not) and validates it
/// against `schema`. The error says what was wrong, in words the agent
/// can act on: where the JSON broke, or each schema violation with its
/// place in the object.
pub fn check(text: &str, schema: &Value) -> Result<Value, SchemaError> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|error| SchemaError::InvalidSchema(error.to_string()))?;
    let body = unfence(text);
    let value: Value =
        serde_json::from_str(body).map_err(|error| SchemaError::NotJson(error.to_string()))?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|error| {
            let place = error.instance_path().to_string();
            if place.is_empty() {
                error.to_string()
            } else {
                format!("at {place}: {error}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(SchemaError::Mismatch(problems))
    }
}

/// Why an answer was not used. The agent reads the message in its repair
/// request; it says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The workflow's own schema is broken: no answer can pass.
    #[error("the workflow's schema is not a valid JSON Schema: {0}")]
    InvalidSchema(String),
    /// The answer does not parse (serde's reason).
    #[error("the reply is not JSON ({0})")]
    NotJson(String),
    /// Each violation, with its place in the object.
    #[error("the JSON does not match the schema: {}", .0.join("; "))]
    Mismatch(Vec<String>),
}
// ANCHOR_END: check

/// The text inside a Markdown code fence, if the whole answer is one;
/// otherwise the trimmed text.
fn unfence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(inner) = rest.strip_suffix("```") else {
        return trimmed;
    };
    // Drop the info string (`json`) on the opening line.
    match inner.split_once('\n') {
        Some((_info, body)) => body.trim(),
        None => inner.trim(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn verdict() -> Value {
        json!({
            "type": "object",
            "required": ["isReal"],
            "properties": {"isReal": {"type": "boolean"}},
            "additionalProperties": false
        })
    }

    #[test]
    fn valid_json_passes_with_or_without_a_fence() {
        assert_eq!(
            check(r#"{"isReal": true}"#, &verdict()),
            Ok(json!({"isReal": true}))
        );
        assert_eq!(
            check("```json\n{\"isReal\": false}\n```", &verdict()),
            Ok(json!({"isReal": false}))
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let not_json = check("It is real.", &verdict()).unwrap_err().to_string();
        assert!(not_json.contains("not JSON"), "{not_json}");
        let wrong = check(r#"{"isReal": "yes"}"#, &verdict())
            .unwrap_err()
            .to_string();
        assert!(wrong.contains("/isReal"), "{wrong}");
        assert!(wrong.contains("boolean"), "{wrong}");
        let missing = check("{}", &verdict()).unwrap_err().to_string();
        assert!(missing.contains("isReal"), "{missing}");
        let bad_schema = check("{}", &json!({"type": 12})).unwrap_err().to_string();
        assert!(
            bad_schema.contains("not a valid JSON Schema"),
            "{bad_schema}"
        );
    }
}
