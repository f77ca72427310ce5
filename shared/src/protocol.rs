//! The Messages API, as Rust types.
//!
//! These types are the wire format the whole course speaks. The Anthropic
//! client sends and receives them directly; the OpenAI-compatible client maps
//! them to Chat Completions and back; the scripted model builds them by hand.
//!
//! Two rules shape the definitions:
//!
//! * Nothing the model sends is ever dropped. Thinking blocks must go back to
//!   the API byte for byte, and block types this crate does not know yet are
//!   kept as raw JSON ([`ContentBlock::Unknown`]) instead of failing the turn.
//! * A `tool_result` always answers a `tool_use` by id. The helpers on
//!   [`Message`] make that pairing easy to check.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person, or the harness speaking for it (tool results are user content).
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its blocks, in order; never empty in a valid history.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// The `tool_use` blocks of this message, in the order the model wrote them.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse(call) => Some(call),
            _ => None,
        })
    }

    /// The `tool_result` blocks of this message, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some(result),
            _ => None,
        })
    }

    /// The ids answered by the `tool_result` blocks of this message.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.tool_results()
            .map(|result| result.tool_use_id.as_str())
    }

    /// All text blocks joined with newlines; other blocks are skipped.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        parts.join("\n")
    }
}

/// One block of message content.
///
/// The enum is internally tagged by `type`, like the API. A block whose type
/// is not listed here deserialises as [`ContentBlock::Unknown`] and is sent
/// back exactly as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text written by the user or the model.
    Text {
        /// The text itself.
        text: String,
        /// A cache breakpoint after this block, if one is set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// The model calling a tool (only in assistant messages).
    ToolUse(ToolUse),
    /// The answer to a tool call (only at the start of user messages).
    ToolResult(ToolResult),
    /// Extended thinking. The signature proves to the API that the text is
    /// the model's own; both must be returned unchanged.
    Thinking {
        /// The model's reasoning, in plain text.
        thinking: String,
        /// The API's proof that the thinking is unchanged.
        signature: String,
    },
    /// Extended thinking the provider's safety systems encrypted; returned as is.
    RedactedThinking {
        /// The encrypted thinking, opaque to the harness.
        data: String,
    },
    /// Any other block type, kept verbatim.
    #[serde(untagged)]
    Unknown(Value),
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            cache_control: None,
        }
    }
}

/// The model asking the harness to run a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// Unique within the conversation; the `tool_result` that answers quotes it.
    pub id: String,
    /// Which tool to run, one of the request's `tools`.
    pub name: String,
    /// The arguments, a JSON object meant to match the tool's `input_schema`.
    pub input: Value,
}

/// The harness answering one [`ToolUse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The tool-use id this result answers.
    pub tool_use_id: String,
    /// What the tool returned, as the model will read it.
    pub content: ToolResultContent,
    /// Whether the tool failed; the model sees the content as an error message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// A cache breakpoint after this block, if one is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

impl ToolResult {
    /// A successful result with text content.
    pub fn ok(tool_use_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content: ToolResultContent::Text(text.into()),
            is_error: false,
            cache_control: None,
        }
    }

    /// A failed result: the model sees the text and `is_error: true`.
    pub fn error(tool_use_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::ok(tool_use_id, text)
        }
    }

    /// The result's text, whichever form the content takes.
    pub fn text(&self) -> String {
        self.content.text()
    }
}

/// Tool result content is either a plain string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// A plain string, the usual form.
    Text(String),
    /// Content blocks (text, or images for tools that return them).
    Blocks(Vec<ContentBlock>),
}

impl ToolResultContent {
    /// The text of the content; non-text blocks are skipped.
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Blocks(blocks) => blocks
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// Marks the end of a prefix the provider may cache (see chapter 10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheControl {
    /// The cache's lifetime class; always `"ephemeral"` today.
    #[serde(rename = "type")]
    pub kind: String,
}

impl CacheControl {
    /// The only kind the API offers today.
    pub fn ephemeral() -> Self {
        Self {
            kind: "ephemeral".to_string(),
        }
    }
}

/// One block of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemBlock {
    /// Always `text`; the field is there because the API requires the `type`.
    #[serde(rename = "type")]
    pub kind: SystemBlockKind,
    /// Instructions for the model, kept out of the conversation.
    pub text: String,
    /// A cache breakpoint: the prompt up to here may be cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// The system prompt only holds text blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SystemBlockKind {
    /// A text block, the only kind there is.
    Text,
}

impl SystemBlock {
    /// A text block without a cache breakpoint.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            kind: SystemBlockKind::Text,
            text: text.into(),
            cache_control: None,
        }
    }
}

/// The system prompt: a list of text blocks, so that lessons can mark cache
/// breakpoints on the stable prefix.
pub type SystemPrompt = Vec<SystemBlock>;

