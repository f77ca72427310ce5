//! The todo list and its reminder (lesson 5): `todo_write` checks, stores
//! and shows back the model's whole plan; after three model calls without
//! an update while tasks are open, a reminder joins the next request, after
//! the round's tool results, and the user is told with a `todo_write`
//! notice. Driven through the real loop by a scripted model, and once
//! through the binary against a local fake of the Anthropic API.

use std::path::Path;
use std::sync::Arc;

use lesson::todo::{REMIND_AFTER_ROUNDS, REMINDER, Status, TodoTracker};
use serde_json::{Value, json};
use shared::history::validate;
use shared::model::scripted::{Reply, ScriptedModel};
use shared::protocol::{ContentBlock, Message, Role};
use shared::testing::cache_sim::strip_markers;
use shared::testing::{FakeResponse, FakeServer, Recorder, anthropic_stream};

use crate::support;

/// The notice tag the reminder is announced under.
const TAG: &str = "todo_write";

/// One turn of "go" with a scripted model playing `replies`, every one of
/// them used: the history it left (checked against the pairing rules), the
/// model (to read the requests back) and what the turn showed.
async fn play(dir: &Path, replies: Vec<Reply>) -> (Vec<Message>, Arc<ScriptedModel>, Recorder) {
    let (mut agent, model) = support::agent(dir, replies);
    let mut history = Vec::new();
    let (outcome, recorder) = support::turn(&mut agent, &mut history, "go").await;
    outcome.unwrap();
    assert_eq!(model.remaining(), 0, "every scripted reply was used");
    validate(&history).unwrap();
    (history, model, recorder)
}

/// The (text, is_error) of each tool result in `message`.
fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .tool_results()
        .map(|result| (result.text(), result.is_error))
        .collect()
}

fn todos(items: &[(&str, &str)]) -> Value {
    let items: Vec<Value> = items
        .iter()
        .map(|(content, status)| json!({"content": content, "status": status}))
        .collect();
    json!({ "todos": items })
}

/// A plan with one task in progress and one pending.
fn open_list() -> Reply {
    Reply::tool(
        "todo_write",
        todos(&[("write the code", "in_progress"), ("test it", "pending")]),
    )
}

fn echo(word: &str) -> Reply {
    Reply::tool("bash", json!({"command": format!("echo {word}")}))
}

/// The messages of a recorded request, checked against the pairing rules.
fn messages(request: &Value) -> Vec<Message> {
    let messages: Vec<Message> = serde_json::from_value(request["messages"].clone()).unwrap();
    validate(&messages).unwrap();
    messages
}

/// How many reminders the request carried.
fn reminders(request: &Value) -> usize {
    messages(request)
        .iter()
        .flat_map(|message| &message.content)
        .filter(|block| matches!(block, ContentBlock::Text { text, .. } if text == REMINDER))
        .count()
}

/// The reminders each request the model received carried, in order.
fn reminder_counts(model: &ScriptedModel) -> Vec<usize> {
    model.requests().iter().map(reminders).collect()
}

/// What the user is told each time a reminder is sent.
fn reminder_notice() -> String {
    format!("reminder sent: open tasks, and no update for {REMIND_AFTER_ROUNDS} rounds")
}

#[tokio::test]
async fn todo_write_is_offered_with_the_course_schema() {
    let dir = tempfile::tempdir().unwrap();
    let (_, model, _) = play(dir.path(), vec![Reply::text("hi")]).await;
    let request = &model.requests()[0];
    let names: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, support::TOOLS);
    let tool = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "todo_write")
        .expect("todo_write is offered");
    let list = &tool["input_schema"]["properties"]["todos"];
    assert_eq!(list["type"], "array");
    assert_eq!(list["maxItems"], lesson::todo::MAX_TODOS);
    let item = &list["items"];
    assert_eq!(
        item["properties"]["status"]["enum"],
        json!(["pending", "in_progress", "completed"])
    );
    assert_eq!(item["required"], json!(["content", "status"]));
    assert_eq!(tool["input_schema"]["required"], json!(["todos"]));
    // The system prompt tells the model when to use it.
    let system = request["system"].to_string();
    assert!(system.contains("plan it with todo_write"), "{system}");
}

