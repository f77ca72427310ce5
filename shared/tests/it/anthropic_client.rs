//! Black-box tests of the streaming Anthropic client.
//!
//! Every test talks to a server on 127.0.0.1: wiremock where a canned reply
//! is enough (and to capture the request), [`FakeServer`] where the body must
//! be split at chosen bytes, paused, cut or left hanging. Nothing here
//! touches the internet.

// A failing helper should fail the test, so helpers unwrap like the tests
// do (clippy's `allow-unwrap-in-tests` only covers `#[test]` functions).
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use shared::error::ApiError;
use shared::model::Model;
use shared::model::anthropic::{AnthropicClient, AnthropicConfig};
use shared::model::config::{Secret, Timeouts};
use shared::protocol::{
    CacheControl, ContentBlock, Delta, Message, Request, Response, Role, StopReason, SystemBlock,
    ToolResult, ToolSpec, ToolUse, Usage,
};
use shared::testing::{Chunk, FakeResponse, FakeServer, anthropic_stream, sse_event};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The key every test client uses. No output of the client may contain it.
const API_KEY: &str = "sk-ant-test-DO-NOT-LEAK-4242";

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn config(base_url: &str) -> AnthropicConfig {
    AnthropicConfig {
        base_url: base_url.to_string(),
        api_key: Some(Secret::new(API_KEY)),
        auth_token: None,
        timeouts: Timeouts::default(),
    }
}

fn client(base_url: &str) -> AnthropicClient {
    AnthropicClient::new(config(base_url)).unwrap()
}

fn client_with_timeouts(base_url: &str, timeouts: Timeouts) -> AnthropicClient {
    AnthropicClient::new(AnthropicConfig {
        timeouts,
        ..config(base_url)
    })
    .unwrap()
}

/// A delta as the caller saw it, owned so it can be kept after the call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Text(String),
    Thinking(String),
    ToolUseStart(String),
}

/// Sends a one-message request and records every delta.
async fn ask(client: &AnthropicClient) -> (Result<Response, ApiError>, Vec<Seen>) {
    let messages = [Message::user_text("hi")];
    let request = Request {
        model: "claude-test",
        max_tokens: 1024,
        system: &[],
        messages: &messages,
        tools: &[],
    };
    let mut seen = Vec::new();
    let mut on_delta = |delta: Delta<'_>| {
        seen.push(match delta {
            Delta::Text(text) => Seen::Text(text.to_string()),
            Delta::Thinking(text) => Seen::Thinking(text.to_string()),
            Delta::ToolUseStart { name } => Seen::ToolUseStart(name.to_string()),
        });
    };
    let result = client.send(&request, &mut on_delta).await;
    (result, seen)
}

/// Serves `body` in one piece and returns the reply.
async fn ask_with_body(body: String) -> (Result<Response, ApiError>, Vec<Seen>) {
    let server = FakeServer::start(vec![FakeResponse::sse_body(body)])
        .await
        .unwrap();
    ask(&client(server.url())).await
}

/// Answers any request with this status, body and extra headers.
async fn error_reply(status: u16, body: &str, headers: &[(&str, &str)]) -> ApiError {
    let server = MockServer::start().await;
    let mut template = ResponseTemplate::new(status)
        .insert_header("content-type", "application/json")
        .set_body_string(body);
    for (name, value) in headers {
        template = template.insert_header(*name, *value);
    }
    Mock::given(method("POST"))
        .respond_with(template)
        .mount(&server)
        .await;
    ask(&client(&server.uri())).await.0.unwrap_err()
}

fn event(name: &str, data: Value) -> String {
    sse_event(name, &data)
}

fn message_start() -> String {
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
    )
}

fn block_start(index: usize, block: Value) -> String {
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn block_delta(index: usize, delta: Value) -> String {
    event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn text_delta(index: usize, text: &str) -> String {
    block_delta(index, json!({"type": "text_delta", "text": text}))
}

fn json_delta(index: usize, partial: &str) -> String {
    block_delta(
        index,
        json!({"type": "input_json_delta", "partial_json": partial}),
    )
}

fn block_stop(index: usize) -> String {
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_end(stop_reason: &str) -> String {
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 42}}),
    ) + &event("message_stop", json!({"type": "message_stop"}))
}

fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse(ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    })
}

/// Cuts `body` into chunks at the first byte *inside* each of `chars`, so
/// every cut falls in the middle of a multi-byte character. A short pause
/// between chunks makes the client see them as separate reads.
fn split_inside_chars(body: &str, chars: &[char]) -> Vec<Chunk> {
    let mut cuts: Vec<usize> = chars
        .iter()
        .flat_map(|&wanted| {
            body.char_indices()
                .filter(move |&(_, c)| c == wanted)
                .map(|(at, _)| at + 1)
        })
        .collect();
    cuts.sort_unstable();
    let mut chunks = Vec::new();
    let mut from = 0;
    for cut in cuts {
        assert!(!body.is_char_boundary(cut), "cut {cut} is on a boundary");
        chunks.push(Chunk::Bytes(body.as_bytes()[from..cut].to_vec()));
        chunks.push(Chunk::Pause(Duration::from_millis(5)));
        from = cut;
    }
    chunks.push(Chunk::Bytes(body.as_bytes()[from..].to_vec()));
    chunks
}

// ---------------------------------------------------------------------------
// The request
// ---------------------------------------------------------------------------

#[tokio::test]
async fn request_body_and_headers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(anthropic_stream(
                    &[json!({"type": "text", "text": "ok"})],
                    "end_turn",
                )),
        )
        .mount(&server)
        .await;

    let system = [SystemBlock {
        cache_control: Some(CacheControl::ephemeral()),
        ..SystemBlock::text("You are a coding agent.")
    }];
    let tools = [ToolSpec::new(
        "read_file",
        "Reads a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )];
    let messages = [
        Message::user_text("Read a.txt"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "I should read it.".into(),
                    signature: "c2lnbmF0dXJl".into(),
                },
                tool_use("toolu_1", "read_file", json!({"path": "a.txt"})),
            ],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok("toolu_1", "hello"))],
        },
    ];
    let request = Request {
        model: "claude-test",
        max_tokens: 2048,
        system: &system,
        messages: &messages,
        tools: &tools,
    };
    let reply = client(&server.uri())
        .send(&request, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(reply.content, vec![ContentBlock::text("ok")]);

    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    let header = |name: &str| sent.headers.get(name).and_then(|v| v.to_str().ok());
    assert_eq!(header("x-api-key"), Some(API_KEY));
    assert_eq!(header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(header("content-type"), Some("application/json"));
    assert_eq!(header("authorization"), None);
    let body: Value = sent.body_json().unwrap();
    insta::assert_json_snapshot!("request_body", body);
}

#[tokio::test]
async fn auth_token_is_sent_as_bearer_without_api_key() {
    let server = FakeServer::start(vec![FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": "ok"})],
        "end_turn",
    ))])
    .await
    .unwrap();
    let client = AnthropicClient::new(AnthropicConfig {
        api_key: None,
        auth_token: Some(Secret::new("gateway-token-123")),
        ..config(server.url())
    })
    .unwrap();
    let (reply, _) = ask(&client).await;
    reply.unwrap();

    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].request_line, "POST /v1/messages HTTP/1.1");
    assert_eq!(
        received[0].header("authorization"),
        Some("Bearer gateway-token-123")
    );
    assert_eq!(received[0].header("x-api-key"), None);
    assert_eq!(received[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(received[0].json()["stream"], json!(true));
}

#[tokio::test]
async fn base_url_may_carry_a_path_prefix_and_trailing_slash() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/gateway/anthropic/v1/messages"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(anthropic_stream(
                    &[json!({"type": "text", "text": "ok"})],
                    "end_turn",
                )),
        )
        .expect(1)
        .mount(&server)
        .await;
    let base = format!("{}/gateway/anthropic/", server.uri());
    let (reply, _) = ask(&client(&base)).await;
    assert_eq!(reply.unwrap().content, vec![ContentBlock::text("ok")]);
}

