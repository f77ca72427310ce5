//! Black-box tests of the loop: the conversation invariants hold whatever
//! the model does and whatever fails.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, Event, Limits, Observer, Silent, TurnError};
use shared::error::ApiError;
use shared::history::validate;
use shared::hooks::{Hooks, ToolOutput};
use shared::model::scripted::{Reply, ScriptedError, ScriptedModel};
use shared::protocol::{ContentBlock, Message, Role, StopReason, ToolSpec, ToolUse};
use shared::tools::input::parse_input;

/// Hooks with two tools: `echo {text}` and `hang` (never finishes).
#[derive(Default)]
struct TestHooks {
    ran: Vec<String>,
    stop_prompts: Vec<String>,
}

#[derive(Deserialize)]
struct EchoInput {
    text: String,
}

impl Hooks for TestHooks {
    fn tools(&mut self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                "echo",
                "Echo text.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            ),
            ToolSpec::new("hang", "Never returns.", json!({"type": "object"})),
        ]
    }

    async fn run_tool(&mut self, call: &ToolUse) -> ToolOutput {
        match call.name.as_str() {
            "echo" => match parse_input::<EchoInput>("echo", &call.input) {
                Ok(input) => {
                    self.ran.push(input.text.clone());
                    ToolOutput::ok(input.text)
                }
                Err(error) => error,
            },
            "hang" => std::future::pending().await,
            other => ToolOutput::error(format!("Unknown tool: {other}")),
        }
    }

    async fn on_stop(&mut self, _history: &[Message]) -> Option<String> {
        self.stop_prompts.pop()
    }
}

fn agent(replies: Vec<Reply>) -> (Agent<TestHooks>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    (
        Agent::new(model.clone(), "test-model", TestHooks::default()),
        model,
    )
}

fn results(message: &Message) -> Vec<(String, String, bool)> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => {
                Some((result.tool_use_id.clone(), result.text(), result.is_error))
            }
            _ => None,
        })
        .collect()
}

/// Every request the model received must itself be a valid history.
fn assert_requests_valid(model: &ScriptedModel) {
    for (n, request) in model.requests().iter().enumerate() {
        let messages: Vec<Message> = serde_json::from_value(request["messages"].clone()).unwrap();
        validate(&messages).unwrap_or_else(|error| panic!("request {n} invalid: {error}"));
    }
}

#[tokio::test]
async fn several_calls_get_one_result_each_in_order() {
    let (mut agent, model) = agent(vec![
        Reply::tool("echo", json!({"text": "a"}))
            .and_tool("echo", json!({"text": "b"}))
            .and_tool("echo", json!({"text": "c"})),
        Reply::text("all done"),
    ]);
    let mut history = Vec::new();
    let outcome = agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();

    assert_eq!(outcome.final_text, "all done");
    assert_eq!(outcome.rounds, 2);
    assert_eq!(agent.hooks().ran, ["a", "b", "c"]);
    validate(&history).unwrap();
    let ids: Vec<String> = history[1].tool_uses().map(|call| call.id.clone()).collect();
    let answered: Vec<String> = results(&history[2]).into_iter().map(|r| r.0).collect();
    assert_eq!(ids, answered);
    assert_eq!(history[3], Message::assistant_text("all done"));
    // The second request carried the results back to the model.
    assert_eq!(
        model.requests()[1]["messages"][2]["content"][1]["content"],
        "b"
    );
    assert_requests_valid(&model);
}

#[tokio::test]
async fn unknown_tool_and_malformed_input_are_error_results() {
    let (mut agent, model) = agent(vec![
        Reply::tool("teleport", json!({}))
            .and_tool("echo", json!({"txt": "typo"}))
            .and_tool("echo", json!({"text": 42})),
        Reply::text("sorry"),
    ]);
    let mut history = Vec::new();
    agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();

    let results = results(&history[2]);
    assert_eq!(results.len(), 3);
    assert!(
        results.iter().all(|r| r.2),
        "all three are errors: {results:?}"
    );
    assert!(results[0].1.contains("Unknown tool: teleport"));
    assert!(
        results[1].1.contains("missing field `text`"),
        "{}",
        results[1].1
    );
    assert!(results[2].1.contains("invalid type"), "{}", results[2].1);
    assert!(agent.hooks().ran.is_empty());
    assert_requests_valid(&model);
}

#[tokio::test]
async fn max_tokens_mid_tool_call_leaves_no_call_unanswered() {
    let (mut agent, model) = agent(vec![
        Reply::tool("echo", json!({"text": "complete"}))
            .and_tool("echo", json!({}))
            .with_stop_reason(StopReason::MaxTokens),
        Reply::text("retrying later"),
    ]);
    let mut history = Vec::new();
    agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();

    // The complete call ran; the one cut off was answered but not run.
    assert_eq!(agent.hooks().ran, ["complete"]);
    let results = results(&history[2]);
    assert!(!results[0].2);
    assert!(results[1].2 && results[1].1.contains("cut off by max_tokens"));
    validate(&history).unwrap();
    assert_requests_valid(&model);
}

