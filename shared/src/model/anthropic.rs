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
//! `ping` and event types this client does not know are skipped.
//!
//! When is a reply complete? Once `message_delta` has carried its
//! `stop_reason`: everything after that (`message_stop`, the blank line
//! that ends the last event) may be missing, as the official SDKs accept
//! and as real streams sometimes end. A stream that ends *before* the stop
//! reason, whose last event breaks off half-way, that goes silent past the
//! idle timeout or that carries an `error` event is an error — never a
//! half-built reply.
//!
//! Nothing the model writes is dropped: thinking blocks keep their
//! signature, and block types this client does not know (server tools,
//! future features) come back as [`ContentBlock::Unknown`], so the next
//! request can return them exactly.
//!
//! The credentials are sent as `x-api-key` (an API key) and/or
//! `Authorization: Bearer` (`ANTHROPIC_AUTH_TOKEN`, for gateways). They are
//! marked sensitive in the request, and every error this client returns is
//! scrubbed of them ([`ApiError::redact`]), so a key cannot reach the
//! terminal or a log.

use std::borrow::Cow;
use std::collections::BTreeMap;

use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use serde::Deserialize;
use serde_json::Value;

use super::sse::{self, SseStream};
use super::transport::{Secret, Timeouts};
use super::{BoxFuture, DeltaSink, Model};
use crate::error::ApiError;
use crate::protocol::{ContentBlock, Delta, Request, Response, StopReason, ToolUse, Usage};

/// The API version this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Anthropic endpoint used when `ANTHROPIC_BASE_URL` is not set.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// How to reach the API.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Scheme, host and optional path prefix; `/v1/messages` is appended.
    pub base_url: String,
    /// Sent as `x-api-key`.
    pub api_key: Option<Secret>,
    /// Sent as `Authorization: Bearer …`, for gateways that want a token.
    pub auth_token: Option<Secret>,
    /// How long to wait for the connection, the response and each event.
    pub timeouts: Timeouts,
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            base_url: DEFAULT_ANTHROPIC_BASE_URL.to_string(),
            api_key: None,
            auth_token: None,
            timeouts: Timeouts::default(),
        }
    }
}

/// A client for `POST /v1/messages`.
///
/// `Debug` is safe to print: the credentials inside are [`Secret`]s.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    http: reqwest::Client,
    config: AnthropicConfig,
}

impl AnthropicClient {
    /// Builds the client. Fails only if the TLS backend cannot start.
    pub fn new(config: AnthropicConfig) -> Result<Self, ApiError> {
        let http = sse::http_client(config.timeouts.connect)?;
        Ok(Self { http, config })
    }

    fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.config.base_url.trim_end_matches('/'))
    }

    /// The credentials, for scrubbing them out of error messages.
    fn secrets(&self) -> Vec<&str> {
        [&self.config.api_key, &self.config.auth_token]
            .into_iter()
            .flatten()
            .map(Secret::expose)
            .collect()
    }

    /// Sends the request and assembles the streamed reply.
    async fn stream(
        &self,
        request: &Request<'_>,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Response, ApiError> {
        self.stream_unredacted(request, on_delta)
            .await
            .map_err(|error| error.redact(&self.secrets()))
    }

    async fn stream_unredacted(
        &self,
        request: &Request<'_>,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Response, ApiError> {
        let builder = self.build_request(request)?;
        let response = sse::send(builder, self.config.timeouts.response).await?;
        let mut events = SseStream::open(response, self.config.timeouts.idle).await?;

        let mut reply = ReplyBuilder::default();
        while let Some(event) = events.next().await {
            let event = event?;
            let kind = event_kind(&event.event, &event.data);
            match reply.apply(&kind, &event.data, on_delta) {
                Ok(Progress::Finished) => return Ok(reply.finish()),
                Ok(Progress::Streaming) => {}
                // An event that does not parse and is the last thing in the
                // stream is one the connection cut off half-way.
                Err(ApiError::Protocol { message }) => {
                    return Err(match events.next().await {
                        None => ApiError::StreamCutShort {
                            message: format!("the stream ended inside an event ({message})"),
                        },
                        Some(_) => ApiError::Protocol { message },
                    });
                }
                Err(error) => return Err(error),
            }
        }
        // `message_stop` is a formality once the stop reason has come.
        if reply.stop_reason.is_some() {
            return Ok(reply.finish());
        }
        Err(ApiError::StreamCutShort {
            message: "the stream ended before the reply's stop_reason".to_string(),
        })
    }

    /// The HTTP request: endpoint, headers and the JSON body with
    /// `stream: true` (`.json` also sets `content-type: application/json`).
    fn build_request(&self, request: &Request<'_>) -> Result<reqwest::RequestBuilder, ApiError> {
        let mut builder = self
            .http
            .post(self.endpoint())
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header(ACCEPT, "text/event-stream")
            .json(&StreamingRequest {
                request,
                stream: true,
            });
        if let Some(key) = &self.config.api_key {
            builder = builder.header("x-api-key", credential_header(key.expose())?);
        }
        if let Some(token) = &self.config.auth_token {
            let bearer = format!("Bearer {}", token.expose());
            builder = builder.header(AUTHORIZATION, credential_header(&bearer)?);
        }
        Ok(builder)
    }
}