// ---------------------------------------------------------------------------
// Streaming replies
// ---------------------------------------------------------------------------

#[tokio::test]
async fn text_deltas_arrive_in_order_and_make_the_final_text() {
    let pieces = ["Hel", "lo, ", "wor", "ld!"];
    let mut chunks = vec![Chunk::Bytes(
        (message_start() + &block_start(0, json!({"type": "text", "text": ""}))).into_bytes(),
    )];
    for piece in pieces {
        chunks.push(Chunk::Pause(Duration::from_millis(5)));
        chunks.push(Chunk::Bytes(text_delta(0, piece).into_bytes()));
    }
    chunks.push(Chunk::Bytes(
        (block_stop(0) + &message_end("end_turn")).into_bytes(),
    ));
    let server = FakeServer::start(vec![FakeResponse::sse(chunks)])
        .await
        .unwrap();

    let (reply, seen) = ask(&client(server.url())).await;
    let reply = reply.unwrap();
    let expected: Vec<Seen> = pieces.iter().map(|p| Seen::Text(p.to_string())).collect();
    assert_eq!(seen, expected);
    assert_eq!(reply.content, vec![ContentBlock::text("Hello, world!")]);
    assert_eq!(reply.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 25,
            output_tokens: 42,
            ..Usage::default()
        }
    );
}

#[tokio::test]
async fn tool_json_and_utf8_split_across_tcp_chunks() {
    let text = "héllo ✓ 日本";
    let input = json!({"path": "notes/日本.txt", "content": text});
    let raw = input.to_string();
    // The JSON arrives in fragments that are not valid on their own; one
    // fragment boundary falls right after "h" inside the string value.
    let at = raw.find("héllo").unwrap() + 1;
    let (first, rest) = raw.split_at(at);
    let (second, third) = rest.split_at(rest.len() / 2);
    assert!(rest.is_char_boundary(rest.len() / 2));

    let body = message_start()
        + &block_start(0, json!({"type": "text", "text": ""}))
        + &text_delta(0, "Writing: ")
        + &text_delta(0, text)
        + &block_stop(0)
        + &block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_9", "name": "write_file", "input": {}}),
        )
        + &json_delta(1, first)
        + &json_delta(1, second)
        + &json_delta(1, third)
        + &block_stop(1)
        + &message_end("tool_use");
    let chunks = split_inside_chars(&body, &['é', '✓', '日', '本']);
    assert!(chunks.len() > 8, "expected many cuts, got {}", chunks.len());
    let server = FakeServer::start(vec![FakeResponse::sse(chunks)])
        .await
        .unwrap();

    let (reply, seen) = ask(&client(server.url())).await;
    let reply = reply.unwrap();
    assert_eq!(
        reply.content,
        vec![
            ContentBlock::text(format!("Writing: {text}")),
            tool_use("toolu_9", "write_file", input),
        ]
    );
    assert_eq!(reply.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(
        seen,
        vec![
            Seen::Text("Writing: ".into()),
            Seen::Text(text.into()),
            Seen::ToolUseStart("write_file".into()),
        ]
    );
}

#[tokio::test]
async fn empty_tool_input_is_an_empty_object() {
    // The API sends one empty `input_json_delta` for a tool without
    // arguments; a block with no delta at all must mean the same.
    let body = message_start()
        + &block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_a", "name": "list", "input": {}}),
        )
        + &json_delta(0, "")
        + &block_stop(0)
        + &block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_b", "name": "now", "input": {}}),
        )
        + &block_stop(1)
        + &message_end("tool_use");
    let (reply, _) = ask_with_body(body).await;
    assert_eq!(
        reply.unwrap().content,
        vec![
            tool_use("toolu_a", "list", json!({})),
            tool_use("toolu_b", "now", json!({})),
        ]
    );
}

