//! Turning the model's JSON input into typed arguments.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::hooks::ToolOutput;

/// Parses `input` as `T`. On failure the error output names the tool and
/// says which field was missing or mistyped, so the model can fix its call.
pub fn parse_input<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, ToolOutput> {
    serde_json::from_value(input.clone())
        .map_err(|error| ToolOutput::error(format!("Invalid input for {tool}: {error}")))
}