/// What the model is told about one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does and when to use it; the model reads it to decide.
    pub description: String,
    /// A JSON Schema for the input object.
    pub input_schema: Value,
    /// A cache breakpoint: the tool list up to here may be cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

impl ToolSpec {
    /// A tool description with a JSON schema for its input.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            cache_control: None,
        }
    }
}

/// Why the model stopped writing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The model wants the tools it called run, then to be asked again.
    ToolUse,
    /// The reply hit `max_tokens` and was cut off.
    MaxTokens,
    /// The model wrote one of the request's stop sequences.
    StopSequence,
    /// The provider paused a long turn; send the reply back to let it go on.
    PauseTurn,
    /// The model declined to answer.
    Refusal,
    /// A reason this crate does not know yet.
    #[serde(untagged)]
    Other(String),
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens billed at the full price (not read from or written to the cache).
    #[serde(default)]
    pub input_tokens: u64,
    /// Tokens the model wrote.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens written to the cache, if the provider reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the cache, if the provider reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
}

impl Usage {
    /// Adds another reply's (or turn's) token counts to these. A cache
    /// figure stays `None` until some reply reports it, so "not reported"
    /// is not shown as zero.
    pub fn add(&mut self, other: &Usage) {
        let sum = |total: Option<u64>, more: Option<u64>| match (total, more) {
            (None, None) => None,
            (total, more) => Some(total.unwrap_or(0) + more.unwrap_or(0)),
        };
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens = sum(
            self.cache_creation_input_tokens,
            other.cache_creation_input_tokens,
        );
        self.cache_read_input_tokens =
            sum(self.cache_read_input_tokens, other.cache_read_input_tokens);
    }
}

/// One request to the model. It borrows everything, so building a request
/// never copies the history.
#[derive(Debug, Clone, Serialize)]
pub struct Request<'a> {
    /// The model id to ask.
    pub model: &'a str,
    /// The most tokens the reply may have.
    pub max_tokens: u32,
    /// The system prompt; left out of the JSON when empty.
    #[serde(skip_serializing_if = "<[SystemBlock]>::is_empty")]
    pub system: &'a [SystemBlock],
    /// The whole conversation so far, ending with a user message.
    pub messages: &'a [Message],
    /// The tools the model may call; left out of the JSON when empty.
    #[serde(skip_serializing_if = "<[ToolSpec]>::is_empty")]
    pub tools: &'a [ToolSpec],
}

/// The model's complete reply to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The reply's blocks: text, thinking, tool calls.
    pub content: Vec<ContentBlock>,
    /// Why the model stopped; `None` if the provider did not say.
    pub stop_reason: Option<StopReason>,
    /// Tokens used by this request.
    #[serde(default)]
    pub usage: Usage,
}

impl Response {
    /// The reply as an assistant message for the history.
    pub fn into_message(self) -> Message {
        Message {
            role: Role::Assistant,
            content: self.content,
        }
    }
}

/// A piece of the reply, reported while it streams in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delta<'a> {
    /// Visible text.
    Text(&'a str),
    /// Extended thinking text.
    Thinking(&'a str),
    /// The model started writing a tool call.
    ToolUseStart {
        /// The name of the tool being called.
        name: &'a str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_blocks_round_trip_unchanged() {
        let raw = json!({"type": "server_tool_use", "id": "x", "name": "web_search", "input": {}});
        let block: ContentBlock = serde_json::from_value(raw.clone()).unwrap();
        assert!(matches!(block, ContentBlock::Unknown(_)));
        assert_eq!(serde_json::to_value(&block).unwrap(), raw);
    }

    #[test]
    fn thinking_round_trips_with_signature() {
        let raw = json!({"type": "thinking", "thinking": "hmm", "signature": "sig=="});
        let block: ContentBlock = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(serde_json::to_value(&block).unwrap(), raw);
    }

    #[test]
    fn tool_result_accepts_string_or_blocks() {
        let as_string: ToolResult =
            serde_json::from_value(json!({"tool_use_id": "a", "content": "ok"})).unwrap();
        let as_blocks: ToolResult = serde_json::from_value(
            json!({"tool_use_id": "a", "content": [{"type": "text", "text": "ok"}], "is_error": true}),
        )
        .unwrap();
        assert_eq!(as_string.text(), "ok");
        assert_eq!(as_blocks.text(), "ok");
        assert!(as_blocks.is_error && !as_string.is_error);
    }

    #[test]
    fn unknown_stop_reason_is_kept() {
        let reason: StopReason =
            serde_json::from_value(json!("model_context_window_exceeded")).unwrap();
        assert_eq!(
            reason,
            StopReason::Other("model_context_window_exceeded".into())
        );
        let known: StopReason = serde_json::from_value(json!("tool_use")).unwrap();
        assert_eq!(known, StopReason::ToolUse);
    }
}
