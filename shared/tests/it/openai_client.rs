//! Black-box tests of the OpenAI-compatible client against servers on
//! 127.0.0.1: wiremock for whole responses and request capture, the crate's
//! own `FakeServer` for bodies cut into chosen TCP chunks.

// Helpers outside `#[test]` functions panic on purpose too: a broken
// fixture should fail the test that uses it.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::{Value, json};
use shared::error::ApiError;
use shared::model::Model;
use shared::model::config::{Secret, Timeouts};
use shared::model::openai::{OpenAiClient, OpenAiConfig};
use shared::protocol::{
    CacheControl, ContentBlock, Delta, Message, Request, Response, Role, StopReason, SystemBlock,
    ToolResult, ToolResultContent, ToolSpec, ToolUse, Usage,
};
use shared::testing::{Chunk, FakeResponse, FakeServer};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

// --- Building streams -------------------------------------------------------

const DONE: &str = "data: [DONE]\n\n";

fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

fn delta(delta: Value) -> String {
    data(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}]
    }))
}

fn text(piece: &str) -> String {
    delta(json!({"content": piece}))
}

fn tool_calls(fragments: Value) -> String {
    delta(json!({"tool_calls": fragments}))
}

fn finish(reason: &str) -> String {
    data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
}

fn usage(prompt: u64, completion: u64) -> String {
    data(json!({
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    }))
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// An OpenAI-style error body.
fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

// --- Running the client -----------------------------------------------------

fn client(base_url: &str, key: Option<&str>) -> OpenAiClient {
    client_with(base_url, key, Timeouts::default())
}

fn client_with(base_url: &str, key: Option<&str>, timeouts: Timeouts) -> OpenAiClient {
    OpenAiClient::new(OpenAiConfig {
        base_url: base_url.to_string(),
        api_key: key.map(Secret::new),
        timeouts,
    })
    .unwrap()
}

/// What the client reported while streaming, owned so it can be compared.
#[derive(Debug, PartialEq)]
enum Seen {
    Text(String),
    Thinking(String),
    ToolUseStart(String),
}

fn request(messages: &[Message]) -> Request<'_> {
    Request {
        model: "qwen3",
        max_tokens: 1024,
        system: &[],
        messages,
        tools: &[],
    }
}

async fn ask(
    client: &OpenAiClient,
    request: &Request<'_>,
) -> (Result<Response, ApiError>, Vec<Seen>) {
    let mut seen = Vec::new();
    let result = {
        let mut sink = |delta: Delta<'_>| {
            seen.push(match delta {
                Delta::Text(text) => Seen::Text(text.to_string()),
                Delta::Thinking(text) => Seen::Thinking(text.to_string()),
                Delta::ToolUseStart { name } => Seen::ToolUseStart(name.to_string()),
            })
        };
        client.send(request, &mut sink).await
    };
    (result, seen)
}

/// Asks "hi" of a `FakeServer` that plays `response`.
async fn ask_fake(response: FakeResponse) -> (Result<Response, ApiError>, Vec<Seen>) {
    ask_fake_with(response, Timeouts::default()).await
}

async fn ask_fake_with(
    response: FakeResponse,
    timeouts: Timeouts,
) -> (Result<Response, ApiError>, Vec<Seen>) {
    let server = FakeServer::start(vec![response]).await.unwrap();
    let client = client_with(&format!("{}/v1", server.url()), None, timeouts);
    let history = [Message::user_text("hi")];
    let outcome = ask(&client, &request(&history)).await;
    let received = server.received();
    assert_eq!(received.len(), 1, "exactly one request, no retry");
    assert_eq!(
        received[0].request_line,
        "POST /v1/chat/completions HTTP/1.1"
    );
    outcome
}

/// Asks "hi" of a wiremock server that answers once with `response`.
async fn ask_mock(response: ResponseTemplate) -> Result<Response, ApiError> {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(response)
        .expect(1)
        .mount(&server)
        .await;
    let client = client(&format!("{}/v1", server.uri()), Some("sk-test-secret"));
    let history = [Message::user_text("hi")];
    ask(&client, &request(&history)).await.0
}

fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse(ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    })
}

fn object() -> Value {
    json!({})
}

// --- The request ------------------------------------------------------------

#[tokio::test]
async fn request_maps_history_system_and_tools() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(text("ok") + &finish("stop") + DONE))
        .expect(1)
        .mount(&server)
        .await;

    let system = [
        SystemBlock {
            cache_control: Some(CacheControl::ephemeral()),
            ..SystemBlock::text("You are a coding agent.")
        },
        SystemBlock::text("The workspace is /tmp/demo."),
    ];
    let tools = [
        ToolSpec {
            cache_control: Some(CacheControl::ephemeral()),
            ..ToolSpec::new(
                "read_file",
                "Reads a file.",
                json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            )
        },
        ToolSpec::new(
            "list_files",
            "Lists a directory.",
            json!({"type": "object", "properties": {}}),
        ),
    ];
    let history = [
        Message::user_text("List the files, then read main.rs."),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "Two calls at once.".into(),
                    signature: "sig==".into(),
                },
                ContentBlock::text("I'll look."),
                tool_use("call_a", "list_files", json!({"path": "."})),
                tool_use("call_b", "read_file", json!({"path": "main.rs"})),
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult(ToolResult::ok("call_a", "main.rs\nlib.rs")),
                ContentBlock::ToolResult(ToolResult::error("call_b", "permission denied")),
                ContentBlock::Text {
                    text: "Be brief.".into(),
                    cache_control: Some(CacheControl::ephemeral()),
                },
            ],
        },
        Message {
            role: Role::Assistant,
            content: vec![tool_use("call_c", "read_file", json!({"path": "lib.rs"}))],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult {
                content: ToolResultContent::Blocks(vec![ContentBlock::text("pub fn x() {}")]),
                ..ToolResult::ok("call_c", "")
            })],
        },
    ];
    let request = Request {
        model: "qwen3",
        max_tokens: 2048,
        system: &system,
        messages: &history,
        tools: &tools,
    };
    // The trailing slash must not double up in the path.
    let client = client(&format!("{}/v1/", server.uri()), None);
    let (reply, _) = ask(&client, &request).await;
    assert_eq!(reply.unwrap().content, vec![ContentBlock::text("ok")]);

    let received = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&received[0].body).unwrap();
    insta::assert_json_snapshot!(body);
}

#[tokio::test]
async fn bearer_header_is_sent_only_with_a_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(text("ok") + &finish("stop") + DONE))
        .expect(2)
        .mount(&server)
        .await;
    let history = [Message::user_text("hi")];
    let base = format!("{}/v1", server.uri());
    ask(&client(&base, Some("sk-test-secret")), &request(&history))
        .await
        .0
        .unwrap();
    ask(&client(&base, None), &request(&history))
        .await
        .0
        .unwrap();

    let received = server.received_requests().await.unwrap();
    let auth = |index: usize| {
        received[index]
            .headers
            .get("authorization")
            .map(|value| value.to_str().unwrap().to_string())
    };
    assert_eq!(auth(0).as_deref(), Some("Bearer sk-test-secret"));
    assert_eq!(auth(1), None);
    // Without tools or a system prompt, neither appears in the body.
    let body: Value = serde_json::from_slice(&received[1].body).unwrap();
    assert_eq!(body.get("tools"), None);
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
}

