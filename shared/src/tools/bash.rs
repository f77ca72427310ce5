//! The `bash` tool. (Being written.)

use serde_json::{Value, json};

use super::Workspace;
use crate::hooks::ToolOutput;
use crate::protocol::ToolSpec;

/// What the model is told about `bash`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        "bash",
        "Run a shell command in the workspace.",
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    )
}

/// Runs the model's `bash` call.
pub async fn call(_workspace: &Workspace, _input: &Value) -> ToolOutput {
    ToolOutput::error("not implemented")
}
