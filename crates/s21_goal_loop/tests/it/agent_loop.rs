//! The agent loop as the lesson runs it (lesson 1): one turn in-process
//! with a scripted model, and the lesson binary as a user runs it, against
//! a local fake of the Anthropic API — `-p` runs one turn, an API error is
//! one line and a failure status, the requests on the wire keep every
//! `tool_use` paired with its `tool_result`, and the REPL runs line after
//! line until it is told to quit. The same binary against a local fake of
//! an OpenAI-compatible server runs a streamed tool call and answers it; a
//! refusal is one line and the REPL goes on; a stream in the format the
//! real API sends (pings, extra fields, no `message_stop`) runs its tool;
//! and `.env` is read from the working directory, never from above it.
//!
//! Every later lesson runs this module unchanged, so it asserts only what
//! the loop and the front end promise, never a later lesson's extras (its
//! tool list, its system prompt, its notices).

use serde_json::json;
use shared::history::validate;
use shared::model::scripted::Reply;
use shared::protocol::{ContentBlock, Message, Role};
use shared::testing::{FakeResponse, FakeServer, ReceivedRequest, anthropic_stream};

use crate::support;

/// The API key the binary is given. Long enough that the clients redact it
/// from error messages (short placeholders are left alone).
const KEY: &str = "sk-test-key-0042";

/// The environment that points the binary at `server` with [`KEY`].
fn api_vars(server: &FakeServer) -> [(&'static str, &str); 2] {
    [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", KEY),
    ]
}

/// A streamed reply that is only `text`.
fn text_reply(text: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(
        &[json!({"type": "text", "text": text})],
        "end_turn",
    ))
}

/// `responses`, then a few replies of `[]`. Later lessons ask the model
/// side questions after a turn (lesson 9 asks what is worth remembering);
/// `[]` is a harmless answer to those, and the fake server answers every
/// request past its script with a 500, which lesson 11 would retry.
fn with_spare_replies(mut responses: Vec<FakeResponse>) -> Vec<FakeResponse> {
    responses.extend((0..4).map(|_| text_reply("[]")));
    responses
}

/// The requests of the turns: those that offer tools. Side queries offer
/// none, so this count does not change when a later lesson adds one.
fn turn_requests(server: &FakeServer) -> Vec<ReceivedRequest> {
    server
        .received()
        .into_iter()
        .filter(|request| {
            request.json()["tools"]
                .as_array()
                .is_some_and(|tools| !tools.is_empty())
        })
        .collect()
}

/// The conversation a request sent, as the harness's own types.
fn sent_history(request: &ReceivedRequest) -> Vec<Message> {
    serde_json::from_value(request.json()["messages"].clone()).expect("messages parse")
}

/// Every text block of `history`, joined: what the model was told.
fn all_text(history: &[Message]) -> String {
    history
        .iter()
        .map(Message::text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn a_bash_call_runs_for_real_and_its_result_answers_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = support::agent(
        dir.path(),
        vec![
            Reply::tool(
                "bash",
                json!({"command": "echo loop-output-7 > proof.txt && cat proof.txt"}),
            ),
            Reply::text("done"),
        ],
    );
    let mut history = Vec::new();

    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;

    let outcome = outcome.unwrap();
    assert_eq!(outcome.final_text, "done");
    assert_eq!(outcome.rounds, 2);
    // The command really ran in the workspace.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("proof.txt")).unwrap(),
        "loop-output-7\n"
    );
    // The observer saw the call and its result, under the same id.
    assert_eq!(recorder.calls.len(), 1);
    assert_eq!(recorder.results.len(), 1);
    assert_eq!(recorder.results[0].tool_use_id, recorder.calls[0].id);
    // Both halves of the pair are in the history, and the history is valid.
    validate(&history).unwrap();
    let call = history[1].tool_uses().next().unwrap();
    assert_eq!(call.name, "bash");
    assert_eq!(call.id, recorder.calls[0].id);
    let ContentBlock::ToolResult(result) = &history[2].content[0] else {
        panic!("the results lead the next message: {:?}", history[2]);
    };
    assert_eq!(result.tool_use_id, call.id);
    assert!(!result.is_error);
    assert_eq!(result.text().trim_end(), "loop-output-7");
    // And the model's second request carried that result back.
    let second: Vec<Message> =
        serde_json::from_value(model.requests()[1]["messages"].clone()).unwrap();
    validate(&second).unwrap();
    let sent_result = second
        .iter()
        .flat_map(|message| &message.content)
        .find_map(|block| match block {
            ContentBlock::ToolResult(sent) if sent.tool_use_id == call.id => Some(sent),
            _ => None,
        })
        .expect("the result was sent");
    assert_eq!(sent_result.text(), result.text());
}