#[tokio::test]
async fn a_server_refusing_stream_options_is_asked_again_without_them() {
    let server = MockServer::start().await;
    let asks_for_usage = |request: &wiremock::Request| {
        String::from_utf8_lossy(&request.body).contains("stream_options")
    };
    Mock::given(method("POST"))
        .and(asks_for_usage)
        .respond_with(ResponseTemplate::new(400).set_body_json(error_body(
            "Unrecognized request argument supplied: stream_options",
            "invalid_request_error",
            None,
        )))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(move |request: &wiremock::Request| !asks_for_usage(request))
        .respond_with(sse(text("ok") + &finish("stop") + DONE))
        .expect(2)
        .mount(&server)
        .await;
    let client = client(&format!("{}/v1", server.uri()), None);
    let history = [Message::user_text("hi")];

    let first = ask(&client, &request(&history)).await.0.unwrap();
    assert_eq!(first.content, vec![ContentBlock::text("ok")]);
    assert_eq!(
        first.usage,
        Usage::default(),
        "no usage without stream_options"
    );
    // The client remembers: the next turn costs one request, not two.
    ask(&client, &request(&history)).await.0.unwrap();
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

// --- Streams that succeed ---------------------------------------------------

#[tokio::test]
async fn text_streams_as_it_arrives_and_usage_comes_last() {
    let body = delta(json!({"role": "assistant", "content": ""}))
        // Some servers send the thinking under both names: shown once.
        + &delta(json!({"reasoning_content": "The user greets.", "reasoning": "The user greets."}))
        + &text("Hel")
        + &text("lo!")
        + &finish("stop")
        + &usage(12, 3)
        + DONE;
    let (reply, seen) = ask_fake(FakeResponse::sse_body(body)).await;
    assert_eq!(
        seen,
        vec![
            Seen::Thinking("The user greets.".into()),
            Seen::Text("Hel".into()),
            Seen::Text("lo!".into()),
        ]
    );
    assert_eq!(
        reply.unwrap(),
        Response {
            // Reasoning is shown but not kept: it has no signature to return.
            content: vec![ContentBlock::text("Hello!")],
            stop_reason: Some(StopReason::EndTurn),
            usage: Usage {
                input_tokens: 12,
                output_tokens: 3,
                ..Usage::default()
            },
        }
    );
}

#[tokio::test]
async fn cached_prompt_tokens_are_reported_as_cache_reads() {
    // OpenAI counts the cached part inside `prompt_tokens` and names it in
    // `prompt_tokens_details`; the reply reports it the Anthropic way.
    let cached = data(json!({
        "choices": [],
        "usage": {
            "prompt_tokens": 2_000,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 1_536}
        }
    }));
    let body = text("ok") + &finish("stop") + &cached + DONE;
    let (reply, _) = ask_fake(FakeResponse::sse_body(body)).await;
    assert_eq!(
        reply.unwrap().usage,
        Usage {
            input_tokens: 464,
            output_tokens: 5,
            cache_creation_input_tokens: None,
            cache_read_input_tokens: Some(1_536),
        }
    );
}

/// Cuts `body` at these byte offsets and sends the pieces with pauses, so
/// the client really reads them separately.
fn split(body: &str, cuts: &[usize]) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([body.len()].iter()) {
        chunks.push(Chunk::Bytes(body.as_bytes()[start..cut].to_vec()));
        chunks.push(Chunk::Pause(Duration::from_millis(20)));
        start = cut;
    }
    chunks
}

/// The byte offset just inside the first occurrence of `character`.
fn inside(body: &str, character: char) -> usize {
    let cut = body.find(character).unwrap() + 1;
    assert!(
        !body.is_char_boundary(cut),
        "the cut must split {character}"
    );
    cut
}

