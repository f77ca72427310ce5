//! An OpenAI-compatible Chat Completions client, streaming.
//!
//! Ollama, vLLM, llama.cpp, LM Studio, DeepSeek and OpenRouter all speak
//! `POST {base}/chat/completions`. The course's own format is the Anthropic
//! Messages API ([`crate::protocol`]), so this client translates both ways.
//!
//! # Request: Messages → Chat Completions
//!
//! | Messages API                         | Chat Completions                                          |
//! |--------------------------------------|-----------------------------------------------------------|
//! | `system` blocks                      | one `{"role": "system"}` message, texts joined            |
//! | user `text` blocks                   | one `{"role": "user"}` message, texts joined              |
//! | user `tool_result` block             | one `{"role": "tool", "tool_call_id"}` message each       |
//! | assistant `text` blocks              | the assistant message's `content`                         |
//! | assistant `tool_use` blocks          | its `tool_calls`, input sent as a JSON *string*           |
//! | `tools[].input_schema`               | `tools[].function.parameters`                             |
//! | thinking, images, unknown blocks     | dropped: there is nowhere to put them                     |
//! | `cache_control`                      | dropped: these servers cache prefixes on their own        |
//!
//! Tool messages must directly follow the assistant message that made the
//! calls, so a user message's results are sent *before* its text. The
//! format has no `is_error` flag, so a failed result's text starts with
//! `Error: ` instead.
//!
//! # Reply: Chat Completions stream → [`Response`]
//!
//! The reply is a stream of `data: {json}` events ending with
//! `data: [DONE]`. Each chunk carries a `choices[0].delta`:
//!
//! * `content`: visible text, passed on as it arrives;
//! * `tool_calls[]`: fragments keyed by `index`. The first fragment of a
//!   call holds its id and name, later ones pieces of `function.arguments`,
//!   which only parse as JSON once joined — so they are parsed at the end;
//! * `reasoning_content` (or `reasoning`): shown as thinking, not kept,
//!   because there is no signature to send it back with.
//!
//! The last choice chunk has a `finish_reason`; with `stream_options`
//! a final chunk with empty `choices` carries the token `usage`. A stream
//! that stops before both `[DONE]` and a `finish_reason`, goes silent past
//! the idle timeout or carries an `{"error": …}` object is an error — never a
//! half-built reply.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sse::{self, SseStream};
use super::transport::{Secret, Timeouts};
use super::{BoxFuture, DeltaSink, Model};
use crate::error::ApiError;
use crate::protocol::{
    ContentBlock, Delta, Message, Request, Response, Role, StopReason, SystemBlock, ToolResult,
    ToolSpec, ToolUse, Usage,
};

/// How to reach the server.
#[derive(Debug, Clone, Default)]
pub struct OpenAiConfig {
    /// For example `http://localhost:11434/v1`; `/chat/completions` is appended.
    pub base_url: String,
    /// Sent as a bearer token when set; local servers need none.
    pub api_key: Option<Secret>,
    /// How long to wait for the connection, the response and each event.
    pub timeouts: Timeouts,
}

/// A client for `POST {base}/chat/completions`.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    config: OpenAiConfig,
    /// Set once the server has refused `stream_options`, so later requests
    /// leave it out instead of failing and retrying every turn.
    stream_options_refused: Arc<AtomicBool>,
}

impl OpenAiClient {
    /// Builds the client. Fails only if the TLS backend cannot start.
    pub fn new(config: OpenAiConfig) -> Result<Self, ApiError> {
        let http = sse::http_client(config.timeouts.connect)?;
        Ok(Self {
            http,
            config,
            stream_options_refused: Arc::new(AtomicBool::new(false)),
        })
    }

    fn endpoint(&self) -> String {
        format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        )
    }

    async fn stream(
        &self,
        request: &Request<'_>,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Response, ApiError> {
        let ask_for_usage = !self.stream_options_refused.load(Ordering::Relaxed);
        let mut body = ChatRequest::new(request, ask_for_usage);
        let events = match self.open(&body).await {
            // `stream_options` is the only way to get token counts from a
            // stream, so it is sent by default. A few servers reject fields
            // they do not know; for them, drop it (and usage) and try again.
            Err(error) if ask_for_usage && refuses_stream_options(&error) => {
                tracing::info!(%error, "the server refused stream_options; continuing without usage");
                self.stream_options_refused.store(true, Ordering::Relaxed);
                body.stream_options = None;
                self.open(&body).await?
            }
            opened => opened?,
        };
        read_reply(events, on_delta).await
    }

    /// Sends the request and checks the status; the reply has not started yet.
    async fn open(&self, body: &ChatRequest<'_>) -> Result<SseStream, ApiError> {
        let mut builder = self
            .http
            .post(self.endpoint())
            .header("accept", "text/event-stream")
            .json(body);
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        let response = sse::send(builder, self.config.timeouts.response).await?;
        SseStream::open(response, self.config.timeouts.idle).await
    }
}