#[tokio::test]
async fn one_prompt_runs_one_turn_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(with_spare_replies(vec![text_reply("hello from the API")]))
        .await
        .unwrap();

    // More input waits on standard input: `-p` must not read it.
    let output = support::run_binary(
        dir.path(),
        &["-p", "say hello", "--model", "model-under-test"],
        &api_vars(&server),
        "a second prompt\n",
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("hello from the API"), "{stdout}");
    let requests = turn_requests(&server);
    assert_eq!(requests.len(), 1, "one turn, one model call");
    assert_eq!(requests[0].request_line, "POST /v1/messages HTTP/1.1");
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert_eq!(requests[0].json()["model"], "model-under-test");
    let history = sent_history(&requests[0]);
    let last = history.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert!(last.text().contains("say hello"), "{history:?}");
    assert!(!all_text(&history).contains("a second prompt"));
}

#[tokio::test]
async fn streams_runs_the_tool_and_sends_back_a_paired_result() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(with_spare_replies(vec![
        FakeResponse::sse_body(anthropic_stream(
            &[
                json!({"type": "text", "text": "Running it."}),
                json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "echo tool-output-42"}}),
            ],
            "tool_use",
        )),
        text_reply("finished"),
    ]))
    .await
    .unwrap();

    let output = support::run_binary(
        dir.path(),
        &["-p", "echo something"],
        &api_vars(&server),
        "",
    )
    .await;

    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains("Running it.") && stdout.contains("finished"),
        "{stdout}"
    );
    let requests = turn_requests(&server);
    assert_eq!(requests.len(), 2);
    // The first request has no tool_use yet; the second sends the model's
    // reply back with its call, answered by the real output.
    assert!(
        sent_history(&requests[0])
            .iter()
            .all(|message| message.tool_uses().next().is_none())
    );
    let history = sent_history(&requests[1]);
    validate(&history).unwrap();
    let asked = history
        .iter()
        .position(|message| message.tool_uses().any(|call| call.id == "toolu_1"))
        .expect("the tool_use went back to the model");
    assert_eq!(history[asked].role, Role::Assistant);
    let call = history[asked].tool_uses().next().unwrap();
    assert_eq!(call.name, "bash");
    assert_eq!(call.input, json!({"command": "echo tool-output-42"}));
    assert!(history[asked].text().contains("Running it."));
    let ContentBlock::ToolResult(result) = &history[asked + 1].content[0] else {
        panic!("the result leads the next message: {history:?}");
    };
    assert_eq!(result.tool_use_id, "toolu_1");
    assert!(!result.is_error);
    assert_eq!(result.text().trim_end(), "tool-output-42");
}