#[tokio::test]
async fn tool_call_survives_json_and_utf8_split_across_tcp_chunks() {
    let body = text("Reading → now")
        + &tool_calls(json!([{
            "index": 0, "id": "call_9", "type": "function",
            "function": {"name": "read_file", "arguments": ""}
        }]))
        + &tool_calls(json!([{"index": 0, "function": {"arguments": "{\"path\":"}}]))
        + &tool_calls(json!([{"index": 0, "function": {"arguments": " \"café.txt\"}"}}]))
        + &finish("tool_calls")
        + DONE;
    let middle_of_a_line = body.find("read_file").unwrap() + 3;
    let cuts = [inside(&body, '→'), middle_of_a_line, inside(&body, 'é')];
    let (reply, seen) = ask_fake(FakeResponse::sse(split(&body, &cuts))).await;

    assert_eq!(
        seen,
        vec![
            Seen::Text("Reading → now".into()),
            Seen::ToolUseStart("read_file".into()),
        ]
    );
    let reply = reply.unwrap();
    assert_eq!(
        reply.content,
        vec![
            ContentBlock::text("Reading → now"),
            tool_use("call_9", "read_file", json!({"path": "café.txt"})),
        ]
    );
    assert_eq!(reply.stop_reason, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn parallel_tool_calls_are_assembled_by_index() {
    let body = tool_calls(json!([
        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}
    ])) + &tool_calls(json!([
        {"index": 1, "id": "call_b", "type": "function", "function": {"name": "list_files", "arguments": "{\"pa"}}
    ])) + &tool_calls(
        json!([{"index": 0, "function": {"arguments": "{\"path\": \"a.rs\"}"}}]),
    ) + &tool_calls(json!([{"index": 1, "function": {"arguments": "th\": \"src\"}"}}]))
        + &finish("tool_calls")
        + &usage(50, 20)
        + DONE;
    let (reply, seen) = ask_fake(FakeResponse::sse_body(body)).await;
    assert_eq!(
        seen,
        vec![
            Seen::ToolUseStart("read_file".into()),
            Seen::ToolUseStart("list_files".into()),
        ]
    );
    let reply = reply.unwrap();
    assert_eq!(
        reply.content,
        vec![
            tool_use("call_a", "read_file", json!({"path": "a.rs"})),
            tool_use("call_b", "list_files", json!({"path": "src"})),
        ]
    );
    assert_eq!(reply.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(reply.usage.output_tokens, 20);
}

#[tokio::test]
async fn tool_calls_without_ids_get_stable_ids_and_stop_means_tool_use() {
    // Ollama's shape: whole calls in one chunk, no ids, finish_reason "stop".
    let body = tool_calls(json!([
        {"index": 0, "function": {"name": "read_file", "arguments": "{\"path\": \"a.rs\"}"}},
        {"index": 1, "function": {"name": "read_file", "arguments": "{\"path\": \"b.rs\"}"}}
    ])) + &finish("stop")
        + DONE;
    let reply = ask_fake(FakeResponse::sse_body(body)).await.0.unwrap();
    assert_eq!(
        reply.content,
        vec![
            tool_use("call_0", "read_file", json!({"path": "a.rs"})),
            tool_use("call_1", "read_file", json!({"path": "b.rs"})),
        ]
    );
    assert_eq!(reply.stop_reason, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn empty_or_broken_arguments_become_an_empty_object() {
    let body = tool_calls(json!([
        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "list_files", "arguments": ""}},
        {"index": 1, "id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": "}}
    ])) + &finish("tool_calls")
        + DONE;
    let reply = ask_fake(FakeResponse::sse_body(body)).await.0.unwrap();
    assert_eq!(
        reply.content,
        vec![
            tool_use("call_a", "list_files", object()),
            tool_use("call_b", "read_file", object()),
        ]
    );
}

#[tokio::test]
async fn finish_reason_length_means_max_tokens() {
    let body = text("The answer is") + &finish("length") + DONE;
    let reply = ask_fake(FakeResponse::sse_body(body)).await.0.unwrap();
    assert_eq!(reply.stop_reason, Some(StopReason::MaxTokens));
    assert_eq!(reply.content, vec![ContentBlock::text("The answer is")]);
}

#[tokio::test]
async fn a_finish_reason_without_done_is_accepted() {
    let body = text("Done.") + &finish("stop");
    let reply = ask_fake(FakeResponse::sse_body(body)).await.0.unwrap();
    assert_eq!(reply.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(reply.content, vec![ContentBlock::text("Done.")]);
}

// --- Streams that fail ------------------------------------------------------

#[tokio::test]
async fn an_error_object_mid_stream_is_a_typed_error() {
    let body = text("Let me") + &data(error_body("the model crashed", "server_error", None));
    let (reply, seen) = ask_fake(FakeResponse::sse_body(body)).await;
    assert_eq!(seen, vec![Seen::Text("Let me".into())]);
    assert_eq!(
        reply.unwrap_err(),
        ApiError::StreamError {
            kind: "server_error".into(),
            message: "the model crashed".into(),
        }
    );
}

#[tokio::test]
async fn a_stream_cut_before_finish_and_done_is_cut_short() {
    let body = text("Half a sen");
    let error = ask_fake(FakeResponse::sse_body(body)).await.0.unwrap_err();
    assert!(
        matches!(error, ApiError::StreamCutShort { .. }),
        "{error:?}"
    );
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_silent_server_times_out() {
    // Long enough that a busy machine still delivers the first chunk in time.
    let idle = Duration::from_secs(1);
    let timeouts = Timeouts {
        idle,
        ..Timeouts::default()
    };
    let chunks = vec![Chunk::Bytes(text("Thinking...").into_bytes()), Chunk::Hang];
    let (reply, seen) = ask_fake_with(FakeResponse::sse(chunks), timeouts).await;
    assert_eq!(seen, vec![Seen::Text("Thinking...".into())]);
    assert_eq!(reply.unwrap_err(), ApiError::Timeout(idle));
}

#[tokio::test]
async fn status_429_is_rate_limited_with_retry_after() {
    let response = ResponseTemplate::new(429)
        .insert_header("retry-after", "7")
        .set_body_json(error_body(
            "Rate limit reached",
            "requests",
            Some("rate_limit_exceeded"),
        ));
    assert_eq!(
        ask_mock(response).await.unwrap_err(),
        ApiError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            message: "Rate limit reached".into(),
        }
    );
}

#[tokio::test]
async fn status_401_is_an_authentication_error() {
    // vLLM started with `--api-key` answers a wrong key like this.
    let response = ResponseTemplate::new(401).set_body_json(json!({"error": "Unauthorized"}));
    let error = ask_mock(response).await.unwrap_err();
    assert!(
        matches!(error, ApiError::Authentication { .. }),
        "{error:?}"
    );
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn status_401_from_openai_itself_is_an_authentication_error() {
    // OpenAI's own 401 carries `type: invalid_request_error`.
    let response = ResponseTemplate::new(401).set_body_json(error_body(
        "Incorrect API key provided: sk-test-***cret.",
        "invalid_request_error",
        Some("invalid_api_key"),
    ));
    let error = ask_mock(response).await.unwrap_err();
    assert!(
        matches!(error, ApiError::Authentication { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn status_400_context_length_is_prompt_too_long() {
    let response = ResponseTemplate::new(400).set_body_json(error_body(
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        "invalid_request_error",
        Some("context_length_exceeded"),
    ));
    let error = ask_mock(response).await.unwrap_err();
    assert!(matches!(error, ApiError::PromptTooLong { .. }), "{error:?}");
}

#[tokio::test]
async fn status_500_is_a_server_error() {
    let response = ResponseTemplate::new(500).set_body_string("upstream model crashed");
    assert_eq!(
        ask_mock(response).await.unwrap_err(),
        ApiError::Server {
            status: 500,
            message: "upstream model crashed".into(),
        }
    );
}

// --- The key ----------------------------------------------------------------

#[tokio::test]
async fn the_key_never_shows_in_debug_output_or_errors() {
    let key = "sk-test-secret";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(error_body(
            "Incorrect API key provided",
            "invalid_request_error",
            Some("invalid_api_key"),
        )))
        .mount(&server)
        .await;
    let client = client(&format!("{}/v1", server.uri()), Some(key));
    let history = [Message::user_text("hi")];
    let error = ask(&client, &request(&history)).await.0.unwrap_err();

    for shown in [
        format!("{client:?}"),
        format!("{error:?}"),
        error.to_string(),
    ] {
        assert!(!shown.contains(key), "the key leaked: {shown}");
    }
    // An unreachable server: the network error must not show it either.
    drop(server);
    let error = ask(&client, &request(&history)).await.0.unwrap_err();
    assert!(!format!("{error:?}").contains(key), "{error:?}");
}
