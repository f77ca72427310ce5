//! The `edit_file` tool: replace the first occurrence of a piece of text.
//!
//! Editing by exact text, rather than by line numbers, means the model must
//! quote what is really there. If it misremembers the file the edit fails
//! loudly instead of changing the wrong lines.

use serde::Deserialize;
use serde_json::{Value, json};

use super::files::{MAX_FILE_BYTES, io_error, read_prefix};
use super::input::parse_input;
use super::{Workspace, plural};
use crate::hooks::ToolOutput;
use crate::protocol::ToolSpec;

#[derive(Deserialize)]
struct Input {
    path: String,
    old_text: String,
    new_text: String,
}

/// What the model is told about `edit_file`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        "edit_file",
        "Edit a text file in the workspace: replace the first occurrence of `old_text` \
         with `new_text`. `old_text` must match the file exactly, including whitespace \
         and indentation; include enough surrounding lines to make it unique.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file, relative to the workspace."},
                "old_text": {"type": "string", "description": "The exact text to replace."},
                "new_text": {"type": "string", "description": "The text to put in its place."}
            },
            "required": ["path", "old_text", "new_text"]
        }),
    )
}

/// Runs the model's `edit_file` call.
pub async fn call(workspace: &Workspace, input: &Value) -> ToolOutput {
    let input: Input = match parse_input("edit_file", input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    match edit(workspace, &input).await {
        Ok(report) => ToolOutput::ok(report),
        Err(output) => output,
    }
}

async fn edit(workspace: &Workspace, input: &Input) -> Result<String, ToolOutput> {
    if input.old_text.is_empty() {
        return Err(ToolOutput::error(
            "old_text is empty; quote the text to replace (to write a whole file, use write_file)",
        ));
    }
    let path = workspace.resolve(&input.path)?;
    let text = read_text(&path, &input.path).await?;
    let (edited, occurrences) =
        replace_first(&text, &input.old_text, &input.new_text).ok_or_else(|| {
            ToolOutput::error(format!(
                "old_text not found in {}; it must match the file exactly, \
                 including whitespace and indentation",
                input.path
            ))
        })?;
    tokio::fs::write(&path, edited)
        .await
        .map_err(|error| io_error("write", &input.path, &error))?;
    Ok(if occurrences == 1 {
        format!("Edited {}", input.path)
    } else {
        format!(
            "Edited {}: replaced the first of {} (add surrounding lines to old_text to pick another)",
            input.path,
            plural(occurrences, "occurrence")
        )
    })
}

/// The whole file as UTF-8. Unlike `read_file`, no lossy decoding: writing
/// back a lossily decoded file would silently corrupt its other bytes.
async fn read_text(path: &std::path::Path, shown: &str) -> Result<String, ToolOutput> {
    let file = read_prefix(path, shown).await?;
    if file.is_partial() {
        return Err(ToolOutput::error(format!(
            "{shown} is {} bytes, too large to edit (the limit is {MAX_FILE_BYTES})",
            file.size
        )));
    }
    String::from_utf8(file.bytes).map_err(|_| {
        ToolOutput::error(format!(
            "{shown} is not valid UTF-8 text; edit_file only edits text files"
        ))
    })
}

/// `text` with the first `old` replaced by `new`, and how many times `old`
/// occurred; `None` if it does not occur.
fn replace_first(text: &str, old: &str, new: &str) -> Option<(String, usize)> {
    let start = text.find(old)?;
    let occurrences = text.matches(old).count();
    let edited = [&text[..start], new, &text[start + old.len()..]].concat();
    Some((edited, occurrences))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_the_first_occurrence() {
        assert_eq!(
            replace_first("a-b-a", "a", "c"),
            Some(("c-b-a".to_string(), 2))
        );
        assert_eq!(
            replace_first("héllo", "é", "e"),
            Some(("hello".to_string(), 1))
        );
        assert_eq!(replace_first("abc", "x", "y"), None);
    }
}
