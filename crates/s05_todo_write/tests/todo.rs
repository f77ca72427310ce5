//! The todo list and its reminder, driven through the real loop by a
//! scripted model.

// Helpers outside #[test] functions may unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use s05_todo_write::permission::ApproveAll;
use serde_json::{Value, json};
use shared::CancellationToken;
use shared::agent::Silent;
use shared::cli::Setup;
use shared::history::validate;
use shared::model::scripted::{Reply, Script, ScriptedModel};
use shared::protocol::{ContentBlock, Message, Role};
use shared::tools::Workspace;

use s05_todo_write::todo::{REMINDER, Status, TodoTracker};

fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some((result.text(), result.is_error)),
            _ => None,
        })
        .collect()
}

async fn run(dir: &std::path::Path, replies: Vec<Reply>) -> (Vec<Message>, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(replies));
    // Nothing here needs a permission question; ApproveAll keeps the tests
    // from waiting on a terminal if one is attached.
    let mut agent = s05_todo_write::build_with_approver(
        Setup {
            workspace: Workspace::new(dir).unwrap(),
            model: model.clone(),
            model_id: "test".into(),
        },
        Box::new(ApproveAll),
    )
    .unwrap();
    let mut history = Vec::new();
    agent
        .run_turn(&mut history, "go", &mut Silent, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(model.remaining(), 0, "every scripted reply was used");
    (history, model)
}

fn todos(items: &[(&str, &str)]) -> Value {
    let items: Vec<Value> = items
        .iter()
        .map(|(content, status)| json!({"content": content, "status": status}))
        .collect();
    json!({ "todos": items })
}

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

fn reminder_counts(model: &ScriptedModel) -> Vec<usize> {
    model.requests().iter().map(reminders).collect()
}

#[tokio::test]
async fn todo_write_is_offered_with_the_course_schema() {
    let dir = tempfile::tempdir().unwrap();
    let (_, model) = run(dir.path(), vec![Reply::text("hi")]).await;
    let request = &model.requests()[0];
    let tool = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "todo_write")
        .expect("todo_write is offered");
    let item = &tool["input_schema"]["properties"]["todos"]["items"];
    assert_eq!(
        item["properties"]["status"]["enum"],
        json!(["pending", "in_progress", "completed"])
    );
    assert_eq!(item["required"], json!(["content", "status"]));
    let system = request["system"][0]["text"].as_str().unwrap();
    assert!(system.contains("plan it with todo_write"), "{system}");
}

#[tokio::test]
async fn each_update_replaces_the_list_and_shows_it_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let (history, _) = run(
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

    validate(&history).unwrap();
    let first = results(&history[2]);
    assert_eq!(
        first,
        [(
            "Updated 3 tasks (0 completed, 0 in progress, 3 pending):\n[ ] a\n[ ] b\n[ ] c".into(),
            false
        )]
    );
    let second = results(&history[4]);
    assert_eq!(
        second,
        [(
            "Updated 3 tasks (1 completed, 1 in progress, 1 pending):\n[✓] a\n[▸] b\n[ ] c".into(),
            false
        )]
    );
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
    let (history, _) = run(dir.path(), vec![reply, Reply::text("ok")]).await;

    validate(&history).unwrap();
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
    let too_many: Vec<(String, &str)> = (0..21).map(|i| (format!("t{i}"), "pending")).collect();
    let too_many: Vec<(&str, &str)> = too_many.iter().map(|(c, s)| (c.as_str(), *s)).collect();
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
    let (history, model) = run(
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

    validate(&history).unwrap();
    // Rounds 2, 3 and 4 made no todo_write, so the fifth request carries it.
    assert_eq!(reminder_counts(&model), [0, 0, 0, 0, 1]);
    let requests = model.requests();
    let sent = messages(&requests[4]);
    let last = sent.last().unwrap();
    assert_eq!(last.role, Role::User);
    // The round's two results come first, then the reminder, in one message.
    assert_eq!(last.tool_result_ids().count(), 2);
    assert!(matches!(
        last.content.as_slice(),
        [
            ContentBlock::ToolResult(_),
            ContentBlock::ToolResult(_),
            ContentBlock::Text { text, .. }
        ] if text == REMINDER
    ));
    assert_eq!(sent.len(), 9);
}

#[tokio::test]
async fn the_count_starts_again_after_a_reminder() {
    let dir = tempfile::tempdir().unwrap();
    let (history, model) = run(
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

    validate(&history).unwrap();
    // One reminder before request 5, the next three rounds later, not at
    // every call after the first.
    assert_eq!(reminder_counts(&model), [0, 0, 0, 0, 1, 1, 1, 2]);
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
    let (history, model) = run(
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

    validate(&history).unwrap();
    assert_eq!(reminder_counts(&model), [0; 10]);
}

#[tokio::test]
async fn a_rejected_todo_write_does_not_count_as_an_update() {
    let dir = tempfile::tempdir().unwrap();
    let (history, model) = run(
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

    validate(&history).unwrap();
    assert!(
        results(&history[4])[0].1,
        "the second todo_write was refused"
    );
    assert_eq!(reminder_counts(&model), [0, 0, 0, 0, 1]);
}

#[tokio::test]
async fn no_reminder_without_open_tasks() {
    // No list was ever made: nothing to update.
    let dir = tempfile::tempdir().unwrap();
    let (_, model) = run(
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

    // Every task is completed: nothing to update either.
    let (_, model) = run(
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
}

#[tokio::test]
async fn the_demo_script_plans_edits_and_gets_reminded() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::from_json(include_str!("../demo.json")).unwrap();
    let (history, model) = run(dir.path(), script.replies).await;

    validate(&history).unwrap();
    // The eighth request follows three rounds without todo_write.
    assert_eq!(reminder_counts(&model), [0, 0, 0, 0, 0, 0, 0, 1, 1]);
    for message in history.iter().filter(|message| message.role == Role::User) {
        for (text, is_error) in results(message) {
            assert!(!is_error, "{text}");
        }
    }
    let hello = std::fs::read_to_string(dir.path().join("greet.py")).unwrap();
    for expected in [
        "def greet(name: str) -> str:",
        "\"\"\"Return a greeting for `name`.\"\"\"",
        "if __name__ == \"__main__\":\n    main()",
    ] {
        assert!(hello.contains(expected), "{hello}");
    }
}