#[tokio::test]
async fn pings_unknown_events_and_unknown_blocks() {
    let fancy = json!({"type": "fancy_block", "payload": {"a": [1, 2]}, "note": "kept"});
    let body = ": a comment line the SSE parser must skip\n\n".to_string()
        + &message_start()
        + &event("ping", json!({"type": "ping"}))
        + &event("future_event", json!({"type": "future_event", "x": 1}))
        + &block_start(0, json!({"type": "text", "text": ""}))
        + &text_delta(0, "a")
        + &block_delta(0, json!({"type": "future_delta", "stuff": true}))
        + &event("ping", json!({"type": "ping"}))
        + &text_delta(0, "b")
        + &block_stop(0)
        + &block_start(1, fancy.clone())
        + &block_stop(1)
        + &block_start(
            2,
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        )
        + &json_delta(2, r#"{"query": "#)
        + &json_delta(2, r#""rust sse"}"#)
        + &block_stop(2)
        + &message_end("end_turn");
    let (reply, seen) = ask_with_body(body).await;
    let reply = reply.unwrap();
    assert_eq!(seen, vec![Seen::Text("a".into()), Seen::Text("b".into())]);
    assert_eq!(
        reply.content,
        vec![
            ContentBlock::text("ab"),
            ContentBlock::Unknown(fancy),
            // A server tool's input streams like a client tool's and is
            // kept in the unknown block it belongs to.
            ContentBlock::Unknown(
                json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust sse"}})
            ),
        ]
    );
}

#[tokio::test]
async fn events_without_an_event_line_dispatch_on_their_type() {
    // Some compatible gateways send only `data:` lines; the event name is
    // then the `type` field of the data.
    let body: String = anthropic_stream(&[json!({"type": "text", "text": "plain"})], "end_turn")
        .lines()
        .filter(|line| !line.starts_with("event:"))
        .map(|line| format!("{line}\n"))
        .collect();
    let (reply, _) = ask_with_body(body).await;
    assert_eq!(reply.unwrap().content, vec![ContentBlock::text("plain")]);
}

#[tokio::test]
async fn thinking_blocks_round_trip_unchanged() {
    let body = message_start()
        + &block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        )
        + &block_delta(0, json!({"type": "thinking_delta", "thinking": "Let me "}))
        + &block_delta(0, json!({"type": "thinking_delta", "thinking": "think."}))
        + &block_delta(
            0,
            json!({"type": "signature_delta", "signature": "EqQBCkgIARAB"}),
        )
        + &block_delta(
            0,
            json!({"type": "signature_delta", "signature": "GAIiQHb+/=="}),
        )
        + &block_stop(0)
        + &block_start(
            1,
            json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}),
        )
        + &block_stop(1)
        + &block_start(2, json!({"type": "text", "text": ""}))
        + &text_delta(2, "Done.")
        + &block_stop(2)
        + &message_end("end_turn");
    let (reply, seen) = ask_with_body(body).await;
    let reply = reply.unwrap();
    assert_eq!(
        seen,
        vec![
            Seen::Thinking("Let me ".into()),
            Seen::Thinking("think.".into()),
            Seen::Text("Done.".into()),
        ]
    );
    let message = reply.into_message();
    // What goes back to the API next turn is byte for byte what came in.
    assert_eq!(
        serde_json::to_value(&message.content).unwrap(),
        json!([
            {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCkgIARABGAIiQHb+/=="},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "text", "text": "Done."},
        ])
    );
}

#[tokio::test]
async fn max_tokens_in_the_middle_of_a_tool_call_is_not_an_error() {
    // Cut while writing the input: one call closed with content_block_stop,
    // one left open at message_stop.
    let body = message_start()
        + &block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}}),
        )
        + &json_delta(0, r#"{"path": "a.txt", "content": "unfinished"#)
        + &block_stop(0)
        + &message_end("max_tokens");
    let (reply, _) = ask_with_body(body).await;
    let reply = reply.unwrap();
    assert_eq!(reply.stop_reason, Some(StopReason::MaxTokens));
    assert_eq!(
        reply.content,
        vec![tool_use("toolu_1", "write_file", json!({}))]
    );

    let body = message_start()
        + &block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_2", "name": "write_file", "input": {}}),
        )
        + &json_delta(0, r#"{"path": "#)
        + &message_end("max_tokens");
    let (reply, _) = ask_with_body(body).await;
    let reply = reply.unwrap();
    assert_eq!(reply.stop_reason, Some(StopReason::MaxTokens));
    assert_eq!(
        reply.content,
        vec![tool_use("toolu_2", "write_file", json!({}))]
    );
}

