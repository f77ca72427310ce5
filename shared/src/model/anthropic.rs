//! The Anthropic Messages API client, streaming.
//!
//! A reply arrives as server-sent events:
//!
//! ```text
//! message_start → (content_block_start → content_block_delta* → content_block_stop)*
//!               → message_delta → message_stop
//! ```
//!
//! Text deltas are passed on as they arrive. Tool input arrives as JSON
//! fragments (`input_json_delta`) that are only valid once joined, so they
//! are collected per block index and parsed at `content_block_stop`.
//! `ping` and event types this client does not know are skipped. A stream
//! that ends without `message_stop`, goes silent past the idle timeout or
//! carries an `error` event is an error — never a half-built reply.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::config::{Secret, Timeouts};
use super::sse::{self, SseStream};
use super::{BoxFuture, DeltaSink, Model};
use crate::error::ApiError;
use crate::protocol::{ContentBlock, Delta, Request, Response, StopReason, ToolUse, Usage};

/// The API version this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How to reach the API.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Scheme, host and optional path prefix; `/v1/messages` is appended.
    pub base_url: String,
    /// Sent as `x-api-key`.
    pub api_key: Option<Secret>,
    /// Sent as `Authorization: Bearer …`, for gateways that want a token.
    pub auth_token: Option<Secret>,
    pub timeouts: Timeouts,
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            base_url: super::config::DEFAULT_ANTHROPIC_BASE_URL.to_string(),
            api_key: None,
            auth_token: None,
            timeouts: Timeouts::default(),
        }
    }
}

/// A client for `POST /v1/messages`.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    http: reqwest::Client,
    config: AnthropicConfig,
}

impl AnthropicClient {
    /// Builds the client. Fails only if the TLS backend cannot start.
    pub fn new(config: AnthropicConfig) -> Result<Self, ApiError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect)
            .build()
            .map_err(|error| ApiError::Network {
                message: error.to_string(),
            })?;
        Ok(Self { http, config })
    }

    fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.config.base_url.trim_end_matches('/'))
    }

    async fn stream(
        &self,
        request: &Request<'_>,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Response, ApiError> {
        let mut builder = self
            .http
            .post(self.endpoint())
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header("accept", "text/event-stream")
            .json(&StreamingRequest {
                request,
                stream: true,
            });
        if let Some(key) = &self.config.api_key {
            builder = builder.header("x-api-key", key.expose());
        }
        if let Some(token) = &self.config.auth_token {
            builder = builder.bearer_auth(token.expose());
        }
        let response = sse::send(builder, self.config.timeouts.response).await?;
        let mut events = SseStream::open(response, self.config.timeouts.idle).await?;

        let mut reply = ReplyBuilder::default();
        while let Some(event) = events.next().await {
            let event = event?;
            if reply.apply(&event.event, &event.data, on_delta)? == Progress::Finished {
                return reply.finish();
            }
        }
        Err(ApiError::StreamCutShort {
            message: "the stream ended before message_stop".to_string(),
        })
    }
}

impl Model for AnthropicClient {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        Box::pin(self.stream(request, on_delta))
    }
}

#[derive(serde::Serialize)]
struct StreamingRequest<'a> {
    #[serde(flatten)]
    request: &'a Request<'a>,
    stream: bool,
}

/// Whether the stream has reached `message_stop`.
#[derive(Debug, PartialEq, Eq)]
enum Progress {
    Streaming,
    Finished,
}

/// A content block while its deltas are still arriving.
#[derive(Debug)]
enum PartialBlock {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Blocks with no deltas to apply (redacted thinking, unknown types).
    Complete(ContentBlock),
}

/// Assembles a [`Response`] from stream events.
#[derive(Debug, Default)]
struct ReplyBuilder {
    blocks: BTreeMap<usize, PartialBlock>,
    finished: BTreeMap<usize, ContentBlock>,
    stop_reason: Option<StopReason>,
    usage: Usage,
}

#[derive(Deserialize)]
struct MessageStart {
    message: StartedMessage,
}

#[derive(Deserialize)]
struct StartedMessage {
    #[serde(default)]
    usage: Usage,
}

#[derive(Deserialize)]
struct BlockStart {
    index: usize,
    content_block: Value,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: usize,
    delta: Value,
}

#[derive(Deserialize)]
struct BlockStop {
    index: usize,
}

#[derive(Deserialize)]
struct MessageDelta {
    delta: MessageDeltaBody,
    #[serde(default)]
    usage: Option<DeltaUsage>,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    stop_reason: Option<StopReason>,
}