#[tokio::test]
async fn each_update_replaces_the_list_and_shows_it_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _, recorder) = play(
        dir.path(),
        vec![
            Reply::tool(
                "todo_write",
                todos(&[("a", "pending"), ("b", "pending"), ("c", "pending")]),
            ),
            Reply::tool(
                "todo_write",
                todos(&[("a", "completed"), ("b", "in_progress"), ("c", "pending")]),
            ),
            Reply::text("done"),
        ],
    )
    .await;

    // Each call is answered in the next message, by its own id.
    for (call, answer) in [(&history[1], &history[2]), (&history[3], &history[4])] {
        let ids: Vec<&str> = call.tool_uses().map(|call| call.id.as_str()).collect();
        assert_eq!(ids, answer.tool_result_ids().collect::<Vec<_>>());
    }
    assert_eq!(
        results(&history[2]),
        [(
            "Updated 3 tasks (0 completed, 0 in progress, 3 pending):\n[ ] a\n[ ] b\n[ ] c".into(),
            false
        )]
    );
    assert_eq!(
        results(&history[4]),
        [(
            "Updated 3 tasks (1 completed, 1 in progress, 1 pending):\n[✓] a\n[▸] b\n[ ] c".into(),
            false
        )]
    );
    // The rendered list is what the user saw, too.
    assert_eq!(recorder.results.len(), 2);
    assert!(recorder.results[1].text().ends_with("[✓] a\n[▸] b\n[ ] c"));
    assert!(recorder.notices_tagged(TAG).is_empty());
}

#[tokio::test]
async fn bad_lists_are_errors_naming_the_item_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad_inputs = [
        json!({"todos": [{"content": "a", "status": "done"}]}),
        json!({"todos": [{"content": "a", "status": "pending"}, {"content": "b"}]}),
        json!({"todos": [{"content": 7, "status": "pending"}]}),
        json!({"todos": 42}),
        json!({"todos": ["just a string"]}),
        json!({}),
        json!({"todos": "first the hints, then the docstrings"}),
        todos(&[("a", "in_progress"), ("b", "pending"), ("c", "in_progress")]),
    ];
    let mut reply = Reply::text("checking");
    for input in &bad_inputs {
        reply = reply.and_tool("todo_write", input.clone());
    }
    let (history, _, _) = play(dir.path(), vec![reply, Reply::text("ok")]).await;

    let results = results(&history[2]);
    assert_eq!(results.len(), bad_inputs.len());
    assert!(results.iter().all(|(_, is_error)| *is_error), "{results:?}");
    let expected = [
        r#"todos[0].status: unknown status "done"; use one of pending, in_progress, completed"#,
        "todos[1]: missing field `status`",
        "todos[0].content must be a string, got a number",
        "`todos` must be a list of {content, status} objects, got a number",
        "todos[0] must be an object with `content` and `status`, got a string",
        "missing field `todos`",
        "`todos` is a string that does not hold a JSON list",
        "only one task may be in_progress at a time, but todos[0], todos[2] are",
    ];
    for ((text, _), expected) in results.iter().zip(expected) {
        assert!(
            text.starts_with("Invalid input for todo_write; the list was not changed:"),
            "{text}"
        );
        assert!(
            text.contains(expected),
            "{text}\n  should contain: {expected}"
        );
    }
}

#[test]
fn every_problem_of_a_list_is_reported_at_once() {
    let tracker = TodoTracker::new();
    let output = tracker.write(&json!({"todos": [
        {"content": "", "status": "pending"},
        {"status": "later"},
    ]}));
    assert!(output.is_error);
    for expected in [
        "todos[0].content is empty",
        "todos[1]: missing field `content`",
        r#"todos[1].status: unknown status "later""#,
    ] {
        assert!(output.text.contains(expected), "{}", output.text);
    }
}

#[test]
fn a_rejected_list_leaves_the_previous_one_in_place() {
    let tracker = TodoTracker::new();
    assert!(
        !tracker
            .write(&todos(&[("keep me", "in_progress")]))
            .is_error
    );
    let too_many: Vec<String> = (0..=lesson::todo::MAX_TODOS)
        .map(|i| format!("t{i}"))
        .collect();
    let too_many: Vec<(&str, &str)> = too_many.iter().map(|c| (c.as_str(), "pending")).collect();
    let output = tracker.write(&todos(&too_many));
    assert!(output.is_error && output.text.contains("21 tasks is too many"));
    assert!(
        tracker
            .write(&json!({"todos": [{"content": "x"}]}))
            .is_error
    );

    let kept = tracker.todos();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].content, "keep me");
    assert_eq!(kept[0].status, Status::InProgress);
}