// ---------------------------------------------------------------------------
// Failures during the stream
// ---------------------------------------------------------------------------

#[tokio::test]
async fn error_event_mid_stream_is_typed() {
    let head = message_start()
        + &block_start(0, json!({"type": "text", "text": ""}))
        + &text_delta(0, "Partial");
    let body = head.clone()
        + &event(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
    let (reply, seen) = ask_with_body(body).await;
    assert_eq!(
        reply.unwrap_err(),
        ApiError::Overloaded {
            message: "Overloaded".into()
        }
    );
    assert_eq!(seen, vec![Seen::Text("Partial".into())]);

    let body = head
        + &event(
            "error",
            json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}),
        );
    let (reply, _) = ask_with_body(body).await;
    let error = reply.unwrap_err();
    assert_eq!(
        error,
        ApiError::StreamError {
            kind: "api_error".into(),
            message: "Internal server error".into()
        }
    );
    assert!(error.is_retryable());
}

#[tokio::test]
async fn stream_closed_mid_reply_is_cut_short() {
    // Closed between events, and closed in the middle of an event.
    let between = message_start()
        + &block_start(0, json!({"type": "text", "text": ""}))
        + &text_delta(0, "Hello");
    let inside = between.clone() + "event: content_block_delta\ndata: {\"type\": \"cont";
    for body in [between, inside] {
        let (reply, seen) = ask_with_body(body).await;
        let error = reply.unwrap_err();
        assert!(
            matches!(error, ApiError::StreamCutShort { .. }),
            "{error:?}"
        );
        assert_eq!(seen, vec![Seen::Text("Hello".into())]);
    }

    // A chunked body whose connection drops before the last chunk: the HTTP
    // layer reports a broken body rather than a clean end.
    let events = message_start() + &text_delta(0, "x");
    let framed = format!("{:x}\r\n{events}\r\n", events.len());
    let server = FakeServer::start(vec![
        FakeResponse::sse_body(framed).with_header("transfer-encoding", "chunked"),
    ])
    .await
    .unwrap();
    let error = ask(&client(server.url())).await.0.unwrap_err();
    assert!(
        matches!(error, ApiError::StreamCutShort { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn silent_stream_times_out_after_the_idle_limit() {
    let idle = Duration::from_millis(200);
    let head = message_start()
        + &block_start(0, json!({"type": "text", "text": ""}))
        + &text_delta(0, "Hel");
    let server = FakeServer::start(vec![FakeResponse::sse(vec![
        Chunk::Bytes(head.into_bytes()),
        Chunk::Hang,
    ])])
    .await
    .unwrap();
    let timeouts = Timeouts {
        idle,
        ..Timeouts::default()
    };
    let (reply, seen) = ask(&client_with_timeouts(server.url(), timeouts)).await;
    assert_eq!(reply.unwrap_err(), ApiError::Timeout(idle));
    // The text before the silence reached the caller as it arrived.
    assert_eq!(seen, vec![Seen::Text("Hel".into())]);
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    // Accepts the connection, reads nothing, says nothing.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let holder = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        std::future::pending::<()>().await;
        drop(socket);
    });
    let response = Duration::from_millis(200);
    let timeouts = Timeouts {
        response,
        ..Timeouts::default()
    };
    let (reply, _) = ask(&client_with_timeouts(&url, timeouts)).await;
    assert_eq!(reply.unwrap_err(), ApiError::Timeout(response));
    holder.abort();
}

// ---------------------------------------------------------------------------
// Failures before the stream
// ---------------------------------------------------------------------------

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
    let error = error_reply(429, body, &[("retry-after", "7")]).await;
    assert_eq!(
        error,
        ApiError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            message: "Number of request tokens has exceeded your per-minute rate limit".into(),
        }
    );
    assert!(error.is_retryable());
}

