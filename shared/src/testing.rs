//! A tiny HTTP server on 127.0.0.1 for tests that need control wiremock
//! does not give: a body sent in chosen chunks (splitting JSON or a UTF-8
//! character), a stream that stops without closing, a connection dropped
//! mid-reply.
//!
//! Each incoming request takes the next scripted [`FakeResponse`], or the
//! one a function makes from the request ([`FakeServer::respond_with`]); the
//! raw requests are kept for assertions. Used by the client tests in
//! `shared` and by the lessons' end-to-end tests through
//! `ANTHROPIC_BASE_URL`.
//!
//! [`cache_sim`] bills recorded request bodies under the provider's
//! prompt-caching rules, and [`session`] drives a lesson's agent through a
//! long scripted session against this server to record them.

pub mod cache_sim;
pub mod session;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::sync::LockExt;

/// One piece of a scripted response body.
#[derive(Debug, Clone)]
pub enum Chunk {
    /// Bytes written and flushed as one piece.
    Bytes(Vec<u8>),
    /// Wait before the next piece.
    Pause(Duration),
    /// Stop writing but keep the connection open (a silent server).
    Hang,
}

/// A scripted response.
#[derive(Debug, Clone)]
pub struct FakeResponse {
    /// The HTTP status code.
    pub status: u16,
    /// Response headers, sent in this order.
    pub headers: Vec<(String, String)>,
    /// The body, written piece by piece.
    pub chunks: Vec<Chunk>,
}

impl FakeResponse {
    /// A `text/event-stream` response whose body is sent in these pieces.
    pub fn sse(chunks: Vec<Chunk>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
        }
    }

    /// A `text/event-stream` response sent in one piece.
    pub fn sse_body(body: impl Into<String>) -> Self {
        Self::sse(vec![Chunk::Bytes(body.into().into_bytes())])
    }

    /// A JSON response with this status (for error replies).
    pub fn json(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Chunk::Bytes(body.into().into_bytes())],
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct ReceivedRequest {
    /// The request line, e.g. `POST /v1/messages HTTP/1.1`.
    pub request_line: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The request body as text.
    pub body: String,
}