#[derive(Deserialize)]
struct DeltaUsage {
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

fn parse<'de, T: Deserialize<'de>>(event: &str, data: &'de str) -> Result<T, ApiError> {
    serde_json::from_str(data).map_err(|error| ApiError::Protocol {
        message: format!("bad `{event}` event: {error}"),
    })
}

impl ReplyBuilder {
    fn apply(
        &mut self,
        event: &str,
        data: &str,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Progress, ApiError> {
        match event {
            "message_start" => {
                let start: MessageStart = parse(event, data)?;
                self.usage = start.message.usage;
            }
            "content_block_start" => {
                let start: BlockStart = parse(event, data)?;
                let block = self.start_block(start.content_block, on_delta)?;
                self.blocks.insert(start.index, block);
            }
            "content_block_delta" => {
                let delta: BlockDelta = parse(event, data)?;
                self.apply_delta(delta, on_delta);
            }
            "content_block_stop" => {
                let stop: BlockStop = parse(event, data)?;
                if let Some(block) = self.blocks.remove(&stop.index) {
                    self.finished.insert(stop.index, finish_block(block));
                }
            }
            "message_delta" => {
                let delta: MessageDelta = parse(event, data)?;
                if delta.delta.stop_reason.is_some() {
                    self.stop_reason = delta.delta.stop_reason;
                }
                if let Some(tokens) = delta.usage.and_then(|usage| usage.output_tokens) {
                    self.usage.output_tokens = tokens;
                }
            }
            "message_stop" => return Ok(Progress::Finished),
            "error" => {
                let error: ErrorEvent = parse(event, data)?;
                return Err(ApiError::from_stream_error(
                    &error.error.kind,
                    &error.error.message,
                ));
            }
            // `ping` keeps the connection alive; unknown events are new
            // features this client can safely ignore.
            _ => tracing::debug!(event, "ignoring stream event"),
        }
        Ok(Progress::Streaming)
    }

    fn start_block(
        &mut self,
        block: Value,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<PartialBlock, ApiError> {
        let text_field = |name: &str| block[name].as_str().unwrap_or_default().to_string();
        Ok(match block["type"].as_str() {
            Some("text") => {
                let text = text_field("text");
                if !text.is_empty() {
                    on_delta(Delta::Text(&text));
                }
                PartialBlock::Text(text)
            }
            Some("tool_use") => {
                let name = text_field("name");
                on_delta(Delta::ToolUseStart { name: &name });
                PartialBlock::ToolUse {
                    id: text_field("id"),
                    name,
                    json: String::new(),
                }
            }
            Some("thinking") => PartialBlock::Thinking {
                thinking: text_field("thinking"),
                signature: text_field("signature"),
            },
            _ => {
                let complete =
                    serde_json::from_value(block).map_err(|error| ApiError::Protocol {
                        message: format!("bad content block: {error}"),
                    })?;
                PartialBlock::Complete(complete)
            }
        })
    }

    fn apply_delta(&mut self, delta: BlockDelta, on_delta: &mut DeltaSink<'_>) {
        let Some(block) = self.blocks.get_mut(&delta.index) else {
            tracing::debug!(index = delta.index, "delta for a block that never started");
            return;
        };
        let piece = |name: &str| delta.delta[name].as_str().unwrap_or_default();
        match (block, delta.delta["type"].as_str()) {
            (PartialBlock::Text(text), Some("text_delta")) => {
                let piece = piece("text");
                on_delta(Delta::Text(piece));
                text.push_str(piece);
            }
            (PartialBlock::ToolUse { json, .. }, Some("input_json_delta")) => {
                json.push_str(piece("partial_json"));
            }
            (PartialBlock::Thinking { thinking, .. }, Some("thinking_delta")) => {
                let piece = piece("thinking");
                on_delta(Delta::Thinking(piece));
                thinking.push_str(piece);
            }
            (PartialBlock::Thinking { signature, .. }, Some("signature_delta")) => {
                signature.push_str(piece("signature"));
            }
            (_, kind) => tracing::debug!(?kind, "ignoring delta"),
        }
    }

    fn finish(mut self) -> Result<Response, ApiError> {
        // Blocks still open at message_stop are closed as they stand.
        for (index, block) in std::mem::take(&mut self.blocks) {
            self.finished.insert(index, finish_block(block));
        }
        Ok(Response {
            content: self.finished.into_values().collect(),
            stop_reason: self.stop_reason,
            usage: self.usage,
        })
    }
}

/// Closes a block. Tool input that is empty means `{}`; input that does not
/// parse (a reply cut by `max_tokens` mid-call) also becomes `{}`, and the
/// loop answers that call with an error instead of running it.
fn finish_block(block: PartialBlock) -> ContentBlock {
    match block {
        PartialBlock::Text(text) => ContentBlock::text(text),
        PartialBlock::ToolUse { id, name, json } => {
            let input = if json.trim().is_empty() {
                Value::Object(Default::default())
            } else {
                serde_json::from_str(&json).unwrap_or_else(|error| {
                    tracing::warn!(%error, tool = %name, "tool input is not valid JSON");
                    Value::Object(Default::default())
                })
            };
            ContentBlock::ToolUse(ToolUse { id, name, input })
        }
        PartialBlock::Thinking {
            thinking,
            signature,
        } => ContentBlock::Thinking {
            thinking,
            signature,
        },
        PartialBlock::Complete(block) => block,
    }
}