#[test]
fn a_list_sent_as_a_json_string_is_accepted() {
    let tracker = TodoTracker::new();
    // Extra fields that other agents' todo tools use are ignored.
    let encoded = r#"[{"content": "add hints", "status": "in_progress", "activeForm": "Adding hints"},
                      {"content": "add docs", "status": "pending", "id": "2"}]"#;
    let output = tracker.write(&json!({ "todos": encoded }));
    assert!(!output.is_error, "{}", output.text);
    assert!(
        output.text.ends_with("[▸] add hints\n[ ] add docs"),
        "{}",
        output.text
    );
    assert_eq!(tracker.todos().len(), 2);

    // A string that holds something other than a list is still refused.
    let output = tracker.write(&json!({"todos": r#"{"content": "a", "status": "pending"}"#}));
    assert!(output.is_error && output.text.contains("got a string holding one object"));
    assert_eq!(tracker.todos().len(), 2);
}

#[test]
fn an_empty_list_clears_the_plan() {
    let tracker = TodoTracker::new();
    tracker.write(&todos(&[("a", "pending")]));
    let output = tracker.write(&json!({"todos": []}));
    assert_eq!(output.text, "Updated 0 tasks: the list is empty.");
    assert!(tracker.todos().is_empty());
}

#[tokio::test]
async fn reminder_follows_three_rounds_without_todo_write_after_the_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    let (history, model, recorder) = play(
        dir.path(),
        vec![
            open_list(),
            echo("one"),
            echo("two"),
            echo("three").and_tool("bash", json!({"command": "echo four"})),
            Reply::text("done"),
        ],
    )
    .await;

    // Rounds 2, 3 and 4 made no todo_write, so the fifth request carries it.
    assert_eq!(REMIND_AFTER_ROUNDS, 3);
    assert_eq!(reminder_counts(&model), [0, 0, 0, 0, 1]);
    let requests = model.requests();
    let sent = messages(&requests[4]);
    assert_eq!(sent.len(), 9);
    let last = sent.last().unwrap();
    assert_eq!(last.role, Role::User);
    // The round's two results come first, answering the two calls of the
    // assistant message before them, then the reminder, in one message.
    let calls: Vec<&str> = sent[7].tool_uses().map(|call| call.id.as_str()).collect();
    assert_eq!(last.tool_result_ids().collect::<Vec<_>>(), calls);
    assert!(
        matches!(
            last.content.as_slice(),
            [
                ContentBlock::ToolResult(_),
                ContentBlock::ToolResult(_),
                ContentBlock::Text { text, .. }
            ] if text == REMINDER
        ),
        "{last:?}"
    );
    // The history keeps the reminder where it was sent. (A request may also
    // carry cache breakpoints, which are never stored: compare without.)
    let unmarked = |message: &Message| {
        let mut value = serde_json::to_value(message).unwrap();
        strip_markers(&mut value);
        value
    };
    assert_eq!(unmarked(&history[8]), unmarked(last));
    // The user was told, once.
    assert_eq!(recorder.notices_tagged(TAG), [reminder_notice()]);
}

#[tokio::test]
async fn the_count_starts_again_after_a_reminder() {
    let dir = tempfile::tempdir().unwrap();
    let (_, model, recorder) = play(
        dir.path(),
        vec![
            open_list(),
            echo("1"),
            echo("2"),
            echo("3"),
            echo("4"),
            echo("5"),
            echo("6"),
            Reply::text("done"),
        ],
    )
    .await;

    // One reminder before request 5, the next three rounds later, not at
    // every call after the first.
    assert_eq!(reminder_counts(&model), [0, 0, 0, 0, 1, 1, 1, 2]);
    assert_eq!(
        recorder.notices_tagged(TAG),
        [reminder_notice(), reminder_notice()]
    );
}

#[tokio::test]
async fn no_reminder_while_todo_write_keeps_being_called() {
    let dir = tempfile::tempdir().unwrap();
    let update = |status: &str| {
        Reply::tool(
            "todo_write",
            todos(&[("write the code", status), ("test it", "pending")]),
        )
    };
    let (_, model, recorder) = play(
        dir.path(),
        vec![
            open_list(),
            echo("1"),
            echo("2"),
            update("completed").and_tool("bash", json!({"command": "echo 3"})),
            echo("4"),
            echo("5"),
            update("completed"),
            echo("6"),
            echo("7"),
            Reply::text("done"),
        ],
    )
    .await;

    assert_eq!(reminder_counts(&model), [0; 10]);
    assert!(recorder.notices_tagged(TAG).is_empty());
}

#[tokio::test]
async fn a_rejected_todo_write_does_not_count_as_an_update() {
    let dir = tempfile::tempdir().unwrap();
    let (history, model, recorder) = play(
        dir.path(),
        vec![
            open_list(),
            Reply::tool("todo_write", json!({"todos": [{"content": "oops"}]})),
            echo("2"),
            echo("3"),
            Reply::text("done"),
        ],
    )
    .await;

    assert!(
        results(&history[4])[0].1,
        "the second todo_write was refused"
    );
    assert_eq!(reminder_counts(&model), [0, 0, 0, 0, 1]);
    assert_eq!(recorder.notices_tagged(TAG), [reminder_notice()]);
}

#[tokio::test]
async fn no_reminder_without_open_tasks() {
    // No list was ever made: nothing to update.
    let dir = tempfile::tempdir().unwrap();
    let (_, model, recorder) = play(
        dir.path(),
        vec![
            echo("1"),
            echo("2"),
            echo("3"),
            echo("4"),
            echo("5"),
            Reply::text("done"),
        ],
    )
    .await;
    assert_eq!(reminder_counts(&model), [0; 6]);
    assert!(recorder.notices_tagged(TAG).is_empty());

    // Every task is completed: nothing to update either.
    let (_, model, recorder) = play(
        dir.path(),
        vec![
            Reply::tool(
                "todo_write",
                todos(&[("a", "completed"), ("b", "completed")]),
            ),
            echo("1"),
            echo("2"),
            echo("3"),
            echo("4"),
            Reply::text("done"),
        ],
    )
    .await;
    assert_eq!(reminder_counts(&model), [0; 6]);
    assert!(recorder.notices_tagged(TAG).is_empty());
}

/// A reply of the fake API: `blocks`, ending with `stop_reason`.
fn streamed(blocks: &[Value], stop_reason: &str) -> FakeResponse {
    FakeResponse::sse_body(anthropic_stream(blocks, stop_reason))
}

#[tokio::test]
async fn over_the_wire_a_string_encoded_list_is_accepted_and_the_reminder_follows_results() {
    let dir = tempfile::tempdir().unwrap();
    let bash = |id: &str| {
        streamed(
            &[
                json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": "echo working"}}),
            ],
            "tool_use",
        )
    };
    let encoded = r#"[{"content": "plan", "status": "completed"}, {"content": "build", "status": "in_progress"}]"#;
    let server = FakeServer::start(vec![
        streamed(
            &[
                json!({"type": "tool_use", "id": "toolu_plan", "name": "todo_write", "input": {"todos": encoded}}),
            ],
            "tool_use",
        ),
        bash("toolu_a"),
        bash("toolu_b"),
        bash("toolu_c"),
        streamed(&[json!({"type": "text", "text": "all done"})], "end_turn"),
        // Spare: answers a side query a later lesson may ask when the turn
        // ends (a request that offers no tools), so it cannot fail the run.
        streamed(&[json!({"type": "text", "text": "[]"})], "end_turn"),
    ])
    .await
    .unwrap();

    let output = support::run_binary(
        dir.path(),
        &["-p", "build it"],
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
    assert!(
        stdout.contains("[✓] plan") && stdout.contains("[▸] build"),
        "{stdout}"
    );
    // The turn's own requests are the ones that offer tools.
    let received: Vec<Value> = server
        .received()
        .iter()
        .map(|request| request.json())
        .filter(|body| body.get("tools").is_some())
        .collect();
    assert_eq!(received.len(), 5);
    let result = &received[1]["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_plan");
    assert!(result.get("is_error").is_none(), "{result}");
    // Three rounds without todo_write: the fifth request ends with the
    // last bash result, then the reminder, in the same user message.
    let last = received[4]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"].as_array().unwrap().len(), 2);
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_c");
    assert_eq!(last["content"][1]["text"], REMINDER);
    assert!(!received[3].to_string().contains("<reminder>"));
    // And the user saw the notice on standard error.
    assert!(
        stderr.contains(&format!("[{TAG}] {}", reminder_notice())),
        "{stderr}"
    );
}