impl ReceivedRequest {
    /// The first header with this (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Makes a response from the request it answers.
pub type Responder = Arc<dyn Fn(&ReceivedRequest) -> FakeResponse + Send + Sync>;

/// What answers the next connection: a response chosen when it was
/// accepted, or one made from its request.
enum Answer {
    Fixed(FakeResponse),
    Made(Responder),
}

/// The fake server. It stops when dropped.
#[derive(Debug)]
pub struct FakeServer {
    url: String,
    received: Arc<Mutex<Vec<ReceivedRequest>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// Starts serving `responses` in order; requests past the end get a 500.
    pub async fn start(responses: Vec<FakeResponse>) -> std::io::Result<Self> {
        let mut responses = responses.into_iter();
        Self::serve_with(move || {
            Answer::Fixed(responses.next().unwrap_or_else(|| {
                FakeResponse::json(500, r#"{"error":{"type":"api_error","message":"fake server: no more scripted responses"}}"#)
            }))
        })
        .await
    }

    /// Starts answering every request with what `responder` makes of it:
    /// for a model played by a program rather than a fixed list.
    pub async fn respond_with(
        responder: impl Fn(&ReceivedRequest) -> FakeResponse + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        let responder: Responder = Arc::new(responder);
        Self::serve_with(move || Answer::Made(Arc::clone(&responder))).await
    }

    async fn serve_with(
        mut next: impl FnMut() -> Answer + Send + 'static,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let answer = next();
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    if let Err(error) = serve(stream, answer, log).await {
                        tracing::debug!(%error, "fake server connection ended");
                    }
                });
            }
        });
        Ok(Self {
            url,
            received,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL` and friends.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The requests received so far.
    pub fn received(&self) -> Vec<ReceivedRequest> {
        self.received.locked().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut stream: TcpStream,
    answer: Answer,
    log: Arc<Mutex<Vec<ReceivedRequest>>>,
) -> std::io::Result<()> {
    let request = read_request(&mut stream).await?;
    let response = match answer {
        Answer::Fixed(response) => response,
        Answer::Made(responder) => responder(&request),
    };
    log.locked().push(request);
    let mut head = format!("HTTP/1.1 {} Fake\r\nconnection: close\r\n", response.status);
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    // No content-length: the body ends when the connection closes, which is
    // what lets a test cut a stream anywhere.
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await?;
    for chunk in response.chunks {
        match chunk {
            Chunk::Bytes(bytes) => {
                stream.write_all(&bytes).await?;
                stream.flush().await?;
            }
            Chunk::Pause(delay) => tokio::time::sleep(delay).await,
            Chunk::Hang => std::future::pending::<()>().await,
        }
    }
    stream.shutdown().await
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<ReceivedRequest> {
    let mut buffer = Vec::new();
    let mut piece = [0u8; 8192];
    let head_end = loop {
        let read = stream.read(&mut piece).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&piece[..read]);
        if let Some(position) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break position + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let read = stream.read(&mut piece).await?;
        if read == 0 {
            break;
        }
        buffer.extend_from_slice(&piece[..read]);
    }
    let body = String::from_utf8_lossy(&buffer[head_end..]).to_string();
    Ok(ReceivedRequest {
        request_line,
        headers,
        body,
    })
}

/// Formats one server-sent event.
pub fn sse_event(event: &str, data: &serde_json::Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// A complete Anthropic stream for a reply made of `blocks` (content blocks
/// as JSON), ending with `stop_reason`. Text blocks stream their text and
/// tool_use blocks their input as `input_json_delta`, as the real API does.
pub fn anthropic_stream(blocks: &[serde_json::Value], stop_reason: &str) -> String {
    anthropic_stream_with_usage(
        blocks,
        stop_reason,
        &serde_json::json!({"input_tokens": 10, "output_tokens": 1}),
    )
}

/// [`anthropic_stream`] whose `message_start` reports `usage` (for
/// instance with `cache_read_input_tokens`), as the real API does there.
pub fn anthropic_stream_with_usage(
    blocks: &[serde_json::Value],
    stop_reason: &str,
    usage: &serde_json::Value,
) -> String {
    use serde_json::json;
    let mut body = sse_event(
        "message_start",
        &json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": "fake", "stop_reason": null, "usage": usage}}),
    );
    for (index, block) in blocks.iter().enumerate() {
        match block["type"].as_str() {
            Some("tool_use") => {
                body.push_str(&sse_event("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})));
                body.push_str(&sse_event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": block["input"].to_string()}})));
            }
            _ => {
                body.push_str(&sse_event("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
                body.push_str(&sse_event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": block["text"]}})));
            }
        }
        body.push_str(&sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    body.push_str(&sse_event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    ));
    body.push_str(&sse_event("message_stop", &json!({"type": "message_stop"})));
    body
}

// ANCHOR: recorder
/// An observer that keeps what a turn showed, for tests to assert on: the
/// streamed text, each tool call with its result, every notice and every
/// progress report.
#[derive(Debug, Default, Clone)]
pub struct Recorder {
    /// The streamed text, concatenated.
    pub text: String,
    /// Each tool call, in the order the turn ran them.
    pub calls: Vec<crate::protocol::ToolUse>,
    /// Each tool result, in the order they came back.
    pub results: Vec<crate::protocol::ToolResult>,
    /// Every notice the turn showed.
    pub notices: Vec<crate::notice::Notice>,
    /// Every progress report.
    pub progress: Vec<crate::progress::Progress>,
}

impl Recorder {
    /// The notices with this tag, as `text` only.
    pub fn notices_tagged(&self, tag: &str) -> Vec<String> {
        self.notices
            .iter()
            .filter(|notice| notice.tag == tag)
            .map(|notice| notice.text.clone())
            .collect()
    }
}

impl crate::agent::Observer for Recorder {
    fn event(&mut self, event: crate::agent::Event<'_>) {
        use crate::agent::Event;
        use crate::protocol::Delta;
        match event {
            Event::Delta(Delta::Text(text)) => self.text.push_str(text),
            Event::Delta(_) | Event::ReplyDone => {}
            Event::ToolCall(call) => self.calls.push(call.clone()),
            Event::ToolResult(_, result) => self.results.push(result.clone()),
            Event::Notice(notice) => self.notices.push(notice.clone()),
            Event::Progress(report) => self.progress.push(report.clone()),
        }
    }
}
// ANCHOR_END: recorder