#[tokio::test]
async fn http_errors_are_classified() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    assert_eq!(
        error_reply(529, overloaded, &[]).await,
        ApiError::Overloaded {
            message: "Overloaded".into()
        }
    );

    let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208931 tokens > 200000 maximum"}}"#;
    assert_eq!(
        error_reply(400, too_long, &[]).await,
        ApiError::PromptTooLong {
            message: "prompt is too long: 208931 tokens > 200000 maximum".into()
        }
    );

    let invalid = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}"#;
    assert_eq!(
        error_reply(400, invalid, &[]).await,
        ApiError::InvalidRequest {
            message: "messages: roles must alternate".into()
        }
    );

    let auth =
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    assert_eq!(
        error_reply(401, auth, &[]).await,
        ApiError::Authentication {
            message: "invalid x-api-key".into()
        }
    );

    let server =
        r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#;
    let error = error_reply(500, server, &[]).await;
    assert_eq!(
        error,
        ApiError::Server {
            status: 500,
            message: "Internal server error".into()
        }
    );
    assert!(error.is_retryable());

    // A proxy's HTML page still gives a usable message.
    let error = error_reply(502, "<html>Bad Gateway</html>", &[]).await;
    assert_eq!(
        error,
        ApiError::Server {
            status: 502,
            message: "<html>Bad Gateway</html>".into()
        }
    );
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    // Take a free port, then close it so nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (reply, seen) = ask(&client(&url)).await;
    let error = reply.unwrap_err();
    assert!(matches!(error, ApiError::Network { .. }), "{error:?}");
    assert!(error.is_retryable());
    assert!(seen.is_empty());
}

// ---------------------------------------------------------------------------
// The key stays secret
// ---------------------------------------------------------------------------

/// A log sink for the secrecy test.
#[derive(Clone, Default)]
struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_key_never_leaks() {
    let log = CapturedLog::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // A current-thread runtime: every task of this test logs here.
    let _guard = tracing::subscriber::set_default(subscriber);
    // Without a second live dispatcher, tracing would ask a sibling test's
    // thread (which has no subscriber) whether a callsite is wanted and cache
    // its "never" for the process, and this check would pass on no output.
    let _anchor = tracing::Dispatch::new(tracing_subscriber::registry());
    tracing::callsite::rebuild_interest_cache();

    let both = AnthropicClient::new(AnthropicConfig {
        auth_token: Some(Secret::new(API_KEY)),
        ..config("http://127.0.0.1:1")
    })
    .unwrap();
    assert!(!format!("{both:?}").contains(API_KEY));
    assert!(!format!("{both:#?}").contains(API_KEY));

    // A clean reply with pings, which the client logs at debug level.
    let body = message_start() + &event("ping", json!({"type": "ping"})) + &message_end("end_turn");
    ask_with_body(body).await.0.unwrap();

    let mut errors = Vec::new();
    // A gateway that echoes the request headers back in its error body.
    let echo = format!(
        r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key: {API_KEY}"}}}}"#
    );
    errors.push(error_reply(401, &echo, &[]).await);
    errors.push(error_reply(500, &format!("<pre>x-api-key: {API_KEY}</pre>"), &[]).await);

    // An error event that quotes it.
    let body = message_start()
        + &event(
            "error",
            json!({"type": "error", "error": {"type": API_KEY, "message": format!("bad key {API_KEY}")}}),
        );
    errors.push(ask_with_body(body).await.0.unwrap_err());

    // Connection refused, cut short, timed out.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    errors.push(ask(&client(&refused)).await.0.unwrap_err());
    errors.push(ask_with_body(message_start()).await.0.unwrap_err());
    let server = FakeServer::start(vec![FakeResponse::sse(vec![Chunk::Hang])])
        .await
        .unwrap();
    let timeouts = Timeouts {
        idle: Duration::from_millis(100),
        ..Timeouts::default()
    };
    errors.push(
        ask(&client_with_timeouts(server.url(), timeouts))
            .await
            .0
            .unwrap_err(),
    );

    // A key pasted with a trailing newline cannot be sent as a header; the
    // error says so without quoting it.
    let pasted = AnthropicClient::new(AnthropicConfig {
        api_key: Some(Secret::new(format!("{API_KEY}\n"))),
        ..config(server.url())
    })
    .unwrap();
    let error = ask(&pasted).await.0.unwrap_err();
    assert!(
        matches!(error, ApiError::Authentication { .. }),
        "{error:?}"
    );
    errors.push(error);

    assert_eq!(errors.len(), 7);
    for error in &errors {
        let shown = format!("{error} / {error:?}");
        assert!(!shown.contains(API_KEY), "the key leaked: {shown}");
    }
    // The redacted errors still say what went wrong.
    assert!(matches!(errors[0], ApiError::Authentication { .. }));
    assert!(errors[0].to_string().contains("invalid x-api-key"));

    let log = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("ignoring stream event"),
        "nothing was captured"
    );
    assert!(!log.contains(API_KEY), "the key leaked into the log: {log}");
}