impl Model for OpenAiClient {
    fn provider(&self) -> &str {
        "openai"
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        Box::pin(self.stream(request, on_delta))
    }
}

/// Whether an error response is a server saying it does not know
/// `stream_options` (a 400 or 422 whose message names the field).
fn refuses_stream_options(error: &ApiError) -> bool {
    match error {
        ApiError::InvalidRequest { message } | ApiError::Http { message, .. } => {
            message.contains("stream_options")
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// The request
// ---------------------------------------------------------------------------

/// The body of `POST /chat/completions`.
#[derive(Debug, Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    /// Newer OpenAI models prefer `max_completion_tokens`, but local servers
    /// only know `max_tokens`, and OpenAI still accepts it for chat models.
    max_tokens: u32,
    messages: Vec<ChatMessage>,
    /// Left out when empty: some servers reject `"tools": []`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

impl<'a> ChatRequest<'a> {
    fn new(request: &Request<'a>, ask_for_usage: bool) -> Self {
        Self {
            model: request.model,
            max_tokens: request.max_tokens,
            messages: chat_messages(request.system, request.messages),
            tools: request.tools.iter().map(ChatTool::new).collect(),
            stream: true,
            stream_options: ask_for_usage.then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }
}

/// One Chat Completions message; the variant name is its `role`.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        /// `null` when the assistant only called tools, as OpenAI documents.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

#[derive(Debug, Serialize)]
struct ChatToolCall {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunctionCall,
}

#[derive(Debug, Serialize)]
struct ChatFunctionCall {
    name: String,
    /// The input as a JSON-encoded string, not as an object.
    arguments: String,
}

#[derive(Debug, Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Debug, Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> ChatTool<'a> {
    fn new(spec: &'a ToolSpec) -> Self {
        Self {
            kind: "function",
            function: ChatFunction {
                name: &spec.name,
                description: &spec.description,
                parameters: &spec.input_schema,
            },
        }
    }
}

/// The whole conversation in Chat Completions form.
fn chat_messages(system: &[SystemBlock], history: &[Message]) -> Vec<ChatMessage> {
    let mut messages = Vec::new();
    if !system.is_empty() {
        // System blocks are separate sections (a stable prefix, then the
        // parts that change), so a blank line keeps them apart.
        let texts: Vec<&str> = system.iter().map(|block| block.text.as_str()).collect();
        messages.push(ChatMessage::System {
            content: texts.join("\n\n"),
        });
    }
    for message in history {
        match message.role {
            Role::User => push_user(&mut messages, &message.content),
            Role::Assistant => messages.extend(assistant_message(&message.content)),
        }
    }
    messages
}

/// A user message becomes its tool results, one `tool` message each, then
/// a `user` message with its text, if it has any.
fn push_user(messages: &mut Vec<ChatMessage>, blocks: &[ContentBlock]) {
    let mut texts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::ToolResult(result) => messages.push(tool_message(result)),
            ContentBlock::Text { text, .. } => texts.push(text.as_str()),
            // Images and other blocks: this client sends text only.
            _ => {}
        }
    }
    let text = join_non_empty(&texts);
    if !text.is_empty() {
        messages.push(ChatMessage::User { content: text });
    }
}

/// A `tool` message answering one call. The format cannot flag an error,
/// so the model reads it in the text.
fn tool_message(result: &ToolResult) -> ChatMessage {
    let text = result.text();
    let content = if result.is_error {
        format!("Error: {text}")
    } else {
        text
    };
    ChatMessage::Tool {
        tool_call_id: result.tool_use_id.clone(),
        content,
    }
}

/// An assistant message with its text and tool calls; `None` if nothing
/// is left once thinking blocks are dropped.
fn assistant_message(blocks: &[ContentBlock]) -> Option<ChatMessage> {
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text, .. } => texts.push(text.as_str()),
            ContentBlock::ToolUse(call) => tool_calls.push(chat_tool_call(call)),
            // Thinking carries an Anthropic signature no other server can
            // check; unknown blocks have no equivalent.
            _ => {}
        }
    }
    let text = join_non_empty(&texts);
    if text.is_empty() && tool_calls.is_empty() {
        return None;
    }
    Some(ChatMessage::Assistant {
        content: (!text.is_empty()).then_some(text),
        tool_calls,
    })
}