#[tokio::test]
async fn an_api_error_is_one_clear_line_and_a_failure_status() {
    // Neither error is worth retrying, in any lesson: the request itself
    // or the key is wrong. The first body echoes the key, as a careless
    // proxy might: it must not reach the terminal.
    let cases = [
        (
            401,
            format!(
                r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {KEY}"}}}}"#
            ),
            "authentication failed",
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: field required"}}"#.to_string(),
            "invalid request: messages: field required",
        ),
    ];
    for (status, body, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let server = FakeServer::start(with_spare_replies(vec![FakeResponse::json(status, body)]))
            .await
            .unwrap();

        let output =
            support::run_binary(dir.path(), &["-p", "hello"], &api_vars(&server), "").await;

        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(1), "{status}: {stderr}");
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|line| line.starts_with("error:"))
            .collect();
        assert_eq!(errors.len(), 1, "{status}: {stderr}");
        assert!(errors[0].contains(expected), "{status}: {stderr}");
        assert!(!stderr.contains("panicked"), "{status}: {stderr}");
        assert!(
            !stderr.contains(KEY) && !stdout.contains(KEY),
            "{status}: {stderr}"
        );
        assert_eq!(turn_requests(&server).len(), 1, "{status}: not retried");
    }
}

#[tokio::test]
async fn after_an_api_error_the_repl_goes_on_with_a_valid_history() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(with_spare_replies(vec![FakeResponse::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )]))
    .await
    .unwrap();

    let output = support::run_binary(
        dir.path(),
        &[],
        &api_vars(&server),
        "first-prompt\nsecond-prompt\n",
    )
    .await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("authentication failed"), "{stderr}");
    // The failed call added nothing the API would refuse: the next prompt
    // was sent on a valid history, ending with the user's words.
    let requests = turn_requests(&server);
    assert_eq!(requests.len(), 2, "{stderr}");
    let history = sent_history(&requests[1]);
    validate(&history).unwrap();
    let last = history.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert!(last.text().contains("second-prompt"), "{history:?}");
}

#[tokio::test]
async fn the_repl_runs_each_line_and_quits_on_q_exit_an_empty_line_or_eof() {
    // Each input has two prompts; the quit word between them, if any,
    // must keep the second from ever reaching the model.
    let cases = [
        ("q", "first-prompt\nq\nsecond-prompt\n", 1),
        ("exit", "first-prompt\nexit\nsecond-prompt\n", 1),
        ("an empty line", "first-prompt\n\nsecond-prompt\n", 1),
        ("end of input", "first-prompt\nsecond-prompt\n", 2),
    ];
    for (quit, input, turns) in cases {
        let dir = tempfile::tempdir().unwrap();
        // Every reply is `[]`, so any request may take any of them.
        let server = FakeServer::start(with_spare_replies(Vec::new()))
            .await
            .unwrap();

        let output = support::run_binary(dir.path(), &[], &api_vars(&server), input).await;

        let stderr = text(&output.stderr);
        assert!(output.status.success(), "{quit}: {stderr}");
        let requests = turn_requests(&server);
        assert_eq!(requests.len(), turns, "{quit}: {stderr}");
        let sent = all_text(&sent_history(&requests[0]));
        assert!(sent.contains("first-prompt"), "{quit}: {sent}");
        let sent = all_text(&sent_history(requests.last().unwrap()));
        assert_eq!(sent.contains("second-prompt"), turns == 2, "{quit}: {sent}");
    }
}

/// One `data:` line of a Chat Completions stream whose only choice carries
/// `delta` and `finish_reason`.
fn chat_chunk(delta: serde_json::Value, finish_reason: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-e2e",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    });
    format!("data: {chunk}\n\n")
}

/// A streamed Chat Completions reply that is only `text`.
fn chat_text_reply(text: &str) -> FakeResponse {
    FakeResponse::sse_body(
        chat_chunk(json!({"role": "assistant", "content": text}), None)
            + &chat_chunk(json!({}), Some("stop"))
            + "data: [DONE]\n\n",
    )
}