// Streams in the exact shape the real API sends them, written out by hand
// rather than built by the helpers above: compact JSON, `caller` and
// `service_tier` fields, pings between events, server tools and their
// results, block and event types this client has never heard of.

/// A recorded-format reply: text, a client tool call whose input arrives in
/// pieces (the first one empty), a server tool call and its result, and an
/// unknown block and event in between.
const RECORDED: &str = r#"event: message_start
data: {"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","id":"msg_01Rec","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":2,"service_tier":"standard"}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" that up."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_01Web","name":"web_search","input":{},"caller":{"type":"direct"}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"rust 1.88"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" let chains\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01Web","content":[{"type":"web_search_result","title":"Announcing Rust 1.88.0","url":"https://blog.rust-lang.org/","encrypted_content":"EqgfCioIARgBIiQ3","page_age":null}]}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: future_event_type
data: {"type":"future_event_type","detail":"ignored"}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01Bash","name":"bash","input":{},"caller":{"type":"direct"}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"car"}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"go --version\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":89,"server_tool_use":{"web_search_requests":1}}}

event: message_stop
data: {"type":"message_stop"}

"#;

/// Checks the reply made from [`RECORDED`] (or any of its variants).
fn assert_recorded_reply(reply: &Response) {
    assert_eq!(reply.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(reply.content.len(), 4, "{:#?}", reply.content);
    assert_eq!(reply.content[0], ContentBlock::text("Let me look that up."));
    // The server tool call keeps its joined input, and its result block is
    // kept as it came, to be sent back unchanged.
    let ContentBlock::Unknown(server_call) = &reply.content[1] else {
        panic!("server_tool_use kept verbatim: {:?}", reply.content[1]);
    };
    assert_eq!(server_call["type"], "server_tool_use");
    assert_eq!(
        server_call["input"],
        json!({"query": "rust 1.88 let chains"})
    );
    let ContentBlock::Unknown(result) = &reply.content[2] else {
        panic!(
            "web_search_tool_result kept verbatim: {:?}",
            reply.content[2]
        );
    };
    assert_eq!(result["tool_use_id"], "srvtoolu_01Web");
    assert_eq!(
        result["content"][0]["encrypted_content"],
        "EqgfCioIARgBIiQ3"
    );
    assert_eq!(
        reply.content[3],
        tool_use(
            "toolu_01Bash",
            "bash",
            json!({"command": "cargo --version"})
        )
    );
    assert_eq!(reply.usage.input_tokens, 472);
    assert_eq!(reply.usage.output_tokens, 89);
}

#[tokio::test]
async fn a_recorded_stream_with_server_tools_pings_and_unknown_types_is_read_whole() {
    let (reply, seen) = ask_with_body(RECORDED.to_string()).await;
    let reply = reply.unwrap();
    assert_recorded_reply(&reply);
    assert_eq!(
        seen,
        vec![
            Seen::Text("Let me look".into()),
            Seen::Text(" that up.".into()),
            Seen::ToolUseStart("bash".into()),
        ]
    );
    // What came back can go out again as the next request's history,
    // server blocks included, and the call answered as usual.
    let mut history = vec![Message::user_text("hi"), reply.into_message()];
    history.push(Message {
        role: shared::protocol::Role::User,
        content: vec![ContentBlock::ToolResult(shared::protocol::ToolResult::ok(
            "toolu_01Bash",
            "cargo 1.95.0",
        ))],
    });
    shared::history::validate(&history).unwrap();
    let sent = serde_json::to_value(&history[1]).unwrap();
    assert_eq!(sent["content"][1]["type"], "server_tool_use");
    assert_eq!(sent["content"][2]["type"], "web_search_tool_result");
}

#[tokio::test]
async fn crlf_line_endings_are_the_same_stream() {
    let (reply, _) = ask_with_body(RECORDED.replace('\n', "\r\n")).await;
    assert_recorded_reply(&reply.unwrap());
}

#[tokio::test]
async fn a_stream_that_ends_after_its_stop_reason_is_complete() {
    // No blank line after the last event.
    let no_blank_line = RECORDED.trim_end().to_string();
    // No newline at all after the last data line.
    let no_newline = RECORDED.trim_end_matches('\n').to_string();
    // No `message_stop`: the stop reason has already come.
    let stop_at = RECORDED.find("event: message_stop").unwrap();
    let no_message_stop = RECORDED[..stop_at].to_string();
    // No `message_stop`, and no blank line after `message_delta` either.
    let bare_delta = RECORDED[..stop_at].trim_end().to_string();
    for (case, body) in [
        ("no blank line", no_blank_line),
        ("no newline", no_newline),
        ("no message_stop", no_message_stop),
        ("message_delta without blank line", bare_delta),
    ] {
        let (reply, _) = ask_with_body(body).await;
        let reply = reply.unwrap_or_else(|error| panic!("{case}: {error}"));
        assert_recorded_reply(&reply);
    }
}

#[tokio::test]
async fn a_stream_cut_before_its_stop_reason_is_cut_short() {
    // Cut after the last content block, before `message_delta`.
    let delta_at = RECORDED.find("event: message_delta").unwrap();
    // Cut in the middle of `message_delta`'s data line.
    let inside = &RECORDED[..delta_at + 60];
    for body in [&RECORDED[..delta_at], inside] {
        let (reply, _) = ask_with_body(body.to_string()).await;
        let error = reply.unwrap_err();
        assert!(
            matches!(error, ApiError::StreamCutShort { .. }),
            "{error:?}"
        );
        assert!(error.is_retryable());
    }
}

#[tokio::test]
async fn a_refusal_is_a_complete_reply_with_its_stop_reason() {
    let body = r#"event: message_start
data: {"type":"message_start","message":{"model":"claude-sonnet-4-5","id":"msg_01Ref","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"service_tier":"standard"}}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null},"usage":{"output_tokens":1}}

event: message_stop
data: {"type":"message_stop"}
"#;
    let (reply, seen) = ask_with_body(body.to_string()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.stop_reason, Some(StopReason::Refusal));
    assert!(reply.content.is_empty());
    assert!(seen.is_empty());
}

#[tokio::test]
async fn a_tool_input_that_is_not_json_becomes_an_empty_object() {
    // The model (or a gateway) produced input that never parses; the call
    // still comes back, so the loop can answer it with an error result.
    let body = message_start()
        + &block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}),
        )
        + &json_delta(0, "{\"command\": \"ls")
        + &json_delta(0, " -la\", oops}")
        + &block_stop(0)
        + &message_end("tool_use");
    let (reply, _) = ask_with_body(body).await;
    let reply = reply.unwrap();
    assert_eq!(reply.content, vec![tool_use("toolu_1", "bash", json!({}))]);
}
