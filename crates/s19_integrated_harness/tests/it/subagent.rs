//! The `task` tool (lesson 6): a subagent that works on a fresh history
//! with the base tools, behind the parent's hooks, and hands back only its
//! final text. Driven through the real loop by a scripted model, and once
//! through the binary against a local fake of the Anthropic API.
//!
//! The parent and its subagent share one model, and a scripted model plays
//! its replies to whoever asks next. So each script interleaves: the
//! parent's reply with the `task` call, then the subagent's replies, then
//! the parent's next reply.

use std::sync::{Arc, Mutex};

use lesson::permission::ScriptedApprover;
use lesson::subagent::{SUBAGENT_MAX_ROUNDS, SUBAGENT_TAG, TASK_TOOL};
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::{Agent, TurnError};
use shared::error::ApiError;
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{Message, Request, Response, Role};
use shared::testing::{FakeResponse, FakeServer, Recorder, anthropic_stream};

use crate::support;

/// The five base tools, the subagent's whole tool set in every lesson.
const BASE_TOOLS: [&str; 5] = ["bash", "read_file", "write_file", "edit_file", "glob"];

/// One turn of "go": how it ended is checked by the caller; the history
/// is checked against the pairing rules here.
async fn go(
    agent: &mut Agent<lesson::LessonHooks>,
    history: &mut Vec<Message>,
) -> (Result<shared::agent::TurnOutcome, TurnError>, Recorder) {
    let (outcome, recorder) = support::turn(agent, history, "go").await;
    validate(history).unwrap();
    (outcome, recorder)
}

fn task(description: &str) -> Reply {
    Reply::tool(TASK_TOOL, json!({ "description": description }))
}

/// The (text, is_error) of each tool result in `message`.
fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .tool_results()
        .map(|result| (result.text(), result.is_error))
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect()
}

fn message_count(request: &Value) -> usize {
    request["messages"].as_array().unwrap().len()
}

#[tokio::test]
async fn task_is_an_entry_of_the_dispatch_map() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = support::agent(
        dir.path(),
        vec![
            task("Say hello."),
            Reply::text("hello"),
            Reply::text("ok"),
            task("Say hello again."),
            Reply::text("ok"),
        ],
    );
    // The base tools of this lesson are the subagent's tools.
    let base = lesson::dispatch::base_tools();
    let base: Vec<&str> = base.names();
    assert_eq!(base.len(), BASE_TOOLS.len());
    assert!(
        BASE_TOOLS.iter().all(|name| base.contains(name)),
        "{base:?}"
    );

    // Offered in the map's registration order, and dispatched like any tool.
    let mut history = Vec::new();
    let (outcome, recorder) = go(&mut agent, &mut history).await;
    outcome.unwrap();
    assert_eq!(tool_names(&model.requests()[0]), support::TOOLS);
    assert!(support::TOOLS.contains(&TASK_TOOL));
    assert_eq!(
        results(&history[2]),
        [("[subagent finished in 1 round]\nhello".to_string(), false)]
    );
    assert_eq!(recorder.results.len(), 1);

    // Taken out of the map, it is neither offered nor run.
    assert!(agent.hooks_mut().tool_registry().unregister(TASK_TOOL));
    let (outcome, recorder) = go(&mut agent, &mut history).await;
    outcome.unwrap();
    assert_eq!(model.remaining(), 0, "no subagent made a request");
    let requests = model.requests();
    let offered = tool_names(&requests[3]);
    assert!(!offered.iter().any(|name| name == TASK_TOOL), "{offered:?}");
    let (text, is_error) = &results(&history[6])[0];
    assert!(
        *is_error && text.starts_with("Unknown tool: task"),
        "{text}"
    );
    assert!(recorder.notices_tagged(SUBAGENT_TAG).is_empty());
}