#[tokio::test]
async fn api_error_mid_conversation_leaves_a_usable_history() {
    let (mut agent, model) = agent(vec![
        Reply::tool("echo", json!({"text": "one"})),
        Reply::error(ScriptedError::Overloaded),
        Reply::text("recovered"),
    ]);
    let mut history = Vec::new();
    let error = agent
        .run_turn(
            &mut history,
            "first",
            &mut Silent,
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, TurnError::Api(ApiError::Overloaded { .. })));
    validate(&history).unwrap();

    // The next prompt joins the trailing user message; nothing is lost.
    let outcome = agent
        .run_turn(
            &mut history,
            "second",
            &mut Silent,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "recovered");
    validate(&history).unwrap();
    let last_user = &history[history.len() - 2];
    assert_eq!(last_user.role, Role::User);
    assert_eq!(results(last_user).len(), 1);
    assert_eq!(last_user.text(), "second");
    assert_requests_valid(&model);
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_running_tool_answers_every_call() {
    let (mut agent, _model) = agent(vec![
        Reply::tool("hang", json!({})).and_tool("echo", json!({"text": "never"})),
    ]);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        trigger.cancel();
    });
    let mut history = Vec::new();
    let error = agent
        .run_turn(&mut history, "go", &mut Silent, &cancel)
        .await
        .unwrap_err();

    assert_eq!(error, TurnError::Cancelled);
    validate(&history).unwrap();
    let results = results(&history[2]);
    assert!(results[0].1.contains("Interrupted"));
    assert!(results[1].1.contains("Not run"));
    assert!(agent.hooks().ran.is_empty());
}

#[tokio::test]
async fn stop_hook_continues_under_a_cap() {
    let (mut agent, model) = agent(vec![
        Reply::text("first stop"),
        Reply::text("second stop"),
        Reply::text("third stop"),
    ]);
    agent.set_limits(Limits {
        max_stop_continuations: 2,
        ..Limits::default()
    });
    agent.hooks_mut().stop_prompts = vec!["again".into(), "again".into(), "again".into()];
    let mut history = Vec::new();
    let outcome = agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.rounds, 3);
    assert_eq!(outcome.final_text, "third stop");
    assert_eq!(model.remaining(), 0);
    validate(&history).unwrap();
}

#[tokio::test]
async fn round_limit_stops_a_runaway_model() {
    let replies = (0..5)
        .map(|_| Reply::tool("echo", json!({"text": "x"})))
        .collect();
    let (mut agent, _model) = agent(replies);
    agent.set_limits(Limits {
        max_rounds: Some(3),
        ..Limits::default()
    });
    let mut history = Vec::new();
    let error = agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error, TurnError::RoundLimit(3));
    validate(&history).unwrap();
}

#[tokio::test]
async fn empty_text_blocks_are_not_sent_back() {
    let (mut agent, model) = agent(vec![
        Reply::blocks(
            vec![
                ContentBlock::text("  "),
                ContentBlock::ToolUse(ToolUse {
                    id: "t1".into(),
                    name: "echo".into(),
                    input: json!({"text": "hi"}),
                }),
            ],
            StopReason::ToolUse,
        ),
        Reply::text("ok"),
    ]);
    let mut history = Vec::new();
    agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();
    let sent: Value = model.requests()[1]["messages"][1].clone();
    assert_eq!(sent["content"].as_array().unwrap().len(), 1);
    assert_eq!(sent["content"][0]["type"], "tool_use");
}

/// Hooks whose only tool emits a notice, then waits until the test has
/// seen it: if the loop relayed notices only after a hook returned, the
/// tool would never finish.
struct NoticeHooks {
    notices: shared::notice::Notices,
    seen: Arc<tokio::sync::Notify>,
}

impl Hooks for NoticeHooks {
    fn tools(&mut self) -> Vec<ToolSpec> {
        vec![ToolSpec::new(
            "slow",
            "Reports, then waits.",
            json!({"type": "object"}),
        )]
    }

    async fn run_tool(&mut self, _call: &ToolUse) -> ToolOutput {
        self.notices.emit("slow", "started");
        self.seen.notified().await;
        ToolOutput::ok("finished")
    }

    async fn before_model_call(&mut self, _history: &mut Vec<Message>) {
        self.notices.emit("before", "about to call the model");
    }
}

/// Wakes the tool once its notice has reached the observer, and keeps the
/// order of everything it was shown.
struct WakingObserver {
    seen: Arc<tokio::sync::Notify>,
    log: Vec<String>,
}