fn chat_tool_call(call: &ToolUse) -> ChatToolCall {
    ChatToolCall {
        id: call.id.clone(),
        kind: "function",
        function: ChatFunctionCall {
            name: call.name.clone(),
            arguments: call.input.to_string(),
        },
    }
}

/// Joins texts with newlines, as [`Message::text`] does, skipping empty ones.
fn join_non_empty(texts: &[&str]) -> String {
    let kept: Vec<&str> = texts
        .iter()
        .copied()
        .filter(|text| !text.is_empty())
        .collect();
    kept.join("\n")
}

// ---------------------------------------------------------------------------
// The reply
// ---------------------------------------------------------------------------

/// Reads events until `[DONE]` and assembles the reply.
async fn read_reply(
    mut events: SseStream,
    on_delta: &mut DeltaSink<'_>,
) -> Result<Response, ApiError> {
    let mut reply = ReplyBuilder::default();
    while let Some(event) = events.next().await {
        let event = event?;
        if reply.apply(&event.data, on_delta)? == Progress::Finished {
            return Ok(reply.finish());
        }
    }
    // Some servers close the stream after the finish reason without sending
    // `[DONE]`. The reply is complete then; only usage may be missing.
    if reply.finish_reason.is_some() {
        return Ok(reply.finish());
    }
    Err(ApiError::StreamCutShort {
        message: "the stream ended before a finish_reason or [DONE]".to_string(),
    })
}

/// Whether the stream has reached `[DONE]`.
#[derive(Debug, PartialEq, Eq)]
enum Progress {
    Streaming,
    Finished,
}

/// One `data:` event of the stream. Every field is optional because
/// servers differ in what they leave out.
#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<ChoiceDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChoiceDelta {
    #[serde(default)]
    content: Option<String>,
    /// OpenAI's own refusal text: shown like any other text.
    #[serde(default)]
    refusal: Option<String>,
    /// DeepSeek and vLLM call the model's thinking `reasoning_content`,
    /// Ollama `reasoning`; some servers send both. Two fields, not a serde
    /// alias, because an alias fails on a chunk that has both.
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallFragment>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallFragment {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionFragment>,
}