#[tokio::test]
async fn the_parent_keeps_only_the_task_call_and_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let description = "Write notes.txt, read it back, and report.";
    let (mut agent, model) = support::agent(
        dir.path(),
        vec![
            // Parent: delegate.
            task(description),
            // Subagent: three rounds of its own.
            Reply {
                text: Some("Writing the intermediate-detail-41 first.".into()),
                ..Reply::tool(
                    "write_file",
                    json!({"path": "notes.txt", "content": "intermediate-detail-42"}),
                )
            },
            Reply::tool("read_file", json!({"path": "notes.txt"})),
            Reply::text("Wrote notes.txt and checked it."),
            // Parent: finish.
            Reply::text("done"),
        ],
    );

    let mut history = Vec::new();
    let (outcome, recorder) = go(&mut agent, &mut history).await;

    assert_eq!(outcome.unwrap().final_text, "done");
    assert_eq!(model.remaining(), 0);
    // The parent's history: the prompt, the task call, its one result, the end.
    assert_eq!(history.len(), 4, "{history:#?}");
    let calls: Vec<&str> = history[1]
        .tool_uses()
        .map(|call| call.name.as_str())
        .collect();
    assert_eq!(calls, [TASK_TOOL]);
    let call_id = history[1].tool_uses().next().unwrap().id.clone();
    assert_eq!(history[2].tool_result_ids().collect::<Vec<_>>(), [call_id]);
    assert_eq!(
        results(&history[2]),
        [(
            "[subagent finished in 3 rounds]\nWrote notes.txt and checked it.".to_string(),
            false
        )]
    );
    assert_eq!(history[3].role, Role::Assistant);
    // None of the subagent's steps leaked into it.
    let parent = serde_json::to_string(&history).unwrap();
    for leaked in [
        "intermediate-detail-41",
        "intermediate-detail-42",
        "write_file",
    ] {
        assert!(!parent.contains(leaked), "{leaked}: {parent}");
    }
    // The files it wrote stay.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "intermediate-detail-42"
    );

    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    // The subagent started from one user message, the description, with
    // its own system prompt and the parent's model id.
    let first = &requests[1];
    assert_eq!(message_count(first), 1);
    assert_eq!(first["messages"][0]["role"], "user");
    assert_eq!(first["messages"][0]["content"][0]["text"], description);
    assert_eq!(first["model"], support::MODEL_ID);
    let system = first["system"].to_string();
    assert!(system.contains("You are a subagent"), "{system}");
    assert!(system.contains("do not delegate"), "{system}");
    // Its own history grew round by round: 1, 3, 5 messages.
    let lengths: Vec<usize> = requests[1..4].iter().map(message_count).collect();
    assert_eq!(lengths, [1, 3, 5]);
    // The parent's next request holds three messages and no trace of them.
    let last = &requests[4];
    assert_eq!(message_count(last), 3);
    assert!(!last.to_string().contains("intermediate-detail-4"));

    // The user saw the subagent work, as `sub` notices: not as the
    // parent's own calls, and not its streamed text.
    assert_eq!(
        recorder.notices_tagged(SUBAGENT_TAG),
        [
            format!("spawned: {description}"),
            "> write_file: notes.txt".to_string(),
            "> read_file: notes.txt".to_string(),
            "done in 3 rounds; its 6 messages stay out of the parent's history".to_string(),
        ]
    );
    let shown: Vec<&str> = recorder.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(shown, [TASK_TOOL]);
    assert!(!recorder.text.contains("intermediate-detail-41"));
    // Its calls passed the parent's hooks; the Stop hook counts only the
    // parent's one call.
    let hooks = recorder.notices_tagged("hook");
    for expected in [
        "PreToolUse: write_file(notes.txt)",
        "PostToolUse: read_file returned output (22 chars)",
        "Stop: session used 1 tool call",
    ] {
        assert!(hooks.iter().any(|line| line == expected), "{hooks:#?}");
    }
}

#[tokio::test]
async fn the_subagent_gets_the_base_tools_but_not_task() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = support::agent(
        dir.path(),
        vec![
            task("Try to delegate this."),
            // The subagent calls `task` anyway, as a confused model might.
            task("nested"),
            Reply::text("I could not delegate, so here is my answer."),
            Reply::text("ok"),
        ],
    );

    let mut history = Vec::new();
    let (outcome, recorder) = go(&mut agent, &mut history).await;
    outcome.unwrap();

    let requests = model.requests();
    assert_eq!(tool_names(&requests[0]), support::TOOLS);
    assert_eq!(tool_names(&requests[1]), BASE_TOOLS);
    assert_eq!(tool_names(&requests[2]), BASE_TOOLS);
    // The nested call was an unknown tool, not a second subagent: no extra
    // request took a reply.
    assert_eq!(requests.len(), 4);
    assert_eq!(model.remaining(), 0);
    let refused = &requests[2]["messages"][2]["content"][0];
    assert_eq!(refused["is_error"], true);
    assert!(
        refused["content"]
            .as_str()
            .unwrap()
            .starts_with("Unknown tool: task"),
        "{refused}"
    );
    assert!(!results(&history[2])[0].1);
    // One subagent was spawned, and its refused call was shown as an error.
    let notices = recorder.notices_tagged(SUBAGENT_TAG);
    assert_eq!(
        notices
            .iter()
            .filter(|line| line.starts_with("spawned: "))
            .count(),
        1,
        "{notices:#?}"
    );
    assert!(
        notices
            .iter()
            .any(|line| line.starts_with("  error: Unknown tool: task")),
        "{notices:#?}"
    );
}