impl Observer for WakingObserver {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Notice(notice) => {
                if notice.tag == "slow" {
                    self.seen.notify_one();
                }
                self.log.push(notice.to_string());
            }
            Event::ToolCall(call) => self.log.push(format!("call {}", call.name)),
            Event::ToolResult(_, result) => self.log.push(format!("result {}", result.text())),
            Event::Delta(_) | Event::ReplyDone | Event::Progress(_) => {}
        }
    }
}

#[tokio::test]
async fn a_notice_reaches_the_observer_while_its_hook_is_still_running() {
    let notices = shared::notice::Notices::new();
    let seen = Arc::new(tokio::sync::Notify::new());
    let model = Arc::new(ScriptedModel::new(vec![
        Reply::tool("slow", json!({})),
        Reply::text("done"),
    ]));
    let hooks = NoticeHooks {
        notices: notices.clone(),
        seen: seen.clone(),
    };
    let mut agent = Agent::new(model, "test-model", hooks).with_notices(notices);
    let mut observer = WakingObserver {
        seen,
        log: Vec::new(),
    };
    let mut history = Vec::new();
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        agent.run_turn(&mut history, "go", &mut observer, &CancellationToken::new()),
    )
    .await
    .expect("the notice was relayed while the tool waited for it")
    .unwrap();
    assert_eq!(outcome.final_text, "done");
    assert_eq!(
        observer.log,
        [
            "[before] about to call the model",
            "call slow",
            "[slow] started",
            "result finished",
            "[before] about to call the model",
        ]
    );
}

#[tokio::test]
async fn the_outcome_adds_up_the_usage_of_the_turn_s_calls() {
    use shared::model::anthropic::{AnthropicClient, AnthropicConfig};
    use shared::model::config::Secret;
    use shared::protocol::Usage;
    use shared::testing::{FakeResponse, FakeServer, anthropic_stream_with_usage};

    let reply = |block: Value, stop: &str, usage: Value| {
        FakeResponse::sse_body(anthropic_stream_with_usage(&[block], stop, &usage))
    };
    let server = FakeServer::start(vec![
        reply(
            json!({"type": "tool_use", "id": "t1", "name": "echo", "input": {"text": "a"}}),
            "tool_use",
            json!({"input_tokens": 30, "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 0, "output_tokens": 1}),
        ),
        reply(
            json!({"type": "text", "text": "done"}),
            "end_turn",
            json!({"input_tokens": 5, "cache_creation_input_tokens": 40, "cache_read_input_tokens": 2000, "output_tokens": 1}),
        ),
    ])
    .await
    .unwrap();
    let client = AnthropicClient::new(AnthropicConfig {
        base_url: server.url().to_string(),
        api_key: Some(Secret::new("test")),
        ..AnthropicConfig::default()
    })
    .unwrap();
    let mut agent = Agent::new(Arc::new(client), "test-model", TestHooks::default());
    let mut history = Vec::new();
    let outcome = agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.rounds, 2);
    // Each stream ends with 5 output tokens (`anthropic_stream`'s
    // message_delta); the input figures are the two calls' added up.
    assert_eq!(
        outcome.usage,
        Usage {
            input_tokens: 35,
            output_tokens: 10,
            cache_creation_input_tokens: Some(2_040),
            cache_read_input_tokens: Some(2_000),
        }
    );
    // A model that reports no cache figures leaves them unknown, not zero.
    let (mut agent, _) = self::agent(vec![Reply::text("hi")]);
    let outcome = agent
        .run_turn(
            &mut Vec::new(),
            "go",
            &mut Silent,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.usage.cache_read_input_tokens, None);
}

/// Where the test's subscriber writes, to read the trace back.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn a_debug_trace_shows_the_turn_its_model_calls_and_its_tool_calls_as_spans() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .finish();
    // The test runs on one thread, so the default holds for the whole turn.
    let _guard = tracing::subscriber::set_default(subscriber);
    // tracing caches whether a callsite is wanted once, for the process.
    // While one dispatcher is alive it asks the thread that reaches the
    // callsite first, and a sibling test's thread has no subscriber, so it
    // would cache "never" for the spans this test reads. With a second live
    // dispatcher tracing asks them all, and ours says yes.
    let _anchor = tracing::Dispatch::new(tracing_subscriber::registry());
    tracing::callsite::rebuild_interest_cache();
    let (mut agent, _) = agent(vec![
        Reply::tool("echo", json!({"text": "a"})),
        Reply::text("done"),
    ]);
    let mut history = Vec::new();
    agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();

    let trace = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    let position = |needle: &str| {
        lines
            .iter()
            .position(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in the trace:\n{trace}"))
    };
    let first_reply = position("turn:model_call{round=1}: ");
    let tool = position("turn:tool_call{tool=echo id=");
    let second_reply = position("turn:model_call{round=2}: ");
    assert!(first_reply < tool && tool < second_reply, "{trace}");
    assert!(lines[tool].contains("is_error=false"), "{trace}");
    assert!(lines[second_reply].contains("EndTurn"), "{trace}");
}
