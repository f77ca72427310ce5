//! The `write_file` tool: create or overwrite a file, making any missing
//! parent directories on the way.

use serde::Deserialize;
use serde_json::{Value, json};

use super::Workspace;
use super::files::io_error;
use super::input::parse_input;
use crate::hooks::ToolOutput;
use crate::protocol::ToolSpec;

#[derive(Deserialize)]
struct Input {
    path: String,
    content: String,
}

/// What the model is told about `write_file`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        "write_file",
        "Write a file in the workspace, replacing it if it exists. \
         Missing parent directories are created.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file, relative to the workspace."},
                "content": {"type": "string", "description": "The complete new contents of the file."}
            },
            "required": ["path", "content"]
        }),
    )
}

/// Runs the model's `write_file` call.
pub async fn call(workspace: &Workspace, input: &Value) -> ToolOutput {
    let input: Input = match parse_input("write_file", input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    match write(workspace, &input).await {
        Ok(()) => ToolOutput::ok(format!(
            "Wrote {} bytes to {}",
            input.content.len(),
            input.path
        )),
        Err(output) => output,
    }
}

async fn write(workspace: &Workspace, input: &Input) -> Result<(), ToolOutput> {
    // `resolve` has already followed every symlink that exists, so the
    // directories created here are new ones, inside the workspace.
    let path = workspace.resolve(&input.path)?;
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|error| io_error("create the directories for", &input.path, &error))?;
    }
    tokio::fs::write(&path, &input.content)
        .await
        .map_err(|error| io_error("write", &input.path, &error))
}