#[tokio::test]
async fn a_subagent_that_hits_the_round_limit_is_an_error_for_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies = vec![task("Count forever.")];
    for round in 1..=SUBAGENT_MAX_ROUNDS {
        replies.push(Reply {
            text: Some(format!("Still counting: {round}.")),
            ..Reply::tool("bash", json!({"command": format!("echo {round}")}))
        });
    }
    replies.push(Reply::text("The subagent gave up; I'll stop here."));
    let (mut agent, model) = support::agent(dir.path(), replies);

    let mut history = Vec::new();
    let (outcome, recorder) = go(&mut agent, &mut history).await;

    assert_eq!(SUBAGENT_MAX_ROUNDS, 30);
    assert_eq!(
        outcome.unwrap().final_text,
        "The subagent gave up; I'll stop here."
    );
    // The parent's call, the subagent's 30, the parent's last.
    assert_eq!(model.requests().len(), 1 + 30 + 1);
    assert_eq!(model.remaining(), 0);
    assert_eq!(history.len(), 4);
    let (text, is_error) = &results(&history[2])[0];
    assert!(is_error);
    assert!(
        text.starts_with(
            "subagent stopped after 30 rounds without finishing: \
             its last message was: \"Still counting: 30.\""
        ),
        "{text}"
    );
    assert!(text.contains("stay changed"), "{text}");
    // The user saw each of its calls, then why it stopped.
    let notices = recorder.notices_tagged(SUBAGENT_TAG);
    let calls = notices
        .iter()
        .filter(|line| line.starts_with("> bash: echo "));
    assert_eq!(calls.count(), SUBAGENT_MAX_ROUNDS, "{notices:#?}");
    assert_eq!(
        notices.last().unwrap(),
        "done: subagent stopped after 30 rounds without finishing"
    );
}

/// The scripted model, except that any request of the subagent doing
/// `description` after its first fails with an error that nothing retries
/// or repairs (the API refusing the request), without using a reply.
struct FailingSubagent {
    inner: Arc<ScriptedModel>,
    description: &'static str,
}

impl Model for FailingSubagent {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        let subagent = request
            .messages
            .first()
            .is_some_and(|first| first.text() == self.description);
        if subagent && request.messages.len() > 1 {
            return Box::pin(async {
                Err(ApiError::InvalidRequest {
                    message: "refused by the test".into(),
                })
            });
        }
        self.inner.send(request, on_delta)
    }
}

#[tokio::test]
async fn an_api_error_inside_the_subagent_is_an_error_result_and_the_parent_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let description = "Write partial.txt, then more.";
    let scripted = Arc::new(ScriptedModel::new(vec![
        task(description),
        // The subagent's first round; its second request fails.
        Reply::tool("write_file", json!({"path": "partial.txt", "content": "p"})),
        // The parent, told of the failure, checks the file itself.
        Reply::tool("read_file", json!({"path": "partial.txt"})),
        Reply::text("I finished it myself."),
    ]));
    let model = Arc::new(FailingSubagent {
        inner: scripted.clone(),
        description,
    });
    let mut agent = support::agent_with(dir.path(), model, support::options());

    let mut history = Vec::new();
    let (outcome, recorder) = go(&mut agent, &mut history).await;

    assert_eq!(outcome.unwrap().final_text, "I finished it myself.");
    assert_eq!(scripted.remaining(), 0);
    let (text, is_error) = &results(&history[2])[0];
    assert!(is_error);
    assert!(
        text.starts_with("subagent failed: invalid request: refused by the test"),
        "{text}"
    );
    assert!(text.contains("it wrote no text before stopping"), "{text}");
    // Its write happened before the failure, and stays.
    assert_eq!(results(&history[4]), [("p".to_string(), false)]);
    assert_eq!(
        recorder.notices_tagged(SUBAGENT_TAG).last().unwrap(),
        "done: subagent failed: invalid request: refused by the test"
    );
}