/// A header value holding a credential, marked sensitive so that reqwest
/// and hyper print `Sensitive` instead of it in their `Debug` output.
fn credential_header(value: &str) -> Result<HeaderValue, ApiError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| ApiError::Authentication {
        // Not the value itself: it is the secret.
        message: "the API key or token contains characters that cannot be sent in an HTTP \
                  header (a stray newline or a non-ASCII character?)"
            .to_string(),
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// The name of an event. An event without an `event:` line is named
/// "message" by the SSE parser; some compatible gateways send those, and the
/// Messages API repeats the name as the `type` of the data, so that is used.
fn event_kind<'a>(name: &'a str, data: &str) -> Cow<'a, str> {
    #[derive(Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: String,
    }
    if name != "message" {
        return Cow::Borrowed(name);
    }
    match serde_json::from_str::<Typed>(data) {
        Ok(typed) => Cow::Owned(typed.kind),
        Err(_) => Cow::Borrowed(name),
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
    /// Any other block (redacted thinking, server tools, unknown types), kept
    /// as the JSON it started with. Server tool calls stream their input as
    /// `input_json_delta` just like client tools, so fragments are collected
    /// here too and put in the block's `input` when it stops.
    Other {
        block: Value,
        json: String,
    },
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

/// Token counts in `message_delta`. They are running totals, so each one
/// may only raise what `message_start` reported (some compatible gateways
/// send zeros here).
#[derive(Deserialize)]
struct DeltaUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
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
                let block = start_block(start.content_block, on_delta);
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
                if let Some(usage) = delta.usage {
                    self.add_usage(usage);
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
            (
                PartialBlock::ToolUse { json, .. } | PartialBlock::Other { json, .. },
                Some("input_json_delta"),
            ) => {
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
            // Citations and other delta kinds this client does not model.
            (_, kind) => tracing::debug!(?kind, "ignoring delta"),
        }
    }

    fn add_usage(&mut self, delta: DeltaUsage) {
        let usage = &mut self.usage;
        usage.input_tokens = usage.input_tokens.max(delta.input_tokens.unwrap_or(0));
        usage.output_tokens = usage.output_tokens.max(delta.output_tokens.unwrap_or(0));
        // `None < Some(_)` for `Option`, so `max` keeps whichever is known.
        usage.cache_creation_input_tokens = usage
            .cache_creation_input_tokens
            .max(delta.cache_creation_input_tokens);
        usage.cache_read_input_tokens = usage
            .cache_read_input_tokens
            .max(delta.cache_read_input_tokens);
    }

    fn finish(mut self) -> Response {
        // Blocks still open at message_stop are closed as they stand.
        for (index, block) in std::mem::take(&mut self.blocks) {
            self.finished.insert(index, finish_block(block));
        }
        Response {
            content: self.finished.into_values().collect(),
            stop_reason: self.stop_reason,
            usage: self.usage,
        }
    }
}

/// Opens a block from its `content_block_start`. Text and thinking that
/// come with the start are passed on like any later delta.
fn start_block(block: Value, on_delta: &mut DeltaSink<'_>) -> PartialBlock {
    let field = |name: &str| block[name].as_str().unwrap_or_default().to_string();
    match block["type"].as_str() {
        Some("text") => {
            let text = field("text");
            if !text.is_empty() {
                on_delta(Delta::Text(&text));
            }
            PartialBlock::Text(text)
        }
        Some("tool_use") => {
            let name = field("name");
            on_delta(Delta::ToolUseStart { name: &name });
            PartialBlock::ToolUse {
                id: field("id"),
                name,
                json: String::new(),
            }
        }
        Some("thinking") => {
            let thinking = field("thinking");
            if !thinking.is_empty() {
                on_delta(Delta::Thinking(&thinking));
            }
            PartialBlock::Thinking {
                thinking,
                signature: field("signature"),
            }
        }
        _ => PartialBlock::Other {
            block,
            json: String::new(),
        },
    }
}

/// Closes a block.
fn finish_block(block: PartialBlock) -> ContentBlock {
    match block {
        PartialBlock::Text(text) => ContentBlock::text(text),
        PartialBlock::ToolUse { id, name, json } => {
            // No input at all means a tool without arguments: `{}`.
            let input = parse_input(&json, &name).unwrap_or_else(empty_object);
            ContentBlock::ToolUse(ToolUse { id, name, input })
        }
        PartialBlock::Thinking {
            thinking,
            signature,
        } => ContentBlock::Thinking {
            thinking,
            signature,
        },
        PartialBlock::Other { mut block, json } => {
            let name = block["type"].as_str().unwrap_or_default().to_string();
            if let (Some(input), Some(fields)) = (parse_input(&json, &name), block.as_object_mut())
            {
                fields.insert("input".to_string(), input);
            }
            // Known types (redacted thinking) become their variant; anything
            // else is kept verbatim.
            ContentBlock::deserialize(&block).unwrap_or(ContentBlock::Unknown(block))
        }
    }
}

/// Parses the joined `input_json_delta` fragments of one block. `None` when
/// there were none, or when they do not parse: a reply cut by `max_tokens`
/// in the middle of a call leaves half an object. That is not an error —
/// the caller gets `{}`, sees `stop_reason: max_tokens`, and the loop
/// answers the call with an error instead of running it.
fn parse_input(json: &str, block: &str) -> Option<Value> {
    if json.trim().is_empty() {
        return None;
    }
    match serde_json::from_str(json) {
        Ok(input) => Some(input),
        Err(error) => {
            tracing::warn!(%error, block, "tool input is not valid JSON (cut by max_tokens?)");
            None
        }
    }
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}