#[tokio::test]
async fn an_openai_compatible_server_streams_a_tool_call_that_runs_and_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    // The call comes in fragments, as these servers send it: id and name
    // first, then the arguments in pieces that only parse once joined.
    let call = [
        chat_chunk(json!({"role": "assistant", "content": "Running it."}), None),
        chat_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_e2e_1", "type": "function", "function": {"name": "bash", "arguments": ""}}]}),
            None,
        ),
        chat_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\": \"echo openai-ran"}}]}),
            None,
        ),
        chat_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": " > proof.txt && cat proof.txt\"}"}}]}),
            None,
        ),
        chat_chunk(json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    // Spare plain replies answer later lessons' side queries: the fake
    // server answers a request past its script with a 500.
    let mut responses = vec![
        FakeResponse::sse_body(call),
        chat_text_reply("finished over chat completions"),
    ];
    responses.extend((0..4).map(|_| chat_text_reply("[]")));
    let server = FakeServer::start(responses).await.unwrap();
    let base_url = format!("{}/v1", server.url());

    let output = support::run_binary(
        dir.path(),
        &["-p", "run it"],
        &[("OPENAI_BASE_URL", &base_url), ("MODEL_ID", "local-model")],
        "",
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("finished over chat completions"),
        "{stdout}"
    );
    // The command really ran, in the workspace.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("proof.txt")).unwrap(),
        "openai-ran\n"
    );
    let requests = turn_requests(&server);
    assert_eq!(requests.len(), 2, "{stderr}");
    for request in &requests {
        assert_eq!(request.request_line, "POST /v1/chat/completions HTTP/1.1");
        assert_eq!(request.json()["model"], "local-model");
        assert_eq!(request.json()["stream"], true);
    }
    // The second request sends the call back as the assistant's
    // `tool_calls`, then its output in a `tool` message under the same id.
    let messages = requests[1].json()["messages"].as_array().unwrap().clone();
    let asked = messages
        .iter()
        .position(|message| message["role"] == "assistant")
        .expect("the assistant's call went back");
    let assistant = &messages[asked];
    assert_eq!(assistant["content"], "Running it.");
    let calls = assistant["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{assistant}");
    assert_eq!(calls[0]["id"], "call_e2e_1");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "bash");
    let arguments: serde_json::Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        arguments,
        json!({"command": "echo openai-ran > proof.txt && cat proof.txt"})
    );
    let answer = &messages[asked + 1];
    assert_eq!(answer["role"], "tool", "{messages:?}");
    assert_eq!(answer["tool_call_id"], "call_e2e_1");
    assert_eq!(answer["content"].as_str().unwrap().trim_end(), "openai-ran");
    // Exactly one answer for the one call.
    let answers = messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .count();
    assert_eq!(answers, 1, "{messages:?}");
}

#[tokio::test]
async fn a_refusal_is_one_clear_line_and_the_repl_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(with_spare_replies(vec![FakeResponse::sse_body(
        anthropic_stream(&[], "refusal"),
    )]))
    .await
    .unwrap();

    let output = support::run_binary(
        dir.path(),
        &[],
        &api_vars(&server),
        "first-prompt\nsecond-prompt\n",
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("refusal"))
        .collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(notes[0].contains("declined"), "{stderr}");
    assert!(!stderr.contains("error:"), "{stderr}");
    // The empty refusal left nothing the API would refuse: the next prompt
    // went out on a valid history with no empty assistant message.
    let requests = turn_requests(&server);
    assert_eq!(requests.len(), 2, "{stderr}");
    let history = sent_history(&requests[1]);
    validate(&history).unwrap();
    assert!(
        history.iter().all(|message| message.role == Role::User),
        "{history:?}"
    );
    let sent = all_text(&history);
    assert!(
        sent.contains("first-prompt") && sent.contains("second-prompt"),
        "{sent}"
    );
}

/// A reply as the Messages API really streams it (recorded, ids shortened):
/// pings, an event type this harness does not know, `service_tier` in the
/// usage, `caller` on the tool call, server tool blocks, input split in
/// pieces — and it ends after `message_delta`, with no `message_stop` and
/// no blank line after the last event.
const RECORDED: &str = r#"event: message_start
data: {"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","id":"msg_01Rec","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":2,"service_tier":"standard"}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" check."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_01Web","name":"web_search","input":{},"caller":{"type":"direct"}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"rust\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01Web","content":[{"type":"web_search_result","title":"Rust","url":"https://www.rust-lang.org/","encrypted_content":"EqgfCioIARgBIiQ3","page_age":null}]}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: future_event_type
data: {"type":"future_event_type","detail":"ignored"}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01Bash","name":"bash","input":{},"caller":{"type":"direct"}}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"echo recorded-ran > recorded.txt && cat rec"}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"orded.txt\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":89,"server_tool_use":{"web_search_requests":1}}}"#;