#[tokio::test]
async fn the_permission_hook_applies_inside_the_subagent() {
    let dir = tempfile::tempdir().unwrap();
    // No to every question the gate asks.
    let approver = ScriptedApprover::new([]);
    let model = Arc::new(ScriptedModel::new(vec![
        task("Clean up."),
        // Harmless if they ran: each only writes a marker file.
        Reply::tool("bash", json!({"command": "echo sudo rm -rf / > ran.txt"}))
            .and_tool("bash", json!({"command": "echo rm x > asked.txt"}))
            .and_tool("bash", json!({"command": "echo fine > allowed.txt"})),
        Reply::text("Two commands were refused."),
        Reply::text("ok"),
    ]));
    // Later lessons' options have more fields; the rest are the tests'.
    #[allow(clippy::needless_update)]
    let options = lesson::Options {
        approver: Box::new(approver.clone()),
        ..support::options()
    };
    let mut agent = support::agent_with(dir.path(), model.clone(), options);

    let mut history = Vec::new();
    let (outcome, _) = go(&mut agent, &mut history).await;
    outcome.unwrap();

    assert!(!dir.path().join("ran.txt").exists());
    assert!(!dir.path().join("asked.txt").exists());
    assert!(dir.path().join("allowed.txt").exists());
    // The deny list refused the first without asking; the second asked the
    // parent's approver, which said no.
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].summary(), "bash(echo rm x > asked.txt)");
    let seen_by_subagent = &model.requests()[2]["messages"][2]["content"];
    assert_eq!(seen_by_subagent[0]["is_error"], true);
    assert!(
        seen_by_subagent[0]["content"]
            .as_str()
            .unwrap()
            .contains("is on the deny list")
    );
    assert_eq!(seen_by_subagent[1]["is_error"], true);
    assert!(
        seen_by_subagent[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Permission denied by the user")
    );
    assert!(seen_by_subagent[2].get("is_error").is_none());
    assert_eq!(
        results(&history[2]),
        [(
            "[subagent finished in 2 rounds]\nTwo commands were refused.".to_string(),
            false
        )]
    );
}

#[tokio::test]
async fn hooks_added_to_the_registry_see_and_can_block_the_subagents_calls() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = support::agent(
        dir.path(),
        vec![
            task("Write two files."),
            Reply::tool("write_file", json!({"path": "a.txt", "content": "a"}))
                .and_tool("write_file", json!({"path": "secret.txt", "content": "s"})),
            Reply::text("One was blocked."),
            Reply::text("ok"),
        ],
    );
    let post = Arc::new(Mutex::new(Vec::new()));
    let seen = post.clone();
    {
        let mut registry = agent.hooks_mut().registry();
        registry.on_pre_tool_use(|call| {
            (call.input["path"] == "secret.txt").then(|| "Blocked by policy.".to_string())
        });
        registry.on_post_tool_use(move |call, _| seen.lock().unwrap().push(call.name.clone()));
    }

    let mut history = Vec::new();
    let (outcome, recorder) = go(&mut agent, &mut history).await;
    outcome.unwrap();

    assert!(dir.path().join("a.txt").exists());
    assert!(!dir.path().join("secret.txt").exists());
    // The subagent's model was told why, as the result of that call.
    let seen_by_subagent = &model.requests()[2]["messages"][2]["content"];
    assert_eq!(seen_by_subagent[1]["is_error"], true);
    assert_eq!(seen_by_subagent[1]["content"], "Blocked by policy.");
    // The subagent's allowed call, then the parent's task call.
    assert_eq!(*post.lock().unwrap(), ["write_file", "task"]);
    assert!(
        recorder
            .notices_tagged(SUBAGENT_TAG)
            .contains(&"  error: Blocked by policy.".to_string())
    );
}

