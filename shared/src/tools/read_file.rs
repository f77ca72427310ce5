//! The `read_file` tool: show a text file, optionally only its first lines.

use serde::Deserialize;
use serde_json::{Value, json};

use super::files::{FilePrefix, MAX_FILE_BYTES, read_prefix};
use super::input::parse_input;
use super::{MAX_OUTPUT_CHARS, Workspace, plural};
use crate::hooks::ToolOutput;
use crate::protocol::ToolSpec;
use crate::text::limit_output;

/// How many leading bytes are checked for NUL when deciding whether a file
/// is binary (the same heuristic `git` and `grep` use).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

#[derive(Deserialize)]
struct Input {
    path: String,
    /// The most lines to show, from the top.
    #[serde(default)]
    limit: Option<usize>,
}

/// What the model is told about `read_file`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        "read_file",
        "Read a text file in the workspace and return its contents. \
         Use `limit` to read only the first lines of a long file.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file, relative to the workspace."},
                "limit": {"type": "integer", "minimum": 0, "description": "Maximum number of lines to return."}
            },
            "required": ["path"]
        }),
    )
}

/// Runs the model's `read_file` call.
pub async fn call(workspace: &Workspace, input: &Value) -> ToolOutput {
    let input: Input = match parse_input("read_file", input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    match read(workspace, &input).await {
        Ok(text) => ToolOutput::ok(limit_output(&text, MAX_OUTPUT_CHARS)),
        Err(output) => output,
    }
}

async fn read(workspace: &Workspace, input: &Input) -> Result<String, ToolOutput> {
    let path = workspace.resolve(&input.path)?;
    let file = read_prefix(&path, &input.path).await?;
    if looks_binary(&file.bytes) {
        return Err(ToolOutput::error(format!(
            "{} looks like a binary file ({} bytes); read_file only shows text",
            input.path, file.size
        )));
    }
    if file.size == 0 {
        return Ok("(empty file)".to_string());
    }
    // Invalid UTF-8 becomes U+FFFD rather than an error: a stray Latin-1
    // byte should not hide the rest of the file.
    let text = String::from_utf8_lossy(&file.bytes);
    let mut shown = match input.limit {
        Some(limit) => first_lines(&text, limit, file.is_partial()),
        None => text.into_owned(),
    };
    if file.is_partial() {
        shown.push_str(&partial_note(&file));
    }
    Ok(shown)
}

/// The first `limit` lines of `text`, followed by a note saying how many
/// lines were left out. `more_after` is true when `text` is only the start
/// of the file, so the count is a lower bound.
fn first_lines(text: &str, limit: usize, more_after: bool) -> String {
    let total = text.lines().count();
    if total <= limit {
        return text.to_string();
    }
    // `split_inclusive` keeps each line's own ending ("\n" or "\r\n").
    let mut shown: String = text.split_inclusive('\n').take(limit).collect();
    if !shown.is_empty() && !shown.ends_with('\n') {
        shown.push('\n');
    }
    let at_least = if more_after { "at least " } else { "" };
    shown.push_str(&format!(
        "... [{at_least}{} not shown: this is the first {} of {at_least}{total}]",
        plural(total - limit, "more line"),
        plural(limit, "line"),
    ));
    shown
}

fn partial_note(file: &FilePrefix) -> String {
    format!(
        "\n... [the file is {} bytes; only the first {MAX_FILE_BYTES} were read]",
        file.size
    )
}

fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(BINARY_SNIFF_BYTES).any(|&byte| byte == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_counts_omitted_lines() {
        assert_eq!(
            first_lines("a\nb\nc\n", 2, false),
            "a\nb\n... [1 more line not shown: this is the first 2 lines of 3]"
        );
        assert_eq!(first_lines("a\nb\n", 2, false), "a\nb\n");
        assert_eq!(
            first_lines("a\r\nb\r\nc", 1, false).lines().next(),
            Some("a")
        );
    }
}