#[derive(Debug, Deserialize)]
struct FunctionFragment {
    #[serde(default)]
    name: Option<String>,
    /// A piece of a JSON string; a few servers send the whole object.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    /// OpenAI (and some compatible servers) say here how much of the
    /// prompt came from their prefix cache.
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl ChunkUsage {
    /// As the Anthropic API reports it: `prompt_tokens` counts the cached
    /// tokens too, while `input_tokens` counts only the uncached ones, so
    /// the cached part is moved to `cache_read_input_tokens`. These servers
    /// cache on their own and report no writes.
    fn into_usage(self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .and_then(|details| details.cached_tokens);
        Usage {
            input_tokens: self.prompt_tokens.saturating_sub(cached.unwrap_or(0)),
            output_tokens: self.completion_tokens,
            cache_creation_input_tokens: None,
            cache_read_input_tokens: cached,
        }
    }
}

/// A tool call while its fragments are still arriving.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a [`Response`] from stream chunks.
#[derive(Debug, Default)]
struct ReplyBuilder {
    text: String,
    /// Keyed by the fragments' `index`, so calls come out in order.
    calls: BTreeMap<usize, PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
}

impl ReplyBuilder {
    fn apply(&mut self, data: &str, on_delta: &mut DeltaSink<'_>) -> Result<Progress, ApiError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Progress::Finished);
        }
        if data.is_empty() {
            return Ok(Progress::Streaming);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|error| ApiError::Protocol {
            message: format!("bad stream chunk: {error}"),
        })?;
        if let Some(error) = chunk.error {
            return Err(stream_error(&error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = usage.into_usage();
        }
        // We never ask for more than one choice (`n` is left at 1).
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(delta) = choice.delta {
                self.apply_delta(delta, on_delta);
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(Progress::Streaming)
    }

    fn apply_delta(&mut self, delta: ChoiceDelta, on_delta: &mut DeltaSink<'_>) {
        let thinking = delta.reasoning_content.or(delta.reasoning);
        if let Some(thinking) = thinking.filter(|text| !text.is_empty()) {
            on_delta(Delta::Thinking(&thinking));
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                on_delta(Delta::Text(&text));
                self.text.push_str(&text);
            }
        }
        for fragment in delta.tool_calls.unwrap_or_default() {
            self.apply_tool_fragment(fragment, on_delta);
        }
    }

    fn apply_tool_fragment(&mut self, fragment: ToolCallFragment, on_delta: &mut DeltaSink<'_>) {
        let slot = self.slot_for(&fragment);
        let call = self.calls.entry(slot).or_default();
        // Id and name come once, in the first fragment. Some servers repeat
        // them later; keeping the first avoids `readread` as a name.
        if let Some(id) = fragment.id.filter(|id| !id.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        let Some(function) = fragment.function else {
            return;
        };
        if let Some(name) = function.name.filter(|name| !name.is_empty())
            && call.name.is_empty()
        {
            on_delta(Delta::ToolUseStart { name: &name });
            call.name = name;
        }
        match function.arguments {
            Some(Value::String(piece)) => call.arguments.push_str(&piece),
            Some(Value::Null) | None => {}
            Some(whole) => call.arguments.push_str(&whole.to_string()),
        }
    }

    /// Which call a fragment belongs to. Normally its `index`; a server that
    /// leaves the index out sends each call whole, so a new id starts a new
    /// call and a fragment without an id continues the last one.
    fn slot_for(&self, fragment: &ToolCallFragment) -> usize {
        if let Some(index) = fragment.index {
            return index;
        }
        let last = self.calls.keys().next_back().copied();
        match fragment.id.as_deref().filter(|id| !id.is_empty()) {
            Some(id) => self
                .calls
                .iter()
                .find(|(_, call)| call.id == id)
                .map(|(slot, _)| *slot)
                .unwrap_or_else(|| last.map_or(0, |slot| slot + 1)),
            None => last.unwrap_or(0),
        }
    }

    fn finish(self) -> Response {
        let stop_reason = stop_reason(self.finish_reason.as_deref(), !self.calls.is_empty());
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(ContentBlock::text(self.text));
        }
        for (slot, call) in self.calls {
            content.push(ContentBlock::ToolUse(finish_call(slot, call)));
        }
        Response {
            content,
            stop_reason,
            usage: self.usage,
        }
    }
}

/// Maps `finish_reason` to a [`StopReason`]. Some local servers say `stop`
/// (or nothing) after calling tools; the calls are what counts, since the
/// loop must run them.
fn stop_reason(finish_reason: Option<&str>, has_calls: bool) -> Option<StopReason> {
    match (finish_reason, has_calls) {
        (Some("stop") | None, true) => Some(StopReason::ToolUse),
        (None, false) => None,
        (Some("stop"), false) => Some(StopReason::EndTurn),
        (Some("tool_calls" | "function_call"), _) => Some(StopReason::ToolUse),
        (Some("length"), _) => Some(StopReason::MaxTokens),
        (Some("content_filter"), _) => Some(StopReason::Refusal),
        (Some(other), _) => Some(StopReason::Other(other.to_string())),
    }
}

/// Closes a tool call. Servers that give no id (Ollama) get `call_{index}`,
/// so results can still be paired. Empty arguments mean `{}`; arguments
/// that do not parse (a reply cut by `max_tokens` mid-call) also become
/// `{}`, and the loop answers that call with an error instead of running it.
fn finish_call(slot: usize, call: PartialCall) -> ToolUse {
    let id = if call.id.is_empty() {
        format!("call_{slot}")
    } else {
        call.id
    };
    let input = if call.arguments.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_json::from_str(&call.arguments).unwrap_or_else(|error| {
            tracing::warn!(%error, tool = %call.name, "tool arguments are not valid JSON");
            Value::Object(Default::default())
        })
    };
    ToolUse {
        id,
        name: call.name,
        input,
    }
}

/// Turns `{"error": {"message", "type" or "code"}}` (or a bare string) into
/// a typed error.
fn stream_error(error: &Value) -> ApiError {
    let message = error["message"]
        .as_str()
        .or_else(|| error.as_str())
        .unwrap_or("(no message)");
    let kind = match (&error["type"], &error["code"]) {
        (Value::String(kind), _) => kind.clone(),
        (_, Value::String(code)) => code.clone(),
        (_, Value::Number(code)) => code.to_string(),
        _ => "error".to_string(),
    };
    ApiError::from_stream_error(&kind, message)
}