#[tokio::test]
async fn a_task_without_a_description_starts_no_subagent() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = support::agent(
        dir.path(),
        vec![
            Reply::tool(TASK_TOOL, json!({}))
                .and_tool(TASK_TOOL, json!({"description": 42}))
                .and_tool(TASK_TOOL, json!({"description": "  "})),
            Reply::text("ok"),
        ],
    );

    let mut history = Vec::new();
    let (outcome, recorder) = go(&mut agent, &mut history).await;
    outcome.unwrap();

    assert_eq!(model.requests().len(), 2, "no subagent made a request");
    let results = results(&history[2]);
    assert!(results.iter().all(|(_, is_error)| *is_error));
    assert!(
        results[0]
            .0
            .starts_with("Invalid input for task: missing field `description`"),
        "{results:?}"
    );
    assert!(results[1].0.contains("must be a string"), "{results:?}");
    assert!(results[2].0.contains("is empty"), "{results:?}");
    assert!(recorder.notices_tagged(SUBAGENT_TAG).is_empty());
}

#[tokio::test]
async fn cancelling_the_parent_drops_the_subagent_and_keeps_the_history_valid() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, model) = support::agent(
        dir.path(),
        vec![
            task("Wait a long time."),
            Reply::tool("bash", json!({"command": "sleep 30; echo late > late.txt"})),
            Reply::text("never played"),
            Reply::text("never played either"),
        ],
    );
    // Press Ctrl-C, in effect, the moment the subagent's command starts.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    agent.hooks_mut().registry().on_pre_tool_use(move |call| {
        if call.name == "bash" {
            trigger.cancel();
        }
        None
    });

    let mut history = Vec::new();
    let mut recorder = Recorder::default();
    let outcome = agent
        .run_turn(&mut history, "go", &mut recorder, &cancel)
        .await;

    assert_eq!(outcome, Err(TurnError::Cancelled));
    assert_eq!(model.remaining(), 2, "the subagent made no further request");
    validate(&history).unwrap();
    let (text, is_error) = &results(&history[2])[0];
    assert!(is_error);
    assert!(text.starts_with("Interrupted"), "{text}");
    assert!(!dir.path().join("late.txt").exists());
    // It was spawned, and dropped before it could report an end.
    let notices = recorder.notices_tagged(SUBAGENT_TAG);
    assert_eq!(notices[0], "spawned: Wait a long time.");
    assert!(
        !notices.iter().any(|line| line.starts_with("done")),
        "{notices:#?}"
    );
}

fn fake_reply(blocks: &[Value], stop_reason: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(blocks, stop_reason))
}

#[tokio::test]
async fn a_real_client_runs_the_subagent_on_a_fresh_history() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![
        fake_reply(
            &[json!({"type": "tool_use", "id": "toolu_1", "name": "task",
                     "input": {"description": "Say what is here."}})],
            "tool_use",
        ),
        fake_reply(
            &[json!({"type": "text", "text": "sub-summary-42"})],
            "end_turn",
        ),
        fake_reply(&[json!({"type": "text", "text": "finished"})], "end_turn"),
        // Spare: answers a side query a later lesson may ask when the turn
        // ends (a request that offers no tools), so it cannot fail the run.
        fake_reply(&[json!({"type": "text", "text": "[]"})], "end_turn"),
    ])
    .await
    .unwrap();

    let output = support::run_binary(
        dir.path(),
        &["-p", "do it"],
        &[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "sk-test-key"),
        ],
        "",
    )
    .await;

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("finished"), "{stdout}");
    // The turns' requests are the ones that offer tools.
    let received: Vec<Value> = server
        .received()
        .iter()
        .map(|request| request.json())
        .filter(|body| body.get("tools").is_some())
        .collect();
    assert_eq!(received.len(), 3);
    let sub = &received[1];
    assert_eq!(sub["model"], received[0]["model"]);
    assert_eq!(tool_names(sub), BASE_TOOLS);
    assert_eq!(message_count(sub), 1);
    assert_eq!(
        sub["messages"][0]["content"][0]["text"],
        "Say what is here."
    );
    let result = &received[2]["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(
        result["content"],
        "[subagent finished in 1 round]\nsub-summary-42"
    );
    // The user saw it start and end on standard error, as `sub` notices.
    let spawned = stderr.find("[sub] spawned: Say what is here.").unwrap();
    let done = stderr
        .find("[sub] done in 1 round; its 2 messages stay out of the parent's history")
        .unwrap();
    assert!(spawned < done, "{stderr}");
}
