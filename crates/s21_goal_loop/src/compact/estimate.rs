//! How big the history is, in the units the thresholds use.
//!
//! The course's rule of thumb: a token is about four characters. What is
//! counted is what goes over the wire: every piece of text in the history —
//! prompts, replies, tool inputs, tool results, thinking — plus the JSON
//! around each block and message (field names, quotes, braces), for which a
//! fixed allowance is added. That is the length of the request's JSON to
//! within a few percent (escapes such as `\n` are counted as one
//! character), without serialising anything, which matters because the
//! estimate runs before every call on a history that can hold hundreds of
//! kilobytes.
//!
//! It is crude — code and non-English text run denser than four characters
//! a token — but it needs no tokenizer and no API call, and the threshold
//! sits far enough below the real context window to absorb the error. The
//! provider's own count (`usage.input_tokens`) is exact, but it arrives
//! only *after* a call.

use serde_json::Value;
use shared::protocol::{ContentBlock, Message, ToolResultContent};

// ANCHOR: estimate
/// Estimated tokens in `messages`: [`chars`] divided by four, rounded up.
pub fn estimate_tokens(messages: &[Message]) -> usize {
    chars(messages).div_ceil(4)
}

/// About how many characters `messages` take as JSON.
pub fn chars(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|message| MESSAGE_JSON + message.content.iter().map(block_chars).sum::<usize>())
        .sum()
}

// The JSON around each kind of block, e.g. `{"type":"text","text":""}` is
// 25 characters before the text itself.
const MESSAGE_JSON: usize = 34;
const TEXT_JSON: usize = 26;
const TOOL_USE_JSON: usize = 46;
const TOOL_RESULT_JSON: usize = 52;
const THINKING_JSON: usize = 48;
const REDACTED_JSON: usize = 39;

fn block_chars(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text, .. } => TEXT_JSON + len(text),
        ContentBlock::ToolUse(call) => {
            TOOL_USE_JSON + len(&call.id) + len(&call.name) + value_chars(&call.input)
        }
        ContentBlock::ToolResult(result) => {
            let content = match &result.content {
                ToolResultContent::Text(text) => len(text),
                ToolResultContent::Blocks(blocks) => {
                    2 + blocks.iter().map(block_chars).sum::<usize>()
                }
            };
            TOOL_RESULT_JSON + len(&result.tool_use_id) + content
        }
        ContentBlock::Thinking {
            thinking,
            signature,
        } => THINKING_JSON + len(thinking) + len(signature),
        ContentBlock::RedactedThinking { data } => REDACTED_JSON + len(data),
        ContentBlock::Unknown(value) => value_chars(value),
    }
}

/// Characters of a JSON value written compactly (strings without escapes).
fn value_chars(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(number) => number.to_string().len(),
        Value::String(text) => 2 + len(text),
        Value::Array(items) => {
            1 + items
                .iter()
                .map(|item| value_chars(item) + 1)
                .sum::<usize>()
        }
        Value::Object(fields) => {
            1 + fields
                .iter()
                .map(|(key, value)| len(key) + 4 + value_chars(value))
                .sum::<usize>()
        }
    }
}
// ANCHOR_END: estimate

/// Characters, not bytes: `str::chars().count()` is fast, since the
/// standard library counts them a word at a time.
fn len(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use shared::protocol::{Role, ToolResult, ToolUse};

    #[test]
    fn close_to_the_length_of_the_json() {
        let messages = vec![
            Message::user_text("héllo ✓ please read the file"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Thinking {
                        thinking: "let me think".into(),
                        signature: "sig".into(),
                    },
                    ContentBlock::text("Reading it."),
                    ContentBlock::ToolUse(ToolUse {
                        id: "toolu_01".into(),
                        name: "write_file".into(),
                        input: json!({"path": "a.txt", "content": "x".repeat(500), "n": [1, true, null]}),
                    }),
                ],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult(ToolResult::ok(
                    "toolu_01",
                    "y".repeat(900),
                ))],
            },
        ];
        let json = serde_json::to_string(&messages).unwrap().chars().count();
        let estimate = chars(&messages);
        assert!(estimate.abs_diff(json) <= json / 50, "{estimate} vs {json}");
        assert_eq!(estimate_tokens(&messages), estimate.div_ceil(4));
        assert_eq!(estimate_tokens(&[]), 0);
    }
}