#[tokio::test]
async fn a_recorded_stream_runs_its_tool_and_the_next_request_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(with_spare_replies(vec![
        FakeResponse::sse_body(RECORDED),
        text_reply("all checked"),
    ]))
    .await
    .unwrap();

    let output = support::run_binary(dir.path(), &["-p", "check"], &api_vars(&server), "").await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Let me check.") && stdout.contains("all checked"),
        "{stdout}"
    );
    // The tool really ran.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("recorded.txt")).unwrap(),
        "recorded-ran\n"
    );
    let requests = turn_requests(&server);
    assert_eq!(requests.len(), 2, "{stderr}");
    let history = sent_history(&requests[1]);
    validate(&history).unwrap();
    // The call went back as the model made it, server blocks and all, and
    // its result answers it in the next message.
    let asked = history
        .iter()
        .position(|message| message.tool_uses().any(|call| call.id == "toolu_01Bash"))
        .expect("the tool_use went back to the model");
    assert_eq!(history[asked].role, Role::Assistant);
    let call = history[asked].tool_uses().next().unwrap();
    assert_eq!(call.name, "bash");
    assert_eq!(
        call.input,
        json!({"command": "echo recorded-ran > recorded.txt && cat recorded.txt"})
    );
    let sent = &requests[1].json()["messages"][asked]["content"];
    assert_eq!(sent[1]["type"], "server_tool_use", "{sent}");
    assert_eq!(sent[2]["type"], "web_search_tool_result", "{sent}");
    assert_eq!(sent[2]["tool_use_id"], "srvtoolu_01Web", "{sent}");
    let ContentBlock::ToolResult(result) = &history[asked + 1].content[0] else {
        panic!("the result leads the next message: {history:?}");
    };
    assert_eq!(result.tool_use_id, "toolu_01Bash");
    assert!(!result.is_error);
    assert_eq!(result.text().trim_end(), "recorded-ran");
}

#[tokio::test]
async fn dotenv_is_read_from_the_working_directory_only() {
    // A server that fails whatever it is asked: reaching it would show.
    let failing = FakeServer::start(Vec::new()).await.unwrap();
    let env_file = format!(
        "ANTHROPIC_API_KEY={KEY}\nANTHROPIC_BASE_URL={}\n",
        failing.url()
    );
    let parent = tempfile::tempdir().unwrap();
    std::fs::write(parent.path().join(".env"), &env_file).unwrap();
    let below = parent.path().join("below");
    std::fs::create_dir(&below).unwrap();

    // The REPL with no input: the model is chosen, then the program ends
    // without a turn (a later lesson's demo would take its time).
    let output = support::run_binary(&below, &[], &[], "").await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("[demo model]"), "{stderr}");
    assert!(failing.received().is_empty(), "{stderr}");

    // The same file in the working directory itself is read.
    let server = FakeServer::start(with_spare_replies(vec![text_reply("configured by .env")]))
        .await
        .unwrap();
    let env_file = format!(
        "ANTHROPIC_API_KEY={KEY}\nANTHROPIC_BASE_URL={}\n",
        server.url()
    );
    let dir = parent.path().join("here");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(".env"), env_file).unwrap();

    let output = support::run_binary(&dir, &["-p", "hello"], &[], "").await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("[demo model]"), "{stderr}");
    assert!(stdout.contains("configured by .env"), "{stdout}");
    let requests = turn_requests(&server);
    assert_eq!(requests.len(), 1, "{stderr}");
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert!(failing.received().is_empty());
}
